"""ReMe as AgentScope 2.x middleware: real Agent loops over several turns, the agent's model and
ReMe's summarizer both answered by the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from agentscope.agent import Agent
from agentscope.credential import OpenAICredential
from agentscope.message import UserMsg
from agentscope.middleware import MiddlewareBase, ReMeMiddleware
from agentscope.model import OpenAIChatModel
from agentscope.tool import Toolkit
from agent_loops import (EXTRACT, GREEN_TEA, GREEN_TEA_FACTS, LESSON, RECORD_THEN_SEARCH, SUCCESS,
                         assert_each_turn_summarized_once, open_reme, prompts, run_steps, script_personal,
                         script_task, turns)
from openai_server import OpenAITestServer

from reme import LLMOutputError, OriginalReMeAPIError, ReMe
from reme.integrations.agentscope import ReMeMemoryMiddleware

SYS = "You are Friday, a helpful assistant."


@pytest.fixture
async def reme(llm: OpenAITestServer, tmp_path: Path) -> AsyncIterator[ReMe]:
    async with open_reme(llm, tmp_path / "reme") as memory:
        yield memory


async def agent(llm: OpenAITestServer, mw: MiddlewareBase) -> Agent:
    model = OpenAIChatModel(credential=OpenAICredential(api_key="sk-test", base_url=llm.base_url),
                            model="test-model", stream=False)
    return Agent(name="Friday", system_prompt=SYS, model=model, toolkit=Toolkit(tools=await mw.list_tools()),
                 middlewares=[mw])





def agent_requests(llm: OpenAITestServer) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if SYS in json.dumps(body["messages"])]


async def say(a: Agent, text: str) -> str:
    return (await a.reply(UserMsg("Alice", text))).get_text_content() or ""


async def test_memories_are_retrieved_before_reasoning_and_each_turn_is_recorded_once(
        llm: OpenAITestServer, reme: ReMe) -> None:
    script_personal(llm, GREEN_TEA_FACTS, "green tea", ["Alice drink preference green tea"])
    turns(llm, SYS, *(reply for _, reply in GREEN_TEA), "I know nothing about your drinks yet.")
    friday = await agent(llm, ReMeMemoryMiddleware(reme, user_name="alice"))

    assert [await say(friday, said) for said, _ in GREEN_TEA] == [reply for _, reply in GREEN_TEA]

    second = json.dumps(agent_requests(llm)[1]["messages"])
    assert "Long-term memory" in second and "Alice loves green tea" in second
    assert second.index("What should I drink") < second.index("Alice loves green tea")  # shown after the input
    await assert_each_turn_summarized_once(llm, reme, GREEN_TEA, "Long-term memory")
    stored = await reme.list_memory(user_name="alice", memory_type="personal")
    assert sorted(n.content for n in stored) == sorted(GREEN_TEA_FACTS)

    # scoped per user: Bob's agent, on the same store, is shown nothing of Alice's
    bob = await agent(llm, ReMeMemoryMiddleware(reme, user_name="bob"))
    await say(bob, "What should I drink this afternoon?")
    assert "Alice loves green tea" not in json.dumps(agent_requests(llm)[-1]["messages"])


async def test_agent_control_tools_are_allowed_without_a_confirmation(llm: OpenAITestServer, reme: ReMe) -> None:
    turns(llm, SYS, *(reply for _, reply in RECORD_THEN_SEARCH))
    mw = ReMeMemoryMiddleware(reme, user_name="alice", mode="agent_control")
    tools = await mw.list_tools()
    assert [t.name for t in tools] == ["record_to_memory", "retrieve_from_memory"]
    llm.script(EXTRACT, {"memories": []})
    friday = await agent(llm, mw)

    # without an ALLOW permission the reply would park, waiting for the user to confirm the tool call
    assert [await say(friday, said) for said, _ in RECORD_THEN_SEARCH if said] == ["I will remember that.",
                                                                                  "You prefer the aisle."]

    offered = {t["function"]["name"]: t["function"] for t in agent_requests(llm)[0]["tools"]}
    assert set(offered["record_to_memory"]["parameters"]["properties"]) == {"thinking", "content"}
    assert "worth remembering" in offered["record_to_memory"]["description"]
    stored = sorted(n.content for n in await reme.list_memory(user_name="alice", memory_type="personal"))
    assert stored == ["Alice is vegetarian", "Alice prefers aisle seats"]
    last = json.dumps(agent_requests(llm)[-1]["messages"])
    assert "Keyword 'seat'" in last and "Alice prefers aisle seats" in last
    assert "Long-term memory" not in last  # agent control: no retrieval behind the model's back
    # the turns are still recorded, without the tool calls: nothing of them is text
    assert not any("record_to_memory" in p for p in prompts(llm, EXTRACT))


async def test_a_task_run_is_distilled_with_its_score_and_helps_the_next_run(
        llm: OpenAITestServer, reme: ReMe) -> None:
    script_task(llm)
    turns(llm, SYS, "I called spotify.review_song for each liked song.", "Done: 12 songs rated.",
          "I will log in first, then review each song.")
    mw = ReMeMemoryMiddleware(reme, task_name="spotify")
    runner = await agent(llm, mw)
    await say(runner, "Rate all my liked songs 5 stars.")
    await say(runner, "Are you done?")
    assert prompts(llm, SUCCESS) == []
    await mw.finish_run(runner, score=1.0)

    steps = run_steps(llm)
    assert all(steps.count(t) == 1 for t in ("Rate all my liked songs", "Are you done?", "Done: 12 songs"))
    nxt = await agent(llm, ReMeMemoryMiddleware(reme, task_name="spotify"))
    await say(nxt, "Rate all my liked songs 4 stars.")
    assert LESSON["content"] in json.dumps(agent_requests(llm)[-1]["messages"])


async def test_a_malformed_summary_fails_the_reply_and_nothing_is_stored(llm: OpenAITestServer, reme: ReMe) -> None:
    llm.script(EXTRACT, "Sure! Here are the memories: {memories: [Alice, green tea")
    turns(llm, SYS, "Noted.")
    friday = await agent(llm, ReMeMemoryMiddleware(reme, user_name="alice", rewrite=False))
    with pytest.raises(LLMOutputError) as failure:
        await say(friday, "I love green tea.")
    assert "{memories: [Alice" in (failure.value.raw or "")
    assert await reme.count_memory(user_name="alice") == 0


async def test_agentscopes_own_reme_middleware_stops_the_reply_naming_ours(llm: OpenAITestServer,
                                                                          tmp_path: Path) -> None:
    """AgentScope's ReMeMiddleware does `from reme import ReMe` for the original package; it catches
    every Exception and logs it, so without this error the agent would run with no memory at all."""
    turns(llm, SYS, "Hello!", "Hello again!")
    mw = ReMeMiddleware(workspace_dir=str(tmp_path / "as-reme"))
    friday = await agent(llm, mw)
    with pytest.raises(OriginalReMeAPIError, match="reme.integrations.agentscope.ReMeMemoryMiddleware"):
        await say(friday, "I love green tea.")


async def test_a_user_and_a_task_memory_side_by_side(llm: OpenAITestServer, reme: ReMe) -> None:
    script_personal(llm, "Alice loves green tea", "green tea", ["Alice green tea"])
    script_task(llm)
    await reme.add_memory(LESSON["content"], task_name="spotify", when_to_use=LESSON["when_to_use"])
    await reme.add_memory("Alice rates only songs she liked this year", user_name="alice")
    turns(llm, SYS, "Rated 12 songs; you love green tea, by the way.")
    user, task = ReMeMemoryMiddleware(reme, user_name="alice"), ReMeMemoryMiddleware(reme, task_name="spotify")
    model = OpenAIChatModel(credential=OpenAICredential(api_key="sk-test", base_url=llm.base_url),
                            model="test-model", stream=False)
    both = Agent(name="Friday", system_prompt=SYS, model=model, middlewares=[user, task])

    await say(both, "Rate the songs I liked this year 5 stars; I love green tea.")
    seen = json.dumps(agent_requests(llm)[-1]["messages"])
    assert "Alice rates only songs she liked" in seen and LESSON["content"] in seen  # both hints, once each
    assert seen.count("Long-term memory") == 2
    await task.finish_run(both, score=1.0)
    assert "Rate the songs I liked" in run_steps(llm) and "Long-term memory" not in run_steps(llm)
    stored = await reme.list_memory(user_name="alice", memory_type="personal")
    assert sorted(n.content for n in stored) == ["Alice loves green tea", "Alice rates only songs she liked this year"]
