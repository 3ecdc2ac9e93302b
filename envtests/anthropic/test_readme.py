"""The Claude memory tool example of docs/frameworks.md (```python env=anthropic) runs as written,
configured only through the environment (ANTHROPIC_BASE_URL: the scripted server)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import readme_code
from docs_support import run, user_environment
from openai_server import Message, OpenAITestServer

BLOCKS = [code for lang, code, _ in readme_code("anthropic") if lang == "python"]


@pytest.mark.parametrize("code", BLOCKS)
def test_readme_block_runs(code: str, llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script("", Message(tool_calls=[{"name": "memory", "arguments": {
        "command": "create", "path": "/memories/prefs.md", "file_text": "- loves green tea\n"}}]), times=1)
    llm.script("", "Noted: you love green tea.", times=1)
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    env = {**user_environment(llm.base_url, tmp_path), "ANTHROPIC_BASE_URL": llm.anthropic_url,
           "ANTHROPIC_API_KEY": "sk-test"}
    out = run([sys.executable, "snippet.py"], env, tmp_path)
    assert out.splitlines()[0] == "Noted: you love green tea."
    assert out.splitlines()[-1] == "18B\t/memories/prefs.md"


def test_the_docs_have_an_anthropic_example() -> None:
    assert len(BLOCKS) == 1
