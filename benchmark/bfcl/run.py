"""`python -m benchmark.bfcl`: BFCL-v3 multi-turn base with an agent on any OpenAI-compatible
endpoint, with or without ReMe's task memory.

    python -m benchmark.bfcl --model qwen3-8b --memory none --runs 4 --output results/bfcl-none.json
    python -m benchmark.bfcl --model qwen3-8b --memory pool ../shared/data/task_memory/bfcl_qwen3_8b.jsonl ...
    python -m benchmark.bfcl --model qwen3-8b --memory learn ...

Memory modes: `none`; `pool FILE` (a pool of the original ReMe, imported as the task's
procedural memory); `learn` (the train split runs `--runs` times without memory, its
trajectories and their scores are summarized into procedural memory and its tool calls into
tool memory, then the evaluated split runs with them). With memory, each run retrieves lessons
for the task's first request (and, after learning, the guidelines of the task's tools), puts them
into that request as the original ReMe did, and reports the outcome with `record_usage`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

from benchmark.bfcl.agent import run_task, trajectory
from benchmark.bfcl.data import BFCL_VERSION, DataError, Task, load_tasks, package_data, split_ids
from benchmark.embedding import embedding_config
from benchmark.runs import (Checkpoint, agent_arguments, at_k, chat_client, file_digest, markdown, parse_agent_args,
                            run_phase, write_report)
from reme import ReMe, ToolCallRecord

TASK_NAME = "bfcl"


class Memory:
    """ReMe as the agent uses it: lessons (and tool guidelines) before a run, usage after it."""

    def __init__(self, reme: ReMe, top_k: int, tool_memory: bool) -> None:
        self.reme, self.top_k, self.tool_memory = reme, top_k, tool_memory

    async def experience(self, task: Task) -> tuple[str, list[str]]:
        """The text for the task's first request and the ids of the lessons in it."""
        ctx = await self.reme.retrieve_memory(task.query, task_name=TASK_NAME, top_k=self.top_k)
        text = ctx.text
        if self.tool_memory:
            guide = await self.reme.retrieve_memory(tool_name=sorted({f["name"] for f in task.functions}))
            if guide.text:
                text = f"{text}\n\nTool guidelines:\n{guide.text}".strip()
        return text, [m.node.memory_id for m in ctx.memories]

    async def record(self, ids: list[str], success: bool) -> None:
        if ids:
            await self.reme.record_usage(ids, success, task_name=TASK_NAME)

    async def learn(self, tasks: Sequence[Task], runs: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
        """Every task's runs summarized together (successes, failures and their comparison), then
        every executed call into one tool memory per tool."""
        results = await asyncio.gather(*(self.reme.summarize_memory(
            trajectories=[trajectory(t, r) for r in runs[t.id]], task_name=TASK_NAME) for t in tasks if runs[t.id]))
        calls = [ToolCallRecord(tool_name=c["name"], input=c["arguments"], output=c["output"][:4000],
                                success=c["success"], error="" if c["success"] else c["output"][:500])
                 for t in tasks for r in runs[t.id] for c in r["calls"]]
        tools = await self.reme.summarize_memory(tool_calls=calls) if calls else None
        return {"lessons": sum(len(r.added) for r in results), "tools": len(tools.added + tools.updated) if tools else 0}


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(args.data) if args.data else package_data()
    mode = args.memory[0]
    pool = Path(args.memory[1]) if mode == "pool" else None
    ids = split_ids(args.split)
    if args.task_ids:
        unknown = [i for i in args.task_ids.split(",") if i not in ids]
        if unknown:
            raise DataError(f"--task-ids: {', '.join(unknown)} not in the {args.split} split")
        ids = args.task_ids.split(",")
    tasks = load_tasks(data, ids[:args.tasks])
    train = load_tasks(data, split_ids("train")[:args.tasks]) if mode == "learn" else []
    settings = {"model": args.model, "memory": mode, "pool": file_digest(pool) if pool else None,
                "split": args.split, "tasks": [t.id for t in tasks], "runs": args.runs,
                "temperature": args.temperature, "top_k": args.top_k, "bfcl": BFCL_VERSION,
                "embedding": embedding_config(args.embedding, args.embedding_model) if mode != "none" else None,
                "memory_model": (args.memory_model or args.model) if mode == "learn" else None,
                **({"json_tool_calls": True} if args.json_tool_calls else {})}
    output = Path(args.output)
    checkpoint = Checkpoint(output.with_suffix(".partial.jsonl"), settings, args.resume)
    working_dir = Path(args.working_dir or output.with_suffix(".store"))
    if not args.resume and working_dir.exists():
        shutil.rmtree(working_dir)
    client = chat_client(args)
    extra_body = args.extra_body
    reme = None if mode == "none" else ReMe(
        working_dir=working_dir, embedding=embedding_config(args.embedding, args.embedding_model),
        llm={"model": args.memory_model or args.model, "base_url": str(client.base_url),
             "api_key": client.api_key, "extra_body": extra_body or {}} if mode == "learn" else {})
    try:
        memory = None
        if reme is not None:
            await reme.open()
            memory = Memory(reme, args.top_k, tool_memory=mode == "learn")
        if pool is not None and memory is not None:
            await memory.reme.import_memory(pool, format="reme-jsonl", task_name=TASK_NAME)

        async def one(phase: str, use: Memory | None, task: Task, run: int) -> dict[str, Any]:
            text, ids = await use.experience(task) if use else ("", [])
            result = await run_task(client, args.model, task, tag=f"reme_{phase}_{run}", experience=text,
                                    temperature=args.temperature, extra_body=extra_body,
                                    json_calls=args.json_tool_calls)
            if use:
                await use.record(ids, result["success"])
            if phase != "learn":  # only learning needs the conversation; the calls are kept, short
                del result["messages"]
                result["calls"] = [{"name": c["name"], "arguments": c["arguments"][:300], "success": c["success"]}
                                   for c in result["calls"]]
            return {**result, "memory_ids": ids}

        phases: dict[str, dict[str, list[dict[str, Any]]]] = {}
        if mode == "learn" and memory is not None:
            phases["learn"] = await run_phase(checkpoint, "learn", {t.id: t for t in train}, args.runs,
                                              functools.partial(one, "learn", None), args.concurrency,
                                              "train runs (to learn from)")
            if "learned" not in checkpoint.done:
                checkpoint.add("learned", await memory.learn(train, phases["learn"]))
        phases[args.split] = await run_phase(checkpoint, args.split, {t.id: t for t in tasks}, args.runs,
                                             functools.partial(one, args.split, memory), args.concurrency,
                                             f"{args.split} runs")
    finally:
        await client.close()
        if reme is not None:
            await reme.close()
    return report(args, settings, phases, checkpoint.done.get("learned"))


def report(args: argparse.Namespace, settings: dict[str, Any], phases: dict[str, dict[str, list[dict[str, Any]]]],
           learned: dict[str, int] | None) -> dict[str, Any]:
    slim = ("score", "success", "error_type", "error_message", "prompt_tokens", "completion_tokens", "seconds",
            "steps", "text_calls", "memory_ids", "calls")
    return {"benchmark": "BFCL-v3 multi_turn_base", "settings": settings, "learned": learned,
            "summary": {phase: at_k(runs) for phase, runs in phases.items()},
            "tasks": {phase: {task: [{k: r.get(k) for k in slim} for r in task_runs] for task, task_runs in runs.items()}
                      for phase, runs in phases.items()}}


def table(result: dict[str, Any]) -> str:
    k = result["settings"]["runs"]
    keys = ["split", "memory", "tasks", "runs", f"avg@{k}", f"pass@{k}", "prompt_tokens_per_run",
            "completion_tokens_per_run", "seconds_per_run"]
    rows = [{"split": "train (learned from)" if phase == "learn" else phase,
             "memory": "none" if phase == "learn" else result["settings"]["memory"], **summary}
            for phase, summary in result["summary"].items()]
    return markdown(f"BFCL-v3 multi_turn_base, {result['settings']['model']}", rows, keys)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmark.bfcl", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    agent_arguments(p, "results/bfcl.json")
    p.add_argument("--split", choices=["train", "val", "all"], default="val", help="the split evaluated (default: val)")
    p.add_argument("--concurrency", type=int, default=8, help="runs in flight (default: 8)")
    p.add_argument("--memory-model", help="the model ReMe summarizes with in learn mode (default: --model)")
    p.add_argument("--embedding", choices=["local", "openai", "hash"], default="local")
    p.add_argument("--embedding-model", default=None)
    p.add_argument("--data", help=f"a BFCL data/ folder (default: the installed bfcl-eval=={BFCL_VERSION})")
    p.add_argument("--working-dir", help="ReMe's store (default: beside the output, .store)")
    p.add_argument("--task-ids", help="only these tasks of the split, comma-separated (e.g. multi_turn_base_1)")
    p.add_argument("--json-tool-calls", action="store_true",
                   help="take tool calls the model writes as JSON in its reply text (for endpoints that return "
                        "no tool_calls, e.g. llama.cpp with a small Qwen); off: BFCL's handler as it is")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_agent_args(parser(), argv)
    try:
        result = asyncio.run(evaluate(args))
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_report(Path(args.output), result, table(result))
    return 0
