"""ReMeHistoryProvider against the framework's own InMemoryHistoryProvider: hypothesis generates
sequences of save_messages (new messages, or the whole transcript replayed with new ones after
it, as a client that resends everything does; user and assistant texts, function calls and their
results, with and without message ids) and get_messages; each runs on both, and the messages
(as `Message.to_dict()`) are compared."""

from __future__ import annotations

import tempfile
import uuid
from typing import Any, Iterator

import pytest
from agent_framework import Content, InMemoryHistoryProvider, Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reme import InvalidInputError, ReMe
from reme.integrations.agent_framework import ReMeHistoryProvider
from reme.sync import LoopThread

texts = st.sampled_from(["hi", "green tea\n", "ü", "  ", "x" * 200])
ids = st.sampled_from([None, "m1", "m2"])
specs = st.one_of(
    st.tuples(st.just("user"), texts, ids), st.tuples(st.just("assistant"), texts, ids),
    st.tuples(st.just("call"), st.sampled_from(["c1", "c2"]), ids),
    st.tuples(st.just("result"), st.sampled_from(["c1", "c2"]), ids))
ops = st.one_of(st.tuples(st.just("save"), st.lists(specs, max_size=3), st.booleans()), st.tuples(st.just("get")))


def message(spec: tuple[str, str, str | None]) -> Message:
    kind, value, message_id = spec
    if kind == "call":
        return Message("assistant", [Content.from_function_call(call_id=value, name="weather", arguments='{"c": 1}')],
                       message_id=message_id)
    if kind == "result":
        return Message("tool", [Content.from_function_result(call_id=value, result="sunny")], message_id=message_id)
    return Message(kind, [value], message_id=message_id)


def dicts(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]


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


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ops, min_size=1, max_size=8))
def test_history_is_kept_as_the_frameworks_in_memory_provider_keeps_it(
        engine: tuple[LoopThread, ReMe], batch: list[tuple[Any, ...]]) -> None:
    loop, reme = engine
    session, state = str(uuid.uuid4()), {}  # type: ignore[var-annotated]
    ours, theirs = ReMeHistoryProvider(reme), InMemoryHistoryProvider()
    for op in batch:
        if op[0] == "save":
            new = [message(s) for s in op[1]]
            sent = (loop.run(theirs.get_messages(session, state=state)) if op[2] else []) + new
            loop.run(ours.save_messages(session, sent))
            loop.run(theirs.save_messages(session, sent, state=state))
        assert dicts(loop.run(ours.get_messages(session))) == dicts(loop.run(theirs.get_messages(session, state=state)))


async def test_no_session_no_history(tmp_path: Any) -> None:
    async with ReMe(working_dir=tmp_path, embedding={"backend": "hash"}) as reme:
        with pytest.raises(InvalidInputError):
            await ReMeHistoryProvider(reme).save_messages(None, [Message("user", ["hi"])])
        assert await reme.count_memory(filters={"target_kind": "session"}) == 0
