"""Crash atomicity: a process killed at any point of a multi-write operation leaves a store that
reopens to the state before the operation or the state after it, never one between.

A runner process imports ReMe once and forks a child per kill point. Each child opens a copy of a
prepared store, runs one operation with `EdgeStore._call` (every engine and file-system step of
the edge backend goes through it) wrapped so that the N-th step kills the process with SIGKILL
before it runs; a few more children are killed at a random moment instead. The test reopens
every copy and compares a full dump of both collections with the dumps before and after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from reme import ReMe
from reme.memory.repo import Change
from reme.schema import MemoryNode, MemoryType
from reme.errors import CollectionNotFoundError, InvalidInputError, StoreError, VectorSizeError
from reme.store import CreateCollection, Delete, DeleteWhere, DropCollection, Upsert, VectorRecord, VectorStore
from reme.store.filters import eq
from reme.store.base import encode_steps
from reme.store.edge import EdgeStore
from reme.store.qdrant import QdrantStore
from qdrant_client import models

from conftest import DIM

EMBEDDING = {"backend": "hash", "dimensions": DIM}
SMALL_BATCHES = {"batch_size": 4}  # several engine calls per upsert, with few records
T0 = datetime(2024, 5, 3, 10, 0, tzinfo=timezone.utc)
TESTS = Path(__file__).resolve().parent

RUNNER = r'''
import asyncio, json, os, random, signal, subprocess, sys, threading, time, uuid
from pathlib import Path
from datetime import datetime, timezone
sys.path.insert(0, TESTS)
from reme import ReMe
from reme.memory.repo import Change
from reme.schema import MemoryNode, MemoryType
from reme.store.edge import EdgeStore

T0 = datetime(2024, 5, 3, 10, 0, tzinfo=timezone.utc)
state = {"armed": False, "calls": 0, "kill_at": 0, "labels": []}
original_call = EdgeStore._call

def counting_call(self, what, fn, *args):
    if state["armed"]:
        state["calls"] += 1
        state["labels"].append(what)
        if state["calls"] == state["kill_at"]:
            os.kill(os.getpid(), signal.SIGKILL)
    return original_call(self, what, fn, *args)

EdgeStore._call = counting_call

def open_reme(wd, **kwargs):
    return ReMe(working_dir=wd, embedding=EMBEDDING, vector_store=VECTOR_STORE, **kwargs)

def node(i, content):
    return MemoryNode(memory_id=str(uuid.UUID(int=1000 + i)), memory_type=MemoryType.PERSONAL,
                      memory_target="alice", content=content, message_time=T0)

async def operation(wd):
    if OP in ("first_open", "reopen"):
        state["armed"] = True
        async with open_reme(wd):
            return
    llm = {}
    if OP == "summarize":
        from openai_server import OpenAITestServer
        server = OpenAITestServer().__enter__()
        facts = ["Alice moved to Berlin"] + [f"Alice fact number {i}" for i in range(6)]
        server.script("Read the conversation below", {"memories": [
            {"content": f, "kind": "fact", "sources": [0], "importance": 0.5, "time": None} for f in facts]})
        server.script("long-term memory consistent", {"decisions": [
            {"candidate": 0, "action": "UPDATE", "id": 0, "text": "Alice lives in Berlin", "reason": "moved"}]
            + [{"candidate": i, "action": "ADD"} for i in range(1, len(facts))]})
        llm = {"llm": {"base_url": server.base_url, "api_key": "k", "model": "test-model", "max_retries": 0}}
    if OP == "session_prepare":
        from openai_server import OpenAITestServer
        server = OpenAITestServer().__enter__()
        server.script("working memory of an AI agent", {"goal": "plan a trip", "progress": ["weather checked"]})
        llm = {"llm": {"base_url": server.base_url, "api_key": "k", "model": "test-model", "max_retries": 0},
               "context": {"max_tool_chars": 1000}}
    async with open_reme(wd, **llm) as reme:
        state["armed"] = True
        if OP == "apply":
            stored = sorted((await reme.list_memory(user_name="alice", limit=100)).nodes, key=lambda n: n.memory_id)
            changes = [Change(new=node(i, f"new fact {i}")) for i in range(9)]
            changes += [Change(old=stored[0], new=stored[0].revised(content="changed")), Change(old=stored[1])]
            await reme.repo.apply(changes)
        elif OP == "update":
            stored = sorted((await reme.list_memory(user_name="alice", limit=100)).nodes, key=lambda n: n.memory_id)
            await reme.update_memory(stored[0].memory_id, content="changed", user_name="alice")
        elif OP == "delete_scope":
            await reme.delete_all(user_name="alice")
        elif OP == "delete_everything":
            await reme.delete_all(everything=True)
        elif OP == "import":
            await reme.import_memory(IMPORT_FILE)
        elif OP == "forget":
            assert await reme.forget(user_name="alice", filters={"content": {"contains": "revised"}}) == 1
        elif OP == "forget_purge":
            assert await reme.forget(user_name="alice", purge=True) == 5
        elif OP == "forget_scrub":
            assert await reme.forget(user_name="alice", purge=True, scrub=True) == 5
        elif OP == "prune_expired":
            assert len(await reme.prune(user_name="alice")) == 3
        elif OP == "flush_reads":
            reme.config.retrieval.track_reads = True
            for query in ("Alice fact", "Bob fact", "revised"):
                await reme.search_memory(query, user_name="alice" if query != "Bob fact" else "bob", top_k=10)
            assert await reme.flush_reads() == 7
        elif OP == "summarize":
            chat = [{"role": "user", "name": "Alice", "content": "I moved to Berlin last week! Fact number "
                     + ", ".join(str(i) for i in range(6)) + ".", "time": "2024-05-03T10:00:00Z"}]
            result = await reme.summarize_memory(chat, user_name="alice", now=T0)
            assert result.updated and len(result.added) > 4, result
        elif OP == "session_add":
            await reme.add_messages([{"role": "user", "content": f"message {i}"} for i in range(9)],
                                    session_name="chat", marks=["new"])
        elif OP == "session_load":
            await reme.load_session_state({"content": [[{"role": "user", "content": f"loaded {i}"}, ["m"]]
                                                       for i in range(9)], "_compressed_summary": "loaded"},
                                          session_name="chat")
        elif OP == "session_prepare":
            result = await reme.prepare_context(session_name="chat", threshold=200, reserve=60)
            assert result.compacted and result.offloaded, result
        elif OP == "markdown_sync":
            result = await reme.sync_markdown(Path(wd) / "md", user_name="alice")
            assert result.applied and result.added and result.updated and result.deleted, result
        else:
            raise SystemExit(f"unknown op {OP}")

def run_child(wd, kill_at, delay):
    # Ids the operation makes (history and version nodes, journal keys) are the same in every child.
    rng = random.Random(7)
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)
    state["kill_at"] = kill_at
    if delay is not None:
        threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
    asyncio.run(operation(wd))

def copy(src, dst):
    # The engine's files are mostly holes (452 MB apparent, 1 MB used): copy them sparse.
    subprocess.run(["cp", "-r", "--sparse=always", str(src), str(dst)], check=True)

def fork(wd, kill_at, delay=None):
    if BASE:
        copy(BASE, wd)
    pid = os.fork()
    if pid == 0:
        try:
            run_child(wd, kill_at, delay)
            Path(str(wd) + ".json").write_text(json.dumps({"calls": state["calls"], "labels": state["labels"]}))
        except BaseException as exc:
            print(json.dumps({"error": repr(exc)}), flush=True)
            os._exit(1)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

out = Path(OUT)
t = time.perf_counter()
if fork(out / "after", 0) != 0:
    raise SystemExit("the operation failed without a kill")
elapsed = time.perf_counter() - t
counted = json.loads(Path(str(out / "after") + ".json").read_text())
calls, labels = counted["calls"], counted["labels"]
# Kill before every step that writes, and once after the operation returned (before close);
# reads in between change nothing, and of a run of one kind of step (the payload indexes a
# collection gets, all before its marker) the first and the last do.
READS = {"get", "count", "search", "list", "info", "open collection", "close"}
points = []
for n, label in enumerate(labels, 1):
    start = n - 1
    while start > 0 and labels[start - 1] == label:
        start -= 1
    end = n - 1
    while end + 1 < len(labels) and labels[end + 1] == label:
        end += 1
    if label not in READS and n - 1 in (start, end):
        points.append(n)
points.append(labels.index("close", max(points)) + 1)  # after the operation returned, before close
rng = random.Random(RANDOM_SEED)
kills = []
for n in points:
    kills.append([f"kill-{n}", fork(out / f"kill-{n}", n)])
for i in range(RANDOM_KILLS):
    kills.append([f"random-{i}", fork(out / f"random-{i}", 0, rng.uniform(0, elapsed))])
print(json.dumps({"calls": calls, "labels": labels, "kills": kills, "seconds": time.perf_counter() - t,
                  "one": elapsed}), flush=True)
'''


def run_ops(tmp_path: Path, op: str, base: Path | None, *, random_kills: int,
            import_file: Path | None = None) -> dict[str, Any]:
    """Run `op` once to the end (`after`), then killed before each of its steps and at
    `random_kills` random moments; returns what the runner printed."""
    out = tmp_path / f"runs-{op}"
    out.mkdir(parents=True)
    head = "\n".join([f"TESTS = {str(TESTS)!r}", f"OP = {op!r}", f"EMBEDDING = {EMBEDDING!r}",
                      f"VECTOR_STORE = {SMALL_BATCHES!r}", f"BASE = {str(base) if base else ''!r}",
                      f"OUT = {str(out)!r}", f"RANDOM_KILLS = {random_kills}",
                      "RANDOM_SEED = 11", f"IMPORT_FILE = {str(import_file)!r}"])
    proc = subprocess.run([sys.executable, "-c", head + textwrap.dedent(RUNNER)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = {"out": out}
    for line in lines:
        assert "error" not in line, line
        result.update(line)
    return result


def _strip_times(value: Any) -> Any:
    """Clock readings differ from run to run; everything else must match exactly."""
    if isinstance(value, dict):
        clock = ("time_created", "time_modified", "time", "last_accessed") + (  # a session record's default message_time is now
            ("message_time", "expires_at") if value.get("target_kind") == "session" or "expires_at" in value else ())
        return {k: _strip_times(v) for k, v in value.items() if k not in clock}
    if isinstance(value, list):
        return [_strip_times(v) for v in value]
    return value


async def dump(wd: Path) -> dict[str, dict[str, Any]]:
    """Both collections, every node by id; opening also recovers, and must leave no leftovers."""
    async with ReMe(working_dir=wd, embedding=EMBEDDING) as reme:
        store_dir = wd / "store"
        assert sorted(p.name for p in store_dir.iterdir() if not p.name.startswith(".")) == ["reme", "reme-versions"]
        assert not list((store_dir / ".journal").glob("*")) if (store_dir / ".journal").exists() else True
        out: dict[str, dict[str, Any]] = {}
        for name in (reme.collection, reme.repo.versions):
            out[name] = {r.node.memory_id: _strip_times(r.node.model_dump(mode="json"))
                         async for r in reme.store.iter_records(name)}
        return out


async def prepare(wd: Path, with_history: bool = True) -> None:
    """alice: five memories (one updated, so versions exist too); bob: two."""
    async with ReMe(working_dir=wd, embedding=EMBEDDING) as reme:
        for i in range(5):
            await reme.add_memory(f"Alice fact {i}", user_name="alice", message_time=T0)
        for i in range(2):
            await reme.add_memory(f"Bob fact {i}", user_name="bob", message_time=T0)
        if with_history:
            node = (await reme.list_memory(user_name="alice", limit=1)).nodes[0]
            await reme.update_memory(node.memory_id, content="Alice fact, revised")


async def assert_before_or_after(tmp_path: Path, op: str, base: Path | None, *, random_kills: int = 1,
                                 import_file: Path | None = None) -> None:
    ran = run_ops(tmp_path, op, base, random_kills=random_kills, import_file=import_file)
    assert ran["calls"] > 2, "the operation made too few steps to test"
    if base is not None:
        subprocess.run(["cp", "-r", "--sparse=always", str(base), str(tmp_path / "before")], check=True)
        before = await dump(tmp_path / "before")
    else:  # a first open: nothing was there; reopening creates the empty collections
        before = {"reme": {}, "reme-versions": {}}
    after = await dump(ran["out"] / "after")
    assert before != after or base is None
    outcomes = []
    for name, code in ran["kills"]:
        # A random moment may come after the operation finished (exit 0).
        assert code == -9 or (name.startswith("random") and code == 0), f"{name}: exit {code}"
        state = await dump(ran["out"] / name)
        assert state in (before, after), f"{op}, {name}: the store is neither before nor after the operation"
        outcomes.append("before" if state == before else "after")
    assert "after" in outcomes[-3 - random_kills:] or base is None, outcomes


@pytest.fixture
async def base(tmp_path: Path) -> Path:
    wd = tmp_path / "base"
    await prepare(wd)
    return wd


async def test_a_batch_of_adds_an_update_and_a_delete_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    await assert_before_or_after(tmp_path, "apply", base)


async def test_a_recovery_killed_midway_completes_on_the_next_open(tmp_path: Path, base: Path) -> None:
    first = run_ops(tmp_path / "first", "apply", base, random_kills=0)
    pending = [first["out"] / name for name, _ in first["kills"]
               if list((first["out"] / name / "store" / ".journal").glob("*.json"))]
    assert pending, "no kill left an intent record behind"
    middle = pending[len(pending) // 2]  # killed with part of the batch applied
    after = await dump(first["out"] / "after")
    second = run_ops(tmp_path / "second", "reopen", middle, random_kills=1)
    assert second["calls"] > 2
    assert await dump(second["out"] / "after") == after
    for name, _ in second["kills"]:
        assert await dump(second["out"] / name) == after, name


async def test_update_memory_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    await assert_before_or_after(tmp_path, "update", base)


async def test_delete_all_of_a_user_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    await assert_before_or_after(tmp_path, "delete_scope", base)


async def test_delete_all_everything_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    await assert_before_or_after(tmp_path, "delete_everything", base)


async def test_a_first_open_killed_midway_opens_again(tmp_path: Path) -> None:
    await assert_before_or_after(tmp_path, "first_open", None)


async def test_import_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    source = tmp_path / "source"
    async with ReMe(working_dir=source, embedding=EMBEDDING) as reme:
        for i in range(10):
            await reme.add_memory(f"Imported fact {i}", user_name="carol", message_time=T0)
        await reme.export_memory(tmp_path / "export.jsonl", with_vectors=True)
    await assert_before_or_after(tmp_path, "import", base, import_file=tmp_path / "export.jsonl")


async def test_forget_keeping_history_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    await assert_before_or_after(tmp_path, "forget", base)


async def test_forget_with_purge_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    await assert_before_or_after(tmp_path, "forget_purge", base)


async def test_forget_with_scrub_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    await assert_before_or_after(tmp_path, "forget_scrub", base)


async def test_prune_of_expired_memories_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    async with ReMe(working_dir=base, embedding=EMBEDDING) as reme:
        for i in range(3):
            await reme.add_memory(f"Alice expired fact {i}", user_name="alice", expires_at=T0)
    await assert_before_or_after(tmp_path, "prune_expired", base)


async def test_a_flush_of_counted_reads_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    await assert_before_or_after(tmp_path, "flush_reads", base)


async def test_an_import_with_history_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    """The memories and their earlier versions land in two collections: both, or neither."""
    source = tmp_path / "source"
    async with ReMe(working_dir=source, embedding=EMBEDDING) as reme:
        for i in range(10):
            node = await reme.add_memory(f"Imported fact {i}", user_name="carol", message_time=T0)
            await reme.update_memory(node.memory_id, content=f"Imported fact {i}, revised")
        await reme.export_memory(tmp_path / "export.jsonl")
    assert all("history" in line for line in (tmp_path / "export.jsonl").read_text().splitlines())
    await assert_before_or_after(tmp_path, "import", base, import_file=tmp_path / "export.jsonl")


async def test_summarize_memory_write_phase_is_all_or_nothing(tmp_path: Path) -> None:
    wd = tmp_path / "base"
    async with ReMe(working_dir=wd, embedding=EMBEDDING) as reme:
        await reme.add_memory("Alice lives in Paris", user_name="alice", message_time=T0)
    await assert_before_or_after(tmp_path, "summarize", wd)


async def test_a_markdown_sync_is_all_or_nothing(tmp_path: Path, base: Path) -> None:
    async with ReMe(working_dir=base, embedding=EMBEDDING) as reme:  # the tree travels with each copy
        await reme.export_markdown(base / "md", user_name="alice")
    memory = base / "md" / "MEMORY.md"
    lines = memory.read_text(encoding="utf-8").split("\n")
    items = [i for i, line in enumerate(lines) if line.startswith("- ")]
    lines[items[0]] = lines[items[0]].replace("Alice fact", "Alice fact, edited in Markdown")
    del lines[items[1]]
    memory.write_text("\n".join(lines), encoding="utf-8")
    # New items in a journal day: their message_time is that day, the same in every run.
    (base / "md" / "journal").mkdir()
    (base / "md" / "journal" / "2024-05-03.md").write_text("- Alice added one\n- Alice added two\n", encoding="utf-8")
    await assert_before_or_after(tmp_path, "markdown_sync", base)


async def test_qdrant_recover_rolls_a_leftover_intent_record_forward() -> None:
    store = QdrantStore(location=":memory:", batch_size=2)
    await store.create_collection("mem", DIM)
    await store.create_collection("mem-versions", DIM)
    old = MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content="old", message_time=T0)
    await store.upsert("mem", [VectorRecord(node=old, vector=[0.5] * DIM)])
    new = [MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content=f"new {i}") for i in range(3)]
    steps = [Upsert("mem-versions", [VectorRecord(node=old, vector=[0.5] * DIM)]),
             Upsert("mem", [VectorRecord(node=n, vector=[0.1 * (i + 1)] * DIM) for i, n in enumerate(new)]),
             Delete("mem", [old.memory_id])]
    # What a writer that died right after storing its intent record leaves behind.
    dead = QdrantStore(location=":memory:")
    dead._client = store._client  # the same server, another process
    await dead._journal_put(encode_steps(steps))
    orphan = await dead._journal_put(encode_steps(steps[:1]))  # one that died before its header:
    await dead._client.delete("_reme_journal", models.PointIdsList(points=[orphan]), wait=True)

    assert await store.recover() == 0  # the writer may still be at work: too young to replay
    store.journal_stale_after = 0
    assert await store.recover() == 1
    assert sorted([r.node.content async for r in store.iter_records("mem")]) == ["new 0", "new 1", "new 2"]
    assert [r.node.content async for r in store.iter_records("mem-versions")] == ["old"]
    assert await store.recover() == 0  # the record is gone
    assert await store._client.count("_reme_journal") == models.CountResult(count=0)  # orphan parts too
    assert await store.list_collections() == ["mem", "mem-versions"]
    await store.close()


def _node(content: str, target: str = "alice") -> MemoryNode:
    return MemoryNode(memory_type=MemoryType.PERSONAL, memory_target=target, content=content, message_time=T0)


async def test_a_rejected_batch_writes_nothing(store: VectorStore) -> None:
    store.batch_size = 2
    await store.create_collection("other", DIM)
    # Compared with what was there, not a fixed list: the shared node keeps collections of other tests, emptied.
    collections = await store.list_collections()
    assert {"mem", "other"} <= set(collections)
    good = [VectorRecord(node=_node(f"fact {i}"), vector=[0.1] * DIM) for i in range(5)]
    nan = VectorRecord(node=_node("nan"), vector=[float("nan")] * DIM)
    with pytest.raises(InvalidInputError):
        await store.write([Upsert("other", good), Upsert("mem", good + [nan])])
    with pytest.raises(VectorSizeError):
        await store.write([Upsert("other", good), Upsert("mem", [VectorRecord(node=_node("short"), vector=[0.1])])])
    with pytest.raises(InvalidInputError, match="twice"):
        await store.write([Upsert("other", good), Upsert("mem", good + good[:1])])
    with pytest.raises(CollectionNotFoundError):
        await store.write([Upsert("other", good), DropCollection("mem"), Upsert("mem", good)])
    assert await store.count("other") == 0 and await store.count("mem") == 0
    assert await store.list_collections() == collections


async def test_write_applies_its_ops_in_order(store: VectorStore) -> None:
    store.batch_size = 2
    a, b, c = _node("a"), _node("b", target="bob"), _node("c")
    await store.write([Upsert("mem", [VectorRecord(node=n, vector=[0.1] * DIM) for n in (a, b, c)]),
                       Delete("mem", [a.memory_id]), DeleteWhere("mem", eq("memory_target", "bob")),
                       CreateCollection("new", DIM), Upsert("new", [VectorRecord(node=a, vector=[0.2] * DIM)])])
    assert [r.node.content async for r in store.iter_records("mem")] == ["c"]
    assert [r.node.content async for r in store.iter_records("new")] == ["a"]
    await store.write([DropCollection("new"), CreateCollection("new", DIM + 1)])
    assert await store.collection_dim("new") == DIM + 1 and await store.count("new") == 0
    assert await store.recover() == 0


async def test_an_invalid_batch_writes_nothing(tmp_path: Path) -> None:
    async with ReMe(working_dir=tmp_path / "wd", embedding=EMBEDDING, vector_store=SMALL_BATCHES) as reme:
        good = [MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content=f"fact {i}")
                for i in range(6)]
        bad = [VectorRecord(node=n, vector=[0.1] * DIM) for n in good] + [
            VectorRecord(node=MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content="nan"),
                         vector=[float("nan")] * DIM)]
        with pytest.raises(ValueError):
            await reme.store.write([Upsert(reme.repo.versions, bad[:2]), Upsert(reme.collection, bad)])
        assert await reme.count_memory() == 0
        assert await reme.store.count(reme.repo.versions) == 0
        await reme.repo.apply([Change(new=n) for n in good])
        assert await reme.count_memory() == 6


async def test_edge_recover_removes_half_created_collections_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "store" / "half" / "shard").mkdir(parents=True)  # a create killed before its marker
    (tmp_path / "store" / ".trash-0123").mkdir()  # a drop killed after its rename
    (tmp_path / "store" / "notes").mkdir()
    (tmp_path / "store" / "notes" / "todo.txt").write_text("mine")
    store = EdgeStore(tmp_path / "store")
    assert await store.recover() == 0
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == [".lock", "notes"]
    with pytest.raises(StoreError, match="not a ReMe collection"):
        await store.create_collection("notes", DIM)
    assert (tmp_path / "store" / "notes" / "todo.txt").read_text() == "mine"
    await store.create_collection("half", DIM)
    assert await store.list_collections() == ["half"]
    await store.close()


@pytest.mark.parametrize("sync", ["process", "os"])
async def test_sync_os_fsyncs_before_a_write_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    sync: str) -> None:
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    async with ReMe(working_dir=tmp_path / "wd", embedding=EMBEDDING,
                    vector_store={"sync": sync, "batch_size": 2}) as reme:
        # Python's fsync: the journal files and directories ("os" only); the engine's flush is its own.
        # Each write that needs a journal fsyncs before it returns, not some later one.
        fsyncs.clear()
        nodes = await reme.add_memories([_node(f"fact {i}") for i in range(5)])  # journaled: 3 engine calls
        assert (len(fsyncs) > 0) == (sync == "os")
        fsyncs.clear()
        await reme.update_memory(nodes[0].memory_id, content="changed")  # a version and the new state
        assert (len(fsyncs) > 0) == (sync == "os")
        fsyncs.clear()
        assert await reme.delete_all(user_name="alice") == 5
        assert (len(fsyncs) > 0) == (sync == "os")


async def prepare_session(wd: Path) -> None:
    """A chat session: turns, a tool call with a big result, a summary; and alice's memories."""
    await prepare(wd, with_history=False)
    async with ReMe(working_dir=wd, embedding=EMBEDDING) as reme:
        turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "word " * 40}
                 for i in range(8)]
        call = {"role": "assistant", "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}
        await reme.add_messages([*turns, call, {"role": "tool", "tool_call_id": "c1", "content": "r" * 5000}],
                                session_name="chat")
        await reme.update_compressed_summary("earlier: hello", session_name="chat")


@pytest.mark.parametrize("op", ["session_add", "session_load", "session_prepare"])
async def test_session_writes_are_all_or_nothing(tmp_path: Path, op: str) -> None:
    wd = tmp_path / "base"
    await prepare_session(wd)
    await assert_before_or_after(tmp_path, op, wd)
