"""A ReMe session as AgentScope 1.x short-term memory (`MemoryBase`): the same operations give the
same answers as AgentScope's own `InMemoryMemory`, a ReActAgent loop runs on it, and the
conversation is still there after reopening the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.agent import ReActAgent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.memory import InMemoryMemory, MemoryBase
from agentscope.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope.model import OpenAIChatModel
from agent_loops import open_reme, turns
from openai_server import OpenAITestServer

from reme.integrations.agentscope1 import ReMeSessionMemory

SYS = "You are Friday, a helpful assistant."


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
    turns(llm, SYS, "Hello Alice.", "You said you moved to Berlin.")
    model = OpenAIChatModel(model_name="test-model", api_key="sk-test", stream=False,
                            client_kwargs={"base_url": llm.base_url})
    async with open_reme(llm, tmp_path / "reme") as reme:
        friday = ReActAgent(name="Friday", sys_prompt=SYS, model=model, formatter=OpenAIChatFormatter(),
                            memory=ReMeSessionMemory(reme, "chat-42"))
        await friday(Msg("Alice", "Hi, I moved to Berlin.", "user"))
        state = friday.state_dict()
    async with open_reme(llm, tmp_path / "reme") as reme:  # a new process, the same store
        memory = ReMeSessionMemory(reme, "elsewhere")
        again = ReActAgent(name="Friday", sys_prompt=SYS, model=model, formatter=OpenAIChatFormatter(),
                           memory=memory)
        again.load_state_dict(state)
        assert memory.session_name == "chat-42"
        reply = await again(Msg("Alice", "Where did I move?", "user"))
        assert reply.get_text_content() == "You said you moved to Berlin."
        sent = str(llm.requests[-1]["body"]["messages"])
        assert "Hi, I moved to Berlin." in sent and "Hello Alice." in sent  # the first turn came from the store
        assert await memory.size() == 4
