"""One library's side of the peer benchmark, run in that library's own environment.

    python worker.py LIB JOB.json STORE_DIR EMBED_URL

LIB is `reme` (this project), `reme-ai-local` / `reme-ai-chroma` (the original ReMe's vector store,
PyPI `reme-ai`, on its local JSON files or on Chroma) or `mem0` (mem0's `Memory` on its default
embedded Qdrant). It imports nothing from this repository but the library under test (the
original ReMe's import name `reme` is this project's too), and prints one JSON object: the job's
results. Every library embeds through the same OpenAI-compatible endpoint, EMBED_URL.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

DIM = 384


class Adapter:
    """The calls every workload makes, in one library's terms. Ids are the library's own."""

    def __init__(self, path: Path, url: str) -> None:
        self.path, self.url = path, url

    async def open(self) -> None: ...
    async def close(self) -> None: ...
    async def add(self, user: str, text: str) -> str:
        raise NotImplementedError

    async def add_many(self, user: str, texts: list[str]) -> list[str]:
        raise NotImplementedError

    async def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        """(id, user) of the hits."""
        raise NotImplementedError

    async def list(self, user: str) -> list[str]:
        raise NotImplementedError

    async def delete(self, user: str, memory_id: str) -> None:
        raise NotImplementedError


class ReMeAdapter(Adapter):
    async def open(self) -> None:
        from reme import ReMe

        self.reme = ReMe(working_dir=str(self.path), embedding={
            "backend": "openai", "base_url": self.url, "api_key": "local", "model": "all-MiniLM-L6-v2"})
        await self.reme.open()

    async def close(self) -> None:
        await self.reme.close()

    async def add(self, user: str, text: str) -> str:
        return (await self.reme.add_memory(text, user_name=user)).memory_id

    async def add_many(self, user: str, texts: list[str]) -> list[str]:
        from reme import MemoryNode, MemoryType

        nodes = [MemoryNode(memory_type=MemoryType.PERSONAL, memory_target=user, content=t) for t in texts]
        return [n.memory_id for n in await self.reme.add_memories(nodes)]

    async def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        hits = await self.reme.search_memory(query, user_name=user, top_k=k, mode="dense")
        return [(h.node.memory_id, h.node.memory_target) for h in hits]

    async def retrieve(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        """The default retriever (hybrid, recency and importance weighting), no LLM."""
        ctx = await self.reme.retrieve_memory(query, user_name=user, top_k=k)
        return [(m.node.memory_id, m.node.memory_target) for m in ctx.memories]

    async def list(self, user: str) -> list[str]:
        ids, cursor = [], None
        while True:
            page = await self.reme.list_memory(user_name=user, limit=100, cursor=cursor)
            ids += [n.memory_id for n in page.nodes]
            cursor = page.next_cursor
            if cursor is None:
                return ids

    async def delete(self, user: str, memory_id: str) -> None:
        await self.reme.delete_memory(memory_id, user_name=user)


class ReMeAIAdapter(Adapter):
    """reme-ai 0.3.1.x `reme.core.vector_store`: one collection, the user in each node's metadata."""

    kind = "local"

    async def open(self) -> None:
        from reme.core.embedding.openai_embedding_model import OpenAIEmbeddingModel
        from reme.core.schema import VectorNode

        self.node_cls = VectorNode
        self.embedder = OpenAIEmbeddingModel(api_key="local", base_url=self.url, model_name="all-MiniLM-L6-v2",
                                             dimensions=DIM, max_batch_size=64, enable_cache=False,
                                             cache_dir=str(self.path / ".emb"))
        await self.embedder.start()
        if self.kind == "chroma":
            from reme.core.vector_store.chroma_vector_store import ChromaVectorStore as Store
        else:
            from reme.core.vector_store.local_vector_store import LocalVectorStore as Store
        self.store = Store(collection_name="bench", db_path=str(self.path), embedding_model=self.embedder)
        await self.store.start()

    async def close(self) -> None:
        await self.store.close()
        await self.embedder.close()

    async def add(self, user: str, text: str) -> str:
        return (await self.add_many(user, [text]))[0]

    async def add_many(self, user: str, texts: list[str]) -> list[str]:
        nodes = [self.node_cls(content=t, metadata={"user": user}) for t in texts]
        await self.store.insert(nodes)
        return [n.vector_id for n in nodes]

    async def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        hits = await self.store.search(query, limit=k, filters={"user": user})
        return [(h.vector_id, str(h.metadata.get("user"))) for h in hits]

    async def list(self, user: str) -> list[str]:
        return [n.vector_id for n in await self.store.list(filters={"user": user})]

    async def delete(self, user: str, memory_id: str) -> None:
        await self.store.delete(memory_id)


class ReMeAIChromaAdapter(ReMeAIAdapter):
    kind = "chroma"


class Mem0Adapter(Adapter):
    """mem0 `Memory` with its default vector store (embedded Qdrant, qdrant-client's local mode),
    made persistent (`on_disk`), `infer=False`: the text is stored as given, no LLM."""

    async def open(self) -> None:
        os.environ.setdefault("MEM0_TELEMETRY", "False")
        os.environ.setdefault("OPENAI_API_KEY", "local")
        from mem0 import Memory

        self.mem = Memory.from_config({
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": "bench", "embedding_model_dims": DIM, "path": str(self.path / "qdrant"),
                "on_disk": True}},
            "embedder": {"provider": "openai", "config": {
                "model": "all-MiniLM-L6-v2", "embedding_dims": DIM, "openai_base_url": self.url, "api_key": "local"}},
            "llm": {"provider": "openai", "config": {"model": "unused", "api_key": "local",
                                                     "openai_base_url": self.url}},
            "history_db_path": str(self.path / "history.db")})

    async def close(self) -> None:
        client = getattr(self.mem.vector_store, "client", None)
        if client is not None:
            client.close()
        del self.mem

    async def add(self, user: str, text: str) -> str:
        return (await self.add_many(user, [text]))[0]

    async def add_many(self, user: str, texts: list[str]) -> list[str]:
        out = self.mem.add([{"role": "user", "content": t} for t in texts], user_id=user, infer=False)
        return [r["id"] for r in out["results"]]

    async def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        hits = self.mem.search(query, top_k=k, filters={"user_id": user}, threshold=0.0)["results"]
        return [(h["id"], str(h.get("user_id"))) for h in hits]

    async def list(self, user: str) -> list[str]:
        return [r["id"] for r in self.mem.get_all(filters={"user_id": user}, top_k=100_000)["results"]]

    async def delete(self, user: str, memory_id: str) -> None:
        self.mem.delete(memory_id)


ADAPTERS: dict[str, type[Adapter]] = {"reme": ReMeAdapter, "reme-ai-local": ReMeAIAdapter,
                                      "reme-ai-chroma": ReMeAIChromaAdapter, "mem0": Mem0Adapter}


def pct(samples: list[float]) -> list[float]:
    """p50 and p95 in ms."""
    ordered = sorted(samples)
    return [statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000]


def disk(path: Path) -> dict[str, int]:
    used = apparent = 0
    for f in path.rglob("*"):
        if f.is_file() and not f.is_symlink():
            st = f.stat()
            used += st.st_blocks * 512
            apparent += st.st_size
    return {"used": used, "apparent": apparent}


async def locomo(lib: Adapter, job: dict[str, Any]) -> dict[str, Any]:
    """Each turn a memory of its conversation; each question searched in its conversation."""
    ids: dict[str, str] = {}
    for conv in job["conversations"]:
        got = await lib.add_many(conv["user"], [t["text"] for t in conv["turns"]])
        ids.update(zip(got, (t["id"] for t in conv["turns"])))
    out: dict[str, Any] = {}
    searches = {"search": lib.search}
    if isinstance(lib, ReMeAdapter):
        searches["retrieve"] = lib.retrieve
    for name, fn in searches.items():
        out[name] = [[ids.get(i, "") for i, _ in await fn(q["user"], q["text"], job["k"])] for q in job["questions"]]
    await lib.close()
    return out


async def speed(lib: Adapter, job: dict[str, Any], path: Path) -> dict[str, Any]:
    """Adds (the first `single` one call each, the rest a user's batch at a time), then searches
    filtered to one user, lists of one user, deletes, a reopen and the disk used."""
    items, single = job["items"], job["single"]
    ids: dict[str, list[str]] = {}
    times: list[float] = []
    for user, text in items[:single]:
        t = time.perf_counter()
        ids.setdefault(user, []).append(await lib.add(user, text))
        times.append(time.perf_counter() - t)
    out: dict[str, Any] = {"add one": pct(times), "add one/s": len(times) / sum(times) if times else None}
    batches: dict[str, list[str]] = {}
    for user, text in items[single:]:
        batches.setdefault(user, []).append(text)
    t = time.perf_counter()
    for user, texts in batches.items():
        ids.setdefault(user, []).extend(await lib.add_many(user, texts))
    took = time.perf_counter() - t
    out["add batch/s"] = (len(items) - single) / took if took else None
    search_t, list_t, foreign = [], [], 0
    for user, query in job["queries"]:
        t = time.perf_counter()
        hits = await lib.search(user, query, 10)
        search_t.append(time.perf_counter() - t)
        foreign += sum(1 for _, owner in hits if owner != user)
        t = time.perf_counter()
        await lib.list(user)
        list_t.append(time.perf_counter() - t)
    out.update({"search": pct(search_t), "list": pct(list_t), "foreign hits": foreign})
    delete_t = []
    for user, _ in job["queries"][:job["deletes"]]:
        victim = ids[user].pop()
        t = time.perf_counter()
        await lib.delete(user, victim)
        delete_t.append(time.perf_counter() - t)
    out["delete"] = pct(delete_t)
    t = time.perf_counter()
    await lib.close()
    out["close s"] = time.perf_counter() - t
    out["disk"] = disk(path)
    t = time.perf_counter()
    await lib.open()
    user, query = job["queries"][0]
    await lib.search(user, query, 10)
    out["reopen s"] = time.perf_counter() - t
    out["count after reopen"] = sum([len(await lib.list(u)) for u in sorted(ids)[:10]])
    out["count expected"] = sum(len(ids[u]) for u in sorted(ids)[:10])
    await lib.close()
    return out


async def crash_write(lib: Adapter, job: dict[str, Any]) -> dict[str, Any]:
    """Add one memory a call, printing each acknowledged id; the parent SIGKILLs this process."""
    for i in range(job["n"]):
        memory_id = await lib.add("crash-user", f"acknowledged write number {i} about topic {i * 7919 % 1000}")
        print(json.dumps({"ack": memory_id}), flush=True)
    await asyncio.sleep(3600)
    return {}


async def crash_read(lib: Adapter, job: dict[str, Any]) -> dict[str, Any]:
    found = set(await lib.list("crash-user"))
    await lib.close()
    return {"found": sorted(found)}


async def behaviour(lib: Adapter, job: dict[str, Any]) -> dict[str, Any]:
    """Identical text stored by several users; one user adding the same text three times."""
    text = "I moved to Lisbon last spring and I walk my dog by the river every morning."
    users = ["ann", "ben", "cat"]
    for user in users:
        await lib.add(user, text)
    for _ in range(2):
        await lib.add("ann", text)
    await lib.add("dan", "My sister plays the cello in an orchestra in Porto.")
    per_user = {user: len(await lib.list(user)) for user in users}
    hits = {user: [owner for _, owner in await lib.search(user, "where do I walk the dog", 10)] for user in users}
    dan = [owner for _, owner in await lib.search("dan", "walking the dog by the river in Lisbon", 10)]
    await lib.close()
    return {"copies per user": per_user, "foreign hits": sum(o != u for u in users for o in hits[u])
            + sum(o != "dan" for o in dan)}


async def main() -> None:
    lib_name, job_file, store, url = sys.argv[1:5]
    job = json.loads(Path(job_file).read_text(encoding="utf-8"))
    path = Path(store)
    path.mkdir(parents=True, exist_ok=True)
    lib = ADAPTERS[lib_name](path, url)
    await lib.open()
    kind = job["kind"]
    if kind == "locomo":
        result = await locomo(lib, job)
    elif kind == "speed":
        result = await speed(lib, job, path)
    elif kind == "crash-write":
        result = await crash_write(lib, job)
    elif kind == "crash-read":
        result = await crash_read(lib, job)
    else:
        result = await behaviour(lib, job)
    print(json.dumps({"result": result}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
