"""OpenAI Agents SDK: `ReMeSession`, the SDK's `Session` protocol over a ReMe session, and
`memory_tools`, a user's long-term memory as two function tools (extra `openai-agents`).

>>> session = ReMeSession("chat-42", reme, compact=True, user_name="alice")
>>> agent = Agent(name="Assistant", tools=memory_tools(reme, user_name="alice"))
>>> result = await Runner.run(agent, "I moved to Berlin", session=session)

`ReMeSession` keeps the items the runner adds (`add_items`) in order in the ReMe session named
by the SDK's `session_id`, persistent and crash-atomic like every ReMe write; `get_items(limit)`,
`pop_item` and `clear_session` answer as the SDK's own `SQLiteSession` (tested op for op).
An item the SDK writes without a role is kept whole beside the chat form ReMe reads (a
`function_call` as an assistant turn with `tool_calls`, its `function_call_output` as a tool
message), so context management sees tool calls and their results.

With `compact=True`, `get_items` (which the runner calls before each run) and `run_compaction`
(which makes the session compaction-aware) run ReMe's `prepare_context`: when the session takes
more than `threshold` tokens its older items are summarized into the session's summary (which
`get_items` then returns first, as a user message) and big tool results move to the store; with
`user_name`, what was compacted is also summarized into that user's long-term memory.
"""

from __future__ import annotations

from typing import Any, Mapping

from agents import FunctionTool, function_tool
from agents.memory import SessionSettings
from agents.memory.session_settings import resolve_session_limit

from reme.errors import InvalidInputError
from reme.integrations._agent import AgentMemory
from reme.reme import ReMe

ITEM = "openai_agents_item"
"""The key under which a message holds the SDK item it stands for (items without a role)."""
COMPRESSED = "compressed"


def to_message(given: Any) -> dict[str, Any]:
    """An SDK input item as the message ReMe's session stores."""
    if not isinstance(given, Mapping):
        raise InvalidInputError(f"a session item is a dict (an SDK input item), not {type(given).__name__}")
    item: dict[str, Any] = dict(given)
    if isinstance(item.get("role"), str) and item["role"].strip():
        return item  # a message: ReMe keeps every key
    kind = item.get("type")
    if kind == "function_call":
        call = {"id": item.get("call_id"), "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
        return {"role": "assistant", "content": None, "tool_calls": [call], ITEM: item}
    if kind == "function_call_output" and isinstance(item.get("output"), str):
        # The output is the message's content, so compaction can offload a big one.
        return {"role": "tool", "tool_call_id": item.get("call_id"), "content": item["output"],
                ITEM: {k: v for k, v in item.items() if k != "output"}}
    return {"role": "assistant", "content": None, ITEM: item}  # reasoning, hosted tool calls...: kept as they are


def to_item(message: Mapping[str, Any]) -> dict[str, Any]:
    """A stored message as the SDK item it was added as."""
    stored = message.get(ITEM)
    if not isinstance(stored, Mapping):
        return dict(message)
    item = dict(stored)
    if message.get("role") == "tool" and "output" not in item:
        item["output"] = message.get("content")
    return item


class ReMeSession:
    """The Agents SDK's `Session` protocol over the ReMe session named `session_id`. The `ReMe`
    belongs to the caller, who opens and closes it."""

    def __init__(self, session_id: str, reme: ReMe, *, compact: bool = False, threshold: int | None = None,
                 reserve: int | None = None, user_name: str | None = None,
                 session_settings: SessionSettings | None = None) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("a session needs its session_id")
        self.session_id, self.reme, self.compact = session_id, reme, compact
        self.threshold, self.reserve, self.user_name = threshold, reserve, user_name
        self.session_settings = session_settings or SessionSettings()

    async def _messages(self) -> list[dict[str, Any]]:
        if self.compact:
            return (await self.reme.prepare_context(session_name=self.session_id, threshold=self.threshold,
                                                    reserve=self.reserve, user_name=self.user_name)).messages
        return [m.message for m in await self.reme.get_messages(session_name=self.session_id,
                                                                exclude_mark=COMPRESSED, prepend_summary=True)]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items in order (its summary first, when compaction wrote one); with a
        `limit` (or `session_settings.limit`), the latest that many; 0 gives none, a negative one all."""
        limit = resolve_session_limit(limit, self.session_settings)
        items = [to_item(m) for m in await self._messages()]
        if limit is None or limit < 0:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        if items:
            await self.reme.add_messages([to_message(i) for i in items], session_name=self.session_id)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item not yet compacted (None when there is none)."""
        messages = await self.reme.get_messages(session_name=self.session_id, exclude_mark=COMPRESSED)
        if not messages:
            return None
        await self.reme.delete_messages([messages[-1].id], session_name=self.session_id)
        return to_item(messages[-1].message)

    async def clear_session(self) -> None:
        """Delete the session's items, summary and offloaded tool results."""
        await self.reme.clear_session(session_name=self.session_id)

    async def run_compaction(self, args: Mapping[str, Any] | None = None) -> None:
        """With `compact=True`, compact the session now when it takes more than `threshold`
        tokens (the runner calls this after each turn of a Responses API model); without it, do
        nothing. `args`, the Responses API's compaction arguments, are not needed: ReMe
        summarizes with its own LLM."""
        if not self.compact:
            return
        await self.reme.prepare_context(session_name=self.session_id, threshold=self.threshold,
                                        reserve=self.reserve, user_name=self.user_name)


def memory_tools(reme: ReMe, *, user_name: str, limit: int = 5) -> list[FunctionTool]:
    """Two tools over `user_name`'s long-term memory: `save_memory(facts)` stores what the agent
    chose to remember as it is, `search_memory(keywords)` finds memories for each keyword."""
    memory = AgentMemory(reme, user_name=user_name)

    async def save_memory(facts: list[str]) -> str:
        """Save lasting facts about the user (preferences, plans, personal details), one per item."""
        stored = await memory.remember(facts)
        return f"Saved {len(stored)} memories."

    async def search_memory(keywords: list[str]) -> str:
        """Search what you remember about the user, one query per keyword."""
        return await memory.search(keywords, limit)

    return [function_tool(save_memory), function_tool(search_memory)]

