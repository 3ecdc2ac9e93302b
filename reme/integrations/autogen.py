"""AutoGen: `ReMeMemory`, a `Memory` component over ReMe's personal memory (extra `autogen`).

>>> memory = ReMeMemory("alice", llm={"model": "gpt-4o-mini"})       # or ReMeMemory("alice", reme=engine)
>>> agent = AssistantAgent("assistant", model_client=client, memory=[memory])
>>> result = await agent.run(task="I moved to Berlin last week")
>>> await memory.record(result)          # AssistantAgent never calls add(): summarize the run yourself

Before each model call `AssistantAgent` calls `update_context`, which retrieves the user's
memories for the last user message (`ReMe.retrieve_memory`) and adds them as one system message.
`record` summarizes a finished conversation into personal memories (`ReMe.summarize_memory`),
so the agent remembers what the user said in earlier runs.
"""

from __future__ import annotations

import json
from typing import Any, Sequence, TypeAlias

from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage
from autogen_core import CancellationToken, Component
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from pydantic import BaseModel, Field
from typing_extensions import Self

from reme.errors import InvalidInputError
from reme.reme import ReMe
from reme.schema import Message, RetrieveResult, SummaryResult

SECRETS = {"llm": {"api_key"}, "embedding": {"api_key"}, "vector_store": {"api_key"}}
"""Never dumped: a loaded memory takes its keys from the environment (OPENAI_API_KEY, REME_*)."""
HEADER = "What you remember about the user (most relevant first):"
Conversation: TypeAlias = TaskResult | Sequence[BaseChatMessage | BaseAgentEvent | LLMMessage]


class ReMeMemoryConfig(BaseModel):
    """What `dump_component` writes: the user, the retrieval size and ReMe's settings, no keys."""

    user_name: str
    top_k: int = 5
    settings: dict[str, Any] = Field(default_factory=dict)


class ReMeMemory(Memory, Component[ReMeMemoryConfig]):  # type: ignore[misc, unused-ignore]  # Any where autogen is not installed
    """The personal memory of one user, for `AssistantAgent(memory=[...])`.

    Args:
        user_name: whose memories these are (ReMe's `user_name`); `clear()` deletes only theirs.
        top_k: how many memories `update_context` and `query` return.
        reme: an engine to share (several users' memories in one store); the caller opens and
            closes it. Without it the memory makes its own from `settings` (ReMe's keyword
            settings: `working_dir`, `llm`, `embedding`, ...), opens it on first use and closes
            it in `close()`.
    """

    component_type = "memory"
    component_provider_override = "reme.integrations.autogen.ReMeMemory"
    component_config_schema = ReMeMemoryConfig

    def __init__(self, user_name: str, *, top_k: int = 5, reme: ReMe | None = None, **settings: Any) -> None:
        if reme is not None and settings:
            raise InvalidInputError("pass either an engine (reme=) or its settings, not both")
        self.user_name = user_name
        self.top_k = top_k
        self._owns = reme is None
        self.reme = reme if reme is not None else ReMe(**settings)

    async def _engine(self) -> ReMe:
        return await self.reme.open()  # opened on first use; racing first calls share one opening

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add one system message of the memories relevant to the last user message (none when
        nothing relevant is stored) and return them."""
        query = last_user_text(await model_context.get_messages())
        if not query:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        found = await self._retrieve(query, self.top_k)
        if found.memories:
            await model_context.add_message(SystemMessage(content=f"{HEADER}\n{found.text}"))
        return UpdateContextResult(memories=to_result(found))

    async def query(self, query: str | MemoryContent, cancellation_token: CancellationToken | None = None,
                    **kwargs: Any) -> MemoryQueryResult:
        """The user's memories for `query`, best first; `metadata["score"]` is ReMe's ranking
        score. `limit=` overrides `top_k`."""
        return to_result(await self._retrieve(content_text(query), int(kwargs.get("limit", self.top_k))))

    async def _retrieve(self, query: str, top_k: int) -> RetrieveResult:
        reme = await self._engine()
        return await reme.retrieve_memory(query, user_name=self.user_name, top_k=top_k)

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        """Store `content` as one personal memory of the user, as given (no LLM call); its
        metadata must be JSON. Text, Markdown and JSON content only."""
        reme = await self._engine()
        await reme.add_memory(content_text(content), user_name=self.user_name, metadata=content.metadata or {})

    async def record(self, conversation: Conversation) -> SummaryResult:
        """Summarize a finished conversation into the user's personal memories (`ReMe.summarize_memory`:
        one or two LLM calls): a `TaskResult` (`await agent.run(...)`), its `messages`, or the
        model context's messages. Events, tool calls and system messages (the injected memories
        among them) are left out."""
        messages = to_messages(conversation.messages if isinstance(conversation, TaskResult) else conversation,
                               self.user_name)
        reme = await self._engine()
        return await reme.summarize_memory(messages, user_name=self.user_name)

    async def clear(self) -> None:
        """Delete this user's memories (and their history); other users' stay."""
        reme = await self._engine()
        await reme.delete_all(user_name=self.user_name)

    async def close(self) -> None:
        """Close the engine if this memory made it."""
        if self._owns:
            await self.reme.close()

    def _to_config(self) -> ReMeMemoryConfig:
        settings = self.reme.config.model_dump(mode="json", exclude_defaults=True, exclude=SECRETS)
        return ReMeMemoryConfig(user_name=self.user_name, top_k=self.top_k, settings=settings)

    @classmethod
    def _from_config(cls, config: ReMeMemoryConfig) -> Self:
        return cls(config.user_name, top_k=config.top_k, **config.settings)


def content_text(content: str | MemoryContent) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content.content, dict):
        return json.dumps(content.content, ensure_ascii=False)
    if isinstance(content.content, str):
        return content.content
    mime = content.mime_type.value if isinstance(content.mime_type, MemoryMimeType) else content.mime_type
    raise InvalidInputError(f"ReMeMemory keeps text, Markdown and JSON, not {mime} content")


def last_user_text(messages: Sequence[LLMMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            return text_of(message.content)
    return ""


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part for part in content if isinstance(part, str))  # images and function calls dropped


def to_messages(conversation: Sequence[BaseChatMessage | BaseAgentEvent | LLMMessage], user_name: str) -> list[Message]:
    out: list[Message] = []
    for message in conversation:
        if isinstance(message, BaseChatMessage):
            user = message.source == "user"
            out.append(Message(role="user" if user else "assistant", name=user_name if user else message.source,
                               content=message.to_model_text(), time=message.created_at))
        elif isinstance(message, (UserMessage, AssistantMessage)) and isinstance(message.content, (str, list)):
            user = isinstance(message, UserMessage)
            text = text_of(message.content)
            if text:
                out.append(Message(role="user" if user else "assistant",
                                   name=user_name if user else message.source, content=text))
    return out


def to_result(found: RetrieveResult) -> MemoryQueryResult:
    return MemoryQueryResult(results=[
        MemoryContent(content=m.node.content, mime_type=MemoryMimeType.TEXT,
                      metadata={**m.node.metadata, "score": m.score, "memory_id": m.node.memory_id,
                                "message_time": m.node.message_time.isoformat(), "tags": m.node.tags})
        for m in found.memories])


__all__ = ["ReMeMemory", "ReMeMemoryConfig"]
