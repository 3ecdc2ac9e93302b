"""`ReMeClient`: the facade's API over HTTP, against `reme serve`. Same method names, arguments
and return types as `ReMe`, and the same `ReMeError` subclasses, raised from the service's error
bodies. Imports only the schema and the errors (and httpx), so a remote agent pulls in no store.

>>> async with ReMeClient("http://127.0.0.1:8000", token="...") as reme:
...     node = await reme.add_memory("Alice prefers window seats", user_name="alice")
...     hits = await reme.search_memory("seat preference", user_name="alice", top_k=5)

`ReMeClientSync` mirrors it without `async`.
"""

from __future__ import annotations

import asyncio
import os
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import httpx
from pydantic import BaseModel, TypeAdapter

from reme import errors, markdown
from reme.errors import InvalidInputError, ReMeError, ServiceError
from reme.markdown import MarkdownExport, MarkdownExportReply, MarkdownSyncReply, MarkdownSyncResult
from reme.sync import SyncFace
from reme.schema import (MemoryNode, MemoryPage, MemoryType, MemoryVersion, MessagesSpec, RetrieveResult,
                         SearchResult, SummaryResult, TimeWindow, ToolCallRecord, Trajectory)
from reme.working import (CompactedContext, SessionMessage, SessionSize, Tokenizer, count_tokens, message_tokens)
FilterSpec = Mapping[str, Any] | BaseModel | None
SearchMode = Literal["dense", "keyword", "hybrid"]
Direction = Literal["asc", "desc"]
Names = str | Sequence[str] | None
WindowSpec = TimeWindow | tuple[datetime | None, datetime | None] | None
_NODES = TypeAdapter(list[MemoryNode])
_HITS = TypeAdapter(list[SearchResult])
_VERSIONS = TypeAdapter(list[MemoryVersion])
_MESSAGES = TypeAdapter(list[SessionMessage])


def _error_classes() -> dict[str, type[ReMeError]]:
    out: dict[str, type[ReMeError]] = {}
    todo: list[type[ReMeError]] = [ReMeError]
    while todo:
        cls = todo.pop()
        if cls.__module__ == errors.__name__:
            out[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return out


ERRORS = _error_classes()


def error_from(status: int, body: Any) -> ReMeError:
    """The `ReMeError` an error body describes (`ServiceError` when it names no known type)."""
    info = body.get("error") if isinstance(body, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("type"), str):
        return ServiceError(f"HTTP {status}: {str(body)[:200]}", status_code=status)
    cls = ERRORS.get(info["type"], ServiceError)
    exc = cls.__new__(cls)
    Exception.__init__(exc, str(info.get("message", "")))
    raw_details = info.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    for base in cls.__mro__:  # the attributes the facade's errors carry
        for name in _ATTRS.get(base.__name__, ()):
            setattr(exc, name, details.get(name, "" if name == "raw" else None))
    if isinstance(exc, ServiceError):
        exc.status_code = status
    return exc


_ATTRS = {"ServiceError": ("status_code",), "LLMError": ("status_code", "response"), "LLMOutputError": ("raw",),
          "MemoryNotFoundError": ("memory_id",)}


def _plain(value: Any) -> Any:
    """Arguments as JSON values: models dumped, datetimes in ISO 8601, enums by value."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=False)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _body(**kwargs: Any) -> dict[str, Any]:
    return {k: _plain(v) for k, v in kwargs.items() if v is not None}


def _scope(user_name: Names, task_name: Names, tool_name: Names) -> dict[str, Any]:
    """The target arguments given: a name, or (for reading calls) a list of names of one kind."""
    return {k: v if isinstance(v, str) else list(v) for k, v in
            (("user_name", user_name), ("task_name", task_name), ("tool_name", tool_name)) if v is not None}


class ReMeClient:
    """The memory API of a `reme serve` at `base_url`.

    `token` is sent as a bearer token. `timeout` bounds each request (seconds; the server has its
    own `limits.timeout_s`), `connect_timeout` the connection. Connection failures are retried
    `retries` times with exponential backoff from `backoff` seconds: any call whose request was
    never sent, and reading calls (get, list, count, search, history, export, retrieve) whatever
    broke. A failure after the retries is a `ServiceError` with `status_code` None.
    """

    def __init__(self, base_url: str | None = None, *, token: str | None = None, timeout: float = 60.0,
                 connect_timeout: float = 5.0, retries: int = 3, backoff: float = 0.2,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if retries < 0 or backoff < 0 or timeout <= 0 or connect_timeout <= 0:
            raise InvalidInputError("timeouts must be positive, retries and backoff not negative")
        self.base_url = (base_url or os.environ.get("REME_URL") or "http://127.0.0.1:8000").rstrip("/")
        token = token if token is not None else os.environ.get("REME_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.retries, self.backoff = retries, backoff
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=headers, transport=transport,
                                       timeout=httpx.Timeout(timeout, connect=connect_timeout))

    async def open(self) -> "ReMeClient":
        return self

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "ReMeClient":
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None,
                    content: bytes | None = None, headers: Mapping[str, str] | None = None,
                    idempotent: bool = False) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(method, path, json=json, params=params, content=content,
                                                    headers=headers)
                break
            except httpx.TransportError as exc:
                # A refused connection never delivered the request; anything else may have.
                retriable = idempotent or isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if not retriable or attempt >= self.retries:
                    raise ServiceError(f"{method} {self.base_url}{path} failed: {type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(self.backoff * 2 ** attempt)
                attempt += 1
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = response.text
            raise error_from(response.status_code, body)
        return response

    # -- meta --------------------------------------------------------------------------------------
    async def health(self) -> bool:
        return bool((await self._call("GET", "/v1/health", idempotent=True)).json().get("status") == "ok")

    async def version(self) -> str:
        return str((await self._call("GET", "/v1/version", idempotent=True)).json()["version"])

    # -- writing -----------------------------------------------------------------------------------
    async def add_memory(self, content: str, *, user_name: str | None = None, task_name: str | None = None,
                         tool_name: str | None = None, memory_type: MemoryType | str | None = None,
                         when_to_use: str = "", metadata: Mapping[str, Any] | None = None,
                         tags: Sequence[str] | None = None, score: float = 0.0,
                         message_time: datetime | None = None, author: str = "",
                         ref_ids: Sequence[str] | None = None, expires_at: datetime | None = None,
                         ttl: timedelta | float | None = None) -> MemoryNode:
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        body = _body(content=content, memory_type=memory_type, when_to_use=when_to_use, metadata=metadata, tags=tags,
                     score=score, message_time=message_time, author=author, ref_ids=ref_ids, expires_at=expires_at,
                     ttl=seconds, **_scope(user_name, task_name, tool_name))
        return MemoryNode.model_validate_json((await self._call("POST", "/v1/memories", json=body)).content)

    async def add_memories(self, nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
        response = await self._call("POST", "/v1/memories/batch", json={"nodes": _plain(list(nodes))})
        return _NODES.validate_json(response.content)

    async def update_memory(self, memory_id: str, *, content: str | None = None, when_to_use: str | None = None,
                            metadata: Mapping[str, Any] | None = None, tags: Sequence[str] | None = None,
                            score: float | None = None, message_time: datetime | None = None,
                            author: str | None = None, ref_ids: Sequence[str] | None = None,
                            expires_at: datetime | None = None, user_name: str | None = None,
                            task_name: str | None = None, tool_name: str | None = None) -> MemoryNode:
        body = _body(content=content, when_to_use=when_to_use, metadata=metadata, tags=tags, score=score,
                     message_time=message_time, author=author, ref_ids=ref_ids, expires_at=expires_at,
                     **_scope(user_name, task_name, tool_name))
        response = await self._call("PATCH", f"/v1/memories/{_quote(memory_id)}", json=body)
        return MemoryNode.model_validate_json(response.content)

    async def delete_memory(self, memory_id: str, *, user_name: str | None = None, task_name: str | None = None,
                            tool_name: str | None = None) -> None:
        await self._call("DELETE", f"/v1/memories/{_quote(memory_id)}",
                         params=_scope(user_name, task_name, tool_name))

    async def delete_all(self, *, user_name: str | None = None, task_name: str | None = None,
                         tool_name: str | None = None, memory_type: MemoryType | str | None = None,
                         everything: bool = False) -> int:
        body = _body(memory_type=memory_type, everything=everything, **_scope(user_name, task_name, tool_name))
        return int((await self._call("POST", "/v1/memories/delete_all", json=body)).json()["count"])

    # -- reading -----------------------------------------------------------------------------------
    async def get_memory(self, memory_id: str, *, user_name: str | None = None, task_name: str | None = None,
                         tool_name: str | None = None) -> MemoryNode:
        response = await self._call("GET", f"/v1/memories/{_quote(memory_id)}",
                                    params=_scope(user_name, task_name, tool_name), idempotent=True)
        return MemoryNode.model_validate_json(response.content)

    async def search_memory(self, query: str, *, user_name: str | Sequence[str] | None = None,
                            task_name: str | Sequence[str] | None = None, tool_name: str | Sequence[str] | None = None,
                            memory_type: MemoryType | str | None = None,
                            top_k: int = 10, mode: SearchMode = "hybrid", filters: FilterSpec = None,
                            score_threshold: float | None = None,
                            vector: Sequence[float] | None = None) -> list[SearchResult]:
        body = _body(query=query, memory_type=memory_type, top_k=top_k, mode=mode, filters=filters,
                     score_threshold=score_threshold, vector=None if vector is None else list(vector),
                     **_scope(user_name, task_name, tool_name))
        return _HITS.validate_json((await self._call("POST", "/v1/memories/search", json=body,
                                                     idempotent=True)).content)

    async def list_memory(self, *, user_name: str | Sequence[str] | None = None,
                          task_name: str | Sequence[str] | None = None, tool_name: str | Sequence[str] | None = None,
                          memory_type: MemoryType | str | None = None,
                          filters: FilterSpec = None, sort_key: str | None = None, direction: Direction = "desc",
                          limit: int = 100, cursor: str | None = None) -> MemoryPage:
        body = _body(memory_type=memory_type, filters=filters, sort_key=sort_key, direction=direction, limit=limit,
                     cursor=cursor, **_scope(user_name, task_name, tool_name))
        response = await self._call("POST", "/v1/memories/list", json=body, idempotent=True)
        return MemoryPage.model_validate_json(response.content)

    async def count_memory(self, *, user_name: str | Sequence[str] | None = None,
                           task_name: str | Sequence[str] | None = None, tool_name: str | Sequence[str] | None = None,
                           memory_type: MemoryType | str | None = None,
                           filters: FilterSpec = None) -> int:
        body = _body(memory_type=memory_type, filters=filters, **_scope(user_name, task_name, tool_name))
        return int((await self._call("POST", "/v1/memories/count", json=body, idempotent=True)).json()["count"])

    async def history(self, memory_id: str, *, user_name: str | None = None, task_name: str | None = None,
                      tool_name: str | None = None) -> list[MemoryVersion]:
        response = await self._call("GET", f"/v1/memories/{_quote(memory_id)}/history",
                                    params=_scope(user_name, task_name, tool_name), idempotent=True)
        return _VERSIONS.validate_json(response.content)

    # -- files -------------------------------------------------------------------------------------
    async def export_memory(self, path: str | Path, *, user_name: str | None = None, task_name: str | None = None,
                            tool_name: str | None = None, memory_type: MemoryType | str | None = None,
                            filters: FilterSpec = None, with_vectors: bool = False,
                            with_history: bool = True) -> int:
        """Stream the service's export into the local file `path`; returns how many memories."""
        body = _body(memory_type=memory_type, filters=filters, with_vectors=with_vectors, with_history=with_history,
                     **_scope(user_name, task_name, tool_name))
        return await self._download("/v1/memories/export", body, path)

    async def backup(self, path: str | Path) -> int:
        """Stream the service's whole store (every memory and version, vectors included) into the
        local file `path`; returns how many records. `restore` loads it (here or in process)."""
        return await self._download("/v1/backup", None, path)

    async def restore(self, path: str | Path) -> int:
        """Send a file written by `backup` to the service, whose store must hold no memories yet."""
        return await self._upload("/v1/restore", {}, path)

    async def _download(self, route: str, body: Any, path: str | Path) -> int:
        """Stream a JSONL answer into `path` (via a temporary file: a failure leaves no half file);
        the count comes from the X-ReMe-Count header. Retried like a reading call."""
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        attempt = 0
        while True:
            try:
                async with self._http.stream("POST", route, json=body) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        try:
                            error_body = response.json()
                        except ValueError:
                            error_body = response.text
                        raise error_from(response.status_code, error_body)
                    with tmp.open("wb") as fh:
                        async for chunk in response.aiter_bytes():
                            fh.write(chunk)
                    count = int(response.headers.get("x-reme-count", "0"))
                break
            except httpx.TransportError as exc:
                if attempt >= self.retries:
                    raise ServiceError(f"POST {self.base_url}{route} failed: {type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(self.backoff * 2 ** attempt)
                attempt += 1
        os.replace(tmp, target)
        return count

    async def _upload(self, route: str, params: Mapping[str, str], path: str | Path) -> int:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None
        response = await self._call("POST", route, params=params, content=data,
                                    headers={"Content-Type": "application/x-ndjson"})
        return int(response.json()["count"])

    async def export_markdown(self, directory: str | Path, *, user_name: str | None = None,
                              task_name: str | None = None, tool_name: str | None = None,
                              overwrite: bool = False) -> MarkdownExport:
        """The service's Markdown of a target, written under the local `directory` (the tree
        there is sent along, so the same checks hold); see `ReMe.export_markdown`."""
        root = markdown.directory_arg(directory)
        local = markdown.tree_texts(root)
        body = _body(files=local, overwrite=overwrite, **_scope(user_name, task_name, tool_name))
        response = await self._call("POST", "/v1/markdown/export", json=body)
        reply = MarkdownExportReply.model_validate_json(response.content)
        markdown.write_tree(root, reply.files, stale=[rel for rel in local if rel not in reply.files])
        return reply.export.model_copy(update={"directory": str(root)})

    async def sync_markdown(self, directory: str | Path, *, user_name: str | None = None,
                            task_name: str | None = None, tool_name: str | None = None, dry_run: bool = False,
                            force: bool = False) -> MarkdownSyncResult:
        """Send the local tree under `directory` to the service, which applies it as
        `ReMe.sync_markdown` does (one batch, or nothing); the tree it rewrites comes back."""
        root = markdown.directory_arg(directory)
        local = markdown.tree_texts(root)
        body = _body(files=local, dry_run=dry_run, force=force, **_scope(user_name, task_name, tool_name))
        response = await self._call("POST", "/v1/markdown/sync", json=body)
        reply = MarkdownSyncReply.model_validate_json(response.content)
        if reply.result.rewritten:
            markdown.write_tree(root, reply.files, stale=[rel for rel in local if rel not in reply.files])
        return reply.result

    async def import_memory(self, path: str | Path, *, format: str = "jsonl", user_name: str | None = None,
                            task_name: str | None = None, tool_name: str | None = None) -> int:
        """Send the local JSONL file `path` to the service; see `ReMe.import_memory`."""
        return await self._upload("/v1/memories/import", {"format": format, **_scope(user_name, task_name, tool_name)},
                                  path)

    # -- pipelines ---------------------------------------------------------------------------------
    async def summarize_memory(self, messages: MessagesSpec | None = None, *,
                               user_name: str | Sequence[str] | None = None,
                               trajectories: Sequence[Trajectory | Mapping[str, Any]] | None = None,
                               task_name: str | None = None,
                               tool_calls: Sequence[ToolCallRecord | Mapping[str, Any]] | None = None,
                               tool_name: str | None = None, now: datetime | None = None,
                               session_name: str | None = None) -> SummaryResult:
        body = _body(messages=messages, user_name=user_name, trajectories=trajectories, task_name=task_name,
                     tool_calls=tool_calls, tool_name=tool_name, now=now, session_name=session_name)
        return SummaryResult.model_validate_json((await self._call("POST", "/v1/summarize", json=body)).content)

    async def retrieve_memory(self, query: str | None = None, *, user_name: str | Sequence[str] | None = None,
                              task_name: str | None = None, tool_name: str | Sequence[str] | None = None,
                              top_k: int | None = None, rewrite: bool | None = None, rerank: bool | None = None,
                              time_window: WindowSpec = None, with_source: bool = False,
                              now: datetime | None = None) -> RetrieveResult:
        window: Any = time_window
        if isinstance(window, tuple):
            if len(window) != 2:
                raise InvalidInputError("time_window is a (start, end) pair")
            window = {"start": window[0], "end": window[1]}
        body = _body(query=query, user_name=user_name, task_name=task_name, tool_name=tool_name, top_k=top_k,
                     rewrite=rewrite, rerank=rerank, time_window=window, with_source=with_source, now=now)
        response = await self._call("POST", "/v1/retrieve", json=body, idempotent=True)
        return RetrieveResult.model_validate_json(response.content)

    async def record_usage(self, memory_ids: Sequence[str], success: bool, *, user_name: str | None = None,
                           task_name: str | None = None, tool_name: str | None = None) -> list[MemoryNode]:
        if isinstance(memory_ids, str):
            memory_ids = [memory_ids]
        if not isinstance(memory_ids, (list, tuple)) or not isinstance(success, bool):
            raise InvalidInputError("record_usage takes a memory id or a list of them, and success True or False")
        body = _body(memory_ids=list(memory_ids), success=success, **_scope(user_name, task_name, tool_name))
        return _NODES.validate_json((await self._call("POST", "/v1/memories/usage", json=body)).content)

    async def prune(self, task_name: str | None = None, *, user_name: str | None = None, tool_name: str | None = None,
                    min_freq: int = 3, min_utility_ratio: float = 0.3, everything: bool = False,
                    now: datetime | None = None) -> list[MemoryNode]:
        body = _body(task_name=task_name, user_name=user_name, tool_name=tool_name, min_freq=min_freq,
                     min_utility_ratio=min_utility_ratio, everything=everything, now=now)
        return _NODES.validate_json((await self._call("POST", "/v1/prune", json=body)).content)

    async def forget(self, *, user_name: str | Sequence[str] | None = None,
                     task_name: str | Sequence[str] | None = None, tool_name: str | Sequence[str] | None = None,
                     memory_type: MemoryType | str | None = None, filters: FilterSpec = None,
                     purge: bool = False, scrub: bool = False, everything: bool = False) -> int:
        body = _body(user_name=user_name, task_name=task_name, tool_name=tool_name, memory_type=memory_type,
                     filters=filters, purge=purge, scrub=scrub, everything=everything)
        return int((await self._call("POST", "/v1/forget", json=body)).json()["count"])

    async def flush_reads(self) -> int:
        return int((await self._call("POST", "/v1/flush_reads")).json()["count"])

    async def optimize(self) -> bool:
        return bool((await self._call("POST", "/v1/optimize")).json()["optimized"])

    # -- working memory ----------------------------------------------------------------------------
    def _session(self, session_name: str, tail: str) -> str:
        if not isinstance(session_name, str) or not session_name.strip():
            raise InvalidInputError("session_name must be a non-empty string")
        return f"/v1/sessions/{_quote(session_name)}{tail}"

    async def add_messages(self, messages: Sequence[Any], *, session_name: str,
                           marks: str | Sequence[str] | None = None) -> list[SessionMessage]:
        body = _body(messages=list(messages), marks=marks)
        return _MESSAGES.validate_json((await self._call("POST", self._session(session_name, "/messages"),
                                                         json=body)).content)

    async def get_messages(self, *, session_name: str, mark: str | Sequence[str] | None = None,
                           exclude_mark: str | Sequence[str] | None = None, prepend_summary: bool = False,
                           last: int | None = None, after: str | None = None,
                           message_ids: Sequence[str] | None = None) -> list[SessionMessage]:
        body = _body(mark=mark, exclude_mark=exclude_mark, prepend_summary=prepend_summary, last=last, after=after,
                     message_ids=[message_ids] if isinstance(message_ids, str) else message_ids)
        response = await self._call("POST", self._session(session_name, "/messages/get"), json=body, idempotent=True)
        return _MESSAGES.validate_json(response.content)

    async def delete_messages(self, ids: Sequence[str], *, session_name: str) -> int:
        body = {"ids": [ids] if isinstance(ids, str) else list(ids)}
        return int((await self._call("POST", self._session(session_name, "/messages/delete"),
                                     json=body)).json()["count"])

    async def delete_messages_by_mark(self, mark: str | Sequence[str], *, session_name: str) -> int:
        return int((await self._call("POST", self._session(session_name, "/messages/delete_by_mark"),
                                     json=_body(mark=mark))).json()["count"])

    async def update_marks(self, *, session_name: str, ids: Sequence[str] | None = None,
                           add: str | Sequence[str] | None = None,
                           remove: str | Sequence[str] | None = None) -> int:
        body = _body(ids=[ids] if isinstance(ids, str) else ids, add=add, remove=remove)
        return int((await self._call("POST", self._session(session_name, "/marks"), json=body)).json()["count"])

    async def update_compressed_summary(self, summary: str, *, session_name: str) -> None:
        await self._call("PUT", self._session(session_name, "/summary"), json={"summary": summary})

    async def session_size(self, *, session_name: str, tokenizer: Tokenizer | None = None) -> SessionSize:
        """With a tokenizer, the messages are fetched and counted here (a callable does not travel)."""
        if tokenizer is None:
            response = await self._call("GET", self._session(session_name, "/size"), idempotent=True)
            return SessionSize.model_validate_json(response.content)
        if not callable(tokenizer):
            raise InvalidInputError("tokenizer must be a callable: text -> token count or list of tokens")
        state = await self.session_state(session_name=session_name)
        summary = state.get("_compressed_summary") or ""
        summary_tokens = count_tokens(summary, tokenizer) if summary else 0
        tokens = sum(message_tokens(message, tokenizer) for message, _ in state.get("content", []))
        return SessionSize(messages=len(state.get("content", [])), tokens=tokens + summary_tokens,
                           summary_tokens=summary_tokens)

    async def clear_session(self, *, session_name: str) -> int:
        return int((await self._call("POST", self._session(session_name, "/clear"))).json()["count"])

    async def session_state(self, *, session_name: str) -> dict[str, Any]:
        state = (await self._call("GET", self._session(session_name, "/state"), idempotent=True)).json()
        return state if isinstance(state, dict) else {}

    async def load_session_state(self, state: Mapping[str, Any], *, session_name: str) -> int:
        if not isinstance(state, Mapping):
            raise InvalidInputError("a session state is a dict with `content` and `_compressed_summary`")
        return int((await self._call("PUT", self._session(session_name, "/state"),
                                     json={"state": _plain(state)})).json()["count"])

    async def compact_tool_results(self, messages: Sequence[Any], *, session_name: str,
                                   max_chars: int | None = None, ttl_s: float | None = None) -> CompactedContext:
        body = _body(messages=list(messages), max_chars=max_chars, ttl_s=ttl_s)
        response = await self._call("POST", self._session(session_name, "/tool_results"), json=body)
        return CompactedContext.model_validate_json(response.content)

    async def read_tool_result(self, ref: str, *, session_name: str) -> str:
        response = await self._call("GET", self._session(session_name, f"/tool_results/{_quote(ref)}"),
                                    idempotent=True)
        return str(response.json()["content"])

    @staticmethod
    def _no_tokenizer(tokenizer: Tokenizer | None) -> None:
        if tokenizer is not None:
            raise InvalidInputError("a tokenizer cannot travel over HTTP: the service estimates tokens "
                                    "(leave tokenizer out, or use ReMe in process)")

    async def compact_context(self, messages: Sequence[Any], *, previous_summary: str = "",
                              threshold: int | None = None, reserve: int | None = None,
                              tokenizer: Tokenizer | None = None) -> CompactedContext:
        self._no_tokenizer(tokenizer)
        body = _body(messages=list(messages), previous_summary=previous_summary, threshold=threshold, reserve=reserve)
        return CompactedContext.model_validate_json((await self._call("POST", "/v1/context/compact",
                                                                      json=body)).content)

    async def prepare_context(self, *, session_name: str, threshold: int | None = None, reserve: int | None = None,
                              user_name: str | None = None, tokenizer: Tokenizer | None = None) -> CompactedContext:
        self._no_tokenizer(tokenizer)
        body = _body(threshold=threshold, reserve=reserve, user_name=user_name)
        response = await self._call("POST", self._session(session_name, "/prepare"), json=body)
        return CompactedContext.model_validate_json(response.content)

    async def wait_background(self, *, session_name: str | None = None) -> int:
        body = _body(session_name=session_name)
        return int((await self._call("POST", "/v1/background/wait", json=body or None)).json()["count"])


def _quote(memory_id: str) -> str:
    from urllib.parse import quote

    return quote(str(memory_id), safe="")


class ReMeClientSync(SyncFace):
    """`ReMeClient` without `async`: the same methods, run on a private event loop in a thread.

    >>> with ReMeClientSync("http://127.0.0.1:8000", token="...") as reme:
    ...     reme.add_memory("Alice prefers window seats", user_name="alice")
    """

    _face: ReMeClient

    def __init__(self, base_url: str | None = None, **kwargs: Any) -> None:
        self._start("ReMeClientSync", lambda: ReMeClient(base_url, **kwargs))

    def open(self) -> "ReMeClientSync":
        return self

    def __enter__(self) -> "ReMeClientSync":
        return self.open()

    def health(self) -> bool:
        return self._run(self._face.health())

    def version(self) -> str:
        return self._run(self._face.version())


__all__ = ["ReMeClient", "ReMeClientSync", "error_from"]
