"""The default backend: the Qdrant engine in-process (`qdrant-edge-py`), on disk.

Each collection is an Edge shard under `<path>/<name>/`, with a write-ahead log, so a write is
durable when `update` returns. The directory is locked for one process: a second one gets
`StoreLockedError` instead of a corrupted store.

Multi-step writes (see `VectorStore.write`) keep their intent records as files in
`<path>/.journal/`, each written under a temporary name and renamed. A collection is complete when
its `reme.json` exists, written last; a folder without it is what an interrupted create left, and
a drop renames the folder away (`.trash-*`) before deleting it. `recover()` removes both kinds of
leftover and replays the journal; the directory lock makes that safe.

With `sync="os"` every write call fsyncs before it returns (`shard.flush()`: the WAL and the
segments; the journal files, the marker files and their directories); with `sync="process"` (the
default) the WAL is written through memory-mapped files, which survive the process, not the OS.

Event loop: the engine holds the GIL in every call (update, query, flush, optimize: measured with
a ticker thread), so a worker thread frees nothing for the event loop. A long write is split
into calls of `batch_size` points, and `write` yields to the loop between them.

Index building: Edge builds HNSW only in `optimize()`, which holds the GIL while it runs (about
7 s for 20k vectors of size 384 on two cores), so it never runs on a write path. Search is exact
until an index exists; `optimize()` builds it on demand, and with `index_on_close` `close()`
does when at least `index_threshold` vectors are not indexed yet (off by default: closing a
store of a million unindexed vectors would take 16 minutes).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import numpy
import qdrant_edge as qe

from reme.errors import InvalidInputError, StoreError, StoreLockedError
from reme.store.base import (DATETIME_FIELDS, DENSE, KEYWORD_FIELDS, RRF_K, SPARSE, Direction, GetResult, Hit,
                             SearchMode, SparseTerms, SyncMode, VectorRecord, VectorStore, check_collection_name,
                             dense_of, is_uuid, record_of, off_loop, to_payload)
from reme.store.filters import Filter, FilterTranslator

T = TypeVar("T")
_META = "reme.json"
_JOURNAL = ".journal"  # a dot: no collection name starts with one
_TRASH = ".trash-"


class _EdgeFilters(FilterTranslator[Any]):
    def match_value(self, key: str, value: str | int | bool) -> Any:
        # qdrant-edge-py 0.9 reads a Python bool as the integer 1/0 (bool subclasses int), which then
        # never matches a stored bool; numpy's bool reaches the engine as a bool.
        return qe.FieldCondition(key, match=qe.MatchValue(
            numpy.bool_(value) if isinstance(value, bool) else value))  # type: ignore[arg-type]  # see above

    def match_any(self, key: str, values: list[Any]) -> Any:
        return qe.FieldCondition(key, match=qe.MatchAny(values))

    def match_text(self, key: str, text: str) -> Any:
        return qe.FieldCondition(key, match=qe.MatchText(text))

    def range_number(self, key: str, gt: Any, gte: Any, lt: Any, lte: Any) -> Any:
        return qe.FieldCondition(key, range=qe.RangeFloat(gt=gt, gte=gte, lt=lt, lte=lte))

    def range_datetime(self, key: str, gt: Any, gte: Any, lt: Any, lte: Any) -> Any:
        return qe.FieldCondition(key, range=qe.RangeDateTime(gt=gt, gte=gte, lt=lt, lte=lte))

    def group(self, must: list[Any] | None = None, should: list[Any] | None = None,
              must_not: list[Any] | None = None) -> Any:
        return qe.Filter(must=must, should=should, must_not=must_not)


_FILTERS = _EdgeFilters()


def _leftover(folder: Path) -> bool:
    """A collection folder an interrupted create left: no marker, nothing but the engine's shard.
    Anything else someone put in the store directory is not ours to delete."""
    try:
        check_collection_name(folder.name)
    except InvalidInputError:
        return False
    return (folder.is_dir() and not (folder / _META).exists()
            and {p.name for p in folder.iterdir()} <= {"shard", _META + ".tmp"})


def _same_file(fh: Any, path: Path) -> bool:
    """Whether the open file `fh` is still the one at `path` (not unlinked or replaced)."""
    try:
        return os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sparse(terms: SparseTerms) -> qe.SparseVector:
    return qe.SparseVector(indices=terms.indices, values=terms.values)


class EdgeStore(VectorStore):
    """Qdrant Edge on disk under `path` (one shard a collection)."""

    backend = "edge"

    def __init__(self, path: str | Path, *, bm25_avg_len: float = 32.0, batch_size: int = 256,
                 index_threshold: int = 20_000, index_on_close: bool = False, hnsw_ef: int = 256,
                 sync: SyncMode = "process", lock_timeout: float = 0.0) -> None:
        super().__init__(bm25_avg_len=bm25_avg_len, batch_size=batch_size, sync=sync)
        self.path = Path(path)
        self.index_threshold = index_threshold
        self.index_on_close = index_on_close
        self._params = qe.SearchParams(hnsw_ef=hnsw_ef)
        self._shards: dict[str, qe.EdgeShard] = {}
        self.created = not self.path.exists()
        """Whether this store made its directory (`remove` deletes only such a one)."""
        self._lock_fh = self._lock(self.path, lock_timeout)

    @staticmethod
    def _lock(path: Path, timeout: float = 0.0) -> Any:
        try:
            path.mkdir(parents=True, exist_ok=True)
            fh = open(path / ".lock", "a+")
        except OSError as exc:
            raise StoreError(f"cannot use {path} as the store directory: {exc.strerror or exc}") from exc
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                if _same_file(fh, path / ".lock"):
                    break
                # `remove` deleted the store while this process waited: lock the directory anew.
                fh.close()
                path.mkdir(parents=True, exist_ok=True)
                fh = open(path / ".lock", "a+")
                continue
            except OSError:
                if time.monotonic() < deadline:
                    time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
                    continue
                fh.seek(0)
                owner = fh.read().strip() or "unknown"
                fh.close()
                waited = f" after waiting {timeout:g} s" if timeout else ""
                raise StoreLockedError(
                    f"{path} is open in another process (pid {owner}){waited}; one process at a time opens a "
                    "working directory: wait for it (--wait SECONDS, vector_store.lock_timeout), or share the "
                    "store through one process (`reme serve`)") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        return fh

    def _call(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        if self._lock_fh is None:
            raise StoreError("the store is closed")
        try:
            return fn(*args)
        except Exception as exc:  # the engine raises plain Exceptions with a message
            raise StoreError(f"{what} failed: {exc}") from exc

    # -- collections -------------------------------------------------------------------------
    def _dir(self, name: str) -> Path:
        return self.path / check_collection_name(name)

    async def _create_collection(self, name: str, dim: int) -> None:
        folder = self._dir(name)
        if folder.exists():
            if not _leftover(folder):
                raise StoreError(f"{folder} exists and is not a ReMe collection; move it away or use another path")
            await self._drop_collection(name)  # what an interrupted create left (no marker): start again
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        shard = self._call(f"create collection {name}", qe.EdgeShard.create, str(folder / "shard"), config)
        for field in KEYWORD_FIELDS:
            params: Any = qe.KeywordIndexParams(is_tenant=True) if field == "memory_target" else qe.PayloadSchemaType.Keyword
            self._call("create index", shard.update, qe.UpdateOperation.create_field_index(field, params))
        for field in DATETIME_FIELDS:
            self._call("create index", shard.update, qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Datetime))
        self._call("create index", shard.update, qe.UpdateOperation.create_field_index("score", qe.PayloadSchemaType.Float))
        self._call("create index", shard.update, qe.UpdateOperation.create_field_index("version", qe.PayloadSchemaType.Integer))
        self._call("flush", shard.flush)
        # The metadata file marks the collection complete; it is written last, atomically.
        self._call("mark collection", self._put_file, folder / _META, json.dumps({"dim": dim, "format": 1}).encode())
        if self.sync == "os":
            self._call("sync", _fsync_dir, self.path)
        self._shards[name] = shard
        self._dims[name] = dim

    async def collection_dim(self, name: str) -> int | None:
        meta = self._dir(name) / _META
        if not meta.exists():
            return None
        return int(json.loads(meta.read_text())["dim"])

    async def list_collections(self) -> list[str]:
        return sorted(p.name for p in self.path.iterdir() if (p / _META).exists())

    async def _drop_collection(self, name: str) -> None:
        shard = self._shards.pop(name, None)
        if shard is not None:
            self._call("close", shard.close)
        self._dims.pop(name, None)
        folder = self._dir(name)
        if folder.exists():
            # One rename takes the whole collection away; the files go after it.
            trash = self.path / f"{_TRASH}{uuid.uuid4().hex}"
            self._call("drop collection", folder.rename, trash)
            if self.sync == "os":
                self._call("sync", _fsync_dir, self.path)
            self._call("drop collection", shutil.rmtree, trash)

    async def _recover_collections(self) -> None:
        for entry in sorted(self.path.iterdir()):
            if entry.name.startswith(_TRASH):
                self._call("remove a dropped collection", shutil.rmtree, entry)
            elif _leftover(entry):
                self._call(f"remove the half-created collection {entry.name}", shutil.rmtree, entry)
        journal = self.path / _JOURNAL
        if journal.is_dir():
            for tmp in journal.glob("*.tmp"):
                self._call("journal", tmp.unlink)

    # -- journal -------------------------------------------------------------------------------
    def _put_file(self, target: Path, data: bytes) -> None:
        """`target` holds `data` whole or does not change: written beside it, then renamed."""
        tmp = target.with_name(target.name + ".tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            if self.sync == "os":
                fh.flush()
                os.fsync(fh.fileno())
        tmp.replace(target)
        if self.sync == "os":
            _fsync_dir(target.parent)

    async def _journal_put(self, body: bytes, key: str | None = None) -> str:  # one process's: its own keys
        journal = self.path / _JOURNAL
        if not journal.is_dir():
            self._call("journal", journal.mkdir, 0o777, False, True)
            if self.sync == "os":
                self._call("sync", _fsync_dir, self.path)
        key = f"{time.time_ns():020d}-{uuid.uuid4().hex}.json"
        self._call("journal", self._put_file, journal / key, body)
        return key

    async def _journal_drop(self, key: str) -> None:
        journal = self.path / _JOURNAL
        self._call("journal", (journal / key).unlink, True)
        if self.sync == "os":
            self._call("sync", _fsync_dir, journal)

    async def _journal_pending(self) -> list[tuple[str, bytes]]:
        journal = self.path / _JOURNAL
        if not journal.is_dir():
            return []
        return [(f.name, self._call("journal", f.read_bytes)) for f in sorted(journal.glob("*.json"))]

    async def _sync(self, collections: set[str]) -> None:
        if self.sync == "os":
            for name in sorted(collections):
                shard = self._shards.get(name)
                if shard is not None:
                    self._call("flush", shard.flush)

    def _shard(self, name: str) -> qe.EdgeShard:
        shard = self._shards.get(name)
        if shard is None:
            shard = self._call(f"open collection {name}", qe.EdgeShard.load, str(self._dir(name) / "shard"))
            self._shards[name] = shard
        return shard

    # -- primitives ---------------------------------------------------------------------------
    def _points(self, records: Sequence[VectorRecord]) -> list[qe.Point]:
        return [
            qe.Point(r.node.memory_id,
                     {DENSE: r.vector,  # type: ignore[dict-item]  # upsert checked it is present
                      SPARSE: _sparse(self.keyword_terms(r.node.keyword_text, query=False))},
                     to_payload(r.node, r.revision))
            for r in records
        ]

    async def _upsert(self, name: str, records: Sequence[VectorRecord]) -> None:
        points = await off_loop(self._points, records, size=len(records))
        self._call("upsert", self._shard(name).update, qe.UpdateOperation.upsert_points(points))

    async def get(self, name: str, ids: Sequence[str], *, with_vectors: bool = False) -> GetResult:
        await self._require_dim(name)
        wanted = [str(i) for i in ids]
        valid = [i for i in wanted if is_uuid(i)]
        found = self._call("get", self._shard(name).retrieve, valid, True, [DENSE] if with_vectors else False)
        by_id = {str(r.id): record_of(r.payload or {}, dense_of(r.vector) if with_vectors else None)
                 for r in found}
        return GetResult(found=[by_id[i] for i in dict.fromkeys(wanted) if i in by_id],
                         missing=[i for i in dict.fromkeys(wanted) if i not in by_id])

    async def _delete_ids(self, name: str, ids: list[str]) -> None:
        points: list[int | uuid.UUID | str] = list(ids)
        self._call("delete", self._shard(name).update, qe.UpdateOperation.delete_points(points))

    async def _delete_filter(self, name: str, flt: Filter) -> None:
        edge_filter = _FILTERS.build(flt)
        assert edge_filter is not None  # a filter was given
        self._call("delete", self._shard(name).update, qe.UpdateOperation.delete_points_by_filter(edge_filter))

    async def count(self, name: str, flt: Filter | None = None) -> int:
        await self._require_dim(name)
        return self._call("count", self._shard(name).count, qe.CountRequest(filter=_FILTERS.build(flt), exact=True))

    async def _query(self, name: str, mode: SearchMode, vector: list[float] | None, terms: SparseTerms | None,
                     flt: Filter | None, limit: int, score_threshold: float | None,
                     prefetch: int) -> list[Hit]:
        edge_filter = _FILTERS.build(flt)
        dense = qe.Query.Nearest(vector, using=DENSE) if vector is not None else None
        sparse = qe.Query.Nearest(_sparse(terms), using=SPARSE) if terms is not None else None
        if mode == "hybrid":
            request = qe.QueryRequest(
                limit=limit, query=qe.Fusion.Rrf(k=RRF_K),  # type: ignore[arg-type]  # stubs lack Rrf
                filter=edge_filter, score_threshold=score_threshold,
                prefetches=[qe.Prefetch(limit=prefetch, query=dense, filter=edge_filter, params=self._params),
                            qe.Prefetch(limit=prefetch, query=sparse, filter=edge_filter)],
                with_payload=False)
        else:
            request = qe.QueryRequest(limit=limit, query=dense if mode == "dense" else sparse, filter=edge_filter,
                                      score_threshold=score_threshold, with_payload=False,
                                      params=self._params if mode == "dense" else None)
        points = self._call("search", self._shard(name).query, request)
        return [Hit(str(p.id), float(p.score), None) for p in points]

    async def _payloads(self, name: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        found = self._call("get", self._shard(name).retrieve, ids, True, False)
        return {str(r.id): r.payload or {} for r in found}

    async def _scroll(self, name: str, flt: Filter | None, limit: int, offset: str | None,
                      order: tuple[str, Direction, Any] | None,
                      with_vectors: bool) -> tuple[list[VectorRecord], str | None]:
        order_by = None
        if order is not None:
            key, direction, start = order
            order_by = qe.OrderBy(key, direction=qe.Direction.Asc if direction == "asc" else qe.Direction.Desc,
                                  start_from=start)
        request = qe.ScrollRequest(offset=offset, limit=limit, filter=_FILTERS.build(flt), with_payload=True,
                                   with_vector=[DENSE] if with_vectors else False, order_by=order_by)
        records, nxt = self._call("list", self._shard(name).scroll, request)
        out = [record_of(r.payload or {}, dense_of(r.vector) if with_vectors else None)
               for r in records]
        return out, (str(nxt) if nxt is not None else None)

    # -- lifecycle -----------------------------------------------------------------------------
    def unindexed(self, name: str) -> int:
        """Dense vectors not in an HNSW index yet. The engine's count covers every named vector, and
        the BM25 (sparse) one of each point is always indexed: subtract one a point for it."""
        info = self._call("info", self._shard(name).info)
        return max(0, 2 * info.points_count - info.indexed_vectors_count)

    async def optimize(self, name: str) -> bool:
        """Build the HNSW index (and merge segments) now. Holds the GIL while it runs."""
        await self._require_dim(name)
        shard = self._shard(name)
        return await asyncio.to_thread(self._call, "optimize", shard.optimize)

    async def remove(self) -> bool:
        """Close the store and delete its directory, if this store made it (`created`); the lock
        is held until the files are gone, so no other process opens a store half deleted."""
        if self._lock_fh is None or not self.created:
            await self.close()
            return False
        try:
            for shard in self._shards.values():
                self._call("close", shard.close)
            self._shards.clear()
            for entry in self.path.iterdir():
                if entry.name != ".lock":
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            (self.path / ".lock").unlink()
            self.path.rmdir()
        except OSError:  # something else appeared in it: leave it
            return False
        finally:
            await self.close()
        return True

    async def close(self) -> None:
        if self._lock_fh is None:
            return
        try:
            for name, shard in list(self._shards.items()):
                if self.index_on_close and self.unindexed(name) >= self.index_threshold:
                    # A thread frees the loop only if the engine releases the GIL (0.9 does not).
                    await asyncio.to_thread(self._call, "optimize", shard.optimize)
                self._call("close", shard.close)
        finally:
            self._shards.clear()
            fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

