"""Take the README's picture of the lab: `python scripts/take_picture.py` (writes docs/serial.png).

Starts the app, opens the serial-computation page in headless Chromium (Debian's /usr/bin/chromium, through
Playwright's Python package) with its question answered "just show me", waits for its charts, and saves the top of
the page with the sidebar: the pages of the lab as they are today. Run it again whenever a page or the sidebar
changes.

    python scripts/take_picture.py [--page serial] [--out docs/serial.png] [--width 1400 --height 1100]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_startup import ARGS, CHART, ROOT, start, stop_all


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", default="serial", help="the page's URL path (default: serial)")
    ap.add_argument("--out", default=str(Path(ROOT) / "docs" / "serial.png"))
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1100)
    args = ap.parse_args()
    try:
        _, url, _ = start("dashboard.py", ROOT)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.goto(f"{url}/{args.page}?predict.{args.page}=show")
            page.wait_for_selector(CHART, timeout=120000)
            page.wait_for_timeout(2500)  # the charts' drawing settles after the first one appears
            page.screenshot(path=args.out)
            browser.close()
        print(f"wrote {args.out}")
    finally:
        stop_all()


if __name__ == "__main__":
    main()
