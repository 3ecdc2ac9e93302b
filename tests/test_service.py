"""The HTTP service and its client.

The behaviour suite runs every scenario twice: against the in-process facade (`ReMe`) and against
`ReMeClient` talking to a real `reme serve` subprocess on 127.0.0.1, so the two cannot drift.
Then: tokens (401/403, and that a 403 touched nothing), limits, the error mapping, malformed
requests, graceful SIGTERM, a held working directory at start-up, the OpenAPI schema."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings, strategies as st

from reme import (ConflictError, InvalidFilterError, InvalidInputError, LLMError, MemoryNode, MemoryNotFoundError,
                  ReMe, ReMeError)
from reme import errors as errors_module
from reme.client import ReMeClient, ReMeClientSync
from reme.reme import ReMeSync
from reme.errors import (AuthenticationError, NotReadyError, PayloadTooLargeError, PermissionDeniedError,
                         RequestTimeoutError, ServiceError)
from reme.server import STATUS, status_of

from openai_server import OpenAITestServer, prompt_of
from service_process import DIM, Served, llm_env

EXTRACT = "Read the conversation below"
GUIDE = "Write the usage guideline"
ADMIN, ALICE, READER = "admin-secret-0123456789", "alice-secret-0123456789", "reader-secret-0123456789"
TOKENS = [
    {"name": "admin", "secret": ADMIN, "users": ["*"], "tasks": ["*"], "tools": ["*"], "destructive": True},
    {"name": "alice-app", "secret": ALICE, "users": ["alice"], "tasks": ["trip"], "sessions": ["alice-chat"],
     "destructive": False},
    {"name": "reader", "secret": READER, "users": ["*"], "tasks": ["*"], "tools": ["*"]},
]
module_loop = pytest.mark.asyncio(loop_scope="module")
"""The async tests share the loop of the module-scoped facade."""
LIMITS = {"max_body_bytes": 4096, "max_batch": 2, "max_top_k": 5, "max_limit": 10, "timeout_s": 1.0}


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as s:
        yield s


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, llm: OpenAITestServer) -> Iterator[Served]:
    served = Served(tmp_path_factory.mktemp("svc") / "wd", env=llm_env(llm.base_url)).wait_ready()
    yield served
    assert served.stop() == 0, served.output()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, llm: OpenAITestServer) -> Iterator[Served]:
    """A service with tokens and small limits."""
    served = Served(tmp_path_factory.mktemp("guarded") / "wd", env=llm_env(llm.base_url),
                    server_config={"server": {"tokens": TOKENS, "limits": LIMITS}}).wait_ready()
    yield served
    assert served.stop() == 0, served.output()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def facade(tmp_path_factory: pytest.TempPathFactory, llm: OpenAITestServer) -> AsyncIterator[ReMe]:
    async with ReMe(working_dir=tmp_path_factory.mktemp("facade") / "wd",
                    embedding={"backend": "hash", "dimensions": DIM},
                    llm={"base_url": llm.base_url, "api_key": "k", "model": "test-model", "max_retries": 0,
                         "timeout": 10}) as reme:
        yield reme


@pytest_asyncio.fixture(params=["facade", "client"], loop_scope="module")
async def api(request: pytest.FixtureRequest, facade: ReMe, service: Served) -> AsyncIterator[Any]:
    """`ReMe` in process, or `ReMeClient` against `reme serve`: the same methods, the same answers.
    Both stores are shared by the module: each test names its own targets (`uid`)."""
    if request.param == "facade":
        yield facade
    else:
        async with ReMeClient(service.url, retries=1, backoff=0.05) as client:
            yield client


@pytest.fixture
def uid() -> str:
    """A fresh target name per test: the served store is shared by the module."""
    return f"u-{uuid.uuid4().hex[:10]}"


# -- the behaviour suite ------------------------------------------------------------------------
@module_loop
async def test_expiry_prune_and_forget_behave_alike_in_process_and_served(api: Any, uid: str) -> None:
    past = datetime.now(timezone.utc) - timedelta(seconds=1)
    gone = await api.add_memory("Alice's old door code", user_name=uid, expires_at=past)
    soon = await api.add_memory("Alice's new door code", user_name=uid, ttl=3600)
    later = await api.update_memory(soon.memory_id, expires_at=past + timedelta(days=2), user_name=uid)
    assert later.expires_at == past + timedelta(days=2)
    assert await api.count_memory(user_name=uid) == 1
    with pytest.raises(MemoryNotFoundError):
        await api.get_memory(gone.memory_id, user_name=uid)
    assert [n.memory_id for n in await api.prune(user_name=uid)] == [gone.memory_id]
    assert [n.memory_id for n in await api.prune(user_name=uid, now=past + timedelta(days=3))] == [soon.memory_id]
    kept = await api.add_memory("Alice has asthma", user_name=uid, tags=["health"])
    assert await api.forget(user_name=uid, filters={"tags": {"any": ["health"]}}, purge=True) == 1
    with pytest.raises(MemoryNotFoundError):
        await api.history(kept.memory_id, user_name=uid)
    assert await api.flush_reads() >= 0
    assert await api.count_memory(user_name=uid) == 0


@module_loop
async def test_add_get_update_history_delete_round_trip(api: Any, uid: str) -> None:
    node = await api.add_memory("Alice prefers window seats", user_name=uid, tags=["travel"],
                                metadata={"source": {"app": "chat"}}, score=0.5,
                                message_time=datetime(2024, 5, 3, tzinfo=timezone.utc))
    assert isinstance(node, MemoryNode) and node.memory_target == uid and node.target_kind == "user"
    assert await api.get_memory(node.memory_id, user_name=uid) == node
    assert await api.get_memory(node.memory_id.replace("-", "").upper()) == node  # any UUID spelling

    updated = await api.update_memory(node.memory_id, content="Alice prefers aisle seats", user_name=uid)
    assert updated.memory_id == node.memory_id and updated.version == 2 and updated.tags == ["travel"]
    (old,) = await api.history(node.memory_id, user_name=uid)
    assert old.event == "UPDATE" and old.node == node

    await api.delete_memory(node.memory_id, user_name=uid)
    with pytest.raises(MemoryNotFoundError) as caught:
        await api.get_memory(node.memory_id)
    assert caught.value.memory_id == node.memory_id
    assert [v.event for v in await api.history(node.memory_id)] == ["UPDATE", "DELETE"]


@module_loop
async def test_another_targets_id_is_not_found_and_nothing_changes(api: Any, uid: str) -> None:
    node = await api.add_memory("Bob is allergic to peanuts", user_name=uid)
    for call in (api.get_memory(node.memory_id, user_name=uid + "x"),
                 api.update_memory(node.memory_id, content="changed", user_name=uid + "x"),
                 api.delete_memory(node.memory_id, task_name=uid),
                 api.history(node.memory_id, tool_name=uid)):
        with pytest.raises(MemoryNotFoundError):
            await call
    assert await api.get_memory(node.memory_id) == node


@module_loop
async def test_duplicates_batches_and_an_add_never_replaces(api: Any, uid: str) -> None:
    first = await api.add_memory("Carol plays the cello", user_name=uid)
    again = await api.add_memory("  carol PLAYS the cello ", user_name=uid)
    assert again.memory_id == first.memory_id
    nodes = [MemoryNode(memory_type="procedural", memory_target=uid, content=f"Lesson {i}") for i in range(2)]
    stored = await api.add_memories(nodes)
    assert [n.memory_id for n in stored] == [n.memory_id for n in nodes]
    assert await api.count_memory(task_name=uid) == 2
    clash = MemoryNode(memory_id=first.memory_id, memory_type="personal", memory_target=uid, content="other")
    with pytest.raises(InvalidInputError):
        await api.add_memories([clash])
    assert (await api.get_memory(first.memory_id)).content == "Carol plays the cello"


@module_loop
async def test_search_stays_in_its_scope_and_honours_filters(api: Any, uid: str) -> None:
    await api.add_memory("Dana likes green tea in the morning", user_name=uid, tags=["drink"], score=0.9)
    await api.add_memory("Dana runs every Sunday", user_name=uid, tags=["sport"], score=0.2)
    await api.add_memory("Evan likes green tea too", user_name=uid + "-evan")
    hits = await api.search_memory("green tea", user_name=uid, top_k=5)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert hits[0].node.content == "Dana likes green tea in the morning"
    assert all(h.node.memory_target == uid for h in hits)
    keyword = await api.search_memory("Sunday", user_name=uid, mode="keyword", top_k=1)
    assert [h.node.content for h in keyword] == ["Dana runs every Sunday"]
    filtered = await api.search_memory("Dana", user_name=uid, filters={"score": {"gte": 0.5}})
    assert [h.node.tags for h in filtered] == [["drink"]]
    with pytest.raises(InvalidFilterError):
        await api.search_memory("Dana", user_name=uid, filters={"no_such_field": 1})
    with pytest.raises(InvalidInputError):
        await api.search_memory("  ", user_name=uid)
    with pytest.raises(InvalidInputError):
        await api.search_memory("tea", user_name=uid, task_name=uid)


@module_loop
async def test_several_users_are_searched_counted_and_retrieved_as_one_list(api: Any, uid: str) -> None:
    a, b = uid + "-a", uid + "-b"
    await api.add_memory("Ann bakes sourdough bread", user_name=a)
    await api.add_memory("Ben bakes rye bread", user_name=b)
    await api.add_memory("Cat bakes cakes", user_name=uid + "-c")
    hits = await api.search_memory("bread", user_name=[a, b], top_k=5)
    assert sorted(h.node.memory_target for h in hits) == [a, b]
    assert await api.count_memory(user_name=(a, b)) == 2
    page = await api.list_memory(user_name=[a, b], limit=5)
    assert sorted(n.memory_target for n in page) == [a, b]
    found = await api.retrieve_memory("who bakes bread", user_name=[a, b], rewrite=False)
    assert sorted(m.node.memory_target for m in found.memories) == [a, b]
    with pytest.raises(InvalidInputError):
        await api.count_memory(user_name=[])


@module_loop
async def test_list_sorts_and_pages_with_a_cursor_and_count_filters(api: Any, uid: str) -> None:
    for i in range(5):
        await api.add_memory(f"Fact number {i}", user_name=uid, score=i / 10)
    page = await api.list_memory(user_name=uid, sort_key="score", direction="asc", limit=2)
    seen = [n.score for n in page]
    while page.next_cursor:
        page = await api.list_memory(user_name=uid, sort_key="score", direction="asc", limit=2,
                                     cursor=page.next_cursor)
        seen += [n.score for n in page]
    assert seen == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert await api.count_memory(user_name=uid, filters={"score": {"gt": 0.25}}) == 2
    assert await api.count_memory(user_name=uid, memory_type="history") == 0


@module_loop
async def test_delete_all_wipes_one_scope_and_needs_a_target(api: Any, uid: str) -> None:
    await api.add_memory("Gina speaks Finnish", user_name=uid)
    await api.add_memory("Keep me", user_name=uid + "-other")
    with pytest.raises(InvalidInputError):
        await api.delete_all()
    assert await api.delete_all(user_name=uid) == 1
    assert await api.count_memory(user_name=uid) == 0
    assert await api.count_memory(user_name=uid + "-other") == 1


@module_loop
async def test_export_then_import_restores_a_scope(api: Any, uid: str, tmp_path: Path) -> None:
    a = await api.add_memory("Hana collects stamps", user_name=uid, metadata={"n": 1})
    b = await api.add_memory("Hana lives in Osaka", user_name=uid)
    path = tmp_path / "out.jsonl"
    assert await api.export_memory(path, user_name=uid) == 2
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(r["memory_id"] for r in rows) == sorted([a.memory_id, b.memory_id])
    assert await api.delete_all(user_name=uid) == 2
    assert await api.import_memory(path, user_name=uid) == 2
    assert await api.get_memory(a.memory_id, user_name=uid) == a
    with pytest.raises(InvalidInputError):  # every line must belong to the named target
        await api.import_memory(path, user_name=uid + "-x")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text() + '{"memory_type": "personal"}\n')
    with pytest.raises(InvalidInputError):
        await api.import_memory(bad)


@module_loop
async def test_an_export_carries_history_and_a_bad_line_imports_nothing(api: Any, uid: str, tmp_path: Path) -> None:
    node = await api.add_memory("Kira drinks tea", user_name=uid)
    await api.update_memory(node.memory_id, content="Kira drinks green tea", user_name=uid)
    path = tmp_path / "out.jsonl"
    assert await api.export_memory(path, user_name=uid) == 1
    (row,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert [v["node"]["content"] for v in row["history"]] == ["Kira drinks tea"]
    assert await api.delete_all(user_name=uid) == 1  # the versions go with it
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text() + json.dumps({"memory_type": "personal", "memory_target": uid,
                                                  "content": "x", "vector": 5}) + "\n")
    with pytest.raises(InvalidInputError, match=r":2: vector"):
        await api.import_memory(bad, user_name=uid)
    assert await api.count_memory(user_name=uid) == 0
    assert await api.import_memory(path, user_name=uid) == 1
    assert [v.node.content for v in await api.history(node.memory_id, user_name=uid)] == ["Kira drinks tea"]


@module_loop
async def test_record_usage_needs_ids_and_a_bool(api: Any, uid: str) -> None:
    node = await api.add_memory("Lena checks the quota", task_name=uid)
    for ids, success in ((None, True), ([node.memory_id], "yes"), ([node.memory_id], None), (5, True)):
        with pytest.raises(InvalidInputError):
            await api.record_usage(ids, success, task_name=uid)
    assert "freq" not in (await api.get_memory(node.memory_id)).metadata


@module_loop
async def test_backup_holds_every_record_and_restore_needs_an_empty_store(api: Any, uid: str, tmp_path: Path) -> None:
    node = await api.add_memory("Iris keeps bees", user_name=uid)
    await api.update_memory(node.memory_id, content="Iris keeps bees and goats", user_name=uid)
    path = tmp_path / "backup.jsonl"
    n = await api.backup(path)
    text = path.read_text()
    assert n == len(text.splitlines()) - 1  # a header line, then one line a record
    assert sum(node.memory_id in line for line in text.splitlines()) == 2  # the memory and its old version
    with pytest.raises(InvalidInputError, match="empty store"):
        await api.restore(path)


@module_loop
async def test_a_backup_restores_into_a_fresh_service(service: Served, tmp_path: Path) -> None:
    async with ReMeClient(service.url) as source:
        node = await source.add_memory("Jack restores backups", user_name="jack-restore")
        n = await source.backup(tmp_path / "b.jsonl")
        expected = await source.count_memory()
    fresh = Served(tmp_path / "fresh").wait_ready()
    try:
        async with ReMeClient(fresh.url) as target:
            assert await target.restore(tmp_path / "b.jsonl") == n
            assert await target.count_memory() == expected
            assert await target.get_memory(node.memory_id, user_name="jack-restore") == node
    finally:
        assert fresh.stop() == 0, fresh.output()


@module_loop
async def test_record_usage_then_prune_failing_lessons(api: Any, uid: str) -> None:
    good = await api.add_memory("Check the API docs first", task_name=uid)
    bad = await api.add_memory("Guess the endpoint name", task_name=uid)
    for _ in range(3):
        await api.record_usage([good.memory_id], True, task_name=uid)
        await api.record_usage([bad.memory_id], False, task_name=uid)
    counted = await api.get_memory(good.memory_id)
    assert counted.metadata["freq"] == 3 and counted.metadata["utility"] == 3
    with pytest.raises(MemoryNotFoundError):  # another target's id: not counted
        await api.record_usage([good.memory_id], True, user_name=uid)
    pruned = await api.prune(uid, min_freq=3, min_utility_ratio=0.5)
    assert [n.memory_id for n in pruned] == [bad.memory_id]
    assert await api.count_memory(task_name=uid) == 1
    with pytest.raises(InvalidInputError):
        await api.prune(uid, min_freq=0)


@module_loop
async def test_summarize_messages_then_retrieve(api: Any, uid: str, llm: OpenAITestServer) -> None:
    llm.script([EXTRACT, uid], {"memories": [{"content": f"{uid} moved to Berlin", "kind": "event", "sources": [0],
                                              "importance": 0.9, "time": "2024-04-26"}]}, times=1)
    chat = [{"role": "user", "name": uid, "content": f"I am {uid} and I moved to Berlin last week!",
             "time": "2024-05-03T10:00:00Z"}]
    result = await api.summarize_memory(chat, user_name=uid)
    dated = f"{uid} moved to Berlin last week (22-28 April 2024)"  # the time of the line it holds whole
    assert [n.content for n in result.added] == [dated]
    assert len(result.history) == 1 and result.usage.calls == 1
    found = await api.retrieve_memory("where does she live? Berlin", user_name=uid, rewrite=False, with_source=True,
                                      time_window=(datetime(2024, 1, 1, tzinfo=timezone.utc), None))
    assert [m.node.content for m in found.memories] == [dated]
    assert found.memories[0].source and "moved to Berlin last week" in found.memories[0].source
    assert dated in found.text
    with pytest.raises(InvalidInputError):
        await api.summarize_memory(chat)  # messages need a user


@module_loop
async def test_a_session_round_trips_and_its_context_is_prepared(api: Any, uid: str, llm: OpenAITestServer) -> None:
    llm.script(["working memory of an AI agent", uid], {"goal": f"help {uid}", "next_steps": ["answer"]}, times=1)
    turns = [{"role": "user", "content": f"{uid} turn {i} " + "word " * 60} for i in range(6)]
    added = await api.add_messages(turns, session_name=uid, marks="new")
    assert [m.message for m in await api.get_messages(session_name=uid, mark="new")] == turns
    assert [m.message for m in await api.get_messages(session_name=uid, last=2)] == turns[4:]
    assert [m.message for m in await api.get_messages(session_name=uid, after=added[3].id, last=1)] == turns[5:]
    with pytest.raises(MemoryNotFoundError):
        await api.get_messages(session_name=uid + "-other", after=added[3].id)
    tagged = await api.add_messages([{"role": "user", "content": "tagged", "id": f"{uid}-m1"}], session_name=uid + "-t")
    assert await api.get_messages(session_name=uid + "-t", message_ids=[f"{uid}-m1", "none"]) == tagged
    assert await api.update_marks(session_name=uid, ids=[added[0].id], remove="new") == 1
    assert (await api.session_size(session_name=uid)).messages == 6
    words = await api.session_size(session_name=uid, tokenizer=lambda text: text.split())
    assert words.tokens == 6 * (4 + 63)
    out = await api.compact_tool_results([{"role": "tool", "content": "z" * 3000}], session_name=uid, max_chars=100)
    assert await api.read_tool_result(out.offloaded[0].ref, session_name=uid) == "z" * 3000
    ready = await api.prepare_context(session_name=uid, threshold=200, reserve=100)
    assert ready.compacted == 5 and ready.messages[1:] == turns[5:] and f"help {uid}" in ready.summary
    assert await api.wait_background() == 0
    state = await api.session_state(session_name=uid)
    assert await api.load_session_state(state, session_name=uid + "-copy") == 6
    assert await api.session_state(session_name=uid + "-copy") == state
    assert await api.delete_messages_by_mark("compressed", session_name=uid + "-copy") == 5
    with pytest.raises(MemoryNotFoundError):
        await api.read_tool_result(out.offloaded[0].ref, session_name=uid + "-copy")
    with pytest.raises(InvalidInputError):
        await api.add_messages([{"content": "no role"}], session_name=uid)
    assert await api.clear_session(session_name=uid) == 8  # the messages, the summary, the offloaded result


@module_loop
async def test_summarize_tool_calls_then_retrieve_the_guideline(api: Any, uid: str, llm: OpenAITestServer) -> None:
    llm.script([GUIDE, uid], {"guideline": f"Call {uid} with a short query."}, times=1)
    calls = [{"tool_name": uid, "input": {"q": "x"}, "output": "ok", "success": True, "time_cost": 1.0},
             {"tool_name": uid, "input": {"q": ""}, "success": False, "time_cost": 3.0, "error": "empty query"}]
    result = await api.summarize_memory(tool_calls=calls)
    assert [n.memory_target for n in result.added] == [uid]
    found = await api.retrieve_memory(tool_name=[uid])
    assert found.memories[0].node.content == f"Call {uid} with a short query." and "50" in found.text


@module_loop
async def test_summarize_llm_failure_is_an_llm_error_and_writes_nothing(
        api: Any, uid: str, llm: OpenAITestServer) -> None:
    llm.script([EXTRACT, uid], status=500, times=1)
    with pytest.raises(LLMError):
        await api.summarize_memory([{"role": "user", "content": f"{uid} says hi"}], user_name=uid)
    assert await api.count_memory(user_name=uid) == 0


@module_loop
async def test_unicode_round_trips(api: Any, uid: str) -> None:
    text = "Zoë prefers 窓側の席 🪟 — and «quotes» \\ back\\slashes"
    node = await api.add_memory(text, user_name=uid, metadata={"ключ": "значение 😀"})
    assert (await api.get_memory(node.memory_id)).content == text
    assert (await api.search_memory("窓側の席", user_name=uid, mode="keyword"))[0].node.metadata == {
        "ключ": "значение 😀"}


@module_loop
async def test_a_search_by_the_callers_vector_answers_as_by_its_query(api: Any, uid: str) -> None:
    from reme.embedding import HashEmbedder

    await api.add_memory("Alice loves green tea", user_name=uid)
    await api.add_memory("Alice rides a red bicycle", user_name=uid)
    (vector,) = await HashEmbedder(dim=DIM).embed(["green tea"])
    by_text = await api.search_memory("green tea", user_name=uid, mode="dense")
    by_vector = await api.search_memory("", vector=vector, user_name=uid, mode="dense")
    assert [h.node.memory_id for h in by_vector] == [h.node.memory_id for h in by_text]
    with pytest.raises(InvalidInputError, match=f"size {DIM + 1}"):
        await api.search_memory("", vector=[*vector, 0.0], user_name=uid, mode="dense")


@module_loop
async def test_optimize_answers(api: Any) -> None:
    assert isinstance(await api.optimize(), bool)


def test_the_client_mirrors_the_facade_method_for_method() -> None:
    import inspect

    public = {n for n, f in inspect.getmembers(ReMe, inspect.iscoroutinefunction) if not n.startswith("_")}
    public -= {"open", "close"}
    for name in public:
        facade_sig = inspect.signature(getattr(ReMe, name))
        client_sig = inspect.signature(getattr(ReMeClient, name))
        assert list(client_sig.parameters) == list(facade_sig.parameters), name
        for pname, p in facade_sig.parameters.items():
            assert client_sig.parameters[pname].default == p.default, (name, pname)
            assert client_sig.parameters[pname].kind == p.kind, (name, pname)
            assert client_sig.parameters[pname].annotation == p.annotation, (name, pname)
        assert client_sig.return_annotation == facade_sig.return_annotation, name
        for sync_face in (ReMeClientSync, ReMeSync):  # the sync faces state each return type once (reme/sync.py)
            sync_sig = inspect.signature(getattr(sync_face, name))
            assert sync_sig.return_annotation == facade_sig.return_annotation, (sync_face.__name__, name)


def test_importing_the_client_loads_no_engine() -> None:
    import subprocess
    import sys

    code = ("import sys, reme.client; print(sorted({m.split('.')[0] for m in sys.modules} & {'qdrant_edge', "
            "'qdrant_client', 'openai', 'jinja2', 'tenacity', 'fastapi'} | {'reme.reme', 'reme.store'} & "
            "set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_sync_client_works(service: Served, uid: str) -> None:
    with ReMeClientSync(service.url) as client:
        assert client.health() and client.version()
        node = client.add_memory("Sync works", user_name=uid)
        assert client.get_memory(node.memory_id).content == "Sync works"
        with pytest.raises(MemoryNotFoundError):
            client.get_memory(str(uuid.uuid4()))
    client.close()  # a second close does nothing
    with pytest.raises(ReMeError, match="closed"):  # a call after close raises, it never waits forever
        client.count_memory()


# -- tokens ---------------------------------------------------------------------------------------
@module_loop
async def test_no_or_an_unknown_token_is_401(guarded: Served) -> None:
    for token in (None, "wrong", ADMIN + "x"):
        async with ReMeClient(guarded.url, token=token or "") as client:
            with pytest.raises(AuthenticationError) as caught:
                await client.count_memory(user_name="alice")
            assert caught.value.status_code == 401
    r = httpx.post(f"{guarded.url}/v1/memories/count", json={"user_name": "alice"},
                   headers={"Authorization": f"Basic {ADMIN}"})
    assert r.status_code == 401 and r.json()["error"]["type"] == "AuthenticationError"
    assert httpx.get(f"{guarded.url}/v1/health").status_code == 200  # health needs no token


@module_loop
async def test_a_403_touches_nothing(guarded: Served, tmp_path: Path) -> None:
    async with ReMeClient(guarded.url, token=ADMIN) as admin, ReMeClient(guarded.url, token=ALICE) as alice:
        bob = await admin.add_memory("Bob likes jazz", user_name="bob")
        mine = await alice.add_memory("Alice likes tea", user_name="alice")
        before = await admin.count_memory()
        refused = [
            alice.add_memory("written for bob", user_name="bob"),
            alice.add_memories([MemoryNode(memory_type="personal", memory_target="bob", content="x")]),
            alice.add_memories([MemoryNode(memory_type="personal", memory_target="alice", content="y"),
                                MemoryNode(memory_type="personal", memory_target="bob", content="z")]),
            alice.update_memory(bob.memory_id, content="hacked", user_name="bob"),
            alice.update_memory(bob.memory_id, content="hacked"),  # unscoped: needs * for every kind
            alice.delete_memory(bob.memory_id),
            alice.get_memory(bob.memory_id),
            alice.search_memory("jazz"),
            alice.list_memory(),
            alice.count_memory(tool_name="web"),
            alice.search_memory("jazz", user_name=["alice", "bob"]),
            alice.delete_all(user_name="alice"),  # not destructive
            alice.prune("trip"),
            alice.prune(user_name="bob"),
            alice.forget(user_name="alice"),  # not destructive
            alice.forget(user_name="bob", purge=True),
            alice.flush_reads(),
            alice.record_usage([bob.memory_id], True),
            alice.summarize_memory([{"role": "user", "content": "hi"}], user_name=["alice", "bob"]),
            alice.retrieve_memory("jazz", user_name="bob"),
            alice.optimize(),
            alice.backup(tmp_path / "all.jsonl"),
            alice.add_messages([{"role": "user", "content": "hi"}], session_name="bob-chat"),
            alice.get_messages(session_name="bob-chat"),
            alice.clear_session(session_name="bob-chat"),
            alice.prepare_context(session_name="alice-chat", user_name="bob"),
            alice.summarize_memory(session_name="bob-chat", user_name="alice"),
        ]
        for call in refused:
            with pytest.raises(PermissionDeniedError) as caught:
                await call
            assert caught.value.status_code == 403
        path = tmp_path / "a.jsonl"
        path.write_text(json.dumps(mine.model_dump(mode="json")) + "\n")
        with pytest.raises(PermissionDeniedError):
            await alice.import_memory(path, user_name="alice")
        with pytest.raises(PermissionDeniedError):
            await alice.restore(path)
        assert not (tmp_path / "all.jsonl").exists()
        assert await admin.count_memory() == before
        await alice.add_messages([{"role": "user", "content": "hi"}], session_name="alice-chat")  # its own session
        assert [m.message["content"] for m in await alice.get_messages(session_name="alice-chat")] == ["hi"]
        assert await admin.get_memory(bob.memory_id) == bob
        assert await alice.get_memory(mine.memory_id, user_name="alice") == mine
        assert await alice.count_memory(task_name="trip") == 0


@module_loop
async def test_requests_are_logged_by_token_name_never_by_secret(guarded: Served) -> None:
    async with ReMeClient(guarded.url, token=READER) as reader:
        await reader.search_memory("secret content 42", user_name="carol", top_k=3)
    lines = [json.loads(line) for line in guarded.output().splitlines() if line.startswith("{")]
    assert lines[0]["event"] == "start" and lines[0]["tokens"] == ["admin", "alice-app", "reader"]
    mine = [line for line in lines if line.get("token") == "reader"]
    assert mine and mine[-1]["path"] == "/v1/memories/search" and mine[-1]["status"] == 200
    assert set(mine[-1]) == {"method", "path", "status", "ms", "token"}
    text = guarded.output()
    assert all(t["secret"] not in text for t in TOKENS) and "secret content 42" not in text


# -- limits ---------------------------------------------------------------------------------------
@module_loop
async def test_limits_are_typed_4xx(guarded: Served, llm: OpenAITestServer) -> None:
    async with ReMeClient(guarded.url, token=ADMIN) as admin:
        with pytest.raises(PayloadTooLargeError):
            await admin.add_memory("x" * 5000, user_name="alice")
        nodes = [MemoryNode(memory_type="personal", memory_target="limit", content=f"n{i}") for i in range(3)]
        with pytest.raises(InvalidInputError, match="limit is 2"):
            await admin.add_memories(nodes)
        with pytest.raises(InvalidInputError, match="top_k"):
            await admin.search_memory("q", user_name="alice", top_k=6)
        with pytest.raises(InvalidInputError, match="limit"):
            await admin.list_memory(user_name="alice", limit=11)
        assert await admin.count_memory(user_name="limit") == 0
        llm.script([EXTRACT, "slowpoke"], {"memories": []}, times=1)
        llm.hang_next(2.5)
        with pytest.raises(RequestTimeoutError) as caught:
            await admin.summarize_memory([{"role": "user", "content": "I am a slowpoke at chess."}], user_name="slow")
        assert caught.value.status_code == 408
    # A declared length over the limit is refused before the body is read.
    with socket.create_connection(("127.0.0.1", guarded.port), timeout=5) as sock:
        sock.sendall(b"POST /v1/memories/count HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 99999999\r\n\r\n{")
        head = b""
        while b"}}" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    assert head.startswith(b"HTTP/1.1 413") and b"PayloadTooLargeError" in head


# -- the error mapping ----------------------------------------------------------------------------
def test_every_reme_error_has_one_documented_status() -> None:
    classes = [c for c in vars(errors_module).values() if isinstance(c, type) and issubclass(c, ReMeError)]
    expected = {"InvalidInputError": 422, "InvalidFilterError": 422, "VectorSizeError": 422,
                "PayloadTooLargeError": 413, "MemoryNotFoundError": 404, "CollectionNotFoundError": 404,
                "NotFoundError": 404, "ConflictError": 409, "StoreLockedError": 423, "StoreError": 500,
                "EmbeddingError": 502, "LLMError": 502, "LLMOutputError": 502, "PromptTooLargeError": 422,
                "ConfigError": 500,
                "PromptError": 500, "AuthenticationError": 401, "PermissionDeniedError": 403,
                "RequestTimeoutError": 408, "NotReadyError": 503, "ServiceError": 500, "ReMeError": 500}
    assert {c.__name__ for c in classes} == set(expected)
    for cls in classes:
        exc = cls.__new__(cls)
        assert status_of(exc) == expected[cls.__name__], cls
    assert len({cls for cls, _ in STATUS}) == len(STATUS)


@module_loop
async def test_error_bodies_carry_type_message_and_status(service: Served) -> None:
    missing = str(uuid.uuid4())
    r = httpx.get(f"{service.url}/v1/memories/{missing}")
    assert r.status_code == 404
    assert r.json() == {"error": {"type": "MemoryNotFoundError", "message": f"memory {missing!r} not found",
                                  "details": {"memory_id": missing}}}
    r = httpx.post(f"{service.url}/v1/memories/search", json={"query": "q", "filters": {"nope": 1}})
    assert r.status_code == 422 and r.json()["error"]["type"] == "InvalidFilterError"
    assert httpx.get(f"{service.url}/v1/nothing-here").json()["error"]["type"] == "NotFoundError"
    assert httpx.put(f"{service.url}/v1/health").status_code == 405


# -- malformed requests ---------------------------------------------------------------------------
@pytest.mark.parametrize("body,content_type,status", [
    (b'{"query": "tea",', "application/json", 400),              # not JSON
    (b'{"query": 5, "top_k": "many"}', "application/json", 422),  # wrong types
    (b'{"query": "tea", "surprise": true}', "application/json", 422),  # unknown field
    (b'{"query": "tea", "filters": ' + b'{"a": ' * 200 + b'1' + b'}' * 200 + b'}', "application/json", 400),
    (b'{"query": "\xff\xfe tea"}', "application/json", 400),      # invalid UTF-8
    (b'{"query": "tea \\ud800"}', "application/json", 400),       # a lone surrogate: not a character
    (b'[1, 2, 3]', "application/json", 422),                       # not an object
    (b'query=tea', "application/x-www-form-urlencoded", 422),
    (b'', "application/json", 422),
])
def test_malformed_requests_are_typed_4xx_and_the_server_stays_up(
        service: Served, body: bytes, content_type: str, status: int) -> None:
    r = httpx.post(f"{service.url}/v1/memories/search", content=body, headers={"Content-Type": content_type})
    assert r.status_code == status, r.text
    assert r.json()["error"]["type"] == "InvalidInputError" and r.json()["error"]["message"]
    assert httpx.get(f"{service.url}/v1/health").status_code == 200


def test_slow_clients_hold_up_nobody(service: Served) -> None:
    """Clients that send half a request line, or headers and part of a declared body, and then
    stall: the server stays up, serves everyone else at once, and none of them writes anything."""
    before = httpx.post(f"{service.url}/v1/memories/count", json={}).json()["count"]
    stalled = []
    try:
        for i in range(20):
            conn = socket.create_connection(("127.0.0.1", service.port))
            conn.sendall(b"POST /v1/memo" if i % 2 else
                         b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 1000\r\n\r\n{\"content\": \"stalled")
            stalled.append(conn)
        with httpx.Client(timeout=5) as client:
            added = client.post(f"{service.url}/v1/memories", json={"content": "not held up", "user_name": "slow"})
            assert added.status_code == 200, added.text
            assert client.post(f"{service.url}/v1/memories/count", json={}).json()["count"] == before + 1
    finally:
        for conn in stalled:
            conn.close()
    assert service.proc.poll() is None
    assert httpx.post(f"{service.url}/v1/memories/count", json={}).json()["count"] == before + 1


def test_a_deep_metadata_or_a_nan_is_refused_without_harm(service: Served) -> None:
    deep: Any = 1
    for _ in range(12):
        deep = {"k": deep}
    r = httpx.post(f"{service.url}/v1/memories", json={"content": "c", "user_name": "deep", "metadata": deep})
    assert r.status_code == 422 and r.json()["error"]["type"] == "InvalidInputError"
    r = httpx.post(f"{service.url}/v1/memories", content=b'{"content": "c", "user_name": "nan", "score": NaN}',
                   headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422)
    assert httpx.post(f"{service.url}/v1/memories/count", json={"user_name": "deep"}).json() == {"count": 0}


# -- the OpenAPI schema ---------------------------------------------------------------------------
def test_openapi_covers_every_endpoint_and_error_shape(service: Served) -> None:
    spec = httpx.get(f"{service.url}/openapi.json").json()
    paths = spec["paths"]
    expected = {("post", "/v1/memories"), ("post", "/v1/memories/batch"), ("get", "/v1/memories/{memory_id}"),
                ("patch", "/v1/memories/{memory_id}"), ("delete", "/v1/memories/{memory_id}"),
                ("get", "/v1/memories/{memory_id}/history"), ("post", "/v1/memories/list"),
                ("post", "/v1/memories/count"), ("post", "/v1/memories/search"), ("post", "/v1/memories/delete_all"),
                ("post", "/v1/memories/usage"), ("post", "/v1/memories/export"), ("post", "/v1/memories/import"),
                ("post", "/v1/summarize"), ("post", "/v1/retrieve"), ("post", "/v1/prune"),
                ("post", "/v1/forget"), ("post", "/v1/flush_reads"),
                ("post", "/v1/optimize"), ("post", "/v1/backup"), ("post", "/v1/restore"), ("get", "/v1/health"),
                ("get", "/v1/version"), ("post", "/v1/markdown/export"), ("post", "/v1/markdown/sync")}
    session = "/v1/sessions/{session_name}"
    expected |= {("post", session + "/messages"), ("post", session + "/messages/get"),
                 ("post", session + "/messages/delete"), ("post", session + "/messages/delete_by_mark"),
                 ("post", session + "/marks"), ("put", session + "/summary"), ("get", session + "/size"),
                 ("post", session + "/clear"), ("get", session + "/state"), ("put", session + "/state"),
                 ("post", session + "/tool_results"), ("get", session + "/tool_results/{ref}"),
                 ("post", session + "/prepare"), ("post", "/v1/context/compact"), ("post", "/v1/background/wait")}
    assert {(m, p) for p, ops in paths.items() for m in ops} == expected
    for path, ops in paths.items():
        for op in ops.values():
            for code in ("401", "403", "404", "413", "422", "502", "503"):
                assert op["responses"][code]["content"]["application/json"]["schema"]["$ref"].endswith("ErrorBody")
    assert {"MemoryNode", "SearchResult", "SummaryResult", "RetrieveResult", "ErrorBody"} <= set(
        spec["components"]["schemas"])


# -- lifecycle ------------------------------------------------------------------------------------
@module_loop
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_stop_signal_lets_an_inflight_write_finish_then_closes_the_store(
        tmp_path: Path, llm: OpenAITestServer, sig: int) -> None:
    served = Served(tmp_path / "wd", env=llm_env(llm.base_url)).wait_ready()
    llm.script([EXTRACT, "graceful"], {"memories": [{"content": "Ivy finished gracefully", "kind": "fact",
                                                     "sources": [0], "importance": 0.5, "time": None}]}, times=1)
    llm.hang_next(1.5)
    async with ReMeClient(served.url, retries=0) as client:
        drill = [{"role": "user", "content": "Ivy finished the graceful exit drill."}]
        pending = asyncio.create_task(client.summarize_memory(drill, user_name="ivy"))
        await asyncio.sleep(0.7)
        served.proc.send_signal(sig)
        result = await pending
    assert [n.content for n in result.added] == ["Ivy finished gracefully"]
    assert served.wait_exit(20) == 0, served.output()
    async with ReMe(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": DIM}) as reme:
        assert await reme.get_memory(result.added[0].memory_id, user_name="ivy") == result.added[0]


@module_loop
async def test_startup_fails_fast_when_the_directory_is_held(tmp_path: Path) -> None:
    async with ReMe(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": DIM}):
        served = Served(tmp_path / "wd")
        code = served.wait_exit(30)
    assert code == 5
    assert "StoreLockedError" in served.output() and "another process" in served.output()


def test_refuses_to_serve_beyond_loopback_without_tokens(tmp_path: Path) -> None:
    served = Served(tmp_path / "wd", args=["--host", "0.0.0.0"])
    assert served.wait_exit(30) == 4
    assert "refusing to serve on 0.0.0.0 without tokens" in served.output()


@module_loop
async def test_a_client_timeout_is_a_service_error_and_a_write_is_never_resent(
        service: Served, llm: OpenAITestServer, uid: str) -> None:
    llm.script([EXTRACT, uid], {"memories": []}, times=1)
    llm.hang_next(1.5)
    async with ReMeClient(service.url, timeout=0.5, retries=3, backoff=0.01) as client:
        with pytest.raises(ServiceError) as caught:
            await client.summarize_memory([{"role": "user", "content": f"{uid} is slow"}], user_name=uid)
    assert "ReadTimeout" in str(caught.value) and caught.value.status_code is None
    await asyncio.sleep(1.5)
    assert sum(uid in prompt_of(body) and EXTRACT in prompt_of(body) for body in llm.chat_requests) == 1


@module_loop
async def test_client_retries_connection_errors_then_raises_a_service_error() -> None:
    async with ReMeClient("http://127.0.0.1:9", retries=2, backoff=0.01) as client:
        with pytest.raises(ServiceError) as caught:
            await client.get_memory(str(uuid.uuid4()))
    assert caught.value.status_code is None and "ConnectError" in str(caught.value)
    assert not isinstance(caught.value, (NotReadyError, ConflictError))


# -- any body: success or a typed 4xx, and the server stays up -----------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)
FIELDS = st.fixed_dictionaries({}, optional={
    "query": JSON | st.text(max_size=30), "user_name": JSON | st.text(min_size=1, max_size=10),
    "top_k": JSON | st.integers(-5, 500), "mode": JSON | st.sampled_from(["hybrid", "dense", "keyword", "x"]),
    "filters": JSON, "memory_type": JSON | st.sampled_from(["personal", "tool", "history"]),
    "content": JSON | st.text(max_size=30), "metadata": JSON})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/v1/memories/search", "/v1/memories", "/v1/memories/list", "/v1/memories/count",
                             "/v1/retrieve"]), body=FIELDS | JSON)
def test_any_json_body_is_answered_with_success_or_a_typed_4xx(service: Served, path: str, body: Any) -> None:
    r = httpx.post(f"{service.url}{path}", content=json.dumps(body), headers={"Content-Type": "application/json"})
    if r.status_code >= 400:
        assert 400 <= r.status_code < 500, r.text
        error = r.json()["error"]
        assert error["type"] in ("InvalidInputError", "InvalidFilterError") and error["message"]


@pytest.mark.parametrize("settings,message", [
    ({"host": "0.0.0.0"}, "refusing to serve on 0.0.0.0 without tokens"),
    ({"tokens": [{"name": "a", "secret": "short"}]}, "at least 16 characters"),
    ({"tokens": [{"name": "a", "secret": "x" * 16}, {"name": "a", "secret": "y" * 16}]}, "names must be unique"),
    ({"tokens": [{"name": "a", "secret": "x" * 16}, {"name": "b", "secret": "x" * 16}]}, "secrets must be unique"),
    ({"tokens": [{"name": "a", "secret": "x" * 16, "admin": True}]}, "admin"),
    ({"limits": {"timeout_s": 0}}, "timeout_s"),
])
def test_server_settings_are_checked_once_at_start_up(settings: dict[str, Any], message: str,
                                                      tmp_path: Path) -> None:
    from reme import ConfigError
    from reme.access import ServerConfig

    path = tmp_path / "server.json"
    path.write_text(json.dumps({"server": settings}))
    with pytest.raises(ConfigError, match=message):
        ServerConfig.load(path)


def test_server_settings_read_toml_with_a_server_section(tmp_path: Path) -> None:
    from reme.access import ServerConfig

    path = tmp_path / "server.toml"
    path.write_text('[server]\nport = 9000\n[[server.tokens]]\nname = "bot"\nsecret = "0123456789abcdef"\n'
                    'users = ["*"]\n[server.limits]\nmax_top_k = 7\n')
    config = ServerConfig.load(path, host="0.0.0.0")
    assert (config.host, config.port, config.limits.max_top_k) == ("0.0.0.0", 9000, 7)
    assert config.tokens[0].may_touch("user", "anyone") and not config.tokens[0].may_touch("task", "t")
    assert "0123456789abcdef" not in repr(config)


def test_the_service_and_client_variables_are_not_mistaken_for_engine_settings() -> None:
    from reme.config import ReMeConfig

    env = {"REME_URL": "http://127.0.0.1:1", "REME_TOKEN": "t" * 16, "REME_SERVER_CONFIG": "/nowhere.toml",
           "REME_EMBEDDING__BACKEND": "hash"}
    assert ReMeConfig.load(env=env).embedding.backend == "hash"


# -- the shape of paths and logs -------------------------------------------------------------------
def test_an_action_path_with_the_wrong_method_is_405_naming_the_right_one(service: Served) -> None:
    """`GET /v1/memories/search` is not a read of a memory called "search": every POST action
    under /v1/memories answers another method with 405 and `Allow: POST`."""
    paths = httpx.get(f"{service.url}/openapi.json").json()["paths"]
    actions = [p for p, ops in paths.items() if p.startswith("/v1/memories/") and "{" not in p]
    assert "/v1/memories/search" in actions and len(actions) >= 8
    for path in actions:
        for method in ("GET", "PATCH", "DELETE"):
            r = httpx.request(method, f"{service.url}{path}")
            assert r.status_code == 405 and r.headers["allow"] == "POST", (method, path, r.text)
            error = r.json()["error"]
            assert error["type"] == "InvalidInputError" and "POST" in error["message"] and path in error["message"]
    r = httpx.get(f"{service.url}/v1/memories/search/history")
    assert r.status_code == 404 and r.json()["error"]["type"] == "NotFoundError"


@pytest.mark.parametrize("method,path", [("GET", "/v1/memories/not-a-uuid"), ("DELETE", "/v1/memories/x"),
                                         ("PATCH", "/v1/memories/searching"),
                                         ("GET", "/v1/memories/not-a-uuid/history")])
def test_an_id_that_is_not_a_uuid_is_invalid_not_missing(service: Served, method: str, path: str) -> None:
    r = httpx.request(method, f"{service.url}{path}", json={"content": "x"} if method == "PATCH" else None)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["type"] == "InvalidInputError" and "not a memory id" in r.json()["error"]["message"]


def test_every_line_the_service_logs_is_json(tmp_path: Path) -> None:
    """From the first line to the last, whoever writes it: the start, each request, a library
    loading the local embedding model, uvicorn failing to bind, the exit."""
    served = Served(tmp_path / "wd", env={"REME_EMBEDDING__BACKEND": "local", "REME_EMBEDDING__DIMENSIONS": "384"})
    try:
        served.wait_ready(120)
        httpx.get(f"{served.url}/v1/memories/search")
    finally:
        assert served.stop() == 0, served.output()
    lines = served.output().splitlines()
    assert lines and all(isinstance(json.loads(line), dict) for line in lines), served.output()
    assert json.loads(lines[0])["event"] == "start"
    with socket.socket() as taken:  # the port is held: uvicorn's own error, then the exit
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = Served(tmp_path / "wd", args=["--port", str(taken.getsockname()[1])])
        assert busy.wait_exit(60) != 0
    lines = busy.output().splitlines()
    assert len(lines) >= 2 and all(isinstance(json.loads(line), dict) for line in lines), busy.output()
    assert "address already in use" in busy.output().lower()


@pytest.mark.parametrize("method,path", [("GET", "/v1/memories/{id}"), ("DELETE", "/v1/memories/{id}"),
                                         ("GET", "/v1/memories/{id}/history"), ("POST", "/v1/memories/import")])
def test_an_undeclared_query_parameter_is_refused_not_ignored(service: Served, method: str, path: str) -> None:
    """`?user=bob` is not `?user_name=bob`: ignored, it would make the call unscoped."""
    with ReMeClientSync(service.url) as client:
        node = client.add_memory(f"kept {uuid.uuid4()}", user_name="alice")
    r = httpx.request(method, f"{service.url}{path.format(id=node.memory_id)}", params={"user": "bob"}, content=b"")
    assert r.status_code == 422, r.text
    assert r.json()["error"]["type"] == "InvalidInputError" and "'user'" in r.json()["error"]["message"]
    with ReMeClientSync(service.url) as client:
        assert client.get_memory(node.memory_id, user_name="alice") == node
