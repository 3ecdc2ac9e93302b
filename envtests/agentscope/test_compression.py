"""ReMeCompressionMiddleware: an AgentScope 2.x Agent whose context compression is ReMe's
(`on_compress_context`), in a real loop with a tool; the model is the scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentscope.agent import Agent, ContextConfig
from agentscope.credential import OpenAICredential
from agentscope.message import UserMsg
from agentscope.model import OpenAIChatModel
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit
from agent_loops import REME_COMPACT, TRAVEL_SYS, TRIP, TRIP_SUMMARY, open_reme, turns
from openai_server import Message, OpenAITestServer, prompt_of

from reme.integrations.agentscope import ReMeCompressionMiddleware

SYS = TRAVEL_SYS
SUMMARY = TRIP_SUMMARY


async def search_hotels(city: str) -> str:
    """Search hotels in a city.

    Args:
        city (str): The city.
    """
    return f"Casa Alfama, {city}: 120 EUR"


def agent_requests(llm: OpenAITestServer) -> list[dict[str, Any]]:
    return [b for b in llm.chat_requests if SYS in json.dumps(b["messages"]) and REME_COMPACT not in prompt_of(b)]


async def test_the_agents_context_is_compressed_by_reme_before_reasoning(llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(REME_COMPACT, SUMMARY)
    turns(llm, SYS, *(reply for _, reply in TRIP),
          Message(tool_calls=[{"name": "search_hotels", "arguments": {"city": "Lisbon"}}]), "Casa Alfama fits.")
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="test")
    async with open_reme(llm, tmp_path / "reme") as reme:
        model = OpenAIChatModel(credential=OpenAICredential(api_key="sk-test", base_url=llm.base_url),
                                model="test-model", stream=False, context_size=1_000)
        friday = Agent(name="Friday", system_prompt=SYS, model=model,
                       toolkit=Toolkit(tools=[FunctionTool(search_hotels, permission=allow)]),
                       middlewares=[ReMeCompressionMiddleware(reme, threshold=200, reserve=150)],
                       context_config=ContextConfig(trigger_ratio=0.9, reserve_ratio=0.5))
        for said, reply in TRIP:
            assert (await friday.reply(UserMsg("Alice", said))).get_text_content() == reply
        assert (await friday.reply(UserMsg("Alice", "Find a hotel."))).get_text_content() == "Casa Alfama fits."

        compactions = [prompt_of(b) for b in llm.chat_requests if REME_COMPACT in prompt_of(b)]
        assert compactions and TRIP[0][0] in compactions[0]
        assert "Budget 900 EUR" in friday.state.summary and friday.state.summary.startswith("## Goal")
        last = json.dumps(agent_requests(llm)[-1]["messages"])
        assert "Budget 900 EUR" in last and TRIP[0][0] not in last
        assert "Casa Alfama, Lisbon" in last  # the call and its result were kept together
        texts = [m.get_text_content() or "" for m in friday.state.context]
        assert TRIP[0][0] not in texts and "Casa Alfama fits." in texts


async def test_below_the_threshold_the_context_stays_and_no_model_call_is_made(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    turns(llm, SYS, *(reply for _, reply in TRIP))
    async with open_reme(llm, tmp_path / "reme") as reme:
        model = OpenAIChatModel(credential=OpenAICredential(api_key="sk-test", base_url=llm.base_url),
                                model="test-model", stream=False)
        friday = Agent(name="Friday", system_prompt=SYS, model=model, toolkit=Toolkit(tools=[]),
                       middlewares=[ReMeCompressionMiddleware(reme)])  # the agent's 32k context: never reached
        for said, _ in TRIP:
            await friday.reply(UserMsg("Alice", said))
        assert not any(REME_COMPACT in prompt_of(b) for b in llm.chat_requests)
        assert friday.state.summary == "" and len(friday.state.context) == 2 * len(TRIP)

