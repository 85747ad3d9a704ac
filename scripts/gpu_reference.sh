#!/usr/bin/env bash
# The whole GPU session as one prepared script: the environment, a short smoke test of the risky paths, then the
# experiments in the order that matters most, each in a process of its own under its own time limit, everything
# written under OUT_DIR (on a borrowed GPU machine only that folder comes back). Two parts, each under 10 minutes:
#
#   bash scripts/gpu_reference.sh OUT_DIR --part 1   # environment, smoke, serial, attention_cost, kv_cache, gradient_reach, checkpoint
#   bash scripts/gpu_reference.sh OUT_DIR --part 2   # long_range, depth (the longest and least device-dependent)
#
# Without --part both run, one after the other (a learner's own GPU machine). Options: --device auto|cuda|mps|cpu
# (default auto), --preset full|quick|tiny (default full; tiny only tests this script, on a CPU in seconds).
# Set PYTHON to choose the interpreter (default: the first of python3, python, .venv/bin/python whose torch sees a
# GPU, else the first that has torch). LAB_LIMIT_SCALE=0.5 halves every time limit (a shorter session).
#
# What lands in OUT_DIR: session.log (everything printed), reference.log (one line per experiment: done, FAILED or
# TIME LIMIT, rows and statuses), smoke-<device>.csv, <experiment>-<device>.csv. Rows are written as they are
# measured; an experiment that fails or reaches its limit keeps its rows and ends its CSV with a status row
# (status 'stopped', the reason in 'note'), and the next experiment runs.
#
# Time limits (seconds; the experiment is stopped there, keeping its rows) and what they are based on — op counts
# and the shipped CPU reference's times, read against an H200 whose host launches one small kernel in ~10 µs:
#   part 1: environment 30, smoke 75, serial 120 (est. 30-60), attention_cost 150 (est. 60-100), kv_cache 45
#           (est. 10-20), gradient_reach 45 (est. 10-20), checkpoint 45 (est. 10-30): at most ~9 min, typically 4
#   part 2: long_range 240 (est. 100-150; ~345 if no run is solved early), depth 270 (est. 230-340, host-bound
#           like the CPU's ~7 min, so its deepest runs may be cut): at most ~8.6 min, typically 6-8
# (A child that ignores SIGTERM is killed 15 s after its limit: +1 min in part 1, +30 s in part 2 at worst.)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

usage() { echo "usage: bash scripts/gpu_reference.sh OUT_DIR [--part 1|2|all] [--device D] [--preset P]" >&2; exit 2; }
[ $# -ge 1 ] || usage
OUT=$1
shift
PART=all DEVICE=auto PRESET=full
while [ $# -gt 0 ]; do
  case $1 in
    --part) PART=${2:-}; shift 2 || usage ;;
    --device) DEVICE=${2:-}; shift 2 || usage ;;
    --preset) PRESET=${2:-}; shift 2 || usage ;;
    *) echo "unknown option: $1" >&2; usage ;;
  esac
done
case $PART in 1|2|all) ;; *) echo "--part: $PART is not one of 1, 2, all" >&2; exit 2 ;; esac
mkdir -p "$OUT" 2>/dev/null && [ -w "$OUT" ] || { echo "OUT_DIR: cannot create or write $OUT" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)

limit() {  # the time limit of one step, scaled by LAB_LIMIT_SCALE
  local s
  case $1 in
    env) s=30 ;; smoke) s=75 ;; serial) s=120 ;; attention_cost) s=150 ;; kv_cache) s=45 ;; gradient_reach) s=45 ;; checkpoint) s=45 ;;
    long_range) s=240 ;; depth) s=270 ;; *) s=120 ;;
  esac
  awk -v s="$s" -v k="${LAB_LIMIT_SCALE:-1}" 'BEGIN { v = int(s * k); print (v < 5 ? 5 : v) }'
}

pick_python() {  # the interpreter to use: $PYTHON, else one whose torch sees a GPU, else one with torch
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  local py with_torch=""
  for py in python3 python .venv/bin/python; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" -c "import torch, numpy, pandas" >/dev/null 2>&1 || continue
    [ -n "$with_torch" ] || with_torch=$py
    if [ "$DEVICE" != cpu ] && "$py" -c "import sys, torch; sys.exit(not (torch.cuda.is_available() or torch.backends.mps.is_available()))" >/dev/null 2>&1; then
      echo "$py"; return
    fi
  done
  echo "${with_torch:-python3}"
}

PY=$(pick_python)
TIMEOUT=""
command -v timeout >/dev/null 2>&1 && TIMEOUT=timeout  # macOS has none: the per-experiment limits still hold
exec > >(tee -a "$OUT/session.log") 2>&1
TEE=$!
STATUS=0

say() { echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $*"; }
bounded() {  # bounded SECONDS CMD...: run it, killed after SECONDS (+10 s grace) where `timeout` exists
  local s=$1; shift
  if [ -n "$TIMEOUT" ]; then "$TIMEOUT" -k 10 "$s" "$@"; else "$@"; fi
}

experiments() {  # one `reference` process; each experiment in a child of its own, under its own limit
  local args=() total=20 name
  for name in "$@"; do
    args+=(--time-limit "$name=$(limit "$name")")
    total=$((total + $(limit "$name") + 20))
  done
  bounded "$total" "$PY" -m core reference --only "$@" --device "$DEVICE" --preset "$PRESET" --out-dir "$OUT" "${args[@]}"
  local rc=$?
  [ $rc -eq 0 ] || { STATUS=1; say "reference: exit $rc (see reference.log; the rows each experiment measured are kept)"; }
}

part1() {
  say "part 1 on $(hostname 2>/dev/null || uname -n): $PY, device $DEVICE, preset $PRESET, results in $OUT"
  say "environment"
  bounded "$(limit env)" "$PY" -m core env --device "$DEVICE" || { STATUS=1; say "environment: exit $?"; }
  if command -v nvidia-smi >/dev/null 2>&1; then
    bounded 20 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,temperature.gpu,power.draw \
      --format=csv || true
  fi
  say "smoke test"
  bounded "$(limit smoke)" "$PY" -m core smoke --device "$DEVICE" --out-dir "$OUT" \
    || { STATUS=1; say "smoke test: exit $? (a check failed or it ran out of time); the experiments run anyway"; }
  experiments serial attention_cost kv_cache gradient_reach checkpoint
  say "part 1 finished"
}

part2() {
  say "part 2 on $(hostname 2>/dev/null || uname -n): $PY, device $DEVICE, preset $PRESET, results in $OUT"
  experiments long_range depth
  say "part 2 finished"
}

case $PART in
  1) part1 ;;
  2) part2 ;;
  all) part1; part2 ;;
esac
say "files in $OUT:"
ls -l "$OUT"
exec >&- 2>&-  # let tee write the last lines of session.log before the script ends
wait "$TEE" 2>/dev/null
exit $STATUS
