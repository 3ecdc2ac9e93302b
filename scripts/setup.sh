#!/usr/bin/env bash
# Create .venv (once) and install ReMe with the local embedder and the test tools into it.
#
# torch is installed first, as the CPU build. On Linux, PyPI's torch wheel is the CUDA build (19
# nvidia-* packages, gigabytes); the CPU build comes from PyTorch's own index. When that index
# answers within a few seconds it is used (as an extra index: pip takes 2.13.0+cpu, the rest from
# your usual index); when it does not (a machine that reaches only PyPI), torch comes from the
# usual index and find-links, and this script says which build it got. TORCH_INDEX_URL names
# another index (a mirror of the CPU one); TORCH_INDEX_URL= (empty) skips the probe.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH=torch==2.13.0
CPU_INDEX=${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
# The torch build installed, if any: "cpu", "cuda" (it requires nvidia-* packages) or nothing.
torch_build() {
  .venv/bin/python - <<'PY' 2>/dev/null || true
from importlib.metadata import PackageNotFoundError, requires, version
try:
    if version("torch").split("+")[0] == "2.13.0":
        print("cuda" if any(r.startswith("nvidia") for r in requires("torch") or []) else "cpu")
except PackageNotFoundError:
    pass
PY
}
reachable() {  # whether an index answers within 5 s (no hang where only PyPI can be reached)
  .venv/bin/python - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=5).close()
except Exception:
    sys.exit(1)
PY
}
if [ -z "$(torch_build)" ]; then
  if [ -n "$CPU_INDEX" ] && reachable "$CPU_INDEX"; then
    echo "setup: torch (CPU build) from $CPU_INDEX"
    .venv/bin/python -m pip install --quiet "$TORCH" --extra-index-url "$CPU_INDEX"
  else
    [ -n "$CPU_INDEX" ] && echo "setup: $CPU_INDEX does not answer: torch from the usual index" >&2
    .venv/bin/python -m pip install --quiet "$TORCH"
  fi
  if [ "$(torch_build)" = cuda ]; then
    echo "setup: torch is the CUDA build (nvidia-* packages, gigabytes); for the CPU build run" \
         ".venv/bin/pip install --force-reinstall $TORCH --index-url https://download.pytorch.org/whl/cpu" >&2
  fi
fi
.venv/bin/python -m pip install --quiet -e ".[local,dev,bench,server,mcp]"
