"""Tool memory: exact statistics of every call of a tool, and one LLM-written usage guideline per
tool, rewritten in place (with versions kept) as calls accumulate.

Statistics are never the LLM's: calls, success rate, mean and p95 (nearest rank) of time and
tokens, and the commonest failure messages are computed from every call summarized so far. The
raw values live in the guideline node's `metadata.raw`, so each summary updates them exactly;
`metadata.stats` holds the figures. Each call should be summarized once (a call summarized twice
is counted twice).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Sequence, TypeVar

from pydantic import BaseModel, Field, ValidationError

from reme.config import ToolConfig
from reme.errors import InvalidInputError
from reme.llm import ChatModel
from reme.memory.repo import Change, MemoryRepo, target_filter
from reme.prompts import PromptLibrary
from reme.schema import (MAX_CONTENT_CHARS, MemoryNode, MemoryType, Rejection, RetrievedMemory, RetrieveResult,
                         SummaryResult, ToolCallRecord, Usage, parse_items, plural, utcnow)
from reme.store.filters import Eq, Filter

GUIDELINE_TAG = "guideline"
MAX_FIELD_CHARS = 500
"""Inputs and outputs longer than this are cut in the prompt (not in the statistics)."""


class Guideline(BaseModel):
    guideline: str = Field(max_length=MAX_CONTENT_CHARS)


class Failure(BaseModel):
    message: str
    count: int


class ToolStats(BaseModel):
    calls: int = 0
    successes: int = 0
    success_rate: float = 0.0
    time_mean: float = 0.0
    time_p95: float = 0.0
    tokens_mean: float = 0.0
    tokens_p95: float = 0.0
    top_failures: list[Failure] = Field(default_factory=list)


class RawStats(BaseModel):
    """Every value the statistics are computed from."""

    times: list[float] = Field(default_factory=list)
    tokens: list[int] = Field(default_factory=list)
    successes: int = 0
    failures: list[tuple[str, int]] = Field(default_factory=list)

    def add(self, records: Sequence[ToolCallRecord]) -> "RawStats":
        failures = Counter(dict(self.failures))
        for r in records:
            failures.update([failure_message(r)] if not r.success else [])
        return RawStats(times=self.times + [r.time_cost for r in records],
                        tokens=self.tokens + [r.token_cost for r in records],
                        successes=self.successes + sum(r.success for r in records),
                        failures=sorted(failures.items(), key=lambda kv: (-kv[1], kv[0])))

    def stats(self, top: int) -> ToolStats:
        n = len(self.times)
        if not n:
            return ToolStats()
        return ToolStats(calls=n, successes=self.successes, success_rate=round(self.successes / n, 4),
                         time_mean=round(sum(self.times) / n, 4), time_p95=round(p95(self.times), 4),
                         tokens_mean=round(sum(self.tokens) / n, 2), tokens_p95=float(p95(self.tokens)),
                         top_failures=[Failure(message=m, count=c) for m, c in self.failures[:top]])


S = TypeVar("S", ToolStats, RawStats)


def _read(model: type[S], value: Any) -> S:
    """Statistics from metadata a caller may have overwritten (`metadata.stats = 5`): what does not
    read as `model` counts as none, so the tool's next summary starts them afresh."""
    try:
        return model.model_validate(value) if isinstance(value, dict) else model()
    except ValidationError:
        return model()


def p95(values: Sequence[float]) -> float:
    """Nearest-rank 95th percentile (0 for no values)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def failure_message(record: ToolCallRecord) -> str:
    text = (record.error or record.output or "failed without a message").strip()
    return " ".join(text.split())[:200]


def to_records(items: Sequence[ToolCallRecord | dict[str, Any]], tool_name: str | None) -> list[ToolCallRecord]:
    out = parse_items(items, ToolCallRecord, "tool_calls")
    for i, record in enumerate(out):
        if tool_name is not None and record.tool_name != tool_name:
            raise InvalidInputError(f"tool_calls[{i}] is a call of {record.tool_name!r}, not {tool_name!r}")
    return out


def tool_filter(tool_name: str) -> Filter:
    return target_filter(tool_name, MemoryType.TOOL, Eq(field="tags", value=GUIDELINE_TAG))


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_FIELD_CHARS else text[:MAX_FIELD_CHARS] + " ..."


@dataclass
class Plan:
    tool_name: str
    change: Change
    history: MemoryNode
    usage: Usage = field(default_factory=Usage)
    rejected: list[Rejection] = field(default_factory=list)


class ToolSummarizer:
    def __init__(self, repo: MemoryRepo, llm: ChatModel, prompts: PromptLibrary, config: ToolConfig) -> None:
        self.repo, self.llm, self.prompts, self.config = repo, llm, prompts, config

    async def plan(self, records: list[ToolCallRecord], tool_name: str, now: datetime | None = None) -> Plan:
        now = now or utcnow()
        old = await guideline_of(self.repo, tool_name)
        raw = _read(RawStats, old.metadata.get("raw")) if old else RawStats()
        raw = raw.add(records)
        stats = raw.stats(self.config.top_failures)
        recent = sorted(records, key=lambda r: (r.success, -r.create_time.timestamp()))[:self.config.recent_calls]
        calls = [{"input": _cut(r.input), "output": _cut(r.output), "success": r.success, "time_cost": r.time_cost,
                  "token_cost": r.token_cost, "error": _cut(r.error) if r.error else ""} for r in recent]
        plan_usage = Usage()
        rejected: list[Rejection] = []
        reply = await self.llm.structured(
            self.prompts.messages("tool/guideline", tool_name=tool_name, stats=stats.model_dump(), calls=calls,
                                  previous=old.content if old else ""),
            Guideline, usage=plan_usage, rejected=rejected, step="tool/guideline")
        text = reply.guideline.strip()
        if not text:  # the statistics are still worth storing; an empty text is no guideline
            text = old.content if old else f"No guideline yet for {tool_name}."
            rejected.append(Rejection(step="tool/guideline", path="guideline", action="defaulted",
                                      reason="an empty guideline: " + ("the previous one is kept" if old else
                                                                       "a placeholder is stored with the statistics")))
        history = MemoryNode(memory_type=MemoryType.HISTORY, target_kind="tool", memory_target=tool_name,
                             message_time=now,
                             content="\n".join(r.model_dump_json() for r in records)[:MAX_CONTENT_CHARS],
                             metadata={"kind": "tool_calls", "calls": len(records)})
        meta = {"stats": stats.model_dump(), "raw": raw.model_dump()}
        if old is None:
            new = MemoryNode(memory_type=MemoryType.TOOL, memory_target=tool_name, content=text,
                             when_to_use=f"Before calling the tool {tool_name}", message_time=now, time_created=now,
                             time_modified=now, tags=[GUIDELINE_TAG], ref_ids=[history.memory_id], metadata=meta)
            change = Change(new=new)
        else:
            new = old.revised(content=text, message_time=now, metadata=meta,
                              ref_ids=(old.ref_ids + [history.memory_id])[-20:])
            change = Change(new=new, old=old, reason=f"{plural(len(records), 'more call')}")
        return Plan(tool_name=tool_name, change=change, history=history, usage=plan_usage, rejected=rejected)

    async def commit(self, plan: Plan) -> SummaryResult:
        (history, _), (node, _) = await self.repo.apply([Change(new=plan.history), plan.change])
        result = SummaryResult(usage=plan.usage, history=[history], rejected=plan.rejected)
        (result.added if plan.change.old is None else result.updated).append(node)
        return result


async def guideline_of(repo: MemoryRepo, tool_name: str) -> MemoryNode | None:
    page = await repo.store.list(repo.collection, flt=tool_filter(tool_name), sort_key="time_modified", limit=1)
    return page.nodes[0] if page.nodes else None


async def retrieve_tools(repo: MemoryRepo, tool_names: list[str]) -> RetrieveResult:
    """Each named tool's guideline and statistics, in the order named (tools without one are left out)."""
    memories: list[RetrievedMemory] = []
    blocks: list[str] = []
    for name in tool_names:
        node = await guideline_of(repo, name)
        if node is None:
            continue
        memories.append(RetrievedMemory(node=node, score=1.0, rank=len(memories) + 1))
        stats = _read(ToolStats, node.metadata.get("stats"))
        lines = [f"Tool {name}: {plural(stats.calls, 'call')}, {100 * stats.success_rate:.0f}% succeeded, "
                 f"{stats.time_mean:.2f} s mean (p95 {stats.time_p95:.2f} s), "
                 f"{stats.tokens_mean:.0f} tokens mean (p95 {stats.tokens_p95:.0f})"]
        if stats.top_failures:
            lines.append("  Common failures: " + "; ".join(f"{f.message} ({f.count}x)" for f in stats.top_failures))
        lines.append("  Guideline: " + node.content.replace("\n", "\n  "))
        blocks.append("\n".join(lines))
    return RetrieveResult(memories=memories, text="\n\n".join(blocks), queries=list(tool_names))
