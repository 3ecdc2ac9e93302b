"""`MemoryRepo`: the write path every pipeline and the facade share. It deduplicates by content
hash, embeds before it writes, and keeps every replaced or deleted memory as a version in a
second collection (`<collection>-versions`), so nothing changes without a trace."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Sequence

from reme.embedding import Embedder
from reme.errors import ConflictError, MemoryNotFoundError
from reme.schema import MemoryNode, MemoryType, MemoryVersion, utcnow
from reme.store import CreateCollection, Delete, Upsert, VectorRecord, VectorStore, WriteOp
from reme.store.filters import And, Eq, Filter, In

VERSIONS_SUFFIX = "-versions"


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

    async def create_ops(self) -> list[WriteOp]:
        """Creating both collections (each a no-op when it exists with the embedder's size)."""
        dim = await self.embedder.dimension()
        return [CreateCollection(self.collection, dim), CreateCollection(self.versions, dim)]

    def target_lock(self, kind: str, name: str) -> asyncio.Lock:
        """One lock per target, so two summaries of the same user never decide on stale memories."""
        return self._target_locks.setdefault((kind, name), asyncio.Lock())

    async def existing_by_hash(self, nodes: Sequence[MemoryNode]) -> dict[tuple[MemoryType, str, str], MemoryNode]:
        found: dict[tuple[MemoryType, str, str], MemoryNode] = {}
        groups: dict[tuple[MemoryType, str], set[str]] = {}
        for node in nodes:
            groups.setdefault((node.memory_type, node.memory_target), set()).add(node.content_hash)
        for (mtype, target), hashes in groups.items():
            flt = target_filter(target, mtype, In(field="content_hash", values=sorted(hashes)))
            page = await self.store.list(self.collection, flt=flt, limit=len(hashes) + 1)
            for node in page:
                found[(node.memory_type, node.memory_target, node.content_hash)] = node
        return found

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

    async def modify(self, memory_id: str, revise: Callable[[MemoryNode], MemoryNode], *, reason: str = "",
                     keep_version: bool = True) -> MemoryNode:
        """Read, change and write one memory under the write lock, so concurrent changes of one
        memory never lose each other. `revise` gets the stored node and returns its next state
        (or raises, and nothing is written). `MemoryNotFoundError` if there is no such memory."""
        async with self.lock:
            got = await self.store.get(self.collection, [memory_id])
            if not got.found:
                raise MemoryNotFoundError(memory_id)
            old = got.found[0].node
            change = Change(new=revise(old), old=old, reason=reason, keep_version=keep_version)
            await self._embed([change])
            ((node, _),) = await self._write([change])
            return node

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
            for old in olds:
                if old.memory_id in stored and stored[old.memory_id] != old:
                    raise ConflictError(f"memory {old.memory_id} changed after it was read; nothing was written")
        adds = [c.new for c in changes if c.old is None and c.new is not None]
        existing = await self.existing_by_hash(adds) if adds else {}
        now = utcnow()
        writes: list[VectorRecord] = []
        versions: list[VectorRecord] = []
        deletes: list[str] = []
        out: list[tuple[MemoryNode, bool]] = []
        for change in changes:
            if change.old is None:
                assert change.new is not None
                key = (change.new.memory_type, change.new.memory_target, change.new.content_hash)
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

    async def history(self, memory_id: str) -> list[MemoryVersion]:
        """Earlier states of a memory, oldest first."""
        out: list[MemoryVersion] = []
        flt: Filter = Eq(field="metadata.version_of", value=str(memory_id))
        async for record in self.store.iter_records(self.versions, flt):
            meta = record.node.metadata
            out.append(MemoryVersion(node=MemoryNode.model_validate(meta["node"]), event=meta["event"],
                                     time=meta["time"], reason=meta.get("reason", "")))
        out.sort(key=lambda v: (v.node.version, v.time))
        return out


def target_filter(target: str, memory_type: MemoryType, extra: Filter | None = None) -> Filter:
    """Memories of one type of one target (ANDed with `extra`)."""
    parts: list[Filter] = [Eq(field="memory_target", value=target), Eq(field="memory_type", value=memory_type.value)]
    if extra is not None:
        parts.append(extra)
    return And(filters=parts)


def _version_node(old: MemoryNode, event: str, when: datetime, reason: str) -> MemoryNode:
    """A copy of `old` for the versions collection: same type, target and text (so scope deletes
    and searches find it), with the whole node kept in metadata."""
    return MemoryNode(memory_id=str(uuid.uuid4()), memory_type=old.memory_type, memory_target=old.memory_target,
                      when_to_use=old.when_to_use, content=old.content, message_time=old.message_time,
                      metadata={"version_of": old.memory_id, "event": event, "time": when.isoformat(),
                                "reason": reason, "node": old.model_dump(mode="json")})
