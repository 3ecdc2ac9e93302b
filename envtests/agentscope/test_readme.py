"""The AgentScope 2.x example of docs/frameworks.md (```python env=agentscope) runs as written, configured only
through the environment, its agent and ReMe's summarizer answered by the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

from agent_loops import run_readme, script_personal
from openai_server import OpenAITestServer

AGENT = "You are a helpful assistant."


def test_readme_agentscope_example_runs(llm: OpenAITestServer, tmp_path: Path) -> None:
    script_personal(llm, "Alice always takes the window seat", "window seat", ["Alice seat preference"])
    llm.script(AGENT, "A window seat on the next train it is.")
    out = run_readme("agentscope", llm, tmp_path)

    assert "A window seat on the next train it is." in out
    agent_turns = [body for body in llm.chat_requests if AGENT in json.dumps(body["messages"])]
    assert "Alice always takes the window seat" in json.dumps(agent_turns[1]["messages"])  # remembered
    assert {"record_to_memory", "retrieve_from_memory"} <= {t["function"]["name"] for t in agent_turns[0]["tools"]}
