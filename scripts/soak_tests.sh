#!/usr/bin/env bash
# Does the suite pass every time? Runs the README's test command N times, each in a fresh clone of this repository's
# HEAD (its own .venv, installed by the command itself), one after another, and prints each run's counts and times.
#   bash scripts/soak_tests.sh 5              five runs on a quiet machine
#   bash scripts/soak_tests.sh --busy 2 5     five runs, the last two with one core kept busy by a plain CPU loop
# Each run's whole output goes to OUT_DIR/run-K.log (OUT_DIR: $SOAK_DIR, or a new folder under /tmp); the clones
# are removed after their run. Exit status 1 if any run failed. Only what is committed is tested.
set -uo pipefail
cd "$(dirname "$0")/.."
busy=0
if [ "${1:-}" = "--busy" ]; then busy="${2:?--busy needs a count}"; shift 2; fi
runs="${1:?usage: soak_tests.sh [--busy M] N}"
case "$runs$busy" in *[!0-9]*) echo "soak_tests.sh: N and M must be whole numbers" >&2; exit 2;; esac
[ "$busy" -le "$runs" ] || { echo "soak_tests.sh: --busy $busy is more than the $runs runs" >&2; exit 2; }
repo="$(pwd)"
out="${SOAK_DIR:-$(mktemp -d /tmp/soak.XXXXXX)}"
mkdir -p "$out"
echo "soak: $runs runs of 'bash scripts/test.sh' on $(git rev-parse --short HEAD), the last $busy with one core busy; logs in $out"
failed=0
for k in $(seq 1 "$runs"); do
  clone="$(mktemp -d /tmp/soak-clone.XXXXXX)"
  git clone -q "$repo" "$clone"
  loop=""
  if [ "$k" -gt $((runs - busy)) ]; then
    bash -c 'while :; do :; done' &  # one core kept busy, the whole run long
    loop=$!
  fi
  TIMEFORMAT="%R %U %S"
  { time (cd "$clone" && bash scripts/test.sh >"$out/run-$k.log" 2>&1); } 2>"$out/run-$k.time"
  rc=$?
  if [ -n "$loop" ]; then kill "$loop" 2>/dev/null; wait "$loop" 2>/dev/null; fi
  read -r wall user sys <"$out/run-$k.time"
  summary=$(grep -E '[0-9]+ (passed|failed|errors?)' "$out/run-$k.log" | tail -n 1)
  verdict="green"
  if [ "$rc" -ne 0 ] || grep -qE '[0-9]+ (failed|errors?)' <<<"$summary"; then verdict="RED (exit $rc)"; failed=1; fi
  printf 'run %d%s: %s: %s; %.0f s wall, %.0f s CPU (the test command and its children)\n' "$k" \
    "$([ -n "$loop" ] && echo ' (one core busy)')" "$verdict" "${summary:-no pytest summary (see the log)}" \
    "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')"
  rm -rf "$clone"
done
exit "$failed"
