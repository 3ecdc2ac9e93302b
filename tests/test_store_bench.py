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


def test_store_bench_server_table_times_every_call_on_both_stores_and_counts_round_trips() -> None:
    out = subprocess.run([sys.executable, "-m", "benchmark.store_bench", "--server", "--sizes", "300",
                          "--repeat", "3"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True).stdout
    cells = {line.strip("|").split("|")[0].strip(): [c.strip() for c in line.strip("|").split("|")]
             for line in out.splitlines() if line.startswith("| ") and not line.startswith("| call")}
    assert set(cells) == {"add", "add 10 users", "search", "search by vector", "list", "get", "update",
                          "record_usage", "delete"}
    for row in cells.values():  # round trips, requests, three p50 / p95 pairs, two ratios
        assert float(row[1]) >= 1 and all(re.fullmatch(r"\d+\.\d\d / \d+\.\d\d", c) for c in row[3:6]), row
        assert all(re.fullmatch(r"x\d+\.\d", c) for c in row[6:8]), row
    assert {float(cells[op][1]) for op in ("search", "search by vector", "list", "get")} == {1.0}
    # One read finds the duplicates and the taken ids of a batch, whatever users it holds.
    assert float(cells["add 10 users"][1]) == float(cells["add"][1])


def test_roundtrip_floor_times_one_read_on_each_path_against_the_embedded_store() -> None:
    out = subprocess.run([sys.executable, "-m", "benchmark.roundtrip_floor", "--calls", "5"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True).stdout
    rows = {line.strip("|").split("|")[0].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in out.splitlines() if line.startswith("| ") and not line.startswith("| call")}
    assert set(rows) == {"`get_memory`, embedded", "`get_memory`, server, REST", "`get_memory`, server, gRPC",
                         "qdrant-client retrieve, REST", "qdrant-client retrieve, gRPC", "raw gRPC stub `Get`",
                         "empty `GET /healthz`, httpx"}
    assert rows["`get_memory`, embedded"][2] == "x1.0"
    assert all(re.fullmatch(r"\d+\.\d{3} / \d+\.\d{3}", row[1]) and re.fullmatch(r"x\d+\.\d", row[2])
               for row in rows.values()), rows
