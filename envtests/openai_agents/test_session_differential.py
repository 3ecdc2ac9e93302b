"""ReMeSession against the SDK's own SQLiteSession (in memory): hypothesis generates sequences of
add_items (user, system and assistant messages, function calls and their outputs, reasoning
items), get_items with every kind of limit (None, negative, 0, positive, the settings' limit),
pop_item and clear_session; each runs on both, and every result is compared."""

from __future__ import annotations

import tempfile
import uuid
from typing import Any, Iterator

import pytest
from agents.memory import SessionSettings, SQLiteSession
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reme import InvalidInputError, ReMe
from reme.integrations.openai_agents import ReMeSession
from reme.sync import LoopThread

texts = st.sampled_from(["hi", "", "  ", "green tea\n", "ü", "x" * 300])
items = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    st.builds(lambda t: {"role": "system", "content": t}, texts),
    st.builds(lambda t, n: {"type": "message", "role": "assistant", "id": f"msg_{n}", "status": "completed",
                            "content": [{"type": "output_text", "text": t, "annotations": []}]}, texts, st.integers(0, 9)),
    st.builds(lambda n: {"type": "function_call", "call_id": f"call_{n}", "name": "get_weather", "id": f"fc_{n}",
                         "arguments": '{"city": "Berlin"}'}, st.integers(0, 3)),
    st.builds(lambda n, t: {"type": "function_call_output", "call_id": f"call_{n}", "output": t}, st.integers(0, 3),
              texts),
    st.builds(lambda n: {"type": "function_call_output", "call_id": f"call_{n}",
                         "output": [{"type": "input_text", "text": "rich"}]}, st.integers(0, 3)),
    st.just({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]}))
ops = st.one_of(st.tuples(st.just("add_items"), st.lists(items, max_size=3)),
                st.tuples(st.just("get_items"), st.sampled_from([None, -1, 0, 1, 2, 5])),
                st.tuples(st.just("pop_item")), st.tuples(st.just("clear_session")))


@pytest.fixture(scope="module")
def engine() -> Iterator[tuple[LoopThread, ReMe]]:
    loop = LoopThread("differential")

    async def open_reme(path: str) -> ReMe:
        return await ReMe(working_dir=path, embedding={"backend": "hash"}).open()

    with tempfile.TemporaryDirectory() as path:
        reme = loop.run(open_reme(path))
        yield loop, reme
        loop.run(reme.close())
    loop.stop()


async def apply(session: Any, op: tuple[Any, ...]) -> Any:
    return await getattr(session, op[0])(*op[1:])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ops, min_size=1, max_size=10), st.sampled_from([None, 2]))
def test_every_operation_answers_as_the_sdks_sqlite_session(engine: tuple[LoopThread, ReMe],
                                                            batch: list[tuple[Any, ...]], limit: int | None) -> None:
    loop, reme = engine
    name = str(uuid.uuid4())
    ours = ReMeSession(name, reme, session_settings=SessionSettings(limit=limit))
    sqlite = SQLiteSession(name, session_settings=SessionSettings(limit=limit))
    for op in batch:
        assert loop.run(apply(ours, op)) == loop.run(apply(sqlite, op)), op
    for limit_now in (None, -1, 0, 1, 2, 5):  # every kind of limit on the state reached
        assert loop.run(ours.get_items(limit_now)) == loop.run(sqlite.get_items(limit_now)), limit_now
    sqlite.close()


async def test_sessions_are_apart_and_survive_a_reopen(tmp_path: Any) -> None:
    first = [{"role": "user", "content": "I love green tea"},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
    async with ReMe(working_dir=tmp_path, embedding={"backend": "hash"}) as reme:
        await ReMeSession("alice-1", reme).add_items(first)
        await ReMeSession("bob-1", reme).add_items([{"role": "user", "content": "I am Bob"}])
        assert await ReMeSession("bob-1", reme).get_items() == [{"role": "user", "content": "I am Bob"}]
        with pytest.raises(InvalidInputError):
            await ReMeSession("alice-1", reme).add_items(["not an item"])
    async with ReMe(working_dir=tmp_path, embedding={"backend": "hash"}) as reme:
        assert await ReMeSession("alice-1", reme).get_items() == first
        await ReMeSession("alice-1", reme).clear_session()
        assert await ReMeSession("alice-1", reme).get_items() == []
        assert len(await ReMeSession("bob-1", reme).get_items()) == 1
