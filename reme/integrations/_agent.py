"""What the framework adapters share: turning a framework's messages into ReMe's, and the memory
an agent reads and writes, scoped to one user or one task."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any, Awaitable, Sequence, TypeVar

from pydantic import ValidationError

from reme.errors import InvalidInputError
from reme.reme import ReMe
from reme.schema import MemoryNode, Message, ToolCallRecord, Trajectory
from reme.sync import LoopThread

T = TypeVar("T")
S = TypeVar("S", bound="LoopOwned")


class LoopOwned:
    """A ReMe opened on a private event loop, for an adapter a framework calls from any thread or
    loop (LangGraph's store, CrewAI's storage): `run` and `arun` reach it from sync and async code,
    `close()` (or leaving `with`) releases the working directory, and a second close does nothing."""

    reme: ReMe

    def _open_reme(self, owner: str, settings: dict[str, Any]) -> None:
        self._loop = LoopThread(owner)
        try:
            self.reme = self._loop.run(ReMe(**settings).open())
        except BaseException:
            self._loop.stop()
            raise

    def close(self) -> None:
        """Release the store; a second close does nothing."""
        if not self._loop.closed:
            try:
                self._loop.run(self.reme.close())
            finally:
                self._loop.stop()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, work: Awaitable[T]) -> T:
        return self._loop.run(work)

    async def _arun(self, work: Awaitable[T]) -> T:
        return await asyncio.wrap_future(self._loop.submit(work))


def message(msg_id: str, name: str | None, role: str, text: str | None, time: str | None) -> Message | None:
    """A framework message as ReMe's, or None when it has no text (tool calls and results, images).
    A naive timestamp is local time, as both AgentScope versions write them."""
    if not text or not text.strip():
        return None
    when: datetime | None = None
    if time:
        try:
            when = datetime.fromisoformat(time).astimezone()
        except ValueError:
            when = None
    return Message(role=role, name=name, content=text, id=msg_id, time=when)


def tool_call_records(texts: Sequence[str], *, strict: bool) -> list[ToolCallRecord]:
    """Tool-call records given as JSON (an object, or a list of them) with `tool_name`, `input`,
    `output`, `success`, `time_cost`, `token_cost` and `create_time`. A text that is not a record
    is skipped unless `strict`; one that names a tool but is malformed is always an error."""
    records: list[ToolCallRecord] = []
    for text in texts:
        try:
            value = json.loads(text)
        except ValueError:
            if strict:
                raise InvalidInputError(f"not a JSON tool-call record: {text[:200]!r}") from None
            continue
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(i, dict) and "tool_name" in i for i in items):
            if strict:
                raise InvalidInputError(f"a tool-call record needs at least tool_name: {text[:200]!r}")
            continue
        try:
            records.extend(ToolCallRecord.model_validate(i) for i in items)
        except ValidationError as exc:
            raise InvalidInputError(f"invalid tool-call record {text[:200]!r}: {exc}") from None
    return records


class AgentMemory:
    """One agent's long-term memory: a user's personal memories or a task's lessons (name one),
    read and written through the facade. The `ReMe` belongs to the caller, who opens and closes it."""

    def __init__(self, reme: ReMe, *, user_name: str | None = None, task_name: str | None = None,
                 rewrite: bool | None = None) -> None:
        if (user_name is None) == (task_name is None):
            raise InvalidInputError("name one target: user_name or task_name")
        self.reme, self.user_name, self.task_name, self.rewrite = reme, user_name, task_name, rewrite

    async def retrieve(self, query: str, top_k: int, *, rewrite: bool | None = None) -> str:
        """The memories for `query`, as text ready for a prompt ('' when there are none)."""
        if not query.strip():
            return ""
        result = await self.reme.retrieve_memory(query, user_name=self.user_name, task_name=self.task_name, top_k=top_k,
                                                 rewrite=self.rewrite if rewrite is None else rewrite)
        return result.text

    async def search(self, keywords: Sequence[str], limit: int) -> str:
        """One retrieval per keyword (no LLM rewrite: the keywords are the queries), as text."""
        texts = await asyncio.gather(*(self.retrieve(k, limit, rewrite=False) for k in keywords))
        found = [f"Keyword {k!r}:\n{t}" for k, t in zip(keywords, texts) if t]
        return "\n\n".join(found) or f"No memories found for {', '.join(map(repr, keywords))}."

    async def remember(self, contents: Sequence[str], when_to_use: str = "") -> list[MemoryNode]:
        """Store what the agent chose to remember as it is (no LLM call); content already stored
        for this target comes back as the stored memory, not a duplicate."""
        return [await self.reme.add_memory(c, user_name=self.user_name, task_name=self.task_name,
                                           when_to_use=when_to_use) for c in contents]

    async def summarize(self, messages: Sequence[Message], score: float | None = None) -> None:
        """A user's conversation into personal memories; a task's run (with its score) into lessons."""
        if not messages:
            return
        if self.user_name is not None:
            await self.reme.summarize_memory(list(messages), user_name=self.user_name)
        else:
            if score is None:
                raise InvalidInputError("a task's run is summarized with its score (1.0 = success)")
            await self.reme.summarize_memory(trajectories=[Trajectory(messages=list(messages), score=score)],
                                             task_name=self.task_name)
