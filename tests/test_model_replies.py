"""What a real model sends back, against the scripted loopback LLM: near-JSON is repaired, hostile
values (NaN, wrong types, 200k-character strings) are rejected or defaulted and counted on the
result with nothing half-written, and an optional LLM step of a retrieval that fails falls back
to plain retrieval and says so."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from reme import LLMError, ReMe
from reme.config import LLMConfig
from reme.llm import ChatModel, Fraction, parse_reply, repair_json, response_schema
from reme.schema import Rejection, Trajectory, Usage

from conftest import dump_store
from openai_server import Message, OpenAITestServer, prompt_of

EXTRACT = "Read the conversation below"
RECONCILE = "long-term memory consistent"
REWRITE = "You prepare a search"
SUCCESS, FAILURE, VALIDATE = "completed the task below successfully", "failed the task below", "Rate each candidate"
RERANK, ADVICE, GUIDE = "Which of these stored experiences", "Turn the relevant parts", "Write the usage guideline"

CHAT = [
    {"role": "user", "name": "Alice", "content": "I moved to Berlin last week!", "time": "2024-05-03T10:00:00Z"},
    {"role": "assistant", "content": "Congratulations!", "time": "2024-05-03T10:01:00Z"},
    {"role": "user", "name": "Alice", "content": "I always take the window seat.", "time": "2024-05-03T10:02:00Z"},
]
WINDOW = CHAT[2:]
"""A line the tests' memory holds all of (a name or number no memory holds is kept as said)."""


@pytest.fixture
def reme(llm_reme: ReMe) -> ReMe:
    return llm_reme


class Item(BaseModel):
    content: str
    importance: Fraction = 0.5


class Items(BaseModel):
    memories: list[Item]


def llm(server: OpenAITestServer, **kwargs: Any) -> ChatModel:
    return ChatModel(LLMConfig(base_url=server.base_url, api_key="k", model="m", **{"max_retries": 0, **kwargs}))


ASK = [{"role": "user", "content": "Remember things"}]


# -- near-JSON -----------------------------------------------------------------------------------
@pytest.mark.parametrize("reply", [
    '{"memories": [{"content": "a", "importance": 0.9},],}',  # trailing commas
    "{'memories': [{'content': 'a', 'importance': 0.9}]}",  # single quotes (a Python dict)
    '{memories: [{content: "a", importance: 0.9}]}',  # unquoted keys
    'Here you go:\n```json\n{"memories": [{"content": "a", "importance": 0.9}]}\n```\nHope it helps!',
    'Here you go:\n```json\n{"memories": [{"content": "a", "importance": 0.9}]}',  # a fence never closed
    'Sure. {"memories": [{"content": "a", "importance": 0.9}]} Let me know. {"other": 1}',  # prose and a 2nd object
    '{"memories": [{"content": "a", "importance": 0.9} {"content": "b", "importance": None}]}',  # no comma, None
])
async def test_near_json_replies_are_repaired_without_a_second_call(server: OpenAITestServer, reply: str) -> None:
    server.script("Remember", reply)
    usage = Usage()
    rejected: list[Rejection] = []
    got = await llm(server).structured(ASK, Items, usage=usage, rejected=rejected)
    assert got.memories[0] == Item(content="a", importance=0.9)
    assert all(m.importance == 0.5 for m in got.memories[1:])
    assert usage.calls == 1 and rejected == []


async def test_a_reply_cut_off_at_max_tokens_keeps_its_complete_items_and_says_so(server: OpenAITestServer) -> None:
    server.script("Remember", Message('{"memories": [{"content": "a", "importance": 0.9}, {"content": "b", "impo',
                                      finish_reason="length"))
    rejected: list[Rejection] = []
    got = await llm(server, max_tokens=20).structured(ASK, Items, rejected=rejected, step="personal/extract")
    assert got == Items(memories=[Item(content="a", importance=0.9)])
    (cut,) = rejected
    assert cut.step == "personal/extract" and cut.action == "dropped" and "max_tokens" in cut.reason
    assert server.chat_requests[0]["max_tokens"] == 20


async def test_invalid_items_are_dropped_and_invalid_defaults_reset_each_counted(server: OpenAITestServer) -> None:
    server.script("Remember", '{"memories": [{"content": "a", "importance": NaN}, {"importance": 0.3}, '
                              '{"content": ["not", "text"]}, {"content": "b", "importance": Infinity}, "junk", '
                              '{"content": "c", "importance": 0.7}]}')
    rejected: list[Rejection] = []
    got = await llm(server).structured(ASK, Items, rejected=rejected, step="s")
    assert got.memories == [Item(content="a"), Item(content="b"), Item(content="c", importance=0.7)]
    assert sorted((r.path, r.action) for r in rejected) == [
        ("memories[0].importance", "defaulted"), ("memories[1].content", "dropped"),
        ("memories[2].content", "dropped"), ("memories[3].importance", "defaulted"), ("memories[4]", "dropped")]
    assert len(server.chat_requests) == 1


def test_the_schema_sent_is_strict() -> None:
    schema = response_schema(Items)
    item = schema["$defs"]["Item"]
    assert item["required"] == ["content", "importance"] and item["additionalProperties"] is False
    assert "default" not in json.dumps(schema) and schema["required"] == ["memories"]


# What a reply may hold: no NUL and no lone surrogate (those make the whole reply invalid).
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
json_values = st.recursive(st.none() | st.booleans() | st.integers(-10 ** 12, 10 ** 12) | texts
                           | st.floats(allow_nan=False, allow_infinity=False),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_reply_parses_or_raises_value_error(text: str) -> None:
    try:
        parse_reply(text)
    except ValueError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(texts, json_values, max_size=5), st.sampled_from(["json", "python"]))
def test_json_and_python_dicts_read_back_as_they_were(value: dict[str, Any], form: str) -> None:
    text = json.dumps(value) if form == "json" else repr(value)
    got, cut = parse_reply(text)
    assert got == value and not cut


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["content", "kind"]), texts, min_size=1),
                min_size=1, max_size=5), st.data())
def test_a_reply_cut_anywhere_keeps_a_prefix_of_whole_items(items: list[dict[str, str]], data: st.DataObject) -> None:
    text = json.dumps({"memories": items})
    cut_at = data.draw(st.integers(1, len(text) - 1))
    try:
        got, _ = parse_reply(text[:cut_at], cut_off=True)
    except ValueError:
        return
    kept = got.get("memories", [])
    assert kept == items[:len(kept)]  # whole items only: one cut off is left out


def test_repair_reports_a_cut_and_only_a_reply_cut_off_is_closed() -> None:
    assert repair_json('{"a": [1, 2], "b": "x') == ('{"a":[1,2]}', True)
    assert repair_json("{'a': True}") == ('{"a":true}', False)
    assert parse_reply('{"a": [1, 2], "b": "x', cut_off=True) == ({"a": [1, 2]}, True)
    with pytest.raises(ValueError, match="ends before"):
        parse_reply('{"a": [1, 2], "b": "x')  # it stopped by itself: malformed, not cut


# -- hostile values through the pipelines --------------------------------------------------------
async def test_nan_importance_is_defaulted_and_counted(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, '{"memories": [{"content": "Alice moved to Berlin", "kind": "event", "time": null, '
                           '"sources": [0], "importance": NaN}]}')
    result = await reme.summarize_memory(CHAT, user_name="alice")
    (node,) = result.added
    assert node.score == 0.5 and math.isfinite(node.score)
    (rejection,) = result.rejected
    assert rejection.step == "personal/extract" and rejection.path == "memories[0].importance"
    assert rejection.action == "defaulted"


async def test_an_over_long_memory_is_dropped_and_counted(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "x" * 200_000, "sources": [0]},
                                         {"content": "Alice sits by the window", "sources": [0]}]})
    result = await reme.summarize_memory(WINDOW, user_name="alice")
    assert [n.content for n in result.added] == ["Alice sits by the window"]
    assert [(r.path, r.action) for r in result.rejected] == [("memories[0].content", "dropped")]


async def test_a_200k_update_text_is_rejected_counted_and_nothing_half_written(
        reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice lives in Berlin", "sources": [0]}]}, times=1)
    (stored,) = (await reme.summarize_memory([{"role": "user", "name": "Alice", "content": "I live in Berlin."}],
                                             user_name="alice")).added
    server.script(EXTRACT, {"memories": [{"content": "Alice lives in Munich now", "sources": [0]}]})
    server.script(RECONCILE, {"decisions": [{"candidate": 0, "action": "UPDATE", "id": 0, "text": "y" * 200_000}]})
    result = await reme.summarize_memory([{"role": "user", "name": "Alice", "content": "I moved to Munich."}],
                                         user_name="alice")
    # The update stands with the candidate's own text; the model's text is reported, not stored.
    (updated,) = result.updated
    assert updated.memory_id == stored.memory_id and updated.content == "Alice lives in Munich now"
    (rejection,) = result.rejected
    assert (rejection.step, rejection.path, rejection.action) == ("personal/reconcile", "decisions[0].text",
                                                                   "defaulted")
    assert all(len(n.content) < 1000 for n in await reme.list_memory(user_name="alice", memory_type="personal"))


async def test_decisions_naming_nothing_shown_are_counted(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice lives in Berlin", "sources": [0]}]}, times=1)
    await reme.summarize_memory(CHAT, user_name="alice")
    server.script(EXTRACT, {"memories": [{"content": "Alice likes the window seat", "sources": [2]}]})
    server.script(RECONCILE, {"decisions": [{"candidate": 7, "action": "ADD"},
                                            {"candidate": 0, "action": "DELETE", "id": 42},
                                            {"candidate": "zero", "action": "ADD"},
                                            {"candidate": 0, "action": "MERGE"}]})
    result = await reme.summarize_memory(CHAT[2:], user_name="alice")
    assert [n.content for n in result.added] == ["Alice likes the window seat"]  # undecided: added
    assert sorted(r.path for r in result.rejected) == ["decisions[0]", "decisions[1]", "decisions[2].candidate",
                                                       "decisions[3].action"]


async def test_a_failed_call_after_a_hostile_reply_still_writes_nothing(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice lives in Berlin", "sources": [0]}]}, times=1)
    await reme.summarize_memory(CHAT, user_name="alice")
    before = await dump_store(reme)
    server.script(EXTRACT, '{"memories": [{"content": "Alice likes the window seat", "importance": NaN}]}')
    server.script(RECONCILE, "no JSON at all")
    with pytest.raises(LLMError):
        await reme.summarize_memory(CHAT[2:], user_name="alice")
    assert await dump_store(reme) == before


def run(task: str, step: str, score: float) -> Trajectory:
    return Trajectory(messages=[{"role": "user", "content": task}, {"role": "assistant", "content": step}],
                      score=score)  # type: ignore[list-item]


async def test_nan_confidence_and_scores_in_task_memory_are_counted(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(SUCCESS, '{"memories": [{"when_to_use": "When rating songs", "content": "Log in first", '
                           '"confidence": NaN}, {"when_to_use": "w", "content": "' + "z" * 100_001 + '"}]}')
    server.script(VALIDATE, '{"results": [{"index": 0, "score": NaN}]}')
    result = await reme.summarize_memory(trajectories=[run("Rate songs", "login, rate", 1.0)], task_name="t")
    (lesson,) = result.added
    assert lesson.score == 0.5 and lesson.metadata["confidence"] == 0.5
    assert sorted((r.step, r.path, r.action) for r in result.rejected) == [
        ("procedural/success", "memories[0].confidence", "defaulted"),
        ("procedural/success", "memories[1].content", "dropped"),
        ("procedural/validate", "results[0].score", "dropped")]


async def test_an_over_long_guideline_writes_nothing(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(GUIDE, {"guideline": "g" * 200_000})
    before = await dump_store(reme)
    with pytest.raises(LLMError):
        await reme.summarize_memory(tool_calls=[{"tool_name": "search", "input": {"q": "x"}, "output": "ok"}])
    assert await dump_store(reme) == before


# -- retrieval falls back to plain search ------------------------------------------------------
async def test_rewrite_with_the_llm_unreachable_falls_back_to_plain_retrieval(
        reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice takes the window seat on trains", "sources": [0]}]})
    await reme.summarize_memory(WINDOW, user_name="alice")
    server.fail_next(503, times=10)
    ctx = await reme.retrieve_memory("window seat", user_name="alice")
    assert [m.node.content for m in ctx.memories] == ["Alice takes the window seat on trains"]
    assert ctx.queries == ["window seat"]
    (fallback,) = ctx.fallbacks
    assert fallback.step == "rewrite" and "503" in fallback.error and server.base_url in fallback.error


async def test_rewrite_that_returns_garbage_falls_back_too(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice takes the window seat on trains", "sources": [0]}]})
    await reme.summarize_memory(WINDOW, user_name="alice")
    server.script(REWRITE, "I cannot help with that.")
    ctx = await reme.retrieve_memory("window seat", user_name="alice")
    assert len(ctx.memories) == 1 and [f.step for f in ctx.fallbacks] == ["rewrite"]


async def test_a_rewrite_that_works_reports_no_fallback(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice takes the window seat on trains", "sources": [2]}]})
    await reme.summarize_memory(CHAT, user_name="alice")
    server.script(REWRITE, {"queries": ["train seat"], "start": None, "end": None})
    ctx = await reme.retrieve_memory("window seat", user_name="alice")
    assert ctx.queries == ["window seat", "train seat"] and ctx.fallbacks == []


async def stored_lessons(reme: ReMe) -> None:
    for when, what in [("When rating songs", "Use spotify.review_song"), ("When deleting playlists", "Log in first"),
                       ("When paying", "Use the default card")]:
        await reme.add_memory(what, task_name="t", when_to_use=when)


async def test_rerank_orders_and_filters_and_ignores_indexes_not_shown(reme: ReMe, server: OpenAITestServer) -> None:
    await stored_lessons(reme)
    plain = await reme.retrieve_memory("rating songs", task_name="t", rerank=False, rewrite=False)
    server.script(RERANK, '{"ranking": [2, 7, "x", 0, 2]}')
    ctx = await reme.retrieve_memory("rating songs", task_name="t", rerank=True, rewrite=False)
    order = [m.node.memory_id for m in plain.memories]
    assert [m.node.memory_id for m in ctx.memories] == [order[2], order[0]] and ctx.fallbacks == []


async def test_rerank_and_advice_failing_fall_back_to_the_search_order(reme: ReMe, server: OpenAITestServer) -> None:
    await stored_lessons(reme)
    plain = await reme.retrieve_memory("rating songs", task_name="t", rerank=False, rewrite=False)
    server.fail_next(500, times=20)
    ctx = await reme.retrieve_memory("rating songs", task_name="t", rerank=True, rewrite=True)
    assert [m.node.memory_id for m in ctx.memories] == [m.node.memory_id for m in plain.memories]
    assert ctx.text == plain.text and [f.step for f in ctx.fallbacks] == ["rerank", "rewrite"]


# -- any reply at all ----------------------------------------------------------------------------
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10 ** 30, 10 ** 30), st.none(),
                    st.booleans(), st.text(max_size=5))
contents = st.one_of(st.text(max_size=40), st.none(), st.integers(), st.just("x" * 100_001), st.lists(st.text(max_size=3)))
memory_items = st.fixed_dictionaries({"content": contents}, optional={
    "importance": numbers, "sources": st.one_of(st.lists(numbers, max_size=3), numbers),
    "kind": st.one_of(st.text(max_size=300), st.none(), st.integers()), "time": st.one_of(st.text(max_size=30), numbers)})
decision_items = st.fixed_dictionaries({"candidate": numbers, "action": st.sampled_from(["ADD", "UPDATE", "DELETE",
                                                                                       "NONE", "MERGE", "update"])},
                                       optional={"id": numbers, "text": contents})
replies = st.one_of(st.text(max_size=80), st.builds(lambda items: json.dumps({"memories": items}),
                                                    st.lists(memory_items, max_size=4)))


def test_any_reply_stores_only_valid_memories_or_fails_writing_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    from reme import ReMeError, ReMeSync
    from reme.schema import MAX_CONTENT_CHARS

    replies_now: dict[str, str] = {}
    with OpenAITestServer() as server:
        server.script(EXTRACT, lambda body: replies_now["extract"])
        server.script(RECONCILE, lambda body: replies_now["reconcile"])
        llm_config = {"base_url": server.base_url, "api_key": "k", "model": "m", "max_retries": 0}
        with ReMeSync(working_dir=tmp_path_factory.mktemp("wd"), embedding={"backend": "hash", "dimensions": 32},
                      llm=llm_config) as reme:
            reme.add_memory("Alice lives in Paris", user_name="alice")

            @settings(max_examples=60, deadline=None)
            @given(replies, st.lists(decision_items, max_size=4))
            def check(extract: str, decisions: list[dict[str, Any]]) -> None:
                replies_now.update(extract=extract, reconcile=json.dumps({"decisions": decisions}))
                before = sorted(n.model_dump_json() for n in reme.list_memory(user_name="alice", limit=1000))
                try:
                    result = reme.summarize_memory(CHAT, user_name="alice")
                except ReMeError:
                    after = sorted(n.model_dump_json() for n in reme.list_memory(user_name="alice", limit=1000))
                    assert after == before
                    return
                for node in result.added + result.updated:
                    assert node.scope == ("user", "alice") and 0 <= node.score <= 1
                    assert node.content.strip() and len(node.content) <= MAX_CONTENT_CHARS
                assert all(r.action in ("dropped", "defaulted") for r in result.rejected)

            check()


async def test_a_reply_budget_lowers_max_tokens_only_when_one_is_set(make_reme: Any, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice lives in Berlin", "sources": [0]}]}, times=2)
    server.script(EXTRACT, {"memories": [{"content": "Alice lives in Munich", "sources": [0]}]})
    server.script(RECONCILE, {"decisions": [{"candidate": 0, "action": "ADD"}]})
    llm_config = {"base_url": server.base_url, "api_key": "k", "model": "m", "max_retries": 0}
    async with make_reme(llm={**llm_config, "max_tokens": 5000}) as reme:
        await reme.summarize_memory(CHAT, user_name="alice")
        await reme.summarize_memory([{"role": "user", "name": "Alice", "content": "I live in Berlin."}],
                                    user_name="alice")
    (extract, _), (reconcile,) = [[r for r in server.chat_requests if step in prompt_of(r)]
                                  for step in (EXTRACT, RECONCILE)]
    assert extract["max_tokens"] == 96 + 160 * 2  # two lines worth reading
    assert reconcile["max_tokens"] == 64 + 160  # one candidate
    async with make_reme(llm=llm_config) as reme:
        await reme.retrieve_memory("where", user_name="bob")
    assert "max_tokens" not in server.chat_requests[-1]  # none set: none sent (some endpoints refuse it)


async def test_a_reply_cut_off_with_nothing_usable_is_asked_for_again_shorter(server: OpenAITestServer) -> None:
    class Guide(BaseModel):
        guideline: str

    server.script("Remember", Message('{"guideline": "Use it when you need it, and also when', finish_reason="length"),
                  times=1)
    server.script("Remember", {"guideline": "Use short queries."})
    assert await llm(server, max_tokens=10).structured(ASK, Guide) == Guide(guideline="Use short queries.")
    retry = server.chat_requests[1]["messages"][-1]["content"]
    assert "cut off" in retry and "shorter" in retry and "Field required" not in retry
