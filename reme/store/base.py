"""The `VectorStore` interface that every backend implements, and what they share.

A store holds `MemoryNode`s in named collections, each node with a dense vector (given by the
caller) and a BM25 keyword vector (computed here from the node's text, the same way for every
backend). Paging, updates and JSONL export/import are written once, on top of each backend's
primitives.

Every write goes through `VectorStore.write(ops)`: a list of typed operations (`Upsert`, `Delete`,
`DeleteWhere`, `CreateCollection`, `DropCollection`, and `Swap`, the conditional replacement of
stored records) applied as one, all or nothing across a crash. Everything is checked before the first engine call, so a rejected batch writes nothing.
When the batch takes more than one engine call, an intent record holding the complete writes
(records with their vectors) is stored first, through the backend's journal, and removed after
the last call; `recover()` (run when a store is opened) replays any record a crash left behind.
Replaying the whole record over any prefix of it gives the state after it, because each step
sets state (upsert, delete by id or filter, create if missing, drop if present).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import re
import sys
import uuid
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, AsyncContextManager, AsyncIterator, Awaitable, Callable, Literal, NamedTuple, Sequence, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from qdrant_edge import Bm25, Bm25Config

from reme.errors import (CollectionNotFoundError, ConflictError, InvalidInputError, MemoryNotFoundError,
                         VectorSizeError, describe)
from reme.schema import (INT64_MAX, INT64_MIN, MAX_CURSOR_CHARS, MAX_IMPORT_LINES, MAX_LIMIT, MemoryNode, MemoryPage,
                         MemoryType, ScoreKind, SearchResult, parse_iso, parse_json)
from reme.store.filters import SORT_KEYS, Filter

SearchMode = Literal["dense", "keyword", "hybrid"]
Direction = Literal["asc", "desc"]
SyncMode = Literal["process", "os"]
T = TypeVar("T")
EmbedFn = Callable[[list[str]], Awaitable[list[list[float]]]]

DENSE = "dense"
SPARSE = "bm25"
RRF_K = 60
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
# Fields a backend indexes so that filters on them stay fast; `content_hash` serves deduplication.
KEYWORD_FIELDS = ("memory_id", "memory_type", "target_kind", "memory_target", "author", "tags", "ref_ids",
                  "content_hash")
DATETIME_FIELDS = ("message_time", "time_created", "time_modified", "event_start", "event_end", "expires_at")


class VectorRecord(BaseModel):
    """A node and its dense vector (None when a read did not ask for vectors)."""

    node: MemoryNode
    vector: list[float] | None = None
    revision: str | None = Field(default=None, exclude=True)
    """The stored record's revision, as a read found it: a token every write of the record
    replaces, which a conditional write (`Swap`) compares. None for a record written before
    revisions existed. Not part of a record's exported form."""
    lineage: tuple[str, ...] = Field(default=(), exclude=True)
    """The revisions this one replaced, newest first, as many as `LINEAGE` (a store that
    processes share keeps them: see `QdrantStore._swap_read`); empty where none are kept."""


class GetResult(BaseModel):
    """What a read by ids found, in the order asked, and the ids it did not find."""

    found: list[VectorRecord]
    missing: list[str]


class Hit(NamedTuple):
    """One search hit: the point's id (the memory id), its score, and its payload, or None when
    the backend leaves payloads to be fetched for the hits kept (`_payloads`): turning a payload
    into Python is most of an embedded engine's cost, and a search asks for more hits than it keeps."""

    id: str
    score: float
    payload: dict[str, Any] | None


class SparseTerms(NamedTuple):
    """BM25 term weights: what both backends store as the keyword vector."""

    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class Upsert:
    """Insert or replace `records` (by `memory_id`) in `collection`."""

    collection: str
    records: Sequence[VectorRecord]
    kept: bool = False
    """The records keep what the write's swap replaces (versions), under ids no other write uses:
    a store that processes share may send them beside the swap, before it knows the swap won, and
    deletes them again where it lost (see `VectorStore.write`)."""


@dataclass(frozen=True)
class Delete:
    """Delete the nodes with these ids (ids not stored are ignored); with `revision`, only those
    that still hold it (what a `Swap` deleting them wrote)."""

    collection: str
    ids: Sequence[str]
    revision: str | None = None


@dataclass(frozen=True)
class Swap:
    """A conditional write of stored records: each record of `old` (as `get` read it, revision and
    vector included) is replaced by the record of `new` with its id, or deleted when `new` has
    none, only where the store still holds the revision it was read with. Where several processes
    share the store, the compare is the engine's. When another write changed or deleted any of
    them meanwhile, the whole write writes nothing and raises `ConflictError` (read again and
    retry). A write applies its swaps first, its other ops after, and the deletions last.
    `token` is the revision the records get; `write` sets it."""

    collection: str
    old: Sequence[VectorRecord]
    new: Sequence[VectorRecord] = ()
    token: str = ""
    partial: bool = False
    """The records are independent (usage counts): a write of this swap alone that loses some of
    them keeps the ones it won and raises `PartlyWritten` naming them, instead of putting them
    back. It deletes nothing."""


class PartlyWritten(ConflictError):
    """A `partial` swap lost some of its records: the ones in `won` are written, the others not."""

    def __init__(self, message: str, won: set[str]) -> None:
        super().__init__(message)
        self.won = won


@dataclass(frozen=True)
class DeleteWhere:
    """Delete every node of `collection` that matches `filter`."""

    collection: str
    filter: Filter


@dataclass(frozen=True)
class CreateCollection:
    """Create `collection` for vectors of size `dim`; nothing if it exists with that size."""

    collection: str
    dim: int


@dataclass(frozen=True)
class DropCollection:
    """Delete `collection` and everything in it; nothing if it does not exist."""

    collection: str


WriteOp = Upsert | Delete | DeleteWhere | CreateCollection | DropCollection | Swap
_FILTER = TypeAdapter(Filter)
JOURNAL_FORMAT = 1


INLINE_RECORDS = 64
"""Above this many records, Python-side work of a write (checks, encoding) runs in a worker
thread: the GIL then passes to the event loop every few milliseconds instead of after it all."""


def encode_steps(steps: Sequence[WriteOp]) -> bytes:
    """An intent record: the complete writes, vectors included (float32, as the engines store
    them). One JSON line a step, and one a record after its upsert step's line, so that no single
    encoder call holds the GIL for a whole batch."""
    lines = [json.dumps({"format": JOURNAL_FORMAT, "steps": len(steps)})]
    for step in steps:
        if isinstance(step, Upsert):
            lines.append(json.dumps({"op": "upsert", "collection": step.collection, "records": len(step.records),
                                     **({"kept": True} if step.kept else {})}))
            lines += [_record_line(r) for r in step.records]
        elif isinstance(step, Swap):
            lines.append(json.dumps({"op": "swap", "collection": step.collection, "token": step.token,
                                     "old": len(step.old), "new": len(step.new)}))
            lines += [_record_line(r) for r in [*step.old, *step.new]]
        elif isinstance(step, Delete):
            lines.append(json.dumps({"op": "delete", "collection": step.collection, "ids": list(step.ids),
                                     **({"revision": step.revision} if step.revision else {})}))
        elif isinstance(step, DeleteWhere):
            lines.append(json.dumps({"op": "delete_where", "collection": step.collection,
                                     "filter": _FILTER.dump_python(step.filter, mode="json")}, ensure_ascii=False))
        elif isinstance(step, CreateCollection):
            lines.append(json.dumps({"op": "create", "collection": step.collection, "dim": step.dim}))
        else:
            lines.append(json.dumps({"op": "drop", "collection": step.collection}))
    return ("\n".join(lines) + "\n").encode()


def _record_line(record: VectorRecord) -> str:
    revision = f', "revision": {json.dumps(record.revision)}' if record.revision else ""
    if record.lineage:
        revision += f', "lineage": {json.dumps(list(record.lineage))}'
    return '{"node": %s, "vector": "%s"%s}' % (record.node.model_dump_json(), base64.b64encode(
        np.asarray(record.vector, dtype="<f4").tobytes()).decode(), revision)


def _read_record(line: str) -> VectorRecord:
    r = json.loads(line)
    vector = np.frombuffer(base64.b64decode(r["vector"]), dtype="<f4").astype(float).tolist()
    return VectorRecord.model_construct(node=MemoryNode.model_validate(r["node"]), vector=vector,
                                        revision=r.get("revision"), lineage=tuple(r.get("lineage", ())))


def decode_steps(body: bytes) -> list[WriteOp]:
    """The steps of an intent record; ValueError when it is not a whole one."""
    lines = iter(body.decode().splitlines())
    head = json.loads(next(lines))
    if not isinstance(head, dict) or head.get("format") != JOURNAL_FORMAT:
        raise ValueError("not a ReMe intent record of a known format")
    steps: list[WriteOp] = []
    for _ in range(int(head["steps"])):
        raw = json.loads(next(lines))
        op, name = raw["op"], raw["collection"]
        if op == "upsert":
            steps.append(Upsert(name, [_read_record(next(lines)) for _ in range(int(raw["records"]))],
                                bool(raw.get("kept", False))))
        elif op == "swap":
            old = [_read_record(next(lines)) for _ in range(int(raw["old"]))]
            steps.append(Swap(name, old, [_read_record(next(lines)) for _ in range(int(raw["new"]))],
                              str(raw["token"])))
        elif op == "delete":
            steps.append(Delete(name, [str(i) for i in raw["ids"]], raw.get("revision")))
        elif op == "delete_where":
            steps.append(DeleteWhere(name, _FILTER.validate_python(raw["filter"])))
        elif op == "create":
            steps.append(CreateCollection(name, int(raw["dim"])))
        elif op == "drop":
            steps.append(DropCollection(name))
        else:
            raise ValueError(f"unknown step {op!r}")
    return steps


BATCH_TAG = "j"
"""How a revision that names a journaled write's key begins (see `VectorStore.tags_batches`);
other revisions are hexadecimal."""


def _behind(steps: Sequence[WriteOp]) -> set[str]:
    """The journal keys that the stored records a write swaps name (see `VectorStore.tags_batches`)."""
    return {r.revision[len(BATCH_TAG):] for step in steps if isinstance(step, Swap) for r in step.old
            if r.revision is not None and r.revision.startswith(BATCH_TAG)}


def _retoken(steps: list[WriteOp], token: str) -> list[WriteOp]:
    """`steps` with `token` as the token of their swaps (and of the deletions that finish them)."""
    renamed = {step.token for step in steps if isinstance(step, Swap)}
    return [replace(step, token=token) if isinstance(step, Swap)
            else replace(step, revision=token) if isinstance(step, Delete) and step.revision in renamed
            else step for step in steps]


def _finishing(step: WriteOp) -> bool:
    """Whether `step` is a swap's deletion (planned after the write's other steps)."""
    return isinstance(step, Delete) and step.revision is not None


def _tag(steps: list[WriteOp], revision: str) -> list[WriteOp]:
    return [Upsert(step.collection, [VectorRecord.model_construct(node=r.node, vector=r.vector, revision=revision)
                                     for r in step.records], step.kept) if isinstance(step, Upsert) else step
            for step in steps]


async def off_loop(fn: Callable[..., T], *args: Any, size: int) -> T:
    """`fn(*args)` in a worker thread when `size` is large, inline (no thread hop) when small."""
    if size > INLINE_RECORDS:
        return await asyncio.to_thread(fn, *args)
    return fn(*args)


F32_MAX = float(np.finfo(np.float32).max)
"""The largest vector value: the engines store float32, where a larger one becomes infinity."""

MAX_TIE_FETCH = 4096
"""How far a search widens its request to order a group of equal scores by id."""


REVISION = "revision"
"""The payload field holding a record's revision (see `VectorRecord.revision`)."""
PRIOR = "prior"
"""The payload field holding the revisions a record's revision replaced (`VectorRecord.lineage`)."""
LINEAGE = 16
"""How many replaced revisions a record keeps (`VectorRecord.lineage`)."""


def lineage_of(payload: dict[str, Any]) -> tuple[str, ...]:
    """A stored payload's `VectorRecord.lineage` (one revision, as written before lineages were
    kept, or a list)."""
    prior = payload.get(PRIOR)
    if prior is None:
        return ()
    return (prior,) if isinstance(prior, str) else tuple(prior)


def to_payload(node: MemoryNode, revision: str | None = None) -> dict[str, Any]:
    """A node's payload; `revision` None gives it a fresh one (a plain write)."""
    payload = node.model_dump(mode="json")
    payload["content_hash"] = node.content_hash
    payload[REVISION] = revision or uuid.uuid4().hex
    return payload


_OPTIONAL_TIMES = ("event_start", "event_end", "expires_at", "last_accessed")
_OPTIONAL: dict[str, Any] = {"access_count": 0, **{k: None for k in _OPTIONAL_TIMES}}
"""Fields added after stores existed: a payload written before them lacks them (their defaults)."""
_NODE_FIELDS = tuple(MemoryNode.model_fields)
_TYPES = {t.value: t for t in MemoryType}


def from_payload(payload: dict[str, Any]) -> MemoryNode:
    """The node a payload holds. Payloads are what `to_payload` wrote from a validated node, so
    they are not validated again (validating was most of a search's cost): only the types JSON
    cannot carry are restored. A payload without that shape goes through full validation."""
    try:
        fields = {k: payload[k] if k not in _OPTIONAL else payload.get(k, _OPTIONAL[k]) for k in _NODE_FIELDS}
        fields["memory_type"] = _TYPES[fields["memory_type"]]
        said, created, modified = (_iso_time(fields["message_time"]), _iso_time(fields["time_created"]),
                                   _iso_time(fields["time_modified"]))
        if said.tzinfo is None or created.tzinfo is None or modified.tzinfo is None:
            raise ValueError("a stored time without a timezone")
        fields["message_time"], fields["time_created"], fields["time_modified"] = said, created, modified
        for key in _OPTIONAL_TIMES:
            if fields[key] is not None:
                fields[key] = _iso_time(fields[key])
                if fields[key].tzinfo is None:
                    raise ValueError("a stored time without a timezone")
        if type(fields["access_count"]) is not int:
            raise TypeError("access_count is not an integer")
    except (ValueError, TypeError, KeyError, AttributeError):
        return MemoryNode.model_validate({k: v for k, v in payload.items() if k in MemoryNode.model_fields})
    return _construct(MemoryNode, fields)


def record_of(payload: dict[str, Any], vector: list[float] | None) -> VectorRecord:
    """A stored point as a record (see `from_payload`)."""
    return _construct(VectorRecord, {"node": from_payload(payload), "vector": vector,
                                     "revision": payload.get(REVISION), "lineage": lineage_of(payload)})


M = TypeVar("M", bound=BaseModel)


def _construct(cls: type[M], fields: dict[str, Any]) -> M:
    """`cls.model_construct(**fields)` for a complete set of trusted fields, without its per-call
    bookkeeping (defaults, aliases): a search builds one node and one result per hit."""
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", fields)
    object.__setattr__(model, "__pydantic_fields_set__", set(fields))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


if sys.version_info >= (3, 11):
    _iso_time = datetime.fromisoformat
else:  # Python 3.10's fromisoformat does not read a trailing Z
    def _iso_time(value: str) -> datetime:
        return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)


def check_collection_name(name: str) -> str:
    if not isinstance(name, str) or not _COLLECTION_NAME.match(name):
        raise InvalidInputError(
            f"collection name {name!r}: 1-64 letters, digits, '_' or '-', starting with a letter or digit")
    return name


def dense_of(vector: Any) -> list[float] | None:
    """The dense part of a backend's named vectors: the engine's float32 values as floats. Edge
    hands over float32s, a server's JSON their shortest decimals (0.13363062, which as a float is
    not 0.13363061845302582): read through float32, a vector is the same number on every store."""
    if isinstance(vector, dict) and vector.get(DENSE) is not None:
        values: list[float] = np.asarray(vector[DENSE], dtype=np.float32).tolist()
        return values
    return None


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False


def sort_value(node: MemoryNode, key: str) -> str | float | int:
    value = getattr(node, key)
    return value.isoformat() if isinstance(value, datetime) else value


class _Cursor(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    offset: str | None = None  # id order: the next id
    value: str | float | int | None = None  # sorted order: the last value returned
    seen: list[str] = []  # sorted order: ids already returned that carry `value`
    sort: str | None = None
    direction: str | None = None


def _encode_cursor(cursor: _Cursor) -> str:
    return base64.urlsafe_b64encode(cursor.model_dump_json(exclude_defaults=True).encode()).decode()


def _decode_cursor(text: Any) -> _Cursor:
    """The cursor a listing returned, checked field by field: a forged one is an InvalidInputError
    before anything reaches the engine."""
    bad = InvalidInputError("cursor is not one this store returned")
    if not isinstance(text, str) or len(text) > MAX_CURSOR_CHARS:
        raise bad
    try:
        cursor = _Cursor.model_validate(parse_json(base64.urlsafe_b64decode(text.encode("ascii")), "cursor"))
    except (ValueError, ValidationError):  # binascii.Error and UnicodeError are ValueErrors
        raise bad from None
    ids = ([cursor.offset] if cursor.offset is not None else []) + cursor.seen
    if not all(is_uuid(i) for i in ids) or len(cursor.seen) > MAX_LIMIT + MAX_TIE_FETCH:
        raise bad
    if cursor.sort is not None and (cursor.sort not in SORT_KEYS or cursor.direction not in ("asc", "desc")):
        raise bad
    value = cursor.value
    if isinstance(value, float) and not math.isfinite(value) or (
            isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX):
        raise bad
    if isinstance(value, str):
        try:
            parse_iso(value)
        except ValueError:
            raise bad from None
    return cursor


class VectorStore(ABC):
    """Async storage of memory nodes with dense, keyword and hybrid search.

    Every write is durable when its call returns: it survives the process being killed, and with
    `sync="os"` an OS crash or power loss too. `write(ops)` applies several writes as one, all or
    nothing across a crash. Backends implement the abstract primitives and a small journal;
    `list`, `update`, `export_jsonl` and `import_jsonl` are shared.
    """

    backend: str = ""
    concurrent_steps = False
    """Whether the steps of a journaled write that touch different collections may be sent
    together: a server answers them in the time of one round trip; an embedded engine gains nothing."""

    def __init__(self, *, bm25_avg_len: float = 32.0, batch_size: int = 256, sync: SyncMode = "process") -> None:
        if batch_size < 1:
            raise InvalidInputError("batch_size must be at least 1")
        if sync not in ("process", "os"):
            raise InvalidInputError(f"sync must be process or os, not {sync!r}")
        self._bm25 = Bm25(Bm25Config(avg_len=bm25_avg_len))
        self.batch_size = batch_size
        self.sync: SyncMode = sync
        self._dims: dict[str, int] = {}
        self._write_lock = asyncio.Lock()
        self.replay_checks = {}
        self.fences = {}
        # Recover before the first write, and again after a batch failed half way in this process.
        self._unfinished = True

    # -- collections -------------------------------------------------------------------------
    async def create_collection(self, name: str, dim: int) -> None:
        """Create `name` for vectors of size `dim`; a no-op if it exists with that size."""
        await self.write([CreateCollection(name, dim)])

    @abstractmethod
    async def _create_collection(self, name: str, dim: int) -> None:
        """Create a collection that is not complete: a leftover of an interrupted create or drop
        is removed first (dense vectors of `dim`, BM25, payload indexes)."""

    @abstractmethod
    async def collection_dim(self, name: str) -> int | None:
        """The vector size `name` was created with, or None when it does not exist."""

    @abstractmethod
    async def list_collections(self) -> list[str]: ...

    async def delete_collection(self, name: str) -> None:
        """Delete `name` and everything in it; a no-op if it does not exist."""
        await self.write([DropCollection(name)])

    @abstractmethod
    async def _drop_collection(self, name: str) -> None:
        """Delete a collection, leaving nothing a later create or `recover` would take for it."""

    # -- primitives ---------------------------------------------------------------------------
    @abstractmethod
    async def _upsert(self, name: str, records: Sequence[VectorRecord]) -> None: ...

    @abstractmethod
    async def get(self, name: str, ids: Sequence[str], *, with_vectors: bool = False) -> GetResult:
        """Read nodes by id; ids that do not exist are listed in `missing`."""

    @abstractmethod
    async def _delete_ids(self, name: str, ids: list[str]) -> None: ...

    @abstractmethod
    async def _delete_filter(self, name: str, flt: Filter) -> None: ...

    @abstractmethod
    async def count(self, name: str, flt: Filter | None = None) -> int: ...

    @abstractmethod
    async def _query(self, name: str, mode: SearchMode, vector: list[float] | None, terms: SparseTerms | None,
                     flt: Filter | None, limit: int, score_threshold: float | None,
                     prefetch: int) -> list[Hit]: ...

    async def _payloads(self, name: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The payloads of `ids`, for a backend whose `_query` leaves them out (see `Hit`)."""
        raise NotImplementedError

    @abstractmethod
    async def _scroll(self, name: str, flt: Filter | None, limit: int, offset: str | None,
                      order: tuple[str, Direction, Any] | None,
                      with_vectors: bool) -> tuple[list[VectorRecord], str | None]: ...

    # -- journal (intent records of multi-step writes) ------------------------------------------
    @abstractmethod
    async def _journal_put(self, body: bytes, key: str | None = None) -> str:
        """Store an intent record (durably when `sync` is "os"); returns its key (`key`, a UUID,
        when the caller chose it: a store that processes share, see `write`). A record is there
        whole or not at all."""

    @abstractmethod
    async def _journal_drop(self, key: str) -> None:
        """Remove an applied record (durably when `sync` is "os": a stale record replayed later
        would undo the writes made after it)."""

    @abstractmethod
    async def _journal_pending(self) -> list[tuple[str, bytes]]:
        """The records `recover` may replay now, oldest first."""

    async def _recover_collections(self) -> None:
        """Complete or remove collections a crash left half created or half dropped."""
        return None

    async def _sync(self, collections: set[str]) -> None:
        """With `sync="os"`: make the engine writes to `collections` reach the disk."""
        return None

    def exclusive(self, name: str) -> AsyncContextManager[None]:
        """Hold the lock `name` against the other processes that share this store, for a
        read-modify-write that must not interleave with theirs (`async with store.exclusive(n):`).
        A backend several processes may share (a server) holds it in the engine; an embedded
        store is one process's, so there is nothing to hold."""
        return contextlib.nullcontext()

    async def settle(self, name: str, ids: Sequence[str]) -> None:
        """Wait until no write (of another process, or another task) that replaces or deletes a
        record of `name` among `ids` is under way: one that made its conditional write may still
        write what it keeps of the record (its version). A scrub waits so, after its purge, before it rewrites the
        collections: a version written later would bring the text back into their files. A
        store that one process owns applies one write at a time: nothing to wait for."""
        return None

    async def mark_purged(self, name: str, ids: Sequence[str] | None) -> None:
        """Note, before a purge deletes the records `ids` of `name` (None: all of them) and what
        was kept of them, that they were purged: a write by id of one of them that a crash
        interrupted finds its record gone when it is replayed, deleted by itself or by a purge,
        and only this note tells (`purged`). A store that one process owns replays its own
        records before any other write: nothing to note."""
        return None

    async def purged(self, name: str, ids: Sequence[str]) -> set[str]:
        """Those of `ids` a purge noted (`mark_purged`) while an intent record that swaps them may
        still be replayed."""
        return set()

    shared = False
    """Whether processes share this store (a server): `exclusive` and `claims` then hold locks in
    the engine. A store that one process owns holds nothing there."""

    def claims(self, names: Sequence[str],
               alongside: Callable[[], Awaitable[T]] | None = None) -> AsyncContextManager[T | None]:
        """Hold the locks `names` together, each against the other processes that share this
        store, and against the other tasks of this one (`async with store.claims(ns) as early:`):
        finer locks than `exclusive`'s, taken in one round trip and read back (an add claims the
        content hashes and ids of its memories, so adds of other contents go on beside it).
        `alongside`, a read, is sent with that read-back, and `early` is what it returned when
        the claims were taken at that first try (so it read what the earlier holders had written),
        else None: read again under the claims. An embedded store is one process's: nothing to
        hold (its callers serialize their tasks themselves), and `early` is None."""
        return contextlib.nullcontext(None)

    async def optimize(self, name: str) -> bool:
        """Build search indexes now; True if anything was built. Backends that index by themselves no-op."""
        return False

    async def close(self) -> None:
        return None

    async def remove(self) -> bool:
        """Close the store and delete it, where the backend can and the store is this one's to
        delete (an embedded store whose directory it made); True if it did. Backends that keep
        their data elsewhere (a server) only close."""
        await self.close()
        return False

    # -- the write path --------------------------------------------------------------------------
    async def write(self, ops: Sequence[WriteOp]) -> None:
        """Apply `ops`, in order, as one: after a crash at any point, the store (once `recover`
        has run, as opening does) holds all of them or none of them.

        Everything is checked first (collections, vector sizes and values, duplicate ids), so an
        invalid batch raises and writes nothing. A batch that needs one engine call is written
        directly; a longer one is first stored as an intent record. `Swap`s are applied first,
        and when one finds a record changed since it was read, nothing is written and
        `ConflictError` is raised.
        """
        async with self._write_lock:
            if self._unfinished:
                await self._recover()
            steps = await self._plan(ops)
            if not steps:
                return
            touched = {step.collection for step in steps}
            behind = _behind(steps)
            if len(steps) == 1 and (not isinstance(steps[0], Swap) or len(steps[0].old) <= self.batch_size):
                if isinstance(steps[0], Swap):
                    if behind:
                        await self._replay(await self._journal_records(behind))
                    won = await self._claim(steps[0], replay=False, keep=steps[0].partial)
                    if len(won) < len(steps[0].old):
                        await self._sync(touched)
                        raise PartlyWritten(f"{len(steps[0].old) - len(won)} of {len(steps[0].old)} records changed "
                                            "after they were read; the others were written", won)
                else:
                    await self._apply(steps[0], replay=False)
                await self._sync(touched)
                return
            size = sum(len(step.records) for step in steps if isinstance(step, Upsert))
            chosen: str | None = None
            if self.tags_batches and any(isinstance(step, Swap) and len(step.old) > 1 for step in steps):
                # A swap of several records that wins some and loses others puts back what it won.
                # Until then a change by id (no lock) may read what it won: the records carry the
                # key of this write's intent record, so such a change settles the write first
                # (`_journal_records`: a replay completes it, or abandons it and puts those back).
                chosen = str(uuid.uuid4())
                steps = _retoken(steps, BATCH_TAG + chosen)
            body = await off_loop(encode_steps, steps, size=size)
            if behind:  # looked up while the record is stored: no round trip of its own
                self._unfinished = True  # should the look-up fail, the record may be stored all the same
                key, found = await asyncio.gather(self._journal_put(body, chosen), self._journal_records(behind))
                await self._replay(found)
            else:
                key = await self._journal_put(body, chosen)
            self._unfinished = True
            if self.tags_batches:
                steps = await off_loop(_tag, steps, BATCH_TAG + key, size=size)
            if self._beside(steps):
                try:
                    await self._swap_beside(steps)
                except ConflictError:
                    await self._journal_drop(key)  # what it wrote is taken back
                    self._unfinished = False
                    raise
                await self._sync(touched)
                await self._journal_drop(key)
                self._unfinished = False
                return
            fence = self._fence(steps)
            for group in self._groups(steps, fenced=fence is not None):
                if fence is not None and _finishing(group[0]):
                    await fence()
                    fence = None
                if isinstance(group[0], Swap):  # a swap is never grouped
                    try:
                        await self._claim(group[0], replay=False)
                    except ConflictError:
                        await self._journal_drop(key)  # nothing of it was written
                        self._unfinished = False
                        raise
                    continue
                await self._apply_together(group)
                if size > INLINE_RECORDS:
                    # The engine holds the GIL: let other tasks run between the calls of a long batch
                    # (they may then read part of it; a small batch stays unseen until it is whole).
                    await asyncio.sleep(0)
            if fence is not None:
                await fence()
            await self._sync(touched)
            await self._journal_drop(key)
            self._unfinished = False

    def _beside(self, steps: Sequence[WriteOp]) -> bool:
        """Whether a journaled write sends what it keeps beside its swap (`_swap_beside`): on a
        store that processes share, a write of one swap in one engine call, whose upserts are all
        kept (`Upsert.kept`), and the swap's deletions."""
        swaps = [step for step in steps if isinstance(step, Swap)]
        return (self.tags_batches and len(swaps) == 1 and not swaps[0].partial
                and len(swaps[0].old) <= self.batch_size
                and all(isinstance(step, Swap) or _finishing(step) or (isinstance(step, Upsert) and step.kept)
                        for step in steps))

    async def _swap_beside(self, steps: list[WriteOp]) -> None:
        """A write of one swap, what it keeps of the records it replaces and their deletions: the
        swap and the kept records sent together, then one read, then the deletions, where one step
        after the other takes two round trips more (the swap, its read-back, the kept records, the
        `fences`' read, the deletions). The read says which records the swap won and, after the
        kept records are written, as the fences need, which are still stored. A record gone by
        then was deleted after the swap won it (a version keeps the state it wrote: the
        `replay_checks`) or before. Where the swap lost a record, the ones it won are put back,
        the kept records deleted, and `ConflictError` raised. A crash in between leaves the intent
        record, whose replay tells the same apart (`_replay_steps`)."""
        swap = steps[0]
        assert isinstance(swap, Swap)
        kept = [step for step in steps if isinstance(step, Upsert)]
        new = {r.node.memory_id: r for r in swap.new}
        items = [(old, new.get(old.node.memory_id)) for old in swap.old]
        sent = await asyncio.gather(self._swap_send(swap.collection, items, swap.token),
                                    *(self._apply(step, replay=False) for step in kept), return_exceptions=True)
        for outcome in sent:  # every call has ended: the first failure is the write's
            if isinstance(outcome, BaseException):
                raise outcome
        won, stored = await self._swap_read(swap.collection, items, swap.token, replay=False)
        for old, record in items:
            if (record is not None and old.node.memory_id not in stored
                    and await self._replaced(swap.collection, [(old, record)])):
                won.add(old.node.memory_id)
        lost = [old.node.memory_id for old in swap.old if old.node.memory_id not in won]
        fence = self._fence(steps)
        if lost:
            await self._give_back(swap, won)
            if fence is not None and any(m not in stored for m in lost):  # purged meanwhile: what a purge takes
                await fence(stored)
            await self._apply_together([Delete(step.collection, [r.node.memory_id for r in step.records])
                                        for step in kept])
            raise ConflictError(f"memory {lost[0]} changed after it was read (another writer shares the store); "
                                "nothing was written")
        if fence is not None:
            await fence(stored)
        for step in steps:
            if _finishing(step):
                await self._apply(step, replay=False)

    tags_batches = False
    """Whether the records a journaled write upserts carry its journal key as their revision
    (`BATCH_TAG` + key), for a store that processes share: a change by id takes no lock, so it
    may meet a record of a batch whose writer died half way; it then applies that batch's intent
    record first (`_journal_records`), lest a later replay of the batch write over the change."""

    async def _journal_records(self, keys: set[str]) -> list[tuple[str, bytes]]:
        """The intent records among `keys` still stored (see `tags_batches`), oldest first. A
        store that one process owns replays its own before any write: none."""
        return []

    def _groups(self, steps: Sequence[WriteOp], *, fenced: bool = False) -> list[list[WriteOp]]:
        """The steps in order, consecutive data steps on different collections grouped (with
        `concurrent_steps`): their order does not matter, since a crash leaves the journal to
        replay all of them, and no two of them touch the same points. But two deletions go one
        after the other (a purge deletes the memories before their versions), and with a
        `fence`, a swap's deletions go after the other steps (see `fences`)."""
        groups: list[list[WriteOp]] = []
        deletions = (Delete, DeleteWhere)
        for step in steps:
            data = (Upsert, Delete, DeleteWhere)
            last = groups[-1] if groups else None
            if (self.concurrent_steps and isinstance(step, data) and last is not None and isinstance(last[0], data)
                    and step.collection not in {s.collection for s in last}
                    and not (isinstance(step, deletions) and any(isinstance(s, deletions) for s in last))
                    and not (fenced and _finishing(step))):
                last.append(step)
            else:
                groups.append([step])
        return groups

    async def _apply_together(self, group: list[WriteOp]) -> None:
        if len(group) == 1:
            await self._apply(group[0], replay=False)
            return
        done = await asyncio.gather(*(self._apply(step, replay=False) for step in group), return_exceptions=True)
        for outcome in done:  # every call has ended: the first failure is the write's
            if isinstance(outcome, BaseException):
                raise outcome

    async def recover(self) -> int:
        """Finish what a crash interrupted: half-created collections are removed and every
        leftover intent record is applied. Returns how many records were applied. Opening a
        `ReMe` calls this; call it after constructing a store yourself."""
        async with self._write_lock:
            return await self._recover()

    async def _recover(self) -> int:
        await self._recover_collections()
        n = await self._replay(await self._journal_pending())
        self._unfinished = False
        return n

    async def _replay(self, records: list[tuple[str, bytes]]) -> int:
        """Apply intent records (key, body), oldest first, each then dropped; under `_write_lock`.
        Returns how many were applied (not abandoned: see `_replay_steps`)."""
        n = 0
        for key, body in records:
            try:
                steps = await asyncio.to_thread(decode_steps, body)
            except (ValueError, KeyError, TypeError, StopIteration, ValidationError) as exc:
                # Only a crash of the OS in sync="process" mode can leave a record unreadable.
                warnings.warn(f"skipping an unreadable intent record {key}: {exc}", RuntimeWarning, stacklevel=2)
                await self._journal_drop(key)
                continue
            if await self._replay_steps(steps):
                await self._sync({step.collection for step in steps})
                n += 1
            await self._journal_drop(key)
        return n

    async def _replay_steps(self, steps: list[WriteOp]) -> bool:
        """Apply an intent record's steps again; False when it is abandoned instead: its swaps had not
        all been won before the crash, and another write changed one of their records since.

        A record whose swap was won and then replaced by a later write (where no lock makes later
        writers wait for a dead one's record to be replayed: a change by id) is not abandoned: its
        other steps (the versions it keeps) are applied. `replay_checks` tells the two apart."""
        swaps = [step for step in steps if isinstance(step, Swap)]
        if swaps and not await self._past_swaps(steps):
            claimed: list[tuple[Swap, set[str]]] = []
            applied = True
            for swap in swaps:
                if await self.collection_dim(swap.collection) is None:
                    applied = False
                    break
                won = await self._claim(swap, replay=True, keep=True)
                claimed.append((swap, won))
                new = {r.node.memory_id: r for r in swap.new}
                lost = [(old, new.get(old.node.memory_id)) for old in swap.old if old.node.memory_id not in won]
                if lost and not await self._replaced(swap.collection, lost):
                    applied = False
                    break
            if not applied:
                for swap, won in claimed:
                    await self._give_back(swap, won)
                fence = self._fence(steps)
                if fence is not None:  # as `_swap_beside` does for a write that lost
                    await fence()
                for step in steps:  # sent beside the swaps, maybe (`_swap_beside`): taken back
                    if isinstance(step, Upsert) and step.kept and step.records:
                        await self._apply(Delete(step.collection, [r.node.memory_id for r in step.records]),
                                          replay=True)
                return False
        fence = self._fence(steps, replay=True)
        for step in steps:
            if isinstance(step, Swap):
                continue
            if fence is not None and _finishing(step):
                await fence()
                fence = None
            await self._apply(step, replay=True)
        if fence is not None:
            await fence()
        return True

    fences: dict[str, Callable[[list[tuple[VectorRecord, VectorRecord | None]], list[Upsert], set[str] | None,
                                bool], Awaitable[list[WriteOp]]]]
    """Per collection, for a store that processes share (`tags_batches`): what a write that swaps
    records of it must take back of its upserts once they are written (before the swap's
    deletions), given the swap's records (old as read, new as written; None: deleted) and the
    write's upserts, and which of the swap's records are stored now when the write read that
    already after its upserts (None: the check reads it). Deletions that are no swap (a purge) do
    not wait for changes by id, which take no lock: such a change may write what it keeps of a
    record (its version) after a purge deleted the record and what was kept of it. Read after the
    write, the record tells: a purge
    deletes the records before what was kept of them, so a record still there was there before the
    purge's sweep, which then takes what was written too. The last argument: whether the write
    is a replay, whose deletions may have run before the crash (a record it deletes is gone,
    purged or not: `purged` tells). Set by whoever writes that collection and keeps what it
    replaces (the memory repo)."""

    def _fence(self, steps: Sequence[WriteOp], *, replay: bool = False) -> Callable[..., Awaitable[None]] | None:
        """The write's `fences` as one call, or None when it needs none."""
        upserts = [step for step in steps if isinstance(step, Upsert) and step.records]
        checks = [(self.fences[step.collection], step) for step in steps
                  if isinstance(step, Swap) and step.collection in self.fences]
        if not (self.tags_batches and upserts and checks):
            return None

        async def fence(stored: set[str] | None = None) -> None:
            for check, swap in checks:
                new = {r.node.memory_id: r for r in swap.new}
                for op in await check([(old, new.get(old.node.memory_id)) for old in swap.old], upserts, stored,
                                      replay):
                    await self._apply(op, replay=True)

        return fence

    replay_checks: dict[str, Callable[[list[tuple[VectorRecord, VectorRecord | None]]], Awaitable[bool]]]
    """Per collection, for replays: whether a swap's records (old as read, new as it wrote them;
    None: deleted) were written and then replaced by later writes, though none holds the swap's
    revision any longer. Set by whoever writes that collection and keeps what it replaces (the
    memory repo: a later write kept each new state as a version, or changed only its access counts)."""

    async def _replaced(self, name: str, items: list[tuple[VectorRecord, VectorRecord | None]]) -> bool:
        check = self.replay_checks.get(name)
        return check is not None and await check(items)

    async def _past_swaps(self, steps: list[WriteOp]) -> bool:
        """Whether the writer had won the swaps of this record: a later step of it (the first
        record of its first upsert after them that is not kept, a new id) is stored. A record with
        no such step claims again."""
        for step in steps:
            if isinstance(step, Upsert) and step.records and not step.kept:  # kept: maybe sent beside the swaps
                if await self.collection_dim(step.collection) is None:
                    return False
                return not (await self.get(step.collection, [step.records[0].node.memory_id])).missing
        return False

    async def _claim(self, step: Swap, *, replay: bool, keep: bool = False) -> set[str]:
        """A swap's conditional write; returns the ids it won. Where it lost any record, the ones
        it won are put back (still only where they hold its token) and `ConflictError` names a
        lost one; with `keep`, that is the caller's to decide (`_give_back`)."""
        new = {r.node.memory_id: r for r in step.new}
        items = [(old, new.get(old.node.memory_id)) for old in step.old]
        won: set[str] = set()
        for i in range(0, len(items), self.batch_size):
            won |= await self._swap(step.collection, items[i:i + self.batch_size], step.token, replay=replay)
        lost = [old.node.memory_id for old, _ in items if old.node.memory_id not in won]
        if lost and not keep:
            await self._give_back(step, won)
            raise ConflictError(f"memory {lost[0]} changed after it was read (another writer shares the store); "
                                "nothing was written")
        return won

    async def _give_back(self, step: Swap, won: set[str]) -> None:
        back = [old for old in step.old if old.node.memory_id in won]
        for i in range(0, len(back), self.batch_size):
            await self._put_back(step.collection, back[i:i + self.batch_size], step.token)

    async def _swap(self, name: str, items: list[tuple[VectorRecord, VectorRecord | None]], token: str, *,
                    replay: bool) -> set[str]:
        """Write each item's new record (None: mark it for deletion) with revision `token` where the
        store still holds the old record's revision or already `token`; returns the ids that hold
        `token` now (on `replay`, a record to delete that is gone counts). This default reads,
        compares and writes: right for a store that one process owns, whose writes `write`
        serializes; a backend that processes share compares in the engine."""
        got = await self.get(name, [old.node.memory_id for old, _ in items])
        stored = {r.node.memory_id: r.revision for r in got.found}
        won = {old.node.memory_id for old, new in items if new is None and replay and old.node.memory_id not in stored}
        writes = []
        for old, new in items:
            mid = old.node.memory_id
            if mid in stored and stored[mid] in (old.revision, token):
                won.add(mid)
                if new is not None:
                    writes.append(VectorRecord.model_construct(node=new.node, vector=new.vector, revision=token))
        if writes:
            await self._upsert(name, writes)
        return won

    async def _swap_send(self, name: str, items: list[tuple[VectorRecord, VectorRecord | None]], token: str) -> None:
        """The conditional write of `_swap` without its read-back (`_swap_read`), for a store that
        processes share (`tags_batches`), whose engine compares."""
        raise NotImplementedError

    async def _swap_read(self, name: str, items: list[tuple[VectorRecord, VectorRecord | None]], token: str, *,
                         replay: bool) -> tuple[set[str], set[str]]:
        """After `_swap_send`: the ids that hold `token` now (as `_swap` returns them), and the ids
        of the items still stored, whatever their revision."""
        raise NotImplementedError

    async def _put_back(self, name: str, olds: list[VectorRecord], token: str) -> None:
        """Write `olds` back (their own revisions) where the store holds `token` (see `_swap`)."""
        got = await self.get(name, [old.node.memory_id for old in olds])
        mine = {r.node.memory_id for r in got.found if r.revision == token}
        back = [old for old in olds if old.node.memory_id in mine]
        if back:
            await self._upsert(name, back)

    async def _delete_swapped(self, name: str, ids: list[str], token: str) -> None:
        """Delete `ids` where they hold `token`; one process's store deletes them outright."""
        await self._delete_ids(name, ids)

    async def _plan(self, ops: Sequence[WriteOp]) -> list[WriteOp]:
        """Check every op against the collections as the earlier ops leave them, and split upserts
        into engine calls of `batch_size`. Raises before anything is written. Swaps come first,
        their deletions last."""
        dims: dict[str, int | None] = {}

        async def dim_of(name: str) -> int | None:
            if name not in dims:  # remembered, as reads remember it: asked of a server once, not at every write
                dims[name] = await self.known_dim(name)
            return dims[name]

        async def require(name: str) -> int:
            dim = await dim_of(name)
            if dim is None:
                raise CollectionNotFoundError(f"collection {name!r} does not exist")
            return dim

        swaps: list[WriteOp] = []
        steps: list[WriteOp] = []
        finish: list[WriteOp] = []
        for op in ops:
            if isinstance(op, Swap):
                dim = await require(op.collection)
                old = await off_loop(self._check_records, op.collection, dim, op.old, size=len(op.old))
                new = await off_loop(self._check_records, op.collection, dim, op.new, size=len(op.new))
                ids = [r.node.memory_id for r in old]
                if len(set(ids)) != len(ids) or not {r.node.memory_id for r in new} <= set(ids) \
                        or len(new) != len({r.node.memory_id for r in new}):
                    raise InvalidInputError("a swap names each stored record once, and replaces only those")
                if not old:
                    continue
                token = uuid.uuid4().hex
                gone = [i for i in ids if i not in {r.node.memory_id for r in new}]
                if op.partial and gone:
                    raise InvalidInputError("a partial swap deletes nothing")
                swaps.append(Swap(op.collection, old, new, token, op.partial))
                if gone:
                    finish.append(Delete(op.collection, gone, token))
            elif isinstance(op, Upsert):
                dim = await require(op.collection)
                checked = await off_loop(self._check_records, op.collection, dim, op.records, False,
                                         size=len(op.records))
                ids = [r.node.memory_id for r in checked]
                if len(set(ids)) != len(ids):
                    raise InvalidInputError("the same memory_id appears twice in one upsert")
                steps += [Upsert(op.collection, checked[i:i + self.batch_size], op.kept)
                          for i in range(0, len(checked), self.batch_size)]
            elif isinstance(op, Delete):
                await require(op.collection)
                ids = [str(i) for i in op.ids]
                if not all(is_uuid(i) for i in ids):
                    raise InvalidInputError("memory ids are UUIDs")
                if ids:
                    steps.append(Delete(op.collection, ids, op.revision))
            elif isinstance(op, DeleteWhere):
                await require(op.collection)
                steps.append(op)
            elif isinstance(op, CreateCollection):
                existing = await dim_of(op.collection)
                if existing is not None:
                    if existing != op.dim:
                        raise VectorSizeError(f"collection {op.collection!r} exists with vectors of size "
                                              f"{existing}, not {op.dim}")
                    continue
                if not isinstance(op.dim, int) or op.dim < 1:
                    raise VectorSizeError("vector size must be at least 1")
                dims[op.collection] = op.dim
                steps.append(op)
            elif isinstance(op, DropCollection):
                if await dim_of(op.collection) is not None:
                    dims[op.collection] = None
                    steps.append(op)
            else:
                raise InvalidInputError(f"not a write operation: {op!r}")
        return swaps + steps + finish

    async def _apply(self, step: WriteOp, *, replay: bool) -> None:
        """One engine call. On replay, a step on a collection that is gone is skipped: only a
        later drop of the same record can have removed it."""
        if isinstance(step, CreateCollection):
            if await self.collection_dim(step.collection) != step.dim:
                await self._create_collection(step.collection, step.dim)
            self._dims[step.collection] = step.dim
            return
        if isinstance(step, DropCollection):
            self._dims.pop(step.collection, None)
            await self._drop_collection(step.collection)
            return
        if replay and await self.collection_dim(step.collection) is None:
            return
        if isinstance(step, Upsert):
            await self._upsert(step.collection, step.records)
        elif isinstance(step, Delete):
            if step.revision:
                await self._delete_swapped(step.collection, list(step.ids), step.revision)
            else:
                await self._delete_ids(step.collection, list(step.ids))
        elif isinstance(step, DeleteWhere):
            await self._delete_filter(step.collection, step.filter)

    def _check_records(self, name: str, dim: int, records: Sequence[VectorRecord],
                       keep_revision: bool = True) -> list[VectorRecord]:
        # model_construct: the node is already validated and the vector was just checked. A plain
        # upsert gives every record a fresh revision: a swap that read the one before then loses.
        return [VectorRecord.model_construct(node=r.node, vector=self._check_vector(name, dim, r.vector),
                                             revision=r.revision if keep_revision else None,
                                             lineage=r.lineage if keep_revision else ()) for r in records]

    # -- shared ------------------------------------------------------------------------------
    async def _require_dim(self, name: str) -> int:
        dim = await self.known_dim(name)
        if dim is None:
            raise CollectionNotFoundError(f"collection {name!r} does not exist")
        return dim

    async def known_dim(self, name: str) -> int | None:
        """`collection_dim(name)`, asked of the backend once and then remembered (as every read
        and write of this store remembers it): a server answers it in two round trips."""
        dim = self._dims.get(name) or await self.collection_dim(check_collection_name(name))
        if dim is not None:
            self._dims[name] = dim
        return dim

    def keyword_terms(self, text: str, *, query: bool) -> SparseTerms:
        sparse = self._bm25.embed_query(text) if query else self._bm25.embed_document(text)
        return SparseTerms(sparse.indices, sparse.values)

    def _check_vector(self, name: str, dim: int, vector: Sequence[float] | None) -> list[float]:
        if vector is None:
            raise InvalidInputError("a dense vector is required")
        if len(vector) != dim:
            raise VectorSizeError(
                f"collection {name!r} holds vectors of size {dim}, got {len(vector)}: "
                "was the embedder changed? Use a new collection or re-import with the old embedder")
        values = vector.tolist() if isinstance(vector, np.ndarray) else list(vector)
        try:
            total = math.fsum(values)  # NaN or infinity anywhere makes the sum non-finite
        except (TypeError, OverflowError):
            raise InvalidInputError("a vector holds numbers only") from None
        if not math.isfinite(total) or (values and max(map(abs, values)) > F32_MAX):
            raise InvalidInputError("vector holds NaN, infinite values, or values beyond a 32-bit float")
        return values

    async def upsert(self, name: str, records: Sequence[VectorRecord]) -> None:
        """Insert or replace nodes (by `memory_id`), all or nothing (`write` of one `Upsert`)."""
        await self.write([Upsert(name, records)])

    async def update(self, name: str, node: MemoryNode, vector: Sequence[float] | None = None) -> None:
        """Replace an existing node; keeps its stored vector when `vector` is None."""
        found = await self.get(name, [node.memory_id], with_vectors=vector is None)
        if found.missing:
            raise MemoryNotFoundError(node.memory_id)
        await self.upsert(name, [VectorRecord(node=node, vector=list(vector) if vector is not None
                                              else found.found[0].vector)])

    async def delete(self, name: str, ids: Sequence[str]) -> int:
        """Delete by id; returns how many existed."""
        await self._require_dim(name)
        found = await self.get(name, ids)
        existing = [r.node.memory_id for r in found.found]
        await self.write([Delete(name, existing)])
        return len(existing)

    async def delete_by_filter(self, name: str, flt: Filter) -> int:
        """Delete every node matching `flt`; returns how many."""
        await self._require_dim(name)
        n = await self.count(name, flt)
        if n:
            await self.write([DeleteWhere(name, flt)])
        return n

    async def search(self, name: str, *, vector: Sequence[float] | None = None, text: str | None = None,
                     mode: SearchMode = "hybrid", flt: Filter | None = None, limit: int = 10,
                     score_threshold: float | None = None) -> list[SearchResult]:
        """Dense (by `vector`), keyword (BM25 over `text`) or hybrid (both, fused by RRF in the engine)."""
        dim = await self._require_dim(name)
        if mode not in ("dense", "keyword", "hybrid"):
            raise InvalidInputError(f"search mode must be dense, keyword or hybrid, not {mode!r}")
        if limit < 1:
            raise InvalidInputError("limit must be at least 1")
        dense = self._check_vector(name, dim, vector) if mode != "keyword" else None
        terms = None
        if mode != "dense":
            if not text or not text.strip():
                raise InvalidInputError(f"{mode} search needs the query text")
            terms = self.keyword_terms(text, query=True)
            if not terms.indices:
                if mode == "keyword":
                    return []
                mode, terms = "dense", None
        # Equal scores come back in an order that depends on the engine's segment layout, which
        # differs between two stores holding the same points. Ask for a margin, order ties by id,
        # and widen the request while a tie reaches past what was fetched: the top `limit` is then
        # the same for the same points, run after run.
        want = limit + 16
        while True:
            hits = await self._query(name, mode, dense, terms, flt, want, score_threshold, max(4 * want, 40))
            hits = sorted(hits, key=lambda h: (-h.score, h.id))
            if len(hits) < want or hits[limit - 1].score != hits[-1].score or want >= MAX_TIE_FETCH:
                break
            want *= 4
        top = hits[:limit]
        todo = [h.id for h in top if h.payload is None]
        fetched = await self._payloads(name, todo) if todo else {}
        payloads = [h.payload if h.payload is not None else fetched.get(h.id) for h in top]
        kind: ScoreKind = "cosine" if mode == "dense" else "bm25" if mode == "keyword" else "rrf"
        return [_construct(SearchResult, {"node": from_payload(payload), "similarity": h.score, "rank": i + 1,
                                          "score_kind": kind})
                for i, (h, payload) in enumerate((h, p) for h, p in zip(top, payloads) if p is not None)]

    async def list(self, name: str, *, flt: Filter | None = None, sort_key: str | None = None,
                   direction: Direction = "desc", limit: int = 100, cursor: str | None = None) -> MemoryPage:
        """A page of nodes matching `flt`, by `sort_key` (or by id); pass `next_cursor` back for more."""
        await self._require_dim(name)
        if limit < 1:
            raise InvalidInputError("limit must be at least 1")
        if sort_key is not None and sort_key not in SORT_KEYS:
            raise InvalidInputError(f"sort_key must be one of {', '.join(SORT_KEYS)}, not {sort_key!r}")
        if direction not in ("asc", "desc"):
            raise InvalidInputError(f"direction must be asc or desc, not {direction!r}")
        state = _decode_cursor(cursor) if cursor else _Cursor(sort=sort_key, direction=direction)
        if cursor and (state.sort != sort_key or (sort_key and state.direction != direction)):
            raise InvalidInputError("cursor belongs to a listing with another sort order")
        if sort_key is None:
            records, nxt = await self._scroll(name, flt, limit, state.offset, None, False)
            nodes = [r.node for r in records]
            return MemoryPage(nodes=nodes, next_cursor=_encode_cursor(_Cursor(offset=nxt)) if nxt else None)
        seen = set(state.seen)
        want = limit + len(seen)
        records, _ = await self._scroll(name, flt, want, None, (sort_key, direction, state.value), False)
        nodes = [r.node for r in records if r.node.memory_id not in seen][:limit]
        if len(records) < want or not nodes:
            return MemoryPage(nodes=nodes, next_cursor=None)
        last = sort_value(nodes[-1], sort_key)
        ties = [n.memory_id for n in nodes if sort_value(n, sort_key) == last]
        if last == state.value:
            ties = state.seen + ties
        nxt_state = _Cursor(value=last, seen=ties, sort=sort_key, direction=direction)
        return MemoryPage(nodes=nodes, next_cursor=_encode_cursor(nxt_state))

    async def iter_records(self, name: str, flt: Filter | None = None, *, with_vectors: bool = False,
                           page_size: int = 512) -> AsyncIterator[VectorRecord]:
        """Every record matching `flt`, in id order, one page in memory at a time."""
        offset: str | None = None
        while True:
            records, offset = await self._scroll(name, flt, page_size, offset, None, with_vectors)
            for record in records:
                yield record
            if offset is None:
                return

    async def export_jsonl(self, name: str, path: str | Path, *, flt: Filter | None = None,
                           with_vectors: bool = False) -> int:
        """Write matching nodes to `path`, one JSON object a line (node fields, plus `vector`)."""
        await self._require_dim(name)

        async def rows() -> AsyncIterator[dict[str, Any]]:
            async for record in self.iter_records(name, flt, with_vectors=with_vectors):
                row = record.node.model_dump(mode="json")
                if with_vectors:
                    row["vector"] = record.vector
                yield row

        return await write_jsonl(Path(path), rows())

    async def import_jsonl(self, name: str, path: str | Path, *, embed: EmbedFn | None = None) -> int:
        """Load a file written by `export_jsonl`. Every line is checked before anything is written
        (an `InvalidInputError` names the first bad one); lines without a vector (or with one of
        another size) are embedded with `embed`."""
        dim = await self._require_dim(name)
        records: list[VectorRecord] = []
        first: dict[str, int] = {}
        for lineno, row in read_jsonl(path):
            where = f"{path}:{lineno}"
            vector = line_vector(row.pop("vector", None), dim, where)
            node = line_node(row, where)
            if node.memory_id in first:
                raise InvalidInputError(f"{where}: memory_id {node.memory_id} is also on line {first[node.memory_id]}; "
                                        "nothing was imported")
            first[node.memory_id] = lineno
            records.append(VectorRecord.model_construct(node=node, vector=vector))
        todo = [r for r in records if r.vector is None]
        if todo:
            if embed is None:
                raise InvalidInputError(f"{path}: {len(todo)} lines carry no vector of size {dim} and no embedder was given")
            vectors = await embed([r.node.retrieval_text for r in todo])
            for record, vec in zip(todo, vectors):
                record.vector = vec
        await self.upsert(name, records)  # one write: the whole file or nothing
        return len(records)


def line_node(row: dict[str, Any], where: str) -> MemoryNode:
    """The node of an export line (its other keys taken off); `InvalidInputError` naming `where`."""
    try:
        return MemoryNode.model_validate(row)
    except ValidationError as exc:
        raise InvalidInputError(f"{where}: {describe(exc)}; nothing was imported") from None


def line_vector(value: Any, dim: int, where: str) -> list[float] | None:
    """The `vector` of an export line: None when there is none, or one of another size (the line
    is embedded again, as after a change of embedder); anything but a list of finite numbers is an
    `InvalidInputError` naming `where`."""
    if value is None:
        return None
    bad = InvalidInputError(f"{where}: vector must be a list of finite numbers (or absent); nothing was imported")
    if not isinstance(value, list) or not all(type(x) is float or type(x) is int for x in value):
        raise bad  # type(): a bool is not a number here, nor a numeric string
    try:
        values = [float(x) for x in value]
    except OverflowError:  # an integer beyond a float
        raise bad from None
    if not all(abs(x) <= F32_MAX for x in values):  # NaN compares false too
        raise bad
    return values if len(values) == dim else None


async def write_jsonl(path: Path, rows: AsyncIterator[dict[str, Any]]) -> int:
    """Write `rows` to `path`, one JSON object a line, atomically: into a temporary file of its own
    beside it (a new name each time: nothing already there is written over), renamed into place
    when complete (a half-written file never stays). Returns how many rows. A path that cannot be
    written is the caller's: `InvalidInputError` naming it, and nothing is left behind."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    n = 0
    try:
        with tmp.open("x", encoding="utf-8") as fh:
            async for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
        tmp.replace(path)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    finally:
        try:
            tmp.unlink(missing_ok=True)  # gone after the rename; a half-written file otherwise
        except OSError:
            pass  # it could not be made in the first place
    return n


def read_jsonl(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-empty line; a broken line is an InvalidInputError."""
    rows: list[tuple[int, dict[str, Any]]] = []
    try:
        with Path(path).open("rb") as fh:  # bytes: invalid UTF-8 is a line's error, not a crash
            for lineno, line in enumerate(fh, 1):
                if lineno > MAX_IMPORT_LINES:
                    raise InvalidInputError(f"{path}: more than {MAX_IMPORT_LINES} lines; split the file")
                if not line.strip():
                    continue
                try:
                    obj = parse_json(line, "the line")
                except ValueError as exc:
                    raise InvalidInputError(f"{path}:{lineno}: {exc}") from None
                if not isinstance(obj, dict):
                    raise InvalidInputError(f"{path}:{lineno}: expected a JSON object")
                rows.append((lineno, obj))
    except (OSError, ValueError) as exc:  # ValueError: a path with NUL or a lone surrogate
        if isinstance(exc, InvalidInputError):
            raise
        raise InvalidInputError(f"cannot read {str(path)!r}: {exc}") from None
    return rows
