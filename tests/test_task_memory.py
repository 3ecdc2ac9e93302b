"""Procedural and tool memory through the facade, against the scripted loopback LLM; import of the
original ReMe's pools."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import pytest

from reme import InvalidInputError, LLMError, MemoryNotFoundError, ReMe
from reme.errors import LLMOutputError
from reme.schema import ToolCallRecord, Trajectory

from conftest import SHARED_DATA, shared_data
from openai_server import OpenAITestServer, prompt_of

POOLS = SHARED_DATA / "task_memory"
SUCCESS, FAILURE, COMPARE = "completed the task below successfully", "failed the task below", "Compare them"
VALIDATE, RERANK, REWRITE, GUIDE = "Rate each candidate lesson", "Which of these stored experiences", \
    "Turn the relevant parts", "Write the usage guideline"


def lessons(*items: tuple[str, str]) -> dict[str, Any]:
    return {"memories": [{"when_to_use": w, "content": c, "confidence": 0.8} for w, c in items]}


@pytest.fixture
def reme(llm_reme: ReMe) -> ReMe:
    return llm_reme


def run(task: str, steps: list[str], score: float) -> Trajectory:
    return Trajectory(messages=[{"role": "user", "content": task}] +  # type: ignore[list-item]
                      [{"role": "assistant", "content": s} for s in steps], score=score)


GOOD = run("Rate all liked songs 5 stars", ["login with spotify.login", "call spotify.review_song(rating=5)"], 1.0)
BAD = run("Rate all liked songs 5 stars", ["call spotify.get_song_rating", "error: no such API"], 0.0)


def script_all(server: OpenAITestServer) -> None:
    server.script(SUCCESS, lessons(("When rating songs in a Spotify library",
                                     "Log in with spotify.login first, then call spotify.review_song per song")))
    server.script(FAILURE, lessons(("When an API for song ratings seems missing",
                                    "There is no get_song_rating; list reviews with spotify.show_song_reviews")))
    server.script(COMPARE, lessons(("When choosing Spotify rating endpoints",
                                    "review_song works; get_song_rating does not exist")))
    server.script(VALIDATE, {"results": [{"index": 0, "score": 0.9}, {"index": 1, "score": 0.8},
                                         {"index": 2, "score": 0.7}]})


async def test_successes_failures_and_a_comparison_become_lessons(reme: ReMe, server: OpenAITestServer) -> None:
    script_all(server)
    server.hang_next(0.3, times=3)  # the three extractions are in flight together
    result = await reme.summarize_memory(trajectories=[GOOD, BAD], task_name="appworld")

    assert server.max_in_flight == 3
    assert sorted(n.metadata["category"] for n in result.added) == ["comparative", "failure", "success"]
    assert len(result.history) == 2 and result.usage.calls == 4  # 3 extractions + 1 validation
    by_kind = {n.metadata["category"]: n for n in result.added}
    success = by_kind["success"]
    assert success.memory_type.value == "procedural" and success.memory_target == "appworld"
    assert success.when_to_use == "When rating songs in a Spotify library" and success.score == 0.8
    assert success.metadata["task_query"] == "Rate all liked songs 5 stars" and success.metadata["freq"] == 0
    assert set(by_kind["comparative"].ref_ids) == {h.memory_id for h in result.history}
    prompts = [prompt_of(b) for b in server.chat_requests]
    compare = next(p for p in prompts if COMPARE in p)
    assert "score 1.0" in compare and "score 0.0" in compare and "review_song" in compare
    assert await reme.count_memory(task_name="appworld", memory_type="procedural") == 3


async def test_threshold_decides_success(make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    script_all(server)
    async with make_reme(procedural={"success_threshold": 0.5, "validate_lessons": False}) as reme:
        result = await reme.summarize_memory(trajectories=[run("t", ["a"], 0.6)], task_name="x")
    assert [n.metadata["category"] for n in result.added] == ["success"] and result.usage.calls == 1


async def test_validation_drops_generic_lessons(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(SUCCESS, lessons(("When doing anything", "Be careful and check your work"),
                                   ("When rating songs", "Call spotify.review_song with rating=5")))
    server.script(VALIDATE, {"results": [{"index": 0, "score": 0.1, "reason": "generic"},
                                         {"index": 1, "score": 0.9}]})
    result = await reme.summarize_memory(trajectories=[GOOD], task_name="appworld")
    assert [n.content for n in result.added] == ["Call spotify.review_song with rating=5"]
    assert result.added[0].metadata["validation"] == 0.9


async def test_duplicates_of_stored_and_batch_lessons_are_dropped(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(SUCCESS, lessons(("When rating songs in a Spotify library", "Use review_song"),
                                   ("When rating songs in a Spotify library", "Use review_song per song")))
    server.script(VALIDATE, {"results": []})
    first = await reme.summarize_memory(trajectories=[GOOD], task_name="appworld")
    assert len(first.added) == 1  # the second is the same situation as the first
    again = await reme.summarize_memory(trajectories=[GOOD], task_name="appworld")
    assert again.added == []  # already stored
    assert await reme.count_memory(task_name="appworld", memory_type="procedural") == 1
    other = await reme.summarize_memory(trajectories=[GOOD], task_name="other-task")
    assert len(other.added) == 1  # another task's lessons are not compared


@pytest.mark.parametrize("broken", ["failure-extraction", "validation"])
async def test_any_failed_call_writes_nothing(reme: ReMe, server: OpenAITestServer, broken: str) -> None:
    server.script(SUCCESS, lessons(("When rating songs", "Use review_song")))
    if broken == "failure-extraction":
        server.script(FAILURE, status=500)
        expected: type[Exception] = LLMError
    else:
        server.script(FAILURE, lessons(("When x", "y")))
        server.script(COMPARE, lessons(("When z", "w")))
        server.script(VALIDATE, '{"results": "not a list"}')
        expected = LLMOutputError
    with pytest.raises(expected):
        await reme.summarize_memory(trajectories=[GOOD, BAD], task_name="appworld")
    assert await reme.count_memory() == 0


async def test_a_very_long_run_is_cut_in_the_middle_and_still_stored(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(SUCCESS, lessons(("When rating songs", "Use review_song")))
    server.script(VALIDATE, {"results": []})
    long_run = run("Rate all liked songs", [f"step {i}: " + "x" * 1000 for i in range(300)], 1.0)
    result = await reme.summarize_memory(trajectories=[long_run], task_name="appworld")
    (history,) = result.history
    assert len(history.content) <= 100_000 and "characters left out" in history.content
    assert history.content.startswith("[0] user: Rate all liked songs") and history.content.endswith("x" * 50)
    prompt = prompt_of(server.chat_requests[0])
    assert len(prompt) < 30_000 and "step 299" in prompt


async def test_bad_trajectories_are_rejected(reme: ReMe, server: OpenAITestServer) -> None:
    for bad in ([], [{"messages": [], "score": 1.0}], [{"messages": [{"role": "user", "content": "x"}]}],
                [{"messages": [{"role": "user", "content": "x"}], "score": float("nan")}]):
        with pytest.raises(InvalidInputError):
            await reme.summarize_memory(trajectories=bad, task_name="t")
    with pytest.raises(InvalidInputError):
        await reme.summarize_memory(trajectories=[GOOD])
    with pytest.raises(InvalidInputError):
        await reme.summarize_memory([{"role": "user", "content": "x"}], trajectories=[GOOD], task_name="t")
    assert server.requests == []


async def stored_lessons(reme: ReMe) -> list[Any]:
    return [await reme.add_memory(content, task_name="appworld", when_to_use=when)
            for when, content in [("When rating songs in a Spotify library", "Use spotify.review_song"),
                                  ("When sending money with Venmo", "Use venmo.create_transaction"),
                                  ("When deleting Spotify playlists", "Use spotify.delete_playlist")]]


async def test_task_retrieval_renders_experiences(reme: ReMe, server: OpenAITestServer) -> None:
    await stored_lessons(reme)
    await reme.add_memory("Alice likes songs", user_name="alice")
    ctx = await reme.retrieve_memory("Rate the songs in my Spotify library", task_name="appworld", top_k=2)
    assert ctx.memories[0].node.content == "Use spotify.review_song" and len(ctx.memories) == 2
    assert ctx.text.splitlines()[:3] == ["Experience 1:", "  When: When rating songs in a Spotify library",
                                         "  What: Use spotify.review_song"]
    assert ctx.usage.calls == 0 and server.requests == []


async def test_rerank_and_rewrite_use_the_llm(reme: ReMe, server: OpenAITestServer) -> None:
    await stored_lessons(reme)
    server.script(RERANK, {"ranking": [2, 99, 2, 0]})  # a made-up index and a repeat are ignored
    server.script(REWRITE, {"advice": "Log in, then call spotify.delete_playlist."})
    ctx = await reme.retrieve_memory("Delete my Spotify playlists", task_name="appworld", top_k=5, rerank=True,
                                     rewrite=True)
    ranked = [m.node.content for m in ctx.memories]
    assert len(ranked) == 2 and ctx.text == "Log in, then call spotify.delete_playlist." and ctx.usage.calls == 2
    rerank_prompt = prompt_of(server.chat_requests[0])
    assert "0. When:" in rerank_prompt and "return at most 5" in rerank_prompt


async def test_the_rerank_reply_schema_names_only_the_lessons_shown(reme: ReMe, server: OpenAITestServer) -> None:
    # SmolLM2 ranked [2022, 2022, ...]: a grammar that honours the schema can only name an index
    # the prompt showed, and at most as many as it showed.
    await stored_lessons(reme)
    server.script(RERANK, {"ranking": [1, 0]})
    ctx = await reme.retrieve_memory("Delete my Spotify playlists", task_name="appworld", top_k=5, rerank=True)
    sent = server.chat_requests[0]["response_format"]["json_schema"]["schema"]["properties"]["ranking"]
    assert sent["items"] == {"type": "integer", "minimum": 0, "maximum": 2} and sent["maxItems"] == 3
    assert ctx.fallbacks == [] and len(ctx.memories) == 2


async def test_usage_counts_and_prune_removes_failing_lessons(reme: ReMe) -> None:
    good, bad, unused = await stored_lessons(reme)
    for ok in (True, True, False):
        await reme.record_usage([good.memory_id], success=ok)
    (counted,) = await reme.record_usage([bad.memory_id], success=False)
    assert counted.metadata["freq"] == 1 and counted.metadata["utility"] == 0
    await reme.record_usage([bad.memory_id, bad.memory_id], success=False)  # a repeated id counts once
    await reme.record_usage([bad.memory_id], success=False)
    stored = await reme.get_memory(good.memory_id)
    assert stored.metadata["freq"] == 3 and stored.metadata["utility"] == 2 and stored.version == 1
    assert await reme.history(good.memory_id) == []  # counters are not versions
    pruned = await reme.prune("appworld", min_freq=3, min_utility_ratio=0.5)
    assert [n.memory_id for n in pruned] == [bad.memory_id]
    with pytest.raises(MemoryNotFoundError):
        await reme.get_memory(bad.memory_id)
    assert (await reme.history(bad.memory_id))[0].event == "DELETE"
    assert await reme.count_memory(task_name="appworld", memory_type="procedural") == 2
    with pytest.raises(MemoryNotFoundError):
        await reme.record_usage(["00000000-0000-0000-0000-000000000000"], success=True)


async def test_concurrent_usage_reports_are_all_counted(reme: ReMe) -> None:
    good, _, _ = await stored_lessons(reme)
    await asyncio.gather(*(reme.record_usage([good.memory_id], success=i % 2 == 0) for i in range(20)))
    stored = await reme.get_memory(good.memory_id)
    assert stored.metadata["freq"] == 20 and stored.metadata["utility"] == 10


# -- tool memory ---------------------------------------------------------------------------------
def call(success: bool, time_cost: float, tokens: int, error: str = "", q: str = "weather") -> ToolCallRecord:
    return ToolCallRecord(tool_name="web_search", input={"query": q}, output="ok" if success else "",
                          success=success, time_cost=time_cost, token_cost=tokens, error=error,
                          create_time=datetime(2024, 5, 1, tzinfo=timezone.utc) + timedelta(minutes=time_cost))


async def test_tool_statistics_are_exact_and_the_guideline_is_rewritten_in_place(
        reme: ReMe, server: OpenAITestServer) -> None:
    guides = iter(["Use web_search for current facts.", "Use web_search for current facts; keep queries short."])
    server.script(GUIDE, lambda body: {"guideline": next(guides)})
    first = [call(True, t, k) for t, k in [(1.0, 100), (2.0, 300), (3.0, 200)]] + [call(False, 9.0, 50, "timeout")]
    result = await reme.summarize_memory(tool_calls=first, tool_name="web_search")
    (guide,) = result.added
    stats = guide.metadata["stats"]
    assert stats["calls"] == 4 and stats["successes"] == 3 and stats["success_rate"] == 0.75
    assert stats["time_mean"] == 3.75 and stats["time_p95"] == 9.0 and stats["tokens_mean"] == 162.5
    assert stats["top_failures"] == [{"message": "timeout", "count": 1}]
    assert result.usage.calls == 1 and guide.content == "Use web_search for current facts."
    prompt = prompt_of(server.chat_requests[0])
    assert "success rate 0.75" in prompt and "- 1x timeout" in prompt
    assert prompt.index("FAILED") < prompt.index("- ok")  # failures first among recent calls

    more = [call(False, 1.0, 10, "timeout"), call(False, 1.0, 10, "HTTP 429 rate limited")] + \
        [call(True, 0.5 + i / 10, 100) for i in range(14)]
    result = await reme.summarize_memory(tool_calls=more)
    (updated,) = result.updated
    assert updated.memory_id == guide.memory_id and updated.version == 2
    times = [1.0, 2.0, 3.0, 9.0, 1.0, 1.0] + [0.5 + i / 10 for i in range(14)]
    stats = updated.metadata["stats"]
    assert stats["calls"] == 20 and stats["successes"] == 17
    assert stats["time_mean"] == round(sum(times) / 20, 4)
    assert stats["time_p95"] == sorted(times)[math.ceil(0.95 * 20) - 1]
    assert stats["top_failures"][0] == {"message": "timeout", "count": 2}
    assert "The current guideline" in prompt_of(server.chat_requests[1])
    (old,) = await reme.history(guide.memory_id)
    assert old.node.content == "Use web_search for current facts." and old.node.metadata["stats"]["calls"] == 4
    assert await reme.count_memory(tool_name="web_search", memory_type="tool") == 1


async def test_tool_retrieval_returns_guideline_and_statistics(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(["Write the usage guideline", '"web_search"'], {"guideline": "Search the web."})
    server.script(["Write the usage guideline", '"calculator"'], {"guideline": "Do arithmetic."})
    await reme.summarize_memory(tool_calls=[call(True, 1.0, 10), call(False, 3.0, 20, "bad query"),
                                            ToolCallRecord(tool_name="calculator", input="2+2", output="4")])
    guide = await reme.retrieve_memory(tool_name="web_search")
    assert [m.node.memory_target for m in guide.memories] == ["web_search"]
    assert guide.text.splitlines()[0] == ("Tool web_search: 2 calls, 50% succeeded, 2.00 s mean (p95 3.00 s), "
                                          "15 tokens mean (p95 20)")
    assert "Common failures: bad query (1x)" in guide.text and "Guideline: Search the web." in guide.text
    both = await reme.retrieve_memory(tool_name=["calculator", "web_search", "unknown_tool"])
    assert [m.node.memory_target for m in both.memories] == ["calculator", "web_search"]
    with pytest.raises(InvalidInputError):
        await reme.summarize_memory(tool_calls=[call(True, 1.0, 1)], tool_name="calculator")
    with pytest.raises(InvalidInputError, match=r"tool_calls\[0\]: time_cost: "):
        await reme.summarize_memory(tool_calls=[{"tool_name": "x", "time_cost": -1}])


async def test_a_failed_guideline_call_writes_nothing(reme: ReMe, server: OpenAITestServer) -> None:
    server.script(GUIDE, "no json at all")
    with pytest.raises(LLMOutputError):
        await reme.summarize_memory(tool_calls=[call(True, 1.0, 10)])
    assert await reme.count_memory() == 0


# -- pools of the original ReMe ------------------------------------------------------------------
@pytest.mark.parametrize("pool,count", [("appworld_qwen3_8b.jsonl", 207), ("bfcl_qwen3_8b.jsonl", 96)])
async def test_original_pools_import_with_every_field(make_reme: Callable[..., ReMe], pool: str, count: int) -> None:
    rows = [json.loads(line) for line in shared_data(f"task_memory/{pool}").read_text().splitlines() if line.strip()]
    async with make_reme(llm={}) as reme:
        assert await reme.import_memory(POOLS / pool, format="reme-jsonl", task_name="bench") == count
        assert await reme.import_memory(POOLS / pool, format="reme-jsonl", task_name="bench") == 0
        row = rows[0]
        node = await reme.get_memory(row["memory_id"], task_name="bench")
        assert node.when_to_use == row["when_to_use"] and node.content == row["content"]
        assert node.author == row["author"] and node.tags == [row["metadata"]["category"]]
        assert node.time_created == datetime.fromisoformat(row["time_created"]).replace(tzinfo=timezone.utc)
        assert node.metadata == {**row["metadata"], "workspace_id": row["workspace_id"]}
        hits = await reme.search_memory(row["metadata"]["task_query"], task_name="bench", top_k=10)
        assert hits


async def test_a_bad_pool_line_imports_nothing(make_reme: Callable[..., ReMe], tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    good = {"memory_id": "2de0b70ef0534b2ab26995db825b13f0", "when_to_use": "w", "content": "c", "extra": [1]}
    pool.write_text(json.dumps(good) + "\n" + json.dumps({"memory_id": "x", "content": "c"}) + "\n")
    async with make_reme(llm={}) as reme:
        with pytest.raises(InvalidInputError, match="line 2"):
            await reme.import_memory(pool, format="reme-jsonl", task_name="t")
        assert await reme.count_memory() == 0
        pool.write_text(json.dumps(good) + "\n")
        assert await reme.import_memory(pool, format="reme-jsonl", task_name="t") == 1
        assert (await reme.get_memory(good["memory_id"])).metadata == {"extra": [1]}
        with pytest.raises(InvalidInputError):
            await reme.import_memory(pool, format="reme-jsonl")
        with pytest.raises(InvalidInputError):
            await reme.import_memory(pool, format="csv")


def test_cli_imports_a_pool(tmp_path: Path) -> None:
    shared_data("task_memory/bfcl_qwen3_8b.jsonl")
    reme_bin = str(Path(sys.executable).parent / "reme")
    base = ["--working-dir", str(tmp_path / "wd"), "--embedding", "hash"]
    proc = subprocess.run([reme_bin, "import", str(POOLS / "bfcl_qwen3_8b.jsonl"), "--format", "reme-jsonl",
                           "--task-name", "bfcl", *base, "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["imported"] == 96
    proc = subprocess.run([reme_bin, "import", str(POOLS / "bfcl_qwen3_8b.jsonl"), "--format", "reme-jsonl", *base],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--task-name" in proc.stderr
