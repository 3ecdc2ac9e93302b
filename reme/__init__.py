"""ReMe: typed long-term memory for AI agents."""

from reme.config import (EmbeddingConfig, LLMConfig, ProceduralConfig, PromptsConfig, ReMeConfig, RetrievalConfig,
                         ToolConfig, VectorStoreConfig)
from reme.errors import (CollectionNotFoundError, ConfigError, ConflictError, EmbeddingError, InvalidFilterError,
                         InvalidInputError, LLMError, LLMOutputError, MemoryNotFoundError, NotFoundError, PromptError,
                         PromptTooLargeError, ReMeError, StoreError, StoreLockedError, VectorSizeError)
from reme.reme import ReMe, ReMeSync
from reme.schema import (MemoryNode, MemoryPage, MemoryType, MemoryVersion, Message, RetrievedMemory, RetrieveResult,
                         Scope, SearchResult, SummaryResult, TimeWindow, ToolCallRecord, Trajectory, Usage)
from reme.store import filters

__version__ = "0.1.0"

__all__ = [
    "CollectionNotFoundError", "ConfigError", "ConflictError", "EmbeddingConfig", "EmbeddingError",
    "InvalidFilterError", "InvalidInputError", "LLMConfig", "LLMError", "LLMOutputError", "MemoryNode",
    "MemoryNotFoundError", "MemoryPage", "MemoryType", "MemoryVersion", "Message", "NotFoundError",
    "ProceduralConfig", "PromptError", "PromptTooLargeError", "PromptsConfig", "ReMe", "ReMeConfig", "ReMeError",
    "ReMeSync", "RetrievalConfig", "RetrievedMemory", "RetrieveResult", "Scope", "SearchResult", "StoreError",
    "StoreLockedError",
    "SummaryResult", "TimeWindow", "ToolCallRecord", "ToolConfig", "Trajectory", "Usage", "VectorSizeError",
    "VectorStoreConfig", "filters",
]
