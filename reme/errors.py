"""The exception hierarchy: every failure a user can cause raises a `ReMeError`."""

from __future__ import annotations


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


class VectorSizeError(StoreError, InvalidInputError):
    """A vector's size differs from the size its collection was created with."""


class EmbeddingError(ReMeError):
    """The embedding backend failed after its retries."""


class LLMError(ReMeError):
    """The LLM endpoint failed after its retries."""
