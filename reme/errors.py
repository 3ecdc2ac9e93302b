"""The exception hierarchy: every failure a user can cause raises a `ReMeError`."""

from __future__ import annotations

from pydantic import ValidationError


def describe(exc: ValidationError) -> str:
    """A pydantic error as one line: `field.path: message; ...` (the message a validator raised)."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = str(err.get("ctx", {}).get("error") or err["msg"])
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


class ReMeError(Exception):
    """Base class of every error ReMe raises on purpose."""


class ConfigError(ReMeError):
    """A setting is missing, contradictory or names something that is not installed."""


class InvalidInputError(ReMeError, ValueError):
    """An argument was rejected before anything was written."""


class InvalidFilterError(InvalidInputError):
    """A filter names an unknown field or compares a field with a value of the wrong type."""


class NotFoundError(ReMeError, LookupError):
    """A memory or collection that was asked for does not exist (in the caller's scope)."""


class MemoryNotFoundError(NotFoundError):
    """No memory with that id exists in the caller's scope."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"memory {memory_id!r} not found")
        self.memory_id = memory_id


class CollectionNotFoundError(NotFoundError):
    """The named collection does not exist in the store."""


class StoreError(ReMeError):
    """The vector store failed or refused an operation."""


class StoreLockedError(StoreError):
    """Another process holds the working directory open."""


class ConflictError(StoreError):
    """A memory changed between reading it and writing its new version; read it again and retry."""


class VectorSizeError(StoreError, InvalidInputError):
    """A vector's size differs from the size its collection was created with."""


class EmbeddingError(ReMeError):
    """The embedding backend failed after its retries."""


class LLMError(ReMeError):
    """The LLM endpoint failed after its retries (or refused the request).

    `status_code` and `response` hold the last HTTP status and body seen, when there was one.
    """

    def __init__(self, message: str, *, status_code: int | None = None, response: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.response = response


class LLMOutputError(LLMError):
    """The LLM answered, but not with the structure asked for, even after being shown its error.
    `raw` is its last reply."""

    def __init__(self, message: str, *, raw: str) -> None:
        super().__init__(message, response=raw)
        self.raw = raw


class PromptTooLargeError(InvalidInputError, LLMError):
    """A prompt would be longer than `llm.max_prompt_chars`; nothing was sent (or written)."""


class PromptError(ConfigError):
    """A prompt template is missing, does not parse, or uses a variable it was not given."""


class ServiceError(ReMeError):
    """The memory service (`reme serve`) refused a request or could not be reached.
    `status_code` is the HTTP status, None when no answer came (connection failure)."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class AuthenticationError(ServiceError):
    """No bearer token, or one the service does not know (HTTP 401)."""


class PermissionDeniedError(ServiceError):
    """The token may not touch that target, or may not call that operation (HTTP 403)."""


class RequestTimeoutError(ServiceError):
    """The service gave up waiting for the operation (HTTP 408); a write may still complete."""


class PayloadTooLargeError(InvalidInputError):
    """The request body is larger than the service accepts (HTTP 413)."""


class NotReadyError(ReMeError):
    """The memory store is not open (yet or any more): retry later (HTTP 503)."""


class OriginalReMeAPIError(BaseException):
    """Code written for the original ReMe package (`reme-ai`: `ReMe(workspace_dir=..., jobs=...,
    components=...)`, `run_job`, `update_component`, `start`) called this one. Both install the
    top-level package `reme`, so `from reme import ReMe` in such code, AgentScope 2.x's shipped
    `agentscope.middleware.ReMeMiddleware` for one, finds this package.

    Deliberately not an `Exception`: AgentScope's middleware catches every `Exception` from ReMe and
    only logs a warning, which would leave the agent running without any memory. This error ends the
    reply instead, naming what to use."""

    def __init__(self, keywords: list[str]) -> None:
        super().__init__(
            f"ReMe(...) was called with the original ReMe package's arguments ({', '.join(keywords)}); "
            "this is reme-memory, which installs the same top-level `reme` package with another API. "
            "With AgentScope 2.x use reme.integrations.agentscope.ReMeMemoryMiddleware (extra "
            "'agentscope'); with AgentScope 1.x, reme.integrations.agentscope1 (extra 'agentscope1'). "
            "For AgentScope's own ReMeMiddleware, uninstall reme-memory and install reme-ai.")
