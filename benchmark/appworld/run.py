"""`python -m benchmark.appworld`: AppWorld with a ReAct code agent on any OpenAI-compatible
endpoint, with or without ReMe's task memory, which it reaches through `reme serve` over HTTP
(AppWorld's environment cannot import ReMe). See benchmark/appworld/README.md.

Memory modes: `none`; `pool FILE` (a pool of the original ReMe, imported into the service);
`learn` (the `--learn-dataset` tasks run `--runs` times without memory, their trajectories and
test scores are summarized into lessons, then `--dataset` runs with them). With memory, each
run retrieves lessons for the task's instruction, puts them into the prompt, and reports the
outcome with `record_usage`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import os
import statistics
import sys
from pathlib import Path
from typing import Any, Sequence

from benchmark.appworld.agent import WorldFactory, run_task
from benchmark.appworld.memory import RemoteMemory, ServiceError
from benchmark.runs import (Checkpoint, agent_arguments, at_k, chat_client, file_digest, markdown, parse_agent_args,
                            run_phase, write_report)

Runs = dict[str, list[dict[str, Any]]]


class DataError(Exception):
    """AppWorld's data is not where AppWorld looks for it."""


def task_ids(world: Any, dataset: str) -> list[str]:
    try:
        return list(world.load_task_ids(dataset))
    except Exception as exc:  # AppWorld raises a bare Exception for a missing data directory
        raise DataError(f"no AppWorld {dataset} tasks ({exc}); get the data once with `appworld download data` "
                        f"(online) and run from that directory, or set APPWORLD_ROOT to it") from None


def scenario_of(task_id: str) -> str:
    """AppWorld's tasks come in scenarios of three: `<scenario>_<n>`."""
    return task_id.rsplit("_", 1)[0]


def summary(runs: Runs) -> dict[str, Any]:
    """Avg@k and Pass@k of task goal completion, the mean share of tests passed, and scenario
    goal completion (a scenario counts in a run when all its tasks succeeded in that run): its
    mean over runs, and its pass@k (some run completed the whole scenario)."""
    out = at_k(runs)
    if not runs:
        return out
    k = out["runs"]
    scenarios: dict[str, list[str]] = {}
    for task_id in runs:
        scenarios.setdefault(scenario_of(task_id), []).append(task_id)
    complete = [[all(runs[t][r]["success"] for t in tasks) for tasks in scenarios.values()] for r in range(k)]
    out.update({"test_pass_rate": round(statistics.fmean(r["test_pass_rate"] for v in runs.values() for r in v), 4),
                "scenarios": len(scenarios), f"sgc_avg@{k}": round(statistics.fmean(map(statistics.fmean, complete)), 4),
                f"sgc_pass@{k}": round(statistics.fmean(any(c[i] for c in complete) for i in range(len(scenarios))),
                                       4)})
    return out


def trajectory(run: dict[str, Any]) -> dict[str, Any]:
    """A run as a ReMe trajectory: the instruction instead of the long onboarding prompt, then
    the code and outputs; scored by the share of tests it passed."""
    messages = [{"role": "user", "content": run["instruction"]}, *run["messages"][1:]]
    return {"messages": [m for m in messages if m["content"]], "score": 1.0 if run["success"] else run["test_pass_rate"],
            "query": run["instruction"]}


async def evaluate(args: argparse.Namespace, world: Any) -> dict[str, Any]:
    mode = args.memory[0]
    pool = Path(args.memory[1]) if mode == "pool" else None
    tasks = task_ids(world, args.dataset)[:args.tasks]
    train = task_ids(world, args.learn_dataset)[:args.tasks] if mode == "learn" else []
    settings = {"model": args.model, "memory": mode, "pool": file_digest(pool) if pool else None,
                "dataset": args.dataset, "learn_dataset": args.learn_dataset if train else None, "tasks": tasks,
                "runs": args.runs, "temperature": args.temperature, "top_k": args.top_k,
                "max_interactions": args.max_interactions, "task_name": args.task_name if mode != "none" else None}
    output = Path(args.output)
    checkpoint = Checkpoint(output.with_suffix(".partial.jsonl"), settings, args.resume)
    memory = None if mode == "none" else RemoteMemory(args.reme_url, args.task_name, token=args.reme_token,
                                                       top_k=args.top_k)
    client = chat_client(args)
    extra_body = args.extra_body
    make_world: WorldFactory = world.AppWorld
    try:
        if pool is not None and memory is not None and "import" not in checkpoint.done:
            checkpoint.add("import", memory.import_pool(pool))

        async def one(phase: str, use: RemoteMemory | None, task_id: str, run: int) -> dict[str, Any]:
            result = await run_task(client, args.model, make_world, task_id,
                                    experiment=f"{args.experiment}_{phase}_run_{run}",
                                    recall=use.experience if use else None, temperature=args.temperature,
                                    max_interactions=args.max_interactions, max_output=args.max_output,
                                    extra_body=extra_body)
            if use:
                await asyncio.to_thread(use.record, result["memory_ids"], result["success"])
            if phase != "learn":  # only learning needs the conversation
                del result["messages"]
            return result

        phases: dict[str, Runs] = {}
        if train and memory is not None:
            phases["learn"] = await run_phase(checkpoint, "learn", {t: t for t in train}, args.runs,
                                              functools.partial(one, "learn", None), args.concurrency,
                                              f"{args.learn_dataset} runs")
            if "learned" not in checkpoint.done:
                added = [memory.learn([trajectory(r) for r in runs]) for runs in phases["learn"].values()]
                checkpoint.add("learned", sum(added))
        phases[args.dataset] = await run_phase(checkpoint, "eval", {t: t for t in tasks}, args.runs,
                                               functools.partial(one, "eval", memory), args.concurrency,
                                               f"{args.dataset} runs")
    finally:
        await client.close()
    slim = ("success", "score", "test_pass_rate", "prompt_tokens", "completion_tokens", "seconds", "interactions",
            "memory_ids", "refused")
    return {"benchmark": "AppWorld", "settings": settings, "learned": checkpoint.done.get("learned"),
            "imported": checkpoint.done.get("import"),
            "summary": {phase: summary(runs) for phase, runs in phases.items()},
            "tasks": {phase: {t: [{k: r.get(k) for k in slim} for r in v] for t, v in runs.items()}
                      for phase, runs in phases.items()}}


def table(result: dict[str, Any]) -> str:
    k = result["settings"]["runs"]
    keys = ["dataset", "memory", "tasks", "runs", f"avg@{k}", f"pass@{k}", f"sgc_avg@{k}", f"sgc_pass@{k}",
            "test_pass_rate", "prompt_tokens_per_run", "completion_tokens_per_run", "seconds_per_run"]
    names = {"learn": f"{result['settings']['learn_dataset']} (learned from)"}
    rows = [{"dataset": names.get(phase, phase), "memory": "none" if phase == "learn" else result["settings"]["memory"],
             **s} for phase, s in result["summary"].items()]
    return markdown(f"AppWorld, {result['settings']['model']}", rows, keys)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmark.appworld", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    agent_arguments(p, "results/appworld.json")
    p.add_argument("--reme-url", default=os.environ.get("REME_URL", "http://127.0.0.1:8000"),
                   help="a running `reme serve` (default: REME_URL, else http://127.0.0.1:8000)")
    p.add_argument("--reme-token", default=os.environ.get("REME_TOKEN"), help="default: REME_TOKEN")
    p.add_argument("--task-name", default="appworld", help="the ReMe task the lessons belong to")
    p.add_argument("--dataset", default="dev", help="train, dev, test_normal or test_challenge (default: dev)")
    p.add_argument("--learn-dataset", default="train", help="what learn mode learns from (default: train)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="runs in flight, each with its own world in this process (default: 1)")
    p.add_argument("--max-interactions", type=int, default=30)
    p.add_argument("--max-output", type=int, default=2048, help="characters of each execution output shown")
    p.add_argument("--experiment", default="reme", help="AppWorld experiment name prefix")
    p.add_argument("--world", default="appworld", help="the module giving AppWorld and load_task_ids")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_agent_args(parser(), argv)
    try:
        world = importlib.import_module(args.world)
    except ImportError as exc:
        print(f"error: cannot import {args.world} ({exc}); run benchmark/appworld/setup.sh and use its environment",
              file=sys.stderr)
        return 2
    try:
        result = asyncio.run(evaluate(args, world))
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 6
    write_report(Path(args.output), result, table(result))
    return 0
