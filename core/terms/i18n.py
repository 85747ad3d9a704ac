"""The one translation layer: every string a learner reads is a key looked up here (English and 中文).

A language's catalogue is core/locales/<lang>/, one JSON file per page or topic. `t(key, lang, **values)` formats
with str.format; a missing key shows as «key». A sentence with count `n` may have a singular twin `<key>.one`
(English); whole numbers from GROUPED_FROM up get thousands separators unless the placeholder says otherwise.
"""

from __future__ import annotations

import functools
import json
import numbers
import re
from pathlib import Path

LOCALES = Path(__file__).resolve().parent.parent / "locales"
LANGS = ("en", "zh")
DEFAULT_LANG = "en"
ONE = ".one"  # '<key>.one': the sentence for n = 1, in a language whose nouns inflect ('1 point was', '2 points were')


@functools.cache
def catalogue(lang: str) -> dict[str, str]:
    merged: dict[str, str] = {}
    for path in sorted((LOCALES / lang).glob("*.json")):
        with open(path, encoding="utf-8") as f:
            for key, text in json.load(f).items():
                if key in merged:
                    raise ValueError(f"{path.name}: key {key!r} is defined twice in the {lang} catalogue")
                merged[key] = text
    return merged


def normalize_lang(lang: str | None) -> str:
    """'zh-CN', 'zh_TW' → 'zh'; anything unknown → English."""
    base = (lang or "").replace("_", "-").split("-")[0].lower()
    return base if base in LANGS else DEFAULT_LANG


def t(key: str, lang: str = DEFAULT_LANG, **values) -> str:
    """The text for `key` in `lang` (falling back to English), formatted with `values`."""
    own = catalogue(normalize_lang(lang))
    if f"{key}{ONE}" in own and values.get("n") == 1:  # a language that inflects has the singular sentence too
        key += ONE
    text = own.get(key, catalogue(DEFAULT_LANG).get(key))
    if text is None:
        return f"«{key}»"
    if not values and "{" not in text:
        return text
    from core.terms.rules import catalogue_values  # the shared thresholds: a sentence names them, never writes them

    # a device label core wrote ('cpu · Intel Xeon · 2 threads') reads in the page's words
    tr = translator(normalize_lang(lang))
    values = {k: device_words(v, tr) if isinstance(v, str) else _grouped(k, v) for k, v in values.items()}
    return text.format_map(_Keep({**catalogue_values(), **values}))


class _Grouped(int):
    """An integer a sentence shows with thousands separators ('16,384 tokens') unless its placeholder says how."""

    def __format__(self, spec: str) -> str:
        return int.__format__(self, spec or ",")


GROUPED_FROM = 1_000  # as the sentences that format their own numbers do: "n = 1,024", "16,384 tokens"
_NOT_GROUPED = ("seed",)  # a name, not an amount


def _grouped(key: str, value):
    """`value` as _Grouped if it is a whole number of at least GROUPED_FROM (and not a seed); else as it is."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and key not in _NOT_GROUPED:
        return _Grouped(value) if abs(int(value)) >= GROUPED_FROM else value
    return value


_THREADS = re.compile(r" · (\d+) threads?$")


def threads_words(n: int, tr, cores: int | None = None) -> str:
    """'1 thread', '2 threads' (or the page's language); with `cores` above n, also why a core is left free."""
    said = tr("ui.threads", n=n)
    if said == "1 threads":  # English: core's words, but one thread is singular
        said = "1 thread"
    return tr("ui.threads_left", threads=said, cores=cores) if cores and cores > n else said


def device_words(label, tr) -> str:
    """A device label as core writes it, 'cpu · Intel Xeon · 2 threads', with its thread count in `tr`'s language
    (the CSV keeps the English, '1 threads' included; a page reads '1 thread'); any other text unchanged."""
    return _THREADS.sub(lambda m: " · " + threads_words(int(m.group(1)), tr), str(label))


class _Keep(dict):
    """Format values that leave an unknown {placeholder} as it is (a catalogue text may show braces)."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def translator(lang: str):
    """A one-argument-plus-values function bound to `lang`: `tr('key', n=3)`."""
    return functools.partial(t, lang=lang)
