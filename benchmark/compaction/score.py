"""Scoring compaction summaries against the gold of `trajectories.json`: keyword rules, no model.

Patterns are the memory-quality benchmark's (`benchmark.quality.score.Pattern`): keyword groups,
every group needing one of its `|` alternatives, words compared case-folded, `*` a prefix, `none`
words that must be absent. A summary is scored by its parts (`ContextSummary`):

- `goal`: each goal pattern must match the goal text;
- `constraints`: each must match the goal or one constraint line (`anywhere`: any line of the
  summary, for what was kept but not where the agent looks for it);
- `decisions`: each must match one progress or decision line;
- `false`: a progress or decision line matching one (an assistant suggestion stated as done or
  decided) counts once;
- `stale`: a goal, constraint, progress or decision line matching one (a value the user changed,
  still stated) counts once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.quality.score import Counts, Pattern, share

DATA = Path(__file__).with_name("trajectories.json")
PARTS = ("goal", "constraints", "progress", "decisions", "next_steps", "critical_context")


@dataclass
class Trajectory:
    id: str
    split: str
    topics: list[str]
    stages: list[list[dict[str, Any]]]
    goal: list[Pattern]
    constraints: list[Pattern]
    decisions: list[Pattern]
    false: list[Pattern]
    stale: list[Pattern]


def messages_of(turns: list[list[Any]], first_call: int = 0) -> list[dict[str, Any]]:
    """A stage's turns as OpenAI-style messages: `[role, text]`, `["assistant", text, [calls]]`
    (each call `["call", name, arguments]`) and `["tool", result, name]` (answering the latest
    call)."""
    out: list[dict[str, Any]] = []
    n = first_call
    for turn in turns:
        role, text = turn[0], turn[1]
        if role == "assistant" and len(turn) > 2:
            calls = []
            for _, name, args in turn[2]:
                n += 1
                calls.append({"id": f"call_{n}", "type": "function",
                              "function": {"name": name, "arguments": json.dumps(args)}})
            out.append({"role": "assistant", "content": text or None, "tool_calls": calls})
        elif role == "tool":
            out.append({"role": "tool", "tool_call_id": f"call_{n}", "name": turn[2], "content": text})
        else:
            out.append({"role": role, "content": text})
    return out


def load(path: Path = DATA) -> list[Trajectory]:
    out = []
    for t in json.loads(path.read_text(encoding="utf-8"))["trajectories"]:
        stages, calls = [], 0
        for turns in t["stages"]:
            stages.append(messages_of(turns, calls))
            calls += sum(len(turn[2]) for turn in turns if turn[0] == "assistant" and len(turn) > 2)
        out.append(Trajectory(id=t["id"], split=t["split"], topics=t["topics"], stages=stages,
                              **{k: [Pattern.of(p) for p in t.get(k, [])]
                                 for k in ("goal", "constraints", "decisions", "false", "stale")}))
    return out


def lines(summary: dict[str, Any], *parts: str) -> list[str]:
    out: list[str] = []
    for part in parts:
        value = summary.get(part)
        if isinstance(value, str):
            out += [value] if value.strip() else []
        elif isinstance(value, list):
            out += [str(v) for v in value if str(v).strip()]
    return out


@dataclass
class Score(Counts):
    """One trajectory's last summary scored: counts, so that sets of trajectories add up."""

    goal: int = 0
    goal_kept: int = 0
    constraints: int = 0
    constraints_kept: int = 0
    constraints_anywhere: int = 0
    decisions: int = 0
    decisions_kept: int = 0
    false_progress: int = 0
    stale: int = 0
    missed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def table_row(self) -> dict[str, Any]:
        return {"constraints": self.constraints, "constraint_survival": share(self.constraints_kept, self.constraints),
                "constraints_anywhere": share(self.constraints_anywhere, self.constraints),
                "goal_recall": share(self.goal_kept, self.goal),
                "decisions": self.decisions, "decision_recall": share(self.decisions_kept, self.decisions),
                "false_progress": self.false_progress, "stale": self.stale}


def score(t: Trajectory, summary: dict[str, Any]) -> Score:
    """The last summary's parts (`ContextSummary.model_dump()`, or any dict with those keys)
    against `t`'s gold."""
    s = Score()
    goal = lines(summary, "goal")
    where = goal + lines(summary, "constraints")
    everywhere = lines(summary, *PARTS, *(k for k in summary if k not in PARTS))
    done = lines(summary, "progress", "decisions")
    for kind, patterns, pool in (("goal", t.goal, goal), ("constraints", t.constraints, where),
                                 ("decisions", t.decisions, done)):
        for i, p in enumerate(patterns):
            hit = any(p.matches(line) for line in pool)
            setattr(s, kind, getattr(s, kind) + 1)
            setattr(s, f"{kind}_kept", getattr(s, f"{kind}_kept") + hit)
            if not hit:
                s.missed.append(f"{t.id}#{kind}{i}")
            if kind == "constraints":
                s.constraints_anywhere += any(p.matches(line) for line in everywhere)
    for line in done:
        if any(p.matches(line) for p in t.false):
            s.false_progress += 1
            s.problems.append(f"{t.id}: false progress {line!r}")
    for line in where + done:
        if any(p.matches(line) for p in t.stale):
            s.stale += 1
            s.problems.append(f"{t.id}: stale {line!r}")
    return s
