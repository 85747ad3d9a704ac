"""The training step every speed page times: forward, cross-entropy, backward and one SGD update on seeded random
tokens (the serial, checkpoint, scaling and answers_speed experiments time this same step)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def training_step(model, vocab_size: int, batch_size: int, seq_len: int, seed: int, device: torch.device):
    """(one SGD training step, the loss alone, its inputs) on seeded random tokens."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(vocab_size, (batch_size, seq_len), generator=g).to(device)  # (B, T)
    targets = torch.randint(vocab_size, (batch_size, seq_len), generator=g).to(device)  # (B, T)

    def loss_fn():
        return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        opt.step()

    return step, loss_fn, (tokens, targets)
