"""The HTTP service under load: concurrent clients against `reme serve` on loopback, the same mix
against the in-process facade beside it, then a SIGKILL of the server mid-load and a restart.

Each client owns one user (so its updates and deletes never race another client's) and runs a
mix: 70% reads (retrieve_memory and search_memory, half each), 20% add_memory, 10% writes to its
own memories (update_memory and delete_memory, half each). Every acknowledged write is kept:
afterwards each id is read back (`get_memory`) and must hold the content last acknowledged (or a
write that was in flight when the server was killed), and an acknowledged delete must be gone.

    python -m benchmark.service_bench --clients 50 --duration 60
    python -m benchmark.service_bench --clients 4 --duration 2 --kill-after 1   # a smoke run

`--workers 1,2,4` measures scaling out instead (`reme serve --workers N`): a mix of retrieve,
search, list, add and update (`SCALE_MIX`) for each number of workers on one Qdrant node and on a
3-node cluster (3 shards, replication factor 2), beside one worker on the embedded store, in one
run; the benchmark starts the nodes itself (benchmark/qdrant_server.py). Every acknowledged write
is read back by id afterwards.

    python -m benchmark.service_bench --workers 1,2,4 --clients 16 --duration 15
    python -m benchmark.service_bench --workers 1,2,4,8 --clients 64 --client-procs 4   # many cores

One Python process drives about one core's worth of requests: on a machine with cores to spare,
`--client-procs` spreads the clients over several (the report's "client CPU" says whether the
clients were the limit).

The embedder is the hashing one by default, so the numbers are the service's, not a model's.
Retrieve runs without an LLM (`rewrite=False`), so none is needed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx

from benchmark import qdrant_server
from reme import MemoryNode, ReMe
from reme.client import ReMeClient
from reme.errors import MemoryNotFoundError, ReMeError, ServiceError

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("tea coffee hiking jazz Lisbon Kyoto chess pottery sailing tango bread cycling piano garden novel "
         "museum ramen violin marathon yoga").split()


def sentence(rng: random.Random, user: str) -> str:
    return f"{user} likes {' and '.join(rng.sample(WORDS, 3))} ({rng.randrange(10**9)})"


@dataclass
class Ledger:
    """What the server acknowledged: the content each id must hold (None: deleted), and writes
    that were in flight (their outcome unknown) per id."""

    expected: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> (user, content)
    pending: dict[str, set[str | None]] = field(default_factory=dict)
    last_op: dict[str, str] = field(default_factory=dict)


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    ops: int = 0

    def record(self, op: str, seconds: float) -> None:
        self.latencies.setdefault(op, []).append(seconds)
        self.ops += 1

    def error(self, op: str, exc: BaseException) -> None:
        key = f"{op}: {type(exc).__name__}"
        self.errors[key] = self.errors.get(key, 0) + 1


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    q = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {"p50": q[49] * 1000, "p95": q[94] * 1000, "p99": q[98] * 1000}


def classic_op(rng: random.Random) -> str:
    """The fault run's load: retrieve 35%, search 35%, add 20%, update 5%, delete 5%."""
    r = rng.random()
    return ("retrieve" if r < 0.35 else "search" if r < 0.70 else "add" if r < 0.90
            else "update" if r < 0.95 else "delete")


async def worker(api: Any, user: str, seed: int, until: float, stats: Stats, ledger: Ledger,
                 stop_on_service_error: bool = False, pick: Callable[[random.Random], str] = classic_op) -> None:
    """One client on its own user: operations drawn by `pick` until `until`, each acknowledged
    write entered in `ledger`."""
    rng = random.Random(seed)
    mine = [i for i, (u, c) in ledger.expected.items() if u == user and c is not None]
    while time.perf_counter() < until:
        op = pick(rng)
        if op in ("update", "delete") and not mine:
            op = "add"
        target: str | None = None
        content: str | None = None
        start = time.perf_counter()
        try:
            if op == "retrieve":
                await api.retrieve_memory(rng.choice(WORDS), user_name=user, top_k=5, rewrite=False)
            elif op == "search":
                await api.search_memory(rng.choice(WORDS), user_name=user, top_k=5)
            elif op == "list":
                await api.list_memory(user_name=user, limit=20)
            elif op == "add":
                content = sentence(rng, user)
                node = MemoryNode(memory_type="personal", memory_target=user, content=content)
                ledger.pending.setdefault(node.memory_id, set()).add(content)
                (stored,) = await api.add_memories([node])
                target = stored.memory_id  # an equal text already stored answers with its own id
                mine.append(target)
            elif op == "update":
                target, content = rng.choice(mine), sentence(rng, user)
                ledger.pending.setdefault(target, set()).add(content)
                await api.update_memory(target, content=content, user_name=user)
            else:
                target = mine.pop(rng.randrange(len(mine)))
                ledger.pending.setdefault(target, set()).add(None)
                await api.delete_memory(target, user_name=user)
        except ServiceError as exc:
            if stop_on_service_error:  # the server is gone: this write's outcome stays unknown
                return
            stats.error(op, exc)
            continue
        except ReMeError as exc:
            stats.error(op, exc)
            continue
        stats.record(op, time.perf_counter() - start)
        if target is not None:
            ledger.expected[target] = (user, content)
            ledger.pending.get(target, set()).discard(content)
            ledger.last_op[target] = op


async def seed(api: Any, users: list[str], per_user: int, ledger: Ledger) -> None:
    rng = random.Random(0)
    for user in users:
        nodes = [MemoryNode(memory_type="personal", memory_target=user, content=sentence(rng, user))
                 for _ in range(per_user)]
        for node in await api.add_memories(nodes):
            ledger.expected[node.memory_id] = (user, node.content)


async def run_mix(apis: list[Any], users: list[str], duration: float, ledger: Ledger, *, phase: int = 0,
                  stop_on_service_error: bool = False, kill: Any = None) -> tuple[Stats, float]:
    stats = Stats()
    start = time.perf_counter()
    until = start + duration
    tasks = [asyncio.create_task(worker(api, user, phase * 100_000 + i, until, stats, ledger, stop_on_service_error))
             for i, (api, user) in enumerate(zip(apis, users))]
    if kill is not None:
        await kill()
    await asyncio.gather(*tasks)
    return stats, time.perf_counter() - start


async def verify(api: Any, ledger: Ledger) -> dict[str, Any]:
    """Read every acknowledged write back by id."""
    out: dict[str, Any] = {"checked": 0, "missing": 0, "wrong": 0, "resurrected": 0, "examples": []}
    for memory_id, (user, content) in ledger.expected.items():
        out["checked"] += 1
        allowed = {content} | ledger.pending.get(memory_id, set())
        try:
            node = await api.get_memory(memory_id, user_name=user)
        except MemoryNotFoundError:
            if None not in allowed:
                out["missing"] += 1
                out["examples"].append(f"{memory_id} ({ledger.last_op.get(memory_id, 'seed')}) missing")
            continue
        if node.content not in allowed:
            out["wrong" if content is not None else "resurrected"] += 1
            out["examples"].append(f"{memory_id} ({ledger.last_op.get(memory_id, 'seed')}) holds other content")
    out["examples"] = out["examples"][:5]
    return out


def summary(name: str, stats: Stats, seconds: float) -> dict[str, Any]:
    every = [x for v in stats.latencies.values() for x in v]
    return {"name": name, "ops": stats.ops, "seconds": round(seconds, 2), "ops_per_s": round(stats.ops / seconds, 1),
            **{k: round(v, 2) for k, v in percentiles(every).items()},
            "per_op": {op: {"n": len(v), **{k: round(x, 2) for k, x in percentiles(v).items()}}
                       for op, v in sorted(stats.latencies.items())},
            "errors": stats.errors}


class Server:
    def __init__(self, working_dir: Path, embedding: str, *, workers: int = 1,
                 env: dict[str, str] | None = None) -> None:
        self.full_env = {**{k: v for k, v in os.environ.items() if not k.startswith("REME_")},
                         "REME_EMBEDDING__BACKEND": embedding, "HF_HUB_OFFLINE": "1",
                         "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                         **(env or {})}
        self.working_dir, self.workers = working_dir, workers
        working_dir.mkdir(parents=True, exist_ok=True)
        self._launch()

    def _launch(self) -> None:
        self.port = qdrant_server.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.working_dir.parent / f"serve-{self.port}.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "reme.cli", "serve", "-w", str(self.working_dir), "--port",
                                      str(self.port), "--workers", str(self.workers)],
                                     cwd=ROOT, env=self.full_env, stdout=self.log, stderr=subprocess.STDOUT)

    def lines(self) -> list[dict[str, Any]]:
        """The JSON lines logged so far."""
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    async def workers_ready(self, n: int, timeout: float = 120) -> None:
        """Until `n` worker processes have opened their store (each logs it as it starts)."""
        deadline = time.monotonic() + timeout
        while sum(1 for line in self.lines() if line.get("event") == "worker") < n:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{n} workers did not start: {self.log_path.read_text()[-2000:]}")
            await asyncio.sleep(0.1)

    async def ready(self, timeout: float = 60) -> "Server":
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient() as http:
            moves = 0
            while time.monotonic() < deadline:
                # Its own socket on the port: another process may have taken it since free_port.
                whose = qdrant_server.listener(self.proc.pid, self.port)
                if self.proc.poll() is not None or whose == "other":
                    if moves < 5 and (whose == "other" or "address already in use" in
                                      self.log_path.read_text(errors="replace").lower()):
                        moves += 1
                        self.stop()
                        self._launch()
                        continue
                    raise RuntimeError(f"reme serve exited with {self.proc.returncode}")
                try:
                    if whose in ("ours", "unknown") and (await http.get(f"{self.url}/v1/health",
                                                                        timeout=1)).status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        raise RuntimeError("reme serve did not start")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(30)
        self.log.close()
        return code


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    users = [f"user-{i}" for i in range(args.clients)]
    results: dict[str, Any] = {"clients": args.clients, "duration_s": args.duration, "embedding": args.embedding}
    with tempfile.TemporaryDirectory(prefix="reme-service-bench-") as tmp:
        # 1. the in-process facade: the baseline
        ledger = Ledger()
        async with ReMe(working_dir=Path(tmp) / "facade", embedding={"backend": args.embedding}) as reme:
            await seed(reme, users, args.seed, ledger)
            stats, seconds = await run_mix([reme] * len(users), users, args.duration, ledger)
            results["facade"] = summary("facade", stats, seconds)
            results["facade"]["verify"] = await verify(reme, ledger)

        # 2. the service, the same mix
        wd = Path(tmp) / "service"
        server = await Server(wd, args.embedding).ready()
        ledger = Ledger()
        clients = [ReMeClient(server.url, retries=3, backoff=0.05) for _ in users]
        try:
            await seed(clients[0], users, args.seed, ledger)
            stats, seconds = await run_mix(clients, users, args.duration, ledger)
            results["service"] = summary("service", stats, seconds)
            results["service"]["verify"] = await verify(clients[0], ledger)
            facade, service = results["facade"], results["service"]
            results["overhead"] = {"throughput_ratio": round(facade["ops_per_s"] / max(service["ops_per_s"], 1e-9), 2),
                                   "p50_ratio": round(service["p50"] / max(facade["p50"], 1e-9), 2)}

            # 3. SIGKILL mid-load, restart on the same directory, read every acknowledged write back
            async def kill() -> None:
                await asyncio.sleep(args.kill_after)
                server.proc.send_signal(signal.SIGKILL)

            stats, seconds = await run_mix(clients, users, args.kill_after + 5, ledger, phase=1,
                                           stop_on_service_error=True, kill=kill)
            server.stop()
        finally:
            for c in clients:
                await c.close()
        restarted = await Server(wd, args.embedding).ready()
        try:
            async with ReMeClient(restarted.url) as client:
                results["after_kill"] = {"ops_acknowledged_in_kill_phase": stats.ops, **await verify(client, ledger)}
        finally:
            results["after_kill"]["restart_exit"] = restarted.stop()
    return results


SCALE_MIX = (("retrieve", 0.25), ("search", 0.25), ("list", 0.15), ("add", 0.20), ("update", 0.15))
"""The scale-out load: each client, on its own user, picks operations in these shares."""


def scale_op(rng: random.Random) -> str:
    return rng.choices([op for op, _ in SCALE_MIX], [weight for _, weight in SCALE_MIX])[0]


_START: Any = None
"""In a load process: the barrier every load process waits at before the load starts."""


def _init_load_process(start: Any) -> None:
    global _START
    _START = start


async def _load(url: str, users: list[str], seeds: list[int], expected: dict[str, tuple[str, str | None]],
                duration: float) -> tuple[Stats, Ledger, float, float]:
    """One load process's share of the clients: each opens its keep-alive connection in turn (as
    clients arriving over time do: a worker that wakes takes every connection waiting, so a burst
    lands on one), then all run the scale-out mix for `duration` (once every load process is ready).
    Returns the stats, the ledger of what was acknowledged, the seconds run and the CPU seconds
    this process spent (to tell whether the load generator, not the service, was the limit)."""
    ledger = Ledger(expected=dict(expected))
    clients = [ReMeClient(url, retries=3, backoff=0.05) for _ in users]
    try:
        for client in clients:
            await client.health()
            await asyncio.sleep(0.05)
        if _START is not None:
            await asyncio.to_thread(_START.wait, 120)
        stats, cpu, begin = Stats(), time.process_time(), time.perf_counter()
        until = begin + duration
        await asyncio.gather(*(worker(c, u, s, until, stats, ledger, pick=scale_op)
                               for c, u, s in zip(clients, users, seeds)))
        return stats, ledger, time.perf_counter() - begin, time.process_time() - cpu
    finally:
        for client in clients:
            await client.close()


def _load_process(*args: Any) -> tuple[Stats, Ledger, float, float]:
    return asyncio.run(_load(*args))


async def scale_one(args: argparse.Namespace, folder: Path, store: str, workers: int,
                    env: dict[str, str]) -> dict[str, Any]:
    """One row: `reme serve --workers N` on `store`, the mixed load from `args.client_procs`
    processes, every acknowledged write read back."""
    users = [f"user-{i}" for i in range(args.clients)]
    server = Server(folder / f"{store}-{workers}" / "wd", args.embedding, workers=workers, env=env)
    try:
        await server.ready()
        if workers > 1:
            await server.workers_ready(workers)
        ledger = Ledger()
        async with ReMeClient(server.url, retries=3, backoff=0.05) as client:
            await seed(client, users, args.seed, ledger)
        procs = max(1, min(args.client_procs, len(users)))
        shares = [(server.url, users[p::procs], list(range(len(users)))[p::procs],
                   {i: e for i, e in ledger.expected.items() if e[0] in users[p::procs]}) for p in range(procs)]
        if procs == 1:
            results = [await _load(*shares[0], args.duration)]
        else:  # spawned, not forked: this process runs an event loop
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(procs, mp_context=context, initializer=_init_load_process,
                                     initargs=(context.Barrier(procs),)) as pool:
                loop = asyncio.get_running_loop()
                results = await asyncio.gather(*(loop.run_in_executor(pool, _load_process, *share, args.duration)
                                                 for share in shares))
        stats = Stats()
        for part, part_ledger, _, _ in results:
            for op, values in part.latencies.items():
                stats.latencies.setdefault(op, []).extend(values)
            for key, n in part.errors.items():
                stats.errors[key] = stats.errors.get(key, 0) + n
            stats.ops += part.ops
            for name in ("expected", "pending", "last_op"):
                getattr(ledger, name).update(getattr(part_ledger, name))
        seconds = max(r[2] for r in results)
        row = summary(f"{store} x{workers}", stats, seconds)
        for kind, ops in (("reads", ("retrieve", "search", "list")), ("writes", ("add", "update"))):
            row[kind] = {k: round(v, 2) for k, v in percentiles(
                [x for op in ops for x in stats.latencies.get(op, [])]).items()}
        # The busiest load process's CPU over the run: near 1.0, the clients were the limit.
        row["client_procs"], row["client_cpu"] = procs, round(max(r[3] / r[2] for r in results), 2)
        async with ReMeClient(server.url, retries=3, backoff=0.05) as client:
            row["verify"] = await verify(client, ledger)
        answered = {line.get("worker") for line in server.lines() if "path" in line}
        row.update(store=store, workers=workers, workers_answering=len(answered - {None}) or 1)
        return row
    finally:
        server.stop()


async def scale_async(args: argparse.Namespace) -> dict[str, Any]:
    counts = [int(n) for n in args.workers.split(",")]
    targets = args.targets.split(",")
    results: dict[str, Any] = {"clients": args.clients, "duration_s": args.duration, "seed": args.seed,
                               "embedding": args.embedding, "cpus": os.cpu_count(), "client_procs": args.client_procs,
                               "rows": []}
    rows = results["rows"]
    with tempfile.TemporaryDirectory(prefix="reme-scale-bench-") as tmp:
        folder = Path(tmp)
        if "embedded" in targets:
            rows.append(await scale_one(args, folder, "embedded", 1, {}))
        if "node" in targets:
            with qdrant_server.serve(folder / "node") as node:
                for n in counts:
                    rows.append(await scale_one(args, folder, "node", n, {
                        "REME_VECTOR_STORE__BACKEND": "qdrant", "REME_VECTOR_STORE__URL": node.url,
                        "REME_VECTOR_STORE__COLLECTION": f"bench_{n}"}))
        if "cluster" in targets:
            with qdrant_server.cluster(3, folder / "cluster") as nodes:
                for n in counts:
                    rows.append(await scale_one(args, folder, "cluster", n, {
                        "REME_VECTOR_STORE__BACKEND": "qdrant", "REME_VECTOR_STORE__URL": nodes[0].url,
                        "REME_VECTOR_STORE__COLLECTION": f"bench_{n}", "REME_VECTOR_STORE__SHARD_NUMBER": "3",
                        "REME_VECTOR_STORE__REPLICATION_FACTOR": "2",
                        "REME_VECTOR_STORE__WRITE_CONSISTENCY_FACTOR": "1"}))
    return results


def scale_report(r: dict[str, Any]) -> str:
    rows = ["| store | workers (answering) | ops/s | vs 1 worker | p50 ms | p99 ms | reads p50 | writes p50 | errors "
            "| acknowledged writes read back | client CPU |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    first = {row["store"]: row["ops_per_s"] for row in r["rows"] if row["workers"] == 1}
    names = {"embedded": "embedded (Edge)", "node": "Qdrant node", "cluster": "3-node cluster"}
    for row in r["rows"]:
        v = row["verify"]
        ratio = f"{row['ops_per_s'] / first[row['store']]:.2f}x" if row["store"] in first and row["store"] != "embedded" else ""
        rows.append(f"| {names[row['store']]} | {row['workers']} ({row['workers_answering']}) | {row['ops_per_s']} | "
                    f"{ratio} | {row['p50']:.1f} | {row['p99']:.1f} | {row['reads']['p50']:.1f} | "
                    f"{row['writes']['p50']:.1f} | {sum(row['errors'].values())} | "
                    f"{v['checked'] - v['missing'] - v['wrong'] - v['resurrected']} of {v['checked']} | "
                    f"{row['client_cpu']:.2f} |")
    rows.append(f"\n{r['clients']} clients, {r['duration_s']} s per row, {r['seed']} memories per client's user "
                f"seeded; mix {', '.join(f'{op} {int(w * 100)}%' for op, w in SCALE_MIX)}; {r['cpus']} CPUs; "
                f"the clients in {r['client_procs']} process(es) (client CPU: the busiest one's CPU share, "
                "near 1.00 the clients were the limit).")
    if "embedded" in first:
        best = {store: max(row["ops_per_s"] for row in r["rows"] if row["store"] == store)
                for store in ("node", "cluster") if any(row["store"] == store for row in r["rows"])}
        rows.append("Best throughput against one worker on the embedded store: " + ", ".join(
            f"{names[store]} {ops / first['embedded']:.2f}x" for store, ops in best.items()) + ".")
    return "\n".join(rows)


def report(r: dict[str, Any]) -> str:
    rows = ["| | ops/s | p50 ms | p95 ms | p99 ms | errors | acknowledged writes checked (missing/wrong) |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for key in ("facade", "service"):
        s = r[key]
        v = s["verify"]
        rows.append(f"| {key} | {s['ops_per_s']} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} | "
                    f"{sum(s['errors'].values())} | {v['checked']} ({v['missing']}/{v['wrong'] + v['resurrected']}) |")
    k = r["after_kill"]
    rows.append(f"\n{r['clients']} clients, {r['duration_s']} s each; service/facade: throughput "
                f"{r['overhead']['throughput_ratio']}x lower, p50 {r['overhead']['p50_ratio']}x higher.")
    rows.append(f"SIGKILL mid-load then restart: {k['checked']} acknowledged writes checked by id, "
                f"{k['missing']} missing, {k['wrong']} wrong, {k['resurrected']} deletes undone.")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load per phase")
    p.add_argument("--seed", type=int, default=20, help="memories stored per user before the load")
    p.add_argument("--kill-after", type=float, default=5.0, help="seconds of load before the SIGKILL")
    p.add_argument("--embedding", default="hash", choices=["hash", "local", "openai"])
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--workers", help="scale-out mode: numbers of workers to measure, e.g. 1,2,4")
    p.add_argument("--targets", default="embedded,node,cluster",
                   help="scale-out mode: stores to measure (embedded runs one worker)")
    p.add_argument("--client-procs", type=int, default=1,
                   help="scale-out mode: processes the clients are spread over (one Python process "
                        "drives about one core's worth of requests)")
    args = p.parse_args(argv)
    if args.workers:
        scaled = asyncio.run(scale_async(args))
        print(scale_report(scaled))
        if args.json:
            Path(args.json).write_text(json.dumps(scaled, indent=2))
        return 0 if all(not row["errors"] and row["verify"]["missing"] + row["verify"]["wrong"] == 0
                        for row in scaled["rows"]) else 1
    results = asyncio.run(main_async(args))
    print(report(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    ok = all(results[k]["verify"]["missing"] + results[k]["verify"]["wrong"] + results[k]["verify"]["resurrected"] == 0
             for k in ("facade", "service"))
    k = results["after_kill"]
    ok = ok and k["missing"] + k["wrong"] + k["resurrected"] == 0 and not results["service"]["errors"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
