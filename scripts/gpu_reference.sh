#!/usr/bin/env bash
# The whole GPU session as one command that fits a short borrowed slot (a free notebook tier, a spot instance, a
# machine lent for ~15 minutes counting its start): at most 7 minutes of wall time, everything under OUT_DIR.
#
#   bash scripts/gpu_reference.sh OUT_DIR            # measure (default: --device auto --preset gpu)
#   bash scripts/gpu_reference.sh --plan             # print the steps, their limits and the total; run nothing
#
# The steps, in the order that matters most, each with its own limit in seconds (the limits add up to 420):
#   environment 15 + smoke test 30 (together 45: python -m core env, nvidia-smi, the risky paths)
#   serial 45, attention_cost 55, answers_speed 50, answers_decode 30, checkpoint 25, kv_cache 20,
#   gradient_reach 20, long_range 50, real_text 15, depth 40, recall_frontier 25
# (real_text only reads the six shipped models, ~6 × 2,600 forward passes of 1,024 bytes: the process's start and
# reading the standard library are most of its 15 s; they came from the smoke test, which takes ~5 s on this lab's
# 2-core CPU, and from recall_frontier, last, which also inherits whatever the steps before it leave)
# Each experiment runs in a process of its own (`python -m core reference`), which writes its rows as they are
# measured; at its limit it is stopped (its own limit first, then SIGTERM, then SIGKILL at the limit itself), keeps
# its rows and ends its CSV with a status row ('stopped', the reason in 'note'). A step that finishes early leaves
# its time to the ones after it — so depth and recall_frontier, last, get whatever is left — but no step ever takes
# the time given to a later one, and the session ends by its start + 420 s whatever happens.
#
# The `gpu` presets are sized for these limits (each preset's comment in core/experiments/ says how, from op counts
# and the shipped CPU reference's times, read against a host that launches one small kernel in ~10-20 µs).
#
# What lands in OUT_DIR: session.log (everything printed), reference.log (one line per experiment: done, FAILED,
# TIME LIMIT or NOT STARTED, rows and statuses; then a summary line per experiment), smoke-<device>.csv,
# <experiment>-<device>.csv. The summary is printed at the end too. The exit status is non-zero (1) only after
# every step had its turn, when one of them failed, was cut or was not started.
#
# Options: --device auto|cuda|mps|cpu, --preset gpu|quick|full|tiny (tiny only tests this script, on a CPU in about a
# minute). PYTHON chooses the interpreter (default: the first of python3, python, .venv/bin/python whose torch sees a
# GPU, else the first that has torch). LAB_LIMIT_SCALE=0.5 scales every limit (and so the total).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

# step:limit, in order; environment and smoke run here, the experiments in one `python -m core reference`
PLAN="env:15 smoke:30 serial:45 attention_cost:55 answers_speed:50 answers_decode:30 checkpoint:25 kv_cache:20
gradient_reach:20 long_range:50 real_text:15 depth:40 recall_frontier:25"

usage() { echo "usage: bash scripts/gpu_reference.sh OUT_DIR [--device D] [--preset P] | --plan" >&2; exit 2; }

limit() {  # the limit of one step, scaled by LAB_LIMIT_SCALE
  local item
  for item in $PLAN; do
    if [ "${item%%:*}" = "$1" ]; then
      awk -v s="${item##*:}" -v k="${LAB_LIMIT_SCALE:-1}" 'BEGIN { v = int(s * k); print (v < 5 ? 5 : v) }'
      return
    fi
  done
  echo "no step named $1 in the plan" >&2; exit 2
}

steps() { local item; for item in $PLAN; do echo "${item%%:*}"; done; }

print_plan() {
  local name total=0 s
  printf '%-16s %s\n' step "limit (s)"
  for name in $(steps); do
    s=$(limit "$name")
    total=$((total + s))
    printf '%-16s %5d\n' "$name" "$s"
  done
  printf '%-16s %5d  (%d min %02d s; a step that ends early leaves its time to the later ones)\n' total "$total" \
    $((total / 60)) $((total % 60))
}

[ $# -ge 1 ] || usage
if [ "$1" = "--plan" ]; then
  [ $# -eq 1 ] || usage
  print_plan
  exit 0
fi
OUT=$1
shift
DEVICE=auto PRESET=gpu
while [ $# -gt 0 ]; do
  case $1 in
    --device) DEVICE=${2:-}; shift 2 || usage ;;
    --preset) PRESET=${2:-}; shift 2 || usage ;;
    --plan) echo "--plan takes no OUT_DIR: bash scripts/gpu_reference.sh --plan" >&2; exit 2 ;;
    *) echo "unknown option: $1" >&2; usage ;;
  esac
done
mkdir -p "$OUT" 2>/dev/null && [ -w "$OUT" ] || { echo "OUT_DIR: cannot create or write $OUT" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)

TOTAL=0
for name in $(steps); do TOTAL=$((TOTAL + $(limit "$name"))); done
START=$(date +%s)
DEADLINE=$((START + TOTAL))

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
command -v timeout >/dev/null 2>&1 && TIMEOUT=timeout  # macOS has none: the reference run's own limits still hold
exec > >(tee -a "$OUT/session.log") 2>&1
TEE=$!
STATUS=0
SUMMARY=()

say() { echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $*"; }
bounded() {  # bounded SECONDS CMD...: run it, SIGTERM at SECONDS and SIGKILL 2 s later, where `timeout` exists
  local s=$1; shift
  if [ -n "$TIMEOUT" ]; then "$TIMEOUT" -k 2 "$s" "$@"; else "$@"; fi
}
step() {  # step NAME CMD...: one bounded step of this script, its outcome kept for the summary
  local name=$1 t0=$SECONDS rc; shift
  bounded "$(( $(limit "$name") - 2 ))" "$@"
  rc=$?
  LAST_RC=$rc
  local outcome=done
  [ $rc -eq 0 ] || { outcome="FAILED (exit $rc)"; [ $rc -eq 124 ] && outcome="TIME LIMIT"; STATUS=1; }
  SUMMARY+=("$(printf '%-16s %s, %d s of %d s' "$name" "$outcome" $((SECONDS - t0)) "$(limit "$name")")")
}

say "GPU session on $(hostname 2>/dev/null || uname -n): $PY, device $DEVICE, preset $PRESET, results in $OUT"
say "plan ($TOTAL s in all; ends by $(date -u -d "@$DEADLINE" +%H:%M:%SZ 2>/dev/null || echo "$DEADLINE"))"
print_plan
say "environment"
env_step() {
  "$PY" -m core env --device "$DEVICE" || return $?
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,temperature.gpu,power.draw \
      --format=csv || true
  fi
}
export -f env_step 2>/dev/null
export PY DEVICE
step env bash -c env_step
say "smoke test"
step smoke "$PY" -m core smoke --device "$DEVICE" --out-dir "$OUT"
[ "$LAST_RC" -eq 0 ] || say "the smoke test did not pass (see above); the experiments run anyway"

EXPERIMENTS=() LIMITS=()
for name in $(steps); do
  case $name in env|smoke) continue ;; esac
  EXPERIMENTS+=("$name")
  LIMITS+=(--time-limit "$name=$(limit "$name")")
done
say "experiments: ${EXPERIMENTS[*]}"
LEFT=$((DEADLINE - $(date +%s)))
[ $LEFT -gt 5 ] || LEFT=5
# the reference run enforces every limit and the deadline itself; this is the backstop if it hangs
bounded "$((LEFT + 3))" "$PY" -m core reference --only "${EXPERIMENTS[@]}" --device "$DEVICE" --preset "$PRESET" \
  --out-dir "$OUT" --deadline "$DEADLINE" "${LIMITS[@]}"
rc=$?
[ $rc -eq 0 ] || { STATUS=1; say "reference: exit $rc (see reference.log; the rows each experiment measured are kept)"; }

say "summary (the whole session took $(( $(date +%s) - START )) s of $TOTAL s)"
for line in "${SUMMARY[@]}"; do echo "$line"; done
grep -h ' summary ' "$OUT/reference.log" 2>/dev/null | sed 's/^[^ ]* summary //' \
  | awk -F': ' '{ printf "%-16s %s\n", $1, substr($0, length($1) + 3) }'
say "files in $OUT:"
ls -l "$OUT"
exec >&- 2>&-  # let tee write the last lines of session.log before the script ends
wait "$TEE" 2>/dev/null
exit $STATUS
