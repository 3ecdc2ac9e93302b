"""A reply that is valid JSON but says nothing is not an answer where the step needs one: an empty
compaction summary is a failed compaction (it would replace the summary and drop what it
compacted from every later context), while an empty extraction is "no facts" and an empty
ranking "none apply". Each step's decision is in docs/errors.md."""

from __future__ import annotations

from typing import Any

import pytest

from reme import LLMError, ReMe
from reme.errors import LLMOutputError
from reme.memory.session import COMPRESSED

from conftest import dump_store
from openai_server import OpenAITestServer
from test_context import COMPACT_PROMPT, SUMMARY, turn

RERANK, ADVICE, GUIDE = "Which of these stored experiences", "Turn the relevant parts", "Write the usage guideline"

EMPTY_SUMMARIES: list[Any] = [
    {}, "{}", {"goal": "", "constraints": [], "progress": [], "decisions": [], "next_steps": [], "critical_context": []},
    {"goal": "   ", "progress": ["", " \n "], "next_steps": [None]}, "   ", "\n\n",
    {"summary": "The user plans a trip to Oslo by train; the hotel is H-42."},  # the right content, the wrong key
    {"Goal": "Plan a trip to Oslo", "Progress": ["weather checked"]},
]


@pytest.mark.parametrize("reply", EMPTY_SUMMARIES)
async def test_an_empty_summary_is_a_failed_compaction_that_keeps_the_session(
        llm_reme: ReMe, server: OpenAITestServer, reply: Any) -> None:
    reme = llm_reme
    server.script(COMPACT_PROMPT, SUMMARY, times=1)
    await reme.add_messages([turn(i) for i in range(10)], session_name="s1")
    first = await reme.prepare_context(session_name="s1", threshold=300, reserve=100)
    assert first.compacted and "book the hotel" in first.summary
    await reme.add_messages([turn(i) for i in range(10, 20)], session_name="s1")
    server.script(COMPACT_PROMPT, reply)
    before, calls = await dump_store(reme), len(server.requests)

    with pytest.raises(LLMOutputError):
        await reme.prepare_context(session_name="s1", threshold=300, reserve=100)

    assert len(server.requests) == calls + 2  # shown its error once, then given up on
    assert await dump_store(reme) == before  # nothing marked, the summary kept
    kept = await reme.get_messages(session_name="s1", exclude_mark=COMPRESSED, prepend_summary=True)
    assert kept[0].message["content"].endswith(first.summary) and len(kept) == 1 + 11


@pytest.mark.parametrize("reply", EMPTY_SUMMARIES)
async def test_compact_context_refuses_an_empty_summary_too(llm_reme: ReMe, server: OpenAITestServer,
                                                           reply: Any) -> None:
    server.script(COMPACT_PROMPT, reply)
    with pytest.raises(LLMOutputError):
        await llm_reme.compact_context([turn(i) for i in range(10)], previous_summary="The user wants Oslo.",
                                       threshold=300, reserve=100)


async def test_a_summary_with_one_part_is_an_answer(llm_reme: ReMe, server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, {"goal": "", "progress": ["weather checked: rain"]})
    out = await llm_reme.compact_context([turn(i) for i in range(10)], threshold=300, reserve=100)
    assert out.summary == "## Progress\n- weather checked: rain" and out.usage.calls == 1


# -- the other steps ----------------------------------------------------------------------------
async def test_an_empty_extraction_means_no_facts_and_stores_only_the_conversation(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    server.script("Read the conversation below", {"memories": []})
    result = await llm_reme.summarize_memory([{"role": "user", "content": "My flat is tiny and cold."}], user_name="alice")
    assert result.added == [] and len(result.history) == 1 and result.usage.calls == 1


@pytest.mark.parametrize("reply", [{}, {"facts": [{"content": "Alice likes tea"}]}])
async def test_an_extraction_without_its_list_is_malformed(llm_reme: ReMe, server: OpenAITestServer,
                                                          reply: dict[str, Any]) -> None:
    server.script("Read the conversation below", reply)
    before = await dump_store(llm_reme)
    with pytest.raises(LLMError):
        await llm_reme.summarize_memory([{"role": "user", "content": "I like tea"}], user_name="alice")
    assert await dump_store(llm_reme) == before


async def test_an_empty_guideline_keeps_the_previous_one_and_says_so(llm_reme: ReMe,
                                                                     server: OpenAITestServer) -> None:
    server.script(GUIDE, {"guideline": "Pass the city name in English."}, times=1)
    server.script(GUIDE, {"guideline": "  "})
    call = {"tool_name": "weather", "input": {"city": "Oslo"}, "output": "4C", "success": True, "time_cost": 0.2}
    await llm_reme.summarize_memory(tool_calls=[call])
    result = await llm_reme.summarize_memory(tool_calls=[call, {**call, "success": False, "error": "timeout"}])
    assert [n.content for n in result.updated] == ["Pass the city name in English."]
    assert result.updated[0].metadata["stats"]["calls"] == 3  # the statistics still count
    assert [(r.step, r.action) for r in result.rejected] == [("tool/guideline", "defaulted")]


async def test_a_ranking_naming_no_candidate_keeps_the_search_order(llm_reme: ReMe, server: OpenAITestServer) -> None:
    reme = llm_reme
    for text in ("Check the API quota before a batch", "Log in before calling the API", "Retry a 429 after a pause"):
        await reme.add_memory(text, task_name="t", when_to_use=text)
    plain = await reme.retrieve_memory("call the API", task_name="t", rerank=False, rewrite=False)
    server.script(RERANK, {"ranking": [7, 99]}, times=1)
    out = await reme.retrieve_memory("call the API", task_name="t", rerank=True, rewrite=False)
    assert [m.node.memory_id for m in out.memories] == [m.node.memory_id for m in plain.memories]
    assert [f.step for f in out.fallbacks] == ["rerank"]
    server.script(RERANK, {"ranking": []})  # "none of them apply", as the prompt allows
    out = await reme.retrieve_memory("call the API", task_name="t", rerank=True, rewrite=False)
    assert out.memories == [] and out.fallbacks == []
