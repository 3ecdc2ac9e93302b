"""Task-memory retrieval without an LLM: import a pool of the original ReMe (default: the
AppWorld pool, 207 lessons distilled from 120 tasks), query with each distinct
`metadata.task_query`, and count a hit when a lesson distilled from that same task comes back
in the top 1 / top 5. Dense, keyword, hybrid (the store's RRF) and the default retriever
(`retrieve_memory(task_name=...)`: dense and keyword fused by score) run in the same process
over the same stored lessons and embedder.

    python -m benchmark.task_memory_retrieval --data ../shared/data/task_memory/appworld_qwen3_8b.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmark.embedding import embedding_config
from reme import ReMe

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "task_memory" / \
    "appworld_qwen3_8b.jsonl"


async def run(data: Path, embedding: dict[str, Any], task: str = "pool") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with ReMe(working_dir=tmp, embedding=embedding, llm={}) as reme:
            stored = await reme.import_memory(data, format="reme-jsonl", task_name=task)
            nodes = [n async for n in _all(reme, task)]
            queries = sorted({n.metadata["task_query"] for n in nodes if n.metadata.get("task_query")})
            hits: dict[str, dict[str, int]] = {m: {"hit@1": 0, "hit@5": 0} for m in
                                               ("dense", "keyword", "hybrid", "default")}
            for query in queries:
                for mode in ("dense", "keyword", "hybrid"):
                    results = await reme.search_memory(query, task_name=task, top_k=5, mode=mode)
                    _score(hits[mode], [r.node.metadata.get("task_query") for r in results], query)
                ctx = await reme.retrieve_memory(query, task_name=task, top_k=5)
                _score(hits["default"], [m.node.metadata.get("task_query") for m in ctx.memories], query)
    n = len(queries)
    return {"data": str(data), "memories": stored, "queries": n, "embedding": embedding,
            "retrievers": {m: {k: round(100 * v / n, 1) for k, v in h.items()} for m, h in hits.items()}}


async def _all(reme: ReMe, task: str) -> Any:
    cursor = None
    while True:
        page = await reme.list_memory(task_name=task, memory_type="procedural", limit=500, cursor=cursor)
        for node in page:
            yield node
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _score(counts: dict[str, int], sources: list[Any], query: str) -> None:
    counts["hit@1"] += int(sources[:1] == [query])
    counts["hit@5"] += int(query in sources[:5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a pool in the original ReMe's JSONL format")
    parser.add_argument("--embedding", choices=["local", "openai", "hash"], default="local")
    parser.add_argument("--embedding-model", default=None)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if not args.data.is_file():
        sys.exit(f"no pool at {args.data}; pass --data PATH")
    report = asyncio.run(run(args.data, embedding_config(args.embedding, args.embedding_model)))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['memories']} memories, {report['queries']} distinct task queries, {args.embedding} embedder")
    print("| retriever | hit@1 | hit@5 |\n|---|---|---|")
    for name, scores in report["retrievers"].items():
        print(f"| {name} | {scores['hit@1']} | {scores['hit@5']} |")


if __name__ == "__main__":
    main()
