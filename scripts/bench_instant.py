"""How fast each page's instant view answers its slider: input to redraw, in a real browser.

    python scripts/bench_instant.py [--moves 10] [--langs en] [--pages serial …] [--shots DIR] [--smoke]

Starts the app, opens each bottleneck page in headless Chromium (Debian's /usr/bin/chromium, through Playwright) at
1280×800 with every question answered "just show me", finds the page's instant view (the container keyed
`instant-<section>`), and moves its first slider one notch with the keyboard `--moves` times, back and forth. Each
move is timed from the key press until the view's sentences and its chart have both changed and the app is idle
again. Prints the median and worst per page and language against the 500 ms budget; `--shots DIR` saves each view
(`instant-<page>-<lang>.png`). Exit status 1 if a median is over budget (not with `--smoke`) or a view is missing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from after_run import EXCEPTION, open_page
from bench_startup import ARGS, ROOT, SMOKE, start, stop_all

from core.findings import verdicts

QUESTIONS = tuple(verdicts.QUESTIONS)
VIEWS = {"serial": "serial", "long_range": "long_range", "depth": "depth", "attention_cost": "attention_cost",
         "answers": "answers"}  # page → its section key with an instant view  # fmt: skip
BUDGET_MS = 500
TIMEOUT_MS = 30_000  # a move the view never answers
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"

# the view's sentences and its first chart's drawing: both must change for a move to count as redrawn
STATE_JS = """(sel) => {
  const box = document.querySelector(sel);
  if (!box) return null;
  const text = [...box.querySelectorAll('[data-testid="stMarkdownContainer"] li')].map(e => e.innerText).join('|');
  const svg = box.querySelector('.vega-embed svg');
  return {text, chart: svg ? svg.innerHTML.length + ':' + svg.innerHTML.slice(-400) : ''};
}"""
CHANGED_JS = """([sel, before]) => {
  const box = document.querySelector(sel);
  if (!box || !document.querySelector(IDLE)) return false;
  const text = [...box.querySelectorAll('[data-testid="stMarkdownContainer"] li')].map(e => e.innerText).join('|');
  const svg = box.querySelector('.vega-embed svg');
  const chart = svg ? svg.innerHTML.length + ':' + svg.innerHTML.slice(-400) : '';
  return text !== before.text && chart !== before.chart;
}""".replace("IDLE", repr(IDLE))


def moves(page, sel: str, n: int) -> list[float]:
    """Milliseconds from each key press to the redrawn view, n moves of one notch, back and forth."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    slider = page.locator(f"{sel} input[type='range']").first
    slider.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    out = []
    for i in range(n):
        at, top = float(slider.input_value() or 0), float(slider.get_attribute("max") or 0)
        key = "ArrowLeft" if (i % 2 == 1 or at >= top) else "ArrowRight"
        before = page.evaluate(STATE_JS, sel)
        slider.focus()
        t0 = time.perf_counter()
        page.keyboard.press(key)
        try:
            page.wait_for_function(CHANGED_JS, arg=[sel, before], polling="raf", timeout=TIMEOUT_MS)
            out.append(1e3 * (time.perf_counter() - t0))
        except PlaywrightTimeout:  # counted at the limit, and the worst column shows it
            out.append(float(TIMEOUT_MS))
        page.wait_for_timeout(300)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moves", type=int, default=10, help="slider moves per view (at least 1)")
    ap.add_argument("--langs", nargs="*", default=["en"])
    ap.add_argument("--pages", nargs="*", default=list(VIEWS), choices=list(VIEWS))
    ap.add_argument("--shots", default=None, help="a folder for a picture of each view (PNG)")
    ap.add_argument("--smoke", action="store_true", help=f"one move on the serial page, budget not judged: {SMOKE}")
    args = ap.parse_args()
    if args.smoke:
        args.moves, args.langs, args.pages = 1, ["en"], ["serial"]
    if args.moves < 1:
        print("--moves: must be at least 1", file=sys.stderr)
        return 2
    shots = Path(args.shots) if args.shots else None
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    rows = []
    try:
        _, url, _ = start("dashboard.py", ROOT)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            for lang in args.langs:
                for key in args.pages:
                    page = open_page(browser, url, key, lang, QUESTIONS)
                    sel = f".st-key-instant-{VIEWS[key].replace(':', '-')}"
                    if page.query_selector(sel) is None or page.query_selector(EXCEPTION) is not None:
                        rows.append({"page": key, "lang": lang, "ms": [], "problem": "no view, or an exception"})
                        page.close()
                        continue
                    moves(page, sel, 1)  # the first move warms the fragment up; not counted
                    ms = moves(page, sel, args.moves)
                    if shots is not None:
                        page.locator(sel).screenshot(path=str(shots / f"instant-{key}-{lang}.png"))
                    rows.append({"page": key, "lang": lang, "ms": ms, "problem": ""})
                    page.close()
            browser.close()
    finally:
        stop_all()
    print(
        f"{'page':<16}{'lang':<6}{'moves':>6}{'median ms':>11}{'worst ms':>10}  verdict (budget: median ≤ {BUDGET_MS} ms)"
    )
    ok = True
    for r in rows:
        if not r["ms"]:
            print(f"{r['page']:<16}{r['lang']:<6}{0:>6}{'—':>11}{'—':>10}  {r['problem']}")
            ok = False
            continue
        med, worst = statistics.median(r["ms"]), max(r["ms"])
        good = med <= BUDGET_MS
        ok &= good or args.smoke
        print(f"{r['page']:<16}{r['lang']:<6}{len(r['ms']):>6}{med:>11,.0f}{worst:>10,.0f}  {'ok' if good else 'over'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
