"""A page after a learner's Run, in a real browser at 1280 px (scripts/after_run.py, which `bench_pages.py
--after-run` uses too): the verdict sets your run beside the reference, each with its device; no chart is wider than
its column and no legend label is cut; and the section's chart draws the run's rows before the run ends.

The page's form is set to its experiment's tiny preset through the link (test_browser's `_tiny_link`): the same
verdict, legends and layout as a quick run, in seconds. The 中文 pages get the same checks in test_browser's live-run
test, which runs them already.
"""

import os

import pytest
from conftest import REVEALED
from test_browser import RUN_PAGES, _settle, _tiny_link, after_run

pytestmark = pytest.mark.slow  # a real browser and server: the full suite only

if os.environ.get("LAB_SKIP_BROWSER") == "1":
    pytest.skip("LAB_SKIP_BROWSER=1", allow_module_level=True)

VIEW = {"width": 1280, "height": 800}


@pytest.mark.parametrize("key", RUN_PAGES)
def test_after_a_run_the_verdict_names_both_runs_and_every_chart_fits(app_url, browser, key):
    page = browser.new_page()
    page.set_viewport_size(VIEW)
    page.goto(f"{app_url}/{key}?lang=en&{'&'.join(f'{k}={v}' for k, v in REVEALED.items())}&{_tiny_link(key)}")
    _settle(page)
    got = after_run.run_page(page, "en", timeout_s=120)
    assert got["progress"], "no progress was shown"
    assert not after_run.problems(page, "en"), after_run.problems(page, "en")
    page.close()


def test_the_sections_chart_draws_the_run_before_it_ends(app_url, browser):
    """The serial page's quick run (several seconds a length): its chart stands under the bar while it measures."""
    page = browser.new_page()
    page.set_viewport_size(VIEW)
    page.goto(f"{app_url}/serial?lang=en&{'&'.join(f'{k}={v}' for k, v in REVEALED.items())}")
    _settle(page)
    got = after_run.run_page(page, "en", timeout_s=120)
    assert got["drawn_during"], f"no chart drew the run's rows while it measured (progress: {got['progress']})"
    assert after_run.names_both(page, "en")
    page.close()
