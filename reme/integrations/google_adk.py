"""Google ADK: `ReMeMemoryService`, a `BaseMemoryService` over ReMe's personal memory, one user's
per app (extra `google-adk`).

>>> runner = Runner(agent=agent, app_name="travel", session_service=sessions,
...                 memory_service=ReMeMemoryService(reme))
>>> await runner.memory_service.add_session_to_memory(session)   # after a conversation
>>> # the agent's `load_memory` / `preload_memory` tools then call search_memory

The scope is ADK's own: `app_name` and `user_id` name one ReMe user, `"{app_name}/{user_id}"`
(an app name holds no "/"), so two apps or two users never see each other's memories.
`add_session_to_memory` and `add_events_to_memory` summarize the events' text into personal
memories (ReMe's extraction and reconciliation: adding a session again updates rather than
duplicates), `add_memory` stores entries as they are, `search_memory` is `retrieve_memory` (each
`MemoryEntry` a memory: its text, id, author, the time it happened, its score in
`custom_metadata`), `delete_memory` deletes one by id.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from reme.errors import InvalidInputError
from reme.reme import ReMe
from reme.schema import Message, RetrievedMemory


def user_name(app_name: str, user_id: str) -> str:
    """The ReMe user behind ADK's (app_name, user_id)."""
    if not isinstance(app_name, str) or not app_name or "/" in app_name:
        raise InvalidInputError(f"app_name must be a non-empty name without '/', not {app_name!r}")
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInputError("user_id must be a non-empty string")
    return f"{app_name}/{user_id}"


def _text(content: types.Content | None) -> str:
    return "\n".join(p.text for p in (content.parts or []) if p.text and not p.thought) if content else ""


def _message(event: Event) -> Message | None:
    text = _text(event.content).strip()
    if not text:
        return None  # function calls and responses, empty turns
    return Message(role="user" if event.author == "user" else "assistant", name=event.author or None, content=text,
                   id=event.id or None, time=datetime.fromtimestamp(event.timestamp, timezone.utc))


def _entry(found: RetrievedMemory) -> MemoryEntry:
    node = found.node
    return MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=node.content)]), id=node.memory_id,
                       author=node.author or None, timestamp=node.message_time.isoformat(),
                       custom_metadata={"score": found.score, "tags": list(node.tags)})


class ReMeMemoryService(BaseMemoryService):  # type: ignore[misc, unused-ignore]  # Any without google-adk
    """ADK's memory service over ReMe. The `ReMe` belongs to the caller, who opens and closes it."""

    def __init__(self, reme: ReMe, *, top_k: int = 5, rewrite: bool | None = None) -> None:
        self.reme, self.top_k, self.rewrite = reme, top_k, rewrite

    async def add_session_to_memory(self, session: Session) -> None:
        await self.add_events_to_memory(app_name=session.app_name, user_id=session.user_id, events=session.events,
                                        session_id=session.id)

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence[Event],
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        name = user_name(app_name, user_id)
        messages = [m for m in map(_message, events) if m is not None]
        if messages:
            await self.reme.summarize_memory(messages, user_name=name)

    async def add_memory(self, *, app_name: str, user_id: str, memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:
        name = user_name(app_name, user_id)
        for entry in memories:
            text = _text(entry.content).strip()
            if not text:
                raise InvalidInputError("a memory entry needs text content")
            extra: dict[str, Any] = {}
            if entry.timestamp:
                try:
                    extra["message_time"] = datetime.fromisoformat(entry.timestamp).astimezone(timezone.utc)
                except ValueError:
                    raise InvalidInputError(f"timestamp must be ISO 8601, not {entry.timestamp!r}") from None
            await self.reme.add_memory(text, user_name=name, author=entry.author or "",
                                       metadata=dict(entry.custom_metadata), **extra)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        name = user_name(app_name, user_id)
        if not query.strip():
            return SearchMemoryResponse()
        result = await self.reme.retrieve_memory(query, user_name=name, top_k=self.top_k, rewrite=self.rewrite)
        return SearchMemoryResponse(memories=[_entry(m) for m in result.memories])

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Delete one memory of this user (`MemoryNotFoundError` when it is not theirs or not there)."""
        name = user_name(app_name, user_id)
        if memory_id:
            await self.reme.delete_memory(memory_id, user_name=name)
