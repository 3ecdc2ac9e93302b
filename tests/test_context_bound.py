"""What `threshold` bounds (docs/working-memory.md): what `prepare_context` sends is at most
`threshold` tokens, or, when the summary is long, the summary plus at most `reserve` tokens of the
newest messages: the summary's own length is the model's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reme import ReMeSync
from reme.memory.context import context_messages, tokens_of

from openai_server import OpenAITestServer

COMPACT_PROMPT = "You keep the working memory of an AI agent"


@pytest.fixture(scope="module")
def summary_words() -> list[int]:
    return [10]


@pytest.fixture(scope="module")
def reme(tmp_path_factory: pytest.TempPathFactory, summary_words: list[int]) -> Iterator[ReMeSync]:
    with OpenAITestServer() as server:
        server.script(COMPACT_PROMPT, lambda body: {
            "goal": "plan " * summary_words[0], "constraints": [], "progress": [], "decisions": [],
            "next_steps": [], "critical_context": []})
        path: Path = tmp_path_factory.mktemp("bound")
        with ReMeSync(working_dir=path, embedding={"backend": "hash", "dimensions": 32},
                      llm={"base_url": server.base_url, "api_key": "k", "model": "m", "max_retries": 0}) as r:
            yield r


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.integers(0, 120), min_size=1, max_size=8), words=st.integers(1, 400),  # an empty summary is a failed compaction (test_empty_replies)
       a=st.integers(0, 600), b=st.integers(0, 600), session=st.uuids())
def test_prepare_context_sends_at_most_threshold_or_the_summary_plus_reserve(
        reme: ReMeSync, summary_words: list[int], turns: list[int], words: int, a: int, b: int,
        session: Any) -> None:
    threshold, reserve = max(a, b), min(a, b)
    summary_words[0] = words
    name = f"s-{session}"
    for i, size in enumerate(turns):
        reme.add_messages([{"role": "user" if i % 2 == 0 else "assistant", "content": "w " * size}],
                          session_name=name)
        ready = reme.prepare_context(session_name=name, threshold=threshold, reserve=reserve)
        assert ready.tokens_after == tokens_of(ready.messages, None)
        summary = tokens_of(context_messages(ready.summary, []), None)
        kept = ready.tokens_after - summary
        assert ready.tokens_after <= max(threshold, summary + reserve)
        if ready.compacted:
            assert kept <= reserve


def test_a_long_summary_is_sent_whole_past_the_threshold(reme: ReMeSync, summary_words: list[int]) -> None:
    """The case the docs once denied: threshold 100, a 150-token summary, 150 tokens sent."""
    summary_words[0] = 300
    for i in range(4):
        reme.add_messages([{"role": "user", "content": "w " * 100}], session_name="long")
        ready = reme.prepare_context(session_name="long", threshold=100, reserve=40)
    assert ready.compacted and ready.tokens_after > 100
    assert ready.tokens_after == tokens_of(context_messages(ready.summary, []), None) + tokens_of(
        ready.messages[1:], None)
