"""Session memory through the facade: order, marks, summary, size, state, isolation, durability."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

import pytest

from reme import ReMe, ReMeSync
from reme.errors import InvalidInputError, MemoryNotFoundError

from conftest import DIM, STORES, dump_store, on_every_store
from openai_server import OpenAITestServer, prompt_of

CALL = {"role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "Oslo: 4 degrees, rain"}

vector_store = pytest.fixture(params=STORES, name="vector_store")(on_every_store)
"""Every test on the embedded store, on a real Qdrant node and on a real 3-node cluster."""


def texts(messages: list[Any]) -> list[Any]:
    return [m.message.get("content") for m in messages]


async def test_messages_come_back_in_order_as_they_were_added(reme: ReMe) -> None:
    added = await reme.add_messages([{"role": "user", "content": "What is the weather in Oslo?"}, CALL, RESULT,
                                     {"role": "assistant", "content": "4 degrees and rain."}], session_name="s1")
    got = await reme.get_messages(session_name="s1")
    assert [m.id for m in got] == [m.id for m in added]
    assert got[1].message == CALL and got[2].message == RESULT
    assert texts(got) == ["What is the weather in Oslo?", None, "Oslo: 4 degrees, rain", "4 degrees and rain."]
    assert got[0].time < got[1].time < got[2].time < got[3].time


async def test_concurrent_adds_keep_one_stable_order(reme: ReMe, reme_factory: Callable[..., ReMe]) -> None:
    batches = [[{"role": "user", "content": f"batch {b} message {i}"} for i in range(5)] for b in range(12)]
    await asyncio.gather(*(reme.add_messages(batch, session_name="s1") for batch in batches))
    got = texts(await reme.get_messages(session_name="s1"))
    assert sorted(got) == sorted(m["content"] for batch in batches for m in batch)
    for batch in batches:  # each call's messages stay together, in their order
        start = got.index(batch[0]["content"])
        assert got[start:start + 5] == [m["content"] for m in batch]
    assert texts(await reme.get_messages(session_name="s1")) == got
    await reme.close()
    async with reme_factory() as again:  # and after reopening
        assert texts(await again.get_messages(session_name="s1")) == got


async def test_equal_messages_are_kept_twice(reme: ReMe) -> None:
    await reme.add_messages([{"role": "user", "content": "ok"}, {"role": "user", "content": "ok"}], session_name="s1")
    assert texts(await reme.get_messages(session_name="s1")) == ["ok", "ok"]


async def test_marks_filter_and_are_deleted_and_removed(reme: ReMe) -> None:
    a = await reme.add_messages([{"role": "user", "content": "hint one"}], session_name="s1", marks=["hint"])
    b = await reme.add_messages([{"role": "user", "content": "both"}], session_name="s1", marks=["hint", "todo"])
    await reme.add_messages([{"role": "user", "content": "plain"}], session_name="s1")
    assert texts(await reme.get_messages(session_name="s1", mark="hint")) == ["hint one", "both"]
    assert texts(await reme.get_messages(session_name="s1", mark=["todo"])) == ["both"]
    assert texts(await reme.get_messages(session_name="s1", exclude_mark="hint")) == ["plain"]
    assert texts(await reme.get_messages(session_name="s1", mark="hint", exclude_mark="todo")) == ["hint one"]

    assert await reme.update_marks(session_name="s1", ids=[a[0].id], remove="hint", add="seen") == 1
    assert [m.marks for m in await reme.get_messages(session_name="s1")] == [["seen"], ["hint", "todo"], []]
    assert await reme.update_marks(session_name="s1", remove=["todo"]) == 1  # every message
    assert await reme.delete_messages_by_mark("hint", session_name="s1") == 1
    assert texts(await reme.get_messages(session_name="s1")) == ["hint one", "plain"]
    assert await reme.delete_messages([a[0].id, b[0].id], session_name="s1") == 1  # b is gone already
    assert texts(await reme.get_messages(session_name="s1")) == ["plain"]


async def test_a_mark_replaced_by_itself_is_kept_as_in_agentscope(reme: ReMe) -> None:
    # AgentScope's InMemoryMemory.update_messages_mark(new_mark="x", old_mark="x") takes "x" off each
    # message carrying it and puts it back last, counting each: the adapter passes add="x", remove="x".
    await reme.add_messages([{"role": "user", "content": "one"}], session_name="s1", marks=["x", "turn-1"])
    await reme.add_messages([{"role": "user", "content": "two"}], session_name="s1", marks=["turn-1", "x"])
    await reme.add_messages([{"role": "user", "content": "three"}], session_name="s1", marks=["turn-1"])
    carrying = [m.id for m in await reme.get_messages(session_name="s1", mark="x")]
    assert await reme.update_marks(session_name="s1", ids=carrying, add="x", remove="x") == 2
    assert [m.marks for m in await reme.get_messages(session_name="s1")] == [["turn-1", "x"], ["turn-1", "x"],
                                                                             ["turn-1"]]
    assert texts(await reme.get_messages(session_name="s1", mark="x")) == ["one", "two"]
    assert await reme.update_marks(session_name="s1", add=["x", "y"], remove=["x", "turn-1"]) == 3  # all messages
    assert [m.marks for m in await reme.get_messages(session_name="s1")] == [["x", "y"], ["x", "y"], ["x", "y"]]


@pytest.mark.parametrize("message", [
    CALL, {"role": "assistant", "tool_calls": CALL["tool_calls"]}, {"role": "user", "name": "alice"},
    {"role": "assistant", "content": ""}, {"role": "assistant", "content": "  \n"},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
    {"role": "user", "content": [{"type": "text", "text": "look"}], "name": "alice", "id": "m-7"},
])
async def test_a_message_without_text_comes_back_as_it_was_added(reme: ReMe, message: dict[str, Any],
                                                                 reme_factory: Callable[..., ReMe]) -> None:
    (added,) = await reme.add_messages([message], session_name="s1")
    assert added.message == message
    assert [m.message for m in await reme.get_messages(session_name="s1")] == [message]
    state = await reme.session_state(session_name="s1")
    assert state["content"] == [[message, []]]
    await reme.load_session_state(state, session_name="s2")
    await reme.close()
    async with reme_factory() as again:
        assert [m.message for m in await again.get_messages(session_name="s2")] == [message]


async def test_the_summary_is_prepended_replaced_and_removed(reme: ReMe) -> None:
    await reme.add_messages([{"role": "user", "content": "hello"}], session_name="s1")
    assert texts(await reme.get_messages(session_name="s1", prepend_summary=True)) == ["hello"]
    await reme.update_compressed_summary("The user greeted.", session_name="s1")
    await reme.update_compressed_summary("The user greeted twice.", session_name="s1")
    got = await reme.get_messages(session_name="s1", prepend_summary=True)
    assert len(got) == 2 and got[0].message["content"].endswith("The user greeted twice.")
    assert (await reme.session_state(session_name="s1"))["_compressed_summary"] == "The user greeted twice."
    await reme.update_compressed_summary("", session_name="s1")
    assert texts(await reme.get_messages(session_name="s1", prepend_summary=True)) == ["hello"]


async def test_size_counts_messages_and_tokens_estimated_or_by_the_callers_tokenizer(reme: ReMe) -> None:
    await reme.add_messages([{"role": "user", "content": "a" * 400}, {"role": "user", "content": "你好世界"}],
                            session_name="s1")
    size = await reme.session_size(session_name="s1")
    assert size.messages == 2 and size.tokens == (4 + 100) + (4 + 4)
    words = await reme.session_size(session_name="s1", tokenizer=lambda text: text.split())
    assert words.tokens == (4 + 1) + (4 + 1)
    await reme.update_compressed_summary("one two three", session_name="s1")
    counted = await reme.session_size(session_name="s1", tokenizer=lambda text: len(text.split()))
    assert counted.messages == 2 and counted.summary_tokens == 3 and counted.tokens == 13
    with pytest.raises(InvalidInputError):
        await reme.session_size(session_name="s1", tokenizer=lambda text: True)


async def test_state_round_trips_into_another_session(reme: ReMe) -> None:
    await reme.add_messages([{"role": "user", "content": "hi"}, CALL, RESULT], session_name="s1", marks=["m"])
    await reme.update_compressed_summary("earlier: nothing", session_name="s1")
    state = await reme.session_state(session_name="s1")
    assert state["content"][1] == [CALL, ["m"]]
    assert await reme.load_session_state(state, session_name="s2") == 3
    assert await reme.session_state(session_name="s2") == state
    await reme.add_messages([{"role": "user", "content": "more"}], session_name="s2")
    assert await reme.load_session_state(state, session_name="s2") == 3  # replaces, does not append
    assert await reme.session_state(session_name="s2") == state


async def test_a_rejected_call_changes_nothing(reme: ReMe) -> None:
    await reme.add_messages([{"role": "user", "content": "kept"}], session_name="s1")
    before = await dump_store(reme)
    bad: list[Any] = [
        lambda: reme.add_messages([{"role": "user", "content": "fine"}, {"content": "no role"}], session_name="s1"),
        lambda: reme.add_messages([{"role": "user", "content": "x" * 100_001}], session_name="s1"),
        lambda: reme.add_messages("hello", session_name="s1"),
        lambda: reme.add_messages([{"role": "user", "content": "nul\x00"}], session_name="s1"),
        lambda: reme.add_messages([{"role": "user", "content": "a"}], session_name=""),
        lambda: reme.add_messages([{"role": "user", "content": "a"}], session_name="s1", marks=[""]),
        lambda: reme.load_session_state({"content": [[{"role": "user", "content": "a"}], "bad"]}, session_name="s1"),
        lambda: reme.load_session_state({"content": [[{"content": "no role"}, []]]}, session_name="s1"),
        lambda: reme.update_marks(session_name="s1"),
        lambda: reme.delete_messages_by_mark([], session_name="s1"),
    ]
    for call in bad:
        with pytest.raises(InvalidInputError):
            await call()
    assert await dump_store(reme) == before


async def test_sessions_are_walls(reme: ReMe) -> None:
    a = await reme.add_messages([{"role": "user", "content": "Alice's secret plan"}], session_name="a")
    await reme.add_messages([{"role": "user", "content": "Bob's message"}], session_name="b")
    await reme.add_memory("Alice likes tea", user_name="a")
    await reme.add_memory("Alice's diary: a secret plan", user_name="a", memory_type="history")
    assert texts(await reme.get_messages(session_name="b")) == ["Bob's message"]
    assert texts(await reme.get_messages(session_name="a")) == ["Alice's secret plan"]
    # another session cannot touch a's messages by id
    assert await reme.delete_messages([a[0].id], session_name="b") == 0
    assert await reme.update_marks(session_name="b", ids=[a[0].id], add="x") == 0
    assert (await reme.get_messages(session_name="a"))[0].marks == []
    # a user named like the session sees none of it, and the session sees none of the user's
    hits = await reme.search_memory("secret plan", user_name="a", memory_type="history", mode="keyword")
    assert [h.node.content for h in hits] == ["Alice's diary: a secret plan"]
    assert await reme.count_memory(user_name="a") == 2  # the tea and the diary, not the session's message
    assert await reme.clear_session(session_name="b") == 1
    assert texts(await reme.get_messages(session_name="a")) == ["Alice's secret plan"]
    assert await reme.count_memory(user_name="a", memory_type="history") == 1
    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(a[0].id, user_name="a")


async def test_clear_session_removes_messages_summary_and_offloaded_results(reme: ReMe) -> None:
    await reme.add_messages([{"role": "user", "content": "hi"}], session_name="s1")
    await reme.update_compressed_summary("s", session_name="s1")
    out = await reme.compact_tool_results([{"role": "tool", "content": "y" * 50}], session_name="s1", max_chars=10)
    assert await reme.clear_session(session_name="s1") == 3
    assert await reme.get_messages(session_name="s1", prepend_summary=True) == []
    with pytest.raises(MemoryNotFoundError):
        await reme.read_tool_result(out.offloaded[0].ref, session_name="s1")


async def test_summarize_memory_reads_a_session_by_name(make_reme: Callable[..., ReMe],
                                                        server: OpenAITestServer) -> None:
    server.script("Read the conversation below", {"memories": [
        {"content": "Alice is moving to Lisbon in May", "kind": "plan", "sources": [0], "importance": 0.8}]})
    async with make_reme() as reme:
        await reme.add_messages([{"role": "user", "name": "Alice", "content": "I'm moving to Lisbon in May!",
                                  "time": "2026-03-01T10:00:00Z"}, CALL, RESULT], session_name="chat")
        result = await reme.summarize_memory(session_name="chat", user_name="alice")
        assert [n.content for n in result.added] == ["Alice is moving to Lisbon in May 2026"]  # the May ahead
        (prompt,) = [prompt_of(r) for r in server.chat_requests if "Read the conversation below" in prompt_of(r)]
        assert "> [0]" in prompt and "I'm moving to Lisbon in May!" in prompt  # the line worth reading
        assert "Oslo: 4 degrees" in result.history[0].content  # the tool's result is in the conversation kept
        with pytest.raises(InvalidInputError):
            await reme.summarize_memory(session_name="empty", user_name="alice")


def test_the_sync_face_offers_the_session_api(tmp_path: Path) -> None:
    with ReMeSync(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": DIM}) as reme:
        reme.add_messages([{"role": "user", "content": "hi"}], session_name="s1", marks="m")
        assert [m.marks for m in reme.get_messages(session_name="s1")] == [["m"]]
        assert reme.session_size(session_name="s1").messages == 1
        assert reme.clear_session(session_name="s1") == 1


# -- reading the tail, after a known message, by the frameworks' ids ----------------------------
async def test_the_tail_and_what_follows_a_message_come_back_in_order(reme: ReMe) -> None:
    for start in range(0, 30, 10):
        await reme.add_messages([{"role": "user", "content": f"m{i}"} for i in range(start, start + 10)],
                                session_name="s1", marks=["even"] if start == 10 else None)
    await reme.add_messages([{"role": "user", "content": "elsewhere"}], session_name="s2")
    every = await reme.get_messages(session_name="s1")
    assert texts(every) == [f"m{i}" for i in range(30)]
    for k in (1, 5, 29, 30, 31):
        assert texts(await reme.get_messages(session_name="s1", last=k)) == texts(every)[-k:]
    for k in (0, 9, 28, 29):
        assert texts(await reme.get_messages(session_name="s1", after=every[k].id)) == texts(every)[k + 1:]
        assert texts(await reme.get_messages(session_name="s1", after=every[k].id, last=3)) == texts(every)[k + 1:][-3:]
    assert texts(await reme.get_messages(session_name="s1", mark="even", last=2)) == ["m18", "m19"]
    assert texts(await reme.get_messages(session_name="s1", exclude_mark="even", after=every[5].id, last=12)) == \
        ["m8", "m9"] + [f"m{i}" for i in range(20, 30)]
    await reme.update_compressed_summary("earlier", session_name="s1")
    with_summary = await reme.get_messages(session_name="s1", last=2, prepend_summary=True)
    assert texts(with_summary)[1:] == ["m28", "m29"] and "earlier" in with_summary[0].message["content"]
    other = (await reme.get_messages(session_name="s2"))[0].id
    for cursor in (other, "5f0c9c1e-0000-4000-8000-000000000000"):  # another session's message, or none
        with pytest.raises(MemoryNotFoundError):
            await reme.get_messages(session_name="s1", after=cursor)
    for bad in ({"last": 0}, {"last": "3"}, {"after": "not an id"}, {"message_ids": [""]}):
        with pytest.raises(InvalidInputError):
            await reme.get_messages(session_name="s1", **bad)


async def test_messages_are_found_by_the_id_their_framework_gave_them(reme: ReMe) -> None:
    first = await reme.add_messages([{"role": "user", "content": "hello", "id": "msg-1"},
                                     {"role": "assistant", "content": "hi", "id": "msg-2"}], session_name="s1")
    again = await reme.add_messages([{"role": "user", "content": "hello", "id": "msg-1"}], session_name="s1")
    await reme.add_messages([{"role": "user", "content": "bob's", "id": "msg-1"}], session_name="s2")
    assert len(await reme.get_messages(session_name="s1")) == 3  # a message added twice is there twice
    found = await reme.get_messages(session_name="s1", message_ids=["msg-1", "msg-2", "msg-3"])
    assert [m.id for m in found] == [first[0].id, first[1].id]  # the first of each, in order
    assert again[0].id != first[0].id
    assert texts(await reme.get_messages(session_name="s2", message_ids=["msg-1"])) == ["bob's"]
    assert await reme.get_messages(session_name="s1", message_ids=["msg-2"], exclude_mark="x") == found[1:]
    assert await reme.get_messages(session_name="s1", message_ids=["msg-2"], mark="x") == []
    await reme.load_session_state(await reme.session_state(session_name="s1"), session_name="s3")
    assert texts(await reme.get_messages(session_name="s3", message_ids=["msg-2", "msg-1"])) == ["hello", "hi"]
    await reme.delete_messages([first[0].id], session_name="s1")
    assert await reme.get_messages(session_name="s1", message_ids=["msg-1"]) == []


async def test_an_append_goes_after_the_newest_message_even_from_a_clock_behind(reme: ReMe) -> None:
    """Another process sharing the server, its clock ahead of this one's, wrote the newest message."""
    from datetime import timedelta

    from reme.memory.session import SessionLog, session_scope
    from reme.schema import utcnow
    from reme.store import Upsert, VectorRecord

    await reme.add_messages([{"role": "user", "content": "first"}], session_name="s1")
    log = SessionLog(reme.repo)
    ahead = log.message_node(session_scope("s1"), {"role": "user", "content": "from a clock ahead"}, [],
                             utcnow() + timedelta(hours=1))
    await reme.store.write([Upsert(reme.collection, [VectorRecord(node=ahead, vector=await log.placeholder())])])
    await reme.add_messages([{"role": "user", "content": "next"}], session_name="s1")
    assert texts(await reme.get_messages(session_name="s1")) == ["first", "from a clock ahead", "next"]
