"""Page 5, gradient reach: gradient_reach's ‖∂y_T/∂x_{T−k}‖ over page 5's mixers, measuring Vaswani et al.'s Table 1
maximum path length for every row: a recurrence decays (O(n)), attention stays flat (O(1)), stacked windows end
after layers × (r − 1) tokens (O(n/r)), a dilated convolution at its receptive field k^levels (O(log_k n)).

The same config, run and columns as gradient_reach (core.workloads.reach's); only the presets and the takeaways differ.
"""

from __future__ import annotations

from core.config import Experiment
from core.findings.answers_reach import reach_takeaways
from core.models import registry
from core.workloads.reach import GradientReachConfig, run

# page 5's mixers, then the chapter's two anchors as the long-range page measures them: the models tagged
# answers_reach, read when a config is made (a model registered later is in it)
MODELS = registry.tagged("answers_reach")
PRESETS = {
    "quick": {"models": MODELS, "seq_len": 256, "d_model": 32},
    "tiny": {"models": MODELS, "seq_len": 16, "d_model": 8},
    "full": {"models": MODELS, "seq_len": 512, "d_model": 64},
}

EXPERIMENT = Experiment(
    "answers_reach",
    GradientReachConfig,
    run,
    PRESETS,
    "‖∂y_T/∂x_(T−k)‖ at initialisation over page 5's mixers: decay, flat, steps of r, a receptive field's end",
    reach_takeaways,
    point=("model",),
)
