"""The peer benchmark's full workload (`benchmark/peers/full.py`: LoCoMo summarize -> retrieve ->
answer -> judge with an LLM) on ReMe's side, against the scripted OpenAI server: the subset it
picks, the LLM proxy's accounting (calls, tokens, malformed replies, streaming), the report and
resuming. The peers need environments of their own, so they are not run here."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Iterator

import openai
import pytest
from openai_server import Message, OpenAITestServer, prompt_of
from test_locomo import DEV, scripted
from test_peers_bench import hashed

from benchmark.locomo.data import load
from benchmark.peers.full import LLMProxy, add_arguments, run_full, strict_json, subset
from benchmark.peers.run import WORKER, Embeddings, python_for


@pytest.fixture
def endpoint() -> Iterator[str]:
    server, url = Embeddings(None, hashed).serve()
    yield url
    server.shutdown()


def test_subset_keeps_questions_whose_evidence_lies_in_the_first_sessions() -> None:
    (conv, questions), = subset(load(DEV), ["conv-26"], 2, 3)
    turns = {t.dia_id for t in conv.turns}
    assert len(conv.sessions) == 2 and all(d.startswith(("D1:", "D2:")) for d in turns)
    assert questions and all(set(q.evidence) <= turns and q.category in (1, 2, 3, 4) for q in questions)
    per_category = {c: sum(q.category == c for q in questions) for c in (1, 2, 3, 4)}
    assert max(per_category.values()) == 3 and per_category[4] == 3  # 8 single-hop questions qualify
    with pytest.raises(SystemExit, match="no conversation conv-99"):
        subset(load(DEV), ["conv-99"], 2, 3)


def test_strict_json_accepts_one_object_or_array_only() -> None:
    assert strict_json('{"a": 1}') and strict_json('```json\n[1, 2]\n```') and strict_json(' {"a": [1]} ')
    assert not strict_json('Sure! {"a": 1}') and not strict_json('{"a": 1') and not strict_json('"text"')


def test_proxy_counts_calls_and_flags_replies_without_the_asked_for_shape(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    with OpenAITestServer() as server:
        server.script("give json", "Here it is: {\"a\": 1}")
        server.script("call the tool", '{"name": "f", "arguments": {}}')
        server.script("use tools properly", Message(tool_calls=[{"name": "f", "arguments": {"x": 1}}]))
        server.script("stream please", "streamed words")
        proxy = LLMProxy(server.base_url, log, max_tokens=64).serve()
        try:
            client = openai.OpenAI(base_url=proxy.url("lib-a", "ingest"), api_key="k", max_retries=0)
            tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
            assert "Here it is" in (client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "give json"}],
                response_format={"type": "json_object"}).choices[0].message.content or "")
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "call the tool"}],
                                           tools=tools)  # type: ignore[arg-type]
            reply = client.chat.completions.create(model="m", tools=tools,  # type: ignore[arg-type]
                                                   messages=[{"role": "user", "content": "use tools properly"}])
            assert reply.choices[0].message.tool_calls
            chunks = client.chat.completions.create(model="m", stream=True, max_tokens=5000,
                                                    messages=[{"role": "user", "content": "stream please"}])
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "streamed words"
        finally:
            proxy.shutdown()
        sent = server.chat_requests
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["malformed"] for r in rows] == [True, True, False, False]
    assert all(r["lib"] == "lib-a" and r["phase"] == "ingest" and r["status"] == 200 for r in rows)
    assert rows[3]["stream"] and rows[3]["completion_tokens"] > 0  # usage asked for and read from the stream
    assert [b["max_tokens"] for b in sent] == [64, 64, 64, 64]  # added where missing, lowered where above


def full_args(tmp_path: Path, server: OpenAITestServer, *extra: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--data")
    add_arguments(p)
    return p.parse_args(["--data", str(DEV), "--llm-url", server.base_url, "--model", "m", "--sessions", "2",
                         "--per-category", "2", "--full-out", str(tmp_path / "full.json"), *extra])


def test_reme_runs_the_whole_path_and_a_resumed_run_calls_no_llm(tmp_path: Path, endpoint: str) -> None:
    with OpenAITestServer() as server:
        scripted(server)
        report: dict[str, Any] = run_full(full_args(tmp_path, server), endpoint,
                                          lambda lib: python_for(lib, tmp_path, False), WORKER, ["reme"])
        calls = len(server.chat_requests)
        # ReMe is told the proxy's reply cap, so its own smaller budgets reach the model (a rewrite: 288).
        rewrites = [b for b in server.chat_requests if "You prepare a search" in prompt_of(b)]
        assert rewrites and {b["max_tokens"] for b in rewrites} == {96 + 64 * 3}
        again = run_full(full_args(tmp_path, server, "--resume"), endpoint,
                         lambda lib: python_for(lib, tmp_path, False), WORKER, ["reme"])
        assert len(server.chat_requests) == calls  # everything came from the checkpoint
        # More questions asked on resume, reported without running: only the graded ones count.
        partial = run_full(full_args(tmp_path, server, "--per-category", "3", "--report-only"), endpoint,
                           lambda lib: python_for(lib, tmp_path, False), WORKER, ["reme"])
        assert len(server.chat_requests) == calls
        # Another judge grades every answer again; the answering model's verdicts stay beside it.
        judged = run_full(full_args(tmp_path, server, "--judge-model", "big", "--report-only"), endpoint,
                          lambda lib: python_for(lib, tmp_path, False), WORKER, ["reme"])
        assert [b["model"] for b in server.chat_requests[calls:]] == ["big"] * 7
    r = report["libs"]["reme"]
    n = r["questions"]
    assert n == 7  # conv-26, sessions 1-2: 2 multi-hop, 2 temporal, 1 open-domain, 2 single-hop
    assert r["sessions"] == 2 and r["sessions failed"] == 0 and r["memories"] > 0
    assert r["answer"]["calls"] == n and r["judge"]["calls"] == n and r["retrieve"]["calls"] == n  # one rewrite each
    assert r["ingest"]["calls"] >= 2 and r["ingest"]["malformed"] == 0 and r["memory"]["structured"] > 0
    assert r["memory"]["prompt_tokens"] > 0 and r["per conversation"]["calls"] == r["memory"]["calls"]
    # The scripted judge says CORRECT only for the gold answer "7 May 2023": one question of seven here.
    assert r["J"] == pytest.approx(100 / 7, abs=0.1) and r["judge invalid"] == 0
    # The scripted summarizer writes each speaker's first three turns of a session, citing them.
    assert r["evidence recall"] is not None and 0 < r["evidence recall"]["cited by some memory"] <= 100
    assert again["libs"]["reme"]["J"] == r["J"] and "| reme |" in again["table"]
    assert judged["libs"]["reme"]["J"] == judged["libs"]["reme"]["J (answering model as judge)"] == r["J"]
    assert judged["libs"]["reme"]["rejudge"]["calls"] == 7 and "judge big" in judged["table"]
    assert partial["libs"]["reme"]["questions"] == 7 and "7 of 9 graded for every library" in partial["table"]
