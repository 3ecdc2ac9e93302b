"""Faults on a real 3-node Qdrant cluster (3 shards, 2 copies each) under two `reme serve`
workers, Qdrant's own `tests/consensus_tests` being the model: real processes on loopback,
killed and started again, and assertions on what was acknowledged, read back through the API.

The module has its own cluster and workers (it kills them; the session's `qdrant_cluster` stays
whole for the other tests). Each test is bounded: seconds of load, every wait with a deadline.
The workers run with a 2 s lease and `batch_size=1` (a summary's write is then one engine call
per memory, long enough to be killed in the middle)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from benchmark.qdrant_server import Node, cluster, wait_for_peers
from benchmark.qdrant_server import node as qdrant_node
from reme import ReMe, ReMeError
from reme.client import ReMeClient
from reme.errors import ServiceError, StoreError
from reme.store.qdrant import QdrantStore

from conftest import DIM, on_disk, wipe
from openai_server import OpenAITestServer
from service_process import Served, free_port, llm_env

CLIENTS = 20
LEASE = 2.0
"""Seconds a dead worker's locks outlive it here (15 by default)."""
STALE = 3.0
"""Seconds before an open replays another writer's journal record (600 by default)."""
SETTINGS = {"REME_VECTOR_STORE__BACKEND": "qdrant", "REME_VECTOR_STORE__SHARD_NUMBER": "3",
            "REME_VECTOR_STORE__REPLICATION_FACTOR": "2", "REME_VECTOR_STORE__WRITE_CONSISTENCY_FACTOR": "1",
            "REME_VECTOR_STORE__LEASE": str(LEASE), "REME_VECTOR_STORE__JOURNAL_STALE_AFTER": str(STALE),
            "REME_VECTOR_STORE__BATCH_SIZE": "1", "REME_VECTOR_STORE__RETRY_FOR": "30"}
"""`retry_for` 30 s (10 by default): a loaded CI machine takes up to 7 s to start a cluster again."""
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def nodes() -> Iterator[list[Node]]:
    with on_disk("faults-cluster") as folder, cluster(3, folder) as started:
        yield started


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as s:
        yield s


class Workers(list[Served]):
    """Two `reme serve` processes on the cluster, each entering it through its own node (the
    third node is the one killed alone). A test that kills one starts with `revived()`."""

    def __init__(self, nodes: list[Node], folder: Path, llm: OpenAITestServer) -> None:
        super().__init__()
        self.nodes, self.folder, self.llm = nodes, folder, llm
        self.extend(self._start(i) for i in range(2))
        for worker in self:
            worker.wait_ready(60)
            # The first write makes the lock collection (a cluster takes seconds): not under load.
            httpx.post(f"{worker.url}/v1/memories", json={"content": "warm-up", "user_name": "nobody"},
                       timeout=60).raise_for_status()

    def _start(self, i: int) -> Served:
        env = {**llm_env(self.llm.base_url), **SETTINGS, "REME_VECTOR_STORE__URL": self.nodes[i].url}
        return Served(self.folder / f"w{i}", env=env)

    def revived(self) -> "Workers":
        """Every worker killed by an earlier test started again."""
        for i, worker in enumerate(self):
            if worker.proc.poll() is not None:
                worker.stop()
                self[i] = self._start(i).wait_ready(60)
        return self


@pytest.fixture(scope="module")
def workers(nodes: list[Node], tmp_path_factory: pytest.TempPathFactory, llm: OpenAITestServer) -> Iterator[Workers]:
    wipe(nodes[0].url)
    started = Workers(nodes, tmp_path_factory.mktemp("faults-workers"), llm)
    try:
        yield started
    finally:
        for worker in started:
            worker.stop(signal.SIGKILL)


@dataclass
class Load:
    """What the clients acknowledged, what failed (with when), and how long calls took."""

    memories: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # id -> (user, content, version)
    calls: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[float, str, str]] = field(default_factory=list)  # (time, call, error)
    slowest: list[tuple[float, float]] = field(default_factory=list)  # (started, seconds)

    def after(self, t: float) -> float:
        """The longest call that started after `t` (seconds)."""
        return max((s for start, s in self.slowest if start >= t), default=0.0)


async def _client(user: str, url: str, load: Load, stop: asyncio.Event) -> None:
    """Adds, updates of its own memories and searches, for `user`, until `stop`; no retries."""
    mine: list[str] = []
    n = 0
    async with ReMeClient(url, retries=0, timeout=60) as client:
        while not stop.is_set():
            n += 1
            started = time.monotonic()
            try:
                if n % 3 == 0 and mine:
                    call = "update"
                    memory_id = mine[n % len(mine)]
                    node = await client.update_memory(memory_id, content=f"{user} fact {n}, revised", user_name=user)
                    load.memories[memory_id] = (user, node.content, node.version)
                elif n % 3 == 1:
                    call = "add"
                    node = await client.add_memory(f"{user} fact {n}", user_name=user)
                    load.memories[node.memory_id] = (user, node.content, node.version)
                    mine.append(node.memory_id)
                else:
                    call = "search"
                    await client.search_memory(f"fact {n}", user_name=user, top_k=5)
                load.calls[call] += 1
            except ReMeError as exc:
                load.failures.append((time.monotonic(), call, f"{type(exc).__name__}: {exc}"[:300]))
                await asyncio.sleep(0.05)
            load.slowest.append((started, time.monotonic() - started))


def _run(prefix: str, workers: list[Served], load: Load, stop: asyncio.Event, n: int = CLIENTS) -> list[Any]:
    return [asyncio.create_task(_client(f"{prefix}{i}", workers[i % len(workers)].url, load, stop)) for i in range(n)]


async def _check_acknowledged(url: str, load: Load) -> None:
    """Every acknowledged add and update is stored with its content and version, read through the API."""
    async with ReMeClient(url, retries=3) as client:
        for user in sorted({user for user, _, _ in load.memories.values()}):
            stored = {n.memory_id: (user, n.content, n.version) for n in await client.list_memory(user_name=user,
                                                                                                  limit=500)}
            assert {k: v for k, v in load.memories.items() if v[0] == user}.items() <= stored.items(), user


async def test_a_killed_node_under_load_fails_no_call_and_loses_no_write(nodes: list[Node],
                                                                         workers: Workers) -> None:
    workers.revived()
    load, stop = Load(), asyncio.Event()
    clients = _run("kill-one-", workers, load, stop)
    await asyncio.sleep(1.5)
    before = sum(load.calls.values())
    killed_at = time.monotonic()
    nodes[2].kill()
    await asyncio.sleep(1)
    await asyncio.to_thread(nodes[2].start)  # the same ports and storage: it rejoins
    back_at = time.monotonic()
    during = sum(load.calls.values()) - before
    await asyncio.sleep(1)
    stop.set()
    await asyncio.gather(*clients)
    await asyncio.to_thread(wait_for_peers, nodes)
    print(f"\ncalls {dict(load.calls)}: {before} in 1.5 s before the kill, {during} in the "
          f"{back_at - killed_at:.2f} s it was down; slowest call: "
          f"{load.after(0):.2f} s before the kill, {load.after(killed_at):.2f} s after it")
    for t, call, error in load.failures:
        print(f"  +{t - killed_at:.2f} s {call}: {error}")
    assert load.failures == []
    assert during > 0
    for worker in workers:
        await _check_acknowledged(worker.url, load)


async def test_every_node_stopped_and_started_again_loses_nothing_acknowledged(nodes: list[Node],
                                                                              workers: Workers) -> None:
    workers.revived()
    load, stop = Load(), asyncio.Event()
    clients = _run("kill-all-", workers, load, stop)
    await asyncio.sleep(1.5)
    down_at = time.monotonic()
    for node in nodes:
        node.kill()
    await asyncio.sleep(1)
    # All at once: a node coming back into a cluster is ready once it has found its peers.
    await asyncio.gather(*(asyncio.to_thread(node.start) for node in nodes))
    back_at = time.monotonic()
    await asyncio.to_thread(wait_for_peers, nodes)
    calls_back = sum(load.calls.values())
    await asyncio.sleep(1)
    stop.set()
    await asyncio.gather(*clients)
    print(f"\ncalls {dict(load.calls)}; the cluster was down {back_at - down_at:.2f} s; slowest call "
          f"{load.after(down_at - 1):.2f} s; {len(load.failures)} failed")
    for t, call, error in load.failures:
        print(f"  +{t - down_at:.2f} s {call}: {error[:200]}")
    assert sum(load.calls.values()) > calls_back  # the service answers again ...
    assert load.failures == []  # ... and its calls waited out the restart instead of failing
    for worker in workers:
        await _check_acknowledged(worker.url, load)


FACTS = 60
"""Memories the scripted summary adds (with one history record, the conversation): with
`batch_size=1` its write is that many engine calls."""
SAID = [{"role": "user", "content": "Here is where I keep my things: each item in its drawer"}]


def _script_summary(llm: OpenAITestServer) -> None:
    facts = [{"content": f"Alice keeps item {k} in drawer {k * 7919}", "kind": "fact", "sources": [0],
              "importance": 0.5, "time": None} for k in range(FACTS)]
    llm.script("Read the conversation below", {"memories": facts})
    llm.script("long-term memory consistent", {"decisions": []})


async def _count(node: Node, collection: str, flt: dict[str, Any]) -> int:
    """Points in `collection` now (0 while it does not exist), asked of the node directly."""
    async with httpx.AsyncClient(base_url=node.url) as http:
        got = await http.post(f"/collections/{collection}/points/count", json={"filter": flt, "exact": True})
    return int(got.json()["result"]["count"]) if got.status_code == 200 else 0


async def test_a_worker_killed_while_its_summary_waits_on_the_model_writes_nothing_and_holds_only_a_lease(
        workers: Workers, llm: OpenAITestServer) -> None:
    workers.revived()
    _script_summary(llm)
    asked = len(llm.chat_requests)
    llm.hang_next(60)  # the model's first answer never comes in time: the kill lands while it waits
    load, stop = Load(), asyncio.Event()
    clients = _run("beside-", workers[1:], load, stop, CLIENTS // 2)
    try:
        async with ReMeClient(workers[0].url, retries=0) as doomed, ReMeClient(workers[1].url, retries=0) as other:
            summary = asyncio.create_task(doomed.summarize_memory(SAID, user_name="alice"))
            deadline = time.monotonic() + 30
            while len(llm.chat_requests) == asked:  # the summary holds alice's lock, waiting on the model
                assert time.monotonic() < deadline and not summary.done()
                await asyncio.sleep(0.02)
            killed_at = time.monotonic()
            workers[0].stop(signal.SIGKILL)
            with pytest.raises(ServiceError):
                await summary
            assert await other.count_memory(user_name="alice") == 0  # nothing half-written
            result = await other.summarize_memory(SAID, user_name="alice")  # once the dead one's lease ends
            waited = time.monotonic() - killed_at
            assert len(result.added) == FACTS and await other.count_memory(user_name="alice") == FACTS + 1
    finally:
        stop.set()
        await asyncio.gather(*clients)
    print(f"\nthe other worker's summary of alice done {waited:.2f} s after the kill (lease {LEASE:g} s); "
          f"calls it served meanwhile: {dict(load.calls)}, slowest {load.after(0):.2f} s")
    assert load.failures == [] and sum(load.calls.values()) > 0  # the other worker kept serving
    assert waited < LEASE + 30  # the lease ended: not `lock_wait` (120 s) and a StoreLockedError


async def test_a_worker_killed_while_writing_a_summary_leaves_it_whole_and_undone_never(
        nodes: list[Node], workers: Workers, llm: OpenAITestServer, tmp_path: Path) -> None:
    workers.revived()
    _script_summary(llm)
    async with ReMeClient(workers[0].url, retries=0) as doomed, ReMeClient(workers[1].url, retries=0) as other:
        summary = asyncio.create_task(doomed.summarize_memory(SAID, user_name="bob"))
        deadline = time.monotonic() + 30
        bobs = {"must": [{"key": "memory_target", "match": {"value": "bob"}}]}
        header = {"must": [{"key": "header", "match": {"value": True}}]}
        while not (await _count(nodes[0], "_reme_journal", header) and await _count(nodes[0], "reme", bobs)):
            # its intent record is stored and its write under way
            assert time.monotonic() < deadline and not summary.done()
            await asyncio.sleep(0.005)
        workers[0].stop(signal.SIGKILL)
        killed_at = time.monotonic()
        with pytest.raises(ServiceError):
            await summary
        seen = len(await other.list_memory(user_name="bob", limit=100))
        assert 0 < seen < FACTS + 1  # the kill landed mid-write
        one = next(n for n in await other.list_memory(user_name="bob", limit=100) if n.memory_type == "personal")
        # The other worker's update of one of its memories (which names the dead one's intent
        # record: updates take no lock) ...
        revised = await other.update_memory(one.memory_id, content="Bob moved item 0", user_name="bob")
        assert revised.version == 2
        # ... first finishes what the dead one left: the summary is whole
        assert await other.count_memory(user_name="bob") == FACTS + 1
    await asyncio.sleep(killed_at + STALE - time.monotonic())  # later: an open replays nothing of it over the update
    async with ReMe(working_dir=tmp_path / "later", embedding={"backend": "hash", "dimensions": DIM},
                    vector_store={"backend": "qdrant", "url": nodes[1].url, "journal_stale_after": STALE}) as later:
        stored = await later.get_memory(one.memory_id, user_name="bob")
        assert (stored.content, stored.version) == ("Bob moved item 0", 2)
        assert await later.count_memory(user_name="bob") == FACTS + 1
    print(f"\n{seen} of {FACTS + 1} records written when the worker was killed")


PROTOCOLS = {"REST": {}, "gRPC": {"prefer_grpc": True}}
"""The two ways to speak to a server; `retry_for` holds for both."""


def speaking(protocol: str, node: Node) -> dict[str, Any]:
    return {"url": node.url, **PROTOCOLS[protocol], "grpc_port": node.grpc_port}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_server_that_stays_down_fails_each_call_with_a_store_error_once_retry_for_ends(protocol: str) -> None:
    store = QdrantStore(url=f"http://127.0.0.1:{free_port()}", grpc_port=free_port(), retry_for=0.5,
                        **PROTOCOLS[protocol])  # nobody listens there
    try:
        started = time.monotonic()
        with pytest.raises(StoreError):
            await store.recover()
        assert 0.3 < time.monotonic() - started < 5
    finally:
        await store.close()



async def test_a_node_started_again_within_retry_for_answers_the_grpc_calls_that_waited(tmp_path: Path) -> None:
    """Calls over gRPC wait while their node is down and are answered once it is back within
    `retry_for` (over REST: `test_every_node_stopped_and_started_again_loses_nothing_acknowledged`)."""
    from reme.schema import MemoryNode
    from reme.store.base import VectorRecord

    records = [VectorRecord(node=MemoryNode(memory_type="personal", memory_target="alice", content=f"fact {i}"),
                            vector=[0.1] * DIM) for i in range(2)]
    node = qdrant_node(tmp_path / "node").start()
    store = QdrantStore(retry_for=20.0, **speaking("gRPC", node))
    try:
        await store.create_collection("mem", DIM)
        await store.upsert("mem", records[:1])
        node.kill()
        started = time.monotonic()
        waiting = asyncio.gather(store.upsert("mem", records[1:]), store.count("mem"))
        await asyncio.sleep(1.0)
        assert not waiting.done()
        await asyncio.to_thread(node.start)
        _, counted = await asyncio.wait_for(waiting, 30)
        assert time.monotonic() - started >= 1.0 and counted in (1, 2) and await store.count("mem") == 2
    finally:
        await store.close()
        node.stop()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_collection_a_node_has_not_yet_made_is_waited_for_not_a_failure(protocol: str,
                                                                                 empty_node: Node) -> None:
    """On a fresh cluster a node can answer 404 for a collection another node agreed to create (a
    worker starting beside another one failed so). A collection this process saw exist that a
    node says does not is asked for again within `retry_for`; one that stays gone still fails."""
    from qdrant_client import QdrantClient, models

    from reme.schema import MemoryNode
    from reme.store.base import Upsert, VectorRecord
    from reme.store.qdrant import JOURNAL

    def records(tag: str) -> list[VectorRecord]:
        return [VectorRecord(node=MemoryNode(memory_type="personal", memory_target="alice", content=f"{tag} {i}"),
                             vector=[0.1] * DIM) for i in range(2)]

    store = QdrantStore(retry_for=5.0, **speaking(protocol, empty_node))
    raw = QdrantClient(url=empty_node.url, check_compatibility=False)
    try:
        for name in ("mem", "other"):
            await store.create_collection(name, DIM)
        await store.write([Upsert("mem", records("a")), Upsert("other", records("a"))])  # journaled: two steps
        raw.delete_collection(JOURNAL)  # as a node that has not yet applied its creation answers

        def make_it_again() -> None:
            time.sleep(0.5)
            raw.create_collection(JOURNAL, vectors_config=models.VectorParams(size=1, distance=models.Distance.DOT))

        started = time.monotonic()
        await asyncio.gather(store.write([Upsert("mem", records("b")), Upsert("other", records("b"))]),
                             asyncio.to_thread(make_it_again))
        assert time.monotonic() - started >= 0.4 and await store.count("mem") == 4 and await store.count("other") == 4
        quick = QdrantStore(retry_for=0.5, **speaking(protocol, empty_node))
        try:
            await quick.write([Upsert("mem", records("c")), Upsert("other", records("c"))])
            raw.delete_collection(JOURNAL)  # and nobody makes it again
            with pytest.raises(StoreError):
                await quick.write([Upsert("mem", records("d")), Upsert("other", records("d"))])
            assert await quick.count("mem") == 6  # nothing of it written
        finally:
            await quick.close()
    finally:
        raw.close()
        await store.close()
