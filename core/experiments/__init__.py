"""The registry of experiments: a plain dict from name to `Experiment` (STYLE.md: no import-by-string)."""
from core.experiments import serial

EXPERIMENTS = {
    "serial": serial.EXPERIMENT,
}


def get(name: str):
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment: {name!r} is not one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]
