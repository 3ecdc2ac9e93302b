#!/usr/bin/env bash
# Run the suites that need a framework of their own (envtests/NAME/), each in its own virtual
# environment .venvs/NAME, created once and brought up to date from envtests/NAME/requirements.txt
# (pip arguments, one per line, relative to the repository root), then envtests/NAME/no-deps.txt,
# when there is one, with --no-deps. The frameworks cannot share one
# environment (AgentScope 1.x and 2.x, AppWorld's pins), nor the main .venv.
#   scripts/envs.sh               every suite
#   scripts/envs.sh langgraph     the named ones; extra arguments after `--` go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1
names=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do names+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
if [ ${#names[@]} -eq 0 ]; then
  for dir in envtests/*/; do [ -f "$dir/requirements.txt" ] && names+=("$(basename "$dir")"); done
fi
failed=()
for name in "${names[@]}"; do
  [ -f "envtests/$name/requirements.txt" ] || { echo "envs: no envtests/$name/requirements.txt" >&2; exit 2; }
  venv=".venvs/$name"
  echo "== $name ($venv)"
  start=$(date +%s)
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet -r "envtests/$name/requirements.txt"
  if [ -f "envtests/$name/no-deps.txt" ]; then  # packages whose own requirements the suite does not need
    "$venv/bin/python" -m pip install --quiet --no-deps -r "envtests/$name/no-deps.txt"
  fi
  echo "   environment ready in $(( $(date +%s) - start )) s"
  "$venv/bin/python" -m pytest -q "envtests/$name" "$@" || failed+=("$name")
  echo "   $name done in $(( $(date +%s) - start )) s"
done
if [ ${#failed[@]} -gt 0 ]; then echo "envs: failed: ${failed[*]}" >&2; exit 1; fi
