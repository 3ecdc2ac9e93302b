"""The OpenAI Agents SDK example of docs/frameworks.md (```python env=openai_agents) runs as
written, configured only through the environment: the scripted server is the agent's model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import readme_code
from docs_support import run, user_environment
from openai_server import Message, OpenAITestServer

BLOCKS = [code for lang, code, _ in readme_code("openai_agents") if lang == "python"]


@pytest.mark.parametrize("code", BLOCKS)
def test_readme_block_runs(code: str, llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script("", Message(tool_calls=[{"name": "save_memory", "arguments": {"facts": ["Alice loves green tea"]}}]),
               times=1)
    llm.script("", "Noted: you love green tea.", times=1)
    llm.script("", "You love green tea.", times=1)
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    out = run([sys.executable, "snippet.py"], user_environment(llm.base_url, tmp_path), tmp_path)
    assert out.splitlines() == ["Noted: you love green tea.", "You love green tea.", "6 items"]


def test_the_docs_have_an_openai_agents_example() -> None:
    assert len(BLOCKS) == 1
