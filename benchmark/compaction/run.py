"""Run the compaction-quality set through ReMe's context compaction and score the summaries.

    python -m benchmark.compaction --output compaction.json
    python -m benchmark.compaction --base-url http://127.0.0.1:8080/v1 --model qwen1.5b --split tune

Each trajectory's stages are compacted in order with `compact_context` (every message of a
stage compacted, the summary building on the previous stage's), and the last summary is scored
(`score.py`). The LLM is the scripted loopback server of the tests (an extractive stand-in: the
lines it is shown, cut short, as critical context) unless `--base-url` (or `OPENAI_BASE_URL`)
names an OpenAI-compatible endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from benchmark.compaction.score import DATA, Score, Trajectory, load, score
from benchmark.quality.score import pick
from reme import ReMe
from reme.memory import context
from reme.schema import Usage
from reme.working import ContextSummary, estimate_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

COMPACT = "working memory of an AI agent"


def extractive_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted server's compaction: the first user line as the goal, and the previous
    summary's lines and each message line, cut to 100 characters, as critical context."""
    from openai_server import prompt_of

    prompt = prompt_of(body)
    previous = re.findall(r"^- (.*)$", prompt.split("Previous summary:")[-1].split("Messages to summarize")[0],
                          re.MULTILINE)
    new = re.findall(r"^\[\d+\] (.*)$", prompt.split("Messages to summarize")[-1], re.MULTILINE)
    users = [line.split(": ", 1)[-1] for line in new if line.startswith("user")]
    return {"goal": users[0][:200] if users else "continue the conversation",
            "critical_context": (previous + [line[:100] for line in new])[-40:]}


async def run_one(reme: ReMe, t: Trajectory) -> dict[str, Any]:
    usage = Usage()
    summary, stages, replies = "", [], []
    original = context.checked

    def recorded(reply: ContextSummary, *args: Any, **kwargs: Any) -> ContextSummary:
        replies.append(reply.model_dump())  # the model's reply before the checks, to study them apart
        return original(reply, *args, **kwargs)

    started = time.perf_counter()
    context.checked = recorded  # type: ignore[assignment]
    try:
        for messages in t.stages:
            out = await reme.compact_context(messages, previous_summary=summary, threshold=1, reserve=0)
            usage.add(out.usage)
            summary = out.summary
            stages.append(out.structured.model_dump() if out.structured is not None else {})
    finally:
        context.checked = original  # type: ignore[assignment]
    seconds = time.perf_counter() - started
    return {"id": t.id, "split": t.split, "summaries": stages, "replies": replies, "summary_text": summary,
            "summary_tokens": estimate_tokens(summary), "score": score(t, stages[-1]),
            "calls": usage.calls, "tokens": usage.total_tokens, "seconds": round(seconds, 2)}


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    s = Score()
    for row in rows:
        s.add(row["score"])
    n = len(rows) or 1
    stages = sum(len(r["summaries"]) for r in rows) or 1
    return {"trajectories": len(rows), **s.table_row(),
            "calls_per_compaction": round(sum(r["calls"] for r in rows) / stages, 2),
            "tokens_per_compaction": round(sum(r["tokens"] for r in rows) / stages),
            "summary_tokens": round(sum(r["summary_tokens"] for r in rows) / n),
            "seconds_per_compaction": round(sum(r["seconds"] for r in rows) / stages, 1)}


def report_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    splits = sorted({r["split"] for r in rows})
    return {"all": totals(rows), **{s: totals([r for r in rows if r["split"] == s]) for s in splits},
            "trajectories": [{**{k: v for k, v in r.items() if k != "score"}, "missed": r["score"].missed,
                              "problems": r["score"].problems} for r in rows]}


COLUMNS = ["trajectories", "constraints", "constraint_survival", "constraints_anywhere", "goal_recall", "decisions",
           "decision_recall", "false_progress", "stale", "calls_per_compaction", "tokens_per_compaction",
           "summary_tokens", "seconds_per_compaction"]


def table(report: dict[str, Any]) -> str:
    parts = [k for k in report if k not in ("trajectories", "model")]
    out = ["| " + " | ".join(["part", *COLUMNS]) + " |", "|" + "---|" * (len(COLUMNS) + 1)]
    out += ["| " + " | ".join([p, *(str(report[p].get(c)) for c in COLUMNS)]) + " |" for p in parts]
    return "\n".join(out)


def save(report: dict[str, Any], output: Path) -> None:
    output.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


async def run(trajectories: list[Trajectory], reme_kwargs: dict[str, Any],
              output: Path | None = None) -> dict[str, Any]:
    """Every trajectory through one ReMe; totals for all and for each split. With `output`, the
    report so far is written after each trajectory (a long run stopped keeps its rows)."""
    rows = []
    model = reme_kwargs.get("llm", {}).get("model")
    async with ReMe(**reme_kwargs) as reme:
        for t in trajectories:
            rows.append(await run_one(reme, t))
            if output is not None:
                save({"model": model, **report_of(rows)}, output)
            s = rows[-1]["score"]
            print(f"{t.id}: constraints {s.constraints_kept}/{s.constraints}, decisions {s.decisions_kept}/"
                  f"{s.decisions}, false {s.false_progress}, stale {s.stale}, {rows[-1]['seconds']} s",
                  file=sys.stderr, flush=True)
    return {"model": model, **report_of(rows)}


def rescore(report: dict[str, Any], trajectories: list[Trajectory]) -> dict[str, Any]:
    """An earlier report's summaries scored against `trajectories` (the gold as it is now)."""
    by_id = {t.id: t for t in trajectories}
    rows = [{**row, "score": score(by_id[row["id"]], row["summaries"][-1]), "split": by_id[row["id"]].split}
            for row in report["trajectories"] if row["id"] in by_id]
    return {"model": report.get("model"), **report_of(rows)}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmark.compaction", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--ids", help="comma-separated trajectory ids (default: all)")
    p.add_argument("--split", choices=["tune", "heldout"], help="only this part")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL, else the scripted server)")
    p.add_argument("--model", help="default: REME_LLM__MODEL")
    p.add_argument("--api-key", help="default: OPENAI_API_KEY")
    p.add_argument("--output", help="write the full report (every stage's summary, misses, problems) as JSON here")
    p.add_argument("--rescore", metavar="REPORT",
                   help="run nothing: score the summaries of an earlier --output again with the current gold")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    trajectories = pick(load(Path(args.data)), args.ids, args.split, parser().error, "trajectory")
    output = Path(args.output) if args.output else None
    if args.rescore:
        report = rescore(json.loads(Path(args.rescore).read_text(encoding="utf-8")), trajectories)
    else:
        base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
        server = None
        if base_url:
            llm = {"base_url": base_url, "model": args.model or os.environ.get("REME_LLM__MODEL") or "local",
                   "api_key": args.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY", "timeout": 900,
                   "max_tokens": int(os.environ.get("REME_LLM__MAX_TOKENS") or 1024)}
        else:
            from openai_server import OpenAITestServer

            server = OpenAITestServer().__enter__()
            server.script(COMPACT, extractive_reply)
            llm = {"base_url": server.base_url, "api_key": "k", "model": "scripted", "max_retries": 0}
        try:
            with tempfile.TemporaryDirectory() as tmp:
                report = asyncio.run(run(trajectories, {"working_dir": tmp, "embedding": {"backend": "hash"},
                                                        "llm": llm}, output))
        finally:
            if server is not None:
                server.__exit__(None, None, None)
    print(table(report))
    if output is not None:
        save(report, output)
    return 0
