#!/usr/bin/env bash
# Try the Pipfile (what Streamlit Community Cloud installs; see docs/INSTALL.md) as far as this machine allows: pipenv locks
# it and installs the lock into a fresh virtualenv in a temporary folder, then the check reads what was installed:
# torch at the pinned version built for the CPU (torch.version.cuda is None), no nvidia-*, triton or cuda-* package,
# every pin as in requirements.txt. A negative control follows: with the CPU index emptied, the lock must fail
# rather than take the default index's CUDA build.
#
#   bash scripts/check_cloud_deps.sh           # PyTorch's CPU wheel index replaced by a local stand-in
#   bash scripts/check_cloud_deps.sh --real    # the Pipfile as it is: needs PyTorch's CPU wheel index (no control)
#
# The stand-in, for a machine that reaches the default package index but not PyTorch's (this workplace): a PEP 503
# index on 127.0.0.1 that serves the torch wheels of the pinned version found in WHEELS (default /opt/wheels, where
# this workplace keeps torch 2.13.0+cpu for Python 3.11), the Pipfile's copy pointing its CPU source there. That
# checks the Pipfile, pipenv's index restriction and that the pins resolve together from the default index; it does
# not check that PyTorch's index holds the wheel. pip's config files are ignored (PIP_CONFIG_FILE=/dev/null), so
# local file indexes cannot stand in for the default index. PIPENV=/path/to/pipenv uses that pipenv (default: the
# newest, installed into the temporary folder); PYTHON the interpreter (default python3); KEEP=1 keeps the
# temporary folder (the Pipfile.lock, the logs, the virtualenv) and prints where it is.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=stand-in
case ${1:-} in
  "") ;;
  --real) MODE=real ;;
  *) echo "usage: bash scripts/check_cloud_deps.sh [--real]" >&2; exit 2 ;;
esac
PY=$("${PYTHON:-python3}" -c "import sys; print(sys.executable)")  # a path: pipenv reads a bare name as a version
WHEELS=${WHEELS:-/opt/wheels}
TMP=$(mktemp -d)
SERVER=""
cleanup() { [ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
[ -z "${KEEP:-}" ] || trap "kill \"\$SERVER\" 2>/dev/null; echo kept \"$TMP\"" EXIT
now() { date +%s.%N; }
took() { "$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$1" "$(now)"; }

# The Pipfile's CPU source and torch pin, read with the same TOML parser the test uses.
read -r CPU_URL TORCH_VERSION < <("$PY" - <<'EOF'
import tomllib
with open("Pipfile", "rb") as f:
    pipfile = tomllib.load(f)
torch = pipfile["packages"]["torch"]
url = next(s["url"] for s in pipfile["source"] if s["name"] == torch["index"])
print(url, torch["version"].removeprefix("=="))
EOF
)
echo "Pipfile: torch $TORCH_VERSION from $CPU_URL ($MODE)"

if [ -z "${PIPENV:-}" ]; then
  "$PY" -m venv "$TMP/tools"
  "$TMP/tools/bin/python" -m pip install -q --disable-pip-version-check pipenv >"$TMP/tools.log" 2>&1 ||
    { cat "$TMP/tools.log"; echo "FAILED: pip install pipenv" >&2; exit 1; }
  PIPENV=$TMP/tools/bin/pipenv
fi
echo "$("$PIPENV" --version), $("$PY" --version)"

env_for_pipenv() {  # what the cloud has not: this machine's pip configuration
  env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null \
    PIPENV_VENV_IN_PROJECT=1 PIPENV_IGNORE_VIRTUALENVS=1 PIPENV_YES=1 PIPENV_NOSPIN=1 PIPENV_PYTHON="$PY" "$@"
}

pipfile_copy() {  # DIR INDEX_URL: the Pipfile in DIR, its CPU source at INDEX_URL (plain http: no TLS to verify)
  mkdir -p "$1"
  "$PY" - "$ROOT/Pipfile" "$CPU_URL" "$2" >"$1/Pipfile" <<'EOF'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
block = f'url = "{old}"\nverify_ssl = true'
assert block in text, "the CPU source's url and verify_ssl lines moved"
sys.stdout.write(text.replace(block, f'url = "{new}"\nverify_ssl = {"false" if new.startswith("http:") else "true"}'))
EOF
}

if [ "$MODE" = stand-in ]; then
  mkdir -p "$TMP/index/simple/torch" "$TMP/index/empty"
  found=0
  for whl in "$WHEELS"/torch-"$TORCH_VERSION"-*.whl "$WHEELS"/torch-"$TORCH_VERSION"+cpu-*.whl; do
    [ -f "$whl" ] || continue
    ln -s "$whl" "$TMP/index/simple/torch/"
    found=1
  done
  [ "$found" = 1 ] || { echo "no torch $TORCH_VERSION wheel in $WHEELS for the stand-in (set WHEELS)" >&2; exit 1; }
  "$PY" - "$TMP/index/simple/torch" <<'EOF'
import hashlib, html, pathlib, sys, urllib.parse
folder = pathlib.Path(sys.argv[1])
links = []
for whl in sorted(folder.glob("*.whl")):
    digest = hashlib.sha256(whl.read_bytes()).hexdigest()
    links.append(f'<a href="{urllib.parse.quote(whl.name)}#sha256={digest}">{html.escape(whl.name)}</a>')
(folder / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
print("stand-in serves:", ", ".join(w.name for w in sorted(folder.glob("*.whl"))))
EOF
  PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$PY" -m http.server "$PORT" --bind 127.0.0.1 --directory "$TMP/index" >"$TMP/server.log" 2>&1 &
  SERVER=$!
  "$PY" - "$PORT" <<'EOF'
import sys, time, urllib.request
for _ in range(50):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/simple/torch/", timeout=1)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("the stand-in index did not start")
EOF
  pipfile_copy "$TMP/app" "http://127.0.0.1:$PORT/simple"
else
  pipfile_copy "$TMP/app" "$CPU_URL"
fi

cd "$TMP/app"
t=$(now)
env_for_pipenv "$PIPENV" lock >lock.log 2>&1 || { tail -30 lock.log; echo "FAILED: pipenv lock" >&2; exit 1; }
echo "pipenv lock: $(took "$t")"
t=$(now)
env_for_pipenv "$PIPENV" sync >sync.log 2>&1 || { tail -30 sync.log; echo "FAILED: pipenv sync" >&2; exit 1; }
echo "pipenv sync (a fresh virtualenv): $(took "$t")"
echo "virtualenv size: $(du -sh .venv | cut -f1)"

.venv/bin/python - "$ROOT/requirements.txt" "$TORCH_VERSION" <<'EOF'
import importlib.metadata as md
import re
import sys

import torch

requirements, version = sys.argv[1], sys.argv[2]
installed = {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version for d in md.distributions()}
problems = []
if torch.__version__.split("+")[0] != version or torch.version.cuda is not None:
    problems.append(f"torch {torch.__version__} (CUDA {torch.version.cuda}), expected the CPU build of {version}")
gpu = sorted(n for n in installed if n.startswith(("nvidia-", "cuda-")) or n == "triton")
if gpu:
    problems.append("GPU packages installed: " + ", ".join(gpu))
for line in open(requirements):
    m = re.match(r"\s*([A-Za-z0-9._-]+)==(\S+)", line)
    if m and m[1] != "torch":
        name = re.sub(r"[-_.]+", "-", m[1]).lower()
        if installed.get(name) != m[2]:
            problems.append(f"{m[1]}: {installed.get(name)} installed, requirements.txt pins {m[2]}")
print(f"installed: torch {torch.__version__} (torch.version.cuda {torch.version.cuda}), {len(installed)} packages,"
      f" GPU packages: {', '.join(gpu) or 'none'}")
if problems:
    sys.exit("FAILED: " + "; ".join(problems))
print("OK: the cloud's install is the CPU build of the pinned torch, with requirements.txt's pins")
EOF

if [ "$MODE" = stand-in ]; then
  pipfile_copy "$TMP/control" "http://127.0.0.1:$PORT/empty"
  cd "$TMP/control"
  if env_for_pipenv "$PIPENV" lock >lock.log 2>&1; then
    echo "FAILED: with the CPU index empty, pipenv still locked torch (from another index?)" >&2
    exit 1
  fi
  grep -q "No matching distribution found for torch" lock.log || { tail -20 lock.log; exit 1; }
  echo "OK: control: with the CPU index empty the lock fails (no matching torch); no fallback to the CUDA build"
fi
