"""ReMe as AgentScope 1.x memory (`pip install 'reme-memory[agentscope1]'`): short-term memory as a
`MemoryBase` (`ReMeSessionMemory`, a ReMe session), and long-term memory as below.

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


# -- short-term memory: a ReMe session as AgentScope 1.x `MemoryBase` ------------------------------
class ReMeSessionMemory(MemoryBase):  # type: ignore[misc]  # agentscope is untyped
    """A ReMe session as an agent's short-term memory: `ReActAgent(memory=ReMeSessionMemory(reme,
    "chat-42"))`. Messages, marks and the compressed summary live in the store (they survive a
    restart and are shared by every process serving the session); AgentScope's `Msg` ids are kept
    in each message. The agent's saved state holds the session's name, not a copy of its messages.
    """

    def __init__(self, reme: ReMe, session_name: str) -> None:
        super().__init__()
        self.reme, self.session_name = reme, session_name
        self.register_state("session_name")

    async def _stored(self) -> list[Any]:
        return await self.reme.get_messages(session_name=self.session_name)

    async def _node_ids(self, msg_ids: Sequence[str] | None, mark: str | None = None) -> list[str]:
        wanted = None if msg_ids is None else set(msg_ids)
        return [m.id for m in await self._stored()
                if (wanted is None or m.message.get("id") in wanted) and (mark is None or mark in m.marks)]

    async def add(self, memories: Msg | list[Msg] | None, marks: str | list[str] | None = None,
                  allow_duplicates: bool = False, **kwargs: Any) -> None:
        msgs = _as_list(memories)
        if not allow_duplicates:
            held = {m.message.get("id") for m in await self._stored()}
            msgs = [m for m in msgs if m.id not in held]
        if msgs:
            await self.reme.add_messages([m.to_dict() for m in msgs], session_name=self.session_name, marks=marks)

    async def delete(self, msg_ids: list[str], **kwargs: Any) -> int:
        ids = await self._node_ids(msg_ids)
        return await self.reme.delete_messages(ids, session_name=self.session_name) if ids else 0

    async def delete_by_mark(self, mark: str | list[str], *args: Any, **kwargs: Any) -> int:
        return await self.reme.delete_messages_by_mark(mark, session_name=self.session_name)

    async def size(self) -> int:
        return (await self.reme.session_size(session_name=self.session_name)).messages

    async def clear(self) -> None:
        await self.reme.clear_session(session_name=self.session_name)

    async def get_memory(self, mark: str | None = None, exclude_mark: str | None = None,
                         prepend_summary: bool = True, **kwargs: Any) -> list[Msg]:
        got = await self.reme.get_messages(session_name=self.session_name, mark=mark, exclude_mark=exclude_mark,
                                           prepend_summary=prepend_summary)
        out = []
        for m in got:
            text = m.message.get("content")
            if "id" not in m.message and isinstance(text, str) and text.startswith(SUMMARY_PREFIX):
                out.append(Msg("user", text[len(SUMMARY_PREFIX):], "user"))  # as InMemoryMemory shows it
            else:
                out.append(Msg.from_dict(m.message))
        return out

    async def update_compressed_summary(self, summary: str) -> None:
        await self.reme.update_compressed_summary(summary, session_name=self.session_name)
        self._compressed_summary = summary

    async def update_messages_mark(self, new_mark: str | None, old_mark: str | None = None,
                                   msg_ids: list[str] | None = None) -> int:
        ids = await self._node_ids(msg_ids, old_mark)
        if not ids or (new_mark is None and old_mark is None):
            return 0
        return await self.reme.update_marks(session_name=self.session_name, ids=ids, add=new_mark, remove=old_mark)
