"""ReMe as AgentScope 2.x middleware (`pip install 'reme-memory[agentscope]'`).

`ReMeCompressionMiddleware(reme)` in `Agent(middlewares=[...])` compresses the agent's context
with ReMe (`on_compress_context`): see the class. For long-term memory:

`ReMeMemoryMiddleware(reme, user_name=...)` (or `task_name=...`) in `Agent(middlewares=[...])`:

- before the agent reasons on a new input, the memories relevant to it are retrieved and shown to
  the model as a hint (static control);
- after the reply, only that reply's new messages (the input, each assistant step; not the hint,
  not earlier turns) are recorded: a user's are summarized into personal memories at once, a
  task's are kept until `finish_run(agent, score)` distils the run into lessons;
- in agent control, `list_tools()` gives the model `record_to_memory` and `retrieve_from_memory`,
  allowed without a confirmation (pass them to the agent's `Toolkit`).

Failures raise (`reme.ReMeError`) out of `agent.reply`, so a memory that could not be read or
written is never silently skipped. AgentScope's own `agentscope.middleware.ReMeMiddleware` was
written for the original ReMe package (`reme-ai`) and cannot run on this one: see
`reme.errors.OriginalReMeAPIError`.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator, Callable, Literal

from agentscope.message import AssistantMsg, HintBlock, Msg
from agentscope.middleware import MiddlewareBase
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolBase

from reme.errors import InvalidInputError
from reme.integrations._agent import AgentMemory, message
from reme.reme import ReMe
from reme.schema import Message

__all__ = ["ReMeCompressionMiddleware", "ReMeMemoryMiddleware"]

HINT_NAME = "reme_memory"  # the name of the hint message, so it is never recorded
Mode = Literal["static_control", "agent_control", "both"]


def _query(inputs: Any) -> str:
    msgs = inputs if isinstance(inputs, list) else [inputs]
    return "\n".join(m.get_text_content() or "" for m in msgs if isinstance(m, Msg) and m.role == "user").strip()


class ReMeMemoryMiddleware(MiddlewareBase):  # type: ignore[misc]  # agentscope is untyped
    """Long-term memory for an AgentScope 2.x `Agent`, scoped to one user or one task.

    >>> mw = ReMeMemoryMiddleware(reme, user_name="alice", mode="both")
    >>> agent = Agent(..., toolkit=Toolkit(tools=await mw.list_tools()), middlewares=[mw])

    The `ReMe` belongs to the caller (`async with ReMe(...) as reme:`). One middleware may serve
    several agents and sessions: what it keeps between hooks is per `agent.state.session_id`. For a
    user and a task, give the agent two (the tools of only one of them: their names are the same).
    """

    def __init__(self, reme: ReMe, *, user_name: str | None = None, task_name: str | None = None,
                 mode: Mode = "static_control", top_k: int = 5, rewrite: bool | None = None) -> None:
        if mode not in ("static_control", "agent_control", "both"):
            raise InvalidInputError(f"mode must be static_control, agent_control or both, not {mode!r}")
        self.memory = AgentMemory(reme, user_name=user_name, task_name=task_name, rewrite=rewrite)
        self.mode, self.top_k = mode, top_k
        self._hints: dict[str, str] = {}  # session -> memories to show at its next reasoning step
        self._runs: dict[str, list[Message]] = {}  # session -> a task's run, until finish_run

    async def on_reply(self, agent: Any, input_kwargs: dict[str, Any],
                       next_handler: Callable[..., AsyncGenerator[Any, None]]) -> AsyncGenerator[Any, None]:
        session = agent.state.session_id
        query = _query(input_kwargs.get("inputs"))
        if self.mode != "agent_control" and query:
            found = await self.memory.retrieve(query, self.top_k)
            if found:
                self._hints[session] = found
        before = {m.id for m in agent.state.context}
        try:
            async for item in next_handler(**input_kwargs):
                yield item
        finally:
            self._hints.pop(session, None)
        new = (message(m.id, m.name, m.role, m.get_text_content(), m.created_at) for m in agent.state.context
               if m.id not in before and m.name != HINT_NAME)
        messages = [m for m in new if m is not None]
        if self.memory.user_name is not None:
            await self.memory.summarize(messages)
        else:
            self._runs.setdefault(session, []).extend(messages)

    async def on_reasoning(self, agent: Any, input_kwargs: dict[str, Any],
                           next_handler: Callable[..., AsyncGenerator[Any, None]]) -> AsyncGenerator[Any, None]:
        found = self._hints.pop(agent.state.session_id, None)
        if found:
            hint = f"Long-term memory: what ReMe remembers that may help with this request.\n{found}"
            agent.state.context.append(AssistantMsg(name=HINT_NAME, content=[HintBlock(hint=hint)]))
        async for item in next_handler(**input_kwargs):
            yield item

    async def finish_run(self, agent: Any, score: float) -> None:
        """A task's run is over: distil the messages recorded in the agent's session into lessons,
        with the run's outcome (1.0 = success, lower = failure)."""
        await self.memory.summarize(self._runs.pop(agent.state.session_id, []), score)

    async def list_tools(self) -> list[ToolBase]:
        if self.mode == "static_control":
            return []
        allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="ReMe long-term memory tool")
        return [FunctionTool(self.record_to_memory, permission=allow),
                FunctionTool(self.retrieve_from_memory, permission=allow, is_read_only=True)]

    async def record_to_memory(self, thinking: str, content: list[str]) -> str:
        """Record what is worth remembering later: facts about the user (preferences, plans, people,
        places, dates), or lessons learned while doing a task. Each item specific and self-contained.

        Args:
            thinking (str): Why it is worth remembering; for lessons, the situation they apply to,
                phrased like a future task.
            content (list[str]): What to remember, one fact or lesson per string.
        """
        when = thinking if self.memory.task_name is not None else ""
        nodes = await self.memory.remember(content, when_to_use=when)
        return f"Remembered {len(nodes)} item(s)."

    async def retrieve_from_memory(self, keywords: list[str], limit: int = 5) -> str:
        """Search long-term memory: what is known about the user, or lessons from earlier runs of
        similar tasks.

        Args:
            keywords (list[str]): What to search for, each specific: a name, a place, a topic, a task.
            limit (int): The most memories to return per keyword.
        """
        return await self.memory.search(keywords, limit)


def _block(block: Any) -> dict[str, Any]:
    data: dict[str, Any] = block.model_dump(mode="json") if hasattr(block, "model_dump") else dict(block)
    if data.get("type") == "tool_call":  # ReMe pairs calls and results by their id
        data["type"] = "tool_use"
    elif data.get("type") == "hint":
        data = {"type": "text", "text": block.hint if isinstance(block.hint, str) else str(data.get("hint"))}
    return data


def _context_message(msg: Msg) -> dict[str, Any]:
    return {"role": msg.role, "name": msg.name, "content": [_block(b) for b in msg.content]}


def _summary_text(summary: Any) -> str:
    if isinstance(summary, str):
        return summary
    return "\n".join(getattr(b, "text", "") or "" for b in summary or [])


class ReMeCompressionMiddleware(MiddlewareBase):  # type: ignore[misc]  # agentscope is untyped
    """AgentScope 2.x context compression done by ReMe (`on_compress_context` calls
    `reme.compact_context`): when the agent's context takes more than `threshold` tokens, its
    older messages are summarized (building on `agent.state.summary`) into ReMe's structured
    summary (goal, constraints, progress, decisions, next steps, critical context) and the newest
    messages, within `reserve` tokens and never a tool call without its result, stay in
    `agent.state.context`. AgentScope's own compression does not run.

    >>> agent = Agent(..., middlewares=[ReMeCompressionMiddleware(reme)])

    `threshold` and `reserve` default to the agent's `context_config` (`trigger_ratio` and
    `reserve_ratio` of the model's `context_size`), counted by ReMe's estimate over the context
    messages. The `ReMe` belongs to the caller.
    """

    def __init__(self, reme: ReMe, *, threshold: int | None = None, reserve: int | None = None) -> None:
        self.reme, self.threshold, self.reserve = reme, threshold, reserve

    async def on_compress_context(self, agent: Any, input_kwargs: dict[str, Any],
                                  next_handler: Callable[..., Any]) -> None:
        cfg = input_kwargs.get("context_config") or agent.context_config
        size = agent.model.context_size
        threshold = self.threshold if self.threshold is not None else int(cfg.trigger_ratio * size)
        reserve = self.reserve if self.reserve is not None else min(int(cfg.reserve_ratio * size), threshold)
        context = list(agent.state.context)
        result = await self.reme.compact_context([_context_message(m) for m in context],
                                                 previous_summary=_summary_text(agent.state.summary),
                                                 threshold=threshold, reserve=reserve)
        if result.compacted:
            agent.state.summary = result.summary
            agent.state.context = context[result.compacted:]
