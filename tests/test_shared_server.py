"""Several processes on one Qdrant server (a real node, and a real 3-node cluster: scripts/qdrant.sh):
no acknowledged write is lost, ordinary contention never surfaces as `ConflictError`, deduplication
holds, and a process that held the write lock beyond its lease cannot overwrite what another wrote
since (the write of a stored memory is conditional in the engine).

Each test starts worker processes that open ReMe on the same server and collection, waits until
they are ready, then lets them run: what they acknowledge is checked against what the server
holds afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from qdrant_client import QdrantClient

from benchmark.qdrant_server import Node
from reme import ReMeSync
from reme.errors import MemoryNotFoundError
from reme.store.base import LINEAGE
from reme.store.qdrant import JOURNAL

from conftest import DIM, wipe
from openai_server import OpenAITestServer
from test_cluster import SPREAD

N = 50
"""Calls per process: enough for the two to overlap hundreds of times, cheap enough for CI."""

STOP_AT = """
from reme.store.qdrant import QdrantStore
_call = QdrantStore._call
stops = []  # [kind, nth, signal, after]: the first is armed
answered = set()

def stop_at(kind, nth=1, sig=signal.SIGSTOP, after=None):
    stops.append([kind, nth, sig, after])

async def _stopping_call(self, what, coro):
    # A test's instrument: send this process the first stop's signal right before the nth call of
    # its kind (counted from the stop before it) reaches the server, once a call of the kind its
    # `after` names, sent beside it, has been answered.
    if stops and what == stops[0][0]:
        stops[0][1] -= 1
        if stops[0][1] == 0:
            _, _, sig, after = stops.pop(0)
            while after is not None and after not in answered:
                await asyncio.sleep(0.001)
            print("stopping", flush=True)
            os.kill(os.getpid(), sig)
    try:
        return await _call(self, what, coro)
    finally:
        answered.add(what)

QdrantStore._call = _stopping_call
"""
"""Put in a worker's program (the one instrument of these tests): `stop_at("journal")` stops it
with SIGSTOP (as a debugger, a long GC pause or a frozen VM would) right before its next call of
that kind reaches the server; `stop_at("upsert", 2, signal.SIGKILL)` kills it before its second
upsert instead. Several `stop_at` calls stop it one after the other (each counting from the one
before). An update or a delete sends the version it keeps beside its conditional write:
`after="swap"` stops it at the version once the conditional write is done."""


def _stops(*calls: str) -> str:
    """STOP_AT with stops armed before the worker runs: each of `calls` the arguments of one `stop_at`."""
    return STOP_AT + "".join(f"stop_at({c})\n" for c in calls)


def _reap(*procs: subprocess.Popen[str] | None) -> None:
    """Kill the test's worker processes still running (continued first: a stopped one would not
    die before it is)."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()


def _worker(body: str, llm: str | None = None, prelude: str = "") -> str:
    """A program: open ReMe on the store argv[1] names (vector_store settings, JSON; working dir
    argv[2]; its LLM the scripted server at `llm`), say "ready", wait for a line on stdin, run
    `body` (which fills `out`), print `out` as JSON."""
    model = {"base_url": llm, "api_key": "k", "model": "test-model", "max_retries": 0, "timeout": 30} if llm else {}
    head = textwrap.dedent(f"""
        import asyncio, json, os, signal, sys
        from reme import ReMe
        from reme.errors import ConflictError
        {textwrap.indent(textwrap.dedent(prelude), " " * 8).strip()}
        async def main():
            out = {{"ok": 0, "conflicts": 0, "versions": []}}
            async with ReMe(working_dir=sys.argv[2], embedding={{"backend": "hash", "dimensions": {DIM}}},
                            vector_store=json.loads(sys.argv[1]), llm={model!r}) as reme:
                print("ready", flush=True)
                sys.stdin.readline()
    """)
    tail = "\n    print(json.dumps(out), flush=True)\nasyncio.run(main())\n"
    return head + textwrap.indent(textwrap.dedent(body), " " * 8) + tail


def _start(store: dict[str, Any], tmp_path: Path, program: str, name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", program, json.dumps(store), str(tmp_path / name)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def _result(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, out
    return dict(json.loads(out.strip().splitlines()[-1]))


def _run_together(store: dict[str, Any], tmp_path: Path, body: str, processes: int = 2,
                  llm: str | None = None) -> list[dict[str, Any]]:
    program = _worker(body, llm)
    procs: list[subprocess.Popen[str]] = []
    try:
        for i in range(processes):
            procs.append(_start(store, tmp_path, program, f"wd{i}"))
        for proc in procs:  # all go at once
            _go(proc)
        return [_result(proc) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


def _open(store: dict[str, Any], tmp_path: Path) -> ReMeSync:
    return ReMeSync(working_dir=tmp_path / "checker", embedding={"backend": "hash", "dimensions": DIM},
                    vector_store=store)


@pytest.fixture(params=["node", "cluster"])
def shared(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The vector_store settings every process of a test shares: the session's node, or its 3-node
    cluster (collections of 3 shards with 2 copies, as docs/scaling.md recommends), emptied."""
    if request.param == "node":
        return {"backend": "qdrant", "url": request.getfixturevalue("empty_node").url}
    nodes: list[Node] = request.getfixturevalue("qdrant_cluster")
    wipe(nodes[0].url)
    return {"backend": "qdrant", "url": nodes[0].url, "collection": "spread", **SPREAD}


@pytest.fixture
def node_store(empty_node: Node) -> dict[str, Any]:
    """The session's node, emptied, as vector_store settings."""
    return {"backend": "qdrant", "url": empty_node.url}


def test_two_processes_recording_usage_lose_no_count(shared: dict[str, Any], tmp_path: Path) -> None:
    with _open(shared, tmp_path) as reme:
        memory_id = reme.add_memory("Alice prefers window seats", user_name="alice").memory_id
    results = _run_together(shared, tmp_path, f"""
        for _ in range({N}):
            try:
                await reme.record_usage(["{memory_id}"], True, user_name="alice")
                out["ok"] += 1
            except ConflictError:
                out["conflicts"] += 1
    """)
    assert [r["conflicts"] for r in results] == [0, 0]  # nobody did anything wrong
    with _open(shared, tmp_path) as reme:
        stored = reme.get_memory(memory_id, user_name="alice")
    acknowledged = sum(int(r["ok"]) for r in results)  # type: ignore[call-overload]
    assert acknowledged == 2 * N
    assert stored.access_count == acknowledged
    assert stored.metadata["freq"] == acknowledged and stored.metadata["utility"] == acknowledged


@pytest.mark.parametrize("others", [2, LINEAGE + 1])
def test_a_count_replaced_before_its_read_back_is_counted_once(shared: dict[str, Any], tmp_path: Path,
                                                               others: int) -> None:
    """A usage count whose conditional write went through, stopped before it reads the revision
    back: meanwhile another process counts `others` times, so the revision read back is that
    many writes past the one it wrote. It must still know it won, and not count again (a count
    acknowledged once is stored once: a retry of it was CI's 101 counts for 100 calls). Past
    what a record remembers of the revisions it replaced (`LINEAGE`), that is no longer known:
    `StoreError` says so, and it still does not count again."""
    with _open(shared, tmp_path) as reme:
        memory_id = reme.add_memory("Alice prefers window seats", user_name="alice").memory_id
    proc = _start(shared, tmp_path, _worker(f"""
        from reme.errors import StoreError
        stop_at("swap", 2)  # its conditional write answered, its read-back not sent
        try:
            await reme.record_usage(["{memory_id}"], True, user_name="alice")
            out["ok"] += 1
        except StoreError as exc:
            out["unknown"] = str(exc)
    """, prelude=STOP_AT), "counting")
    try:
        _stop_then(proc)
        with _open(shared, tmp_path) as reme:
            for _ in range(others):
                reme.record_usage([memory_id], True, user_name="alice")
        os.kill(proc.pid, signal.SIGCONT)
        result = _result(proc)
    finally:
        _reap(proc)
    if others <= LINEAGE:
        assert result["ok"] == 1
    else:
        assert result["ok"] == 0 and "whether this write took effect is not known" in result["unknown"]
    with _open(shared, tmp_path) as reme:
        assert reme.get_memory(memory_id, user_name="alice").access_count == others + 1


def test_two_processes_updating_one_memory_keep_every_version(shared: dict[str, Any], tmp_path: Path) -> None:
    with _open(shared, tmp_path) as reme:
        memory_id = reme.add_memory("draft 0", user_name="alice").memory_id
    results = _run_together(shared, tmp_path, f"""
        import os
        for i in range({N}):
            try:
                node = await reme.update_memory("{memory_id}", content=f"draft {{os.getpid()}} {{i}}", user_name="alice")
                out["ok"] += 1
                out["versions"].append(node.version)
            except ConflictError:
                out["conflicts"] += 1
    """)
    assert [r["conflicts"] for r in results] == [0, 0]
    acknowledged = sum(int(r["ok"]) for r in results)  # type: ignore[call-overload]
    assert acknowledged == 2 * N
    written = sorted(v for r in results for v in r["versions"])  # type: ignore[attr-defined]
    assert written == list(range(2, 2 * N + 2))  # every update made its own version
    with _open(shared, tmp_path) as reme:
        stored = reme.get_memory(memory_id, user_name="alice")
        history = reme.history(memory_id, user_name="alice")
    assert stored.version == 1 + acknowledged
    assert [v.node.version for v in history] == list(range(1, acknowledged + 1))  # one entry per version


def test_two_processes_adding_the_same_text_store_it_once(shared: dict[str, Any], tmp_path: Path) -> None:
    results = _run_together(shared, tmp_path, f"""
        for _ in range({N}):
            node = await reme.add_memory("Alice prefers window seats", user_name="alice")
            out["ok"] += 1
            out["versions"].append(node.memory_id)
    """)
    assert sum(int(r["ok"]) for r in results) == 2 * N  # type: ignore[call-overload]
    with _open(shared, tmp_path) as reme:
        stored = reme.list_memory(user_name="alice")
    assert [n.content for n in stored] == ["Alice prefers window seats"]
    # Every call, in either process, returned that one memory (the one that created it, or it found)
    assert {i for r in results for i in r["versions"]} == {stored[0].memory_id}  # type: ignore[attr-defined]


def test_an_add_first_finishes_a_dead_summary_that_was_adding_its_text(node_store: dict[str, Any],
                                                                       server: OpenAITestServer, tmp_path: Path) -> None:
    """A summary that only adds (5 memories and its history record, 3 engine calls with
    `batch_size` 2: one journaled write under its user's lock) killed after its first call. An
    add of one of its texts in another process, once the dead one's leases ended, first finishes
    the summary (its record names every lock its writer held, the add's claims among them) and so
    finds that memory: one of it, not a second one once the summary is replayed."""
    facts = [f"Alice keeps item {k} in drawer {k * 7919}" for k in range(5)]
    server.script("Read the conversation below", {"memories": [
        {"content": fact, "kind": "fact", "sources": [0], "importance": 0.5, "time": None} for fact in facts]})
    server.script("long-term memory consistent", {"decisions": []})
    store = {**node_store, "batch_size": 2, "lease": 1.0}
    killed = _start(store, tmp_path, _worker("""
        stop_at("upsert", 2, signal.SIGKILL)
        await reme.summarize_memory([{"role": "user", "content": "Here is where I keep my things: each item in its drawer"}],
                                    user_name="alice")
    """, llm=server.base_url, prelude=STOP_AT), "killed")
    _go(killed)
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    time.sleep(1.5)
    with _open(store, tmp_path) as reme:
        again = reme.add_memory(facts[4], user_name="alice")
        stored = [n for n in reme.list_memory(user_name="alice", limit=100) if n.memory_type == "personal"]
    assert sorted(n.content for n in stored) == sorted(facts)
    assert again.memory_id in {n.memory_id for n in stored}


async def test_an_add_waiting_for_one_claim_holds_none_after_it(node_store: dict[str, Any]) -> None:
    """An add claims its memories' contents and ids in one order whatever its batch's: one that
    could not take a claim keeps those before it and holds none after it, so two adds of
    overlapping batches never wait for each other in a circle. Here: `first` holds a name, an add
    of that name and a later one waits, and a third add of the later name alone goes through."""
    import asyncio
    import uuid

    from reme.store.qdrant import _LOCK_IDS, QdrantStore

    names = sorted((f"test/{i}" for i in range(2)), key=lambda n: str(uuid.uuid5(_LOCK_IDS, n)))
    stores = [QdrantStore(url=node_store["url"], lock_wait=lock_wait) for lock_wait in (30.0, 30.0, 3.0)]

    async def add_both() -> None:
        async with stores[1].claims([names[1], names[0]]):
            pass

    try:
        async with stores[0].claims([names[0]]):
            waiting = asyncio.create_task(add_both())
            await asyncio.sleep(0.5)  # it has tried, and waits for names[0]
            assert not waiting.done()
            async with stores[2].claims([names[1]]):  # not held by the waiting one (else StoreLockedError)
                pass
        await asyncio.wait_for(waiting, 30)  # taken once released
    finally:
        for store in stores:
            await store.close()


def _stopped_adder(store: dict[str, Any], tmp_path: Path, body: str) -> subprocess.Popen[str]:
    """A process stopped (SIGSTOP) right before the write of its add reaches the server, holding
    whatever an add holds then; a lease far longer than the test, so nobody takes it over."""
    proc = _start({**store, "lease": 600.0}, tmp_path, _worker('stop_at("upsert")\n' + textwrap.dedent(body),
                                                              prelude=STOP_AT), "stopped")
    _stop_then(proc)
    return proc


def test_an_add_for_one_user_does_not_wait_for_a_stopped_add_for_another(shared: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    """Adds hold no collection-wide lock on a server: what an add holds covers its own content
    (and ids), so an add of bob's memory goes through while an add of alice's is stopped mid-way
    (with the collection's one lock it waited for that lease: `StoreLockedError` after
    `lock_wait`). An add of the same text for alice waits for the stopped one, and gets its memory."""
    stopped = _stopped_adder(shared, tmp_path, """
        node = await reme.add_memory("Alice prefers window seats", user_name="alice")
        out["versions"].append(node.memory_id)
    """)
    same = None
    try:
        bob = _start({**shared, "lock_wait": 3.0}, tmp_path, _worker("""
            node = await reme.add_memory("Bob likes aisle seats", user_name="bob")
            out["versions"].append(node.memory_id)
            nodes = await reme.add_memories([MemoryNode(memory_type="personal", memory_target="carol",
                                                        content=f"Carol fact {i}") for i in range(3)])
            out["ok"] = len(nodes)
        """, prelude="from reme import MemoryNode"), "bob")
        _go(bob)
        assert _result(bob)["ok"] == 3  # it did not wait for alice's add
        same = _start(shared, tmp_path, _worker("""
            node = await reme.add_memory("alice  prefers window SEATS", user_name="alice")
            out["versions"].append(node.memory_id)
        """), "same")
        _go(same)
        time.sleep(0.5)
        os.kill(stopped.pid, signal.SIGCONT)
        first, second = _result(stopped), _result(same)
    finally:
        _reap(stopped, same)
    assert first["versions"] == second["versions"]  # one memory, the second add got it back
    with _open(shared, tmp_path) as reme:
        assert [n.memory_id for n in reme.list_memory(user_name="alice")] == first["versions"]
        assert [n.content for n in reme.list_memory(user_name="bob")] == ["Bob likes aisle seats"]
        assert len(reme.list_memory(user_name="carol")) == 3


def test_an_add_killed_half_way_is_finished_by_the_next_add_of_its_content(node_store: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    """An add of five memories written in three engine calls (`batch_size` 2: one journaled
    write), killed after the first: the next process adding one of its texts, once the dead
    adder's lease has passed, first finishes its write (all five are there, not two), and gets
    that memory back rather than a second one."""
    store = {**node_store, "batch_size": 2, "lease": 1.0}
    killed = _start(store, tmp_path, _worker("""
        stop_at("upsert", 2, signal.SIGKILL)
        await reme.add_memories([MemoryNode(memory_type="personal", memory_target="alice", content=f"Alice fact {i}")
                                 for i in range(5)])
    """, prelude="from reme import MemoryNode\n" + STOP_AT), "killed")
    _go(killed)
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    with _open(node_store, tmp_path) as reme:  # half written: its writer may still be at work
        assert len(reme.list_memory(user_name="alice")) == 2
    time.sleep(1.5)
    with _open(store, tmp_path) as reme:
        again = reme.add_memory("Alice fact 4", user_name="alice")
        stored = reme.list_memory(user_name="alice")
    assert sorted(n.content for n in stored) == [f"Alice fact {i}" for i in range(5)]
    assert again.memory_id in {n.memory_id for n in stored}
    client = QdrantClient(url=node_store["url"], check_compatibility=False)
    try:
        assert client.count(JOURNAL).count == 0  # replayed and dropped
    finally:
        client.close()


def test_two_processes_appending_to_one_session_keep_every_message_in_order(node_store: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    results = _run_together(node_store, tmp_path, f"""
        import os
        for i in range({N}):
            await reme.add_messages([{{"role": "user", "content": f"{{os.getpid()}} says {{i}}"}}], session_name="chat")
            out["ok"] += 1
        out["pid"] = os.getpid()
    """)
    with _open(node_store, tmp_path) as reme:
        said = [m.message["content"] for m in reme.get_messages(session_name="chat")]
    assert len(said) == 2 * N
    for result in results:  # each process's messages, in the order it added them
        assert [s for s in said if s.startswith(f"{result['pid']} says ")] == \
            [f"{result['pid']} says {i}" for i in range(N)]


def test_two_processes_summarizing_one_user_take_turns(node_store: dict[str, Any], server: OpenAITestServer,
                                                       tmp_path: Path) -> None:
    with _open(node_store, tmp_path) as reme:
        paris = reme.add_memory("Alice lives in Paris", user_name="alice")
    revisions = iter(range(1, 100))

    def update_the_candidate(body: dict[str, object]) -> dict[str, object]:
        time.sleep(1.0)  # a model thinking: both summaries are planning at once
        return {"decisions": [{"candidate": 0, "action": "UPDATE", "id": 0,
                               "text": f"Alice lives in Berlin (revision {next(revisions)})", "reason": "moved"}]}

    server.script("Read the conversation below", {"memories": [{"content": "Alice moved to Berlin", "kind": "fact",
                                                                 "sources": [0], "importance": 0.5, "time": None}]})
    server.script("long-term memory consistent", update_the_candidate)
    results = _run_together(node_store, tmp_path, """
        try:
            await reme.summarize_memory([{"role": "user", "content": "I moved to Berlin"}], user_name="alice")
            out["ok"] += 1
        except ConflictError:
            out["conflicts"] += 1
    """, llm=server.base_url)
    assert [r["conflicts"] for r in results] == [0, 0]  # the second summary decided on the first one's result
    with _open(node_store, tmp_path) as reme:
        stored = reme.get_memory(paris.memory_id, user_name="alice")
        history = reme.history(paris.memory_id, user_name="alice")
    assert stored.version == 3 and [v.node.version for v in history] == [1, 2]


def _stopped(proc: subprocess.Popen[str]) -> bool:
    return Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def _wait_stopped(proc: subprocess.Popen[str]) -> None:
    """Wait until `proc` said it stops itself (STOP_AT) and is stopped."""
    assert proc.stdout is not None and proc.stdout.readline().strip() == "stopping"
    deadline = time.monotonic() + 30
    while not _stopped(proc):
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_holder_paused_beyond_its_lease_cannot_overwrite_a_newer_version(shared: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    lease = 1.0
    with _open(shared, tmp_path) as reme:
        memory_id = reme.add_memory("draft 0", user_name="alice").memory_id
    update = f"""
        node = await reme.update_memory("{memory_id}", content=sys.argv[3], user_name="alice")
        out["ok"] += 1
        out["versions"].append(node.version)
    """
    # The first process holds the lock with a short lease and is stopped once it has read the
    # memory, right before its write reaches the server (its first intent-record call).
    paused = subprocess.Popen([sys.executable, "-c", _worker('stop_at("journal")\n' + textwrap.dedent(update),
                                                                     prelude=STOP_AT),
                               json.dumps({**shared, "lease": lease}), str(tmp_path / "paused"), "from the paused one"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    other = None
    try:
        assert paused.stdout is not None and paused.stdout.readline().strip() == "ready"
        other = subprocess.Popen([sys.executable, "-c", _worker(update), json.dumps(shared), str(tmp_path / "other"),
                                  "from the one that took over"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        assert other.stdout is not None and other.stdout.readline().strip() == "ready"
        _stop_then(paused)
        time.sleep(2 * lease)  # its lease runs out: it renews no more
        _go(other)
        took_over = _result(other)
        os.kill(paused.pid, signal.SIGCONT)
        came_back = _result(paused)
    finally:
        _reap(paused, other)
    assert took_over["versions"] == [2]
    assert came_back["versions"] == [3]  # it wrote again on the newer state, not over it
    with _open(shared, tmp_path) as reme:
        stored = reme.get_memory(memory_id, user_name="alice")
        history = reme.history(memory_id, user_name="alice")
    assert (stored.version, stored.content) == (3, "from the paused one")
    assert [(v.node.version, v.node.content) for v in history] == [(1, "draft 0"), (2, "from the one that took over")]


@pytest.mark.parametrize("operation", ["delete_all", "update_memory"])
def test_a_write_killed_half_way_is_completed_by_the_next_process_once_stale(node_store: dict[str, Any],
                                                                             tmp_path: Path, operation: str) -> None:
    with _open(node_store, tmp_path) as reme:
        alice = [reme.add_memory(f"Alice fact {i}", user_name="alice") for i in range(3)]
        reme.update_memory(alice[0].memory_id, content="Alice fact 0, revised", user_name="alice")
        bob = reme.add_memory("Bob fact", user_name="bob")
    # Killed between two engine calls of one write: delete_all has deleted alice's memories, not yet their versions; update_memory has written the new state but not the version it ends.
    body = {"delete_all": """
        stop_at("delete", 2, signal.SIGKILL)
        await reme.delete_all(user_name="alice")
    """, "update_memory": f"""
        stop_at("upsert", sig=signal.SIGKILL, after="swap")
        await reme.update_memory("{alice[1].memory_id}", content="Alice fact 1, revised", user_name="alice")
    """}[operation]
    proc = _start(node_store, tmp_path, _worker(body, prelude=STOP_AT), "killed")
    _go(proc)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    with _open(node_store, tmp_path) as reme:  # not replayed while its writer may still be at work
        if operation == "delete_all":
            # The memories go first, then their versions (see `VectorStore.fences`).
            assert len(reme.list_memory(user_name="alice")) == 0
            assert [v.node.content for v in reme.history(alice[0].memory_id, user_name="alice")] == ["Alice fact 0"]
        else:
            assert reme.get_memory(alice[1].memory_id, user_name="alice").version == 2
            assert reme.history(alice[1].memory_id, user_name="alice") == []
    time.sleep(1.5)
    with _open({**node_store, "journal_stale_after": 1.0}, tmp_path) as reme:  # opening replays it
        if operation == "delete_all":
            assert len(reme.list_memory(user_name="alice")) == 0
            with pytest.raises(MemoryNotFoundError):  # neither stored nor with versions
                reme.history(alice[0].memory_id, user_name="alice")
        else:
            stored = reme.get_memory(alice[1].memory_id, user_name="alice")
            assert (stored.version, stored.content) == (2, "Alice fact 1, revised")
            assert [v.node.content for v in reme.history(alice[1].memory_id, user_name="alice")] == ["Alice fact 1"]
        assert [n.content for n in reme.list_memory(user_name="bob")] == [bob.content]
    client = QdrantClient(url=node_store["url"], check_compatibility=False)
    try:  # the record is gone with its parts (a purge's notes of what it took stay: `mark_purged`)
        assert [p.payload for p in client.scroll(JOURNAL, limit=100)[0] if "purged" not in (p.payload or {})] == []
    finally:
        client.close()


def test_one_process_updating_while_another_deletes_resurrects_nothing(node_store: dict[str, Any],
                                                                       tmp_path: Path) -> None:
    """Update and delete take no lock: each is a write conditional on what it read. Every
    acknowledged delete stays deleted (an update never brings back a memory being deleted), and
    each memory's history holds every acknowledged update, then its deletion, one entry a version."""
    with _open(node_store, tmp_path) as reme:
        ids = [reme.add_memory(f"Alice fact {i}", user_name="alice").memory_id for i in range(12)]
    results = _run_together(node_store, tmp_path, f"""
        ids = {ids!r}
        out["done"] = {{}}
        if sys.argv[2].endswith("wd0"):  # the updater: round after round, until all are gone
            from reme.errors import MemoryNotFoundError
            live, turn = list(ids), 0
            while live:
                turn += 1
                for mid in list(live):
                    try:
                        node = await reme.update_memory(mid, content=f"{{mid}} turn {{turn}}", user_name="alice")
                        out["done"].setdefault(mid, []).append([node.version, node.content])
                        out["ok"] += 1
                    except MemoryNotFoundError:
                        live.remove(mid)
                    except ConflictError:
                        out["conflicts"] += 1
        else:  # the deleter
            for mid in ids:
                try:
                    await reme.delete_memory(mid, user_name="alice")
                    out["ok"] += 1
                except ConflictError:
                    out["conflicts"] += 1
    """)
    updater, deleter = results
    assert (updater["conflicts"], deleter["conflicts"], deleter["ok"]) == (0, 0, len(ids))
    with _open(node_store, tmp_path) as reme:
        assert reme.list_memory(user_name="alice").nodes == []  # nothing came back
        for mid in ids:
            with pytest.raises(MemoryNotFoundError):
                reme.get_memory(mid, user_name="alice")
            history = reme.history(mid, user_name="alice")
            updates = updater["done"].get(mid, [])  # type: ignore[attr-defined]
            assert [v.node.version for v in history] == list(range(1, len(updates) + 2))
            assert [v.event for v in history] == ["UPDATE"] * len(updates) + ["DELETE"]
            assert [[v.node.version, v.node.content] for v in history[1:]] == updates


def test_an_update_never_brings_back_a_memory_whose_deletion_has_begun(node_store: dict[str, Any],
                                                                       tmp_path: Path) -> None:
    """A delete claims the memory (a conditional write), writes its version, then deletes it where
    the claim still holds. An update in between, from another process, finds the memory gone: were
    it to write over the claim, the acknowledged delete would delete nothing."""
    with _open(node_store, tmp_path) as reme:
        memory_id = reme.add_memory("draft 0", user_name="alice").memory_id
    # Stopped after its claim, right before the deletion reaches the server.
    deleting = _start(node_store, tmp_path, _worker(f"""
        stop_at("delete")
        await reme.delete_memory("{memory_id}", user_name="alice")
        out["ok"] += 1
    """, prelude=STOP_AT), "deleting")
    try:
        _stop_then(deleting)
        with _open(node_store, tmp_path) as reme:
            with pytest.raises(MemoryNotFoundError):
                reme.update_memory(memory_id, content="draft 1", user_name="alice")
            with pytest.raises(MemoryNotFoundError):
                reme.record_usage([memory_id], True, user_name="alice")
        os.kill(deleting.pid, signal.SIGCONT)
        assert _result(deleting)["ok"] == 1
    finally:
        _reap(deleting)
    with _open(node_store, tmp_path) as reme:
        with pytest.raises(MemoryNotFoundError):
            reme.get_memory(memory_id, user_name="alice")
        assert [(v.node.content, v.event) for v in reme.history(memory_id, user_name="alice")] == [("draft 0", "DELETE")]


def test_a_late_replay_of_a_killed_update_never_undoes_a_later_one(node_store: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    """An update killed after its conditional write, before the version it ends: another process
    updates the memory again (no lock waits for the dead one). Replaying the dead one's record
    later must not write over that acknowledged update, and must still keep the version it ended."""
    with _open(node_store, tmp_path) as reme:
        memory_id = reme.add_memory("draft 0", user_name="alice").memory_id
    killed = _start(node_store, tmp_path, _worker(f"""
        stop_at("upsert", sig=signal.SIGKILL, after="swap")
        await reme.update_memory("{memory_id}", content="draft 1", user_name="alice")
    """, prelude=STOP_AT), "killed")
    _go(killed)
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    with _open(node_store, tmp_path) as reme:
        assert reme.update_memory(memory_id, content="draft 2", user_name="alice").version == 3
    time.sleep(1.5)
    with _open({**node_store, "journal_stale_after": 1.0}, tmp_path) as reme:  # opening replays the record
        stored = reme.get_memory(memory_id, user_name="alice")
        assert (stored.version, stored.content) == (3, "draft 2")
        history = reme.history(memory_id, user_name="alice")
        assert [(v.node.version, v.node.content) for v in history] == [(1, "draft 0"), (2, "draft 1")]
    client = QdrantClient(url=node_store["url"], check_compatibility=False)
    try:
        assert client.count(JOURNAL).count == 0
    finally:
        client.close()


def test_a_change_by_id_first_finishes_the_dead_batch_that_wrote_the_memory(node_store: dict[str, Any],
                                                                            tmp_path: Path) -> None:
    """An import (one journaled write: the memories and their versions) whose process was killed
    after its engine writes, before its intent record was dropped. Updates and deletes take no
    lock, so nothing made them wait for the dead writer's record to be replayed: the memory names
    that record (its revision) and the change applies it first. A later replay (an open once the
    record is stale) then has nothing left to write over the update or to bring back."""
    from reme.schema import MemoryNode

    kept, gone = (MemoryNode(memory_type="personal", memory_target="alice", content=f"{name} v2", version=2)
                  for name in ("kept", "gone"))
    lines = [{**node.model_dump(mode="json"), "history": [{
        "event": "UPDATE", "time": node.time_created.isoformat(), "reason": "imported",
        "node": node.model_copy(update={"version": 1, "content": node.content[:-1] + "1"}).model_dump(mode="json")}]}
        for node in (kept, gone)]
    (tmp_path / "memories.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    killed = _start(node_store, tmp_path, _worker(f"""
        stop_at("journal", 2, signal.SIGKILL)  # the intent record's drop
        await reme.import_memory({str(tmp_path / "memories.jsonl")!r}, user_name="alice")
    """, prelude=STOP_AT), "killed")
    _go(killed)
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    with _open(node_store, tmp_path) as reme:
        assert reme.update_memory(kept.memory_id, content="kept v3", user_name="alice").version == 3
        reme.delete_memory(gone.memory_id, user_name="alice")
    time.sleep(1.5)
    with _open({**node_store, "journal_stale_after": 1.0}, tmp_path) as reme:  # opening replays what is left
        stored = reme.get_memory(kept.memory_id, user_name="alice")
        assert (stored.version, stored.content) == (3, "kept v3")
        with pytest.raises(MemoryNotFoundError):
            reme.get_memory(gone.memory_id, user_name="alice")
        assert [v.node.content for v in reme.history(kept.memory_id, user_name="alice")] == ["kept v1", "kept v2"]
        assert [v.node.content for v in reme.history(gone.memory_id, user_name="alice")] == ["gone v1", "gone v2"]


def test_a_summary_whose_write_loses_to_a_read_count_writes_again(node_store: dict[str, Any], server: OpenAITestServer,
                                                                  tmp_path: Path) -> None:
    """Read counts take no lock. A summary (under its locks) stopped right before its conditional
    write, while another process counts a read of the memory it replaces: its write loses, and
    since only access counts moved, it reads again and writes on the newer record, keeping the count."""
    with _open(node_store, tmp_path) as reme:
        paris = reme.add_memory("Alice lives in Paris", user_name="alice")
    server.script("Read the conversation below", {"memories": [{"content": "Alice moved to Berlin", "kind": "fact",
                                                                 "sources": [0], "importance": 0.5, "time": None}]})
    server.script("long-term memory consistent", {"decisions": [{"candidate": 0, "action": "UPDATE", "id": 0,
                                                                 "text": "Alice lives in Berlin", "reason": "moved"}]})
    summarizing = _start(node_store, tmp_path, _worker("""
        stop_at("swap")
        await reme.summarize_memory([{"role": "user", "content": "I moved to Berlin"}], user_name="alice")
        out["ok"] += 1
    """, llm=server.base_url, prelude=STOP_AT), "summarizing")
    try:
        _stop_then(summarizing)
        with ReMeSync(working_dir=tmp_path / "reader", embedding={"backend": "hash", "dimensions": DIM},
                      vector_store=node_store, retrieval={"track_reads": True}) as reme:
            found = reme.retrieve_memory("where does Alice live", user_name="alice", rewrite=False)
            assert paris.memory_id in [m.node.memory_id for m in found.memories]
            assert reme.flush_reads() == 1
        os.kill(summarizing.pid, signal.SIGCONT)
        assert _result(summarizing)["ok"] == 1  # no ConflictError
    finally:
        _reap(summarizing)
    with _open(node_store, tmp_path) as reme:
        stored = reme.get_memory(paris.memory_id, user_name="alice")
        assert (stored.content, stored.version, stored.access_count) == ("Alice lives in Berlin", 2, 1)
        assert [v.node.content for v in reme.history(paris.memory_id, user_name="alice")] == ["Alice lives in Paris"]


def test_usage_counts_of_several_memories_never_take_back_a_count_another_process_built_on(
        node_store: dict[str, Any], tmp_path: Path) -> None:
    """A usage count of two memories whose conditional write wins one and loses the other (changed
    meanwhile) keeps the one it won and tries the other again: were it to put it back, a process
    that counted on it in between would see its own count stand and the first count made twice."""
    with _open(node_store, tmp_path) as reme:
        a, b = (reme.add_memory(text, user_name="alice").memory_id for text in ("Alice likes tea", "Alice hikes"))
    # stopped before its first conditional write and before its third (what follows the read-back of the first)
    stops = _stops('"swap"', '"swap", 2')
    counting = _start(node_store, tmp_path, _worker(f"""
        await reme.record_usage(["{a}", "{b}"], True, user_name="alice")
        out["ok"] += 1
    """, prelude=stops), "counting")

    try:
        _stop_then(counting)
        with _open(node_store, tmp_path) as reme:
            reme.record_usage([b], True, user_name="alice")  # its write of b will lose
        os.kill(counting.pid, signal.SIGCONT)
        _wait_stopped(counting)
        with _open(node_store, tmp_path) as reme:
            reme.record_usage([a], True, user_name="alice")  # counts on its count of a
        os.kill(counting.pid, signal.SIGCONT)
        assert _result(counting)["ok"] == 1
    finally:
        _reap(counting)
    with _open(node_store, tmp_path) as reme:
        for memory_id in (a, b):  # two acknowledged counts each
            stored = reme.get_memory(memory_id, user_name="alice")
            assert (stored.access_count, stored.metadata["freq"]) == (2, 2)


def _texts_on(url: str) -> list[str]:
    """Every payload on the server, as JSON, whatever the collection."""
    client = QdrantClient(url=url, check_compatibility=False)
    try:
        out = []
        for collection in client.get_collections().collections:
            offset = None
            while True:
                points, offset = client.scroll(collection.name, limit=1000, offset=offset, with_payload=True)
                out += [json.dumps(p.payload) for p in points]
                if offset is None:
                    break
        return out
    finally:
        client.close()


def _purge_alice(store: dict[str, Any], tmp_path: Path, wipe_call: str) -> None:
    """alice's one memory purged, with its versions, by `forget(purge=True)` or `delete_all`."""
    with _open(store, tmp_path) as reme:
        if wipe_call == "forget":
            assert reme.forget(user_name="alice", purge=True) == 1
        else:
            assert reme.delete_all(user_name="alice") == 1


@pytest.mark.parametrize("wipe_call", ["forget", "delete_all"])
@pytest.mark.parametrize("change", ["update_memory", "delete_memory"])
def test_a_purge_leaves_no_version_a_change_racing_it_kept(node_store: dict[str, Any], tmp_path: Path,
                                                            change: str, wipe_call: str) -> None:
    """A change by id in another process (no lock) has made its conditional write and is stopped
    right before it writes the version it keeps of the memory; the user's memories are purged
    (`forget(purge=True)`, `delete_all`: memories and versions) and the purge acknowledged. When
    the change goes on, whatever it returns, the purged text must be nowhere on the server."""
    with _open(node_store, tmp_path) as reme:
        memory_id = reme.add_memory("Alice whispered the vault code 0", user_name="alice").memory_id
    call = (f'update_memory("{memory_id}", content="Alice whispered the vault code 1", user_name="alice")'
            if change == "update_memory" else f'delete_memory("{memory_id}", user_name="alice")')
    changing = _start(node_store, tmp_path, _worker(f"""
        from reme.errors import MemoryNotFoundError
        stop_at("upsert", after="swap")  # the version, its conditional write done
        try:
            await reme.{call}
            out["ok"] += 1
        except MemoryNotFoundError:
            out["not found"] = 1
    """, prelude=STOP_AT), "changing")
    try:
        _stop_then(changing)
        _purge_alice(node_store, tmp_path, wipe_call)
        os.kill(changing.pid, signal.SIGCONT)
        _result(changing)
    finally:
        _reap(changing)
    assert [text for text in _texts_on(node_store["url"]) if "vault code" in text] == []
    with _open(node_store, tmp_path) as reme:
        with pytest.raises(MemoryNotFoundError):
            reme.history(memory_id, user_name="alice")


def test_a_change_by_id_never_builds_on_a_summary_write_that_is_then_taken_back(
        node_store: dict[str, Any], server: OpenAITestServer, tmp_path: Path) -> None:
    """A summary's write of two memories wins the first and loses the second (changed meanwhile by
    another process), so it puts the first back and raises `ConflictError`. An update of the first
    from another process in between (no lock) must not build on the summary's state of it: the
    memory's history keeps the state before the summary, and the summary's text is nowhere."""
    with _open(node_store, tmp_path) as reme:
        paris, tea = (reme.add_memory(text, user_name="alice") for text in ("Alice lives in Paris", "Alice drinks tea"))
    server.script("Read the conversation below", {"memories": [
        {"content": "Alice moved to Berlin", "kind": "fact", "sources": [0], "importance": 0.5, "time": None},
        {"content": "Alice drinks coffee now", "kind": "fact", "sources": [0], "importance": 0.5, "time": None}]})
    server.script("long-term memory consistent", {"decisions": [
        {"candidate": 0, "action": "UPDATE", "id": 0, "text": "Alice moved to Berlin", "reason": "summary"},
        {"candidate": 1, "action": "UPDATE", "id": 1, "text": "Alice drinks coffee now", "reason": "summary"}]})
    stops = _stops('"swap"', '"swap"')  # before its conditional write and before reading back what it won
    summarizing = _start(node_store, tmp_path, _worker("""
        try:
            await reme.summarize_memory([{"role": "user", "content": "I moved to Berlin and I drink coffee now"}],
                                        user_name="alice")
            out["ok"] += 1
        except ConflictError:
            out["conflicts"] += 1
    """, llm=server.base_url, prelude=stops), "summarizing")

    try:
        _stop_then(summarizing)
        with _open(node_store, tmp_path) as reme:  # the summary's write of tea will lose
            reme.update_memory(tea.memory_id, content="Alice drinks green tea", user_name="alice")
        os.kill(summarizing.pid, signal.SIGCONT)
        _wait_stopped(summarizing)  # its write is in the engine: Paris won, tea lost
        with _open(node_store, tmp_path) as reme:
            reme.update_memory(paris.memory_id, tags=["home"], user_name="alice")
        os.kill(summarizing.pid, signal.SIGCONT)
        outcome = _result(summarizing)
    finally:
        _reap(summarizing)
    assert (outcome["ok"], outcome["conflicts"]) == (0, 1)
    with _open(node_store, tmp_path) as reme:
        stored = reme.get_memory(paris.memory_id, user_name="alice")
        assert (stored.content, stored.tags, stored.version) == ("Alice lives in Paris", ["home"], 2)
        assert [v.node.content for v in reme.history(paris.memory_id, user_name="alice")] == ["Alice lives in Paris"]
    assert [text for text in _texts_on(node_store["url"]) if "Berlin" in text or "coffee" in text] == []


def _files_holding(nodes: list[Node], collection: str, text: str) -> list[str]:
    """The files of the memories and versions collections (`collection`, its `-versions`) on
    `nodes` that hold `text`; the journal's log may hold it a while (docs/scaling.md)."""
    out = []
    for node in nodes:
        folder = node.dir / "storage" / "collections"
        out += [str(p) for name in (collection, f"{collection}-versions") if (folder / name).exists()
                for p in (folder / name).rglob("*") if p.is_file() and text.encode() in p.read_bytes()]
    return sorted(out)


def _stop_then(proc: subprocess.Popen[str]) -> None:
    """Let `proc` go and wait until it stopped itself (STOP_AT)."""
    _go(proc)
    _wait_stopped(proc)


@pytest.mark.parametrize("where", ["node", "cluster"])
def test_a_scrub_leaves_no_file_holding_the_text_of_an_update_racing_it(request: pytest.FixtureRequest,
                                                                         tmp_path: Path, where: str) -> None:
    """An update of a memory in another process (no lock) has made its conditional write and is
    stopped right before it writes the version it keeps (the memory's text before it); the memory
    is purged with `scrub=True`. The update goes on while the scrub runs, or once it returned:
    either way the text must then be in no file of the memories and versions collections (a
    scrub acknowledged is not undone)."""
    if where == "node":
        nodes: list[Node] = [request.getfixturevalue("empty_node")]
        store: dict[str, Any] = {"backend": "qdrant", "url": nodes[0].url}
    else:
        nodes = request.getfixturevalue("qdrant_cluster")
        wipe(nodes[0].url)
        store = {"backend": "qdrant", "url": nodes[0].url, "collection": "spread", **SPREAD}
    collection = store.get("collection", "reme")
    secret = f"XQ{time.monotonic_ns()}"
    with _open(store, tmp_path) as reme:
        memory_id = reme.add_memory(f"Alice's passport is {secret}", user_name="alice").memory_id
        reme.add_memory("Alice likes tea", user_name="alice")
    updating = _start(store, tmp_path, _worker(f"""
        from reme.errors import MemoryNotFoundError
        stop_at("upsert", after="swap")  # the version, once its conditional write is done
        try:
            await reme.update_memory("{memory_id}", content="Alice's passport is {secret}, renewed", user_name="alice")
            out["ok"] += 1
        except MemoryNotFoundError:
            out["not found"] = 1
    """, prelude=STOP_AT), "updating")
    forgot: list[int] = []

    def scrub() -> None:
        with _open(store, tmp_path) as reme:
            forgot.append(reme.forget(user_name="alice", filters={"content": {"contains": "passport"}},
                                      purge=True, scrub=True))

    try:
        _stop_then(updating)
        scrubbing = threading.Thread(target=scrub)
        scrubbing.start()
        scrubbing.join(timeout=2 if where == "node" else 6)  # it has run (as long on the cluster), or it waits
        os.kill(updating.pid, signal.SIGCONT)
        scrubbing.join(timeout=60)
        _result(updating)
        assert forgot == [1]
    finally:
        _reap(updating)
    assert [text for text in _texts_on(store["url"]) if secret in text] == []
    assert _files_holding(nodes, collection, secret) == []


def test_the_version_of_an_update_that_lost_and_died_is_taken_back_by_the_replay(node_store: dict[str, Any],
                                                                                  tmp_path: Path) -> None:
    """An update sends the version it keeps beside its conditional write, before it knows it won.
    One whose write lost (another process updated the memory first) and that was killed before
    it took its version back leaves one version too many, until its intent record is replayed:
    the replay finds the write lost and deletes that version."""
    with _open(node_store, tmp_path) as reme:
        memory_id = reme.add_memory("draft 0", user_name="alice").memory_id
    losing = _start(node_store, tmp_path, _worker(f"""
        await reme.update_memory("{memory_id}", content="draft A", user_name="alice")
    """, prelude=_stops('"swap"', '"swap", sig=signal.SIGKILL, after="upsert"')), "losing")
    try:
        _stop_then(losing)  # it read draft 0; its conditional write is not sent yet
        with _open(node_store, tmp_path) as reme:
            assert reme.update_memory(memory_id, content="draft B", user_name="alice").version == 2
        os.kill(losing.pid, signal.SIGCONT)
        losing.communicate(timeout=120)
        assert losing.returncode == -signal.SIGKILL
    finally:
        _reap(losing)
    with _open(node_store, tmp_path) as reme:  # the dead writer's version is there until the replay
        assert [v.node.content for v in reme.history(memory_id, user_name="alice")] == ["draft 0", "draft 0"]
    time.sleep(1.5)
    with _open({**node_store, "journal_stale_after": 1.0}, tmp_path) as reme:  # opening replays the record
        stored = reme.get_memory(memory_id, user_name="alice")
        assert (stored.version, stored.content) == (2, "draft B")
        history = reme.history(memory_id, user_name="alice")
        assert [(v.node.version, v.node.content) for v in history] == [(1, "draft 0")]
    assert [text for text in _texts_on(node_store["url"]) if "draft A" in text] == []


def test_an_update_whose_memory_was_deleted_after_its_write_keeps_its_version(node_store: dict[str, Any],
                                                                              tmp_path: Path) -> None:
    """An update stopped after its conditional write and its version, before the read that says
    whether it won: another process deletes the memory meanwhile (a deletion of the state the
    update wrote). The update won, so it is acknowledged and its version stays: the history holds
    the state it ended, then the one the deletion ended."""
    with _open(node_store, tmp_path) as reme:
        memory_id = reme.add_memory("draft 0", user_name="alice").memory_id
    updating = _start(node_store, tmp_path, _worker(f"""
        out["version"] = (await reme.update_memory("{memory_id}", content="draft 1", user_name="alice")).version
    """, prelude=_stops('"swap", 2, after="upsert"')), "updating")
    try:
        _stop_then(updating)
        with _open(node_store, tmp_path) as reme:
            assert reme.get_memory(memory_id, user_name="alice").content == "draft 1"
            reme.delete_memory(memory_id, user_name="alice")
        os.kill(updating.pid, signal.SIGCONT)
        assert _result(updating)["version"] == 2
    finally:
        _reap(updating)
    with _open(node_store, tmp_path) as reme:
        with pytest.raises(MemoryNotFoundError):
            reme.get_memory(memory_id, user_name="alice")
        assert [(v.node.content, v.event) for v in reme.history(memory_id, user_name="alice")] == [
            ("draft 0", "UPDATE"), ("draft 1", "DELETE")]


def test_a_purge_leaves_no_version_of_an_update_and_a_delete_both_racing_it(node_store: dict[str, Any],
                                                                          tmp_path: Path) -> None:
    """Three processes, one memory. An update has made its conditional write, then a delete (it
    marked the memory dying); both are stopped before the version each keeps. The user is purged.
    Then the delete writes its version (the update's text), the update writes its own (the text
    before) and sees the delete's version (so the memory was deleted, not purged, as far as it can
    tell), and last the delete finds its memory purged and takes its version back. Nothing of the
    text may stay on the server."""
    with _open(node_store, tmp_path) as reme:
        memory_id = reme.add_memory("Alice whispered the vault code 0", user_name="alice").memory_id
    body = """
        from reme.errors import MemoryNotFoundError
        try:
            await reme.{call}
            out["ok"] += 1
        except MemoryNotFoundError:
            out["not found"] = 1
    """
    update = f'update_memory("{memory_id}", content="Alice whispered the vault code 1", user_name="alice")'
    updating = _start(node_store, tmp_path, _worker(body.format(call=update), prelude=_stops('"upsert", after="swap"')),
                      "updating")
    deleting = None
    try:
        _stop_then(updating)  # its conditional write is done; its version is next
        deleting = _start(node_store, tmp_path, _worker(
            body.format(call=f'delete_memory("{memory_id}", user_name="alice")'),
            prelude=_stops('"upsert", after="swap"', '"list"')), "deleting")
        _stop_then(deleting)  # it claimed the memory (dying); its version is next
        with _open(node_store, tmp_path) as reme:
            assert reme.forget(user_name="alice", purge=True) == 1
        os.kill(deleting.pid, signal.SIGCONT)  # it writes its version, then stops before its check
        _wait_stopped(deleting)
        os.kill(updating.pid, signal.SIGCONT)
        assert _result(updating)["ok"] == 1
        os.kill(deleting.pid, signal.SIGCONT)
        done = _result(deleting)  # deleted, or found purged at its read-back (the purge deleted it): both true
        assert done["ok"] + done.get("not found", 0) == 1
    finally:
        _reap(updating, deleting)
    assert [text for text in _texts_on(node_store["url"]) if "vault code" in text] == []
    with _open(node_store, tmp_path) as reme:
        with pytest.raises(MemoryNotFoundError):
            reme.history(memory_id, user_name="alice")


@pytest.mark.parametrize("call", ["delete_memory", "forget"])
def test_a_delete_killed_before_its_record_is_dropped_keeps_its_version(node_store: dict[str, Any],
                                                                        tmp_path: Path, call: str) -> None:
    """A delete (of one memory, or of several keeping their versions) killed after its writes and
    before it dropped its intent record: the replay of that record finds the memory gone, deleted
    by itself (no purge noted it), and keeps the version it wrote, and the earlier ones."""
    with _open(node_store, tmp_path) as reme:
        memory_id = reme.add_memory("draft 0", user_name="alice").memory_id
        if call == "forget":
            reme.add_memory("Alice hums", user_name="alice")
    deleting = _start(node_store, tmp_path, _worker(f"""
        stop_at("journal", 2, signal.SIGKILL)
        if {call == "forget"}:
            await reme.forget(user_name="alice")
        else:
            await reme.delete_memory("{memory_id}", user_name="alice")
    """, prelude=STOP_AT), "deleting")
    try:
        _go(deleting)
        deleting.communicate(timeout=120)
        assert deleting.returncode == -signal.SIGKILL
    finally:
        _reap(deleting)
    time.sleep(1.5)
    with _open({**node_store, "journal_stale_after": 1.0}, tmp_path) as reme:
        with pytest.raises(MemoryNotFoundError):
            reme.get_memory(memory_id, user_name="alice")
        assert [(v.node.content, v.event) for v in reme.history(memory_id, user_name="alice")] == [
            ("draft 0", "DELETE")]


@pytest.mark.parametrize("wipe_call", ["forget", "delete_all"])
def test_a_delete_killed_after_a_purge_took_its_memory_leaves_no_text_once_replayed(
        node_store: dict[str, Any], tmp_path: Path, wipe_call: str) -> None:
    """A delete stopped after its conditional write, before the version it keeps; the user's
    memories are purged meanwhile; the delete then writes its version and is killed before it
    reads its write back. The replay of its record finds the memory gone, as it would had the
    delete deleted it itself: the purge's note tells them apart, and the purged text goes. A
    later purge drops the notes no stored record needs."""
    with _open(node_store, tmp_path) as reme:
        memory_id = reme.add_memory("Alice whispered the vault code 0", user_name="alice").memory_id
        reme.add_memory("Bob hums", user_name="bob")
    deleting = _start(node_store, tmp_path, _worker(f"""
        stop_at("upsert", after="swap")  # the version, its conditional write done
        stop_at("swap", sig=signal.SIGKILL)  # the read-back of its write
        await reme.delete_memory("{memory_id}", user_name="alice")
    """, prelude=STOP_AT), "deleting")
    try:
        _stop_then(deleting)
        _purge_alice(node_store, tmp_path, wipe_call)
        os.kill(deleting.pid, signal.SIGCONT)
        deleting.communicate(timeout=120)
        assert deleting.returncode == -signal.SIGKILL
    finally:
        _reap(deleting)
    assert [text for text in _texts_on(node_store["url"]) if "vault code 0" in text] != []  # its version
    time.sleep(1.5)
    with _open({**node_store, "journal_stale_after": 1.0}, tmp_path) as reme:  # opening replays the record
        with pytest.raises(MemoryNotFoundError):
            reme.history(memory_id, user_name="alice")
        assert reme.forget(user_name="bob", purge=True) == 1
    assert [text for text in _texts_on(node_store["url"]) if "vault code" in text] == []
    client = QdrantClient(url=node_store["url"], check_compatibility=False)
    try:
        assert sorted(p.payload["purged_from"] for p in client.scroll(JOURNAL, limit=100)[0]
                      if p.payload and "purged_from" in p.payload) == ["reme"]  # bob's memory alone
    finally:
        client.close()
