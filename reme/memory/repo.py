"""`MemoryRepo`: the write path every pipeline and the facade share. It deduplicates by content
hash, embeds before it writes, and keeps every replaced or deleted memory as a version in a
second collection (`<collection>-versions`), so nothing changes without a trace.

Scopes are walls here, by construction: by-id reads (`get`, `modify`, `history`) take the
caller's scope and treat a memory outside it as missing, and an add may never reuse the id of a
stored memory (which would replace it without a version, in whatever scope it lives)."""

from __future__ import annotations

import asyncio
import random
import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from reme.embedding import Embedder
from pydantic import ValidationError

from reme.errors import ConflictError, InvalidInputError, MemoryNotFoundError, describe
from reme.schema import MAX_IMPORT_LINES, TYPE_KIND, MemoryNode, MemoryType, MemoryVersion, Scope, as_aware, utcnow
from reme.store import CreateCollection, DeleteWhere, Swap, Upsert, VectorRecord, VectorStore, WriteOp
from reme.store.backup import FORMAT as BACKUP_FORMAT
from reme.store.base import PartlyWritten, line_node, line_vector, read_jsonl
from reme.store.filters import And, Eq, Filter, In, Not, Or, Range

VERSIONS_SUFFIX = "-versions"
SWAP_ATTEMPTS = 30
"""How many times a read-modify-write reads and writes again when its conditional write (`Swap`)
lost to another writer, in this process or another one sharing the store: the change is then made
on the newer state, after a random pause (`_backoff`) that grows from try to try, so a writer that
keeps losing to one that writes in a tight loop soon tries at another moment of its cycle (two
processes updating one memory as fast as they can: 8 tries at most over 100 calls). After that
many (about 3 s of pauses), `ConflictError`."""
BACKOFF = 0.002
"""Seconds: the first retry pauses about this long, each later one about twice as long (up to `BACKOFF_MAX`)."""
BACKOFF_MAX = 0.1
HASH_LOOKUP = 500
"""Content hashes looked up in one filter (well under `MAX_FILTER_SIZE`, with the scope's conditions)."""
ADD_LOOKUP = 400
"""Nodes an add looks up in one filter: their hashes and their ids, well under `MAX_FILTER_SIZE`."""


@dataclass
class Change:
    """One write of a batch: a new node, a replacement (old -> new) or a deletion (old)."""

    new: MemoryNode | None = None
    old: MemoryNode | None = None
    reason: str = ""
    keep_version: bool = True
    """False for bookkeeping (usage counters): the old state is not worth a version."""
    vector: list[float] | None = None
    """The new node's vector when the caller already computed it (it is not embedded again)."""
    history: list[VectorRecord] = field(default_factory=list)
    """Version records written with the new node when this change writes it (an import's history)."""


@dataclass
class Imported:
    """One memory read from a file: its node, its vector (None: embed it) and its earlier states."""

    node: MemoryNode
    vector: list[float] | None = None
    history: list[tuple[MemoryVersion, list[float] | None]] = field(default_factory=list)


class _Lost(ConflictError):
    """A write's `Swap` lost: a stored record it replaces changed after it was read. Read again and
    retry; `written`: the memories a partial swap (usage counts) wrote all the same, not to retry."""

    def __init__(self, message: str, written: set[str] | None = None) -> None:
        super().__init__(message)
        self.written = written or set()


async def _backoff(attempt: int) -> None:
    """A random pause before retry `attempt + 1` (half of it fixed, half drawn): writers that
    collided do not collide again in step."""
    pause = min(BACKOFF_MAX, BACKOFF * 2 ** (attempt - 1))
    await asyncio.sleep(pause / 2 + random.uniform(0, pause / 2))


class WriteLock:
    """A write lock: one task of this process at a time, and one process at a time among those
    sharing the store (`VectorStore.exclusive`: a lease in a server's engine). Writes that decide
    on more than the records they replace take it: summaries' batches, restores, wipes, and adds
    on a store of one process. A change of stored memories by id (`modify`, `touch`) does not: its
    write is conditional on what it read, and retried. Nor do adds alone on a store processes
    share: they claim their content hashes and ids instead (`MemoryRepo._claim_names`)."""

    def __init__(self, store: VectorStore, name: str) -> None:
        self._local = asyncio.Lock()
        self._store = store
        self._name = name
        self._held: AbstractAsyncContextManager[None] | None = None

    async def __aenter__(self) -> None:
        await self._local.acquire()
        try:
            held = self._store.exclusive(self._name)
            await held.__aenter__()
            self._held = held
        except BaseException:
            self._local.release()
            raise

    async def __aexit__(self, *exc: Any) -> None:
        held, self._held = self._held, None
        try:
            assert held is not None
            await held.__aexit__(*exc)
        finally:
            self._local.release()


@dataclass
class MemoryRepo:
    store: VectorStore
    embedder: Embedder
    collection: str
    _target_locks: dict[tuple[str, str], WriteLock] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lock = WriteLock(self.store, self.collection)
        self.store.replay_checks[self.collection] = self._replaced
        self.store.fences[self.collection] = self._purged_meanwhile

    async def _replaced(self, items: list[tuple[VectorRecord, VectorRecord | None]]) -> bool:
        """Whether each new state of these memories (the records of a swap that a crash
        interrupted, as read and as written, none of which holds its revision now) had been
        stored and then replaced: the memory holds that state still (only its access counts
        changed), or one of its versions keeps it. A changed state is new to its write
        (`time_modified`, `version`), so no other write can have stored it; a deletion, or a
        change of access counts alone, proves nothing. The store asks this when it replays the
        swap's intent record."""
        if any(new is None or new.node.same_state(old.node) for old, new in items):
            return False
        records = [new for _, new in items if new is not None]
        stored = await self.get([r.node.memory_id for r in records])
        todo = [r.node for r in records
                if not (r.node.memory_id in stored and stored[r.node.memory_id].same_state(r.node))]
        if not todo:
            return True
        kept = await self.versions_of([n.memory_id for n in todo])
        return all(any(v.node.same_state(n) for v, _ in kept.get(n.memory_id, [])) for n in todo)

    async def _purged_meanwhile(self, items: list[tuple[VectorRecord, VectorRecord | None]],
                                upserts: list[Upsert], stored_now: set[str] | None = None,
                                replay: bool = False) -> list[WriteOp]:
        """The versions a write by id has just kept of memories a purge (`forget(purge=True)`,
        `delete_all`) deleted since its swap: deleted again, or the purged text would stay. The
        write takes no lock, so a purge in another process may delete a memory and its versions
        between this write's swap and its version. A memory still stored now (being deleted
        included) was stored when the purge's sweep of versions began, if one did, and the sweep
        takes the version. A memory gone was purged, unless a deletion that keeps a version of it
        (an update then a `delete_memory` from another process) deleted it; purged, every version
        of it stored now goes (a deletion's version this write saw may be one that deletion takes
        back, having found the memory purged). `stored_now`: which of the memories the write found
        stored, read after its versions (not read again). A `replay` of a deletion killed after
        it deleted finds the memory gone too: that one was purged only where a purge noted it
        (`VectorStore.purged`), else its history stays. See `VectorStore.fences`."""
        kept: dict[str, list[str]] = {}  # memory id -> the version records this write upserted of it
        for step in upserts:
            if step.collection == self.versions:
                for record in step.records:
                    kept.setdefault(str(record.node.metadata.get("version_of")), []).append(record.node.memory_id)
        ids: list[Any] = [old.node.memory_id for old, _ in items if old.node.memory_id in kept]
        gone: list[Any] = []
        for start in range(0, len(ids) if stored_now is None else 0, HASH_LOOKUP):  # MAX_FILTER_SIZE values a filter
            chunk = ids[start:start + HASH_LOOKUP]
            stored = {r.node.memory_id async for r in self.store.iter_records(self.collection,
                                                                               In(field="memory_id", values=chunk))}
            gone += [m for m in chunk if m not in stored]
        if stored_now is not None:
            gone = [m for m in ids if m not in stored_now]
        deleting = {old.node.memory_id for old, new in items if new is None} if replay else set()
        if deleting & set(gone):
            noted = await self.store.purged(self.collection, [m for m in gone if m in deleting])
            gone = [m for m in gone if m not in deleting or m in noted]
        mine = {v for m in gone for v in kept[m]}
        by_deletion: set[str] = set()
        for start in range(0, len(gone), HASH_LOOKUP):
            deleted = And(filters=[In(field="metadata.version_of", values=gone[start:start + HASH_LOOKUP]),
                                   Eq(field="metadata.event", value="DELETE")])
            by_deletion |= {r.node.metadata["version_of"] async for r in self.store.iter_records(self.versions, deleted)
                            if r.node.memory_id not in mine}
        # Purged, then: every version of it stored now goes, not only this write's. Another change
        # may have kept one and stays, trusting this write's version as a deletion's, which goes now.
        purged: list[Any] = [m for m in gone if m not in by_deletion]
        return [DeleteWhere(self.versions, In(field="metadata.version_of", values=purged[start:start + HASH_LOOKUP]))
                for start in range(0, len(purged), HASH_LOOKUP)]

    @property
    def versions(self) -> str:
        return self.collection + VERSIONS_SUFFIX

    async def create(self) -> None:
        await self.store.write(await self.create_ops())

    async def create_ops(self, dim: int | None = None) -> list[WriteOp]:
        """Creating both collections (each a no-op when it exists with that size; by default the embedder's)."""
        dim = dim or await self.embedder.dimension()
        return [CreateCollection(self.collection, dim), CreateCollection(self.versions, dim)]

    def target_lock(self, kind: str, name: str) -> WriteLock:
        """One lock per target, so two summaries of the same user never decide on stale memories,
        in this process or in another one sharing the store."""
        lock = self._target_locks.get((kind, name))
        if lock is None:
            lock = self._target_locks[(kind, name)] = WriteLock(self.store, f"{self.collection}/{kind}/{name}")
        return lock

    async def existing_by_hash(self, nodes: Sequence[MemoryNode]) -> dict[str, MemoryNode]:
        """Stored memories with the content hash of any of `nodes` (the hash covers type, scope
        and text), by that hash."""
        return (await self._lookup(nodes, ids=False))[0]

    async def _lookup(self, nodes: Sequence[MemoryNode], *, ids: bool) -> tuple[dict[str, MemoryNode], set[str]]:
        """What an add must know, in one read per `ADD_LOOKUP` nodes whatever their scopes: the
        stored memories (not expired) with the content hash of any of `nodes`, by hash, and (with
        `ids`) which of the nodes' ids are stored, in any scope, expired or not. A stored node
        carries its hash only if it has the same type, scope and text, so one filter on the hashes
        of several scopes finds nothing outside each node's own scope."""
        found: dict[str, MemoryNode] = {}
        stored: set[str] = set()
        now = utcnow()
        hashes = sorted({n.content_hash for n in nodes})
        wanted = sorted({n.memory_id for n in nodes}) if ids else []
        for start in range(0, max(len(hashes), len(wanted)), ADD_LOOKUP):  # at most MAX_FILTER_SIZE values a filter
            some: list[Any] = hashes[start:start + ADD_LOOKUP]
            flt: Filter = And(filters=[In(field="content_hash", values=some), alive(now)])
            taken: list[Any] = wanted[start:start + ADD_LOOKUP]
            if taken:
                flt = Or(filters=[flt, In(field="memory_id", values=taken)]) if some else In(field="memory_id",
                                                                                               values=taken)
            page = await self.store.list(self.collection, flt=flt, limit=len(some) + len(taken) + 1)
            for node in page:
                if node.content_hash in some and not node.expired(now):
                    found[node.content_hash] = node
                if node.memory_id in taken:
                    stored.add(node.memory_id)
        return found, stored

    async def get(self, ids: Sequence[str], scope: Scope | None = None,
                  alive_at: datetime | None = None) -> dict[str, MemoryNode]:
        """The stored memories among `ids`, by id; with a scope, only those inside it; with
        `alive_at`, only those not expired then."""
        return {mid: r.node for mid, r in (await self._read(ids, scope, alive_at)).items()}

    async def _read(self, ids: Sequence[str], scope: Scope | None = None, alive_at: datetime | None = None, *,
                    with_vectors: bool = False) -> dict[str, VectorRecord]:
        got = await self.store.get(self.collection, list(dict.fromkeys(ids)), with_vectors=with_vectors)
        return {r.node.memory_id: r for r in got.found
                if (scope is None or scope.holds(r.node)) and (alive_at is None or not r.node.expired(alive_at))}

    async def apply(self, changes: Sequence[Change]) -> list[tuple[MemoryNode, bool]]:
        """Write a batch: adds (deduplicated by content hash), replacements and deletions.

        Every vector is computed before the first write, so an embedding failure writes nothing.
        A replacement or deletion whose `old` is no longer what is stored raises `ConflictError`
        before anything is written. Returns, per change, the node now stored (or deleted) and
        whether this call wrote it (a duplicate add returns the stored node and False).
        """
        changes = list(changes)
        await self._embed(changes)
        if self.store.shared and all(c.old is None for c in changes):
            # Adds alone, on a store that processes share: no collection lock; what `_write` claims
            # (their content hashes and ids) keeps them from adding a memory twice or reusing an id.
            return await self._write(changes)
        async with self.lock:
            return await self._write(changes)

    async def modify(self, memory_ids: Sequence[str], revise: Callable[[MemoryNode], MemoryNode | None], *,
                     scope: Scope | None = None, reason: str = "", keep_version: bool = True,
                     alive_at: datetime | None = None) -> list[MemoryNode]:
        """Read, change and write memories, so concurrent changes of one memory never lose each
        other. `revise` gets each stored node and returns its next state, or None to delete it (or
        raises, and nothing is written). `MemoryNotFoundError` if any of them is not stored (inside
        `scope`, when given): then nothing is written either.

        No lock is taken: the write is conditional in the engine on the stored state read here
        (`Swap`), and when another writer, of this process or another one, changed it meanwhile, it
        reads and revises again, up to `SWAP_ATTEMPTS` times."""
        vectors: dict[str, list[float]] = {}  # a retry does not embed the same text again
        done: dict[str, MemoryNode] = {}  # written by an earlier try (usage counts of several memories)
        todo = list(dict.fromkeys(memory_ids))
        for attempt in range(1, SWAP_ATTEMPTS + 1):
            # Read with the vectors: `_write` then needs no second read of what this one just read.
            read = await self._read(todo, scope, alive_at, with_vectors=True)
            missing = [m for m in todo if m not in read]
            if missing:
                raise MemoryNotFoundError(missing[0])
            changes = [Change(new=revise(r.node), old=r.node, reason=reason, keep_version=keep_version)
                       for r in read.values()]
            await self._embed(changes, vectors)
            try:
                done.update((node.memory_id, node) for node, _ in await self._write(changes, read=read))
                return [done[m] for m in dict.fromkeys(memory_ids)]
            except _Lost as lost:
                done.update((c.new.memory_id, c.new) for c in changes if c.new is not None
                            and c.new.memory_id in lost.written)
                todo = [m for m in todo if m not in lost.written]
                if attempt == SWAP_ATTEMPTS:
                    raise
                await _backoff(attempt)
        raise AssertionError("unreachable")

    async def restore(self, lines: Sequence[Imported], *, source: str, foreign: str = "error") -> int:
        """Write memories read from a file, as one batch: a new id is added (deduplicated by
        content), a stored id of the same scope is replaced (its old state kept as a version,
        unchanged ones skipped). A stored id of another scope is an `InvalidInputError` naming
        `source` (`foreign="error"`: nothing is written) or the line gets a new id
        (`foreign="new_id"`, the old one kept as `metadata.original_memory_id`).

        A line's `history` is written with it, less the versions already stored (the same
        state, event and time), so importing a file twice adds nothing; a line whose content is
        stored under another id brings no history (it is not that memory). Returns how many
        memories were written."""
        async with self.lock:
            stored = await self.get([line.node.memory_id for line in lines])
            known = await self._version_keys([line.node.memory_id for line in lines if line.history])
            changes: list[Change] = []
            pending: list[tuple[Change | None, list[tuple[MemoryVersion, list[float] | None]]]] = []
            for line in lines:
                node, old = line.node, stored.get(line.node.memory_id)
                if old is not None and old.scope != node.scope:
                    if foreign == "error":
                        raise InvalidInputError(f"{source}: memory_id {node.memory_id} belongs to another target; "
                                                "nothing was imported")
                    node = node.model_copy(update={"memory_id": str(uuid.uuid4()), "metadata": {
                        **node.metadata, "original_memory_id": node.memory_id}})
                    old = None
                history = [(v, vec) for v, vec in line.history if _version_key(node.memory_id, v) not in known]
                if old == node:  # stored as it is: only versions the store lacks are written
                    pending.append((None, history))
                    continue
                # The file's history may hold the stored state (exported from here): that version is kept, not a second.
                change = Change(new=node, old=old, vector=line.vector, reason=f"imported from {source}",
                                keep_version=old is None or not any(v.node == old for v, _ in line.history))
                changes.append(change)
                pending.append((change, history))
            records = iter(await self._version_records([pair for _, history in pending for pair in history]))
            extra: list[VectorRecord] = []
            for owner, history in pending:
                written = [next(records) for _ in history]
                if owner is None:
                    extra += written
                else:
                    owner.history = written
            await self._embed(changes)
            return sum(wrote for _, wrote in await self._write(changes, extra))

    async def _version_keys(self, memory_ids: Sequence[str]) -> set[tuple[str, int, str, datetime]]:
        """What identifies the stored versions of `memory_ids` (see `_version_key`)."""
        keys: set[tuple[str, int, str, datetime]] = set()
        ordered = sorted(set(memory_ids))
        for start in range(0, len(ordered), HASH_LOOKUP):
            chunk: list[Any] = ordered[start:start + HASH_LOOKUP]
            async for record in self.store.iter_records(self.versions, In(field="metadata.version_of", values=chunk)):
                keys.add(_version_key(record.node.metadata["version_of"], version_of(record.node)))
        return keys

    async def _version_records(self, versions: list[tuple[MemoryVersion, list[float] | None]]) -> list[VectorRecord]:
        """Records for the versions collection, the vectors a file did not carry embedded in one batch."""
        todo = [v.node.retrieval_text for v, vec in versions if vec is None]
        made = iter(await self.embedder.embed(todo) if todo else [])
        return [VectorRecord(node=_version_node(v.node, v.event, v.time, v.reason),
                             vector=vec if vec is not None else next(made)) for v, vec in versions]

    async def versions_of(self, memory_ids: Sequence[str], *,
                          with_vectors: bool = False) -> dict[str, list[tuple[MemoryVersion, list[float] | None]]]:
        """The stored versions of each of `memory_ids` (oldest first), with their vectors on request."""
        out: dict[str, list[tuple[MemoryVersion, list[float] | None]]] = {}
        ordered = sorted(set(memory_ids))
        for start in range(0, len(ordered), HASH_LOOKUP):
            chunk: list[Any] = ordered[start:start + HASH_LOOKUP]
            flt = In(field="metadata.version_of", values=chunk)
            async for record in self.store.iter_records(self.versions, flt, with_vectors=with_vectors):
                out.setdefault(record.node.metadata["version_of"], []).append((version_of(record.node), record.vector))
        for versions in out.values():
            versions.sort(key=lambda pair: (pair[0].node.version, pair[0].time))
        return out

    async def _embed(self, changes: list[Change], known: dict[str, list[float]] | None = None) -> None:
        """Fill in the vector of every new node whose retrieval text is new, in one batch; texts
        in `known` (then filled in) are not embedded again."""
        known = {} if known is None else known
        todo = [(c, c.new) for c in changes if c.new is not None and c.vector is None
                and (c.old is None or c.new.retrieval_text != c.old.retrieval_text)]
        texts = list(dict.fromkeys(new.retrieval_text for _, new in todo if new.retrieval_text not in known))
        if texts:
            known.update(zip(texts, await self.embedder.embed(texts)))
        for change, new in todo:
            change.vector = known[new.retrieval_text]

    async def _write(self, changes: list[Change], extra_versions: Sequence[VectorRecord] = (),
                     read: Mapping[str, VectorRecord] | None = None) -> list[tuple[MemoryNode, bool]]:
        """Write `changes` (see `apply`). `read`: the olds as the caller just read them, with their
        vectors (they are not read again); a lost swap is then the caller's to retry (`_Lost`).
        Without it, the olds are read here, and a swap lost to a change that left their state as
        it was (a usage count, made without the write lock) is written again on the newer record."""
        adds = [c.new for c in changes if c.old is None and c.new is not None]
        names = self._claim_names(adds)
        # The adds' look-up goes with the claims' read-back (valid for every try: the claims are held)
        async with self.store.claims(names, (lambda: self._lookup(adds, ids=True)) if names else None) as early:
            for attempt in range(1, SWAP_ATTEMPTS + 1):
                try:  # each try starts from the changes as given (`_write_once` fills in counts read)
                    return await self._write_once([replace(c) for c in changes], extra_versions, read, early)
                except _Lost:
                    if read is not None or attempt == SWAP_ATTEMPTS:
                        raise
                    await _backoff(attempt)
        raise AssertionError("unreachable")

    def _claim_names(self, adds: Sequence[MemoryNode]) -> list[str]:
        """What adds (new nodes) claim while they look up and write, where processes
        share the store: each new node's content hash (which covers its type, scope and text:
        two adds of one text for one target take turns, and the second finds the first's memory)
        and its id (an add never reuses a stored id). Adds of other contents claim other names
        and go on beside them; a store of one process claims nothing (its writes take the
        collection's lock)."""
        if not self.store.shared:
            return []
        return [f"{self.collection}/hash/{n.content_hash}" for n in adds] + \
            [f"{self.collection}/id/{n.memory_id}" for n in adds]

    async def _write_once(self, changes: list[Change], extra_versions: Sequence[VectorRecord],
                          read: Mapping[str, VectorRecord] | None,
                          looked: tuple[dict[str, MemoryNode], set[str]] | None = None) -> list[tuple[MemoryNode, bool]]:
        olds = [c.old for c in changes if c.old is not None]
        old_records: dict[str, VectorRecord] = {}
        if olds:
            found = list(read.values()) if read is not None else (await self.store.get(
                self.collection, [o.memory_id for o in olds], with_vectors=True)).found
            old_records = {r.node.memory_id: r for r in found}
            stored = {r.node.memory_id: r.node for r in found}
            for old in olds:  # reads counted meanwhile (access bookkeeping) are no change
                if old.memory_id in stored and not stored[old.memory_id].same_state(old):
                    raise ConflictError(f"memory {old.memory_id} changed after it was read; nothing was written")
            for change in changes:  # ... and a new state that did not set them keeps the stored counts
                if change.new is not None and change.old is not None and change.old.memory_id in stored:
                    now_stored = stored[change.old.memory_id]
                    if all(getattr(change.new, f) == getattr(change.old, f) for f in MemoryNode.ACCESS_FIELDS):
                        change.new = change.new.model_copy(
                            update={f: getattr(now_stored, f) for f in MemoryNode.ACCESS_FIELDS})
        adds = [c.new for c in changes if c.old is None and c.new is not None]
        if looked is not None:  # what the adds' look-up found (see `_write`)
            existing, stored_ids = dict(looked[0]), looked[1]
        else:
            existing, stored_ids = await self._lookup(adds, ids=True) if adds else ({}, set())
        taken = [n.memory_id for n in adds if n.content_hash not in existing and n.memory_id in stored_ids]
        if taken:
            raise InvalidInputError(f"memory_id {taken[0]} is taken by a stored memory: an add never "
                                    "replaces one (update_memory changes a memory); nothing was written")
        now = utcnow()
        writes: list[VectorRecord] = []
        versions: list[VectorRecord] = list(extra_versions)
        swapped: list[VectorRecord] = []  # the stored records replaced or deleted, as read
        replacements: list[VectorRecord] = []
        out: list[tuple[MemoryNode, bool]] = []
        for change in changes:
            if change.old is None:
                assert change.new is not None
                key = change.new.content_hash
                if key in existing:
                    out.append((existing[key], False))
                    continue
                existing[key] = change.new
                writes.append(VectorRecord(node=change.new, vector=change.vector))
                versions += change.history
                out.append((change.new, True))
                continue
            stored_record = old_records.get(change.old.memory_id)
            if stored_record is None or stored_record.vector is None:  # gone meanwhile: nothing to replace
                out.append((change.old, False))
                continue
            old_vector = stored_record.vector
            swapped.append(stored_record)
            if change.keep_version:
                event = "DELETE" if change.new is None else "UPDATE"
                versions.append(VectorRecord(node=_version_node(change.old, event, now, change.reason),
                                             vector=old_vector))
            if change.new is None:
                out.append((change.old, True))
            else:
                replacements.append(VectorRecord(node=change.new, vector=change.vector or old_vector))
                versions += change.history
                out.append((change.new, True))
        # One write: after a crash, reopening shows all of it (versions, new states, deletions) or none.
        # The stored memories it replaces or deletes are a swap, conditional on what was read here:
        # when another writer changed one since, nothing is written (`_Lost`: read again, retry).
        # Usage counts alone: each memory's write stands on its own, so one lost does not take back
        # the others (which a change by id may already have read and counted on).
        partial = not versions and not writes and len(replacements) == len(swapped) > 1
        try:
            await self.store.write([Swap(self.collection, swapped, replacements, partial=partial),
                                    Upsert(self.versions, versions, kept=True), Upsert(self.collection, writes)])
        except PartlyWritten as exc:
            raise _Lost(str(exc), exc.won) from None
        except ConflictError as exc:
            raise _Lost(str(exc)) from None
        return out

    async def touch(self, reads: dict[str, tuple[int, datetime]]) -> int:
        """Add counted reads (`{memory_id: (reads, last read)}`) to the stored memories in one
        write, without a version; ids no longer stored are skipped. Returns how many were written.
        Lock-free, as `modify`."""
        if not reads:
            return 0
        todo, written = list(reads), 0
        for attempt in range(1, SWAP_ATTEMPTS + 1):
            read = await self._read(todo, with_vectors=True)
            changes = [Change(new=r.node.model_copy(update={
                "access_count": r.node.access_count + reads[mid][0],
                "last_accessed": max(reads[mid][1], r.node.last_accessed or reads[mid][1])}),
                old=r.node, keep_version=False) for mid, r in read.items()]
            try:
                return written + sum(wrote for _, wrote in await self._write(changes, read=read))
            except _Lost as lost:
                written += len(lost.written)
                todo = [m for m in todo if m not in lost.written]
                if attempt == SWAP_ATTEMPTS:
                    raise
                await _backoff(attempt)
        raise AssertionError("unreachable")

    async def history(self, memory_id: str, scope: Scope | None = None) -> list[MemoryVersion]:
        """Earlier states of a memory, oldest first; `MemoryNotFoundError` when the id is neither
        a stored memory (not expired) nor has versions (inside `scope`, when given)."""
        out: list[MemoryVersion] = []
        flt: Filter = Eq(field="metadata.version_of", value=str(memory_id))
        if scope is not None:
            flt = scope_filter(scope, extra=flt)
        async for record in self.store.iter_records(self.versions, flt):
            out.append(version_of(record.node))
        if not out and not await self.get([memory_id], scope, utcnow()):
            raise MemoryNotFoundError(memory_id)
        out.sort(key=lambda v: (v.node.version, v.time))
        return out


def read_export(path: str | Path, dim: int, scope: Scope | None = None) -> list[Imported]:
    """The memories of a file written by `export_memory`: each line a node's fields, optionally
    its `vector` and its `history` (earlier states, oldest first, each `{"event", "time",
    "reason", "node"}` and optionally a `vector`). Every line is checked before any is returned;
    the first flaw (invalid JSON or field, a vector that is not a list of finite numbers, an id on
    two lines, a history entry of another memory, a line outside `scope`) is an
    `InvalidInputError` naming its line."""
    out: list[Imported] = []
    first: dict[str, int] = {}
    versions = 0
    for lineno, row in read_jsonl(path):
        where = f"{path}:{lineno}"
        if not first and row.get("format") == BACKUP_FORMAT:  # the first line: a backup's header
            raise InvalidInputError(f"{path} is a backup, not an export: load it with restore(), into an empty "
                                    "store; nothing was imported")
        vector = line_vector(row.pop("vector", None), dim, where)
        history = row.pop("history", None)
        node = line_node(row, where)
        if node.memory_id in first:
            raise InvalidInputError(f"{where}: memory_id {node.memory_id} is also on line {first[node.memory_id]}; "
                                    "nothing was imported")
        first[node.memory_id] = lineno
        if scope is not None and not scope.holds(node):
            raise InvalidInputError(f"{where}: a memory of {node.target_kind} {node.memory_target!r}, outside {scope}; "
                                    "nothing was imported")
        out.append(Imported(node, vector, _read_history(history, node, dim, where)))
        versions += len(out[-1].history)
        if versions > MAX_IMPORT_LINES:
            raise InvalidInputError(f"{where}: more than {MAX_IMPORT_LINES} versions in one file; split it")
    return out


def _read_history(value: Any, node: MemoryNode, dim: int,
                  where: str) -> list[tuple[MemoryVersion, list[float] | None]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInputError(f"{where}: history must be a list of earlier versions; nothing was imported")
    out: list[tuple[MemoryVersion, list[float] | None]] = []
    for i, entry in enumerate(value, 1):
        at = f"{where}: history entry {i}"
        if not isinstance(entry, dict):
            raise InvalidInputError(f"{at} is not a JSON object; nothing was imported")
        entry = dict(entry)
        vector = line_vector(entry.pop("vector", None), dim, at)
        try:
            version = MemoryVersion.model_validate(entry)
        except ValidationError as exc:
            raise InvalidInputError(f"{at}: {describe(exc)}; nothing was imported") from None
        if version.node.memory_id != node.memory_id or version.node.scope != node.scope:
            raise InvalidInputError(f"{at} is a state of another memory (id {version.node.memory_id}, "
                                    f"{version.node.scope}); nothing was imported")
        out.append((version, vector))
    return out


def scope_filter(scope: Scope | Sequence[Scope], types: Sequence[MemoryType] | None = None,
                 extra: Filter | None = None) -> Filter:
    """Memories inside `scope` (or any of several scopes of one kind), of `types` (default: all
    the kind holds), ANDed with `extra`."""
    scopes = [scope] if isinstance(scope, Scope) else list(scope)
    kinds = {s.kind for s in scopes}
    if len(kinds) != 1:
        raise InvalidInputError("several targets must all be users, all tasks or all tools")
    types = types or scopes[0].all_types
    names = sorted({s.name for s in scopes})
    parts: list[Filter] = [Eq(field="target_kind", value=scopes[0].kind),
                           Eq(field="memory_target", value=names[0]) if len(names) == 1
                           else In(field="memory_target", values=list(names)),
                           In(field="memory_type", values=[t.value for t in types])]
    if extra is not None:
        parts.append(extra)
    return And(filters=parts)


def target_filter(target: str, memory_type: MemoryType, extra: Filter | None = None) -> Filter:
    """Memories of one main type (personal, procedural, tool) of the target it implies, not expired."""
    return scope_filter(Scope(TYPE_KIND[memory_type], target), (memory_type,),
                        alive() if extra is None else And(filters=[alive(), extra]))


def alive(now: datetime | None = None) -> Filter:
    """Memories not expired at `now` (default: the current time): no `expires_at`, or a later one."""
    return Not(filter=Range(field="expires_at", lte=now or utcnow()))


def expired(now: datetime | None = None) -> Filter:
    """Memories whose `expires_at` has passed at `now`."""
    return Range(field="expires_at", lte=now or utcnow())


def version_of(record: MemoryNode) -> MemoryVersion:
    """The earlier state a record of the versions collection keeps; `ValueError` when the record
    is not one `_version_node` could have made (a forged backup line)."""
    meta = record.metadata
    try:
        version = MemoryVersion.model_validate({k: meta[k] for k in ("node", "event", "time", "reason") if k in meta})
    except ValidationError as exc:
        raise ValueError(f"not a version record: {describe(exc)}") from None
    if meta.get("version_of") != version.node.memory_id:
        raise ValueError("not a version record: metadata.version_of is not the id of the state it keeps")
    if version.node.scope != record.scope or version.node.memory_type != record.memory_type:
        raise ValueError("not a version record: the state it keeps belongs to another target or type")
    return version


def _version_key(memory_id: str, version: MemoryVersion) -> tuple[str, int, str, datetime]:
    """Two versions of a memory are the same when they keep the same state, ended by the same event at the same time."""
    return memory_id, version.node.version, version.event, as_aware(version.time)


VERSION_FIELDS = frozenset({"memory_type", "target_kind", "memory_target", "when_to_use", "content", "message_time",
                            "content_hash"})
"""The fields of a memory its version records hold at their own top level (every version ever
written: see `_version_node`); the rest of the state is in `metadata.node`."""


def version_filter(flt: Filter) -> Filter:
    """`flt`, a filter on memories, as the same filter on their versions: each condition reads the
    state a version keeps (`metadata.node`), or the copy of a field the record holds at its top
    level (`VERSION_FIELDS`: indexed as in the memories collection, so `contains` means the same),
    and `memory_id` the memory's id (`metadata.version_of`). A purge with filters removes the
    versions it matches (`ReMe.forget`), versions written before there was such a filter included."""
    if isinstance(flt, (And, Or)):
        return flt.model_copy(update={"filters": [version_filter(f) for f in flt.filters]})
    if isinstance(flt, Not):
        return flt.model_copy(update={"filter": version_filter(flt.filter)})
    if flt.field in VERSION_FIELDS:
        return flt
    return flt.model_copy(update={"field": "metadata.version_of" if flt.field == "memory_id"
                                  else f"metadata.node.{flt.field}"})


def _version_node(old: MemoryNode, event: str, when: datetime, reason: str) -> MemoryNode:
    """A copy of `old` for the versions collection: same type, target and text (so scope deletes
    and searches find it), with the whole node kept in metadata. The metadata is set after
    validation: it nests `old`'s own metadata two levels down, which may be as deep and as large
    as a memory's metadata may be, and `old` is valid already."""
    record = MemoryNode(memory_id=str(uuid.uuid4()), memory_type=old.memory_type, target_kind=old.target_kind,
                        memory_target=old.memory_target, when_to_use=old.when_to_use, content=old.content,
                        message_time=old.message_time)
    return record.model_copy(update={"metadata": _version_meta(old, event, when, reason)})


def _version_meta(old: MemoryNode, event: str, when: datetime, reason: str) -> dict[str, Any]:
    return {"version_of": old.memory_id, "event": event, "time": when.isoformat(), "reason": reason,
            "node": old.model_dump(mode="json")}


VERSION_KEYS = frozenset({"version_of", "event", "time", "reason", "node"})


def version_record(fields: Any) -> MemoryNode:
    """A record of the versions collection read from outside (a backup line): checked as one
    `_version_node` makes (the state it keeps is a valid memory of the record's own target and
    type), its metadata rebuilt from what was checked. `ValueError` (or pydantic's
    `ValidationError`) says what is wrong."""
    if not isinstance(fields, dict) or not isinstance(fields.get("metadata"), dict):
        raise ValueError("a version record is an object whose metadata is an object")
    meta = fields["metadata"]
    if set(meta) != VERSION_KEYS:
        raise ValueError(f"a version record's metadata has exactly the keys {', '.join(sorted(VERSION_KEYS))}")
    record = MemoryNode.model_validate({**fields, "metadata": {}})
    version = MemoryVersion.model_validate({k: meta[k] for k in ("node", "event", "time", "reason")})
    if meta["version_of"] != version.node.memory_id:
        raise ValueError("metadata.version_of is not the id of the state the record keeps")
    if version.node.scope != record.scope or version.node.memory_type != record.memory_type:
        raise ValueError("the state a version record keeps belongs to another target or type")
    return record.model_copy(update={"metadata": _version_meta(version.node, version.event, version.time,
                                                               version.reason)})
