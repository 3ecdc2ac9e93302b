"""The peer benchmark's ReMe side (`benchmark/peers`) at a tiny scale: the worker process, the
embeddings endpoint every library shares, and the checks it reports. The peers themselves need
environments of their own (minutes to create), so the main suite does not run them."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from benchmark.peers.run import SERVER, Embeddings, crash_check, recall, run_worker, speed_items
from benchmark.qdrant_server import Node


def hashed(texts: list[str]) -> np.ndarray:
    rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=384)
            for t in texts]
    return np.array([r / np.linalg.norm(r) for r in rows])


@pytest.fixture
def endpoint() -> Iterator[str]:
    server, url = Embeddings(None, hashed).serve()
    yield url
    server.shutdown()


def test_speed_workload_keeps_every_memory_and_only_the_users_own(endpoint: str, tmp_path: Path) -> None:
    items = speed_items([f"turn {i} about topic {i % 7}" for i in range(40)], 120, users=10)
    job = {"kind": "speed", "items": items, "single": 20, "deletes": 3,
           "queries": [(items[i][0], items[i][1]) for i in (0, 5, 17, 60)]}
    out: dict[str, Any] = run_worker("reme", job, tmp_path / "store", endpoint, tmp_path, False)
    assert out["count after reopen"] == out["count expected"] == 120 - 3  # 10 users of 12, 3 deleted
    assert out["foreign hits"] == 0
    assert out["disk"]["used"] > 0 and out["add one"][0] > 0 and out["search"][0] > 0


def test_speed_workload_on_a_qdrant_node_over_grpc_keeps_every_memory(endpoint: str, tmp_path: Path,
                                                                       empty_node: Node,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SERVER, "PEERS_QDRANT", f"{empty_node.url} {empty_node.grpc_port}")
    items = speed_items([f"turn {i} about topic {i % 7}" for i in range(40)], 60, users=10)
    job = {"kind": "speed", "items": items, "single": 10, "deletes": 2,
           "queries": [(items[i][0], items[i][1]) for i in (0, 5, 17)]}
    out: dict[str, Any] = run_worker("reme-server", job, tmp_path / "store", endpoint, tmp_path, False)
    assert out["count after reopen"] == out["count expected"] == 60 - 2  # 10 users of 6, 2 deleted
    assert out["foreign hits"] == 0 and out["add one"][0] > 0 and out["search"][0] > 0


def test_behaviour_checks_and_acknowledged_writes_after_sigkill(endpoint: str, tmp_path: Path) -> None:
    out = run_worker("reme", {"kind": "behaviour"}, tmp_path / "b", endpoint, tmp_path, False)
    assert out == {"copies per user": {"ann": 1, "ben": 1, "cat": 1}, "foreign hits": 0}
    assert crash_check("reme", tmp_path / "c", endpoint, tmp_path, False, acks=10) == {"acknowledged": 10, "kept": 10}


def test_locomo_recall_counts_evidence_turns_in_the_top_k() -> None:
    got = recall([["D1:1", "D1:2"] + ["D9:9"] * 18], [["D1:2", "D2:1"]])
    assert got["recall@5"] == got["recall@20"] == 50.0
