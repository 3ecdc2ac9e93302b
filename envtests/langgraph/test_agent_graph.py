"""An agent graph (langchain's create_agent on LangGraph) whose tools write and read ReMeStore
through get_store(); the model is the scripted OpenAI-compatible server behind ChatOpenAI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_openai import ChatOpenAI
from langgraph.config import get_store
from openai_server import Message, OpenAITestServer

from reme import ReMeSync
from reme.integrations.langgraph import ReMeStore

NS = ("memories", "alice")
SETTINGS: dict[str, Any] = {"embedding": {"backend": "hash", "dimensions": 64}}


def save_memory(fact: str) -> str:
    """Save a durable fact about the user."""
    store = get_store()
    key = f"fact-{len(store.search(NS, limit=100))}"
    store.put(NS, key, {"text": fact})
    return f"saved as {key}"


def recall(query: str) -> str:
    """Look up what is known about the user."""
    return "\n".join(f"{hit.value['text']} (score {hit.score:.2f})" for hit in get_store().search(NS, query=query))


def last_tool_output(body: dict[str, Any]) -> str:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"][-1]


async def test_tools_write_and_read_the_store_through_get_store(llm: OpenAITestServer, tmp_path: Path) -> None:
    for turn in (Message(tool_calls=[{"name": "save_memory", "arguments": {"fact": "Alice loves green tea"}}]),
                 lambda body: f"Done: {last_tool_output(body)}",
                 Message(tool_calls=[{"name": "save_memory", "arguments": {"fact": "Alice cycles to work"}}]),
                 lambda body: f"Done: {last_tool_output(body)}",
                 Message(tool_calls=[{"name": "recall", "arguments": {"query": "green tea"}}]),
                 lambda body: f"You told me: {last_tool_output(body).splitlines()[0]}"):
        llm.script("", turn, times=1)
    model = ChatOpenAI(model="gpt-4o-mini", api_key="sk-test", base_url=llm.base_url)
    working_dir = tmp_path / "reme"
    with ReMeStore(working_dir=str(working_dir), fields=["text"], **SETTINGS) as store:
        agent = create_agent(model, tools=[save_memory, recall], store=store, system_prompt="You remember things.")

        first = agent.invoke({"messages": [{"role": "user", "content": "I love green tea."}]})  # batch()
        assert first["messages"][-1].content == "Done: saved as fact-0"
        second = await agent.ainvoke({"messages": [{"role": "user", "content": "I cycle to work."}]})  # abatch()
        assert second["messages"][-1].content == "Done: saved as fact-1"
        assert store.get(NS, "fact-1").value == {"text": "Alice cycles to work"}

        third = await agent.ainvoke({"messages": [{"role": "user", "content": "What do I like to drink?"}]})
        assert third["messages"][-1].content.startswith("You told me: Alice loves green tea (score ")
        tool_reply = [m for m in llm.chat_requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
        assert tool_reply.splitlines()[0].startswith("Alice loves green tea")  # the best match first
        assert len(tool_reply.splitlines()) == 2

    with ReMeSync(working_dir=working_dir, **SETTINGS) as reme:  # the namespace is a ReMe user
        page = reme.list_memory(user_name="memories.alice", sort_key="time_created", direction="asc")
        assert [n.content for n in page] == ["fact-0: Alice loves green tea", "fact-1: Alice cycles to work"]
        assert [n.memory_type.value for n in page] == ["personal", "personal"]
        assert reme.delete_all(user_name="memories.alice") == 2
    with ReMeStore(working_dir=str(working_dir), fields=["text"], **SETTINGS) as store:
        assert store.search(NS) == [] and store.list_namespaces() == []
