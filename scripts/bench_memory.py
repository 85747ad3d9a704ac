#!/usr/bin/env python3
"""Benchmark (not a test): does a long-lived server's memory level off? Repeated live runs, one server process.

    python scripts/bench_memory.py [--runs 10] [--pages serial,long_range,depth,attention_cost,answers] [--smoke]

Starts `streamlit run dashboard.py`; for each page, `--runs` times: a new browser tab (a new visitor) opens the
page, presses the main form's Run (the quick preset; `--smoke`: two tiny runs on one page), waits for the run to end,
and closes. The server's resident
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
import after_run
from bench_startup import ARGS, ROOT, SMOKE, start, stop_all, tree_rss_mib


def one_run(browser, url: str, key: str, link: str = "", timeout_s: float = 300) -> float:
    """One visitor's run on page `key` (its quick preset, or the form's values in `link`); the seconds it took. A run
    that never starts is a RuntimeError, one that never ends one too (with a screenshot)."""
    page = after_run.open_page(browser, url, key, "en", (key,), {"width": 1400, "height": 1000}, link)
    took = after_run.run_page(page, "en", timeout_s)["seconds"]
    if page.query_selector(after_run.PROGRESS) is not None:
        shot = f"/tmp/bench_memory_{key}.png"
        page.screenshot(path=shot, full_page=True)
        raise RuntimeError(f"{key}: the run did not end within {timeout_s:.0f} s (see {shot})")
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
    ap.add_argument("--smoke", action="store_true", help=f"two tiny runs on the serial page: {SMOKE}")
    args = ap.parse_args()
    if args.smoke:
        args.runs, args.pages = 2, "serial"
    if args.runs < 2:
        ap.error(f"--runs: {args.runs} must be at least 2 (the growth is read from run 2 on)")
    link = after_run.tiny_link("serial") if args.smoke else ""
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
                    secs.append(one_run(browser, url, key, link))
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
    flags = ("--smoke" if args.smoke else f"--runs {args.runs}") + (f" --settle {args.settle:g}" if settle else "")
    flags += f" --session-ttl {args.session_ttl}" if args.session_ttl is not None else ""
    print(f"Measured {datetime.date.today().isoformat()} with `python scripts/bench_memory.py {flags}`.\n")
    later_head = f" {args.settle:.0f} s later |" if settle else ""
    preset = "tiny" if args.smoke else "quick"
    print(
        f"| page ({args.runs} {preset} runs, one server) | server RSS after run 2 | after run {args.runs} | growth |"
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
