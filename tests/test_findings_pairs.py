"""The home page's finding for each page and that page's own takeaways state the same numbers: both call the same
function of core.findings on the same rows (the shipped reference a learner sees before any Run)."""

import re

import pytest

from core.experiments import EXPERIMENTS
from core.home import records as home
from core.store.results import load_reference
from core.terms.i18n import LANGS, translator

PAGES = {"serial": "serial", "long_range": "long_range", "depth": "depth", "attention_cost": "attention_cost"}
NUMBER = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?(?:e[-+]?\d+)?%?")


def _numbers(text: str) -> set[str]:
    return set(NUMBER.findall(text))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", list(PAGES))
def test_home_finding_and_page_takeaways_state_the_same_numbers(page, lang):
    tr = translator(lang)
    ref, problems = load_reference(PAGES[page])
    assert not problems and len(ref)
    rows = ref[ref["device"] == ref["device"].iloc[0]]  # one device, as each page and the home page show it
    finding = home.findings({page: rows}, tr).get(page)
    assert finding, f"the home page has no finding for {page}"
    said = " ".join(EXPERIMENTS[PAGES[page]].takeaways(rows, tr))
    missing = _numbers(finding) - _numbers(said)
    assert not missing, f"home says {sorted(missing)} that the {page} page does not: {finding!r}"


def test_the_comparison_can_fail():
    """A home sentence with a number the page never states is caught."""
    assert _numbers("took 2.6× at n = 1024, 13%") - _numbers("took 2.6× at n = 1024") == {"13%"}
