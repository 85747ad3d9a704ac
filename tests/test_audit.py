"""An expert's audit of every number a learner reads: the shipped reference and a deliberately noisy copy of it are
replayed through every page's takeaways and the home scoreboard, and each sentence is checked against physical
bounds — shares and accuracies within 0–100%, no NaN or infinity, exponents with their fit's spread, and no
'faster' where the paired repeats do not say so."""

import re

import numpy as np
import pandas as pd
import pytest

from core.experiments import EXPERIMENTS
from core.home import records as home
from core.store.results import load_reference
from core.terms.i18n import LANGS, translator

TIMES = ("train_ms", "time_ms", "ms_per_token", "train_s")
PERCENT = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)\s*%")
EXPONENT = re.compile(r"n\^(-?\d+\.\d+)(\s*±\s*\d+\.\d+)?")


def _reference(name: str) -> pd.DataFrame:
    ref, problems = load_reference(name)
    assert not problems and len(ref), name
    return ref[ref["device"] == ref["device"].iloc[0]]


def _noisy(df: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Every timing multiplied by a random factor between 0.5 and 2, as a busy machine might leave them."""
    rng = np.random.default_rng(seed)
    out = df.copy()
    for c in TIMES:
        if c in out:
            out[c] = out[c] * rng.uniform(0.5, 2.0, len(out))
    return out


def _sentences(name: str, rows: pd.DataFrame, tr) -> list[str]:
    said = list(EXPERIMENTS[name].takeaways(rows, tr))
    said += list(home.findings({name: rows}, tr).values())
    said += [str(v) for v in home.table1({name: rows}, tr).to_numpy().ravel()]
    return said


def _audit(text: str) -> list[str]:
    problems = []
    for m in PERCENT.finditer(text):
        v = float(m.group(1).replace(",", ""))
        if not 0 <= v <= 100:
            problems.append(f"a share of {v}%")
    if re.search(r"\b(nan|inf)\b", text, re.IGNORECASE):
        problems.append("NaN or infinity")
    return problems


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("noisy", [False, True])
@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_sentence_is_physically_possible(name, noisy, lang):
    rows = _reference(name)
    rows = _noisy(rows) if noisy else rows
    bad = {s: _audit(s) for s in _sentences(name, rows, translator(lang)) if _audit(s)}
    assert not bad, bad


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_exponents_are_stated_with_their_spread(name):
    """A fitted exponent over three or more lengths carries its standard error (a learner cannot read a slope
    from one number)."""
    for sentence in _sentences(name, _reference(name), translator("en")):
        for m in EXPONENT.finditer(sentence):
            assert m.group(2), f"an exponent without its spread: {sentence!r}"


def test_shipped_shares_and_accuracies_are_within_bounds():
    for name in EXPERIMENTS:
        rows = _reference(name)
        for col in ("utilization", "accuracy"):
            if col in rows:
                v = rows[col].dropna()
                assert ((v >= 0) & (v <= 1)).all(), (name, col, v.max())


def test_no_faster_where_the_paired_repeats_straddle_one():
    rows = _reference("serial").copy()
    T = rows["seq_len"].max()
    at = (rows["seq_len"] == T) & (rows["model"] == "transformer")
    rows.loc[at, ["ratio_q25", "ratio_q75"]] = (0.8, 1.3)
    for lang, words in (("en", "about the same time"), ("zh", "耗时差不多")):
        said = _sentences("serial", rows, translator(lang))
        assert sum(words in x for x in said) == 2, said  # the page's verdict and the home page's finding
    assert not any("faster" in x for x in _sentences("serial", rows, translator("en")))
