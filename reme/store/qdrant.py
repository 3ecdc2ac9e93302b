"""The same collections on a Qdrant server or cluster, through `qdrant-client`.

`url` (+ `api_key`) reaches a server. `location=":memory:"` (or `path=`) is qdrant-client's local
mode, which scans every point in Python: it exists here to test this backend without a server.

Intent records of multi-step writes (see `VectorStore.write`) live in the `_reme_journal`
collection (a name no ReMe collection can take), as payload: the record cut into parts, then a
header point written last, which makes it count. A server is shared by several processes, and a
record with a header may belong to a writer that is still applying it: replaying it alongside
would race that writer, and a late replay would undo what it wrote next. So `recover()` replays
the records this store wrote itself and those older than `journal_stale_after` seconds (far
longer than any write takes), whose writer has surely died. Durability is the server's: a write
returns once the server applied it (`wait=True`); its WAL settings decide about fsync.

Processes sharing a server take turns through `exclusive(name)`: a lease held in the
`_reme_locks` collection. Taking it is a conditional upsert in the engine (the lock's point is
written only where it was released or its lease has ended), read back to see who holds it; the
holder renews it while it works and releases it when done. A holder that died loses it after
`lease` seconds, and whoever takes it over first applies the writes the dead one left unfinished
under it (journal records name every lock their writer held), so nobody decides on them
half-written and no late replay undoes what was written next. The lease alone does not fence a
holder that froze beyond it: the write of a stored record is conditional in the engine too
(`Swap`: see `_swap`), so such a holder's write loses when it comes back. Writers that change
stored records by id take no lock at all (the conditional write is their guard); the records a
journaled write upserts name its intent record (`tags_batches`), which such a writer applies
first, since no lock made it wait for a dead writer's records to be replayed. Adds take no
collection-wide lock either: `claims(names)` holds a lease per name (the content hashes and ids
of the memories an add writes), all taken in one request, so adds of other contents go on beside it.

The server must be Qdrant 1.16 or newer (conditional upserts); the first write checks, so
qdrant-client's own version check, which warns on any minor-version gap, is off.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import random
import time
import uuid
import warnings
from typing import Any, AsyncIterator, Awaitable, Callable, Sequence, TypeVar, cast

import grpc
import httpx
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ApiException
from pydantic import ValidationError

from reme.errors import ConfigError, StoreError, StoreLockedError
from reme.store.base import (DATETIME_FIELDS, DENSE, KEYWORD_FIELDS, LINEAGE, PRIOR, REVISION, RRF_K, SPARSE,
                             Direction, GetResult, Hit, SearchMode, SparseTerms, SyncMode, VectorRecord, VectorStore,
                             check_collection_name, dense_of, is_uuid, lineage_of, record_of, to_payload)
from reme.store.base import Swap, decode_steps
from reme.store.filters import Filter, FilterTranslator


class _QdrantFilters(FilterTranslator[Any]):
    def match_value(self, key: str, value: str | int | bool) -> Any:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    def match_any(self, key: str, values: list[Any]) -> Any:
        return models.FieldCondition(key=key, match=models.MatchAny(any=values))

    def match_text(self, key: str, text: str) -> Any:
        return models.FieldCondition(key=key, match=models.MatchText(text=text))

    def range_number(self, key: str, gt: Any, gte: Any, lt: Any, lte: Any) -> Any:
        return models.FieldCondition(key=key, range=models.Range(gt=gt, gte=gte, lt=lt, lte=lte))

    def range_datetime(self, key: str, gt: Any, gte: Any, lt: Any, lte: Any) -> Any:
        return models.FieldCondition(key=key, range=models.DatetimeRange(gt=gt, gte=gte, lt=lt, lte=lte))

    def group(self, must: list[Any] | None = None, should: list[Any] | None = None,
              must_not: list[Any] | None = None) -> Any:
        return models.Filter(must=must, should=should, must_not=must_not)


_FILTERS = _QdrantFilters()
T = TypeVar("T")
JOURNAL = "_reme_journal"
LOCKS = "_reme_locks"
MIN_SERVER = (1, 16)
"""The oldest server ReMe writes to: conditional upserts (`update_filter`) came in 1.16."""
_LOCK_IDS = uuid.UUID("6c1c0b9e-3f43-4d36-9a57-2f1d5c0e8a11")
_PART = 4_000_000  # characters of a record a journal point holds
_HOLDING: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("reme_qdrant_holding", default=())
"""The tokens of the locks (`exclusive`, `claims`) the current task holds, innermost last: a
journal record names them all, so whoever takes over any of them from a dead writer finishes its
write (a match on a list matches any of its values)."""
_HEADER = models.FieldCondition(key="header", match=models.MatchValue(value=True))


_EVERY = "*"
"""The memory a purge of a whole collection notes (`QdrantStore.mark_purged`)."""


def _note_id(name: str, memory_id: str) -> str:
    """The point noting that a purge of `name` took `memory_id`."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"reme-purged/{name}/{memory_id}"))


def _held_by(token: str) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key="holder", match=models.MatchValue(value=token))])


def _revision_is(revision: str | None) -> Any:
    """The condition "the record's revision is `revision`" (None: it has none, as records written
    before revisions existed)."""
    if revision is None:
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=REVISION))
    return models.FieldCondition(key=REVISION, match=models.MatchValue(value=revision))


def _dying(token: str) -> str:
    """The revision a `Swap` gives a record it deletes, until the deletion (see `_swap`)."""
    return token + _DYING


def _is_dying(revision: Any) -> bool:
    return isinstance(revision, str) and revision.endswith(_DYING)


_DYING = "-dying"


def _sparse(terms: SparseTerms) -> models.SparseVector:
    return models.SparseVector(indices=terms.indices, values=terms.values)


class _Retrying(httpx.AsyncHTTPTransport):
    """Sends a request again, with growing pauses, for up to `retry_for` seconds while the server
    cannot answer it now: the connection fails (the node is down or restarting) or it answers
    5xx (a cluster whose peers have not yet noticed a dead node: "Please retry"), or it says a
    collection this process saw exist does not (a cluster whose node has not yet applied the
    collection's creation another node agreed to). Every request ReMe sends may be sent twice:
    upserts and deletes name their points, a lock's write is conditional, and creating a
    collection that exists is answered as such."""

    def __init__(self, retry_for: float, known: set[str]) -> None:
        super().__init__()
        self.retry_for = retry_for
        self.known = known  # the collections this process saw exist (the store adds them)

    async def _not_there_yet(self, request: httpx.Request, response: httpx.Response) -> httpx.Response | None:
        """None when `response` says a known collection does not exist; else the response, whole."""
        parts = request.url.path.split("/")
        if response.status_code != 404 or len(parts) < 3 or parts[1] != "collections" or parts[2] not in self.known:
            return response
        raw = b"".join([chunk async for chunk in response.aiter_raw()])  # as sent: maybe compressed
        await response.aclose()

        def whole() -> httpx.Response:
            return httpx.Response(response.status_code, headers=response.headers, content=raw, request=request,
                                  extensions=response.extensions)

        text = whole().read()  # decoded
        if b"Collection" in text and b"exist" in text:
            return None
        return whole()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.retry_for
        pause = 0.05
        while True:
            try:
                response = await super().handle_async_request(request)
                if time.monotonic() >= deadline:
                    return response
                if response.status_code < 500:
                    answer = await self._not_there_yet(request, response)
                    if answer is not None:
                        return answer
                else:
                    await response.aclose()
            except (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
                if time.monotonic() >= deadline:
                    raise
            # The last pause is cut to the deadline: a call gives up after `retry_for`, not before.
            await asyncio.sleep(max(0.0, min(pause * (0.5 + random.random()), deadline - time.monotonic())))
            pause = min(pause * 2, 1.0)


class _RetryingGrpc:
    """The client's calls over gRPC, sent again as `_Retrying` sends REST requests again: for up
    to `retry_for` seconds while the server answers UNAVAILABLE (the node is down or restarting)
    or INTERNAL (REST's 500), or NOT_FOUND for a collection this process saw exist. A call is
    made anew each time (qdrant-client offers no gRPC interceptor; the channel reconnects by
    itself, within a second: `grpc.max_reconnect_backoff_ms`)."""

    def __init__(self, client: AsyncQdrantClient, retry_for: float, known: set[str]) -> None:
        self._client = client
        self.retry_for = retry_for
        self.known = known

    def _transient(self, exc: grpc.aio.AioRpcError, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL):
            return True
        name = kwargs.get("collection_name", args[0] if args else None)
        details = exc.details() or ""
        return (exc.code() == grpc.StatusCode.NOT_FOUND and name in self.known
                and "Collection" in details and "exist" in details)

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._client, name)
        if name == "close" or not inspect.iscoroutinefunction(call):
            return call

        async def again(*args: Any, **kwargs: Any) -> Any:
            deadline = time.monotonic() + self.retry_for
            pause = 0.05
            while True:
                try:
                    return await call(*args, **kwargs)
                except grpc.aio.AioRpcError as exc:
                    if time.monotonic() >= deadline or not self._transient(exc, args, kwargs):
                        raise
                await asyncio.sleep(max(0.0, min(pause * (0.5 + random.random()), deadline - time.monotonic())))
                pause = min(pause * 2, 1.0)
        return again


class _Turns:
    """A store's ordered writes (`ordering=medium`: locks, conditional writes) and its collection
    changes (make, drop, index), never at once. Qdrant 1.16.3 stalls a whole cluster for about
    three minutes (calls time out, then answer again) when a collection is dropped or made while
    an ordered write is under way (tests/test_cluster.py): a scrub drops and makes collections
    while its own lock is renewed. Writes go side by side; a change waits until those under way
    are answered, and writes wait while a change waits or runs. Other processes' writes are not
    kept apart (docs/scaling.md)."""

    def __init__(self) -> None:
        self._writes = 0
        self._changes = 0  # waiting or under way
        self._loop: asyncio.AbstractEventLoop | None = None
        self._no_writes, self._no_changes = asyncio.Event(), asyncio.Event()  # made again per loop: `_events`

    def _events(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # asyncio's events belong to the loop that first waits on them
            self._loop, self._no_writes, self._no_changes = loop, asyncio.Event(), asyncio.Event()
            if not self._writes:
                self._no_writes.set()
            if not self._changes:
                self._no_changes.set()

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[None]:
        self._events()
        while self._changes:
            await self._no_changes.wait()
        self._writes += 1
        self._no_writes.clear()
        try:
            yield
        finally:
            self._writes -= 1
            if not self._writes:
                self._no_writes.set()

    @contextlib.asynccontextmanager
    async def change(self) -> AsyncIterator[None]:
        self._events()
        self._changes += 1
        self._no_changes.clear()
        try:
            while self._writes:
                await self._no_writes.wait()
            yield
        finally:
            self._changes -= 1
            if not self._changes:
                self._no_changes.set()


class QdrantStore(VectorStore):
    """Qdrant through `qdrant-client`: a server by `url`, or local mode by `location`/`path`."""

    backend = "qdrant"
    concurrent_steps = True

    def __init__(self, *, url: str | None = None, api_key: str | None = None, location: str | None = None,
                 path: str | None = None, timeout: float = 30.0, bm25_avg_len: float = 32.0,
                 batch_size: int = 256, sync: SyncMode = "process", journal_stale_after: float = 600.0,
                 lease: float = 15.0, lock_wait: float = 120.0, shard_number: int | None = None,
                 replication_factor: int | None = None, write_consistency_factor: int | None = None,
                 retry_for: float = 10.0, prefer_grpc: bool = False, grpc_port: int = 6334) -> None:
        super().__init__(bm25_avg_len=bm25_avg_len, batch_size=batch_size, sync=sync)
        self.journal_stale_after = journal_stale_after
        self.lease = lease
        """Seconds a lock of `exclusive` outlives a holder that stopped renewing it (one that died)."""
        self.lock_wait = lock_wait
        """Seconds `exclusive` waits for a lock before `StoreLockedError`."""
        self._layout: dict[str, Any] = {"shard_number": shard_number, "replication_factor": replication_factor,
                                        "write_consistency_factor": write_consistency_factor}
        """How a server spreads the collections this store creates (None: the server's default)."""
        self._own: set[str] = set()  # records this store wrote: replayable at once
        self._ready: set[str] = set()  # the bookkeeping collections known to be there (`_bookkeeping`)
        self._server_checked = False
        if sum(x is not None for x in (url, location, path)) != 1:
            raise ConfigError("the qdrant backend needs exactly one of url, location (':memory:') or path")
        self.local = url is None
        self.url = url
        self.tags_batches = not self.local
        self.shared = not self.local
        # A server's calls are retried while it cannot answer them (`retry_for` seconds): a node
        # restarting, a cluster noticing a dead peer.
        self._known: set[str] = set()
        self._turns = _Turns()
        options: dict[str, Any] = ({"transport": _Retrying(retry_for, self._known)}
                                  if url is not None and retry_for > 0 else {})
        if url is not None and not prefer_grpc:
            # Answers as they are, not gzip: Qdrant sends a compressed answer over 1 KB in two
            # writes on a socket without TCP_NODELAY, and the second waits for this side's delayed
            # ACK (40 ms on Linux). An update's read of a memory with its vector stalled so about
            # every other call. (Not over gRPC: its metadata would carry the header.)
            options["headers"] = {"Accept-Encoding": "identity"}
        grpc_retrying = url is not None and prefer_grpc and retry_for > 0
        if grpc_retrying:  # a restarted node is found again within a second, not after grpc's 120 s backoff
            options["grpc_options"] = {"grpc.initial_reconnect_backoff_ms": 100, "grpc.max_reconnect_backoff_ms": 1000}
        try:
            self._client = AsyncQdrantClient(url=url, api_key=api_key, location=location, path=path,
                                             timeout=int(timeout), check_compatibility=False,
                                             prefer_grpc=prefer_grpc and url is not None, grpc_port=grpc_port,
                                             **options)
        except (ValueError, RuntimeError) as exc:
            raise StoreError(f"cannot open Qdrant ({url or location or path}): {exc}") from exc
        if grpc_retrying:  # it answers every call the client does
            self._client = cast(AsyncQdrantClient, _RetryingGrpc(self._client, retry_for, self._known))

    async def _call(self, what: str, coro: Any) -> Any:
        try:
            return await coro
        except (ApiException, grpc.RpcError, ValueError, RuntimeError, OSError) as exc:
            raise StoreError(f"{what} failed: {exc}") from exc

    async def _ordered(self, what: str, coro: Any) -> Any:
        """An ordered write (`ordering=medium`), never while this store changes a collection (`_Turns`)."""
        async with self._turns.write():
            return await self._call(what, coro)

    async def _recover_collections(self) -> None:
        """Before the first write (opening a ReMe recovers): the server must be one ReMe can write to."""
        if self.local or self._server_checked:
            return
        info = await self._call("server version", self._client.info())
        try:
            found = tuple(int(part) for part in str(info.version).split(".")[:2])
        except ValueError:
            found = MIN_SERVER  # a development build: trust it
        if found < MIN_SERVER:
            raise ConfigError(f"the Qdrant server at {self.url} runs {info.version}; ReMe needs "
                              f"{'.'.join(map(str, MIN_SERVER))} or newer (conditional writes)")
        self._server_checked = True

    # -- collections -------------------------------------------------------------------------
    async def _create_collection(self, name: str, dim: int) -> None:
        async with self._turns.change():
            await self._make_collection(name, dim)

    async def _make_collection(self, name: str, dim: int) -> None:
        # One server call creates it; a crash before its payload indexes leaves it usable, if slower.
        try:
            await self._call("create collection", self._client.create_collection(
                name,
                vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
                sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                **self._spread(),
            ))
            self._known.add(name)
        except StoreError:
            # Another process sharing the server created it meanwhile (and makes its indexes).
            if await self.collection_dim(name) != dim:
                raise
            self._dims[name] = dim
            return
        if not self.local:  # local mode ignores payload indexes and warns about each
            indexes: list[tuple[str, Any]] = [(f, models.PayloadSchemaType.KEYWORD) for f in KEYWORD_FIELDS]
            indexes += [(f, models.PayloadSchemaType.DATETIME) for f in DATETIME_FIELDS]
            indexes += [("score", models.PayloadSchemaType.FLOAT), ("version", models.PayloadSchemaType.INTEGER)]
            text = models.TextIndexParams(type=models.TextIndexType.TEXT, tokenizer=models.TokenizerType.WORD,
                                          lowercase=True)
            indexes += [("content", text), ("when_to_use", text)]
            # The server applies a collection's operations in order: only the last call waits (for all of them).
            for i, (field, schema) in enumerate(indexes):
                await self._call("create index", self._client.create_payload_index(
                    name, field, schema, wait=i == len(indexes) - 1))
        self._dims[name] = dim

    def _spread(self, shards: int | None = None) -> dict[str, Any]:
        """Sharding and replication for a new collection; the journal and the locks hold few
        points (`shards=1`) but are replicated like the memories, so they stay up while these do."""
        if self.local:
            return {}
        layout = dict(self._layout, **({"shard_number": shards} if shards else {}))
        return {key: value for key, value in layout.items() if value is not None}

    async def collection_dim(self, name: str) -> int | None:
        check_collection_name(name)
        if not await self._call("collection_exists", self._client.collection_exists(name)):
            self._known.discard(name)
            return None
        self._known.add(name)
        info = await self._call("get collection", self._client.get_collection(name))
        vectors = info.config.params.vectors
        return int(vectors[DENSE].size) if isinstance(vectors, dict) else None

    async def list_collections(self) -> list[str]:
        response = await self._call("list collections", self._client.get_collections())
        return sorted(c.name for c in response.collections if c.name not in (JOURNAL, LOCKS))

    async def _drop_collection(self, name: str) -> None:
        check_collection_name(name)
        self._dims.pop(name, None)
        self._known.discard(name)
        async with self._turns.change():
            await self._call("delete collection", self._client.delete_collection(name))

    # -- journal -------------------------------------------------------------------------------
    async def _journal(self) -> str:
        await self._bookkeeping(JOURNAL)
        return JOURNAL

    async def _bookkeeping(self, name: str) -> None:
        """Collection `name` (the journal's or the locks') made if it is not there yet: 1-d
        placeholder vectors (every server version takes such points), one shard."""
        if name in self._ready:
            return
        if not await self._call("collection_exists", self._client.collection_exists(name)):
            try:
                async with self._turns.change():
                    await self._client.create_collection(name, vectors_config=models.VectorParams(
                        size=1, distance=models.Distance.DOT), **self._spread(shards=1))
            except (ApiException, grpc.RpcError, ValueError, RuntimeError):  # another process made it meanwhile
                if not await self._call("collection_exists", self._client.collection_exists(name)):
                    raise
        self._ready.add(name)
        self._known.add(name)

    async def _journal_put(self, body: bytes, key: str | None = None) -> str:
        journal = await self._journal()
        key = key or str(uuid.uuid4())
        text = body.decode()
        parts = [text[i:i + _PART] for i in range(0, len(text), _PART)] or [""]
        now = time.time()
        holding = _HOLDING.get()
        points = [models.PointStruct(id=str(uuid.uuid5(uuid.UUID(key), str(i))), vector=[0.0],
                                     payload={"record": key, "part": i, "body": part, "created": now})
                  for i, part in enumerate(parts)]
        header = models.PointStruct(id=key, vector=[0.0], payload={"record": key, "parts": len(parts), "created": now,
                                                                "header": True, "holder": list(holding) or None})
        # The parts first, a header last makes the record count; a record of one part goes in one
        # request with its header. Whatever a crash leaves of it is harmless: no step of the write
        # has run yet, and a header whose parts are missing is an unreadable record, skipped.
        for point in points[:-1]:
            await self._call("journal", self._client.upsert(journal, [point], wait=True))
        await self._call("journal", self._client.upsert(journal, [points[-1], header], wait=True))
        self._own.add(key)
        return key

    async def _journal_drop(self, key: str) -> None:
        # One request for the header and its parts (all carry `record`): were only the parts gone
        # after a crash, the header left is an unreadable record, skipped, and the write was whole.
        journal = await self._journal()
        selector = models.FilterSelector(filter=models.Filter(must=[
            models.FieldCondition(key="record", match=models.MatchValue(value=key))]))
        await self._call("journal", self._client.delete(journal, selector, wait=True))
        self._own.discard(key)

    async def _journal_pending(self) -> list[tuple[str, bytes]]:
        if not await self._call("collection_exists", self._client.collection_exists(JOURNAL)):
            return []
        journal = await self._journal()
        cutoff = time.time() - self.journal_stale_after
        headers = await self._headers(models.Filter(must=[_HEADER]))
        await self._drop_orphan_parts(journal, {str((h.payload or {})["record"]) for h in headers}, cutoff)
        # Another writer's record may still be being applied: it waits until surely stale.
        return await self._bodies([h for h in headers if str((h.payload or {})["record"]) in self._own
                                   or float((h.payload or {})["created"]) <= cutoff])

    async def _headers(self, flt: models.Filter) -> list[Any]:
        headers: list[Any] = []
        offset: Any = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # local mode warns that it has no payload indexes
            while True:
                page, offset = await self._call("journal", self._client.scroll(
                    JOURNAL, scroll_filter=flt, limit=256, offset=offset, with_payload=True))
                headers += page
                if offset is None:
                    return headers

    async def _bodies(self, headers: list[Any]) -> list[tuple[str, bytes]]:
        """The records of `headers`, oldest first."""
        out: list[tuple[str, float, bytes]] = []
        for header in headers:
            payload = header.payload or {}
            key, created = str(payload["record"]), float(payload["created"])
            ids = [str(uuid.uuid5(uuid.UUID(key), str(i))) for i in range(int(payload["parts"]))]
            parts = await self._call("journal", self._client.retrieve(JOURNAL, ids, with_payload=True))
            by_part = {int((p.payload or {})["part"]): str((p.payload or {})["body"]) for p in parts}
            body = "".join(by_part.get(i, "\0") for i in range(len(ids)))  # a lost part: unreadable
            out.append((key, created, body.encode()))
        out.sort(key=lambda r: r[1])
        return [(key, body) for key, _, body in out]

    async def _journal_records(self, keys: set[str]) -> list[tuple[str, bytes]]:
        journal = await self._journal()
        got = await self._call("journal", self._client.retrieve(journal, sorted(k for k in keys if is_uuid(k)),
                                                                with_payload=True))
        return await self._bodies([p for p in got if (p.payload or {}).get("header")])

    async def settle(self, name: str, ids: Sequence[str]) -> None:
        """Wait while an intent record (of another process, or of another task of this one)
        swaps a record of `name` among `ids` (its write is under way: see `VectorStore.settle`),
        for each record up to `lease` seconds after it was written: a writer stopped longer than
        that is taken for dead (its record is replayed later, and a replay of a swap whose
        records are gone writes nothing)."""
        wanted = set(ids)
        pause = 0.01
        while wanted and await self._call("collection_exists", self._client.collection_exists(JOURNAL)):
            fresh = time.time() - self.lease
            headers = [h for h in await self._headers(models.Filter(must=[_HEADER]))
                       if float((h.payload or {})["created"]) > fresh]
            if not any(swapped & wanted for swapped in await self._swapped_by(headers, name)):
                return
            await asyncio.sleep(pause)
            pause = min(0.25, pause * 2)

    async def _swapped_by(self, headers: list[Any], name: str) -> list[set[str]]:
        """For each readable intent record of `headers`, the ids of the records of `name` its
        swaps replace or delete (an unreadable record lacks a part, so no step of it has run)."""
        out: list[set[str]] = []
        for _, body in await self._bodies(headers):
            try:
                steps = await asyncio.to_thread(decode_steps, body)
            except (ValueError, KeyError, TypeError, StopIteration, ValidationError):
                continue
            out.append({r.node.memory_id for step in steps if isinstance(step, Swap) and step.collection == name
                        for r in step.old})
        return out

    async def mark_purged(self, name: str, ids: Sequence[str] | None) -> None:
        # A note per memory (`_EVERY`: all of `name`) in the journal's collection, kept while an
        # intent record that swaps one of those memories is stored: each purge first drops the
        # notes no stored record can need any longer.
        if self.local:
            return
        journal = await self._journal()
        swapped = set().union(*await self._swapped_by(await self._headers(models.Filter(must=[_HEADER])), name))
        notes = await self._headers(models.Filter(must=[models.FieldCondition(
            key="purged_from", match=models.MatchValue(value=name))]))
        unneeded = [n.id for n in notes if (n.payload or {}).get("purged") not in swapped
                    and ((n.payload or {}).get("purged") != _EVERY or not swapped)]
        if unneeded:
            await self._call("journal", self._client.delete(journal, models.PointIdsList(points=unneeded), wait=True))
        wanted = [_EVERY] if ids is None else list(dict.fromkeys(ids))
        for start in range(0, len(wanted), self.batch_size):
            await self._call("journal", self._client.upsert(journal, [
                models.PointStruct(id=_note_id(name, i), vector=[0.0], payload={"purged": i, "purged_from": name})
                for i in wanted[start:start + self.batch_size]], wait=True))

    async def purged(self, name: str, ids: Sequence[str]) -> set[str]:
        if self.local or not ids or not await self._call("collection_exists",
                                                          self._client.collection_exists(JOURNAL)):
            return set()
        wanted = list(dict.fromkeys(ids))
        got = await self._call("journal", self._client.retrieve(
            JOURNAL, [_note_id(name, i) for i in [*wanted, _EVERY]], with_payload=["purged"]))
        noted = {str((p.payload or {}).get("purged")) for p in got}
        return set(wanted) if _EVERY in noted else noted & set(wanted)

    async def _finish_for(self, holder: str) -> None:
        """Apply the records a lock's holder left when it died, once its lock is taken over: the
        writes it made under that lock, which nobody else could have changed since."""
        if not await self._call("collection_exists", self._client.collection_exists(JOURNAL)):
            return
        by_holder = models.FieldCondition(key="holder", match=models.MatchValue(value=holder))
        async with self._write_lock:
            await self._replay(await self._bodies(await self._headers(models.Filter(must=[_HEADER, by_holder]))))

    async def _drop_orphan_parts(self, journal: str, records: set[str], cutoff: float) -> None:
        """Parts whose header never came: their writer died before its first engine write."""
        stale = models.Filter(must=[models.FieldCondition(key="created", range=models.Range(lt=cutoff))],
                              must_not=[models.FieldCondition(key="header", match=models.MatchValue(value=True))])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # local mode warns that it has no payload indexes
            parts, _ = await self._call("journal", self._client.scroll(journal, scroll_filter=stale, limit=10_000,
                                                                       with_payload=["record"]))
        orphans = [p.id for p in parts if str((p.payload or {}).get("record")) not in records]
        if orphans:
            await self._call("journal", self._client.delete(journal, models.PointIdsList(points=orphans), wait=True))

    # -- locks shared by the processes of a server ----------------------------------------------
    @contextlib.asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        if self.local:  # local mode is one process's (qdrant-client locks its path)
            yield
            return
        await self._locks()
        point = str(uuid.uuid5(_LOCK_IDS, name))
        token = str(uuid.uuid4())
        dead = await self._take(name, point, token)
        holding = _HOLDING.get()
        _HOLDING.set(holding + (token,))
        renewing = asyncio.create_task(self._renew(point, token))
        try:
            if dead is not None:  # renewed meanwhile: finishing its writes may take longer than a lease
                await self._take_over(point, token, dead)
            yield
        finally:
            _HOLDING.set(holding)
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            # Ended only where this holder still holds it; a failure here lets the lease run out.
            with contextlib.suppress(StoreError):
                await self._lock_write(point, token, 0.0, _held_by(token), shielded=True)

    async def _take(self, name: str, point: str, token: str) -> str | None:
        """Write `token` into the lock's point where it was released (or no point is yet), read
        it back, and try again, with growing random pauses, until it is there. A lease that ended
        without a release is taken over from its holder, who died holding it: returns that
        holder, whose unfinished writes under the lock (its journal records) the caller applies
        before anything else runs under it. A server error counts as not taken yet: on a cluster, calls fail for a few seconds
        after a node died, until the others mark its copies dead."""
        deadline = time.monotonic() + self.lock_wait
        pause = 0.002
        failure: StoreError | None = None
        dead: str | None = None
        found_dead = False
        while True:
            now = time.time()
            if dead is None:
                condition = models.Filter(must=[models.FieldCondition(key="until", range=models.Range(lt=1.0))])
            else:
                condition = models.Filter(must=[models.FieldCondition(key="until", range=models.Range(lt=now)),
                                                models.FieldCondition(key="holder", match=models.MatchValue(value=dead))])
            try:
                await self._lock_write(point, token, now + self.lease, condition)
                # One copy answers: a write returns once every live copy applied it (and MAJORITY fails
                # while a copy of two is down).
                got = await self._call("lock", self._client.retrieve(LOCKS, [point], with_payload=True))
                held = (got[0].payload or {}) if got else {}
                if held.get("holder") == token:
                    return dead
                until = float(held.get("until") or 0.0)
                dead = str(held["holder"]) if 0.0 < until < time.time() and held.get("holder") else None
                found_dead, failure = dead is not None, None
            except StoreError as exc:
                found_dead, failure = False, exc
                pause = max(pause, 0.05)
            if time.monotonic() > deadline:
                if failure is not None:
                    raise failure
                raise StoreLockedError(f"the write lock {name!r} on {self.url} stayed held by another process for "
                                       f"{self.lock_wait:g} s; try again later")
            if not found_dead:  # a lease found ended is taken over at once
                await asyncio.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 2, 0.1)

    async def _take_over(self, point: str, token: str, dead: str) -> None:
        try:
            await self._finish_for(dead)
        except BaseException:
            # Handed back to the dead holder, ended: whoever takes it next finishes its writes.
            with contextlib.suppress(StoreError):
                await self._lock_write(point, dead, 1.0, _held_by(token), shielded=True)
            raise

    async def _renew(self, point: str, token: str) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            with contextlib.suppress(StoreError):  # the next try may get through before the lease ends
                await self._lock_write(point, token, time.time() + self.lease, _held_by(token))

    async def _lock_write(self, point: str, token: str, until: float, condition: models.Filter, *,
                          shielded: bool = False) -> None:
        write = self._ordered("lock", self._client.upsert(
            LOCKS, [models.PointStruct(id=point, vector=[0.0], payload={"holder": token, "until": until})],
            wait=True, update_filter=condition, ordering=models.WriteOrdering.MEDIUM))
        await (asyncio.shield(write) if shielded else write)

    @contextlib.asynccontextmanager
    async def claims(self, names: Sequence[str],
                     alongside: Callable[[], Awaitable[T]] | None = None) -> AsyncIterator[T | None]:
        """See `VectorStore.claims`. One point per name in `_reme_locks`, taken as `exclusive`
        takes its one (written with this holder's token where it was released or is not there
        yet: a conditional upsert, read back), but all of them in one request. They are taken in
        the order of their ids: a holder that could not take one keeps those before it and gives
        back those after it, so two holders of overlapping sets never wait for each other in a
        circle. A point whose lease ended without a release is taken over from its holder, who
        died holding it, and that holder's unfinished writes under it are applied first. Released
        by deleting the points, only where this holder still holds them: nothing is left behind
        per name."""
        if self.local or not names:
            yield None
            return
        await self._locks()
        points = sorted({str(uuid.uuid5(_LOCK_IDS, name)) for name in names})
        token = str(uuid.uuid4())
        early = await self._take_all(points, token, alongside)
        holding = _HOLDING.get()
        _HOLDING.set(holding + (token,))
        renewing = asyncio.create_task(self._renew_all(points, token))
        try:
            yield early
        finally:
            _HOLDING.set(holding)
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            with contextlib.suppress(StoreError):  # a failure here lets the leases run out
                await self._release_all(points, token)

    async def _take_all(self, points: list[str], token: str, alongside: Callable[[], Awaitable[T]] | None) -> T | None:
        """Take every point of `points` (sorted) for `token`; see `claims`. Returns what
        `alongside` read when the first try took them all, else None."""
        deadline = time.monotonic() + self.lock_wait
        pause = 0.002
        held = 0  # points[:held] are this holder's
        ended: dict[str, str] = {}  # point -> its holder, whose lease was found ended
        first = True
        try:
            while True:
                todo = points[held:]
                now = time.time()
                free: list[Any] = [models.FieldCondition(key="until", range=models.Range(lt=1.0))]
                if ended:
                    free.append(models.Filter(must=[
                        models.FieldCondition(key="until", range=models.Range(lt=now)),
                        models.FieldCondition(key="holder", match=models.MatchAny(any=sorted(set(ended.values()))))]))
                failure: StoreError | None = None
                found_dead = False
                try:
                    await self._ordered("lock", self._client.upsert(
                        LOCKS, [models.PointStruct(id=p, vector=[0.0], payload={"holder": token, "until": now + self.lease})
                                for p in todo], wait=True, update_filter=models.Filter(should=free),
                        ordering=models.WriteOrdering.MEDIUM))
                    read = self._call("lock", self._client.retrieve(LOCKS, todo, with_payload=True))
                    early: T | None = None
                    if first and alongside is not None:
                        # Sent once the claims are written: where they were taken, every earlier
                        # holder had released them, so had written, before this read.
                        got, early = await asyncio.gather(read, alongside())
                    else:
                        got = await read
                    first = False
                    stored = {str(p.id): p.payload or {} for p in got}
                    mine = [p for p in todo if stored.get(p, {}).get("holder") == token]
                    # Taken over from a dead holder: its writes are finished before any under these.
                    for dead in sorted({ended[p] for p in mine if p in ended}):
                        try:
                            await self._finish_for(dead)
                        except BaseException:
                            # Handed back to the dead holder, ended: whoever takes them next finishes.
                            with contextlib.suppress(StoreError):
                                await asyncio.shield(self._ordered("lock", self._client.upsert(
                                    LOCKS, [models.PointStruct(id=p, vector=[0.0], payload={"holder": dead, "until": 1.0})
                                            for p in mine if ended.get(p) == dead],
                                    wait=True, update_filter=_held_by(token), ordering=models.WriteOrdering.MEDIUM)))
                            raise
                    while held < len(points) and points[held] in mine:
                        held += 1
                    if held == len(points):
                        return early  # None unless the first try took them all (no dead holder's writes replayed)
                    after = [p for p in mine if p > points[held]]
                    if after:  # not held while waiting for one before them
                        await self._release_all(after, token)
                    for p in todo:
                        holder, until = stored.get(p, {}).get("holder"), float(stored.get(p, {}).get("until") or 0.0)
                        if holder and holder != token and 0.0 < until < time.time():
                            ended[p] = str(holder)
                            found_dead = True
                except StoreError as exc:  # as in `_take`: on a cluster, calls fail while a dead node is noticed
                    failure = exc
                    pause = max(pause, 0.05)
                if time.monotonic() > deadline:
                    if failure is not None:
                        raise failure
                    raise StoreLockedError(f"an add's claim on {self.url} stayed held by another process for "
                                           f"{self.lock_wait:g} s (the same memory being added); try again later")
                if not found_dead:
                    await asyncio.sleep(pause * (0.5 + random.random()))
                    pause = min(pause * 2, 0.1)
        except BaseException:  # whatever this holder holds is released (those handed back are not its own)
            with contextlib.suppress(StoreError):
                await self._release_all(points, token)
            raise

    async def _renew_all(self, points: list[str], token: str) -> None:
        held = models.Filter(must=[models.HasIdCondition(has_id=points), _held_by(token)])  # type: ignore[arg-type]
        while True:
            await asyncio.sleep(self.lease / 3)
            with contextlib.suppress(StoreError):  # the next try may get through before the lease ends
                # Payload set where this holder still holds them: a point taken over meanwhile is not taken back.
                await self._ordered("lock", self._client.set_payload(
                    LOCKS, {"until": time.time() + self.lease}, points=held, wait=True,
                    ordering=models.WriteOrdering.MEDIUM))

    async def _release_all(self, points: list[str], token: str) -> None:
        selector = models.FilterSelector(filter=models.Filter(must=[models.HasIdCondition(has_id=points),  # type: ignore[arg-type]
                                                                    _held_by(token)]))
        await asyncio.shield(self._ordered("lock", self._client.delete(LOCKS, selector, wait=True,
                                                                       ordering=models.WriteOrdering.MEDIUM)))

    async def _locks(self) -> None:
        await self._bookkeeping(LOCKS)

    # -- primitives ---------------------------------------------------------------------------
    async def _upsert(self, name: str, records: Sequence[VectorRecord]) -> None:
        points = [
            models.PointStruct(id=r.node.memory_id, payload=to_payload(r.node, r.revision),
                               vector={DENSE: r.vector,  # type: ignore[dict-item]
                                       SPARSE: _sparse(self.keyword_terms(r.node.keyword_text, query=False))})
            for r in records
        ]
        await self._call("upsert", self._client.upsert(name, points, wait=True))

    # -- conditional writes (see `Swap`) --------------------------------------------------------
    # One batch call per swap: each record's payload is overwritten, with the swap's token as its
    # revision, where the stored revision is still the one read (a filter: a record that is gone
    # is not written again, as a conditional upsert would), then its vectors where the token is
    # there. The server answers "completed" whether or not a filter matched, so a read of the
    # revisions says which records took it. Ordered through a leader on a cluster (`MEDIUM`),
    # so that every copy evaluates the filters on the same sequence of writes.
    def _point_vectors(self, record: VectorRecord) -> models.PointVectors:
        return models.PointVectors(id=record.node.memory_id, vector={
            DENSE: record.vector,  # type: ignore[dict-item]
            SPARSE: _sparse(self.keyword_terms(record.node.keyword_text, query=False))})

    async def _swap(self, name: str, items: list[tuple[VectorRecord, VectorRecord | None]], token: str, *,
                    replay: bool) -> set[str]:
        await self._swap_send(name, items, token)
        return (await self._swap_read(name, items, token, replay=replay))[0]

    async def _swap_send(self, name: str, items: list[tuple[VectorRecord, VectorRecord | None]], token: str) -> None:
        operations: list[Any] = []
        for old, new in items:
            record = new if new is not None else old
            where = models.Filter(must=[models.HasIdCondition(has_id=[old.node.memory_id])],
                                  should=[_revision_is(old.revision), _revision_is(token),
                                          _revision_is(_dying(token))])
            # A record to delete is claimed with the dying form of the token: reads by id no longer
            # see it (`get`), so no writer replaces it between this claim and its deletion.
            # `prior`: the revisions it replaced, newest first (`VectorRecord.lineage`), so that a
            # writer whose swap was replaced again, and again, before it read the revisions back
            # knows it had won (see `_swap_read`).
            payload = to_payload(record.node, token if new is not None else _dying(token))
            payload[PRIOR] = [r for r in (old.revision, *old.lineage) if r is not None][:LINEAGE]
            operations.append(models.OverwritePayloadOperation(overwrite_payload=models.SetPayload(
                payload=payload, filter=where)))
            if new is not None:
                operations.append(models.UpdateVectorsOperation(update_vectors=models.UpdateVectors(
                    points=[self._point_vectors(new)], update_filter=models.Filter(must=[_revision_is(token)]))))
        try:
            await self._ordered("swap", self._client.batch_update_points(name, operations, wait=True,
                                                                         ordering=models.WriteOrdering.MEDIUM))
        except (StoreError, KeyError) as exc:
            # A record deleted since it was read: its vectors are "not found", and the batch stops
            # there. It lost, so the records it won are put back, whatever the batch wrote of them.
            cause = exc.__cause__ if isinstance(exc, StoreError) else exc
            if not isinstance(cause, KeyError) and getattr(cause, "status_code", None) != 404:
                raise

    async def _swap_read(self, name: str, items: list[tuple[VectorRecord, VectorRecord | None]], token: str, *,
                         replay: bool) -> tuple[set[str], set[str]]:
        # A record holding `token`, or a revision whose lineage holds it, took this write. Where the
        # lineage reaches back neither to `token` nor to the revision the write replaces, so many
        # writes came after it that it is no longer known whether it took it: that is no
        # `ConflictError` (a retry could apply it twice) but a `StoreError`.
        ids = [old.node.memory_id for old, _ in items]
        got = await self._call("swap", self._client.retrieve(name, ids, with_payload=[REVISION, PRIOR]))
        stored = {str(p.id): ((p.payload or {}).get(REVISION), lineage_of(p.payload or {})) for p in got}
        won: set[str] = set()
        for old, new in items:
            mid = old.node.memory_id
            if mid not in stored:
                if replay and new is None:
                    won.add(mid)
                continue
            revision, lineage = stored[mid]
            if revision == (token if new is not None else _dying(token)) or (new is not None and token in lineage):
                won.add(mid)
            elif (new is not None and len(lineage) >= LINEAGE and old.revision is not None
                  and old.revision != revision and old.revision not in lineage):
                raise StoreError(f"memory {mid} was written {LINEAGE} times by others before this write could read "
                                 "it back: whether this write took effect is not known")
        return won, set(stored)

    async def _put_back(self, name: str, olds: list[VectorRecord], token: str) -> None:
        operations: list[Any] = []
        for old in olds:
            where = models.Filter(must=[models.HasIdCondition(has_id=[old.node.memory_id])],
                                  should=[_revision_is(token), _revision_is(_dying(token))])
            back = to_payload(old.node, old.revision)
            back[PRIOR] = list(old.lineage)
            operations.append(models.OverwritePayloadOperation(overwrite_payload=models.SetPayload(
                payload=back, filter=where)))
            operations.append(models.UpdateVectorsOperation(update_vectors=models.UpdateVectors(
                points=[self._point_vectors(old)], update_filter=models.Filter(must=[_revision_is(back[REVISION])]))))
        await self._ordered("swap", self._client.batch_update_points(name, operations, wait=True,
                                                                     ordering=models.WriteOrdering.MEDIUM))

    async def _delete_swapped(self, name: str, ids: list[str], token: str) -> None:
        selector = models.FilterSelector(filter=models.Filter(must=[models.HasIdCondition(has_id=ids)],  # type: ignore[arg-type]
                                                              should=[_revision_is(_dying(token)), _revision_is(token)]))
        await self._ordered("delete", self._client.delete(name, selector, wait=True,
                                                          ordering=models.WriteOrdering.MEDIUM))

    async def get(self, name: str, ids: Sequence[str], *, with_vectors: bool = False) -> GetResult:
        await self._require_dim(name)
        wanted = list(dict.fromkeys(str(i) for i in ids))
        valid = [i for i in wanted if is_uuid(i)]
        found = await self._call("get", self._client.retrieve(name, valid, with_payload=True,
                                                              with_vectors=[DENSE] if with_vectors else False))
        # A record claimed for deletion (see `_swap`) is deleted already, as far as a read by id goes.
        by_id = {str(r.id): record_of(r.payload or {}, dense_of(r.vector) if with_vectors else None)
                 for r in found if not _is_dying((r.payload or {}).get(REVISION))}
        return GetResult(found=[by_id[i] for i in wanted if i in by_id], missing=[i for i in wanted if i not in by_id])

    async def _delete_ids(self, name: str, ids: list[str]) -> None:
        await self._call("delete", self._client.delete(name, models.PointIdsList(points=ids), wait=True))  # type: ignore[arg-type]

    async def _delete_filter(self, name: str, flt: Filter) -> None:
        qdrant_filter = _FILTERS.build(flt)
        assert qdrant_filter is not None  # a filter was given
        selector = models.FilterSelector(filter=qdrant_filter)
        await self._call("delete", self._client.delete(name, selector, wait=True))

    async def count(self, name: str, flt: Filter | None = None) -> int:
        await self._require_dim(name)
        result = await self._call("count", self._client.count(name, count_filter=_FILTERS.build(flt), exact=True))
        return int(result.count)

    async def _query(self, name: str, mode: SearchMode, vector: list[float] | None, terms: SparseTerms | None,
                     flt: Filter | None, limit: int, score_threshold: float | None,
                     prefetch: int) -> list[Hit]:
        qfilter = _FILTERS.build(flt)
        if mode == "hybrid":
            request: dict[str, Any] = dict(
                prefetch=[models.Prefetch(query=vector, using=DENSE, limit=prefetch, filter=qfilter),
                          models.Prefetch(query=_sparse(terms), using=SPARSE, limit=prefetch, filter=qfilter)],  # type: ignore[arg-type]
                query=models.RrfQuery(rrf=models.Rrf(k=RRF_K)))
        elif mode == "dense":
            request = dict(query=vector, using=DENSE)
        else:
            request = dict(query=_sparse(terms), using=SPARSE)  # type: ignore[arg-type]
        response = await self._call("search", self._client.query_points(
            name, query_filter=qfilter, limit=limit, score_threshold=score_threshold, with_payload=True, **request))
        return [Hit(str(p.id), float(p.score), p.payload or {}) for p in response.points]

    async def _scroll(self, name: str, flt: Filter | None, limit: int, offset: str | None,
                      order: tuple[str, Direction, Any] | None,
                      with_vectors: bool) -> tuple[list[VectorRecord], str | None]:
        order_by = None
        if order is not None:
            key, direction, start = order
            order_by = models.OrderBy(key=key, start_from=start, direction=models.Direction.ASC
                                      if direction == "asc" else models.Direction.DESC)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # local mode warns that it has no payload indexes
            records, nxt = await self._call("list", self._client.scroll(
                name, scroll_filter=_FILTERS.build(flt), limit=limit, offset=offset, order_by=order_by,
                with_payload=True, with_vectors=[DENSE] if with_vectors else False))
        out = [record_of(r.payload or {}, dense_of(r.vector) if with_vectors else None)
               for r in records]
        return out, (str(nxt) if nxt is not None else None)

    async def close(self) -> None:
        await self._client.close()

