"""Who may do what through `reme serve` and `reme mcp`: bearer tokens scoped to targets, the
request limits, and the settings file both read. Imports only the schema and the errors."""

from __future__ import annotations

import hmac
import json
import os
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from reme.errors import ConfigError, PermissionDeniedError, describe

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
KINDS = ("user", "task", "tool")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TokenConfig(_Strict):
    """A bearer token: its name (logged), its secret (never logged), the targets it may touch
    (names per kind, `*` for any) and whether it may call destructive operations."""

    name: str = Field(min_length=1)
    secret: SecretStr
    users: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    destructive: bool = False

    @field_validator("secret")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value().strip()) < 16:
            raise ValueError("a token secret needs at least 16 characters")
        return value

    def names(self, kind: str) -> list[str]:
        return {"user": self.users, "task": self.tasks, "tool": self.tools}[kind]

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
            try:
                text = Path(path).read_text(encoding="utf-8")
                if str(path).endswith(".toml"):
                    import tomllib
                    raw: Any = tomllib.loads(text)
                else:
                    raw = json.loads(text)
            except ImportError:
                raise ConfigError("TOML server configs need Python 3.11+; use JSON") from None
            except (OSError, ValueError) as exc:
                raise ConfigError(f"server config {path}: {exc}") from None
            if not isinstance(raw, dict):
                raise ConfigError(f"server config {path} must hold an object")
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
    """The token whose secret is `presented`, compared in constant time against every token."""
    given = presented.strip().encode("utf-8")
    match = None
    for token in tokens:  # compare with every token, so timing does not tell which one was close
        if hmac.compare_digest(given, token.secret.get_secret_value().encode("utf-8")):
            match = token
    return match


def uvicorn_server_class() -> Any:
    """`uvicorn.Server` that exits 0 after a graceful stop on SIGTERM/SIGINT (uvicorn itself
    re-raises the signal once it has shut down). Imported lazily: uvicorn is in the extras."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            getattr(self, "_captured_signals", []).clear()

    return Server
