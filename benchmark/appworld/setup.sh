#!/usr/bin/env bash
# Create the AppWorld harness's own environment (AppWorld pins pydantic 1, so it cannot share one
# with ReMe): .venvs/appworld-bench, or the folder given. Installs AppWorld, the OpenAI client and
# tqdm, unpacks AppWorld's bundled app code (offline), and says how to get the data (online).
#   benchmark/appworld/setup.sh [VENV]
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${1:-.venvs/appworld-bench}
PYTHON=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet -r envtests/appworld/requirements.txt
"$VENV/bin/appworld" install > /dev/null
"$VENV/bin/python" -c "import benchmark.appworld.run"   # the harness imports there (no ReMe, pydantic 1)
echo "AppWorld environment ready: $VENV"
echo "Get AppWorld's data once (online): $VENV/bin/appworld download data --root DIR, then export APPWORLD_ROOT=DIR"
