"""ReMeMemory inside AutoGen's AssistantAgent, driven by the scripted OpenAI-compatible server
through autogen-ext's OpenAI client; ReMe's own LLM calls go to the same server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import AssistantMessage, SystemMessage, UserMessage
from autogen_ext.models.openai import OpenAIChatCompletionClient
from openai_server import OpenAITestServer, prompt_of

from reme import ReMe
from reme.errors import InvalidInputError, LLMOutputError
from reme.integrations.autogen import HEADER, ReMeMemory

AGENT_PROMPT = "You help Alice plan her travels."


def settings(server: OpenAITestServer, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"working_dir": str(tmp_path / "reme"), "embedding": {"backend": "hash", "dimensions": 64},
            "llm": {"model": "test-model", "base_url": server.base_url, "api_key": "sk-test", "max_retries": 0},
            **extra}


def client(server: OpenAITestServer) -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="sk-test", base_url=server.base_url)


def agent_requests(server: OpenAITestServer) -> list[dict[str, Any]]:
    return [body for body in server.chat_requests if AGENT_PROMPT in prompt_of(body)]


def remember(server: OpenAITestServer, *facts: str) -> None:
    """The next summary extracts `facts`; the rewrite searches the question as asked."""
    server.script("Read the conversation below", {"memories": [
        {"content": fact, "kind": "fact", "sources": [0], "importance": 0.6, "time": None} for fact in facts]},
        times=1)


def answer_from_memory(body: dict[str, Any]) -> str:
    """The agent's model: it knows where Alice lives only if the memory reached its prompt."""
    system = [m["content"] for m in body["messages"] if m["role"] == "system" and HEADER in m["content"]]
    if system and "Berlin" in system[-1]:
        return "Your tickets go to Berlin."
    return "Noted." if "moved" in prompt_of(body) else "I do not know where you live."


@pytest.fixture
def llm(llm: OpenAITestServer) -> OpenAITestServer:
    llm.script("You prepare a search", lambda body: {  # the question, searched as asked
        "queries": [prompt_of(body).split("Question: ")[1].split("\n")[0]], "start": None, "end": None})
    llm.script("long-term memory consistent", {"decisions": []})
    return llm


async def test_agent_recalls_across_runs_what_record_summarized(llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(AGENT_PROMPT, answer_from_memory)
    memory = ReMeMemory("alice", **settings(llm, tmp_path))
    model = client(llm)
    agent = AssistantAgent("planner", model_client=model, memory=[memory], system_message=AGENT_PROMPT)

    first = await agent.run(task="I moved to Berlin.")
    assert first.messages[-1].to_model_text() == "Noted."
    assert not any(isinstance(m, MemoryQueryEvent) for m in first.messages)  # nothing stored: nothing injected
    remember(llm, "Alice lives in Berlin since May 2024")
    summary = await memory.record(first)
    assert [n.content for n in summary.added] == ["Alice lives in Berlin since May 2024"]
    extract = next(b for b in llm.chat_requests if "Read the conversation below" in prompt_of(b))
    assert "alice: I moved to Berlin." in prompt_of(extract) and "> [0]" in prompt_of(extract)  # read, marked
    assert "planner: Noted." not in prompt_of(extract)  # the agent's reply after it holds nothing of alice's

    second = await agent.run(task="Which city should my train tickets go to?")
    assert second.messages[-1].to_model_text() == "Your tickets go to Berlin."
    (event,) = [m for m in second.messages if isinstance(m, MemoryQueryEvent)]
    assert [c.content for c in event.content] == ["Alice lives in Berlin since May 2024"]
    assert event.content[0].metadata is not None and event.content[0].metadata["score"] > 0
    messages = agent_requests(llm)[-1]["messages"]
    injected = [m for m in messages if m["role"] == "system" and HEADER in m["content"]]
    assert len(injected) == 1 and messages[-1] == injected[0]  # one block, right after the question
    assert messages[-2] == {"role": "user", "content": "Which city should my train tickets go to?", "name": "user"}

    remember(llm, "Alice travels with her dog Rex")
    third = await agent.run(task="I will bring my dog Rex on the trip.")
    summary = await memory.record(third)
    assert [n.content for n in summary.added] == ["Alice travels with her dog Rex"]
    reconcile = [b for b in llm.chat_requests if "long-term memory consistent" in prompt_of(b)]
    assert len(reconcile) == 1 and "Alice lives in Berlin" in prompt_of(reconcile[0])  # the second summary
    found = await memory.query("dog Rex")
    assert "Alice travels with her dog Rex" in [c.content for c in found.results]
    await memory.close()
    await model.close()


async def test_update_context_adds_one_system_message_of_what_is_relevant(llm: OpenAITestServer,
                                                                          tmp_path: Path) -> None:
    memory = ReMeMemory("alice", top_k=2, **settings(llm, tmp_path))
    for text in ("Alice drinks green tea every morning", "Alice is allergic to peanuts", "Alice owns a red bike"):
        await memory.add(MemoryContent(content=text, mime_type=MemoryMimeType.TEXT))
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content="What tea should I pack?", source="user"))
    await context.add_message(AssistantMessage(content="Let me check.", source="planner"))

    result = await memory.update_context(context)
    messages = await context.get_messages()
    assert len(messages) == 3 and isinstance(messages[-1], SystemMessage)
    assert messages[-1].content.startswith(HEADER) and "green tea" in messages[-1].content
    assert len(result.memories.results) == 2 and result.memories.results[0].content == "Alice drinks green tea every morning"
    rewrite = [b for b in llm.chat_requests if "You prepare a search" in prompt_of(b)]
    assert "What tea should I pack?" in prompt_of(rewrite[-1])  # the query is the last *user* message

    empty = UnboundedChatCompletionContext()
    await empty.add_message(SystemMessage(content="no user yet"))
    assert (await memory.update_context(empty)).memories.results == []
    assert len(await empty.get_messages()) == 1
    await memory.close()


async def test_query_returns_scored_memories_and_add_keeps_metadata(llm: OpenAITestServer, tmp_path: Path) -> None:
    memory = ReMeMemory("alice", **settings(llm, tmp_path))
    await memory.add(MemoryContent(content="Alice prefers window seats on trains", mime_type=MemoryMimeType.TEXT,
                                   metadata={"topic": "travel"}))
    await memory.add(MemoryContent(content={"diet": "vegetarian"}, mime_type=MemoryMimeType.JSON))
    await memory.add(MemoryContent(content="Alice's favourite colour is teal", mime_type=MemoryMimeType.MARKDOWN))

    found = await memory.query(MemoryContent(content="window seat on the train", mime_type=MemoryMimeType.TEXT))
    assert found.results[0].content == "Alice prefers window seats on trains"
    assert found.results[0].metadata is not None and found.results[0].metadata["topic"] == "travel"
    scores = [c.metadata["score"] for c in found.results if c.metadata is not None]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    assert [c.content for c in (await memory.query("vegetarian diet", limit=1)).results] == ['{"diet": "vegetarian"}']

    with pytest.raises(InvalidInputError, match="image"):
        await memory.add(MemoryContent(content=b"\x89PNG", mime_type=MemoryMimeType.IMAGE))
    with pytest.raises(InvalidInputError):  # metadata must be JSON: refused, not silently dropped
        await memory.add(MemoryContent(content="x", mime_type=MemoryMimeType.TEXT, metadata={"when": object()}))
    assert len((await memory.query("anything", limit=10)).results) == 3
    await memory.close()


async def test_clear_deletes_only_this_users_memories(llm: OpenAITestServer, tmp_path: Path) -> None:
    async with ReMe(**settings(llm, tmp_path)) as engine:  # one store, several users' memories
        alice, bob = ReMeMemory("alice", reme=engine), ReMeMemory("bob", reme=engine)
        await alice.add(MemoryContent(content="Alice likes tea", mime_type=MemoryMimeType.TEXT))
        await bob.add(MemoryContent(content="Bob likes tea", mime_type=MemoryMimeType.TEXT))
        assert [c.content for c in (await alice.query("tea")).results] == ["Alice likes tea"]

        await alice.clear()
        assert (await alice.query("tea")).results == []
        assert [c.content for c in (await bob.query("tea")).results] == ["Bob likes tea"]
        await alice.close()  # the engine is the caller's: still open
        assert await engine.count_memory(user_name="bob") == 1


async def test_component_config_round_trips_without_secrets(llm: OpenAITestServer, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    memory = ReMeMemory("alice", top_k=3, **settings(llm, tmp_path, llm={
        "model": "test-model", "base_url": llm.base_url, "api_key": "sk-secret-123", "max_retries": 0}))
    await memory.add(MemoryContent(content="Alice prefers aisle seats", mime_type=MemoryMimeType.TEXT))
    model = client(llm)
    agent = AssistantAgent("planner", model_client=model, memory=[memory], system_message=AGENT_PROMPT)

    dumped = memory.dump_component()
    text = dumped.model_dump_json()
    assert dumped.provider == "reme.integrations.autogen.ReMeMemory"
    assert "sk-secret-123" not in text and "api_key" not in text
    assert agent.dump_component().config["memory"][0] == dumped.model_dump()
    await memory.close()  # the store is one process's at a time: the copy opens it next

    loaded = Memory.load_component(json.loads(text))
    assert isinstance(loaded, ReMeMemory) and (loaded.user_name, loaded.top_k) == ("alice", 3)
    assert loaded.reme.config.llm.api_key is not None
    assert loaded.reme.config.llm.api_key.get_secret_value() == "sk-from-the-environment"
    assert [c.content for c in (await loaded.query("aisle seat")).results] == ["Alice prefers aisle seats"]
    assert loaded.dump_component() == dumped
    await loaded.close()
    await model.close()


async def test_record_fails_loudly_and_stores_nothing_when_the_model_answers_garbage(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script("Read the conversation below", "Sure! Here are the memories: {oops")
    memory = ReMeMemory("alice", **settings(llm, tmp_path))
    conversation = [UserMessage(content="I moved to Berlin.", source="user"),
                    AssistantMessage(content="Noted.", source="planner")]
    with pytest.raises(LLMOutputError):
        await memory.record(conversation)
    assert await memory.reme.count_memory(user_name="alice") == 0
    with pytest.raises(InvalidInputError):  # nothing to summarize is said, not skipped
        await memory.record([SystemMessage(content="only a system prompt")])
    await memory.close()
