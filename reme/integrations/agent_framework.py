"""Microsoft Agent Framework: `ReMeHistoryProvider`, a `HistoryProvider` whose history is a ReMe
session, and `ReMeContextProvider`, a `ContextProvider` over a user's long-term memory (extra
`agent-framework`).

>>> agent = Agent(client=client, context_providers=[ReMeHistoryProvider(reme),
...                                                 ReMeContextProvider(reme, user_name="alice")])
>>> session = agent.create_session(session_id="alice-1")
>>> await agent.run("I moved to Berlin", session=session)

`ReMeHistoryProvider` keeps a session's messages (`save_messages`) in order in the ReMe session
named by the framework's `session_id`, each as the framework serializes it (`Message.to_dict`)
beside its text, which ReMe's context management reads; `get_messages` gives them back as
`Message`s. It stores what is new the way the framework's own `InMemoryHistoryProvider` does
(`filter_new_messages`: a replayed transcript is not stored twice), tested against it. With
`compact=True`, `get_messages` runs ReMe's `prepare_context` first: past `threshold` tokens the
older messages are summarized into the session's summary (given back first, as a user message);
with `user_name`, what was compacted is also summarized into the user's long-term memory.

`ReMeContextProvider` retrieves the user's memories for the new input before a run (one
instruction, `HEADER` then the memories) and summarizes the run's input and response into them
after it (one extraction call per run).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from agent_framework import AgentSession, ContextProvider, HistoryProvider, Message, SessionContext
from agent_framework._sessions import filter_new_messages

from reme.errors import InvalidInputError
from reme.integrations._agent import AgentMemory
from reme.reme import ReMe
from reme.schema import Message as ReMeMessage

KEY = "agent_framework"
"""The key under which a stored message holds the framework's serialized `Message`."""
HEADER = "What you remember about the user (most relevant first):"
COMPRESSED = "compressed"


def _session_name(session_id: str | None) -> str:
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInputError("ReMe keeps a history per session: run the agent with a session (session_id)")
    return session_id


def to_stored(message: Message) -> dict[str, Any]:
    return {"role": str(message.role), "content": message.text or None, KEY: message.to_dict()}


def from_stored(stored: Mapping[str, Any]) -> Message:
    """A stored message as the framework's; the summary (a plain message) as a user message."""
    framework = stored.get(KEY)
    if isinstance(framework, Mapping):
        return Message.from_dict(dict(framework))
    return Message(str(stored.get("role") or "user"), [str(stored.get("content") or "")])


class ReMeHistoryProvider(HistoryProvider):  # type: ignore[misc, unused-ignore]  # Any without agent-framework
    """A session's conversation kept in ReMe. The `ReMe` belongs to the caller, who opens and
    closes it; the flags (`load_messages`, `store_inputs`, ...) are the framework's."""

    DEFAULT_SOURCE_ID = "reme_history"

    def __init__(self, reme: ReMe, *, source_id: str | None = None, compact: bool = False,
                 threshold: int | None = None, reserve: int | None = None, user_name: str | None = None,
                 **flags: Any) -> None:
        super().__init__(source_id or self.DEFAULT_SOURCE_ID, **flags)
        self.reme, self.compact, self.threshold, self.reserve, self.user_name = \
            reme, compact, threshold, reserve, user_name

    async def get_messages(self, session_id: str | None, *, state: dict[str, Any] | None = None,
                           **kwargs: Any) -> list[Message]:
        name = _session_name(session_id)
        if self.compact:
            context = await self.reme.prepare_context(session_name=name, threshold=self.threshold,
                                                      reserve=self.reserve, user_name=self.user_name)
            return [from_stored(m) for m in context.messages]
        stored = await self.reme.get_messages(session_name=name, exclude_mark=COMPRESSED, prepend_summary=True)
        return [from_stored(m.message) for m in stored]

    async def save_messages(self, session_id: str | None, messages: Sequence[Message], *,
                            state: dict[str, Any] | None = None, **kwargs: Any) -> None:
        name = _session_name(session_id)
        if not messages:
            return
        existing = [from_stored(m.message) for m in await self.reme.get_messages(session_name=name)]
        new = filter_new_messages(existing, list(messages))
        if new:
            await self.reme.add_messages([to_stored(m) for m in new], session_name=name)


class ReMeContextProvider(ContextProvider):  # type: ignore[misc, unused-ignore]  # Any without agent-framework
    """One user's long-term memory around each run: retrieved before, summarized after."""

    DEFAULT_SOURCE_ID = "reme_memory"

    def __init__(self, reme: ReMe, *, user_name: str, top_k: int = 5, source_id: str | None = None,
                 rewrite: bool | None = None, summarize: bool = True) -> None:
        super().__init__(source_id or self.DEFAULT_SOURCE_ID)
        self.memory = AgentMemory(reme, user_name=user_name, rewrite=rewrite)
        self.top_k, self.summarize = top_k, summarize

    async def before_run(self, *, agent: Any, session: AgentSession, context: SessionContext,
                         state: dict[str, Any]) -> None:
        query = "\n".join(m.text for m in context.input_messages if m.role == "user" and m.text)
        found = await self.memory.retrieve(query, self.top_k)
        if found:
            context.extend_instructions(self.source_id, f"{HEADER}\n{found}")

    async def after_run(self, *, agent: Any, session: AgentSession, context: SessionContext,
                        state: dict[str, Any]) -> None:
        if not self.summarize:
            return
        said = [*context.input_messages, *(context.response.messages if context.response else [])]
        messages = [ReMeMessage(role=str(m.role), content=m.text, name=m.author_name)
                    for m in said if m.text and str(m.role) in ("user", "assistant")]
        await self.memory.summarize(messages)
