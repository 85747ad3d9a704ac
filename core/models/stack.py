"""A mixer in a deep model, as Zoology (Arora et al. 2023) and Mamba build them: n_layers residual blocks, each
x + mixer(conv(LN x)), then x + MLP(LN x), with a short causal depthwise convolution in front of the mixer.

The short convolution is the piece Zoology found every attention-free model needs for associative recall: it lets
the token after a key see that key, so a key and its value can be written into the state together (H3's shift,
Mamba's conv1d, Based's short filter). Attention does not need it (it compares every pair of tokens), and the
chapter's own models (the fused LSTM, the Pre-LN Transformer) are built by core.models.registry as the other pages
build them, so the page compares them as the chapter does.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

CONV_KERNEL = 4  # Mamba's d_conv and Based's short filter


class ShortConv(nn.Module):
    """Causal depthwise convolution over the last `kernel` tokens, per channel (a learned token shift)."""

    def __init__(self, d_model: int, kernel: int = CONV_KERNEL):
        super().__init__()
        self.kernel = kernel
        self.conv = nn.Conv1d(d_model, d_model, kernel, groups=d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.pad(x.transpose(1, 2), (self.kernel - 1, 0))).transpose(1, 2)


class MixerBlock(nn.Module):
    """Pre-LN residual block around one mixer layer: x + mixer(conv(LN₁ x)), then x + MLP(LN₂ x)."""

    def __init__(self, d_model: int, mixer: nn.Module):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.conv = ShortConv(d_model)
        self.mixer = mixer
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.mixer(self.conv(self.ln1(x)))
        return x + self.mlp(self.ln2(x))
