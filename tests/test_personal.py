"""The personal summarizer and retriever through the facade, against a scripted loopback LLM."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import example, given, settings, strategies as st

from reme import ConfigError, InvalidInputError, LLMError, MemoryNode, MemoryNotFoundError, MemoryType, ReMe, ReMeSync
from reme.embedding import HashEmbedder
from reme.memory.personal import (_stem, claimed_by_another, led_in, conditions_named, declined, fine_though_unsaid,
                                  taken_though_stopped, unlisted,
                                  worth_reading,
                                  _KIN_OF, OVERLAP, WINDOW, Transcript, ending, misnamed, named_subject, not_a_memory,
                                  said_whole, health_left_behind, health_word, medicine_word, said_by_another,
                                  self_compared, unheld_answers, unheld_avoided, unheld_dates, unheld_health, unheld_names, restricted,
                                  revalued, subject_named, unheld_content, unheld_relations, with_the_time_said,
                                  asks_whom_to_call, named_thing, anothers_diagnosis)
from reme.memory.wording import anchor_times, anchor_weekdays, name_the_speaker
from reme.errors import LLMOutputError
from reme.retrieval import cosine
from reme.temporal import find_window, with_digits
from reme.schema import Message, TimeWindow, utcnow

from conftest import DIM, dump_store, every_store, shared_data
from openai_server import OpenAITestServer, prompt_of

EXTRACT = "Read the conversation below"
RECONCILE = "long-term memory consistent"
REWRITE = "You prepare a search"
T0 = datetime(2024, 5, 3, 10, 0, tzinfo=timezone.utc)


def memories(*items: dict[str, Any]) -> dict[str, Any]:
    return {"memories": [{"kind": "fact", "sources": [0], "importance": 0.5, "time": None, **i} for i in items]}


def decisions(*items: dict[str, Any]) -> dict[str, Any]:
    return {"decisions": list(items)}


@pytest.fixture
def reme(llm_reme: ReMe) -> ReMe:
    return llm_reme


CHAT = [
    {"role": "user", "name": "Alice", "content": "I moved to Berlin last week!", "time": "2024-05-03T10:00:00Z"},
    {"role": "assistant", "content": "Congratulations! How do you like it?", "time": "2024-05-03T10:01:00Z"},
    {"role": "user", "name": "Alice", "content": "Love it. I always take the window seat on the train there.",
     "time": "2024-05-03T10:02:00Z"},
]


def told(*lines: str) -> list[dict[str, Any]]:
    """A conversation in which Alice says `lines`, one message each (a memory needs words someone said)."""
    return [{"role": "user", "name": "Alice", "content": line, "time": "2024-05-03T10:00:00Z"} for line in lines]


def served_vectors(make_reme: Callable[..., ReMe], server: OpenAITestServer,
                   vectors: Callable[[list[str]], list[list[float]]] | None = None) -> ReMe:
    """A ReMe embedding through the scripted server (`vectors`, when given, are the vectors it answers with)."""
    if vectors is not None:
        server.vectors = vectors
    return make_reme(embedding={"backend": "openai", "base_url": server.base_url, "api_key": "k", "model": "e"})


async def snapshot(reme: ReMe) -> list[str]:
    page = await reme.list_memory(limit=1000)
    return sorted(n.model_dump_json() for n in page)


async def test_summary_extracts_and_stores_memories_citing_the_conversation(
        reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories(
        {"content": "Alice moved to Berlin on 26 April 2024", "kind": "event", "time": "2024-04-26", "sources": [0],
         "importance": 0.9},
        {"content": "Alice prefers the window seat on trains", "kind": "preference", "time": "2024-05-03",
         "sources": [2]}))
    result = await reme.summarize_memory(CHAT, user_name="alice")

    assert [n.content for n in result.added] == ["Alice moved to Berlin on 26 April 2024",
                                                 "Alice prefers the window seat on trains"]
    assert result.updated == [] and result.deleted == []
    (history,) = result.history
    assert history.memory_type.value == "history" and history.memory_target == "alice"
    assert history.content.splitlines()[0] == "[2024-05-03 10:00] Alice: I moved to Berlin last week!"
    moved, seat = result.added
    assert moved.ref_ids == [history.memory_id] and moved.tags == ["event"] and moved.score == 0.9
    assert moved.message_time == datetime(2024, 5, 3, 10, 0, tzinfo=timezone.utc)  # when it was said
    assert (moved.event_start, moved.event_end) == (datetime(2024, 4, 26, tzinfo=timezone.utc),  # when it happened
                                                    datetime(2024, 4, 26, 23, 59, 59, 999999, tzinfo=timezone.utc))
    assert seat.message_time == datetime(2024, 5, 3, 10, 2, tzinfo=timezone.utc)
    assert seat.metadata["source_turns"] == [2]
    assert result.usage.calls == 1  # nothing stored yet: no reconcile call
    assert result.usage.total_tokens > 0
    assert await reme.count_memory(user_name="alice", memory_type="personal") == 2
    assert await reme.count_memory(user_name="alice", memory_type="history") == 1
    prompt = prompt_of(server.chat_requests[0])
    assert "[0] [2024-05-03 10:00] Alice: I moved to Berlin last week!" in prompt
    assert "[1] [2024-05-03 10:01] assistant: Congratulations!" in prompt


async def test_nothing_to_remember_costs_no_call_and_keeps_the_history(
        reme: ReMe, server: OpenAITestServer) -> None:
    result = await reme.summarize_memory([{"role": "user", "content": "hi"}], user_name="alice")
    assert result.added == [] and len(result.history) == 1 and result.usage.calls == 0 and not server.requests

    server.script(EXTRACT, {"memories": []})  # a line worth reading that the model finds nothing in: one call
    result = await reme.summarize_memory([{"role": "user", "content": "My flat is tiny and cold."}], user_name="alice")
    assert result.added == [] and result.usage.calls == 1


async def test_contradiction_updates_in_place_and_keeps_the_old_version(
        reme: ReMe, server: OpenAITestServer) -> None:
    paris = await reme.add_memory("Alice lives in Paris", user_name="alice")
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin", "time": "2024-04-26"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0,
                                        "text": "Alice lives in Berlin (moved from Paris on 26 April 2024)",
                                        "reason": "moved"}))
    result = await reme.summarize_memory(CHAT[:1], user_name="alice")

    (updated,) = result.updated
    assert result.added == [] and updated.memory_id == paris.memory_id and updated.version == 2
    stored = await reme.get_memory(paris.memory_id, user_name="alice")
    assert stored.content == "Alice lives in Berlin (moved from Paris on 26 April 2024)"
    assert stored.ref_ids == [result.history[0].memory_id]
    (old,) = await reme.history(paris.memory_id)
    assert old.event == "UPDATE" and old.reason == "moved"
    assert old.node.content == "Alice lives in Paris" and old.node.version == 1
    reconcile_prompt = prompt_of(server.chat_requests[1])
    assert "0. [" in reconcile_prompt and "Alice lives in Paris" in reconcile_prompt
    assert paris.memory_id not in reconcile_prompt  # the model sees short ids only
    assert result.usage.calls == 2


async def test_an_update_whose_text_echoes_the_prompt_keeps_the_candidates_text(
        reme: ReMe, server: OpenAITestServer) -> None:
    # Qwen2.5-Coder-1.5B wrote the prompt's own words as the merged text (LoCoMo, conv-26)
    paris = await reme.add_memory("Alice lives in Paris", user_name="alice")
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0, "text": "stored memory's id"}))
    result = await reme.summarize_memory(CHAT[:1], user_name="alice")
    (updated,) = result.updated
    assert updated.memory_id == paris.memory_id
    assert updated.content == "Alice moved to Berlin last week (22-28 April 2024)"
    (note,) = result.rejected
    assert note.action == "defaulted" and note.path == "decisions[0].text" and "stored memory's id" in note.reason


async def test_an_add_of_what_is_stored_already_writes_nothing(reme: ReMe, server: OpenAITestServer) -> None:
    seat = await reme.add_memory("Alice prefers window seats", user_name="alice")
    bike = await reme.add_memory("Alice rides a red bike", user_name="alice")
    server.script(EXTRACT, memories({"content": "alice prefers  window seats"}, {"content": "Alice likes tea"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"},  # the small model's ADD of a stored memory
                                       {"candidate": 1, "action": "UPDATE", "id": 1,
                                        "text": "alice prefers window seats"}))  # one memory made another's twin
    before = await dump_store(reme)
    result = await reme.summarize_memory(told("I prefer window seats. I like tea."), user_name="alice")
    # the twin is not made; what the candidate says is news, so it goes beside (fresh6: a new dose
    # was lost so, UPDATEd into one memory with another's text)
    assert [n.content for n in result.added] == ["Alice likes tea"] and result.updated == result.deleted == []
    assert [r.action for r in result.rejected] == ["dropped", "defaulted"]
    after = await dump_store(reme)
    assert {k: v for k, v in after["memories"].items() if k in (seat.memory_id, bike.memory_id)} == {
        k: v for k, v in before["memories"].items() if k in (seat.memory_id, bike.memory_id)}
    assert await reme.count_memory(user_name="alice", memory_type="personal") == 3


async def test_a_memory_the_model_repeats_is_written_once(reme: ReMe, server: OpenAITestServer) -> None:
    # a small model looping: the same sentence with a word added, again and again
    said = "Alice and Bob talked about the plans for the new pottery studio near the old harbour in town"
    server.script(EXTRACT, memories({"content": said}, {"content": said + " again"},
                                    {"content": said + " one more time"},
                                    {"content": said + " in April", "time": "2024-04-01"},  # another time: kept
                                    {"content": "Alice bought a blue kiln"}))
    result = await reme.summarize_memory(told(said.replace("Alice and Bob", "Bob and I"), "I bought a blue kiln."),
                                         user_name="alice")
    assert [n.content for n in result.added] == [said, said + " in April 2024", "Alice bought a blue kiln"]
    assert [r.action for r in result.rejected] == ["dropped", "dropped"]
    assert all("repeats" in r.reason for r in result.rejected)
    assert await reme.count_memory(user_name="alice", memory_type="personal") == 3


async def test_memories_that_differ_in_a_word_are_both_kept_however_alike_their_vectors(
        reme: ReMe, server: OpenAITestServer, embedder: HashEmbedder) -> None:
    # MiniLM puts "Melanie has two kids" and "Melanie has three kids" at cosine 0.976: a vector
    # alone cannot tell a repeat from another fact; a repeat says nothing the first did not.
    said = "Alice and Bob talked about the plans for the new pottery studio near the old harbour in town"
    other = said.replace("Bob", "Carol")
    first, second = await embedder.embed([said, other])
    assert cosine(first, second) >= 0.95
    server.script(EXTRACT, memories({"content": said}, {"content": other, "sources": [1]}))
    result = await reme.summarize_memory(told(said, other), user_name="alice")
    assert [n.content for n in result.added] == [said, other] and result.rejected == []


async def test_delete_removes_the_contradicted_memory_into_history(reme: ReMe, server: OpenAITestServer) -> None:
    veg = await reme.add_memory("Alice is vegetarian", user_name="alice")
    server.script(EXTRACT, memories({"content": "Alice eats meat again since April 2024"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "DELETE", "id": 0, "reason": "no longer true"},
                                       {"candidate": 0, "action": "ADD"}))
    result = await reme.summarize_memory(told("I eat meat again since April."), user_name="alice")

    assert [n.memory_id for n in result.deleted] == [veg.memory_id]
    assert [n.content for n in result.added] == ["Alice eats meat again since April 2024"]
    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(veg.memory_id)
    (gone,) = await reme.history(veg.memory_id)
    assert gone.event == "DELETE" and gone.node == veg
    # a reason is read when sent, not asked for: neither the prompt nor the reply schema has one (qwen1.5b filled it
    # with boilerplate, "The stored memory is outdated ...", and long replies were cut off at the token cap)
    assert gone.reason == "no longer true"
    ask = next(body for body in server.chat_requests if RECONCILE in prompt_of(body))
    decision = ask["response_format"]["json_schema"]["schema"]["$defs"]["Decision"]
    assert set(decision["properties"]) == {"candidate", "action", "id", "text"}
    assert '"reason"' not in prompt_of(ask)


async def test_none_leaves_memories_as_they_are(reme: ReMe, server: OpenAITestServer) -> None:
    seat = await reme.add_memory("Alice prefers window seats", user_name="alice")
    server.script(EXTRACT, memories({"content": "Alice likes sitting by the window"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "NONE"}))
    before = await reme.count_memory(user_name="alice", memory_type="personal")
    # (a line with news code would keep as said is added whatever the reconcile says: fresh35)
    result = await reme.summarize_memory([{"role": "user", "name": "Alice", "content": "I like sitting by the window."}],
                                         user_name="alice")
    assert result.added == result.updated == result.deleted == []
    assert await reme.count_memory(user_name="alice", memory_type="personal") == before
    assert (await reme.get_memory(seat.memory_id)).version == 1


async def test_hallucinated_ids_touch_nothing(reme: ReMe, server: OpenAITestServer,
                                             caplog: pytest.LogCaptureFixture) -> None:
    kept = await reme.add_memory("Alice lives in Paris", user_name="alice")
    server.script(EXTRACT, memories({"content": "Alice has a cat named Mochi"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 7, "text": "overwritten"},
                                       {"candidate": 0, "action": "DELETE", "id": -1},
                                       {"candidate": 5, "action": "ADD"}))
    result = await reme.summarize_memory(told("I have a cat named Mochi."), user_name="alice")

    assert await reme.get_memory(kept.memory_id) == kept
    assert await reme.history(kept.memory_id) == []
    assert [n.content for n in result.added] == ["Alice has a cat named Mochi"]  # no valid decision: kept
    assert "not one of the 1 shown" in caplog.text


async def test_a_candidate_whose_decision_is_not_followed_is_added_not_lost(
        reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b gave six candidates of one long session an UPDATE of memory 0, which the first
    # had already changed: the other five (Philomena the sister among them) were stored nowhere.
    home = await reme.add_memory("Alice lives in Paris", user_name="alice")
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin", "sources": [0]},
                                    {"content": "Alice has a cat named Mochi", "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0, "text": "Alice lives in Berlin"},
                                       {"candidate": 1, "action": "UPDATE", "id": 0, "text": "Alice has a cat"}))
    result = await reme.summarize_memory(told("I moved to Berlin.", "I have a cat named Mochi."), user_name="alice")

    assert [n.content for n in result.updated] == ["Alice lives in Berlin"]
    assert [n.content for n in result.added] == ["Alice has a cat named Mochi"]
    assert (await reme.get_memory(home.memory_id)).content == "Alice lives in Berlin"
    assert any("already changed" in r.reason and r.action == "defaulted" for r in result.rejected)


@pytest.mark.parametrize("second", ["ADD", "UPDATE"])
async def test_a_candidate_is_stored_once_whatever_its_decisions(
        reme: ReMe, server: OpenAITestServer, second: str) -> None:
    # qwen1.5b, fresh11: "Lamotrigine took its place: 200 mg a day, ..." UPDATEd one memory and was
    # added beside another's UPDATE that was not followed: the same memory stored twice. A second
    # UPDATE with the same text left the other memory as it was.
    home = await reme.add_memory("Alice lives in Paris", user_name="alice")
    pet = await reme.add_memory("Alice has a dog called Rex", user_name="alice")
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin", "sources": [0]}))
    server.script(RECONCILE, decisions(
        {"candidate": 0, "action": "UPDATE", "id": 0, "text": "Alice moved to Berlin"},
        {"candidate": 0, "action": second, **({"id": 1, "text": "Alice moved to Berlin"} if second == "UPDATE" else {})}))
    result = await reme.summarize_memory(told("I moved to Berlin."), user_name="alice")

    stored = [n.content for n in await reme.list_memory(user_name="alice", memory_type="personal")]
    assert sorted(stored) == ["Alice has a dog called Rex", "Alice moved to Berlin"]
    assert [n.memory_id for n in result.updated] == [home.memory_id] and result.added == []
    assert (await reme.get_memory(pet.memory_id)).content == "Alice has a dog called Rex"
    assert any("once" in r.reason and r.action == "dropped" for r in result.rejected)


async def test_a_delete_keeps_what_its_candidate_says(reme: ReMe, server: OpenAITestServer) -> None:
    # The candidate that makes a memory obsolete is news itself: a DELETE without an ADD of it
    # (qwen1.5b's usual answer) must not lose "not vegetarian any more".
    veg = await reme.add_memory("Alice is vegetarian", user_name="alice")
    server.script(EXTRACT, memories({"content": "Alice is not vegetarian any more"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "DELETE", "id": 0, "reason": "no longer true"}))
    result = await reme.summarize_memory(told("I'm not vegetarian any more."), user_name="alice")

    assert [n.memory_id for n in result.deleted] == [veg.memory_id]
    assert [n.content for n in result.added] == ["Alice is not vegetarian any more"]
    assert [n.content for n in await reme.list_memory(user_name="alice", memory_type="personal")] == \
        ["Alice is not vegetarian any more"]
    assert any(r.path == "candidates[0]" and "DELETE" in r.reason for r in result.rejected)


async def test_retries_inside_a_summary_are_invisible(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin"}))
    server.fail_next(429, retry_after="0")
    server.fail_next(502)
    result = await reme.summarize_memory(CHAT[:1], user_name="alice")
    assert len(result.added) == 1 and result.usage.calls == 1
    assert len(server.chat_requests) == 3


@pytest.mark.parametrize("failure", ["http", "malformed"])
async def test_a_failed_llm_call_writes_nothing(reme: ReMe, server: OpenAITestServer, failure: str) -> None:
    await reme.add_memory("Alice lives in Paris", user_name="alice")
    before = await snapshot(reme)
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin"}))
    expected: type[Exception] = LLMError
    if failure == "http":  # extraction answers; every attempt of the reconcile call gets a 500
        server.script(RECONCILE, status=500)
    else:  # no list of decisions, twice (one bad decision in a list is dropped: test_model_replies.py)
        server.script(RECONCILE, '{"decisions": "MERGE them all"}')
        expected = LLMOutputError
    with pytest.raises(expected):
        await reme.summarize_memory(CHAT, user_name="alice")
    assert await snapshot(reme) == before


async def test_two_users_are_summarized_concurrently_and_stay_apart(
        reme: ReMe, server: OpenAITestServer) -> None:
    def per_user(body: dict[str, Any]) -> dict[str, Any]:
        user = re.search(r"long-term memory about (\w+)", prompt_of(body)).group(1)  # type: ignore[union-attr]
        return memories({"content": f"{user} plays chess on Sundays"}, {"content": f"{user} owns a red bike"})

    server.script(EXTRACT, per_user)
    server.hang_next(0.3, times=2)  # both extractions in flight at once
    chat = [{"role": "user", "name": "alice", "content": "Bob and I play chess on Sundays"},
            {"role": "user", "name": "bob", "content": "We both ride red bikes"}]
    result = await reme.summarize_memory(chat, user_name=["alice", "bob"])

    assert server.max_in_flight == 2
    assert len(result.history) == 2 and len(result.added) == 4
    for user in ("alice", "bob"):
        mine = await reme.list_memory(user_name=user, memory_type="personal")
        assert sorted(n.content for n in mine) == [f"{user} owns a red bike", f"{user} plays chess on Sundays"]
    # and two separate calls for different users at the same time
    await asyncio.gather(reme.summarize_memory(chat[:1], user_name="carol"),
                         reme.summarize_memory(chat[1:], user_name="dave"))
    assert {n.memory_target for n in await reme.list_memory(memory_type="personal", limit=100)} == {
        "alice", "bob", "carol", "dave"}


async def test_summarizing_the_same_conversation_twice_stores_it_once(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "NONE"}))
    first = await reme.summarize_memory(CHAT, user_name="alice")
    second = await reme.summarize_memory(CHAT, user_name="alice")
    assert second.history[0].memory_id == first.history[0].memory_id
    assert await reme.count_memory(user_name="alice", memory_type="history") == 1
    assert await reme.count_memory(user_name="alice", memory_type="personal") == 1


async def test_bad_messages_are_rejected_before_any_call(reme: ReMe, server: OpenAITestServer) -> None:
    for bad in ([], "hello", [{"role": "user"}], [{"role": "user", "content": "   "}]):
        with pytest.raises(InvalidInputError):
            await reme.summarize_memory(bad, user_name="alice")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        await reme.summarize_memory(CHAT, user_name=[])
    assert server.requests == [] and await reme.count_memory() == 0


async def test_message_models_and_content_parts_are_accepted(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": []})
    msgs = [Message(role="user", name="Alice", content="I like tea", time=datetime(2024, 1, 2, 9, 30)),
            {"role": "user", "content": [{"type": "text", "text": "and scones"}, {"type": "image_url"}]}]
    result = await reme.summarize_memory(msgs, user_name="alice")
    assert result.history[0].content == "[2024-01-02 09:30] Alice: I like tea\n[2024-01-02 09:30] user: and scones"


async def test_summary_without_an_llm_names_the_setting(make_reme: Callable[..., ReMe]) -> None:
    async with make_reme(llm={}) as reme:
        with pytest.raises(ConfigError, match="llm.model"):
            await reme.summarize_memory(CHAT, user_name="alice")


# -- retrieval -----------------------------------------------------------------------------------
FACTS = [
    ("Alice drinks oat-milk flat whites", datetime(2024, 4, 10, tzinfo=timezone.utc)),
    ("Alice booked a trip to Lisbon", datetime(2024, 5, 12, tzinfo=timezone.utc)),
    ("Alice prefers window seats on planes", datetime(2024, 6, 1, tzinfo=timezone.utc)),
    ("Alice's sister Clara lives in Rome", datetime(2024, 3, 5, tzinfo=timezone.utc)),
    ("Alice runs a half marathon every spring", datetime(2024, 2, 1, tzinfo=timezone.utc)),
]


async def add_facts(reme: ReMe) -> None:
    for text, when in FACTS:
        await reme.add_memory(text, user_name="alice", message_time=when)
    await reme.add_memory("Bob prefers aisle seats on planes", user_name="bob")


async def test_retrieval_without_llm_searches_the_query_as_is(make_reme: Callable[..., ReMe]) -> None:
    async with make_reme(llm={}) as reme:
        await add_facts(reme)
        ctx = await reme.retrieve_memory("Which seats does Alice prefer on planes?", user_name="alice", top_k=3)
    assert ctx.memories[0].node.content == "Alice prefers window seats on planes"
    assert ctx.queries == ["Which seats does Alice prefer on planes?"] and ctx.usage.calls == 0
    assert all(m.node.memory_target == "alice" for m in ctx.memories)
    assert [m.rank for m in ctx.memories] == [1, 2, 3]
    assert ctx.memories[0].score >= ctx.memories[1].score >= ctx.memories[2].score
    assert ctx.text.splitlines()[0] == "[2024-06-01 00:00] Alice prefers window seats on planes"
    assert len(ctx.text.splitlines()) == 3


async def test_rewritten_queries_find_what_the_question_does_not_say(reme: ReMe, server: OpenAITestServer) -> None:
    await add_facts(reme)
    server.script(REWRITE, {"queries": ["Alice coffee order oat-milk flat white"], "start": None, "end": None})
    ctx = await reme.retrieve_memory("What should I get her at the café?", user_name="alice", top_k=1)
    assert ctx.queries == ["What should I get her at the café?", "Alice coffee order oat-milk flat white"]
    assert ctx.memories[0].node.content == "Alice drinks oat-milk flat whites"
    assert ctx.usage.calls == 1
    assert "Today is" in prompt_of(server.chat_requests[0])
    plain = await reme.retrieve_memory("What should I get her at the café?", user_name="alice", rewrite=False)
    assert plain.queries == ["What should I get her at the café?"] and len(server.chat_requests) == 1


async def test_the_rewrite_reply_schema_bounds_the_queries_a_model_may_write(
        reme: ReMe, server: OpenAITestServer) -> None:
    # Qwen 1.5B wrote "Jon's job as a banker in 2022", "... in 2023", ... until max_tokens: a
    # grammar that honours the schema must close the list after the most queries ReMe reads.
    await add_facts(reme)
    looping = [f"Alice coffee order in {year}" for year in range(2000, 2040)]
    server.script(REWRITE, {"queries": looping, "start": None, "end": None})
    ctx = await reme.retrieve_memory("What should I get her at the café?", user_name="alice", top_k=1)
    sent = server.chat_requests[0]["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["queries"]["maxItems"] == 10
    assert ctx.fallbacks == [] and ctx.queries == ["What should I get her at the café?", *looping[:3]]


async def test_time_window_from_the_question_filters_by_message_time(reme: ReMe, server: OpenAITestServer) -> None:
    await add_facts(reme)
    server.script(REWRITE, {"queries": ["Alice plans"], "start": "2024-05-01", "end": "2024-05-31"})
    ctx = await reme.retrieve_memory("What did Alice plan last May?", user_name="alice",
                                     now=datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert [m.node.content for m in ctx.memories] == ["Alice booked a trip to Lisbon"]
    assert ctx.time_window == TimeWindow(start=datetime(2024, 5, 1, tzinfo=timezone.utc),
                                         end=datetime(2024, 5, 31, 23, 59, 59, 999999, tzinfo=timezone.utc))
    assert "Today is 2025-01-01" in prompt_of(server.chat_requests[0])


async def test_an_inferred_window_with_nothing_inside_is_dropped(reme: ReMe, server: OpenAITestServer) -> None:
    await add_facts(reme)
    server.script(REWRITE, {"queries": [], "start": "2019-01-01", "end": "2019-12-31"})
    ctx = await reme.retrieve_memory("Where is Alice's sister?", user_name="alice", top_k=2)
    assert ctx.time_window is None and ctx.memories[0].node.content == "Alice's sister Clara lives in Rome"


async def test_explicit_time_window_without_llm(make_reme: Callable[..., ReMe]) -> None:
    async with make_reme(llm={}) as reme:
        await add_facts(reme)
        ctx = await reme.retrieve_memory("Alice", user_name="alice",
                                         time_window=(datetime(2024, 3, 1), datetime(2024, 4, 30)))
        assert sorted(m.node.content for m in ctx.memories) == ["Alice drinks oat-milk flat whites",
                                                                "Alice's sister Clara lives in Rome"]
        with pytest.raises(InvalidInputError):
            await reme.retrieve_memory("   ", user_name="alice")
        with pytest.raises(InvalidInputError):
            await reme.retrieve_memory("Alice", user_name="alice", top_k=0)


@every_store
async def test_recency_and_importance_weights_break_ties(make_reme: Callable[..., ReMe],
                                                          another_store: dict[str, Any]) -> None:
    async with make_reme(llm={}, retrieval={"recency_weight": 0.0, "importance_weight": 5.0}) as reme:
        low = await reme.add_memory("Alice likes green tea", user_name="alice", score=0.0)
        high = await reme.add_memory("Alice likes green tea a lot", user_name="alice", score=1.0)
        ctx = await reme.retrieve_memory("Alice likes green tea", user_name="alice")
        assert [m.node.memory_id for m in ctx.memories] == [high.memory_id, low.memory_id]
    async with make_reme(llm={}, retrieval={"recency_weight": 5.0, "importance_weight": 0.0, "half_life_days": 1},
                         **another_store) as reme2:
        old = await reme2.add_memory("Alice likes green tea", user_name="alice",
                                     message_time=datetime(2020, 1, 1))
        new = await reme2.add_memory("Alice likes green tea a lot", user_name="alice")
        ctx = await reme2.retrieve_memory("Alice likes green tea", user_name="alice")
        assert [m.node.memory_id for m in ctx.memories] == [new.memory_id, old.memory_id]


async def test_sources_are_the_lines_a_memory_came_from(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "Alice prefers the window seat on trains", "sources": [2]}))
    server.script(REWRITE, {"queries": []})
    await reme.summarize_memory(CHAT, user_name="alice")
    ctx = await reme.retrieve_memory("train seat", user_name="alice", with_source=True)
    assert ctx.memories[0].source == ("[2024-05-03 10:02] Alice: Love it. I always take the window seat on the "
                                      "train there.")
    assert ctx.text.splitlines()[1] == "  source: " + ctx.memories[0].source


async def test_retrieval_with_a_failing_llm_searches_the_query_as_is_and_says_so(
        reme: ReMe, server: OpenAITestServer) -> None:
    await add_facts(reme)
    server.fail_next(500, times=5)
    ctx = await reme.retrieve_memory("Where is Alice going?", user_name="alice")
    assert ctx.queries == ["Where is Alice going?"] and ctx.memories
    assert [f.step for f in ctx.fallbacks] == ["rewrite"] and "HTTP 500" in ctx.fallbacks[0].error


# -- versions through the plain API --------------------------------------------------------------
@every_store
async def test_update_and_delete_memory_keep_versions_and_delete_all_wipes_them(reme: ReMe) -> None:
    node = await reme.add_memory("Alice lives in Paris", user_name="alice")
    await reme.update_memory(node.memory_id, content="Alice lives in Berlin")
    await reme.update_memory(node.memory_id, score=0.7)
    versions = await reme.history(node.memory_id)
    assert [v.node.content for v in versions] == ["Alice lives in Paris", "Alice lives in Berlin"]
    assert [v.node.version for v in versions] == [1, 2] and {v.event for v in versions} == {"UPDATE"}
    await reme.delete_memory(node.memory_id, user_name="alice")
    assert [v.event for v in await reme.history(node.memory_id)] == ["UPDATE", "UPDATE", "DELETE"]
    other = await reme.add_memory("Bob lives in Oslo", user_name="bob")
    await reme.update_memory(other.memory_id, content="Bob lives in Bergen")
    assert await reme.delete_all(user_name="alice") == 0
    with pytest.raises(MemoryNotFoundError):  # wiped with its scope: neither stored nor versioned
        await reme.history(node.memory_id)
    assert len(await reme.history(other.memory_id)) == 1  # another user's versions stay


async def test_concurrent_updates_of_one_memory_each_leave_a_version(reme: ReMe) -> None:
    node = await reme.add_memory("Alice lives in Paris", user_name="alice")
    await asyncio.gather(*(reme.update_memory(node.memory_id, tags=[f"t{i}"]) for i in range(10)))
    stored = await reme.get_memory(node.memory_id)
    versions = await reme.history(node.memory_id)
    assert stored.version == 11 and [v.node.version for v in versions] == list(range(1, 11))


async def test_candidates_are_embedded_once(make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin"}, {"content": "Alice owns a cat"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}, {"candidate": 1, "action": "ADD"}))
    async with served_vectors(make_reme, server) as reme:
        await reme.add_memory("Alice lives in Paris", user_name="alice")
        server.requests.clear()
        await reme.summarize_memory(CHAT[:1], user_name="alice")
    embedded = [t for r in server.requests if r["path"].endswith("/embeddings") for t in r["body"]["input"]]
    # the history node, and each candidate once (searching for similar memories and storing share it)
    assert sorted(embedded) == ["Alice moved to Berlin last week (22-28 April 2024)", "Alice owns a cat",
                                "[2024-05-03 10:00] Alice: I moved to Berlin last week!"]


async def test_sync_facade_summarizes_and_retrieves(tmp_path: Path, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "Alice moved to Berlin"}))
    server.script(REWRITE, {"queries": ["Alice city"]})
    with ReMeSync(working_dir=tmp_path / "s", embedding={"backend": "hash", "dimensions": DIM},
                  llm={"base_url": server.base_url, "api_key": "k", "model": "m"}) as reme:
        result = reme.summarize_memory(CHAT[:1], user_name="alice")
        ctx = reme.retrieve_memory("Where does Alice live?", user_name="alice")
        assert ctx.memories[0].node.memory_id == result.added[0].memory_id
        assert reme.history(result.added[0].memory_id) == []
    assert json.loads(result.model_dump_json())["usage"]["calls"] == 1


# -- conversation context ------------------------------------------------------------------------
async def add_conversation(reme: ReMe) -> dict[str, str]:
    """Turns stored as memories citing their conversation (a history node), and two memories
    citing none: the answer shares no word with a question about it, the turn before it does, and
    the memories without a source match one word (the long one, weakly)."""
    history = MemoryNode(memory_type=MemoryType.HISTORY, target_kind="user", memory_target="alice", content="(chat)",
                         message_time=T0)
    said = ["Bob: what have you been researching lately?", "Alice: adoption agencies, mostly."]
    turns = [MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content=text, message_time=T0,
                        ref_ids=[history.memory_id], metadata={"source_turns": [i]}) for i, text in enumerate(said)]
    loose = [MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content=text, message_time=T0)
             for text in ["Alice went to Oslo lately", ("Alice says lately the weather in Oslo has been grey and wet "
                                                        "for weeks, with rain and wind nearly every single day")]]
    await reme.add_memories([history, *turns, *loose])
    return {"question": turns[0].memory_id, "answer": turns[1].memory_id, "oslo": loose[0].memory_id}


CONTEXT_ONLY = {"dense_weight": 0.0, "before_weight": 1.0, "after_weight": 0.0, "source_weight": 0.0}


async def test_the_turn_after_a_matching_turn_is_retrieved_through_it(make_reme: Callable[..., ReMe],
                                                                       server: OpenAITestServer) -> None:
    async with make_reme(llm={}, retrieval={**CONTEXT_ONLY, "before_weight": 0.0}) as reme:
        ids = await add_conversation(reme)
        ctx = await reme.retrieve_memory("researching lately", user_name="alice", top_k=4)
        ranked = [m.node.memory_id for m in ctx.memories]
        assert ranked.index(ids["oslo"]) < ranked.index(ids["answer"])  # the answer matches nothing by itself
    async with make_reme(retrieval=CONTEXT_ONLY, working_dir=Path(str(reme.config.working_dir)) / "ctx") as reme:
        ids = await add_conversation(reme)
        ctx = await reme.retrieve_memory("researching lately", user_name="alice", top_k=4, rewrite=False)
        ranked = [m.node.memory_id for m in ctx.memories]
        assert ranked.index(ids["answer"]) < ranked.index(ids["oslo"])
        server.script(REWRITE, {"queries": ["what Alice researched"], "start": None, "end": None})
        ctx = await reme.retrieve_memory("researching lately", user_name="alice", top_k=4)
        assert len(ctx.queries) == 2 and ctx.usage.calls == 1  # each rewritten query's list is scored in context
        ranked = [m.node.memory_id for m in ctx.memories]
        assert ranked.index(ids["answer"]) < ranked.index(ids["oslo"])


async def test_a_relative_time_gets_the_date_its_message_was_said(reme: ReMe, server: OpenAITestServer) -> None:
    chat = [*CHAT, {"role": "user", "name": "Alice", "content": "My interview is tomorrow, I start on Monday.",
                    "time": "2024-05-04T23:30:00Z"}]
    server.script(EXTRACT, memories(
        {"content": "Alice moved to Berlin last week", "sources": [0]},
        {"content": "Alice has a job interview tomorrow", "sources": [3]},  # said a day later
        {"content": "Alice starts her new job on Monday", "sources": [3]},  # "I start on Monday": the next one
        {"content": "Alice moved to Berlin last week, in April 2024", "sources": [0]}))  # dated already
    result = await reme.summarize_memory(chat, user_name="alice")

    assert [n.content for n in result.added] == [
        "Alice moved to Berlin last week (22-28 April 2024)", "Alice has a job interview tomorrow (5 May 2024)",
        "Alice starts her new job on Monday (6 May 2024)", "Alice moved to Berlin last week, in April 2024"]
    moved = result.added[0]
    assert (moved.event_start, moved.event_end) == (datetime(2024, 4, 22, tzinfo=timezone.utc),
                                                    datetime(2024, 4, 28, 23, 59, 59, 999999, tzinfo=timezone.utc))


async def test_a_memory_in_the_first_person_names_the_speaker_it_cites(reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Alice", "content": "I work as a nurse.", "time": "2024-05-03T10:00:00Z"},
            {"role": "user", "name": "Bob", "content": "I'm a chef, and Alice is my little sister. We went to Rome."},
            {"role": "assistant", "content": "Nice to meet you both!"},
            {"role": "user", "name": "Alice", "content": "Love it. I always take the window seat on the train."},
            {"role": "user", "content": "I don't eat pork and my dad Sam taught me chess."}]  # no name: the user
    server.script(EXTRACT, memories(
        {"content": "I work as a nurse", "sources": [0]},
        {"content": "I'm a chef and my sister is Alice", "sources": [1]},
        {"content": "Love it. I always take the window seat on the train", "sources": [3, 2]},
        {"content": "I don't eat pork and my dad Sam taught me chess", "sources": [4]},
        {"content": "I went to Rome with Bob", "sources": [0, 1]}))  # two speakers: whose "I"? left alone
    result = await reme.summarize_memory(chat, user_name="alice")

    assert [n.content for n in result.added] == [
        "Alice works as a nurse", "Bob is a chef and Bob's sister is Alice",
        "alice doesn't eat pork and alice's dad Sam taught alice chess",
        "Alice always takes the window seat on the train",  # "Love it." says what? (no repair scripted)
        "I went to Rome with Bob"]


async def test_the_extraction_prompt_asks_for_health_and_safety_facts_in_the_third_person(
        reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": []})
    await reme.summarize_memory(CHAT, user_name="alice")

    prompt = prompt_of(server.chat_requests[0])
    assert "health or safety fact" in prompt and "third person" in prompt
    assert 'marked ">", write a memory of each fact' in prompt and "a line that states two facts gives two memories" in prompt
    assert "says only what its marked" in prompt


async def test_a_merged_text_in_the_first_person_names_the_speaker_too(reme: ReMe, server: OpenAITestServer) -> None:
    await reme.add_memory("Dan is vegetarian", user_name="dan")
    server.script(EXTRACT, memories({"content": "Dan eats fish again", "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0,
                                        "text": "I am not vegetarian any more since last month"}))
    result = await reme.summarize_memory([{"role": "user", "name": "Dan", "content": "I eat fish again.",
                                           "time": "2024-05-03T10:00:00Z"}], user_name="dan")

    assert [n.content for n in result.updated] == ["Dan is not vegetarian any more since last month (April 2024)"]


async def test_the_extraction_prompt_gives_no_fact_a_small_model_could_copy(
        reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": []})
    await reme.summarize_memory(CHAT, user_name="alice")

    prompt = prompt_of(server.chat_requests[0]).split("Conversation (")[0]
    assert "nurse" not in prompt  # qwen1.5b stored "Priya works as a nurse" from the rule's example


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.text(min_size=1, max_size=20),
       st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(timezone.utc)))
def test_rewording_any_text_keeps_what_has_no_first_person_or_relative_time(text: str, speaker: str,
                                                                           said: datetime) -> None:
    named = name_the_speaker(text, speaker)
    if not re.search(r"\b(?:I|[Mm]y|MY|[Mm]ine|[Mm]e|[Mm]yself)\b", text):
        assert named == text
    dated = anchor_times(text, said)
    assert dated.startswith(text[:1]) and len(dated) >= len(text)
    if re.search(r"(?<!\d)(?:19|20)\d\d(?!\d)", text):
        assert dated == text


@pytest.mark.parametrize(("text", "expected"), [
    ("I always take the window seat", "Kim always takes the window seat"),
    # fresh3: "My flatmate Sione and I are throwing a housewarming" was "... and Kim ares throwing"
    ("My flatmate Sione and I are throwing a party", "Kim's flatmate Sione and Kim are throwing a party"),
    ("Sione and I were late", "Sione and Kim were late"),
    # fresh28: "If I ever get a sudden tearing pain" was "If Dong-hyun evers get", "I'd had headaches" "would had"
    ("If I ever get a tearing pain, call 119", "If Kim ever gets a tearing pain, call 119"),
    ("Although I'd had headaches since May", "Although Kim had had headaches since May"),
    ("I'd been told to rest and I'd gone home", "Kim had been told to rest and Kim had gone home"),
    ("I'd rather walk, and I'd like tea", "Kim would rather walk, and Kim would like tea"),
    ("I’d stopped the statin", "Kim had stopped the statin"),
    ("He works shifts at the mine, and a coal mine is mine", "He works shifts at the mine, and a coal mine is Kim's"),
])
def test_the_speakers_first_person_is_their_name(text: str, expected: str) -> None:
    assert name_the_speaker(text, "Kim") == expected


@pytest.mark.parametrize(("said", "text", "expected"), [
    ("2024-12-15", "Kim started a new job this month", "Kim started a new job this month (December 2024)"),
    ("2024-05-03", "Kim moved house last year", "Kim moved house last year (2023)"),
    ("2024-05-03", "Kim went hiking yesterday and rests today",
     "Kim went hiking yesterday (2 May 2024) and rests today (3 May 2024)"),
    ("2024-01-02", "Kim travelled last week", "Kim travelled last week (25-31 December 2023)"),
    ("2024-05-03", "金上周搬家了", "金上周（2024-04-22 - 2024-04-28）搬家了"),
    ("2024-05-03", "Kim goes to Lisbon in May and starts on Monday", "Kim goes to Lisbon in May and starts on Monday"),
    # what is ahead, counted from when it was said (fresh3: "the stitches come out in ten days")
    ("2024-11-19", "The stitches come out in ten days", "The stitches come out in ten days (29 November 2024)"),
    ("2025-06-05", "Kwame flies out of Manchester in three weeks", "Kwame flies out of Manchester in three weeks "
                                                                   "(26 June 2025)"),
    ("2025-03-11", "Tomasz gets a crown fitted a week from today", "Tomasz gets a crown fitted a week from today "
                                                                  "(18 March 2025)"),
    ("2024-05-03", "Kim moves to Porto in two months", "Kim moves to Porto in two months (July 2024)"),
    # weeks ago: the day that many weeks back, about (fresh4-fresh7's gold: "two weeks ago" said
    # on 20 May is about 6 May; the week it fell in, "5-11 May", did not say which day)
    ("2025-05-20", "Kim started propranolol two weeks ago", "Kim started propranolol two weeks ago (about 6 May 2025)"),
    ("2025-11-18", "Kim moved to Marseille three weeks ago",
     "Kim moved to Marseille three weeks ago (about 28 October 2025)"),
    ("2025-05-20", "Kim had a blood test a week ago", "Kim had a blood test a week ago (about 13 May 2025)"),
    ("2025-05-20", "Kim left a few weeks ago", "Kim left a few weeks ago (26 April - 2 May 2025)"),
    ("2024-05-03", "Kim starts in a few days", "Kim starts in a few days (5-7 May 2024)"),
    # a count in two words is the whole count (fresh14: "twenty-four years ago" was dated four years ago)
    ("2026-09-10", "They found it when Bronagh was fourteen, twenty-four years ago",
     "They found it when Bronagh was fourteen, twenty-four years ago (2002)"),
    ("2026-09-10", "Kim moved here thirty years ago", "Kim moved here thirty years ago (1996)"),
    ("2026-09-10", "Kim started fifteen days ago", "Kim started fifteen days ago (26 August 2026)"),
    ("2026-09-10", "Kim left forty one days ago", "Kim left forty one days ago (31 July 2026)"),
    # "this Saturday" is the coming one unless told of the past (fresh4: "the honey harvest this Saturday")
    ("2025-05-14", "Mandla helps with the honey harvest this Saturday",
     "Mandla helps with the honey harvest this Saturday (17 May 2025)"),
    ("2025-05-18", "Mandla helps with the honey harvest this Saturday",
     "Mandla helps with the honey harvest this Saturday (24 May 2025)"),
    ("2025-05-18", "Mandla went to the market this Saturday", "Mandla went to the market this Saturday (17 May 2025)"),
    # "this coming Monday" is the next one (fresh6: a first day at work stayed undated)
    ("2026-02-11", "Bukola starts at Fernhill this coming Monday, on the tills",
     "Bukola starts at Fernhill this coming Monday (16 February 2026), on the tills"),
    ("2026-02-11", "Bukola starts coming Wednesday", "Bukola starts coming Wednesday (18 February 2026)"),
    # a holiday said with last, this or next (fresh4: "he proposed last Christmas")
    ("2026-03-19", "Mikael proposed last Christmas", "Mikael proposed last Christmas (25 December 2025)"),
    ("2026-03-19", "Kim quit smoking on last New Year's Eve",
     "Kim quit smoking on last New Year's Eve (31 December 2025)"),
    ("2025-11-02", "Kim hosts this Christmas", "Kim hosts this Christmas (25 December 2025)"),
    ("2025-12-26", "Kim hosts next Christmas Eve", "Kim hosts next Christmas Eve (24 December 2026)"),
    ("2025-11-02", "Kim loves Christmas", "Kim loves Christmas"),
    # British "a week tomorrow" (fresh4: the gallbladder operation)
    ("2025-10-07", "Siobhan's operation is a week tomorrow",
     "Siobhan's operation is a week tomorrow (15 October 2025)"),
    ("2025-10-07", "Siobhan's operation is a week today", "Siobhan's operation is a week today (14 October 2025)"),
    # fresh24: "two weeks today" was dated today, and "I'm signed off for six weeks from today" too ("signed" read
    # as the past)
    ("2026-04-16", "Torcuil sees Dr MacInnes in clinic two weeks today",
     "Torcuil sees Dr MacInnes in clinic two weeks today (30 April 2026)"),
    ("2026-04-16", "I'm signed off for six weeks from today", "I'm signed off for six weeks from today (28 May 2026)"),
    ("2026-04-16", "We walked for two days today", "We walked for two days today (16 April 2026)"),
    # a fortnight; a month said with next, last or this (fresh14: "a fortnight from today" was dated today,
    # "a fortnight ago", "next March", "last October" not at all)
    ("2026-10-20", "Kim's first full infusion is a fortnight from today",
     "Kim's first full infusion is a fortnight from today (3 November 2026)"),
    ("2026-10-27", "Kim had a mild attack a fortnight ago", "Kim had a mild attack a fortnight ago (about 13 October 2026)"),
    ("2026-10-27", "Kim flies in a fortnight", "Kim flies in a fortnight (10 November 2026)"),
    ("2026-10-27", "Kim flies in two fortnights", "Kim flies in two fortnights (24 November 2026)"),
    ("2026-05-26", "Kim's baby is due next March", "Kim's baby is due next March (March 2027)"),
    ("2026-05-26", "Kim had a steroid injection last October",
     "Kim had a steroid injection last October (October 2025)"),
    ("2026-05-26", "Kim had a scan last May", "Kim had a scan last May (May 2025)"),
    ("2026-05-26", "Kim moves this September", "Kim moves this September (September 2026)"),
    ("2026-05-26", "Kim may march next week", "Kim may march next week (1-7 June 2026)"),
    # a month alone, in a sentence whose tense says which one: its year (fresh14: "getting married in
    # February", said in October, is next year's; "had a relapse in July" this year's)
    ("2026-10-20", "Kim had a relapse in July, optic neuritis", "Kim had a relapse in July 2026, optic neuritis"),
    ("2026-03-20", "Kim was diagnosed in November", "Kim was diagnosed in November 2025"),
    ("2026-10-20", "Kim and Eirik are getting married in February, back in Bergen",
     "Kim and Eirik are getting married in February 2027, back in Bergen"),
    ("2026-10-20", "Kim's baby is due in March", "Kim's baby is due in March 2027"),
    ("2026-05-20", "Kim will start lecturing in August", "Kim will start lecturing in August 2026"),
    ("2026-10-20", "Kim goes skiing in February", "Kim goes skiing in February"),  # a habit, or which?
    ("2026-10-20", "Kim says Lisbon is amazing in May", "Kim says Lisbon is amazing in May"),
    ("2026-10-20", "Kim had a relapse in October", "Kim had a relapse in October 2026"),  # this month: this year's
    ("2026-10-20", "Kim had a relapse in July 2025", "Kim had a relapse in July 2025"),
    ("2026-10-20", "Kim had a relapse in July, and a scan last week",
     "Kim had a relapse in July 2026, and a scan last week (12-18 October 2026)"),
    # fresh15: the month at the start or end of a sentence with no subject, or in a part of its month
    ("2026-10-27", "Kristjan moved to Tartu at the start of October",
     "Kristjan moved to Tartu at the start of October 2026"),
    ("2026-11-10", "Kristjan moved to Tartu at the start of October",
     "Kristjan moved to Tartu at the start of October 2026"),
    ("2026-10-27", "Kristjan has driven since the end of September", "Kristjan has driven since the end of September"),
    ("2026-10-27", "Kristjan was allowed to drive again since the end of September",
     "Kristjan was allowed to drive again since the end of September 2026"),
    ("2026-08-04", "Stopped the betahistine in June, no point", "Stopped the betahistine in June 2026, no point"),
    ("2026-08-04", "Dr Kovacs retired at the end of June", "Dr Kovacs retired at the end of June 2026"),
    # the month opening the sentence (fresh22: "In January Solfrid's husband Sverre died" had no year)
    ("2026-04-27", "In January Solfrid's husband Sverre died, very suddenly",
     "In January 2026 Solfrid's husband Sverre died, very suddenly"),
    ("2026-09-08", "Since March Farrukh has walked every evening", "Since March 2026 Farrukh has walked every evening"),
    ("2026-04-27", "In May Kim will fly to Bergen", "In May 2026 Kim will fly to Bergen"),
    ("2026-04-27", "In May Kim goes skiing", "In May Kim goes skiing"),  # a habit: no year
    ("2026-04-27", "May Kim fly in June?", "May Kim fly in June?"),
    # a day of a month said without its year (fresh15: "The bone scan is on the 5th of May", "next time on the
    # 19th of January"): the next such day, or the last one when the sentence tells of the past
    ("2026-04-14", "The bone scan is on the 5th of May", "The bone scan is on the 5th of May 2026"),
    ("2026-11-10", "Dr Botha checks Wouter's moles, next time on the 19th of January",
     "Dr Botha checks Wouter's moles, next time on the 19th of January 2027"),
    ("2026-07-14", "The baby is due on November 30th", "The baby is due on November 30th 2026"),
    ("2026-04-14", "Kim was diagnosed on the 3rd of March", "Kim was diagnosed on the 3rd of March 2026"),
    ("2026-02-14", "Kim was diagnosed on the 3rd of March", "Kim was diagnosed on the 3rd of March 2025"),
    ("2026-04-14", "Kim's scan is on 5 May 2027", "Kim's scan is on 5 May 2027"),
    ("2026-04-14", "Kim may march on the 5th", "Kim may march on the 5th"),
    # from a day in the present tense: the nearest such day (fresh22: "From the 1st of September I teach cooking",
    # said on the 8th of September, was dated a year on)
    ("2026-09-08", "From the 1st of September Farrukh teaches cooking",
     "From the 1st of September 2026 Farrukh teaches cooking"),
    ("2026-08-20", "From the 1st of September Farrukh teaches cooking",
     "From the 1st of September 2026 Farrukh teaches cooking"),
    ("2026-12-20", "Farrukh teaches cooking from the 2nd of January", "Farrukh teaches cooking from the 2nd of January 2027"),
    ("2026-01-06", "Farrukh teaches cooking since the 2nd of December",
     "Farrukh teaches cooking since the 2nd of December 2025"),
    ("2026-09-08", "Farrukh will teach cooking from the 1st of September",
     "Farrukh will teach cooking from the 1st of September 2027"),
    ("2026-04-14", "Kim's 31st of February party", "Kim's 31st of February party"),  # no such day
    # a time it took, not a time ahead: the sentence tells of the past
    ("2024-05-03", "Kim finished the course in ten days", "Kim finished the course in ten days"),
    ("2024-05-03", "Kim lost 5 kg in two months", "Kim lost 5 kg in two months"),
    # how fast, in a rule (fresh17: "if I put on two kilos in three days I ring Bisi" was dated three days on)
    ("2026-06-10", "If Yael puts on two kilos in three days, Yael rings Bisi",
     "If Yael puts on two kilos in three days, Yael rings Bisi"),
    ("2026-06-10", "If Yael gains weight in a week, she calls the clinic",
     "If Yael gains weight in a week, she calls the clinic"),
    ("2026-06-10", "Yael flies to Tel Aviv in three days", "Yael flies to Tel Aviv in three days (13 June 2026)"),
    ("2026-06-10", "Yael has 2 scans in three weeks", "Yael has 2 scans in three weeks (1 July 2026)"),
])
def test_anchor_times_writes_the_period_a_relative_time_meant(said: str, text: str, expected: str) -> None:
    assert anchor_times(text, datetime.fromisoformat(said + "T12:00:00+00:00")) == expected


@pytest.mark.parametrize(("text", "line", "expected"), [
    # fresh28 (qwen1.5b): the memory's tense is not the line's ("I had a feeding tube ... put in on the 9th of June"
    # became "Lejla has a feeding tube ... put in on the 9th of June", dated June 2027); the line tells the year
    ("Lejla has a tube put in on the 9th of June.", "I had a tube put in on the 9th of June.",
     "Lejla has a tube put in on the 9th of June 2026."),
    ("Lejla has a tube put in on the 9th of June.", "I get my tube on the 9th of July.",
     "Lejla has a tube put in on the 9th of June 2027."),  # a line of another day tells nothing
    ("Lejla moves in September.", "We moved in September.", "Lejla moves in September 2025."),
    # "ground-floor" is no past tense ("ground", of grind), nor is "the wound"
    ("In September Lejla is moving to a ground-floor flat.", "", "In September 2026 Lejla is moving to a ground-floor "
                                                                "flat."),
    ("The wound clinic sees Lejla on the 2nd of July.", "", "The wound clinic sees Lejla on the 2nd of July 2026."),
    # ... and a month with its day after it is no month said alone (fresh28: "since September 2026 15th")
    ("Lejla has lived in Ilidža since September 15th.", "", "Lejla has lived in Ilidža since September 15th 2025."),
])
def test_a_day_said_in_a_line_is_of_the_year_the_lines_tense_tells(text: str, line: str, expected: str) -> None:
    assert anchor_times(text, datetime(2026, 6, 30, 15, tzinfo=timezone.utc), [line] if line else []) == expected


@pytest.mark.parametrize(("text", "line", "expected"), [
    # the cited line's tense decides, not the memory's (qwen1.5b wrote "started" for "I start")
    ("Alice started her job on Monday.", "It's great, I start my new job on Monday.",
     "Alice started her job on Monday (6 May 2024)."),
    ("Kim saw the dentist on Friday", "I went to the dentist on Friday.", "Kim saw the dentist on Friday (26 April 2024)"),
    ("Kim saw the dentist on Tuesday", "We finished the course. I saw the dentist on Tuesday.",
     "Kim saw the dentist on Tuesday (30 April 2024)"),
    ("Kim works from home on Fridays", "I work from home on Fridays.", "Kim works from home on Fridays"),
    ("Kim saw the dentist on Tuesday", "I was at the dentist.", "Kim saw the dentist on Tuesday"),  # not said
    ("Kim flies on Monday, 6 May 2024", "I fly on Monday", "Kim flies on Monday, 6 May 2024"),
    # a day of the month without its month (fresh: "The surgeon sees me again on the 29th")
    ("The surgeon sees Kim again on the 29th.", "The surgeon sees me again on the 29th, if all's well.",
     "The surgeon sees Kim again on the 29th (29 May 2024)."),
    ("Kim's last day is the 30th of this month.", "Rodrigo's last day is the 30th of this month.",
     "Kim's last day is the 30th of this month (30 May 2024)."),
    ("Kim paid the rent on the 1st.", "I paid the rent on the 1st.", "Kim paid the rent on the 1st (1 May 2024)."),
    ("Kim's jab is the 2nd and the vet is on the 31st.", "It's the 2nd and the vet is on the 31st.",
     "Kim's jab is the 2nd (2 June 2024) and the vet is on the 31st (31 May 2024)."),
    ("Kim went to the 30th anniversary party", "I went to the 30th anniversary party",
     "Kim went to the 30th anniversary party"),
    ("Kim flies on the 30th of May", "I fly on the 30th of May", "Kim flies on the 30th of May"),
    # the month the sentence names for another day (fresh10: "the 12th of May now, not the 19th" was 19 April)
    ("Kim's due date is the 12th of June now, not the 19th.", "They're saying the 12th of June now, not the 19th.",
     "Kim's due date is the 12th of June now, not the 19th (19 June 2024)."),
    ("Kim's due date moved to June 12 from the 19th.", "It moved to June 12 from the 19th.",
     "Kim's due date moved to June 12 from the 19th (19 June 2024)."),
    ("Kim flew on the 2nd, back on March 3rd.", "I flew on the 2nd, back on March 3rd.",
     "Kim flew on the 2nd (2 March 2024), back on March 3rd."),
    ("Kim may go on the 9th.", "I may go on the 9th.", "Kim may go on the 9th (9 May 2024)."),  # "may" is no month
    # a week after the next one (fresh12: "a liver scan a week on Thursday" was dated the next Thursday)
    ("Kim's scan is a week on Thursday.", "A liver scan a week on Thursday.",
     "Kim's scan is a week on Thursday (16 May 2024)."),
    ("Kim's scan is on Thursday week.", "The scan's on Thursday week.", "Kim's scan is on Thursday week (16 May 2024)."),
    ("Kim's scan is on Thursday.", "The scan is a week on Thursday.", "Kim's scan is on Thursday (16 May 2024)."),
    ("Kim flies a fortnight on Monday.", "I fly a fortnight on Monday.", "Kim flies a fortnight on Monday (20 May 2024)."),
    ("Kim met Ana on Thursday, a week ago.", "I met Ana on Thursday, a week ago.",
     "Kim met Ana on Thursday (2 May 2024), a week ago."),
    # a past told of a thing, not a person (fresh12: "a new one arrived on Saturday" was the next Saturday)
    ("Kim's foster child Ruby arrived on Saturday.", "And a new one arrived on Saturday: Ruby, she's three.",
     "Kim's foster child Ruby arrived on Saturday (27 April 2024)."),
    ("Kim's parcel arrived on Monday.", "The parcel arrived on Monday.", "Kim's parcel arrived on Monday (29 April 2024)."),
    ("Kim meets a man called Dave on Monday.", "I meet a man called Dave on Monday.",
     "Kim meets a man called Dave on Monday (6 May 2024)."),
    ("Kim sees the doctor based in Leeds on Monday.", "I see the doctor based in Leeds on Monday.",
     "Kim sees the doctor based in Leeds on Monday (6 May 2024)."),
    # "a week on Thursday" of the past says nothing sure: no date rather than a wrong one
    ("Kim saw him a week on Thursday.", "I saw him a week on Thursday.", "Kim saw him a week on Thursday."),
    # a weekday and its day of the month are one day (fresh16, fresh17: "on Monday (6 May 2024) the 13th (13 May
    # 2024)", two dates for one day, the first wrong)
    ("Kim's catheter is on Monday the 13th, at the Brompton.", "A catheter on Monday the 13th, at the Brompton.",
     "Kim's catheter is on Monday the 13th (13 May 2024), at the Brompton."),
    ("Kim's level is checked on Monday, the 13th.", "They check it on Monday, the 13th.",
     "Kim's level is checked on Monday, the 13th (13 May 2024)."),
    # "I've got" has, not got (fresh17: "I've got a heart MRI on Friday", said on a Tuesday, was the Friday before)
    ("Kim has a heart MRI on Tuesday.", "And because Fabry thickens the heart, I've got a heart MRI on Tuesday.",
     "Kim has a heart MRI on Tuesday (7 May 2024)."),
    ("Kim's got physio on the 9th.", "She's got physio on the 9th.", "Kim's got physio on the 9th (9 May 2024)."),
    ("Kim got back from Rome on Tuesday.", "I've got back from Rome on Tuesday.",
     "Kim got back from Rome on Tuesday (30 April 2024)."),
    ("Kim got a new job on Tuesday.", "I got a new job on Tuesday.", "Kim got a new job on Tuesday (30 April 2024)."),
    # a participle of what is over, no "was" (fresh18: "both done on Monday", said on a Thursday, was the next Monday)
    ("Kim's bloods and a TB test were both done on Monday.", "Bloods and a TB test, both done on Monday.",
     "Kim's bloods and a TB test were both done on Monday (29 April 2024)."),
    ("Kim's bloods get done on Monday.", "Bloods get done on Monday.",
     "Kim's bloods get done on Monday (6 May 2024)."),
    # "from Saturday", read in its own clause (fresh20: "250 mg since I was diagnosed, and it goes up to 500 from
    # Saturday" was not dated; by the sentence's "was", it would have been the Saturday before)
    ("Kim takes 250 mg since Kim was diagnosed, and it goes up to 500 from Saturday.",
     "250 mg since I was diagnosed, and it goes up to 500 from Saturday.",
     "Kim takes 250 mg since Kim was diagnosed, and it goes up to 500 from Saturday (4 May 2024)."),
    ("Kim saw the GP on Monday, and it went well.", "I saw the GP on Monday, and it went well.",
     "Kim saw the GP on Monday (29 April 2024), and it went well."),
    # a day of next month beside a date with its year (fresh20: "a lumbar puncture on the 8th of next month, and Dr
    # Farquharson on the 11th of August" was not dated once ReMe had put 2024 after August)
    ("Kim has a lumbar puncture on the 8th of next month, and Dr F on the 11th of August 2024.",
     "A lumbar puncture on the 8th of next month, and Dr F on the 11th of August.",
     "Kim has a lumbar puncture on the 8th of next month (8 June 2024), and Dr F on the 11th of August 2024."),
])
def test_on_a_weekday_is_dated_as_the_line_it_cites_tells_it(text: str, line: str, expected: str) -> None:
    assert anchor_weekdays(text, datetime(2024, 5, 3, 12, tzinfo=timezone.utc), [line]) == expected  # a Friday


@pytest.mark.parametrize(("text", "expected"), [
    # fresh20: "the last Saturday of next month" was dated as "last Saturday", the Saturday before
    ("Imran's wedding is on the last Saturday of next month.",
     "Imran's wedding is on the last Saturday of next month (29 June 2024)."),
    ("The review is on the first Monday of this month.", "The review is on the first Monday of this month (6 May 2024)."),
    # a month without its year: the one to come, when the sentence tells of no past (fresh35); else as it is
    ("The wedding is on the last Saturday of July.", "The wedding is on the last Saturday of July (27 July 2024)."),
    ("The wedding was on the last Saturday of July.", "The wedding was on the last Saturday of July."),
    ("The wedding is on the last Saturday of March.", "The wedding is on the last Saturday of March."),
    ("Kim went dancing last Saturday.", "Kim went dancing last Saturday (27 April 2024)."),
])
def test_a_weekday_counted_in_its_month_is_that_day(text: str, expected: str) -> None:
    assert anchor_times(text, datetime(2024, 5, 3, 12, tzinfo=timezone.utc)) == expected
    assert find_window("the last Saturday of July", datetime(2024, 5, 3, tzinfo=timezone.utc)).start.date() == \
        date(2024, 7, 27)


@pytest.mark.parametrize(("text", "line", "expected"), [
    # the time of the clause the memory holds whole (qwen1.5b dropped "last week", "on Monday")
    ("Alice moved to Berlin", "I moved to Berlin last week!", "Alice moved to Berlin last week (22-28 April 2024)"),
    ("Alice moved to Berlin.", "Last week I moved to Berlin.", "Alice moved to Berlin last week (22-28 April 2024)."),
    ("Alice starts her new job", "It's great, I start my new job on Monday.",
     "Alice starts her new job on Monday (6 May 2024)"),
    # a clause it does not hold whole: "works" is not "started" (kept as said instead, `unheld_dates`)
    ("Rustam works at a firm in Calgary", "I started at a firm in Calgary three weeks ago, on a permit.",
     "Rustam works at a firm in Calgary"),
    # a memory with a time of its own, two times, only today: unchanged
    ("Alice moved to Berlin in April", "I moved to Berlin last week!", "Alice moved to Berlin in April"),
    ("Alice moved to Berlin", "I moved to Berlin last week. I moved to Berlin yesterday.", "Alice moved to Berlin"),
    ("Alice is in Berlin", "I'm in Berlin today.", "Alice is in Berlin"),
    # fresh28: a month said alone, of the year the tense tells ("In May I moved" said in May 2024 is this May; "in
    # August" ahead is this August), not a habit, nor with a year said
    ("Alice moved to Cape Town.", "In May I moved to Cape Town, to Observatory.",
     "Alice moved to Cape Town in May 2024."),
    ("Alice moved to Berlin.", "In June I moved to Berlin.", "Alice moved to Berlin in June 2023."),
    ("Alice is moving to Berlin.", "In August I'm moving to Berlin.", "Alice is moving to Berlin in August 2024."),
    ("Alice goes skiing.", "I go skiing in February.", "Alice goes skiing."),
    ("Alice moved to Berlin.", "In June 2021 I moved to Berlin.", "Alice moved to Berlin."),
])
def test_a_memory_that_names_no_time_takes_the_time_of_the_clause_it_holds(text: str, line: str, expected: str) -> None:
    assert with_the_time_said(text, datetime(2024, 5, 3, 12, tzinfo=timezone.utc), [line]) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # fresh12 (qwen1.5b): "on the 4th of next month" was dated "next month (November 2026)", the day lost
    ("Henrique has a lung function test on the 4th of next month.",
     "Henrique has a lung function test on the 4th of next month (4 November 2026)."),
    ("Henrique moves next month.", "Henrique moves next month (November 2026)."),
    ("Henrique's test is the 30th of this month.", "Henrique's test is the 30th of this month (30 October 2026)."),
])
def test_a_day_of_next_month_is_dated_as_that_day(text: str, expected: str) -> None:
    said = datetime(2026, 10, 8, 10, tzinfo=timezone.utc)
    line = "An eye check, and a lung function test on the 4th of next month; the 30th of this month too."
    assert anchor_weekdays(anchor_times(text, said), said, [line, "I move next month."]) == expected


@pytest.mark.parametrize(("line", "expected"), [
    # fresh18 (qwen1.5b kept these as said; each was left undated or dated wrong)
    ("My little sister Dihya gets married in Agadir on the 27th of next month, and I fly out on the 24th.",
     "My little sister Dihya gets married in Agadir on the 27th of next month (27 June 2026), and I fly out on the "
     "24th (24 June 2026)."),
    ("First infusion on the 3rd of next month, the second two weeks after that, and then one every six months.",
     "First infusion on the 3rd of next month (3 June 2026), the second two weeks after that (17 June 2026), and "
     "then one every six months."),
    ("The FibroScan is on the 14th of next month, and the lung function test is the Wednesday after.",
     "The FibroScan is on the 14th of next month (14 June 2026), and the lung function test is the Wednesday after "
     "(17 June 2026)."),
    ("I have to send the DVLA form by the end of the month.",
     "I have to send the DVLA form by the end of the month (31 May 2026)."),
    ("The rent goes up at the end of next month.", "The rent goes up at the end of next month (30 June 2026)."),
    # a day after something that is not a day, a bare day in another sentence: as they were
    ("I go home the Wednesday after the operation.", "I go home the Wednesday after the operation."),
    ("I fly out on the 24th. She marries on the 27th of next month.",
     "I fly out on the 24th (24 May 2026). She marries on the 27th of next month (27 June 2026)."),
    ("The FibroScan is on the 14th of next month. The day after, I rest.",
     "The FibroScan is on the 14th of next month (14 June 2026). The day after, I rest."),
])
def test_a_day_counted_from_another_day_of_its_sentence_is_dated(line: str, expected: str) -> None:
    said = datetime(2026, 5, 14, 10, tzinfo=timezone.utc)  # a Thursday
    assert anchor_weekdays(anchor_times(line, said), said, [line]) == expected


@pytest.mark.parametrize(("line", "said", "expected"), [
    # fresh19 (qwen1.5b kept these as said; each was left undated or dated wrong)
    ("Bloods so the 12th of November, and Dr Marwood, the endocrinologist, on the 19th.", "2026-09-15",
     "Bloods so the 12th of November 2026, and Dr Marwood, the endocrinologist, on the 19th (19 November 2026)."),
    ("Luka goes to my mum's from the 1st to the 22nd, and Nemanja sleeps in the spare room.", "2026-09-15",
     "Luka goes to my mum's from the 1st (1 October 2026) to the 22nd (22 October 2026), and Nemanja sleeps in the "
     "spare room."),
    ("I've got Graves' disease, diagnosed in March last year.", "2026-09-15",
     "I've got Graves' disease, diagnosed in March last year (March 2025)."),
    ("Which is why I quit smoking in January, smoking makes it worse.", "2026-09-15",
     "Which is why I quit smoking in January 2026, smoking makes it worse."),
    ("Also I finally quit smoking, in March.", "2026-07-09", "Also I finally quit smoking, in March 2026."),
    ("So we're not trying for a second one till April at the earliest.", "2026-09-15",
     "So we're not trying for a second one till April 2027 at the earliest."),
    ("She starts pravastatin on her tenth birthday, the 14th of May, the paeds lipid doctor said ten is the age.",
     "2026-01-20",
     "She starts pravastatin on her tenth birthday, the 14th of May 2026, the paeds lipid doctor said ten is the age."),
    # who said it does not make a day in the present past, but a day of what was said stays past
    ("On the 14th of May, the doctor said I was fine.", "2026-01-20",
     "On the 14th of May 2025, the doctor said I was fine."),
    # a year the user named: a bare day of another month of that sentence, or of another sentence of the past, is not
    # dated; a day to come in a sentence of its own is of now (fresh29: "Since November 2025 omalizumab ...; the next
    # one is on the 5th" was not dated)
    ("We met on the 3rd of May 2019 and married on the 9th.", "2026-01-20",
     "We met on the 3rd of May 2019 and married on the 9th (9 May 2019)."),
    ("We met in 2019. We married on the 9th.", "2026-01-20", "We met in 2019. We married on the 9th."),
    ("We met in 2019. I fly out on the 9th.", "2026-01-20", "We met in 2019. I fly out on the 9th (9 February 2026)."),
])
def test_days_and_months_are_dated_as_their_sentence_tells(line: str, said: str, expected: str) -> None:
    at = datetime.fromisoformat(said + "T12:00:00+00:00")
    assert anchor_weekdays(anchor_times(line, at), at, [line]) == expected


def test_a_weekday_no_cited_line_says_is_dated_as_another_line_tells_it() -> None:
    # tune (qwen1.5b): "Alice started her new job at a bakery on Monday." cited the wrong line
    said = datetime(2024, 5, 3, 12, tzinfo=timezone.utc)
    memory = "Alice started her new job at a bakery on Monday."
    assert anchor_weekdays(memory, said, ["Thanks!"], ["It's great, I start my new job at a bakery on Monday."]) == \
        "Alice started her new job at a bakery on Monday (6 May 2024)."
    assert anchor_weekdays(memory, said, ["Thanks!"], ["Thanks!"]) == memory


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80),
       st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(timezone.utc)))
@example("", "", datetime(1, 1, 1, tzinfo=timezone.utc))  # the last Monday would be before the first day
@example("", "", datetime(9999, 12, 31, tzinfo=timezone.utc))  # the next Sunday after the last
def test_dating_a_weekday_keeps_any_text_and_never_fails(text: str, line: str, said: datetime) -> None:
    for memory, cited in ((text, line), (f"Kim flies on Monday {text}", f"I went on Monday {line}"),
                          (f"Kim flies on Sunday {text}", f"I fly on Sunday {line}"),
                          (f"Kim flies on the 31st {text}", f"I fly on the 31st {line}"),
                          (f"Kim flew on the 31st {text}", f"I flew on the 31st {line}")):
        dated = anchor_weekdays(memory, said, [cited])
        assert dated.startswith(memory[:1]) and len(dated) >= len(memory)


@pytest.mark.parametrize(("memory", "line", "pronoun"), [
    ("Wei is 91 and still gardens every day.", "No, she just likes company. She's 91 and still gardens every day.",
     "she"),
    ("Wei loves climbing", "My brother? He loves climbing.", "he"),
    ("Wei's grandmother is 91", "She's 91 and still gardens every day.", None),  # said of someone else
    ("Wei is a data engineer", "She asked. I'm a data engineer.", None),  # the sentence says "I"
    ("Wei gardens every day", "I garden every day. She does too, and she is 91.", None),  # more words from "I"
    ("Maya is 91", "She's 91.", None),  # not said of the speaker
    # what she did to the speaker, not what she is (qwen1.5b, rightly)
    ("Wei is prescribed azithromycin", "Yes, I told her. She prescribed azithromycin instead.", None),
    # qwen1.5b stored the father's allergy as his daughter's: the clause that says it is his, the
    # "I" of the next clause is someone else's subject
    ("Wei is allergic to penicillin",
     "Oh, and one more for the list: Dad's allergic to penicillin, and I'm the contact if anything happens.", "dad"),
    ("Wei is allergic to penicillin", "My dad is allergic to penicillin.", "dad"),
    ("Wei is allergic to chicken", "My dog is allergic to chicken, so no treats.", "dog"),
    ("Wei is the contact if anything happens", "Dad's allergic to penicillin, and I'm the contact if anything "
                                               "happens.", None),  # the clause of the memory says "I"
    ("Wei went fishing", "My dad and I went fishing.", None),  # both went
    ("Wei's dad is allergic to penicillin", "Dad's allergic to penicillin.", None),  # said of him
    # only a number to go by (a repair's "Wei is 91." for "She's 91 ..."); and the speaker's own number
    ("Wei is 91.", "No, she just likes company. She's 91 and still gardens every day.", "she"),
    ("Wei is 34.", "She's 91 and I'm 34.", None),
    # fresh7 (qwen1.5b): it says whom by the relation ("his son"), the line by "he"
    ("Wei mentions that his son has G6PD deficiency", "minh, he's 3. he has g6pd deficiency, so some foods and "
                                                      "medicines can break down his red blood cells", None),    # fresh12 (qwen1.5b): "She's diabetic too" of his mother written "Kwabena's diabetic too": "'s" for "is"
    ("Wei's diabetic too, on linagliptin 5 mg.", "She's diabetic too, on linagliptin 5 mg. She's allergic to penicillin.",
     "she"),
    ("Wei's got two kids", "My brother Tomasz lives in Gdansk. He's got two kids.", "he"),
    ("Wei's diabetic too", "I'm diabetic too.", None),  # the speaker's own
    ("Wei's sister is diabetic", "She's diabetic too.", None),  # a possessive: whose it is, the memory says
])
def test_a_memory_is_misnamed_when_it_says_of_the_speaker_what_the_line_says_of_she(
        memory: str, line: str, pronoun: str | None) -> None:
    assert misnamed(memory, [Message(role="user", name="Wei", content=line)]) == pronoun


@pytest.mark.parametrize(("sentence", "kept"), [
    ("Oh, and I'm allergic to codeine.", "I'm allergic to codeine."),  # every lead-in goes
    ("No, she just likes company.", "She just likes company."),
    # fresh7: "no aspirin" was kept as "Aspirin.", the opposite; a word that means something stays
    ("no aspirin.", "no aspirin."),
    ("Right knee is still swollen.", "Right knee is still swollen."),
    ("Fine, no nuts in anything", "No nuts in anything."),
])
def test_a_sentence_kept_as_said_loses_its_lead_in_and_nothing_that_means_something(sentence: str, kept: str) -> None:
    assert said_whole(sentence) == kept


@pytest.mark.parametrize(("memory", "line", "named"), [
    # fresh6 (qwen1.5b): "Parveen is practicing a 20 km walk" for Parveen's "Abbu did a 20 km
    # practice walk on Sunday" (her dad, named in the conversation)
    ("Parveen is practicing a 20 km walk", "Abbu did a 20 km practice walk on Sunday.", "abbu"),
    ("Parveen walked 20 km with Abbu", "Abbu and I did a 20 km practice walk on Sunday.", None),  # named
    ("Parveen is practicing a 20 km walk", "Sunday I did a 20 km practice walk.", None),  # no one else's
    ("Parveen walked 20 km on Sunday", "Me and Abbu walked 20 km on Sunday.", None),  # both did
])
def test_a_memory_is_misnamed_when_the_line_says_it_of_someone_the_conversation_names(
        memory: str, line: str, named: str | None) -> None:
    cited = [Message(role="user", name="Parveen", content=line)]
    assert misnamed(memory, cited, frozenset({"Abbu", "Sunday"})) == named


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=60),
       st.text(st.characters(categories=("L", "Nd")), max_size=12))
def test_misnamed_answers_for_any_text(memory: str, line: str, name: str) -> None:
    cited = [Message(role="user", name=name or None, content=line), Message(role="assistant", content=line)]
    assert misnamed(f"{name} {memory}", cited) in (None, "she", "he", "they", *_KIN_OF)


async def test_a_memory_of_what_only_the_assistant_said_is_not_stored(reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Olivia", "content": "I'm going to Lisbon for a week in May.",
             "time": "2024-03-12T14:00:00Z"},
            {"role": "assistant", "content": "You could visit the Gulbenkian Museum and take tram 28."},
            {"role": "user", "name": "Olivia", "content": "We'll do tram 28 for sure. I start a new job soon."}]
    server.script(EXTRACT, memories(
        {"content": "Olivia will visit the Gulbenkian Museum", "sources": [1]},  # the assistant's idea
        {"content": "Olivia will ride tram 28 for sure", "sources": [1]},  # cites the assistant; Olivia said it too
        {"content": "Olivia starts a new job soon", "sources": [1]},  # a small model's sources are often off by one
        {"content": "Olivia is going to Lisbon in May", "sources": [0]},
        # qwen1.5b described the assistant's museum from what it knows: words no person said
        {"content": "The Gulbenkian Museum is a renowned art museum with a vast collection of European art.",
         "sources": [1]}))
    result = await reme.summarize_memory(chat, user_name="olivia")

    assert [n.content for n in result.added] == ["Olivia will ride tram 28 for sure", "Olivia starts a new job soon",
                                                 "Olivia is going to Lisbon in May 2024"]
    assert [(r.step, r.path) for r in result.rejected] == [("personal/extract", "memories[0]"),
                                                           ("personal/extract", "memories[4]")]
    assert "gulbenkian" in result.rejected[0].reason and "collection" in result.rejected[1].reason


async def test_memories_the_rewording_makes_the_same_are_one_and_a_question_is_none(
        reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Kate", "content": "I moved to Edinburgh last month for my PhD.",
             "time": "2024-06-17T09:00:00Z"},
            {"role": "assistant", "content": "Exciting! What is the PhD about?"},
            {"role": "user", "name": "Kate", "content": "Marine biology."}]
    server.script(EXTRACT, memories(
        {"content": "Kate moved to Edinburgh last month for her PhD", "sources": [0]},
        {"content": "I moved to Edinburgh last month for her PhD", "sources": [0]},  # the same, once reworded
        {"content": "What is the PhD about?", "sources": [1]},  # a question is no memory
        {"content": "Kate studies marine biology", "sources": [2]}))
    result = await reme.summarize_memory(chat, user_name="kate")

    assert [r.path for r in result.rejected] == ["memories[2]"]
    assert [n.content for n in result.added] == ["Kate moved to Edinburgh last month (May 2024) for her PhD",  # noqa
                                                 "Kate studies marine biology"]


REPAIR = "cannot be understood on its own"
GLUTEN = [{"role": "user", "name": "Ines", "content": "I have coeliac disease. Any breakfast ideas?",
           "time": "2024-03-02T08:00:00Z"},
          {"role": "assistant", "content": "Buckwheat pancakes are naturally gluten free. Ask for a separate pan."},
          {"role": "user", "name": "Ines", "content": "Nice, I'll make them for my brother Tomas on Sunday."}]


async def test_a_copy_of_the_assistants_advice_is_not_stored_and_complete_memories_need_no_repair(
        reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories(
        {"content": "Ines has coeliac disease", "sources": [0]},
        {"content": "Buckwheat pancakes are naturally gluten free.", "sources": [1, 2]},  # the assistant's, verbatim
        {"content": "Buckwheat pancakes are naturally gluten free. Ask for a separate pan.", "sources": [2]},
        {"content": "Ines will make buckwheat pancakes for her brother Tomas", "sources": [2]}))
    result = await reme.summarize_memory(GLUTEN, user_name="ines")

    assert [n.content for n in result.added] == [
        "Ines has coeliac disease", "Ines will make buckwheat pancakes for her brother Tomas on Sunday (3 March 2024)"]
    assert [r.path for r in result.rejected] == ["memories[1]", "memories[2]"]
    assert all("assistant" in r.reason for r in result.rejected)
    assert result.usage.calls == 1  # every memory kept stands on its own: no repair call


ZUBAIR = [{"role": "user", "name": "Zubair", "content": "I'm on acenocoumarol for my valve."},
          {"role": "assistant", "content": "Anything to avoid?"},
          {"role": "user", "name": "Zubair", "content": "No cranberry juice, ever, and no ibuprofen."}]


async def test_memories_that_only_name_no_one_are_kept_as_they_are_without_a_repair_call(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh13 (qwen1.5b): asked to name whom "No cranberry juice, ever, and no ibuprofen." is about, the
    # repair blanked most such memories; each is the user's (stored under them) and stands as said
    server.script(EXTRACT, memories({"content": "Zubair takes acenocoumarol for his heart valve", "sources": [0]},
                                    {"content": "No cranberry juice, ever, and no ibuprofen.", "sources": [2]}))
    result = await reme.summarize_memory(ZUBAIR, user_name="zubair")

    assert [n.content for n in result.added] == ["Zubair takes acenocoumarol for his heart valve",
                                                 "No cranberry juice, ever, and no ibuprofen."]
    assert result.usage.calls == 1 and not any(REPAIR in prompt_of(r["body"]) for r in server.requests)


async def test_beside_a_memory_the_repair_must_mend_one_naming_no_one_is_shown_too(
        reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "Acenocoumarol.", "sources": [0]},  # a fragment: the repair's
                                    {"content": "No cranberry juice, ever, and no ibuprofen.", "sources": [2]}))
    server.script(REPAIR, {"memories": [
        {"index": 0, "content": "Zubair takes acenocoumarol for his valve."},
        {"index": 1, "content": "Zubair must avoid cranberry juice and ibuprofen."}]})
    result = await reme.summarize_memory(ZUBAIR, user_name="zubair")

    assert sorted(n.content for n in result.added) == ["Zubair must avoid cranberry juice and ibuprofen.",
                                                       "Zubair takes acenocoumarol for his valve."]
    assert result.usage.steps["personal/repair"] == 1


@pytest.mark.parametrize(("said", "written", "stored"), [
    # fresh9 (qwen1.5b, a long dialogue): "She needs an eye check ..." was stored for "I need ..."
    ("I need an eye check every year because of the hydroxychloroquine.",
     "She needs an eye check every year because of the hydroxychloroquine.",
     "Precious needs an eye check every year because of the hydroxychloroquine."),
    ("Oh, and my husband Tendai drives me to the clinic.", "Her husband Tendai drives her to the clinic.",
     "Precious's husband Tendai drives her to the clinic."),
    # "she" is someone else: the repair's to mend, kept as it was when there is none
    ("My sister Rutendo is a pharmacist, so she checks everything.", "She checks everything.",
     "She checks everything."),
    ("My daughter Mia is allergic to penicillin.", "Her allergy is to penicillin.", "Her allergy is to penicillin."),
    ("I told my mum she needs a check-up.", "She needs a check-up.", "She needs a check-up."),
])
async def test_a_memory_saying_she_for_the_speakers_own_i_names_the_speaker_without_a_repair(
        reme: ReMe, server: OpenAITestServer, said: str, written: str, stored: str) -> None:
    server.script(EXTRACT, memories({"content": written, "sources": [0]}))
    result = await reme.summarize_memory([{"role": "user", "name": "Precious", "content": said}],
                                         user_name="precious")

    assert stored in [n.content for n in result.added]
    repaired = any(REPAIR in prompt_of(r["body"]) for r in server.requests)
    assert repaired == (stored == written)


async def test_a_misnamed_memory_citing_the_assistants_line_beside_is_found_by_the_line_it_comes_from(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh12 (qwen1.5b): "Ximena is allergic to bee stings ..." (her daughter's) cited "Good idea."
    chat = [{"role": "user", "name": "Ximena", "content": "My daughter Antonia is eight."},
            {"role": "assistant", "content": "And Antonia?"},
            {"role": "user", "name": "Ximena", "content": "She's allergic to bee stings, so I've given the school one "
                                                          "of her EpiPens."},
            {"role": "assistant", "content": "Good idea."}]
    server.script(EXTRACT, memories({"content": "Ximena is allergic to bee stings.", "sources": [3]},
                                    {"content": "Ximena's daughter Antonia is eight.", "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="ximena")

    added = [n.content for n in result.added]
    assert not any(a.startswith("Ximena is allergic") for a in added), added
    assert any("Antonia" in a and "allergic to bee stings" in a for a in added), added  # kept as said, named
    # a memory given to the wrong one goes to no repair call of its own (fresh31-fresh35, qwen1.5b: of about ten such
    # calls, one mended its memory; the others gave it back, or nothing); its health fact is kept as said
    assert not any(REPAIR in prompt_of(r["body"]) for r in server.requests)


@pytest.mark.parametrize(("note", "sources"), [("(says 'I', 'we' or 'my': name them)", [2, 3]),
                                             ('(says "I", "we" or "my": name them)', [2, 3]),
                                             ("(a fragment, not a sentence)", [2, 3]),
                                             ("", [1, 3])])  # two speakers cited: whose "my"?
async def test_the_repairs_copy_of_the_problem_note_is_not_stored_nor_a_rewrite_still_in_the_first_person(
        reme: ReMe, server: OpenAITestServer, note: str, sources: list[int]) -> None:
    # fresh13 (qwen0.5b): the repair wrote "Kasper first, then my sister Tahira (says 'I', 'we' or
    # 'my': name them)" for a memory it was to name, and it was stored so
    chat = [{"role": "user", "name": "Shireen", "content": "Kasper's here too."},
            {"role": "user", "name": "Kasper", "content": "Hello."},
            {"role": "assistant", "content": "Who should the hospital contact if needed?"},
            {"role": "user", "name": "Shireen", "content": "Kasper first, then my sister Tahira."}]
    server.script(EXTRACT, memories({"content": "Kasper first.", "sources": sources}))  # a fragment
    server.script(REPAIR, {"memories": [{"index": 0, "content": f"Kasper first, then my sister Tahira {note}"}]})
    result = await reme.summarize_memory(chat, user_name="shireen")

    assert any(REPAIR in prompt_of(r["body"]) for r in server.requests)
    assert not any("name them" in n.content or "fragment" in n.content or "my sister" in n.content
                   for n in result.added), [n.content for n in result.added]


async def test_fragments_and_memories_naming_no_one_get_one_repair_call(
        reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Kate", "content": "I started a PhD in Edinburgh.",
             "time": "2024-06-17T09:00:00Z"},
            {"role": "assistant", "content": "Exciting! What is it about?"},
            {"role": "user", "name": "Kate", "content": "Marine biology. My cat Miso comes along."},
            {"role": "assistant", "content": "Who feeds Miso while you are at sea?"},
            {"role": "user", "name": "Kate", "content": "Tomas will."}]
    server.script(EXTRACT, memories(
        {"content": "Kate started a PhD in Edinburgh", "sources": [0]},
        {"content": "Marine biology.", "sources": [2]},  # a fragment: its subject is the assistant's question
        {"content": "Tomas will.", "sources": [4]},
        {"content": "She has a cat called Miso", "sources": [2]},  # Kate's "My cat": named by code, no repair
        {"content": "Miso comes along", "sources": [2]}))  # names no one of the conversation
    server.script(REPAIR, {"memories": [
        {"index": 0, "content": "Kate's PhD is in marine biology"},
        {"index": 1, "content": "Tomas will."},  # still a fragment: dropped
        {"index": 2, "content": ""}]})  # nothing to say: the memory stays as it was
    result = await reme.summarize_memory(chat, user_name="kate")

    assert sorted(n.content for n in result.added) == ["Kate has a cat called Miso", "Kate started a PhD in Edinburgh",
                                                       "Kate's PhD is in marine biology", "Miso comes along"]
    assert [r.path for r in result.rejected] == ["memories[2]"] and "fragment" in result.rejected[0].reason
    assert result.usage.calls == 2
    (repair,) = [prompt_of(r["body"]) for r in server.requests if REPAIR in prompt_of(r["body"])]
    assert "What is it about?" in repair and "Who feeds Miso" in repair  # the lines around what each cites
    assert "I started a PhD" not in repair  # and only those


async def test_a_rewrite_keeping_nothing_the_memory_named_is_not_taken(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh14 (qwen1.5b): "Never an ACE inhibitor, ramipril, lisinopril ..." went to the repair and
    # no memory of it was stored; a small model's rewrites can be one index off
    chat = [{"role": "user", "name": "Bronagh", "content": "Never an ACE inhibitor, ramipril, lisinopril, any of the "
                                                            "prils, they can bring on a bad attack. No pill with "
                                                            "oestrogen in it either, so I have the copper coil.",
             "time": "2026-09-10T09:20:00Z"}]
    server.script(EXTRACT, memories(
        {"content": "Never an ACE inhibitor, ramipril, lisinopril, any of the prils.", "sources": [0]},
        {"content": "They can bring on a bad attack.", "sources": [0]}))  # a pronoun: the repair is called
    server.script(REPAIR, {"memories": [{"index": 0, "content": "Bronagh has the copper coil because of oestrogen"}]})
    result = await reme.summarize_memory(chat, user_name="bronagh")

    added = [n.content for n in result.added]
    assert "Never an ACE inhibitor, ramipril, lisinopril, any of the prils." in added  # kept as it was
    assert "Bronagh has the copper coil because of oestrogen" not in added, (added, result.rejected, result.usage.steps)
    assert result.usage.steps.get("personal/repair") == 1


async def test_a_failed_repair_drops_the_fragments_and_keeps_the_rest(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "Ines has coeliac disease", "sources": [0]},
                                    {"content": "Sunday.", "sources": [2]},
                                    {"content": "Her brother is Tomas", "sources": [2]}))
    server.script(REPAIR, "I cannot help with that.")
    result = await reme.summarize_memory(GLUTEN, user_name="ines")

    # the fragment's Sunday is kept with the sentence that says it (`unheld_dates`)
    assert [n.content for n in result.added] == [
        "Ines has coeliac disease", "Ines will make them for Ines's brother Tomas on Sunday (3 March 2024).",
        "Her brother is Tomas"]
    assert any(r.step == "personal/repair" for r in result.rejected)
    assert [r.path for r in result.rejected if r.step == "personal/extract"] == ["memories[1]"]


async def test_the_prompts_own_placeholders_are_no_memories(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "the memory", "sources": [0]},  # qwen0.5b copies the example
                                    {"content": "Ines has coeliac disease", "sources": [0]},
                                    {"content": "Sunday.", "sources": [2]}))
    server.script(REPAIR, {"memories": [{"index": 0, "content": "the rewritten memory, or an empty string"}]})
    result = await reme.summarize_memory(GLUTEN, user_name="ines")

    assert [n.content for n in result.added] == [
        "Ines has coeliac disease", "Ines will make them for Ines's brother Tomas on Sunday (3 March 2024)."]
    assert [r.path for r in result.rejected if r.step != "personal/dated"] == ["memories[0]", "memories[2]"]
    (repair,) = [prompt_of(r["body"]) for r in server.requests if REPAIR in prompt_of(r["body"])]
    assert "Sunday." in repair and "the memory" not in repair.split("Memories:")[1]


ROBERT = [{"role": "user", "name": "Robert", "content": "Everyone calls me Bobby, actually; Robert feels too formal.",
           "time": "2024-10-14T09:00:00Z"},
          {"role": "assistant", "content": "Bobby it is! What do you do?"},
          {"role": "user", "name": "Robert", "content": "I'm a high school chemistry teacher. I'm allergic to latex."},
          {"role": "assistant", "content": "Good to know."},
          {"role": "user", "name": "Robert", "content": "Thanks, have a good one!"}]


async def test_a_long_conversation_is_read_in_overlapping_windows(reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b wrote one memory, of the last line, for a 20-line session: a small model reads the
    # end of a long prompt; each window of at most 8 lines worth reading gets its own extraction call
    topics = ["sailing", "chess", "pottery", "tango", "climbing", "baking", "cycling", "knitting", "rowing", "judo"]
    chat = []
    for i, topic in enumerate(topics):
        chat += [{"role": "user", "name": "Ines", "content": f"I took up {topic} in {2010 + i}.",
                  "time": "2024-06-03T19:00:00Z"}, {"role": "assistant", "content": "Nice!"}]
    server.script(EXTRACT, lambda body: memories(*(
        {"content": f"Ines took up {t} in {2010 + i}", "sources": [2 * i]}
        for i, t in enumerate(topics) if f"] Ines: I took up {t} " in prompt_of(body))))
    result = await reme.summarize_memory(chat, user_name="ines")

    windows = sorted((prompt_of(r["body"]).split("Conversation:")[1] for r in server.requests
                      if EXTRACT in prompt_of(r["body"])), key=lambda w: "[0]" not in w)  # sent together
    assert len(windows) == 2 and result.usage.calls == 2
    # numbered as in the whole; Ines's lines marked, each after the line before it (the assistant's "Nice!")
    assert "> [0]" in windows[0] and "> [8]" in windows[0] and "[10]" not in windows[0]
    assert "> [10]" in windows[1] and "  [9]" in windows[1] and "> [18]" in windows[1] and "[19]" not in windows[1]
    assert "[8]" not in windows[1]  # the two lines a window shares with the one before are that one's to read
    assert sorted(n.content for n in result.added) == sorted(f"Ines took up {t} in {2010 + i}"
                                                             for i, t in enumerate(topics))


async def test_a_conversation_with_few_lines_worth_reading_is_read_by_one_call(reme: ReMe,
                                                                               server: OpenAITestServer) -> None:
    # fresh20: a 15-line dialogue with 8 lines worth reading took two extraction calls (parts were
    # 12 lines of any kind), while a 12-line session with 9 was read by one
    topics = ["sailing", "chess", "pottery", "tango", "climbing", "baking", "cycling", "knitting"]
    chat = []
    for i, topic in enumerate(topics):
        chat += [{"role": "user", "name": "Ines", "content": f"I took up {topic} in {2010 + i}.",
                  "time": "2024-06-03T19:00:00Z"}, {"role": "assistant", "content": "Nice!"}]
    server.script(EXTRACT, memories(*({"content": f"Ines took up {t} in {2010 + i}", "sources": [2 * i]}
                                      for i, t in enumerate(topics))))
    result = await reme.summarize_memory(chat, user_name="ines")

    assert result.usage.calls == 1 and len(result.added) == len(topics)
    (prompt,) = [prompt_of(r["body"]) for r in server.requests if EXTRACT in prompt_of(r["body"])]
    assert all(f"> [{2 * i}] " in prompt for i in range(len(topics)))


@given(st.integers(min_value=1, max_value=300), st.data())
def test_the_windows_of_a_conversation_cover_every_line_and_read_each_marked_line_once(count: int,
                                                                                        data: st.DataObject) -> None:
    messages = [Message(role="user", name="Ines", content=f"line {i}") for i in range(count)]
    marked = data.draw(st.sets(st.integers(min_value=0, max_value=count - 1)))
    transcript = Transcript.of(messages, T0)
    windows = transcript.windows(marked)
    assert sorted({i for w in windows for i in w}) == list(range(count))
    assert [w[0] for w in windows] == sorted(w[0] for w in windows)
    # each marked line is read ("> [i]") by exactly one window, and no window reads more than WINDOW
    reads = [[i for i in marked if f"> [{i}] " in transcript.marked_in(w, marked)] for w in windows]
    assert sorted(i for r in reads for i in r) == sorted(marked)
    assert all(len(r) <= WINDOW for r in reads) and (len(windows) == 1) == (len(marked) <= WINDOW)
    assert all(reads) or not marked  # no window without a line to read when there are some


async def test_the_extraction_reads_the_lines_worth_reading_each_after_the_line_before(
        reme: ReMe, server: OpenAITestServer) -> None:
    # shown only these, marked, qwen1.5b found as much as when it read the whole conversation and
    # was shown again the lines its memories held nothing of, in half the calls (fresh13)
    server.script(EXTRACT, memories({"content": "Everyone calls Robert Bobby", "sources": [0]},
                                    {"content": "Robert is allergic to latex", "sources": [2]}))
    await reme.summarize_memory(ROBERT, user_name="robert")

    (prompt,) = [prompt_of(r["body"]) for r in server.requests if EXTRACT in prompt_of(r["body"])]
    lines = prompt.split("Conversation:")[1].split("\n\n")[0].splitlines()
    # the nickname (a clause of two words worth remembering), the job and allergy (a health word),
    # the assistant's question before them; not the small talk, nor the assistant's line before it
    assert [line[:6] for line in lines if line.strip()] == ["> [0] ", "  [1] ", "> [2] "]


@pytest.mark.parametrize(("said", "read"), [
    (["I'm starting methotrexate, 15 mg once a week."], [0]),  # a number, a health word
    (["Any pets?", "Nope."], [1]),  # an answer to the line before's question
    (["I outgrew my cat allergy, can you believe it?"], [0]),  # a question with a fact
    (["我对花生过敏。"], [0]),  # Chinese: not judged, read
    (["Thanks, have a good one!"], []), (["Haha, same."], []), (["How are you?"], []),  # small talk
])
def test_the_lines_worth_reading(said: list[str], read: list[int]) -> None:
    messages = [Message(role="user", name="Ines" if k % 2 == len(said) % 2 else "Ana", content=text)
                for k, text in enumerate(said)]
    assert sorted(worth_reading(Transcript.of(messages, T0))) == read


async def test_a_chinese_conversation_is_read_with_the_chinese_prompt(make_reme: Callable[..., ReMe],
                                                                     server: OpenAITestServer) -> None:
    server.script("阅读下面的对话", memories({"content": "小林对花生过敏", "sources": [0], "importance": 1.0}))
    async with make_reme(prompts={"language": "zh"}) as zh:
        result = await zh.summarize_memory([{"role": "user", "name": "小林", "content": "我对花生过敏。"},
                                            {"role": "assistant", "content": "记住了。"}], user_name="小林")

    assert [n.content for n in result.added] == ["小林对花生过敏"]
    (prompt,) = [prompt_of(r["body"]) for r in server.requests]
    assert "> [0]" in prompt and "记住了" not in prompt  # the assistant's reply after it is not read


async def test_memories_that_hold_every_line_need_one_call(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, memories({"content": "Everyone calls Robert Bobby; Robert feels too formal", "sources": [0]},
                                    {"content": "Robert is a high school chemistry teacher", "sources": [2]},
                                    {"content": "Robert is allergic to latex", "sources": [2]}))
    result = await reme.summarize_memory(ROBERT, user_name="robert")

    assert len(result.added) == 3 and result.usage.calls == 1 and not result.rejected


async def test_what_no_one_said_and_talk_about_the_assistant_are_no_memories(
        reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Ivy", "content": "Hi! Just saying hi. Nice weather today, isn't it?",
             "time": "2024-05-03T10:00:00Z"},
            {"role": "assistant", "content": "It is lovely! 17 times 23 is 391, by the way."},
            {"role": "user", "name": "Ivy", "content": "My sister is visiting from Porto on Sunday."}]
    server.script(EXTRACT, memories(
        {"content": "Ivy is a friendly and outgoing person"},  # a small model asked about small talk
        {"content": "Ivy asked the assistant about the weather"},
        {"content": "Ivy's sister is visiting from Porto on Sunday", "sources": [2]},
        {"content": "Ivy finds the weather nice today", "sources": [0]}))  # said, in other words: kept
    result = await reme.summarize_memory(chat, user_name="ivy")

    assert [n.content for n in result.added] == ["Ivy's sister is visiting from Porto on Sunday (5 May 2024)",
                                                 "Ivy finds the weather nice today (3 May 2024)"]
    assert [r.path for r in result.rejected] == ["memories[0]", "memories[1]"]
    assert "no one said" in result.rejected[0].reason and "friendly" in result.rejected[0].reason
    assert "assistant" in result.rejected[1].reason


async def test_a_memory_in_other_words_that_holds_a_health_word_or_a_name_said_is_kept(
        reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b wrote "... has specific dietary restrictions" beside a pregnancy it was told of, and
    # "asks to be called Lif": most of their words no one said, but what matters in them was said
    chat = [{"role": "user", "name": "Aisha", "content": "I'm pregnant, so no raw fish for me.",
             "time": "2024-05-03T10:00:00Z"},
            {"role": "user", "name": "Elif", "content": "Everyone calls me Lif."}]
    server.script(EXTRACT, memories(
        {"content": "Aisha is pregnant and has specific dietary restrictions", "sources": [0]},
        {"content": "Elif requests being addressed as Lif", "sources": [1]},
        {"content": "Aisha is a friendly and outgoing person", "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="aisha")

    # ... and what the restrictions are, which it left out, is kept as said (`restricted`)
    assert [n.content for n in result.added] == ["Aisha is pregnant and has specific dietary restrictions",
                                                 "Elif requests being addressed as Lif",
                                                 "Aisha is pregnant, so no raw fish for Aisha."]
    assert [(r.step, r.path) for r in result.rejected] == [("personal/extract", "memories[2]"),
                                                           ("personal/kept", "")]


async def test_a_memory_in_the_first_person_is_named_or_repaired(reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Dan", "content": "I'm not vegetarian any more.", "time": "2024-05-03T10:00:00Z"},
            {"role": "assistant", "content": "What changed?"},
            {"role": "user", "name": "Dan", "content": "My doctor said I was low on iron. We eat fish now."},
            {"role": "user", "name": "Eva", "content": "I went to Rome with Dan."}]
    server.script(EXTRACT, memories(
        {"content": "Dan is not vegetarian any more", "sources": [0]},
        {"content": "My doctor said I was low on iron", "sources": [1]},  # off by one: the speaker is still known
        {"content": "We eat fish now", "sources": [2]},  # the speaker is one of "we"
        {"content": "I went to Rome with Dan", "sources": [2, 3]}))  # two speakers: whose "I"? the repair names them
    server.script(REPAIR, {"memories": [{"index": 0, "content": "Eva went to Rome with Dan"}]})
    result = await reme.summarize_memory(chat, user_name="dan")

    assert [n.content for n in result.added] == ["Dan is not vegetarian any more",
                                                 "Dan's doctor said Dan was low on iron", "Dan eats fish now",
                                                 "Eva went to Rome with Dan"]
    (repair,) = [prompt_of(r["body"]) for r in server.requests if REPAIR in prompt_of(r["body"])]
    assert "I went to Rome with Dan (says" in repair


async def test_an_update_that_keeps_the_stored_text_takes_the_candidates(reme: ReMe, server: OpenAITestServer) -> None:
    veg = await reme.add_memory("Dan has been vegetarian for ten years", user_name="dan")
    server.script(EXTRACT, memories({"content": "Dan is not vegetarian any more", "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0,
                                        "text": "Dan has been vegetarian for ten years"}))
    result = await reme.summarize_memory([{"role": "user", "name": "Dan", "content": "I'm not vegetarian any more."}],
                                         user_name="dan")

    (updated,) = result.updated
    assert updated.memory_id == veg.memory_id and updated.content == "Dan is not vegetarian any more"
    assert [v.node.content for v in await reme.history(veg.memory_id)] == [veg.content]
    assert [r.path for r in result.rejected] == ["decisions[0].text"]


async def test_an_update_that_keeps_the_stored_text_of_something_else_adds_the_candidate_beside_it(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh3 (qwen1.5b): "Camille is a pharmacist in Lyon, ..." was "updated" to itself for "Camille
    # started at the CHU yesterday", and the candidate's text replaced it: the pharmacist was lost
    job = await reme.add_memory("Camille is a pharmacist at the CHU in Grenoble", user_name="camille")
    server.script(EXTRACT, memories({"content": "Camille started at the CHU yesterday", "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0, "text": job.content}))
    result = await reme.summarize_memory([{"role": "user", "name": "Camille", "content": "I started at the CHU "
                                           "yesterday!", "time": "2024-10-01T09:00:00Z"}], user_name="camille")

    assert [n.content for n in result.added] == ["Camille started at the CHU yesterday (30 September 2024)"]
    assert result.updated == [] and (await reme.get_memory(job.memory_id)).content == job.content
    (kept,) = result.rejected
    assert kept.path == "decisions[0]" and "the memory stays" in kept.reason


async def reconciled(reme: ReMe, server: OpenAITestServer, user: str, stored: str, said: str, candidate: str,
                     merged: str | None, action: str = "UPDATE") -> tuple[MemoryNode, Any]:
    """`user` has the memory `stored` and says `said`; the model extracts `candidate` and merges it
    into the stored memory as `merged` (or decides `action` on it). The stored node and the summary's result."""
    old = await reme.add_memory(stored, user_name=user.lower())
    server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": action, "id": 0 if action == "UPDATE" else None,
                                        "text": merged}))
    result = await reme.summarize_memory([{"role": "user", "name": user, "content": said}], user_name=user.lower())
    return old, result


async def test_an_update_that_states_again_what_its_line_ends_takes_the_candidates_text(
        reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b, fresh8: "came off the prednisone" UPDATEd "Benedikt was taking pyridostigmine, 60 mg
    # four times a day, and prednisone ..." to "Benedikt is taking" both: the ended dose stated again
    stored = "Benedikt was taking pyridostigmine, 60 mg four times a day, and prednisone, 20 mg every morning"
    said = "Pyridostigmine is down to three times a day, same 60 mg. And I came off the prednisone completely."
    candidate = "Benedikt came off the prednisone completely"
    old, result = await reconciled(reme, server, "Benedikt", stored, said, candidate,
                                   stored.replace("was taking", "is taking"))

    assert (await reme.get_memory(old.memory_id)).content == candidate
    assert not any("four times" in n.content for n in await reme.list_memory(user_name="benedikt"))
    assert any(r.action == "defaulted" and "again" in r.reason for r in result.rejected)


async def test_an_update_that_drops_what_someone_is_keeps_the_memory_and_adds_the_candidate(
        reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b, fresh20: "Kavita is Girish's wife" was UPDATEd to the move: the wife was lost
    stored = "Kavita is Girish's wife"
    candidate = "Girish moved to Mickleover, bigger garden, Kavita is thrilled"
    old, result = await reconciled(reme, server, "Girish", stored, "We moved to Mickleover, bigger garden, "
                                   "Kavita's thrilled.", candidate, candidate)

    assert (await reme.get_memory(old.memory_id)).content == stored
    assert [n.content for n in result.added] == [candidate]
    assert any("would drop what it says someone is (wife)" in r.reason for r in result.rejected)


@pytest.mark.parametrize(("stored", "said", "candidate", "merged"), [
    # a relation said again in the words of its group, or one the line ends, is no relation dropped
    ("Dapo is Ayodele's fiancé", "Dapo and I got married on Saturday.", "Ayodele married Dapo on Saturday",
     "Dapo is Ayodele's husband; they married on Saturday"),
    ("Dapo is Ayodele's boyfriend", "Dapo and I got married on Saturday.", "Ayodele married Dapo on Saturday",
     "Ayodele married Dapo on Saturday"),
])
async def test_an_update_that_says_the_relation_anew_is_followed(
        reme: ReMe, server: OpenAITestServer, stored: str, said: str, candidate: str, merged: str) -> None:
    old, result = await reconciled(reme, server, "Ayodele", stored, said, candidate, merged)

    assert (await reme.get_memory(old.memory_id)).content != stored
    assert not any("would drop what it says someone is" in r.reason for r in result.rejected)


async def test_an_update_to_another_memorys_text_adds_the_candidate_instead(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh6 (qwen1.5b): "The doctor doubled the amlodipine in August" was UPDATEd into one stored
    # memory with another stored memory's text; the decision was dropped, and the new dose with it
    first = await reme.add_memory("Kostas is on amlodipine, 5 mg every morning", user_name="kostas")
    other = await reme.add_memory("Kostas is on amlodipine for his blood pressure", user_name="kostas")
    candidate = "Kostas is on amlodipine and his blood pressure readings were still high at the clinic"
    server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0, "text": other.content}))
    await reme.summarize_memory([{"role": "user", "name": "Kostas", "content": "My blood pressure readings were "
                                  "still high at the clinic, on the amlodipine."}], user_name="kostas")

    (reconcile,) = [prompt_of(r["body"]) for r in server.requests if RECONCILE in prompt_of(r["body"])]
    today = utcnow().date().isoformat()
    # in the order they were said: 0 is updated to 1's text
    assert f"0. [{today}] {first.content}\n1. [{today}] {other.content}" in reconcile
    stored = [n.content for n in await reme.list_memory(user_name="kostas")]
    assert {first.content, other.content, candidate} <= set(stored)


async def test_an_update_does_not_merge_away_a_health_fact_the_candidate_says_nothing_of(
        reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b replaced "Victor takes atorvastatin ... He also has gout" with the new dose alone:
    # the gout went with the old dose.
    old, result = await reconciled(
        reme, server, "Victor", "Victor takes atorvastatin, 20 mg in the evening. He also has gout.",
        "My doctor doubled the atorvastatin to 40 mg.", "Victor's doctor doubled the atorvastatin to 40 mg",
        "Victor's doctor doubled the atorvastatin to 40 mg")

    # the line ends the old dose: the memory keeps the gout ("He" said of whom it starts with), the new dose beside it
    (updated,) = result.updated
    assert updated.memory_id == old.memory_id and updated.content == "Victor also has gout."
    assert [n.content for n in result.added] == ["Victor's doctor doubled the atorvastatin to 40 mg"]
    (kept,) = [r for r in result.rejected if r.path == "decisions[0]"]
    assert kept.action == "defaulted" and "also has gout" in kept.reason


async def test_an_update_by_a_candidate_saying_nothing_of_a_stored_condition_adds_it_beside(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh6 (qwen1.5b): "Parveen's dad has type 2 diabetes." was UPDATEd to "... stops the
    # gliclazide altogether ...": a medicine stopped, and the diabetes was gone from every memory.
    # (A diet may end so -- "Dan started eating fish again" for "Dan is vegetarian" -- a condition not.)
    server.script(REPAIR, {"memories": []})  # it names no speaker: kept as it is
    old, result = await reconciled(
        reme, server, "Parveen", "Rafiq has type 2 diabetes",
        "And my dad stopped the gliclazide altogether.", "Rafiq stopped the gliclazide altogether",
        "Rafiq stopped the gliclazide altogether")

    assert result.updated == [] and [n.content for n in result.added] == ["Rafiq stopped the gliclazide altogether"]
    assert (await reme.get_memory(old.memory_id)).content == old.content
    (beside,) = [r for r in result.rejected if r.path == "decisions[0]"]
    assert "diabetes" in beside.reason


async def test_an_update_that_drops_a_health_fact_it_shares_words_with_keeps_the_stored_memory(
        reme: ReMe, server: OpenAITestServer) -> None:
    # One sentence holds the dose the candidate changes and the condition it does not mention:
    # no sentence can be put back without the old dose, so the candidate is added beside it.
    old, result = await reconciled(
        reme, server, "Victor", "Victor takes atorvastatin for his cholesterol and has gout",
        "I now take 40 mg of atorvastatin.", "Victor now takes 40 mg of atorvastatin", "Victor takes 40 mg of atorvastatin")

    assert result.updated == [] and [n.content for n in result.added] == ["Victor now takes 40 mg of atorvastatin"]
    assert (await reme.get_memory(old.memory_id)).content == old.content


@pytest.mark.parametrize(("user", "stored", "said", "candidate", "merged"), [
    # the candidate speaks of the health fact it changes
    ("Mia", "Mia lives in Lyon. She is allergic to cats.", "I outgrew my cat allergy, can you believe it?",
     "Mia outgrew her cat allergy", "Mia lives in Lyon and can be around cats now"),
    # no sentence of the stored memory shares a word with the candidate: the model replaced all of
    # it, and putting its health word back would state a value the user changed
    ("Dan", "Dan has been vegetarian for ten years.", "I started eating fish and chicken again.",
     "Dan started eating fish and chicken again", "Dan started eating fish and chicken again"),
])
async def test_an_update_that_changes_a_health_fact_is_applied_as_merged(
        reme: ReMe, server: OpenAITestServer, user: str, stored: str, said: str, candidate: str, merged: str) -> None:
    old, result = await reconciled(reme, server, user, stored, said, candidate, merged)

    (updated,) = result.updated
    assert updated.memory_id == old.memory_id and updated.content == merged


GRANDMOTHER = [
    {"role": "user", "name": "Wei", "content": "Anyway, I'm taking Friday off to visit my grandmother in Utrecht.",
     "time": "2024-09-05T17:30:00Z"},
    {"role": "assistant", "content": "Enjoy! Is it her birthday?", "time": "2024-09-05T17:31:00Z"},
    {"role": "user", "name": "Wei", "content": "No, she just likes company. She's 91 and still gardens every day.",
     "time": "2024-09-05T17:32:00Z"},
]


@pytest.mark.parametrize("repaired", [True, False])
async def test_a_memory_saying_of_the_speaker_what_the_line_says_of_she_is_repaired_or_dropped(
        reme: ReMe, server: OpenAITestServer, repaired: bool) -> None:
    # qwen1.5b wrote "Wei is 91 years old and still enjoys gardening every day." for Wei's "She's
    # 91 and still gardens every day." (his grandmother): a wrong fact about the user.
    server.script(EXTRACT, memories(
        {"content": "Wei is taking Friday off to visit his grandmother in Utrecht", "sources": [0]},
        {"content": "Wei is 91 years old and still enjoys gardening every day.", "sources": [2]}))
    server.script(REPAIR, {"memories": [{"index": 0, "content": "Wei's grandmother is 91 and still gardens every day."}]}
                  if repaired else {"memories": [{"index": 0, "content": "Wei is 91 and gardens every day."}]})
    result = await reme.summarize_memory(GRANDMOTHER, user_name="wei")

    assert [n.content for n in result.added] == [
        "Wei is taking Friday off to visit his grandmother in Utrecht",
        *(["Wei's grandmother is 91 and still gardens every day."] if repaired else [])]
    repair = next(prompt_of(r["body"]) for r in server.requests if REPAIR in prompt_of(r["body"]))
    assert "my grandmother in Utrecht" in repair  # the line that says who "she" is
    if not repaired:
        assert any(r.path == "memories[1]" and r.action == "dropped" and "she" in r.reason for r in result.rejected)


def topic_vectors(texts: list[str]) -> list[list[float]]:
    """Vectors of meaning for a few topics (an embedder that, unlike the hashing one, embeds
    meaning): where someone lives, what they eat, their health; one text per topic."""
    topics = (("paris", "berlin", "lives", "moved"), ("risotto", "dish", "vegetarian", "fish"), ("iron", "doctor"))
    out = []
    for text in texts:
        v = [float(any(w in text.lower() for w in topic)) for topic in topics] + [0.1]
        out.append(v)
    return out


@pytest.mark.parametrize(("stored", "said", "candidate", "kept"), [
    # qwen1.5b "updated" Dan's favourite risotto to his doctor's iron advice: the risotto was lost
    # (shown beside a memory about his doctor, so that the reconcile is asked at all)
    ("Dan enjoys mushroom risotto as his favourite dish", "My doctor said I was low on iron.",
     "Dan's doctor said Dan was low on iron", True),
    # the same kind of fact, changed: the update stands though no word is shared
    ("Dan lives in Paris", "I moved to Berlin.", "Dan moved to Berlin", False),
])
async def test_an_update_of_a_memory_about_something_else_adds_the_candidate_instead(
        make_reme: Callable[..., ReMe], server: OpenAITestServer, stored: str, said: str, candidate: str,
        kept: bool) -> None:
    async with served_vectors(make_reme, server, topic_vectors) as reme:
        await reme.add_memory("Dan sees his doctor in Lyon", user_name="dan")  # about iron's doctor, not risotto
        old = await reme.add_memory(stored, user_name="dan")
        server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))

        def update_stored(body: dict[str, Any]) -> dict[str, Any]:
            shown = re.search(rf"^(\d+)\. \[[^]]*\] {re.escape(stored)}$", prompt_of(body), re.MULTILINE)
            assert shown is not None
            return decisions({"candidate": 0, "action": "UPDATE", "id": int(shown[1]), "text": candidate})

        server.script(RECONCILE, update_stored)
        result = await reme.summarize_memory([{"role": "user", "name": "Dan", "content": said}], user_name="dan")
        now = await reme.get_memory(old.memory_id)

    if kept:
        assert result.updated == [] and [n.content for n in result.added] == [candidate] and now.content == stored
        assert any(r.path == "decisions[0]" and r.action == "defaulted" and "something else" in r.reason
                   for r in result.rejected)
    else:
        assert result.added == [] and [n.content for n in result.updated] == [candidate] and now.content == candidate


@pytest.mark.parametrize(("said", "candidate", "reconciled_too"), [
    # every candidate about something else than every memory shown: the reconcile could only add
    ("My doctor said I was low on iron.", "Dan's doctor said Dan was low on iron", False),
    # one about a memory shown: it is asked
    ("I moved to Berlin.", "Dan moved to Berlin", True),
    # about something else, but its line says a memory shown has ended: it is asked
    ("I'm not vegetarian any more and my doctor said I was low on iron.", "Dan's doctor said Dan was low on iron",
     True),
])
async def test_no_reconcile_call_when_no_candidate_is_about_a_memory_shown(
        make_reme: Callable[..., ReMe], server: OpenAITestServer, said: str, candidate: str,
        reconciled_too: bool) -> None:
    async with served_vectors(make_reme, server, topic_vectors) as reme:
        stored = [await reme.add_memory(text, user_name="dan")
                  for text in ("Dan lives in Paris", "Dan has been vegetarian for ten years")]
        server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))
        server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
        result = await reme.summarize_memory([{"role": "user", "name": "Dan", "content": said}], user_name="dan")
        kept = [(await reme.get_memory(n.memory_id)).content for n in stored]

    asked = [r for r in server.requests if RECONCILE in prompt_of(r["body"])]
    assert len(asked) == int(reconciled_too)
    if not reconciled_too:
        assert result.usage.calls == 1  # the extraction alone
    if "vegetarian" in said:  # the ending rule updates the memory the line ends
        assert [n.content for n in result.updated] == [candidate] and kept[0] == "Dan lives in Paris"
    elif "moved" in said:  # so does a move, where he lived
        assert [n.content for n in result.updated] == [candidate]
        assert kept == [candidate, "Dan has been vegetarian for ten years"]
    else:
        assert [n.content for n in result.added] == [candidate] and result.updated == []
        assert kept == ["Dan lives in Paris", "Dan has been vegetarian for ten years"]


@pytest.mark.parametrize(("second", "left"), [
    # fresh22 (qwen1.5b): the first line ended the sick leave, the second the school: both go
    ("I moved schools, I teach maths in Rondebosch now.", None),
    # a second line that ends nothing of what the first left: that stays
    ("I teach maths in Gugulethu still, the same school.", "Nokuthula teaches maths at a high school in Gugulethu."),
])
async def test_two_lines_that_each_end_a_part_of_one_memory_both_end_it(
        reme: ReMe, server: OpenAITestServer, second: str, left: str | None) -> None:
    old = await reme.add_memory("Nokuthula teaches maths at a high school in Gugulethu, but Nokuthula is on sick "
                                "leave until the operation", user_name="nokuthula")
    server.script(EXTRACT, memories({"content": "Nokuthula is no longer on sick leave", "sources": [0]},
                                    {"content": "Nokuthula teaches maths now", "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD", "id": None, "text": None},
                                       {"candidate": 1, "action": "ADD", "id": None, "text": None}))
    await reme.summarize_memory([{"role": "user", "name": "Nokuthula", "content": "I'm no longer on sick leave."},
                                 {"role": "user", "name": "Nokuthula", "content": second}], user_name="nokuthula")

    now = await reme.list_memory(user_name="nokuthula")
    assert (next((n.content for n in now if n.memory_id == old.memory_id), None)) == left


async def test_a_memory_of_work_that_ended_keeps_nothing_of_it_whole(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh22 (qwen1.5b): "Portuguese and French" kept the court interpreting whole once it had ended
    old = await reme.add_memory("Margarida is a court interpreter in Coimbra, Portuguese and French",
                                user_name="margarida")
    server.script(EXTRACT, memories({"content": "Margarida works from home, translating books", "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD", "id": None, "text": None}))
    result = await reme.summarize_memory([{"role": "user", "name": "Margarida", "content": (
        "Since the 1st of October I work from home, translating books for a publishing house in Lisbon.")}],
        user_name="margarida")

    assert [n.content for n in result.updated] == ["Margarida works from home, translating books"]
    assert (await reme.get_memory(old.memory_id)).content == "Margarida works from home, translating books"


@pytest.mark.parametrize(("user", "stored", "said", "candidate"), [
    ("Irene", "Irene works as an accountant at Deloitte", "Big news: I quit Deloitte and now I'm a pastry chef.",
     "Irene is a pastry chef now"),
    ("Dan", "Dan has been vegetarian for ten years", "I'm not vegetarian any more, I started eating fish again.",
     "Dan is no longer vegetarian and eats fish again"),
    # fresh's two stale values no rule saw (qwen1.5b added the candidate beside the memory)
    ("Mia", "Mia is allergic to amoxicillin", "Turns out I'm not allergic to amoxicillin after all, the test was clear.",
     "Mia's allergy test for amoxicillin was clear"),
    ("Leo", "Leo is presenting at the Vienna conference in May", "I've pulled out of Vienna, too much on at work.",
     "Leo has too much on at work"),
    ("Sam", "Sam's wedding is planned for June", "We called off the wedding.",
     "Sam called off the wedding"),
    # fresh5's stale values (qwen1.5b added the candidate beside the memory): a dose changed...
    ("Alasdair", "Alasdair is on levothyroxine, 50 micrograms every morning",
     "They upped my levothyroxine to 75 micrograms, I feel less sluggish.",
     "Alasdair's levothyroxine went up to 75 micrograms"),
    ("Esperanza", "Esperanza takes sertraline, 50 mg every morning", "My GP put my sertraline up to 100 mg.",
     "Esperanza's GP put her sertraline up to 100 mg"),
    # an update dialogue (qwen1.5b kept both doses): the new one after a colon, no "to"
    ("Kwame", "Kwame takes metformin, 500 mg twice a day", "The GP doubled my metformin: 1000 mg twice a day now.",
     "Kwame's GP doubled his metformin to 1000 mg twice a day"),
    # ... a medicine come off, a plan given up in so many words
    ("Soraya", "The GP gave Soraya ondansetron, 4 mg, up to three times a day",
     "The sickness has finally stopped, so I've come off the ondansetron.", "Soraya has come off the ondansetron"),
    ("Soraya", "Soraya is planning to give birth at home", "No home birth now, they want me to deliver in hospital.",
     "Soraya will deliver in hospital"),
    # fresh8's stale values (qwen1.5b added the candidate beside the memory): a number in words...
    ("Benedikt", "Benedikt is taking pyridostigmine, 60 mg four times a day",
     "Pyridostigmine is down to three times a day, same 60 mg.",
     "Benedikt's pyridostigmine is down to three times a day, same 60 mg"),
    ("Filipa", "Filipa uses estradiol gel, two pumps every evening", "The gel is up to three pumps, the flushes crept back.",
     "Filipa's estradiol gel is up to three pumps"),
    # ... a medicine finished or replaced
    ("Mirko", "Mirko takes ursodeoxycholic acid, 500 mg twice a day", "The ursodeoxycholic acid is finished.",
     "Mirko has finished the ursodeoxycholic acid"),
    ("Mirko", "Mirko takes ursodeoxycholic acid, 500 mg twice a day, and cholestyramine sachets for the itching",
     "The ursodeoxycholic acid and the cholestyramine are finished.",
     "Mirko has finished the ursodeoxycholic acid and the cholestyramine"),
    ("Filipa", "Filipa takes progesterone capsules, 100 mg at bedtime",
     "And the progesterone capsules are replaced by a Mirena coil.",
     "Filipa has a Mirena coil instead of the progesterone capsules"),
    # ... a new value said instead of the old one, of what the sentence is about (fresh7)
    ("Esteban", "Esteban takes 800 mg of lithium at night",
     "My lithium level came back too high at the clinic, so it's 600 mg now instead of 800.",
     "Esteban's lithium level came back too high at the clinic, so it's 600 mg now instead of 800"),
    ("Wei", "Wei takes warfarin, 3 mg a day", "They cut my warfarin to 2.", "Wei's warfarin was cut to 2"),
    # ... what was stopped done again
    ("Benedikt", "Benedikt stopped cycling to work for now", "I've been cycling to work again!",
     "Benedikt is cycling to work again"),
    # ... someone else in a role
    ("Benedikt", "Benedikt's neurologist is Dr Pichler at the university hospital in Graz",
     "Dr Pichler moved to Linz, so my neurologist is now Dr Steinwender.",
     "Dr Pichler moved to Linz, so Benedikt's neurologist is now Dr Steinwender"),
    ("Dolores", "Dolores' social worker is Ms Abernathy", "Ms Abernathy left, so their social worker is Mr Delgado now.",
     "Ms Abernathy left, so Dolores' social worker is Mr Delgado now"),
    # fresh9's stale values (qwen1.5b added the candidate beside the memory): what ended named by "it"
    # in another clause, or in the sentence before...
    ("Teodor", "Teodor takes topiramate, 25 mg at night",
     "The topiramate made my hands tingle and I couldn't sleep, so it was stopped.", "Teodor's topiramate was stopped"),
    ("Ines", "Ines takes azathioprine, 100 mg a day", "The azathioprine pushed my liver tests up. They stopped it.",
     "Ines's azathioprine was stopped"),
    ("Wei", "Wei takes warfarin, 3 mg a day", "I was on warfarin for years, but they took me off it.",
     "Wei is off warfarin"),
    ("Wei", "Wei takes warfarin, 3 mg a day", "They switched me from warfarin to apixaban.",
     "Wei was switched from warfarin to apixaban"),
    # ... what was stopped back, someone else in a role without "now", a move, a new employer
    ("Bilal", "Bilal has stopped coffee completely", "Coffee is back too, one cup in the morning.",
     "Bilal's coffee is back, one cup in the morning"),
    ("Ines", "Ines's gastroenterologist is Dr Fuentes in Valparaiso", "My gastroenterologist here is Dr Araya.",
     "Ines's gastroenterologist is Dr Araya"),
    ("Ana", "Ana's dentist is Dr Costa in Porto", "My new dentist is Dr Silva.", "Ana's new dentist is Dr Silva"),
    ("Ines", "Ines lives in Valparaiso", "We moved to Santiago.", "Ines moved to Santiago"),
    ("Rui", "Rui works as an engineer at Siemens", "I started at Bosch.", "Rui started at Bosch"),
    ("Ximena", "Ximena is working from home for now", "I'm back in the office three days a week.",
     "Ximena is back in the office three days a week"),
    # ... a dose changed, said of "it"; a role one holds at a time, with a new name
    ("Bilal", "Bilal takes sumatriptan, 50 mg, when one starts", "The sumatriptan helps, so they put it up to 100 mg.",
     "Bilal's sumatriptan was put up to 100 mg"),
    ("Kofi", "Kofi's GP is Dr Mensah in Kumasi", "My GP is Dr Osei.", "Kofi's GP is Dr Osei"),
    # fresh10 (qwen1.5b kept the old dose): "it" is what the clause before names after its subject
    ("Nadia", "Nadia's daughter Leila takes levetiracetam, 250 mg twice a day",
     "The neurologist put her levetiracetam up, so it's 500 mg twice a day now.",
     "Leila's levetiracetam is 500 mg twice a day now"),
    ("Ximena", "Ximena needs a blood test every month", "Blood tests every three months now instead of every month.",
     "Ximena's blood tests are every three months now"),
    # ... someone gone, a new holder named after whose relation they are
    ("Lautaro", "Don Ernesto is Lautaro's foreman and runs the pickers", "Don Ernesto retired after the harvest.",
     "Lautaro's foreman Don Ernesto retired after the harvest"),
    ("Lautaro", "Don Ernesto is Lautaro's foreman and runs the pickers", "The new foreman is his nephew, Leandro.",
     "Lautaro's new foreman is Leandro"),
    ("Lautaro", "Lautaro's grandma Rose lives in Mendoza", "Grandma Rose passed away.",
     "Lautaro's grandma Rose passed away"),
    # fresh10 (qwen1.5b kept both): a practice's name is no health fact; a move said with more words
    ("Bea", "Bea's GP is Dr Hollis at Brookfield Surgery", "Dr Hollis retired at Christmas.",
     "Bea's GP Dr Hollis retired at Christmas"),
    ("Bea", "Bea lives on her own in a first-floor flat on Cowley Road",
     "At the end of February I moved into the annexe at my daughter Greta's, in Headington.",
     "Bea moved into the annexe at her daughter Greta's in Headington at the end of February 2026"),
    # fresh11 (qwen1.5b kept the old ones): "has gone", "'s finished", "ended", "tapered off", "took its
    # place", "separated", each said here of another thing than in the part tuned on
    ("Ola", "Ola takes omeprazole, 20 mg a day", "The omeprazole has gone, my stomach settled.",
     "Ola's omeprazole has gone"),
    ("Ola", "Ola uses a steroid nasal spray every morning", "The nasal spray's finished; the hay fever is over.",
     "Ola's nasal spray is finished"),
    ("Sam", "Sam does hydrotherapy at the Royal on Mondays", "The hydrotherapy ended in May.",
     "Sam's hydrotherapy ended in May 2026"),
    ("Wei", "Wei takes warfarin, 3 mg a day", "The cardiologist weaned me off the warfarin over the summer.",
     "Wei was weaned off warfarin"),
    ("Wei", "Wei takes warfarin, 3 mg a day", "They tapered me off the warfarin. Apixaban took its place, 5 mg "
     "twice a day.", "Wei takes apixaban, 5 mg twice a day, in place of warfarin"),
    ("Kofi", "Kofi's partner Abena is the one to call in an emergency", "Abena and I separated in the spring.",
     "Kofi and Abena separated in the spring"),
    # fresh12 (qwen1.5b kept the old ones): "went", "out of the picture", someone who "left"
    ("Wei", "Wei takes bisoprolol, 5 mg each morning", "I had a pacemaker fitted, and the bisoprolol went.",
     "Wei had a pacemaker fitted, and his bisoprolol was stopped"),
    ("Ana", "Ana's piano teacher is Dr Hollis", "Dr Hollis is out of the picture, I learn from videos now.",
     "Ana learns the piano from videos now"),
    ("Ana", "Ana's piano teacher is Tomasz, on Mondays", "Tomasz left in June, so it's Marta on Mondays now.",
     "Ana's piano teacher on Mondays is Marta"),
    # a name of three letters is a word the line and the memory share
    ("Kofi", "Kofi's partner Tom is the one to call in an emergency", "Tom and I split up before Christmas.",
     "Kofi and Tom split up before Christmas"),
    # fresh14 (qwen1.5b kept the old ones): a doctor who handed someone over, or is away
    ("Noor", "Noor's neurologist is Dr Hendriks at the Radboud",
     "Dr Hendriks has handed me over to Dr Smit, so she's my neurologist from now on.",
     "Noor's neurologist is Dr Smit from now on"),
    ("Noor", "Noor's GP is Dr Okoye", "Dr Okoye has gone on maternity leave, and Dr Ward is my GP until the spring.",
     "Dr Okoye has gone on maternity leave, and Noor's GP is Dr Ward until the spring"),
    # fresh13 (qwen1.5b): a last cigarette ends smoking
    ("Wendelin", "Wendelin smokes, which sets off his cluster headaches",
     "I smoked my last cigarette at Christmas.", "Wendelin smoked his last cigarette at Christmas"),
    # fresh24 (qwen1.5b kept the old ones): a move said with another person, a restart of what was stopped, what
    # "it" is when a clause naming the doctor stands between, a clause whose subject is the one before it
    ("Laleh", "Laleh is living alone in an apartment in North York, on the 14th floor",
     "My boyfriend Dariush and I moved in together, into a house in Hamilton.",
     "Laleh and her boyfriend Dariush moved into a house in Hamilton"),
    ("Laleh", "Laleh stopped Laleh's iron tablets in January 2026, they made the cramps worse",
     "And I've restarted iron, a different one, ferrous bisglycinate every other day.",
     "Laleh has restarted iron: ferrous bisglycinate every other day"),
    ("Laleh", "Laleh takes mesalazine, 4.8 grams a day",
     "The mesalazine wasn't enough on its own, so my gastroenterologist, Dr Farahani, stopped it and switched me "
     "to ustekinumab.", "Laleh's gastroenterologist, Dr Farahani, switched her from mesalazine to ustekinumab"),
    ("Gwilym", "Pirfenidone makes Gwilym sensitive to the sun, so factor 50 and a hat",
     "The pirfenidone gave me a bad sunburn rash and killed my appetite, so Dr Pritchard stopped it.",
     "The pirfenidone gave Gwilym a bad sunburn rash and killed his appetite, so Dr Pritchard stopped it"),
])
async def test_a_memory_the_line_says_has_ended_is_updated_even_when_the_model_adds_beside_it(
        reme: ReMe, server: OpenAITestServer, user: str, stored: str, said: str, candidate: str) -> None:
    # qwen1.5b added "Irene quit Deloitte and now she's a pastry chef" beside "Irene works as an
    # accountant at Deloitte": the old job stayed stated as current
    await updated_in_place(reme, server, user, stored, said, candidate, "ADD", "ended")


@pytest.mark.parametrize(("said", "ends"), [
    # fresh15 (qwen1.5b): what a clause before a colon says has ended is not what the clause after it says
    # (the wedding after the colon ends the girlfriend, not Selin: `WED`)
    ("Dr Demirtas chose the dose, but she's not my doctor any more: Selin and I got married in September.",
     {"girlf"}),
    ("Selin is not my girlfriend any more: we got married in September.", {"selin", "girlf"}),
])
def test_a_colon_parts_the_clauses_of_what_has_ended(said: str, ends: set[str]) -> None:
    assert ending(said, "Selin is Kemal's girlfriend", "Kemal", own=True) == ends


@pytest.mark.parametrize(("said", "ends"), [
    # fresh10 (qwen1.5b kept the old date): a new value "now, not" the old one
    ("The growth scan moved it: they're saying the 12th of May now, not the 19th.", {"19th"}),
    ("It's the 19th now, not the 12th.", set()),  # the memory's value is the new one
    ("The 12th of May is the scan, not the birth.", set()),
])
def test_a_value_said_now_and_not_the_old_one_ends_the_old(said: str, ends: set[str]) -> None:
    assert ending(said, "Aroha is 28 weeks pregnant with her first, due on the 19th of May", "Aroha") == ends


@pytest.mark.parametrize(("stored", "said", "candidate"), [
    ("Ji-ho's girlfriend is Hana", "Hana and I got married on the 12th of September, a small wedding.",
     "Ji-ho and Hana got married on the 12th of September"),
    ("Ji-ho's boyfriend is Tomas", "We got engaged at the weekend!", "Ji-ho and Tomas got engaged"),
])
async def test_a_girlfriend_the_user_married_is_no_longer_stated_as_one(
        reme: ReMe, server: OpenAITestServer, stored: str, said: str, candidate: str) -> None:
    # fresh18 (qwen1.5b kept "Ji-ho's girlfriend is Hana" beside the wedding, stale)
    await reme.add_memory(stored, user_name="ji-ho")
    server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
    await reme.summarize_memory([{"role": "user", "name": "Ji-ho", "time": "2026-10-13T09:00:00Z", "content": said}],
                                user_name="ji-ho")

    texts = [n.content for n in await reme.list_memory(user_name="ji-ho")]
    assert not [t for t in texts if "friend" in t] and [t for t in texts if "married" in t or "engaged" in t]


@pytest.mark.parametrize(("stored", "gone", "left"), [
    ("Radek is taking furosemide, ramipril, and dalteparin injections to manage his kidney function.",
     {"furos", "dalte"}, "Radek is taking ramipril to manage his kidney function."),
    ("Radek is taking furosemide, ramipril, and dalteparin injections to manage his kidney function.",
     {"dalte"}, "Radek is taking furosemide and ramipril to manage his kidney function."),
    ("Wei takes warfarin, aspirin, paracetamol.", {"aspir"}, "Wei takes warfarin and paracetamol."),
    ("Wei takes warfarin, aspirin, paracetamol and insulin.", {"aspir"}, "Wei takes warfarin, paracetamol and insulin."),
    ("Wei takes warfarin or aspirin or paracetamol.", {"aspir"}, "Wei takes warfarin or paracetamol."),
    # no list of medicines; every thing of it gone; nothing gone: the memory as it is
    ("Soraya is taking ondansetron for morning, noon, and night.", {"ondan"},
     "Soraya is taking ondansetron for morning, noon, and night."),
    ("Wei takes warfarin and aspirin.", {"warfa", "aspir"}, "Wei takes warfarin and aspirin."),
    ("Wei takes warfarin and aspirin.", {"parac"}, "Wei takes warfarin and aspirin."),
])
def test_a_list_of_medicines_loses_only_what_ended(stored: str, gone: set[str], left: str) -> None:
    assert unlisted(stored, gone) == left


@pytest.mark.parametrize(("said", "stored", "own", "ends"), [
    # fresh20: a stop said with the medicine first is the speaker's own; "finished in", "is done" end
    ("Furosemide stopped, no swelling at all.", "Radek is taking furosemide.", True, {"furos"}),
    ("Furosemide stopped in September.", "Radek is taking furosemide.", True, {"furos"}),
    ("The Ponticelli finished in September.", "Radek started the Ponticelli regime.", False, {"ponti"}),
    ("The last prednisolone month is done.", "Radek is taking prednisolone.", True, {"predn"}),
    # someone else's stop; a finish that is no end of it
    ("Furosemide stopped working for Mum.", "Radek is taking furosemide.", True, set()),
    # fresh23 (qwen1.5b): the word that says something stopped is not what stopped
    ("And the aspirin has been stopped, she says I don't need it.",
     "Radek must never stop the prednisolone suddenly.", True, set()),
    ("I finished the scarf for Mum.", "Radek is knitting a scarf.", True, set()),
])
def test_a_stop_said_with_the_thing_first_ends_it(said: str, stored: str, own: bool, ends: set[str]) -> None:
    assert ending(said, stored, "Radek", own=own) == ends


@pytest.mark.parametrize(("said", "ends"), [
    ("I've left the restaurant.", {"chef"}),
    ("I've had to sell the salon, so I teach hairdressing at the college in town now.", {"chef"}),
    ("I'm not going back on the tools.", {"chef"}),
    # another's work, the same work, teaching that is no job, leaving somewhere else: nothing ends
    ("Kavita teaches at the college now.", set()),
    ("I teach my son to cook.", set()),
    ("I'm still a head chef, I teach on Sundays.", set()),
    ("I left the party early.", set()),
    ("I teach cookery to other chefs now.", set()),
])
def test_other_work_or_work_left_ends_what_the_user_works_as(said: str, ends: set[str]) -> None:
    assert ending(said, "Girish is a head chef", "Girish", own=True) == ends


@pytest.mark.parametrize(("said", "stored", "ends"), [
    # fresh22 (qwen1.5b kept each old job as current): a new workplace ends where the user worked; new work said
    # from a day, or taught at a college, ends what they worked as
    ("Yes, since the 4th of May, but not in Gugulethu: I moved schools, I teach maths in Rondebosch now.",
     "Nokuthula teaches maths at a high school in Gugulethu", {"gugul"}),
    ("We moved to Amersfoort in August, and I switched to a practice there.",
     "Nokuthula is a physiotherapist at a practice in Utrecht", {"utrec"}),
    ("Since the 1st of October I work from home, translating books for a publishing house in Lisbon.",
     "Nokuthula is a court interpreter in Coimbra, Portuguese and French", {"inter", "coimb"}),
    ("From the 1st of September I teach cooking at the culinary college.",
     "Nokuthula is a chef at a hotel in Tashkent", {"chef", "tashk"}),
    # the same place, another's move, a move of home, work from home on a day: nothing ends
    ("I moved schools, I teach maths in Gugulethu now.", "Nokuthula teaches maths at a high school in Gugulethu",
     set()),
    ("My sister switched to a practice in Utrecht.", "Nokuthula is a physiotherapist at a practice in Utrecht", set()),
    ("I work from home on Fridays.", "Nokuthula is a court interpreter in Coimbra", set()),
    ("I moved schools, I teach maths in Rondebosch now.", "Nokuthula lives in Gugulethu", set()),
])
def test_a_new_workplace_or_new_work_ends_where_and_what_the_user_worked(said: str, stored: str, ends: set[str]) -> None:
    assert ending(said, stored, "Nokuthula", own=True) == ends


@pytest.mark.parametrize(("said", "stored", "ends"), [
    # fresh22 (qwen1.5b): the sister stayed first beside the partner who is first now
    ("Busisiwe is still on the list, but my partner Siyabonga moved in, so he's first now and Busisiwe second.",
     "Nokuthula's sister, Busisiwe, is first.", {"first"}),
    ("My partner Siyabonga first, my sister Busisiwe second.", "Nokuthula's emergency contacts: Busisiwe. She's first.",
     {"first"}),
    # the same place, someone not in the memory, no place given
    ("Busisiwe is still first.", "Nokuthula's sister, Busisiwe, is first.", set()),
    ("Thandi second.", "Nokuthula's sister, Busisiwe, is first.", set()),
    ("Busisiwe is still on the list.", "Nokuthula's sister, Busisiwe, is first.", set()),
])
def test_a_new_place_in_whom_to_call_ends_the_old_one(said: str, stored: str, ends: set[str]) -> None:
    assert ending(said, stored, "Nokuthula", own=True) == ends


@pytest.mark.parametrize(("said", "stored", "ends"), [
    ("Hana and I got married in September.", "Ji-ho's girlfriend is Hana", {"girlf"}),
    ("I married Tomas last year.", "Ji-ho's boyfriend is Tomas", {"boyfr"}),
    # someone else's wedding, another name, an engagement of a fiancée: nothing ends
    ("My sister got married in May.", "Ji-ho's girlfriend is Hana", set()),
    ("Ana and I got married.", "Ji-ho's girlfriend is Hana", set()),
    ("We got engaged!", "Ji-ho's fiancée is Hana", set()),
    # fresh20: a wedding said in one word, as the line starts
    ("Married! On the 12th of September.", "Ji-ho's boyfriend Tomas is moving in next month", {"boyfr"}),
    ("Married friends of ours came over.", "Ji-ho's boyfriend Tomas is moving in next month", set()),
])
def test_a_wedding_ends_a_girlfriend_or_boyfriend(said: str, stored: str, ends: set[str]) -> None:
    assert ending(said, stored, "Ji-ho", own=True) == ends


async def updated_in_place(reme: ReMe, server: OpenAITestServer, user: str, stored: str, said: str, candidate: str,
                           action: str, why: str) -> None:
    """The model decides `action` on `candidate`; the stored memory is updated to it instead, and a
    defaulted decision says `why`."""
    old, result = await reconciled(reme, server, user, stored, said, candidate, None, action=action)

    (updated,) = result.updated
    assert result.added == [] and updated.memory_id == old.memory_id and updated.content == candidate
    assert any(r.action == "defaulted" and why in r.reason for r in result.rejected)


@pytest.mark.parametrize(("asked", "said", "stored", "candidate", "ends"), [
    # fresh9: "And the budesonide?" "Finished in August, thank goodness." (qwen1.5b kept the old dose)
    ("And the budesonide?", "Finished, thank goodness.", "Ines takes budesonide, 9 mg every morning",
     "Ines has finished the budesonide", True),
    ("Still on the warfarin?", "No, they took me off it.", "Wei takes warfarin, 3 mg a day", "Wei is off warfarin",
     True),
    ("Are you still vegetarian?", "Nope.", "Wei is vegetarian", "Wei is no longer vegetarian", True),
    # a "no" ends only what a "still" question asks about
    ("Any new allergies?", "No.", "Wei is allergic to peanuts", "Wei has no new allergies", False),
    # fresh23 (qwen1.5b): "Are you driving again?" -- "Yes, the eye specialist cleared me"
    ("Are you driving again?", "Yes, the eye specialist cleared me.",
     "Wei is not to drive until the eye specialist has checked Wei", "Wei is driving again", True),
    ("Are you driving again?", "No, not yet.",
     "Wei is not to drive until the eye specialist has checked Wei", "Wei is not driving yet", False),
])
async def test_a_short_answer_ends_what_the_question_before_it_asks_about(
        reme: ReMe, server: OpenAITestServer, asked: str, said: str, stored: str, candidate: str, ends: bool) -> None:
    user = stored.split()[0]
    old = await reme.add_memory(stored, user_name=user.lower())
    server.script(EXTRACT, memories({"content": candidate, "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD", "id": None, "text": None}))
    result = await reme.summarize_memory([{"role": "assistant", "content": f"Thanks. {asked}"},
                                          {"role": "user", "name": user, "content": said}], user_name=user.lower())

    now = (await reme.get_memory(old.memory_id)).content
    assert (now, [n.content for n in result.added]) == ((candidate, []) if ends else (stored, [candidate]))


@pytest.mark.parametrize(("user", "stored", "said", "candidate"), [
    ("Irene", "Irene works as an accountant at Deloitte", "Big news: I quit Deloitte and now I'm a pastry chef.",
     "Irene is a pastry chef now"),
    ("Benedikt", "Benedikt is taking pyridostigmine, 60 mg four times a day",
     "Pyridostigmine is down to three times a day, same 60 mg.",
     "Benedikt's pyridostigmine is down to three times a day, same 60 mg"),
])
async def test_a_candidate_called_known_whose_line_ends_a_memory_still_ends_it(
        reme: ReMe, server: OpenAITestServer, user: str, stored: str, said: str, candidate: str) -> None:
    # a NONE ("already known") of a candidate whose line says the memory shown has ended: what is
    # known is not what the memory says any more
    await updated_in_place(reme, server, user, stored, said, candidate, "NONE", "NONE")


@pytest.mark.parametrize(("user", "stored", "said", "candidate", "kept"), [
    # fresh5: the old dose stayed stated beside the new one; the condition must not go with it
    ("Alasdair", "Alasdair is hypothyroid, diagnosed last autumn, and Alasdair is on levothyroxine, 50 micrograms "
     "every morning", "They upped my levothyroxine to 75 micrograms.",
     "Alasdair's levothyroxine went up to 75 micrograms", "Alasdair is hypothyroid, diagnosed last autumn."),
    ("Alasdair", "Alasdair is hypothyroid, diagnosed last autumn, and he is on levothyroxine, 50 micrograms",
     "They upped my levothyroxine to 75 micrograms.", "Alasdair's levothyroxine went up to 75 micrograms",
     "Alasdair is hypothyroid, diagnosed last autumn."),
    ("Fatoumata", "Fatoumata is vegetarian, and Fatoumata cooks for two, Fatoumata and her partner Idrissa",
     "I'm not vegetarian any more, I eat chicken and fish again.", "Fatoumata is not vegetarian any more",
     "Fatoumata cooks for two, Fatoumata and her partner Idrissa."),
    ("Soraya", "Soraya is sick as a dog and is taking ondansetron. Beatrix is her midwife.",
     "I've come off the ondansetron.", "Soraya has come off the ondansetron",
     "Soraya is sick as a dog. Beatrix is her midwife."),
    # the "and" of a list is no clause of its own: "night" goes with the part it belongs to
    ("Soraya", "Soraya is sick as a dog and is taking ondansetron for morning, noon, and night",
     "I've come off the ondansetron.", "Soraya has come off the ondansetron", "Soraya is sick as a dog."),
    # fresh8: a memory that says something else has ended can still end in part
    ("Mirko", "Mirko is taking tacrolimus, 4 mg twice a day. Mirko's ursodeoxycholic acid is finished.",
     "Tacrolimus is down to 2 mg twice a day.", "Mirko's tacrolimus is down to 2 mg twice a day",
     "Mirko's ursodeoxycholic acid is finished."),
    # fresh9 (qwen1.5b): the whole memory went, and her job and partner with it; "she" is whom it starts with
    ("Ximena", "Ximena is working from home for now, she is an architect. Her partner Ignacio does the shopping.",
     "I'm back in the office three days a week.", "Ximena is back in the office three days a week",
     "Ximena is an architect. Her partner Ignacio does the shopping."),
    # ... and what follows "and is" is said of whom the memory starts with
    ("Ximena", "Ximena is taking azathioprine and budesonide for her flare, and is on a low-fibre diet",
     "I came off the azathioprine and the budesonide.", "Ximena came off the azathioprine and the budesonide",
     "Ximena is on a low-fibre diet."),
    # fresh10 (qwen1.5b): "..., requiring warfarin ..." is a part of its own: the condition stays
    ("Bea", "Bea is 71 years old and has atrial fibrillation, requiring warfarin at 3 mg every evening",
     "They took me off the warfarin in March.", "Bea is off the warfarin", "Bea is 71 years old and has atrial "
     "fibrillation."),
    ("Bea", "Bea is 71 years old and has atrial fibrillation, so she is on warfarin, 3 mg every evening at six",
     "They took me off the warfarin in March.", "Bea is off the warfarin", "Bea is 71 years old and has atrial "
     "fibrillation."),
    # fresh15 (qwen1.5b): a medicine of a list that goes on is no part of the one before it that ended: the
    # clindamycin went with the doxycycline, and the adalimumab's candidate took the whole memory's place
    ("Kemal", "Kemal is on adalimumab, forty milligrams every week; doxycycline, a hundred milligrams a day, and "
     "clindamycin gel on the lumps morning and night", "The adalimumab stopped working over the summer, so I'm on "
     "secukinumab now, three hundred milligrams every four weeks. The doxycycline is gone too.",
     "Kemal's adalimumab stopped working, so Kemal is on secukinumab now, three hundred milligrams every four weeks, "
     "and the doxycycline is gone too", "Kemal is on clindamycin gel on the lumps morning and night."),
    # fresh20 (qwen1.5b): two of a list of three stopped; the list was kept whole (it named the kidney)
    ("Radek", "Radek is taking furosemide, ramipril, and dalteparin injections to manage his kidney function",
     "Furosemide stopped, dalteparin stopped too.", "Radek's furosemide stopped, dalteparin stopped too",
     "Radek is taking ramipril to manage his kidney function."),
    ("Wei", "Wei takes warfarin and aspirin for his heart, and Paracetamol for the pain",
     "They took me off the warfarin.", "Wei is off the warfarin",
     "Wei takes aspirin for his heart, and Paracetamol for the pain."),  # what it is for stays as said (fresh35)
    # fresh20 (qwen1.5b): "two and a half" is no two parts; a "no driving" ends when driving is allowed again
    ("Girish", "Girish has to drink two and a half to three litres a day, and Girish is a head chef",
     "I can drink normally now, no more three litres.", "Girish can drink normally now", "Girish is a head chef."),
    ("Hemi", "Hemi is on levetiracetam. No driving for at least six months, that is the seizure rule",
     "I'm allowed to drive again now.", "Hemi is allowed to drive again",
     "Hemi is on levetiracetam."),
    ("Hemi", "Hemi is on levetiracetam. No flying till the neurosurgeon clears Hemi",
     "The neurosurgeon has cleared me to fly.", "The neurosurgeon has cleared Hemi to fly",
     "Hemi is on levetiracetam."),
    # fresh20 (qwen1.5b): other work now, or work left, ends what the memory says the user works as
    ("Girish", "Girish is a head chef, and Girish is allergic to co-trimoxazole",
     "I've left the restaurant. I teach cookery at the further education college now.",
     "Girish teaches cookery at the further education college now", "Girish is allergic to co-trimoxazole."),
    ("Hemi", "Hemi is a builder, and Hemi has epilepsy",
     "I'm not going back on the tools. I've started teaching carpentry at Wintec.",
     "Hemi teaches carpentry at Wintec", "Hemi has epilepsy."),
    # ... and what "they" say of her is not said of her: "Bea like her between 2 and 3" was kept
    ("Bea", "Bea has a stroke behind her. Bea takes warfarin every evening, they like her INR between 2 and 3",
     "They took me off the warfarin.", "Bea is off the warfarin", "Bea has a stroke behind her."),
])
@pytest.mark.parametrize("action", ["ADD", "UPDATE"])  # UPDATE: merged into the candidate's text alone
async def test_a_memory_the_line_ends_in_part_keeps_the_rest_and_the_candidate_goes_beside_it(
        reme: ReMe, server: OpenAITestServer, user: str, stored: str, said: str, candidate: str, kept: str,
        action: str) -> None:
    old, result = await reconciled(reme, server, user, stored, said, candidate, candidate, action=action)

    (updated,) = result.updated
    assert updated.memory_id == old.memory_id and updated.content == kept
    assert [n.content for n in result.added] == [candidate]
    assert (await reme.get_memory(old.memory_id)).content == kept
    assert [(v.node.content, v.event) for v in await reme.history(old.memory_id)] == [(stored, "UPDATE")]


@pytest.mark.parametrize(("stored", "said", "candidate"), [
    # fresh20 (qwen1.5b): what was left ("It's doing Hemi's head in, excuse the pun.") kept the rule whole
    ("Can't go up ladders, can't drive to sites. It's doing Hemi's head in, excuse the pun.",
     "I'm allowed to drive again.", "Hemi is allowed to drive again"),
    # ... and a condition the memory says is over keeps nothing whole
    ("Hemi is still on the levetiracetam, no more seizures.", "They weaned me off the levetiracetam.",
     "They weaned Hemi off the levetiracetam"),
])
async def test_a_memory_whose_rest_holds_nothing_worth_keeping_goes_with_what_ended(
        reme: ReMe, server: OpenAITestServer, stored: str, said: str, candidate: str) -> None:
    old, result = await reconciled(reme, server, "Hemi", stored, said, candidate, None, action="ADD")

    texts = [n.content for n in await reme.list_memory(user_name="hemi")]
    assert stored not in texts and not any("cannot stand alone" in r.reason or "names a condition" in r.reason
                                           for r in result.rejected), (texts, result.rejected)


async def test_a_memory_whose_rest_cannot_stand_alone_stays_whole_beside_the_candidate(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh9 (qwen1.5b): "Ximena is taking azathioprine and budesonide ..., and Ibuprofen ..." was deleted
    # whole when the azathioprine ended: what else it said went with it
    stored = "Wei's warfarin and aspirin are for his heart, and Paracetamol for the pain"
    old, result = await reconciled(reme, server, "Wei", stored, "They took me off the warfarin.",
                                   "Wei is off the warfarin", None, action="ADD")

    assert result.updated == [] and [n.content for n in result.added] == ["Wei is off the warfarin"]
    assert (await reme.get_memory(old.memory_id)).content == stored
    assert any("cannot stand alone" in r.reason for r in result.rejected)


@pytest.mark.parametrize(("stored", "said", "kept"), [
    # fresh12 (qwen1.5b): the dose went up, what was left without it could not stand ("Never after
    # noon" of the medicine), so the old dose stayed stated beside the new one
    ("Oisín is nine, he has ADHD, and he takes Equasym XL 20 mg at breakfast. Never after noon, or he won't sleep.",
     "His consultant moved him up to 30 mg of the Equasym.",
     "Oisín is nine, he has ADHD, and he takes Equasym XL 30 mg at breakfast. Never after noon, or he won't sleep."),
    ("Oisín is nine and takes melatonin, three mg at bedtime.", "His consultant moved him up to 5 mg of the melatonin.",
     "Oisín is nine and takes melatonin, 5 mg at bedtime."),
    # two numbers where the medicine is: not changed in place
    ("Oisín is nine, he has ADHD, and he takes Equasym XL 20 mg at 8 and noon. Never after noon, or he won't sleep.",
     "His consultant moved him up to 30 mg of the Equasym.", None),
])
async def test_a_changed_value_in_a_memory_whose_rest_cannot_stand_alone_is_changed_in_place(
        reme: ReMe, server: OpenAITestServer, stored: str, said: str, kept: str | None) -> None:
    candidate = said.replace("His", "Oisín's", 1).rstrip(".")
    old, result = await reconciled(reme, server, "Maeve", stored, said, candidate, None, action="ADD")

    assert [n.content for n in result.added] == [candidate]
    now = (await reme.get_memory(old.memory_id)).content
    if kept:
        assert now == kept
        assert [(v.node.content, v.event) for v in await reme.history(old.memory_id)] == [(stored, "UPDATE")]
        assert any(f"to {said.split()[6]} in" in r.reason and "in place" in r.reason for r in result.rejected)
    else:
        assert "30" not in now and not any("in place" in r.reason for r in result.rejected)


@pytest.mark.parametrize("action", ["ADD", "UPDATE"])  # UPDATE: of the first memory, the other left as it is
async def test_a_line_that_ends_two_memories_updates_one_and_deletes_the_other(
        reme: ReMe, server: OpenAITestServer, action: str) -> None:
    # fresh5: "taking ondansetron" and its dose both stayed stated after "I've come off the ondansetron"
    stored = [await reme.add_memory(text, user_name="soraya")
              for text in ("Soraya takes ondansetron for her sickness", "The GP gave Soraya ondansetron, 4 mg")]
    candidate = "Soraya has come off the ondansetron"
    server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))

    def update_first(body: dict[str, Any]) -> dict[str, Any]:
        shown = re.search(rf"^(\d+)\. \[[^]]*\] {re.escape(stored[0].content)}$", prompt_of(body), re.MULTILINE)
        assert shown is not None
        return decisions({"candidate": 0, "action": "UPDATE", "id": int(shown[1]), "text": candidate})

    server.script(RECONCILE, update_first if action == "UPDATE" else decisions({"candidate": 0, "action": "ADD"}))
    said = [{"role": "user", "name": "Soraya", "content": "I've come off the ondansetron."}]
    result = await reme.summarize_memory(said, user_name="soraya")

    (updated,), (deleted,) = result.updated, result.deleted
    assert result.added == [] and updated.content == candidate
    assert {updated.memory_id, deleted.memory_id} == {n.memory_id for n in stored}
    assert [n.content for n in (await reme.list_memory(user_name="soraya", memory_type="personal"))] == [candidate]
    assert [len(await reme.history(n.memory_id)) for n in stored] == [1, 1]  # each kept as it was


@pytest.mark.parametrize(("said", "deletes"), [
    # fresh10 (qwen1.5b kept "Aroha is taking metformin ..."): a line that names no one else says it of the speaker
    ("The diabetes went away after the birth, so no insulin and no metformin now.", True),
    ("Her diabetes went away after the birth, so no insulin and no metformin now.", False),  # someone else's
    ("Nikau's diabetes went away, so no insulin and no metformin now.", False),
])
async def test_a_line_that_names_no_one_else_ends_the_speakers_own(
        reme: ReMe, server: OpenAITestServer, said: str, deletes: bool) -> None:
    stored = [await reme.add_memory(text, user_name="aroha") for text in (
        "Aroha takes metformin, 500 mg with breakfast and dinner", "Aroha started insulin, 8 units at bedtime")]
    candidate = "Aroha's diabetes went away after the birth, so no insulin and no metformin now"
    server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
    result = await reme.summarize_memory([{"role": "user", "name": "Aroha", "content": said}], user_name="aroha")

    assert len(result.updated) == 1 and len(result.deleted) == (1 if deletes else 0)


async def test_a_line_that_ends_what_another_person_did_deletes_no_memory(reme: ReMe, server: OpenAITestServer) -> None:
    # "used to" of the new baker's past shares "bakery" with the user's memories (fresh4's cafe)
    stored = [await reme.add_memory(text, user_name="marta")
              for text in ("The bakery will be gluten-free", "La Tostada Feliz is the name of the bakery")]
    candidate = "Marta hired Jordi, a baker who used to work in Barcelona"
    server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
    result = await reme.summarize_memory([{"role": "user", "name": "Marta", "content":
                                           "We've hired Jordi, a baker who used to work in Barcelona."}],
                                         user_name="marta")

    assert result.deleted == []
    assert len(await reme.list_memory(user_name="marta", memory_type="personal")) == 3 - len(result.updated)


@pytest.mark.parametrize(("user", "stored", "said", "candidate"), [
    ("Bob", "Bob works at Google", "I stopped drinking coffee, but I still love my job at Google.",
     "Bob stopped drinking coffee"),
    ("Bob", "Bob works at Google", "The offsite got cancelled, but I still love my job at Google.",
     "Bob's offsite got cancelled"),
    ("Bob", "Bob works at Google", "I went to the Google offsite after all, and I love my job.",
     "Bob went to the Google offsite"),
    # a number in the parentheses ReMe adds is a date, not a value the line changes
    ("Alice", "Alice moved to Berlin last week (22-28 April 2024)",
     "I went up to 200 metres in the TV tower in Berlin.", "Alice went up to 200 metres in the TV tower in Berlin"),
    # a value changed, of something the memory does not name
    ("Victor", "Victor takes atorvastatin, 20 mg in the evening", "My brother's dose went up to 40 mg.",
     "Victor's brother's dose went up to 40 mg"),
    # a number changed of something else than the memory's number is of, or a month, or a unit
    ("Filipa", "Filipa is 51 and has hot flushes", "The flushes are down to two or three a day.",
     "Filipa's flushes are down to two or three a day"),
    ("Alasdair", "Alasdair left the bank two weeks ago (17-23 March 2025)",
     "They upped my levothyroxine to 75 micrograms at the clinic.",
     "Alasdair's levothyroxine went up to 75 micrograms at the clinic"),
    ("Itzel", "Itzel takes lanadelumab, an injection every two weeks", "We've cut the season to five weeks.",
     "Itzel cut the season to five weeks"),
    # instead of a value the memory does not state
    ("Esteban", "Esteban takes 800 mg of lithium at night", "My lithium level is 0.9 now instead of 1.1.",
     "Esteban's lithium level is 0.9 now instead of 1.1"),
    # "again" of something else than what was given up
    ("Bob", "Bob gave up smoking last year", "I met my old smoking buddy Tim again.",
     "Bob met his old smoking buddy Tim again"),
    # a new holder of a role does not take a health fact with the old one
    ("Dolores", "Dolores' social worker, Ms Abernathy, says Jaylen is allergic to pineapple",
     "Their social worker is Mr Delgado now.", "Dolores' social worker is Mr Delgado now"),
    # nor does a new holder of another role, nor the same one again
    ("Ana", "Ana's dentist is Dr Costa in Porto", "My physio is now Dr Silva.", "Ana's physio is now Dr Silva"),
    ("Ana", "Ana's dentist is Dr Costa in Porto", "My dentist is now Dr Costa again.", "Ana's dentist is Dr Costa again"),
    ("Ana", "Ana's dentist is Dr Costa in Porto", "My new physio is Dr Silva.", "Ana's new physio is Dr Silva"),
    # "it" is what the nearest clause naming a thing names, not the memory's
    ("Nora", "Nora takes sertraline, 50 mg a day", "The sertraline is fine, but the yoga class was cancelled so I "
     "stopped it.", "Nora stopped the yoga class"),
    # a move or a new job of someone else, or from where the memory says someone else lives
    ("Wei", "Wei lives in York", "My sister moved to Leeds.", "Wei's sister moved to Leeds"),
    ("Rui", "Rui's wife works at Siemens", "I started at Bosch.", "Rui started at Bosch"),
    # how often something else is
    ("Ximena", "Ximena needs a blood test every month", "Physio weekly instead of monthly now.",
     "Ximena has physio weekly now"),
    # one has many friends at a time
    ("Kofi", "Kofi's friend is Bea from Kumasi", "My friend is Anna.", "Kofi's friend is Anna"),
    # a doctor gone from a memory of a medicine: the medicine stays
    ("Bilal", "Bilal takes sumatriptan, prescribed by Dr Qureshi", "Dr Qureshi retired, so my neurologist is Dr Malik "
     "now.", "Dr Qureshi retired, so Bilal's neurologist is Dr Malik now"),
    # "ended up", "gone onto": no ending
    ("Ana", "Ana's piano teacher is Tomasz, on Mondays", "Tomasz left the sheet music at ours.",
     "Tomasz left the sheet music at Ana's"),
    ("Wei", "Wei takes bisoprolol, 5 mg each morning", "The bisoprolol went down fine with breakfast.",
     "Wei's bisoprolol went down fine with breakfast"),
    ("Rafa", "Rafa takes prednisolone in a flare", "I ended up on prednisolone for five days.",
     "Rafa was on prednisolone for five days"),
    ("Lin", "Lin works at a bank", "I've gone onto early shifts at the bank.", "Lin works early shifts at the bank"),
    ("Lin", "Lin's son Tom lives in Leeds", "Tom has gone to Leeds for the weekend.", "Tom went to Leeds for the weekend"),
    ("Noor", "Noor's neurologist is Dr Hendriks", "Dr Hendriks handed me over a leaflet.",
     "Dr Hendriks handed Noor a leaflet"),
])
async def test_a_line_that_ends_or_changes_something_else_leaves_a_memory_as_it_is(
        reme: ReMe, server: OpenAITestServer, user: str, stored: str, said: str, candidate: str) -> None:
    old, result = await reconciled(reme, server, user, stored, said, candidate, None, action="ADD")

    assert result.updated == [] and [n.content for n in result.added] == [candidate]
    assert (await reme.get_memory(old.memory_id)).content == old.content


@pytest.mark.parametrize("repaired", [True, False])
async def test_a_memory_saying_it_without_saying_what_is_repaired_or_loses_that_sentence(
        reme: ReMe, server: OpenAITestServer, repaired: bool) -> None:
    # qwen1.5b wrote "Alice loves it. Alice always takes the window seat on the train." for
    # "Love it. I always take the window seat on the train." (the issue's example: what is "it"?)
    server.script(EXTRACT, memories(
        {"content": "Alice moved to Berlin last week", "sources": [0]},
        {"content": "Alice loves it. Alice always takes the window seat on the train.", "sources": [2]},
        {"content": "Alice likes that a lot", "sources": [2]}))
    server.script(REPAIR, {"memories": [
        {"index": 0, "content": "Alice loves Berlin. Alice always takes the window seat on the train."},
        {"index": 1, "content": ""}]} if repaired else "I cannot help with that.")
    result = await reme.summarize_memory(CHAT, user_name="alice")

    assert [n.content for n in result.added] == [
        "Alice moved to Berlin last week (22-28 April 2024)",
        "Alice loves Berlin. Alice always takes the window seat on the train." if repaired
        else "Alice always takes the window seat on the train."]
    repair = next(prompt_of(r["body"]) for r in server.requests if REPAIR in prompt_of(r["body"]))
    assert "Alice likes that a lot" in repair
    assert any(r.path == "memories[2]" and r.action == "dropped" and "without saying what" in r.reason
               for r in result.rejected)


async def test_a_line_copied_with_its_speaker_names_that_speaker(reme: ReMe, server: OpenAITestServer) -> None:
    # qwen0.5b copied transcript lines whole, speaker first: "Annika: And I'm allergic to mustard,
    # ..." (first person, and whose "I" when it cites two speakers' lines?)
    server.script(EXTRACT, memories(
        {"content": "Bjorn: Before anything else: I'm vegan, so I'll need a proper main, not just the sides.",
         "sources": [0, 1]},
        {"content": "[2024-05-03 10:00] Annika: And I'm allergic to mustard.", "sources": [1]},
        {"content": "Note: Annika books the table.", "sources": [1]}))
    conversation = [
        {"role": "user", "name": "Bjorn", "content": "Before anything else: I'm vegan, so I'll need a proper main, "
                                                     "not just the sides."},
        {"role": "user", "name": "Annika", "content": "And I'm allergic to mustard. Note: Annika books the table."}]
    result = await reme.summarize_memory(conversation, user_name="annika")

    assert [n.content for n in result.added] == [
        "Before anything else: Bjorn is vegan, so Bjorn will need a proper main, not just the sides.",
        "And Annika is allergic to mustard.",
        "Note: Annika books the table."]  # "Note" is no speaker: kept as written


HENRIKE = [{"role": "user", "name": "Henrike", "content": "I have rheumatoid arthritis. I'm starting methotrexate, "
                                                           "15 mg once a week, on Mondays.",
            "time": "2025-03-03T09:00:00Z"},
           {"role": "assistant", "content": "Thanks, noted."}]


async def test_of_two_memories_alike_the_one_adding_a_dose_is_kept(reme: ReMe, server: OpenAITestServer,
                                                                     embedder: HashEmbedder) -> None:
    # a later memory wrote the dose an earlier one left out; the two were near duplicates, and
    # the later one, which says more, was the one dropped
    short = "Lorcan uses nicotine patches every day since he quit smoking in January"
    full = "Lorcan uses 21 mg nicotine patches every day since he quit smoking in January"
    first, second = await embedder.embed([short, full])
    assert cosine(first, second) >= 0.95
    server.script(EXTRACT, memories({"content": short, "sources": [0]}, {"content": full, "sources": [0]}))
    result = await reme.summarize_memory(told("I quit smoking in January; I use 21 mg nicotine patches every day."),
                                         user_name="lorcan")
    assert [n.content for n in result.added] == [f"{full} 2024"]  # "quit ... in January": the January before
    assert [r.reason for r in result.rejected] == [f"{short + ' 2024'!r} repeats {(full + ' 2024')[:80]!r}"]


async def test_a_memory_that_someone_takes_what_they_are_allergic_to_is_not_stored(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh6 (qwen1.5b): "Rosalind is taking codeine for her allergy." for Rosalind's "I'm allergic
    # to codeine": the opposite of the safety fact. It is dropped, and the allergy kept as said.
    chat = [{"role": "user", "name": "Rosalind", "time": "2026-03-16T09:30:00Z",
             "content": "I'm on ramipril for my blood pressure. Oh, and I'm allergic to codeine, it makes me vomit."}]
    server.script(EXTRACT, memories({"content": "Rosalind is on ramipril for her blood pressure", "sources": [0]},
                                    {"content": "Rosalind is taking codeine for her allergy.", "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="rosalind")

    assert [n.content for n in result.added] == ["Rosalind is on ramipril for her blood pressure",
                                                 "Rosalind is allergic to codeine, it makes Rosalind vomit."]
    (wrong,) = [r for r in result.rejected if r.path == "memories[1]"]
    assert wrong.action == "dropped" and "allergic to codeine" in wrong.reason


@pytest.mark.parametrize(("memory", "said", "wrong"), [
    ("Rosalind is taking codeine for her allergy.", "I'm allergic to codeine.", True),
    ("Ana takes penicillin.", "Penicillin allergy here, since I was a kid.", True),
    ("Ana is on the penicillin", "I'm allergic to penicillin.", True),
    ("Ana is allergic to penicillin and takes ibuprofen.", "I'm allergic to penicillin; I take ibuprofen.", False),
    ("Ana took penicillin once and came out in hives.", "I took penicillin once and now I'm allergic to "
                                                         "penicillin.", False),  # the line says she took it
    ("Ana's son takes cetirizine for his allergy to cats.", "He's allergic to cats, so he takes cetirizine.", False),
    # what she must not take is the safety fact itself
    ("Ana must not take penicillin.", "I'm allergic to penicillin.", False),
    ("Ana can't take penicillin", "I'm allergic to penicillin.", False),
    ("Ana should avoid taking penicillin or amoxicillin", "I'm allergic to penicillin.", False),
    ("Ana stopped taking codeine because she is allergic to it", "I'm allergic to codeine.", False),
    ("Ana takes ibuprofen but never takes codeine", "I'm allergic to codeine.", False),
    ("Ana was put on penicillin", "I'm allergic to penicillin.", True),
    # "on" that is not taking, and a diet free of it
    ("Ana read up on penicillin allergies", "I'm allergic to penicillin.", False),
    ("Ana stays on peanut-free food", "I have a peanut allergy, so I stay on peanut-free food.", False),
    ("Ana stays on peanut free food", "Peanut allergy, so peanut free food only, I stay on it.", False),
])
def test_taking_what_the_line_says_someone_is_allergic_to_is_caught(memory: str, said: str, wrong: bool) -> None:
    messages = [Message(role="user", name="Ana", content=said)]
    assert (not_a_memory(memory, messages, [0], "ana") is not None) == wrong


@pytest.mark.parametrize(("memory", "answer", "kept"), [
    # fresh10 (qwen1.5b): "Aroha is allergic to latex." cited "And the latex?", answered "Still allergic, obviously."
    ("Aroha is allergic to latex.", "Still allergic, obviously.", True),
    ("Aroha still has the latex allergy.", "Yes, still allergic to it.", True),
    # the answer holds none of the memory's words: the question's words are still only the assistant's
    ("Aroha is allergic to latex.", "Oh, and Nikau's parents are staying with us.", False),
    ("Aroha wants a birth pool.", "Not on insulin, the hospital wants me on the ward.", False),
])
def test_what_a_cited_question_asks_is_the_users_when_their_answer_says_it(memory: str, answer: str,
                                                                          kept: bool) -> None:
    messages = [Message(role="user", name="Aroha", content="I'm breastfeeding, so no diets for now."),
                Message(role="assistant", content="And the latex?" if "latex" in memory else
                        "Would a birth pool be an option for you?"),
                Message(role="user", name="Aroha", content=answer)]
    assert (not_a_memory(memory, messages, [1], "aroha") is None) == kept


@pytest.mark.parametrize(("memory", "asked", "said", "wrong"), [
    # fresh9 (qwen1.5b): "Ximena is taking Ibuprofen and other NSAIDs" for the answer to what she must avoid
    ("Wei is taking Ibuprofen and other NSAIDs to manage Crohn's disease flares.", "Anything you have to avoid?",
     "Ibuprofen and anything like it, they set off flares.", True),
    ("Wei is taking azathioprine.", "Anything you have to avoid?",
     "Ibuprofen and anything like it. On azathioprine I can't have live vaccines.", False),
    ("Wei takes aspirin every day.", "", "I can't take aspirin, it makes me bleed.", True),
    ("Wei is on warfarin, so he must avoid aspirin.", "", "I'm on warfarin, so I must not take aspirin.", False),
    # what the answer names first is avoided only when the question asks what to avoid
    ("Wei takes aspirin every day.", "What do you take?", "Aspirin, every day.", False),
    # fresh15 (qwen1.5b): a medicine named in answer to "Any allergies?" written as one taken or prescribed
    ("Wei is taking ciprofloxacin, which tore his Achilles tendon in 2019.",
     "Any allergies the surgical team should know about?", "Ciprofloxacin. It tore my Achilles tendon in 2019.", True),
    ("Sulfa antibiotics were prescribed to Wei.", "Any allergies?",
     "Sulfa antibiotics. They gave me a rash with blisters in my mouth.", True),
    ("Wei was given penicillin after the operation.", "Are there medicines you react to?",
     "Penicillin. Hives all over.", True),
    ("Wei reacts badly to penicillin: hives all over.", "Are there medicines you react to?",
     "Penicillin. Hives all over.", False),
    # fresh20 (qwen1.5b): "Radek is taking ibuprofen and kiwi" of "Still no ibuprofen, still no kiwi"
    ("Wei is taking ibuprofen and kiwi.", "", "Still no ibuprofen, still no kiwi.", True),
    ("Wei takes paracetamol.", "", "No ibuprofen ever again, only paracetamol.", False),
    ("Wei takes naproxen.", "", "No, I take naproxen now.", False),
])
def test_taking_what_the_line_says_to_avoid_is_caught(memory: str, asked: str, said: str, wrong: bool) -> None:
    messages = [Message(role="assistant", content=f"Right. {asked}" if asked else "Noted."),
                Message(role="user", name="Wei", content=said)]
    assert (not_a_memory(memory, messages, [1], "wei") is not None) == wrong


@pytest.mark.parametrize(("memory", "said", "invented"), [
    # fresh15 (qwen1.5b): ages no one said, of a man who said his age in no line
    ("Kristjan is a 51-year-old man with a history of heart disease.", "I have Marfan syndrome.", True),
    ("Wouter is a 26-year-old man with a medical history of colitis.", "Then I got colitis from it.", True),
    ("Wouter is aged 40 and farms citrus.", "I farm citrus.", True),
    # an age said, in digits or in words
    ("Kristjan is 29 years old and has Marfan syndrome.", "I have Marfan syndrome. I'm twenty-nine.", False),
    ("Ruan is a twenty-year-old student.", "Our son Ruan, who's 20, is at college.", False),
    ("Bakkies was sixteen years old.", "Bakkies died in April. Sixteen years old.", False),
])
def test_an_age_no_one_said_is_not_stored(memory: str, said: str, invented: bool) -> None:
    messages = [Message(role="assistant", content="Noted."), Message(role="user", name="Wei", content=said)]
    reason = not_a_memory(memory, messages, [1], "wei")
    assert (reason is not None) == invented, reason


@pytest.mark.parametrize(("memory", "said", "invented"), [
    # fresh12 (qwen1.5b): "Henrique was diagnosed with lung cancer ..." of a biopsy for sarcoidosis
    ("Henrique was diagnosed with lung cancer in September.", "The diagnosis came from a lung biopsy in "
     "September. It's sarcoidosis.", True),
    ("Wei has epilepsy and takes levetiracetam.", "I take lamotrigine for my seizures.", True),
    ("Wei takes metformin for his diabetes.", "I'm diabetic, on gliclazide.", True),  # a medicine no one named
    # said in other forms of the same word, or by the assistant and agreed to
    ("Wei is diabetic and takes metformin.", "I have type 2 diabetes; metformin twice a day.", False),
    ("Wei has asthma.", "Yes, it is, since I was a child.", False),
    ("Wei's daughter has epileptic seizures.", "My daughter is epileptic.", False),
    # the words that are not a diagnosis or a medicine's name may be the model's own
    ("Wei takes medication for his blood pressure.", "I take ramipril, my pressure runs high.", False),
    ("Wei has a heart condition.", "I had a heart attack in May.", False),
])
def test_a_diagnosis_or_a_medicine_no_one_named_is_not_stored(memory: str, said: str, invented: bool) -> None:
    messages = [Message(role="assistant", content="Is it asthma?" if "asthma" in memory else "Noted."),
                Message(role="user", name="Wei", content=said)]
    reason = not_a_memory(memory, messages, [1], "wei")
    assert (reason is not None) == invented, reason


@pytest.mark.parametrize(("memory", "stored"), [
    # fresh12 (qwen1.5b): a memory of the line that says the modafinil stopped, stating it as taken
    ("Bartosz is taking modafinil and pitolisant in the morning.", None),
    ("Bartosz takes pitolisant and modafinil, 36 mg in the morning.", "Bartosz takes pitolisant."),
    # what the line says ended, said so; what it did not end
    ("Bartosz stopped modafinil because it made his heart race.", "Bartosz stopped modafinil because it made his "
                                                                  "heart race."),
    ("Bartosz takes pitolisant, 36 mg in the morning.", "Bartosz takes pitolisant, 36 mg in the morning."),
])
async def test_a_memory_stating_as_current_what_its_own_line_ends_is_not_stored_so(
        reme: ReMe, server: OpenAITestServer, memory: str, stored: str | None) -> None:
    line = ("The modafinil stopped working and made my heart race, so since the start of the month it's pitolisant, "
            "36 mg in the morning.")
    server.script(EXTRACT, memories({"content": memory, "sources": [0]}))
    result = await reme.summarize_memory([{"role": "user", "name": "Bartosz", "content": line}], user_name="bartosz")

    kept = [n.content for n in result.added]
    assert not any(re.search(r"\b(?:taking|takes)\b[^.]*modafinil", k) for k in kept), kept
    if stored:
        assert stored in kept
    else:
        assert any("pitolisant" in k for k in kept) and any("has ended" in r.reason for r in result.rejected)


@pytest.mark.parametrize(("memory", "line", "stopped"), [
    ("Wei takes warfarin and apixaban.", "They tapered me off the warfarin. Apixaban took its place.", {"warfa"}),
    ("Wei is on ondansetron, 4 mg.", "I've come off the ondansetron.", {"ondan"}),
    # what took its place; a stop the memory says; another thing stopped
    ("Wei takes apixaban, 5 mg twice a day.", "They tapered me off the warfarin. Apixaban took its place.", set()),
    ("Wei is off warfarin.", "They took me off the warfarin.", set()),
    ("Wei takes the bus to work.", "I stopped driving.", set()),
    # fresh20 (qwen1.5b): "Radek is taking furosemide, dalteparin, co-trimoxazole, and ramipril" of a line of stops
    ("Radek is taking furosemide, dalteparin, co-trimoxazole, and ramipril.",
     "Furosemide stopped, no swelling at all. Dalteparin stopped too, now the albumin is up. The co-trimoxazole "
     "stopped with the chemo. Ramipril went up to five milligrams.", {"furos", "dalte", "co-tr"}),
    ("Wei takes warfarin and sleeps well.", "The bleeding stopped. The warfarin stopped nothing.", set()),
])
def test_what_a_line_says_was_stopped_is_not_taken_now(memory: str, line: str, stopped: set[str]) -> None:
    assert taken_though_stopped(memory, line) == stopped


@pytest.mark.parametrize(("memory", "cut"), [
    # fresh12 (qwen1.5b): another speaker takes it; the one asked said no
    ("Sipho takes acetazolamide as a precaution.", ["takes", "acetazolamide", "precaution"]),
    ("Thandeka is on acetazolamide, 125 mg twice a day.", []),  # hers: she said it
    ("Sipho will go slowly.", []),
])
def test_what_another_speaker_takes_is_no_answer_to_a_suggestion_turned_down(memory: str, cut: list[str]) -> None:
    messages = [Message(role="user", name="Thandeka", content="I'm on acetazolamide, 125 mg twice a day."),
                Message(role="assistant", content="Should you take acetazolamide as well, as a precaution?"),
                Message(role="user", name="Sipho", content="No, Dr Naidoo said I'm fine without it. I'll go slowly.")]
    assert declined(memory, messages) == cut


@pytest.mark.parametrize(("memory", "line", "wrong"), [
    # fresh12 (qwen1.5b): "Dragan is a cardiologist at the Institute" of "My cardiologist is at the Institute"
    ("Dragan is a cardiologist at the Institute in Sremska Kamenica.",
     "My cardiologist is Dr Petrović, at the Institute in Sremska Kamenica.", True),
    ("Dragan is a retired nurse.", "My nurse is Johanna, she's retired.", True),
    # the speaker's own: said of themselves, or never said of anyone else
    ("Dragan is a nurse.", "I'm a nurse, and my nurse friend Ana is too.", False),
    ("Dragan works as an electrician.", "I work as an electrician.", False),
    ("Dragan is a cardiologist.", "I was a cardiologist for thirty years.", False),
    ("Dragan's cardiologist is Dr Petrović.", "My cardiologist is Dr Petrović.", False),
    ("Dragan is a barista.", "I handed in my barista notice, the lab job starts soon.", False),
    # fresh20 (qwen1.5b): "Hemi is a neurologist who has been on the road since August"
    ("Dragan is a neurologist.", "The neurologist weaned me off the levetiracetam in August.", True),
    ("Dragan is a neurologist.", "I'm a neurologist. The neurologist I trained with retired.", False),
])
def test_the_speakers_doctor_is_not_the_speaker(memory: str, line: str, wrong: bool) -> None:
    messages = [Message(role="assistant", content="Who looks after you?"),
                Message(role="user", name="Dragan", content=line)]
    reason = not_a_memory(memory, messages, [1], "dragan")
    assert (reason is not None) == wrong, reason


@pytest.mark.parametrize(("memory", "whose"), [
    # fresh13 (qwen1.5b): the user named for what a friend said of himself, citing the user's first line
    ("Zubair is coeliac and is bringing his own food.", "Cormac"),
    ("Zubair is a GP and has packed a proper first aid kit.", "Brynja"),
    # the user said so too, or no one else said it of themselves
    ("Zubair is 58.", None),
    ("Zubair is a keen sailor.", None),
    ("Zubair is also 58 and well.", None),  # "also", "and": no word of what he is
])
def test_what_another_speaker_says_they_are_is_not_the_users(memory: str, whose: str | None) -> None:
    messages = [Message(role="user", name="Zubair", content="I'm 58 and I'm a keen sailor, I've had a valve for years."),
                Message(role="user", name="Brynja", content="I'm a GP, so I've packed a proper first aid kit."),
                Message(role="user", name="Cormac", content="I'm coeliac, so I'm bringing my own food. I'm 58 too."),
                Message(role="user", name="Zubair", content="Which leaves me the steering.")]
    assert claimed_by_another(memory, messages) == (("Zubair", whose) if whose else None)


@pytest.mark.parametrize(("suggested", "answer", "memory", "stored"), [
    # fresh12 (qwen1.5b): a suggestion the user turned down, stored as what they do
    ("Would a wearable sleep tracker help you?", "My wife already nudges me when I nod off. That's tracker enough.",
     "Bartosz uses a wearable sleep tracker.", None),
    ("Would you like to try a running club, for your lungs?", "I cycle to work every day. I'm not adding running.",
     "Bartosz would like to try a running club.", None),
    # ... merged into what they said: the rest stays
    ("Would you consider a gluten-free diet?", "I'm not cutting out bread on a hunch. I take methotrexate, 15 mg "
     "a week.", "Bartosz takes methotrexate, 15 mg a week, and a gluten-free diet.",
     "Bartosz takes methotrexate, 15 mg a week."),
    # taken up, or stored as turned down: kept
    ("Would a wearable sleep tracker help you?", "Yes, I'll order one tonight.",
     "Bartosz will order a wearable sleep tracker.", "Bartosz will order a wearable sleep tracker."),
    ("Would a wearable sleep tracker help you?", "My wife nudges me. That's tracker enough.",
     "Bartosz does not want a wearable sleep tracker.", "Bartosz does not want a wearable sleep tracker."),
    # a word the user said too is theirs
    ("Would a sleep tracker help you?", "I have a sleep tracker already, a Fitbit.",
     "Bartosz has a sleep tracker, a Fitbit.", "Bartosz has a sleep tracker, a Fitbit."),
    # fresh13 (qwen1.5b): more ways to suggest ("considering hypnobirthing classes" was stored)
    ("Have you looked into hypnobirthing classes?", "No, we've done the NHS antenatal classes.",
     "Bartosz is considering hypnobirthing classes.", None),
    ("Would calamine lotion help with the itching?", "Oonagh says it does nothing for this kind of itch.",
     "Bartosz uses calamine lotion for the itching.", None),
    # fresh25 (qwen1.5b): the answer names it only to turn it down ("considering taking melatonin" was stored)
    ("Should you take melatonin for the jet lag?", "I don't bother with melatonin. Lagos is only an hour off anyway.",
     "Bartosz is considering taking melatonin for jet lag.", None),
    ("Should you take melatonin for the jet lag?", "No, I don't need it, I already take melatonin every night.",
     "Bartosz takes melatonin every night.", "Bartosz takes melatonin every night."),
    # fresh26 (qwen1.5b): "it" of a suggesting question is what the sentence before names
    ("Some people take vitamin E for their circulation. Would you like to try it?",
     "Not while I'm on a blood thinner, no.", "Bartosz takes vitamin E for his circulation.", None),
    # a question that asks, not suggests
    ("What about your kids?", "Emi is twelve and Sora is nine.", "Bartosz's kids are Emi, twelve, and Sora, nine.",
     "Bartosz's kids are Emi, twelve, and Sora, nine."),
])
async def test_a_suggestion_turned_down_is_not_stored_as_taken(
        reme: ReMe, server: OpenAITestServer, suggested: str, answer: str, memory: str, stored: str | None) -> None:
    server.script(EXTRACT, memories({"content": memory, "sources": [2]}))
    result = await reme.summarize_memory([
        {"role": "user", "name": "Bartosz", "content": "I have narcolepsy, so I nap after lunch."},
        {"role": "assistant", "content": f"Noted. {suggested}"},
        {"role": "user", "name": "Bartosz", "content": answer}], user_name="bartosz")

    kept = [n.content for n in result.added]
    # turned down: no memory names it, unless as turned down ("Bartosz doesn't bother with melatonin.", kept as said)
    assert (stored in kept) if stored else not any(w in k and not re.search(r"n't\b|\bnot?\b", k) for k in kept
                                                   for w in ("tracker", "club", "hypno", "calamine", "melatonin",
                                                             "vitamin")), kept
    if stored != memory:
        assert any("assistant suggested" in r.reason for r in result.rejected)


async def test_a_health_fact_no_memory_holds_is_kept_as_said(reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b kept neither the stroke and its dose nor the boy's egg allergy, even when shown the
    # lines again: such a sentence is kept in its speaker's words, "I" named, repaired if it must be
    chat = [{"role": "user", "name": "Ravi", "content": "My dad's visiting from Pune for a month.",
             "time": "2024-08-22T18:00:00Z"},
            {"role": "user", "name": "Mohan", "content": "Hello. I had a small stroke in 2019, and I take "
                                                         "clopidogrel, 75 mg, every morning."},
            # which of the two "he" is the line does not say (`named_subject` names one it does)
            {"role": "user", "name": "Ravi", "content": "Nico and Leo are coming too. He's eight and he's allergic "
                                                        "to egg. Shall we book the boat?"}]
    server.script(EXTRACT, memories({"content": "Ravi's dad Mohan is visiting from Pune for a month", "sources": [0]},
                                    {"content": "Ravi's nephews Nico and Leo are coming too", "sources": [2]}))
    server.script(REPAIR, {"memories": [{"index": 0, "content": "Nico is eight and allergic to egg"}]})
    result = await reme.summarize_memory(chat, user_name="ravi")

    assert [n.content for n in result.added] == [
        "Ravi's dad Mohan is visiting from Pune for a month", "Ravi's nephews Nico and Leo are coming too",
        "Mohan had a small stroke in 2019, and Mohan takes clopidogrel, 75 mg, every morning.",
        "Nico is eight and allergic to egg"]
    assert [(r.step, r.action) for r in result.rejected] == [("personal/kept", "defaulted")] * 2
    assert len([r for r in server.requests if REPAIR in prompt_of(r["body"])]) == 1
    assert result.usage.steps == {"personal/extract": 1, "personal/repair": 1}  # no call of its own


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.lists(st.sampled_from(
           ["I", "I'm", "he", "am", "take", "allergic", "to", "eggs", "15", "mg", "stroke", "insulin", "Funny thing:",
            "Oh,", "and", ".", "?", ",", ";", "5", "x", " "]), max_size=20).map(" ".join)), min_size=1, max_size=5),
       st.lists(st.text(max_size=60), max_size=3))
def test_a_health_sentence_kept_as_said_is_a_persons_and_holds_what_no_memory_does(
        lines: list[tuple[str, str]], written: list[str]) -> None:
    messages = [Message(role=role, content=text or ".", name=None if role == "assistant" else "Ann")
                for role, text in lines]
    transcript = Transcript.of(messages, datetime(2024, 5, 3, tzinfo=timezone.utc))
    for index, sentence in unheld_health(transcript, written):
        assert messages[index].role == "user" and sentence.rstrip(".").lower() in messages[index].content.lower()
        assert not sentence.endswith("?") and (any(health_word(w) for w in re.findall(r"\w+", sentence.lower()))
                                               or restricted(sentence))
    # a memory holding every line holds every health fact
    assert unheld_health(transcript, [m.content for m in messages]) == []


@pytest.mark.parametrize("sentence", [
    # fresh6 (qwen1.5b): no memory kept these, and no check knew them for health or safety facts
    "I dislocated my right shoulder in March playing volleyball.", "I sprained it at badminton on Sunday.",
    "Call an ambulance if it goes past five minutes.", "My cousin Winston has been on dialysis since the spring.",
    "He's on atorvastatin now.", "They put me on amlodipine.", "She takes lisinopril at night.",
    "Two sachets of Moviprep, and I stop the ramipril.", "I take omeprazole with breakfast.",
    "Her ankles are swollen by the evening.", "He hurt his knee, the physio says rest.",
    # fresh27 (qwen1.5b): what the speaker must not do, for a while or as a doctor's rule
    "Until he says so, I don't drive.", "I'm not allowed to lift anything for six weeks.",
])
def test_injuries_emergencies_and_medicines_by_their_endings_are_health_facts(sentence: str) -> None:
    transcript = Transcript.of([Message(role="user", name="Ann", content=sentence)], datetime(2025, 3, 1, tzinfo=timezone.utc))
    assert unheld_health(transcript, ["Ann plays volleyball"]) == [(0, sentence)]


@pytest.mark.parametrize("sentence", ["I don't drive.", "I never drink coffee.", "I don't work on Fridays.",
                                      "I can't swim very well, ha."])
def test_what_someone_does_not_do_is_no_rule_without_a_while_a_doctor_or_a_health_word(sentence: str) -> None:
    transcript = Transcript.of([Message(role="user", name="Ann", content=sentence)],
                               datetime(2025, 3, 1, tzinfo=timezone.utc))
    assert unheld_health(transcript, ["Ann plays volleyball"]) == []


@pytest.mark.parametrize("sentence", [
    # fresh15 (qwen1.5b): doses in words, procedures, body parts, specialists and medicines by the stems of their
    # international names: no memory kept these, and no check knew them for health facts
    "Fifteen milligrams every morning with breakfast.", "Zinc gluconate, ninety milligrams a day.",
    "Intermittent catheters every four hours, day and night.", "Pounding headache, a blocked nose.",
    "The chemist packs the blister pack: losartan in the morning.", "For an attack itself, prochlorperazine.",
    "It can turn into giant cell arteritis, and that can blind you.", "Her eye injection is every eight weeks.",
    "From Thursday I add cetrorelix every morning.", "I stopped the betahistine in June.",
    "I sleep with a CPAP machine every night.", "Adalimumab every week.",
])
def test_doses_in_words_procedures_and_medicines_by_their_stems_are_health_facts(sentence: str) -> None:
    transcript = Transcript.of([Message(role="user", name="Ann", content=sentence)], datetime(2025, 3, 1, tzinfo=timezone.utc))
    assert unheld_health(transcript, ["Ann plays volleyball"]) == [(0, sentence)]


@pytest.mark.parametrize(("line", "kept"), [
    # fresh15 (qwen1.5b): a medicine named alone, answering "Any allergies?", then what it did: the sentence kept as
    # said held the reaction without the medicine ("Hives all over, in Wouter's twenties.")
    ("Trimethoprim. Hives all over, in my twenties.", ["Trimethoprim. Hives all over, in my twenties."]),
    ("Metamizole. Dipyrone. Here they give it for everything, and it sent me into anaphylaxis six years ago.",
     ["Metamizole. Dipyrone. Here they give it for everything, and it sent me into anaphylaxis six years ago."]),
    ("Sulfa antibiotics. They gave me a rash with blisters. And yes, I smoke, ten a day.",
     ["Sulfa antibiotics. They gave me a rash with blisters."]),
    # "It" is named by the medicine before it (named_thing); a greeting or a word of no health joins nothing
    ("Aspirin. It makes me wheezy.", ["Aspirin.", "It makes me wheezy."]),
    ("Evening. I'm allergic to latex.", ["I'm allergic to latex."]),
    ("Nervous. We've been trying for three years, since my diabetes was found.",
     ["We've been trying for three years, since my diabetes was found."]),
])
def test_a_health_word_said_alone_is_kept_with_the_sentence_after_it(line: str, kept: list[str]) -> None:
    transcript = Transcript.of([Message(role="assistant", content="Any allergies?"),
                                Message(role="user", name="Ann", content=line)], datetime(2026, 3, 1, tzinfo=timezone.utc))
    assert unheld_health(transcript, ["Ann plays volleyball"]) == [(1, sentence) for sentence in kept]


@pytest.mark.parametrize(("sentence", "kept"), [
    # fresh10 (qwen1.5b): what someone must not do, said beside a health word or for a time, no memory kept
    ("The transplant team said no herbal stuff at all, it can mess with the tacrolimus levels.", True),
    ("Nothing heavier than a kettle for four weeks, and no driving for two weeks.", True),
    ("I'm breastfeeding, so no diets for now, just eating properly.", True),
    # fresh16 (qwen1.5b): a list of them, or a doctor's rule, with no health word in the sentence
    ("No aged cheese, no cured sausage, so goodbye kabanos, no sauerkraut, no soy sauce, no beer from the tap.", True),
    ("Dr Virtanen was very clear: no sauna at all.", True),
    ("My cardiologist says no more marathons.", True),
    # fresh22 (qwen1.5b): said as a rule with nothing else ("at all", "ever", "completely"): no memory kept it
    ("No alcohol at all, not even at the wedding.", True),
    ("No contact sports, ever.", True),
    ("No worries at all.", False),
    ("No worries, no rush.", False),
    # no restriction, or none that lasts or touches health
    ("No worries, the transplant went fine.", False),
    ("We have no plans this weekend.", False),
    ("No rush for now.", False),
])
def test_what_someone_must_not_do_for_a_while_or_for_their_health_is_a_safety_fact(sentence: str, kept: bool) -> None:
    transcript = Transcript.of([Message(role="user", name="Ann", content=sentence)], datetime(2025, 3, 1, tzinfo=timezone.utc))
    held = ["Ann had a transplant and takes tacrolimus, and Ann is breastfeeding, and weeks"]
    assert unheld_health(transcript, held) == ([(0, sentence)] if kept else [])


@pytest.mark.parametrize("word", ["april", "magazine", "stating", "statistics", "broke", "hospitality", "capril",
                                  "painting", "physics", "clothes", "mongrel", "cardigan", "rasher"])
def test_words_that_only_look_like_medicines_are_no_health_words(word: str) -> None:
    assert not health_word(word)


def test_a_hyphened_name_is_one_name() -> None:
    # fresh28: "My wife, Ha-neul. She's ... my emergency contact. Our son Jun-seo is six" was kept as "Ha is ...",
    # "Ha is Dong-hyun's wife." and "Jun is Dong-hyun's son.": the names stopped at the hyphen
    line = ("My wife, Ha-neul. She's taking the week off, and she's my emergency contact. Our son Jun-seo is six; "
            "Park Dong-hyun is my full name.")
    transcript = Transcript.of([Message(role="user", name="Dong-hyun", content=line)],
                               datetime(2026, 9, 17, tzinfo=timezone.utc))
    assert {"Ha-neul", "Jun-seo"} <= transcript.names and not {"Dong", "Dong-hyun"} & transcript.names
    assert named_subject(transcript, 0, "She's taking the week off, and she's my emergency contact.").startswith(
        "Ha-neul is taking")
    assert sorted(text for _, text in unheld_relations(transcript, "Dong-hyun", [])) == [
        "Ha-neul is Dong-hyun's wife.", "Jun-seo is Dong-hyun's son."]


def test_a_she_after_my_wife_is_a_name_is_that_name() -> None:
    # fresh28: "My wife is Solongo, S-O-L-O-N-G-O, it means rainbow. She's a nurse ..., and she's my emergency
    # contact." was kept with its "She" (the subject was read as "My")
    line = "My wife is Solongo, S-O-L-O-N-G-O, it means rainbow. She's a nurse, and she's my emergency contact."
    transcript = Transcript.of([Message(role="user", name="Ganbold", content=line)],
                               datetime(2026, 11, 12, tzinfo=timezone.utc))
    assert named_subject(transcript, 0, "She's a nurse, and she's my emergency contact.").startswith("Solongo is a")
    other = Transcript.of([Message(role="user", name="Ganbold", content="My wife is ill. She's a nurse.")],
                          datetime(2026, 11, 12, tzinfo=timezone.utc))
    assert named_subject(other, 0, "She's a nurse.") == "She's a nurse."


def test_a_nickname_is_no_other_subject_and_a_medicine_leading_a_line_stays() -> None:
    # fresh28: "I'm Onalenna, Ona for short. My father, Tumelo Kgosi, has Lewy body dementia ..." then "... He falls
    # easily" was kept with its "He" ("Ona" read as someone else), and "Erythromycin: in 2018 his face swelled up, so
    # he's allergic to it." was kept as "In 2018 his face swelled up, ...": the allergy without its medicine
    said = datetime(2026, 2, 24, tzinfo=timezone.utc)
    lines = ["Dumela. I'm Onalenna, Ona for short. My father, Tumelo Kgosi, has Lewy body dementia.",
             "What medicines does he take?", "Tamsulosin at night. He falls easily, mostly at night."]
    transcript = Transcript.of([Message(role="assistant" if k % 2 else "user", name=None if k % 2 else "Onalenna",
                                        content=line) for k, line in enumerate(lines)], said)
    assert named_subject(transcript, 2, "He falls easily, mostly at night.") == "Tumelo falls easily, mostly at night."
    assert said_whole("Erythromycin: in 2018 his face swelled up.") == "Erythromycin: in 2018 his face swelled up."
    assert said_whole("Funny thing: the dog knew first.") == "The dog knew first."


def test_an_emergency_contact_a_she_names_is_kept_unless_a_memory_says_so() -> None:
    # fresh28: "My mother, Mercedes. She's my emergency contact." -- no memory said so, only "Mercedes is Nayra's
    # mother.", and "emergency" was held by "that's an emergency: 911"
    lines = ["My mother, Mercedes. She's my emergency contact. My brother Byron is in Cuenca.", "Who treats you?",
             "Dr Andrade. If I can't breathe lying flat, that's an emergency: 911."]
    transcript = Transcript.of([Message(role="assistant" if k % 2 else "user", name=None if k % 2 else "Nayra",
                                        content=line) for k, line in enumerate(lines)],
                               datetime(2026, 10, 20, tzinfo=timezone.utc))
    written = ["Mercedes is Nayra's mother.", "If Nayra can't breathe lying flat, that's an emergency: 911.",
               "Nayra's brother Byron is in Cuenca."]
    assert unheld_health(transcript, written) == [(0, "She's my emergency contact.")]
    assert unheld_health(transcript, [*written, "Mercedes is Nayra's emergency contact."]) == []


def test_a_she_after_a_doctor_and_what_they_are_is_the_doctor() -> None:
    # fresh28: "Dr Andrade, a cardiologist at the Hospital Eugenio Espejo. She wants to stretch the valve ..." was
    # kept with its "She": the clause after the name names places
    line = "Dr Andrade, a cardiologist at the Hospital Eugenio Espejo. She wants a valvotomy in January."
    transcript = Transcript.of([Message(role="assistant", content="Who looks after your heart?"),
                                Message(role="user", name="Nayra", content=line)],
                               datetime(2026, 10, 20, tzinfo=timezone.utc))
    assert named_subject(transcript, 1, "She wants a valvotomy in January.") == \
        "Dr Andrade wants a valvotomy in January."
    two = Transcript.of([Message(role="user", name="Nayra", content="Dr Andrade and Dr Ruiz, at the clinic in Quito. "
                                                                   "She wants a valvotomy.")],
                        datetime(2026, 10, 20, tzinfo=timezone.utc))
    assert named_subject(two, 0, "She wants a valvotomy.") == "She wants a valvotomy."


def test_a_health_sentence_is_kept_whole_and_a_painting_is_no_health_fact() -> None:
    # fresh3 (qwen1.5b): "2.5 mg" was cut at its point into "5 mg every morning, so ...", atrial
    # fibrillation was no health word, and "Only the painting." was kept as one ("pain")
    lines = ["I have atrial fibrillation, so I'm on bisoprolol, 2.5 mg every morning.", "Only the painting."]
    transcript = Transcript.of([Message(role="user", name="Mateus", content=line) for line in lines],
                               datetime(2025, 3, 1, tzinfo=timezone.utc))
    assert unheld_health(transcript, ["Mateus runs at six in the morning"]) == [(0, lines[0])]


async def test_an_answer_naming_an_emergency_contact_is_kept_with_the_question(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh5: "Who should the school ring in an emergency?" -- "Me first. ... Then Vesna. She's my
    # mum": the emergency word was the question's, the name the answer's, and no memory had both
    chat = [{"role": "user", "name": "Teodora", "content": "Luka's class is going to the science museum.",
             "time": "2025-10-07T08:00:00Z"},
            {"role": "assistant", "content": "Who should the school ring in an emergency?"},
            {"role": "user", "name": "Teodora", "content": "Me first. If I don't pick up, then Vesna. She's my mum."},
            {"role": "assistant", "content": "And what should the form say about medical needs?"},
            {"role": "user", "name": "Teodora", "content": "Nothing, he's fine. Call the office if unsure."}]
    await reme.add_memory("Vesna is Teodora's mum", user_name="teodora")  # the name alone is no emergency contact
    server.script(EXTRACT, memories({"content": "Teodora's son Luka's class is going to the science museum",
                                     "sources": [0]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}, {"candidate": 1, "action": "ADD"}))
    result = await reme.summarize_memory(chat, user_name="teodora")

    assert [n.content for n in result.added] == [
        "Teodora's son Luka's class is going to the science museum",
        "Teodora's emergency contacts: Teodora first. If Teodora doesn't pick up, then Vesna. She's Teodora's mum."]
    (kept,) = [r for r in result.rejected if r.step == "personal/kept"]
    assert kept.action == "defaulted" and "emergency" in kept.reason
    assert "personal/kept" not in result.usage.steps  # no call of its own


@pytest.mark.parametrize(("question", "answer", "kept"), [
    # fresh6 (qwen1.5b): "And who should they phone?" -- "My husband, Tunde. ... my sister Folake":
    # no emergency word anywhere, and no memory said whom to call
    ("Clear. And who should they phone?", "My husband, Tunde. If he doesn't pick up, my sister Folake.",
     "Bukola's emergency contacts: My husband, Tunde. If he doesn't pick up, my sister Folake."),
    ("Who's your contact at home if anything happens?", "My partner, Riikka.",
     "Bukola's emergency contacts: My partner, Riikka."),
    ("Who should be called if something goes wrong?", "Kieran first, then Roisin.",
     "Bukola's emergency contacts: Kieran first, then Roisin."),
    ("And who should the school ring in an emergency?", "Me first, then Vesna.",
     "Bukola's emergency contacts: Me first, then Vesna."),
    # someone else's contact is not the speaker's; a question about who comes is none about whom to call
    ("Noted. Who's his contact back home?", "His mother, Luciana.", None),
    ("Good call. Who else is coming?", "My manager, Obinna.", None),
    ("Who did you call about the boiler?", "Dave the plumber.", None),
    # fresh10 (qwen1.5b run): a question about the emergency plan asks no one's name
    ("Is the emergency plan the same?", "Same midazolam. Oh, and Dr Ferreira wants an EEG.", None),
    ("Emergency contact?", "My sister, Folake.", "Bukola's emergency contacts: My sister, Folake."),
])
def test_an_answer_to_whom_to_call_is_kept_as_the_speakers_emergency_contacts(
        question: str, answer: str, kept: str | None) -> None:
    messages = [Message(role="user", name="Bukola", content="I have epilepsy."),
                Message(role="assistant", content=question), Message(role="user", name="Bukola", content=answer)]
    transcript = Transcript.of(messages, datetime(2026, 2, 11, tzinfo=timezone.utc))
    assert unheld_answers(transcript, "Bukola", ["Bukola has epilepsy"]) == ([(2, kept)] if kept else [])


@pytest.mark.parametrize(("sentence", "held", "kept"), [
    # fresh12 (qwen1.5b): what to do when the speaker falls ill, with no health word, was in no memory
    ("If I ever go yellow or start talking nonsense, call Kaloyan first, he knows what to do, then the clinic.",
     "Kaloyan is Teodora's younger brother", True),
    ("When she stops answering the phone, ring my cousin Dara straight away.", "Dara is Teodora's cousin", True),
    ("Should I pass out, get Mirela from next door.", "Mirela lives next door", True),
    # a memory holds the condition; no condition of the speaker's or anyone's; a request to the assistant
    ("If I ever go yellow or start talking nonsense, call Kaloyan first, he knows what to do, then the clinic.",
     "If Teodora goes yellow or starts talking nonsense, call her brother Kaloyan first, then the clinic.", False),
    ("If you're in town, call Dave.", "Teodora knows Dave", False),
    ("Call me when it's ready.", "Teodora ordered a sofa", False),
])
def test_what_to_do_when_the_speaker_is_unwell_is_a_safety_fact(sentence: str, held: str, kept: bool) -> None:
    transcript = Transcript.of([Message(role="user", name="Teodora", content=sentence)],
                               datetime(2026, 4, 21, tzinfo=timezone.utc))
    assert unheld_health(transcript, [held]) == ([(0, sentence)] if kept else [])


@pytest.mark.parametrize(("question", "answer", "written", "kept"), [
    # fresh22 (qwen1.5b): the allergy was the question's word, the medicine the answer's; "co-trimoxazole" went into
    # a list of what is taken, and "Alcohol, completely." into no memory
    ("Fiifi, any allergies?", "Co-trimoxazole, Septrin. A big blistering rash in 2015. That one is serious.",
     ["Fiifi takes azathioprine, prednisolone and co-trimoxazole"],
     "Fiifi's allergies: Co-trimoxazole, Septrin."),
    ("Is there anything you need to avoid?", "Alcohol, completely. And I'm allergic to metoclopramide.",
     ["Fiifi is allergic to metoclopramide"], "Fiifi must avoid: Alcohol, completely."),
    ("Are there medicines you react to?", "Just penicillin.", [], "Fiifi's allergies: Just penicillin."),
    # a memory says it is not to be had; the answer names nothing, or is said in the first person
    ("Any allergies?", "Codeine. It made me vomit.", ["Fiifi is allergic to codeine"], None),
    ("Anything to avoid?", "Grapefruit, it pushes the level up.", ["Fiifi never eats grapefruit"], None),
    ("Any allergies?", "None that I know of.", [], None),
    ("Any allergies?", "I'm allergic to nuts.", [], None),
    ("Anything else?", "Co-trimoxazole, Septrin.", [], None),  # no question of what to avoid
])
def test_an_answer_to_what_to_avoid_is_kept_as_the_speakers_allergies(
        question: str, answer: str, written: list[str], kept: str | None) -> None:
    messages = [Message(role="user", name="Fiifi", content="I have autoimmune hepatitis."),
                Message(role="assistant", content=question), Message(role="user", name="Fiifi", content=answer)]
    transcript = Transcript.of(messages, datetime(2026, 7, 21, tzinfo=timezone.utc))
    assert unheld_avoided(transcript, "Fiifi", written) == ([(2, kept)] if kept else [])


async def test_an_allergy_said_as_an_answer_is_kept_and_the_memory_that_takes_it_dropped(
        reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Fiifi", "content": "Azathioprine, 100 milligrams every morning."},
            {"role": "assistant", "content": "Noted. Fiifi, any allergies?"},
            {"role": "user", "name": "Fiifi", "content": "Co-trimoxazole, Septrin. A big blistering rash in 2015."}]
    server.script(EXTRACT, memories({"content": "Fiifi takes azathioprine, 100 milligrams, and co-trimoxazole",
                                     "sources": [0]},
                                    {"content": "Fiifi had a big blistering rash in 2015", "sources": [2]}))
    result = await reme.summarize_memory(chat, user_name="fiifi")

    added = [n.content for n in result.added]
    assert "Fiifi's allergies: Co-trimoxazole, Septrin." in added
    assert not any("takes" in text and "co-trimoxazole" in text for text in added)


def test_an_answer_to_another_speakers_question_about_whom_to_call_is_kept() -> None:
    # fresh12 (qwen1.5b): the guide asked, not the assistant, and the memory named the travel doctor
    messages = [Message(role="user", name="Sipho", content="I had my spleen out, so penicillin V for life."),
                Message(role="user", name="Joseph", content="I'll put the spleen on the emergency sheet. Who's the contact?"),
                Message(role="user", name="Sipho", content="My wife Lindiwe, at home in Durban."),
                Message(role="user", name="Joseph", content="Who's bringing the tent?"),
                Message(role="user", name="Sipho", content="Thandeka.")]
    transcript = Transcript.of(messages, datetime(2026, 8, 10, tzinfo=timezone.utc))
    assert unheld_answers(transcript, "Sipho", ["Sipho's wife Lindiwe is at home in Durban"]) == [
        (2, "Sipho's emergency contacts: My wife Lindiwe, at home in Durban.")]
    # one's own question is no one else's answer
    alone = [messages[0], Message(role="user", name="Sipho", content="Who's the emergency contact? My wife Lindiwe.")]
    assert unheld_answers(Transcript.of(alone, datetime(2026, 8, 10, tzinfo=timezone.utc)), "Sipho", []) == []


def test_an_emergency_answer_keeps_the_contacts_not_the_home_or_the_work_said_with_them() -> None:
    # fresh28: "Where do you live, and who should be called in an emergency?" -- "In Walmer, in Gqeberha. My cousin
    # Nokwanda ... is my emergency contact. I work as a paralegal ..." was kept whole as the emergency contacts (the
    # home and the work in it went stale there)
    lines = ["Where do you live, and who should be called in an emergency?",
             "In Walmer, in Gqeberha. My cousin Nokwanda lives around the corner and she's my emergency contact. "
             "I work as a paralegal at a law firm in town."]
    transcript = Transcript.of([Message(role="assistant", content=lines[0]),
                                Message(role="user", name="Khanyisile", content=lines[1])],
                               datetime(2026, 3, 3, tzinfo=timezone.utc))
    kept = "Khanyisile's emergency contacts: My cousin Nokwanda lives around the corner and she's my emergency contact."
    assert unheld_answers(transcript, "Khanyisile", []) == [(1, kept)]
    # ... nor what the speaker goes on to say of themselves; whom to call after the first stays
    lines = ["Who is your emergency contact, Devika?",
             "Nikhil. We have twin boys, Ishan and Vihaan. I'm a chartered accountant. My haematologist is Dr Mathur."]
    transcript = Transcript.of([Message(role="assistant", content=lines[0]),
                                Message(role="user", name="Devika", content=lines[1])],
                               datetime(2026, 4, 28, tzinfo=timezone.utc))
    assert unheld_answers(transcript, "Devika", []) == [(1, "Devika's emergency contacts: Nikhil.")]
    lines = ["Who should be called in an emergency?", "For Dad, me first, then Neo. For me, my husband Thabiso. "
                                                      "I'd ring Neo before anyone else, though."]
    transcript = Transcript.of([Message(role="assistant", content=lines[0]),
                                Message(role="user", name="Ona", content=lines[1])],
                               datetime(2026, 4, 28, tzinfo=timezone.utc))
    assert unheld_answers(transcript, "Ona", []) == [(1, f"Ona's emergency contacts: {lines[1]}")]


@pytest.mark.parametrize(("line", "sentence", "named"), [
    # fresh12 (qwen1.5b): "It comes down by 5 mg every four weeks." was kept as said, "it" unnamed
    ("Prednisolone, 20 mg every morning, started ten days ago. It comes down by 5 mg every four weeks.",
     "It comes down by 5 mg every four weeks.", "Prednisolone comes down by 5 mg every four weeks."),
    ("The metformin stopped working. It's too weak now, 500 mg.", "It's too weak now, 500 mg.",
     "The metformin is too weak now, 500 mg."),
    ("Metformin, 500 mg. It's been stopped now.", "It's been stopped now.", "Metformin's been stopped now."),
    # no medicine just before; a question between: as it is
    ("The weather was awful. It rained for 5 days.", "It rained for 5 days.", "It rained for 5 days."),
    ("Prednisolone, 20 mg. Is that a lot? It comes down by 5 mg.", "It comes down by 5 mg.", "It comes down by 5 mg."),
    # fresh16 (qwen1.5b kept "It's two hundred and fifty milligrams now." as said): a dose of the one medicine named
    # earlier in the line
    ("But it messed with the clozapine. I got so drowsy I fell asleep at work. So it's two hundred and fifty "
     "milligrams now.", "So it's two hundred and fifty milligrams now.",
     "So it's two hundred and fifty milligrams now."),
    ("But it messed with the clozapine. I got so drowsy I fell asleep at work. It's two hundred and fifty "
     "milligrams now.", "It's two hundred and fifty milligrams now.",
     "The clozapine is two hundred and fifty milligrams now."),
    ("Both the clozapine and the quetiapine went up. I was drowsy. It's 250 mg now.", "It's 250 mg now.",
     "It's 250 mg now."),  # which of the two?
    ("It messed with the clozapine. I was drowsy. It's awful.", "It's awful.", "It's awful."),  # no dose
    ("It messed with the clozapine. Is that normal? It's 250 mg now.", "It's 250 mg now.", "It's 250 mg now."),
    # fresh19 (qwen1.5b dropped it for its pronoun): the one condition the sentence before names
    ("I've got gastroparesis, my stomach's basically on a go-slow. It started after a norovirus in 2023.",
     "It started after a norovirus in 2023.", "The gastroparesis started after a norovirus in 2023."),
    ("I've got gastroparesis and endometriosis. It started in 2023.", "It started in 2023.",
     "It started in 2023."),  # which of the two?
    # fresh25 (qwen1.5b kept it unnamed): the one disease named after someone
    ("I have Ménière's disease in my right ear: attacks of vertigo, ringing. It was diagnosed in 2022, in Ferrara.",
     "It was diagnosed in 2022, in Ferrara.", "Ménière's disease was diagnosed in 2022, in Ferrara."),
    ("They found Ehlers-Danlos syndrome, the hypermobile kind. It's why my joints slip.", "It's why my joints slip.",
     "Ehlers-Danlos syndrome is why my joints slip."),
    ("Ali has Dravet syndrome and I have Ménière's disease. It started in 2022.", "It started in 2022.",
     "It started in 2022."),  # which of the two?
])
def test_a_sentence_kept_as_said_names_the_medicine_its_it_is(line: str, sentence: str, named: str) -> None:
    transcript = Transcript.of([Message(role="user", name="Henrique", content=line)],
                               datetime(2026, 10, 8, tzinfo=timezone.utc))
    assert named_subject(transcript, 0, sentence) == named


@pytest.mark.parametrize(("line", "sentence", "kept"), [
    # fresh20 (qwen1.5b): a repair call mended none of 23 kept sentences starting with a pronoun,
    # and they were dropped with what they held
    ("I've got ADPKD. It makes me pee like a racehorse, so I drink three to four litres of water a day.",
     "It makes me pee like a racehorse, so I drink three to four litres of water a day.",
     "I've got ADPKD. It makes me pee like a racehorse, so I drink three to four litres of water a day."),
    # two back, past one that starts with a pronoun too
    ("The coils are holding. But they found a second aneurysm. They're watching it with an MRA scan every year.",
     "They're watching it with an MRA scan every year.",
     "The coils are holding. But they found a second aneurysm. They're watching it with an MRA scan every year."),
    # the lead-in of the sentence ("So") is not a sentence before it
    ("Calcium is back up. So that's the opposite of before.", "That's the opposite of before.",
     "Calcium is back up. That's the opposite of before."),
    # nothing before it, a question before it, or only pronouns: as it is (the repair's to mend)
    ("It comes down Mum's side.", "It comes down Mum's side.", "It comes down Mum's side."),
    ("Is that bad? It hurts at night.", "It hurts at night.", "It hurts at night."),
    ("It was awful. They said so. It hurts at night.", "It hurts at night.", "It hurts at night."),
    # a sentence that starts with no pronoun needs nothing before it
    ("I've got ADPKD. My mum has it too.", "My mum has it too.", "My mum has it too."),
    # a dose, or how often, that names no medicine; "the same" (fresh20: each kept without what it was of)
    ("Tolvaptan, the brand's Jinarc. Sixty milligrams when I wake up, and thirty at three.",
     "Sixty milligrams when I wake up, and thirty at three.",
     "Tolvaptan, the brand's Jinarc. Sixty milligrams when I wake up, and thirty at three."),
    ("Colchicine, one milligram a day. Every day for life, even when I feel fine.",
     "Every day for life, even when I feel fine.",
     "Colchicine, one milligram a day. Every day for life, even when I feel fine."),
    ("No clarithromycin, it pushes the colchicine level too high. The same with grapefruit.",
     "The same with grapefruit.", "No clarithromycin, it pushes the colchicine level too high. The same with grapefruit."),
    ("A fever means the GP the same day. Proper blood in my pee, same.", "Proper blood in my pee, same.",
     "A fever means the GP the same day. Proper blood in my pee, same."),
    ("I take it daily. 20 mg of prednisolone every morning.", "20 mg of prednisolone every morning.",
     "20 mg of prednisolone every morning."),  # the medicine named: it stands
    ("So I have a urine test every six months. The next one is on the 3rd of next month.",
     "The next one is on the 3rd of next month.",
     "So I have a urine test every six months. The next one is on the 3rd of next month."),
    # fresh27 (qwen1.5b): "the last was on the 2nd of September" was kept without the injections it dates
    ("I'm on degarelix injections, 80 milligrams every four weeks; the last was on the 2nd of September.",
     "the last was on the 2nd of September.",
     "I'm on degarelix injections, 80 milligrams every four weeks; the last was on the 2nd of September."),
    ("The last was awful. The next is on Monday.", "The next is on Monday.", "The next is on Monday."),  # nothing
])
def test_a_sentence_kept_as_said_starting_with_it_follows_what_it_is(line: str, sentence: str, kept: str) -> None:
    transcript = Transcript.of([Message(role="user", name="Rami", content=line)], datetime(2026, 10, 8, tzinfo=timezone.utc))
    assert led_in(transcript, 0, sentence, sentence) == kept


async def test_a_health_sentence_starting_with_it_is_kept_with_the_sentence_before_and_needs_no_repair(
        reme: ReMe, server: OpenAITestServer) -> None:
    line = "I've got POTS, like Mum. It drops my blood pressure, so I take midodrine, 10 mg every morning."
    server.script(EXTRACT, memories({"content": "Rami has POTS, like his mum.", "sources": [0]}))
    result = await reme.summarize_memory([{"role": "user", "name": "Rami", "content": line,
                                           "time": "2026-03-02T10:00:00Z"}], user_name="rami")

    assert "Rami has got POTS, like Mum. It drops Rami's blood pressure, so Rami takes midodrine, 10 mg every " \
           "morning." in [n.content for n in result.added]
    assert result.usage.calls == 1  # no repair call


async def test_sentences_kept_as_said_make_no_repair_call_of_their_own(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh20 (qwen1.5b): the repair mended none of 23 kept sentences starting with a pronoun, in 16 calls
    chat = [{"role": "user", "name": "Ana", "content": "I've got lupus.", "time": "2026-03-02T10:00:00Z"},
            {"role": "assistant", "content": "How does it affect you?"},
            {"role": "user", "name": "Ana", "content": "It flares in the sun, so I take hydroxychloroquine, 200 mg a day."}]
    server.script(EXTRACT, memories({"content": "Ana has lupus.", "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="ana")

    assert result.usage.calls == 1 and not [r for r in server.requests if "Memories:" in prompt_of(r["body"])]
    # a health fact is kept as it is, as when a repair gives nothing
    assert "It flares in the sun, so Ana takes hydroxychloroquine, 200 mg a day." in [n.content for n in result.added]



async def test_sentences_kept_as_said_go_with_a_repair_call_the_extraction_needs(reme: ReMe,
                                                                                  server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Ana", "content": "I've got lupus.", "time": "2026-03-02T10:00:00Z"},
            {"role": "assistant", "content": "How does it affect you?"},
            {"role": "user", "name": "Ana", "content": "It flares in the sun, so I take hydroxychloroquine, 200 mg a day."}]
    server.script(EXTRACT, memories({"content": "Ana has lupus.", "sources": [0]},
                                    {"content": "They flare in the sun.", "sources": [2]}))
    server.script("Memories:", {"memories": [{"index": 0, "content": "Ana's lupus flares in the sun."},
                                             {"index": 1, "content": "Ana's lupus flares in the sun, so Ana takes "
                                                                     "hydroxychloroquine, 200 mg a day."}]})
    result = await reme.summarize_memory(chat, user_name="ana")
    assert result.usage.calls == 2
    assert "Ana's lupus flares in the sun, so Ana takes hydroxychloroquine, 200 mg a day." in [
        n.content for n in result.added]


def test_an_emergency_contact_is_a_safety_fact() -> None:
    # fresh4 (qwen1.5b): "She's my emergency contact anyway" and "he's the emergency contact on
    # the forms" were in no memory: who to call is safety, like an allergy
    lines = ["Sifiso knows, and my partner Nomvula is coming along.", "She's my emergency contact anyway."]
    transcript = Transcript.of([Message(role="user", name="Mandla", content=line) for line in lines],
                               datetime(2025, 5, 14, tzinfo=timezone.utc))
    assert unheld_health(transcript, ["Nomvula is Mandla's partner"]) == [(1, lines[1])]
    assert unheld_health(transcript, ["Nomvula is Mandla's emergency contact"]) == []


@pytest.mark.parametrize(("lines", "sentence", "resolved"), [
    # fresh4 (qwen1.5b): "She's my emergency contact" was kept as said and the repair named the
    # brother-in-law of the clause before the partner: an emergency contact stored wrong
    (["Sifiso knows, and my partner Nomvula is coming along. She's my emergency contact anyway."],
     "She's my emergency contact anyway.", "Nomvula is my emergency contact anyway."),
    # the answer to the assistant's question about someone (fresh3: "And Mere?" -- "She has eczema")
    (["My son Wiremu is seven. Wiremu is allergic to penicillin.", "And Mere?", "She has eczema, quite bad."],
     "She has eczema, quite bad.", "Mere has eczema, quite bad."),
    (["My brother Tomasz lives in Gdansk. He's got two kids."], "He's got two kids.", "Tomasz's got two kids."),
    (["My mother Carmen is flying in. She's never met Tomás."], "She's never met Tomás.",
     "Carmen's never met Tomás."),
    (["My sister Aino is getting married. She's not nervous."], "She's not nervous.", "Aino is not nervous."),
    # another name of hers is no one new (fresh14, qwen1.5b: both "She's" sentences kept unnamed)
    (["Everyone loves Doña Chayo.", "My mother, Rosario, though everyone calls her Doña Chayo. She's 81 and "
      "diabetic. She's also allergic to aspirin."], "She's also allergic to aspirin.",
     "Rosario is also allergic to aspirin."),
    # a name with its title (fresh14, qwen1.5b: "She moved the furosemide down", kept unnamed)
    (["Dr Ahmed retired and Dr Vance runs my clinic now. She moved the bisoprolol down to 2.5 mg."],
     "She moved the bisoprolol down to 2.5 mg.", "Dr Vance moved the bisoprolol down to 2.5 mg."),
    (["How is Tomás?", "Back at work, his first shift. He's called twice."], "He's called twice.",
     "Tomás's called twice."),
    (["How is Tomás?", "Back at work, his first shift. She's called twice."], "She's called twice.", None),
    # a word that opens a sentence is no name unless the conversation writes it inside one
    (["Nervous, but OK. She said the first weeks can be rough."], "She said the first weeks can be rough.", None),
    (["Trimethoprim.", "She had a nasty reaction to it."], "She had a nasty reaction to it.", None),
    (["My son Wiremu is seven.", "And Mere?", "Wiremu is fine. She has eczema."], "She has eczema.", None),
    # who "she" is cannot be told: kept as said (the repair's to mend, or dropped)
    (["Sifiso and Nomvula are coming. She's my emergency contact."], "She's my emergency contact.", None),
    (["My husband Kofi is coming. She's my emergency contact."], "She's my emergency contact.", None),  # his
    (["I told Nomvula about it. She's my emergency contact."], "She's my emergency contact.", None),
    (["She's my emergency contact."], "She's my emergency contact.", None),
    # no sentence before names anyone so: the one person of that gender introduced with a relation
    # (fresh11, qwen1.5b copied both as said: "She's four ...", "He's diabetic too ...")
    (["I need somewhere to keep my daughter Yasmin's allergy details. She's four."], "She's four.",
     "Yasmin is four."),
    (["My father-in-law, Haruto, moved in. He's 81 and has Alzheimer's.", "What does he take?",
      "Donepezil 5 mg at bedtime. He's diabetic too."], "He's diabetic too.", "Haruto is diabetic too."),
    (["My daughter Yasmin is four and Bethan is her key worker.", "Anything else?", "She's lovely."],
     "She's lovely.", None),  # Bethan, not introduced with a relation, may be "she"
    (["My son Wiremu and my brother Tane came.", "Anything else?", "He's seven."], "He's seven.", None),
    (["My husband Kofi is here.", "Anything else?", "She's seven."], "She's seven.", None),
    # fresh24 (qwen1.5b): a "he" of someone named before, then a sentence naming her (the daughter's peanut
    # allergy was kept with "She")
    (["My husband Sorin drives trams, he does the early shifts. Our daughter Ioana is nine. She has a peanut "
      "allergy."], "She has a peanut allergy.", "Ioana has a peanut allergy."),
    (["My husband Sorin drives trams, he does the early shifts. She has a peanut allergy."],
     "She has a peanut allergy.", None),
    # fresh25 (qwen1.5b): "they" is no one to name, and a clause naming a woman leaves "he" to the one boy introduced
    # with a relation (the son's egg allergy was kept as "He's allergic to eggs")
    (["My son Ulises has Dravet syndrome.", "Is there anything he must never have?",
      "No sodium channel blockers. They make Dravet seizures much worse. And he's allergic to eggs."],
     "He's allergic to eggs.", "Ulises is allergic to eggs."),
    (["My son Ulises is seven.", "Who looks after him?",
      "Me, and my mother Amparo, who lives with us. He's with his dad at weekends."],
     "He's with his dad at weekends.", "Ulises is with his dad at weekends."),
    (["My mother Amparo lives with us. He's seven."], "He's seven.", None),
    # fresh26 (qwen1.5b): "my boy" is a son, and the sentence with "his" before "she" is hers when it starts with her
    (["I keep notes on my boy, Tamati. He's eleven and has Duchenne."], "He's eleven and has Duchenne.",
     "Tamati is eleven and has Duchenne."),
    (["My wife Huia is his main carer; she's a physiotherapist."], "she's a physiotherapist.",
     "Huia is a physiotherapist."),
    (["My husband Kofi is his main carer; she's a physiotherapist."], "she's a physiotherapist.", None),
    (["My son Ulises and my brother Tane came.", "Anything else?", "They were late. He's seven."], "He's seven.",
     None),
    # fresh27 (qwen1.5b): a child named by whose parent the speaker is, of the gender its first pronoun says ("He has
    # Prader-Willi syndrome" was kept unnamed); a title is no one's name ("Mr Doherty. ... he's" became "Mr's")
    (["I'm Tobi's mum; on paper he's Oluwatobi, and he's nine. He has Prader-Willi syndrome."],
     "He has Prader-Willi syndrome.", "Tobi has Prader-Willi syndrome."),
    (["I'm Ama's mum, and she's nine. He has asthma."], "He has asthma.", None),
    (["I'm Tobi's dad. He has asthma."], "He has asthma.", None),  # no pronoun after it says which
    (["He's at school with a one-to-one assistant, Mr Doherty. He's obsessed with trains."],
     "He's obsessed with trains.", None),
])
def test_a_sentence_kept_as_said_names_whom_its_he_or_she_is_when_the_sentence_before_says_it(
        lines: list[str], sentence: str, resolved: str | None) -> None:
    messages = [Message(role="assistant", content=line) if line.endswith("?") else
                Message(role="user", name="Mandla", content=line) for line in lines]
    transcript = Transcript.of(messages, datetime(2025, 5, 14, tzinfo=timezone.utc))
    assert named_subject(transcript, len(messages) - 1, sentence) == (resolved or sentence)


@pytest.mark.parametrize(("lines", "sentence", "resolved"), [
    # fresh15 (qwen1.5b): a state said with no subject is of the one the sentence before names, or of the speaker
    (["And your son?", "Sahan, he's seven. Anaphylactic to cashews and pistachios."],
     "Anaphylactic to cashews and pistachios.", "Sahan is anaphylactic to cashews and pistachios."),
    (["Any allergies?", "Allergic to penicillin, hives."], "Allergic to penicillin, hives.",
     "Mandla is allergic to penicillin, hives."),
    (["And the kids?", "Sahan and Nethmi are here. Allergic to cashews."], "Allergic to cashews.", None),  # which?
    # "his" or "her" of the one person the question names (fresh15: "His sister Anoma flies down ...")
    (["Is anyone helping Ruwan?", "His sister Anoma flies down from Sydney on Sunday."],
     "His sister Anoma flies down from Sydney on Sunday.", "Ruwan's sister Anoma flies down from Sydney on Sunday."),
    (["Is anyone helping Ruwan and Kusuma?", "His sister Anoma flies down."], "His sister Anoma flies down.", None),
    (["Is anyone helping?", "His sister Anoma flies down."], "His sister Anoma flies down.", None),
    # a place alone answering where the speaker lives (fresh25, qwen1.5b: kept with no subject, so the move ended
    # nothing)
    (["Where do you live and work?", "In a flat in Prospect, in Adelaide. I'm a forklift driver."],
     "In a flat in Prospect, in Adelaide.", "Mandla lives in a flat in Prospect, in Adelaide."),
    (["Where do you work?", "In a warehouse in Wingfield."], "In a warehouse in Wingfield.", None),
    # fresh26/27 (qwen1.5b): a home alone answering it ("A flat in Leith, in Edinburgh." ended by no move)
    (["Where do you live, and who should be called?", "A flat in Leith, in Edinburgh. My sister."],
     "A flat in Leith, in Edinburgh.", "Mandla lives in a flat in Leith, in Edinburgh."),
    (["Where are you living, and are you working?", "A top-floor flat in Leith. I'm a postman."],
     "A top-floor flat in Leith.", "Mandla lives in a top-floor flat in Leith."),
    (["Where are you living now?", "My flat in Leith, still."], "My flat in Leith, still.",
     "Mandla lives in a flat in Leith, still."),
    (["Where do you work?", "A flat in Leith, cleaning."], "A flat in Leith, cleaning.", None),
    # fresh27 (qwen1.5b): what was done, answering a question after one thing ("Stopped in March" without what)
    (["And the bicalutamide?", "Stopped in March, as planned."], "Stopped in March, as planned.",
     "The bicalutamide was stopped in March, as planned."),
    (["What about your inhalers?", "Both changed in May."], "Both changed in May.",
     "Mandla's inhalers were both changed in May."),
    (["And the bicalutamide?", "Fine, thanks. Stopped in March."], "Stopped in March.", None),  # not the first
    (["And the bicalutamide?", "Stoppered in a jar."], "Stoppered in a jar.", None),
    # "his" or "her" of the one the line before speaks of, when the question names no one (fresh25, qwen1.5b: both
    # dropped as led by a pronoun)
    (["My son Ulises is seven.", "Who looks after him?",
      "Me, mostly, and my mother Amparo, his abuela. His dad, Joaquín, has him every other weekend."],
     "His dad, Joaquín, has him every other weekend.", "Ulises's dad, Joaquín, has him every other weekend."),
    (["I keep notes for my son Ulises.", "Anything coming up?",
      "Ulises has an EEG next Tuesday. His sister Xiomara is doing a walk on Saturday."],
     "His sister Xiomara is doing a walk on Saturday.", "Ulises's sister Xiomara is doing a walk on Saturday."),
    (["I keep notes for my son Ulises and my nephew Tane.", "Anything coming up?",
      "Ulises and Tane have an EEG. His sister Xiomara is doing a walk."],
     "His sister Xiomara is doing a walk.", None),
    # a time or a place alone answering when or where something is (fresh15: "Next Wednesday, at a hotel in
    # Negombo." kept without the wedding)
    (["When is the wedding itself?", "Next Wednesday, at a hotel in Negombo."],
     "Next Wednesday, at a hotel in Negombo.", "The wedding itself is next Wednesday, at a hotel in Negombo."),
    (["Kristjan, when's the surgery?", "Four weeks from today, with Dr Ilves, the cardiac surgeon in Tartu."],
     "Four weeks from today, with Dr Ilves, the cardiac surgeon in Tartu.",
     "The surgery is four weeks from today, with Dr Ilves, the cardiac surgeon in Tartu."),
    (["Where is your clinic?", "Out in Soweto, near the mall."], "Out in Soweto, near the mall.",
     "Mandla's clinic is out in Soweto, near the mall."),
    (["When is the wedding?", "Next Wednesday. I'm giving the speech in Negombo."],
     "I'm giving the speech in Negombo.", None),  # not the answer's first sentence
    (["When is the wedding?", "We fly out on Friday to Negombo."], "We fly out on Friday to Negombo.", None),
    # a dose alone answering the question of the dose, of the one medicine the line before says is taken (fresh16:
    # "Fifteen milligrams, three times a day." kept without the phenelzine)
    (["Since August I've been on phenelzine, and it works.", "What's the dose?", "Fifteen milligrams, three times a day."],
     "Fifteen milligrams, three times a day.", "Mandla takes phenelzine: fifteen milligrams, three times a day."),
    (["I'm taking the metoprolol again.", "How much?", "25 mg at night."], "25 mg at night.",
     "Mandla takes metoprolol: 25 mg at night."),
    (["I'm on lithium and I take sertraline.", "What's the dose?", "400 mg."], "400 mg.", None),  # which?
    (["Since August I've been on phenelzine.", "How are you sleeping?", "Ten hours a night."], "Ten hours a night.",
     None),  # not a dose
    (["Since August I've been on phenelzine.", "What's the dose?", "Some milligrams."], "Some milligrams.", None),
    # fresh24 (qwen1.5b): work said alone, answering the question of it, was kept with no subject ("I've retired"
    # then ended nothing of it)
    (["What do you do for work?", "Sheep farmer, four hundred ewes near Tregaron."],
     "Sheep farmer, four hundred ewes near Tregaron.", "Mandla is a sheep farmer, four hundred ewes near Tregaron."),
    (["What do you do for work?", "Electrician."], "Electrician.", "Mandla is an electrician."),
    (["What do you do for work?", "Better, finally."], "Better, finally.", None),
    (["What do you do for work?", "Mother of three, mostly."], "Mother of three, mostly.", None),
    (["How are you?", "Sheep farmer, four hundred ewes."], "Sheep farmer, four hundred ewes.", None),
])
def test_a_sentence_kept_as_said_is_given_the_subject_its_line_or_question_says(
        lines: list[str], sentence: str, resolved: str | None) -> None:
    messages = [Message(role="assistant", content=line) if line.endswith("?") else
                Message(role="user", name="Mandla", content=line) for line in lines]
    transcript = Transcript.of(messages, datetime(2025, 5, 14, tzinfo=timezone.utc))
    assert named_subject(transcript, len(messages) - 1, sentence) == (resolved or sentence)


def test_a_he_after_a_semicolon_is_named_too() -> None:
    # fresh13 (qwen1.5b): "he's the one to call in an emergency." was kept as said, "he" unnamed
    line = "My partner Davide comes with me to everything; he's the one to call in an emergency."
    transcript = Transcript.of([Message(role="user", name="Chiara", content=line)],
                               datetime(2026, 1, 27, tzinfo=timezone.utc))
    assert named_subject(transcript, 0, "he's the one to call in an emergency.") == \
        "Davide is the one to call in an emergency."


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.lists(st.sampled_from(
           ["She", "He", "She's", "He's", "my", "partner", "husband", "Nomvula", "Kofi", "Tomás", "And", "and", "her",
            "his", "never", "met", "is", "a", "nurse", ".", "?", ",", ":", "Dr.", "Mandla", " "]), max_size=14).map(
           " ".join)), min_size=1, max_size=4))
@example([("user", "my partner Nomvula is a nurse . She's never met Kofi")])  # one it names
@example([("user", "She Nomvula Dr. She ? her")])  # "her" was named in a sentence led by "She"
@example([("user", "She Nomvula Dr. her her")])  # the object "her" is the second
def test_naming_a_he_or_she_keeps_the_rest_of_the_sentence(lines: list[tuple[str, str]]) -> None:
    messages = [Message(role=role, content=text or ".", name=None if role == "assistant" else "Mandla")
                for role, text in lines]
    transcript = Transcript.of(messages, datetime(2025, 5, 14, tzinfo=timezone.utc))
    for index, message in enumerate(messages):
        for sentence in (s.strip() for s in message.content.split(".") if s.strip()):
            named = named_subject(transcript, index, sentence)
            lead = re.match(r"(?:She|He)(?:['’]s)?(.*)", sentence, re.S)
            if named != sentence and lead:  # a name the conversation writes, in place of the pronoun alone
                rest = lead[1]
                name = named[:len(named) - len(rest)].split("'")[0].split(" ")[0]
                # (the person the assistant asks after by name may be asked after later in the session: `topic_person`)
                assert named.endswith(rest) and name in "".join(m.content for m in messages)
            elif named != sentence:  # one "him" or "her" as a name the line wrote before it (`object_named`); the
                # object, which need not be the first ("her her": the first is "her" before a noun)
                before = messages[index].content[:messages[index].content.find(sentence)]
                assert any(named.startswith(sentence[:p.start()]) and named.endswith(sentence[p.end():])
                           and (name := named[p.start():len(named) - len(sentence) + p.end()])
                           and name.split()[-1] in before for p in re.finditer(r"\b(?:him|her)\b", sentence))


async def test_an_emergency_contact_kept_as_said_is_named_without_a_repair(
        reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Mandla", "time": "2025-05-14T08:00:00Z",
             "content": "I'm allergic to bee stings. Sifiso knows, and my partner Nomvula is coming along. "
                        "She's my emergency contact anyway, and she's a paramedic, so I'm in good hands."}]
    server.script(EXTRACT, memories({"content": "Mandla is allergic to bee stings", "sources": [0]},
                                    {"content": "Mandla's partner Nomvula is a paramedic", "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="mandla")

    assert [n.content for n in result.added][2:] == [
        "Nomvula is Mandla's emergency contact anyway, and she's a paramedic, so Mandla is in good hands."]
    assert "personal/repair" not in result.usage.steps


@pytest.mark.parametrize(("line", "sentence", "named"), [
    # fresh18 (qwen1.5b): what "they" did to a patient, kept as said and dropped for its pronoun, or stored with it
    ("So, my heart. They put a pacemaker in, on the 16th of last month.",
     "They put a pacemaker in, on the 16th of last month.",
     "The doctors put a pacemaker in, on the 16th of last month."),
    ("Last Friday my left eye went grey. They gave me five days of IV methylprednisolone.",
     "They gave me five days of IV methylprednisolone.", "The doctors gave me five days of IV methylprednisolone."),
    # fresh25 (qwen1.5b kept "They heard a murmur at Cordula's school medical in 1989" with its pronoun)
    ("I was born with a bicuspid aortic valve, now aortic stenosis. They heard a murmur at my school medical in 1989.",
     "They heard a murmur at my school medical in 1989.", "The doctors heard a murmur at my school medical in 1989."),
    ("I've got acromegaly, a tumour on my pituitary. They took most of it out in 2024, through the nose.",
     "They took most of it out in 2024, through the nose.",
     "The doctors took most of it out in 2024, through the nose."),
    # people the line names, or nothing of health: as it is
    ("My parents came for my surgery. They took me home after.", "They took me home after.",
     "They took me home after."),
    ("Kai and Milo were at the hospital. They gave me flowers.", "They gave me flowers.", "They gave me flowers."),
    ("The movers were great. They put the sofa in the hall.", "They put the sofa in the hall.",
     "They put the sofa in the hall."),
    ("My surgery went well. They have a little boy, Milo.", "They have a little boy, Milo.",
     "They have a little boy, Milo."),
    # fresh19 (qwen1.5b dropped it for its pronoun): "They've" warned, in a talk of health
    ("I carry an EpiPen. They've warned the team for the CT of my heart arteries.",
     "They've warned the team for the CT of my heart arteries.",
     "The doctors have warned the team for the CT of my heart arteries."),
    # fresh20 (qwen1.5b stored both starting with "They")
    ("My calcium is 2.9. They'll operate, but until then it's cinacalcet, 30 milligrams twice a day.",
     "They'll operate, but until then it's cinacalcet, 30 milligrams twice a day.",
     "The doctors will operate, but until then it's cinacalcet, 30 milligrams twice a day."),
    ("My kidneys were leaking protein. They did a kidney biopsy and it's membranous nephropathy.",
     "They did a kidney biopsy and it's membranous nephropathy.",
     "The doctors did a kidney biopsy and it's membranous nephropathy."),
    ("My parents came for my surgery. They did a lot for me.", "They did a lot for me.", "They did a lot for me."),
])
def test_what_they_did_to_a_patient_is_the_doctors(line: str, sentence: str, named: str) -> None:
    transcript = Transcript.of([Message(role="user", name="Ji-ho", content=line)],
                               datetime(2026, 5, 19, tzinfo=timezone.utc))
    assert named_subject(transcript, 0, sentence) == named


async def test_a_memory_opening_with_what_they_did_to_a_patient_names_the_doctors(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh18 (qwen1.5b): "They gave Tiziri five days of IV methylprednisolone" was stored as it was
    chat = [{"role": "user", "name": "Tiziri", "time": "2026-05-14T08:00:00Z",
             "content": "I have NMOSD. Last Friday my left eye went grey. They gave me five days of IV "
                        "methylprednisolone, a gram a day."}]
    server.script(EXTRACT, memories({"content": "Tiziri has NMOSD.", "sources": [0]},
                                    {"content": "They gave Tiziri five days of IV methylprednisolone, a gram a day.",
                                     "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="tiziri")

    assert "The doctors gave Tiziri five days of IV methylprednisolone, a gram a day." in [
        n.content for n in result.added]
    assert not [n.content for n in result.added if n.content.startswith("They")]


@pytest.mark.parametrize(("line", "sentence", "named"), [
    # fresh18 (qwen1.5b kept "Dalit sees him on the 2nd of next month": whom?)
    ("My new haematologist down here is Dr Tregear; I see him on the 2nd of next month.",
     "I see him on the 2nd of next month.", "I see Dr Tregear on the 2nd of next month."),
    ("My GP is Dr Okafor. I ring her if it gets worse.", "I ring her if it gets worse.",
     "I ring Dr Okafor if it gets worse."),
    # a sentence kept as said ends as a sentence ends: found in its line all the same (fresh18: dropped as starting
    # with a pronoun)
    ("My dad, Diarmuid, had it too, only nobody knew. He died of emphysema in 2011; he was fifty-four.",
     "He died of emphysema in 2011.", "Diarmuid died of emphysema in 2011."),
    # "her" of a noun, a relation of the other gender, two names, a question: as it is
    ("My GP is Dr Okafor. I see her mum every month.", "I see her mum every month.", "I see her mum every month."),
    ("My sister Ana is a nurse. I call him every day.", "I call him every day.", "I call him every day."),
    ("Dr Okafor and Ben came. I see him on Monday.", "I see him on Monday.", "I see him on Monday."),
    ("Is Dr Okafor good? I see him on Monday.", "I see him on Monday.", "I see him on Monday."),
])
def test_him_or_her_is_the_one_person_the_sentence_before_names(line: str, sentence: str, named: str) -> None:
    transcript = Transcript.of([Message(role="user", name="Dalit", content=line)],
                               datetime(2026, 9, 8, tzinfo=timezone.utc))
    assert named_subject(transcript, 0, sentence) == named


@pytest.mark.parametrize(("memory", "copied"), [
    # fresh19 (qwen1.5b, small talk): the user's question and the assistant's answer, stored as a memory
    ("Is there a trick to make it stop faster? Press your tongue or your thumb against the roof of your mouth to warm "
     "it, or sip something warm.", True),
    # the user's own words: kept
    ("Taini gets brain freeze when she eats ice cream too fast.", False),
])
def test_a_sentence_the_assistant_said_copied_into_a_memory_is_caught(memory: str, copied: bool) -> None:
    messages = [Message(role="user", name="Taini", content="I get brain freeze when I eat ice cream too fast. Is "
                                                           "there a trick to make it stop faster?"),
                Message(role="assistant", content="Press your tongue or your thumb against the roof of your mouth to "
                                                  "warm it, or sip something warm. Slowing down helps too.")]
    assert (not_a_memory(memory, messages, [0, 1], "taini") is not None) == copied


@pytest.mark.parametrize(("memory", "compared"), [
    ("Eero is six years younger than Eero, so Eero raised her", True),
    ("Dana is married to Dana", True),
    ("Eero is six years younger than Aino", False),
    ("Mohan had a small stroke in 2019, and Mohan takes clopidogrel", False),  # two facts of one person
    ("Sam is as tall as Sam's dad", False),
    # fresh25 (qwen1.5b): an allergy kept as said was dropped for "gave it to Temitope"
    ("Temitope is allergic to co-trimoxazole: Temitope got a blistering rash in 2016, when they gave it to Temitope "
     "for a kidney infection.", False),
    ("Temitope got a rash when they gave them to Temitope.", False),
])
def test_a_memory_comparing_someone_with_themselves_is_found(memory: str, compared: bool) -> None:
    assert self_compared(memory) is compared


async def test_a_memory_comparing_someone_with_themselves_is_repaired_or_dropped(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh4 (qwen1.5b): the repair of "She's six years younger than me" wrote "Eero is six years
    # younger than Eero": the sister went, and the memory says nothing true
    chat = [{"role": "user", "name": "Eero", "time": "2026-02-10T09:00:00Z",
             "content": "My sister Aino is getting married in June."},
            {"role": "assistant", "content": "Congratulations! What should the speech say?"},
            {"role": "user", "name": "Eero", "content": "Something about growing up together. She's six years "
                                                        "younger than me, so I basically raised her."}]
    server.script(EXTRACT, memories({"content": "Eero's sister Aino is getting married in June", "sources": [0]},
                                    {"content": "Eero is six years younger than Eero", "sources": [2]}))
    server.script(REPAIR, {"memories": [{"index": 0, "content": "Eero is six years younger than Eero."}]})
    result = await reme.summarize_memory(chat, user_name="eero")

    assert not [n.content for n in result.added if "younger" in n.content]
    assert any("younger than Eero" in r.reason and r.action == "dropped" for r in result.rejected)


async def test_a_name_or_number_no_memory_holds_is_kept_as_said(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh3 (qwen1.5b): "the Porto marathon in November" and "3:45" were shown to the model
    # and still not kept; a sentence kept so that starts with "It" and is not mended is dropped
    chat = [{"role": "user", "name": "Mateus", "content": "Bom dia! We're planning my build-up to the Porto marathon "
                                                          "in November.", "time": "2024-04-16T06:30:00Z"},
            {"role": "user", "name": "Valéria", "content": "Mateus, your target is under 3 hours 45, agreed?"},
            {"role": "user", "name": "Mateus", "content": "Agreed, 3:45 it is. It was Tuesday 14 May, I think."},
            {"role": "user", "name": "Mateus", "content": "Book me 2 nights in Gaia for the race."}]  # asks: no fact
    server.script(EXTRACT, memories({"content": "Valéria coaches Mateus", "sources": [1]}))
    server.script(REPAIR, {"memories": [{"index": 0, "content": "Mateus's marathon target is 3:45"}]})
    result = await reme.summarize_memory(chat, user_name="mateus")

    assert [n.content for n in result.added] == [
        "Valéria coaches Mateus", "Mateus is planning Mateus's build-up to the Porto marathon in November 2024.",
        "Mateus's marathon target is 3:45"]
    assert [(r.step, r.action) for r in result.rejected] == [("personal/said", "defaulted")] * 3 + [
        ("personal/said", "dropped")]  # "It was Tuesday 14 May" starts with a pronoun: not ours to mend
    assert result.usage.steps == {"personal/extract": 1, "personal/repair": 1}


async def test_a_name_a_sentence_only_calls_someone_by_is_not_kept_as_said(
        reme: ReMe, server: OpenAITestServer) -> None:
    # LoCoMo conv-26 (qwen1.5b): "Totally agree, Mel." was kept as a memory of Caroline's, for the
    # name "Mel" (Melanie's short name) no memory held; a name that only addresses someone is no fact
    chat = [{"role": "user", "name": "Melanie", "content": "Painting is how I relax after a long day.",
             "time": "2023-05-08T13:56:00Z"},
            {"role": "user", "name": "Caroline", "content": "Totally agree, Mel. Relaxing and expressing ourselves is key. "
                                                              "Well, I'm off to go do some research."},
            {"role": "user", "name": "Melanie", "content": "Thanks, Caro! I'm off to go swimming with the kids."},
            {"role": "user", "name": "Caroline", "content": "Hey Mel, my cousin Ingrid moved to Oslo."}]
    server.script(EXTRACT, memories({"content": "Melanie relaxes by painting after a long day", "sources": [0]},
                                    {"content": "Melanie goes swimming with her kids", "sources": [2]}))
    result = await reme.summarize_memory(chat, user_name=["Caroline", "Melanie"])

    for user in ("Caroline", "Melanie"):  # Ingrid and Oslo: news; Mel and Caro: whom they speak to
        assert [n.content for n in result.added if n.memory_target == user] == [
            "Melanie relaxes by painting after a long day", "Melanie goes swimming with her kids",
            "Caroline's cousin Ingrid moved to Oslo."]
    assert result.usage.steps == {"personal/extract": 2}


async def test_a_time_no_memory_dates_is_kept_as_said(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh4 (qwen1.5b): "I started at an engineering firm in Calgary three weeks ago" became "...
    # works at an engineering firm in Calgary"; "Ren, who started last Monday" lost its Monday.
    # A date a memory holds, or one that is only today, is no news.
    chat = [{"role": "user", "name": "Rustam", "time": "2026-01-27T11:00:00Z",
             "content": "I started at an engineering firm in Calgary three weeks ago, on a temporary permit."},
            {"role": "user", "name": "Rustam", "content": "Ren joined my team last Monday. Today I'm on the sofa."},
            {"role": "user", "name": "Rustam", "content": "My visa interview is in nine days."},
            {"role": "user", "name": "Rustam", "content": "Remind me about it on Friday."}]  # asks: no fact
    server.script(EXTRACT, memories({"content": "Rustam works at an engineering firm in Calgary on a temporary permit",
                                     "sources": [0]},
                                    {"content": "Ren is on Rustam's team", "sources": [1]},
                                    {"content": "Rustam's visa interview is in nine days", "sources": [2]}))
    result = await reme.summarize_memory(chat, user_name="rustam")

    assert [n.content for n in result.added] == [
        "Rustam works at an engineering firm in Calgary on a temporary permit", "Ren is on Rustam's team",
        "Rustam's visa interview is in nine days (5 February 2026)",
        "Rustam started at an engineering firm in Calgary three weeks ago (about 6 January 2026), on a temporary permit.",
        "Ren joined Rustam's team last Monday (26 January 2026)."]
    assert [(r.step, r.action) for r in result.rejected] == [("personal/dated", "defaulted")] * 2
    assert result.usage.steps == {"personal/extract": 1}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.lists(st.sampled_from(
           ["I", "we", "Porto", "Ann", "Tuesday", "run", "the", "marathon", "in", "3", "45", "Nice,", ".", "?", ";",
            "Mr", " "]), max_size=16).map(" ".join)), min_size=1, max_size=4),
       st.lists(st.text(max_size=60), max_size=3))
def test_a_sentence_kept_for_its_name_is_a_persons_and_holds_what_no_memory_does(
        lines: list[tuple[str, str]], written: list[str]) -> None:
    messages = [Message(role=role, content=text or ".", name=None if role == "assistant" else "Ann")
                for role, text in lines]
    transcript = Transcript.of(messages, datetime(2024, 5, 3, tzinfo=timezone.utc))
    for index, sentence in unheld_names(transcript, "ann", written):
        assert messages[index].role == "user" and not sentence.endswith("?")
        assert sentence.rstrip(".").lower() in messages[index].content.lower()
        assert re.search(r"\d|(?<=\s)(?!Ann\b|Tuesday\b)[A-Z][a-z]+", sentence)  # a number or a name inside it
    assert unheld_names(transcript, "ann", [m.content for m in messages]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.lists(st.sampled_from(
           ["I", "went", "start", "last", "this", "next", "Monday", "on", "Friday", "the", "3rd", "weeks", "ago",
            "in", "two", "days", "today", "tomorrow", "Christmas", "Book", ".", "?", ";", " "]),
           max_size=14).map(" ".join)),
           min_size=1, max_size=4),
       st.lists(st.text(max_size=60), max_size=3),  # years a date is read with (`reme.temporal`: 19xx and 20xx)
       st.datetimes(min_value=datetime(1901, 1, 1), max_value=datetime(2098, 12, 1), timezones=st.just(timezone.utc)))
# "today" dated first, then "on Monday" was not: the date in parentheses was read as a year named
@example(lines=[("user", "start last days today on Monday")], written=[],
         now=datetime(2000, 1, 1, tzinfo=timezone.utc))
def test_a_sentence_kept_for_its_date_is_a_persons_and_dates_what_no_memory_does(
        lines: list[tuple[str, str]], written: list[str], now: datetime) -> None:
    messages = [Message(role=role, content=text or ".", name=None if role == "assistant" else "Ann")
                for role, text in lines]
    transcript = Transcript.of(messages, now)
    kept = unheld_dates(transcript, written)
    for index, sentence in kept:
        assert messages[index].role == "user" and not sentence.endswith("?")
        assert sentence.rstrip(".").lower() in messages[index].content.lower()
        assert anchor_weekdays(anchor_times(sentence, now), now, [sentence]) != sentence  # it has a date
    # each sentence dated, as a memory would hold it: nothing left to keep
    assert unheld_dates(transcript, [anchor_weekdays(anchor_times(s, now), now, [s]) for _, s in kept] + written) == []


def test_the_next_one_of_what_the_sentence_before_says_is_kept_for_its_date() -> None:
    # fresh20 (qwen1.5b): "The next one is on the 3rd of next month." was too short to keep for its date
    line = "So I have a urine test every six months to check for protein. The next one is on the 3rd of next month."
    transcript = Transcript.of([Message(role="user", name="Narek", content=line)],
                               datetime(2026, 11, 14, tzinfo=timezone.utc))
    assert unheld_dates(transcript, ["Narek has a urine test every six months."]) == [
        (0, "The next one is on the 3rd of next month.")]
    assert unheld_dates(transcript, ["Narek's next urine test is on 3 December 2026."]) == []
    # "next month" of another day of it dates no other day
    assert unheld_dates(transcript, ["Narek sees Dr Mercier on the 18th of next month (18 December 2026)."]) == [
        (0, "The next one is on the 3rd of next month.")]


@pytest.mark.parametrize(("said", "kept"), [
    # fresh24 (qwen1.5b): "My next injection is this Sunday." was too short to keep for its date; a health word is
    # worth it, a plain one is not
    ("My next injection is this Sunday. I see Dr Salvatierra on the 25th of March.",
     [(0, "My next injection is this Sunday.")]),
    ("We went out on Sunday. I see Dr Salvatierra on the 25th of March.", []),
    # fresh25 (qwen1.5b): two words after a sentence of health in the line ("I came home on Sunday." after an admission)
    ("I was admitted to hospital with ketones in my urine. I came home on Sunday. I see Dr Salvatierra on the 25th of "
     "March.",
     [(0, "I came home on Sunday.")]),
    ("We had a lovely lunch. I came home on Sunday. I see Dr Salvatierra on the 25th of March.", []),
])
def test_a_health_word_is_enough_to_keep_a_sentence_for_its_date(said: str, kept: list[tuple[int, str]]) -> None:
    transcript = Transcript.of([Message(role="user", name="Nahuel", content=said)],
                               datetime(2026, 3, 11, tzinfo=timezone.utc))
    written = ["Nahuel sees Dr Salvatierra on the 25th of March 2026 for a pressure check.",
               "Nahuel has an adalimumab injection every other Sunday."]
    assert unheld_dates(transcript, written) == kept


@pytest.mark.parametrize(("said", "written", "kept"), [
    # fresh15 (qwen1.5b): a day of a month without its year, left out by every memory
    ("The bone scan is on the 5th of May.", ["Dorothea swims at the Rheinbad."], True),
    ("Our baby is due on the 30th of November.", ["Liis is pregnant."], True),
    ("The bone scan is on the 5th of May.", ["Dorothea's bone scan is on 5 May 2026."], False),
    ("The bone scan is on the 5th of May.", ["Dorothea's bone scan is on the 5th of May."], False),
    ("The bone scan is on 5 May 2027.", ["Dorothea swims."], False),  # a date with its year is no relative time
    # fresh20 (qwen1.5b): a memory dated "last year" did not date a month of that year
    ("Last November I was diagnosed with intracranial hypertension.", ["Dorothea was on lymecycline last year."], True),
    ("Last November I was diagnosed with intracranial hypertension.", ["Dorothea was diagnosed in November 2025."],
     False),
    # fresh22 (qwen1.5b): a memory of something else in that month did not date the day ("a wedding in Kumasi next
    # month (August 2026)" held "My next liver blood tests are on the 4th of August", stored undated)
    ("My next liver blood tests are on the 4th of August.",
     ["Fiifi is going to a wedding in August 2026.", "Fiifi has liver blood tests."], True),
    ("My next liver blood tests are on the 4th of August.", ["Fiifi's liver tests are on 4 August 2026."], False),
])
def test_a_day_of_a_month_no_memory_dates_is_kept(said: str, written: list[str], kept: bool) -> None:
    transcript = Transcript.of([Message(role="user", name="Ann", content=said)], datetime(2026, 4, 14, tzinfo=timezone.utc))
    assert unheld_dates(transcript, written) == ([(0, said)] if kept else [])


@pytest.mark.parametrize(("lines", "expected"), [
    # fresh4 (qwen1.5b): "My mother had a stroke ..." and, a line later, "Her name's Rosemary"
    ([("Ignatius", "Evening. My mother had a stroke last Wednesday."), (None, "How is she?"),
      ("Ignatius", "Stable. Her name's Rosemary, she's 78.")], [(2, "Rosemary is Ignatius's mother.")]),
    ([("Keziah", "Work update: my new manager started on Monday. Her name's Margit.")],
     [(0, "Margit is Keziah's new manager.")]),
    ([("Aisha", "I'll just tell Idris's mum. Her name's Samira, she'll understand.")], [(0, "Samira is Idris's mum.")]),
    # "her" is no brother; a relation another person said is not this speaker's
    ([("Aisha", "My brother is here. Her name's Samira.")], []),
    ([("Bo", "My sister is ill."), ("Aisha", "Oh no. Her name's Samira, right?"), ("Aisha", "Her name's Samira.")], []),
])
def test_a_name_given_in_a_sentence_after_the_relation_is_that_relation(
        lines: list[tuple[str | None, str]], expected: list[tuple[int, str]]) -> None:
    messages = [Message(role="user" if name else "assistant", name=name, content=text) for name, text in lines]
    transcript = Transcript.of(messages, datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert unheld_relations(transcript, "someone", []) == expected


async def test_who_a_person_is_to_the_speaker_is_kept_when_no_memory_says_it(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh3 (qwen1.5b): "My husband Arjun does most of the cooking", "My son Wiremu, he's seven",
    # "Valéria, my running coach": the memories named the person, never who they were
    chat = [{"role": "user", "name": "Priyanka", "content": "My husband Arjun does most of the cooking.",
             "time": "2025-02-01T18:00:00Z"},
            {"role": "user", "name": "Priyanka", "content": "My son Wiremu, he's seven, and my daughter Mere, who's "
                                                            "four. Sorry, my mum is calling."},
            {"role": "user", "name": "Priyanka", "content": "I'm here with Valéria, my running coach. Ottilie's dad "
                                                            "Lars is a paramedic."}]
    server.script(EXTRACT, memories({"content": "Priyanka's husband does most of the cooking", "sources": [0]},
                                    {"content": "Priyanka's daughter Mere is four", "sources": [1]},
                                    {"content": "Valéria is here with Priyanka", "sources": [2]}))
    result = await reme.summarize_memory(chat, user_name="priyanka")

    assert [n.content for n in result.added] == [
        "Priyanka's husband does most of the cooking", "Priyanka's daughter Mere is four",
        "Valéria is here with Priyanka",
        "Arjun is Priyanka's husband.", "Wiremu, Priyanka's son, is seven.", "Valéria is Priyanka's running coach.",
        "Lars is Ottilie's dad."]
    assert result.usage.steps == {"personal/extract": 1}  # no call of its own

    # told again: a stored memory holds each of them, so none is shown to the reconcile
    server.script(RECONCILE, {"decisions": []})
    again = await reme.summarize_memory(chat, user_name="priyanka")
    assert [r.reason for r in again.rejected if r.step == "personal/kept"] == [
        f"{n.content!r}: a stored memory holds it" for n in result.added[3:]] and again.added == []
    (shown,) = [prompt_of(r["body"]) for r in server.requests if RECONCILE in prompt_of(r["body"])]
    assert "Arjun is" not in shown.split("Candidates:")[-1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(
           ["my", "My", "our", "husband", "son", "running", "coach", "mother-in-law", "Arjun", "Ann", "Dr", "Sorry", "'s",
            "Valéria", ",", ".", "and", "who's", "he's", "seven", "12", "kg", "I", "?", "years", "old"]),
           max_size=16).map(" ".join), min_size=1, max_size=4),
       st.lists(st.text(max_size=60), max_size=3))
def test_a_relation_kept_is_one_a_person_said_and_names_the_speaker(lines: list[str], written: list[str]) -> None:
    messages = [Message(role="user", content=text or ".", name="Ann") for text in lines]
    transcript = Transcript.of(messages, datetime(2024, 5, 3, tzinfo=timezone.utc))
    for index, memory in unheld_relations(transcript, "ann", written):
        assert "Ann's " in memory and not re.search(r"\b(?:[Mm]y|our)\b", memory)
        name = memory.split(",")[0].split(" is ")[0]
        assert name in messages[index].content and name != "Ann" and name.lower() not in ("sorry", "and")
    # memories holding every line hold every relation
    assert unheld_relations(transcript, "ann", [f"{m.content} Ann" for m in messages]) == []


async def test_another_speakers_own_fact_citing_the_assistants_next_line_is_still_theirs(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh9 (qwen1.5b): "Giedrė has a collapsed lung last October ..." cited the assistant's line
    # after Radu's "I had a collapsed lung last October" (sources off by one): it stayed Giedrė's
    chat = [{"role": "user", "name": "Giedre", "content": "My friend Radu and I are kayaking for five days.",
             "time": "2026-07-06T09:00:00Z"},
            {"role": "user", "name": "Radu", "content": "I had a collapsed lung last year. The surgeon cleared me, "
                                                        "but I'm never allowed to scuba dive again."},
            {"role": "assistant", "content": "Thanks. Any allergies?"},
            {"role": "user", "name": "Giedre", "content": "Cefalexin, it gave me a rash all over."}]
    server.script(EXTRACT, memories(
        {"content": "Giedre is never allowed to scuba dive again after a collapsed lung", "sources": [2]},
        {"content": "Giedre is allergic to cefalexin, it gave her a rash all over", "sources": [2]}))
    result = await reme.summarize_memory(chat, user_name="giedre")

    added = [n.content for n in result.added]
    assert "Radu is never allowed to scuba dive again after a collapsed lung" in added
    assert "Giedre is allergic to cefalexin, it gave her a rash all over" in added
    assert not any(a.startswith("Giedre is never") for a in added)


async def test_a_relation_the_line_gives_her_is_not_the_speakers(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh10 (qwen1.5b): "Nadia's class teacher is Ms Park" for "her class teacher there is Ms Park" (Leila's)
    chat = [{"role": "user", "name": "Nadia", "content": "A lot has changed with Leila.", "time": "2026-01-19T20:00:00Z"},
            {"role": "user", "name": "Nadia", "content": "She's at Greenfield Academy now, her class teacher there "
                                                         "is Ms Park."}]
    server.script(EXTRACT, memories({"content": "Nadia's class teacher is Ms Park.", "sources": [1]},
                                    {"content": "Leila is at Greenfield Academy now.", "sources": [1]}))
    server.script(REPAIR, {"memories": [{"index": 0, "content": "Leila's class teacher is Ms Park."}]})
    result = await reme.summarize_memory(chat, user_name="nadia")

    assert sorted(n.content for n in result.added) == ["Leila is at Greenfield Academy now.",
                                                       "Leila's class teacher is Ms Park."]


@pytest.mark.parametrize(("said", "memory", "stored"), [
    # fresh10 (qwen1.5b): "Nikau's parents" (her partner's) became the speaker's own
    ("Oh, and Nikau's parents, Wiremu and Ana, are staying with us for a month.",
     "Aroha's parents, Wiremu and Ana, are staying with her for a month.",
     "Nikau's parents, Wiremu and Ana, are staying with her for a month."),
    # the speaker's own said too, or no one else's: as written
    ("My parents and Nikau's parents are staying with us.", "Aroha's parents are staying with her.",
     "Aroha's parents are staying with her."),
    ("Wiremu and Ana are staying with us for a month.", "Aroha's parents, Wiremu and Ana, are staying with her.",
     "Aroha's parents, Wiremu and Ana, are staying with her."),
    # ... and the speaker's own given to someone else (fresh10: "Leila's husband Karim" for "My husband Karim")
    ("My husband Karim is the second person to call.", "Leila's husband Karim is the second person to call.",
     "Aroha's husband Karim is the second person to call."),
    ("Leila's husband Karim is lovely, and so is my husband.", "Leila's husband Karim is lovely.",
     "Leila's husband Karim is lovely."),
])
async def test_someone_elses_relation_is_not_stored_as_the_speakers(
        reme: ReMe, server: OpenAITestServer, said: str, memory: str, stored: str) -> None:
    chat = [{"role": "user", "name": "Aroha", "content": said, "time": "2026-06-09T20:00:00Z"}]
    server.script(EXTRACT, memories({"content": memory, "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="aroha")

    assert stored in [n.content for n in result.added]


async def test_what_another_speaker_says_of_themselves_is_stored_under_their_name(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh3 (qwen1.5b): the flatmate's "I'm lactose intolerant" and "I'm a nurse" were stored as
    # the user's, citing the flatmate's lines
    chat = [{"role": "user", "name": "Leilani", "content": "My flatmate Sione and I are throwing a housewarming.",
             "time": "2025-09-22T10:00:00Z"},
            {"role": "user", "name": "Sione", "content": "Go easy on the cheese and cream, I'm lactose intolerant."},
            {"role": "user", "name": "Sione", "content": "Buffet, yes. I'm on night shifts at the hospital, I'm a nurse. "
                                                         "Leilani's doing the shopping."},
            {"role": "user", "name": "Leilani", "content": "Sione loves mango, by the way."}]
    server.script(EXTRACT, memories(
        {"content": "Leilani is lactose intolerant and does not eat cheese and cream", "sources": [1]},
        {"content": "Leilani is a nurse on night shifts at the hospital", "sources": [2]},
        {"content": "Leilani is doing the shopping", "sources": [2]},  # what Sione says of her: hers
        {"content": "Sione loves mango", "sources": [3]},  # Leilani says it of Sione
        {"content": "Leilani and Sione are throwing a housewarming", "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="leilani")

    assert [n.content for n in result.added] == [
        "Sione is lactose intolerant and does not eat cheese and cream", "Sione is a nurse on night shifts at the hospital",
        "Leilani is doing the shopping", "Sione loves mango", "Leilani and Sione are throwing a housewarming"]
    assert [(r.path, r.action) for r in result.rejected] == [("memories[0]", "defaulted"), ("memories[1]", "defaulted")]
    assert "Sione said of themselves" in result.rejected[0].reason


async def test_what_another_speaker_said_of_themselves_is_theirs_when_the_memory_cites_another_line(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh20 (qwen1.5b): the sister's injections were stored as the user's, citing his first line
    chat = [{"role": "user", "name": "Narek", "content": "I have familial Mediterranean fever, FMF. I get attacks "
                                                         "of fever and belly pain.", "time": "2025-09-22T10:00:00Z"},
            {"role": "user", "name": "Ani", "content": "And I am Ani, his big sister. Colchicine doesn't work for me, "
                                                       "so I am the one on the injections, canakinumab, every four "
                                                       "weeks."},
            {"role": "user", "name": "Narek", "content": "I take colchicine, one milligram a day."}]
    server.script(EXTRACT, memories(
        {"content": "Narek is on injections, canakinumab, every four weeks", "sources": [0]},
        {"content": "Narek takes colchicine, one milligram a day", "sources": [0]}))  # his: his own line holds it
    result = await reme.summarize_memory(chat, user_name="narek")

    added = [n.content for n in result.added]
    assert "Ani is on injections, canakinumab, every four weeks" in added
    assert "Narek takes colchicine, one milligram a day" in added


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120), st.lists(st.tuples(st.sampled_from(["Ann", "Bo", "Ann Lee"]), st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=120)),
    min_size=1, max_size=3))
def test_another_speaker_is_named_only_for_what_they_said_of_themselves(text: str,
                                                                        lines: list[tuple[str, str]]) -> None:
    cited = [Message(role="user", name=name, content=line or ".") for name, line in lines]
    found = said_by_another(text, cited, {"Ann", "Bo", "Ann Lee"})
    assert said_by_another("Ann Lee is a nurse", [Message(role="user", name="Ann Lee", content="I'm a nurse")],
                           {"Ann", "Ann Lee"}) is None
    # fresh27 (qwen1.5b): a date added in parentheses is none of the line's words
    assert said_by_another("Ann is packing double supplies for the Edinburgh half marathon on Sunday (17 May 2026).",
                           [Message(role="user", name="Bo", content="And I'm running the Edinburgh half marathon on "
                                                                    "Sunday.")], {"Ann", "Bo"}) == ("Ann", "Bo")
    # ... and "Ann's migraines" says Ann has them, as "Ann's dad" does not
    assert said_by_another("Ann's migraines are worse since the move.", [Message(
        role="user", name="Bo", content="And my migraines are worse since the move.")], {"Ann", "Bo"}) == ("Ann", "Bo")
    assert said_by_another("Ann's dad is worse since the move.", [Message(
        role="user", name="Bo", content="My dad is worse since the move.")], {"Ann", "Bo"}) is None
    # fresh28 (qwen1.5b): one memory of two sentences of the other speaker's, the first in the first person
    assert said_by_another("Ann has a bad back and cannot lift his son Barasa.", [Message(
        role="user", name="Bo", content="And I've a bad back myself, so I can't lift him. Our son Barasa does the "
                                        "lifting.")], {"Ann", "Bo"}) == ("Ann", "Bo")
    if found is not None:
        named, speaker = found
        assert named != speaker and text.strip().startswith(named) and {m.name for m in cited} == {speaker}
        assert not text.strip().startswith(speaker)


async def test_a_health_fact_a_stored_memory_holds_is_not_kept_again(reme: ReMe, server: OpenAITestServer) -> None:
    # an agent recorded "Robert is allergic to latex" with a tool; the summary of the same turns
    # would keep the line as said and ask the reconcile about it, for nothing
    await reme.add_memory("Robert is allergic to latex", user_name="robert")
    server.script(EXTRACT, memories({"content": "Robert is a high school chemistry teacher", "sources": [2]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
    result = await reme.summarize_memory(ROBERT, user_name="robert")

    assert [n.content for n in result.added] == ["Robert is a high school chemistry teacher",
                                                 "Everyone calls Robert Bobby, actually."]
    assert [(r.step, r.action) for r in result.rejected] == [("personal/kept", "defaulted"),
                                                             ("personal/said", "defaulted"),
                                                             ("personal/kept", "dropped")]
    (asked,) = [prompt_of(r["body"]) for r in server.requests if RECONCILE in prompt_of(r["body"])]
    assert "Robert is allergic to latex." not in asked
    # how many candidates there are is said (qwen1.5b went on deciding for candidates 7 to 14 of 7)
    assert "The candidates are numbered 0 to 1\n(2 in all)" in asked


async def test_a_memory_the_model_starts_with_he_or_she_is_named_as_its_line_names_it(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh11 (qwen1.5b): "He's diabetic too, gliclazide 80 with breakfast." copied from the line
    # that named him a sentence before; the repair left it so ("starts with a pronoun")
    chat = [{"role": "user", "name": "Ines", "time": "2026-03-02T09:00:00Z",
             "content": "My father-in-law Duarte moved in with us last month. He's diabetic too, gliclazide 80 "
                        "with breakfast."},
            {"role": "assistant", "content": "Noted. Anything he can't eat?"},
            {"role": "user", "name": "Ines", "content": "Not really. She's the one who cooks for him, my wife Leonor."}]
    server.script(EXTRACT, memories({"content": "Ines's father-in-law Duarte moved in last month", "sources": [0]},
                                    {"content": "He's diabetic too, gliclazide 80 with breakfast.", "sources": [0]},
                                    {"content": "She's the one who cooks for him.", "sources": [2]}))
    server.script(REPAIR, {"memories": []})
    result = await reme.summarize_memory(chat, user_name="ines")

    added = [n.content for n in result.added]
    assert "Duarte is diabetic too, gliclazide 80 with breakfast." in added and not any(
        a.startswith("He") for a in added)
    # whom "she" is, the line says only after it: left to the repair (which kept it so)
    assert "She's the one who cooks for him." in added
    assert len([r for r in server.requests if REPAIR in prompt_of(r["body"])]) == 1


@pytest.mark.parametrize(("lines", "memory", "named"), [
    # fresh14 (qwen1.5b): Sunniva's own line, in the first person, written "She ..." and kept so
    (["How has it been?", "My kidney numbers went up. My homocysteine was high too, so I take vitamin B6, 50 mg "
      "a day."], "She takes vitamin B6, 50 mg a day.", "Sunniva takes vitamin B6, 50 mg a day."),
    (["I carry an emergency card in my phone case."], "She's got an emergency card in her phone case.",
     "Sunniva's got an emergency card in her phone case."),
    (["I told Anna about the aspirin."], "She told Anna about the aspirin.", "Sunniva told Anna about the aspirin."),
    # the names and pronouns of other sentences of the line than the one copied (and the one before it)
    # do not count (fresh14: "Givosiran, Givlaari, ... at Haukeland in Bergen. For an attack it's haem
    # arginate, Normosang, ...", and "my partner Eirik knows ... when he rings ... The emergency card lives
    # in my phone case": each written "She ..." and kept so)
    (["How is it treated?", "Ribavirin, an injection every month, 2.5 mg per kilo, at the Karolinska. For a flare "
      "it's Solu-Medrol. Before I take any new medicine, someone checks the NAPOS list."],
     "She takes ribavirin, an injection every month, 2.5 mg per kilo, at the Karolinska.",
     "Sunniva takes ribavirin, an injection every month, 2.5 mg per kilo, at the Karolinska."),
    (["Yes. And my partner Eirik knows to say it first when he rings. I'm a geologist. The emergency card lives in "
      "my phone case."], "She has an emergency card in her phone case.",
     "Sunniva has an emergency card in her phone case."),
    (["My mum Rosa came to stay. The emergency card lives in my phone case."],
     "She has an emergency card in her phone case.", None),
    (["My mum came to stay. The emergency card lives in her phone case."],
     "She has an emergency card in her phone case.", None),
    # the pronoun may stand for someone the line speaks of: as it is (the repair's to mend)
    (["My mum takes aspirin every day."], "She takes aspirin every day.", None),
    (["I told Anna about the aspirin."], "She knows about the aspirin.", None),
    (["Dr Fonoti has taken over my care. She moved the furosemide down to 20 mg, because my kidneys were dry."],
     "She moved the furosemide down to 20 mg.", None),
    (["The furosemide is down to 20 mg."], "She takes furosemide, 20 mg.", None),  # no "I": whose?
    (["I take furosemide, 20 mg."], "He takes furosemide, 20 mg.", "Sunniva takes furosemide, 20 mg."),
    # a dose the model copied alone from a line answering "What's the dose?" (fresh16), of the medicine before it
    (["Since August I've been on phenelzine.", "What's the dose?", "Fifteen milligrams, three times a day. Then food."],
     "Fifteen milligrams, three times a day.", "Sunniva takes phenelzine: fifteen milligrams, three times a day."),
    (["What's the dose?", "Fifteen milligrams, three times a day."], "Fifteen milligrams, three times a day.", None),
])
def test_a_she_or_he_the_model_wrote_for_the_speaker_of_a_first_person_line_is_named(
        lines: list[str], memory: str, named: str | None) -> None:
    messages = [Message(role="assistant", content=line) if line.endswith("?") else
                Message(role="user", name="Sunniva", content=line) for line in lines]
    transcript = Transcript.of(messages, datetime(2026, 3, 1, tzinfo=timezone.utc))
    assert subject_named(memory, transcript, [len(lines) - 1]) == (named or memory)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.lists(st.sampled_from(
           ["She", "He", "She's", "He's", "my", "husband", "Kofi", "Nomvula", "is", "a", "nurse", ".", "?", ",",
            " "]), max_size=12).map(" ".join)), min_size=1, max_size=4),
       st.lists(st.integers(min_value=-1, max_value=4), max_size=2), st.sampled_from(["", " And more."]))
def test_a_he_or_she_the_model_wrote_is_named_only_by_a_line_it_cites_or_one_beside_it(
        lines: list[tuple[str, str]], sources: list[int], more: str) -> None:
    messages = [Message(role=role, content=text or ".", name=None if role == "assistant" else "Mandla")
                for role, text in lines]
    transcript = Transcript.of(messages, datetime(2025, 5, 14, tzinfo=timezone.utc))
    cited = sorted({i for i in sources if 0 <= i < len(messages)})
    near = {j for i in cited for j in (i - 1, i, i + 1) if 0 <= j < len(messages)}
    for sentence in {s.strip() + "." for m in messages for s in m.content.split(".") if s.strip()}:
        text = sentence + more
        named = subject_named(text, transcript, cited)
        if named != text:  # only the pronoun changed, for a name a line at or before one beside it says,
            # or the speaker's, for a sentence no line near says word for word
            lead = re.match(r"(?:She|He)(?:['’]s)?(.*)", text, re.S)
            assert lead and named.endswith(lead[1]) and near
            name = named[:len(named) - len(lead[1])].split("'")[0].split(" ")[0]
            assert name not in ("She", "He") and (name in "".join(m.content for m in messages[:max(near) + 1]) or (
                name == "Mandla" and not any(text.split(".")[0] + "." in messages[i].content for i in near)))


@pytest.mark.parametrize(("user", "stored", "said", "candidate", "now"), [
    # fresh14 (qwen1.5b): "... took me off the trams for good. Before each infusion I get an
    # antihistamine" ended the tram job, and the memory took the antihistamine's text: the job was
    # lost (and so was the line's news about it)
    ("Lotte", "Lotte drives trams for the GVB in Amsterdam, early shifts",
     "The company doctor took me off the trams for good. Before each infusion I get an antihistamine.",
     "Before each infusion Lotte gets an antihistamine",
     "The company doctor took Lotte off the trams for good."),
    # the answer to "Still driving the trams?" is no sentence that stands alone: the next one is taken
    ("Lotte", "Lotte is driving trams for the GVB in Amsterdam, early shifts",
     "No. My eye is better, but the company doctor took me off the trams for good. Before each infusion I get an "
     "antihistamine.", "Before each infusion Lotte gets an antihistamine",
     "Lotte's eye is better, but the company doctor took Lotte off the trams for good."),
    ("Tevita", "Tevita is driving the 18 bus for Auckland Transport",
     "The cardiologist fitted an ICD, so my bus driving days are over. I sleep better now.", "Tevita sleeps better now",
     "The cardiologist fitted an ICD, so Tevita's bus driving days are over."),
])
async def test_a_memory_a_line_ends_takes_what_the_line_says_of_it_not_a_candidate_about_something_else(
        reme: ReMe, server: OpenAITestServer, user: str, stored: str, said: str, candidate: str, now: str) -> None:
    old, result = await reconciled(reme, server, user, stored, said, candidate, None, action="ADD")

    assert (await reme.get_memory(old.memory_id)).content == now
    assert candidate in [n.content for n in result.added]
    # the line's own sentence took its place: the decision defaulted to it, or the sentence was kept as said
    assert any(r.action == "defaulted" and ("what its line says of it" in r.reason or r.step == "personal/content")
               for r in result.rejected)


@pytest.mark.parametrize(("said", "ends"), [
    # fresh14 (qwen1.5b kept the old doses beside the new): a dose said again, not "up to" it
    ("The doses went up in steps. Bisoprolol is 5 mg, and the ramipril is the same.", {"bisop"}),
    ("It's the 49/51 of the bisoprolol now.", {"bisop"}),
    ("Bisoprolol is still 1.25 mg.", set()),  # the same dose
    ("Ramipril is 5 mg.", set()),  # another medicine's
    ("I've been on bisoprolol for 3 weeks, and my dose is 1.25 mg.", set()),  # not a dose
    ("My wife's dose is 5 mg.", set()),  # only "dose" shared
])
def test_a_dose_said_again_ends_another_of_the_same_medicine(said: str, ends: set[str]) -> None:
    assert ending(said, "Wei takes bisoprolol, 1.25 mg every morning", "Wei") == ends


@pytest.mark.parametrize(("stored", "said", "candidate", "now"), [
    ("Wei takes bisoprolol, 1.25 mg every morning.", "The doses went up in steps. Bisoprolol is 5 mg now.",
     "Wei's doses went up in steps", "Wei takes bisoprolol, 5 mg every morning."),
    ("Wei takes givosiran, an injection every month, 2.5 mg per kilo, at the Karolinska.",
     "My kidney numbers rose, so the givosiran is 1.25 mg per kilo now.", "Wei's kidney numbers rose",
     "Wei takes givosiran, an injection every month, 1.25 mg per kilo, at the Karolinska."),
    ("Wei takes bisoprolol, 5 mg every morning.", "Bisoprolol is 5 mg, same as before.", "Wei's bisoprolol is the same",
     "Wei takes bisoprolol, 5 mg every morning."),
])
async def test_a_dose_said_again_changes_the_stored_one_in_place(
        reme: ReMe, server: OpenAITestServer, stored: str, said: str, candidate: str, now: str) -> None:
    old, result = await reconciled(reme, server, "Wei", stored, said, candidate, None, action="ADD")

    assert (await reme.get_memory(old.memory_id)).content == now
    assert candidate in [n.content for n in result.added]


@pytest.mark.parametrize(("stored", "said", "kept"), [
    # fresh14 (qwen1.5b wrote nothing of these lines; the names they hold were in stored memories, so the
    # sentences kept as said were dropped: the new job and the dog that died were lost). Of a line the
    # model wrote a memory of, a sentence whose names a memory holds is not kept (`test_a_line_that_ends_or_...`)
    ("Tevita works for Auckland Transport", "Auckland Transport have found me a job in the depot, doing the rosters.",
     "Auckland Transport have found Tevita a job in the depot, doing the rosters."),
    ("Tevita's dogs are Biscuit and Tango", "We lost Biscuit in April, so it's just Tango now.",
     "Tevita lost Biscuit in April 2026, so it's just Tango now."),
])
async def test_a_sentence_kept_for_its_names_is_kept_when_it_says_more_than_the_memory_holding_them(
        reme: ReMe, server: OpenAITestServer, stored: str, said: str, kept: str) -> None:
    await reme.add_memory(stored, user_name="tevita")
    server.script(EXTRACT, memories())
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
    result = await reme.summarize_memory([{"role": "user", "name": "Tevita", "content": said,
                                           "time": "2026-06-01T10:00:00Z"}], user_name="tevita")

    assert kept in [n.content for n in result.added]
    # told again: the memory holds every word of it now
    again = await reme.summarize_memory([{"role": "user", "name": "Tevita", "content": said,
                                          "time": "2026-06-01T10:00:00Z"}], user_name="tevita")
    assert again.added == [] and again.updated == []


@pytest.mark.parametrize(("said", "stored", "ends"), [
    # fresh16 (qwen1.5b kept "Dawit smokes about twenty a day" beside "Dawit quit smoking"): a word's
    # forms with and without its "e" ("smokes", "smoking", "smoked") are one word to the checks
    ("I quit smoking! Five weeks today, with patches.", "Dawit smokes about twenty a day.", {"smok"}),
    ("I stopped driving after the seizure.", "Dawit drives to work.", {"driv"}),
    ("I quit the choir.", "Dawit smokes about twenty a day.", set()),
])
def test_a_word_said_in_another_form_is_the_same_word_to_what_ends(said: str, stored: str, ends: set[str]) -> None:
    assert ending(said, stored, "Dawit", own=True) == ends


@pytest.mark.parametrize(("said", "ends"), [
    # fresh16 (qwen1.5b kept both doses): a dose said in words is the number it says
    ("So the clozapine is two hundred and fifty milligrams now.", {"cloza"}),
    ("The clozapine is three hundred milligrams, same as ever.", set()),
    # a value and the one before it, "from ... to ..."
    ("My clozapine went from 300 to 250 mg.", {"cloza"}),
    ("My clozapine went from 250 to 300 mg.", set()),
])
def test_a_value_in_words_or_from_one_to_another_ends_the_old(said: str, ends: set[str]) -> None:
    assert ending(said, "Dawit takes clozapine, three hundred milligrams at night.", "Dawit", own=True) == ends


@pytest.mark.parametrize(("said", "ends"), [
    ("And the blood tests went from every week to every two weeks this month.", {"blood", "test"}),
    ("The blood tests went from every month to every week.", set()),  # not the memory's
])
def test_how_often_from_one_to_another_ends_the_old(said: str, ends: set[str]) -> None:
    assert ending(said, "A blood test every week, for the white cells, the neutrophils.", "Dawit", own=True) == ends


@pytest.mark.parametrize(("text", "digits"), [
    ("two hundred and fifty milligrams now", "250 milligrams now"),
    ("a hundred and twenty-five micrograms", "125 micrograms"),
    ("about twenty a day", "about 20 a day"),
    ("Fifteen milligrams, three times a day", "15 milligrams, 3 times a day"),
    ("fifteen hundred", "1500"),
    ("one thing at a time, a day", "one thing at a time, a day"),  # "one", "a" alone stay words
    ("five six seven", "five six seven"),  # no number
    ("hundred", "hundred"),
])
def test_numbers_said_in_words_read_as_digits(text: str, digits: str) -> None:
    assert with_digits(text) == digits


@pytest.mark.parametrize("word", [
    # fresh16 (qwen1.5b): medicines no check knew, so no line of them was kept as said
    "phenelzine", "clozapine", "haloperidol", "cetirizine", "hydroxyurea", "quetiapine", "carbamazepine",
    "venlafaxine", "levodopa", "donepezil", "methotrexate", "tamsulosin", "clopidogrel", "gabapentin",
    "hydroxychloroquine", "sumatriptan", "azathioprine", "oxycodone", "lidocaine", "solifenacin",
])
def test_medicines_by_the_stems_of_their_international_names(word: str) -> None:
    assert medicine_word(word)


def test_no_word_of_everyday_conversation_ends_as_a_medicine_does() -> None:
    """The stems are checked against the 7,700 words of LoCoMo's conversations, which name no medicine."""
    found: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, str):
            found.update(w.lower() for w in re.findall(r"[A-Za-z][a-z'-]+", x))
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(json.loads(shared_data("locomo/locomo10_dev.json").read_text()))
    assert len(found) > 5000
    assert sorted(w for w in found if medicine_word(w)) == []


@pytest.mark.parametrize(("said", "ends"), [
    # fresh16 (qwen1.5b): "The senna and docusate are gone" ended "If Dawit hasn't gone for three days, ...,
    # it's the emergency room" through the word "gone": the words that say something ended are not what ended
    ("Better. The senna and docusate are gone; now it's PEG, one sachet every morning.", set()),
    ("The pharmacy is gone, it closed in May.", {"pharm"}),
])
def test_the_words_saying_that_something_ended_are_not_what_ended(said: str, ends: set[str]) -> None:
    stored = "If Dawit hasn't gone for three days, or his belly is swollen, it's the emergency room, not the pharmacy."
    assert ending(said, stored, "Dawit") == ends


def test_an_update_about_something_else_keeps_what_to_do_in_an_emergency() -> None:
    # fresh16 (qwen1.5b): "If Dawit hasn't gone for three days, ..., it's the emergency room" was UPDATEd to "The
    # senna and docusate are gone; now it's PEG": a merged text about something else drops no emergency plan
    stored = "If Dawit hasn't gone for three days, or his belly is swollen, it's the emergency room, not the pharmacy."
    merged = "The senna and docusate are gone; now Dawit takes PEG, one sachet every morning."
    assert health_left_behind(stored, merged, merged) == ([], [stored])
    assert health_left_behind(stored, stored + " " + merged, merged) == ([], [])
    # fresh19 (qwen1.5b): whom to call first, replaced by a new job
    contact, job = "Njeri is Baraka's first contact, always.", "Baraka is a transport planner in the office."
    assert health_left_behind(contact, job, job) == ([], [contact])
    assert health_left_behind(contact, "Njeri is still Baraka's first contact.", job) == ([], [])


async def test_an_update_by_a_candidate_about_something_else_keeps_an_emergency_contact(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh19 (qwen1.5b): "Emergency contact is Goran's brother Zvonko." was UPDATEd to "Not one since, not even at
    # Goran's cousin's stag." (a cigarette): "emergency" is no health word, and leading the sentence it read as a name
    stored = "Emergency contact is Goran's brother Zvonko."
    said = "Also I finally quit smoking, in March. Not one since, not even at my cousin's stag."
    candidate = "Not one since, not even at Goran's cousin's stag."
    old, result = await reconciled(reme, server, "Goran", stored, said, candidate, candidate)

    assert (await reme.get_memory(old.memory_id)).content == stored
    assert result.updated == [] and [n.content for n in result.added] == [candidate]
    assert any(r.path == "decisions[0]" and r.action == "defaulted" and "would drop" in r.reason for r in result.rejected)


@pytest.mark.parametrize("said", ["Also I finally quit smoking, in March.", "I actually stopped the naproxen."])
def test_an_adverb_a_line_and_a_memory_share_ends_nothing(said: str) -> None:
    # fresh19: "I finally quit smoking" ended the "finally" of "... in December they finally put a name on it:
    # ankylosing spondylitis", and the diagnosis was cut from the memory
    stored = ("Long story short, Goran's back's been banjaxed for years and in December they finally actually put a "
              "name on it: ankylosing spondylitis, HLA-B27 positive.")
    assert ending(said, stored, "Goran") == set()


async def test_the_reconcile_reply_may_name_only_the_candidates_and_memories_shown(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh16/fresh17 (qwen1.5b): the reconcile went on deciding for candidates 8 to 14 of 8 until its
    # budget ran out; the schema sent holds a grammar-constrained reply to the candidates, ids and count there are
    await reme.add_memory("Dawit takes clozapine, 300 mg at night", user_name="dawit")
    server.script(EXTRACT, memories({"content": "Dawit takes clozapine, 250 mg at night"}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0,
                                        "text": "Dawit takes clozapine, 250 mg at night"},
                                       {"candidate": 7, "action": "ADD", "id": None}))  # not held to the schema
    result = await reme.summarize_memory([{"role": "user", "name": "Dawit", "content": "My clozapine is 250 mg now."}],
                                         user_name="dawit")

    (sent,) = [r for r in server.chat_requests if RECONCILE in json.dumps(r["messages"])]
    schema = sent["response_format"]["json_schema"]["schema"]
    item = schema["$defs"]["Decision"]["properties"]
    assert item["candidate"]["enum"] == [0] and item["id"]["anyOf"][0]["enum"] == [0]
    assert schema["properties"]["decisions"]["maxItems"] == 2
    assert [n.content for n in result.updated] == ["Dawit takes clozapine, 250 mg at night"] and result.added == []
    assert any("names candidate 7" in r.reason for r in result.rejected)


@pytest.mark.parametrize(("lines", "written", "kept"), [
    # fresh17 (qwen1.5b): whom to call first, said without "emergency", was in no memory
    (["My wife, Vaiola. She's a nurse, so she didn't panic.", "She's my first call for anything."],
     ["Vaiola is Sefo's wife"], [(1, "She's my first call for anything.")]),
    (["First call is my husband, Tinashe, then Tatenda."], ["Tinashe is Chipo's husband"],
     [(0, "First call is my husband, Tinashe, then Tatenda.")]),
    (["First call is my husband, Tinashe, then Tatenda."], ["Chipo's first call is Tinashe, then Tatenda"], []),
    (["My first job was at a bakery."], [], []),  # no call
])
def test_whom_to_call_first_is_a_safety_fact(lines: list[str], written: list[str], kept: list[tuple[int, str]]) -> None:
    transcript = Transcript.of([Message(role="user", name="Sefo", content=line) for line in lines],
                               datetime(2026, 4, 20, tzinfo=timezone.utc))
    assert unheld_health(transcript, written) == kept


AZATHIOPRINE = "With the azathioprine I need a blood count every three months, and I must never take allopurinol."


@pytest.mark.parametrize(("written", "kept"), [
    # fresh22 (qwen1.5b): each health word was in some memory (another speaker's allopurinol among them), none
    # held the blood count with the azathioprine or the rule
    (["Fiifi takes azathioprine, 100 mg", "Fiifi's blood pressure is fine", "Kwesi is on allopurinol"], True),
    (["Fiifi needs a blood count every three months with the azathioprine",
      "Fiifi must never take allopurinol"], False),  # one memory for each clause holds it
    ([AZATHIOPRINE.replace("I need", "Fiifi needs").replace("I must", "Fiifi must")], False),
    # fresh23 (qwen1.5b): a memory naming the medicine does not hold a clause that says "never" of it
    (["Fiifi needs a blood count every three months with the azathioprine", "Fiifi is on allopurinol"], True),
    (["Fiifi needs a blood count every three months with the azathioprine", "Fiifi must never have allopurinol"],
     False),
])
def test_a_health_sentence_is_held_clause_by_clause_by_one_memory_each(written: list[str], kept: bool) -> None:
    transcript = Transcript.of([Message(role="user", name="Fiifi", content=AZATHIOPRINE)],
                               datetime(2026, 7, 21, tzinfo=timezone.utc))
    assert unheld_health(transcript, written) == ([(0, AZATHIOPRINE)] if kept else [])


def test_a_unit_in_words_ties_no_changed_value_to_another_medicines_dose() -> None:
    # the unit shared alone ("milligrams") made "down to three times a day" prednisone's dose
    stored = "Wei takes pyridostigmine, 60 milligrams four times a day, and prednisone, 20 milligrams every morning"
    assert revalued(stored, "Pyridostigmine is down to three times a day, same 60 milligrams.") is None


SEFO = ["Migalastat, one capsule every other day, and gabapentin for the pain attacks.",
        "I coach the under-twelves at touch rugby on Thursday nights. I just hardly sweat, that's the Fabry too, so I "
        "overheat quick: I stay in the shade with a big water bottle, and no saunas, ever."]
SEFO_HELD = ["Sefo takes migalastat, one capsule every other day, and gabapentin for the pain attacks",
             "Sefo coaches touch rugby on Thursday nights"]


@pytest.mark.parametrize(("lines", "written", "kept"), [
    # fresh17 (qwen1.5b kept the rugby and nothing of how Sefo stays safe in the heat: no health word says it)
    (SEFO, SEFO_HELD,
     [(1, "I just hardly sweat, that's the Fabry too, so I overheat quick: I stay in the shade with a big water "
          "bottle, and no saunas, ever.")]),
    # held: nothing kept
    (SEFO, SEFO_HELD + [
            "Sefo hardly sweats because of Fabry, so he overheats quickly; he stays in the shade with a water "
            "bottle and never goes in a sauna"], []),
    # the memory kept its point (the medicine), not its reason: no second memory of the line
    (["The sickness has finally stopped, so I've come off the ondansetron."], ["Sefo has come off the ondansetron"],
     []),
    # no one speaks of health: the model's choice stands
    (["I coach the under-twelves at touch rugby on Thursday nights.", "We train in the park behind the school."],
     ["Sefo coaches touch rugby on Thursday nights"], []),
    # its medicine is in a memory of another line: not its point kept
    (["The sickness has finally stopped, so I've come off the ondansetron.", "Ondansetron, I'm off it now."],
     ["Sefo has come off the ondansetron"],
     [(0, "The sickness has finally stopped, so I've come off the ondansetron.")]),
    # fewer than five words, a request, a question
    (["I take gabapentin for pain.", "Shade, water.", "Remember that the bathroom door stays unlocked.",
      "Should I avoid saunas with the Fabry?"], ["Sefo takes gabapentin"], []),
])
def test_what_a_person_said_of_their_health_that_no_memory_holds_is_kept(
        lines: list[str], written: list[str], kept: list[tuple[int, str]]) -> None:
    transcript = Transcript.of([Message(role="user", name="Sefo", content=line) for line in lines],
                               datetime(2026, 4, 21, tzinfo=timezone.utc))
    assert unheld_content(transcript, set(range(len(lines))), "Sefo", written,
                          [([len(lines) - 1], text) for text in written]) == kept
    assert unheld_content(transcript, set(), "Sefo", written) == []  # a line the extraction was not shown


def test_another_speakers_sentence_is_kept_only_when_it_says_who() -> None:
    # fresh18 (qwen1.5b): the father's "Two carriers, one unlucky girl." was kept as said, read as Dalit's
    lines = [("Dalit", "I have Gaucher disease, type one, and I take eliglustat."),
             ("Avraham", "I'm a carrier, like her mother, that's how she got it. Two carriers, one unlucky girl.")]
    transcript = Transcript.of([Message(role="user", name=name, content=line) for name, line in lines],
                               datetime(2026, 4, 21, tzinfo=timezone.utc))
    assert unheld_content(transcript, {0, 1}, "Dalit", ["Dalit has Gaucher disease, type one, and takes eliglustat"]) \
        == [(1, "I'm a carrier, like her mother, that's how she got it.")]


async def test_a_health_conversation_loses_no_sentence_the_model_left_out(
        reme: ReMe, server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Anjali", "content": "I've had epilepsy since I was twelve, I take brivaracetam.",
             "time": "2026-10-05T09:00:00Z"},
            {"role": "assistant", "content": "Thanks. Anything you do to stay safe day to day?"},
            {"role": "user", "name": "Anjali", "content": "What I do stick to: showers only, never a bath, and the "
             "bathroom door stays unlocked. It helps a lot, honestly."}]
    # (the memory holds the age said in words: a number no memory holds would keep line 0 as said too)
    server.script(EXTRACT, memories({"content": "Anjali has had epilepsy since twelve and takes brivaracetam",
                                     "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="Anjali")

    assert [n.content for n in result.added] == [
        "Anjali has had epilepsy since twelve and takes brivaracetam",
        "What Anjali does stick to: showers only, never a bath, and the bathroom door stays unlocked."]
    assert result.added[1].metadata["source_turns"] == [2]
    # "It helps a lot, honestly" says nothing besides filler ("honestly" is one): not kept, and no repair call
    assert result.usage.calls == 1 and len(server.chat_requests) == 1


def test_thank_god_names_no_one_between_a_she_and_whom_she_is() -> None:
    # fresh17 (qwen1.5b): "She's my first call for anything." was kept as said, "She" unnamed: "thank God" named God
    line = ("My wife, Vaiola. She's a nurse, so she didn't panic, thank God. She's my first call for anything. After "
            "her it's my brother Iosefa, he lives two streets away.")
    transcript = Transcript.of([Message(role="assistant", content="Who was with you?"),
                                Message(role="user", name="Sefo", content=line)],
                               datetime(2026, 4, 21, tzinfo=timezone.utc))
    assert named_subject(transcript, 1, "She's my first call for anything.") == "Vaiola is my first call for anything."
    assert "God" not in transcript.names


async def test_a_rule_kept_as_said_with_no_health_word_is_not_taken_as_held(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh17 (qwen1.5b): "My iron was on the floor ..., so I eat fish and eggs now, still no meat" was kept as said
    # for its rule ("no meat"), then dropped as held by a stored memory: it had no health word, so nothing to hold
    first = [{"role": "user", "name": "Zeynep", "content": "I've been vegan for six years, so no animal anything.",
              "time": "2026-01-10T09:00:00Z"}]
    server.script(EXTRACT, memories({"content": "Zeynep has been vegan for six years"}))
    await reme.summarize_memory(first, user_name="Zeynep")
    later = [{"role": "user", "name": "Zeynep", "content": "My iron was on the floor and the doctor begged, so I eat "
              "fish and eggs now, still no meat.", "time": "2026-05-10T09:00:00Z"}]
    server.script(EXTRACT, {"memories": []})
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
    result = await reme.summarize_memory(later, user_name="Zeynep")

    assert not any("a stored memory holds it" in r.reason for r in result.rejected)
    assert any("eats fish and eggs now, still no meat" in n.content for n in result.added + result.updated)


async def test_a_line_ending_what_a_condition_does_keeps_the_condition(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh18 (qwen1.5b): "I gave up guiding, my legs can't do the passes any more" ended the memory of the
    # diagnosis (its legs), which took the job's text: CIDP was in no memory after it
    stored = ("Wayra has CIDP, chronic inflammatory demyelinating polyneuropathy, which causes her legs to go weak "
              "and feet to be numb")
    said = "I gave up guiding, my legs can't do the passes any more."
    candidate = "Wayra gave up guiding, her legs can't do the passes any more"
    old, result = await reconciled(reme, server, "Wayra", stored, said, candidate, None, action="ADD")

    assert (await reme.get_memory(old.memory_id)).content == stored
    assert candidate in [n.content for n in result.added]
    assert any("names a condition the line does not (cidp, polyneuropathy)" in r.reason for r in result.rejected)


async def test_a_condition_another_memory_names_does_not_keep_an_ended_medicine(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh24 (qwen1.5b): "Laleh is taking mesalazine and budesonide MMX for her ulcerative colitis" stayed after both
    # ended, for its condition, which "Laleh has ulcerative colitis ..." held too
    await reme.add_memory("Laleh has ulcerative colitis, diagnosed after a colonoscopy", user_name="laleh")
    stored = "Laleh is taking mesalazine for her ulcerative colitis"
    said = "My gastroenterologist stopped the mesalazine and switched me to ustekinumab."
    candidate = "Laleh's gastroenterologist stopped the mesalazine and switched her to ustekinumab"
    old, result = await reconciled(reme, server, "Laleh", stored, said, candidate, None, action="ADD")

    assert (await reme.get_memory(old.memory_id)).content == candidate
    assert not any("names a condition the line does not" in r.reason for r in result.rejected)
    assert any("colitis" in n.content for n in await reme.list_memory(user_name="laleh"))


@pytest.mark.parametrize(("text", "named"), [
    ("Wayra has CIDP, chronic inflammatory demyelinating polyneuropathy", {"cidp", "polyneuropathy"}),
    ("Aoibheann has alpha-1 antitrypsin deficiency and emphysema", set()),
    ("Zeynep has Behçet's disease and uveitis", {"disease", "uveitis"}),
    ("Sefo works at the GP surgery, with an MRI on Friday", set()),
    # a condition by its ending, whatever it is (not a procedure, nor a word that only ends so)
    ("Mirza has gastroparesis and fibromyalgia, after a cholecystectomy", {"gastroparesis", "fibromyalgia"}),
    ("Dapo's empathy and nostalgia", set()),
    # fresh25: "since the diagnosis" kept an ended job ("drives trams") as if it named a condition
    ("Benedetta drives trams for the city, since the diagnosis they watch Benedetta closely", set()),
    ("A poor prognosis, Dapo's doctors said, after two diagnoses", set()),
])
def test_conditions_named(text: str, named: set[str]) -> None:
    assert conditions_named(text) == {_stem(w) for w in named}


async def test_a_memory_that_copies_a_lines_time_stamp_is_not_stored(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh19 (qwen1.5b): "Sanele is a 2026-01-20 19:52 electrician." (the stamp the lines are shown with)
    server.script(EXTRACT, memories({"content": "Sanele is a 2024-05-03 10:00 electrician.", "sources": [0]},
                                    {"content": "Sanele has familial hypercholesterolaemia, on a statin.",
                                     "sources": [0]}))
    result = await reme.summarize_memory([{"role": "user", "name": "Sanele", "time": "2024-05-03T10:00:00Z",
                                           "content": "I have familial hypercholesterolaemia, on a statin. "
                                                      "I'm an electrician, I've got enough wires in my life."}],
                                         user_name="sanele")

    # the line, kept as said in a talk of health ("hypercholesterolaemia" is a condition by its ending)
    assert [n.content for n in result.added] == [
        "Sanele has familial hypercholesterolaemia, on a statin.",
        "Sanele is an electrician, Sanele has got enough wires in Sanele's life."]
    assert any(r.action == "dropped" and "time stamp" in r.reason for r in result.rejected)


@pytest.mark.parametrize(("memory", "stored"), [
    ("Ibuprofen and paracetamol are fine for Mirza.", False),  # fresh19 (qwen1.5b): the opposite of a safety fact
    ("Carbamazepine is also fine for Mirza.", False),  # "too" after a sentence that said so: not said of it
    ("Paracetamol is fine for Mirza.", True),
    ("Mirza must not take ibuprofen, it is not fine with desmopressin.", True),
])
async def test_a_medicine_is_fine_only_where_a_sentence_naming_it_says_so(
        reme: ReMe, server: OpenAITestServer, memory: str, stored: bool) -> None:
    line = ("Ibuprofen and that whole family, they make the desmopressin hang on to even more water. Paracetamol is "
            "fine, but not with wine. Carbamazepine too, which hopefully I'll never need.")
    server.script(EXTRACT, memories({"content": memory, "sources": [0]}))
    result = await reme.summarize_memory([{"role": "user", "name": "Mirza", "content": line}], user_name="mirza")

    assert (memory in [n.content for n in result.added]) == stored
    assert any("fine to take" in r.reason for r in result.rejected) != stored


async def test_what_a_medicine_is_for_said_of_no_one_is_not_stored_and_the_dose_is_kept(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh19 (qwen1.5b): "Carbimazole is used to treat Graves' disease by blocking the production of thyroid
    # hormones" (a textbook's, of no one) held carbimazole, and the doses Jovana said were not kept
    line = ("I've got Graves' disease, diagnosed in March last year. Carbimazole 20mg every morning, and propranolol "
            "40mg three times a day for the shakes and the racing heart.")
    server.script(EXTRACT, memories(
        {"content": "Carbimazole is used to treat Graves' disease by blocking the production of thyroid hormones.",
         "sources": [0]},
        {"content": "Propranolol is used to treat the racing heart and shaking of Graves' disease.", "sources": [0]},
        {"content": "Jovana has got Graves' disease, diagnosed in March last year.", "sources": [0]}))
    result = await reme.summarize_memory([{"role": "user", "name": "Jovana", "content": line,
                                           "time": "2026-09-15T17:10:00Z"}], user_name="jovana")

    assert [n.content for n in result.added] == [
        "Jovana has got Graves' disease, diagnosed in March last year (March 2025).",
        "Carbimazole 20mg every morning, and propranolol 40mg three times a day for the shakes and the racing heart."]
    assert sum("of no one" in r.reason for r in result.rejected) == 2


@pytest.mark.parametrize(("written", "kept"), [
    # fresh19 (qwen1.5b): the names were held by memories of who they are, and whom to call first was lost
    (["Mari's wife is Josephine, she's Jo.", "Big Tom is Mari's best friend since high school, a paramedic."], True),
    (["Jo is Mari's first call, then Big Tom.", "Mari's wife is Josephine, she's Jo."], False),
    (["Jo is Mari's emergency contact.", "Big Tom is Mari's best friend."], True),  # and then Big Tom?
])
def test_whom_to_call_first_is_kept_unless_a_memory_of_calling_names_them(written: list[str], kept: bool) -> None:
    line = "My wife is Josephine, she's Jo. I have moyamoya. Jo knows the drill, she's my first call, then Big Tom."
    transcript = Transcript.of([Message(role="user", name="Mari", content=line)],
                               datetime(2026, 3, 2, tzinfo=timezone.utc))
    assert ((0, "Jo knows the drill, she's my first call, then Big Tom.") in unheld_health(transcript, written)) \
        == kept


@pytest.mark.parametrize(("line", "unsafe"), [
    ("I can take paracetamol, just not ibuprofen.", None),  # "can take" says it is fine
    ("Paracetamol's OK for me.", None),
    ("I can't take paracetamol, it makes me sick.", "paracetamol"),
    ("Paracetamol is not fine, the liver.", "paracetamol"),
])
def test_a_line_says_a_medicine_is_fine_in_its_own_words(line: str, unsafe: str | None) -> None:
    assert fine_though_unsaid("Paracetamol is fine for Mirza.", [line]) == unsafe


def test_feeling_fine_says_nothing_of_a_medicine() -> None:
    # fresh20 (qwen1.5b): both memories of the colchicine dose were dropped as saying it was fine to take
    line = "Colchicine, one milligram a day, half in the morning and half at night. Every day for life, even when I feel fine."
    memory = "Colchicine, one milligram a day. Every day for life, even when Narek feels fine."
    assert fine_though_unsaid(memory, [line]) is None
    assert fine_though_unsaid("Colchicine is fine for Narek.", [line]) == "colchicine"


def unshared_vectors(texts: list[str]) -> list[list[float]]:
    """Vectors that put a first contact 0.55 from a new job, and a home in Paris 0.62 from one in Berlin."""
    def one(text: str) -> list[float]:
        if "contact" in text:
            return [1.0, 0.0, 0.0, 0.0]
        if "planner" in text:
            return [0.55, 0.835, 0.0, 0.0]
        if "Paris" in text:
            return [0.0, 0.0, 1.0, 0.0]
        if "Berlin" in text:
            return [0.0, 0.0, 0.62, 0.785]
        return [0.0, 0.0, 0.0, 1.0]
    return [one(t) for t in texts]


@pytest.mark.parametrize(("stored", "said", "candidate", "kept"), [
    # fresh19 (qwen1.5b): "Njeri is Baraka's first contact, always." UPDATEd to Baraka's new job (0.55: one name)
    ("Njeri is Baraka's first contact, always.", "I am a transport planner in the office now.",
     "Baraka is a transport planner in the office", True),
    # no word shared, and near enough in meaning: the update stands
    ("Baraka's home is in Paris", "We're in Berlin now.", "Baraka's flat is in Berlin now", False),
])
async def test_an_update_sharing_no_word_with_its_memory_must_be_near_in_meaning(
        make_reme: Callable[..., ReMe], server: OpenAITestServer, stored: str, said: str, candidate: str,
        kept: bool) -> None:
    async with served_vectors(make_reme, server, unshared_vectors) as reme:
        old = await reme.add_memory(stored, user_name="baraka")
        server.script(EXTRACT, memories({"content": candidate, "sources": [0]}))
        server.script(RECONCILE, decisions({"candidate": 0, "action": "UPDATE", "id": 0, "text": candidate}))
        result = await reme.summarize_memory([{"role": "user", "name": "Baraka", "content": said}],
                                             user_name="baraka")
        now = await reme.get_memory(old.memory_id)

    assert now.content == (stored if kept else candidate)
    assert [n.content for n in result.added] == ([candidate] if kept else [])


@pytest.mark.parametrize(("said", "stored", "ends"), [
    # fresh24 (qwen1.5b): "Dr Pritchard stopped it" (the pirfenidone) ended "Dr Pritchard ... says the trials
    # showed it doesn't help": the doctor who stopped something is not what was stopped
    ("So in April Dr Pritchard stopped it and switched me to nintedanib.",
     "Dr Pritchard, Gwilym's chest consultant, says the trials showed N-acetylcysteine doesn't help IPF.", set()),
    ("In April Dr Pritchard stopped the pirfenidone.", "Gwilym takes pirfenidone, 801 mg three times a day.",
     {"pirfe"}),
    # ... and what was stopped after the doctor's name is: "I stopped seeing Dr Pritchard"
    ("I stopped seeing Dr Pritchard.", "Gwilym's chest consultant is Dr Pritchard.", {"pritc"}),
])
def test_the_doctor_who_stopped_something_is_not_what_ended(said: str, stored: str, ends: set[str]) -> None:
    assert ending(said, stored, "Gwilym") == ends


@pytest.mark.parametrize(("before", "sentence", "named"), [
    # fresh24 (qwen1.5b): "It gives me diarrhoea" after a switch to nintedanib was stored of the pirfenidone
    ("The pirfenidone gave me a bad sunburn rash, so in April Dr Pritchard stopped it and switched me to "
     "nintedanib, 150 milligrams twice a day. ", "It gives me diarrhoea sometimes.",
     "The nintedanib gives me diarrhoea sometimes."),
    # two medicines before it, no switch: which one "it" is is not known
    ("Metformin and sitagliptin, twice a day. ", "It makes me queasy.", "It makes me queasy."),
    ("Prednisolone, 20 mg every morning. ", "It comes down by 5 mg every four weeks.",
     "Prednisolone comes down by 5 mg every four weeks."),
])
def test_it_after_a_switch_is_the_medicine_switched_to(before: str, sentence: str, named: str) -> None:
    assert named_thing(before, sentence) == named


@pytest.mark.parametrize(("question", "asks"), [
    ("Is Kian still your first contact?", True),  # fresh24: the answer "Dariush is first now" was lost
    ("Who is your next of kin?", True),
    ("Who is his first contact?", False),
    ("How was your first call with the new boss?", False),
])
def test_a_question_of_the_first_contact_asks_whom_to_call(question: str, asks: bool) -> None:
    assert asks_whom_to_call(question) is asks


def test_a_new_first_contact_asked_of_is_kept() -> None:
    transcript = Transcript.of([Message(role="assistant", content="Is Kian still your first contact?"),
                                Message(role="user", name="Laleh",
                                        content="Dariush is first now, he's right there. Kian second.")], T0)
    written = ["Laleh's emergency contacts: Laleh's brother Kian, first.", "Laleh's boyfriend is Dariush."]
    assert unheld_answers(transcript, "Laleh", written) == [
        (1, "Laleh's emergency contacts: Dariush is first now, he's right there. Kian second.")]
    assert unheld_answers(transcript, "Laleh", [*written, "Laleh's emergency contacts: Dariush first, Kian second."]) \
        == []


def test_things_to_avoid_named_before_why_are_kept() -> None:
    # fresh24 (qwen1.5b): "Grapefruit and grapefruit juice, and St John's wort, they change the level in Bohdana's
    # blood." was stored without a word saying they are to be avoided
    transcript = Transcript.of([Message(role="assistant", content="Is there anything you need to avoid with imatinib?"),
                                Message(role="user", name="Bohdana", content="Grapefruit and grapefruit juice, and St "
                                        "John's wort, they change the level in my blood. I check every new medicine.")],
                               T0)
    written = ["Grapefruit and grapefruit juice, and St John's wort, they change the level in Bohdana's blood."]
    assert unheld_avoided(transcript, "Bohdana", written) == [
        (1, "Bohdana must avoid: Grapefruit and grapefruit juice, and St John's wort, they change the level in my "
            "blood.")]
    assert unheld_avoided(transcript, "Bohdana", ["Bohdana must avoid grapefruit and St John's wort."]) == []


def test_a_memory_of_who_is_in_the_conversation_is_not_a_memory() -> None:
    # fresh24 (qwen1.5b), of a friend only named as an emergency contact
    lines = [Message(role="user", name="Laleh", content="My brother Kian, first. Then my friend Shirin.")]
    assert not_a_memory("Laleh's friend Shirin is also in the conversation.", lines, [0], "Laleh")
    assert not_a_memory("Laleh's friend Shirin is her second emergency contact.", lines, [0], "Laleh") is None


@pytest.mark.parametrize(("said", "kept"), [
    # fresh24 (qwen1.5b): the name the speaker asked to be called was in no memory (a request is not read)
    ("First thing: please call me Dana. Only my passport and my doctors call me Bohdana.",
     [(0, "Bohdana goes by Dana")]),
    ("I go by Sol at work.", [(0, "Bohdana goes by Sol")]),
    ("Call me on Monday. Please call me back tomorrow.", []),
])
def test_the_name_a_speaker_asks_to_be_called_is_kept(said: str, kept: list[tuple[int, str]]) -> None:
    transcript = Transcript.of([Message(role="user", name="Bohdana", content=said)], T0)
    assert unheld_names(transcript, "Bohdana", []) == kept
    assert unheld_names(transcript, "Bohdana", [text for _, text in kept]) == []


@pytest.mark.parametrize(("said", "kept"), [
    # fresh24 (qwen1.5b): "Dra. Quiroga" ended a sentence, and "Quiroga, would rather Nahuel didn't take any
    # supplements ..." was stored without whose word it was
    ("My rheumatologist, Dra. Quiroga, would rather I didn't take any supplements. So no.",
     [(0, "My rheumatologist, Dra. Quiroga, would rather I didn't take any supplements.")]),
    ("I see Dr. Okafor on Friday. He is kind.", [(0, "I see Dr. Okafor on Friday.")]),
])
def test_a_title_ends_no_sentence(said: str, kept: list[tuple[int, str]]) -> None:
    transcript = Transcript.of([Message(role="user", name="Nahuel", content=said)], T0)
    assert unheld_names(transcript, "Nahuel", []) == kept


async def test_a_new_first_contact_with_an_accented_name_is_news_beside_the_stored_contacts(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh25 (qwen1.5b): "Snježana is first now. Bruce second. Jasna's off the list" was dropped as held by the
    # stored "Radovan's emergency contacts are Bruce from AA and Jasna.": an ASCII pattern read the name as "Snje"
    await reme.add_memory("Radovan's emergency contacts are Bruce from AA and Jasna.", user_name="radovan")
    server.script(EXTRACT, memories({"content": "Radovan had a falling-out with his sister Jasna", "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}, {"candidate": 1, "action": "ADD"}))
    chat = [{"role": "assistant", "content": "Is Bruce still your first contact?", "time": "2026-07-29T16:00:00Z"},
            {"role": "user", "name": "Radovan",
             "content": "Snježana is first now. Bruce second. Jasna's off the list, we've had a falling-out."}]
    result = await reme.summarize_memory(chat, user_name="radovan")

    assert any("Snježana is first now" in n.content for n in result.added), [n.content for n in result.added]
    assert not any("a stored memory holds it" in r.reason for r in result.rejected)


async def test_a_health_sentence_kept_as_said_naming_someone_new_is_news_beside_a_stored_memory(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh27 (qwen1.5b): "..., so my daughter Aïssatou, who lives in Villeurbanne too, is my emergency contact now"
    # was dropped as held by the stored "... with his wife Mariama, who is his emergency contact": its news was its
    # health words alone
    await reme.add_memory("Amadou lives in Lyon with his wife Mariama, who is his emergency contact.",
                          user_name="amadou")
    server.script(EXTRACT, memories({"content": "Amadou is pescatarian since June", "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}, {"candidate": 1, "action": "ADD"}))
    chat = [{"role": "assistant", "content": "And at home?", "time": "2026-09-10T16:20:00Z"},
            {"role": "user", "name": "Amadou",
             "content": "Mariama has gone to Dakar for a year, so my daughter Aïssatou, who lives in Villeurbanne "
                        "too, is my emergency contact now. And I'm pescatarian since June."}]
    result = await reme.summarize_memory(chat, user_name="amadou")

    assert any("Aïssatou" in n.content and "emergency contact" in n.content for n in result.added), [
        n.content for n in result.added]
    assert not any("a stored memory holds it" in r.reason for r in result.rejected)


@pytest.mark.parametrize(("lines", "memory", "found"), [
    # fresh27 (qwen1.5b): his daughter's migraines, given to him beside his own new medicine
    ([("Zdeněk", "I have a brain tumour. The neurologist switched me to lacosamide."),
      ("Lenka", "I'm his daughter. For the record, the migraines in this family are mine."),
      ("Lenka", "And my migraines are worse since the move.")],
     "Zdeněk was diagnosed with migraines and was prescribed lacosamide.", "migraines"),
    ([("Zdeněk", "I have a brain tumour."), ("Lenka", "My migraines are worse.")], "Zdeněk has a brain tumour.", None),
    ([("Zdeněk", "I have a brain tumour."), ("Lenka", "My migraines are worse.")], "Lenka has migraines.", None),
    # a carer who says it of the speaker, or the speaker who says it too
    ([("Mum", "He has epilepsy, and I give him his meds."), ("Tom", "Hi.")], "Tom has epilepsy.", None),
    ([("Tom", "My epilepsy is fine."), ("Mum", "My epilepsy is not.")], "Tom has epilepsy.", None),
])
def test_a_diagnosis_only_another_speaker_gives_themselves_is_not_the_speakers(
        lines: list[tuple[str, str]], memory: str, found: str | None) -> None:
    assert anothers_diagnosis(memory, [Message(role="user", name=n, content=c) for n, c in lines]) == found


async def test_a_new_emergency_contact_kept_as_said_is_news_though_its_words_are_in_stored_memories(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh27 (qwen1.5b): "Jago is my emergency contact now; Mum comes second." was kept as said, then dropped as held
    # by "Mum is Fenella's emergency contact." and "... her partner, Jago, ...": it was checked for what it ends
    # once written in the third person, which no rule reads
    await reme.add_memory("Mum is Fenella's emergency contact.", user_name="fenella")
    await reme.add_memory("Fenella is moving in with her partner, Jago, in Falmouth.", user_name="fenella")
    server.script(EXTRACT, memories({"content": "Fenella moved in July", "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}, {"candidate": 1, "action": "ADD"}))
    chat = [{"role": "assistant", "content": "How's the new place?", "time": "2026-10-08T10:00:00Z"},
            {"role": "user", "name": "Fenella",
             "content": "Lovely. I moved in July. Jago is my emergency contact now; Mum comes second."}]
    result = await reme.summarize_memory(chat, user_name="fenella")

    assert any("Jago" in n.content and "emergency contact" in n.content for n in result.added + result.updated), [
        n.content for n in result.added] + [r.reason for r in result.rejected]
    assert not any("a stored memory holds it" in r.reason for r in result.rejected)
    stored = [n.content for n in await reme.list_memory(user_name="fenella", memory_type="personal")]
    assert "Mum is Fenella's emergency contact." not in stored, stored


async def test_what_is_left_of_a_memory_that_named_no_one_may_name_no_one(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh26 (qwen1.5b): "High blood pressure. Amlodipine, 10 milligrams a day." (kept as said) stayed whole when "The
    # GP stopped the amlodipine": what was left, "High blood pressure.", named no one, as the memory did not
    await reme.add_memory("High blood pressure. Amlodipine, 10 milligrams a day.", user_name="thaddeus")
    server.script(EXTRACT, memories({"content": "Thaddeus's GP stopped the amlodipine", "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
    chat = [{"role": "assistant", "content": "How are things?", "time": "2026-05-05T19:30:00Z"},
            {"role": "user", "name": "Thaddeus", "content": "The GP stopped the amlodipine, my blood pressure's fine."}]
    result = await reme.summarize_memory(chat, user_name="thaddeus")

    assert [n.content for n in result.updated] == ["High blood pressure."], [n.content for n in result.updated]
    assert any("stopped the amlodipine" in n.content for n in result.added), [n.content for n in result.added]


@pytest.mark.parametrize(("said", "asked", "stored", "ended"), [
    # fresh27 (qwen1.5b): the word saying it ended is not what ended, and what was stopped is not the reason said
    # after it
    ("Stopped in March, as planned.", "And the bicalutamide?",
     "Amadou takes bicalutamide, 50 milligrams a day, to stop a flare.", {"bical"}),
    ("The metabolic team stopped the metformin at once: in MELAS it can cause lactic acidosis.", "",
     "Amadou has MELAS, a mitochondrial disease. Amadou's GP put Amadou on metformin in January.", {"metfo"}),
    ("I stopped the metformin because of the MELAS.", "",
     "Amadou has MELAS, a mitochondrial disease. Amadou's GP put Amadou on metformin in January.", {"metfo"}),
    # guards: an ending word with no object ends what its clause holds; another question's answer ends nothing
    ("The metformin and the MELAS diet are finished.", "",
     "Amadou is on metformin and the MELAS diet.", {"metfo", "mela", "diet"}),
    ("Stopped in March, as planned.", "And the bicalutamide?", "Amadou takes tamsulosin to stop a flare.", set()),
    # fresh28: a relation and a name answering whom the emergency contact is now end the one a memory names
    ("My sister Mandisa. She lives in Woodstock.", "Who's your emergency contact now?",
     "Amadou's cousin Nokwanda lives around the corner and she's Amadou's emergency contact.", {"emerg", "conta"}),
    ("Mandisa.", "And your emergency contact now?", "Nokwanda is Amadou's emergency contact.", {"emerg", "conta"}),
    ("Same.", "Who's your emergency contact now?", "Nokwanda is Amadou's emergency contact.", set()),
    ("My sister Mandisa and Nokwanda.", "Who's your emergency contact now?", "Nokwanda is Amadou's emergency contact.",
     set()),
    # fresh28: a contact named "now" ends the one an emergency answer kept ("Lejla's emergency contacts: Senad.")
    ("Jasmin is my emergency contact now, and he has power of attorney.", "", "Amadou's emergency contacts: Senad.",
     {"emerg", "conta"}),
    # fresh28: a move "off" somewhere to a new town ends the home a memory names
    ("In August we moved off the farm to a house in Naivasha town.", "", "Amadou is currently home in Nakuru.",
     {"nakur"}),
    ("In August we moved off the farm to a house in Naivasha town.", "", "Amadou works from home on Fridays.", set()),
    ("My sister Mandisa.", "Who's your sister?", "Nokwanda is Amadou's emergency contact.", set()),
])
def test_what_an_ending_word_ends_is_what_it_stopped(said: str, asked: str, stored: str, ended: set[str]) -> None:
    assert ending(said, stored, "Amadou", asked=asked) == ended


async def test_a_new_emergency_contact_answering_whom_it_is_now_ends_the_old_one(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh28 (qwen1.5b): "Who's your emergency contact now?" "My sister Mandisa. ..." left "Khanyisile's cousin
    # Nokwanda ... is Khanyisile's emergency contact." as it was
    await reme.add_memory("Khanyisile's cousin Nokwanda lives around the corner and she's Khanyisile's emergency "
                          "contact.", user_name="khanyisile")
    server.script(EXTRACT, memories({"content": "Khanyisile's sister Mandisa lives in Woodstock", "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}))
    chat = [{"role": "assistant", "content": "Congratulations. Who's your emergency contact now?",
             "time": "2026-08-25T18:30:00Z"},
            {"role": "user", "name": "Khanyisile", "content": "My sister Mandisa. She lives in Woodstock, ten minutes "
                                                              "away. Nokwanda is still in Gqeberha, which is too far."}]
    await reme.summarize_memory(chat, user_name="khanyisile")

    stored = [n.content for n in await reme.list_memory(user_name="khanyisile")]
    assert not any("Nokwanda" in text and "emergency contact" in text and "Mandisa" not in text for text in stored), \
        stored
    assert any("Nokwanda" in text and "cousin" in text for text in stored), stored  # who she is stays


async def test_who_someone_is_to_the_user_stays_when_the_part_of_a_memory_saying_it_ends(
        reme: ReMe, server: OpenAITestServer) -> None:
    # fresh27 (qwen1.5b): a move and a new emergency contact ended "Amadou lives in Lyon, ..., with his wife Mariama,
    # who is his emergency contact", and the wife went with them
    await reme.add_memory("Amadou lives in Lyon with his wife Mariama, who is his emergency contact. He drives a taxi.",
                          user_name="amadou")
    server.script(EXTRACT, memories({"content": "Amadou moved in May to a flat in Villeurbanne", "sources": [1]}))
    server.script(RECONCILE, decisions({"candidate": 0, "action": "ADD"}, {"candidate": 1, "action": "ADD"}))
    chat = [{"role": "assistant", "content": "And at home?", "time": "2026-09-10T16:20:00Z"},
            {"role": "user", "name": "Amadou",
             "content": "We moved in May, out of Lyon to a flat in Villeurbanne. Mariama has gone to Dakar for a "
                        "year, so my daughter Aïssatou, who lives in Villeurbanne too, is my emergency contact now."}]
    result = await reme.summarize_memory(chat, user_name="amadou")

    assert [n.content for n in result.updated] == ["Amadou drives a taxi. Mariama is Amadou's wife."], [
        n.content for n in result.updated]
    assert not result.deleted
    assert any("Aïssatou" in n.content and "emergency contact" in n.content for n in result.added), [
        n.content for n in result.added]


@pytest.mark.parametrize(("said", "stored", "ended"), [
    # fresh25 (qwen1.5b): a job left with a word before "job", and a dose put up with the medicine before the number
    ("So I left the warehouse job, and since the 15th of June I drive a forklift at the port in Geelong.",
     "Radovan is a forklift driver at a warehouse in Wingfield.", {"drive", "wingf"}),
    ("So in April Dr Pappas, my gastroenterologist, put me up to Creon 40,000: two with meals, one with snacks.",
     "Radovan takes Creon 25,000 capsules with every meal and snacks.", {"creon"}),
    ("In May I moved to Geelong, into a house with my partner.", "Radovan lives in a flat in Prospect, in Adelaide.",
     {"prosp"}),
    # fresh25: where the user lives now, said without "moved to"
    ("And we've moved: since July we live in Hobart, near Milana.", "Radovan lives in Launceston with his husband.",
     {"launc"}),
    ("Since July we live in Launceston, still.", "Radovan lives in Launceston with his husband.", set()),
    # fresh26: a move in with someone, the place after it; work left said as what one did ("I've left flying")
    ("I moved in with Leander in June, a terraced house in Portobello.", "Radovan lives in Leith, Edinburgh.",
     {"leith"}),
    ("I moved in with Leander in June.", "Radovan lives in Leith, Edinburgh.", set()),
    # fresh26: another emergency contact now ends whom a memory says it is
    ("And Teodoro has gone into a care home, so my emergency contact is my daughter Marisa now.",
     "Radovan's husband Teodoro is Radovan's emergency contact.", {"emerg", "conta"}),
    ("Kasia is round the corner. She's my emergency contact now; Jerzy is second.",
     "Radovan's son Jerzy is Radovan's emergency contact.", {"emerg", "conta"}),
    ("Kasia is my emergency contact now.", "Kasia is Radovan's emergency contact.", set()),
    ("Kasia is my emergency contact.", "Jerzy is Radovan's emergency contact.", set()),  # no "now": one more
    ("Kasia is my emergency contact now.", "Radovan takes tafamidis, 61 mg a day.", set()),
    ("And I've left flying: since July I'm a trainer on the ground.",
     "Radovan is a long-haul cabin crew member, a flight attendant.", {"membe"}),
    # fresh27: a relative clause between the new contact and "is"; a time and the place left between "moved" and
    # "to"; a diet kept now; a workplace left; back at work after sick leave; "switched me to" what comes instead
    ("So my daughter Aïssatou, who lives in Villeurbanne too, is my emergency contact now.",
     "Radovan's wife Mariama is Radovan's emergency contact.", {"emerg", "conta"}),
    ("We moved in May, out of the Croix-Rousse to a flat in Villeurbanne.", "Radovan lives in Lyon with his wife.",
     {"lyon"}),
    ("And I'm pescatarian since June: fish, but no meat.", "Radovan eats meat every day. Lamb, beef, anything.",
     {"meat", "lamb", "beef"}),
    ("I've left the library since the episode.", "Radovan works part-time at the library.", {"libra"}),
    ("I'm back at work, but on the sorting office.", "Radovan is a postman, off sick for the moment.", {"sick"}),
    ("But the levetiracetam made me angry and low, so the neurologist switched me to lacosamide.",
     "Radovan is taking levetiracetam for the tumour.", {"levet"}),
    # guards: the same dose, or a job that is not left
    ("Dr Pappas put me up to Creon 25,000 with meals.", "Radovan takes Creon 25,000 capsules with every meal.", set()),
    ("I'm still vegetarian.", "Radovan is vegetarian and eats no meat.", set()),
    ("I'm pescatarian now.", "Radovan takes Creon 25,000 capsules with every meal.", set()),
    ("I've left the library book at home.", "Radovan works part-time at the library.", set()),
    ("I'm back at work.", "Radovan is a postman in Leith.", set()),
    ("The neurologist switched me to lacosamide.", "Radovan is taking lacosamide and clobazam.", set()),
    ("I love the warehouse job.", "Radovan is a forklift driver at a warehouse in Wingfield.", set()),
])
def test_a_job_left_or_a_dose_put_up_ends_what_a_memory_said(said: str, stored: str, ended: set[str]) -> None:
    assert ending(said, stored, "Radovan", own=True) == ended


def test_contacts_who_speak_in_the_conversation_too_are_kept_as_the_speakers_emergency_contacts() -> None:
    # fresh25 (qwen1.5b): his sister and flatmate spoke too, so "Kahurangi first, then Deepika" named no one
    messages = [Message(role="user", name="Kahurangi", content="I'm Kahurangi, his sister."),
                Message(role="user", name="Deepika", content="Deepika here, the flatmate."),
                Message(role="assistant", content="Who should be contacted in an emergency?"),
                Message(role="user", name="Rangi", content="Kahurangi first, then Deepika. I'm single, so that's it.")]
    transcript = Transcript.of(messages, datetime(2026, 8, 11, tzinfo=timezone.utc))
    assert unheld_answers(transcript, "Rangi", ["Rangi has NF1"]) == [
        (3, "Rangi's emergency contacts: Kahurangi first, then Deepika.")]  # not "I'm single, so that's it."
    # the one answering is no contact of their own
    messages[3] = Message(role="user", name="Rangi", content="Rangi, that's me, just me.")
    assert unheld_answers(Transcript.of(messages, datetime(2026, 8, 11, tzinfo=timezone.utc)), "Rangi", []) == []



@pytest.mark.parametrize(("chat", "memory", "source", "named"), [
    # fresh25 (qwen1.5b): "I live in Launceston with my husband Artyom." cited Artyom's line, and was stored as
    # "Artyom lives in Launceston with Artyom's husband Artyom."
    ([("Yevgenia", "I was born with tetralogy of Fallot. I live in Launceston with my husband Artyom."),
      ("Artyom", "I'm Artyom. I'm the one with atrial fibrillation.")],
     "I live in Launceston with my husband Artyom.", 1, "Yevgenia lives in Launceston with Yevgenia's husband Artyom."),
    # fresh26 (qwen1.5b): the sister's "I'm the pregnant one" cited the assistant's line and was stored in the first
    # person
    ([("Henrietta", "Three weeks ago I was admitted with a pulmonary embolism."),
      ("Clementine", "I'm Clementine, her big sister. And just so nobody muddles us: I'm the pregnant one, due in "
                     "May."),
      ("assistant", "Thank you both. Henrietta, what do you take?"), ("Henrietta", "Apixaban, 5 mg twice a day.")],
     "I'm the pregnant one, due in May.", 2, "Clementine is the pregnant one, due in May 2026."),
])
async def test_an_i_is_the_speaker_of_the_line_that_says_it_when_the_memory_cites_another(
        reme: ReMe, server: OpenAITestServer, chat: list[tuple[str, str]], memory: str, source: int,
        named: str) -> None:
    messages: list[dict[str, str]] = [{"role": "assistant", "content": line} if who == "assistant" else
                {"role": "user", "name": who, "content": line} for who, line in chat]
    messages[0]["time"] = "2026-02-24T18:00:00Z"
    server.script(EXTRACT, memories({"content": memory, "sources": [source]}))
    result = await reme.summarize_memory(messages, user_name=chat[0][0].lower())

    added = [n.content for n in result.added]
    assert named in added, added
    assert not any(a.startswith(("I'm", "I ")) or "Artyom's husband" in a for a in added)


@pytest.mark.parametrize(("said", "stored", "ended"), [
    # fresh25 (qwen1.5b): "they halved the mycophenolate, to 500 milligrams" ended nothing (the value was a clause
    # of its own, and "they" no speaker's own), so "takes mycophenolate, 1000 milligrams" stayed as current
    ("And they halved the mycophenolate, to 500 milligrams twice a day.",
     "Torben takes mycophenolate, 1000 milligrams twice a day.", {"mycop"}),
    # a unit another medicine's dose shares ends nothing of it
    ("And they halved the mycophenolate, to 500 milligrams twice a day.",
     "Torben takes prednisolone, 5 milligrams every morning.", set()),
    ("They upped my mycophenolate to 500 milligrams twice a day.",
     "Torben takes prednisolone, 5 milligrams every morning.", set()),
    ("They took me to Odense, to 3 shops.", "Torben takes prednisolone, 5 milligrams every morning.", set()),
])
def test_a_dose_the_doctors_changed_ends_that_medicines_dose_alone(said: str, stored: str, ended: set[str]) -> None:
    assert ending(said, stored, "Torben", own=True) == ended


async def test_a_health_fact_a_misnamed_draft_held_is_kept_as_said(reme: ReMe, server: OpenAITestServer) -> None:
    # fresh26 (qwen1.5b): "Wiremu is a man with Duchenne muscular dystrophy" (his son's) held the diagnosis, so it was
    # not kept as said; the repair did not mend it, and the diagnosis was lost with it
    chat = [{"role": "user", "name": "Wiremu", "time": "2026-07-21T19:00:00Z",
             "content": "Kia ora. I want to keep notes on my boy, Tamati. He's eleven and has Duchenne muscular "
                        "dystrophy."}]
    server.script(EXTRACT, memories({"content": "Wiremu is a man with Duchenne muscular dystrophy.", "sources": [0]}))
    result = await reme.summarize_memory(chat, user_name="wiremu")

    added = [n.content for n in result.added]
    assert "Tamati is eleven and has Duchenne muscular dystrophy." in added, added
    assert not any(a.startswith("Wiremu is a man") for a in added)
