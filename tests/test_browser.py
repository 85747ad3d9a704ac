"""A real browser: `streamlit run dashboard.py`, every page opened in headless Chromium (Debian's, via Playwright;
the server and the browser are conftest's session fixtures, shared with the other browser test modules).

Asserts no exception element on any page, a drawn chart on every measuring page, and a live run on every page in
中文 (Stop, a killed worker and eight sessions at once: test_browser_worker). A missing browser fails the test (set
LAB_SKIP_BROWSER=1 to skip it deliberately on a machine without one).
"""

import os
import re
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from conftest import REVEALED, open_form, press_run, serve

from core.terms.i18n import translator
from ui.common import PAGES

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import after_run  # scripts/ is not a package: on the path above

RUN_PAGES = ("serial", "long_range", "depth", "answers")  # the pages whose question a main-section Run answers

CHART = "[data-testid='stVegaLiteChart'], .vega-embed"
SHOWN = urllib.parse.urlencode(REVEALED)  # a shared link with every question answered "just show me"

pytestmark = pytest.mark.slow  # a real browser and server: the full suite only

if os.environ.get("LAB_SKIP_BROWSER") == "1":
    pytest.skip("LAB_SKIP_BROWSER=1", allow_module_level=True)


# Streamlit's app element says where its script run is: "initial" before the first one, "running", "notRunning"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def _settle(page, timeout_s=60):
    """Until the page's script has run and then stayed idle, with no "Running…" widget, for three looks in a row
    150 ms apart; at most `timeout_s`. A condition, not fixed sleeps: 1.3 s of sleeps a call (then the widget
    alone, which a short run may never show) was about a minute of the browser tests."""
    page.wait_for_selector("[data-testid='stAppViewContainer']", timeout=60000)
    deadline = time.time() + timeout_s
    idle_looks = 0
    while time.time() < deadline and idle_looks < 3:
        idle = page.query_selector(IDLE) is not None and page.query_selector("[data-testid='stStatusWidget']") is None
        idle_looks = idle_looks + 1 if idle else 0
        page.wait_for_timeout(150)


# Deep links first: on a fresh server Streamlit serves /serial from pages/ directly until navigation exists. Every
# page is drawn whole in English here, once its first question is answered, and in 中文 by the live-run tests below,
# opened revealed before their Run (the same checks, one visit fewer each); the gate does not depend on the language.
@pytest.mark.parametrize("lang", ["en"])
@pytest.mark.parametrize("key", [k for k, _ in PAGES])
def test_no_chart_shows_until_the_learner_answers_then_the_page_is_drawn_whole(app_url, browser, key, lang):
    """A new visitor sees the question and the controls, no chart; an answer brings the charts and a verdict that
    quotes a measured number, on a page served by dashboard.py with no exception."""
    import re

    page = browser.new_page()
    page.goto(f"{app_url}/{key}?lang={lang}")
    _settle(page)
    page.wait_for_selector("[data-testid='stSidebar'] [data-testid='stSelectbox']", timeout=30000)
    _settle(page)
    assert not page.query_selector_all(CHART), "a chart is visible before any answer"
    page.locator("[data-testid='stRadio'] [role='radiogroup'] label").first.click()  # first question, first option
    page.wait_for_selector(CHART, timeout=60000)
    _settle(page)
    verdict = page.locator("[data-testid='stMarkdown']").filter(has_text=re.compile("Reference, measured on")).first
    assert re.search(r"\d", verdict.inner_text())  # the verdict quotes a number, and says it is the reference's
    assert "Measured here" not in verdict.inner_text()  # nothing was measured in this session
    _drawn_whole(page, key, lang)
    page.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_home_page_renders_in_a_real_browser(app_url, browser, lang):
    page = browser.new_page()
    page.goto(f"{app_url}/?lang={lang}&{SHOWN}")
    _settle(page)
    _drawn_whole(page, "home", lang)
    page.close()


def test_the_home_page_shows_a_finding_only_once_its_question_is_answered(app_url, browser):
    tr = translator("en")
    page = browser.new_page()
    page.goto(f"{app_url}/?lang=en")
    _settle(page)
    page.wait_for_selector("[data-testid='stSidebarNav'] a", timeout=30000)
    body = page.inner_text("[data-testid='stMain']")
    assert "Finding:" not in body and "Answer this page's question" in body  # no answer given away
    page.locator("[data-testid='stSidebarNav'] a").filter(has_text=tr("nav.serial")).first.click()
    _settle(page)
    page.locator("[data-testid='stRadio'] [role='radiogroup'] label").first.click()  # the serial question answered
    page.wait_for_selector(CHART, timeout=60000)
    _settle(page)
    page.locator("[data-testid='stSidebarNav'] a").filter(has_text=tr("nav.home")).first.click()
    _settle(page)
    body = page.inner_text("[data-testid='stMain']")
    assert body.count("Finding:") == 1 and "dependent steps" in body  # serial's finding, and only serial's
    page.close()


def test_damaged_text_checkpoints_cost_their_section_not_the_page(browser, tmp_path):
    from core.workloads import text_lm

    for name in text_lm.models():
        for seed in text_lm.SEEDS:
            text_lm.path_for(name, seed, tmp_path).write_bytes(os.urandom(4096))  # every text model: random bytes
    with serve({"LAB_TEXT_CHECKPOINTS": str(tmp_path)}) as (url, _):
        page = browser.new_page()
        page.goto(f"{url}/long_range?lang=en&{SHOWN}")
        _settle(page)
        page.wait_for_selector(CHART, timeout=60000)
        page.get_by_role("tab").filter(has_text="Real text").first.click()
        _settle(page)
        assert not page.query_selector_all("[data-testid='stException']")
        errors = [e.inner_text() for e in page.query_selector_all("[data-testid='stAlertContentError']")]
        assert any("text_linear_attention_seed0.pt" in e for e in errors), errors  # one message naming the file
        page.get_by_role("tab").filter(has_text="The recall task").first.click()
        _settle(page)
        assert len([c for c in page.query_selector_all(CHART) if c.is_visible()]) >= 1  # the other sections drawn
        page.close()


def _drawn_whole(page, key: str, lang: str) -> None:
    """The page came from dashboard.py (its sidebar), drew its charts (a question answered) and no exception, and in
    中文 shows no English sentence."""
    if key != "home":
        page.wait_for_selector(CHART, timeout=30000)
    errors = page.query_selector_all("[data-testid='stException']")
    assert not errors, errors[0].inner_text()[:500]
    # a deep link's first run may end between its two script runs (pages/ mode, then dashboard.py): wait for the
    # second, whose sidebar the browser may show only once that run has drawn the page (seen racing both ways)
    sidebar = "[data-testid='stSidebar'] [data-testid='stSelectbox']"
    page.wait_for_selector(sidebar, timeout=30000)
    _settle(page)
    assert page.query_selector(sidebar), "not served via dashboard.py"
    assert not page.query_selector_all("[data-testid='stException']")
    assert "Page not found" not in page.inner_text("body")
    if key != "home":
        assert len(page.query_selector_all(CHART)) >= 1
    if lang == "zh":
        english = _english_on(page)
        assert not english, f"English on the 中文 page {key}: {english[:80]}"


# On a 中文 page: two English words in a row are a phrase left untranslated (a note such as "would need 12 GiB"); True/
# False is Python's boolean; a status is the CSV's word. Single names (LSTM, FlashAttention, Post-LN…), units and code
# (<code>, <pre>) are not flagged.
ENGLISH_RUN = re.compile(r"(?<![\w./-])(?:[A-Za-z][a-z]+ )+[A-Za-z][a-z]+(?![\w-])")
RAW_WORDS = re.compile(r"\b(?:True|False|skipped_memory|skipped_time|unsupported|diverged|stalled|nan)\b")


def _english_on(page) -> list[str]:
    """English sentences, booleans and raw statuses in the visible text of the page's main area (code left out)."""
    text = page.evaluate(
        """() => { const main = document.querySelector("[data-testid='stMain']") || document.body;
                   const copy = main.cloneNode(true); copy.querySelectorAll('code, pre').forEach(e => e.remove());
                   document.body.appendChild(copy); copy.style.position = 'absolute'; copy.style.left = '-99999px';
                   const t = copy.innerText; copy.remove(); return t; }"""
    )
    return ENGLISH_RUN.findall(text) + RAW_WORDS.findall(text)


MAIN_EXPERIMENT = {
    "serial": "serial",
    "long_range": "long_range",
    "depth": "depth",
    "attention_cost": "attention_cost",
    "answers": "answers_speed",
}


def _tiny_link(key: str) -> str:
    """The page's main form set, through the link, to its experiment's 'tiny' preset (seconds, not a quick run's
    half-minute: the words a run writes are the same)."""
    from core.experiments import EXPERIMENTS

    tiny = EXPERIMENTS[MAIN_EXPERIMENT[key]].presets["tiny"]
    values = {k: ",".join(map(str, v)) if isinstance(v, tuple) else str(v) for k, v in tiny.items()}
    return urllib.parse.urlencode(values)


@pytest.mark.parametrize("key", [k for k, _ in PAGES])
def test_a_live_run_on_every_chinese_page_shows_no_english(app_url, browser, key):
    # what core writes while a run goes on and after it (notes, statuses, device labels, takeaways) in 中文 words
    page = browser.new_page()
    page.set_viewport_size({"width": 1280, "height": 800})  # the width the after-run check holds charts to
    page.goto(f"{app_url}/{key}?lang=zh&{SHOWN}&{_tiny_link(key)}")
    _settle(page)
    _drawn_whole(page, key, "zh")  # the reference's charts and words, before the run
    assert translator("zh")("ui.bad_url", error="\x00").split("\x00")[0] not in page.inner_text("body")  # tiny, taken
    press_run(page, "运行")  # the page's main form: tiny
    page.wait_for_timeout(1500)
    _settle(page, 180)
    assert "你的运行" in page.inner_text("body")  # the run's rows are drawn
    assert not page.query_selector_all("[data-testid='stException']")
    if key in RUN_PAGES:  # as tests/test_browser_after_run.py checks them in English
        assert not after_run.problems(page, "zh"), after_run.problems(page, "zh")
        page.set_viewport_size({"width": 1280, "height": 800})
    english = _english_on(page)
    assert not english, f"English on the 中文 page {key} after a live run: {english[:8]}"
    if key == "answers":
        _home_says_this_run(page)
    page.close()


def _home_says_this_run(page) -> None:
    """The home page, opened from the sidebar in the same session after page 5's tiny run (n = 8, 16): its page-5
    finding and Table 1's scan row state this run's longest length, not the reference's (n = 8,192)."""
    from core.terms.i18n import translator

    tr = translator("zh")
    page.locator("[data-testid='stSidebarNav'] a").filter(has_text=tr("nav.home")).first.click()
    page.wait_for_selector(f"text=/{tr('home.finding')}/", timeout=60000)
    _settle(page)
    finding = page.locator("[data-testid='stMarkdown']").filter(has_text=re.compile(f"^{tr('home.finding')}.*minGRU"))
    scan = page.locator("[data-testid='stTable'] tr").filter(has_text=tr("home.t1.scan"))
    for text in (finding.first.inner_text(), scan.first.inner_text()):
        assert "n = 16" in text and "8,192" not in text, text


EVIL = '![x](http://evil.example/pixel.png) [click here](http://evil.example/login) <b id="injected">b</b> www.evil.example'


@pytest.mark.parametrize("key", [k for k, _ in PAGES])
def test_markdown_and_html_in_the_url_stay_text(app_url, browser, key):
    """Every config field of every experiment, set from the link to Markdown and HTML: none of it is drawn."""
    import dataclasses
    import urllib.parse

    from core.experiments import EXPERIMENTS

    names = {f.name for e in EXPERIMENTS.values() for f in dataclasses.fields(e.config_cls)}
    names = sorted(names | {"lang"} | set(REVEALED))  # the predictions' parameters too
    page = browser.new_page()
    page.goto(f"{app_url}/{key}?" + urllib.parse.urlencode(dict.fromkeys(names, EVIL)))
    _settle(page)
    open_form(page)
    page.wait_for_selector("[data-testid='stAlert']", timeout=30000)  # the link's settings are refused, once
    assert "evil.example" in page.inner_text("body")  # shown, as text
    assert not page.query_selector_all("img[src*='evil.example']")
    assert not page.query_selector_all("a[href*='evil.example']")
    assert not page.query_selector_all("#injected")
    assert not page.query_selector_all("[data-testid='stException']")
    page.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_csv_from_another_machine_is_added_in_the_sidebar(app_url, browser, lang, tmp_path):
    """The uploader takes a relabelled reference CSV (one message naming its device) and refuses junk (one
    message, saying why in the page's language), and the page keeps working."""
    import pandas as pd

    from core.store.results import REFERENCE_DIR

    good = tmp_path / "serial-gpu.csv"
    df = pd.read_csv(next(REFERENCE_DIR.glob("serial-*.csv")))
    df["device"], df["device_type"] = "cuda · Browser Test GPU", "cuda"
    df.to_csv(good, index=False)
    junk = tmp_path / "serial-junk.csv"
    junk.write_bytes(b"name,age\nada,-1\n")
    page = browser.new_page()
    page.goto(f"{app_url}/serial?lang={lang}&{SHOWN}")
    _settle(page)
    page.locator("[data-testid='stSidebar'] [data-testid='stExpander'] summary").first.click()
    page.locator("[data-testid='stSidebar'] input[type='file']").set_input_files([str(good), str(junk)])
    page.wait_for_selector("text=/Browser Test GPU/", timeout=60000)
    _settle(page)
    sidebar = page.inner_text("[data-testid='stSidebar']")
    assert "Browser Test GPU" in sidebar and "serial-junk.csv" in sidebar
    tr = translator(lang)
    assert tr("upload.missing_columns") in sidebar, sidebar  # why the junk was refused, in the page's language
    assert len(page.query_selector_all("[data-testid='stSidebar'] [data-testid='stAlert']")) == 2
    assert page.query_selector_all(CHART) and not page.query_selector_all("[data-testid='stException']")
    page.close()
