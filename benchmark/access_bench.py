"""What counting reads costs: `retrieve_memory` and `search_memory` with `retrieval.track_reads`
off, on (counts written in one batch every `read_flush` distinct memories) and on with
`read_flush=1` (close to a write per read, the design it replaces), plus the cost of a flush per
memory written. Hash embeddings, so the model is not what is measured.

    python -m benchmark.access_bench --memories 2000 --queries 300
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from reme import ReMe

WORDS = ["tea", "coffee", "hiking", "jazz", "Lisbon", "Kyoto", "chess", "pottery", "sailing", "tango", "bread",
         "cycling", "opera", "garden", "piano", "running", "camera", "novel", "beach", "museum"]


def text(i: int) -> str:
    return f"Alice memory {i}: {WORDS[i % 20]} and {WORDS[(i * 7) % 20]} on day {i % 97}"


async def measure(folder: Path, memories: int, queries: int, retrieval: dict[str, Any]) -> dict[str, float]:
    async with ReMe(working_dir=folder, embedding={"backend": "hash", "dimensions": 256}, llm={},
                    retrieval=retrieval) as reme:
        if await reme.count_memory(user_name="alice") == 0:
            for start in range(0, memories, 500):
                await reme.add_memories([reme_node(i) for i in range(start, min(start + 500, memories))])
        for q in range(20):  # warm up: the first searches of a freshly opened store are slower
            await reme.search_memory(WORDS[q % 20], user_name="alice", top_k=10)
        await reme.flush_reads()
        times: list[float] = []
        for q in range(queries):
            started = time.perf_counter()
            await reme.retrieve_memory(f"{WORDS[q % 20]} {WORDS[(q * 3) % 20]}", user_name="alice", rewrite=False,
                                       top_k=10)
            times.append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        pending = len(getattr(reme, "_reads"))
        flushed = await reme.flush_reads()
        flush_ms = 1000 * (time.perf_counter() - started)
        return {"p50_ms": statistics.median(times), "mean_ms": statistics.fmean(times),
                "p95_ms": sorted(times)[int(0.95 * (len(times) - 1))], "final_flush_ms": flush_ms,
                "final_flush_memories": float(flushed), "pending_before_flush": float(pending)}


def reme_node(i: int) -> Any:
    from reme import MemoryNode, MemoryType

    return MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="alice", content=text(i))


async def main(args: argparse.Namespace) -> None:
    base = {"time_weight": 0.0}
    settings = [("track_reads off", {**base}),
                (f"track_reads on, read_flush {args.read_flush}", {**base, "track_reads": True,
                                                                   "read_flush": args.read_flush}),
                ("track_reads on, read_flush 1 (a write per read)", {**base, "track_reads": True, "read_flush": 1})]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{args.memories} memories of one user, {args.queries} retrievals of top 10 each "
              "(hash embeddings, edge store)\n")
        print("| setting | p50 ms | mean ms | p95 ms | last flush ms (memories) |")
        print("|---|---|---|---|---|")
        await measure(Path(tmp) / "wd", args.memories, 20, {})  # the store is written once, before timing
        for name, retrieval in settings * args.rounds:
            r = await measure(Path(tmp) / "wd", args.memories, args.queries, retrieval)
            print(f"| {name} | {r['p50_ms']:.2f} | {r['mean_ms']:.2f} | {r['p95_ms']:.2f} | "
                  f"{r['final_flush_ms']:.1f} ({int(r['final_flush_memories'])}) |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--read-flush", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2, help="each setting this many times, in turn (noise shows)")
    asyncio.run(main(parser.parse_args()))
