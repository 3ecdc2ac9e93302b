"""The AgentScope 1.x example of docs/frameworks.md (```python env=agentscope1) runs as written, configured only
through the environment, its agent and ReMe's summarizer answered by the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

from agent_loops import GUIDE, run_readme, run_steps, script_personal, script_task
from openai_server import OpenAITestServer, prompt_of

AGENT = "You are a helpful assistant."


def test_readme_agentscope1_example_runs(llm: OpenAITestServer, tmp_path: Path) -> None:
    script_personal(llm, "Alice always takes the window seat", "window seat", ["Alice seat preference"])
    script_task(llm)
    llm.script(GUIDE, {"guideline": "Use short queries."})
    llm.script(AGENT, "A window seat on the next train it is.")
    out = run_readme("agentscope1", llm, tmp_path)

    assert "A window seat on the next train it is." in out
    assert "Tool web_search: 1 call, 100% succeeded" in out and "Use short queries." in out
    agent_turns = [body for body in llm.chat_requests if AGENT in prompt_of(body)]
    assert "Alice always takes the window seat" in json.dumps(agent_turns[1]["messages"])  # remembered
    assert {"record_to_memory", "retrieve_from_memory"} <= {t["function"]["name"] for t in agent_turns[0]["tools"]}
    assert "Book the 9:00 train to Hamburg." in run_steps(llm)
