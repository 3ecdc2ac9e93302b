"""The Google ADK example of docs/frameworks.md (```python env=google_adk) runs as written,
configured only through the environment: the scripted server is the agent's model (through
LiteLLM) and ReMe's summarizer."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from agent_loops import GREEN_TEA_FACTS, script_personal
from conftest import readme_code
from docs_support import run, user_environment
from openai_server import OpenAITestServer

BLOCKS = [code for lang, code, _ in readme_code("google_adk") if lang == "python"]


@pytest.mark.parametrize("code", BLOCKS)
def test_readme_block_runs(code: str, llm: OpenAITestServer, tmp_path: Path) -> None:
    script_personal(llm, GREEN_TEA_FACTS, "green tea", ["what Alice drinks"])
    llm.script("I moved to Berlin", "Noted: you love green tea.", times=1)
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    out = run([sys.executable, "snippet.py"], user_environment(llm.base_url, tmp_path), tmp_path)
    reply, stored = out.splitlines()
    assert reply == "Noted: you love green tea." and sorted(ast.literal_eval(stored)) == sorted(GREEN_TEA_FACTS)


def test_the_docs_have_a_google_adk_example() -> None:
    assert len(BLOCKS) == 1
