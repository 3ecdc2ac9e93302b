"""`python -m benchmark.locomo`: the command line, resumable runs, ingestion of turns and the
retrieval mode (no LLM). The full mode (an LLM answers and a judge grades) is in `full.py`."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from benchmark.locomo.data import CATEGORIES, Conversation, DataError, load, resolve_data
from benchmark.locomo.metrics import KS, aggregate, evidence_scores, percentile
from benchmark.embedding import embedding_config as shared_embedding_config
from reme import MemoryNode, MemoryType, ReMe, ReMeError
from reme.schema import content_hash

RETRIEVAL_KEYS = [*(f"recall@{k}" for k in KS), "mrr"]
DRAGON = {"recall@5": 58.8, "recall@10": 67.5}
"""The LoCoMo paper's DRAGON retriever over dialog turns (Table 3), the anchor to beat."""


def progress(items: Iterable[Any], total: int, desc: str) -> Iterator[Any]:
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with the local extra
        yield from items
        return
    yield from tqdm(items, total=total, desc=desc, unit="q" if "question" in desc else "it", file=sys.stderr,
                    disable=None)


class Checkpoint:
    """Finished work of a run, one JSON line per unit in `<output>.partial.jsonl`, so `--resume`
    skips it. The first line records what the results depend on; resuming with other settings
    is refused."""

    def __init__(self, path: Path, settings: dict[str, Any], resume: bool) -> None:
        self.path = path
        self.done: dict[str, Any] = {}
        if resume and path.exists():
            lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            if lines and lines[0].get("settings") != settings:
                raise SystemExit(f"--resume: {path} was started with other settings:\n  {lines[0].get('settings')}\n"
                                 f"now:\n  {settings}\nrun without --resume to start over")
            self.done = {row["key"]: row["value"] for row in lines[1:]}
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"settings": settings}) + "\n", encoding="utf-8")

    def add(self, key: str, value: Any) -> None:
        self.done[key] = value
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "value": value}) + "\n")


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def embedding_config(args: argparse.Namespace) -> dict[str, Any]:
    return shared_embedding_config(args.embedding, args.embedding_model)


def turn_nodes(conv: Conversation) -> list[MemoryNode]:
    """One personal memory per turn in the conversation's own scope; ids are derived from the
    dia_id so that runs are reproducible."""
    return [MemoryNode(memory_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{conv.sample_id}/{t.dia_id}")),
                       memory_type=MemoryType.PERSONAL, memory_target=conv.sample_id, content=t.content,
                       message_time=t.time, author=t.speaker, metadata={"dia_id": t.dia_id})
            for t in conv.turns]


def dia_ids_by_hash(conv: Conversation) -> dict[str, list[str]]:
    """Turns with the same text ("Thanks!") are one memory after deduplication; a retrieved
    memory stands for every turn that has its text."""
    out: dict[str, list[str]] = {}
    for t in conv.turns:
        out.setdefault(content_hash(MemoryType.PERSONAL, conv.sample_id, t.content), []).append(t.dia_id)
    return out


async def ingest_turns(reme: ReMe, convs: Sequence[Conversation], checkpoint: Checkpoint) -> None:
    for conv in progress(convs, len(convs), "ingest conversations"):
        key = f"ingest/{conv.sample_id}"
        if key in checkpoint.done:
            continue
        await reme.delete_all(user_name=conv.sample_id)  # a half-ingested conversation from an interrupted run
        await reme.add_memories(turn_nodes(conv))
        checkpoint.add(key, len(conv.turns))


def start_run(args: argparse.Namespace, convs: list[Conversation], data: Path,
          **settings: Any) -> tuple[dict[str, Any], Checkpoint, Path]:
    """The settings a run's results depend on, its checkpoint, and its working directory (wiped
    unless resuming)."""
    settings = {**settings, "data": file_digest(data), "embedding": embedding_config(args),
                "conversations": [c.sample_id for c in convs], "questions": args.questions}
    output = Path(args.output)
    checkpoint = Checkpoint(output.with_suffix(".partial.jsonl"), settings, args.resume)
    working_dir = Path(args.working_dir or output.with_suffix(".store"))
    if not args.resume and working_dir.exists():
        shutil.rmtree(working_dir)
    return settings, checkpoint, working_dir


async def retrieval_mode(args: argparse.Namespace, convs: list[Conversation], data: Path) -> dict[str, Any]:
    settings, checkpoint, working_dir = start_run(args, convs, data, mode="retrieval")
    retrievers = ("default", "keyword", "dense")
    rows: dict[str, list[dict[str, Any]]] = {r: [] for r in retrievers}
    latency: dict[str, list[float]] = {r: [] for r in retrievers}
    async with ReMe(working_dir=working_dir, embedding=embedding_config(args), llm={}) as reme:
        await ingest_turns(reme, convs, checkpoint)
        work = [(c, q) for c in convs for q in c.questions[:args.questions] if q.evidence]
        by_hash = {c.sample_id: dia_ids_by_hash(c) for c in convs}
        for conv, q in progress(work, len(work), "questions"):
            key = f"q/{conv.sample_id}/{q.index}"
            if key not in checkpoint.done:
                checkpoint.add(key, await score_question(reme, conv, q, by_hash[conv.sample_id]))
            for name, result in checkpoint.done[key].items():
                rows[name].append({"category": q.category, **result["scores"]})
                latency[name].append(result["ms"])
    skipped = sum(1 for c in convs for q in c.questions[:args.questions] if not q.evidence)
    report: dict[str, Any] = {"mode": "retrieval", "data": str(data), "settings": settings,
                              "questions_without_evidence": skipped, "anchor_dragon": DRAGON, "retrievers": {}}
    for name in retrievers:
        report["retrievers"][name] = aggregate(rows[name], RETRIEVAL_KEYS)
    # Timings vary run to run; they stay out of "retrievers", which is deterministic.
    report["latency_ms"] = {name: {"p50": percentile(latency[name], 0.5), "p95": percentile(latency[name], 0.95)}
                            for name in retrievers}
    return report


async def score_question(reme: ReMe, conv: Conversation, q: Any, by_hash: dict[str, list[str]]) -> dict[str, Any]:
    top = max(KS)
    out: dict[str, Any] = {}
    for name in ("default", "keyword", "dense"):
        started = time.perf_counter()
        if name == "default":
            ctx = await reme.retrieve_memory(q.question, user_name=conv.sample_id, top_k=top, rewrite=False)
            nodes = [m.node for m in ctx.memories]
        else:
            hits = await reme.search_memory(q.question, user_name=conv.sample_id, top_k=top, mode=name)
            nodes = [h.node for h in hits]
        ms = 1000 * (time.perf_counter() - started)
        ranked = [by_hash.get(n.content_hash, [n.metadata.get("dia_id", "")]) for n in nodes]
        out[name] = {"scores": evidence_scores(ranked, q.evidence), "ms": round(ms, 3)}
    return out


def markdown(report: dict[str, Any]) -> str:
    keys = RETRIEVAL_KEYS if report["mode"] == "retrieval" else report["keys"]
    lines = [f"LoCoMo {report['mode']} mode, {report['data']}", ""]
    lines.append("| retriever | group | n | " + " | ".join(keys) + " |")
    lines.append("|---|---|---|" + "---|" * len(keys))
    for name, result in report["retrievers"].items():
        groups = [("overall (1-4)", result["overall"])] + list(result["by_category"].items()) + [
            ("adversarial (5)", result["adversarial"])]
        for group, values in groups:
            cells = ["" if values.get(k) is None else f"{values[k]:.1f}" for k in keys]
            lines.append(f"| {name} | {group} | {values['n']} | " + " | ".join(cells) + " |")
    if report["mode"] == "retrieval":
        lines.append(f"| DRAGON (paper) | overall | | {DRAGON['recall@5']} | {DRAGON['recall@10']} | | |")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmark.locomo",
                                description="LoCoMo: evidence recall without an LLM, or the full answer + judge run.")
    p.add_argument("--data", help="locomo10.json (default: a cached copy of the public file, downloaded once)")
    p.add_argument("--mode", choices=["retrieval", "full"], default="retrieval")
    p.add_argument("--output", default="locomo-results.json", help="results JSON (a .md table is written beside it)")
    p.add_argument("--working-dir", help="where the benchmark's memories live (default: beside --output)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run with the same settings")
    p.add_argument("--conversations", type=int, default=None, help="use only the first N conversations")
    p.add_argument("--questions", type=int, default=None, help="use only the first N questions of each")
    p.add_argument("--embedding", choices=["local", "openai", "hash"], default="local")
    p.add_argument("--embedding-model", help="a sentence-transformers name or path, or an OpenAI model")
    full = p.add_argument_group("full mode")
    full.add_argument("--model", help="the answering (and summarizing) model")
    full.add_argument("--judge-model", help="the grading model (default: --model)")
    full.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
    full.add_argument("--api-key", help="its key (default: OPENAI_API_KEY)")
    full.add_argument("--top-k", type=int, default=20, help="memories retrieved per question")
    full.add_argument("--batch-size", type=int, default=1, help="sessions summarized per summarize_memory call")
    full.add_argument("--concurrency", type=int, default=4, help="conversations ingested and answered at once")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        data = resolve_data(args.data)
        convs = load(data, args.conversations)
        if args.mode == "retrieval":
            report = asyncio.run(retrieval_mode(args, convs, data))
        else:
            from benchmark.locomo.full import full_mode

            report = asyncio.run(full_mode(args, convs, data))
    except (DataError, ReMeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    output = Path(args.output)
    output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    table = markdown(report)
    output.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
    print(table)
    print(f"\nwrote {output} and {output.with_suffix('.md')}")
    return 0


__all__ = ["CATEGORIES", "main"]
