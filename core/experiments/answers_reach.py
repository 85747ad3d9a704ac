"""Page 5, gradient reach: the long-range page's measurement (‖∂y_T/∂x_{T−k}‖ at initialisation, for every
distance k; core.experiments.gradient_reach) over page 5's mixers, so the maximum-path-length column of Vaswani et
al.'s Table 1 is measured for every row: a recurrence's gradient decays with distance (O(n) path), attention's stays
flat (O(1)), a stack of sliding-window layers ends after layers × (r − 1) tokens in steps of r (O(n/r)), and the
dilated convolution's ends exactly at its receptive field of k^levels tokens (O(log_k n)).

The same config, run and columns as gradient_reach; only the presets (page 5's mixers, beside the LSTM and the
attention block) and the takeaways differ.
"""

from __future__ import annotations

from core.config import Experiment
from core.experiments import gradient_reach
from core.findings.answers import reach_takeaways
from core.models import registry

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
    gradient_reach.GradientReachConfig,
    gradient_reach.run,
    PRESETS,
    "‖∂y_T/∂x_(T−k)‖ at initialisation over page 5's mixers: decay, flat, steps of r, a receptive field's end",
    reach_takeaways,
)
