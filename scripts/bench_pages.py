"""How much a learner must read: every page's height, visible words and first chart, in each language.

    python scripts/bench_pages.py [--langs en zh] [--pages home serial …] [--shots DIR]
    python scripts/bench_pages.py --after-run [--langs en zh] [--pages serial …] [--shots DIR]
    python scripts/bench_pages.py --smoke

Starts the app, opens each page in headless Chromium (Debian's /usr/bin/chromium, through Playwright) at 1280×800
with every question answered "just show me" and every expander closed, and prints one row per page and language:
the page's height in px, its visible words (English: runs of letters and digits; 中文: CJK characters), its charts,
and the top of its first chart in px from the page's top. The budgets a page should keep are printed beside them.
`--shots DIR` also saves each page's first screen.

`--after-run` presses Run on each measuring page instead (its main section's quick preset) and prints, once the run
has ended: its seconds, whether a chart drew the run's rows before it ended, whether the verdict names your run and
the reference, and what does not fit at 1280 px (a chart wider than its column, a legend label cut); `--shots DIR`
then saves the whole page after the run (`<page>-<lang>-run.png`) and a screen during it.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_startup import ARGS, CHART, ROOT, SMOKE, start, stop_all

from core.findings import verdicts

QUESTIONS = tuple(verdicts.QUESTIONS)  # every page's question, answered "just show me"
PAGES = ("home", "serial", "long_range", "depth", "attention_cost", "answers")
BUDGET = {"height": 4000, "en": 1000, "zh": 1400, "first_chart": 1200}  # px; visible words; CJK characters; px
VIEW = {"width": 1280, "height": 800}
MAIN = "[data-testid='stMainBlockContainer']"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"

# what the browser counts: the main column's height, its text and charts as shown (nothing inside a closed expander,
# a hidden tab or anything not displayed)
MEASURE_JS = """([main, chart]) => {
  const box = document.querySelector(main);
  if (!box) return null;
  const shown = el => {
    for (let e = el; e && e !== box; e = e.parentElement) {
      if (e.tagName === 'DETAILS' && !e.open && !el.closest('summary')) return false;
      if (getComputedStyle(e).display === 'none' || e.hidden) return false;
    }
    return true;
  };
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  const parts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (el && !['SCRIPT', 'STYLE'].includes(el.tagName) && !el.closest('svg, canvas') && shown(el)) parts.push(n.nodeValue);
  }
  const top = box.getBoundingClientRect().top;
  const charts = [...document.querySelectorAll(chart)].filter(c => !c.parentElement.closest(chart) && shown(c));
  const first = charts.length ? Math.min(...charts.map(c => c.getBoundingClientRect().top - top)) : null;
  return {height: box.scrollHeight, text: parts.join(' '), charts: charts.length, first_chart: first};
}"""


def settle(page, timeout_s: float = 90) -> None:
    """Until the script has run and stayed idle for three looks in a row."""
    page.wait_for_selector("[data-testid='stAppViewContainer']", timeout=60000)
    deadline, idle = time.time() + timeout_s, 0
    while time.time() < deadline and idle < 3:
        quiet = page.query_selector(IDLE) is not None and page.query_selector("[data-testid='stStatusWidget']") is None
        idle = idle + 1 if quiet else 0
        page.wait_for_timeout(300)
    page.wait_for_timeout(1500)  # charts finish drawing after the script ends


def words(text: str, lang: str) -> int:
    if lang == "zh":
        return len(re.findall(r"[\u3400-\u9fff]", text))
    return len(re.findall(r"[A-Za-z0-9][A-Za-z0-9'’.,-]*", text))


def measure(browser, url: str, key: str, lang: str, shots: Path | None) -> dict:
    query = {"lang": lang, **{f"predict.{q}": "show" for q in QUESTIONS}}
    path = "" if key == "home" else key
    page = browser.new_page(viewport=VIEW)
    page.goto(f"{url}/{path}?{urllib.parse.urlencode(query)}")
    settle(page)
    if key != "home":
        if page.query_selector(CHART) is None:  # charts draw after the script: give them a moment
            page.wait_for_timeout(3000)
        settle(page, 20)
    got = page.evaluate(MEASURE_JS, [MAIN, CHART]) or {"height": 0, "text": "", "charts": 0, "first_chart": None}
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"{key}-{lang}.png"))
    page.close()
    return {"page": key, "lang": lang, "height": int(got["height"]), "words": words(got["text"], lang),
            "charts": got["charts"], "first_chart": got["first_chart"]}  # fmt: skip


def verdict(row: dict) -> str:
    over = []
    if row["height"] > BUDGET["height"]:
        over.append("height")
    if row["words"] > BUDGET[row["lang"]]:
        over.append("words")
    if row["page"] != "home" and (row["first_chart"] is None or row["first_chart"] > BUDGET["first_chart"]):
        over.append("first chart")
    return "ok" if not over else "over: " + ", ".join(over)


def after_run(browser, url: str, key: str, lang: str, shots: Path | None) -> dict:
    """One page after a Run (scripts/after_run.py): seconds, drawn during the run, verdict, what does not fit."""
    import after_run as ar

    page = ar.open_page(browser, url, key, lang, QUESTIONS, VIEW)
    during = str(shots / f"{key}-{lang}-during.png") if shots else None
    got = ar.run_page(page, lang, during_shot=during)
    both = ar.names_both(page, lang)
    bad = ar.overflow(page) + [f"an exception: {e.inner_text()[:120]}" for e in page.query_selector_all(ar.EXCEPTION)]
    if shots is not None:
        page.set_viewport_size({"width": VIEW["width"], "height": 6000})
        page.wait_for_timeout(2500)
        bad = sorted(set(bad) | set(ar.overflow(page)))  # the charts below the first screen too
        page.screenshot(path=str(shots / f"{key}-{lang}-run.png"))
    page.close()
    return {"page": key, "lang": lang, "seconds": got["seconds"], "during": got["drawn_during"], "both": both,
            "overflow": bad, "progress": got["progress"][-1:] }  # fmt: skip


def each_page(args, visit, pages) -> list[dict]:
    """`visit(browser, url, key, lang)` for every page and language, in one server and one headless Chromium."""
    from playwright.sync_api import sync_playwright

    rows = []
    try:
        _, url, _ = start("dashboard.py", ROOT)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            rows = [visit(browser, url, key, lang) for lang in args.langs for key in pages]
            browser.close()
    finally:
        stop_all()
    return rows


def main_after_run(args, shots: Path | None) -> int:
    pages = [k for k in args.pages if k != "home"]
    rows = each_page(args, lambda b, url, key, lang: after_run(b, url, key, lang, shots), pages)
    print(f"{'page':<16}{'lang':<6}{'run s':>7}  {'drawn during':<13}{'both runs':<11}what does not fit")
    for r in rows:
        print(f"{r['page']:<16}{r['lang']:<6}{r['seconds']:>7.1f}  {'yes' if r['during'] else 'no':<13}"
              f"{'yes' if r['both'] else 'no':<11}{'; '.join(r['overflow']) or 'nothing'}")  # fmt: skip
    return 0 if all(r["during"] and r["both"] and not r["overflow"] for r in rows) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--langs", nargs="*", default=["en", "zh"])
    ap.add_argument("--pages", nargs="*", default=list(PAGES))
    ap.add_argument("--shots", default=None, help="a folder for each page's first screen (PNG)")
    ap.add_argument("--after-run", action="store_true", help="press Run on each page and check what it leaves")
    ap.add_argument("--smoke", action="store_true", help=f"one page in English, budgets not judged: {SMOKE}")
    args = ap.parse_args()
    if args.smoke:
        args.langs, args.pages = ["en"], ["serial"]
    shots = Path(args.shots) if args.shots else None
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    if args.after_run:
        return main_after_run(args, shots)
    rows = each_page(args, lambda b, url, key, lang: measure(b, url, key, lang, shots), args.pages)
    print(f"budgets: height ≤ {BUDGET['height']:,} px; ≤ {BUDGET['en']:,} words (en) or ≤ {BUDGET['zh']:,} CJK "
          f"characters (zh); first chart's top ≤ {BUDGET['first_chart']:,} px")  # fmt: skip
    print(f"{'page':<16}{'lang':<6}{'height px':>10}{'words':>8}{'charts':>8}{'1st chart px':>14}  verdict")
    for r in rows:
        first = "—" if r["first_chart"] is None else f"{r['first_chart']:,.0f}"
        print(f"{r['page']:<16}{r['lang']:<6}{r['height']:>10,}{r['words']:>8,}{r['charts']:>8}{first:>14}  "
              f"{verdict(r)}")  # fmt: skip
    return 0 if args.smoke or all(verdict(r) == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
