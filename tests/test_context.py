"""Context management: the split, compaction against the scripted server, tool-result offloading
and its expiry, and `prepare_context` with its background summary into long-term memory."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reme import ReMe
from reme.errors import InvalidInputError, LLMError, MemoryNotFoundError
from reme.memory.context import check_context, tool_pairs
from reme.memory.session import COMPRESSED, SUMMARIZED
from reme.store.filters import Eq

from conftest import every_store
from openai_server import OpenAITestServer

SUMMARY = {"goal": "Plan a trip to Oslo", "constraints": ["budget 500 EUR"], "progress": ["weather checked: rain"],
           "decisions": ["go by train"], "next_steps": ["book the hotel"], "critical_context": ["hotel id H-42"]}
COMPACT_PROMPT = "You keep the working memory of an AI agent"


def turn(i: int, words: int = 50) -> dict[str, Any]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "word " * words}


def call(call_id: str, name: str = "search") -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}]}


def result(call_id: str | None, text: str = "found it") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "tool", "content": text}
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message


# -- the split ---------------------------------------------------------------------------------
@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Turns, tool calls (one or several ids, results with or without ids, in any order after
    the call, sometimes interleaved with text) and results without a call."""
    out: list[dict[str, Any]] = []
    n = 0
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["text", "text", "calls", "orphan", "legacy"]))
        size = draw(st.integers(0, 200))
        if kind == "text":
            out.append({"role": draw(st.sampled_from(["user", "assistant", "system"])), "content": "w " * size})
        elif kind == "orphan":
            out.append(result(draw(st.sampled_from([None, "nowhere"])), "r " * size))
        elif kind == "legacy":
            out.append({"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}})
            if draw(st.booleans()):
                out.append({"role": "function", "name": "f", "content": "v " * size})
        else:
            ids = [f"c{n + k}" for k in range(draw(st.integers(1, 3)))]
            n += len(ids)
            out.append({"role": "assistant", "content": "thinking " * size,
                        "tool_calls": [{"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}
                                       for i in ids]})
            answers = draw(st.permutations(ids))[:draw(st.integers(0, len(ids)))]
            for answer in answers:
                if draw(st.booleans()):
                    out.append({"role": "user", "content": "meanwhile " * draw(st.integers(0, 20))})
                out.append(result(answer if draw(st.booleans()) or len(ids) > 1 else None, "x " * size))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.integers(0, 3000), st.integers(0, 3000))
def test_the_split_keeps_everything_in_order_and_never_separates_a_call_from_its_result(
        messages: list[dict[str, Any]], a: int, b: int) -> None:
    threshold, reserve = max(a, b), min(a, b)
    split = check_context(messages, threshold, reserve)
    assert split.compact + split.keep == messages
    k = len(split.compact)
    for i, j in tool_pairs(messages):
        assert (i < k) == (j < k), (i, j, k)
    if split.tokens <= threshold:
        assert split.compact == []
    else:
        assert split.keep_tokens <= reserve


def test_pairs_follow_ids_then_position() -> None:
    messages = [call("a"), call("b"), result("a"), result("b"), call("c"), result(None), result("zzz")]
    assert sorted(tool_pairs(messages)) == [(0, 2), (1, 3), (4, 5), (4, 6)]
    blocks = [{"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "t", "input": {}}]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "ok"}]}]
    assert tool_pairs(blocks) == [(0, 1)]


def test_the_split_moves_past_a_tool_call_rather_than_cut_it() -> None:
    messages = [turn(0), turn(1), call("c1"), result("c1", "x " * 200), turn(2, 5)]
    split = check_context(messages, threshold=150, reserve=120)  # the result fits, not with its call
    assert split.keep == [turn(2, 5)]
    assert check_context(messages, threshold=10_000, reserve=100).compact == []
    with pytest.raises(InvalidInputError):
        check_context(messages, threshold=10, reserve=20)


# -- compaction --------------------------------------------------------------------------------
async def test_compact_context_summarizes_the_old_part_and_keeps_the_recent(llm_reme: ReMe,
                                                                            server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, SUMMARY)
    messages = [turn(i) for i in range(10)]
    out = await llm_reme.compact_context(messages, previous_summary="Earlier: the user wants to travel.",
                                         threshold=300, reserve=150)
    assert out.compacted == 8 and out.messages[1:] == messages[8:]
    assert out.structured is not None and out.structured.decisions == ["go by train"]
    assert "## Next steps\n- book the hotel" in out.summary and out.messages[0]["content"].endswith(out.summary)
    assert out.tokens_after < out.tokens_before and out.usage.calls == 1
    prompt = server.requests[-1]["body"]["messages"][0]["content"]
    assert "Earlier: the user wants to travel." in prompt and "turn 7 word" in prompt and "turn 8 word" not in prompt
    calls = len(server.requests)
    small = await llm_reme.compact_context(messages[:2], threshold=10_000, reserve=100)
    assert small.compacted == 0 and small.messages == messages[:2] and len(server.requests) == calls


async def test_a_long_history_is_compacted_in_chunks_each_building_on_the_last(
        make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    seen: list[str] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body["messages"][0]["content"])
        return {**SUMMARY, "progress": [f"chunk {len(seen)} done"]}

    server.script(COMPACT_PROMPT, reply)
    async with make_reme(llm={"base_url": server.base_url, "api_key": "k", "model": "m",
                              "max_prompt_chars": 20_000}) as reme:
        out = await reme.compact_context([turn(i, 400) for i in range(20)], threshold=1000, reserve=500)
    assert out.usage.calls == len(seen) >= 3
    assert all(len(p) <= 20_000 for p in seen)
    assert "chunk 1 done" in seen[1] and out.structured is not None and out.structured.progress == [
        f"chunk {len(seen)} done"]


async def test_a_summary_repeating_the_previous_one_is_completed_from_the_new_messages_alone(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b returned the previous summary unchanged, all six parts, for 48 and 51 new LoCoMo
    # turns (a museum trip, a wedding, a pride parade): none of them reached the summary
    previous = "## Goal\nPlan a trip to Oslo\n\n## Constraints\n- budget 500 EUR"
    prompts: list[str] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        prompts.append(body["messages"][0]["content"])
        if "Previous summary:\n(none)" in prompts[-1]:  # the new messages alone
            return {"goal": "Book the ferry", "constraints": ["budget 500 EUR", "no night ferry"],
                    "decisions": ["the 9:00 ferry to Kiel"]}
        return {"goal": "Plan a trip to Oslo", "constraints": ["budget 500 EUR"]}  # the previous one, copied

    server.script(COMPACT_PROMPT, reply)
    messages = [{"role": "user", "content": "No night ferry for me, I'll take the 9:00 ferry to Kiel."},
                {"role": "assistant", "content": "Noted: the 9:00 ferry to Kiel."}, *[turn(i) for i in range(6)]]
    out = await llm_reme.compact_context(messages, previous_summary=previous, threshold=300, reserve=150)

    assert out.usage.calls == 2 and "Previous summary:\n(none)" in prompts[1] and "Kiel" in prompts[1]
    assert out.structured is not None and out.structured.goal == "Plan a trip to Oslo"
    assert out.structured.constraints == ["budget 500 EUR", "no night ferry"]
    assert out.structured.decisions == ["the 9:00 ferry to Kiel"]


async def test_a_summary_repeating_the_previous_one_for_messages_that_say_nothing_new_is_kept(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    previous = "## Goal\nPlan a trip to Oslo\n\n## Constraints\n- budget 500 EUR"
    server.script(COMPACT_PROMPT, {"goal": "Plan a trip to Oslo", "constraints": ["budget 500 EUR"]})
    messages = [{"role": "user", "content": "Oslo trip, budget 500 EUR."} for _ in range(8)]
    out = await llm_reme.compact_context(messages, previous_summary=previous, threshold=40, reserve=20)

    assert out.compacted and out.usage.calls == 1 and out.summary == previous


async def test_an_invalid_summary_reply_is_an_llm_error_and_stores_nothing(llm_reme: ReMe,
                                                                          server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, "this is not json")
    await llm_reme.add_messages([turn(i) for i in range(10)], session_name="s1")
    before = await llm_reme.session_state(session_name="s1")
    with pytest.raises(LLMError):
        await llm_reme.prepare_context(session_name="s1", threshold=300, reserve=100)
    assert await llm_reme.session_state(session_name="s1") == before


# -- tool results ------------------------------------------------------------------------------
async def test_big_tool_results_are_offloaded_and_read_back(reme: ReMe) -> None:
    big = "".join(f"line {i}\n" for i in range(30_000))  # 228 kB: three stored parts
    messages = [call("c1"), result("c1", big), call("c2"), result("c2", "small")]
    out = await reme.compact_tool_results(messages, session_name="s1", max_chars=1000)
    assert [o.message_index for o in out.offloaded] == [1] and out.offloaded[0].chars == len(big)
    content = out.messages[1]["content"]
    assert out.offloaded[0].ref in content and "line 0\n" in content and len(content) < 1400
    assert out.messages[1]["tool_call_id"] == "c1" and out.messages[2:] == messages[2:]
    assert out.tokens_after < out.tokens_before / 50
    assert await reme.read_tool_result(out.offloaded[0].ref, session_name="s1") == big
    with pytest.raises(MemoryNotFoundError):  # another session cannot read it
        await reme.read_tool_result(out.offloaded[0].ref, session_name="s2")


async def test_offloaded_results_expire(reme: ReMe) -> None:
    out = await reme.compact_tool_results([result("c1", "z" * 5000)], session_name="s1", max_chars=100, ttl_s=0.5)
    ref = out.offloaded[0].ref
    assert await reme.read_tool_result(ref, session_name="s1") == "z" * 5000
    await asyncio.sleep(0.6)
    with pytest.raises(MemoryNotFoundError):
        await reme.read_tool_result(ref, session_name="s1")
    held = Eq(field="metadata.ref", value=ref)  # what the store holds, expired or not (no read returns it)
    assert await reme.count_memory(filters={"metadata.ref": ref}) == 0
    assert await reme.store.count(reme.collection, held) == 1
    await reme.prepare_context(session_name="s1")  # drops what expired
    assert await reme.store.count(reme.collection, held) == 0


# -- prepare_context ---------------------------------------------------------------------------
@every_store
async def test_prepare_context_offloads_compacts_marks_and_builds_on_the_summary(
        make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, SUMMARY)
    async with make_reme(context={"max_tool_chars": 2000, "preview_chars": 100}) as reme:
        await reme.add_messages([turn(i) for i in range(6)] + [call("c1"), result("c1", "r" * 50_000)],
                                session_name="s1")
        first = await reme.prepare_context(session_name="s1", threshold=400, reserve=120)
        assert len(first.offloaded) == 1 and first.compacted == 6 and first.usage.calls == 1
        assert first.messages[0]["content"].endswith(first.summary)
        assert [m["role"] for m in first.messages[1:]] == ["assistant", "tool"]
        assert first.tokens_before > 12_000 > 400 > first.tokens_after
        stored = await reme.get_messages(session_name="s1")
        assert [COMPRESSED in m.marks for m in stored] == [True] * 6 + [False] * 2
        assert first.offloaded[0].ref in stored[-1].message["content"]  # the session keeps the reference
        assert await reme.read_tool_result(first.offloaded[0].ref, session_name="s1") == "r" * 50_000

        # nothing new: nothing to do, and no LLM call
        again = await reme.prepare_context(session_name="s1", threshold=400, reserve=120)
        assert again.messages == first.messages and again.usage.calls == 0

        await reme.add_messages([turn(i) for i in range(6, 12)], session_name="s1")
        before = len(server.requests)
        second = await reme.prepare_context(session_name="s1", threshold=400, reserve=120)
        assert second.compacted > 0
        prompt = server.requests[before]["body"]["messages"][0]["content"]
        assert "book the hotel" in prompt  # the previous summary is built on
        kept = await reme.get_messages(session_name="s1", exclude_mark=COMPRESSED, prepend_summary=True)
        assert [m.message for m in kept] == second.messages


async def test_prepare_context_summarizes_what_it_compacted_into_long_term_memory(
        make_reme: Callable[..., ReMe], server: OpenAITestServer, caplog: pytest.LogCaptureFixture) -> None:
    server.script(COMPACT_PROMPT, SUMMARY)
    server.script("Read the conversation below", {"memories": [
        {"content": "Alice writes word after word in every turn", "kind": "plan", "sources": [0], "importance": 0.7}]},
        times=1, status=500)  # the first background summary fails for good (max_retries 0)
    server.script("Read the conversation below", {"memories": [
        {"content": "Alice writes word after word in every turn", "kind": "plan", "sources": [0], "importance": 0.7}]})
    async with make_reme(llm={"base_url": server.base_url, "api_key": "k", "model": "m", "max_retries": 0}) as reme:
        await reme.add_messages([turn(i) for i in range(10)], session_name="s1")
        with caplog.at_level(logging.ERROR, logger="reme"):
            await reme.prepare_context(session_name="s1", threshold=300, reserve=100, user_name="alice")
            assert await reme.wait_background() == 1
        assert "summarizing compacted session messages" in caplog.text
        assert isinstance(reme.background_errors[0], LLMError)
        assert await reme.count_memory(user_name="alice", memory_type="personal") == 0
        assert len(await reme.get_messages(session_name="s1", mark=COMPRESSED)) == 9

        # the next call tries again (nothing new to compact) and this time it lands
        await reme.prepare_context(session_name="s1", threshold=300, reserve=100, user_name="alice")
        assert await reme.wait_background() == 0
        memories = await reme.list_memory(user_name="alice", memory_type="personal")
        assert [n.content for n in memories] == ["Alice writes word after word in every turn"]
        nodes = await reme.list_memory(filters={"target_kind": "session", "tags": {"any": [COMPRESSED]}}, limit=100)
        assert nodes.nodes and all(n.metadata[SUMMARIZED] == "alice" for n in nodes)
        calls = len(server.requests)
        await reme.prepare_context(session_name="s1", threshold=300, reserve=100, user_name="alice")
        await reme.wait_background()
        assert len(server.requests) == calls  # summarized once


async def test_close_waits_for_background_work(make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, SUMMARY)
    server.script("Read the conversation below", {"memories": [
        {"content": "Alice writes word after word in every turn", "kind": "plan", "sources": [0], "importance": 0.7}]})
    reme = make_reme()
    async with reme:
        await reme.add_messages([turn(i) for i in range(10)], session_name="s1")
        await reme.prepare_context(session_name="s1", threshold=300, reserve=100, user_name="alice")
    async with make_reme() as again:
        assert await again.count_memory(user_name="alice", memory_type="personal") == 1


# -- long sessions: what prepare_context reads, what it offloads -----------------------------------
async def test_the_compacted_part_of_the_log_stays_out_whatever_else_changes(
        make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    """prepare_context starts where the compacted messages end; every call that changes what is
    compacted keeps `exclude_mark="compressed"` equal to filtering the whole log."""
    import random

    server.script(COMPACT_PROMPT, SUMMARY)
    rng = random.Random(3)
    async with make_reme() as reme:
        async def check() -> None:
            every = await reme.get_messages(session_name="s1")
            fresh = [m for m in every if COMPRESSED not in m.marks]
            assert await reme.get_messages(session_name="s1", exclude_mark=COMPRESSED) == fresh
            ready = await reme.prepare_context(session_name="s1", threshold=100_000, reserve=100)  # compacts nothing
            assert (ready.messages[-len(fresh):] if fresh else []) == [m.message for m in fresh]
            assert len(ready.messages) == len(fresh) + (1 if ready.summary else 0)

        for step in range(40):
            await reme.add_messages([turn(step, rng.randint(5, 60))], session_name="s1")
            every = await reme.get_messages(session_name="s1")
            action = rng.choice(["prepare", "prepare", "uncompress", "compress", "summary", "delete", "none"])
            if action == "prepare":
                await reme.prepare_context(session_name="s1", threshold=400, reserve=150)
            elif action == "uncompress" and any(COMPRESSED in m.marks for m in every):
                old = rng.choice([m for m in every if COMPRESSED in m.marks])
                await reme.update_marks(session_name="s1", ids=[old.id], remove=COMPRESSED)
            elif action == "compress":
                await reme.update_marks(session_name="s1", ids=[every[-1].id], add=COMPRESSED)
            elif action == "summary":
                await reme.update_compressed_summary(f"summary {step}", session_name="s1")
            elif action == "delete":
                await reme.delete_messages([rng.choice(every).id], session_name="s1")
            await check()


async def test_a_message_that_loses_its_compressed_mark_is_sent_again(
        make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, SUMMARY)
    async with make_reme() as reme:
        added = await reme.add_messages([turn(i) for i in range(10)], session_name="s1")
        first = await reme.prepare_context(session_name="s1", threshold=400, reserve=150)
        assert first.compacted > 1
        await reme.update_compressed_summary("a summary written by the framework", session_name="s1")
        again = await reme.prepare_context(session_name="s1", threshold=100_000, reserve=150)
        assert [m["content"] for m in again.messages[1:]] == [m["content"] for m in first.messages[1:]]
        await reme.update_marks(session_name="s1", ids=[added[0].id], remove=COMPRESSED)
        back = await reme.prepare_context(session_name="s1", threshold=100_000, reserve=150)
        assert back.messages[1]["content"] == turn(0)["content"]
        assert [m["content"] for m in back.messages[2:]] == [m["content"] for m in first.messages[1:]]


async def test_offloaded_results_carry_their_expiry_as_the_memorys_own(reme: ReMe) -> None:
    out = await reme.compact_tool_results([result("c1", "z" * 5000)], session_name="s1", max_chars=100, ttl_s=60)
    (record,) = (await reme.store.get(reme.collection, [out.offloaded[0].ref])).found
    assert record.node.expires_at == out.offloaded[0].expires_at
    assert "expires_at" not in record.node.metadata


async def test_tool_results_in_content_blocks_are_offloaded(make_reme: Callable[..., ReMe]) -> None:
    """AgentScope's tool_result blocks (`output`: text blocks or a string) and Anthropic's
    (`content`) inside a message's content list."""
    big, other = "x" * 5000, "y" * 3000
    use = {"role": "assistant", "name": "agent",
           "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}},
                       {"type": "tool_use", "id": "c2", "name": "cat", "input": {}}]}
    agentscope = {"role": "system", "name": "system", "content": [
        {"type": "tool_result", "id": "c1", "name": "ls", "output": [{"type": "text", "text": big}]},
        {"type": "tool_result", "id": "c2", "name": "cat", "output": other}]}
    anthropic = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c3", "content": big},
                                             {"type": "text", "text": "short note"}]}
    small = {"role": "system", "name": "system", "content": [
        {"type": "tool_result", "id": "c4", "name": "ls", "output": [{"type": "text", "text": "ok"}]}]}
    async with make_reme(llm={}, context={"max_tool_chars": 2000, "preview_chars": 50}) as reme:
        await reme.add_messages([use, agentscope, anthropic, small], session_name="s1")
        ready = await reme.prepare_context(session_name="s1")
        assert len(ready.offloaded) == 3
        stored = [m.message for m in await reme.get_messages(session_name="s1")]
        assert stored[0] == use and stored[3] == small
        blocks = stored[1]["content"] + stored[2]["content"]
        texts = [blocks[0]["output"][0]["text"], blocks[1]["output"], blocks[2]["content"]]
        assert all(t.startswith("[Tool result offloaded") for t in texts) and blocks[3]["text"] == "short note"
        assert [blocks[0]["id"], blocks[1]["name"], blocks[2]["tool_use_id"]] == ["c1", "cat", "c3"]
        assert ready.messages == stored
        whole = [await reme.read_tool_result(r.ref, session_name="s1") for r in ready.offloaded]
        assert whole == [big, other, big]
