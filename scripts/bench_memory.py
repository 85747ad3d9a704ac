#!/usr/bin/env python3
"""Benchmark (not a test): does a long-lived server's memory level off? Repeated live runs, one server process.

    python scripts/bench_memory.py [--runs 10] [--pages serial,long_range,depth,attention_cost,answers]

Starts `streamlit run dashboard.py`; for each page, `--runs` times: a new browser tab (a new visitor) opens the
page, presses the main form's Run (the quick preset), waits for the run to end, and closes. The server's resident
set size is read after every run. Prints one Markdown row per page for the README: RSS after the 2nd and the last
run, and their difference (the issue's bar: within 150 MiB), and the RSS of the worker processes the server
started (a live run measures in one of those, core.jobs, not in the server). Each tab opens its page as a revealed link
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


def one_run(browser, url: str, key: str, timeout_s: float = 300) -> float:
    """One visitor's quick run on page `key`; the seconds it took."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/{key}?lang=en&predict.{key}=show")  # a revealed link: the reference charts show at once
    page.wait_for_selector("[data-testid='stVegaLiteChart'], .vega-embed", timeout=60000)
    t0 = time.perf_counter()
    page.get_by_role("button", name="Run", exact=True).first.click()
    page.wait_for_selector("text=/done —/", timeout=60000)  # the progress bar has moved: the run is on
    try:
        page.wait_for_selector("[data-testid='stProgress']", state="detached", timeout=timeout_s * 1000)
    except Exception:  # noqa: BLE001 - say where it stood, then fail: a run that never ends is a finding
        shot = f"/tmp/bench_memory_{key}.png"
        page.screenshot(path=shot, full_page=True)
        bar = page.inner_text("[data-testid='stProgress']") if page.query_selector("[data-testid='stProgress']") else ""
        raise RuntimeError(f"{key}: the run did not end in {timeout_s:.0f} s (progress: {bar!r}; see {shot})") from None
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
    finally:
        stop_all()
    print(f"Measured {datetime.date.today().isoformat()} with `python scripts/bench_memory.py --runs {args.runs}`.\n")
    print(
        f"| page ({args.runs} quick runs, one server) | server RSS after run 2 | after run {args.runs} | growth "
        f"| {args.settle:.0f} s later | worker processes after run {args.runs} |"
    )
    print("|---|---|---|---|---|---|")
    for key, rss, _, settled, workers in rows:
        later = f"{settled:.0f} MiB" if math.isfinite(settled) else "–"
        print(
            f"| `{key}` | {rss[1]:.0f} MiB | {rss[-1]:.0f} MiB | {rss[-1] - rss[1]:+.0f} MiB | {later} "
            f"| {workers[-1]:.0f} MiB |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
