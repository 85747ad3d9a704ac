#!/usr/bin/env bash
# Install what the tests need into .venv (and Debian's chromium for the browser test), run ruff and lint-imports, then
# the whole suite.
#   bash scripts/test.sh          the full suite (what CI runs)
#   bash scripts/test.sh --fast   the fast tier: every test not marked `slow` (no browser, no torch subprocess, no
#                                 training or measuring beyond a second); any other arguments go to pytest
# Both run in two pytest-xdist workers (LAB_TEST_WORKERS=0 runs them in this one process; tests/conftest.py keeps the
# tests that share a server, a browser or a module's fixture in one worker).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
  else
    echo "Install Chromium (the browser test drives /usr/bin/chromium)" >&2
  fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports --no-logo  # the layers and import rules in .importlinter
# Two test workers, each with a server, a worker process or a CLI beside it, ask for more threads than 2 cores have:
# OpenMP's threads would spin at every barrier waiting for a core another process holds (measured: ~25% more
# wall time for the same CLI runs beside a busy core). Passive, they sleep; the thread counts are unchanged.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
WORKERS=(-n "${LAB_TEST_WORKERS:-2}")
[ "${LAB_TEST_WORKERS:-2}" = "0" ] && WORKERS=(-p no:xdist)
if [ "${1:-}" = "--fast" ]; then
  shift
  exec .venv/bin/python -m pytest -q "${WORKERS[@]}" -m "not slow" "$@"
fi
exec .venv/bin/python -m pytest -q "${WORKERS[@]}" "$@"
