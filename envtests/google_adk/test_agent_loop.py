"""ADK's Runner with an LlmAgent (LiteLlm, the scripted server as an OpenAI endpoint) and its
`load_memory` tool over ReMeMemoryService: what Alice said in one session, added to memory after
it, the agent finds in her next session after the store was closed and reopened; Bob's agent,
in the same app and process, finds nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_loops import open_reme, script_personal
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory
from google.genai import types
from openai_server import Message, OpenAITestServer, prompt_of

from reme import ReMe
from reme.integrations.google_adk import ReMeMemoryService

SYS = "You are Friday, a concise assistant."


def runner(llm: OpenAITestServer, reme: ReMe, sessions: InMemorySessionService) -> Runner:
    model = LiteLlm(model="openai/test-model", api_base=llm.base_url, api_key="sk-test")
    agent = LlmAgent(name="friday", model=model, instruction=SYS, tools=[load_memory])
    return Runner(agent=agent, app_name="travel", session_service=sessions, memory_service=ReMeMemoryService(reme))


async def say(run: Runner, user: str, session_id: str, text: str) -> str:
    await run.session_service.create_session(app_name="travel", user_id=user, session_id=session_id)
    final = ""
    async for event in run.run_async(user_id=user, session_id=session_id,
                                     new_message=types.Content(role="user", parts=[types.Part(text=text)])):
        if event.is_final_response() and event.content and event.content.parts:
            final = event.content.parts[0].text or ""
    return final


def tool_outputs(llm: OpenAITestServer) -> list[Any]:
    return [m["content"] for m in llm.chat_requests[-1]["messages"] if m["role"] == "tool"]


async def test_what_alice_said_is_found_in_her_next_session_only(llm: OpenAITestServer, tmp_path: Path) -> None:
    script_personal(llm, "Alice loves green tea", "green tea", ["what Alice drinks"])
    llm.script(SYS, "Noted.", times=1)
    async with open_reme(llm, tmp_path) as reme:
        sessions = InMemorySessionService()
        run = runner(llm, reme, sessions)
        assert await say(run, "alice", "monday", "I love green tea.") == "Noted."
        done = await sessions.get_session(app_name="travel", user_id="alice", session_id="monday")
        await run.memory_service.add_session_to_memory(done)  # type: ignore[union-attr]

    recall = Message(tool_calls=[{"name": "load_memory", "arguments": {"query": "what do I drink"}}])
    async with open_reme(llm, tmp_path) as reme:
        run = runner(llm, reme, InMemorySessionService())
        for user, reply in (("alice", "Green tea."), ("bob", "I do not know.")):
            llm.script(SYS, recall, times=1)
            llm.script(SYS, reply, times=1)
            assert await say(run, user, "tuesday", "What do I drink?") == reply
            (output,) = tool_outputs(llm)
            assert ("Alice loves green tea" in output) is (user == "alice"), (user, output)
        assert all(SYS in prompt_of(b) or "Read the conversation" in prompt_of(b) or "You prepare a search"
                   in prompt_of(b) for b in llm.chat_requests)
