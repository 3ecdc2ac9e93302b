"""ReMe as AgentScope 1.x long-term memory: real ReActAgent loops over several turns, the agent's
model and ReMe's summarizer both answered by the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from agentscope.agent import ReActAgent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.memory import InMemoryMemory, LongTermMemoryBase
from agentscope.message import Msg
from agentscope.model import OpenAIChatModel
from agent_loops import (EXTRACT, GREEN_TEA, GREEN_TEA_FACTS, GUIDE, LESSON, RECORD_THEN_SEARCH, REWRITE, SUCCESS,
                         assert_each_turn_summarized_once, histories, memories, open_reme, prompts, run_steps,
                         script_personal, script_task, turns)
from openai_server import Message, OpenAITestServer, prompt_of

from reme import LLMOutputError, ReMe
from reme.integrations.agentscope1 import ReMePersonalMemory, ReMeTaskMemory, ReMeToolMemory

SYS = "You are Friday, a helpful assistant."


@pytest.fixture
async def reme(llm: OpenAITestServer, tmp_path: Path) -> AsyncIterator[ReMe]:
    async with open_reme(llm, tmp_path / "reme") as memory:
        yield memory


def agent(llm: OpenAITestServer, ltm: LongTermMemoryBase, mode: str) -> ReActAgent:
    # stream=False: AgentScope 1.0.21's streaming parser fails on openai 3.x deltas (a known limit)
    model = OpenAIChatModel(model_name="test-model", api_key="sk-test", stream=False,
                            client_kwargs={"base_url": llm.base_url})
    return ReActAgent(name="Friday", sys_prompt=SYS, model=model, formatter=OpenAIChatFormatter(),
                      memory=InMemoryMemory(), long_term_memory=ltm, long_term_memory_mode=mode)





def agent_requests(llm: OpenAITestServer) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if SYS in prompt_of(body)]


async def say(a: ReActAgent, text: str) -> str:
    reply = await a(Msg("Alice", text, "user"))
    return reply.get_text_content() or ""


async def test_static_mode_records_each_message_once_and_never_the_injected_memories(
        llm: OpenAITestServer, reme: ReMe) -> None:
    script_personal(llm, GREEN_TEA_FACTS, "green tea", ["Alice drink preference green tea"])
    turns(llm, SYS, *(reply for _, reply in GREEN_TEA), "I know nothing about your drinks yet.")
    ltm = ReMePersonalMemory(reme, user_name="alice")
    friday = agent(llm, ltm, "static_control")

    assert [await say(friday, said) for said, _ in GREEN_TEA] == [reply for _, reply in GREEN_TEA]

    # the model saw the retrieved memory in the second turn, in the block the agent injects
    second = json.dumps(agent_requests(llm)[1]["messages"])
    assert "<long_term_memory>" in second and "Alice loves green tea" in second
    # three summaries, each of that turn's new messages only: no old turn, no injected block
    await assert_each_turn_summarized_once(llm, reme, GREEN_TEA, "long_term_memory")
    stored = await reme.list_memory(user_name="alice", memory_type="personal")
    assert sorted(n.content for n in stored) == sorted(GREEN_TEA_FACTS)
    assert len(ltm.recorded_ids) == 6 and ltm.state_dict()["recorded_ids"] == ltm.recorded_ids


async def test_agent_control_mode_gives_the_model_record_and_retrieve_tools(
        llm: OpenAITestServer, reme: ReMe) -> None:
    turns(llm, SYS, *(reply for _, reply in RECORD_THEN_SEARCH))
    friday = agent(llm, ReMePersonalMemory(reme, user_name="alice"), "agent_control")

    assert [await say(friday, said) for said, _ in RECORD_THEN_SEARCH if said] == ["I will remember that.",
                                                                                  "You prefer the aisle."]

    tools = {t["function"]["name"]: t["function"] for t in agent_requests(llm)[0]["tools"]}
    assert set(tools) >= {"record_to_memory", "retrieve_from_memory"}
    record = tools["record_to_memory"]
    assert "worth remembering" in record["description"]  # from the Google-style docstring
    assert set(record["parameters"]["properties"]) == {"thinking", "content"}
    assert record["parameters"]["properties"]["content"]["type"] == "array"
    stored = sorted(n.content for n in await reme.list_memory(user_name="alice", memory_type="personal"))
    assert stored == ["Alice is vegetarian", "Alice prefers aisle seats"]
    # the tool's answer reached the model; nothing was summarized or retrieved behind its back
    last = json.dumps(agent_requests(llm)[-1]["messages"])
    assert "Alice prefers aisle seats" in last and "Keyword 'seat'" in last
    assert prompts(llm, EXTRACT) == [] and "<long_term_memory>" not in last


async def test_both_modes_together_record_tool_turns_without_their_calls(llm: OpenAITestServer, reme: ReMe) -> None:
    script_personal(llm, "Alice has a cat named Mochi", "Mochi", ["Alice cat"])
    turns(llm, SYS,
          Message(tool_calls=[{"name": "record_to_memory", "arguments": {
              "thinking": "a pet", "content": ["Alice has a cat named Mochi"]}}]),
          "Mochi is a lovely name.",
          "Mochi, your cat.")
    friday = agent(llm, ReMePersonalMemory(reme, user_name="alice"), "both")

    await say(friday, "My cat is called Mochi.")
    assert await say(friday, "What is my cat's name?") == "Mochi, your cat."

    stored = await reme.list_memory(user_name="alice", memory_type="personal")
    assert [n.content for n in stored] == ["Alice has a cat named Mochi"]  # tool and summary: stored once
    extracts = prompts(llm, EXTRACT)  # the question holds nothing to remember: no call for it
    assert len(extracts) == 1 and "My cat is called Mochi" in extracts[0]
    recorded = await histories(reme, "alice")
    assert [("My cat is called Mochi" in h, "What is my cat's name?" in h) for h in recorded] == [(True, False),
                                                                                                  (False, True)]
    assert not any("record_to_memory" in p or "<long_term_memory>" in p for p in [*extracts, *recorded])
    assert "Alice has a cat named Mochi" in json.dumps(agent_requests(llm)[-1]["messages"])


async def test_a_malformed_summary_fails_the_reply_and_the_turn_is_recorded_later(
        llm: OpenAITestServer, reme: ReMe) -> None:
    broken = {"on": True}
    llm.script(EXTRACT, lambda body: "Sure! Here are the memories: {memories: [Alice, green tea" if broken["on"]
               else memories("Alice loves green tea"))
    llm.script(REWRITE, {"queries": ["Alice"]})
    turns(llm, SYS, "Noted.", "Hello again.")
    ltm = ReMePersonalMemory(reme, user_name="alice")
    friday = agent(llm, ltm, "static_control")

    with pytest.raises(LLMOutputError) as failure:
        await say(friday, "I love green tea.")
    assert "{memories: [Alice" in (failure.value.raw or "")
    assert await reme.count_memory(user_name="alice") == 0 and ltm.recorded_ids == []

    broken["on"] = False
    await say(friday, "Good morning!")
    assert "I love green tea." in prompts(llm, EXTRACT)[-1]  # the failed turn, read with the next one
    (recorded,) = await histories(reme, "alice")
    assert "I love green tea." in recorded and "Good morning!" in recorded
    stored = await reme.list_memory(user_name="alice", memory_type="personal")
    assert [n.content for n in stored] == ["Alice loves green tea"]


async def test_task_memory_learns_from_a_scored_run_and_helps_the_next(llm: OpenAITestServer, reme: ReMe) -> None:
    script_task(llm)
    turns(llm, SYS, "I called spotify.review_song for each liked song.", "Done: 12 songs rated.",
          "I will log in first, then review each song.")
    first = ReMeTaskMemory(reme, task_name="spotify")
    runner = agent(llm, first, "static_control")
    await say(runner, "Rate all my liked songs 5 stars.")
    await say(runner, "Are you done?")
    assert prompts(llm, SUCCESS) == []  # without a score the agent's calls only collect the run
    await first.record(await runner.memory.get_memory(), score=1.0)  # the outcome, known after the run

    steps = run_steps(llm)  # each message of the run once, whichever call collected it
    assert all(steps.count(t) == 1 for t in ("Rate all my liked songs", "Are you done?", "Done: 12 songs"))
    nxt = agent(llm, ReMeTaskMemory(reme, task_name="spotify"), "static_control")
    await say(nxt, "Rate all my liked songs 4 stars.")
    seen = json.dumps(agent_requests(llm)[-1]["messages"])
    assert "<long_term_memory>" in seen and LESSON["content"] in seen


async def test_tool_memory_turns_json_tool_call_records_into_guidelines(llm: OpenAITestServer, reme: ReMe) -> None:
    ok = {"create_time": "2024-01-01 10:00:00", "tool_name": "web_search", "input": {"query": "Python"},
          "output": "Found 10 results", "token_cost": 100, "success": True, "time_cost": 1.2}
    failed = {**ok, "create_time": "2024-01-01 10:05:00", "output": "timeout", "success": False, "time_cost": 9.0}
    llm.script(GUIDE, {"guideline": "Use short queries; retry once on a timeout."})
    turns(llm, SYS,
          Message(tool_calls=[{"name": "record_to_memory", "arguments": {
              "thinking": "one success, one timeout", "content": [json.dumps(ok), json.dumps(failed)]}}]),
          "Recorded.",
          Message(tool_calls=[{"name": "retrieve_from_memory", "arguments": {"keywords": ["web_search"]}}]),
          "Keep queries short.",
          Message(tool_calls=[{"name": "record_to_memory", "arguments": {
              "thinking": "bad", "content": ['{"tool_name": "web_search", "success": "maybe"}']}}]),
          "That record was refused.")
    ltm = ReMeToolMemory(reme, tool_names=["web_search"])
    friday = agent(llm, ltm, "agent_control")

    await say(friday, "Log these two searches.")
    await say(friday, "How should I use web_search?")
    guide = json.dumps(agent_requests(llm)[-1]["messages"])
    assert "2 calls, 50% succeeded" in guide and "Use short queries" in guide
    assert "Found 10 results" in prompts(llm, GUIDE)[0]
    await say(friday, "Log this one too.")
    assert "Error" in json.dumps(agent_requests(llm)[-1]["messages"][-1])  # the model is told, nothing stored
    assert "2 calls" in await ltm.retrieve(Msg("user", "anything", "user"))
    assert len(prompts(llm, GUIDE)) == 1


async def test_tool_memory_in_static_mode_records_the_records_among_the_messages(
        llm: OpenAITestServer, reme: ReMe) -> None:
    record = {"tool_name": "calculator", "input": {"expr": "2+2"}, "output": "4", "success": True,
              "time_cost": 0.1, "token_cost": 5, "create_time": "2024-01-01 10:00:00"}
    llm.script(GUIDE, {"guideline": "Pass plain arithmetic expressions."})
    turns(llm, SYS, "Logged.", "Pass plain expressions.")
    friday = agent(llm, ReMeToolMemory(reme, tool_names=["calculator"]), "static_control")
    await say(friday, json.dumps(record))
    await say(friday, "How do I use the calculator?")
    assert len(prompts(llm, GUIDE)) == 1  # the record once; plain messages are not records
    assert "1 call, 100% succeeded" in json.dumps(agent_requests(llm)[-1]["messages"])


async def test_recorded_ids_survive_a_state_round_trip(llm: OpenAITestServer, reme: ReMe) -> None:
    llm.script(EXTRACT, {"memories": []})
    ltm = ReMePersonalMemory(reme, user_name="alice")
    msgs = [Msg("Alice", "Hello", "user"), Msg("Friday", "Hi Alice", "assistant")]
    await ltm.record(msgs)
    restored = ReMePersonalMemory(reme, user_name="alice")
    restored.load_state_dict(ltm.state_dict())
    await restored.record([*msgs, Msg("Alice", "Bye", "user")])
    assert [("Hello" in h, "Bye" in h) for h in await histories(reme, "alice")] == [(True, False), (False, True)]
