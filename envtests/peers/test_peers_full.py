"""The peer benchmark's full workload on the peers themselves (mem0 2.2.1 and the original ReMe,
reme-ai 0.3.1.10, each in the environment the harness creates for it, here inside this suite's own
environment: build.py creates them when scripts/envs.sh builds it),
against the scripted OpenAI-compatible server: mem0 extracts memories through its own prompt and
`infer=True`; reme-ai's summarizer is an agent that needs OpenAI tool calls, and a model that
writes the call as text (as a small Qwen on llama.cpp does) leaves it with no memories, which the
proxy reports as malformed replies."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from openai_server import OpenAITestServer  # noqa: E402
from test_peers_bench import hashed  # noqa: E402

from benchmark.peers.full import add_arguments, run_full  # noqa: E402
from benchmark.peers.run import ROOT, WORKER, Embeddings, python_for  # noqa: E402

FACT = "User went to an LGBTQ support group on 7 May 2023"
DEV = Path(os.environ.get("REME_SHARED_DATA") or ROOT.parent / "shared" / "data") / "locomo" / "locomo10_dev.json"


@pytest.fixture
def endpoint() -> Iterator[str]:
    server, url = Embeddings(None, hashed).serve()
    yield url
    server.shutdown()


def test_mem0_and_reme_ai_run_the_whole_path(tmp_path: Path, endpoint: str) -> None:
    with OpenAITestServer() as server:
        server.script("Memory Extractor", {"memory": [{"id": "0", "text": FACT}]})  # mem0's extraction prompt
        server.script("Memory Orchestrator",  # reme-ai's summarizer: the call written as text, no tool_calls
                      '{"name": "delegate_task", "arguments": {"tasks": [{"memory_target": "Caroline"}]}}')
        server.script("You answer a question about a long conversation", "7 May 2023")
        server.script(["label an answer", "Gold answer: 7 May 2023"], {"reasoning": "same", "label": "CORRECT"})
        server.script("label an answer", {"reasoning": "different", "label": "WRONG"})
        p = argparse.ArgumentParser()
        p.add_argument("--data")
        add_arguments(p)
        args = p.parse_args(["--data", str(DEV), "--llm-url", server.base_url, "--model", "m", "--sessions", "2",
                             "--per-category", "2", "--full-out", str(tmp_path / "full.json")])
        report: dict[str, Any] = run_full(args, endpoint, lambda lib: python_for(lib, Path(sys.prefix), True),
                                          WORKER, ["mem0", "reme-ai"])
    mem0, original = report["libs"]["mem0"], report["libs"]["reme-ai"]
    assert mem0["questions"] == original["questions"] == 7
    assert mem0["ingest"]["calls"] == 4 and mem0["ingest"]["malformed"] == 0  # 2 sessions x 2 speakers
    assert mem0["memories"] >= 2 and mem0["sessions failed"] == 0 and mem0["evidence recall"] is None
    assert mem0["answer"]["calls"] == mem0["judge"]["calls"] == 7
    assert original["memories"] == 0 and original["sessions failed"] == 0
    assert original["ingest"]["calls"] == original["ingest"]["malformed"] == 2  # tools offered, none called
    assert mem0["J"] == original["J"] == pytest.approx(100 / 7, abs=0.1)  # q0's gold is "7 May 2023"
    assert "| mem0 |" in report["table"] and "| reme-ai |" in report["table"]


def test_the_quality_set_runs_on_mem0_and_is_scored_per_dialogue(tmp_path: Path, endpoint: str) -> None:
    """`python -m benchmark.quality --lib mem0`: mem0's own extraction per session, its memories
    read back per user and scored by the same rule as ReMe's, its calls counted per dialogue."""
    from benchmark.quality.peers import run_peer
    from benchmark.quality.run import report_of
    from benchmark.quality.score import load

    dialogues = {d.id: d for d in load()}
    with OpenAITestServer() as server:  # mem0's extraction prompt; a session is one call
        server.script(["Memory Extractor", "Carol: I'm badly allergic to peanuts"],
                      {"memory": [{"id": "0", "text": "Carol is allergic to peanuts"},
                                  {"id": "1", "text": "I adopted a greyhound called Pixel"}]})
        server.script(["Memory Extractor", "vegetarian for ten years"],
                      {"memory": [{"id": "0", "text": "Dan has been vegetarian for ten years"}]})
        server.script("Memory Extractor", {"memory": []})
        rows = run_peer("mem0", [dialogues["safety-peanuts"], dialogues["update-vegetarian"]], server.base_url, "m",
                        envs=Path(sys.prefix), embed_url=endpoint, work=tmp_path)
    peanuts, veg = rows
    assert sorted(peanuts["memories"]) == ["Carol is allergic to peanuts", "I adopted a greyhound called Pixel"]
    assert peanuts["calls"] == 1 and peanuts["tokens"] > 0 and "error" not in peanuts
    assert peanuts["score"].safety_recalled == peanuts["score"].safety == 1
    assert peanuts["score"].hygiene["first_person"] == 1
    assert veg["memories"] == ["Dan has been vegetarian for ten years"] and veg["calls"] == 2  # two sessions
    assert veg["score"].wrong["stale"] == 1
    report = report_of(rows)
    assert report["all"]["memories"] == 3 and report["all"]["calls_per_dialogue"] == 1.5
