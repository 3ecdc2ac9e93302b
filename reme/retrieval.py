"""Ranking shared by the retrievers: reciprocal rank fusion over several result lists, recency and
importance weighting, time windows, and the text a retrieval renders for a prompt."""

from __future__ import annotations

import math
import unicodedata
from datetime import date, datetime, time, timezone
from typing import Callable, Sequence

from reme.config import RetrievalConfig
from reme.schema import MemoryNode, RetrievedMemory, SearchResult, TimeWindow, normalize_text
from reme.store import VectorStore
from reme.store.filters import And, Filter, Or, Range

TIME_FORMAT = "%Y-%m-%d %H:%M"
"""How `ctx.text` prints `message_time`: `[2024-05-03 14:00] Alice prefers window seats`."""


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def rrf_fuse(lists: Sequence[Sequence[SearchResult]], k: int = 60) -> list[tuple[MemoryNode, float]]:
    """Reciprocal rank fusion: each list adds 1 / (k + rank) to a node's score. Ties keep the
    order of first appearance, so the result is deterministic."""
    scores: dict[str, float] = {}
    nodes: dict[str, MemoryNode] = {}
    for results in lists:
        for result in results:
            mid = result.node.memory_id
            nodes.setdefault(mid, result.node)
            scores[mid] = scores.get(mid, 0.0) + 1.0 / (k + result.rank)
    order = {mid: i for i, mid in enumerate(nodes)}
    ranked = sorted(nodes, key=lambda mid: (-scores[mid], order[mid]))
    return [(nodes[mid], scores[mid]) for mid in ranked]


def score_fuse(dense: Sequence[SearchResult], keyword: Sequence[SearchResult],
               dense_weight: float) -> list[SearchResult]:
    """One query's dense and keyword results as one list, by a convex combination of their
    max-normalized scores: `dense_weight * cos / max_cos + (1 - dense_weight) * bm25 / max_bm25`.
    A node only one list found gets the other list's lowest score (it ranked below everything
    that list returned). On LoCoMo this beats rank fusion (RRF), which lets the weaker list's
    ranks count as much as the stronger one's (see benchmark/locomo/README.md)."""

    def normalized(results: Sequence[SearchResult]) -> dict[str, float]:
        top = max((r.similarity for r in results), default=0.0)
        return {r.node.memory_id: (r.similarity / top if top > 0 else 0.0) for r in results}

    d, k = normalized(dense), normalized(keyword)
    floor_d, floor_k = min(d.values(), default=0.0), min(k.values(), default=0.0)
    nodes = {r.node.memory_id: r.node for r in [*dense, *keyword]}
    scores = {mid: dense_weight * d.get(mid, floor_d) + (1 - dense_weight) * k.get(mid, floor_k) for mid in nodes}
    order = {mid: i for i, mid in enumerate(nodes)}
    ranked = sorted(nodes, key=lambda mid: (-scores[mid], order[mid]))
    return [SearchResult(node=nodes[mid], similarity=scores[mid], rank=i + 1, score_kind="fused")
            for i, mid in enumerate(ranked)]


def turn_span(node: MemoryNode) -> tuple[int, int] | None:
    """The first and last turn of its source conversation a memory was distilled from
    (`metadata.source_turns`), or None when it names none. Metadata is whatever a caller stored:
    anything but non-negative integers is ignored."""
    turns = node.metadata.get("source_turns")
    if not isinstance(turns, list):
        return None
    valid = [t for t in turns if isinstance(t, int) and not isinstance(t, bool) and t >= 0]
    return (min(valid), max(valid)) if valid else None


def in_context(results: Sequence[SearchResult], config: RetrievalConfig) -> list[SearchResult]:
    """A conversation is a sequence: the answer to a question is often the turn after the one
    that matches it, and evidence clusters in a conversation. Among one query's results, memories
    citing the same source (the history node in `ref_ids[0]`) are one conversation, ordered by
    `metadata.source_turns`. Each memory gains `before_weight` x the best score of a result
    ending on the turn just before its first, `after_weight` x that of one starting on the turn
    just after its last, and `source_weight` x the best score of its conversation (its own when
    it cites none). Only scores within the list are used: no extra reads."""
    if not results or config.before_weight == config.after_weight == config.source_weight == 0:
        return list(results)
    best: dict[str, float] = {}
    ends: dict[tuple[str, int], float] = {}
    starts: dict[tuple[str, int], float] = {}
    placed = [(r.node.ref_ids[0] if r.node.ref_ids else None, turn_span(r.node)) for r in results]
    for r, (source, span) in zip(results, placed):
        if source is None:
            continue
        best[source] = max(best.get(source, 0.0), r.similarity)
        if span is not None:
            ends[(source, span[1])] = max(ends.get((source, span[1]), 0.0), r.similarity)
            starts[(source, span[0])] = max(starts.get((source, span[0]), 0.0), r.similarity)

    def score(r: SearchResult, source: str | None, span: tuple[int, int] | None) -> float:
        if source is None:
            return r.similarity * (1 + config.source_weight)
        near = 0.0
        if span is not None:
            near = max(config.before_weight * ends.get((source, span[0] - 1), 0.0),
                       config.after_weight * starts.get((source, span[1] + 1), 0.0))
        return r.similarity + near + config.source_weight * best[source]

    scored = sorted(((score(r, *place), i, r) for i, (r, place) in enumerate(zip(results, placed))),
                    key=lambda t: (-t[0], t[1]))
    return [r.model_copy(update={"similarity": s, "rank": rank + 1}) for rank, (s, _, r) in enumerate(scored)]


async def fused_search(store: VectorStore, collection: str, query: str, vector: list[float], flt: Filter,
                       limit: int, config: RetrievalConfig) -> list[SearchResult]:
    """One query's ranked list: dense and keyword searches combined by `score_fuse`, or the
    store's RRF hybrid when `config.fusion == "rrf"`."""
    if config.fusion == "rrf":
        return await store.search(collection, vector=vector, text=query, mode="hybrid", flt=flt, limit=limit)
    dense = await store.search(collection, vector=vector, mode="dense", flt=flt, limit=limit)
    keyword = await store.search(collection, text=query, mode="keyword", flt=flt, limit=limit)
    return score_fuse(dense, keyword, config.dense_weight)


def in_window(node: MemoryNode, window: TimeWindow | None) -> float:
    """How far a memory falls inside `window`, 0 to 1: 1 when it was said inside it
    (`message_time`), else the share of what it tells (its event range) that lies inside it (an
    instant: 1 or 0; a month-long event for a one-week window: 7/31)."""
    if window is None:
        return 0.0
    low, high = window.start, window.end
    said = node.message_time
    if (low is None or said >= low) and (high is None or said <= high):
        return 1.0
    if node.event_start is None:
        return 0.0
    start, end = node.event_window
    first, last = max(start, low) if low else start, min(end, high) if high else end
    if last < first:
        return 0.0
    span = (end - start).total_seconds()
    return 1.0 if span <= 0 else min((last - first).total_seconds() / span, 1.0)


def words(text: str) -> list[str]:
    """`text`'s words, case-folded, in order ("Melanie's kids" -> melanie, s, kids). A combining
    mark belongs to its word (`\\w` would split "i̇0", the case fold of "İ0", into "i" and "0")."""
    out: list[str] = []
    word: list[str] = []
    for ch in text.casefold():
        if ch.isalnum() or ch == "_" or unicodedata.category(ch).startswith("M"):
            word.append(ch)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return out


def naming(query: str) -> Callable[[MemoryNode], bool]:
    """Whether `query` names a memory's person: its `author`, or the user of a personal memory
    (`memory_target` when `target_kind` is "user"), appearing in the query as whole words, case
    ignored ("Melanie" in "What do Melanie's kids like?"; "Ann" not in "Anna")."""
    spoken = " " + " ".join(words(query)) + " "
    seen: dict[str, bool] = {}

    def named(name: str) -> bool:
        if name not in seen:
            tokens = words(name)
            seen[name] = bool(tokens) and f" {' '.join(tokens)} " in spoken
        return seen[name]

    def names(node: MemoryNode) -> bool:
        return bool(node.author and named(node.author)) or (node.target_kind == "user" and named(node.memory_target))
    return names


def weight(node: MemoryNode, score: float, config: RetrievalConfig, now: datetime,
           window: TimeWindow | None = None, named: bool = False) -> float:
    """`score * (1 + recency_weight * 0.5 ** (age_days / half_life_days) + importance_weight * importance
    + time_weight * inside + named_weight * named) * decay`: age from `message_time`; `inside` is how far the memory
    falls inside the period the query names (`in_window`); `named` is 1 when the query names the
    memory's person (`naming`); `decay` is `0.5 ** (age_days / decay_half_life_days)`
    times `0.5 ** (idle_days / disuse_half_life_days)` (idle: since `last_accessed`, or since it was
    stored when never read), each only when its half-life is set."""
    age_days = max((now - node.message_time).total_seconds() / 86400.0, 0.0)
    recency: float = 0.5 ** (age_days / config.half_life_days)
    importance = min(max(node.score, 0.0), 1.0)
    boost = config.time_weight * in_window(node, window) if config.time_weight else 0.0
    if named:
        boost += config.named_weight
    out = score * (1.0 + config.recency_weight * recency + config.importance_weight * importance + boost)
    if config.decay_half_life_days:
        out *= 0.5 ** (age_days / config.decay_half_life_days)
    if config.disuse_half_life_days:
        used = node.last_accessed or node.time_created
        idle = max((now - used).total_seconds() / 86400.0, 0.0)
        out *= 0.5 ** (idle / config.disuse_half_life_days)
    return out


def rank(lists: Sequence[Sequence[SearchResult]], config: RetrievalConfig, now: datetime,
         top_k: int, window: TimeWindow | None = None, query: str = "") -> list[RetrievedMemory]:
    """Fuse, weight (a memory inside `window`, or of a person `query` names, ranks higher, see
    `weight`), drop repeated texts (the best-ranked copy stays) and keep `top_k`."""
    names = naming(query) if query and config.named_weight else None
    fused = [(node, weight(node, score, config, now, window, names is not None and names(node)))
             for node, score in rrf_fuse(lists, config.rrf_k)]
    fused.sort(key=lambda pair: -pair[1])
    seen: set[str] = set()
    out: list[RetrievedMemory] = []
    for node, score in fused:
        key = normalize_text(node.content)
        if key in seen:
            continue
        seen.add(key)
        out.append(RetrievedMemory(node=node, score=score, rank=len(out) + 1))
        if len(out) == top_k:
            break
    return out


def window_filter(window: TimeWindow | None) -> Filter | None:
    """Memories inside `window` (see `in_window`): said inside it, or an event range overlapping it."""
    if window is None or (window.start is None and window.end is None):
        return None
    said = Range(field="message_time", gte=window.start, lte=window.end)
    overlap: list[Filter] = [Range(field="event_start", lte=window.end)] if window.end else []
    if window.start:
        overlap.append(Range(field="event_end", gte=window.start))
    return Or(filters=[said, overlap[0] if len(overlap) == 1 else And(filters=overlap)])


def day_window(start: date | None, end: date | None) -> TimeWindow | None:
    """Whole days, UTC: from the start of `start` to the last microsecond of `end`."""
    if start is None and end is None:
        return None
    if start is not None and end is not None and end < start:
        start, end = end, start
    return TimeWindow(start=datetime.combine(start, time.min, timezone.utc) if start else None,
                      end=datetime.combine(end, time.max, timezone.utc) if end else None)


def render(memories: Sequence[RetrievedMemory]) -> str:
    """One `[YYYY-MM-DD HH:MM] content` line per memory, best first; a source excerpt, when
    attached, follows on lines indented by two spaces after `  source: `."""
    lines: list[str] = []
    for memory in memories:
        node = memory.node
        happened = ""
        if node.event_start is not None:  # when it happened, where that is not the day it was said
            first, last = node.event_window
            days = {first.date(), last.date()}
            if days != {node.message_time.date()}:
                happened = (f" (happened {first.date().isoformat()})" if len(days) == 1 else
                            f" (happened {first.date().isoformat()} to {last.date().isoformat()})")
        lines.append(f"[{node.message_time.strftime(TIME_FORMAT)}] {node.content}{happened}")
        if memory.source:
            lines.extend(f"  source: {line}" for line in memory.source.splitlines())
    return "\n".join(lines)
