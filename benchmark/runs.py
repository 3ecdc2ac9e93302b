"""What the benchmark runs share, in the standard library only (the AppWorld harness runs in
AppWorld's own environment, which cannot import pydantic 2 and so not `reme`): a progress bar,
resumable checkpoints, concurrent jobs, the Avg@k / Pass@k summary and the command-line options
of the agent benchmarks."""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import os
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

if TYPE_CHECKING:
    from openai import AsyncOpenAI

T = TypeVar("T")


def progress(items: Iterable[Any], total: int, desc: str) -> Iterator[Any]:
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with the bench extra
        yield from items
        return
    yield from tqdm(items, total=total, desc=desc, unit="q" if "question" in desc else "it", file=sys.stderr,
                    disable=None)


def jsonl_rows(path: Path, header: dict[str, Any], keep: bool, refusal: Callable[[dict[str, Any]], str]) -> list[Any]:
    """The rows of a JSON-lines file whose first line records what they depend on: with `keep`
    and the file there, the rows after that line (SystemExit with `refusal(first line)` when it
    is not `header`); else the file starts anew with `header` and there are none."""
    if keep and path.exists():
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if lines and lines[0] != header:
            raise SystemExit(refusal(lines[0]))
        return lines[1:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")
    return []


class Checkpoint:
    """Finished work of a run, one JSON line per unit in `<output>.partial.jsonl`, so `--resume`
    skips it. The first line records what the results depend on; resuming with other settings
    is refused."""

    def __init__(self, path: Path, settings: dict[str, Any], resume: bool) -> None:
        self.path = path
        rows = jsonl_rows(path, {"settings": settings}, resume, lambda old: (
            f"--resume: {path} was started with other settings:\n  {old.get('settings')}\n"
            f"now:\n  {settings}\nrun without --resume to start over"))
        self.done: dict[str, Any] = {row["key"]: row["value"] for row in rows}

    def add(self, key: str, value: Any) -> None:
        self.done[key] = value
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "value": value}) + "\n")


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


async def run_jobs(jobs: Mapping[str, Callable[[], Awaitable[Any]]], checkpoint: Checkpoint, concurrency: int,
                   desc: str) -> None:
    """Run each job not yet in the checkpoint, `concurrency` at a time, and checkpoint its result
    as soon as it finishes (an interrupted run resumes from there)."""
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(key: str, job: Callable[[], Awaitable[Any]]) -> None:
        async with limit:
            checkpoint.add(key, await job())

    todo = [asyncio.create_task(one(k, job)) for k, job in jobs.items() if k not in checkpoint.done]
    try:
        for finished in progress(asyncio.as_completed(todo), len(todo), desc):
            await finished
    finally:
        for task in todo:
            task.cancel()


async def run_phase(checkpoint: Checkpoint, phase: str, tasks: Mapping[str, T], runs: int,
                    one: Callable[[T, int], Awaitable[Any]], concurrency: int, desc: str) -> dict[str, list[Any]]:
    """`runs` runs of each task (`one(task, run)`), checkpointed as `<phase>/<task id>/<run>` by
    `run_jobs`; each task id's results in run order, those of an earlier, resumed run included."""
    keys = {(task_id, run): f"{phase}/{task_id}/{run}" for task_id in tasks for run in range(runs)}
    await run_jobs({key: functools.partial(one, tasks[task_id], run) for (task_id, run), key in keys.items()},
                   checkpoint, concurrency, desc)
    return {task_id: [checkpoint.done[keys[(task_id, run)]] for run in range(runs)] for task_id in tasks}


def at_k(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Avg@k (the mean score over every task and run) and Pass@k (the share of tasks that some
    run solved, `success`), with tokens and seconds per run. `runs` maps a task to its k runs."""
    flat = [r for task_runs in runs.values() for r in task_runs]
    if not flat:
        return {"tasks": 0, "runs": 0}
    k = min(len(v) for v in runs.values())
    return {
        "tasks": len(runs), "runs": k,
        f"avg@{k}": round(statistics.fmean(float(r["score"]) for r in flat), 4),
        f"pass@{k}": round(statistics.fmean(float(any(r["success"] for r in v)) for v in runs.values()), 4),
        "prompt_tokens_per_run": round(statistics.fmean(r["prompt_tokens"] for r in flat), 1),
        "completion_tokens_per_run": round(statistics.fmean(r["completion_tokens"] for r in flat), 1),
        "seconds_per_run": round(statistics.fmean(r["seconds"] for r in flat), 2),
    }


def markdown(title: str, rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> str:
    """A markdown table of `rows` (one per phase), columns `keys`, then a blank line."""
    lines = [f"## {title}", "", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(row.get(key, "")) for key in keys) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_report(output: Path, report: Mapping[str, Any], table: str) -> None:
    """The report as JSON at `output`, its table as markdown beside it (`.md`) and on stdout."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    output.with_suffix(".md").write_text(table, encoding="utf-8")
    print(table)


def agent_arguments(p: argparse.ArgumentParser, output: str) -> None:
    """The options every agent benchmark takes: the endpoint, the memory mode, runs and outputs."""
    p.add_argument("--model", required=True, help="the agent's model at the endpoint")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
    p.add_argument("--api-key", help="default: OPENAI_API_KEY, else EMPTY")
    p.add_argument("--memory", nargs="+", default=["none"], metavar="MODE",
                   help="none | pool FILE | learn (default: none)")
    p.add_argument("--tasks", type=int, default=None, help="only the first N tasks of each split")
    p.add_argument("--runs", type=int, default=4, help="runs per task, the k of Avg@k and Pass@k (default: 4)")
    p.add_argument("--temperature", type=float, default=0.9, help="default 0.9, as the original experiments")
    p.add_argument("--extra-body", type=json.loads, default=None,
                   help='JSON added to every chat request, e.g. \'{"enable_thinking": false}\'')
    p.add_argument("--top-k", type=int, default=5, help="lessons retrieved per task (default: 5)")
    p.add_argument("--output", default=output, help="JSON report; the table goes beside it (.md)")
    p.add_argument("--resume", action="store_true", help="continue from <output>.partial.jsonl")
    p.add_argument("--max-retries", type=int, default=4, help="of each LLM call (default: 4)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per LLM call (default: 120)")


def parse_agent_args(p: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parsed arguments, `--memory` checked: `none`, `learn`, or `pool FILE` naming a file."""
    args = p.parse_args(argv)
    mode = args.memory
    if mode[0] not in ("none", "pool", "learn") or len(mode) != (2 if mode[0] == "pool" else 1):
        p.error("--memory takes none, learn, or pool FILE")
    if mode[0] == "pool" and not Path(mode[1]).is_file():
        p.error(f"--memory pool: no file {mode[1]}")
    return args


def chat_client(args: argparse.Namespace) -> AsyncOpenAI:
    """The agent's client: `--base-url` / `--api-key`, else OPENAI_BASE_URL / OPENAI_API_KEY (or EMPTY)."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=args.base_url or os.environ.get("OPENAI_BASE_URL"),
                       api_key=args.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
                       max_retries=args.max_retries, timeout=args.timeout)


async def ask(client: AsyncOpenAI, usage: dict[str, int], **request: Any) -> Any:
    """One chat completion (`request`: the create arguments); its tokens are added to `usage`
    (`prompt_tokens`, `completion_tokens`). An endpoint refusing the request raises openai's
    `BadRequestError`."""
    response = await client.chat.completions.create(**request)
    if response.usage is not None:
        usage["prompt_tokens"] += response.usage.prompt_tokens
        usage["completion_tokens"] += response.usage.completion_tokens
    return response
