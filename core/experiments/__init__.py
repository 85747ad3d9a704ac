"""The registry of experiments: a plain dict from name to `Experiment`, each module imported by name (never by a
string built at run time, so a reader and a linter can follow every import)."""

from core.experiments import (
    answers_decode,
    answers_reach,
    answers_speed,
    attention_cost,
    checkpoint,
    depth,
    gradient_reach,
    kv_cache,
    long_range,
    recall_frontier,
    scaling,
    serial,
)

EXPERIMENTS = {
    "serial": serial.EXPERIMENT,
    "scaling": scaling.EXPERIMENT,
    "checkpoint": checkpoint.EXPERIMENT,
    "gradient_reach": gradient_reach.EXPERIMENT,
    "long_range": long_range.EXPERIMENT,
    "depth": depth.EXPERIMENT,
    "attention_cost": attention_cost.EXPERIMENT,
    "kv_cache": kv_cache.EXPERIMENT,
    "answers_speed": answers_speed.EXPERIMENT,
    "answers_decode": answers_decode.EXPERIMENT,
    "answers_reach": answers_reach.EXPERIMENT,
    "recall_frontier": recall_frontier.EXPERIMENT,
}


def get(name: str):
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment: {name!r} is not one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]
