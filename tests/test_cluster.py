"""ReMe on a real 3-node Qdrant cluster (scripts/qdrant.sh cluster 3): collections spread over 3
shards with 2 copies each keep answering while a node is down, and nothing acknowledged is lost."""

from __future__ import annotations

from pathlib import Path

from qdrant_client import QdrantClient

from benchmark.qdrant_server import Node, wait_for_peers
from reme import ReMeSync

from conftest import DIM, SPREAD, wipe


def _open(node: Node, tmp_path: Path, collection: str) -> ReMeSync:
    return ReMeSync(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": DIM},
                    vector_store={"backend": "qdrant", "url": node.url, "collection": collection, **SPREAD})


def test_collections_are_created_with_the_configured_shards_and_copies(qdrant_cluster: list[Node],
                                                                       tmp_path: Path) -> None:
    wipe(qdrant_cluster[0].url)
    with _open(qdrant_cluster[0], tmp_path, "spread") as reme:
        reme.add_memory("Alice prefers window seats", user_name="alice")
    client = QdrantClient(url=qdrant_cluster[1].url, check_compatibility=False)
    try:
        for name in ("spread", "spread-versions", "_reme_locks"):
            params = client.get_collection(name).config.params
            assert (params.replication_factor, params.write_consistency_factor) == (2, 1)
            assert params.shard_number == (1 if name.startswith("_") else 3)
    finally:
        client.close()


def test_a_killed_node_stops_nothing_and_loses_nothing(qdrant_cluster: list[Node], tmp_path: Path) -> None:
    wipe(qdrant_cluster[0].url)
    entry, victim = qdrant_cluster[0], qdrant_cluster[2]
    with _open(entry, tmp_path, "spread") as reme:
        before = [reme.add_memory(f"fact number {i}", user_name=f"user{i % 5}") for i in range(30)]
        victim.kill()
        try:
            during = [reme.add_memory(f"fact said while a node was down {i}", user_name=f"user{i % 5}")
                      for i in range(20)]
            counted = reme.record_usage([before[0].memory_id], True, user_name="user0")
            updated = reme.update_memory(before[1].memory_id, content="fact number 1, revised", user_name="user1")
            assert counted[0].access_count == 1 and updated.version == 2
            assert {r.node.memory_id for r in reme.search_memory("fact", user_name="user0", top_k=50)} >= \
                {n.memory_id for n in before + during if n.memory_target == "user0"}
        finally:
            victim.start()
    wait_for_peers(qdrant_cluster)
    for node in qdrant_cluster:  # every node answers with every acknowledged write
        with _open(node, tmp_path, "spread") as reme:
            stored = {n.memory_id: n for u in range(5) for n in reme.list_memory(user_name=f"user{u}", limit=100)}
            assert set(stored) == {n.memory_id for n in before + during}
            assert stored[before[0].memory_id].access_count == 1
            assert stored[before[1].memory_id].content == "fact number 1, revised"
            assert [v.node.version for v in reme.history(before[1].memory_id, user_name="user1")] == [1]
