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


async def test_collections_made_and_dropped_while_this_process_takes_locks_stall_nothing(
        qdrant_cluster: list[Node]) -> None:
    """Qdrant 1.16.3 stalls the whole cluster for about three minutes (its calls time out, then
    answer again) when a collection holding points is dropped, or made, while an ordered write
    (`ordering=medium`, as every lock and conditional write is) is under way: seen within a few
    drops with a lock taken every 50 ms. A scrub drops and makes two collections while its lock is
    renewed, and other tasks of its process may write meanwhile. The store keeps its own ordered
    writes and its collection changes apart, so a process alone never meets that stall: every
    call here is answered within the store's timeout (a tenth of the stall; a call otherwise takes
    a second or two)."""
    import asyncio

    from reme import MemoryNode, MemoryType
    from reme.store import CreateCollection, DropCollection, Upsert, VectorRecord
    from reme.store.qdrant import QdrantStore

    wipe(qdrant_cluster[0].url)
    store = QdrantStore(url=qdrant_cluster[0].url, lease=0.15, timeout=20, retry_for=0.0, **SPREAD)
    records = [VectorRecord(node=MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice",
                                            content=f"fact {i}"), vector=[1.0] * DIM) for i in range(20)]
    churning = True

    async def take_locks() -> int:
        taken = 0
        while churning:
            async with store.exclusive("busy"):  # an ordered write to take it, one to release it
                taken += 1
        return taken

    try:
        async with store.exclusive("scrub"):  # renewed every 50 ms
            locking = asyncio.create_task(take_locks())
            try:
                for _ in range(8):
                    await store.write([CreateCollection("churn", DIM), Upsert("churn", records)])
                    await store.write([DropCollection("churn")])
            finally:
                churning = False
            assert await locking > 0
    finally:
        await store.close()
