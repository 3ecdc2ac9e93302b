"""What `reme serve` and `reme mcp` share: bearer tokens scoped to targets, the request limits and
the settings file both read, and the ASGI guard that enforces the limits and logs each request.
Imports only the errors (uvicorn lazily), so it needs neither FastAPI nor mcp."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, MutableMapping, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from reme.config import read_config_file
from reme.errors import (AuthenticationError, ConfigError, PermissionDeniedError, RequestTimeoutError,
                         describe)

T = TypeVar("T")

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
KINDS = ("user", "task", "tool")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TokenConfig(_Strict):
    """A bearer token: its name (logged), its secret (never logged; 16+ characters), the targets
    it may touch (names per kind, `*` for any; `*` for all three also allows unscoped calls) and
    whether it may call destructive operations (delete_all, import, prune, restore)."""

    name: str = Field(min_length=1)
    secret: SecretStr
    users: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    sessions: list[str] = Field(default_factory=list)
    """Sessions (working memory) it may touch; not needed for unscoped calls."""
    destructive: bool = False

    @field_validator("secret")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        secret = value.get_secret_value()
        if secret != secret.strip():  # never presented as configured: HTTP drops spaces around a header value
            raise ValueError("a token secret must not start or end with whitespace")
        if len(secret) < 16:
            raise ValueError("a token secret needs at least 16 characters")
        return value

    def names(self, kind: str) -> list[str]:
        return {"user": self.users, "task": self.tasks, "tool": self.tools, "session": self.sessions}[kind]

    def may_touch(self, kind: str, name: str) -> bool:
        allowed = self.names(kind)
        return "*" in allowed or name.strip() in allowed

    @property
    def everything(self) -> bool:
        """May make unscoped calls: `*` for every kind."""
        return all("*" in self.names(k) for k in KINDS)


class Limits(_Strict):
    max_body_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    max_batch: int = Field(default=1000, ge=1)
    """Nodes in an add batch, items to summarize, ids to record usage of, tools to retrieve."""
    max_top_k: int = Field(default=100, ge=1)
    max_limit: int = Field(default=1000, ge=1)
    max_depth: int = Field(default=32, ge=2)
    """Deepest JSON nesting accepted in a body."""
    timeout_s: float = Field(default=60.0, gt=0)


class ServerConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    tokens: list[TokenConfig] = Field(default_factory=list)
    limits: Limits = Field(default_factory=Limits)
    workers: int = Field(default=1, ge=1, le=256)
    """Processes serving the port (`reme serve` on a Qdrant server store; the embedded store is one
    process's). Each opens its own ReMe on the same store; tokens, scopes and the API are the same."""

    @model_validator(mode="after")
    def _safe(self) -> "ServerConfig":
        if len({t.name for t in self.tokens}) != len(self.tokens):
            raise ValueError("token names must be unique")
        if len({t.secret.get_secret_value() for t in self.tokens}) != len(self.tokens):
            raise ValueError("token secrets must be unique")
        if not self.tokens and self.host not in LOOPBACK:
            raise ValueError(f"refusing to serve on {self.host} without tokens: configure server.tokens, "
                             "or bind to 127.0.0.1")
        return self

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: Any) -> "ServerConfig":
        """From a JSON/TOML file (its `server` section, or the whole file), then `overrides`."""
        data: dict[str, Any] = {}
        path = path or os.environ.get("REME_SERVER_CONFIG")
        if path:
            raw = read_config_file(Path(path))
            data = dict(raw.get("server", raw))
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid server config: {describe(exc)}") from None


# -- the caller ----------------------------------------------------------------------------------
class Caller:
    """Who is calling: a configured token, or anyone (no tokens configured: loopback only)."""

    def __init__(self, token: TokenConfig | None) -> None:
        self.token = token

    @property
    def name(self) -> str | None:
        return self.token.name if self.token else None

    def permit(self, targets: Sequence[tuple[str, str]], *, destructive: str | None = None) -> None:
        """Raise PermissionDeniedError unless the token may touch every target (no target: an
        unscoped call, which needs `*` for every kind) and, for `destructive`, has that right."""
        token = self.token
        if token is None:
            return
        if destructive and not token.destructive:
            raise PermissionDeniedError(f"token {token.name!r} may not call {destructive}", status_code=403)
        if not targets:
            if not token.everything:
                raise PermissionDeniedError(f"token {token.name!r} may only make calls naming a target it holds "
                                            "(user_name, task_name or tool_name)", status_code=403)
            return
        for kind, name in targets:
            if not isinstance(name, str) or not token.may_touch(kind, name):
                raise PermissionDeniedError(f"token {token.name!r} may not touch {kind} {name!r}", status_code=403)


def find_token(tokens: Sequence[TokenConfig], presented: str) -> TokenConfig | None:
    """The token whose secret is `presented`, compared in constant time against every token.
    Only the spaces and tabs HTTP allows around a header value are ignored: any other whitespace
    (a no-break space, a line separator) is part of what was presented, so it does not match."""
    given = presented.strip(" \t").encode("utf-8")
    match = None
    for token in tokens:  # compare with every token, so timing does not tell which one was close
        if hmac.compare_digest(given, token.secret.get_secret_value().encode("utf-8")):
            match = token
    return match


def caller_from(tokens: Sequence[TokenConfig], authorization: str) -> Caller:
    """Who presents this `Authorization` header: anyone when no tokens are configured, else the
    bearer token's holder; a missing or unknown token is an `AuthenticationError` (401)."""
    if not tokens:
        return Caller(None)
    scheme, _, presented = authorization.partition(" ")
    if scheme.lower() != "bearer" or not presented:
        raise AuthenticationError("a bearer token is required (Authorization: Bearer <token>)", status_code=401)
    match = find_token(tokens, presented)
    if match is None:
        raise AuthenticationError("unknown bearer token", status_code=401)
    return Caller(match)


async def bounded(coro: Awaitable[T], timeout_s: float) -> T:
    """`coro` within `limits.timeout_s`, shielded: a write under way completes (all or nothing)
    even when the caller is told it took too long (`RequestTimeoutError`, 408)."""
    task = asyncio.ensure_future(coro)
    try:
        return await asyncio.wait_for(asyncio.shield(task), timeout_s)
    except asyncio.TimeoutError:
        raise RequestTimeoutError(f"the operation took longer than {timeout_s} s; a write may still complete",
                                  status_code=408) from None


# -- the ASGI guard: body size, nesting depth, UTF-8, one log line a request ---------------------
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_ESCAPES = re.compile(rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                      rb"|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)", re.S)
"""A JSON escape: a surrogate pair, a lone surrogate (group 1: not a character, it cannot be
stored or hashed), or any other escape (consumed, so an escaped backslash is never misread)."""


def nested_deeper_than(body: bytes, limit: int) -> bool:
    """Whether the JSON in `body` nests deeper than `limit` (brackets inside strings do not count).
    A body with no more than `limit` opening brackets is answered without walking them."""
    brackets = _STRINGS.sub(b"", body).translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    depth = 0
    for c in brackets:
        depth += 1 if c in b"[{" else -1
        if depth > limit:
            return True
    return False


async def send_error(send: Send, status: int, type_: str, message: str, details: Any = None) -> None:
    """The service's error body, `{"error": {"type", "message", "details"}}`, as a raw ASGI reply."""
    body = json.dumps({"error": {"type": type_, "message": message, "details": details}}).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware for both services: reads the body once (refusing more than
    `max_body_bytes`), rejects invalid UTF-8, lone surrogates and nesting deeper than `max_depth`
    before any route runs, and logs one JSON line per request (method, path, status, ms and the
    token's name, which the app leaves in `scope["state"]["token_name"]`; never a body or a secret)."""

    def __init__(self, app: App, limits: Limits, log: logging.Logger, fields: dict[str, Any] | None = None) -> None:
        self.app, self.limits, self.log = app, limits, log
        self.fields = fields or {}
        """Added to every request's line (the worker's pid when several serve one port)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500
        state = scope.setdefault("state", {})

        async def send_logged(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            body, refusal = await self._read(scope, receive)
            if refusal is not None:
                await send_error(send_logged, *refusal)
                return
            replayed = False

            async def replay() -> MutableMapping[str, Any]:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send_logged)
        finally:
            line = {"method": scope["method"], "path": scope["path"], "status": status,
                    "ms": round((time.perf_counter() - started) * 1000, 1), "token": state.get("token_name"),
                    **self.fields}
            self.log.info(json.dumps(line), extra={"json": line})

    async def _read(self, scope: Scope, receive: Receive) -> tuple[bytes, tuple[int, str, str] | None]:
        limit = self.limits.max_body_bytes
        headers = dict(scope["headers"])
        try:
            declared = int(headers.get(b"content-length", b"0"))
        except ValueError:
            return b"", (400, "InvalidInputError", "Content-Length is not a number")
        if declared > limit:
            return b"", (413, "PayloadTooLargeError", f"the body is {declared} bytes; the limit is {limit}")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return b"", (413, "PayloadTooLargeError", f"the body is over the limit of {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as exc:
                return b"", (400, "InvalidInputError", f"the body is not UTF-8 (byte {exc.start})")
            lone = next((m for m in _ESCAPES.finditer(body) if m.group(1)), None)
            if lone is not None:
                return b"", (400, "InvalidInputError", f"the body holds a lone UTF-16 surrogate "
                                                       f"({lone.group().decode()}), which is not a character")
            if nested_deeper_than(body, self.limits.max_depth):  # JSON and JSONL alike
                return b"", (400, "InvalidInputError", f"the body is nested deeper than {self.limits.max_depth} levels")
        return body, None


class JsonLines(logging.Formatter):
    """Each record as one JSON object on one line: ReMe's own (`extra={"json": {...}}`) as they
    are, any other library's (uvicorn, sentence-transformers, ...) as `{"level", "logger",
    "message"}`, with its traceback as `exception`."""

    def format(self, record: logging.LogRecord) -> str:
        given = getattr(record, "json", None)
        out = dict(given) if isinstance(given, dict) else {
            "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def log_json_lines() -> None:
    """Log to stderr as `JsonLines`: warnings from any library, ReMe's own lines (`reme.*`,
    one per request) from INFO up."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("reme").setLevel(logging.INFO)


def json_line(**fields: Any) -> str:
    """`fields` as the JSON line `JsonLines` writes (for what is printed, not logged)."""
    return json.dumps(fields, ensure_ascii=False, default=str)


def uvicorn_server_class() -> Any:
    """`uvicorn.Server` that exits 0 after a graceful stop on SIGTERM/SIGINT (uvicorn itself
    re-raises the signal once it has shut down). Imported lazily: uvicorn is in the extras."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            getattr(self, "_captured_signals", []).clear()

    return Server
