"""Shared by the agent-framework suites: ReMe's prompts as the scripted server sees them, replies
to them, and a ReMe whose summarizer is that server."""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from conftest import readme_code
from docs_support import run, user_environment
from openai_server import Message, OpenAITestServer, prompt_of

from reme import ReMe

EXTRACT, RECONCILE, REWRITE = "Read the conversation below", "long-term memory consistent", "You prepare a search"
SUCCESS, VALIDATE, GUIDE = "completed the task below successfully", "Rate each candidate lesson", \
    "Write the usage guideline"
LESSON = {"when_to_use": "When rating songs in a Spotify library",
          "content": "Log in with spotify.login first, then call spotify.review_song per song", "confidence": 0.9}


@asynccontextmanager
async def open_reme(llm: OpenAITestServer, path: Path) -> AsyncIterator[ReMe]:
    async with ReMe(working_dir=path, embedding={"backend": "hash"},
                    llm={"model": "test-model", "base_url": llm.base_url, "api_key": "sk-test",
                         "max_retries": 0}) as reme:
        yield reme


def memories(*contents: str) -> dict[str, Any]:
    """A personal extraction reply."""
    return {"memories": [{"content": c, "kind": "fact", "sources": [0], "importance": 0.5, "time": None}
                         for c in contents]}


def script_personal(llm: OpenAITestServer, fact: str | list[str], when: str, queries: list[str]) -> None:
    """Extraction finds `fact` (or each of a list) in a conversation that mentions `when`, nothing in others."""
    facts = [fact] if isinstance(fact, str) else fact
    llm.script(EXTRACT, lambda body: memories(*facts) if when in prompt_of(body) else {"memories": []})
    llm.script(RECONCILE, {"decisions": []})
    llm.script(REWRITE, {"queries": queries})


def script_task(llm: OpenAITestServer) -> None:
    """A successful run yields LESSON, which validation keeps."""
    llm.script(SUCCESS, {"memories": [LESSON]})
    llm.script(VALIDATE, {"results": [{"index": 0, "score": 0.9}]})


def turns(llm: OpenAITestServer, system_prompt: str, *replies: str | Message) -> None:
    """The agent's model answers, in order (its requests carry its system prompt)."""
    for reply in replies:
        llm.script(system_prompt, reply, times=1)


def prompts(llm: OpenAITestServer, marker: str) -> list[str]:
    return [prompt_of(body) for body in llm.chat_requests if marker in prompt_of(body)]


def run_steps(llm: OpenAITestServer) -> str:
    """The run shown to the (single) success-lesson prompt."""
    runs = prompts(llm, SUCCESS)
    assert len(runs) == 1
    return runs[0].split("Run:", 1)[1]


async def histories(reme: ReMe, user_name: str) -> list[str]:
    """The conversations recorded for `user_name` (one history memory per summary), oldest first."""
    nodes = await reme.list_memory(user_name=user_name, memory_type="history", sort_key="time_created",
                                  direction="asc")
    return [n.content for n in nodes]


# A conversation over three turns (user, agent) whose first turn holds two facts, and the agent turns
# of a model that records two facts with a tool, then searches them with another.
GREEN_TEA_FACTS = ["Alice moved to Berlin", "Alice loves green tea"]
GREEN_TEA = [("I moved to Berlin and I love green tea.", "Noted: green tea."),
             ("What should I drink this afternoon?", "Try a sencha: you love green tea."),
             ("Any plans for Berlin in May?", "Berlin is lovely in May.")]
RECORD_THEN_SEARCH = [
    ("Remember: I prefer aisle seats and I am vegetarian.",
     Message(tool_calls=[{"name": "record_to_memory", "arguments": {
         "thinking": "a lasting preference", "content": ["Alice prefers aisle seats", "Alice is vegetarian"]}}])),
    ("", "I will remember that."),
    ("Which seat should I book?",
     Message(tool_calls=[{"name": "retrieve_from_memory", "arguments": {"keywords": ["seat"], "limit": 3}}])),
    ("", "You prefer the aisle.")]


async def assert_each_turn_summarized_once(llm: OpenAITestServer, reme: ReMe, conversation: list[tuple[str, str]],
                                           hint: str) -> None:
    """One summary per turn, each holding that turn's messages only, never the injected memories:
    a history memory per turn; the extraction reads a line at most once (only the lines worth
    reading: a question with nothing in it to remember costs no call)."""
    recorded = await histories(reme, "alice")
    assert len(recorded) == len(conversation)
    for (said, reply), history in zip(conversation, recorded):
        assert said in history and reply in history, history
    for said in (text for turn in conversation for text in turn):
        assert sum(said in h for h in recorded) == 1, said
    extracts = prompts(llm, EXTRACT)
    assert 1 <= len(extracts) <= len(conversation)
    assert sum(conversation[0][0] in p for p in extracts) == 1
    assert not any(hint in text for text in [*extracts, *recorded])


def run_readme(env: str, llm: OpenAITestServer, tmp_path: Path, name: str | None = None) -> str:
    """Run the one documentation block marked `env=<env>` (and `name=<name>`, or no name) in README.md
    or docs/*.md as a user would; its output."""
    blocks = readme_code(env, name)
    assert len(blocks) == 1
    (tmp_path / "snippet.py").write_text(blocks[0][1], encoding="utf-8")
    return run([sys.executable, "snippet.py"], user_environment(llm.base_url, tmp_path), tmp_path)


# The compaction suites (AgentScope 2.x's on_compress_context, LangGraph's middleware): a trip
# planned over several turns, ReMe's compaction prompt and what the scripted model summarizes.
TRAVEL_SYS = "You are Friday, a travel assistant."
REME_COMPACT = "You keep the working memory of an AI agent"
TRIP_SUMMARY = {"goal": "Plan a trip to Lisbon in May", "constraints": ["Alice is vegetarian"],
                "progress": ["Flights compared: TAP is cheapest"], "decisions": [], "next_steps": ["Book the hotel"],
                "critical_context": ["Budget 900 EUR"]}
TRIP_FACTS = ["Alice is planning a trip to Lisbon", "Alice is vegetarian", "Alice's budget is 900 EUR"]
TRIP = [("Plan a trip to Lisbon in May. I am vegetarian.", "Lisbon in May: good choice."),
        ("My budget is 900 EUR.", "Noted, 900 EUR."),
        ("Compare the flights.", "TAP is cheapest.")]
