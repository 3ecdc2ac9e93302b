"""A scope is a wall on every path: every public facade method, called for one target, against a
store that also holds a user, a task and a tool of the same name (with history, versions and
references across them), reads and changes nothing outside that target. On the embedded store,
a real Qdrant node and a real 3-node cluster alike."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from reme import InvalidInputError, MemoryNotFoundError, ReMe
from reme.schema import MemoryNode, MemoryVersion, Scope

from conftest import STORES, dump_store, on_every_store
from openai_server import OpenAITestServer, prompt_of

NAME = "bob"
KINDS = ("user", "task", "tool")
SAME_TEXT = "bob keeps the same note everywhere"
SAME_HISTORY = "the same conversation with bob"

vector_store = pytest.fixture(params=STORES, name="vector_store")(on_every_store)


def secret(kind: str) -> str:
    return f"{kind}-secret-marker"


def outside(snapshot: dict[str, dict[str, str]], scope: Scope) -> dict[str, dict[str, str]]:
    return {name: {i: js for i, js in records.items()
                   if (json.loads(js)["node"]["target_kind"], json.loads(js)["node"]["memory_target"]) != tuple(scope)}
            for name, records in snapshot.items()}


async def seed(reme: ReMe, scope: Scope) -> dict[str, list[MemoryNode]]:
    """For each kind: a main-type memory (with a version) and a history memory, with texts
    marked by kind; the kinds other than `scope`'s also hold texts identical across kinds."""
    seeded: dict[str, list[MemoryNode]] = {}
    for kind in KINDS:
        kw: dict[str, Any] = {f"{kind}_name": NAME}
        main = await reme.add_memory(f"bob likes tea {secret(kind)}", tags=["shared"], **kw)
        await reme.update_memory(main.memory_id, content=f"bob likes green tea {secret(kind)}", **kw)
        history = await reme.add_memory(f"[2024-05-03 10:00] bob: I like tea {secret(kind)}",
                                        memory_type="history", **kw)
        expired = await reme.add_memory(f"bob's old note {secret(kind)}", expires_at=datetime(2020, 1, 1), **kw)
        seeded[kind] = [main, history, expired]
        if kind != scope.kind:
            seeded[kind].append(await reme.add_memory(SAME_TEXT, **kw))
            seeded[kind].append(await reme.add_memory(SAME_HISTORY, memory_type="history", **kw))
            await reme.record_usage([main.memory_id], True, **kw)
    # A memory of the scope citing another kind's history (a reference across the wall).
    other = next(k for k in KINDS if k != scope.kind)
    seeded[scope.kind].append(await reme.add_memory(
        "bob drinks tea every morning", ref_ids=[seeded[other][1].memory_id], metadata={"source_turns": [0]},
        **{f"{scope.kind}_name": NAME}))
    return seeded


def script(server: OpenAITestServer) -> None:
    server.script("Read the conversation below", {"memories": [
        {"content": "bob likes tea", "kind": "fact", "sources": [0], "importance": 0.5, "time": None}]})
    server.script("long-term memory consistent", {"decisions": [{"candidate": 0, "action": "ADD"}]})
    server.script("completed the task below successfully", {"memories": [
        {"when_to_use": "When bob wants tea", "content": "Brew green tea", "confidence": 0.9}]})
    server.script("Rate each candidate lesson", {"results": [{"index": 0, "score": 0.9}]})
    server.script("Write the usage guideline", {"guideline": "Call bob with a tea order"})


async def exercise(reme: ReMe, scope: Scope, others: list[MemoryNode], tmp_path: Path) -> None:
    """Every public method, under `scope`."""
    kw: dict[str, Any] = {f"{scope.kind}_name": scope.name}
    other_ids = [n.memory_id for n in others]

    def inside(nodes: list[MemoryNode]) -> None:
        assert all(scope.holds(n) for n in nodes), [n.scope for n in nodes if not scope.holds(n)]

    # writes that could land on another kind's memory
    same = await reme.add_memory(SAME_TEXT, **kw)
    same_history = await reme.add_memory(SAME_HISTORY, memory_type="history", **kw)
    inside([same, same_history])
    assert {same.memory_id, same_history.memory_id}.isdisjoint(other_ids)  # deduplication stays inside
    for other in others:
        forged = other.model_copy(update={"target_kind": scope.kind, "memory_target": scope.name,
                                          "memory_type": scope.all_types[0] if other.memory_type.value != "history"
                                          else other.memory_type, "content": "hijacked"})
        with pytest.raises(InvalidInputError):
            await reme.add_memories([forged])
        path = tmp_path / "forged.jsonl"
        path.write_text(forged.model_dump_json() + "\n")
        with pytest.raises(InvalidInputError):
            await reme.import_memory(path)
        path.write_text(other.model_dump_json() + "\n")
        with pytest.raises(InvalidInputError):
            await reme.import_memory(path, **kw)
    # by-id calls: another target's id is not found
    for memory_id in other_ids:
        for call in (reme.get_memory(memory_id, **kw), reme.update_memory(memory_id, content="hijacked", **kw),
                     reme.delete_memory(memory_id, **kw), reme.history(memory_id, **kw),
                     reme.record_usage([memory_id], False, **kw)):
            with pytest.raises(MemoryNotFoundError):
                await call
    # reads
    for mtype in (None, *scope.all_types):
        page = await reme.list_memory(memory_type=mtype, limit=1000, **kw)
        inside(page.nodes)
        assert await reme.count_memory(memory_type=mtype, **kw) == len(page)
        for mode in ("hybrid", "dense", "keyword"):
            hits = await reme.search_memory("bob tea note conversation", memory_type=mtype, mode=mode, top_k=50, **kw)
            inside([h.node for h in hits])
    widened = await reme.list_memory(filters={"$or": [{"target_kind": k} for k in KINDS]}, limit=1000, **kw)
    inside(widened.nodes)
    exported = tmp_path / "mine.jsonl"
    n = await reme.export_memory(exported, **kw)
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    histories = [MemoryVersion.model_validate(v).node for row in rows for v in row.pop("history", [])]
    inside([MemoryNode.model_validate(row) for row in rows] + histories)  # the versions an export carries too
    assert histories
    assert n == await reme.count_memory(**kw)
    own = (await reme.list_memory(memory_type=scope.all_types[0], sort_key="version", limit=1, **kw)).nodes[0]
    assert own.version == 2 and len(await reme.history(own.memory_id, **kw)) == 1  # inside the scope: found
    (counted,) = await reme.record_usage([own.memory_id], True, **kw)
    assert counted.metadata["freq"] == 1
    # Markdown: the scope's tree holds only its memories; edited to reach others' ids, it writes none of them
    tree = tmp_path / "md"
    done = await reme.export_markdown(tree, **kw)
    files = "".join((tree / f).read_text(encoding="utf-8") for f in done.files)
    assert not any(secret(k) in files for k in KINDS if k != scope.kind)
    root = tree / done.files[0]
    text = root.read_text(encoding="utf-8")
    first_id = text.split('"id": "', 1)[1].split('"', 1)[0]
    text = text.replace(first_id, other_ids[0]).replace("\n- ", "\n- hijacked ", 1)  # its item comes first
    root.write_text(text + "- bob writes a note in Markdown\n", encoding="utf-8")
    synced = await reme.sync_markdown(tree, force=True, **kw)
    assert [c.memory_id for c in synced.conflicts] == [other_ids[0]]
    assert [n.content for n in synced.added] == ["bob writes a note in Markdown"] and not synced.updated
    inside(synced.added)
    # pipelines
    if scope.kind == "user":
        result = await reme.summarize_memory([{"role": "user", "content": "I like tea"}], user_name=NAME)
        ctx = await reme.retrieve_memory("tea", user_name=NAME, with_source=True, rewrite=False, top_k=50)
        inside([m.node for m in ctx.memories])
        sources = "\n".join(m.source or "" for m in ctx.memories)
        assert "secret-marker" not in sources.replace(secret("user"), "")
    elif scope.kind == "task":
        run = {"messages": [{"role": "user", "content": "make tea"}], "score": 1.0}
        result = await reme.summarize_memory(trajectories=[run], task_name=NAME)
        ctx = await reme.retrieve_memory("tea", task_name=NAME, top_k=50)
        inside([m.node for m in ctx.memories])
        inside(await reme.prune(NAME, min_freq=1, min_utility_ratio=1.0))
    else:
        call = {"tool_name": NAME, "input": {"order": "tea"}, "output": "ok", "success": True}
        result = await reme.summarize_memory(tool_calls=[call], tool_name=NAME)
        ctx = await reme.retrieve_memory(tool_name=NAME)
        inside([m.node for m in ctx.memories])
    inside(result.added + result.updated + result.deleted + result.history)
    # time and forgetting: reads counted, expired memories swept, memories forgotten
    reme.config.retrieval.track_reads = True
    await reme.search_memory("bob tea note", top_k=50, **kw)
    await reme.flush_reads()
    reme.config.retrieval.track_reads = False
    pruned = await reme.prune(**kw)
    inside(pruned)
    assert scope.kind == "task" or [n.content for n in pruned] == [f"bob's old note {secret(scope.kind)}"]
    assert await reme.forget(filters={"tags": {"any": ["shared"]}}, **kw) == 1
    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(own.memory_id, **kw)
    assert await reme.delete_all(**kw) > 0
    await reme.add_memory("bob's last note", **kw)
    assert await reme.forget(purge=True, scrub=True, **kw) == 1  # rewrites the store: others' records intact


# On the cluster one kind: the others take the same paths there, and each costs 10-20 s (CI's budget).
@pytest.mark.parametrize("vector_store,kind", [(store, kind) for store in ("edge", "server") for kind in KINDS] +
                         [("cluster", "user")], indirect=["vector_store"])
async def test_no_method_under_a_scope_touches_a_same_named_target_of_another_kind(
        make_reme: Any, server: OpenAITestServer, tmp_path: Path, kind: str) -> None:
    scope = Scope(kind, NAME)
    script(server)
    async with make_reme() as reme:
        seeded = await seed(reme, scope)
        before = outside(await dump_store(reme), scope)
        others = [n for k, nodes in seeded.items() if k != kind for n in nodes]
        await exercise(reme, scope, others, tmp_path)
        assert outside(await dump_store(reme), scope) == before
    for request in server.chat_requests:  # no prompt showed another kind's memories
        prompt = prompt_of(request)
        assert not any(secret(k) in prompt for k in KINDS if k != kind)


async def test_history_is_walled_by_kind(reme: ReMe) -> None:
    user = await reme.add_memory("a conversation", user_name="bob", memory_type="history")
    task = await reme.add_memory("a conversation", task_name="bob", memory_type="history")
    assert user.memory_id != task.memory_id and (user.target_kind, task.target_kind) == ("user", "task")
    assert [n.memory_id for n in await reme.list_memory(task_name="bob", memory_type="history")] == [task.memory_id]
    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(user.memory_id, task_name="bob")
    assert await reme.delete_all(task_name="bob") == 1
    assert (await reme.get_memory(user.memory_id, user_name="bob")).content == "a conversation"


async def test_an_add_never_replaces_a_stored_memory(reme: ReMe) -> None:
    alice = await reme.add_memory("Alice prefers window seats", user_name="alice")
    forged = alice.model_copy(update={"memory_target": "mallory", "content": "hijacked"})
    with pytest.raises(InvalidInputError, match="taken"):
        await reme.add_memories([forged, MemoryNode(memory_type="personal", memory_target="mallory", content="x")])
    assert await reme.get_memory(alice.memory_id) == alice
    assert await reme.count_memory(user_name="mallory") == 0  # the batch wrote nothing


async def test_import_replaces_in_its_own_scope_with_a_version_and_refuses_another(reme: ReMe, tmp_path: Path) -> None:
    node = await reme.add_memory("Alice lives in Paris", user_name="alice")
    path = tmp_path / "restore.jsonl"
    path.write_text(node.model_copy(update={"content": "Alice lives in Berlin"}).model_dump_json() + "\n")
    assert await reme.import_memory(path, user_name="alice") == 1
    assert (await reme.get_memory(node.memory_id)).content == "Alice lives in Berlin"
    assert [v.node.content for v in await reme.history(node.memory_id)] == ["Alice lives in Paris"]
    assert await reme.import_memory(path) == 0  # unchanged: skipped
    path.write_text(node.model_copy(update={"memory_target": "mallory"}).model_dump_json() + "\n")
    with pytest.raises(InvalidInputError, match="another target"):
        await reme.import_memory(path)
    with pytest.raises(InvalidInputError, match="outside"):
        await reme.import_memory(path, user_name="alice")


async def test_a_pool_imported_for_two_tasks_gets_new_ids_for_the_second(reme: ReMe, tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    line = {"memory_id": "11111111-1111-4111-8111-111111111111", "when_to_use": "When rating songs",
            "content": "Log in first", "memory_type": "procedural"}
    pool.write_text(json.dumps(line) + "\n")
    assert await reme.import_memory(pool, format="reme-jsonl", task_name="a") == 1
    assert await reme.import_memory(pool, format="reme-jsonl", task_name="b") == 1
    assert await reme.import_memory(pool, format="reme-jsonl", task_name="b") == 0
    (b,) = await reme.list_memory(task_name="b")
    assert b.memory_id != line["memory_id"] and b.metadata["original_memory_id"] == line["memory_id"]
    assert (await reme.get_memory(line["memory_id"], task_name="a")).content == "Log in first"


async def test_several_users_are_searched_and_retrieved_as_one_ranked_list(reme: ReMe) -> None:
    alice_history = await reme.add_memory("[2024-05-03 10:00] Alice: I moved to Berlin", user_name="alice",
                                          memory_type="history")
    alice = await reme.add_memory("Alice moved to Berlin", user_name="alice", ref_ids=[alice_history.memory_id])
    bob = await reme.add_memory("Bob moved to Berlin too", user_name="bob", ref_ids=[alice_history.memory_id])
    await reme.add_memory("Carol moved to Berlin as well", user_name="carol")
    ctx = await reme.retrieve_memory("who moved to Berlin", user_name=["alice", "bob"], with_source=True, top_k=10)
    assert {m.node.memory_id for m in ctx.memories} == {alice.memory_id, bob.memory_id}
    assert [m.rank for m in ctx.memories] == [1, 2]
    sources = {m.node.memory_target: m.source for m in ctx.memories}
    assert sources == {"alice": alice_history.content, "bob": None}  # bob's reference crosses a wall
    hits = await reme.search_memory("Berlin", user_name=["alice", "bob"], top_k=10)
    assert {h.node.memory_target for h in hits} == {"alice", "bob"}
    assert await reme.count_memory(user_name=["alice", "carol"]) == 3
    for bad in ([], [""], "  "):
        with pytest.raises(InvalidInputError):
            await reme.retrieve_memory("Berlin", user_name=bad)
