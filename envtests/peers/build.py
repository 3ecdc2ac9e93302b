"""Run by scripts/envs.sh when it builds this suite's environment: the peers' own environments
(mem0, the original ReMe), created by the harness (benchmark/peers/run.py `python_for`) inside
this one, so they are cached and reused with it; their requirements files are part of its key."""

from __future__ import annotations

import sys
from pathlib import Path

from benchmark.peers.run import ENVS, python_for

for lib in sorted(set(ENVS.values())):
    python_for(lib, Path(sys.prefix), install=True)
