"""CrewAI: `ReMeStorage`, the `StorageBackend` of CrewAI's unified `Memory` kept in ReMe, and its
`embedder`, ReMe's embedder as CrewAI's embedding callable (extra `crewai`).

>>> storage = ReMeStorage(working_dir=".reme")
>>> memory = Memory(storage=storage, embedder=storage.embedder, llm=llm)
>>> agent = Agent(role="Assistant", goal="...", backstory="...", llm=llm, memory=memory)

CrewAI embeds texts itself: `save` gets records with vectors and `search` a query vector. ReMe
embeds each record's content with its own embedder (`retrieval_text`) and searches by the query
vector CrewAI made (`search_memory(vector=...)`), so CrewAI must embed with ReMe's embedder:
`Memory(embedder=storage.embedder)`. A query vector of another size is refused
(`VectorSizeError`, naming both sizes); `save` checks the records' vectors the same way.

The scope is CrewAI's own: each record is a personal memory of the ReMe user named by its scope
path (`/crew/research/alice`), so ReMe's own calls see it too (`list_memory(user_name=...)`); a
`scope_prefix` is matched segment by segment (`/crew/a` covers `/crew/a/b`, not `/crew/ab`), and
no prefix (or `/`) means every record this storage wrote, never ReMe's other memories.
Categories are the memory's `tags`, importance its `score`, `created_at` its `message_time`;
metadata, source, privacy and `last_accessed` are kept whole in `metadata.crewai`. Search ranks by
cosine similarity (CrewAI's LanceDB storage by 1 / (1 + L2 distance): the same order for the
normalized vectors both use). Every call runs on the storage's own event loop, so the sync faces
(called from CrewAI's save threads) and the async ones (`asave`, `asearch`, `adelete`) both work.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Sequence

from crewai.memory.types import MemoryRecord, ScopeInfo

from reme.errors import InvalidInputError, MemoryNotFoundError, VectorSizeError
from reme.integrations._agent import LoopOwned
from reme.schema import MAX_LIMIT, MemoryNode, MemoryType

AUTHOR = "crewai"
PAGE = 256


def scope_path(scope: str | None) -> str:
    """A scope as CrewAI writes it: "/" and "/"-separated names, no trailing "/"."""
    if scope is None:
        return "/"
    if not isinstance(scope, str):
        raise InvalidInputError(f"a scope is a path string, not {type(scope).__name__}")
    parts = [p for p in scope.strip().split("/") if p]
    return "/" + "/".join(parts)


def prefixes(scope: str) -> list[str]:
    """"/a/b" -> ["/", "/a", "/a/b"]: what a `scope_prefix` matches."""
    parts = [p for p in scope.split("/") if p]
    return ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _naive(when: datetime) -> datetime:
    """CrewAI's records carry naive UTC times (`datetime.utcnow`)."""
    return when.astimezone(timezone.utc).replace(tzinfo=None)


def record_of(node: MemoryNode) -> MemoryRecord:
    meta = node.metadata.get("crewai", {})
    accessed = meta.get("last_accessed")
    return MemoryRecord(id=node.memory_id, content=node.content, scope=node.memory_target,
                        categories=list(node.tags), metadata=dict(meta.get("metadata", {})),
                        importance=node.score, created_at=_naive(node.message_time),
                        last_accessed=datetime.fromisoformat(accessed) if accessed else _naive(node.message_time),
                        source=meta.get("source"), private=bool(meta.get("private", False)))


class ReMeStorage(LoopOwned):
    """CrewAI's memory storage in ReMe, on disk (Qdrant Edge) by default.

    Args:
        **settings: ReMe's settings (`working_dir`, `embedding`, `vector_store`, ...); the rest
            comes from `REME_*` variables as for `ReMe`.

    Close it (`close()`, which CrewAI's `Memory.close()` calls, or `with ReMeStorage(...)`) to
    release the working directory.
    """

    def __init__(self, **settings: Any) -> None:
        self._open_reme("ReMeStorage", settings)

    # -- the embedder CrewAI must use ------------------------------------------------------------
    def embedder(self, texts: Sequence[str]) -> list[list[float]]:
        """ReMe's embedder as CrewAI's embedding callable: `Memory(embedder=storage.embedder)`."""
        return self._run(self.reme.embedder.embed(list(texts)))

    # -- the protocol: sync faces ----------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        self._run(self._save(records))

    def search(self, query_embedding: list[float], scope_prefix: str | None = None,
               categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
               limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        return self._run(self._search(query_embedding, scope_prefix, categories, metadata_filter, limit, min_score))

    def delete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
               record_ids: list[str] | None = None, older_than: datetime | None = None,
               metadata_filter: dict[str, Any] | None = None) -> int:
        return self._run(self._delete(scope_prefix, categories, record_ids, older_than, metadata_filter))

    def update(self, record: MemoryRecord) -> None:
        self._run(self._update(record))

    def touch_records(self, record_ids: list[str]) -> None:
        """What CrewAI calls after a recall: `last_accessed` is now."""
        self._run(self._touch(record_ids))

    def get_record(self, record_id: str) -> MemoryRecord | None:
        node = self._run(self._get(record_id))
        return None if node is None else record_of(node)

    def list_records(self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        """Records in a scope, newest first."""
        if limit <= 0 or offset < 0:
            return []
        nodes = self._run(self._listing(scope_prefix, want=offset + limit))
        return [record_of(n) for n in nodes[offset:offset + limit]]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        path = scope_path(scope)
        records = [record_of(n) for n in self._run(self._listing(path))]
        if not records:
            return ScopeInfo(path=path)
        return ScopeInfo(path=path, record_count=len(records),
                         categories=sorted({c for r in records for c in r.categories}),
                         oldest_record=min(r.created_at for r in records),
                         newest_record=max(r.created_at for r in records),
                         child_scopes=self.list_scopes(path))

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scopes under `parent` that hold records (at any depth)."""
        path = scope_path(parent)
        depth = len(prefixes(path))
        return sorted({prefixes(n.memory_target)[depth] for n in self._run(self._listing(path))
                       if len(prefixes(n.memory_target)) > depth})

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self._run(self._listing(scope_prefix)):
            for category in node.tags:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        return self._run(self.reme.count_memory(filters=self._where(scope_prefix)))

    def reset(self, scope_prefix: str | None = None) -> None:
        self.delete(scope_prefix=scope_prefix)

    # -- async faces -----------------------------------------------------------------------------
    async def asave(self, records: list[MemoryRecord]) -> None:
        await self._arun(self._save(records))

    async def asearch(self, query_embedding: list[float], scope_prefix: str | None = None,
                      categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
                      limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        return await self._arun(self._search(query_embedding, scope_prefix, categories, metadata_filter, limit,
                                             min_score))

    async def adelete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
                      record_ids: list[str] | None = None, older_than: datetime | None = None,
                      metadata_filter: dict[str, Any] | None = None) -> int:
        return await self._arun(self._delete(scope_prefix, categories, record_ids, older_than, metadata_filter))

    # -- the translation ---------------------------------------------------------------------
    @staticmethod
    def _where(scope_prefix: str | None, categories: Sequence[str] | None = None,
               metadata_filter: dict[str, Any] | None = None) -> dict[str, Any]:
        flt: dict[str, Any] = {"target_kind": "user", "memory_type": "personal", "author": AUTHOR}
        path = scope_path(scope_prefix)
        if path != "/":
            flt["metadata.crewai.prefixes"] = {"any": [path]}
        if categories:
            flt["tags"] = {"any": list(categories)}
        for key, value in (metadata_filter or {}).items():
            flt[f"metadata.crewai.metadata.{key}"] = value
        return flt

    @staticmethod
    def _fields(record: MemoryRecord) -> dict[str, Any]:
        scope = scope_path(record.scope)
        return {"content": record.content, "tags": list(record.categories), "score": record.importance,
                "message_time": _utc(record.created_at),
                "metadata": {"crewai": {"metadata": dict(record.metadata), "prefixes": prefixes(scope),
                                        "source": record.source, "private": record.private,
                                        "last_accessed": _naive(_utc(record.last_accessed)).isoformat()}}}

    async def _check_vector(self, vector: list[float] | None) -> None:
        if vector:
            dim = await self.reme.embedder.dimension()
            if len(vector) != dim:
                raise VectorSizeError(f"a record's vector has size {len(vector)}, but ReMe's "
                                      f"{self.reme.config.embedding.backend} embedder makes size {dim}: "
                                      "give CrewAI's Memory embedder=storage.embedder")

    async def _save(self, records: list[MemoryRecord]) -> None:
        for record in records:
            await self._check_vector(record.embedding)
        nodes = [MemoryNode(memory_id=r.id, memory_type=MemoryType.PERSONAL, target_kind="user",
                            memory_target=scope_path(r.scope), author=AUTHOR, **self._fields(r)) for r in records]
        if nodes:
            await self.reme.add_memories(nodes)

    async def _search(self, vector: list[float], scope_prefix: str | None, categories: list[str] | None,
                      metadata_filter: dict[str, Any] | None, limit: int,
                      min_score: float) -> list[tuple[MemoryRecord, float]]:
        if limit <= 0:
            return []
        hits = await self.reme.search_memory("", vector=vector, mode="dense", top_k=min(limit, MAX_LIMIT),
                                             filters=self._where(scope_prefix, categories, metadata_filter))
        found = [(record_of(h.node), float(h.similarity or 0.0)) for h in hits]
        return [(r, s) for r, s in found if s >= min_score]

    async def _get(self, record_id: str) -> MemoryNode | None:
        try:
            node = await self.reme.get_memory(record_id)
        except (MemoryNotFoundError, InvalidInputError):
            return None
        return node if node.author == AUTHOR else None

    async def _update(self, record: MemoryRecord) -> None:
        """Replace the record with the same id (a new version of the memory; `history` keeps the
        old one). A record moved to another scope is deleted there and saved in its new one."""
        await self._check_vector(record.embedding)
        old = await self._get(record.id)
        if old is None:
            raise MemoryNotFoundError(record.id)
        if old.memory_target != scope_path(record.scope):
            await self.reme.delete_memory(old.memory_id, user_name=old.memory_target)
            await self._save([record])
            return
        await self.reme.update_memory(old.memory_id, user_name=old.memory_target, **self._fields(record))

    async def _touch(self, record_ids: list[str]) -> None:
        now = datetime.now(timezone.utc).replace(tzinfo=None).isoformat()
        for record_id in record_ids:
            node = await self._get(record_id)
            if node is not None:
                meta = {**node.metadata, "crewai": {**node.metadata.get("crewai", {}), "last_accessed": now}}
                await self.reme.update_memory(node.memory_id, user_name=node.memory_target, metadata=meta)

    async def _listing(self, scope_prefix: str | None, categories: Sequence[str] | None = None,
                       metadata_filter: dict[str, Any] | None = None, want: int | None = None) -> list[MemoryNode]:
        """Matching memories, newest first (`want` of them; all: None)."""
        out: list[MemoryNode] = []
        cursor: str | None = None
        flt = self._where(scope_prefix, categories, metadata_filter)
        while True:
            page = await self.reme.list_memory(filters=flt, sort_key="message_time", direction="desc", limit=PAGE,
                                               cursor=cursor)
            out += list(page)
            if page.next_cursor is None or (want is not None and len(out) >= want):
                return out if want is None else out[:want]
            cursor = page.next_cursor

    async def _delete(self, scope_prefix: str | None, categories: list[str] | None, record_ids: list[str] | None,
                      older_than: datetime | None, metadata_filter: dict[str, Any] | None) -> int:
        if record_ids is not None and not record_ids:
            return 0
        nodes = await self._listing(scope_prefix, categories, metadata_filter)
        if record_ids is not None:
            wanted = set(record_ids)
            nodes = [n for n in nodes if n.memory_id in wanted]
        if older_than is not None:
            nodes = [n for n in nodes if n.message_time < _utc(older_than)]
        for node in nodes:
            await self.reme.delete_memory(node.memory_id, user_name=node.memory_target)
        return len(nodes)
