"""`reme mcp`: memory tools for a model, over MCP (stdio or streamable HTTP; the `mcp` extra).

The tools translate and delegate: each is one facade call, limited like the HTTP service (the
same `ServerConfig`: a token's targets and rights, top_k/limit/batch ceilings, a timeout). A
tool that names no target uses the default target given at start-up (`--user`, `--task` or
`--tool`). Over stdio the token, when tokens are configured, comes from `$REME_TOKEN`; over HTTP
from each request's `Authorization: Bearer` header.

Only what mcp 1.x and 2.x both offer is used (the low-level `Server`, `stdio_server`,
`StreamableHTTPSessionManager`, and `mcp.types` built from dicts), so it installs beside
AgentScope 2.x, which pins `mcp<2`.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
from typing import Any

import mcp.types as types
from jsonschema import Draft202012Validator
from mcp.server.lowlevel import Server

from reme import __version__
from reme.access import (LOOPBACK, App, Caller, Guard, Receive, Scope, Send, ServerConfig, bounded, caller_from,
                         find_token, log_json_lines, send_error, uvicorn_server_class)
from reme.errors import AuthenticationError, ConfigError, InvalidInputError, ReMeError
from reme.reme import ReMe
from reme.schema import MemoryNode, check_int

log = logging.getLogger("reme.mcp")
_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("reme_mcp_caller")

_TARGET = {
    "user_name": {"type": "string", "description": "The user the memories are about (default: the configured user)."},
    "task_name": {"type": "string", "description": "The task the lessons belong to (default: the configured task)."},
    "tool_name": {"type": "string", "description": "The tool the memories describe (default: the configured tool)."},
}
_MESSAGE = {"type": "object", "properties": {"role": {"type": "string"}, "content": {"type": "string"},
                                              "time": {"type": "string", "description": "ISO 8601, optional"}},
            "required": ["content"]}


_CHAT_MESSAGE = {"type": "object", "required": ["role"], "additionalProperties": False, "properties": {
    "role": {"type": "string"}, "content": {"type": ["string", "null"]}, "name": {"type": "string"},
    "tool_calls": {"type": "array", "items": {"type": "object"}}, "tool_call_id": {"type": "string"}}}


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or [], "additionalProperties": False}


TOOLS: list[dict[str, Any]] = [
    {"name": "retrieve_personal_memory",
     "description": "Recall what you know about the user before you answer: their preferences, facts about "
                    "them and events from earlier conversations. Ask with a natural-language `query` about what "
                    "you need (e.g. 'food preferences', 'where does she live'). Returns `text` ready to read.",
     "inputSchema": _schema({"query": {"type": "string", "description": "What you want to know about the user."},
                             "user_name": _TARGET["user_name"],
                             "top_k": {"type": "integer", "minimum": 1, "description": "How many memories (10)."}},
                            ["query"])},
    {"name": "retrieve_task_memory",
     "description": "Before you start a task, get lessons learned from earlier attempts at similar tasks: what "
                    "worked, what failed and when it applies. Pass the task as `query`.",
     "inputSchema": _schema({"query": {"type": "string", "description": "The task you are about to do."},
                             "task_name": _TARGET["task_name"],
                             "top_k": {"type": "integer", "minimum": 1, "description": "How many lessons (5)."}},
                            ["query"])},
    {"name": "retrieve_tool_memory",
     "description": "Before you call a tool, read its usage guideline and its measured success rate, time and "
                    "token cost from earlier calls.",
     "inputSchema": _schema({"tool_names": {"type": "array", "items": {"type": "string"},
                                            "description": "The tools (default: the configured tool)."}})},
    {"name": "add_memory",
     "description": "Remember one thing for later: a fact or preference of a user, a lesson for a task or a "
                    "note about a tool. Write `content` as one self-contained sentence. Adding the same text "
                    "again returns the memory already stored.",
     "inputSchema": _schema({"content": {"type": "string", "description": "The memory, one sentence."},
                             "when_to_use": {"type": "string",
                                             "description": "When this memory helps (optional)."},
                             "tags": {"type": "array", "items": {"type": "string"}}, **_TARGET}, ["content"])},
    {"name": "search_memory",
     "description": "Search stored memories of one user, task or tool by meaning and keywords; returns each "
                    "match with its `memory_id` (needed to delete it).",
     "inputSchema": _schema({"query": {"type": "string"},
                             "top_k": {"type": "integer", "minimum": 1, "description": "How many results (10)."},
                             **_TARGET}, ["query"])},
    {"name": "list_memory",
     "description": "List the stored memories of one user, task or tool, newest first, a page at a time; pass "
                    "`cursor` from the previous page to continue.",
     "inputSchema": _schema({"limit": {"type": "integer", "minimum": 1, "description": "Page size (20)."},
                             "cursor": {"type": "string"}, **_TARGET})},
    {"name": "summarize_memory",
     "description": "Turn what happened into memories: `messages` of a conversation (for a user: their facts "
                    "and preferences), `trajectories` of task attempts with a score (for a task: lessons), or "
                    "`tool_calls` (for tools: statistics and a usage guideline). Give exactly one of the three.",
     "inputSchema": _schema({
         "messages": {"type": "array", "items": _MESSAGE},
         "trajectories": {"type": "array", "items": {
             "type": "object", "required": ["messages", "score"],
             "properties": {"messages": {"type": "array", "items": _MESSAGE},
                            "score": {"type": "number", "description": "1.0 success, 0.0 failure"},
                            "query": {"type": "string"}}}},
         "tool_calls": {"type": "array", "items": {
             "type": "object", "required": ["tool_name"],
             "properties": {"tool_name": {"type": "string"}, "input": {}, "output": {"type": "string"},
                            "success": {"type": "boolean"}, "time_cost": {"type": "number"},
                            "token_cost": {"type": "integer"}, "error": {"type": "string"}}}},
         **_TARGET})},
    {"name": "compact_context",
     "description": "Keep a long conversation within your context window: when `messages` take more than "
                    "`threshold` tokens, the older ones are summarized (goal, constraints, progress, decisions, "
                    "next steps, critical context), building on `previous_summary`, and you get back `messages` "
                    "to continue with (the summary first, then the newest messages, at most `reserve` tokens; a "
                    "tool call always stays with its result) and the new `summary` to pass next time. Nothing "
                    "is stored.",
     "inputSchema": _schema({
         "messages": {"type": "array", "items": _CHAT_MESSAGE, "description": "The conversation, oldest first."},
         "previous_summary": {"type": "string", "description": "The summary a previous call returned (optional)."},
         "threshold": {"type": "integer", "minimum": 1, "description": "Compact above this many tokens (default: "
                                                                      "the server's context.threshold)."},
         "reserve": {"type": "integer", "minimum": 0, "description": "Tokens of recent messages to keep (default: "
                                                                    "the server's context.reserve)."}},
         ["messages"])},
    {"name": "delete_memory",
     "description": "Delete one memory by its `memory_id` (from search_memory or list_memory), for instance "
                    "when the user says it is no longer true.",
     "inputSchema": _schema({"memory_id": {"type": "string"}, **_TARGET}, ["memory_id"])},
]


TOOL_NAMES = frozenset(t["name"] for t in TOOLS)
_VALIDATORS = {t["name"]: Draft202012Validator(t["inputSchema"]) for t in TOOLS}


def check_arguments(name: str, args: Any) -> dict[str, Any]:
    """The arguments of a call to tool `name` as its schema declares them, or an
    `InvalidInputError` saying what is wrong: an argument the tool does not take (a misspelt
    `user` must not fall back to the default target), a missing one, or a value of the wrong
    type. A null stands for an argument not given."""
    if not isinstance(args, dict):
        raise InvalidInputError(f"{name} takes a JSON object of arguments, not {type(args).__name__}")
    schema = next(t["inputSchema"] for t in TOOLS if t["name"] == name)
    unknown = sorted(set(args) - set(schema["properties"]))
    if unknown:
        raise InvalidInputError(f"{name} takes no argument {', '.join(map(repr, unknown))}; its arguments are "
                                f"{', '.join(schema['properties'])}")
    given = {k: v for k, v in args.items() if v is not None}
    errors = sorted(_VALIDATORS[name].iter_errors(given), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        raise InvalidInputError(f"{name}: " + "; ".join(
            f"{'.'.join(map(str, e.absolute_path)) or 'arguments'}: {e.message}" for e in errors[:3]))
    return given


def _brief(node: MemoryNode) -> dict[str, Any]:
    return {"memory_id": node.memory_id, "content": node.content, "memory_type": node.memory_type.value,
            "target": f"{node.target_kind}:{node.memory_target}"}


class MemoryTools:
    """The tools' behaviour, independent of the MCP version: `call(name, arguments)` returns the
    JSON text for the model, or raises a `ReMeError` (the model is shown its type and message)."""

    def __init__(self, reme: ReMe, config: ServerConfig | None = None, *, caller: Caller | None = None,
                 user_name: str | None = None, task_name: str | None = None, tool_name: str | None = None) -> None:
        self.reme, self.config = reme, config or ServerConfig()
        self.caller = caller if caller is not None or self.config.tokens else Caller(None)
        """Who calls when the transport says nothing (stdio); over HTTP each request's token. With
        tokens configured and no caller given, a call that arrives without one is refused."""
        self.default = {k: v for k, v in (("user_name", user_name), ("task_name", task_name),
                                          ("tool_name", tool_name)) if v}
        if len(self.default) > 1:
            raise ConfigError("reme mcp takes one default target: --user, --task or --tool")

    def _target(self, args: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
        keys = [kind] if kind else ["user_name", "task_name", "tool_name"]
        named = {k: args[k] for k in keys if args.get(k)}
        if not named:
            named = {k: v for k, v in self.default.items() if k in keys}
        if not named:
            want = " or ".join(keys)
            raise InvalidInputError(f"name {want}: no default target is configured for it")
        if len(named) > 1:
            raise InvalidInputError("name one target: user_name, task_name or tool_name")
        (key, name), = named.items()
        if not isinstance(name, str):
            raise InvalidInputError(f"{key} must be a string")
        caller = _caller.get(self.caller)
        if caller is None:  # fail closed: never fall back to "anyone" when tokens exist
            raise AuthenticationError("a valid bearer token is required")
        caller.permit([(key.split("_")[0], name)])
        return {key: name}

    @staticmethod
    def _ceiling(value: Any, top: int, what: str) -> Any:
        return value if value is None else check_int(value, what, high=top)

    async def call(self, name: str, args: dict[str, Any]) -> str:
        handler = getattr(self, f"_{name}", None)
        if name not in TOOL_NAMES or handler is None:
            raise InvalidInputError(f"unknown tool {name!r}")
        result = await bounded(handler(check_arguments(name, args)), self.config.limits.timeout_s)
        return json.dumps(result, ensure_ascii=False, default=str)

    async def _retrieve_personal_memory(self, a: dict[str, Any]) -> Any:
        return await self._retrieve(a, "user_name")

    async def _retrieve_task_memory(self, a: dict[str, Any]) -> Any:
        return await self._retrieve(a, "task_name")

    async def _retrieve(self, a: dict[str, Any], kind: str) -> Any:
        top_k = self._ceiling(a.get("top_k"), self.config.limits.max_top_k, "top_k")
        r = await self.reme.retrieve_memory(a.get("query"), top_k=top_k, **self._target(a, kind))
        return {"text": r.text, "memories": [{**_brief(m.node), "score": round(m.score, 4)} for m in r.memories]}

    async def _retrieve_tool_memory(self, a: dict[str, Any]) -> Any:
        names = a.get("tool_names") or [self._target({}, "tool_name")["tool_name"]]
        if not isinstance(names, list) or len(names) > self.config.limits.max_batch:
            raise InvalidInputError(f"tool_names is a list of at most {self.config.limits.max_batch} names")
        for n in names:
            self._target({"tool_name": n}, "tool_name")
        r = await self.reme.retrieve_memory(tool_name=names)
        return {"text": r.text, "memories": [_brief(m.node) for m in r.memories]}

    async def _add_memory(self, a: dict[str, Any]) -> Any:
        content: Any = a.get("content")  # the facade checks it: a non-string is an InvalidInputError
        node = await self.reme.add_memory(content, when_to_use=a.get("when_to_use") or "", tags=a.get("tags"),
                                          author="mcp", **self._target(a))
        return _brief(node)

    async def _search_memory(self, a: dict[str, Any]) -> Any:
        top_k = self._ceiling(a.get("top_k", 10), self.config.limits.max_top_k, "top_k")
        hits = await self.reme.search_memory(a.get("query"), top_k=top_k, **self._target(a))  # type: ignore[arg-type]
        return [{**_brief(h.node), "similarity": round(h.similarity, 4)} for h in hits]

    async def _list_memory(self, a: dict[str, Any]) -> Any:
        limit = self._ceiling(a.get("limit", 20), self.config.limits.max_limit, "limit")
        page = await self.reme.list_memory(limit=limit, cursor=a.get("cursor"), sort_key="time_created",
                                           **self._target(a))
        return {"memories": [_brief(n) for n in page], "next_cursor": page.next_cursor}

    async def _summarize_memory(self, a: dict[str, Any]) -> Any:
        given = [k for k in ("messages", "trajectories", "tool_calls") if a.get(k) is not None]
        if len(given) != 1:
            raise InvalidInputError("give exactly one of messages, trajectories or tool_calls")
        items = a[given[0]]
        if not isinstance(items, list) or len(items) > self.config.limits.max_batch:
            raise InvalidInputError(f"{given[0]} is a list of at most {self.config.limits.max_batch} items")
        if given[0] == "messages":
            r = await self.reme.summarize_memory(items, **self._target(a, "user_name"))
        elif given[0] == "trajectories":
            r = await self.reme.summarize_memory(trajectories=items, **self._target(a, "task_name"))
        else:
            names = {str(c["tool_name"]) for c in items if isinstance(c, dict) and c.get("tool_name")}
            tool = a.get("tool_name") or (None if names else self.default.get("tool_name"))
            for n in ([tool] if tool else sorted(names)):
                self._target({"tool_name": n}, "tool_name")
            r = await self.reme.summarize_memory(tool_calls=items, tool_name=tool)
        return {"added": [_brief(n) for n in r.added], "updated": [_brief(n) for n in r.updated],
                "deleted": [_brief(n) for n in r.deleted]}

    async def _compact_context(self, a: dict[str, Any]) -> Any:
        caller = _caller.get(self.caller)
        if caller is None:
            raise AuthenticationError("a valid bearer token is required")
        if not (caller.token is not None and caller.token.sessions):  # stores nothing: any session right will do
            caller.permit([])
        messages = a.get("messages")
        if not isinstance(messages, list) or len(messages) > self.config.limits.max_batch:
            raise InvalidInputError(f"messages is a list of at most {self.config.limits.max_batch} messages")
        r = await self.reme.compact_context(messages, previous_summary=a.get("previous_summary") or "",
                                            threshold=a.get("threshold"), reserve=a.get("reserve"))
        return {"messages": r.messages, "summary": r.summary, "compacted": r.compacted,
                "tokens_before": r.tokens_before, "tokens_after": r.tokens_after}

    async def _delete_memory(self, a: dict[str, Any]) -> Any:
        await self.reme.delete_memory(a.get("memory_id"), **self._target(a))  # type: ignore[arg-type]
        return {"deleted": a.get("memory_id")}


def build_server(tools: MemoryTools) -> Any:
    """A low-level MCP `Server` with the memory tools, for mcp 1.x (decorators) or 2.x (handlers)."""
    listed = [types.Tool.model_validate(t) for t in TOOLS]

    async def run_tool(name: str, arguments: dict[str, Any] | None) -> Any:
        try:
            text, error = await tools.call(name, arguments or {}), False
        except ReMeError as exc:
            text, error = f"{type(exc).__name__}: {exc}", True
        except Exception as exc:  # a bug: say so to the model rather than hang up on it
            log.exception("tool %s failed", name)
            text, error = f"{type(exc).__name__}: {exc}", True
        return types.CallToolResult.model_validate({"content": [{"type": "text", "text": text}], "isError": error})

    if hasattr(Server, "call_tool"):  # mcp 1.x
        server: Any = Server("reme", version=__version__)

        async def list_tools() -> list[Any]:
            return listed

        async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
            return await run_tool(name, arguments)

        server.list_tools()(list_tools)
        server.call_tool(validate_input=False)(call_tool)
        return server

    async def on_list_tools(ctx: Any, params: Any) -> Any:  # mcp 2.x
        return types.ListToolsResult.model_validate({"tools": [t.model_dump(by_alias=True) for t in listed]})

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        return await run_tool(params.name, params.arguments)

    # As a dict: mypy reads the signature of whichever mcp is installed, and 1.x has no such keywords.
    handlers: dict[str, Any] = {"on_list_tools": on_list_tools, "on_call_tool": on_call_tool}
    return Server("reme", version=__version__, **handlers)


async def run_stdio(tools: MemoryTools) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(tools: MemoryTools, config: ServerConfig) -> tuple[App, Any]:
    """An ASGI app serving MCP at /mcp (streamable HTTP, stateless: each request carries its own
    bearer token, checked before the session sees it), behind the same `Guard` as `reme serve`;
    and its session manager, whose `run()` must be entered while it serves."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=build_server(tools), stateless=True, json_response=True)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/") != "/mcp":
            await send_error(send, 404, "NotFoundError", "MCP lives at /mcp")
            return
        try:
            caller = caller_from(config.tokens, dict(scope["headers"]).get(b"authorization", b"").decode("latin-1"))
        except AuthenticationError as exc:
            await send_error(send, 401, "AuthenticationError", str(exc))
            return
        if caller.token is not None:
            scope["state"]["token_name"] = caller.token.name
        _caller.set(caller)  # the stateless session runs in a task started from here: it sees this caller
        await manager.handle_request(scope, receive, send)

    return Guard(app, config.limits, log), manager


def serve(config: ServerConfig, reme: ReMe, *, transport: str = "stdio", user_name: str | None = None,
          task_name: str | None = None, tool_name: str | None = None) -> int:
    """Open the store, then serve the tools over stdio (until stdin closes) or HTTP (until
    SIGTERM/SIGINT). Returns the exit code."""
    # stdout is the MCP channel over stdio: logs go to stderr as JSON lines (one per HTTP request).
    log_json_lines()
    if config.workers > 1:
        raise ConfigError(f"reme mcp serves from one process; workers = {config.workers} is for reme serve")
    caller: Caller | None = Caller(None) if not config.tokens else None  # over HTTP: each request's token
    if transport == "stdio" and config.tokens:
        token = find_token(config.tokens, os.environ.get("REME_TOKEN", ""))
        if token is None:
            raise ConfigError("tokens are configured: set REME_TOKEN to one of them")
        caller = Caller(token)
    elif transport != "stdio" and not config.tokens and config.host not in LOOPBACK:
        raise ConfigError(f"refusing to serve on {config.host} without tokens")
    tools = MemoryTools(reme, config, caller=caller, user_name=user_name, task_name=task_name, tool_name=tool_name)

    async def main() -> int:
        await reme.open()
        try:
            if transport == "stdio":
                await run_stdio(tools)
                return 0
            import uvicorn

            app, manager = http_app(tools, config)
            server = uvicorn_server_class()(uvicorn.Config(app, host=config.host, port=config.port, access_log=False,
                                                           log_level="warning", log_config=None, lifespan="off"))
            async with manager.run():
                await server.serve()
            return 0 if server.started else 1
        finally:
            await reme.close()

    return asyncio.run(main())


__all__ = ["MemoryTools", "TOOLS", "build_server", "http_app", "serve"]
