#!/usr/bin/env python3
"""Benchmark (not a test): does a long-lived server's memory level off? Repeated live runs, one server process.

    python scripts/bench_memory.py [--runs 10] [--pages serial,long_range,depth,attention_cost,answers]

Starts `streamlit run dashboard.py`; for each page, `--runs` times: a new browser tab (a new visitor) opens the
page, presses the main form's Run (the quick preset), waits for the run to end, and closes. The server's resident
set size is read after every run. Prints one Markdown row per page for docs/BENCHMARKS.md: RSS after the 2nd and the last
run, and their difference (the issue's bar: within 150 MiB), and the RSS of the worker processes the server
started (a live run measures in one of those, core.server.jobs, not in the server). Each tab opens its page as a revealed link
(`?predict.<page>=show`, the prediction question answered "just show me"), so the reference charts show at once.
The server (its whole process group) is stopped whatever happens.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_startup import ARGS, ROOT, start, stop_all, tree_rss_mib


def _wait(page, key: str, selector: str, what: str, timeout_s: float, **kw) -> None:
    """Wait for `selector`; if it does not come, say which step of the visit stalled (with a screenshot), then fail:
    a page that never draws or a run that never ends is a finding, not a Playwright traceback."""
    try:
        page.wait_for_selector(selector, timeout=timeout_s * 1000, **kw)
    except Exception:  # noqa: BLE001 - any Playwright timeout or closed page
        shot = f"/tmp/bench_memory_{key}.png"
        page.screenshot(path=shot, full_page=True)
        bar = page.inner_text("[data-testid='stProgress']") if page.query_selector("[data-testid='stProgress']") else ""
        raise RuntimeError(f"{key}: {what} within {timeout_s:.0f} s (progress: {bar!r}; see {shot})") from None


def one_run(browser, url: str, key: str, timeout_s: float = 300) -> float:
    """One visitor's quick run on page `key`; the seconds it took."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/{key}?lang=en&predict.{key}=show")  # a revealed link: the reference charts show at once
    _wait(page, key, "[data-testid='stVegaLiteChart'], .vega-embed", "no reference chart was drawn", 60)
    t0 = time.perf_counter()
    page.get_by_role("button", name="Run", exact=True).first.click()
    _wait(page, key, "text=/done —/", "the progress bar did not move", 60)  # the run is on
    _wait(page, key, "[data-testid='stProgress']", "the run did not end", timeout_s, state="detached")
    took = time.perf_counter() - t0
    page.close()
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--pages", default="serial,long_range,depth,attention_cost,answers")
    ap.add_argument(
        "--session-ttl",
        type=int,
        default=None,
        help="server.disconnectedSessionTTL in seconds (default: the app's config, Streamlit's 120)",
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="after a page's last run, wait this long and read RSS again: memory that a closed tab's "
        "session still holds (kept for the TTL, in case it reconnects) is then handed back",
    )
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    extra = () if args.session_ttl is None else ("--server.disconnectedSessionTTL", str(args.session_ttl))
    rows = []
    try:
        proc, url, _ = start("dashboard.py", ROOT, extra)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            for key in args.pages.split(","):
                rss, workers, secs = [], [], []
                for i in range(args.runs):
                    secs.append(one_run(browser, url, key))
                    time.sleep(1)  # let the session's script run finish and the tab's session close
                    server, spawned = tree_rss_mib(proc.pid)
                    rss.append(server)
                    workers.append(spawned)
                    print(f"{key} run {i + 1}: {secs[-1]:.1f} s, server RSS {server:.0f} MiB, "
                          f"its worker processes {spawned:.0f} MiB", file=sys.stderr)  # fmt: skip
                settled = math.nan
                if args.settle > 0:
                    time.sleep(args.settle)
                    settled = tree_rss_mib(proc.pid)[0]
                    print(f"{key}: {args.settle:.0f} s later, server RSS {settled:.0f} MiB", file=sys.stderr)
                rows.append((key, rss, secs, settled, workers))
            browser.close()
    except RuntimeError as err:  # a visit that stalled: one line says where, and the screenshot shows it
        print(f"bench_memory: {err}", file=sys.stderr)
        return 1
    finally:
        stop_all()
    settle = args.settle > 0  # the "later" column only when the run waited for it
    flags = f"--runs {args.runs}" + (f" --settle {args.settle:g}" if settle else "")
    flags += f" --session-ttl {args.session_ttl}" if args.session_ttl is not None else ""
    print(f"Measured {datetime.date.today().isoformat()} with `python scripts/bench_memory.py {flags}`.\n")
    later_head = f" {args.settle:.0f} s later |" if settle else ""
    print(
        f"| page ({args.runs} quick runs, one server) | server RSS after run 2 | after run {args.runs} | growth |"
        f"{later_head} worker processes after run {args.runs} |"
    )
    print("|---|---|---|---|" + ("---|" if settle else "") + "---|")
    for key, rss, _, settled, workers in rows:
        later = (f" {settled:.0f} MiB |" if math.isfinite(settled) else " – |") if settle else ""
        growth = f"{rss[-1] - rss[1]:+.0f}".replace("-", "\u2212")  # a minus sign, as docs/BENCHMARKS.md writes it
        print(f"| `{key}` | {rss[1]:.0f} MiB | {rss[-1]:.0f} MiB | {growth} MiB |{later} {workers[-1]:.0f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
