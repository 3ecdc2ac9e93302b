"""Every read agrees on what is alive: a memory past its `expires_at` (or ttl) is never returned,
exported, written to Markdown, counted, matched as a duplicate or shown to the model, whichever
path asks. One world, every read path as a case; only `forget`, `prune`, `delete_all` and
`backup` see expired memories, on purpose (they delete them, or copy the store as it is)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from reme import ReMe
from reme.errors import MemoryNotFoundError
from reme.schema import utcnow

from openai_server import OpenAITestServer

GONE = {"user": "Alice lives in Lisbon", "task": "Restart the worker before a batch",
        "tool": "Pass the city name in Portuguese"}
"""Each target's expired memory (added last, so it is the newest)."""
HERE = {"user": "Alice prefers window seats", "task": "Check the API quota before a batch",
        "tool": "Pass the city name in English"}


@dataclass
class World:
    reme: ReMe
    server: OpenAITestServer
    tmp: Path
    gone: dict[str, str]  # kind -> the expired memory's id
    here: dict[str, str]


@pytest.fixture
async def world(llm_reme: ReMe, server: OpenAITestServer, tmp_path: Path) -> World:
    reme = llm_reme
    targets = {"user": {"user_name": "alice"}, "task": {"task_name": "t"}, "tool": {"tool_name": "weather"}}
    here, gone = {}, {}
    for kind, target in targets.items():
        tags = ["guideline"] if kind == "tool" else None
        here[kind] = (await reme.add_memory(HERE[kind], when_to_use=HERE[kind], tags=tags, **target)).memory_id
        gone[kind] = (await reme.add_memory(GONE[kind], when_to_use=GONE[kind], tags=tags, ttl=0.2,
                                            **target)).memory_id
    await asyncio.sleep(0.3)
    return World(reme, server, tmp_path, gone, here)


def texts(nodes: Any) -> set[str]:
    return {getattr(n, "node", n).content for n in nodes}


async def by_id(call: Callable[[str], Awaitable[Any]], w: World) -> set[str]:
    """The texts of the memories a by-id call finds: an expired one is not found."""
    seen: set[str] = set()
    for ids, text in ((w.here, HERE), (w.gone, GONE)):
        for kind, memory_id in ids.items():
            try:
                await call(memory_id)
            except MemoryNotFoundError:
                continue
            seen.add(text[kind])
    return seen


async def markdown_export(w: World) -> set[str]:
    written = ""
    for kind, target in (("user", {"user_name": "alice"}), ("task", {"task_name": "t"}),
                         ("tool", {"tool_name": "weather"})):
        root = w.tmp / f"md-{kind}"
        await w.reme.export_markdown(root, **target)  # type: ignore[arg-type]
        written += "".join(p.read_text() for p in root.rglob("*.md"))
    return {t for t in [*HERE.values(), *GONE.values()] if t in written}


async def markdown_sync(w: World) -> set[str]:
    """A new line with an expired memory's text is a new memory, not one already held."""
    root = w.tmp / "md"
    await w.reme.export_markdown(root, user_name="alice")
    path = root / "MEMORY.md"
    path.write_text(path.read_text() + f"- {GONE['user']}\n")
    result = await w.reme.sync_markdown(root, user_name="alice")
    assert [n.content for n in result.added] == [GONE["user"]] and result.unchanged == 1
    return {HERE["user"]}


async def export_jsonl(w: World) -> set[str]:
    path = w.tmp / "out.jsonl"
    await w.reme.export_memory(path, user_name="alice")
    await w.reme.export_memory(w.tmp / "t.jsonl", task_name="t")
    await w.reme.export_memory(w.tmp / "w.jsonl", tool_name="weather")
    lines = [json.loads(line) for name in ("out", "t", "w") for line in (w.tmp / f"{name}.jsonl").read_text().splitlines()]
    return {line["content"] for line in lines}


async def searches(w: World) -> set[str]:
    seen: set[str] = set()
    for mode in ("dense", "keyword", "hybrid"):
        for target in ({"user_name": "alice"}, {"task_name": "t"}, {"tool_name": "weather"}):
            for query in list(HERE.values()) + list(GONE.values()):
                seen |= texts(await w.reme.search_memory(query, mode=mode, top_k=10, **target))  # type: ignore[arg-type]
    return seen


async def listing(w: World) -> set[str]:
    seen: set[str] = set()
    for target in ({"user_name": "alice"}, {"task_name": "t"}, {"tool_name": "weather"}, {}):
        seen |= texts(await w.reme.list_memory(limit=100, **target))  # type: ignore[arg-type]
    assert await w.reme.count_memory(user_name="alice") == 1 and await w.reme.count_memory(task_name="t") == 1
    return seen


async def retrieval(w: World) -> set[str]:
    seen = texts((await w.reme.retrieve_memory("Where does Alice live, and her seats?", user_name="alice",
                                               rewrite=False)).memories)
    seen |= texts((await w.reme.retrieve_memory("Restart the worker, quota", task_name="t", rerank=False,
                                                rewrite=False)).memories)
    tool = await w.reme.retrieve_memory(tool_name="weather")
    assert GONE["tool"] not in tool.text
    return seen | texts(tool.memories)


async def adding_again(w: World) -> set[str]:
    """Adding an expired memory's text stores a new memory: the expired one is no duplicate."""
    again = await w.reme.add_memory(GONE["user"], user_name="alice")
    assert again.memory_id != w.gone["user"] and again.expires_at is None
    assert await w.reme.count_memory(user_name="alice") == 2
    return {HERE["user"]}


async def summarizing(w: World) -> set[str]:
    """The summarizer neither matches an expired memory as the same text nor shows it for reconciling."""
    w.server.script("Read the conversation below", {"memories": [
        {"content": GONE["user"], "kind": "fact", "sources": [0], "importance": 0.6}]})
    stored: list[str] = []  # the "Stored memories:" part of each reconcile prompt

    def reconcile(body: dict[str, Any]) -> dict[str, Any]:
        stored.append(body["messages"][0]["content"].split("Stored memories:")[1].split("Candidates:")[0])
        return {"decisions": []}

    w.server.script("long-term memory consistent", reconcile)
    result = await w.reme.summarize_memory([{"role": "user", "content": "I live in Lisbon."}], user_name="alice")
    assert [n.content for n in result.added] == [GONE["user"]]
    assert all(GONE["user"] not in part for part in stored)
    return {HERE["user"]}


async def history(w: World) -> set[str]:
    return await by_id(lambda i: w.reme.history(i), w)


async def tool_result(w: World) -> set[str]:
    out = await w.reme.compact_tool_results([{"role": "tool", "content": "z" * 500}], session_name="s1",
                                            max_chars=100, ttl_s=0.2)
    await asyncio.sleep(0.3)
    with pytest.raises(MemoryNotFoundError):
        await w.reme.read_tool_result(out.offloaded[0].ref, session_name="s1")
    return {HERE["user"]}


READS: dict[str, Callable[[World], Awaitable[set[str]]]] = {
    "get_memory": lambda w: by_id(lambda i: w.reme.get_memory(i), w),
    "update_memory": lambda w: by_id(lambda i: w.reme.update_memory(i, score=0.9), w),
    "record_usage": lambda w: by_id(lambda i: w.reme.record_usage([i], success=True), w),
    "delete_memory": lambda w: by_id(lambda i: w.reme.delete_memory(i), w),
    "history": history,
    "search_memory": searches,
    "list_and_count": listing,
    "retrieve_memory": retrieval,
    "export_memory": export_jsonl,
    "export_markdown": markdown_export,
    "sync_markdown": markdown_sync,
    "add_memory": adding_again,
    "summarize_memory": summarizing,
    "read_tool_result": tool_result,
}


@pytest.mark.parametrize("read", sorted(READS))
async def test_no_read_returns_an_expired_memory(world: World, read: str) -> None:
    seen = await READS[read](world)
    assert seen and not seen & set(GONE.values()), seen


async def test_the_writes_meant_for_expired_memories_still_see_them(world: World) -> None:
    reme = world.reme
    assert len(await reme.prune(user_name="alice")) == 1  # deletes what expired ...
    assert [v.node.content for v in await reme.history(world.gone["user"])] == [GONE["user"]]  # ... keeping its state
    assert await reme.forget(task_name="t") == 2  # expired ones included
    assert await reme.backup(world.tmp / "b.jsonl") > 0
    assert GONE["tool"] in (world.tmp / "b.jsonl").read_text()  # a backup copies the store as it is
    assert utcnow() - timedelta(seconds=60) < (await reme.get_memory(world.here["tool"])).time_created
