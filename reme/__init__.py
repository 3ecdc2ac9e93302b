"""ReMe: typed long-term memory for AI agents."""

from reme.config import EmbeddingConfig, LLMConfig, ReMeConfig, VectorStoreConfig
from reme.errors import (CollectionNotFoundError, ConfigError, EmbeddingError, InvalidFilterError,
                         InvalidInputError, LLMError, MemoryNotFoundError, NotFoundError, ReMeError, StoreError,
                         StoreLockedError, VectorSizeError)
from reme.reme import ReMe, ReMeSync
from reme.schema import MemoryNode, MemoryPage, MemoryType, SearchResult
from reme.store import filters

__version__ = "0.1.0"

__all__ = [
    "CollectionNotFoundError", "ConfigError", "EmbeddingConfig", "EmbeddingError", "InvalidFilterError",
    "InvalidInputError", "LLMConfig", "LLMError", "MemoryNode", "MemoryNotFoundError", "MemoryPage", "MemoryType",
    "NotFoundError", "ReMe", "ReMeConfig", "ReMeError", "ReMeSync", "SearchResult", "StoreError",
    "StoreLockedError", "VectorSizeError", "VectorStoreConfig", "filters",
]
