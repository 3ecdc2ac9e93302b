"""ReMe: typed long-term memory for AI agents.

`ReMe`, `ReMeSync` and `filters` are imported on first use (PEP 562), so `import reme.client`
(or `reme.schema`) loads no store, embedder or LLM client: a remote agent needs only httpx."""

from typing import TYPE_CHECKING, Any

from reme.config import (EmbeddingConfig, LLMConfig, ProceduralConfig, PromptsConfig, ReMeConfig, RetrievalConfig,
                         ToolConfig, VectorStoreConfig)
from reme.errors import (AuthenticationError, CollectionNotFoundError, ConfigError, ConflictError, EmbeddingError,
                         InvalidFilterError, InvalidInputError, LLMError, LLMOutputError, MemoryNotFoundError,
                         NotFoundError, NotReadyError, OriginalReMeAPIError, PayloadTooLargeError,
                         PermissionDeniedError, PromptError, PromptTooLargeError, ReMeError, RequestTimeoutError,
                         ServiceError, StoreError, StoreLockedError, VectorSizeError)
from reme.markdown import MarkdownExport, MarkdownIssue, MarkdownSyncResult
from reme.schema import (Fallback, MemoryNode, MemoryPage, MemoryType, MemoryVersion, Message, Rejection,
                         RetrievedMemory, RetrieveResult, Scope, SearchResult, SummaryResult, TimeWindow, ToolCallRecord,
                         Trajectory, Usage)

if TYPE_CHECKING:
    from reme.reme import ReMe, ReMeSync
    from reme.store import filters

__version__ = "0.1.0"

__all__ = [
    "AuthenticationError", "NotReadyError", "PayloadTooLargeError", "PermissionDeniedError", "RequestTimeoutError",
    "ServiceError", "CollectionNotFoundError", "ConfigError", "ConflictError", "EmbeddingConfig", "EmbeddingError",
    "Fallback", "InvalidFilterError", "InvalidInputError", "LLMConfig", "LLMError", "LLMOutputError",
    "MarkdownExport", "MarkdownIssue", "MarkdownSyncResult", "MemoryNode",
    "MemoryNotFoundError", "MemoryPage", "MemoryType", "MemoryVersion", "Message", "NotFoundError",
    "OriginalReMeAPIError",
    "ProceduralConfig", "PromptError", "PromptTooLargeError", "PromptsConfig", "ReMe", "ReMeConfig", "ReMeError",
    "ReMeSync", "Rejection", "RetrievalConfig", "RetrievedMemory", "RetrieveResult", "Scope", "SearchResult", "StoreError",
    "StoreLockedError", "SummaryResult", "TimeWindow", "ToolCallRecord", "ToolConfig", "Trajectory", "Usage",
    "VectorSizeError", "VectorStoreConfig", "filters",
]


def __getattr__(name: str) -> Any:
    import importlib

    if name in ("ReMe", "ReMeSync"):
        value = getattr(importlib.import_module("reme.reme"), name)
    elif name == "filters":
        value = importlib.import_module("reme.store.filters")
    else:
        raise AttributeError(f"module 'reme' has no attribute {name!r}")
    globals()[name] = value
    return value
