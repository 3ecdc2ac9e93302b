"""Pipeline overhead: what `summarize_memory` and `retrieve_memory` cost beyond the LLM.

The LLM is the scripted loopback server from the tests, answering at once, so the numbers are
ReMe's own work: prompt rendering, parsing, embedding (hash embedder by default, so the model is
not what is measured), searches and writes. For each call it reports the wall time, the time
spent waiting on LLM HTTP calls (`usage.llm_seconds`) and the difference (the framework's own
time), plus the LLM calls per `summarize_memory`. `search_memory` on the same store is measured in
the same run as the baseline the retrieval overhead is compared with.

    python -m benchmark.pipeline_bench --users 20 --sessions 5
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from openai_server import OpenAITestServer, prompt_of  # noqa: E402

from reme import ReMe  # noqa: E402

TOPICS = ["hiking", "jazz", "sourdough", "chess", "Lisbon", "Kyoto", "cycling", "pottery", "tango", "sailing"]


def conversation(user: str, session: int) -> list[dict[str, Any]]:
    a, b = TOPICS[(session * 3) % len(TOPICS)], TOPICS[(session * 3 + 1) % len(TOPICS)]
    day = f"2024-{1 + session % 12:02d}-{10 + session % 15:02d}"
    lines = [f"I got into {a} last weekend.", f"My friend Sam keeps asking me to try {b}.",
             f"Next month I'm flying to {TOPICS[(session + 5) % len(TOPICS)]}.", "Anyway, how was your day?",
             f"Honestly {a} is the best thing I did this year.", "Talk soon!"]
    return [{"role": "user" if i % 2 == 0 else "assistant", "name": user if i % 2 == 0 else None,
             "content": text, "time": f"{day}T10:{i:02d}:00Z"} for i, text in enumerate(lines)]


def extract_reply(body: dict[str, Any]) -> dict[str, Any]:
    prompt = prompt_of(body)
    user = re.search(r"long-term memory about (\S+?)[.,]", prompt).group(1)  # type: ignore[union-attr]
    said = re.findall(r"^\[(\d+)\] \[[^\]]+\] [^:]+: (.*)$", prompt, re.MULTILINE)
    if not said or "nothing" in said[0][1]:
        return {"memories": []}
    return {"memories": [{"content": f"{user} said: {text}", "kind": "fact", "time": None, "sources": [int(i)],
                          "importance": 0.5} for i, text in said[:5:2]]}


def reconcile_reply(body: dict[str, Any]) -> dict[str, Any]:
    prompt = prompt_of(body)
    n = len(re.findall(r"^\d+\. \[", prompt.split("Candidates:")[1], re.MULTILINE))
    out = [{"candidate": i, "action": "ADD"} for i in range(n)]
    out[0] = {"candidate": 0, "action": "UPDATE", "id": 0, "text": "merged " + str(time.perf_counter())}
    return {"decisions": out}


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def row(name: str, walls: list[float], waits: list[float]) -> str:
    own = [w - x for w, x in zip(walls, waits)]
    return (f"| {name} | {len(walls)} | {1000 * statistics.median(walls):.1f} | {1000 * statistics.median(waits):.1f} "
            f"| {1000 * statistics.median(own):.1f} | {1000 * pct(own, 0.95):.1f} |")


async def run(args: argparse.Namespace) -> None:
    with OpenAITestServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.script("Read the conversation below", extract_reply)
        server.script("long-term memory consistent", reconcile_reply)
        server.script("You prepare a search", {"queries": ["hobbies", "travel plans"], "start": None, "end": None})
        embedding: dict[str, Any] = {"backend": args.embedding, "dimensions": 384}
        if args.embedding_model:
            embedding["model"] = args.embedding_model
        async with ReMe(working_dir=tmp, embedding=embedding,
                        llm={"base_url": server.base_url, "api_key": "k", "model": "bench"}) as reme:
            results: dict[str, tuple[list[float], list[float], list[int]]] = {}

            def record(key: str, wall: float, usage: Any) -> None:
                walls, waits, calls = results.setdefault(key, ([], [], []))
                walls.append(wall)
                waits.append(usage.llm_seconds)
                calls.append(usage.calls)

            for session in range(args.sessions):
                for u in range(args.users):
                    user = f"user{u}"
                    start = time.perf_counter()
                    res = await reme.summarize_memory(conversation(user, session), user_name=user)
                    record("summarize (first)" if session == 0 else "summarize (with stored)",
                           time.perf_counter() - start, res.usage)
            for u in range(args.users):
                start = time.perf_counter()
                res = await reme.summarize_memory([{"role": "user", "content": "nothing much, bye"}],
                                                  user_name=f"user{u}")
                record("summarize (nothing to keep)", time.perf_counter() - start, res.usage)
            search_walls: list[float] = []
            for u in range(args.users):
                for rewrite in (False, True):
                    start = time.perf_counter()
                    ctx = await reme.retrieve_memory("What are their hobbies and travel plans?",
                                                     user_name=f"user{u}", rewrite=rewrite, top_k=10)
                    record(f"retrieve ({'rewrite' if rewrite else 'no LLM'})", time.perf_counter() - start, ctx.usage)
                start = time.perf_counter()
                await reme.search_memory("What are their hobbies and travel plans?", user_name=f"user{u}", top_k=10)
                search_walls.append(time.perf_counter() - start)
            stored = await reme.count_memory(memory_type="personal")

    print(f"{args.users} users x {args.sessions} sessions, {stored} personal memories stored, "
          f"embedder: {args.embedding}; times in ms")
    print("| call | n | wall p50 | LLM wait p50 | own p50 | own p95 |")
    print("|---|---|---|---|---|---|")
    for key, (walls, waits, _) in results.items():
        print(row(key, walls, waits))
    print(row("search_memory (baseline)", search_walls, [0.0] * len(search_walls)))
    print()
    for key, (_, _, calls) in results.items():
        print(f"LLM calls per call, {key}: mean {statistics.mean(calls):.2f}, max {max(calls)}")
    base = statistics.median(search_walls)
    own = statistics.median(w - x for w, x in zip(*results["retrieve (no LLM)"][:2]))
    print(f"retrieve (no LLM) own time / search_memory: {own / base:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--embedding", choices=["hash", "local"], default="hash")
    parser.add_argument("--embedding-model", default=None, help="a sentence-transformers name or path (local)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
