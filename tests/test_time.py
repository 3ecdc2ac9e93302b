"""Time and forgetting through the public API: event times resolved at write, time windows found
in questions, expiry honoured by every read and swept by `prune`, `forget` with history kept or
purged, read counting in batches, and decay by age and disuse."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given, settings, strategies as st

from reme import InvalidInputError, MemoryNode, MemoryNotFoundError, MemoryType, ReMe
from reme.schema import TimeWindow
from reme.temporal import find_window

from conftest import every_store
from openai_server import OpenAITestServer, prompt_of

EXTRACT = "Read the conversation below"
UTC = timezone.utc
LONG_AGO = datetime(2009, 3, 11, 18, 30, tzinfo=UTC)  # a Wednesday


def day(y: int, m: int, d: int) -> tuple[datetime, datetime]:
    return datetime(y, m, d, tzinfo=UTC), datetime(y, m, d, 23, 59, 59, 999999, tzinfo=UTC)


# -- part 1: when it happened --------------------------------------------------------------------
@pytest.mark.parametrize("text, now, expected", [
    ("I went hiking yesterday", LONG_AGO, (datetime(2009, 3, 10), datetime(2009, 3, 10))),
    ("What did Alice do last weekend?", LONG_AGO, (datetime(2009, 3, 7), datetime(2009, 3, 8))),
    ("last week", LONG_AGO, (datetime(2009, 3, 2), datetime(2009, 3, 8))),
    ("two weeks ago", LONG_AGO, (datetime(2009, 2, 23), datetime(2009, 3, 1))),
    ("in May 2023", LONG_AGO, (datetime(2023, 5, 1), datetime(2023, 5, 31))),
    ("When did Melanie go camping in June?", LONG_AGO, (datetime(2008, 6, 1), datetime(2008, 6, 30))),
    ("What painting did she show on October 13, 2023?", LONG_AGO, (datetime(2023, 10, 13), datetime(2023, 10, 13))),
    ("What did Maria do last weekend before April 10, 2023?", LONG_AGO,
     (datetime(2023, 4, 8), datetime(2023, 4, 9))),
    ("last year", LONG_AGO, (datetime(2008, 1, 1), datetime(2008, 12, 31))),
    ("last Friday", LONG_AGO, (datetime(2009, 3, 6), datetime(2009, 3, 6))),
    ("What is Alice doing in two weeks?", LONG_AGO, (datetime(2009, 3, 25), datetime(2009, 3, 25))),
    ("three days from now", LONG_AGO, (datetime(2009, 3, 14), datetime(2009, 3, 14))),
    # fresh6: "I start at Fernhill Garden Centre this coming Monday" stayed undated
    ("I start this coming Monday", LONG_AGO, (datetime(2009, 3, 16), datetime(2009, 3, 16))),
    ("see you this coming Wednesday", LONG_AGO, (datetime(2009, 3, 18), datetime(2009, 3, 18))),
    ("the coming Friday", LONG_AGO, (datetime(2009, 3, 13), datetime(2009, 3, 13))),
    ("昨天我去了公园", LONG_AGO, (datetime(2009, 3, 10), datetime(2009, 3, 10))),
])
def test_time_expressions_resolve_against_the_reference_time(text: str, now: datetime,
                                                             expected: tuple[datetime, datetime]) -> None:
    window = find_window(text, now)
    assert window is not None
    assert (window.start.date(), window.end.date()) == (expected[0].date(), expected[1].date())  # type: ignore[union-attr]


@pytest.mark.parametrize("text", ["What is Alice's job?", "May I help you?", "I may go", "She has 2023 stamps",
                                  "", "the 45th of Maytember", "Alice ran the course in two hours",
                                  "Alice wrote the book in three months"])
def test_text_without_a_period_finds_none(text: str) -> None:
    assert find_window(text, LONG_AGO) is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
def test_any_text_at_any_time_yields_a_window_or_none(text: str, now: datetime) -> None:
    window = find_window(text, now)
    assert window is None or (window.start is not None and window.end is not None and window.start <= window.end)


async def test_summary_of_an_old_conversation_stores_when_it_happened_apart_from_when_it_was_said(
        make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    chat = [{"role": "user", "name": "Alice", "content": "I went hiking in the Alps yesterday.",
             "time": LONG_AGO.isoformat()},
            {"role": "user", "name": "Alice", "content": "And I started a pottery class last week.",
             "time": (LONG_AGO + timedelta(minutes=1)).isoformat()},
            {"role": "user", "name": "Alice", "content": "I'm moving to Lyon in March.",
             "time": (LONG_AGO + timedelta(minutes=2)).isoformat()}]
    server.script(EXTRACT, {"memories": [
        # the model resolved nothing: the rules resolve "yesterday" against the message's time
        {"content": "Alice went hiking in the Alps", "kind": "event", "time": None, "sources": [0]},
        # a range the model resolved itself
        {"content": "Alice started a pottery class", "kind": "event", "time": "2009-03-02", "time_end": "2009-03-08",
         "sources": [1]},
        {"content": "Alice is moving to Lyon", "kind": "plan", "time": "not a date", "sources": [2]}]})
    async with make_reme(retrieval={"time_weight": 1.0, "recency_weight": 0.0, "importance_weight": 0.0}) as reme:
        result = await reme.summarize_memory(chat, user_name="alice", now=datetime(2030, 1, 1, tzinfo=UTC))
        hiking, pottery, lyon = result.added
        assert hiking.message_time == LONG_AGO  # when it was said
        assert (hiking.event_start, hiking.event_end) == day(2009, 3, 10)  # when it happened
        assert (pottery.event_start, pottery.event_end) == (day(2009, 3, 2)[0], day(2009, 3, 8)[1])
        assert pottery.message_time == LONG_AGO + timedelta(minutes=1)
        # "in March" said in March: the rules read the source message, the latest March (this one)
        assert (lyon.event_start, lyon.event_end) == (day(2009, 3, 1)[0], day(2009, 3, 31)[1])

        # a question about that time, asked years later, finds the event and ranks it first
        ctx = await reme.retrieve_memory("What did Alice do last week?", user_name="alice", rewrite=False,
                                         now=LONG_AGO)
        assert ctx.time_window == TimeWindow(start=day(2009, 3, 2)[0], end=day(2009, 3, 8)[1])
        assert ctx.memories[0].node.memory_id == pottery.memory_id
        assert "(happened 2009-03-10)" in ctx.text  # the prompt text says when it happened

        # an explicit window matches the event range, not only when it was said
        inside = await reme.retrieve_memory("Alice", user_name="alice", rewrite=False,
                                            time_window=(datetime(2009, 3, 10), datetime(2009, 3, 10, 23)))
        assert {m.node.memory_id for m in inside.memories} >= {hiking.memory_id}
        assert pottery.memory_id not in {m.node.memory_id for m in inside.memories}
    # Dates were read where the model sent them, unasked: neither the extraction's prompt nor its reply schema asks
    # for one (qwen1.5b wrote the line's own time-stamp, or a wrong date, for nearly every memory: a third of each
    # memory's tokens, and replies cut off at the token cap lost memories).
    extract = next(body for body in server.chat_requests if EXTRACT in prompt_of(body))
    schema = extract["response_format"]["json_schema"]["schema"]
    assert set(schema["$defs"]["ExtractedMemory"]["properties"]) == {"content", "kind", "sources", "importance"}
    assert "time_end" not in prompt_of(extract) and "YYYY" not in prompt_of(extract)


@every_store
async def test_a_window_found_in_the_question_ranks_memories_inside_it_first(make_reme: Callable[..., ReMe],
                                                                           another_store: dict[str, Any]) -> None:
    async with make_reme(llm={}, retrieval={"recency_weight": 0.0, "importance_weight": 0.0}) as reme:
        may = await reme.add_memory("Alice visited the museum", user_name="alice",
                                    message_time=datetime(2008, 5, 20, tzinfo=UTC))
        july = await reme.add_memory("Alice visited the museum again", user_name="alice",
                                     message_time=datetime(2008, 7, 2, tzinfo=UTC))
        query = "Which museum did Alice visit in May 2008?"
        ranked = await reme.retrieve_memory(query, user_name="alice", rewrite=False, now=LONG_AGO)
        assert ranked.memories[0].node.memory_id == may.memory_id and len(ranked.memories) == 2  # ranks, not filters
        july_query = await reme.retrieve_memory("Which museum did Alice visit in July 2008?", user_name="alice",
                                                rewrite=False, now=LONG_AGO)
        assert july_query.memories[0].node.memory_id == july.memory_id
    async with make_reme(llm={}, retrieval={"time_weight": 0.0}, **another_store) as off:
        await off.add_memory("Alice visited the museum", user_name="alice", message_time=datetime(2008, 5, 20))
        plain = await off.retrieve_memory(query, user_name="alice", rewrite=False, now=LONG_AGO)
        assert plain.time_window is None  # time_weight 0: no detection


# -- part 2: expiry ------------------------------------------------------------------------------
@every_store
async def test_an_expired_memory_is_gone_from_every_read_and_prune_sweeps_it(reme: ReMe, tmp_path: Path) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    gone = await reme.add_memory("Alice's door code is 4711", user_name="alice", expires_at=past)
    kept = await reme.add_memory("Alice's door code changes monthly", user_name="alice", ttl=timedelta(days=30))
    never = await reme.add_memory("Alice lives in Lyon", user_name="alice")
    assert kept.expires_at is not None and timedelta(days=29) < kept.expires_at - datetime.now(UTC) <= timedelta(days=30)
    assert never.expires_at is None

    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(gone.memory_id)
    with pytest.raises(MemoryNotFoundError):
        await reme.update_memory(gone.memory_id, content="revived")
    with pytest.raises(MemoryNotFoundError):
        await reme.delete_memory(gone.memory_id)
    with pytest.raises(MemoryNotFoundError):
        await reme.record_usage([gone.memory_id], True)
    live = {kept.memory_id, never.memory_id}
    assert {n.memory_id for n in await reme.list_memory(user_name="alice")} == live
    assert {n.memory_id for n in await reme.list_memory()} == live
    assert await reme.count_memory(user_name="alice") == 2
    assert await reme.count_memory(filters={"content": {"contains": "4711"}}) == 0  # a filter cannot widen
    assert all(h.node.memory_id != gone.memory_id
               for h in await reme.search_memory("door code 4711", user_name="alice", top_k=10))
    ctx = await reme.retrieve_memory("door code 4711", user_name="alice", rewrite=False)
    assert gone.memory_id not in {m.node.memory_id for m in ctx.memories} and "4711" not in ctx.text
    assert await reme.export_memory(tmp_path / "out.jsonl", user_name="alice") == 2
    assert "4711" not in (tmp_path / "out.jsonl").read_text()
    # the same text added again is a new memory, not the expired one returned
    again = await reme.add_memory("Alice's door code is 4711", user_name="alice")
    assert again.memory_id != gone.memory_id and again.expires_at is None
    await reme.delete_memory(again.memory_id)

    pruned = await reme.prune(user_name="alice")
    assert [n.memory_id for n in pruned] == [gone.memory_id]
    assert await reme.prune(user_name="alice") == []
    versions = await reme.history(gone.memory_id, user_name="alice")  # prune keeps the last state
    assert versions[-1].event == "DELETE" and "expired" in versions[-1].reason
    with pytest.raises(InvalidInputError):
        await reme.prune()
    with pytest.raises(InvalidInputError):
        await reme.add_memory("x", user_name="alice", ttl=60, expires_at=past)
    with pytest.raises(InvalidInputError):
        await reme.add_memory("x", user_name="alice", ttl=-1)


async def test_expiry_can_be_set_later_and_prune_takes_a_now(reme: ReMe) -> None:
    node = await reme.add_memory("Alice is in Paris this week", user_name="alice")
    later = datetime.now(UTC) + timedelta(days=7)
    updated = await reme.update_memory(node.memory_id, expires_at=later, user_name="alice")
    assert updated.expires_at == later and updated.version == 2
    assert await reme.prune(user_name="alice") == []
    swept = await reme.prune(user_name="alice", now=later + timedelta(seconds=1))
    assert [n.memory_id for n in swept] == [node.memory_id]


async def test_prune_of_a_task_sweeps_expired_lessons_and_failing_ones(reme: ReMe) -> None:
    past = datetime.now(UTC) - timedelta(hours=1)
    old = await reme.add_memory("Use the v1 API", task_name="deploy", when_to_use="calling the API", expires_at=past)
    bad = await reme.add_memory("Retry forever", task_name="deploy", when_to_use="a call fails")
    good = await reme.add_memory("Back off exponentially", task_name="deploy", when_to_use="a call fails twice")
    for _ in range(3):
        await reme.record_usage([bad.memory_id], False)
        await reme.record_usage([good.memory_id], True)
    assert {n.memory_id for n in await reme.prune("deploy")} == {old.memory_id, bad.memory_id}
    assert [n.memory_id for n in await reme.list_memory(task_name="deploy")] == [good.memory_id]


# -- part 2: forget ------------------------------------------------------------------------------
@every_store
async def test_forget_keeps_history_unless_purged_and_a_purge_leaves_no_version(reme: ReMe) -> None:
    health = await reme.add_memory("Alice has asthma", user_name="alice", tags=["health"])
    await reme.update_memory(health.memory_id, content="Alice has mild asthma")
    diet = await reme.add_memory("Alice is allergic to nuts", user_name="alice", tags=["health"])
    travel = await reme.add_memory("Alice flies to Oslo", user_name="alice", tags=["travel"])
    bob = await reme.add_memory("Bob has asthma", user_name="bob", tags=["health"])

    assert await reme.forget(user_name="alice", filters={"tags": {"any": ["health"]}, "content": {"contains": "nuts"}}) == 1
    kept = await reme.history(diet.memory_id, user_name="alice")
    assert [v.event for v in kept] == ["DELETE"] and kept[0].node.content == "Alice is allergic to nuts"

    assert await reme.forget(user_name="alice", filters={"tags": {"any": ["health"]}}, purge=True) == 1
    with pytest.raises(MemoryNotFoundError):  # neither the memory nor any of its versions is left
        await reme.history(health.memory_id)
    stored = [r.node async for r in reme.store.iter_records(reme.repo.versions)]
    assert not [n for n in stored if "asthma" in n.content and n.memory_target == "alice"]
    assert not [n for n in stored if n.metadata.get("version_of") == health.memory_id]
    assert [n.memory_id for n in await reme.list_memory(user_name="alice")] == [travel.memory_id]
    assert (await reme.get_memory(bob.memory_id)).content == "Bob has asthma"  # another user: untouched

    assert await reme.forget(user_name="alice", filters={"tags": {"any": ["nothing"]}}) == 0
    with pytest.raises(InvalidInputError):
        await reme.forget()
    with pytest.raises(InvalidInputError):
        await reme.forget(user_name="alice", purge="yes")  # type: ignore[arg-type]
    assert await reme.forget(everything=True, purge=True) == 2
    assert await reme.count_memory() == 0


@every_store
async def test_a_purge_of_a_target_removes_the_versions_of_memories_deleted_before(reme: ReMe) -> None:
    # a user's erasure: a memory deleted last month kept its text as a version; the purge of the
    # user took only the memories still stored, and history() still showed the deleted one
    old = await reme.add_memory("Alice's passport number is 1234", user_name="alice")
    await reme.delete_memory(old.memory_id)
    tea = await reme.add_memory("Alice likes tea", user_name="alice")
    await reme.update_memory(tea.memory_id, content="Alice likes green tea")
    bob = await reme.add_memory("Bob's passport number is 5678", user_name="bob")
    await reme.delete_memory(bob.memory_id)

    assert await reme.forget(user_name="alice", purge=True) == 1
    for memory_id in (old.memory_id, tea.memory_id):
        with pytest.raises(MemoryNotFoundError):
            await reme.history(memory_id)
    stored = [r.node async for r in reme.store.iter_records(reme.repo.versions)]
    assert [n.content for n in stored] == ["Bob's passport number is 5678"]  # another user's: kept
    assert await reme.forget(user_name="alice", purge=True) == 0  # nothing left to purge


@every_store
async def test_a_purge_with_filters_removes_every_version_that_matches_them(reme: ReMe) -> None:
    # a purge of Alice's health memories took those still stored; the versions of one deleted
    # last month (and the health state of one retagged since) kept their text, for history() to show
    gone = await reme.add_memory("Alice's HIV test was negative", user_name="alice", tags=["health"],
                                 metadata={"source": "clinic"})
    await reme.update_memory(gone.memory_id, content="Alice's HIV test in May was negative")
    await reme.delete_memory(gone.memory_id)
    retagged = await reme.add_memory("Alice sees Dr Ng on Fridays", user_name="alice", tags=["health"])
    await reme.update_memory(retagged.memory_id, content="Alice has a meeting on Fridays", tags=["calendar"])
    stored = await reme.add_memory("Alice has asthma", user_name="alice", tags=["health"])
    flat = await reme.add_memory("Alice's flat is in Leeds", user_name="alice", tags=["home"])
    await reme.delete_memory(flat.memory_id)
    tea = await reme.add_memory("Alice likes tea", user_name="alice", tags=["food"])
    await reme.update_memory(tea.memory_id, content="Alice likes green tea")
    bob = await reme.add_memory("Bob's HIV test was negative", user_name="bob", tags=["health"])
    await reme.delete_memory(bob.memory_id)

    assert await reme.forget(user_name="alice", filters={"tags": {"any": ["health"]}}, purge=True) == 1
    for memory_id in (gone.memory_id, stored.memory_id):
        with pytest.raises(MemoryNotFoundError):
            await reme.history(memory_id)
    assert await reme.history(retagged.memory_id) == []  # the state that matched is gone; the memory stays
    assert (await reme.get_memory(retagged.memory_id)).content == "Alice has a meeting on Fridays"
    assert [v.node.content for v in await reme.history(flat.memory_id)] == ["Alice's flat is in Leeds"]
    assert [v.node.content for v in await reme.history(tea.memory_id)] == ["Alice likes tea"]
    texts = [r.node.content async for r in reme.store.iter_records(reme.repo.versions)]
    assert sorted(t for t in texts if "HIV" in t or "Dr Ng" in t) == ["Bob's HIV test was negative"]

    # fields a version record holds only inside the state it keeps: the memory's id, metadata, times
    await reme.delete_memory(tea.memory_id)
    assert await reme.forget(user_name="alice", filters={"memory_id": tea.memory_id}, purge=True) == 0
    with pytest.raises(MemoryNotFoundError):
        await reme.history(tea.memory_id)
    note = await reme.add_memory("Alice's GP is Dr Ng", user_name="alice", metadata={"source": "clinic"})
    await reme.delete_memory(note.memory_id)
    assert await reme.forget(user_name="alice", filters={"metadata.source": "clinic",
                                                         "time_created": {"lte": note.time_created}},
                             purge=True) == 0
    with pytest.raises(MemoryNotFoundError):
        await reme.history(note.memory_id)
    assert [v.node.content for v in await reme.history(flat.memory_id)] == ["Alice's flat is in Leeds"]


async def test_a_scrubbed_purge_leaves_the_text_nowhere_in_the_store_files(reme_factory: Callable[..., ReMe],
                                                                           tmp_path: Path) -> None:
    secret = "XK99SECRET7781"

    def files_holding(text: str) -> list[Path]:
        return [p for p in (tmp_path / "wd").rglob("*") if p.is_file() and text.encode() in p.read_bytes()]

    async with reme_factory() as reme:
        node = await reme.add_memory(f"Alice's passport number is {secret}", user_name="alice")
        await reme.update_memory(node.memory_id, content=f"Alice's passport number is {secret}, renewed")
        tea = await reme.add_memory("Alice likes tea", user_name="alice")
        await reme.update_memory(tea.memory_id, content="Alice likes green tea")
        assert files_holding(secret)
        with pytest.raises(InvalidInputError):
            await reme.forget(user_name="alice", scrub=True)  # a kept history would keep the text
        assert await reme.forget(user_name="alice", filters={"content": {"contains": "passport"}},
                                 purge=True, scrub=True) == 1
        assert files_holding(secret) == []
        assert [n.content for n in await reme.list_memory(user_name="alice")] == ["Alice likes green tea"]
        assert [v.node.content for v in await reme.history(tea.memory_id)] == ["Alice likes tea"]  # others kept
        assert len([h async for h in reme.store.iter_records(reme.collection, with_vectors=True)]) == 1
        found = await reme.search_memory("green tea", user_name="alice")
        assert found[0].node.memory_id == tea.memory_id  # vectors survived the rewrite
    async with reme_factory() as reme:  # reopened: still gone, still searchable
        assert await reme.count_memory(user_name="alice") == 1
        assert files_holding(secret) == []


async def test_a_scrub_that_finds_nothing_to_forget_still_rewrites_the_files(reme_factory: Callable[..., ReMe],
                                                                            tmp_path: Path) -> None:
    # a purge acknowledged without scrub (or a scrub whose rewrite a crash cut off after its purge,
    # on a server): the engine keeps the bytes a while, and scrubbing again must take them out
    secret = "QZ41SECRET0093"
    async with reme_factory() as reme:
        await reme.add_memory(f"Alice's passport number is {secret}", user_name="alice")
        await reme.add_memory("Alice likes tea", user_name="alice")
        assert await reme.forget(user_name="alice", filters={"content": {"contains": "passport"}}, purge=True) == 1
        assert [p for p in (tmp_path / "wd").rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert await reme.forget(user_name="alice", filters={"content": {"contains": "passport"}},
                                 purge=True, scrub=True) == 0
        assert [p for p in (tmp_path / "wd").rglob("*") if p.is_file() and secret.encode() in p.read_bytes()] == []
        assert [n.content for n in await reme.list_memory(user_name="alice")] == ["Alice likes tea"]


# -- part 2: reads and decay ---------------------------------------------------------------------
async def test_reads_are_counted_in_batches_without_a_write_per_read(make_reme: Callable[..., ReMe]) -> None:
    async with make_reme(llm={}, retrieval={"track_reads": True, "read_flush": 3}) as reme:
        a = await reme.add_memory("Alice likes green tea", user_name="alice")
        b = await reme.add_memory("Alice likes black coffee", user_name="alice")
        c = await reme.add_memory("Bob likes jasmine tea", user_name="bob")
        modified = (await reme.get_memory(a.memory_id)).time_modified
        for _ in range(4):
            await reme.retrieve_memory("green tea", user_name="alice", rewrite=False, top_k=1)
        assert (await reme.get_memory(a.memory_id)).access_count == 0  # counted, not yet written
        await reme.search_memory("coffee", user_name="alice", top_k=1)
        await reme.search_memory("jasmine", user_name="bob", top_k=1)  # the third distinct memory: a flush
        after = await reme.get_memory(a.memory_id)
        assert after.access_count == 4 and after.last_accessed is not None
        assert after.version == 1 and after.time_modified == modified  # bookkeeping, not a change
        assert (await reme.get_memory(b.memory_id)).access_count == 1
        assert (await reme.get_memory(c.memory_id)).access_count == 1
        assert await reme.history(a.memory_id) == []  # no version per flush
        await reme.retrieve_memory("green tea", user_name="alice", rewrite=False, top_k=1)
        used = await reme.record_usage([b.memory_id], True)
        assert used[0].access_count == 2
        # an update after reads keeps the counts, and reads counted meanwhile do not conflict
        await reme.flush_reads()
        updated = await reme.update_memory(a.memory_id, content="Alice loves green tea")
        assert updated.access_count == 5 and updated.version == 2
    async with make_reme(llm={}) as reme:  # closing wrote nothing pending; reopening reads the counts
        assert (await reme.get_memory(a.memory_id)).access_count == 5


async def test_reads_pending_at_close_are_written(make_reme: Callable[..., ReMe]) -> None:
    async with make_reme(llm={}, retrieval={"track_reads": True}) as reme:
        a = await reme.add_memory("Alice likes green tea", user_name="alice")
        await reme.search_memory("green tea", user_name="alice", top_k=1)
    async with make_reme(llm={}) as reme:
        assert (await reme.get_memory(a.memory_id)).access_count == 1


@every_store
async def test_decay_by_age_and_by_disuse_reorders_equal_matches(make_reme: Callable[..., ReMe],
                                                                 another_store: dict[str, Any]) -> None:
    now = datetime.now(UTC)
    base = {"recency_weight": 0.0, "importance_weight": 0.0, "time_weight": 0.0}
    async with make_reme(llm={}, retrieval={**base, "decay_half_life_days": 30}) as reme:
        old = MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content="Alice likes green tea",
                         message_time=now - timedelta(days=365))
        new = MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content="Alice likes green tea!",
                         message_time=now - timedelta(days=1))
        await reme.add_memories([old, new])
        ctx = await reme.retrieve_memory("Alice likes green tea", user_name="alice", rewrite=False)
        assert [m.node.memory_id for m in ctx.memories] == [new.memory_id, old.memory_id]
        assert ctx.memories[1].score < ctx.memories[0].score / 100  # a year at a 30-day half-life
    async with make_reme(llm={}, retrieval={**base, "disuse_half_life_days": 7}, **another_store) as reme:
        idle = MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content="Alice likes green tea",
                          time_created=now - timedelta(days=60))
        used = MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content="Alice likes green tea!",
                          time_created=now - timedelta(days=60))
        await reme.add_memories([idle, used])
        await reme.record_usage([used.memory_id], True)  # used just now: not idle
        ctx = await reme.retrieve_memory("Alice likes green tea", user_name="alice", rewrite=False,
                                         now=now + timedelta(minutes=1))
        assert [m.node.memory_id for m in ctx.memories] == [used.memory_id, idle.memory_id]


# -- compatibility -------------------------------------------------------------------------------
async def test_an_export_written_before_these_fields_still_imports(reme: ReMe, tmp_path: Path) -> None:
    line = {"memory_id": "5f0f7f06-3b35-4a0e-8b77-6f4c7b0b8a11", "memory_type": "personal", "target_kind": "user",
            "memory_target": "alice", "when_to_use": "", "content": "Alice likes tea",
            "message_time": "2020-01-01T00:00:00Z", "time_created": "2020-01-01T00:00:00Z",
            "time_modified": "2020-01-01T00:00:00Z", "author": "", "score": 0.0, "tags": [], "ref_ids": [],
            "metadata": {}, "version": 1}
    (tmp_path / "old.jsonl").write_text(json.dumps(line) + "\n")
    assert await reme.import_memory(tmp_path / "old.jsonl") == 1
    node = await reme.get_memory(line["memory_id"])
    assert node.expires_at is None and node.event_start is None and node.access_count == 0


async def test_a_payload_stored_before_these_fields_reads_with_their_defaults(reme: ReMe) -> None:
    from reme.store.base import from_payload, to_payload

    node = MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content="Alice likes tea")
    payload = to_payload(node)
    for key in ("event_start", "event_end", "expires_at", "last_accessed", "access_count"):
        payload.pop(key)
    assert from_payload(payload) == node
    with pytest.raises(ValueError):
        MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content="x",
                   event_start=datetime(2020, 1, 2), event_end=datetime(2020, 1, 1))
