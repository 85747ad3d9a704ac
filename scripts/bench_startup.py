#!/usr/bin/env python3
"""Benchmark (not a test): cold start, page switches and memory at rest, against a bare one-page Streamlit app.

    python scripts/bench_startup.py [--runs 3] [--smoke]

Cold start = `streamlit run` launched → in headless Chromium, the home page's story and every card with its finding
(or, before its question is answered, the line saying so) drawn (and, a second figure, the whole home page with Table 1). Page switch = a click in the navigation → the
page's first chart drawn (reference data, no measuring); on a first visit the page first asks its question, which
the benchmark answers "Just show me" as soon as it appears (that click is in the time), a later visit in the same
session is already revealed. Memory = resident set size of the server process after visiting every page. Every
server it starts is stopped (its whole process group), also when a step fails. Prints a Markdown table, with the
date, for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHART = "[data-testid='stVegaLiteChart'], .vega-embed"
JUST_SHOW = "button:has-text('Just show me')"  # the question's "just show me" (ui.just_show, English)
SMOKE = "the least work that runs every part once, to check that it runs (its figures are not for reading)"
SERVERS: list[subprocess.Popen] = []  # every server started, stopped by stop_all() whatever happens


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(app: str, cwd: str, extra: tuple[str, ...] = ()):
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            app,
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
            *extra,
        ],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    SERVERS.append(proc)
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as r:
                if r.read().strip() == b"ok":
                    break
        except OSError:
            time.sleep(0.05)
        if time.perf_counter() - t0 > 60:
            raise RuntimeError("server did not start")
    return proc, url, t0


def stop(proc: subprocess.Popen) -> None:
    """Stop a server and everything it started (its process group), at once if it will not go quietly."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass


def stop_all() -> None:
    for proc in SERVERS:
        stop(proc)


def rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:  # it has just ended
        return 0.0
    return 0.0


def descendants(pid: int) -> list[int]:
    """Every process started by `pid`, recursively (Linux: /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def tree_rss_mib(pid: int) -> tuple[float, float]:
    """(the server's own RSS, the RSS of everything it started: live runs' worker processes) in MiB."""
    return rss_mib(pid), sum(rss_mib(k) for k in descendants(pid))


def cold_start(browser, app: str, cwd: str, ready: str) -> tuple[float, subprocess.Popen, object, float]:
    """Seconds from launching `streamlit run app` to `ready` (a JS expression) being true in a new tab; the server,
    the tab and the launch time."""
    proc, url, t0 = start(app, cwd)
    page = browser.new_page()
    page.goto(url + "/")
    page.wait_for_function(ready, timeout=60000)
    return time.perf_counter() - t0, proc, page, t0


def home_ready(n_cards: int) -> str:
    """The home page's story and all its cards are drawn, each with its finding ("Finding:" in bold) or, while its
    page's question is unanswered, the line that says so (home.find.locked): the home page as a learner sees it."""
    import json

    from core.terms.i18n import t

    finding, locked = json.dumps(t("home.finding", "en")), json.dumps(t("home.find.locked", "en"))
    return (
        "document.querySelectorAll('h1').length > 0 && ([...document.querySelectorAll('strong')]"
        f".filter(e => e.textContent.trim() === {finding}).length + [...document.querySelectorAll('p')]"
        f".filter(e => e.textContent.trim() === {locked}).length) >= {n_cards}"
    )


def switch_to(page, key: str) -> float:
    """Click `key` in the navigation; seconds until its first chart is drawn (answering 'Just show me' if asked)."""
    link = page.locator(f"[data-testid='stSidebarNav'] a[href$='/{key}']")
    t0 = time.perf_counter()
    link.click()
    page.wait_for_selector(f"{CHART}, {JUST_SHOW}", timeout=60000)
    if page.query_selector(CHART) is None:
        page.locator(JUST_SHOW).first.click()
        page.wait_for_selector(CHART, timeout=60000)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help=f"one run, one page switch: {SMOKE}")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from ui.frame import PAGES  # not ui.common, whose cached helpers log "No runtime found" outside a server

    if args.smoke:
        args.runs = 1
    pages = PAGES[:1] if args.smoke else PAGES

    bare_dir = tempfile.mkdtemp()
    with open(os.path.join(bare_dir, "bare.py"), "w") as f:
        f.write("import streamlit as st\nst.title('Hello')\n")
    bare, lab, full, rss = [], [], [], []
    switch = {(k, visit): [] for k, _ in pages for visit in (1, 2)}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            for run in range(args.runs):
                s, proc, page, _ = cold_start(browser, "bare.py", bare_dir, "document.querySelectorAll('h1').length")
                bare.append(s)
                page.close()
                stop(proc)
                s, proc, page, t0 = cold_start(browser, "dashboard.py", ROOT, home_ready(len(PAGES)))
                lab.append(s)
                page.wait_for_selector("[data-testid='stTable']", timeout=60000)  # Table 1, below the cards
                full.append(time.perf_counter() - t0)
                page.wait_for_timeout(3000)  # a learner reads the home page for a moment: torch warms up meanwhile
                for visit, key in [(v, k) for v in (1, 2) for k, _ in pages]:
                    switch[(key, visit)].append(switch_to(page, key))
                    page.wait_for_timeout(500)
                    page.locator("[data-testid='stSidebarNav'] a").first.click()
                    page.wait_for_function(home_ready(len(PAGES)), timeout=60000)
                    page.wait_for_timeout(500)
                rss.append(rss_mib(proc.pid))
                page.close()
                stop(proc)
                print(f"run {run + 1}: bare {bare[-1]:.2f} s, lab {lab[-1]:.2f} s", file=sys.stderr)
            browser.close()
    finally:
        stop_all()
    med = statistics.median
    flags = "--smoke" if args.smoke else f"--runs {args.runs}"
    print(f"Measured {datetime.date.today().isoformat()} with `python scripts/bench_startup.py {flags}`.\n")
    print(f"| measure (median of {args.runs}) | value |\n|---|---|")
    print(f"| cold start, bare one-page app | {med(bare):.1f} s |")
    print(f"| cold start, lab home page: story and cards drawn | {med(lab):.1f} s ({med(lab) / med(bare):.1f}× bare) |")
    print(f"| cold start, lab home page: Table 1 drawn too | {med(full):.1f} s ({med(full) / med(bare):.1f}× bare) |")
    for key, _ in pages:
        print(
            f"| switch to `{key}`: first chart drawn, first visit / later visit | "
            f"{med(switch[(key, 1)]):.2f} s / {med(switch[(key, 2)]):.2f} s |"
        )
    print(f"| server memory after visiting every page | {med(rss):.0f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
