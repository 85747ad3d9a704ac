"""A live run's progress in the page's words (core.terms.progress): every experiment's tiny run, followed as a page
follows it, says each point in catalogue words (no registry id, `T=` or seed), and its total is known at the start
and never changes while `done` only grows to it."""

import re

import pytest

from core.experiments import EXPERIMENTS
from core.terms.i18n import translator
from core.terms.progress import left_words, progress_words

ID = re.compile(r"[a-z]+_[a-z_]+|\bT=|\bseed\b|«|种子")  # a registry name, the code's axis, a seed, a missing key


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, e in EXPERIMENTS.items() if "tiny" in e.presets])
def test_progress_says_each_point_in_words_against_a_total_that_never_changes(name):
    exp = EXPERIMENTS[name]
    seen = []
    exp.run(exp.config("tiny", {"device": "cpu"}), on_progress=seen.append)
    assert seen, "the run reported no progress"
    assert {p.total for p in seen} == {seen[0].total}, "the total changed during the run"
    done = [p.done for p in seen]
    assert done == sorted(done) and done[-1] == seen[0].total, f"done went {done} against {seen[0].total}"
    assert exp.point, f"{name} declares no point columns"
    last = None
    for p in seen:
        last = p.rows[-1] if p.rows else last
        for lang in ("en", "zh"):
            text = progress_words(p.done, p.total, last, exp.point, 12.0, translator(lang))
            assert not ID.search(text), f"{lang}: {text!r}"
    named = progress_words(1, 2, last, exp.point, None, translator("en"))
    assert named.split(":")[0].strip(), f"the last point of {name} says nothing: {named!r}"


def test_progress_reads_as_a_sentence_in_both_languages():
    row = {"model": "lstm_attention", "distance": 16, "seed": 0}
    en = progress_words(6, 24, row, ("model", "distance"), 12.3, translator("en"))
    zh = progress_words(6, 24, row, ("model", "distance"), 12.3, translator("zh"))
    assert en == "LSTM + attention, distance 16: 6 of 24 done · about 10 s left"
    assert "距离 16" in zh and "6 / 24" in zh and "约剩" in zh
    assert progress_words(0, 24, None, ("model",), None, translator("en")) == "0 of 24 done"
    assert left_words(200, translator("en")) == "about 3 min left" and left_words(None, translator("en")) == ""
