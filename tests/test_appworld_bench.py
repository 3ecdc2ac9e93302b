"""The AppWorld harness (`python -m benchmark.appworld`) end to end against the stand-in world
(tests/appworld_standin.py: AppWorld's data cannot be downloaded here), the scripted LLM server as
the agent's model, and a real `reme serve` subprocess for memory: the code agent's loop, scoring
(task and scenario goal completion, Avg@k, Pass@k), memory in the prompt, usage counts, learning."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import appworld_standin
import httpx
import pytest
from openai_server import OpenAITestServer
from service_process import ROOT, Served, llm_env

from benchmark.appworld.run import main

LESSON = "List the liked songs with show_liked_songs, then call review_song for each one"


def agent(body: dict[str, Any]) -> str:
    """Looks at the liked songs, then rates them as asked (the second step fenced, as models do);
    answers the counting task wrongly (2, not 3)."""
    messages = body["messages"]
    task = messages[0]["content"].rsplit("Task: ", 1)[1]
    if task.startswith("How many"):
        return "apis.supervisor.complete_task(answer=2)"
    if sum(m["role"] == "assistant" for m in messages) == 0:
        return "# which songs?\nsongs = apis.spotify.show_liked_songs()\nprint(songs)"
    stars = re.search(r"(\d) stars", task).group(1)  # type: ignore[union-attr]
    return (f"Rating them now.\n```python\nfor s in songs:\n    apis.spotify.review_song(song_id=s['song_id'], "
            f"rating={stars})\napis.supervisor.complete_task()\n```")


@pytest.fixture
def served(tmp_path: Path, server: OpenAITestServer) -> Iterator[Served]:
    service = Served(tmp_path / "reme", env=llm_env(server.base_url)).wait_ready()
    yield service
    service.stop()


def bench(server: OpenAITestServer, tmp_path: Path, *args: str) -> dict[str, Any]:
    output = tmp_path / "appworld.json"
    assert main(["--model", "test-model", "--base-url", server.base_url, "--api-key", "k", "--world",
                 "appworld_standin", "--output", str(output), *args]) == 0
    assert output.with_suffix(".md").read_text().startswith("## AppWorld, test-model")
    report: dict[str, Any] = json.loads(output.read_text())
    return report


def agent_prompts(server: OpenAITestServer) -> list[str]:
    return [b["messages"][0]["content"] for b in server.chat_requests
            if b["messages"][0]["content"].startswith("I supervise you")]


def test_code_agent_runs_and_scores_task_and_scenario_completion(server: OpenAITestServer, tmp_path: Path) -> None:
    server.script("", agent)
    appworld_standin.OPENED.clear()
    report = bench(server, tmp_path, "--dataset", "dev", "--runs", "2", "--concurrency", "3")
    summary = report["summary"]["dev"]
    # rate_1 and rate_2 succeed in both runs, count_1 never: scenario `rate` complete, `count` not.
    assert {k: summary[k] for k in ("tasks", "runs", "avg@2", "pass@2", "scenarios", "sgc_avg@2", "sgc_pass@2",
                                    "test_pass_rate")} == \
        {"tasks": 3, "runs": 2, "avg@2": 0.6667, "pass@2": 0.6667, "scenarios": 2, "sgc_avg@2": 0.5,
         "sgc_pass@2": 0.5, "test_pass_rate": round((1 + 1 + 0.5) / 3, 4)}
    runs = report["tasks"]["dev"]
    assert [r["success"] for r in runs["rate_1"] + runs["rate_2"]] == [True] * 4
    assert [(r["success"], r["interactions"]) for r in runs["count_1"]] == [(False, 1)] * 2
    assert runs["rate_1"][0]["interactions"] == 2 and summary["prompt_tokens_per_run"] > 0
    assert sorted(set(appworld_standin.OPENED)) == sorted((t, f"reme_eval_run_{r}") for t in
                                                          ("rate_1", "rate_2", "count_1") for r in (0, 1))
    # The first step's output (the liked songs) reached the model before its second step.
    second = next(b for b in server.chat_requests if len(b["messages"]) == 3)
    assert second["messages"][2] == {"role": "user", "content": "[{'song_id': 1}, {'song_id': 2}]\n"}
    assert "Experience from similar tasks" not in agent_prompts(server)[0]


def test_pool_lessons_reach_the_prompt_through_reme_serve_and_usage_is_counted(
        server: OpenAITestServer, served: Served, tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"workspace_id": "appworld", "memory_id": "0123456789abcdef0123456789abcdef",
                                "memory_type": "procedural", "when_to_use": "When rating all liked songs in Spotify",
                                "content": LESSON, "score": 0, "time_created": "2025-09-20 11:22:49",
                                "time_modified": "2025-09-20 11:22:49", "author": "qwen3-8b",
                                "metadata": {"utility": 0, "freq": 0}}) + "\n")
    server.script("", agent)
    report = bench(server, tmp_path, "--memory", "pool", str(pool), "--reme-url", served.url, "--dataset", "dev",
                   "--tasks", "1", "--runs", "2")
    assert report["imported"] == 1 and report["summary"]["dev"]["avg@2"] == 1.0
    prompt = agent_prompts(server)[0]
    assert "Experience from similar tasks" in prompt and LESSON in prompt
    (memory_id,) = report["tasks"]["dev"]["rate_1"][0]["memory_ids"]
    node = httpx.get(f"{served.url}/v1/memories/{memory_id}", params={"task_name": "appworld"}).json()
    assert (node["metadata"]["freq"], node["metadata"]["utility"]) == (2, 2)


def test_learn_mode_summarizes_train_runs_in_reme_serve_then_uses_the_lessons(
        server: OpenAITestServer, served: Served, tmp_path: Path) -> None:
    server.script("completed the task below successfully", {"memories": [
        {"when_to_use": "When rating all liked songs with a number of stars", "content": LESSON, "confidence": 0.9}]})
    server.script("Rate each candidate lesson", {"results": [{"index": 0, "score": 0.9}]})
    server.script("", agent)
    report = bench(server, tmp_path, "--memory", "learn", "--reme-url", served.url, "--task-name", "music",
                   "--dataset", "dev", "--runs", "1")
    assert report["learned"] == 1 and report["summary"]["learn"]["avg@1"] == 1.0
    summarized = [b["messages"][0]["content"] for b in server.chat_requests
                  if "completed the task below successfully" in b["messages"][0]["content"]]
    assert len(summarized) == 1 and "Rate all my liked songs 3 stars" in summarized[0]
    assert "review_song(song_id=s['song_id'], rating=3)" in summarized[0]  # the agent's code, as it ran
    prompts = agent_prompts(server)
    assert len(prompts) == 2 + (2 + 2 + 1)  # train: rate3_1 in two steps; then dev
    assert not any("Experience from similar tasks" in p for p in prompts[:2])  # train ran without memory
    assert all(LESSON in p for p in prompts[2:])
    assert all(r[0]["memory_ids"] for r in report["tasks"]["dev"].values())


def test_the_harness_runs_without_reme_installed() -> None:
    """AppWorld's environment pins pydantic 1, so the harness must never import reme."""
    code = "import sys; sys.modules['reme'] = None; import benchmark.appworld.run"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_a_refused_request_ends_that_run_which_is_still_scored(server: OpenAITestServer, tmp_path: Path) -> None:
    server.script("Rate all my liked songs 5 stars", status=400)  # e.g. past the model's context
    server.script("", agent)
    report = bench(server, tmp_path, "--dataset", "dev", "--tasks", "2", "--runs", "1")
    refused, ok = report["tasks"]["dev"]["rate_1"][0], report["tasks"]["dev"]["rate_2"][0]
    assert (refused["success"], refused["interactions"], refused["test_pass_rate"]) == (False, 0, 0.0)
    assert "400" in refused["refused"] and ok["success"] and not ok["refused"]
