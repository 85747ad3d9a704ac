"""Checkpointed BPTT: a recurrent language model that keeps, for backward, only the states between segments.

Backpropagation through time keeps what every step computed until the backward pass reaches it, so memory grows
with n. Gradient checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost") cuts the
sequence into segments of s tokens and keeps only the states entering each segment; in backward, each segment's
forward (embedding and every recurrent layer, through the fused kernel) runs again, one segment at a time. With
s ≈ √n, n/s ≈ √n segment states are kept and one segment's activations live at a time: memory O(√n) instead of
O(n), for one extra forward pass (a training step is about one forward and a backward of twice its cost, so about
+⅓ arithmetic). The recurrence itself is unchanged: still n dependent steps per layer, now taken twice.

The output head is outside the segments: its input features and logits, one row per token, stay linear in n.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from core.models.layers import LanguageModel, Recurrent


def segment_for(seq_len: int, segment: int = 0) -> int:
    """Tokens per segment: `segment`, or ⌈√n⌉ when 0 (the length that balances kept states against one segment)."""
    return segment if segment > 0 else math.isqrt(max(seq_len, 1) - 1) + 1


def n_segments(seq_len: int, segment: int = 0) -> int:
    return -(-seq_len // segment_for(seq_len, segment))


def states_per_layer(rnn: nn.Module) -> int:
    """Tensors of one layer's recurrent state: (h, c) for an LSTM, h otherwise."""
    return 2 if isinstance(rnn, nn.LSTM) else 1


class SegmentCheckpointed(nn.Module):
    """`model` (a stack of fused recurrent layers) trained with checkpointed BPTT in segments of `segment` tokens
    (0: ⌈√n⌉ for each input's length n). Same parameters, same function (tested)."""

    def __init__(self, model: LanguageModel, segment: int = 0):
        super().__init__()
        if model.positions or not all(isinstance(layer, Recurrent) for layer in model.layers):
            raise ValueError("model: checkpointed BPTT needs a stack of fused recurrent layers (RNN, LSTM, GRU)")
        self.model, self.segment = model, segment

    def _segment(self, tokens: torch.Tensor, *states: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One segment through the embedding and every layer, from the states entering it; (features, *states)."""
        x, out, i = self.model.embed(tokens), [], 0
        for layer in self.model.layers:
            k = states_per_layer(layer.rnn)
            state = states[i] if k == 1 else tuple(states[i : i + k])
            x, new = layer.rnn(x, state)
            out.extend([new] if k == 1 else new)
            i += k
        return (x, *out)

    def features(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, T) tokens → (B, T, d) features before the head, segment by segment under torch.utils.checkpoint."""
        B, T = tokens.shape
        d = self.model.embed.embedding_dim
        states = [
            tokens.new_zeros((), dtype=self.model.embed.weight.dtype).expand(1, B, d).contiguous()
            for layer in self.model.layers
            for _ in range(states_per_layer(layer.rnn))
        ]
        s, outs = segment_for(T, self.segment), []
        for start in range(0, T, s):
            x, *states = checkpoint(self._segment, tokens[:, start : start + s], *states, use_reentrant=False)
            outs.append(x)
        return self.model.final_norm(torch.cat(outs, dim=1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model.head(self.features(tokens))


def kept_state_bytes(seq_len: int, segment: int, batch_size: int, d_model: int, states: int, itemsize: int = 4) -> int:
    """The formula for what checkpointed BPTT keeps in its layers: the states entering every segment after the
    first (the first enters from zeros, which are kept too), `states` tensors of B·d numbers per segment."""
    return n_segments(seq_len, segment) * states * batch_size * d_model * itemsize
