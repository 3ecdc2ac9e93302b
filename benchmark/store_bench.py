"""Store benchmark: the store layer against the raw engine and exact numpy search, in one run.

    python -m benchmark.store_bench                      # 10k and 100k nodes, edge; qdrant local at 10k
    python -m benchmark.store_bench --sizes 1000000 --backends edge --no-optimize --no-write-path   # the 1M run

    python -m benchmark.store_bench --write-path         # durability modes and event-loop stalls only

    python -m benchmark.store_bench --server --sizes 10000,100000   # the facade, embedded vs a Qdrant node

The server table (`--server`) runs the facade's own calls (add one memory, add a batch of ten
users' memories, search, search by a vector, list, get, update, record_usage, delete) on the
embedded store and on a real Qdrant node on loopback (started here through
`benchmark/qdrant_server.py`) over REST and over gRPC, the three taking turns call by call, each
filled with the same memories of 1,000 users. Per call: p50 / p95 on each, the ratios
server/embedded of the p50, and the round trips the call made to the server (requests of
qdrant-client, counted by wrapping it).

Per backend and size: upsert throughput, search latency p50/p95 (dense, dense filtered by one of
1,000 targets, hybrid filtered), list-by-target, reopen time, and recall@10 of dense search against
an exact numpy brute-force search over the same vectors, and the resident memory the store added
to the process (RSS MB; it counts the engine's memory-mapped files as far as they are touched).
`edge-raw` is qdrant-edge-py called directly with the same points (`edge-raw, same work`: with the
payload and indexes the store writes): the ratio store/raw is what the store layer costs. Each
filtered query runs through the store, then straight to the engine on the store's own shard and on
each raw shard, who goes first rotating from query to query, so all of them meet the same load and
the same cold caches. Edge numbers are given before and after `optimize()` (exact search, then HNSW).

The write-path table compares `sync="process"` with `sync="os"` (fsync before a write returns):
upserts/s one record a call and 1,000 a call (a journaled multi-call write at batch_size 256),
and the worst lateness of a 1 ms ticker coroutine (the event loop's longest stall) while one
call adds 10k records and while `optimize()` runs, with the longest wait of a search due every
1 ms meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import numpy as np
import qdrant_edge as qe

from reme.schema import MemoryNode, MemoryType
from reme.store import VectorRecord, VectorStore
from reme.store.base import to_payload
from reme.store.edge import EdgeStore
from reme.store.filters import eq
from reme.store.qdrant import QdrantStore

DIM = 384
TARGETS = 1000


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, list[str], list[str]]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(64, DIM)).astype(np.float32)
    vecs = centers[rng.integers(0, 64, n)] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(5000)]
    ranks = np.minimum(rng.zipf(1.3, size=(n, 12)), 5000) - 1
    texts = [" ".join(vocab[j] for j in row) for row in ranks]
    targets = [f"user{i % TARGETS}" for i in range(n)]
    return vecs, texts, targets


def rss_mb() -> float:
    """This process's resident memory now, in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def progress(name: str, done: int, took: float) -> None:
    """Every 100,000 upserts, a line on stderr: a long run shows how far it got."""
    if done % 100_000 == 0:
        print(f"{name}: {done:,} upserted in {took:.0f} s", file=sys.stderr, flush=True)


def pct(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int) -> tuple[list[float], list[Any]]:
    times, results = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        results.append(await fn())
        times.append(time.perf_counter() - t)
    return times, results


def brute(vecs: np.ndarray, q: np.ndarray, mask: np.ndarray | None, k: int = 10) -> np.ndarray:
    scores = vecs @ q
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


async def bench_store(name: str, store: VectorStore, vecs: np.ndarray, texts: list[str], targets: list[str],
                      queries: int, reopen: Callable[[], Awaitable[VectorStore]] | None,
                      optimize: bool = True, raws: list[RawShard] | None = None) -> list[dict[str, Any]]:
    n = len(texts)
    ids = [str(uuid.UUID(int=i + 1)) for i in range(n)]
    await store.create_collection("bench", DIM)
    rss_before = rss_mb()
    took = 0.0
    for start in range(0, n, 1000):  # records made a batch at a time: 1M of them would not fit in memory
        batch = [VectorRecord(node=MemoryNode(memory_id=ids[i], memory_type=MemoryType.PERSONAL,
                                              memory_target=targets[i], content=texts[i]), vector=vecs[i].tolist())
                 for i in range(start, min(n, start + 1000))]
        t = time.perf_counter()
        await store.upsert("bench", batch)
        took += time.perf_counter() - t
        progress(name, start + len(batch), took)
    upsert_rate = n / took
    rows = []
    rng = np.random.default_rng(1)
    qidx = rng.integers(0, n, queries)
    qvecs = vecs[qidx] + 0.05 * rng.normal(size=(queries, DIM)).astype(np.float32)
    target_arr = np.array(targets)

    async def measure(phase: str) -> None:
        dense_t, filt_t, hyb_t, list_t, recalls, brute_t, brute_ft, raw_ft = [], [], [], [], [], [], [], []
        # Raw shards are only compared while nothing is indexed: they are never optimized.
        others = [r for r in raws or [] if r.shard is not None] if phase == "exact" else []
        for r in others:
            r.filtered = []
        for j in range(queries):
            q, tgt = qvecs[j], targets[qidx[j]]
            ts, res = await timed(lambda: store.search("bench", vector=q.tolist(), mode="dense", limit=10), 1)
            dense_t += ts
            t0 = time.perf_counter()
            exact = brute(vecs, q, None)
            brute_t.append(time.perf_counter() - t0)
            recalls.append(len({ids[i] for i in exact} & {h.node.memory_id for h in res[0]}) / 10)
            flt = eq("memory_target", tgt)
            qlist = q.tolist()

            async def ours() -> None:
                ts, _ = await timed(lambda: store.search("bench", vector=qlist, mode="dense", flt=flt, limit=10), 1)
                filt_t.extend(ts)

            def engine(shard: qe.EdgeShard, into: list[float]) -> Callable[[], Awaitable[None]]:
                async def query() -> None:
                    t0 = time.perf_counter()
                    shard.query(raw_filtered(qlist, tgt))
                    into.append(time.perf_counter() - t0)
                return query

            # The same query, filtered to one target, through the store and straight to the engine:
            # on the store's own shard and on each separately built one. Who goes first rotates,
            # since the numpy search just before evicts the caches.
            contenders = [ours]
            if isinstance(store, EdgeStore):
                contenders.append(engine(store._shard("bench"), raw_ft))  # type: ignore[attr-defined]
            contenders += [engine(r.shard, r.filtered) for r in others if r.shard is not None]
            for k in range(len(contenders)):
                await contenders[(j + k) % len(contenders)]()
            t0 = time.perf_counter()
            brute(vecs, q, target_arr == tgt)
            brute_ft.append(time.perf_counter() - t0)
            text = " ".join(texts[qidx[j]].split()[:4])
            ts, _ = await timed(lambda: store.search("bench", vector=q.tolist(), text=text, mode="hybrid", flt=flt,
                                                     limit=10), 1)
            hyb_t += ts
            ts, _ = await timed(lambda: store.list("bench", flt=flt, sort_key="time_created", limit=20), 1)
            list_t += ts
        for r in others:
            r.row["filtered"] = pct(r.filtered)
        rows.append({"backend": name, "phase": phase, "n": n, "upsert/s": upsert_rate, "RSS MB": rss_mb() - rss_before,
                     "dense": pct(dense_t), "filtered": pct(filt_t), "hybrid filtered": pct(hyb_t),
                     "list by target": pct(list_t), "numpy dense": pct(brute_t), "numpy filtered": pct(brute_ft),
                     "recall@10": float(np.mean(recalls)), **({"raw filtered": pct(raw_ft)} if raw_ft else {})})

    await measure("exact")
    if isinstance(store, EdgeStore) and optimize:
        t = time.perf_counter()
        await store.optimize("bench")
        rows[-1]["optimize s"] = time.perf_counter() - t
        await measure("indexed")
    if reopen is not None:
        await store.close()
        t = time.perf_counter()
        store = await reopen()
        await store.search("bench", vector=qvecs[0].tolist(), mode="dense", limit=10)
        rows[-1]["reopen ms"] = (time.perf_counter() - t) * 1000
    await store.close()
    return rows


def raw_filtered(vector: list[float], target: str) -> qe.QueryRequest:
    return qe.QueryRequest(limit=10, query=qe.Query.Nearest(vector, using="dense"), with_payload=True,
                           filter=qe.Filter(must=[qe.FieldCondition("memory_target", match=qe.MatchValue(target))]))


@dataclass
class RawShard:
    """A shard built by calling qdrant-edge-py directly, kept open so the store's filtered
    queries can be repeated on it (`filtered`, seconds) in the same loop."""

    row: dict[str, Any]
    shard: qe.EdgeShard | None
    owner: EdgeStore | None = None
    filtered: list[float] = field(default_factory=list)

    async def close(self) -> None:
        if self.owner is not None:
            await self.owner.close()
        elif self.shard is not None:
            self.shard.close()
        self.shard = None


async def build_raw_edge(path: Path, vecs: np.ndarray, texts: list[str], targets: list[str],
                         same_work: bool = False) -> RawShard:
    """qdrant-edge-py called directly. Plain: a shard with one payload index and two payload
    fields. `same_work`: the shard the store creates (every payload index) and the payload the store
    writes, so store/raw is the cost of the store layer alone, not of what it stores."""
    bm25 = qe.Bm25(qe.Bm25Config(avg_len=32))
    n = len(texts)
    name = "edge-raw, same work" if same_work else "edge-raw"
    owner: EdgeStore | None = None
    if same_work:
        owner = EdgeStore(path)
        await owner.create_collection("raw", DIM)
        shard = owner._shard("raw")
        def payload(i: int) -> dict[str, Any]:
            return to_payload(MemoryNode(memory_id=str(uuid.UUID(int=i + 1)), memory_type=MemoryType.PERSONAL,
                                         memory_target=targets[i], content=texts[i]))
    else:
        shard = qe.EdgeShard.create(str(path), qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)},
            sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}))
        shard.update(qe.UpdateOperation.create_field_index("memory_target", qe.KeywordIndexParams(is_tenant=True)))
        def payload(i: int) -> dict[str, Any]:
            return {"memory_target": targets[i], "content": texts[i]}
    took = 0.0
    for start in range(0, n, 1000):
        chunk = range(start, min(n, start + 1000))
        payloads = [payload(i) for i in chunk]  # made untimed, as the store's records are
        t = time.perf_counter()
        shard.update(qe.UpdateOperation.upsert_points([
            qe.Point(str(uuid.UUID(int=i + 1)), {"dense": vecs[i].tolist(), "bm25": bm25.embed_document(texts[i])},
                     p) for i, p in zip(chunk, payloads)]))
        took += time.perf_counter() - t
        progress(name, chunk.stop, took)
    return RawShard(row={"backend": name, "phase": "exact", "n": n, "upsert/s": n / took}, shard=shard, owner=owner)


def ratios(rows: list[dict[str, Any]], n: int) -> str:
    """The store layer's cost at one size: store/raw for a filtered search (p50) and raw/store
    for upserts, against both raw baselines, and against the engine queried on the store's own
    shard between the store's queries (the least noisy comparison on a busy machine)."""
    store = next((r for r in rows if r["backend"] == "edge" and r["phase"] == "exact" and r["n"] == n), None)
    if store is None:
        return ""
    out = [f"n={n:,}: filtered search x{row['filtered'][0] / row['raw filtered'][0]:.2f} the engine's time for the "
           f"same query on the same shard, interleaved ({row['phase']})"
           for row in rows if row["backend"] == "edge" and row["n"] == n and "raw filtered" in row]
    for raw in [r for r in rows if r["backend"].startswith("edge-raw") and r["n"] == n and "filtered" in r]:
        out.append(f"n={n:,} vs {raw['backend']}: filtered search x{store['filtered'][0] / raw['filtered'][0]:.2f}, "
                   f"upsert x{raw['upsert/s'] / store['upsert/s']:.2f} (store/raw time)")
    return "\n".join(out)


async def worst_stall(work: Callable[[], Awaitable[Any]],
                      read: Callable[[], Awaitable[Any]] | None = None) -> tuple[float, float, int]:
    """Run `work` while a ticker sleeps 1 ms at a time and, with `read`, a reader calls it 1 ms
    after each return: the ticker's worst lateness (the event loop's longest stall), the longest
    read counted from when it was due, and the number of reads that finished, times in ms."""
    stop = False
    worst = longest = 0.0
    reads = 0

    async def ticker() -> None:
        nonlocal worst
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - t - 0.001)

    async def reader() -> None:
        nonlocal longest, reads
        while read is not None and not stop:
            t = time.perf_counter()  # a read is due 1 ms from now: its time counts from then
            await asyncio.sleep(0.001)
            await read()
            longest = max(longest, time.perf_counter() - t - 0.001)
            reads += 1

    tasks = [asyncio.create_task(ticker()), asyncio.create_task(reader())]
    await asyncio.sleep(0.01)
    worst = longest = 0.0
    reads = 0
    try:
        await work()
    finally:
        stop = True
        await asyncio.gather(*tasks)
    return worst * 1000, longest * 1000, reads


def engine_gil(root: Path, n: int = 20_000) -> str:
    """Does the engine release the GIL? A thread that wakes every 1 ms measures its longest wait
    while the main thread is inside one engine call (an upsert of `n` points, a query loop)."""
    import threading

    vecs, _, _ = make_data(n)
    shard = qe.EdgeShard.create(str(root / "gil"), qe.EdgeConfig(
        vectors={"dense": qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)}))
    points = [qe.Point(str(uuid.UUID(int=i + 1)), {"dense": vecs[i].tolist()}, {"i": i}) for i in range(n)]
    out = []

    def watched(what: str, fn: Callable[[], Any]) -> None:
        stop, gaps = threading.Event(), [0.0]

        def tick() -> None:
            last = time.perf_counter()
            while not stop.is_set():
                time.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        thread = threading.Thread(target=tick)
        thread.start()
        t = time.perf_counter()
        fn()
        took = time.perf_counter() - t
        stop.set()
        thread.join()
        out.append(f"{what}: {took * 1000:.0f} ms in the engine, the other thread waited up to {max(gaps) * 1000:.0f} ms")

    watched(f"upsert of {n:,} points in one call", lambda: shard.update(qe.UpdateOperation.upsert_points(points)))
    query = qe.QueryRequest(limit=10, query=qe.Query.Nearest(vecs[0].tolist(), using="dense"))
    watched("one exact query", lambda: shard.query(query))
    watched("optimize", shard.optimize)
    shard.close()
    return "\n".join(out)


async def bench_write_path(root: Path, n: int = 10_000, single: int = 300) -> str:
    vecs, texts, targets = make_data(n)
    records = [VectorRecord(node=MemoryNode(memory_id=str(uuid.UUID(int=i + 1)), memory_type=MemoryType.PERSONAL,
                                            memory_target=targets[i], content=texts[i]), vector=vecs[i].tolist())
               for i in range(n)]
    rates: dict[str, tuple[float, float]] = {}
    lines = [("| sync | upserts/s, 1 a call | upserts/s, 1,000 a call | loop stall, 10k in one call (ms) "
              "| loop stall, optimize (ms) | longest search wait during optimize (ms) | searches done during it "
              "| optimize s |"), "|---|---|---|---|---|---|---|---|"]
    for mode in ("process", "os"):
        store = EdgeStore(root / mode, sync=mode)
        await store.create_collection("one", DIM)
        await store.create_collection("batch", DIM)
        await store.create_collection("big", DIM)
        t = time.perf_counter()
        for r in records[:single]:
            await store.upsert("one", [r])
        one = single / (time.perf_counter() - t)
        t = time.perf_counter()
        for start in range(0, n, 1000):
            await store.upsert("batch", records[start:start + 1000])
        batch = n / (time.perf_counter() - t)
        rates[mode] = (one, batch)

        stall_add, _, _ = await worst_stall(functools.partial(store.upsert, "big", records))
        query = vecs[0].tolist()
        t = time.perf_counter()
        stall_opt, longest, reads = await worst_stall(
            functools.partial(store.optimize, "big"),
            functools.partial(store.search, "big", vector=query, mode="dense", flt=eq("memory_target", targets[0]),
                              limit=10))
        opt_s = time.perf_counter() - t
        await store.close()
        lines.append(f"| {mode} | {one:,.0f} | {batch:,.0f} | {stall_add:.0f} | {stall_opt:.0f} | {longest:.0f} "
                     f"| {reads} | {opt_s:.1f} |")
    lines.append(f"\nsync=os costs: 1 a call x{rates['process'][0] / rates['os'][0]:.1f} slower, "
                 f"1,000 a call x{rates['process'][1] / rates['os'][1]:.1f} slower (process/os upserts/s)")
    return "\n".join(lines)


class CountingClient:
    """qdrant-client with every request counted by method: one awaited call is one round trip."""

    def __init__(self, client: Any) -> None:
        self._inner = client
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            t = time.perf_counter()
            try:
                return await attr(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - t
        return counted


FACADE_OPS = ("add", "add 10 users", "search", "search by vector", "list", "get", "update", "record_usage", "delete")


def facade_nodes(texts: list[str], targets: list[str]) -> list[MemoryNode]:
    return [MemoryNode(memory_id=str(uuid.UUID(int=i + 1)), memory_type=MemoryType.PERSONAL, memory_target=t,
                       content=text) for i, (text, t) in enumerate(zip(texts, targets))]


async def fill(reme: Any, nodes: list[MemoryNode], vecs: np.ndarray, name: str) -> float:
    """The memories written straight through the store, 1,000 a call (the facade's adds are
    measured afterwards): returns the seconds it took."""
    took = 0.0
    for start in range(0, len(nodes), 1000):
        batch = [VectorRecord(node=node, vector=vecs[start + i].tolist())
                 for i, node in enumerate(nodes[start:start + 1000])]
        t = time.perf_counter()
        await reme.store.upsert(reme.collection, batch)
        took += time.perf_counter() - t
        progress(name, start + len(batch), took)
    return took


def facade_stores(root: Path, url: str, grpc_port: int) -> dict[str, Any]:
    """`ReMe` on the embedded store (in `root`) and on the server at `url` over REST and over gRPC
    (one new collection for both), hash vectors of `DIM`: "embedded", "REST", "gRPC"."""
    from reme import ReMe

    embedding = {"backend": "hash", "dimensions": DIM}
    server = {"backend": "qdrant", "url": url, "collection": f"bench{uuid.uuid4().hex[:8]}", "grpc_port": grpc_port}
    return {"embedded": ReMe(working_dir=str(root / "edge"), embedding=embedding),
            "REST": ReMe(working_dir=str(root / "rest"), embedding=embedding, vector_store=server),
            "gRPC": ReMe(working_dir=str(root / "grpc"), embedding=embedding,
                         vector_store={**server, "prefer_grpc": True})}


async def bench_facade(url: str, grpc_port: int, root: Path, n: int, repeat: int) -> str:
    """The facade's calls on the embedded store and on the server at `url` over REST and over
    gRPC, taking turns call by call, each filled with the same `n` memories of 1,000 users (the
    two server clients share one collection, each changing its own memories): a table of p50 /
    p95 per call, the ratios server/embedded, and the server round trips per call."""
    vecs, texts, targets = make_data(n)
    nodes = facade_nodes(texts, targets)
    stores = facade_stores(root, url, grpc_port)
    for name, reme in stores.items():
        await reme.open()
        if name != "gRPC":
            await fill(reme, nodes, vecs, f"{name} n={n:,}")
    for name, reme in stores.items():  # the first write makes the lock's collection: not counted
        await reme.add_memory(f"{name} warms up", user_name="user0")
    counters = {s: CountingClient(stores[s].store._client) for s in ("REST", "gRPC")}  # type: ignore[attr-defined]
    for s, counter in counters.items():
        stores[s].store._client = counter  # type: ignore[attr-defined]
    rng = np.random.default_rng(2)
    per_store = 4 * repeat
    picks = [int(i) for i in rng.choice(n, size=min(n, per_store * len(stores)), replace=False)]
    times: dict[str, dict[str, list[float]]] = {op: {s: [] for s in stores} for op in FACADE_OPS}
    trips: dict[str, Counter[str]] = {op: Counter() for op in FACADE_OPS}
    waits: dict[str, dict[str, Counter[str]]] = {op: {s: Counter() for s in counters} for op in FACADE_OPS}

    def call(op: str, j: int, k: int, reme: Any, s: str) -> Awaitable[Any]:
        """The `j`th call `op` on the `k`th store: each store changes memories of its own."""
        def pick(i: int) -> MemoryNode:
            return nodes[picks[(k * per_store + i) % len(picks)]]
        node = pick(j)
        user, mid = node.memory_target, node.memory_id
        if op == "add":
            return reme.add_memory(f"{s} added {j} " + texts[j % n], user_name=f"user{j % TARGETS}")
        if op == "add 10 users":
            return reme.add_memories([MemoryNode(memory_type=MemoryType.PERSONAL, content=f"{s} batch {j} {i} "
                                                 + texts[(j + i) % n], memory_target=f"user{(j * 10 + i) % TARGETS}")
                                      for i in range(10)])
        if op == "search":
            return reme.search_memory(" ".join(node.content.split()[:4]), user_name=user, top_k=10)
        if op == "search by vector":  # a framework that embeds its queries itself
            return reme.search_memory("", vector=vecs[picks[(k * per_store + j) % len(picks)]].tolist(),
                                      user_name=user, top_k=10, mode="dense")
        if op == "list":
            return reme.list_memory(user_name=user, limit=100)
        if op == "get":
            return reme.get_memory(mid, user_name=user)
        if op == "update":
            return reme.update_memory(mid, content=f"{node.content} (updated {j})", user_name=user)
        if op == "record_usage":
            return reme.record_usage([mid], True, user_name=user)
        gone = pick(2 * repeat + j)
        return reme.delete_memory(gone.memory_id, user_name=gone.memory_target)

    try:
        for op in FACADE_OPS:
            for j in range(repeat):
                order = list(stores)[j % len(stores):] + list(stores)[:j % len(stores)]  # who goes first rotates
                for s in order:
                    counter = counters.get(s)
                    before = (Counter(counter.calls), Counter(counter.seconds)) if counter else None
                    t = time.perf_counter()
                    await call(op, j, list(stores).index(s), stores[s], s)
                    times[op][s].append(time.perf_counter() - t)
                    if counter is not None and before is not None:
                        if s == "REST":
                            trips[op] += counter.calls - before[0]
                        waits[op][s] += counter.seconds - before[1]
    finally:
        for reme in stores.values():
            await reme.close()
    rows = [f"\nThe facade at {n:,} memories of {TARGETS:,} users, {repeat} calls of each kind, on the embedded "
            "store (Edge) and on a Qdrant node on loopback over REST and over gRPC, taking turns call by call\n",
            "| call | round trips | server requests per call (mean ms each, REST / gRPC) | embedded p50 / p95 ms "
            "| REST p50 / p95 ms | gRPC p50 / p95 ms | REST / embedded (p50) | gRPC / embedded (p50) |",
            "|---|---|---|---|---|---|---|---|"]
    for op in FACADE_OPS:
        (e50, e95), (r50, r95), (g50, g95) = (pct(times[op][s]) for s in stores)
        per = sum(trips[op].values()) / repeat
        what = ", ".join(f"{k} {v / repeat:.3g} ({1000 * waits[op]['REST'][k] / v:.1f} / "
                         f"{1000 * waits[op]['gRPC'][k] / v:.1f})" for k, v in sorted(trips[op].items()))
        rows.append(f"| {op} | {per:.3g} | {what} | {e50:.2f} / {e95:.2f} | {r50:.2f} / {r95:.2f} "
                    f"| {g50:.2f} / {g95:.2f} | x{r50 / e50:.1f} | x{g50 / e50:.1f} |")
    return "\n".join(rows)


async def server_tables(sizes: list[int], repeat: int) -> None:
    """`bench_facade` at each size, on a node started for the run (its data in a temporary folder)."""
    from benchmark.qdrant_server import serve

    tmp = Path(tempfile.mkdtemp(prefix="reme-bench-"))
    try:
        with serve(tmp / "qdrant") as node:
            for n in sizes:
                print(await bench_facade(node.url, node.grpc_port, tmp / f"n{n}", n, repeat), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fmt(rows: list[dict[str, Any]]) -> str:
    cols = ["backend", "phase", "n", "upsert/s", "dense", "filtered", "raw filtered", "hybrid filtered", "list by target",
            "numpy dense", "numpy filtered", "recall@10", "optimize s", "reopen ms", "RSS MB"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        cells = []
        for c in cols:
            v = row.get(c)
            if v is None:
                cells.append("")
            elif isinstance(v, tuple):
                cells.append(f"{v[0]:.2f} / {v[1]:.2f}")
            elif isinstance(v, float):
                cells.append(f"{v:,.0f}" if c in ("upsert/s", "RSS MB") else f"{v:.2f}")
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--backends", default="edge,qdrant")
    parser.add_argument("--qdrant-max", type=int, default=10_000, help="largest size for qdrant local mode")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--no-optimize", action="store_true", help="exact search only: no index build")
    parser.add_argument("--write-path", action="store_true", help="only the durability and event-loop table")
    parser.add_argument("--no-write-path", action="store_true", help="skip the durability and event-loop table")
    parser.add_argument("--no-raw", action="store_true", help="the store alone: no raw shards to compare with")
    parser.add_argument("--server", action="store_true",
                        help="only the facade on the embedded store and on a Qdrant node started for the run")
    parser.add_argument("--repeat", type=int, default=100, help="calls of each kind in the server table")
    args = parser.parse_args()
    if args.server:
        await server_tables([int(s) for s in args.sizes.split(",")], args.repeat)
        return
    if not args.no_write_path:
        tmp = Path(tempfile.mkdtemp(prefix="reme-bench-"))
        try:
            print(engine_gil(tmp), flush=True)
            print(await bench_write_path(tmp), flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.write_path:
        return
    rows: list[dict[str, Any]] = []
    for n in [int(s) for s in args.sizes.split(",")]:
        vecs, texts, targets = make_data(n)
        tmp = Path(tempfile.mkdtemp(prefix="reme-bench-"))
        try:
            raws = [] if args.no_raw else [await build_raw_edge(tmp / "raw", vecs, texts, targets),
                                           await build_raw_edge(tmp / "raw-same", vecs, texts, targets, same_work=True)]
            rows += [r.row for r in raws]
            for backend in args.backends.split(","):
                if backend == "edge":
                    async def reopen() -> VectorStore:
                        return EdgeStore(tmp / "edge")
                    rows += await bench_store("edge", EdgeStore(tmp / "edge"),
                                              vecs, texts, targets, args.queries, reopen, not args.no_optimize, raws)
                elif backend == "qdrant" and n <= args.qdrant_max:
                    rows += await bench_store("qdrant (local mode)", QdrantStore(location=":memory:"), vecs, texts,
                                              targets, max(10, args.queries // 10), None)
            for raw in raws:
                await raw.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(fmt(rows), flush=True)
        print(ratios(rows, n), flush=True)
    print("\nlatencies in ms as p50 / p95; recall@10 of dense search against exact numpy search")


if __name__ == "__main__":
    asyncio.run(main())
