"""The LangGraph example of docs/frameworks.md (```python env=langgraph) runs as written, configured only
through the environment: the scripted server is the agent's model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import name_of
from docs_support import doc_blocks, env_of, run, user_environment
from openai_server import Message, OpenAITestServer

BLOCKS = [code for _, lang, flags, code, _ in doc_blocks() if lang == "python" and env_of(flags) == "langgraph"
          and name_of(flags) is None]


@pytest.mark.parametrize("code", BLOCKS)
def test_readme_block_runs(code: str, llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script("", Message(tool_calls=[{"name": "save_memory", "arguments": {"fact": "Alice loves green tea"}}]),
               times=1)
    llm.script("", "Saved: you love green tea.", times=1)
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    out = run([sys.executable, "snippet.py"], user_environment(llm.base_url, tmp_path), tmp_path)
    assert out.startswith("fact-0 {'text': 'Alice loves green tea'} ")
    assert len(llm.chat_requests) == 2 and llm.chat_requests[1]["messages"][-1]["content"] == "saved"


def test_the_readme_has_a_langgraph_example() -> None:
    assert len(BLOCKS) == 1
