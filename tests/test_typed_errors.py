"""Failures that used to escape as Python's own exceptions: times at the ends of the calendar in
an export, an export path in the way of its temporary file, a chat completion whose content is
not text. Each is a success or a `ReMeError`, and a failed export writes nothing."""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reme import MemoryNode, ReMe
from reme.config import LLMConfig
from reme.errors import InvalidInputError, LLMError, LLMOutputError, ReMeError
from reme.llm import ChatModel

from openai_server import OpenAITestServer

EDGES = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1, 1, 3)),
    st.datetimes(min_value=datetime(9999, 12, 29), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)),
)
OFFSETS = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(when=EDGES, offset=OFFSETS, field=st.sampled_from(["message_time", "event_start"]))
def test_memories_at_the_ends_of_the_calendar_export_or_fail_typed(
        reme_factory: Callable[..., ReMe], tmp_path_factory: pytest.TempPathFactory, when: datetime,
        offset: timezone, field: str) -> None:
    out = tmp_path_factory.mktemp("out")

    async def run() -> None:
        async with reme_factory(working_dir=out / "wd") as reme:
            node = MemoryNode(memory_type="personal", memory_target="alice", content="Alice was born", tags=["event"],
                              **{field: when.replace(tzinfo=offset)})
            await reme.add_memories([node])
            for name, call in (("md", lambda: reme.export_markdown(out / "md", user_name="alice")),
                               ("jsonl", lambda: reme.export_memory(out / "x.jsonl", user_name="alice")),
                               ("search", lambda: reme.retrieve_memory("born", user_name="alice", rewrite=False))):
                before = files_under(out / "md") if (out / "md").exists() else {}
                try:
                    await call()
                except ReMeError:
                    assert (files_under(out / "md") if (out / "md").exists() else {}) == before, name
                    assert not (out / "x.jsonl").exists(), name
            written = files_under(out / "md")
            assert any("Alice was born" in text.decode() for text in written.values())
            result = await reme.sync_markdown(out / "md", user_name="alice")  # and it reads back as it was
            assert result.applied and result.changes == 0 and not result.blocked

    asyncio.run(run())
    shutil.rmtree(out)  # an example's store (60-70 MB on a RAM disk): a failed one's stays


async def test_an_export_writes_beside_whatever_holds_its_old_temporary_name(reme: ReMe, tmp_path: Path) -> None:
    await reme.add_memory("Alice prefers window seats", user_name="alice")
    out = tmp_path / "out"
    (out / "a.jsonl.tmp").mkdir(parents=True)  # where the temporary file used to go
    (out / "b.jsonl.tmp").write_text("mine")
    assert await reme.export_memory(out / "a.jsonl", user_name="alice") == 1
    assert await reme.export_memory(out / "b.jsonl", user_name="alice") == 1
    assert await reme.backup(out / "c.jsonl") == 1
    assert (out / "a.jsonl.tmp").is_dir() and (out / "b.jsonl.tmp").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl", "a.jsonl.tmp", "b.jsonl", "b.jsonl.tmp", "c.jsonl"]


@pytest.mark.parametrize("where", ["a directory", "under a file", "a missing directory"])
async def test_an_export_that_cannot_be_written_is_invalid_input_and_leaves_nothing(
        reme: ReMe, tmp_path: Path, where: str) -> None:
    await reme.add_memory("Alice prefers window seats", user_name="alice")
    out = tmp_path / "out"
    (out / "dir").mkdir(parents=True)
    (out / "file").write_text("x")
    path = {"a directory": out / "dir", "under a file": out / "file" / "x.jsonl",
            "a missing directory": out / "nowhere" / "x.jsonl"}[where]
    for call in (lambda: reme.export_memory(path, user_name="alice"), lambda: reme.backup(path)):
        with pytest.raises(InvalidInputError):
            await call()
        assert files_under(out) == {"file": b"x"} and sorted(p.name for p in out.iterdir()) == ["dir", "file"]


# -- a chat completion's content ----------------------------------------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=JSON)
def test_a_completion_is_its_text_or_a_malformed_reply(server: OpenAITestServer, content: Any) -> None:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}

    async def run() -> None:
        llm = ChatModel(LLMConfig(base_url=server.base_url, api_key="k", model="m", max_retries=0))
        server.raw_next(json.dumps(body), content_type="application/json")
        try:
            if isinstance(content, str):
                assert await llm.chat([{"role": "user", "content": "hi"}]) == content
            else:
                with pytest.raises(LLMOutputError) as info:
                    await llm.chat([{"role": "user", "content": "hi"}])
                assert "not text" in str(info.value) and info.value.raw == json.dumps(content, ensure_ascii=False)[:2000]
        finally:
            await llm.close()

    asyncio.run(run())


async def test_a_body_that_is_no_chat_completion_stays_an_llm_error(server: OpenAITestServer) -> None:
    llm = ChatModel(LLMConfig(base_url=server.base_url, api_key="k", model="m", max_retries=0))
    server.raw_next('{"choices": []}', content_type="application/json")
    with pytest.raises(LLMError) as info:
        await llm.chat([{"role": "user", "content": "hi"}])
    assert not isinstance(info.value, LLMOutputError)
    await llm.close()
