"""The Agents SDK's Runner with `OpenAIChatCompletionsModel` against the scripted server: a
conversation kept in a ReMeSession goes on after the store was closed and reopened; what the
agent saved with `memory_tools` in one session is found in the next, by that user only; a
session with `compact=True` is compacted by ReMe before a run and its summary reaches the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_loops import REME_COMPACT, TRIP_SUMMARY, open_reme
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.memory import is_openai_responses_compaction_aware_session
from openai import AsyncOpenAI
from openai_server import Message, OpenAITestServer, prompt_of

from reme.integrations.openai_agents import ReMeSession, memory_tools

SYS = "You are Friday, a concise assistant."
set_tracing_disabled(True)


def agent(llm: OpenAITestServer, tools: list[Any] | None = None) -> Agent[Any]:
    client = AsyncOpenAI(base_url=llm.base_url, api_key="sk-test", max_retries=0)
    return Agent(name="Friday", instructions=SYS, tools=tools or [],
                 model=OpenAIChatCompletionsModel(model="test-model", openai_client=client))


def agent_requests(llm: OpenAITestServer) -> list[dict[str, Any]]:
    return [b for b in llm.chat_requests if SYS in prompt_of(b)]


def tool_outputs(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_memory_saved_in_one_session_is_found_in_the_next_by_its_user_only(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(SYS, Message(tool_calls=[{"name": "save_memory", "arguments": {"facts": ["Alice loves green tea"]}}]),
               times=1)
    llm.script(SYS, "Noted.", times=1)
    async with open_reme(llm, tmp_path) as reme:
        session = ReMeSession("alice-monday", reme)
        result = await Runner.run(agent(llm, memory_tools(reme, user_name="alice")), "I love green tea.",
                                  session=session)
        assert result.final_output == "Noted."
        assert [i.get("type", "message") for i in await session.get_items()] == \
            ["message", "function_call", "function_call_output", "message"]

    search = Message(tool_calls=[{"name": "search_memory", "arguments": {"keywords": ["tea"]}}])
    async with open_reme(llm, tmp_path) as reme:  # reopened: the conversation and the memory are there
        llm.script(SYS, "You said you love green tea.", times=1)
        again = await Runner.run(agent(llm), "What did I say?", session=ReMeSession("alice-monday", reme))
        assert again.final_output == "You said you love green tea."
        assert "I love green tea." in prompt_of(agent_requests(llm)[-1])  # the session's items were sent

        for user in ("alice", "bob"):
            llm.script(SYS, search, times=1)
            llm.script(SYS, "ok", times=1)
            await Runner.run(agent(llm, memory_tools(reme, user_name=user)), "What do I drink?",
                             session=ReMeSession(f"{user}-tuesday", reme))
        alice_out, bob_out = tool_outputs(agent_requests(llm)[-3])[-1], tool_outputs(agent_requests(llm)[-1])[-1]
        assert "Alice loves green tea" in alice_out
        assert "green tea" not in bob_out and bob_out.startswith("No memories found")


async def test_a_compacting_session_sends_the_summary_and_the_newest_items(llm: OpenAITestServer,
                                                                          tmp_path: Path) -> None:
    llm.script(REME_COMPACT, TRIP_SUMMARY)
    turns = [("Plan a trip to Lisbon in May. I am vegetarian.", "Lisbon in May: good choice."),
             ("My budget is 900 EUR.", "Noted, 900 EUR."), ("Compare the flights.", "TAP is cheapest."),
             ("Now the hotel, please.", "Booking a hotel in Alfama.")]
    async with open_reme(llm, tmp_path) as reme:
        session = ReMeSession("alice-trip", reme, compact=True, threshold=60, reserve=30)
        assert is_openai_responses_compaction_aware_session(session)
        for said, reply in turns:
            llm.script(SYS, reply, times=1)
            assert (await Runner.run(agent(llm), said, session=session)).final_output == reply
        last = agent_requests(llm)[-1]["messages"]
        assert "Book the hotel" in last[1]["content"]  # after the system prompt: the summary
        assert turns[0][0] not in [m["content"] for m in last]  # the oldest turn went into the summary
        assert last[-1]["content"] == "Now the hotel, please."
        assert len([b for b in llm.chat_requests if REME_COMPACT in prompt_of(b)]) >= 1
        everything = await reme.get_messages(session_name="alice-trip")
        assert len(everything) == 2 * len(turns)  # compacted items are marked, never lost
