#!/usr/bin/env bash
# Create .venv (once) and install ReMe with the local embedder and the test tools into it.
# torch is pinned to 2.13.0 so that pip takes the CPU build instead of gigabytes of CUDA packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
.venv/bin/python -m pip install --quiet torch==2.13.0
.venv/bin/python -m pip install --quiet -e ".[local,dev,bench,server,mcp]"
