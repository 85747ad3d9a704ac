"""Every benchmark still runs: each `scripts/bench_*.py`, found by its name (a new one is covered at once), runs at its
`--smoke` setting, the least work that runs every part once, and exits 0 having printed its table. Its figures are
never judged here. A benchmark that drives a browser is skipped where Playwright or Debian's Chromium is missing, or
where LAB_SKIP_BROWSER=1 says to."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "scripts").glob("bench_*.py"))
GIVE_UP_S = 600  # a bound for a benchmark that hangs, not a timing

pytestmark = pytest.mark.slow  # each imports torch in fresh processes; some start a server and a browser


def _no_browser() -> str | None:
    """Why a browser benchmark cannot run here, or None."""
    if os.environ.get("LAB_SKIP_BROWSER") == "1":
        return "LAB_SKIP_BROWSER=1"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed"
    if not os.access("/usr/bin/chromium", os.X_OK):
        return "no /usr/bin/chromium"
    return None


def test_the_benchmarks_are_found():
    assert {"bench_startup.py", "bench_quick.py"} <= {p.name for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_every_benchmark_runs_at_its_smallest_setting(script):
    if "sync_playwright" in script.read_text() and (why := _no_browser()):
        pytest.skip(f"{script.name} drives a browser: {why}")
    cmd = [sys.executable, str(script), "--smoke"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=GIVE_UP_S, check=False)
    said = f"{script.name} --smoke: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    assert r.returncode == 0, said
    assert r.stdout.strip(), said  # its table, or what it measured
