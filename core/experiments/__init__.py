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
    real_text,
    recall_frontier,
    scaling,
    serial,
    text_race,
)

# each under its own name, in this order (the command line's and the reference's)
EXPERIMENTS = {
    module.EXPERIMENT.name: module.EXPERIMENT
    for module in (serial, scaling, checkpoint, gradient_reach, long_range, depth, attention_cost, kv_cache)
    + (answers_speed, answers_decode, answers_reach, recall_frontier, real_text, text_race)
}


def get(name: str):
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment: {name!r} is not one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]
