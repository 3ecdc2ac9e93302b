"""`reme serve`: the facade over HTTP (FastAPI + uvicorn, the `server` extra).

Routes are thin: parse a request model, check the caller's token against the target it names,
call one facade method, return its model. Authentication is a dependency; every `ReMeError` maps
to one HTTP status in one exception handler (`STATUS`), with the body
`{"error": {"type": "MemoryNotFoundError", "message": "...", "details": {...}}}`.

Settings (`ServerConfig`) come from a JSON or TOML file (`reme serve --server-config FILE` or
`$REME_SERVER_CONFIG`), either the whole file or its `server` section:

    [server]
    host = "0.0.0.0"
    port = 8000
    [[server.tokens]]
    name = "support-bot"
    secret = "s3cr3t-value"
    users = ["*"]          # any user; or a list of names
    tasks = ["triage"]
    tools = []
    sessions = ["*"]       # working memory (add_messages, prepare_context, ...)
    destructive = false    # delete_all, forget, import, prune and restore need true
    [server.limits]
    max_body_bytes = 10485760

`workers = N` (or `reme serve --workers N`) serves the port from N processes, each with its own
ReMe on one Qdrant server store (uvicorn's supervisor; see `serve`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, Literal, TypeVar

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException as StarletteHTTPException

from reme.access import Caller, Guard, ServerConfig, bounded, caller_from, log_json_lines, uvicorn_server_class
from reme.errors import (AuthenticationError, ConfigError, ConflictError, EmbeddingError, InvalidInputError, LLMError,
                         NotFoundError, NotReadyError, PayloadTooLargeError, PermissionDeniedError, ReMeError,
                         RequestTimeoutError, ServiceError, StoreError, StoreLockedError, VectorSizeError)
from reme import markdown
from reme.config import ReMeConfig, VectorStoreConfig
from reme.markdown import MarkdownExportReply, MarkdownSyncReply
from reme.reme import ReMe
from reme.schema import (MemoryNode, MemoryPage, MemoryType, MemoryVersion, Message, RetrieveResult, SearchResult,
                         SummaryResult, TimeWindow, ToolCallRecord, Trajectory, check_int)
from reme.working import CompactedContext, SessionMessage, SessionSize

T = TypeVar("T")
log = logging.getLogger("reme.server")

STATUS: list[tuple[type[ReMeError], int]] = [
    # Most specific first: VectorSizeError is both a StoreError and an InvalidInputError.
    (PayloadTooLargeError, 413), (VectorSizeError, 422), (InvalidInputError, 422),
    (AuthenticationError, 401), (PermissionDeniedError, 403), (RequestTimeoutError, 408),
    (NotFoundError, 404), (ConflictError, 409), (StoreLockedError, 423), (StoreError, 500),
    (EmbeddingError, 502), (LLMError, 502), (ConfigError, 500), (NotReadyError, 503), (ServiceError, 500),
    (ReMeError, 500),
]
"""Each ReMeError subclass and its HTTP status (the first entry the error is an instance of)."""
DOCUMENTED: dict[int, str] = {
    400: "malformed body (not JSON, invalid UTF-8, nested too deep)", 401: "no or an unknown bearer token",
    403: "the token may not touch that target or call that operation", 404: "not found in the caller's scope",
    405: "the path takes another method (the `Allow` header names it)",
    408: "the operation took longer than limits.timeout_s", 409: "a concurrent change; read again and retry",
    413: "body larger than limits.max_body_bytes",
    422: "invalid input (InvalidInputError and its subclasses: InvalidFilterError, PromptTooLargeError, ...)",
    423: "the working directory is held by another process", 500: "store or configuration failure",
    502: "the LLM or embedding endpoint failed", 503: "the store is not open",
}


def status_of(exc: ReMeError) -> int:
    return next(code for cls, code in STATUS if isinstance(exc, cls))


ACTIONS = ("batch", "list", "count", "search", "delete_all", "usage", "export", "import")
"""The POST routes under /v1/memories/ (a test checks the list against the app's routes)."""


class MemoryIdConvertor(Convertor[str]):
    """The `{memory_id}` of a path: any segment but an action's name, so that `GET
    /v1/memories/search` answers 405 with `Allow: POST` instead of looking for a memory called
    "search". Another segment that is not a UUID reaches the facade: an `InvalidInputError`."""

    regex = "(?!(?:" + "|".join(ACTIONS) + ")(?:/|$))[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("memory_id", MemoryIdConvertor())


# -- request and response models -----------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScopeArgs(_Strict):
    user_name: str | None = None
    task_name: str | None = None
    tool_name: str | None = None

    def targets(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in (("user", self.user_name), ("task", self.task_name), ("tool", self.tool_name))
                if isinstance(v, str)]


class AddRequest(ScopeArgs):
    content: str
    memory_type: MemoryType | None = None
    when_to_use: str = ""
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    score: float = 0.0
    message_time: datetime | None = None
    author: str = ""
    ref_ids: list[str] | None = None
    expires_at: datetime | None = None
    ttl: float | None = None
    """Seconds from now until the memory expires."""


class AddBatchRequest(_Strict):
    nodes: list[MemoryNode]


class UpdateRequest(ScopeArgs):
    content: str | None = None
    when_to_use: str | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    score: float | None = None
    message_time: datetime | None = None
    author: str | None = None
    ref_ids: list[str] | None = None
    expires_at: datetime | None = None


class FilterArgs(ScopeArgs):
    memory_type: MemoryType | None = None
    filters: dict[str, Any] | None = None


class ReadArgs(_Strict):
    """The target of a reading call: one name, or a list of names of one kind."""

    user_name: str | list[str] | None = None
    task_name: str | list[str] | None = None
    tool_name: str | list[str] | None = None
    memory_type: MemoryType | None = None
    filters: dict[str, Any] | None = None

    def targets(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for kind, names in (("user", self.user_name), ("task", self.task_name), ("tool", self.tool_name)):
            out += [(kind, n) for n in ([names] if isinstance(names, str) else names or [])]
        return out


class ListRequest(ReadArgs):
    sort_key: str | None = None
    direction: Literal["asc", "desc"] = "desc"
    limit: int = 100
    cursor: str | None = None


class SearchRequest(ReadArgs):
    query: str
    top_k: int = 10
    mode: Literal["hybrid", "dense", "keyword"] = "hybrid"
    score_threshold: float | None = None
    vector: list[float] | None = None


class ExportRequest(FilterArgs):
    with_vectors: bool = False
    with_history: bool = True


class MarkdownExportRequest(ScopeArgs):
    files: dict[str, str] = Field(default_factory=dict, description="the tree already in the directory, by path")
    overwrite: bool = False


class MarkdownSyncRequest(ScopeArgs):
    files: dict[str, str] = Field(default_factory=dict, description="the edited tree, by path")
    dry_run: bool = False
    force: bool = False


class DeleteAllRequest(ScopeArgs):
    memory_type: MemoryType | None = None
    everything: bool = False


class SummarizeRequest(_Strict):
    session_name: str | None = None
    messages: list[Message] | None = None
    user_name: str | list[str] | None = None
    trajectories: list[Trajectory] | None = None
    task_name: str | None = None
    tool_calls: list[ToolCallRecord] | None = None
    tool_name: str | None = None
    now: datetime | None = None

    def targets(self) -> list[tuple[str, str]]:
        """Every target the summary writes to (a nameless one when none is named: only a token
        with `*` for every kind gets that far, and the facade then says what is missing)."""
        users = [self.user_name] if isinstance(self.user_name, str) else self.user_name or []
        out = [("user", u) for u in users] + ([("task", self.task_name)] if self.task_name is not None else [])
        out += [("session", self.session_name)] if self.session_name is not None else []
        if self.tool_name is not None:
            out.append(("tool", self.tool_name))
        elif self.tool_calls:
            out += [("tool", r.tool_name) for r in self.tool_calls]
        return out


class RetrieveRequest(_Strict):
    query: str | None = None
    user_name: str | list[str] | None = None
    task_name: str | None = None
    tool_name: str | list[str] | None = None
    top_k: int | None = None
    rewrite: bool | None = None
    rerank: bool | None = None
    time_window: TimeWindow | None = None
    with_source: bool = False
    now: datetime | None = None

    def targets(self) -> list[tuple[str, str]]:
        users = [self.user_name] if isinstance(self.user_name, str) else self.user_name or []
        tools = [self.tool_name] if isinstance(self.tool_name, str) else self.tool_name or []
        task = [("task", self.task_name)] if self.task_name is not None else []
        return [("user", u) for u in users] + task + [("tool", t) for t in tools]


class UsageRequest(ScopeArgs):
    memory_ids: list[str]
    success: StrictBool


class PruneRequest(ScopeArgs):
    min_freq: int = 3
    min_utility_ratio: float = 0.3
    everything: bool = False
    now: datetime | None = None


class ForgetRequest(ReadArgs):
    purge: bool = False
    scrub: bool = False
    everything: bool = False


# working memory: the session is named in the path; messages are free-form dicts the facade checks
class AddMessagesRequest(_Strict):
    messages: list[dict[str, Any]]
    marks: str | list[str] | None = None


class GetMessagesRequest(_Strict):
    mark: str | list[str] | None = None
    exclude_mark: str | list[str] | None = None
    prepend_summary: bool = False
    last: int | None = None
    after: str | None = None
    message_ids: list[str] | None = None


class IdsRequest(_Strict):
    ids: list[str]


class MarkRequest(_Strict):
    mark: str | list[str]


class MarksRequest(_Strict):
    ids: list[str] | None = None
    add: str | list[str] | None = None
    remove: str | list[str] | None = None


class SummaryRequest(_Strict):
    summary: str


class StateRequest(_Strict):
    state: dict[str, Any]


class ToolResultsRequest(_Strict):
    messages: list[dict[str, Any]]
    max_chars: int | None = None
    ttl_s: float | None = None


class ToolResult(BaseModel):
    content: str


class CompactRequest(_Strict):
    messages: list[dict[str, Any]]
    previous_summary: str = ""
    threshold: int | None = None
    reserve: int | None = None


class PrepareRequest(_Strict):
    threshold: int | None = None
    reserve: int | None = None
    user_name: str | None = None


class WaitRequest(_Strict):
    session_name: str | None = None
    """The session whose background work to wait for; none: every session's (a token with `*` for all)."""


class Count(BaseModel):
    count: int


class Optimized(BaseModel):
    optimized: bool


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Version(BaseModel):
    version: str


class ErrorInfo(BaseModel):
    type: str = Field(description="the ReMeError subclass, e.g. MemoryNotFoundError")
    message: str
    details: Any = None


class ErrorBody(BaseModel):
    error: ErrorInfo


def error_response(status: int, type_: str, message: str, details: Any = None) -> JSONResponse:
    body = ErrorBody(error=ErrorInfo(type=type_, message=message, details=details))
    return JSONResponse(body.model_dump(mode="json"), status_code=status)


def _details(exc: ReMeError) -> dict[str, Any] | None:
    out = {k: v for k, v in vars(exc).items() if k in ("memory_id", "status_code") and v is not None}
    return out or None


def authenticate(request: Request) -> Caller:
    """The dependency every memory route declares: a known bearer token, or 401."""
    caller = caller_from(request.app.state.config.tokens, request.headers.get("authorization", ""))
    if caller.token is not None:
        request.state.token_name = caller.token.name
    return caller


def facade(request: Request) -> ReMe:
    reme: ReMe | None = request.app.state.reme
    if reme is None or request.app.state.closing:
        raise NotReadyError("the memory store is not open")
    return reme


Auth = Depends(authenticate)
Facade = Depends(facade)


def _query_names(dependant: Any) -> set[str]:
    """The query parameters a route declares, its dependencies' included."""
    return {p.alias for p in dependant.query_params}.union(*(_query_names(d) for d in dependant.dependencies))


def known_query(request: Request) -> None:
    """Every route's first dependency: a query parameter the route does not declare is an
    `InvalidInputError`, never ignored (`?user=bob` for `?user_name=bob` would make the call
    unscoped: a read or a delete of any target's memory)."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    if dependant is None:
        return
    known = _query_names(dependant)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise InvalidInputError(f"{request.url.path} takes no query parameter {', '.join(map(repr, unknown))}"
                                + (f"; it takes {', '.join(sorted(known))}" if known else ""))


def scope_query(user_name: str | None = Query(None), task_name: str | None = Query(None),
                tool_name: str | None = Query(None)) -> ScopeArgs:
    return ScopeArgs(user_name=user_name, task_name=task_name, tool_name=tool_name)


# -- the application -----------------------------------------------------------------------------
def create_app(reme: ReMe, config: ServerConfig | None = None) -> FastAPI:
    """The FastAPI app over `reme` (opened by the lifespan when not open yet, closed at shutdown)."""
    config = config or ServerConfig()
    limits = config.limits

    worker = {"worker": os.getpid()} if config.workers > 1 else None  # which process answered, in the log

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await app.state.reme.open()
        if worker is not None:
            line = {"event": "worker", **worker}
            log.info(json.dumps(line), extra={"json": line})
        try:
            yield
        finally:
            app.state.closing = True
            await app.state.reme.close()

    from reme import __version__

    errors = {code: {"model": ErrorBody, "description": text} for code, text in DOCUMENTED.items()}
    app = FastAPI(title="ReMe", version=__version__, lifespan=lifespan, responses=errors,  # type: ignore[arg-type]
                  dependencies=[Depends(known_query)],
                  description="Typed long-term memory for AI agents, over HTTP. Every error body is "
                              '`{"error": {"type", "message", "details"}}`.')
    app.state.reme, app.state.config, app.state.closing = reme, config, False

    async def run(coro: Awaitable[T]) -> T:
        return await bounded(coro, limits.timeout_s)

    def batch(n: int, what: str) -> None:
        if n > limits.max_batch:
            raise InvalidInputError(f"{what}: {n} items; the limit is {limits.max_batch}")

    def ceiling(value: int | None, top: int, what: str) -> None:
        if value is not None:
            check_int(value, what, high=top)

    async def spooled(write: Callable[[Path], Awaitable[int]]) -> StreamingResponse:
        """Stream what a facade method writes to a file (export, backup): written to a spool file
        first (so its errors are still a typed status), then sent line by line and deleted."""
        folder = tempfile.TemporaryDirectory(prefix="reme-spool-")
        path = Path(folder.name) / "out.jsonl"
        try:
            n = await run(write(path))
        except BaseException:
            folder.cleanup()
            raise

        def lines() -> Iterator[bytes]:
            try:
                with path.open("rb") as fh:
                    yield from fh
            finally:
                folder.cleanup()

        return StreamingResponse(lines(), media_type="application/x-ndjson", headers={"X-ReMe-Count": str(n)})

    async def unspooled(body: bytes, read: Callable[[Path], Awaitable[int]]) -> int:
        """Hand a JSONL body to a facade method that reads a file (import, restore)."""
        with tempfile.TemporaryDirectory(prefix="reme-spool-") as folder:
            path = Path(folder) / "body.jsonl"
            await asyncio.to_thread(path.write_bytes, body)  # up to max_body_bytes: off the event loop
            try:
                return await run(read(path))
            except InvalidInputError as exc:  # name the body, not the spool file
                raise type(exc)(str(exc).replace(str(path), "body")) from None

    @app.exception_handler(ReMeError)
    async def on_reme_error(request: Request, exc: ReMeError) -> JSONResponse:
        return error_response(status_of(exc), type(exc).__name__, str(exc), _details(exc))

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        details = [{"loc": [str(x) for x in e.get("loc", ())], "msg": str(e.get("msg", "")),
                    "type": str(e.get("type", ""))} for e in errs]
        if any(e.get("type") == "json_invalid" for e in errs):
            return error_response(400, "InvalidInputError", "the body is not valid JSON", details)
        message = "; ".join(f"{'.'.join(d['loc'][1:]) or 'body'}: {d['msg']}" for d in details)
        return error_response(422, "InvalidInputError", message, details)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        type_ = "NotFoundError" if exc.status_code == 404 else "InvalidInputError"
        message = str(exc.detail)
        allow = (exc.headers or {}).get("Allow")
        if exc.status_code == 405 and allow:
            message = f"{request.method} is not allowed on {request.url.path}: use {allow}"
        response = error_response(exc.status_code, type_, message)
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(Exception)
    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected %s on %s %s", type(exc).__name__, request.method, request.url.path)
        return error_response(500, "ReMeError", f"unexpected {type(exc).__name__}")

    # -- meta --
    @app.get("/v1/health", response_model=Health, tags=["meta"])
    async def health() -> Health:
        return Health()

    @app.get("/v1/version", response_model=Version, tags=["meta"])
    async def version() -> Version:
        return Version(version=__version__)

    # -- memories --
    @app.post("/v1/memories", response_model=MemoryNode, tags=["memories"])
    async def add_memory(body: AddRequest, caller: Caller = Auth, reme: ReMe = Facade) -> MemoryNode:
        caller.permit(body.targets())
        return await run(reme.add_memory(**body.model_dump(exclude_unset=True)))

    @app.post("/v1/memories/batch", response_model=list[MemoryNode], tags=["memories"])
    async def add_memories(body: AddBatchRequest, caller: Caller = Auth, reme: ReMe = Facade) -> list[MemoryNode]:
        caller.permit([n.scope for n in body.nodes])
        batch(len(body.nodes), "nodes")
        return await run(reme.add_memories(body.nodes))

    @app.get("/v1/memories/{memory_id:memory_id}", response_model=MemoryNode, tags=["memories"])
    async def get_memory(memory_id: str, scope: ScopeArgs = Depends(scope_query), caller: Caller = Auth,
                         reme: ReMe = Facade) -> MemoryNode:
        caller.permit(scope.targets())
        return await run(reme.get_memory(memory_id, **scope.model_dump()))

    @app.patch("/v1/memories/{memory_id:memory_id}", response_model=MemoryNode, tags=["memories"])
    async def update_memory(memory_id: str, body: UpdateRequest, caller: Caller = Auth,
                            reme: ReMe = Facade) -> MemoryNode:
        caller.permit(body.targets())
        return await run(reme.update_memory(memory_id, **body.model_dump()))

    @app.delete("/v1/memories/{memory_id:memory_id}", status_code=204, response_class=Response, tags=["memories"])
    async def delete_memory(memory_id: str, scope: ScopeArgs = Depends(scope_query), caller: Caller = Auth,
                            reme: ReMe = Facade) -> Response:
        caller.permit(scope.targets())
        await run(reme.delete_memory(memory_id, **scope.model_dump()))
        return Response(status_code=204)

    @app.get("/v1/memories/{memory_id:memory_id}/history", response_model=list[MemoryVersion], tags=["memories"])
    async def history(memory_id: str, scope: ScopeArgs = Depends(scope_query), caller: Caller = Auth,
                      reme: ReMe = Facade) -> list[MemoryVersion]:
        caller.permit(scope.targets())
        return await run(reme.history(memory_id, **scope.model_dump()))

    @app.post("/v1/memories/list", response_model=MemoryPage, tags=["memories"])
    async def list_memory(body: ListRequest, caller: Caller = Auth, reme: ReMe = Facade) -> MemoryPage:
        caller.permit(body.targets())
        batch(len(body.targets()), "targets")
        ceiling(body.limit, limits.max_limit, "limit")
        return await run(reme.list_memory(**body.model_dump()))

    @app.post("/v1/memories/count", response_model=Count, tags=["memories"])
    async def count_memory(body: ReadArgs, caller: Caller = Auth, reme: ReMe = Facade) -> Count:
        caller.permit(body.targets())
        batch(len(body.targets()), "targets")
        return Count(count=await run(reme.count_memory(**body.model_dump())))

    @app.post("/v1/memories/search", response_model=list[SearchResult], tags=["memories"])
    async def search_memory(body: SearchRequest, caller: Caller = Auth, reme: ReMe = Facade) -> list[SearchResult]:
        caller.permit(body.targets())
        batch(len(body.targets()), "targets")
        ceiling(body.top_k, limits.max_top_k, "top_k")
        args = body.model_dump()
        return await run(reme.search_memory(args.pop("query"), **args))

    @app.post("/v1/memories/delete_all", response_model=Count, tags=["memories"])
    async def delete_all(body: DeleteAllRequest, caller: Caller = Auth, reme: ReMe = Facade) -> Count:
        caller.permit(body.targets(), destructive="delete_all")
        return Count(count=await run(reme.delete_all(**body.model_dump())))

    @app.post("/v1/memories/usage", response_model=list[MemoryNode], tags=["memories"])
    async def record_usage(body: UsageRequest, caller: Caller = Auth, reme: ReMe = Facade) -> list[MemoryNode]:
        caller.permit(body.targets())
        batch(len(body.memory_ids), "memory_ids")
        args = body.model_dump()
        return await run(reme.record_usage(args.pop("memory_ids"), args.pop("success"), **args))

    @app.post("/v1/memories/export", tags=["files"], response_class=StreamingResponse,
              responses={200: {"content": {"application/x-ndjson": {}},
                               "description": "one memory a line, as `export_memory` writes them"}})
    async def export_memory(body: ExportRequest, caller: Caller = Auth, reme: ReMe = Facade) -> StreamingResponse:
        caller.permit(body.targets())
        return await spooled(lambda path: reme.export_memory(path, **body.model_dump()))

    @app.post("/v1/memories/import", response_model=Count, tags=["files"],
              openapi_extra={"requestBody": {"required": True, "content": {"application/x-ndjson": {
                  "schema": {"type": "string", "description": "JSONL: one memory a line"}}}}})
    async def import_memory(request: Request, format: Literal["jsonl", "reme-jsonl"] = Query("jsonl"),
                            scope: ScopeArgs = Depends(scope_query), caller: Caller = Auth,
                            reme: ReMe = Facade) -> Count:
        caller.permit(scope.targets(), destructive="import")
        n = await unspooled(await request.body(),
                            lambda path: reme.import_memory(path, format=format, **scope.model_dump()))
        return Count(count=n)

    @app.post("/v1/backup", tags=["files"], response_class=StreamingResponse,
              responses={200: {"content": {"application/x-ndjson": {}},
                               "description": "every memory and version with its vector, as `backup` writes them"}})
    async def backup(caller: Caller = Auth, reme: ReMe = Facade) -> StreamingResponse:
        caller.permit([])  # the whole store: a token with `*` for every kind
        return await spooled(lambda path: reme.backup(path))

    @app.post("/v1/restore", response_model=Count, tags=["files"],
              openapi_extra={"requestBody": {"required": True, "content": {"application/x-ndjson": {
                  "schema": {"type": "string", "description": "a file written by backup"}}}}})
    async def restore(request: Request, caller: Caller = Auth, reme: ReMe = Facade) -> Count:
        caller.permit([], destructive="restore")
        return Count(count=await unspooled(await request.body(), lambda path: reme.restore(path)))

    # -- Markdown --
    async def in_tree(files: dict[str, str], call: Callable[[Path], Awaitable[T]]) -> tuple[T, dict[str, str]]:
        """Hand a tree sent as text to a facade method that works on a directory; return what it
        returns and the tree's files after it."""
        with tempfile.TemporaryDirectory(prefix="reme-md-") as folder:
            root = Path(folder) / "tree"
            await asyncio.to_thread(markdown.write_tree, root, files)
            try:
                out = await run(call(root))
            except InvalidInputError as exc:  # name the tree, not the spool directory
                raise type(exc)(str(exc).replace(str(root), "the tree")) from None
            return out, await asyncio.to_thread(markdown.tree_texts, root)

    @app.post("/v1/markdown/export", response_model=MarkdownExportReply, tags=["files"])
    async def export_markdown(body: MarkdownExportRequest, caller: Caller = Auth,
                              reme: ReMe = Facade) -> MarkdownExportReply:
        caller.permit(body.targets())
        args = body.model_dump()
        done, files = await in_tree(args.pop("files"), lambda root: reme.export_markdown(root, **args))
        return MarkdownExportReply(export=done.model_copy(update={"directory": "."}), files=files)

    @app.post("/v1/markdown/sync", response_model=MarkdownSyncReply, tags=["files"])
    async def sync_markdown(body: MarkdownSyncRequest, caller: Caller = Auth, reme: ReMe = Facade) -> MarkdownSyncReply:
        caller.permit(body.targets())
        args = body.model_dump()
        result, files = await in_tree(args.pop("files"), lambda root: reme.sync_markdown(root, **args))
        return MarkdownSyncReply(result=result, files=files)

    # -- pipelines --
    @app.post("/v1/summarize", response_model=SummaryResult, tags=["pipelines"])
    async def summarize_memory(body: SummarizeRequest, caller: Caller = Auth, reme: ReMe = Facade) -> SummaryResult:
        caller.permit(body.targets())
        batch(len(body.messages or body.trajectories or body.tool_calls or []), "items to summarize")
        args = body.model_dump(exclude_unset=True, exclude={"messages", "trajectories", "tool_calls"})
        return await run(reme.summarize_memory(body.messages, trajectories=body.trajectories,
                                               tool_calls=body.tool_calls, **args))

    @app.post("/v1/retrieve", response_model=RetrieveResult, tags=["pipelines"])
    async def retrieve_memory(body: RetrieveRequest, caller: Caller = Auth, reme: ReMe = Facade) -> RetrieveResult:
        caller.permit(body.targets())
        ceiling(body.top_k, limits.max_top_k, "top_k")
        batch(len(body.targets()), "targets")
        args = body.model_dump(exclude_unset=True, exclude={"time_window"})
        return await run(reme.retrieve_memory(args.pop("query", None), time_window=body.time_window, **args))

    @app.post("/v1/prune", response_model=list[MemoryNode], tags=["pipelines"])
    async def prune(body: PruneRequest, caller: Caller = Auth, reme: ReMe = Facade) -> list[MemoryNode]:
        caller.permit(body.targets(), destructive="prune")
        args = body.model_dump()
        return await run(reme.prune(args.pop("task_name"), **args))

    @app.post("/v1/forget", response_model=Count, tags=["pipelines"])
    async def forget(body: ForgetRequest, caller: Caller = Auth, reme: ReMe = Facade) -> Count:
        caller.permit(body.targets(), destructive="forget")
        batch(len(body.targets()), "targets")
        return Count(count=await run(reme.forget(**body.model_dump())))

    @app.post("/v1/flush_reads", response_model=Count, tags=["pipelines"])
    async def flush_reads(caller: Caller = Auth, reme: ReMe = Facade) -> Count:
        caller.permit([])
        return Count(count=await run(reme.flush_reads()))

    @app.post("/v1/optimize", response_model=Optimized, tags=["pipelines"])
    async def optimize(caller: Caller = Auth, reme: ReMe = Facade) -> Optimized:
        caller.permit([])
        return Optimized(optimized=await run(reme.optimize()))

    # -- working memory (sessions and context) --
    @app.post("/v1/sessions/{session_name}/messages", response_model=list[SessionMessage], tags=["sessions"])
    async def add_messages(session_name: str, body: AddMessagesRequest, caller: Caller = Auth,
                           reme: ReMe = Facade) -> list[SessionMessage]:
        caller.permit([("session", session_name)])
        batch(len(body.messages), "messages")
        return await run(reme.add_messages(body.messages, session_name=session_name, marks=body.marks))

    @app.post("/v1/sessions/{session_name}/messages/get", response_model=list[SessionMessage], tags=["sessions"])
    async def get_messages(session_name: str, body: GetMessagesRequest, caller: Caller = Auth,
                           reme: ReMe = Facade) -> list[SessionMessage]:
        caller.permit([("session", session_name)])
        batch(len(body.message_ids or []), "message_ids")
        return await run(reme.get_messages(session_name=session_name, **body.model_dump()))

    @app.post("/v1/sessions/{session_name}/messages/delete", response_model=Count, tags=["sessions"])
    async def delete_messages(session_name: str, body: IdsRequest, caller: Caller = Auth,
                              reme: ReMe = Facade) -> Count:
        caller.permit([("session", session_name)])
        batch(len(body.ids), "ids")
        return Count(count=await run(reme.delete_messages(body.ids, session_name=session_name)))

    @app.post("/v1/sessions/{session_name}/messages/delete_by_mark", response_model=Count, tags=["sessions"])
    async def delete_messages_by_mark(session_name: str, body: MarkRequest, caller: Caller = Auth,
                                      reme: ReMe = Facade) -> Count:
        caller.permit([("session", session_name)])
        return Count(count=await run(reme.delete_messages_by_mark(body.mark, session_name=session_name)))

    @app.post("/v1/sessions/{session_name}/marks", response_model=Count, tags=["sessions"])
    async def update_marks(session_name: str, body: MarksRequest, caller: Caller = Auth,
                           reme: ReMe = Facade) -> Count:
        caller.permit([("session", session_name)])
        batch(len(body.ids or []), "ids")
        return Count(count=await run(reme.update_marks(session_name=session_name, **body.model_dump())))

    @app.put("/v1/sessions/{session_name}/summary", status_code=204, response_class=Response, tags=["sessions"])
    async def update_compressed_summary(session_name: str, body: SummaryRequest, caller: Caller = Auth,
                                        reme: ReMe = Facade) -> Response:
        caller.permit([("session", session_name)])
        await run(reme.update_compressed_summary(body.summary, session_name=session_name))
        return Response(status_code=204)

    @app.get("/v1/sessions/{session_name}/size", response_model=SessionSize, tags=["sessions"])
    async def session_size(session_name: str, caller: Caller = Auth, reme: ReMe = Facade) -> SessionSize:
        caller.permit([("session", session_name)])
        return await run(reme.session_size(session_name=session_name))

    @app.post("/v1/sessions/{session_name}/clear", response_model=Count, tags=["sessions"])
    async def clear_session(session_name: str, caller: Caller = Auth, reme: ReMe = Facade) -> Count:
        caller.permit([("session", session_name)])
        return Count(count=await run(reme.clear_session(session_name=session_name)))

    @app.get("/v1/sessions/{session_name}/state", tags=["sessions"])
    async def session_state(session_name: str, caller: Caller = Auth, reme: ReMe = Facade) -> dict[str, Any]:
        caller.permit([("session", session_name)])
        return await run(reme.session_state(session_name=session_name))

    @app.put("/v1/sessions/{session_name}/state", response_model=Count, tags=["sessions"])
    async def load_session_state(session_name: str, body: StateRequest, caller: Caller = Auth,
                                 reme: ReMe = Facade) -> Count:
        caller.permit([("session", session_name)])
        return Count(count=await run(reme.load_session_state(body.state, session_name=session_name)))

    @app.post("/v1/sessions/{session_name}/tool_results", response_model=CompactedContext, tags=["context"])
    async def compact_tool_results(session_name: str, body: ToolResultsRequest, caller: Caller = Auth,
                                   reme: ReMe = Facade) -> CompactedContext:
        caller.permit([("session", session_name)])
        batch(len(body.messages), "messages")
        args = body.model_dump()
        return await run(reme.compact_tool_results(args.pop("messages"), session_name=session_name, **args))

    @app.get("/v1/sessions/{session_name}/tool_results/{ref}", response_model=ToolResult, tags=["context"])
    async def read_tool_result(session_name: str, ref: str, caller: Caller = Auth,
                               reme: ReMe = Facade) -> ToolResult:
        caller.permit([("session", session_name)])
        return ToolResult(content=await run(reme.read_tool_result(ref, session_name=session_name)))

    @app.post("/v1/sessions/{session_name}/prepare", response_model=CompactedContext, tags=["context"])
    async def prepare_context(session_name: str, body: PrepareRequest, caller: Caller = Auth,
                              reme: ReMe = Facade) -> CompactedContext:
        caller.permit([("session", session_name)] + ([("user", body.user_name)] if body.user_name else []))
        return await run(reme.prepare_context(session_name=session_name, **body.model_dump()))

    @app.post("/v1/context/compact", response_model=CompactedContext, tags=["context"])
    async def compact_context(body: CompactRequest, caller: Caller = Auth, reme: ReMe = Facade) -> CompactedContext:
        if not (caller.token is not None and caller.token.sessions):  # stores nothing: any session right will do
            caller.permit([])
        batch(len(body.messages), "messages")
        args = body.model_dump()
        return await run(reme.compact_context(args.pop("messages"), **args))

    @app.post("/v1/background/wait", response_model=Count, tags=["context"])
    async def wait_background(body: WaitRequest | None = None, caller: Caller = Auth, reme: ReMe = Facade) -> Count:
        session = body.session_name if body is not None else None
        caller.permit([] if session is None else [("session", session)])
        if session is None:  # every session's work: a token for all of them
            caller.permit([("session", "*")])
        return Count(count=await run(reme.wait_background(session_name=session)))

    app.add_middleware(Guard, limits=limits, log=log, fields=worker)
    return app


def check_workers(config: ServerConfig, store: VectorStoreConfig) -> None:
    """`ConfigError` unless `config.workers` processes may share `store`: more than one needs a
    Qdrant server (`url`), since the embedded store and qdrant-client's local mode are one process's."""
    if config.workers > 1 and not (store.backend == "qdrant" and store.url):
        where = "the embedded store (Qdrant Edge)" if store.backend == "edge" else "qdrant-client's local mode"
        raise ConfigError(f"workers = {config.workers} needs a Qdrant server store (vector_store.backend = "
                          f'"qdrant" and vector_store.url): {where} is one process\'s; serve it with one worker '
                          "(docs/scaling.md)")


@dataclass(frozen=True)
class WorkerApp:
    """The app factory each process of `serve` with several workers calls: uvicorn's supervisor
    pickles it into the process it spawns, so the settings (secrets included) pass through no
    environment variable and no file. Each process builds its own ReMe from `reme_config`."""

    reme_config: ReMeConfig
    config: ServerConfig

    def __call__(self) -> FastAPI:
        log_json_lines()
        return create_app(ReMe(self.reme_config), self.config)


def serve(config: ServerConfig, reme: ReMe) -> int:
    """Open the store (failing fast when it is held elsewhere), then serve until SIGTERM/SIGINT:
    in-flight requests finish, then the store is closed. Returns the exit code.

    With `config.workers` > 1 (a Qdrant server store only: `check_workers`), the store is opened
    once here to fail fast, then uvicorn's supervisor binds the port and runs that many processes
    on it, each with a ReMe of its own made from `reme.config` (components passed to `reme` itself
    are not used); SIGTERM stops them all, each finishing its requests and closing its store."""
    import uvicorn

    check_workers(config, reme.config.vector_store)
    log_json_lines()  # every line on stderr is one JSON object, whichever library writes it
    _Server = uvicorn_server_class()
    start = {"event": "start", "url": f"http://{config.host}:{config.port}",
             "working_dir": str(reme.config.working_dir), "tokens": [t.name for t in config.tokens],
             "workers": config.workers}
    if config.workers > 1:
        return _serve_workers(config, reme, start)

    async def main() -> int:
        await reme.open()  # StoreLockedError and ConfigError surface before the port is bound
        log.info(json.dumps(start), extra={"json": start})
        app = create_app(reme, config)
        server = _Server(uvicorn.Config(app, host=config.host, port=config.port, access_log=False,
                                        log_level="warning", log_config=None, lifespan="on", workers=1,
                                        timeout_graceful_shutdown=int(config.limits.timeout_s) + 5))
        try:
            await server.serve()
        finally:
            await reme.close()
        return 0 if server.started else 1

    return asyncio.run(main())


def _serve_workers(config: ServerConfig, reme: ReMe, start: dict[str, Any]) -> int:
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    async def check() -> None:  # an unreachable server, a vector size mismatch: one line, before the port is bound
        await reme.open()
        await reme.close()

    asyncio.run(check())
    settings = uvicorn.Config(WorkerApp(reme.config, config), factory=True, host=config.host, port=config.port,
                              workers=config.workers, access_log=False, log_level="warning", log_config=None,
                              lifespan="on", timeout_graceful_shutdown=int(config.limits.timeout_s) + 5)
    supervisor = Multiprocess(settings, sockets=[settings.bind_socket()])
    log.info(json.dumps(start), extra={"json": start})
    supervisor.run()  # until SIGTERM/SIGINT, or a worker that fails to start
    return 1 if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes) else 0


__all__ = ["STATUS", "WorkerApp", "check_workers", "create_app", "serve", "status_of"]
