"""`MemoryRepo`: the write path every pipeline and the facade share. It deduplicates by content
hash, embeds before it writes, and keeps every replaced or deleted memory as a version in a
second collection (`<collection>-versions`), so nothing changes without a trace.

Scopes are walls here, by construction: by-id reads (`get`, `modify`, `history`) take the
caller's scope and treat a memory outside it as missing, and an add may never reuse the id of a
stored memory (which would replace it without a version, in whatever scope it lives)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Sequence

from reme.embedding import Embedder
from reme.errors import ConflictError, InvalidInputError, MemoryNotFoundError
from reme.schema import TYPE_KIND, MemoryNode, MemoryType, MemoryVersion, Scope, utcnow
from reme.store import CreateCollection, Delete, Upsert, VectorRecord, VectorStore, WriteOp
from reme.store.filters import And, Eq, Filter, In, Not, Range

VERSIONS_SUFFIX = "-versions"
HASH_LOOKUP = 500
"""Content hashes looked up in one filter (well under `MAX_FILTER_SIZE`, with the scope's conditions)."""


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


@dataclass
class MemoryRepo:
    store: VectorStore
    embedder: Embedder
    collection: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _target_locks: dict[tuple[str, str], asyncio.Lock] = field(default_factory=dict)

    @property
    def versions(self) -> str:
        return self.collection + VERSIONS_SUFFIX

    async def create(self) -> None:
        await self.store.write(await self.create_ops())

    async def create_ops(self, dim: int | None = None) -> list[WriteOp]:
        """Creating both collections (each a no-op when it exists with that size; by default the embedder's)."""
        dim = dim or await self.embedder.dimension()
        return [CreateCollection(self.collection, dim), CreateCollection(self.versions, dim)]

    def target_lock(self, kind: str, name: str) -> asyncio.Lock:
        """One lock per target, so two summaries of the same user never decide on stale memories."""
        return self._target_locks.setdefault((kind, name), asyncio.Lock())

    async def existing_by_hash(self, nodes: Sequence[MemoryNode]) -> dict[str, MemoryNode]:
        """Stored memories with the content hash of any of `nodes` (the hash covers type, scope
        and text), by that hash."""
        found: dict[str, MemoryNode] = {}
        groups: dict[tuple[Scope, MemoryType], set[str]] = {}
        for node in nodes:
            groups.setdefault((node.scope, node.memory_type), set()).add(node.content_hash)
        for (scope, mtype), hashes in groups.items():
            ordered = sorted(hashes)
            for start in range(0, len(ordered), HASH_LOOKUP):  # a filter names at most MAX_FILTER_SIZE values
                chunk: list[Any] = ordered[start:start + HASH_LOOKUP]
                flt = scope_filter(scope, (mtype,), And(filters=[In(field="content_hash", values=chunk), alive()]))
                page = await self.store.list(self.collection, flt=flt, limit=len(chunk) + 1)
                for node in page:
                    found[node.content_hash] = node
        return found

    async def get(self, ids: Sequence[str], scope: Scope | None = None,
                  alive_at: datetime | None = None) -> dict[str, MemoryNode]:
        """The stored memories among `ids`, by id; with a scope, only those inside it; with
        `alive_at`, only those not expired then."""
        got = await self.store.get(self.collection, list(dict.fromkeys(ids)))
        return {r.node.memory_id: r.node for r in got.found
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
        async with self.lock:
            return await self._write(changes)

    async def modify(self, memory_ids: Sequence[str], revise: Callable[[MemoryNode], MemoryNode], *,
                     scope: Scope | None = None, reason: str = "", keep_version: bool = True,
                     alive_at: datetime | None = None) -> list[MemoryNode]:
        """Read, change and write memories under the write lock, so concurrent changes of one
        memory never lose each other. `revise` gets each stored node and returns its next state
        (or raises, and nothing is written). `MemoryNotFoundError` if any of them is not stored
        (inside `scope`, when given): then nothing is written either."""
        async with self.lock:
            stored = await self.get(memory_ids, scope, alive_at)
            missing = [m for m in memory_ids if m not in stored]
            if missing:
                raise MemoryNotFoundError(missing[0])
            changes = [Change(new=revise(old), old=old, reason=reason, keep_version=keep_version)
                       for old in stored.values()]
            await self._embed(changes)
            return [node for node, _ in await self._write(changes)]

    async def restore(self, nodes: Sequence[tuple[MemoryNode, list[float] | None]], *, source: str,
                      foreign: str = "error") -> int:
        """Write memories read from a file, as one batch: a new id is added (deduplicated by
        content), a stored id of the same scope is replaced (its old state kept as a version,
        unchanged ones skipped). A stored id of another scope is an `InvalidInputError` naming
        `source` (`foreign="error"`: nothing is written) or the line gets a new id
        (`foreign="new_id"`, the old one kept as `metadata.original_memory_id`). Returns how
        many memories were written."""
        async with self.lock:
            stored = await self.get([n.memory_id for n, _ in nodes])
            changes: list[Change] = []
            for node, vector in nodes:
                old = stored.get(node.memory_id)
                if old is not None and old.scope != node.scope:
                    if foreign == "error":
                        raise InvalidInputError(f"{source}: memory_id {node.memory_id} belongs to another target; "
                                                "nothing was imported")
                    node = node.model_copy(update={"memory_id": str(uuid.uuid4()), "metadata": {
                        **node.metadata, "original_memory_id": node.memory_id}})
                    old = None
                if old == node:
                    continue
                changes.append(Change(new=node, old=old, vector=vector, reason=f"imported from {source}"))
            await self._embed(changes)
            return sum(wrote for _, wrote in await self._write(changes))

    async def _embed(self, changes: list[Change]) -> None:
        """Fill in the vector of every new node whose retrieval text is new, in one batch."""
        todo = [(c, c.new) for c in changes if c.new is not None and c.vector is None
                and (c.old is None or c.new.retrieval_text != c.old.retrieval_text)]
        if todo:
            vectors = await self.embedder.embed([new.retrieval_text for _, new in todo])
            for (change, _), vector in zip(todo, vectors):
                change.vector = vector

    async def _write(self, changes: list[Change]) -> list[tuple[MemoryNode, bool]]:
        olds = [c.old for c in changes if c.old is not None]
        old_vectors: dict[str, list[float] | None] = {}
        if olds:
            got = await self.store.get(self.collection, [o.memory_id for o in olds], with_vectors=True)
            old_vectors = {r.node.memory_id: r.vector for r in got.found}
            stored = {r.node.memory_id: r.node for r in got.found}
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
        existing = await self.existing_by_hash(adds) if adds else {}
        fresh = [n for n in adds if n.content_hash not in existing]
        taken = (await self.store.get(self.collection, [n.memory_id for n in fresh])).found if fresh else []
        if taken:
            raise InvalidInputError(f"memory_id {taken[0].node.memory_id} is taken by a stored memory: an add never "
                                    "replaces one (update_memory changes a memory); nothing was written")
        now = utcnow()
        writes: list[VectorRecord] = []
        versions: list[VectorRecord] = []
        deletes: list[str] = []
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
                out.append((change.new, True))
                continue
            old_vector = old_vectors.get(change.old.memory_id)
            if old_vector is None:  # gone meanwhile (deleted by another call): nothing to replace
                out.append((change.old, False))
                continue
            if change.keep_version:
                event = "DELETE" if change.new is None else "UPDATE"
                versions.append(VectorRecord(node=_version_node(change.old, event, now, change.reason),
                                             vector=old_vector))
            if change.new is None:
                deletes.append(change.old.memory_id)
                out.append((change.old, True))
            else:
                writes.append(VectorRecord(node=change.new, vector=change.vector or old_vector))
                out.append((change.new, True))
        # One write: after a crash, reopening shows all of it (versions, new states, deletions) or none.
        await self.store.write([Upsert(self.versions, versions), Upsert(self.collection, writes),
                                Delete(self.collection, deletes)])
        return out

    async def touch(self, reads: dict[str, tuple[int, datetime]]) -> int:
        """Add counted reads (`{memory_id: (reads, last read)}`) to the stored memories in one
        write, without a version; ids no longer stored are skipped. Returns how many were written."""
        if not reads:
            return 0
        async with self.lock:
            stored = await self.get(list(reads))
            changes = [Change(new=old.model_copy(update={
                "access_count": old.access_count + reads[mid][0],
                "last_accessed": max(reads[mid][1], old.last_accessed or reads[mid][1])}),
                old=old, keep_version=False) for mid, old in stored.items()]
            return sum(wrote for _, wrote in await self._write(changes))

    async def history(self, memory_id: str, scope: Scope | None = None) -> list[MemoryVersion]:
        """Earlier states of a memory, oldest first; `MemoryNotFoundError` when the id is neither
        a stored memory nor has versions (inside `scope`, when given)."""
        out: list[MemoryVersion] = []
        flt: Filter = Eq(field="metadata.version_of", value=str(memory_id))
        if scope is not None:
            flt = scope_filter(scope, extra=flt)
        async for record in self.store.iter_records(self.versions, flt):
            meta = record.node.metadata
            out.append(MemoryVersion(node=MemoryNode.model_validate(meta["node"]), event=meta["event"],
                                     time=meta["time"], reason=meta.get("reason", "")))
        if not out and not await self.get([memory_id], scope):
            raise MemoryNotFoundError(memory_id)
        out.sort(key=lambda v: (v.node.version, v.time))
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


def _version_node(old: MemoryNode, event: str, when: datetime, reason: str) -> MemoryNode:
    """A copy of `old` for the versions collection: same type, target and text (so scope deletes
    and searches find it), with the whole node kept in metadata."""
    return MemoryNode(memory_id=str(uuid.uuid4()), memory_type=old.memory_type, target_kind=old.target_kind,
                      memory_target=old.memory_target,
                      when_to_use=old.when_to_use, content=old.content, message_time=old.message_time,
                      metadata={"version_of": old.memory_id, "event": event, "time": when.isoformat(),
                                "reason": reason, "node": old.model_dump(mode="json")})
