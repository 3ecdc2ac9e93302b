"""The documentation runs as written: every ```python and ```bash block of README.md and of every
page in docs/ (docs/*.md, so a new page is run without being listed here), and every script in
examples/, each in a fresh directory, as a user would run it, configured only through the
environment (hash embeddings, the scripted LLM server on 127.0.0.1 as OPENAI_BASE_URL).

A block that is deliberately not runnable carries `no-run` after its language (```bash no-run):
visible in the page's source, and listed by `test_few_blocks_are_marked_no_run`. Blocks without
`no-run` in any other language than python or bash are refused, so a new block cannot slip by
unexecuted. One block is excluded here by name instead: the set-up block (`./scripts/demo.sh`,
`./scripts/test.sh`), because it creates a virtual environment and runs this very test suite.
A block marked `real-model` (```bash real-model) needs the local model (docs/real-model.md): the
real-model tier, tests/real_model/, runs it against that model instead.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from docs_support import ENVTESTS, doc_blocks, env_of, run, user_environment
from openai_server import OpenAITestServer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
RUNNABLE = {"python", "bash"}
SETUP_BLOCK = "./scripts/test.sh"  # the set-up block: it would install .venv and run the suite itself
BLOCKS = doc_blocks()  # (page, language, flags, code, line) of README.md and docs/*.md


def _runnable(language: str) -> list[Any]:
    return [pytest.param(code, id=f"{page}:{line}") for page, lang, flags, code, line in BLOCKS
            if lang == language and "no-run" not in flags and "real-model" not in flags and not env_of(flags)
            and SETUP_BLOCK not in code]


# Replies for every prompt the documented calls send: personal extract, reconcile and rewrite;
# procedural success, failure, comparison and validation; the tool guideline.
def script(server: OpenAITestServer) -> None:
    server.script("Read the conversation below", lambda body: {"memories": [
        {"content": "Alice moved to Berlin in late April 2024", "kind": "event", "sources": [0],
         "importance": 0.8, "time": "2024-04-26"},
        {"content": "Alice prefers the window seat on trains", "kind": "preference", "sources": [0],
         "importance": 0.5, "time": None}]})
    server.script("long-term memory consistent", {"decisions": []})
    server.script("You prepare a search", {"queries": ["Alice seat preference"], "start": None, "end": None})
    lesson = {"when_to_use": "When rating songs in a Spotify library",
              "content": "Log in with spotify.login first, then call spotify.review_song per song",
              "confidence": 0.8}
    for prompt in ("completed the task below successfully", "failed the task below", "Compare them"):
        server.script(prompt, {"memories": [lesson]})
    server.script("Rate each candidate lesson", {"results": [{"index": i, "score": 0.9} for i in range(10)]})
    server.script("Write the usage guideline", {"guideline": "Use short queries; retry once on a timeout."})
    server.script("working memory of an AI agent", {  # docs/working-memory.md: compaction, and the agent's turns
        "goal": "Plan a train trip to Lisbon in May", "constraints": ["train only"],
        "progress": ["looking for a hotel near the river"], "next_steps": ["suggest a day trip"]})
    server.script("You are a concise travel assistant", "Noted. Anything else?")


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as server:
        script(server)
        yield server


@pytest.fixture
def user_env(llm: OpenAITestServer, tmp_path: Path) -> dict[str, str]:
    """What a user exports: no REME_WORKING_DIR (the default .reme in the current directory)."""
    return user_environment(llm.base_url, tmp_path)


def test_every_block_is_runnable_or_marked() -> None:
    unknown = [f"{page}:{line} ({lang})" for page, lang, flags, _, line in BLOCKS
               if lang not in RUNNABLE and "no-run" not in flags]
    assert unknown == [], "a block in a language this test cannot run: mark it `no-run` or make it python/bash"
    assert len(_runnable("python")) >= 4 and len(_runnable("bash")) >= 1


def test_environment_blocks_are_run_in_their_environment() -> None:
    """A block marked `env=NAME` (```python env=langgraph) needs a framework this environment lacks:
    envtests/NAME/ runs it in that framework's own virtual environment (scripts/envs.sh)."""
    for page, _, flags, _, line in BLOCKS:
        env = env_of(flags)
        if env:
            assert (ENVTESTS / env / "test_readme.py").is_file(), f"{page}:{line}: no envtests/{env}/test_readme.py"


def test_real_model_blocks_are_run_by_the_real_model_tier() -> None:
    marked = [(lang, page, line) for page, lang, flags, _, line in BLOCKS if "real-model" in flags]
    assert all(lang in RUNNABLE for lang, _, _ in marked), marked
    tier = (ROOT / "tests" / "real_model" / "test_real_model.py").read_text(encoding="utf-8")
    assert not marked or '"real-model" in flags' in tier


def test_few_blocks_are_marked_no_run() -> None:
    """Counted over README.md and every docs/ page together."""
    marked = [f"{page}:{line} ({lang})" for page, lang, flags, _, line in BLOCKS if "no-run" in flags]
    assert len(marked) <= 2, f"blocks not run by the tests: {marked}"  # today: pip install, the MCP client entry


@pytest.mark.parametrize("code", _runnable("python"))
def test_doc_python_block_runs(code: str, user_env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    run([sys.executable, "snippet.py"], user_env, tmp_path)


@pytest.mark.parametrize("code", _runnable("bash"))
def test_doc_shell_block_runs(code: str, user_env: dict[str, str], tmp_path: Path) -> None:
    out = run(["bash", "-euo", "pipefail", "-c", code], user_env, tmp_path)
    assert out.strip()


@pytest.mark.parametrize("script_path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script_path: Path, user_env: dict[str, str], tmp_path: Path) -> None:
    out = run([sys.executable, str(script_path)], user_env, tmp_path)
    assert out.strip()


def test_there_are_examples_of_each_kind() -> None:
    assert {p.name for p in EXAMPLES} >= {"personal_memory.py", "task_memory.py", "tool_memory.py", "sync_api.py"}


def _readme_block(needle: str) -> str:
    [code] = [code for page, lang, _, code, _ in BLOCKS if page == "README.md" and lang == "python" and needle in code]
    return code


def test_readme_agent_loop_without_an_llm_says_what_to_set_and_writes_nothing(
        user_env: dict[str, str], tmp_path: Path) -> None:
    """Run right after the quick start with no model configured: a ConfigError naming every
    variable to set and where a local model comes from, before a message reaches the session."""
    env = {k: v for k, v in user_env.items() if k != "REME_LLM__MODEL"}
    (tmp_path / "loop.py").write_text(_readme_block("prepare_context"), encoding="utf-8")
    proc = subprocess.run([sys.executable, "loop.py"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("reme.errors.ConfigError"), proc.stderr
    for needed in ("REME_LLM__MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "scripts/llm.sh", "docs/real-model.md"):
        assert needed in last, last
    count = run(["reme", "count", "--json"], user_env, tmp_path)
    assert json.loads(count) == {"count": 0}


def test_no_python_block_leans_on_the_checkouts_benchmark_package() -> None:
    """`benchmark/` is not in the installed package: a user's Python cannot import it. Only a block
    marked `checkout` (test support from a clone: docs/scaling.md's Qdrant nodes) may, and says so."""
    leaning = [f"{page}:{line}" for page, lang, flags, code, line in BLOCKS
               if lang == "python" and "checkout" not in flags
               and re.search(r"^\s*(from|import)\s+benchmark\b", code, re.M)]
    assert leaning == []
    marked = [f"{page}:{line}" for page, _, flags, _, line in BLOCKS if "checkout" in flags]
    assert {m.split(":")[0] for m in marked} == {"docs/scaling.md"}, marked
