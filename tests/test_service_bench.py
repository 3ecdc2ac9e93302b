"""The service benchmark's smoke run: tiny, but every phase (facade, service, SIGKILL and restart)
runs and every acknowledged write is read back."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark.service_bench import main


def test_service_bench_smoke_run_loses_no_acknowledged_write(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    assert main(["--clients", "3", "--duration", "1", "--kill-after", "0.5", "--seed", "3", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["service"]["ops"] > 0 and results["facade"]["ops"] > 0
    assert results["after_kill"]["checked"] >= 3 * 3 and results["after_kill"]["missing"] == 0


def test_service_bench_scale_out_smoke_run_reads_back_every_write(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    # Two load processes: each one's acknowledged writes come back to the ledger that is read back.
    assert main(["--workers", "1", "--targets", "node", "--clients", "2", "--duration", "0.5", "--seed", "2",
                 "--client-procs", "2", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["store"] == "node" and row["workers"] == 1 and row["ops"] > 0 and row["client_procs"] == 2
    adds = row["per_op"].get("add", {}).get("n", 0)
    assert row["verify"]["checked"] == 2 * 2 + adds and row["verify"]["missing"] == row["verify"]["wrong"] == 0
