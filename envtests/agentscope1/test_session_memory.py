"""ReMeSessionMemory: a ReMe session as AgentScope 1.x's short-term memory (`MemoryBase`). The
same operations on it and on AgentScope's `InMemoryMemory` give the same answers; a real
`ReActAgent` keeps its conversation in it, compresses it (AgentScope's compression, then ReMe's),
and a new agent on the same session in a reopened ReMe goes on where the first one was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from agentscope.agent import ReActAgent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.memory import InMemoryMemory, MemoryBase
from agentscope.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope.model import OpenAIChatModel
from agentscope.token import CharTokenCounter
from agentscope.tool import ToolResponse, Toolkit
from agent_loops import open_reme, turns
from openai_server import Message, OpenAITestServer, prompt_of

from reme import InvalidInputError, ReMe
from reme.integrations.agentscope1 import ReMeSessionMemory

SYS = "You are Friday, a travel assistant."
AS_COMPRESS = "write a continuation summary"  # AgentScope's compression prompt
REME_COMPACT = "You keep the working memory of an AI agent"  # ReMe's compaction prompt
AS_SUMMARY = {"task_overview": "Plan a trip to Lisbon in May", "current_state": "Flights compared",
              "important_discoveries": "Alice is vegetarian", "next_steps": "Book the hotel",
              "context_to_preserve": "Budget 900 EUR"}
REME_SUMMARY = {"goal": "Plan a trip to Lisbon in May", "constraints": ["Alice is vegetarian"],
                "progress": ["Flights compared"], "decisions": [], "next_steps": ["Book the hotel"],
                "critical_context": ["Budget 900 EUR"]}


@pytest.fixture
async def reme(llm: OpenAITestServer, tmp_path: Path) -> AsyncIterator[ReMe]:
    async with open_reme(llm, tmp_path / "reme") as memory:
        yield memory


def texts(msgs: list[Msg]) -> list[str]:
    return [m.get_text_content() or "" for m in msgs]


def conversation() -> list[Msg]:
    call = ToolUseBlock(type="tool_use", id="call-1", name="weather", input={"city": "Lisbon"})
    result = ToolResultBlock(type="tool_result", id="call-1", name="weather",
                             output=[TextBlock(type="text", text="sunny, 24C")])
    return [Msg("Alice", "Plan a trip to Lisbon in May.", "user"),
            Msg("Friday", [call], "assistant"),
            Msg("system", [result], "system"),
            Msg("Friday", "It will be sunny.", "assistant"),
            Msg("user", "<system-hint>be brief</system-hint>", "user")]


async def apply(memory: MemoryBase, msgs: list[Msg]) -> list[Any]:
    """One sequence of MemoryBase calls; what each returned (messages as dicts)."""
    out: list[Any] = []
    await memory.add(msgs[:2])
    await memory.add(msgs[1:4], marks=["turn-1"])  # msgs[1] again: not added twice
    await memory.add(msgs[4], marks="hint")
    out.append(await memory.size())
    out.append([m.to_dict() for m in await memory.get_memory(mark="turn-1")])
    out.append([m.to_dict() for m in await memory.get_memory(exclude_mark="hint")])
    out.append(await memory.update_messages_mark(new_mark="compressed", msg_ids=[msgs[0].id, msgs[1].id]))
    out.append(await memory.update_messages_mark(new_mark="kept", old_mark="turn-1"))
    out.append(await memory.update_messages_mark(new_mark="kept", old_mark="kept"))  # a mark replaced by itself stays
    out.append(texts(await memory.get_memory(mark="kept", prepend_summary=False)))
    await memory.update_compressed_summary("Alice wants Lisbon in May.")
    got = await memory.get_memory(exclude_mark="compressed")
    out.append([(m.role, m.get_text_content()) for m in got[:1]] + [m.to_dict() for m in got[1:]])
    out.append(texts(await memory.get_memory(exclude_mark="compressed", prepend_summary=False)))
    out.append(await memory.delete_by_mark("hint"))
    out.append(await memory.delete([msgs[3].id, "no-such-id"]))
    out.append(await memory.update_messages_mark(new_mark=None, old_mark="compressed"))
    out.append([m.to_dict() for m in await memory.get_memory(prepend_summary=False)])
    out.append(await memory.size())
    return out


async def test_answers_as_in_memory_memory_does(reme: ReMe) -> None:
    msgs = conversation()
    ours, theirs = await apply(ReMeSessionMemory(reme, "trip"), msgs), await apply(InMemoryMemory(), msgs)

    assert ours == theirs
    # the tool call and its result came back as the blocks they were
    stored = await ReMeSessionMemory(reme, "trip").get_memory(prepend_summary=False)
    assert stored[1].get_content_blocks("tool_use")[0]["input"] == {"city": "Lisbon"}
    assert stored[2].get_content_blocks("tool_result")[0]["output"][0]["text"] == "sunny, 24C"


async def test_state_moves_to_and_from_in_memory_memory(reme: ReMe) -> None:
    source = InMemoryMemory()
    await source.add(conversation()[:2], marks="turn-1")
    await source.add(conversation()[3])
    await source.update_compressed_summary("Alice wants Lisbon.")
    memory = ReMeSessionMemory(reme, "moved")

    assert await memory.import_state(source.state_dict()) == 3
    assert [m.to_dict() for m in await memory.get_memory(mark="turn-1", prepend_summary=False)] == \
        [m.to_dict() for m in await source.get_memory(mark="turn-1", prepend_summary=False)]
    back = InMemoryMemory()
    back.load_state_dict(await memory.export_state())
    assert back.state_dict() == source.state_dict()
    # the agent's own state names the session; the messages stay in ReMe
    assert memory.state_dict() == {"session_name": "moved"}
    other = ReMeSessionMemory(reme, "elsewhere")
    other.load_state_dict(memory.state_dict())
    assert texts(await other.get_memory()) == texts(await memory.get_memory())
    with pytest.raises(KeyError):
        other.load_state_dict({})


async def test_sessions_are_apart_and_a_bad_mark_is_rejected(reme: ReMe) -> None:
    alice, bob = ReMeSessionMemory(reme, "alice"), ReMeSessionMemory(reme, "bob")
    await alice.add(Msg("Alice", "hello", "user"))
    with pytest.raises(InvalidInputError):
        await alice.add(Msg("Alice", "again", "user"), marks=[""])
    assert await bob.size() == 0 and await bob.get_memory() == []
    assert texts(await alice.get_memory()) == ["hello"]
    await bob.clear()
    assert await alice.size() == 1
    await alice.clear()
    assert await alice.size() == 0


def agent(llm: OpenAITestServer, memory: MemoryBase, *, threshold: int, toolkit: Toolkit | None = None) -> ReActAgent:
    model = OpenAIChatModel(model_name="test-model", api_key="sk-test", stream=False,
                            client_kwargs={"base_url": llm.base_url})
    config = ReActAgent.CompressionConfig(enable=True, agent_token_counter=CharTokenCounter(),
                                          trigger_threshold=threshold, keep_recent=2)
    friday = ReActAgent(name="Friday", sys_prompt=SYS, model=model, formatter=OpenAIChatFormatter(), memory=memory,
                        toolkit=toolkit, compression_config=config)
    friday.set_console_output_enabled(False)
    return friday


def agent_requests(llm: OpenAITestServer) -> list[dict[str, Any]]:
    return [b for b in llm.chat_requests if SYS in prompt_of(b) and AS_COMPRESS not in prompt_of(b)]


TRIP = [("Plan a trip to Lisbon in May. I am vegetarian.", "Lisbon in May: good choice."),
        ("My budget is 900 EUR.", "Noted, 900 EUR."),
        ("Compare the flights.", "TAP is cheapest."),
        ("Now the hotel, please.", "Booking a hotel in Alfama.")]


async def test_a_react_agent_keeps_and_compresses_its_conversation_in_the_session(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(AS_COMPRESS, AS_SUMMARY)
    turns(llm, SYS, *(reply for _, reply in TRIP))
    async with open_reme(llm, tmp_path / "reme") as reme:
        friday = agent(llm, ReMeSessionMemory(reme, "alice-trip"), threshold=300)
        for said, reply in TRIP[:3]:
            assert (await friday(Msg("Alice", said, "user"))).get_text_content() == reply

        # AgentScope's compression ran on the session: a summary, the older messages marked
        memory = ReMeSessionMemory(reme, "alice-trip")
        state = await memory.export_state()
        assert "Budget 900 EUR" in state["_compressed_summary"]
        compressed = texts(await memory.get_memory(mark="compressed"))
        assert TRIP[0][0] in compressed
        assert len([p for p in llm.chat_requests if AS_COMPRESS in prompt_of(p)]) >= 1

    # another process: a new agent on the same session, in the reopened store, goes on
    async with open_reme(llm, tmp_path / "reme") as reme:
        friday = agent(llm, ReMeSessionMemory(reme, "alice-trip"), threshold=10_000)
        assert (await friday(Msg("Alice", TRIP[3][0], "user"))).get_text_content() == TRIP[3][1]
        sent = json.dumps(agent_requests(llm)[-1]["messages"])
        assert "Budget 900 EUR" in sent and TRIP[3][0] in sent
        assert TRIP[0][0] not in sent  # compressed: the summary stands in for it
        assert await ReMeSessionMemory(reme, "alice-trip").size() == 8


async def test_remes_compaction_runs_before_each_model_call(llm: OpenAITestServer, tmp_path: Path) -> None:
    async def search_hotels(city: str) -> ToolResponse:
        """Search hotels in a city.

        Args:
            city (str): The city.
        """
        return ToolResponse(content=[TextBlock(type="text", text=f"Casa Alfama, {city}: 120 EUR")])

    toolkit = Toolkit()
    toolkit.register_tool_function(search_hotels)
    llm.script(REME_COMPACT, REME_SUMMARY)
    turns(llm, SYS, TRIP[0][1], TRIP[1][1],
          Message(tool_calls=[{"name": "search_hotels", "arguments": {"city": "Lisbon"}}]), "Casa Alfama fits.")
    async with ReMe(working_dir=tmp_path / "reme", embedding={"backend": "hash"},
                    llm={"model": "test-model", "base_url": llm.base_url, "api_key": "sk-test", "max_retries": 0},
                    context={"threshold": 100, "reserve": 80}) as reme:
        memory = ReMeSessionMemory(reme, "alice-trip")
        friday = agent(llm, memory, threshold=10**9, toolkit=toolkit)  # AgentScope's own never triggers
        friday.register_instance_hook("pre_reasoning", "reme", memory.pre_reasoning_hook)
        for said, _ in TRIP[:2]:
            await friday(Msg("Alice", said, "user"))
        assert (await friday(Msg("Alice", "Find a hotel.", "user"))).get_text_content() == "Casa Alfama fits."

        compactions = prompts_with(llm, REME_COMPACT)
        assert compactions and TRIP[0][0] in compactions[0]
        last = agent_requests(llm)[-1]["messages"]
        sent = json.dumps(last)
        assert "Budget 900 EUR" in sent and TRIP[0][0] not in sent  # ReMe's summary stands in for the start
        tool = [m for m in last if m["role"] == "tool"]  # the call and its result were kept together
        assert "Casa Alfama, Lisbon" in json.dumps(tool) and any(m.get("tool_calls") for m in last)
        assert TRIP[0][0] in texts(await memory.get_memory(mark="compressed"))
        assert (await memory.export_state())["_compressed_summary"].startswith("## Goal\nPlan a trip to Lisbon")


def prompts_with(llm: OpenAITestServer, marker: str) -> list[str]:
    return [prompt_of(b) for b in llm.chat_requests if marker in prompt_of(b)]


SYS_HELPFUL = "You are Friday, a helpful assistant."


def view(msgs: list[Msg]) -> list[tuple[str, str, Any]]:
    return [(m.name, m.role, m.content) for m in msgs]


async def exercise(memory: MemoryBase) -> list[Any]:
    """Every MemoryBase operation, in an order that touches each path; returns what each answered."""
    a, b = Msg("Alice", "I moved to Berlin.", "user"), Msg("Friday", "Noted.", "assistant")
    call = Msg("Friday", [ToolUseBlock(type="tool_use", id="t1", name="weather", input={"city": "Berlin"})],
               "assistant")
    result = Msg("system", [ToolResultBlock(type="tool_result", id="t1", name="weather",
                                            output=[TextBlock(type="text", text="sunny")])], "system")
    out: list[Any] = []
    await memory.add([a, b], marks="turn-1")
    await memory.add(a)  # the same Msg again: not added twice
    await memory.add([call, result], marks=["turn-2", "tools"])
    out.append(await memory.size())
    out.append(view(await memory.get_memory()))
    out.append(view(await memory.get_memory(mark="tools")))
    out.append(view(await memory.get_memory(exclude_mark="tools")))
    out.append(await memory.update_messages_mark("seen", old_mark="turn-1"))
    out.append(view(await memory.get_memory(mark="seen")))
    out.append(await memory.update_messages_mark(None, old_mark="seen", msg_ids=[a.id]))
    out.append(view(await memory.get_memory(mark="seen")))
    await memory.update_compressed_summary("Alice lives in Berlin.")
    out.append(view(await memory.get_memory(exclude_mark="tools")))
    out.append(view(await memory.get_memory(exclude_mark="tools", prepend_summary=False)))
    out.append(await memory.delete([b.id, "no-such-id"]))
    out.append(await memory.delete_by_mark("tools"))
    out.append(view(await memory.get_memory(prepend_summary=False)))
    await memory.clear()
    out.append(await memory.size())
    return out


async def test_a_session_answers_like_agentscopes_in_memory_memory(llm: OpenAITestServer, tmp_path: Path) -> None:
    async with open_reme(llm, tmp_path / "reme") as reme:
        assert await exercise(ReMeSessionMemory(reme, "chat-1")) == await exercise(InMemoryMemory())


async def test_a_react_agent_runs_on_a_session_that_survives_a_restart(llm: OpenAITestServer,
                                                                       tmp_path: Path) -> None:
    turns(llm, SYS_HELPFUL, "Hello Alice.", "You said you moved to Berlin.")
    model = OpenAIChatModel(model_name="test-model", api_key="sk-test", stream=False,
                            client_kwargs={"base_url": llm.base_url})
    async with open_reme(llm, tmp_path / "reme") as reme:
        friday = ReActAgent(name="Friday", sys_prompt=SYS_HELPFUL, model=model, formatter=OpenAIChatFormatter(),
                            memory=ReMeSessionMemory(reme, "chat-42"))
        await friday(Msg("Alice", "Hi, I moved to Berlin.", "user"))
        state = friday.state_dict()
    async with open_reme(llm, tmp_path / "reme") as reme:  # a new process, the same store
        memory = ReMeSessionMemory(reme, "elsewhere")
        again = ReActAgent(name="Friday", sys_prompt=SYS_HELPFUL, model=model, formatter=OpenAIChatFormatter(),
                           memory=memory)
        again.load_state_dict(state)
        assert memory.session_name == "chat-42"
        reply = await again(Msg("Alice", "Where did I move?", "user"))
        assert reply.get_text_content() == "You said you moved to Berlin."
        sent = str(llm.requests[-1]["body"]["messages"])
        assert "Hi, I moved to Berlin." in sent and "Hello Alice." in sent  # the first turn came from the store
        assert await memory.size() == 4
