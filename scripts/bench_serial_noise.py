"""How clean is a live run with the page open in a browser? (a benchmark that prints figures, not a test)

Starts the app, opens the serial page in headless Chromium (Debian's), presses Run on the quick preset, waits for
the run to end with the page drawing its progress, downloads the results CSV from the page, and counts the points
flagged noisy (an IQR above rules' share of the median) — `--runs` times, one server. After each browser run, the
same preset from the command line (`python -m core run serial --preset quick`, the page's thread count, no browser
drawing): the host's own noise in the same minutes, so a count can be read as the page's doing or the machine's.

    python scripts/bench_serial_noise.py --runs 3
    python scripts/bench_serial_noise.py --smoke   (one run of the tiny preset, both ways)
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import after_run
from bench_startup import ARGS, ROOT, SMOKE, start, stop_all

QUESTIONS = ("serial", "serial.scaling", "serial.ckpt")  # the page's questions, answered "just show me"
VIEW = {"width": 1400, "height": 1000}
DETAILS = "Details:"  # the main section's Details expander (ui.details), where its table's download sits


def _noisy(rows):
    return rows["noisy"].astype(str).str.lower().isin(["true", "yes"])


def _say_noisy(rows) -> None:
    flagged = rows[_noisy(rows)]
    print("   noisy:", ", ".join(f"{m}@{n}" for m, n in zip(flagged["model"], flagged["seq_len"])))


def main() -> None:
    import pandas as pd
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help=f"one run of the tiny preset: {SMOKE}")
    args = ap.parse_args()
    preset = "tiny" if args.smoke else "quick"
    if args.smoke:
        args.runs = 1
    link = after_run.tiny_link("serial") if args.smoke else ""
    _, url, _ = start("dashboard.py", ROOT)
    try:
        print(f"{dt.date.today()}, {os.cpu_count()} cores, serial {preset} preset from the page, browser open:")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            for i in range(args.runs):
                page = after_run.open_page(browser, url, "serial", "en", QUESTIONS, VIEW, link)
                after_run.run_page(page, "en", timeout_s=300)
                page.locator("[data-testid='stExpander'] summary", has_text=DETAILS).first.click()  # the download's
                with page.expect_download(timeout=60000) as dl:
                    page.get_by_role("button", name="Download CSV").first.click()
                df = pd.read_csv(io.BytesIO(Path(dl.value.path()).read_bytes()))
                live = df[df["source"] == "live"] if "source" in df else df
                noisy = int(_noisy(live).sum())
                by = live.set_index(["model", "seq_len"])["train_ms"]
                ratio = by.get(("transformer", 1024), float("nan")) / by.get(("lstm", 1024), float("nan"))
                print(f"run {i + 1}: {noisy} of {len(live)} points noisy; Transformer / LSTM at n = 1,024: "
                      f"{ratio:.2f}x; threads {sorted(set(live['threads']))}")  # fmt: skip
                _say_noisy(live)
                page.close()
                threads = int(live["threads"].min())
                with tempfile.TemporaryDirectory() as tmp:
                    out = Path(tmp) / "serial.csv"
                    cmd = [sys.executable, "-m", "core", "run", "serial", "--preset", preset, "--out", str(out)]
                    env = {**os.environ, "LAB_THREADS": str(threads)}
                    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, env=env)
                    cli = pd.read_csv(out)
                print(f"  command line, {threads} thread(s), same minutes: {_noisy(cli).sum()} of {len(cli)} noisy")
                _say_noisy(cli)
            browser.close()
    finally:
        stop_all()


if __name__ == "__main__":
    main()
