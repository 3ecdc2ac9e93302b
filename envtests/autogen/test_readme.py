"""The AutoGen example of docs/frameworks.md (```python env=autogen) runs as written, configured only through
the environment: the scripted server answers AutoGen's OpenAI client and ReMe's own LLM calls."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import name_of
from docs_support import doc_blocks, env_of, run, user_environment
from openai_server import OpenAITestServer

BLOCKS = [code for _, lang, flags, code, _ in doc_blocks() if lang == "python" and env_of(flags) == "autogen"
          and name_of(flags) is None]


def reply(body: dict[str, Any]) -> str:
    """The agent's model: it books from Berlin only if Alice's memory reached its prompt."""
    memory = [m["content"] for m in body["messages"] if m["role"] == "system" and "remember" in m["content"]]
    return "Booked: Berlin to Munich, Friday 9:00." if any("Berlin" in m for m in memory) else "Noted."


@pytest.mark.parametrize("code", BLOCKS)
def test_readme_block_runs(code: str, llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script("Read the conversation below", {"memories": [
        {"content": "Alice moved to Berlin last week", "kind": "fact", "sources": [0], "importance": 0.7,
         "time": None}]})
    llm.script("You prepare a search", {"queries": ["Alice home city"], "start": None, "end": None})
    llm.script("long-term memory consistent", {"decisions": []})
    llm.script("", reply)
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    out = run([sys.executable, "snippet.py"], user_environment(llm.base_url, tmp_path), tmp_path)
    assert "['Alice moved to Berlin last week (" in out  # dated as of when it was said
    assert "Booked: Berlin to Munich" in out and "sk-test" not in out


def test_the_readme_has_an_autogen_example() -> None:
    assert len(BLOCKS) == 1
