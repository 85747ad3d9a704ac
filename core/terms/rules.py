"""The lab's shared rules in one place: every threshold a finding, a measurement or a sentence depends on.

The catalogues never write these numbers into their prose: a sentence names `{solved_pct}` and `core.terms.i18n` fills in
the value from here (`catalogue_values`), so changing a rule can never leave a sentence saying the old number.
Pure Python: the home page reads it without torch.
"""

from __future__ import annotations

NOISY_IQR_FRACTION = 0.1  # a timing whose IQR is above this share of its median is flagged noisy
SOLVED = 0.9  # a recall task counts as solved at this held-out accuracy or above
NEAR_CHANCE = 0.05  # a final accuracy less than this above chance counts as "at chance"
SEPARATED = 0.2  # two groups of models differ on a task when their medians are this far apart (20 points)
REACH_FACTOR = 1000.0  # a gradient's "reach": the first distance where it is this many times below its k=1 value
# a gradient "stays flat" when its largest and smallest values over every distance are within this factor: an
# attention block at initialisation spread 2.9-4.8x (four seeds, both presets); attention over an LSTM's states,
# whose step-by-step path fades first, 30-41x at 200 tokens and 150-170x at 1000
FLAT_FACTOR = 10.0
LEARNED_FRACTION = 0.5  # a depth run "trained" if its final loss closed at least this share of the learnable gap
FINAL_FRACTION = 0.2  # a run's final loss is the mean over this last share of its logged steps
BUDGET_FRACTION = 0.5  # the memory guard's budget: this share of the memory free now
DIVERGED_LOSS_FACTOR = 10.0  # a training loss above this many times a uniform guess's (log V) counts as diverged
FRESH_PER_CALL = 32 << 20  # a timing whose calls each had this many bytes of fresh pages mapped includes that cost
UNDERFLOW = 1e-30  # gradients below this have met float32's floor (~1e-38 normal, 1e-45 subnormal) somewhere
# The GPU width a serial fraction is extrapolated to: an H100 SXM's streaming multiprocessors × warp schedulers each
# (its independent instruction streams; core.findings.scaling says why this unit and not its CUDA-core lanes)
GPU_SMS, GPU_SCHEDULERS_PER_SM = 132, 4


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.0f}"


def catalogue_values() -> dict[str, str]:
    """The rules as the catalogues' placeholders read them."""
    return {
        "noisy_pct": _pct(NOISY_IQR_FRACTION),
        "solved_pct": _pct(SOLVED),
        "near_chance_pts": _pct(NEAR_CHANCE),
        "separated_pts": _pct(SEPARATED),
        "reach_factor": f"{REACH_FACTOR:,.0f}",
        "learned_pct": _pct(LEARNED_FRACTION),
        "final_pct": _pct(FINAL_FRACTION),
        "budget_pct": _pct(BUDGET_FRACTION),
        "diverged_factor": f"{DIVERGED_LOSS_FACTOR:.0f}",
        "gpu_width": f"{GPU_SMS * GPU_SCHEDULERS_PER_SM}",
        "gpu_sms": f"{GPU_SMS}",
        "gpu_schedulers": f"{GPU_SCHEDULERS_PER_SM}",
    }
