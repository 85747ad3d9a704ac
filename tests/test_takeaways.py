"""Takeaways are computed from whatever rows a page shows — including a run stopped after any point."""

import pytest

from core.experiments import EXPERIMENTS
from core.home import records as home
from core.home import scoreboard
from core.store.results import load_reference
from core.terms.i18n import LANGS, translator

CUTS = 15  # prefixes of the shipped run, as if Stop had been pressed there


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_takeaways_survive_every_stopping_point(name):
    exp = EXPERIMENTS[name]
    ref, problems = load_reference(name)
    assert not problems
    if not len(ref):
        pytest.skip(f"no reference data shipped for {name}")
    ref = ref[ref["device"] == ref["device"].iloc[0]]
    cuts = sorted({max(1, round(len(ref) * i / CUTS)) for i in range(1, CUTS + 1)} | {1, 2, 3})
    for lang in LANGS:
        tr = translator(lang)
        for cut in cuts:
            lines = exp.takeaways(ref.iloc[:cut], tr)
            assert all(isinstance(x, str) and "«" not in x for x in lines), (cut, lines)
            frames = {name: ref.iloc[:cut]}
            assert all("«" not in x for x in home.findings(frames, tr).values())
            assert len(home.table1(frames, tr)) == len(scoreboard.TABLE1)
        assert exp.takeaways(ref, tr), "the full run says something"
