"""Claude's memory tool in the SDK's own agent loop (`AsyncAnthropic.beta.messages.tool_runner`)
against the scripted server speaking Anthropic's Messages protocol: what the model writes to
/memories in one run it reads back in the next, after the store was closed and reopened; another
user's run in the same process sees none of it; a refused command reaches the model as an error
result with the SDK's message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_loops import open_reme
from anthropic import AsyncAnthropic
from openai_server import Message, OpenAITestServer

from reme.integrations.anthropic import ReMeMemoryTool

SYSTEM = "You are a helpful assistant with a memory directory."


def memory_call(**arguments: Any) -> Message:
    return Message(tool_calls=[{"name": "memory", "arguments": arguments}])


async def run(llm: OpenAITestServer, tool: ReMeMemoryTool, text: str) -> str:
    client = AsyncAnthropic(base_url=llm.anthropic_url, api_key="sk-test", max_retries=0)
    runner = client.beta.messages.tool_runner(model="claude-test", max_tokens=512, system=SYSTEM, tools=[tool],
                                              messages=[{"role": "user", "content": text}])
    final = await runner.until_done()
    return str(final.content[-1].text)  # type: ignore[union-attr]


def tool_results(llm: OpenAITestServer) -> list[dict[str, Any]]:
    """The tool_result blocks of the last request."""
    return [b for m in llm.messages_requests[-1]["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"]


async def test_a_memory_written_in_one_run_is_read_in_the_next_and_no_other_user_sees_it(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    for reply in (memory_call(command="view", path="/memories"),
                  memory_call(command="create", path="/memories/prefs.md", file_text="- loves green tea\n"),
                  "Noted."):
        llm.script(SYSTEM, reply, times=1)
    async with open_reme(llm, tmp_path) as reme:
        assert await run(llm, ReMeMemoryTool(reme, user_name="alice"), "I love green tea.") == "Noted."
        assert llm.messages_requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
        assert tool_results(llm)[-1]["content"] == "File created successfully at: /memories/prefs.md"

        llm.script(SYSTEM, memory_call(command="view", path="/memories/prefs.md"), times=1)
        llm.script(SYSTEM, "I do not know you yet.", times=1)
        await run(llm, ReMeMemoryTool(reme, user_name="bob"), "What do I drink?")
        (result,) = tool_results(llm)
        assert result["is_error"] is True
        assert result["content"] == "The path /memories/prefs.md does not exist. Please provide a valid path."

    async with open_reme(llm, tmp_path) as reme:  # reopened: the next session of alice
        llm.script(SYSTEM, memory_call(command="view", path="/memories/prefs.md"), times=1)
        llm.script(["loves green tea"], "A green tea.", times=1)
        assert await run(llm, ReMeMemoryTool(reme, user_name="alice"), "What should I drink?") == "A green tea."
        (result,) = tool_results(llm)
        assert "is_error" not in result and "1\t- loves green tea" in result["content"]


async def test_an_escaping_path_reaches_the_model_as_the_sdks_error(llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(SYSTEM, memory_call(command="create", path="/memories/../../etc/cron.d/x", file_text="boom"), times=1)
    llm.script(SYSTEM, "Sorry.", times=1)
    async with open_reme(llm, tmp_path) as reme:
        await run(llm, ReMeMemoryTool(reme, user_name="alice"), "hi")
        (result,) = tool_results(llm)
        assert result["is_error"] is True
        assert result["content"] == "Path /memories/../../etc/cron.d/x would escape /memories directory"
        assert await reme.count_memory(user_name="alice") == 0
