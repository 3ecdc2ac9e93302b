"""A real CrewAI agent loop (`Agent.kickoff` with a unified `Memory` over ReMeStorage) against the
scripted OpenAI-compatible server, through CrewAI's native OpenAI provider: what one run saves (the
agent's extraction and analysis LLM calls, then ReMe) the next run recalls into the agent's prompt,
after the store is closed and reopened; two users' memories, two root scopes of one storage in one
process, never reach each other's prompts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from crewai import LLM, Agent
from crewai.memory.unified_memory import Memory
from openai_server import OpenAITestServer, prompt_of

from reme.integrations.crewai import ReMeStorage

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

FACTS = {"alice": "Alice loves green tea", "bob": "Bob drinks black coffee"}


def script(llm: OpenAITestServer) -> None:
    def extracted(body: dict[str, Any]) -> dict[str, Any]:
        said = prompt_of(body).split("Content to", 1)[-1]
        return {"memories": [fact for who, fact in FACTS.items() if f"I am {who}" in said]}

    llm.script("extract discrete, reusable memory statements", extracted)
    llm.script("analyze content to be stored", {"suggested_scope": "/preferences", "categories": ["drinks"],
                                                "importance": 0.7, "extracted_metadata": {"entities": [], "dates": [],
                                                                                          "topics": []}})
    llm.script("What do I drink", "Your drink, as I remember it.")
    llm.script("Current Task:", "Noted.")


def agent(llm: OpenAITestServer, storage: ReMeStorage, user: str) -> Agent:
    model = LLM(model="gpt-4o-mini", base_url=llm.base_url, api_key="sk-test")
    memory = Memory(storage=storage, embedder=storage.embedder, llm=model, root_scope=f"/users/{user}")
    return Agent(role="Assistant", goal=f"Help {user}", backstory="You remember what users tell you.",
                 llm=model, memory=memory)


def test_what_a_run_saves_the_next_run_recalls_for_that_user_only(llm: OpenAITestServer, tmp_path: Path) -> None:
    script(llm)
    settings: dict[str, Any] = dict(working_dir=tmp_path, embedding={"backend": "hash"})
    with ReMeStorage(**settings) as storage:
        for user in ("alice", "bob"):
            member = agent(llm, storage, user)
            assert member.kickoff(f"I am {user}. Remember what I drink.").raw == "Noted."
            member.memory.drain_writes()  # type: ignore[union-attr]
        assert {r.scope: r.content for r in storage.list_records()} == {
            "/users/alice/preferences": FACTS["alice"], "/users/bob/preferences": FACTS["bob"]}
        assert storage.list_categories("/users/alice") == {"drinks": 1}
    with ReMeStorage(**settings) as storage:  # closed and reopened: everything is there
        for user, other in (("alice", "bob"), ("bob", "alice")):
            before = len(llm.chat_requests)
            assert agent(llm, storage, user).kickoff("What do I drink?").raw == "Your drink, as I remember it."
            prompts = "\n".join(prompt_of(body) for body in llm.chat_requests[before:])
            assert FACTS[user] in prompts and FACTS[other] not in prompts, user
        assert storage.count("/users/alice") == storage.count("/users/bob") == 1
