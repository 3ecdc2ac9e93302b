"""The AgentScope 2.x compression example of docs/working-memory-frameworks.md (```python
env=agentscope name=session) runs as written; the agent and ReMe's compaction answered by the
scripted server."""

from __future__ import annotations

from pathlib import Path

from agent_loops import run_readme
from openai_server import OpenAITestServer, prompt_of

COMPACT = "You keep the working memory of an AI agent"


def test_the_compression_middleware_example_runs(llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(COMPACT, {"goal": "Plan a trip to Lisbon in May", "constraints": ["vegetarian", "900 EUR"],
                         "progress": [], "decisions": [], "next_steps": ["Find a hotel"], "critical_context": []})
    llm.script("", "Noted.")
    out = run_readme("agentscope", llm, tmp_path, name="session")

    assert out.startswith("## Goal / ") and int(out.split("/ ")[1].split()[0]) < 6
    assert any(COMPACT in prompt_of(b) for b in llm.chat_requests)
