"""`python -m benchmark.locomo`: the command line, resumable runs, ingestion of turns and the
retrieval mode (no LLM). The full mode (an LLM answers and a judge grades) is in `full.py`."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Sequence

from benchmark.locomo.data import CATEGORIES, SCORED, Conversation, DataError, load, resolve_data
from benchmark.locomo.metrics import KS, aggregate, evidence_scores, percentile
from benchmark.embedding import embedding_config as shared_embedding_config
from benchmark.runs import Checkpoint, file_digest, jsonl_rows, progress
from reme import MemoryNode, MemoryType, Message, ReMe, ReMeError
from reme.config import EmbeddingConfig
from reme.embedding import create_embedder
from reme.memory.personal import Transcript
from reme.schema import content_hash
from reme.temporal import find_window

RETRIEVAL_KEYS = [*(f"recall@{k}" for k in KS), "mrr"]
DRAGON = {"recall@5": 58.8, "recall@10": 67.5}
"""The LoCoMo paper's DRAGON retriever over dialog turns (Table 3), the anchor to beat."""


def embedding_config(args: argparse.Namespace) -> dict[str, Any]:
    return shared_embedding_config(args.embedding, args.embedding_model)


def session_history(conv: Conversation, number: int, user: str, key: str) -> tuple[MemoryNode, dict[str, int]]:
    """Session `number` as `summarize_memory` stores a conversation: a history node of `user`
    (one `[time] speaker: text` line per turn, the dia_id kept as the message id; its id derived
    from `key`, so runs are reproducible), and each dia_id's turn index in it."""
    when, turns = conv.sessions[number - 1]
    messages = [Message(role="user", name=t.speaker, content=t.content.split(": ", 1)[1], time=t.time, id=t.dia_id)
                for t in turns]
    history = Transcript.of(messages, when).history_node(user).model_copy(
        update={"memory_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{key}"))})
    return history, {t.dia_id: i for i, t in enumerate(turns)}


def turn_nodes(conv: Conversation) -> list[MemoryNode]:
    """One personal memory per turn in the conversation's own scope, citing its session (a history
    node, as a summarizer's memories do) with its turn index as `source_turns`; ids are derived
    from the dia_id so that runs are reproducible."""
    nodes: list[MemoryNode] = []
    for number, (when, turns) in enumerate(conv.sessions, 1):
        history, index = session_history(conv, number, conv.sample_id, f"{conv.sample_id}/{number}")
        nodes.append(history)
        nodes += [MemoryNode(memory_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{conv.sample_id}/{t.dia_id}")),
                             memory_type=MemoryType.PERSONAL, memory_target=conv.sample_id, content=t.content,
                             message_time=t.time, author=t.speaker, ref_ids=[history.memory_id],
                             metadata={"dia_id": t.dia_id, "source_turns": [index[t.dia_id]]},
                             **event_fields(t.content.split(": ", 1)[-1], t.time))
                  for t in turns]
    return nodes


def event_fields(text: str, said: datetime) -> dict[str, Any]:
    """When what a turn or fact tells happened, resolved against the time it was said by the
    rules the personal summarizer falls back on (`reme.temporal`): "last weekend" said on
    2023-05-08 is 6-7 May. Empty when it names no time."""
    window = find_window(text, said)
    return {} if window is None else {"event_start": window.start, "event_end": window.end}


def question_time(conv: Conversation) -> datetime:
    """When a question is asked: the day after the conversation's last session."""
    return max(when for when, _ in conv.sessions) + timedelta(days=1)


def dia_ids_by_hash(conv: Conversation) -> dict[str, list[str]]:
    """Turns with the same text ("Thanks!") are one memory after deduplication; a retrieved
    memory stands for every turn that has its text."""
    out: dict[str, list[str]] = {}
    for t in conv.turns:
        out.setdefault(content_hash(MemoryType.PERSONAL, conv.sample_id, t.content), []).append(t.dia_id)
    return out


def dia_ids_of(memory: MemoryNode, histories: dict[str, MemoryNode]) -> list[str]:
    """The dia_ids a memory was distilled from: its source turns in the history node it cites."""
    history = histories.get(memory.ref_ids[0]) if memory.ref_ids else None
    if history is None:
        return []
    spans = history.metadata.get("messages") or []
    return [spans[i].get("id", "") for i in memory.metadata.get("source_turns") or [] if 0 <= i < len(spans)]


def speaker_user(conv: Conversation, speaker: str) -> str:
    return f"{conv.sample_id}:{speaker}"


def observation_nodes(conv: Conversation) -> list[MemoryNode]:
    """What a personal summarizer writes, taken from LoCoMo's `observation` field: per session and
    speaker, a history node of the session (as `summarize_memory` stores it) and one personal
    memory per observed fact, citing it with the turns the fact came from as `source_turns`."""
    nodes: list[MemoryNode] = []
    for number, (when, _) in enumerate(conv.sessions, 1):
        for speaker, facts in conv.observations.get(number, {}).items():
            user = speaker_user(conv, speaker)
            history, index = session_history(conv, number, user, f"{conv.sample_id}/{number}/{speaker}")
            nodes.append(history)
            for i, (fact, cited) in enumerate(facts):
                nodes.append(MemoryNode(
                    memory_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{conv.sample_id}/{number}/{speaker}/{i}")),
                    memory_type=MemoryType.PERSONAL, memory_target=user, content=fact, message_time=when,
                    author=speaker, ref_ids=[history.memory_id], **event_fields(fact, when),
                    metadata={"source_turns": sorted({index[d] for d in cited if d in index})}))
    return nodes


class Corpus:
    """What a run stores per conversation, whose memories a question searches, and which turns a
    retrieved memory stands for. `turns`: every turn as a memory of the conversation's own
    scope. `observations`: LoCoMo's observed facts as personal memories of each speaker."""

    def __init__(self, kind: str, convs: Sequence[Conversation]) -> None:
        self.kind = kind
        self.by_hash = {c.sample_id: dia_ids_by_hash(c) for c in convs} if kind == "turns" else {}
        self.histories: dict[str, MemoryNode] = {}

    def users(self, conv: Conversation) -> list[str]:
        return [conv.sample_id] if self.kind == "turns" else [speaker_user(conv, s) for s in conv.speakers]

    def nodes(self, conv: Conversation) -> list[MemoryNode]:
        return turn_nodes(conv) if self.kind == "turns" else observation_nodes(conv)

    async def load(self, reme: ReMe, convs: Sequence[Conversation]) -> None:
        if self.kind == "observations":
            for conv in convs:
                page = await reme.list_memory(user_name=self.users(conv), memory_type="history", limit=10_000)
                self.histories.update({n.memory_id: n for n in page})

    def ranked(self, conv: Conversation, nodes: Sequence[MemoryNode]) -> list[list[str]]:
        if self.kind == "turns":
            by_hash = self.by_hash[conv.sample_id]
            return [by_hash.get(n.content_hash, [n.metadata.get("dia_id", "")]) for n in nodes]
        return [dia_ids_of(n, self.histories) for n in nodes]


async def ingest(reme: ReMe, corpus: Corpus, convs: Sequence[Conversation], checkpoint: Checkpoint) -> None:
    for conv in progress(convs, len(convs), "ingest conversations"):
        key = f"ingest/{conv.sample_id}"
        if key in checkpoint.done:
            continue
        for user in corpus.users(conv):  # a half-ingested conversation from an interrupted run
            await reme.delete_all(user_name=user)
        nodes = corpus.nodes(conv)
        await reme.add_memories(nodes)
        checkpoint.add(key, len(nodes))
    await corpus.load(reme, convs)


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


RETRIEVERS: tuple[Literal["default", "keyword", "dense"], ...] = ("default", "keyword", "dense")


async def retrieval_mode(args: argparse.Namespace, convs: list[Conversation], data: Path) -> dict[str, Any]:
    settings, checkpoint, working_dir = start_run(args, convs, data, mode="retrieval", memories=args.memories)
    rows: dict[str, list[dict[str, Any]]] = {r: [] for r in RETRIEVERS}
    latency: dict[str, list[float]] = {r: [] for r in RETRIEVERS}
    corpus = Corpus(args.memories, convs)
    config = embedding_config(args)
    cache = Path(args.embedding_cache) if args.embedding_cache else None
    embedder = CachedEmbedder(create_embedder(EmbeddingConfig(**config)), config, cache)
    async with ReMe(working_dir=working_dir, embedder=embedder, llm={}) as reme:
        await ingest(reme, corpus, convs, checkpoint)
        work = [(c, q) for c in convs for q in c.questions[:args.questions] if q.evidence]
        for conv, q in progress(work, len(work), "questions"):
            key = f"q/{conv.sample_id}/{q.index}"
            if key not in checkpoint.done:
                checkpoint.add(key, await score_question(reme, corpus, conv, q))
            for name, result in checkpoint.done[key].items():
                rows[name].append({"category": q.category, **result["scores"]})
                latency[name].append(result["ms"])
        cv = await cross_validate(reme, corpus, work) if args.cv else None
    await embedder.close()
    skipped = sum(1 for c in convs for q in c.questions[:args.questions] if not q.evidence)
    report: dict[str, Any] = {"mode": "retrieval", "memories": args.memories, "data": str(data), "settings": settings,
                              "questions_without_evidence": skipped, "anchor_dragon": DRAGON, "retrievers": {}}
    for name in RETRIEVERS:
        report["retrievers"][name] = aggregate(rows[name], RETRIEVAL_KEYS)
    if cv is not None:
        report["cross_validation"] = cv
    # Timings vary run to run; they stay out of "retrievers", which is deterministic.
    report["latency_ms"] = {name: {"p50": percentile(latency[name], 0.5), "p95": percentile(latency[name], 0.95)}
                            for name in RETRIEVERS}
    return report


async def default_ranking(reme: ReMe, corpus: Corpus, conv: Conversation, question: str) -> list[MemoryNode]:
    users = corpus.users(conv)
    ctx = await reme.retrieve_memory(question, user_name=users if len(users) > 1 else users[0], top_k=max(KS),
                                     rewrite=False, now=question_time(conv))
    return [m.node for m in ctx.memories]


async def score_question(reme: ReMe, corpus: Corpus, conv: Conversation, q: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in RETRIEVERS:
        started = time.perf_counter()
        if name == "default":
            nodes = await default_ranking(reme, corpus, conv, q.question)
        else:
            hits = await reme.search_memory(q.question, user_name=corpus.users(conv), top_k=max(KS), mode=name)
            nodes = [h.node for h in hits]
        ms = 1000 * (time.perf_counter() - started)
        out[name] = {"scores": evidence_scores(corpus.ranked(conv, nodes), q.evidence), "ms": round(ms, 3)}
    return out


CONTEXT = [(0.0, 0.0, 0.0), (0.15, 0.1, 0.1), (0.15, 0.1, 0.2), (0.3, 0.2, 0.2)]
"""(before_weight, after_weight, source_weight): off, the defaults, a stronger conversation, stronger neighbours."""
TIME_WEIGHTS = (0.0, 0.25, 0.5)
"""`retrieval.time_weight`: 0 is the retriever without the time features (no window is looked
for in the question, so event times are never read)."""
NAMED_WEIGHTS = (0.0, 0.25, 0.5)
"""`retrieval.named_weight`: 0 is the retriever that does not look for the person a question names."""
CV_GRID = [{"dense_weight": w, "candidates": c, "before_weight": b, "after_weight": a, "source_weight": s,
            "time_weight": t, "named_weight": n}
           for n in NAMED_WEIGHTS for t in TIME_WEIGHTS for w in (0.5, 0.6, 0.7) for c in (40,) for b, a, s in CONTEXT]
"""The retrieval settings cross-validation chooses among (108); those with `time_weight` 0 alone
give the out-of-fold figure without the time features, those with `named_weight` 0 the figure
without naming. (20 candidates per list was in the grid until naming came; no fold ever chose it.)"""
VARIANTS = {"out_of_fold_without_time": lambda s: not s["time_weight"],
            "out_of_fold_without_naming": lambda s: not s["named_weight"],
            "out_of_fold_without_either": lambda s: not s["time_weight"] and not s["named_weight"]}
"""Out-of-fold figures when the folds choose only among the settings a predicate keeps."""
CV_KEY = "recall@10"


async def cross_validate(reme: ReMe, corpus: Corpus, work: Sequence[tuple[Conversation, Any]]) -> dict[str, Any]:
    """Leave one conversation out: for each conversation, the setting of `CV_GRID` with the best
    mean recall@10 on the other conversations' questions is scored on its own questions. The
    out-of-fold figure is what a setting chosen on some data does on data it never saw; the
    in-sample figures (the library's defaults, and the best setting chosen on all the data) are
    printed beside it."""
    config = reme.config.retrieval
    defaults = {k: getattr(config, k) for k in CV_GRID[0]}
    scores: list[list[dict[str, float]]] = []  # [setting][question]
    try:
        for setting in progress(CV_GRID, len(CV_GRID), "cross-validation settings"):
            for key, value in setting.items():
                setattr(config, key, value)
            scores.append([evidence_scores(corpus.ranked(c, await default_ranking(reme, corpus, c, q.question)),
                                           q.evidence) for c, q in work])
    finally:  # the defaults come back even when a setting fails
        for key, value in defaults.items():
            setattr(config, key, value)

    def mean(setting: int, picked: Sequence[int]) -> float:
        return sum(scores[setting][i][CV_KEY] for i in picked) / max(len(picked), 1)

    everything = [i for i, (_, q) in enumerate(work) if q.category in SCORED]

    def out_of_fold(settings: Sequence[int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        folds: list[dict[str, Any]] = []
        oof_rows: list[dict[str, Any]] = []
        for sample_id in dict.fromkeys(c.sample_id for c, _ in work):
            train = [i for i in everything if work[i][0].sample_id != sample_id]
            best = max(settings, key=lambda s: (round(mean(s, train), 6), -s))
            held = [i for i, (c, _) in enumerate(work) if c.sample_id == sample_id]
            oof_rows += [{"category": work[i][1].category, **scores[best][i]} for i in held]
            folds.append({"held_out": sample_id, "chosen": CV_GRID[best],
                          "train_recall@10": round(mean(best, train), 2)})
        return folds, oof_rows

    every = list(range(len(CV_GRID)))
    folds, oof_rows = out_of_fold(every)
    variants = {name: out_of_fold([i for i, s in enumerate(CV_GRID) if keep(s)]) for name, keep in VARIANTS.items()}
    best_all = max(every, key=lambda s: (round(mean(s, everything), 6), -s))

    def rows(setting: int) -> list[dict[str, Any]]:
        return [{"category": q.category, **scores[setting][i]} for i, (_, q) in enumerate(work)]

    default_index = next((i for i, s in enumerate(CV_GRID) if s == defaults), None)
    return {"grid": CV_GRID, "folds": folds, "best_in_sample": CV_GRID[best_all],
            **{f"folds{name.removeprefix('out_of_fold')}": f for name, (f, _) in variants.items()},
            **{name: aggregate(rows_, RETRIEVAL_KEYS) for name, (_, rows_) in variants.items()},
            "in_sample_best": aggregate(rows(best_all), RETRIEVAL_KEYS),
            "in_sample_default": aggregate(rows(default_index), RETRIEVAL_KEYS) if default_index is not None else None,
            "out_of_fold": aggregate(oof_rows, RETRIEVAL_KEYS)}


class CachedEmbedder:
    """An embedder that remembers the vectors of texts it has embedded: cross-validation asks for
    the same questions once per setting. With `path` (`--embedding-cache`), the vectors are also
    kept in that JSON-lines file, whose first line names the embedder, so later runs embed only
    texts they have not seen (a file written by another embedder is refused)."""

    def __init__(self, inner: Any, config: dict[str, Any], path: Path | None = None) -> None:
        self.inner, self.name, self.path = inner, inner.name, path
        rows = [] if path is None else jsonl_rows(path, {"embedding": config}, True, lambda old: (
            f"--embedding-cache: {path} holds vectors of another embedder ({old.get('embedding')}); "
            "pass another file"))
        self._cache: dict[str, list[float]] = {row["text"]: row["vector"] for row in rows}

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            vectors = [[float(x) for x in v] for v in await self.inner.embed(todo)]
            self._cache.update(zip(todo, vectors))
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as f:
                    f.writelines(json.dumps({"text": t, "vector": v}) + "\n" for t, v in zip(todo, vectors))
        return [self._cache[t] for t in texts]

    async def dimension(self) -> int:
        return int(await self.inner.dimension())

    async def close(self) -> None:
        await self.inner.close()


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
    cv = report.get("cross_validation")
    if cv:
        lines += ["", "Cross-validation of the default retriever's settings (leave one conversation out):", "",
                  "| figure | group | n | " + " | ".join(keys) + " |", "|---|---|---|" + "---|" * len(keys)]
        figures = [("in-sample, library defaults", cv["in_sample_default"]),
                   (f"in-sample, best of grid {cv['best_in_sample']}", cv["in_sample_best"]),
                   ("out-of-fold, without the time features or naming", cv.get("out_of_fold_without_either")),
                   ("out-of-fold, without the time features (time_weight 0)", cv.get("out_of_fold_without_time")),
                   ("out-of-fold, without naming (named_weight 0)", cv.get("out_of_fold_without_naming")),
                   ("out-of-fold", cv["out_of_fold"])]
        for figure, result in figures:
            if result is None:
                continue
            for group, values in [("overall (1-4)", result["overall"]), *result["by_category"].items()]:
                cells = ["" if values.get(k) is None else f"{values[k]:.1f}" for k in keys]
                lines.append(f"| {figure} | {group} | {values['n']} | " + " | ".join(cells) + " |")
        lines += ["", "Chosen per fold: " + "; ".join(f"{f['held_out']}: {f['chosen']}" for f in cv["folds"])]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmark.locomo",
                                description="LoCoMo: evidence recall without an LLM, or the full answer + judge run.")
    p.add_argument("--data", help="locomo10.json (default: a cached copy of the public file, downloaded once)")
    p.add_argument("--mode", choices=["retrieval", "full"], default="retrieval")
    p.add_argument("--memories", choices=["turns", "observations"], default="turns",
                   help="retrieval mode: store every turn, or LoCoMo's observed facts per speaker")
    p.add_argument("--cv", action="store_true",
                   help="retrieval mode: leave-one-conversation-out choice of the retrieval settings")
    p.add_argument("--output", default="locomo-results.json", help="results JSON (a .md table is written beside it)")
    p.add_argument("--working-dir", help="where the benchmark's memories live (default: beside --output)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run with the same settings")
    p.add_argument("--conversations", type=int, default=None, help="use only the first N conversations")
    p.add_argument("--questions", type=int, default=None, help="use only the first N questions of each")
    p.add_argument("--embedding", choices=["local", "openai", "hash"], default="local")
    p.add_argument("--embedding-model", help="a sentence-transformers name or path, or an OpenAI model")
    p.add_argument("--embedding-cache", help="retrieval mode: a JSON-lines file that keeps the vectors between runs")
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
