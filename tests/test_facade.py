"""The ReMe facade: CRUD, deduplication, target isolation, bad input, durability and locking."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pytest

from reme import (ConfigError, InvalidInputError, MemoryNotFoundError, MemoryType, ReMe, ReMeError, ReMeSync,
                  StoreLockedError, VectorSizeError)
from reme.embedding import HashEmbedder
from reme.schema import MAX_CONTENT_CHARS

from conftest import DIM, every_store

MISSING = "00000000-0000-4000-8000-000000000000"


@every_store
async def test_add_search_update_list_delete(reme: ReMe) -> None:
    node = await reme.add_memory("Alice prefers window seats", user_name="alice", tags=["travel"])
    await reme.add_memory("Alice is vegetarian", user_name="alice")
    hits = await reme.search_memory("window seat preference", user_name="alice", top_k=5)
    assert hits[0].node.memory_id == node.memory_id and hits[0].rank == 1

    updated = await reme.update_memory(node.memory_id, content="Alice prefers aisle seats")
    assert updated.memory_id == node.memory_id and updated.version == 2
    assert updated.time_modified > node.time_modified and updated.time_created == node.time_created
    assert (await reme.get_memory(node.memory_id)).content == "Alice prefers aisle seats"
    hits = await reme.search_memory("aisle", user_name="alice", mode="keyword")
    assert [h.node.memory_id for h in hits] == [node.memory_id]

    page = await reme.list_memory(user_name="alice", filters={"tags": {"any": ["travel"]}},
                                  sort_key="time_created", limit=10)
    assert [n.memory_id for n in page] == [node.memory_id]

    await reme.delete_memory(node.memory_id)
    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(node.memory_id)
    assert await reme.count_memory(user_name="alice") == 1


async def test_scope_picks_the_memory_type(reme: ReMe) -> None:
    assert (await reme.add_memory("x", user_name="a")).memory_type is MemoryType.PERSONAL
    assert (await reme.add_memory("x", task_name="a")).memory_type is MemoryType.PROCEDURAL
    assert (await reme.add_memory("x", tool_name="a")).memory_type is MemoryType.TOOL
    assert (await reme.add_memory("x", user_name="a", memory_type="history")).memory_type is MemoryType.HISTORY
    with pytest.raises(InvalidInputError):
        await reme.add_memory("x", user_name="a", memory_type="tool")
    with pytest.raises(InvalidInputError):
        await reme.add_memory("x", user_name="a", task_name="b")
    with pytest.raises(InvalidInputError):
        await reme.add_memory("x")
    # a search of a user looks at personal memories unless told otherwise
    hits = await reme.search_memory("x", user_name="a")
    assert {h.node.memory_type for h in hits} == {MemoryType.PERSONAL}
    hits = await reme.search_memory("x", user_name="a", memory_type="history")
    assert {h.node.memory_type for h in hits} == {MemoryType.HISTORY}


async def test_concurrent_adds_of_the_same_content_yield_one_memory(reme: ReMe) -> None:
    texts = ["Alice prefers window seats", "alice prefers  WINDOW seats ", "Alice prefers window seats"] * 7
    nodes = await asyncio.gather(*(reme.add_memory(t, user_name="alice") for t in texts))
    assert len({n.memory_id for n in nodes}) == 1
    assert await reme.count_memory(user_name="alice") == 1
    # same text for another target or type is another memory
    await reme.add_memory("Alice prefers window seats", user_name="bob")
    await reme.add_memory("Alice prefers window seats", user_name="alice", memory_type="history")
    assert await reme.count_memory() == 3


@every_store
async def test_concurrent_changes_of_one_memory_lose_none(reme: ReMe) -> None:
    """Updates and usage counts of one memory at once, from tasks of one process: none waits for a
    lock and none is lost (each write is conditional on what it read, retried on the newer state)."""
    node = await reme.add_memory("draft 0", user_name="alice")
    done = await asyncio.gather(*(reme.update_memory(node.memory_id, content=f"draft {i}", user_name="alice")
                                  for i in range(1, 9)),
                                *(reme.record_usage([node.memory_id], i % 2 == 0, user_name="alice") for i in range(8)))
    assert sorted(n.version for n in done[:8]) == list(range(2, 10))  # type: ignore[union-attr]
    stored = await reme.get_memory(node.memory_id, user_name="alice")
    assert (stored.version, stored.access_count, stored.metadata["freq"], stored.metadata["utility"]) == (9, 8, 8, 4)
    history = await reme.history(node.memory_id, user_name="alice")
    assert [v.node.version for v in history] == list(range(1, 9))


async def test_one_batch_may_hold_more_memories_of_one_user_than_a_filter_may_name(reme: ReMe) -> None:
    # Deduplication looks the batch's content hashes up in the store: more than the filter limit
    # (1,000 values) used to make the whole add an InvalidFilterError.
    from reme.schema import MAX_FILTER_SIZE, MemoryNode

    n = MAX_FILTER_SIZE + 300
    nodes = [MemoryNode(memory_type="personal", memory_target="alice", content=f"fact {i}") for i in range(n)]
    await reme.add_memories(nodes[:10])
    added = await reme.add_memories(nodes + nodes[:5])  # the first 10 are stored already, 5 repeat
    assert len({a.memory_id for a in added}) == n
    assert await reme.count_memory(user_name="alice") == n


async def test_no_operation_for_one_user_touches_another_users_memories(reme: ReMe, tmp_path: Path) -> None:
    alice = await reme.add_memory("Alice prefers window seats", user_name="alice", tags=["seat"])
    bob = await reme.add_memory("Bob prefers window seats", user_name="bob", tags=["seat"])
    # reads
    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(bob.memory_id, user_name="alice")
    for mode in ("hybrid", "dense", "keyword"):
        hits = await reme.search_memory("window seats", user_name="alice", mode=mode, top_k=10)  # type: ignore[arg-type]
        assert {h.node.memory_target for h in hits} == {"alice"}
    assert {n.memory_target for n in await reme.list_memory(user_name="alice")} == {"alice"}
    assert await reme.count_memory(user_name="alice", filters={"tags": {"any": ["seat"]}}) == 1
    # a filter cannot widen the scope
    widened = await reme.list_memory(user_name="alice", filters={"memory_target": "bob"})
    assert len(widened) == 0
    path = tmp_path / "alice.jsonl"
    assert await reme.export_memory(path, user_name="alice") == 1
    assert json.loads(path.read_text())["memory_target"] == "alice"
    # writes
    with pytest.raises(MemoryNotFoundError):
        await reme.update_memory(bob.memory_id, content="hijacked", user_name="alice")
    with pytest.raises(MemoryNotFoundError):
        await reme.delete_memory(bob.memory_id, user_name="alice")
    assert await reme.delete_all(user_name="alice") == 1
    assert (await reme.get_memory(bob.memory_id)).content == "Bob prefers window seats"
    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(alice.memory_id)


async def test_delete_all_needs_a_scope_or_everything(reme: ReMe) -> None:
    await reme.add_memory("a", user_name="alice")
    await reme.add_memory("b", task_name="t")
    with pytest.raises(InvalidInputError):
        await reme.delete_all()
    assert await reme.count_memory() == 2
    assert await reme.delete_all(everything=True) == 2
    assert await reme.count_memory() == 0
    await reme.add_memory("still works", user_name="alice")
    assert await reme.count_memory() == 1


@pytest.mark.parametrize("kwargs,error", [
    ({"content": ""}, InvalidInputError),
    ({"content": "   "}, InvalidInputError),
    ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, InvalidInputError),
    ({"content": "y" * 1_000_000}, InvalidInputError),
    ({"content": "ok", "metadata": {"v": float("nan")}}, InvalidInputError),
    ({"content": "ok", "metadata": {"v": object()}}, InvalidInputError),
    ({"content": "ok", "metadata": {"a.b": 1}}, InvalidInputError),
    ({"content": "ok", "memory_type": "diary"}, InvalidInputError),
    ({"content": "ok", "score": float("inf")}, InvalidInputError),
    ({"content": "ok", "tags": [""]}, InvalidInputError),
])
async def test_bad_input_gets_a_typed_error_and_changes_nothing(reme: ReMe, kwargs: dict[str, object],
                                                                 error: type[Exception]) -> None:
    kept = await reme.add_memory("kept", user_name="alice")
    with pytest.raises(error):
        await reme.add_memory(user_name="alice", **kwargs)  # type: ignore[arg-type]
    if "memory_type" not in kwargs:  # the type of a memory is fixed; every other field can be updated
        with pytest.raises(error):
            await reme.update_memory(kept.memory_id, **kwargs)  # type: ignore[arg-type]
    assert [n.model_dump() for n in await reme.list_memory()] == [kept.model_dump()]


async def test_unicode_round_trips(reme: ReMe) -> None:
    text = "Zoë likes café au lait ☕ and 北京烤鸭; naïve 🎉"
    node = await reme.add_memory(text, user_name="zoë", metadata={"城市": "北京"})
    assert (await reme.get_memory(node.memory_id, user_name="zoë")).content == text
    assert (await reme.search_memory("北京烤鸭", user_name="zoë", mode="keyword"))[0].node.memory_id == node.memory_id


async def test_missing_ids_and_bad_queries_raise_typed_errors(reme: ReMe) -> None:
    for call in (reme.get_memory(MISSING), reme.delete_memory(MISSING), reme.update_memory(MISSING, content="x")):
        with pytest.raises(MemoryNotFoundError):
            await call
    for call in (reme.get_memory("not-a-uuid"), reme.delete_memory("search"), reme.history("x"),
                 reme.update_memory("not-a-uuid", content="x"), reme.record_usage(["not-a-uuid"], True)):
        with pytest.raises(InvalidInputError, match="not a memory id"):  # every stored id is a UUID
            await call
    with pytest.raises(InvalidInputError):
        await reme.search_memory("", user_name="a")
    with pytest.raises(InvalidInputError):
        await reme.search_memory("x", user_name="a", top_k=0)
    with pytest.raises(InvalidInputError):
        await reme.list_memory(sort_key="content")


async def test_an_unwritable_working_dir_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError):
        async with ReMe(working_dir=blocker / "wd", embedding={"backend": "hash"}):
            pass


async def test_reopening_with_an_embedder_of_another_size_is_refused(reme_factory: Callable[..., ReMe]) -> None:
    async with reme_factory() as reme:
        await reme.add_memory("kept", user_name="alice")
    async with reme_factory(embedding={"backend": "hash", "dimensions": DIM * 2}) as other:
        assert await other.count_memory() == 1  # reading needs no embedder: the size is checked on first use
        with pytest.raises(VectorSizeError):
            await other.add_memory("refused", user_name="alice")
        with pytest.raises(VectorSizeError):
            await other.search_memory("kept", user_name="alice")
    async with reme_factory() as reme:
        assert await reme.count_memory() == 1


async def test_not_open_is_a_clear_error(reme_factory: Callable[..., ReMe]) -> None:
    with pytest.raises(ReMeError, match="not open"):
        await reme_factory().add_memory("x", user_name="a")


def _script(body: str) -> str:
    """A program that opens ReMe on argv[1] and runs `body` inside the `async with`."""
    head = ("import asyncio, sys\nfrom reme import ReMe\nasync def main():\n"
            f"    async with ReMe(working_dir=sys.argv[1], embedding={{'backend': 'hash', 'dimensions': {DIM}}}) as reme:\n")
    return head + textwrap.indent(textwrap.dedent(body), " " * 8) + "\nasyncio.run(main())\n"


def test_a_memory_survives_sigkill_right_after_add_returns(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    writer = _script("""
        node = await reme.add_memory("Alice prefers window seats", user_name="alice")
        print(node.memory_id, flush=True)
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", writer, str(wd)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    memory_id = proc.stdout.strip()
    with ReMeSync(working_dir=wd, embedding={"backend": "hash", "dimensions": DIM}) as reme:
        assert reme.get_memory(memory_id, user_name="alice").content == "Alice prefers window seats"
        assert reme.search_memory("window", user_name="alice", mode="keyword")[0].node.memory_id == memory_id


def test_a_second_process_gets_a_clear_error_not_corruption(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    holder = _script("""
        await reme.add_memory("held", user_name="alice")
        print("ready", flush=True)
        sys.stdin.readline()
    """)
    proc = subprocess.Popen([sys.executable, "-c", holder, str(wd)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError, match="another process"):
            ReMeSync(working_dir=wd, embedding={"backend": "hash", "dimensions": DIM}).open()
    finally:
        proc.communicate("\n", timeout=60)
    with ReMeSync(working_dir=wd, embedding={"backend": "hash", "dimensions": DIM}) as reme:
        assert [n.content for n in reme.list_memory()] == ["held"]


def test_sync_facade_mirrors_the_async_one(tmp_path: Path) -> None:
    with ReMeSync(working_dir=tmp_path / "wd", embedding={"backend": "hash"}) as reme:
        node = reme.add_memory("Alice prefers window seats", user_name="alice",
                               message_time=datetime(2024, 1, 1, tzinfo=timezone.utc))
        assert reme.search_memory("seat", user_name="alice", top_k=5)[0].node.memory_id == node.memory_id
        assert reme.update_memory(node.memory_id, content="aisle").version == 2
        assert len(reme.list_memory(user_name="alice", sort_key="message_time", limit=10)) == 1
        reme.delete_memory(node.memory_id)
        assert reme.count_memory() == 0
    async_names = {n for n in dir(ReMe) if not n.startswith("_") and asyncio.iscoroutinefunction(getattr(ReMe, n))}
    assert async_names - {"open", "close"} <= set(dir(ReMeSync))


@every_store
async def test_export_then_import_into_a_fresh_store(reme: ReMe, tmp_path: Path, reme_factory: Callable[..., ReMe],
                                                     another_store: dict[str, Any]) -> None:
    fruits = ["apple", "banana", "cherry", "damson", "elder"]
    nodes = [await reme.add_memory(f"fact {w}", user_name="alice", metadata={"i": i}) for i, w in enumerate(fruits)]
    path = tmp_path / "out.jsonl"
    assert await reme.export_memory(path, user_name="alice") == 5
    async with reme_factory(**another_store) as other:
        assert await other.import_memory(path) == 5
        assert {n.memory_id for n in await other.list_memory(user_name="alice")} == {n.memory_id for n in nodes}
        # a word only one memory holds: on a cluster each shard weighs "fact" by its own counts
        # (docs/scaling.md), so "fact damson" could rank another fact first
        hits = await other.search_memory("damson", user_name="alice", top_k=1, mode="keyword")
        assert hits[0].node.metadata == {"i": 3}


async def test_injected_embedder_is_used(tmp_path: Path) -> None:
    async with ReMe(working_dir=tmp_path, embedder=HashEmbedder(dim=16)) as reme:
        await reme.add_memory("x", user_name="a")
        assert await reme.store.collection_dim(reme.collection) == 16


def test_environment_reaches_the_facade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REME_WORKING_DIR", str(tmp_path / "envwd"))
    monkeypatch.setenv("REME_EMBEDDING__BACKEND", "hash")
    with ReMeSync() as reme:
        reme.add_memory("x", user_name="a")
        assert reme.config.embedding.backend == "hash"
    assert (tmp_path / "envwd" / "store" / "reme").is_dir()  # the edge collection under REME_WORKING_DIR


@every_store
async def test_search_results_say_what_their_score_is(reme_factory: Callable[..., ReMe]) -> None:
    async with reme_factory() as reme:
        await reme.add_memory("Alice prefers window seats", user_name="alice")
        await reme.add_memory("Alice is vegetarian", user_name="alice")
        kinds = {mode: {h.score_kind for h in await reme.search_memory("window seats", user_name="alice", mode=mode)}
                 for mode in ("dense", "keyword", "hybrid")}
        assert kinds == {"dense": {"cosine"}, "keyword": {"bm25"}, "hybrid": {"rrf"}}
        hybrid = await reme.search_memory("window seats", user_name="alice")
        assert hybrid[0].similarity <= 2 / 60 + 1e-6  # reciprocal-rank fusion: ranks, not closeness
        assert [h.similarity for h in hybrid] == sorted((h.similarity for h in hybrid), reverse=True)


def test_the_original_packages_constructor_is_refused_by_name(tmp_path: Path) -> None:
    """Code written for the original ReMe (reme-ai), which also installs `reme`, gets an error naming
    what to use here; not an Exception, so a framework catching every Exception cannot hide it."""
    from reme import OriginalReMeAPIError

    with pytest.raises(OriginalReMeAPIError, match="ReMeMemoryMiddleware") as refused:
        ReMe(workspace_dir=str(tmp_path), enable_logo=False, jobs=[], components={})
    assert not isinstance(refused.value, Exception) and "components, enable_logo, jobs, workspace_dir" in str(
        refused.value)
    with pytest.raises(TypeError, match="no_such_setting"):
        ReMe(no_such_setting=1)


@pytest.mark.parametrize("lock_timeout", [0.0, 0.5])
async def test_concurrent_first_calls_open_the_store_once(reme_factory: Callable[..., ReMe], lock_timeout: float) -> None:
    """Adapters open the engine lazily from whichever call comes first; two at once must share one
    opening (with a lock timeout the store is opened off the loop, where a second opening would
    wait for the first's directory lock and fail)."""
    reme = reme_factory(vector_store={"lock_timeout": lock_timeout})
    try:
        opened = await asyncio.gather(*(reme.open() for _ in range(3)))
        assert all(r is reme for r in opened)
        await reme.add_memory("Alice likes tea", user_name="alice")
        assert await reme.count_memory(user_name="alice") == 1
    finally:
        await reme.close()


async def test_a_call_that_needs_an_llm_and_has_none_says_what_to_set_before_writing(reme: ReMe) -> None:
    """No LLM configured: `reme.llm` (the chat model a loop calls) and a prepare_context that files
    into long-term memory raise the ConfigError naming every setting, and nothing is written."""
    await reme.add_memory("Alice likes tea", user_name="alice")
    with pytest.raises(ConfigError) as raised:
        reme.llm
    for needed in ("REME_LLM__MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "scripts/llm.sh", "docs/real-model.md"):
        assert needed in str(raised.value)
    await reme.add_messages([{"role": "user", "content": "hello"}], session_name="s")
    with pytest.raises(ConfigError, match="REME_LLM__MODEL"):
        await reme.prepare_context(session_name="s", threshold=10_000, user_name="alice")
    with pytest.raises(ConfigError, match="REME_LLM__MODEL"):
        await reme.summarize_memory([{"role": "user", "content": "I live in Lisbon"}], user_name="alice")
    assert await reme.count_memory(user_name="alice") == 1
    assert [m.message["content"] for m in await reme.get_messages(session_name="s")] == ["hello"]


async def test_a_search_by_the_callers_vector_ranks_as_by_the_query_and_checks_its_size(reme: ReMe) -> None:
    for text in ("Alice loves green tea", "Alice rides a red bicycle", "Bob plays chess"):
        await reme.add_memory(text, user_name="alice" if text.startswith("Alice") else "bob")
    (vector,) = await reme.embedder.embed(["green tea"])
    by_text = await reme.search_memory("green tea", user_name="alice", mode="dense")
    by_vector = await reme.search_memory("", vector=vector, user_name="alice", mode="dense")
    assert [(h.node.memory_id, h.similarity) for h in by_vector] == [(h.node.memory_id, h.similarity) for h in by_text]
    assert {h.node.memory_target for h in await reme.search_memory("", vector=vector, mode="dense")} == {"alice", "bob"}
    with pytest.raises(VectorSizeError, match=f"size {DIM + 1}.*size {DIM}"):
        await reme.search_memory("", vector=[*vector, 0.0], user_name="alice", mode="dense")
    for bad in ({"mode": "hybrid"}, {"mode": "keyword"}, {"mode": "dense", "vector": [float("nan")] * DIM},
                {"mode": "dense", "vector": "not a vector"}, {"mode": "dense", "vector": [True] * DIM}):
        with pytest.raises(InvalidInputError):
            await reme.search_memory("", **{"vector": vector, **bad})  # type: ignore[arg-type]
