"""ReMe as AgentScope 1.x memory (`pip install 'reme-memory[agentscope1]'`).

`ReMeSessionMemory(reme, session_name)`, an `agentscope.memory.MemoryBase` for
`ReActAgent(memory=...)`: the agent's short-term memory kept as a ReMe session (persistent, marks,
compressed summary; see `ReMeSessionMemory`).

Three `agentscope.memory.LongTermMemoryBase` classes for `ReActAgent(long_term_memory=...)`, in any
`long_term_memory_mode`:

- `ReMePersonalMemory(reme, user_name)`: what the user said, summarized into personal memories;
- `ReMeTaskMemory(reme, task_name)`: runs of a task, scored, distilled into lessons;
- `ReMeToolMemory(reme, tool_names)`: tool-call records, summarized into a guideline per tool.

In `static_control` mode the agent hands `record` its whole short-term memory after every reply:
each message is recorded once (by its id, kept in the memory's state) and the `long_term_memory`
message the agent injected is never recorded. Failures raise (`reme.ReMeError`), so a reply whose
memory could not be written fails instead of forgetting silently.
"""

from __future__ import annotations

from typing import Any, Sequence

from agentscope.memory import LongTermMemoryBase, MemoryBase
from agentscope.message import Msg, TextBlock
from agentscope.tool import ToolResponse

from reme.integrations._agent import AgentMemory, message, tool_call_records
from reme.memory.session import SUMMARY_PREFIX
from reme.reme import ReMe
from reme.schema import Message
from reme.working import CompactedContext, SessionMessage

__all__ = ["ReMePersonalMemory", "ReMeSessionMemory", "ReMeTaskMemory", "ReMeToolMemory"]

INJECTED = "long_term_memory"  # the name ReActAgent gives the message holding retrieved memories


def _text(text: str) -> ToolResponse:
    return ToolResponse(content=[TextBlock(type="text", text=text)])


def _as_list(msgs: Msg | Sequence[Msg | None] | None) -> list[Msg]:
    if msgs is None:
        return []
    return [msgs] if isinstance(msgs, Msg) else [m for m in msgs if m is not None]


def _query(msg: Msg | list[Msg] | None) -> str:
    return "\n".join(m.get_text_content() or "" for m in _as_list(msg)).strip()


class _ReMeLongTermMemory(LongTermMemoryBase):  # type: ignore[misc]  # agentscope is untyped
    """Keeps the ids of the messages already recorded (saved with the agent's state)."""

    def __init__(self) -> None:
        super().__init__()
        self.recorded_ids: list[str] = []
        self.register_state("recorded_ids")

    def _unrecorded(self, msgs: Sequence[Msg | None]) -> list[Msg]:
        """The messages not recorded yet, each once (AgentScope before 1.0.21 hands over the input and
        the reply twice: on their own and in the short-term memory), never the injected one."""
        seen, new = set(self.recorded_ids), []
        for m in _as_list(msgs):
            if m.id not in seen and m.name != INJECTED:
                seen.add(m.id)
                new.append(m)
        return new

    def _mark(self, msgs: list[Msg]) -> None:
        self.recorded_ids.extend(m.id for m in msgs)

    @staticmethod
    def _messages(msgs: list[Msg]) -> list[Message]:
        converted = (message(m.id, m.name, m.role, m.get_text_content(), m.timestamp) for m in msgs)
        return [m for m in converted if m is not None]


class _AgentLongTermMemory(_ReMeLongTermMemory):
    """A user's or a task's memory: `retrieve` returns the memories relevant to the message."""

    memory: AgentMemory

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        return await self.memory.retrieve(_query(msg), limit)


class ReMePersonalMemory(_AgentLongTermMemory):
    """A user's personal memories. `record` summarizes the new messages (ReMe's personal summarizer:
    one or two LLM calls); `retrieve` returns the memories relevant to the message, ready for the
    prompt. The `ReMe` belongs to the caller (`async with ReMe(...) as reme:`)."""

    def __init__(self, reme: ReMe, user_name: str, *, rewrite: bool | None = None) -> None:
        super().__init__()
        self.memory = AgentMemory(reme, user_name=user_name, rewrite=rewrite)

    async def record(self, msgs: list[Msg | None], **kwargs: Any) -> None:
        new = self._unrecorded(msgs)
        await self.memory.summarize(self._messages(new))
        self._mark(new)

    async def record_to_memory(self, thinking: str, content: list[str], **kwargs: Any) -> ToolResponse:
        """Record facts about the user worth remembering in later conversations: preferences, plans,
        people, places, dates. Each fact should be specific and self-contained.

        Args:
            thinking (`str`):
                Why these facts are worth remembering.
            content (`list[str]`):
                The facts to remember, one per string, e.g. "Alice prefers window seats".
        """
        nodes = await self.memory.remember(content)
        return _text(f"Remembered {len(nodes)} fact(s).")

    async def retrieve_from_memory(self, keywords: list[str], limit: int = 5, **kwargs: Any) -> ToolResponse:
        """Search what is remembered about the user.

        Args:
            keywords (`list[str]`):
                What to search for, each specific, e.g. a person's name, a place, a topic.
            limit (`int`, optional):
                The most memories to return per keyword. Defaults to 5.
        """
        return _text(await self.memory.search(keywords, limit))


class ReMeTaskMemory(_AgentLongTermMemory):
    """A task's lessons. A lesson needs the run's outcome, so `record` collects the new messages and
    summarizes them once it is given the run's `score` (1.0 = success, lower = failure):
    `await task_memory.record(await agent.memory.get_memory(), score=1.0)` after the run; the
    agent's own scoreless calls in static mode only collect. `retrieve` returns the lessons for the
    task at hand."""

    def __init__(self, reme: ReMe, task_name: str, *, rewrite: bool | None = None) -> None:
        super().__init__()
        self.memory = AgentMemory(reme, task_name=task_name, rewrite=rewrite)
        self.pending: list[dict[str, Any]] = []  # the run so far, as ReMe messages (JSON)
        self.register_state("pending")

    async def record(self, msgs: list[Msg | None], score: float | None = None, **kwargs: Any) -> None:
        new = self._unrecorded(msgs)
        self.pending.extend(m.model_dump(mode="json") for m in self._messages(new))
        self._mark(new)
        if score is not None and self.pending:
            await self.memory.summarize([Message.model_validate(m) for m in self.pending], score)
            self.pending = []

    async def record_to_memory(self, thinking: str, content: list[str], **kwargs: Any) -> ToolResponse:
        """Record lessons learned while doing this task, to do better in later runs of similar tasks.

        Args:
            thinking (`str`):
                The situation in which the lessons apply, phrased like a future task, e.g. "When
                rating songs in a Spotify library".
            content (`list[str]`):
                The lessons, each an actionable instruction, e.g. "Log in with spotify.login before
                calling spotify.review_song".
        """
        nodes = await self.memory.remember(content, when_to_use=thinking)
        return _text(f"Remembered {len(nodes)} lesson(s).")

    async def retrieve_from_memory(self, keywords: list[str], limit: int = 5, **kwargs: Any) -> ToolResponse:
        """Search lessons from earlier runs of similar tasks.

        Args:
            keywords (`list[str]`):
                What to search for, e.g. the task, an API, an error message.
            limit (`int`, optional):
                The most lessons to return per keyword. Defaults to 5.
        """
        return _text(await self.memory.search(keywords, limit))


class ReMeToolMemory(_ReMeLongTermMemory):
    """Usage guidelines per tool, written from tool-call records: JSON objects (or lists of them)
    with `tool_name`, `input`, `output`, `success`, `time_cost`, `token_cost` and `create_time`.
    `record` summarizes the records among the new messages' texts (other messages are not records
    and are passed over; a text naming a tool but malformed raises); `retrieve` returns the
    guidelines of `tool_names`, or without them of the comma-separated names in the message."""

    def __init__(self, reme: ReMe, tool_names: Sequence[str] | None = None) -> None:
        super().__init__()
        self.reme = reme
        self.tool_names = list(tool_names or [])

    async def _summarize(self, texts: list[str], *, strict: bool) -> int:
        records = tool_call_records(texts, strict=strict)
        if records:
            await self.reme.summarize_memory(tool_calls=records)
        return len(records)

    async def _guidelines(self, names: list[str]) -> str:
        names = [n.strip() for n in names if n.strip()]
        return (await self.reme.retrieve_memory(tool_name=names)).text if names else ""

    async def record(self, msgs: list[Msg | None], **kwargs: Any) -> None:
        new = self._unrecorded(msgs)
        await self._summarize([m.content for m in self._messages(new)], strict=False)
        self._mark(new)

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        return await self._guidelines(self.tool_names or _query(msg).split(","))

    async def record_to_memory(self, thinking: str, content: list[str], **kwargs: Any) -> ToolResponse:
        """Record tool executions, so that usage guidelines are learned from them.

        Args:
            thinking (`str`):
                What these executions show: what worked, what failed and why.
            content (`list[str]`):
                One JSON object per execution, with the fields create_time ("YYYY-MM-DD HH:MM:SS"),
                tool_name, input (an object of the parameters), output (text), token_cost
                (integer), success (boolean) and time_cost (seconds), e.g. '{"create_time":
                "2024-01-01 10:00:00", "tool_name": "search", "input": {"query": "Python"},
                "output": "Found 10 results", "token_cost": 100, "success": true, "time_cost": 1.2}'.
        """
        count = await self._summarize(content, strict=True)
        return _text(f"Recorded {count} tool execution(s); the guidelines are updated.")

    async def retrieve_from_memory(self, keywords: list[str], limit: int = 5, **kwargs: Any) -> ToolResponse:
        """Get the usage guidelines learned for tools, before using one you are unsure about.

        Args:
            keywords (`list[str]`):
                The exact tool names, e.g. ["web_search"].
            limit (`int`, optional):
                Unused: each tool has one guideline. Defaults to 5.
        """
        return _text(await self._guidelines(keywords) or f"No guidelines yet for {', '.join(keywords)}.")


def _msg(stored: SessionMessage) -> Msg:
    """A session message as the `Msg` it was added as; the compressed summary ReMe prepends as
    `InMemoryMemory` shows it (a user `Msg` holding the summary alone)."""
    data = stored.message
    if "name" in data and "id" in data:
        return Msg.from_dict(data)
    text = data.get("content")
    if isinstance(text, str) and text.startswith(SUMMARY_PREFIX):
        text = text[len(SUMMARY_PREFIX):]
    return Msg(name=str(data.get("name") or data.get("role") or "user"), content=text or "",
               role=data.get("role") if data.get("role") in ("user", "assistant", "system") else "user")


class ReMeSessionMemory(MemoryBase):  # type: ignore[misc]  # agentscope is untyped
    """An AgentScope 1.x agent's short-term memory kept in ReMe as the session `session_name`:
    every call is one facade call (`add_messages`, `get_messages`, `update_marks`, ...), every
    write durable when it returns, so an agent made again with the same session name (another
    process, after a crash) goes on where it was.

    >>> agent = ReActAgent(..., memory=ReMeSessionMemory(reme, "chat-42"))

    Marks, `delete_by_mark`, `update_messages_mark` and the compressed summary behave as in
    `InMemoryMemory` (the same calls give the same answers), so `ReActAgent`'s hint messages and its
    own compression (`compression_config`) work unchanged. `state_dict()` holds the session's name (the messages are in ReMe already);
    `export_state()` / `import_state()` give and take `InMemoryMemory`'s state (to move a
    conversation between the two). The `ReMe` belongs to the caller."""

    def __init__(self, reme: ReMe, session_name: str) -> None:
        super().__init__()
        self.reme, self.session_name = reme, session_name

    async def add(self, memories: Msg | list[Msg] | None, marks: str | list[str] | None = None,
                  allow_duplicates: bool = False, **kwargs: Any) -> None:
        msgs = _as_list(memories)
        if not allow_duplicates and msgs:  # looked up by their ids, not by reading the session
            held = await self.reme.get_messages(session_name=self.session_name, message_ids=[m.id for m in msgs])
            stored = {m.message.get("id") for m in held}
            msgs = [m for m in msgs if m.id not in stored]
        if msgs:
            await self.reme.add_messages([m.to_dict() for m in msgs], session_name=self.session_name, marks=marks)

    async def _ids(self, msg_ids: Sequence[str] | None = None, mark: str | None = None) -> list[str]:
        """The session's ids of the messages with AgentScope ids `msg_ids` (all when None) and `mark`:
        by id (the first copy of each), or through the marks' index."""
        if msg_ids is not None and not msg_ids:
            return []
        return [m.id for m in await self.reme.get_messages(session_name=self.session_name, mark=mark,
                                                           message_ids=None if msg_ids is None else list(msg_ids))]

    async def delete(self, msg_ids: list[str], **kwargs: Any) -> int:
        ids = await self._ids(msg_ids)
        return await self.reme.delete_messages(ids, session_name=self.session_name) if ids else 0

    async def delete_by_mark(self, mark: str | list[str], **kwargs: Any) -> int:
        return await self.reme.delete_messages_by_mark(mark, session_name=self.session_name)

    async def get_memory(self, mark: str | None = None, exclude_mark: str | None = None,
                         prepend_summary: bool = True, **kwargs: Any) -> list[Msg]:
        got = await self.reme.get_messages(session_name=self.session_name, mark=mark, exclude_mark=exclude_mark,
                                           prepend_summary=prepend_summary)
        return [_msg(m) for m in got]

    async def update_messages_mark(self, new_mark: str | None, old_mark: str | None = None,
                                   msg_ids: list[str] | None = None) -> int:
        if new_mark is None and old_mark is None:
            return 0
        ids = await self._ids(msg_ids, old_mark)
        if not ids:
            return 0
        return await self.reme.update_marks(session_name=self.session_name, ids=ids, add=new_mark, remove=old_mark)

    async def update_compressed_summary(self, summary: str) -> None:
        await self.reme.update_compressed_summary(summary, session_name=self.session_name)

    async def size(self) -> int:
        return (await self.reme.session_size(session_name=self.session_name)).messages

    async def clear(self) -> None:
        await self.reme.clear_session(session_name=self.session_name)

    async def compact(self, threshold: int | None = None, reserve: int | None = None) -> CompactedContext:
        """ReMe's compaction of the session (`reme.prepare_context`): oversized tool results
        offloaded, older messages summarized into the compressed summary and marked `compressed`,
        as `ReActAgent`'s own compression marks them."""
        return await self.reme.prepare_context(session_name=self.session_name, threshold=threshold, reserve=reserve)

    async def pre_reasoning_hook(self, agent: Any, kwargs: dict[str, Any]) -> None:
        """`compact()` before each model call, as a `ReActAgent` hook:
        `agent.register_instance_hook("pre_reasoning", "reme", memory.pre_reasoning_hook)`. The agent
        leaves compressed messages out of its prompt when its `compression_config` is enabled."""
        await self.compact()

    def state_dict(self) -> dict[str, Any]:
        return {"session_name": self.session_name}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        name = state_dict.get("session_name")
        if isinstance(name, str):
            self.session_name = name
        elif strict:
            raise KeyError("the state_dict of a ReMeSessionMemory holds its session_name")

    async def export_state(self) -> dict[str, Any]:
        """The session as `InMemoryMemory.state_dict()` has it (`content`: [message, marks] pairs,
        `_compressed_summary`)."""
        return await self.reme.session_state(session_name=self.session_name)

    async def import_state(self, state: dict[str, Any]) -> int:
        """Replace the session with an `InMemoryMemory` state (or an `export_state()`), in one
        write; returns how many messages it holds now."""
        return await self.reme.load_session_state(state, session_name=self.session_name)
