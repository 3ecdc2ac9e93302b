"""The LangGraph example of docs/working-memory-frameworks.md (```python env=langgraph name=session)
runs as written; the agent and ReMe's compaction answered by the scripted server."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import readme_code
from docs_support import run, user_environment
from openai_server import OpenAITestServer, prompt_of

COMPACT = "You keep the working memory of an AI agent"


def test_the_context_middleware_example_runs(llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(COMPACT, {"goal": "Plan a trip to Lisbon in May", "constraints": ["vegetarian", "900 EUR"],
                         "progress": [], "decisions": [], "next_steps": ["Find a hotel"], "critical_context": []})
    llm.script("", "Noted.")
    [(_, code, _)] = readme_code("langgraph", "session")
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    out = run([sys.executable, "snippet.py"], user_environment(llm.base_url, tmp_path), tmp_path).splitlines()

    assert out[0].endswith("messages in the checkpoint, the first: Summary of the earlier conversation (older "
                           "messages were compacted into it):")
    assert int(out[0].split()[0]) < 6 and out[1] == "6 in the session"
    assert any(COMPACT in prompt_of(b) for b in llm.chat_requests)
