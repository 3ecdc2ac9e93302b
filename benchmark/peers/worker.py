"""One library's side of the peer benchmark, run in that library's own environment.

    python worker.py LIB JOB.json STORE_DIR EMBED_URL

LIB is `reme` (this project), `reme-server` (this project on the Qdrant node named by
`PEERS_QDRANT`), `reme-ai-local` / `reme-ai-chroma` (the original ReMe's vector store,
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

    def __init__(self, path: Path, url: str, llm: dict[str, str] | None = None) -> None:
        """`llm`: {"base_url", "model"} of the chat model (full mode); None: no LLM."""
        self.path, self.url, self.llm = path, url, llm

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

    # Full mode: the library's own LLM summarizer writes the memories of both speakers.
    async def memorize(self, speakers: list[str], session: dict[str, Any]) -> dict[str, Any]:
        """Summarize one session (`{"time", "turns": [{"id", "speaker", "text"}]}`) into memories
        of both speakers; returns what the library says it wrote."""
        raise NotImplementedError

    async def recall(self, speakers: list[str], query: str, k: int) -> list[dict[str, Any]]:
        """The top `k` memories of either speaker for `query`: {"owner", "time", "content", "dia_ids"}."""
        raise NotImplementedError

    async def dump(self, speakers: list[str]) -> list[dict[str, Any]]:
        """Every memory the summarizer wrote: {"owner", "content", "dia_ids"}."""
        raise NotImplementedError

    # The memory-quality set (benchmark/quality): one user's dialogue, session by session.
    async def remember(self, user: str, messages: list[dict[str, Any]]) -> None:
        """Summarize one session (`summarize_memory` messages: role, name, content, time) into
        memories of `user` with the library's own LLM pipeline."""
        raise NotImplementedError

    async def memories_of(self, user: str) -> list[str]:
        """The texts of every memory `user` holds."""
        raise NotImplementedError


class ReMeAdapter(Adapter):
    async def open(self) -> None:
        from reme import ReMe

        llm = {"base_url": self.llm["base_url"], "model": self.llm["model"], "api_key": "local",
               "timeout": 1800.0, "max_retries": 1, "max_tokens": self.llm.get("max_tokens")} if self.llm else {}
        self.reme = ReMe(working_dir=str(self.path), embedding={
            "backend": "openai", "base_url": self.url, "api_key": "local", "model": "all-MiniLM-L6-v2"}, llm=llm,
            vector_store=self.vector_store())
        await self.reme.open()

    def vector_store(self) -> dict[str, Any]:
        return {}

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

    async def memorize(self, speakers: list[str], session: dict[str, Any]) -> dict[str, Any]:
        messages = [{"role": "user", "name": t["speaker"], "content": t["text"], "time": session["time"], "id": t["id"]}
                    for t in session["turns"]]
        result = await self.reme.summarize_memory(messages, user_name=speakers)
        return {"added": len(result.added), "updated": len(result.updated), "deleted": len(result.deleted)}

    async def _dia_ids(self, nodes: list[Any]) -> list[list[str]]:
        """The dia_ids each memory was distilled from: its source turns in the history node it cites."""
        ids = sorted({r for n in nodes for r in n.ref_ids[:1]})
        found = await self.reme.store.get(self.reme.collection, ids) if ids else None
        histories = {r.node.memory_id: r.node for r in found.found} if found else {}
        out = []
        for n in nodes:
            history = histories.get(n.ref_ids[0]) if n.ref_ids else None
            spans = history.metadata.get("messages") or [] if history is not None else []
            out.append([spans[i].get("id", "") for i in n.metadata.get("source_turns") or [] if 0 <= i < len(spans)])
        return out

    async def recall(self, speakers: list[str], query: str, k: int) -> list[dict[str, Any]]:
        ctx = await self.reme.retrieve_memory(query, user_name=speakers, top_k=k)
        nodes = [m.node for m in ctx.memories]
        return [{"owner": n.memory_target, "time": n.message_time.isoformat() if n.message_time else None,
                 "content": n.content, "dia_ids": ids} for n, ids in zip(nodes, await self._dia_ids(nodes))]

    async def dump(self, speakers: list[str]) -> list[dict[str, Any]]:
        nodes = []
        for user in speakers:
            cursor = None
            while True:
                page = await self.reme.list_memory(user_name=user, memory_type="personal", limit=100, cursor=cursor)
                nodes += list(page.nodes)
                cursor = page.next_cursor
                if cursor is None:
                    break
        return [{"owner": n.memory_target, "content": n.content, "dia_ids": ids}
                for n, ids in zip(nodes, await self._dia_ids(nodes))]


class ReMeServerAdapter(ReMeAdapter):
    """This project on a Qdrant node over gRPC (`PEERS_QDRANT`: its url and gRPC port, set by
    the parent, which started it): one collection per store folder, so a reopen finds it."""

    def vector_store(self) -> dict[str, Any]:
        url, grpc_port = os.environ["PEERS_QDRANT"].split()
        name = "peers" + uuid.uuid5(uuid.NAMESPACE_URL, str(self.path.resolve())).hex[:16]
        return {"backend": "qdrant", "url": url, "prefer_grpc": True, "grpc_port": int(grpc_port), "collection": name}


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


class ReMeAISummarizerAdapter(Adapter):
    """reme-ai 0.3.1.x's own `ReMe` application (full mode): `summarize_memory` is an agent that
    routes the conversation to a personal-memory agent through OpenAI tool calls, on its local
    vector store; recall searches each speaker's memories in that store (its `retrieve_memory`
    is an agent too)."""

    async def open(self) -> None:
        from reme.reme import ReMe as Original

        assert self.llm is not None, "reme-ai runs in full mode only"
        self.app = Original(working_dir=str(self.path), llm_api_key="local", llm_base_url=self.llm["base_url"],
                            embedding_api_key="local", embedding_base_url=self.url,
                            default_llm_config={"model_name": self.llm["model"]},
                            default_embedding_model_config={"model_name": "all-MiniLM-L6-v2", "dimensions": DIM,
                                                            "enable_cache": False},
                            default_vector_store_config={"backend": "local", "collection_name": "bench"},
                            enable_logo=False, log_to_console=False, log_to_file=True)
        await self.app.start()

    async def close(self) -> None:
        await self.app.close()

    async def memorize(self, speakers: list[str], session: dict[str, Any]) -> dict[str, Any]:
        when = session["time"][:19].replace("T", " ")
        messages = [{"role": "user" if t["speaker"] == speakers[0] else "assistant", "name": t["speaker"],
                     "content": t["text"], "time_created": when} for t in session["turns"]]
        before = len(await self.dump(speakers))
        result = await self.app.summarize_memory(messages, user_name=speakers, return_dict=True)
        return {"added": len(await self.dump(speakers)) - before, "answer": str(result.get("answer"))[:300]}

    def _handler(self, speaker: str) -> Any:
        """The speaker's memory handler, registered as a personal target first (as the app's own
        `list_memory` does; a fresh process knows no targets)."""
        memory_type, target = self.app._resolve_memory_target(speaker, "", "")
        self.app._add_meta_memory(memory_type, target)
        return self.app.get_memory_handler(target)

    async def recall(self, speakers: list[str], query: str, k: int) -> list[dict[str, Any]]:
        lists = [await self._handler(s).search(query, limit=k) for s in speakers]
        merged = [n for group in zip(*lists) for n in group] + [n for ns in lists for n in ns[min(map(len, lists)):]]
        return [{"owner": n.memory_target, "time": str(n.message_time or "") or None, "content": n.content,
                 "dia_ids": []} for n in merged[:k]]

    async def dump(self, speakers: list[str]) -> list[dict[str, Any]]:
        return [{"owner": s, "content": n.content, "dia_ids": []} for s in speakers
                for n in await self.app.list_memory(user_name=s)]


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
            "llm": {"provider": "openai", "config": {
                "model": self.llm["model"] if self.llm else "unused", "api_key": "local", "temperature": 0.0,
                "openai_base_url": self.llm["base_url"] if self.llm else self.url}},
            "history_db_path": str(self.path / "history.db")})
        if self.llm:  # a local model on a shared CPU takes minutes per call: the client's 600 s and
            # two retries would give up and send the same long prompt again (ReMe gets 1800 s too)
            from openai import OpenAI

            self.mem.llm.client = OpenAI(api_key="local", base_url=self.llm["base_url"], timeout=3600.0,
                                         max_retries=0)

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

    async def memorize(self, speakers: list[str], session: dict[str, Any]) -> dict[str, Any]:
        """As mem0's own LoCoMo evaluation: the session once per speaker, that speaker's turns as
        `user` and the other's as `assistant`, each `Name: text`, the session date in metadata;
        `infer=True` (one extraction call per add). mem0's script adds two messages a call; a
        whole session a call here (fewer, larger calls)."""
        added = 0
        for speaker in speakers:
            messages = [{"role": "user" if t["speaker"] == speaker else "assistant",
                         "content": f"{t['speaker']}: {t['text']}"} for t in session["turns"]]
            out = self.mem.add(messages, user_id=speaker, metadata={"timestamp": session["time"]}, infer=True)
            added += sum(1 for r in out.get("results", []) if r.get("event", "ADD") == "ADD")
        return {"added": added}

    async def recall(self, speakers: list[str], query: str, k: int) -> list[dict[str, Any]]:
        hits = [h for s in speakers for h in self.mem.search(query, top_k=k, filters={"user_id": s},
                                                             threshold=0.0)["results"]]
        hits.sort(key=lambda h: -float(h.get("score") or 0.0))
        return [{"owner": h.get("user_id"), "time": (h.get("metadata") or {}).get("timestamp"),
                 "content": h["memory"], "dia_ids": []} for h in hits[:k]]

    async def dump(self, speakers: list[str]) -> list[dict[str, Any]]:
        return [{"owner": s, "content": r["memory"], "dia_ids": []} for s in speakers
                for r in self.mem.get_all(filters={"user_id": s}, top_k=100_000)["results"]]

    async def remember(self, user: str, messages: list[dict[str, Any]]) -> None:
        """The session in one `add(..., infer=True)`: the assistant's turns as `assistant`, every
        person's as `user` with the speaker's name in front (`Name: text`, as for LoCoMo), so a
        dialogue of several speakers says who said what. mem0's open-source `add` takes no message
        time (its prompt dates the conversation today); the session's time goes in metadata."""
        turns = [{"role": "assistant", "content": m["content"]} if m["role"] == "assistant" else
                 {"role": "user", "content": f"{m.get('name') or user}: {m['content']}"} for m in messages]
        self.mem.add(turns, user_id=user, metadata={"timestamp": messages[-1]["time"]}, infer=True)

    async def memories_of(self, user: str) -> list[str]:
        return [r["memory"] for r in self.mem.get_all(filters={"user_id": user}, top_k=100_000)["results"]]


ADAPTERS: dict[str, type[Adapter]] = {"reme": ReMeAdapter, "reme-server": ReMeServerAdapter,
                                      "reme-ai-local": ReMeAIAdapter,
                                      "reme-ai-chroma": ReMeAIChromaAdapter, "mem0": Mem0Adapter,
                                      "reme-ai": ReMeAISummarizerAdapter}


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


def emit(key: str, value: Any) -> None:
    """One finished unit, for the parent's checkpoint and progress bar."""
    print(json.dumps({"done": key, "value": value}), flush=True)


async def full_ingest(lib_name: str, job: dict[str, Any], path: Path, url: str) -> dict[str, Any]:
    """Summarize each session not yet done into memories (a store per conversation, kept on disk
    between runs); each session is reported as it finishes. A session that fails is reported
    with its error and the next one goes on."""
    for conv in job["conversations"]:
        lib = ADAPTERS[lib_name](path / conv["id"], url, job["llm"])
        await lib.open()
        try:
            for number, session in enumerate(conv["sessions"], 1):
                key = f"{conv['id']}/{number}"
                if key in job["skip"]:
                    continue
                started = time.perf_counter()
                try:
                    value = await lib.memorize(conv["speakers"], session)
                except Exception as exc:  # noqa: BLE001 - a library's failure is a result here
                    value = {"error": f"{type(exc).__name__}: {exc}"[:1000]}
                emit(key, {**value, "seconds": round(time.perf_counter() - started, 2)})
        finally:
            await lib.close()
    return {}


async def full_retrieve(lib_name: str, job: dict[str, Any], path: Path, url: str) -> dict[str, Any]:
    """The top k memories for each question not yet done, and every memory each conversation holds."""
    memories: dict[str, Any] = {}
    for conv in job["conversations"]:
        lib = ADAPTERS[lib_name](path / conv["id"], url, job["llm"])
        await lib.open()
        try:
            for q in job["questions"]:
                if q["conv"] != conv["id"] or q["key"] in job["skip"]:
                    continue
                started = time.perf_counter()
                try:
                    value: dict[str, Any] = {"memories": await lib.recall(conv["speakers"], q["text"], job["k"])}
                except Exception as exc:  # noqa: BLE001 - a library's failure is a result here
                    value = {"memories": [], "error": f"{type(exc).__name__}: {exc}"[:1000]}
                emit(q["key"], {**value, "seconds": round(time.perf_counter() - started, 2)})
            memories[conv["id"]] = await lib.dump(conv["speakers"])
        finally:
            await lib.close()
    return {"memories": memories}


async def quality(lib_name: str, job: dict[str, Any], path: Path, url: str) -> dict[str, Any]:
    """The memory-quality set: each dialogue in a store of its own, its sessions in order, each
    through its own LLM endpoint (`base_url`, so calls are counted per dialogue); each dialogue's
    memories are reported as it finishes. A dialogue that fails is reported with its error."""
    for d in job["dialogues"]:
        lib = ADAPTERS[lib_name](path / d["id"], url, {"model": job["model"], "base_url": d["base_url"]})
        await lib.open()
        started = time.perf_counter()
        try:
            value: dict[str, Any] = {}
            for messages in d["sessions"]:
                await lib.remember(d["user"], messages)
            value["memories"] = await lib.memories_of(d["user"])
        except Exception as exc:  # noqa: BLE001 - a library's failure is a result here
            value = {"memories": [], "error": f"{type(exc).__name__}: {exc}"[:1000]}
        finally:
            await lib.close()
        emit(d["id"], {**value, "seconds": round(time.perf_counter() - started, 2)})
    return {}


async def main() -> None:
    lib_name, job_file, store, url = sys.argv[1:5]
    job = json.loads(Path(job_file).read_text(encoding="utf-8"))
    path = Path(store)
    path.mkdir(parents=True, exist_ok=True)
    kind = job["kind"]
    if kind in ("full-ingest", "full-retrieve", "quality"):
        run = {"full-ingest": full_ingest, "full-retrieve": full_retrieve, "quality": quality}[kind]
        print(json.dumps({"result": await run(lib_name, job, path, url)}), flush=True)
        return
    lib = ADAPTERS[lib_name](path, url)
    await lib.open()
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
