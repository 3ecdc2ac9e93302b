"""The framework's `Agent` with `OpenAIChatCompletionClient` against the scripted server, with
ReMe as its history (ReMeHistoryProvider) and its long-term memory (ReMeContextProvider): what
the user said in one session is summarized after the run and reaches the model in the next, after
the store was closed and reopened, for that user only; a session's conversation goes on after a
reopen; a compacting history sends the summary and the newest messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_framework import Agent
from agent_framework.openai import OpenAIChatCompletionClient
from agent_loops import GREEN_TEA_FACTS, REME_COMPACT, TRIP_SUMMARY, open_reme, script_personal
from openai_server import OpenAITestServer, prompt_of

from reme.integrations.agent_framework import HEADER, ReMeContextProvider, ReMeHistoryProvider

SYS = "You are Friday, a concise assistant."


def agent(llm: OpenAITestServer, *providers: Any) -> Agent:
    client = OpenAIChatCompletionClient(model="test-model", api_key="sk-test", base_url=llm.base_url)
    return Agent(client=client, instructions=SYS, context_providers=list(providers))


def agent_requests(llm: OpenAITestServer) -> list[dict[str, Any]]:
    return [b for b in llm.chat_requests if SYS in prompt_of(b)]


async def test_what_alice_said_reaches_the_model_in_her_next_session_only(llm: OpenAITestServer,
                                                                         tmp_path: Path) -> None:
    script_personal(llm, GREEN_TEA_FACTS, "green tea", ["what Alice drinks"])
    llm.script(SYS, "Noted.", times=1)
    async with open_reme(llm, tmp_path) as reme:
        friday = agent(llm, ReMeHistoryProvider(reme), ReMeContextProvider(reme, user_name="alice"))
        first = friday.create_session(session_id="alice-monday")
        assert (await friday.run("I moved to Berlin and I love green tea.", session=first)).text == "Noted."
        stored = (await reme.list_memory(user_name="alice", memory_type="personal")).nodes
        assert sorted(m.content for m in stored) == sorted(GREEN_TEA_FACTS)

    async with open_reme(llm, tmp_path) as reme:
        for user, reply in (("alice", "A sencha."), ("bob", "Water.")):
            llm.script(SYS, reply, times=1)
            friday = agent(llm, ReMeHistoryProvider(reme), ReMeContextProvider(reme, user_name=user))
            answer = await friday.run("What should I drink?", session=friday.create_session(session_id=f"{user}-2"))
            assert answer.text == reply
        alice_sees, bob_sees = prompt_of(agent_requests(llm)[-2]), prompt_of(agent_requests(llm)[-1])
        assert HEADER in alice_sees and "Alice loves green tea" in alice_sees
        assert "green tea" not in bob_sees

        llm.script(SYS, "You moved to Berlin.", times=1)  # the first session goes on where it stopped
        friday = agent(llm, ReMeHistoryProvider(reme))
        await friday.run("Where did I move?", session=friday.create_session(session_id="alice-monday"))
        sent = [(m["role"], m["content"]) for m in agent_requests(llm)[-1]["messages"]]
        assert sent[-3:] == [("user", "I moved to Berlin and I love green tea."), ("assistant", "Noted."),
                             ("user", "Where did I move?")]


async def test_a_compacting_history_sends_the_summary_and_the_newest_messages(llm: OpenAITestServer,
                                                                             tmp_path: Path) -> None:
    llm.script(REME_COMPACT, TRIP_SUMMARY)
    turns = [("Plan a trip to Lisbon in May. I am vegetarian.", "Lisbon in May: good choice."),
             ("My budget is 900 EUR.", "Noted, 900 EUR."), ("Compare the flights.", "TAP is cheapest."),
             ("Now the hotel, please.", "Booking a hotel in Alfama.")]
    async with open_reme(llm, tmp_path) as reme:
        friday = agent(llm, ReMeHistoryProvider(reme, compact=True, threshold=60, reserve=30))
        session = friday.create_session(session_id="alice-trip")
        for said, reply in turns:
            llm.script(SYS, reply, times=1)
            assert (await friday.run(said, session=session)).text == reply
        sent = agent_requests(llm)[-1]["messages"]
        assert any("Book the hotel" in str(m["content"]) for m in sent)
        assert turns[0][0] not in [m["content"] for m in sent]
        assert sent[-1]["content"] == "Now the hotel, please."
        assert len(await reme.get_messages(session_name="alice-trip")) == 2 * len(turns)
