"""The registry of experiments: a plain dict from name to `Experiment` (STYLE.md: no import-by-string)."""
from core.experiments import serial
from core.experiments import gradient_reach, long_range
from core.experiments import depth
from core.experiments import attention_cost, kv_cache

EXPERIMENTS = {
    "serial": serial.EXPERIMENT,
    "gradient_reach": gradient_reach.EXPERIMENT,
    "long_range": long_range.EXPERIMENT,
    "depth": depth.EXPERIMENT,
    "attention_cost": attention_cost.EXPERIMENT,
    "kv_cache": kv_cache.EXPERIMENT,
}


def get(name: str):
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment: {name!r} is not one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]
