"""The AgentScope 1.x session-memory example of docs/working-memory-frameworks.md (```python
env=agentscope1 name=session) runs as written; the agent and ReMe's compaction answered by the
scripted server."""

from __future__ import annotations

import json
from pathlib import Path

from agent_loops import run_readme
from openai_server import OpenAITestServer, prompt_of

AGENT, COMPACT = "You are a travel assistant.", "You keep the working memory of an AI agent"


def test_the_session_memory_example_runs(llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(COMPACT, {"goal": "Plan a trip to Lisbon in May", "constraints": ["vegetarian", "900 EUR"],
                         "progress": [], "decisions": [], "next_steps": ["Find a hotel"], "critical_context": []})
    llm.script(AGENT, "Noted.")
    printed = run_readme("agentscope1", llm, tmp_path, name="session").splitlines()
    out = [line for line in printed if not line.startswith("Friday: ")]  # the agent prints its replies

    assert out[0].startswith("6 messages;") and not out[0].startswith("6 messages; 0 ")
    assert out[1] == "## Goal" and out[-1] == "6"
    last = json.dumps([b for b in llm.chat_requests if AGENT in prompt_of(b)][-1]["messages"])
    assert "Plan a trip to Lisbon in May" in last and "I am vegetarian" not in last  # the summary, not the turn
