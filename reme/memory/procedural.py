"""Procedural (task) memory: lessons agents draw from their own runs, and finding them for a new task.

Summarizer, per task:
  1. each trajectory is stored as a `history` node of the task (what lessons cite in `ref_ids`);
  2. trajectories scoring at least `procedural.success_threshold` are successes, the others
     failures; one LLM call per trajectory extracts lessons (`prompts/procedural/success`,
     `.../failure`) and, when both kinds exist, one more compares the best and the worst run
     (`.../comparative`); these calls run concurrently;
  3. one LLM call scores every lesson (`.../validate`) and drops generic or non-actionable ones;
  4. a lesson whose `when_to_use` is nearly the same (cosine >= `dedup_threshold`) as a stored
     lesson of the task, or an earlier one of this batch, is dropped.
All LLM calls happen before the first write: a failed call leaves the store as it was.

Retriever: dense + keyword search on `when_to_use` within the task, an optional LLM rerank
(`.../rerank`) and an optional LLM rewrite of the top lessons into one block of advice
(`.../rewrite`).

Utility: `record_usage` counts how often a lesson was used (`metadata.freq`) and how often that
went well (`metadata.utility`); `prune` removes lessons that keep failing.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Sequence

from pydantic import BaseModel, Field, ValidationError, WithJsonSchema, create_model

from reme.config import ProceduralConfig, RetrievalConfig
from reme.errors import InvalidInputError, LLMError, LLMOutputError, describe
from reme.llm import ChatModel, Fraction, Note
from reme.memory.repo import Change, MemoryRepo, target_filter
from reme.prompts import PromptLibrary
from reme.retrieval import cosine, fused_search
from reme.schema import (MAX_CONTENT_CHARS, MAX_IMPORT_LINES, MAX_SUMMARY_CANDIDATES, MAX_TRAJECTORIES, Fallback,
                         FiniteFloat, MemoryNode, MemoryType, Rejection, RetrievedMemory, RetrieveResult, SummaryResult,
                         Trajectory, Usage, parse_items, parse_iso, parse_json, utcnow)
from reme.store.filters import Filter, Range

log = logging.getLogger("reme.procedural")

MAX_RUN_CHARS = 24_000
"""A run longer than this is shown to the LLM as its first and last parts (the middle is marked
as left out); the history node keeps up to `MAX_CONTENT_CHARS`."""
CATEGORIES = ("success", "failure", "comparative")


class Lesson(BaseModel):
    when_to_use: str = Field(max_length=MAX_CONTENT_CHARS)
    content: str = Field(max_length=MAX_CONTENT_CHARS)
    confidence: Fraction = 0.5


class Lessons(BaseModel):
    memories: list[Lesson]


class Rating(BaseModel):
    index: int
    score: FiniteFloat
    reason: Note = Field(default="", max_length=2000)


class Ratings(BaseModel):
    results: list[Rating]


class Ranking(BaseModel):
    ranking: list[int]


@functools.lru_cache(maxsize=64)
def ranking_for(shown: int) -> type[Ranking]:
    """`Ranking` whose reply schema names only the indexes shown (0 .. shown-1) and at most `shown`
    of them, so a grammar-constrained endpoint cannot answer with an index it was never shown
    (SmolLM2 ranked [2022, 2022, ...]). Validation stays lenient: an endpoint without grammars may
    still send others, and `retrieve` drops them."""
    schema = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": max(shown - 1, 0)},
              "maxItems": shown}
    ranking = Annotated[list[int], WithJsonSchema(schema)]
    return create_model("Ranking", __base__=Ranking, ranking=(ranking, ...))


class Advice(BaseModel):
    advice: str


def to_trajectories(items: Sequence[Trajectory | dict[str, Any]]) -> list[Trajectory]:
    out = parse_items(items, Trajectory, "trajectories", MAX_TRAJECTORIES)
    for i, trajectory in enumerate(out):
        if not any(m.content.strip() for m in trajectory.messages):
            raise InvalidInputError(f"trajectories[{i}] holds no messages with text")
    return out


def render_run(trajectory: Trajectory, limit: int = MAX_RUN_CHARS) -> str:
    lines = [f"[{i}] {m.role}{f' ({m.name})' if m.name else ''}: {m.content.strip()}"
             for i, m in enumerate(trajectory.messages) if m.content.strip()]
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    half = (limit - 64) // 2  # room for the marker line
    return f"{text[:half]}\n... ({len(text) - 2 * half} characters left out) ...\n{text[-half:]}"


def task_filter(task_name: str, extra: Filter | None = None) -> Filter:
    return target_filter(task_name, MemoryType.PROCEDURAL, extra)


@dataclass
class Plan:
    task_name: str
    history: list[MemoryNode] = field(default_factory=list)
    lessons: list[Change] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    rejected: list[Rejection] = field(default_factory=list)


class ProceduralSummarizer:
    def __init__(self, repo: MemoryRepo, llm: ChatModel, prompts: PromptLibrary, config: ProceduralConfig) -> None:
        self.repo, self.llm, self.prompts, self.config = repo, llm, prompts, config

    async def plan(self, trajectories: list[Trajectory], task_name: str, now: datetime | None = None) -> Plan:
        now = now or utcnow()
        plan = Plan(task_name=task_name)
        plan.history = [self._history_node(t, task_name, now) for t in trajectories]
        jobs: list[tuple[str, list[int]]] = [
            ("success" if t.score >= self.config.success_threshold else "failure", [i])
            for i, t in enumerate(trajectories)]
        successes = [i for kind, (i,) in jobs if kind == "success"]
        failures = [i for kind, (i,) in jobs if kind == "failure"]
        if successes and failures:
            best = max(successes, key=lambda i: trajectories[i].score)
            worst = min(failures, key=lambda i: trajectories[i].score)
            jobs.append(("comparative", [best, worst]))
        extracted = await asyncio.gather(*(self._extract(kind, [trajectories[i] for i in idx], plan)
                                           for kind, idx in jobs))
        candidates: list[MemoryNode] = []
        for (kind, idx), lessons in zip(jobs, extracted):
            task = trajectories[idx[0]].task
            if len(lessons) > MAX_SUMMARY_CANDIDATES:
                log.warning("%s extraction returned %d lessons; the first %d are kept", kind, len(lessons),
                            MAX_SUMMARY_CANDIDATES)
                plan.rejected.append(Rejection(step=f"procedural/{kind}", path=f"memories[{MAX_SUMMARY_CANDIDATES}:]",
                                               action="dropped", reason=f"{len(lessons)} lessons in one reply; the "
                                                                        f"first {MAX_SUMMARY_CANDIDATES} are kept"))
                lessons = lessons[:MAX_SUMMARY_CANDIDATES]
            for lesson in lessons:
                if not lesson.when_to_use.strip() or not lesson.content.strip():
                    continue
                candidates.append(MemoryNode(
                    memory_type=MemoryType.PROCEDURAL, memory_target=task_name,
                    when_to_use=lesson.when_to_use.strip(), content=lesson.content.strip(), score=lesson.confidence,
                    time_created=now, time_modified=now, message_time=now, tags=[kind],
                    ref_ids=[plan.history[i].memory_id for i in idx],
                    metadata={"category": kind, "confidence": lesson.confidence, "utility": 0, "freq": 0,
                              "task_query": task[:2000]}))
        if candidates and self.config.validate_lessons:
            candidates = await self._validate(candidates, task_name, plan)
        if candidates:
            plan.lessons = await self._dedupe(candidates, task_name)
        return plan

    def _history_node(self, trajectory: Trajectory, task_name: str, now: datetime) -> MemoryNode:
        text = render_run(trajectory, MAX_CONTENT_CHARS)
        return MemoryNode(memory_type=MemoryType.HISTORY, target_kind="task", memory_target=task_name, content=text,
                          message_time=now,
                          score=trajectory.score, metadata={"kind": "trajectory", "score": trajectory.score,
                                                            "query": trajectory.task[:2000],
                                                            "run": trajectory.metadata})

    async def _extract(self, kind: str, runs: list[Trajectory], plan: Plan) -> list[Lesson]:
        if kind == "comparative":
            best, worst = runs
            variables: dict[str, Any] = dict(task=best.task, best=render_run(best), best_score=best.score,
                                             worst=render_run(worst), worst_score=worst.score)
        else:
            variables = dict(task=runs[0].task, trajectory=render_run(runs[0]), score=runs[0].score)
        result = await self.llm.structured(self.prompts.messages(f"procedural/{kind}", **variables), Lessons,
                                           usage=plan.usage, rejected=plan.rejected, step=f"procedural/{kind}")
        return result.memories

    async def _validate(self, candidates: list[MemoryNode], task_name: str, plan: Plan) -> list[MemoryNode]:
        listed = [{"index": i, "category": c.metadata["category"], "when_to_use": c.when_to_use, "content": c.content}
                  for i, c in enumerate(candidates)]
        ratings = await self.llm.structured(
            self.prompts.messages("procedural/validate", task_name=task_name, candidates=listed), Ratings,
            usage=plan.usage, rejected=plan.rejected, step="procedural/validate", budget=64 + 96 * len(candidates))
        scores = {r.index: r for r in ratings.results if 0 <= r.index < len(candidates)}
        kept = []
        for i, cand in enumerate(candidates):
            rating = scores.get(i)
            if rating is None:
                log.info("validation gave no score for lesson %d; it is kept", i)
                kept.append(cand)
            elif rating.score >= self.config.validation_threshold:
                cand.metadata = {**cand.metadata, "validation": round(float(rating.score), 4)}
                kept.append(cand)
            else:
                log.info("lesson %r dropped by validation (%s): %s", cand.when_to_use, rating.score, rating.reason)
        return kept

    async def _dedupe(self, candidates: list[MemoryNode], task_name: str) -> list[Change]:
        """Lessons unlike the task's stored ones and each other, as writes carrying their vectors."""
        vectors = await self.repo.embedder.embed([c.retrieval_text for c in candidates])
        nearest = await asyncio.gather(*(
            self.repo.store.search(self.repo.collection, vector=v, mode="dense", flt=task_filter(task_name), limit=1)
            for v in vectors))
        kept: list[Change] = []
        threshold = self.config.dedup_threshold
        for cand, vector, hits in zip(candidates, vectors, nearest):
            if hits and hits[0].similarity >= threshold:
                log.info("lesson %r dropped: like stored %s", cand.when_to_use, hits[0].node.memory_id)
            elif any(cosine(vector, c.vector or []) >= threshold for c in kept):
                log.info("lesson %r dropped: like another lesson of this batch", cand.when_to_use)
            else:
                kept.append(Change(new=cand, vector=vector))
        return kept

    async def commit(self, plan: Plan) -> SummaryResult:
        written = await self.repo.apply([*(Change(new=n) for n in plan.history), *plan.lessons])
        result = SummaryResult(usage=plan.usage, rejected=plan.rejected)
        result.history = [node for node, _ in written[:len(plan.history)]]
        result.added = [node for node, wrote in written[len(plan.history):] if wrote]
        return result


class ProceduralRetriever:
    def __init__(self, repo: MemoryRepo, llm: ChatModel | None, prompts: PromptLibrary, config: ProceduralConfig,
                 retrieval: RetrievalConfig) -> None:
        self.repo, self.llm, self.prompts, self.config, self.retrieval = repo, llm, prompts, config, retrieval

    async def retrieve(self, query: str, task_name: str, *, top_k: int = 5, rerank: bool | None = None,
                       rewrite: bool | None = None) -> RetrieveResult:
        usage = Usage()
        rerank = self.config.rerank if rerank is None else rerank
        rewrite = self.config.rewrite if rewrite is None else rewrite
        (vector,) = await self.repo.embedder.embed([query])
        hits = await fused_search(self.repo.store, self.repo.collection, query, vector, task_filter(task_name),
                                  max(self.config.candidates, top_k),
                                  self.retrieval.model_copy(update={"dense_weight": self.config.dense_weight}))
        nodes = [h.node for h in hits]
        scores = {h.node.memory_id: h.similarity for h in hits}
        fallbacks: list[Fallback] = []
        if rerank and self.llm is not None and nodes:
            listed = [{"index": i, "when_to_use": n.when_to_use, "content": n.content} for i, n in enumerate(nodes)]
            try:
                ranking = await self.llm.structured(
                    self.prompts.messages("procedural/rerank", query=query, candidates=listed, top_k=top_k),
                    ranking_for(len(nodes)),
                    usage=usage, step="procedural/rerank", budget=32 + 8 * min(top_k, len(nodes)))
                order = list(dict.fromkeys(i for i in ranking.ranking if 0 <= i < len(nodes)))
                if ranking.ranking and not order:  # not "none apply" (an empty ranking): no answer at all
                    raise LLMOutputError(f"the ranking {ranking.ranking[:10]} names none of the {len(nodes)} "
                                         "experiences shown", raw=str(ranking.ranking)[:2000])
                nodes = [nodes[i] for i in order]
            except LLMError as exc:
                log.warning("rerank skipped: %s", exc)
                fallbacks.append(Fallback(step="rerank", error=str(exc)[:500]))
        memories = [RetrievedMemory(node=n, score=scores[n.memory_id], rank=i + 1) for i, n in enumerate(nodes[:top_k])]
        text = render_experiences(memories)
        if rewrite and self.llm is not None and memories:
            try:
                advice = await self.llm.structured(
                    self.prompts.messages("procedural/rewrite", query=query, experiences=[
                        {"when_to_use": m.node.when_to_use, "content": m.node.content} for m in memories]),
                    Advice, usage=usage, step="procedural/rewrite")
                text = advice.advice.strip() or text
            except LLMError as exc:
                log.warning("advice rewrite skipped: %s", exc)
                fallbacks.append(Fallback(step="rewrite", error=str(exc)[:500]))
        return RetrieveResult(memories=memories, text=text, queries=[query], usage=usage, fallbacks=fallbacks)


def render_experiences(memories: Sequence[RetrievedMemory]) -> str:
    """`Experience N:` then `  When: <when_to_use>` and `  What: <content>`, best first."""
    lines: list[str] = []
    for m in memories:
        lines += [f"Experience {m.rank}:", f"  When: {m.node.when_to_use}", f"  What: {m.node.content}"]
    return "\n".join(lines)


def _count(value: Any) -> int:
    """A use count read from metadata a caller may have set to anything: a non-negative whole
    number, else 0 (`"often"`, `-3`, `[1]` and `1e300` count as no uses)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 53:
        return 0
    return value


def counted(node: MemoryNode, success: bool) -> MemoryNode:
    """The node after one more use (and one more success when `success`)."""
    meta = dict(node.metadata)
    meta["freq"] = _count(meta.get("freq")) + 1
    meta["utility"] = _count(meta.get("utility")) + (1 if success else 0)
    return node.model_copy(update={"metadata": meta, "time_modified": utcnow()})


def prune_filter(task_name: str, min_freq: int) -> Filter:
    return task_filter(task_name, Range(field="metadata.freq", gte=min_freq))


def failing(node: MemoryNode, min_freq: int, min_utility_ratio: float) -> bool:
    freq = _count(node.metadata.get("freq"))
    return freq >= min_freq and _count(node.metadata.get("utility")) / freq < min_utility_ratio


# -- the original ReMe's JSONL pools -----------------------------------------------------------
_KNOWN = {"memory_id", "memory_type", "when_to_use", "content", "score", "time_created", "time_modified", "author",
          "metadata"}


def read_reme_jsonl(path: str | Path, task_name: str) -> list[MemoryNode]:
    """Memories of a pool in the original ReMe's JSONL format, as procedural memories of
    `task_name`. Fields ReMe has no place for (`workspace_id`, ...) go to metadata under their
    own names (prefixed `original_` if metadata already has the key); every line is validated
    before any is returned."""
    p = Path(path)
    try:
        lines = p.read_bytes().splitlines()  # bytes: invalid UTF-8 is a line's error, not a crash
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"cannot read {str(p)!r}: {getattr(exc, 'strerror', None) or exc}") from None
    if len(lines) > MAX_IMPORT_LINES:
        raise InvalidInputError(f"{p}: more than {MAX_IMPORT_LINES} lines; split the file")
    nodes: list[MemoryNode] = []
    first: dict[str, int] = {}
    now = utcnow()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = parse_json(line, "the line")
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
            if row.get("memory_type", "procedural") not in ("procedural", "task"):
                raise ValueError(f"memory_type {row.get('memory_type')!r} is not a task memory")
            meta = row.get("metadata") or {}
            if not isinstance(meta, dict):
                raise ValueError("metadata is not a JSON object")
            meta = dict(meta)
            for key, value in row.items():
                if key not in _KNOWN:
                    meta[key if key not in meta else f"original_{key}"] = value
            category = meta.get("category")
            nodes.append(MemoryNode(
                memory_id=str(row["memory_id"]), memory_type=MemoryType.PROCEDURAL, memory_target=task_name,
                when_to_use=row.get("when_to_use") or meta.get("when_to_use") or "", content=row["content"],
                score=float(row.get("score") or 0.0), author=row.get("author") or "",
                time_created=parse_iso(row.get("time_created") or now),
                time_modified=parse_iso(row.get("time_modified") or now),
                message_time=parse_iso(row.get("time_created") or now), tags=[category] if isinstance(category, str) else [],
                metadata=meta))
        except (ValueError, KeyError, TypeError, OverflowError, ValidationError) as exc:
            detail = describe(exc) if isinstance(exc, ValidationError) else (
                f"missing field {exc}" if isinstance(exc, KeyError) else str(exc))
            raise InvalidInputError(f"{p} line {number}: {detail}; nothing was imported") from None
        if nodes[-1].memory_id in first:
            raise InvalidInputError(f"{p} line {number}: memory_id {nodes[-1].memory_id} is also on line "
                                    f"{first[nodes[-1].memory_id]}; nothing was imported")
        first[nodes[-1].memory_id] = number
    return nodes
