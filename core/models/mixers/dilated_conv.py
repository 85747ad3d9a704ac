"""A dilated causal convolution (ByteNet, WaveNet), the convolutional row of Vaswani et al.'s Table 1: dilations
growing per layer, so a stack of L layers of kernel k sees exactly k^L tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from core.models.mixers.base import FUSED, ChunkMixer, answers_tags, mixer
from core.models.registry import CONVOLUTION, TIME_INVARIANT, Spec


@mixer
class DilatedConv(ChunkMixer):
    """`levels` causal convolutions of kernel k, dilation k^i at level i (doubling for k = 2), GELU between:
    the receptive field is exactly k^levels tokens. The state is each level's last (k−1)·k^i inputs."""

    name, family, color, tags = "dilated_conv", CONVOLUTION, "#7f7f7f", answers_tags(TIME_INVARIANT)
    forms, table1 = (FUSED,), "convolutional"
    source = "Kalchbrenner et al. 2016 (ByteNet); van den Oord et al. 2016 (WaveNet)"

    @staticmethod
    def steps(n: int, form: str, s: Spec) -> int:
        return s.levels

    @staticmethod
    def state_floats(n: int, s: Spec) -> int:
        return (s.kernel**s.levels - 1) * s.d_model

    @staticmethod
    def saved(form: str, s: Spec) -> int:
        return 3 * s.levels * s.d_model

    @classmethod
    def from_spec(cls, s: Spec, form: str) -> DilatedConv:
        return cls(s.d_model, form, s.kernel, s.levels)

    def __init__(self, d_model: int, form: str = FUSED, kernel: int = 2, levels: int = 6):
        super().__init__(form)
        self.kernel = kernel
        self.convs = nn.ModuleList(nn.Conv1d(d_model, d_model, kernel, dilation=kernel**i) for i in range(levels))

    def _reach(self, i: int) -> int:
        return (self.kernel - 1) * self.kernel**i  # inputs level i needs from before the current token

    def forward_fused(self, x: torch.Tensor) -> torch.Tensor:
        h = x.transpose(1, 2)  # (B, d, T): channels first, as Conv1d wants
        for i, conv in enumerate(self.convs):  # one level after another: `levels` dependent steps
            h = F.gelu(conv(F.pad(h, (self._reach(i), 0))))
        return h.transpose(1, 2)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        d = self.convs[0].in_channels
        return tuple(like.new_zeros(batch, d, self._reach(i)) for i in range(len(self.convs)))

    def run(self, x: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        h, kept = x.transpose(1, 2), []
        for i, conv in enumerate(self.convs):
            buf = torch.cat([state[i], h], dim=2)  # the inputs this level still needed, then the new ones
            kept.append(buf[:, :, buf.shape[2] - self._reach(i) :].clone())
            h = F.gelu(conv(buf))
        return h.transpose(1, 2), tuple(kept)
