"""Every LLM pipeline against a real model: llama.cpp serving SmolLM2-135M-Instruct on 127.0.0.1
(`benchmark/local_llm.py`, installed from PyPI by `scripts/setup.sh`), through the public facade.

The smallest model that exercises the plumbing: what it writes is poor, so these tests assert
structure (memories written, typed, scoped, cited; statistics exact; no LLM step skipped), never
text. The documentation's `real-model` blocks (docs/real-model.md) run here too, with this model
in place of the one they name. `pytest -m "not real_model"` leaves this tier out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest

from benchmark.local_llm import serve
from docs_support import ROOT, doc_blocks, user_environment
from reme import MemoryType, ReMe, ToolCallRecord, Trajectory

pytestmark = pytest.mark.real_model

MODEL = os.environ.get("LOCAL_LLM_TEST_MODEL", "smollm2")  # `LOCAL_LLM_TEST_MODEL=qwen1.5b pytest tests/real_model`
DOCS_MODEL = "qwen1.5b"  # the model the documentation names; its blocks run here with MODEL instead
LLM = {"api_key": "local", "model": MODEL, "timeout": 600, "max_tokens": 320 if MODEL == "smollm2" else 1024,
       "max_retries": 1, "temperature": 0.0}

CHAT = [
    {"role": "user", "name": "Alice", "content": "Hi! I moved to Berlin from Lisbon last week.",
     "time": "2024-05-03T10:00:00Z"},
    {"role": "assistant", "content": "Welcome to Berlin! How are you settling in?", "time": "2024-05-03T10:01:00Z"},
    {"role": "user", "name": "Alice", "content": "Good. I work as a nurse, and I always book a window seat on trains.",
     "time": "2024-05-03T10:02:00Z"},
]
LATER = [
    {"role": "user", "name": "Alice", "content": "I quit the nurse job; I study medicine now.",
     "time": "2024-07-01T09:00:00Z"},
    {"role": "assistant", "content": "Good luck with your studies!", "time": "2024-07-01T09:01:00Z"},
]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(MODEL, threads=1) as url:  # one thread: the same replies on a busy machine and an idle one
        yield url


@pytest.fixture
async def reme(base_url: str, tmp_path: Path) -> AsyncIterator[ReMe]:
    async with ReMe(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": 64},
                    llm={**LLM, "base_url": base_url},
                    procedural={"validation_threshold": 0.0}) as r:  # this model's ratings would drop every lesson
        yield r


async def test_personal_summaries_write_typed_scoped_cited_memories(reme: ReMe) -> None:
    first = await reme.summarize_memory(CHAT, user_name="alice")
    (history,) = first.history
    assert history.memory_type == MemoryType.HISTORY and history.scope == ("user", "alice")
    assert "I moved to Berlin" in history.content
    # SmolLM2-135M mostly copies the prompt ("The lines", "alice is one of the speakers ..."), which the
    # summarizer's checks keep out: what it wrote is stored well-formed or listed in `rejected` with why.
    assert first.added or first.rejected, "the model's reply was neither stored nor rejected"
    for node in first.added:
        assert node.memory_type == MemoryType.PERSONAL and node.scope == ("user", "alice")
        assert node.ref_ids == [history.memory_id] and node.content.strip() and 0 <= node.score <= 1
    assert all(r.reason for r in first.rejected)
    assert first.usage.calls >= 1 and first.usage.completion_tokens > 0

    await reme.add_memory("Alice is a nurse in Berlin", user_name="alice")  # a stored memory, whatever it wrote
    second = await reme.summarize_memory(LATER, user_name="alice")
    assert second.usage.calls >= 1
    for node in second.added + second.updated:
        assert node.scope == ("user", "alice") and second.history[0].memory_id in node.ref_ids
    stored = await reme.list_memory(user_name="alice", memory_type="personal", limit=100)
    assert len(stored) >= len(first.added) - len(second.deleted)
    assert await reme.count_memory(user_name="bob") == 0

    ctx = await reme.retrieve_memory("Where does Alice live?", user_name="alice", top_k=5)
    assert ctx.fallbacks == [], ctx.fallbacks  # the rewrite call itself worked
    assert ctx.queries[0] == "Where does Alice live?" and ctx.usage.calls == 1
    assert ctx.memories and all(m.node.scope == ("user", "alice") for m in ctx.memories)
    assert ctx.text.strip()


def run(task: str, steps: list[str], score: float) -> Trajectory:
    return Trajectory(query=task, score=score, messages=[{"role": "user", "content": task}]  # type: ignore[list-item]
                      + [{"role": "assistant", "content": s} for s in steps])


async def test_task_memory_lessons_are_typed_scoped_and_cite_their_runs(reme: ReMe) -> None:
    good = run("Find the cheapest flight from Berlin to Lisbon in June",
               ["search_flights(from='BER', to='LIS', month='2024-06', sort='price')", "TP541 at 89 EUR is cheapest"], 1.0)
    bad = run("Find the cheapest flight from Berlin to Porto in July",
              ["search_flights(from='Berlin', to='Porto')", "Error: 'from' must be an IATA code like BER"], 0.0)
    result = await reme.summarize_memory(trajectories=[good, bad], task_name="flights")
    runs = {h.memory_id for h in result.history}
    assert len(runs) == 2 and all(h.scope == ("task", "flights") for h in result.history)
    assert result.usage.calls == 4  # success, failure, comparison, validation
    assert result.added, f"no lesson kept; rejected: {result.rejected}"
    for lesson in result.added:
        assert lesson.memory_type == MemoryType.PROCEDURAL and lesson.scope == ("task", "flights")
        assert lesson.when_to_use.strip() and lesson.content.strip() and set(lesson.ref_ids) <= runs

    ctx = await reme.retrieve_memory("cheapest flight from Berlin to Rome", task_name="flights", rerank=True,
                                     rewrite=True)
    assert ctx.fallbacks == [], ctx.fallbacks  # rerank (and the advice, when anything was kept) worked
    assert all(m.node.scope == ("task", "flights") for m in ctx.memories)
    assert ctx.usage.calls == (2 if ctx.memories else 1)


async def test_tool_memory_statistics_are_exact_and_the_guideline_is_written(reme: ReMe) -> None:
    calls = [ToolCallRecord(tool_name="search_flights", input={"from": "BER", "to": "LIS"}, output="2 flights",
                            time_cost=1.2, token_cost=300),
             ToolCallRecord(tool_name="search_flights", input={"from": "Berlin"}, success=False, time_cost=0.3,
                            error="'from' must be an IATA airport code like BER", token_cost=50),
             ToolCallRecord(tool_name="search_flights", input={"from": "BER", "to": "OPO"}, output="5 flights",
                            time_cost=1.5, token_cost=420)]
    result = await reme.summarize_memory(tool_calls=calls, tool_name="search_flights")
    (guideline,) = result.added
    assert guideline.memory_type == MemoryType.TOOL and guideline.scope == ("tool", "search_flights")
    assert guideline.content.strip() and guideline.ref_ids == [result.history[0].memory_id]
    stats = guideline.metadata["stats"]
    assert (stats["calls"], stats["successes"], stats["time_p95"], stats["tokens_p95"]) == (3, 2, 1.5, 420)
    ctx = await reme.retrieve_memory(tool_name="search_flights")
    assert ctx.memories[0].node.memory_id == guideline.memory_id and "3 calls, 67% succeeded" in ctx.text


REAL_MODEL_BLOCKS = [(page, lang, code, line) for page, lang, flags, code, line in doc_blocks()
                     if "real-model" in flags]


def test_the_documentation_has_real_model_blocks() -> None:
    assert "bash" in {lang for _, lang, _, _ in REAL_MODEL_BLOCKS}


@pytest.mark.parametrize("page,lang,code,line", REAL_MODEL_BLOCKS,
                         ids=[f"{page}:{line}" for page, _, _, line in REAL_MODEL_BLOCKS])
def test_documentation_block_runs_against_the_real_model(page: str, lang: str, code: str, line: int,
                                                         tmp_path: Path) -> None:
    assert DOCS_MODEL in code, f"{page}:{line} names no model this test can swap"
    code = code.replace(DOCS_MODEL, MODEL)
    env = user_environment("http://127.0.0.1:9/v1", tmp_path)  # `llm.sh run` and `serve` point ReMe elsewhere
    env.update({"REME_WORKING_DIR": str(tmp_path / "wd"), "REME_LLM__MAX_TOKENS": "320", "REME_LLM__TIMEOUT": "600",
                "LOCAL_LLM_THREADS": "1",  # as the fixture's server: two threads crawl beside a busy core
                "PYTHON": sys.executable})  # what scripts/llm.sh runs on (a pyenv shim would put its own python first)
    args = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else ["python", "-c", code]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert proc.stdout.strip()


def test_run_takes_options_after_the_model_and_reports_a_missing_command(tmp_path: Path) -> None:
    script = str(ROOT / "scripts" / "llm.sh")
    env = user_environment("http://127.0.0.1:9/v1", tmp_path)
    env["PYTHON"] = sys.executable
    shown = subprocess.run([script, "run", MODEL, "--threads", "1", "--", sys.executable, "-c",
                            "import os; print(os.environ['REME_LLM__MODEL'], os.environ['OPENAI_BASE_URL'])"],
                           capture_output=True, text=True, env=env, timeout=300)
    assert shown.returncode == 0, shown.stderr
    model, url = shown.stdout.split()
    assert model == MODEL and url.startswith("http://127.0.0.1:")
    missing = subprocess.run([script, "run", MODEL, "--", "no-such-program-here"], capture_output=True, text=True,
                             env=env, timeout=300)
    assert missing.returncode == 127 and "Traceback" not in missing.stderr
    assert "cannot run 'no-such-program-here'" in missing.stderr
    misplaced = subprocess.run([script, "run", MODEL, "--threads", "1", "python"], capture_output=True, text=True,
                               env=env, timeout=300)
    assert misplaced.returncode == 2 and "put -- between the options and the command" in misplaced.stderr
    wrong = subprocess.run([script, "run", MODEL, "--", "true"], capture_output=True, text=True,
                           env={**env, "LOCAL_LLM_THREADS": "two"}, timeout=300)
    assert wrong.returncode == 1 and "LOCAL_LLM_THREADS must be a whole number" in wrong.stderr
