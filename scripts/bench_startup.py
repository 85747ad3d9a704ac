#!/usr/bin/env python3
"""Benchmark (not a test): cold start, page switches and memory at rest, against a bare one-page Streamlit app.

    python scripts/bench_startup.py [--runs 3]

Cold start = `streamlit run` launched → the home page's title drawn in headless Chromium. Page switch = a click
in the navigation → the page's first chart drawn (reference data, no measuring). Memory = resident set size of
the server process after visiting every page. Prints a Markdown table for the README.
"""

from __future__ import annotations

import argparse
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


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cold_start(browser, app: str, cwd: str, path: str = "/") -> tuple[float, object, str]:
    proc, url, t0 = start(app, cwd)
    page = browser.new_page()
    page.goto(url + path)
    page.wait_for_selector("h1", timeout=60000)
    return time.perf_counter() - t0, proc, url, page


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from ui.common import PAGES

    bare_dir = tempfile.mkdtemp()
    with open(os.path.join(bare_dir, "bare.py"), "w") as f:
        f.write("import streamlit as st\nst.title('Hello')\n")
    bare, lab, rss = [], [], []
    switch = {(k, visit): [] for k, _ in PAGES for visit in (1, 2)}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for _ in range(args.runs):
            s, proc, _, page = cold_start(browser, "bare.py", bare_dir)
            bare.append(s)
            page.close()
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            s, proc, _url, page = cold_start(browser, "dashboard.py", ROOT)
            lab.append(s)
            page.wait_for_timeout(3000)  # a learner reads the home page for a moment: torch warms up meanwhile
            for visit, key in [(v, k) for v in (1, 2) for k, _ in PAGES]:
                link = page.locator(f"[data-testid='stSidebarNav'] a[href$='/{key}']")
                t0 = time.perf_counter()
                link.click()
                page.wait_for_selector("[data-testid='stVegaLiteChart'], .vega-embed", timeout=60000)
                switch[(key, visit)].append(time.perf_counter() - t0)
                page.wait_for_timeout(500)
                home = page.locator("[data-testid='stSidebarNav'] a").first
                home.click()
                page.wait_for_selector("h1", timeout=60000)
                page.wait_for_timeout(500)
            rss.append(rss_mib(proc.pid))
            page.close()
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
        browser.close()
    med = statistics.median
    print(f"| measure (median of {args.runs}) | value |\n|---|---|")
    print(f"| cold start, bare one-page app | {med(bare):.1f} s |")
    print(f"| cold start, lab home page | {med(lab):.1f} s ({med(lab) / med(bare):.1f}× bare) |")
    for key, _ in PAGES:
        print(
            f"| switch to `{key}`: first chart drawn, first visit / later visit | "
            f"{med(switch[(key, 1)]):.2f} s / {med(switch[(key, 2)]):.2f} s |"
        )
    print(f"| server memory after visiting every page | {med(rss):.0f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
