"""The store benchmark's smoke run: tiny, but every shard is built and every filtered query is
answered by the store and by the engine on each shard, so the comparison the README quotes runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_store_bench_compares_the_store_with_the_engine_on_every_shard() -> None:
    out = subprocess.run([sys.executable, "-m", "benchmark.store_bench", "--sizes", "400", "--backends", "edge",
                          "--queries", "6", "--no-write-path"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    rows = {tuple(cell.strip() for cell in line.strip("|").split("|")[:2]): line
            for line in out.splitlines() if line.startswith("| edge")}
    assert set(rows) == {("edge-raw", "exact"), ("edge-raw, same work", "exact"), ("edge", "exact"),
                         ("edge", "indexed")}
    for key in [("edge-raw", "exact"), ("edge-raw, same work", "exact")]:  # queried beside the store
        assert re.search(r"\| \d+\.\d\d / \d+\.\d\d \|", rows[key]), rows[key]
    ratios = [line for line in out.splitlines() if line.startswith("n=400")]
    assert len(ratios) == 4 and all(re.search(r"x\d+\.\d\d", line) for line in ratios), ratios
