"""Run the memory-quality set on ReMe's personal summarizer and score what it stores.

    python -m benchmark.quality --ids safety-peanuts,time-moved --output quality.json

Each dialogue's sessions are summarized in order for its user (`summarize_memory`, `now` = the
session's last message), then the user's memories are read back, scored (`score.py`) and deleted,
so dialogues never see each other's memories. The LLM is whatever `--base-url`/`--model` (or
`OPENAI_BASE_URL`, `REME_LLM__MODEL`) name: any OpenAI-compatible endpoint.

With `--replies FILE`, ReMe's calls go through a local proxy (`benchmark.peers.full.LLMProxy`) that
writes each reply to FILE and answers a request it holds from there: a second run of code that
sends the same requests gets the same replies, with no model (`--offline`: a request not held
fails as a failing endpoint's would: its session fails, or, for a repair, the repair is skipped). What such a run measures is what the code does with
those replies; the model's own run-to-run spread is not in it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from benchmark.quality.peers import PEERS, run_peer
from benchmark.quality.score import DATA, Dialogue, Score, load, pick, score
from reme import ReMe, ReMeError
from reme.schema import Usage


async def run_dialogue(reme: ReMe, dialogue: Dialogue) -> dict[str, Any]:
    """One dialogue's sessions summarized in order, its memories read back, scored and deleted. A
    session whose summary fails (the model timed out, say) writes nothing: the row says so
    (`error`, the first failure), the next session still runs, and what was stored is scored."""
    usage = Usage()
    rejected: list[str] = []
    errors: list[str] = []
    changes: list[dict[str, Any]] = []  # what each session wrote: how a memory came and went
    started = time.perf_counter()
    for k, messages in enumerate(dialogue.sessions, start=1):
        now = datetime.fromisoformat(messages[-1]["time"])
        try:
            result = await reme.summarize_memory(messages, user_name=dialogue.user, now=now)
        except ReMeError as exc:
            errors.append(f"session {k}: {type(exc).__name__}: {exc}"[:500])
            print(f"{dialogue.id}: {errors[-1]}", file=sys.stderr, flush=True)
            continue
        usage.add(result.usage)
        changes.append({"session": k, **{what: [f"{n.memory_id[:8]} {n.content}" for n in getattr(result, what)]
                                         for what in ("added", "updated", "deleted")}})
        rejected += [f"{r.step} {r.path} {r.action}: {r.reason}" for r in result.rejected]
    seconds = time.perf_counter() - started
    page = await reme.list_memory(user_name=dialogue.user, memory_type="personal", limit=1000)
    memories = [n.content for n in page]
    sources = [n.metadata.get("source_turns") for n in page]
    await reme.delete_all(user_name=dialogue.user)
    s = score(dialogue, memories)
    return {"id": dialogue.id, "split": dialogue.split, "memories": memories, "sources": sources,
            "rejected": rejected, "changes": changes, "score": s, **({"error": errors[0]} if errors else {}),
            "calls": usage.calls, "steps": usage.steps, "tokens": usage.total_tokens, "seconds": round(seconds, 2)}


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    s = Score()
    for row in rows:
        s.add(row["score"])
    n = len(rows) or 1
    return {"dialogues": len(rows), **s.table_row(), "calls_per_dialogue": round(sum(r["calls"] for r in rows) / n, 2),
            "tokens_per_dialogue": round(sum(r["tokens"] for r in rows) / n),
            "seconds_per_dialogue": round(sum(r["seconds"] for r in rows) / n, 1),
            "failed": sum(1 for r in rows if "error" in r)}


async def run(dialogues: list[Dialogue], reme_kwargs: dict[str, Any], output: Path | None = None) -> dict[str, Any]:
    """Every dialogue through one ReMe; totals for all, and for each split apart. With `output`,
    the report so far is written there after each dialogue (a long run stopped keeps its rows)."""
    rows = []
    async with ReMe(**reme_kwargs) as reme:
        for d in dialogues:
            rows.append(await run_dialogue(reme, d))
            if output is not None:
                save({"lib": "reme", **report_of(rows)}, output)
            print(f"{d.id}: {rows[-1]['score'].recalled}/{rows[-1]['score'].facts} facts, "
                  f"{len(rows[-1]['memories'])} memories, {rows[-1]['seconds']} s", file=sys.stderr, flush=True)
    return {"lib": "reme", **report_of(rows)}


def save(report: dict[str, Any], output: Path) -> None:
    output.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


def report_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    splits = sorted({r["split"] for r in rows})
    return {"all": totals(rows), **{s: totals([r for r in rows if r["split"] == s]) for s in splits},
            "dialogues": [{**{k: v for k, v in r.items() if k != "score"}, "missed": r["score"].missed,
                           "problems": r["score"].problems} for r in rows]}


COLUMNS = ["dialogues", "facts", "recall", "safety_recall", "memories", "precision", "hygiene_share",
           "hygiene_first_person", "hygiene_leading_pronoun", "hygiene_relative_time", "wrong_assistant",
           "wrong_speaker", "wrong_stale", "calls_per_dialogue", "tokens_per_dialogue", "seconds_per_dialogue",
           "failed"]
"""The table's columns; `failed`: dialogues a summary (or a peer) failed on, their facts counted as missed."""


def table(report: dict[str, Any]) -> str:
    parts = [k for k in report if k not in ("dialogues", "lib")]
    lines = ["| " + " | ".join(["part", *COLUMNS]) + " |", "|" + "---|" * (len(COLUMNS) + 1)]
    for part in parts:
        lines.append("| " + " | ".join([part, *(str(report[part].get(c)) for c in COLUMNS)]) + " |")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmark.quality", description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", choices=["reme", *PEERS], default="reme",
                   help="the library whose memories are scored (default reme; mem0 runs in its own environment "
                        "through benchmark/peers)")
    p.add_argument("--envs", default=str(Path(__file__).resolve().parents[2] / ".venvs"),
                   help="where a peer's environment lives (default .venvs; created there on first use)")
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--ids", help="comma-separated dialogue ids (default: all)")
    p.add_argument("--split", choices=["tune", "heldout", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6",
                                       "fresh7", "fresh8", "fresh9", "fresh10", "fresh11",
                                       "fresh12", "fresh13", "fresh14", "fresh15", "fresh16", "fresh17",
                                       "fresh18", "fresh19", "fresh20", "fresh21", "fresh22", "fresh23", "fresh24",
                                       "fresh25", "fresh26", "fresh27", "fresh28", "fresh29",
                                       "fresh30", "fresh31", "fresh32", "fresh33", "fresh34", "fresh35",
                                       "fresh36"],
                   help="only this part")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
    p.add_argument("--model", help="default: REME_LLM__MODEL")
    p.add_argument("--api-key", help="default: OPENAI_API_KEY")
    p.add_argument("--embedding", choices=["local", "openai", "hash"], default="local")
    p.add_argument("--working-dir", help="where the memories live while a dialogue runs (default: a temporary folder)")
    p.add_argument("--output", help="write the full report (memories, misses, problems) as JSON here")
    p.add_argument("--replies", metavar="FILE",
                   help="ReMe's LLM replies are written to FILE (JSON lines), and a request already there is "
                        "answered from it, not by the model")
    p.add_argument("--offline", action="store_true",
                   help="with --replies: a request not in FILE fails (404) instead of going to the model")
    p.add_argument("--rescore", metavar="REPORT",
                   help="run nothing: score the memories of an earlier --output again with the current gold")
    return p


def rescore(report: dict[str, Any], dialogues: list[Dialogue]) -> dict[str, Any]:
    """An earlier report's memories scored against `dialogues` (the gold as it is now)."""
    by_id = {d.id: d for d in dialogues}
    rows = [{**row, "score": score(by_id[row["id"]], row["memories"]), "split": by_id[row["id"]].split}
            for row in report["dialogues"] if row["id"] in by_id]
    return {"lib": report.get("lib", "reme"), **report_of(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    import tempfile

    args = parser().parse_args(argv)
    dialogues = pick(load(Path(args.data)), args.ids, args.split, parser().error)
    if args.rescore:
        report = rescore(json.loads(Path(args.rescore).read_text(encoding="utf-8")), dialogues)
        print(table(report))
        if args.output:
            Path(args.output).write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
        return 0
    llm = {k: v for k, v in (("base_url", args.base_url), ("model", args.model), ("api_key", args.api_key)) if v}
    if args.lib != "reme":
        url, model = args.base_url or os.environ.get("OPENAI_BASE_URL"), args.model or os.environ.get("REME_LLM__MODEL")
        if not url or not model:
            parser().error(f"--lib {args.lib} needs --base-url and --model (or OPENAI_BASE_URL, REME_LLM__MODEL)")
        if args.embedding != "local":
            parser().error(f"--lib {args.lib} embeds with all-MiniLM-L6-v2 (--embedding local) only")
        report = {"lib": args.lib, **report_of(run_peer(args.lib, dialogues, url, model, envs=Path(args.envs)))}
        print(table(report))
        if args.output:
            Path(args.output).write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
        return 0
    if args.offline and not args.replies:
        parser().error("--offline answers from --replies FILE: name one")
    with tempfile.TemporaryDirectory() as tmp:
        kwargs: dict[str, Any] = {"working_dir": args.working_dir or tmp, "embedding": {"backend": args.embedding}}
        proxy = None
        if args.replies:
            from benchmark.peers.full import LLMProxy

            upstream = llm.get("base_url") or os.environ.get("OPENAI_BASE_URL")
            if not upstream and not args.offline:
                parser().error("--replies needs the model's endpoint (--base-url or OPENAI_BASE_URL), or --offline")
            proxy = LLMProxy(upstream or "http://127.0.0.1:9/v1", Path(tmp) / "calls.jsonl", None,
                             replies=Path(args.replies), offline=args.offline).serve()
            llm["base_url"] = proxy.url("reme", "quality")
            kwargs["working_dir"] = args.working_dir or str(Path(tmp) / "store")
        if llm:
            kwargs["llm"] = llm
        try:
            report = asyncio.run(run(dialogues, kwargs, Path(args.output) if args.output else None))
        finally:
            if proxy is not None:
                proxy.shutdown()
        if proxy is not None:
            calls = [json.loads(line) for line in (Path(tmp) / "calls.jsonl").read_text(encoding="utf-8").splitlines()
                     ] if (Path(tmp) / "calls.jsonl").exists() else []
            replayed = sum(1 for c in calls if c.get("replayed"))
            print(f"{replayed} of {len(calls)} LLM requests answered from {args.replies}", file=sys.stderr)
    print(table(report))
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0
