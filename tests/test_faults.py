"""Faults on a real 3-node Qdrant cluster with two `reme serve` workers (Qdrant's own
`tests/consensus_tests` are the model): real processes on loopback, killed and started again,
and assertions on what was acknowledged, read back through the service's API.

The module has its own cluster (it kills nodes; the session's `qdrant_cluster` stays whole for
the other tests). Each test is bounded: a few seconds of load, every wait with a deadline."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from benchmark.qdrant_server import Node, cluster, wait_for_peers
from reme import ReMeError
from reme.errors import ServiceError
from reme.client import ReMeClient

from conftest import wipe
from openai_server import OpenAITestServer
from service_process import Served, llm_env

SPREAD = {"REME_VECTOR_STORE__SHARD_NUMBER": "3", "REME_VECTOR_STORE__REPLICATION_FACTOR": "2",
          "REME_VECTOR_STORE__WRITE_CONSISTENCY_FACTOR": "1"}
CLIENTS = 20
LEASE = 2.0
"""Seconds a dead worker's locks outlive it here (15 by default)."""
STALE = 4.0
"""Seconds before anyone replays a dead writer's journal record on open (600 by default)."""


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Node]]:
    with cluster(3, tmp_path_factory.mktemp("faults-cluster")) as started:
        yield started


def _worker(tmp_path: Path, name: str, node: Node, llm: OpenAITestServer, **settings: str) -> Served:
    env = {**llm_env(llm.base_url), **SPREAD, "REME_VECTOR_STORE__BACKEND": "qdrant",
           "REME_VECTOR_STORE__URL": node.url, **settings}
    return Served(tmp_path / name, env=env)


@contextlib.contextmanager
def _workers(nodes: list[Node], tmp_path: Path, llm: OpenAITestServer, **settings: str) -> Iterator[list[Served]]:
    """Two `reme serve` processes on the cluster, each entering it through its own node (the
    third node is the one the tests kill), with a short lease and journal staleness."""
    wipe(nodes[0].url)
    env = {"REME_VECTOR_STORE__LEASE": str(LEASE), "REME_VECTOR_STORE__JOURNAL_STALE_AFTER": str(STALE), **settings}
    started = [_worker(tmp_path, f"w{i}", nodes[i], llm, **env) for i in range(2)]
    try:
        yield [w.wait_ready(60) for w in started]
    finally:
        for w in started:
            w.stop(signal.SIGKILL)


@pytest.fixture
def workers(nodes: list[Node], tmp_path: Path, server: OpenAITestServer) -> Iterator[list[Served]]:
    with _workers(nodes, tmp_path, server) as started:
        yield started


@dataclass
class Load:
    """What 20 clients acknowledged and what failed, with the time of each failure."""

    memories: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # id -> (user, content, version)
    calls: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[float, str, str]] = field(default_factory=list)  # (time, call, error)


async def _client(i: int, url: str, load: Load, stop: asyncio.Event) -> None:
    user = f"user{i}"
    mine: list[str] = []
    n = 0
    async with ReMeClient(url, retries=0, timeout=30) as client:
        while not stop.is_set():
            n += 1
            try:
                if n % 3 == 0 and mine:
                    memory_id = mine[n % len(mine)]
                    call = "update"
                    content = f"{user} fact {memory_id[:8]} revised at step {n}"
                    node = await client.update_memory(memory_id, content=content, user_name=user)
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


async def _check_acknowledged(url: str, load: Load) -> None:
    """Every acknowledged add and update is stored, with its content and version, read through the API."""
    async with ReMeClient(url, retries=3) as client:
        for memory_id, (user, content, version) in load.memories.items():
            stored = await client.get_memory(memory_id, user_name=user)
            assert (stored.content, stored.version) == (content, version), memory_id


async def test_a_killed_node_under_load_stops_no_call_and_loses_no_write(nodes: list[Node],
                                                                          workers: list[Served]) -> None:
    load, stop = Load(), asyncio.Event()
    clients = [asyncio.create_task(_client(i, workers[i % 2].url, load, stop)) for i in range(CLIENTS)]
    await asyncio.sleep(2)
    before = sum(load.calls.values())
    killed_at = time.monotonic()
    nodes[2].kill()
    await asyncio.sleep(4)
    during = sum(load.calls.values()) - before
    await asyncio.to_thread(nodes[2].start)
    restarted_at = time.monotonic()
    await asyncio.sleep(2)
    stop.set()
    await asyncio.gather(*clients)
    await asyncio.to_thread(wait_for_peers, nodes)
    print(f"\ncalls {dict(load.calls)}; {before} before the kill, {during} in the 4 s after it; "
          f"restart took {restarted_at - killed_at - 4:.2f} s")
    for t, call, error in load.failures:
        print(f"  +{t - killed_at:.2f} s {call}: {error}")
    assert load.failures == []
    assert during > 0
    for w in workers:
        await _check_acknowledged(w.url, load)


FACTS = 60
"""Memories one scripted summary adds (and one history record, the conversation): with
`batch_size=1` its write is that many engine calls."""


def _script_summary(llm: OpenAITestServer) -> None:
    facts = [{"content": f"Alice keeps item {k} in drawer {k * 7919}", "kind": "fact", "sources": [0],
              "importance": 0.5, "time": None} for k in range(FACTS)]
    llm.script("Read the conversation below", {"memories": facts})
    llm.script("long-term memory consistent", {"decisions": []})


SAID = [{"role": "user", "content": "Here is where I keep my things"}]


async def _count(node: Node, collection: str, flt: dict[str, Any] | None = None) -> int:
    """Points in `collection` now (0 while it does not exist), asked of the node directly."""
    async with httpx.AsyncClient(base_url=node.url) as http:
        got = await http.post(f"/collections/{collection}/points/count", json={"filter": flt, "exact": True})
    return int(got.json()["result"]["count"]) if got.status_code == 200 else 0


async def test_a_worker_killed_while_its_summary_waits_on_the_llm_writes_nothing_and_blocks_only_its_target(
        nodes: list[Node], workers: list[Served], server: OpenAITestServer) -> None:
    _script_summary(server)
    server.hang_next(60)  # the first model call never comes back in time: the kill lands while it waits
    load, stop = Load(), asyncio.Event()
    clients = [asyncio.create_task(_client(i, workers[1].url, load, stop)) for i in range(CLIENTS // 2)]
    async with ReMeClient(workers[0].url, retries=0) as doomed, ReMeClient(workers[1].url, retries=0) as survivor:
        summary = asyncio.create_task(doomed.summarize_memory(SAID, user_name="alice"))
        deadline = time.monotonic() + 30
        while not server.chat_requests:  # the summary holds alice's lock and waits on the model
            assert time.monotonic() < deadline and not summary.done()
            await asyncio.sleep(0.02)
        killed_at = time.monotonic()
        workers[0].stop(signal.SIGKILL)
        with pytest.raises(ServiceError):
            await summary
        assert await survivor.count_memory(user_name="alice") == 0  # nothing half-written
        result = await survivor.summarize_memory(SAID, user_name="alice")  # waits for the dead one's lease
        waited = time.monotonic() - killed_at
        assert len(result.added) == FACTS and await survivor.count_memory(user_name="alice") == FACTS + 1
    stop.set()
    await asyncio.gather(*clients)
    print(f"\nthe survivor's summary of alice done {waited:.2f} s after the kill (lease {LEASE} s); "
          f"load on the survivor meanwhile: {dict(load.calls)}")
    assert load.failures == [] and sum(load.calls.values()) > 0  # the other worker kept serving
    assert waited < LEASE + 10


async def test_a_worker_killed_while_writing_a_summary_leaves_it_whole_and_undoes_nothing_later(
        nodes: list[Node], tmp_path: Path, server: OpenAITestServer) -> None:
    _script_summary(server)
    with _workers(nodes, tmp_path, server, REME_VECTOR_STORE__BATCH_SIZE="1") as (doomed, survivor):
        async with ReMeClient(doomed.url, retries=0) as a, ReMeClient(survivor.url, retries=0) as b:
            summary = asyncio.create_task(a.summarize_memory(SAID, user_name="alice"))
            deadline = time.monotonic() + 30
            header = {"must": [{"key": "header", "match": {"value": True}}]}
            while not (await _count(nodes[0], "_reme_journal", header) and await _count(nodes[0], "reme")):
                # its intent record is stored, and its write under way
                assert time.monotonic() < deadline and not summary.done()
                await asyncio.sleep(0.005)
            doomed.stop(signal.SIGKILL)
            with pytest.raises(ServiceError):
                await summary
            written = await b.list_memory(user_name="alice", limit=100)
            assert 0 < len(written) < FACTS + 1  # the kill landed mid-write
            written = [n for n in written if n.memory_type == "personal"]
            # The survivor's next write takes the collection's lock over from the dead worker ...
            revised = await b.update_memory(written[0].memory_id, content="Alice moved item 0", user_name="alice")
            assert revised.version == 2
            # ... and finds the dead worker's summary whole
            assert await b.count_memory(user_name="alice") == FACTS + 1
        await asyncio.sleep(STALE)  # long after: whoever opens the store replays nothing of it again
        again = _worker(tmp_path, "w2", nodes[1], server, REME_VECTOR_STORE__JOURNAL_STALE_AFTER=str(STALE))
        try:
            again.wait_ready(60)
            async with ReMeClient(again.url, retries=0) as c:
                stored = await c.get_memory(written[0].memory_id, user_name="alice")
                assert (stored.content, stored.version) == ("Alice moved item 0", 2)
                assert await c.count_memory(user_name="alice") == FACTS + 1
        finally:
            again.stop(signal.SIGKILL)
