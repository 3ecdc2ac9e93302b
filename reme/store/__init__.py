"""Vector stores behind one interface: `edge` (default, in-process) and `qdrant` (client/server)."""

from __future__ import annotations

from pathlib import Path

from reme.config import VectorStoreConfig
from reme.store.base import (CreateCollection, Delete, DeleteWhere, DropCollection, GetResult, SearchMode, Swap,
                             Upsert, VectorRecord, VectorStore, WriteOp)
from reme.store.filters import Filter, parse_filter


def edge_root(config: VectorStoreConfig, working_dir: Path) -> Path:
    """Where the `edge` backend keeps its collections: `path`, or `<working_dir>/store`."""
    return (Path(config.path) if config.path else Path(working_dir) / "store").expanduser()


def open_store(config: VectorStoreConfig, working_dir: Path) -> VectorStore:
    """The store a configuration names; `edge` lives under `<working_dir>/store` unless `path` is set."""
    if config.backend == "qdrant":
        from reme.store.qdrant import QdrantStore

        return QdrantStore(url=config.url, api_key=config.api_key.get_secret_value() if config.api_key else None,
                           location=config.location, path=config.path, timeout=config.timeout,
                           prefer_grpc=config.prefer_grpc, grpc_port=config.grpc_port,
                           bm25_avg_len=config.bm25_avg_len, batch_size=config.batch_size, sync=config.sync,
                           shard_number=config.shard_number, replication_factor=config.replication_factor,
                           write_consistency_factor=config.write_consistency_factor, lease=config.lease,
                           lock_wait=config.lock_wait, journal_stale_after=config.journal_stale_after,
                           retry_for=config.retry_for)
    from reme.store.edge import EdgeStore

    return EdgeStore(edge_root(config, working_dir),
                     bm25_avg_len=config.bm25_avg_len, batch_size=config.batch_size,
                     index_threshold=config.index_threshold, index_on_close=config.index_on_close,
                     hnsw_ef=config.hnsw_ef, sync=config.sync, lock_timeout=config.lock_timeout)


__all__ = ["CreateCollection", "Delete", "DeleteWhere", "DropCollection", "Filter", "GetResult", "SearchMode",
           "Swap", "Upsert", "VectorRecord", "VectorStore", "WriteOp", "edge_root", "open_store", "parse_filter"]
