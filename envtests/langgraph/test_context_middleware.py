"""ReMeContextMiddleware: a langchain `create_agent` graph whose conversation is a ReMe session,
compacted by ReMe before each model call; ReMeChatMessageHistory: LangChain's chat history over a
session. The model is the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_openai import ChatOpenAI
from agent_loops import EXTRACT, REME_COMPACT, TRAVEL_SYS, TRIP_FACTS, TRIP_SUMMARY, script_personal
from agent_loops import TRIP as BASE_TRIP
from langgraph.checkpoint.memory import InMemorySaver
from openai_server import Message, OpenAITestServer, prompt_of

from reme import InvalidInputError, ReMe, ReMeSync
from reme.integrations.langgraph import SUMMARY_MESSAGE_ID, ReMeChatMessageHistory, ReMeContextMiddleware

SYS = TRAVEL_SYS
SUMMARY = TRIP_SUMMARY
TRIP = [*BASE_TRIP, ("Now the hotel, please.", "Booking a hotel in Alfama.")]


def settings(llm: OpenAITestServer, path: Path, **context: Any) -> dict[str, Any]:
    return {"working_dir": path, "embedding": {"backend": "hash"}, "context": context,
            "llm": {"model": "test-model", "base_url": llm.base_url, "api_key": "sk-test", "max_retries": 0}}


def model(llm: OpenAITestServer) -> ChatOpenAI:
    return ChatOpenAI(model="test-model", api_key="sk-test", base_url=llm.base_url)


def agent_requests(llm: OpenAITestServer) -> list[dict[str, Any]]:
    return [b for b in llm.chat_requests if SYS in prompt_of(b)]


def search_hotels(city: str) -> str:
    """Search hotels in a city."""
    return "\n".join(f"Hotel {i} in {city}: 120 EUR, vegetarian breakfast" for i in range(200))


async def test_the_conversation_is_compacted_into_the_session_and_the_checkpoint_holds_the_fitted_context(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(REME_COMPACT, SUMMARY)
    for _, reply in TRIP:
        llm.script(SYS, reply, times=1)
    config = {"configurable": {"thread_id": "alice-trip"}}
    async with ReMe(**settings(llm, tmp_path / "reme", threshold=60, reserve=30)) as reme:
        agent = create_agent(model(llm), tools=[], system_prompt=SYS, checkpointer=InMemorySaver(),
                             middleware=[ReMeContextMiddleware(reme)])
        for said, reply in TRIP:
            out = await agent.ainvoke({"messages": [{"role": "user", "content": said}]}, config)
            assert out["messages"][-1].content == reply

        compactions = [prompt_of(b) for b in llm.chat_requests if REME_COMPACT in prompt_of(b)]
        assert compactions and TRIP[0][0] in compactions[0]
        last = json.dumps(agent_requests(llm)[-1]["messages"])
        assert "Budget 900 EUR" in last and TRIP[-1][0] in last and TRIP[0][0] not in last
        # the checkpoint holds the summary and the messages kept; the session every message, in order
        state = (await agent.aget_state(config)).values["messages"]
        assert state[0].id == SUMMARY_MESSAGE_ID and "Budget 900 EUR" in state[0].content
        assert state[-1].content == TRIP[-1][1] and len(state) < 2 * len(TRIP)
        stored = await reme.get_messages(session_name="alice-trip")
        assert [m.message["content"] for m in stored] == [text for turn in TRIP for text in turn]
        assert "compressed" in stored[0].marks and "compressed" not in stored[-1].marks
        assert [m.id for m in state[1:]] == [m.message["id"] for m in stored if "compressed" not in m.marks]


def read_back(body: dict[str, Any]) -> Message:
    """The model reads the offloaded result back with the reference it was given."""
    tool = [m for m in body["messages"] if m["role"] == "tool"][-1]["content"]
    ref = re.search(r'read_tool_result\(ref="([^"]+)"\)', tool)
    assert ref, tool
    return Message(tool_calls=[{"name": "read_tool_result", "arguments": {"ref": ref.group(1)}}])


def test_a_big_tool_result_is_offloaded_read_back_and_a_thread_goes_on_without_a_checkpointer(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    for reply in (Message(tool_calls=[{"name": "search_hotels", "arguments": {"city": "Lisbon"}}]), read_back,
                  lambda body: "The last one: " + [m for m in body["messages"] if m["role"] == "tool"][-1][
                      "content"].splitlines()[-1],
                  "You asked about hotels in Lisbon."):
        llm.script(SYS, reply, times=1)
    with ReMeSync(**settings(llm, tmp_path / "reme", max_tool_chars=2_000, preview_chars=200)) as reme:
        middleware = ReMeContextMiddleware(reme, session_name="alice-hotels")
        agent = create_agent(model(llm), tools=[search_hotels], system_prompt=SYS, middleware=[middleware])

        out = agent.invoke({"messages": [{"role": "user", "content": "Find a hotel in Lisbon."}]})
        assert out["messages"][-1].content == "The last one: Hotel 199 in Lisbon: 120 EUR, vegetarian breakfast"
        second = json.dumps(agent_requests(llm)[1]["messages"])
        assert "Tool result offloaded" in second and "Hotel 199" not in second  # the model saw the head only
        assert len(second) < 3_000

        # no checkpointer: a new run of the same session starts from what ReMe holds
        agent = create_agent(model(llm), tools=[search_hotels], system_prompt=SYS, middleware=[middleware])
        again = agent.invoke({"messages": [{"role": "user", "content": "What did I ask?"}]})
        assert again["messages"][-1].content == "You asked about hotels in Lisbon."
        last = json.dumps(agent_requests(llm)[-1]["messages"])
        assert "Find a hotel in Lisbon." in last and "What did I ask?" in last
        assert reme.session_size(session_name="alice-hotels").messages == 8


async def test_each_thread_is_its_own_session_and_compacted_turns_reach_the_users_long_term_memory(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    script_personal(llm, TRIP_FACTS, "vegetarian", ["Alice diet"])
    llm.script(REME_COMPACT, SUMMARY)
    llm.script(SYS, lambda body: f"You said: {[m for m in body['messages'] if m['role'] == 'user'][-1]['content']}")
    async with ReMe(**settings(llm, tmp_path / "reme", threshold=60, reserve=30)) as reme:
        agent = create_agent(model(llm), tools=[], system_prompt=SYS, checkpointer=InMemorySaver(),
                             middleware=[ReMeContextMiddleware(reme, user_name="alice")])
        for said, _ in TRIP:
            await agent.ainvoke({"messages": [{"role": "user", "content": said}]},
                                {"configurable": {"thread_id": "alice-trip"}})
        out = await agent.ainvoke({"messages": [{"role": "user", "content": "Hello, I am Bob."}]},
                                  {"configurable": {"thread_id": "bob"}})
        assert out["messages"][-1].content == "You said: Hello, I am Bob."
        bob_saw = json.dumps(agent_requests(llm)[-1]["messages"])
        assert "Lisbon" not in bob_saw and "Budget" not in bob_saw  # another thread, another session
        assert [m.message["content"] for m in await reme.get_messages(session_name="bob")] == \
            ["Hello, I am Bob.", "You said: Hello, I am Bob."]

        assert await reme.wait_background() == 0
        remembered = [n.content for n in await reme.list_memory(user_name="alice", memory_type="personal")]
        assert sorted(remembered) == sorted(TRIP_FACTS)  # from the compacted turns, summarized in the background
        extracted = [prompt_of(b) for b in llm.chat_requests if EXTRACT in prompt_of(b)]
        assert extracted and all("Hello, I am Bob." not in p for p in extracted)


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")  # still the history's main user
def test_the_chat_history_is_the_session_and_serves_runnable_with_message_history(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script(SYS, lambda body: f"{len(body['messages']) - 1} messages so far")
    with ReMeSync(**settings(llm, tmp_path / "reme")) as reme:
        prompt = ChatPromptTemplate.from_messages([("system", SYS), MessagesPlaceholder("history"), ("human", "{q}")])
        chain = RunnableWithMessageHistory(prompt | model(llm), lambda sid: ReMeChatMessageHistory(reme, sid),
                                           input_messages_key="q", history_messages_key="history")
        config = {"configurable": {"session_id": "alice"}}
        assert chain.invoke({"q": "Plan a trip to Lisbon."}, config).content == "1 messages so far"
        assert chain.invoke({"q": "In May."}, config).content == "3 messages so far"
        assert chain.invoke({"q": "Hi"}, {"configurable": {"session_id": "bob"}}).content == "1 messages so far"

        history = ReMeChatMessageHistory(reme, "alice")
        assert [(m.type, m.content) for m in history.messages] == [
            ("human", "Plan a trip to Lisbon."), ("ai", "1 messages so far"), ("human", "In May."),
            ("ai", "3 messages so far")]
        reme.update_compressed_summary("Alice plans Lisbon.", session_name="alice")
        assert history.messages[0].content.endswith("Alice plans Lisbon.") and len(history.messages) == 5
        history.clear()
        assert history.messages == [] and len(ReMeChatMessageHistory(reme, "bob").messages) == 2


async def test_an_async_remes_history_serves_the_async_calls_and_refuses_the_sync_ones(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    async with ReMe(**settings(llm, tmp_path / "reme")) as reme:
        history = ReMeChatMessageHistory(reme, "alice")
        await history.aadd_messages([HumanMessage("hello"), AIMessage("hi Alice")])
        assert [m.content for m in await history.aget_messages()] == ["hello", "hi Alice"]
        with pytest.raises(InvalidInputError, match="ReMeSync"):
            history.messages
        await history.aclear()
        assert await history.aget_messages() == []


async def test_without_a_session_name_or_a_thread_id_the_run_fails_saying_what_to_do(
        llm: OpenAITestServer, tmp_path: Path) -> None:
    async with ReMe(**settings(llm, tmp_path / "reme")) as reme:
        agent = create_agent(model(llm), tools=[], system_prompt=SYS, middleware=[ReMeContextMiddleware(reme)])
        with pytest.raises(InvalidInputError, match="thread_id"):
            await agent.ainvoke({"messages": [{"role": "user", "content": "hello"}]})
        assert llm.chat_requests == []  # the model was not called
