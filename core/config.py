"""Experiment configs: frozen dataclasses whose fields carry their allowed range, and one validator for all.

A field's metadata says what a learner may set (`spec(...)`); `make_config` turns strings from the CLI's
`--set FIELD=VALUE` or a page's controls into a validated config, raising ValueError that names the field.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the home page's cold start imports no pandas
    import pandas as pd


def spec(default, *, lo=None, hi=None, choices=None, help: str = "", min_len: int = 1):
    """A config field with its allowed range (`lo`..`hi` inclusive) or `choices`, for validation and widgets.

    `choices` may be a function returning them, read at validation time (a registry that can still grow); so may
    a sequence's `default` (`lambda: registry.names("serial")`), read whenever a config is made.
    """
    if choices is not None and not callable(choices):
        choices = tuple(choices)
    meta = {"lo": lo, "hi": hi, "choices": choices or None, "help": help, "min_len": min_len}
    if callable(default):
        return dataclasses.field(default_factory=lambda: tuple(default()), metadata=meta)
    if isinstance(default, (list, tuple)):
        return dataclasses.field(default=tuple(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def field_info(cls) -> list[dict]:
    """One dict per config field: name, type, is_sequence, default, lo, hi, choices, help."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]  # int, float, str, bool or tuple[X, ...] (a sequence of X)
        seq = typing.get_origin(tp) in (tuple, list)
        meta = dict(f.metadata)
        if callable(meta.get("choices")):
            meta["choices"] = tuple(meta["choices"]())
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        elem = typing.get_args(tp)[0] if seq else tp
        out.append({"name": f.name, "type": elem, "sequence": seq, "default": default, **meta})
    return out


def describe_range(info: dict) -> str:
    if info.get("choices"):
        return ("any of " if info["sequence"] else "one of ") + ", ".join(map(str, info["choices"]))
    lo, hi = info.get("lo"), info.get("hi")
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return info["type"].__name__


SHOWN_CHARS = 40  # how much of a rejected value an error message echoes back


def shown(value: Any) -> str:
    """A rejected value as an error message quotes it: its repr, cut to SHOWN_CHARS characters."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _parse_scalar(name: str, elem: type, value: Any):
    if isinstance(value, str):
        value = value.strip()
        # Python's int() and float() also read other scripts' digits ('٣' is 3, '３' is 3) and '1_000'; a value
        # from a form or a link is taken only as plain ASCII, so what the learner sees is what runs.
        if elem in (int, float) and (not value.isascii() or "_" in value):
            raise ValueError(f"{name}: {shown(value)} is not a valid {elem.__name__} (use the digits 0-9)")
    try:
        if elem is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError
            return bool(value)
        if elem is int:
            number = float(value) if isinstance(value, str) else value
            if isinstance(number, float) and not number.is_integer():
                raise ValueError
            return int(number)  # '8', '8.0' and '1e3' are whole numbers; '8.5' is not
        if elem is float:
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {shown(value)} is not a valid {elem.__name__}") from None


def _check(info: dict, v) -> None:
    name = info["name"]
    if info.get("choices") and v not in info["choices"]:
        raise ValueError(f"{name}: {shown(v)} is not allowed; choose {describe_range(info)}")
    if info["type"] in (int, float):
        if not math.isfinite(v):
            raise ValueError(f"{name}: {shown(v)} must be a finite number")
        lo, hi = info.get("lo"), info.get("hi")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ValueError(f"{name}: {v} is out of range; allowed {describe_range(info)}")


def parse_value(info: dict, value: Any):
    """Parse and range-check one field's value; lists may be given as 'a,b,c'."""
    name = info["name"]
    if info["sequence"]:
        items = [s for s in value.split(",") if s.strip()] if isinstance(value, str) else list(value)
        if len(items) < info.get("min_len", 1):
            raise ValueError(f"{name}: give at least {info.get('min_len', 1)} value(s); allowed {describe_range(info)}")
        parsed = tuple(_parse_scalar(name, info["type"], x) for x in items)
        for v in parsed:
            _check(info, v)
        if len(set(parsed)) != len(parsed):
            raise ValueError(f"{name}: values must not repeat")
        return parsed
    v = _parse_scalar(name, info["type"], value)
    _check(info, v)
    return v


def make_config(cls, overrides: dict | None = None, base=None, check: bool = True):
    """A validated config of `cls`: `base` (or the defaults) with `overrides` applied; ValueError names the field.
    `check=False` parses the fields but leaves the cross-field rules to the final config (a preset's base, which
    an override may still complete: a folder named on the command line)."""
    infos = {i["name"]: i for i in field_info(cls)}
    current = dataclasses.asdict(base) if base is not None else {n: i["default"] for n, i in infos.items()}
    for name, value in (overrides or {}).items():
        if name not in infos:
            raise ValueError(f"unknown field {shown(name)}; fields are: {', '.join(infos)}")
        current[name] = value
    parsed = {n: parse_value(infos[n], current[n]) for n in infos}
    config = cls(**parsed)
    rules = getattr(config, "check", None)
    if check and rules is not None:
        rules()  # cross-field rules, e.g. distance < sequence length
    return config


@dataclasses.dataclass(frozen=True)
class Progress:
    """What an experiment reports after each point: done of total, a short message, and the new row(s)."""

    done: int
    total: int
    message: str = ""
    rows: tuple = ()


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A registry entry: the config class, its presets (field overrides) and the run function."""

    name: str
    config_cls: type
    run: Callable[..., pd.DataFrame]
    presets: dict
    summary: str
    # takeaways(df, tr) -> list of sentences computed from df; tr is core.terms.i18n.translator(lang)
    takeaways: Callable[[pd.DataFrame, Callable[..., str]], list[str]] | None = None
    point: tuple[str, ...] = ()  # the row columns that name a point, in a live run's progress (core.terms.progress)

    def config(self, preset: str = "quick", overrides: dict | None = None):
        if preset not in self.presets:
            raise ValueError(f"preset: {preset!r} is not one of {', '.join(self.presets)}")
        preset_ = {k: v() if callable(v) else v for k, v in self.presets[preset].items()}  # models chosen by tag
        base = make_config(self.config_cls, preset_, check=False)
        return make_config(self.config_cls, overrides, base=base)
