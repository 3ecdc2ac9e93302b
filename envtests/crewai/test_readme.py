"""The CrewAI example of docs/frameworks.md (```python env=crewai) runs as written, configured only
through the environment: the scripted server is the agent's model and CrewAI's memory analyst."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import readme_code
from docs_support import run, user_environment
from openai_server import OpenAITestServer

PANEL = re.compile("╭.*?╯", re.DOTALL)
BLOCKS = [code for lang, code, _ in readme_code("crewai") if lang == "python"]


@pytest.mark.parametrize("code", BLOCKS)
def test_readme_block_runs(code: str, llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script("extract discrete, reusable memory statements",
               lambda body: {"memories": ["Alice loves green tea"] if "I love green tea" in str(body) else []})
    llm.script("analyze content to be stored", {"suggested_scope": "/preferences", "categories": ["drinks"],
                                                "importance": 0.7, "extracted_metadata": {}})
    llm.script("Alice loves green tea", "You drink green tea.")
    llm.script("Current Task:", "Noted.")
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    env = user_environment(llm.base_url, tmp_path) | {"CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true"}
    out = run([sys.executable, "snippet.py"], env, tmp_path)
    # CrewAI draws its panels from another thread, so one can land between any two writes of a print (its
    # arguments, the spaces between them, its newline): cut every panel (corner to corner) out of the whole
    # output and compare the words that are left, whitespace aside.
    printed = " ".join(PANEL.sub(" ", out).split())
    assert printed.endswith("Noted. You drink green tea. /users/alice/preferences Alice loves green tea ['drinks']"), out


def test_the_docs_have_a_crewai_example() -> None:
    assert len(BLOCKS) == 1
