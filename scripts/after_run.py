"""A page after a learner's Run, as a browser shows it: press Run on a page's main section, watch the run, and check
what it leaves (used by `scripts/bench_pages.py --after-run` and by tests/test_browser_after_run.py).

`run_page` answers the page's questions "just show me", opens its first "measure it yourself", presses Run and
follows the run until it ends, noting whether the section's chart drew rows before it ended; `overflow` lists every
chart wider than its column and every legend label cut (Vega's "…", or a label drawn outside its chart).
"""

from __future__ import annotations

import re
import time
import urllib.parse

FORM = re.compile("Measure it yourself|亲手测一测")  # the section's form (ui.measure_yourself)
RUN = {"en": "Run", "zh": "运行"}
CHART = ".vega-embed"
PROGRESS = "[data-testid='stProgress']"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
EXCEPTION = "[data-testid='stException']"

# every chart wider than the column it sits in, and every legend label cut short or drawn outside its chart
OVERFLOW_JS = """() => {
  const out = [];
  for (const e of document.querySelectorAll('.vega-embed')) {
    if (!e.offsetParent) continue;
    const column = e.closest('[data-testid="stColumn"], [data-testid="stVerticalBlock"]') || e.parentElement;
    if (e.scrollWidth > column.clientWidth + 1) out.push(`chart ${e.scrollWidth} px wide in a ${column.clientWidth} px column`);
    const svg = e.querySelector('svg');
    if (!svg) continue;
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('.role-legend-label text, .role-legend-title text')) {
      const r = t.getBoundingClientRect();
      if (t.textContent.includes('…')) out.push(`legend label cut: ${t.textContent}`);
      else if (r.width && (r.right > box.right + 1 || r.bottom > box.bottom + 1)) out.push(`legend label outside its chart: ${t.textContent}`);
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push('the page scrolls sideways');
  return out;
}"""


def settle(page, timeout_s: float = 90) -> None:
    """Until the script has run and stayed idle for three looks in a row, then a moment for the charts to draw."""
    deadline, idle = time.time() + timeout_s, 0
    while time.time() < deadline and idle < 3:
        quiet = page.query_selector(IDLE) is not None and page.query_selector("[data-testid='stStatusWidget']") is None
        idle = idle + 1 if quiet else 0
        page.wait_for_timeout(300)
    page.wait_for_timeout(1500)


def tiny_link(experiment: str) -> str:
    """A page's main form set, through its link, to `experiment`'s 'tiny' preset: a run of seconds."""
    from core.experiments import EXPERIMENTS

    tiny = EXPERIMENTS[experiment].presets["tiny"]
    values = {k: ",".join(map(str, v)) if isinstance(v, tuple) else str(v) for k, v in tiny.items()}
    return urllib.parse.urlencode(values)


def open_page(browser, url: str, key: str, lang: str, questions, view=None, link: str = ""):
    """A new tab on page `key` in `lang`, every question answered "just show me", settled; `link`: more of the query
    (a form's values, `tiny_link`)."""
    query = {"lang": lang, **{f"predict.{q}": "show" for q in questions}}
    page = browser.new_page(viewport=view or {"width": 1280, "height": 800})
    page.goto(f"{url}/{key}?{urllib.parse.urlencode(query)}" + (f"&{link}" if link else ""))
    page.wait_for_selector("[data-testid='stAppViewContainer']", timeout=60000)
    settle(page)
    return page


def press_run(page, lang: str, tab: str | None = None) -> None:
    """Open the first "measure it yourself" in view (in `tab`, a tab's label, if given) and press its Run until the
    page takes it (a press that lands before the form's button is wired up leaves the page as it was)."""
    if tab:
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(1000)
    for _ in range(3):
        form = page.locator("[data-testid='stExpander'] details:visible").filter(
            has=page.locator("summary", has_text=FORM)
        )
        if form.first.get_attribute("open") is None:
            form.first.locator("summary").first.click()
        form.first.get_by_role("button", name=RUN[lang], exact=True).first.click(timeout=60000)
        for _ in range(100):
            if page.query_selector(PROGRESS):
                return
            page.wait_for_timeout(200)
    raise RuntimeError("three presses of Run started no run")


def run_page(page, lang: str, timeout_s: float = 180, during_shot: str | None = None, tab: str | None = None) -> dict:
    """Press Run (in `tab`, if given) and follow the run to its end: {'seconds', 'progress': the texts the bar
    showed, 'drawn_during': whether a chart with this run's rows stood on the page while the bar still moved}."""
    press_run(page, lang, tab)
    t0, texts, drawn = time.time(), [], False
    while time.time() - t0 < timeout_s:
        bar = page.query_selector(PROGRESS)
        if bar is None:
            break
        text = bar.inner_text().strip()
        if text and (not texts or texts[-1] != text):
            texts.append(text)
        if not drawn and page.locator("[data-testid='stCaptionContainer']").filter(has_text=_SO_FAR[lang]).count():
            drawn = page.locator(CHART).count() > 0
            if drawn and during_shot:
                page.screenshot(path=during_shot)
        page.wait_for_timeout(500)
    seconds = time.time() - t0
    settle(page, 60)
    return {"seconds": seconds, "progress": texts, "drawn_during": drawn}


_SO_FAR = {"en": "Your run so far", "zh": "你的运行进行中"}  # ui.live_preview's first words


def overflow(page) -> list[str]:
    """What does not fit: charts wider than their column, legend labels cut (OVERFLOW_JS)."""
    return page.evaluate(OVERFLOW_JS)


def names_both(page, lang: str) -> bool:
    """Whether a verdict leads one sentence with your run and one with the reference, each with its device (the
    bold `ui.verdict.beside.*` labels)."""
    from core.terms.i18n import translator

    tr = translator(lang)
    labels = [tr(f"ui.verdict.beside.{who}", device="\x00").split("\x00")[0] for who in ("live", "reference")]
    bold = [b.strip() for b in page.locator("strong").all_inner_texts()]
    return all(any(b.startswith(label) for b in bold) for label in labels)


def problems(page, lang: str, width: int = 1280) -> list[str]:
    """Everything a Run left wrong: a verdict that does not name both runs, and what does not fit, on the first
    screen and on the whole page laid out (a tall window: every chart drawn)."""
    found = [] if names_both(page, lang) else ["the verdict does not name your run and the reference"]
    found += [f"an exception: {e.inner_text()[:200]}" for e in page.query_selector_all(EXCEPTION)]
    found += overflow(page)
    page.set_viewport_size({"width": width, "height": 6000})
    page.wait_for_timeout(2000)
    return found + [p for p in overflow(page) if p not in found]
