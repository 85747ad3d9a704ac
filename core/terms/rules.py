"""The lab's shared rules in one place: every threshold a finding, a measurement or a sentence depends on.

The catalogues never write these numbers: a sentence names `{solved_pct}` and core.terms.i18n fills it in from
here (`catalogue_values`), so a changed rule never leaves an old number in a sentence. Pure Python.
"""

from __future__ import annotations

NOISY_IQR_FRACTION = 0.1  # a timing whose IQR is above this share of its median is flagged noisy
# a growth exponent fitted with a standard error above this is not read as a growth rate (n¹ and n² lie 1 apart)
EXPONENT_SPREAD = 0.2
SOLVED = 0.9  # a recall task counts as solved at this held-out accuracy or above
NEAR_CHANCE = 0.05  # a final accuracy less than this above chance counts as "at chance"
SEPARATED = 0.2  # two groups of models differ on a task when their medians are this far apart (20 points)
REACH_FACTOR = 1000.0  # a gradient's "reach": the first distance where it is this many times below its k=1 value
# a gradient "stays flat" when its largest and smallest values over every distance are within this factor
# (between attention's spread and a fading recurrent path's: docs/BENCHMARKS.md)
FLAT_FACTOR = 10.0
LEARNED_FRACTION = 0.5  # a depth run "trained" if its final loss closed at least this share of the learnable gap
FINAL_FRACTION = 0.2  # a run's final loss is the mean over this last share of its logged steps
BUDGET_FRACTION = 0.5  # the memory guard's budget: this share of the memory free now
DIVERGED_LOSS_FACTOR = 10.0  # a training loss above this many times a uniform guess's (log V) counts as diverged
FRESH_PER_CALL = 32 << 20  # a timing whose calls each had this many bytes of fresh pages mapped includes that cost
UNDERFLOW = 1e-30  # gradients below this have met float32's floor (~1e-38 normal, 1e-45 subnormal) somewhere
# Real text (core.findings.real_text): a model's effective context is the shortest context whose loss on a window's
# tail is within this share of its loss with the whole window (Khandelwal et al. 2018 use 1% of perplexity) …
CONTEXT_WITHIN = 0.01
# … and a model "reads a repeat cheaper" when a span's copy costs at least this many bits per byte less than its
# first occurrence, in every seed (core.workloads.text_lm.copy_bits)
COPY_GAIN_BITS = 0.25
# A training run has flattened when its held-out loss fell by less than this over the last FINAL_FRACTION of it
FLAT_BITS = 0.02
COPY_ASKED_AT = 128  # the distance, in bytes, between the two copies that the real-text question asks about
# The recall rule (core.training.text.recall_mask): a copied span of RECALL_SPAN bytes, from more than RECALL_FAR back
RECALL_SPAN, RECALL_FAR = 8, 64
# published token positions are drawn at this many bytes a token (about GPT-2's BPE on English text)
BYTES_PER_TOKEN = 4
# The GPU width a serial fraction is extrapolated to: an H100 SXM's streaming multiprocessors × warp schedulers each
# (its independent instruction streams; core.findings.scaling says why this unit and not its CUDA-core lanes)
GPU_SMS, GPU_SCHEDULERS_PER_SM = 132, 4


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.0f}"


def catalogue_values() -> dict[str, str]:
    """The rules as the catalogues' placeholders read them."""
    return {
        "noisy_pct": _pct(NOISY_IQR_FRACTION),
        "exponent_spread": f"{EXPONENT_SPREAD:.2f}",
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
        "context_within_pct": _pct(CONTEXT_WITHIN),
        "copy_gain_bits": f"{COPY_GAIN_BITS:.2f}",
        "copy_asked_at": f"{COPY_ASKED_AT}",
        "flat_bits": f"{FLAT_BITS:.2f}",
        "recall_span": f"{RECALL_SPAN}",
        "recall_far": f"{RECALL_FAR}",
        "bytes_per_token": f"{BYTES_PER_TOKEN}",
        "gpu_schedulers": f"{GPU_SCHEDULERS_PER_SM}",
    }
