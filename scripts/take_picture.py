"""Take the lab's pictures: `python scripts/take_picture.py` writes the README's docs/serial.png;
`python scripts/take_picture.py --all` writes every page's first screen, in English and 中文, after its questions
are answered ("just show me"): docs/screens/<page>-<lang>.png.

Starts the app and opens the pages in headless Chromium (Debian's /usr/bin/chromium, through Playwright's Python
package). Run it again whenever a page or the sidebar changes.

    python scripts/take_picture.py [--page serial] [--out docs/serial.png] [--width 1400 --height 1100]
    python scripts/take_picture.py --all [--out-dir docs/screens]
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.parse
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_pages import PAGES, QUESTIONS, VIEW, settle
from bench_startup import ARGS, CHART, ROOT, start, stop_all


def shoot(browser, url: str, key: str, lang: str, out: Path, viewport: dict) -> None:
    page = browser.new_page(viewport=viewport)
    query = {"lang": lang, **{f"predict.{q}": "show" for q in QUESTIONS}}
    page.goto(f"{url}/{'' if key == 'home' else key}?{urllib.parse.urlencode(query)}")
    settle(page)
    if key != "home":
        page.wait_for_selector(CHART, timeout=120000)
        settle(page, 20)
    page.screenshot(path=str(out))
    page.close()
    print(f"wrote {out}")


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", default="serial", help="the page's URL path (default: serial)")
    ap.add_argument("--out", default=str(Path(ROOT) / "docs" / "serial.png"))
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1100)
    ap.add_argument("--all", action="store_true", help="every page's first screen in en and zh")
    ap.add_argument("--out-dir", default=str(Path(ROOT) / "docs" / "screens"))
    args = ap.parse_args()
    try:
        _, url, _ = start("dashboard.py", ROOT)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            if args.all:
                folder = Path(args.out_dir)
                folder.mkdir(parents=True, exist_ok=True)
                for lang in ("en", "zh"):
                    for key in PAGES:
                        shoot(browser, url, key, lang, folder / f"{key}-{lang}.png", VIEW)
            else:
                viewport = {"width": args.width, "height": args.height}
                shoot(browser, url, args.page, "en", Path(args.out), viewport)
            browser.close()
    finally:
        stop_all()


if __name__ == "__main__":
    main()
