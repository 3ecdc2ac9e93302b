"""Every failure a caller can cause is a typed `ReMeError`, and a rejected call changes nothing;
nothing hangs, nothing crashes the process. One test (or one table) per class of input."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import openai
import pytest
from conftest import DIM, dump_store
from openai_server import OpenAITestServer, prompt_of

from reme import (
    EmbeddingError,
    InvalidFilterError,
    InvalidInputError,
    LLMError,
    LLMOutputError,
    MemoryNode,
    PromptTooLargeError,
    ReMe,
    ReMeError,
    ReMeSync,
)
from reme.retry import retry_after
from reme.schema import (
    MAX_BATCH,
    MAX_FILTER_DEPTH,
    MAX_METADATA_BYTES,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_REF_IDS,
    MAX_SUMMARY_CANDIDATES,
    MAX_TAGS,
    MAX_TRAJECTORIES,
)
from reme.store.filters import range_

EXTRACT = "Read the conversation below"
RECONCILE = "long-term memory consistent"
GUIDE = "Write the usage guideline"
HASH = {"backend": "hash", "dimensions": DIM}


async def rejected(reme: ReMe, error: type[ReMeError], call: Callable[[], Any]) -> ReMeError:
    """`call()` raises `error` (within 30 s) and the store is as it was before."""
    before = await dump_store(reme)
    with pytest.raises(error) as info:
        await asyncio.wait_for(call(), 30)
    assert await dump_store(reme) == before
    return info.value


@pytest.fixture
async def seeded(reme: ReMe) -> ReMe:
    await reme.add_memory("Alice prefers window seats", user_name="alice", tags=["travel"])
    await reme.add_memory("Check the API quota before a batch", task_name="appworld")
    return reme


def run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(tmp_path / "wd")], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


# -- 1. filters ----------------------------------------------------------------------------------
def test_a_deeply_nested_filter_is_an_invalid_filter_error_not_a_crashed_process(tmp_path: Path) -> None:
    # A subprocess: before the fix the engine's recursion killed the interpreter with SIGSEGV.
    proc = run_python("""
        import asyncio, sys
        from reme import ReMe, InvalidFilterError
        from reme.store.filters import eq
        async def main():
            async with ReMe(working_dir=sys.argv[1], embedding={"backend": "hash", "dimensions": 64}) as reme:
                await reme.add_memory("Alice prefers window seats", user_name="alice")
                spec = {"memory_type": "personal"}
                model = eq("score", 0.5)
                for i in range(900):
                    spec = {"$not": spec} if i % 2 else {"$and": [spec]}
                    model = ~model
                for call in (lambda: reme.count_memory(filters=spec), lambda: reme.list_memory(filters=spec),
                             lambda: reme.search_memory("seat", filters=spec),
                             lambda: reme.count_memory(filters=model), lambda: reme.store.count(reme.collection, model)):
                    try:
                        await call()
                        print("accepted")
                    except InvalidFilterError:
                        print("rejected")
        asyncio.run(main())
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["rejected"] * 5


async def test_filter_depth_up_to_the_limit_is_accepted(seeded: ReMe) -> None:
    spec: dict[str, Any] = {"memory_type": "personal"}
    for _ in range(MAX_FILTER_DEPTH // 2):
        spec = {"$not": {"$not": spec}}
    assert await seeded.count_memory(filters=spec) == 1


@pytest.mark.parametrize("spec", [
    {"score": {"gte": float("nan")}}, {"score": {"lt": float("inf")}}, {"metadata.n": {"gt": float("-inf")}},
    {"version": 2 ** 64}, {"metadata.n": -(2 ** 63) - 1}, {"metadata.n": [1, 2 ** 70]},
    {"content": {"contains": "seat\ud800"}}, {"tags": {"any": ["\ud800"]}}, {"memory_target": "a\x00"},
    {"metadata.\udc80": 1}, {"tags": ["t"] * 5000}, {1: 2},
])
async def test_filter_values_the_engine_cannot_hold_are_rejected_first(seeded: ReMe, spec: dict[Any, Any]) -> None:
    for call in (lambda: seeded.count_memory(filters=spec), lambda: seeded.list_memory(filters=spec),
                 lambda: seeded.search_memory("seats", filters=spec)):
        await rejected(seeded, InvalidFilterError, call)
    with pytest.raises(InvalidFilterError):
        await seeded.store.count(seeded.collection, range_("score", gte=float("nan")))


# -- 2. numbers read from outside ---------------------------------------------------------------
@pytest.mark.parametrize("header", ["nan", "inf", "-inf", "1e999"])
def test_a_non_finite_retry_after_falls_back_to_backoff(server: OpenAITestServer, header: str) -> None:
    server.fail_next(429, retry_after=header)
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert retry_after(info.value) is None


def test_a_nan_retry_after_does_not_stall_the_call(make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": []})
    server.fail_next(429, retry_after="nan")
    done: list[Any] = []

    async def go() -> None:
        async with make_reme() as reme:
            done.append(await reme.summarize_memory([{"content": "hello there"}], user_name="alice"))

    worker = threading.Thread(target=lambda: asyncio.run(go()), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert done and done[0].history, "the call stalled on a NaN sleep"


# -- 3. ReMeSync after close ---------------------------------------------------------------------
def test_sync_facade_after_close_raises_or_reopens_never_hangs(tmp_path: Path) -> None:
    outcome: list[str] = []

    def go() -> None:
        reme = ReMeSync(working_dir=tmp_path / "wd", embedding=HASH).open()
        node = reme.add_memory("Alice prefers window seats", user_name="alice")
        reme.close()
        try:
            reme.count_memory()
        except ReMeError as exc:
            outcome.append(f"closed: {exc}")
        reme.close()  # a second close does nothing
        reme.open()  # and open() after close() works again
        outcome.append(reme.get_memory(node.memory_id).content)
        reme.close()

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "ReMeSync hung after close()"
    assert outcome[0].startswith("closed: ReMeSync is closed") and outcome[1] == "Alice prefers window seats"


# -- 4. sizes ------------------------------------------------------------------------------------
async def test_a_hundred_thousand_tags_are_refused_at_once(seeded: ReMe) -> None:
    started = time.perf_counter()
    error = await rejected(seeded, InvalidInputError, lambda: seeded.add_memory(
        "x", user_name="alice", tags=[f"t{i}" for i in range(100_000)]))
    assert time.perf_counter() - started < 5 and "tags" in str(error)


@pytest.mark.parametrize("kwargs", [
    {"tags": ["t"] * 0 + [f"t{i}" for i in range(MAX_TAGS + 1)]}, {"tags": ["x" * (MAX_NAME_CHARS + 1)]},
    {"author": "a" * (MAX_NAME_CHARS + 1)}, {"ref_ids": [f"r{i}" for i in range(MAX_REF_IDS + 1)]},
    {"metadata": {"blob": "x" * MAX_METADATA_BYTES}}, {"metadata": {"a": [[[[[[[[[[1]]]]]]]]]]}},
    {"metadata": {"a" * (MAX_NAME_CHARS + 1): 1}}, {"tags": [f"t{i}" for i in range(MAX_BATCH + 1)]},
])
async def test_every_field_has_a_size_limit(seeded: ReMe, kwargs: dict[str, Any]) -> None:
    await rejected(seeded, InvalidInputError, lambda: seeded.add_memory("x", user_name="alice", **kwargs))


async def test_queries_and_batches_have_limits(seeded: ReMe) -> None:
    await rejected(seeded, InvalidInputError, lambda: seeded.search_memory("q" * (MAX_QUERY_CHARS + 1)))
    await rejected(seeded, InvalidInputError,
                   lambda: seeded.retrieve_memory("q" * (MAX_QUERY_CHARS + 1), user_name="alice", rewrite=False))
    nodes = [MemoryNode(memory_type="personal", memory_target="bob", content=f"fact {i}") for i in range(MAX_BATCH + 1)]
    await rejected(seeded, InvalidInputError, lambda: seeded.add_memories(nodes))
    await rejected(seeded, InvalidInputError, lambda: seeded.record_usage(["x"] * (MAX_BATCH + 1), True))


async def test_summary_inputs_have_limits(llm_reme: ReMe, server: OpenAITestServer) -> None:
    many = [{"content": f"line {i}"} for i in range(MAX_BATCH + 1)]
    await rejected(llm_reme, InvalidInputError, lambda: llm_reme.summarize_memory(many, user_name="alice"))
    runs = [{"messages": [{"content": "do it"}], "score": 1.0}] * (MAX_TRAJECTORIES + 1)
    await rejected(llm_reme, InvalidInputError, lambda: llm_reme.summarize_memory(trajectories=runs, task_name="t"))
    calls = [{"tool_name": "search"}] * (MAX_BATCH + 1)
    await rejected(llm_reme, InvalidInputError, lambda: llm_reme.summarize_memory(tool_calls=calls))
    assert server.chat_requests == []


async def test_an_llm_reply_with_seventy_thousand_memories_is_capped(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    await llm_reme.add_memory("fact number 1 about Alice", user_name="alice")
    server.script(EXTRACT, {"memories": [{"content": f"fact number {i} about Alice", "sources": [0]}
                                         for i in range(70_000)]})
    server.script(RECONCILE, {"decisions": []})
    result = await llm_reme.summarize_memory([{"content": "many facts"}], user_name="alice")
    # Candidates without a decision are added, so the cap is reached (one of them is already stored).
    assert MAX_SUMMARY_CANDIDATES - 1 <= len(result.added) <= MAX_SUMMARY_CANDIDATES
    reconcile = [prompt_of(b) for b in server.chat_requests if RECONCILE in prompt_of(b)]
    assert len(reconcile) == 1 and len(reconcile[0]) < 100_000


async def test_a_prompt_over_the_ceiling_is_refused_before_sending(
        make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    async with make_reme(llm={"base_url": server.base_url, "api_key": "k", "model": "m",
                              "max_prompt_chars": 2_000}) as reme:
        error = await rejected(reme, PromptTooLargeError, lambda: reme.summarize_memory(
            [{"content": "word " * 1_000}], user_name="alice"))
    assert isinstance(error, InvalidInputError) and isinstance(error, LLMError)
    assert server.chat_requests == []


# -- 5. untyped exceptions -----------------------------------------------------------------------
BAD_ADDS: list[tuple[str, dict[str, Any]]] = [
    ("Alice \ud800", {}), ("Alice \x00 NUL", {}), ("ok", {"user_name": "al\udcffice"}), ("ok", {"tags": ["\ud800"]}),
    ("ok", {"author": "\x00"}), ("ok", {"when_to_use": "\udfff"}), ("ok", {"metadata": {"k": "\ud800"}}),
    ("ok", {"metadata": {"\ud800": 1}}), ("ok", {"metadata": [1]}), ("ok", {"metadata": "x"}),
    ("ok", {"tags": "travel"}), ("ok", {"ref_ids": "abc"}), ("ok", {"metadata": {"big": 2 ** 64}}),
    ("ok", {"metadata": {"small": -(2 ** 63) - 1}}), ("ok", {"score": float("nan")}), ("ok", {"tags": 5}),
    ("ok", {"memory_type": ["personal"]}), (5, {}),  # type: ignore[list-item]
]


@pytest.mark.parametrize("content,kwargs", BAD_ADDS)
async def test_bad_add_is_invalid_input_and_writes_nothing(seeded: ReMe, content: Any, kwargs: dict[str, Any]) -> None:
    kwargs.setdefault("user_name", "alice")
    await rejected(seeded, InvalidInputError, lambda: seeded.add_memory(content, **kwargs))


async def test_bad_update_is_invalid_input_and_writes_nothing(seeded: ReMe) -> None:
    node = (await seeded.list_memory(user_name="alice")).nodes[0]
    for kwargs in ({"content": "\ud800"}, {"tags": "travel"}, {"metadata": [1]}, {"metadata": {"n": 2 ** 64}},
                   {"author": "\x00"}):
        await rejected(seeded, InvalidInputError, lambda kw=kwargs: seeded.update_memory(node.memory_id, **kw))
    for bad_id in ("\ud800", 5, None, "x" * 10_000):
        await rejected(seeded, InvalidInputError, lambda i=bad_id: seeded.update_memory(i, content="y"))
        await rejected(seeded, InvalidInputError, lambda i=bad_id: seeded.get_memory(i))
        await rejected(seeded, InvalidInputError, lambda i=bad_id: seeded.history(i))
        await rejected(seeded, InvalidInputError, lambda i=bad_id: seeded.record_usage([i], True))


@pytest.mark.parametrize("value", [1.5, "5", 2 ** 64, 0, -1, True, None])
async def test_top_k_and_limit_must_be_integers_in_range(seeded: ReMe, value: Any) -> None:
    await rejected(seeded, InvalidInputError, lambda: seeded.search_memory("seats", top_k=value))
    await rejected(seeded, InvalidInputError, lambda: seeded.list_memory(limit=value))
    if value is not None:
        await rejected(seeded, InvalidInputError,
                       lambda: seeded.retrieve_memory("seats", user_name="alice", top_k=value))


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


@pytest.mark.parametrize("cursor", [
    "abc", "!!!", _b64(b"[1]"), _b64(b'{"offset": 5}'), _b64(b'{"offset": "not-a-uuid"}'),
    _b64(b'{"seen": ["x"], "sort": "score", "direction": "desc"}'), _b64(b'{"value": NaN, "sort": "score"}'),
    _b64(b'{"extra": 1}'), _b64(b"\xff\xfe"), _b64(b"[" * 100_000), "A" * 2_000_000, "\ud800", 5,
    _b64(json.dumps({"value": 2 ** 70, "sort": "version", "direction": "desc"}).encode()),
    _b64(json.dumps({"value": "yesterday", "sort": "time_created", "direction": "desc"}).encode()),
])
async def test_forged_cursors_are_invalid_input(seeded: ReMe, cursor: Any) -> None:
    sort = "score" if "score" in str(cursor) else None
    await rejected(seeded, InvalidInputError, lambda: seeded.list_memory(cursor=cursor, sort_key=sort))


async def test_now_and_time_window_are_checked(seeded: ReMe) -> None:
    naive = datetime(2024, 5, 3, 10, 0)
    result = await seeded.retrieve_memory("seats", user_name="alice", now=naive, rewrite=False,
                                          time_window=(naive - timedelta(days=365 * 100), None))
    assert result.memories  # naive means UTC
    for kwargs in ({"now": "2024-05-03"}, {"now": 5}, {"time_window": "2024"}, {"time_window": ("2024", None)},
                   {"time_window": (naive,)}, {"time_window": 5}):
        await rejected(seeded, InvalidInputError,
                       lambda kw=kwargs: seeded.retrieve_memory("seats", user_name="alice", rewrite=False, **kw))


@pytest.mark.parametrize("fmt", ["jsonl", "reme-jsonl"])
@pytest.mark.parametrize("content", [
    b'{"content": "ok"}\n\xff\xfe\n', b"[" * 100_000 + b"\n", b'{"content": "\\ud800"}\n', b"\x00\n",
    b'{"memory_type": "personal", "memory_target": "a", "content": "x", "metadata": [1]}\n',
    (b'{"memory_id": "00000000-0000-4000-8000-000000000001", "memory_type": "procedural", "memory_target": "a",'
     b' "content": "x", "score": 1e400, "vector": 5}\n'),
])
async def test_bad_import_files_are_invalid_input(seeded: ReMe, tmp_path: Path, fmt: str, content: bytes) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(content)
    await rejected(seeded, InvalidInputError, lambda: seeded.import_memory(path, format=fmt, task_name="t"))


@pytest.mark.parametrize("body,content_type", [
    ("<html><body>502 Bad Gateway</body></html>", "text/html"), ("", "application/json"),
    ("[" * 100_000, "application/json"), ('{"choices": 5}', "application/json"),
])
async def test_an_llm_answering_200_with_garbage_is_an_llm_error(
        llm_reme: ReMe, server: OpenAITestServer, body: str, content_type: str) -> None:
    server.raw_next(body, content_type=content_type, times=10)
    await rejected(llm_reme, LLMError, lambda: llm_reme.summarize_memory([{"content": "I live in Berlin."}],
                                                                        user_name="alice"))


async def test_an_llm_reply_nested_too_deep_is_an_output_error(llm_reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, "[" * 100_000)
    await rejected(llm_reme, LLMOutputError, lambda: llm_reme.summarize_memory([{"content": "I live in Berlin."}],
                                                                              user_name="a"))


@pytest.mark.parametrize("vectors", [
    lambda texts: [[0.1] * DIM] * (len(texts) - 1), lambda texts: ["abc"] * len(texts),
    lambda texts: [[float("nan")] * DIM] * len(texts), lambda texts: [[1e400] * DIM] * len(texts),
    lambda texts: [5] * len(texts), lambda texts: [[0.1] * DIM, [0.1] * (DIM - 1)] * len(texts),
])
async def test_a_bad_embedding_reply_is_an_embedding_error(
        reme_factory: Callable[..., ReMe], server: OpenAITestServer, vectors: Callable[[list[str]], Any]) -> None:
    async with reme_factory(embedding={"backend": "openai", "base_url": server.base_url, "api_key": "k",
                                       "max_retries": 0}) as reme:
        await reme.add_memory("Alice prefers window seats", user_name="alice")
        server.vectors = vectors
        await rejected(reme, EmbeddingError, lambda: reme.add_memory("Bob prefers aisle seats", user_name="bob"))
        await rejected(reme, EmbeddingError, lambda: reme.search_memory("seats", user_name="alice"))
        server.vectors = None
        server.raw_next("[" * 100_000, content_type="application/json")
        await rejected(reme, EmbeddingError, lambda: reme.add_memory("Bob prefers aisle seats", user_name="bob"))


async def test_stored_metadata_never_breaks_a_later_read(llm_reme: ReMe, server: OpenAITestServer) -> None:
    reme = llm_reme
    lesson = await reme.add_memory("Check the quota", task_name="t", metadata={"freq": "often", "utility": [1]})
    (counted,) = await reme.record_usage([lesson.memory_id], success=True)
    assert counted.metadata["freq"] == 1 and counted.metadata["utility"] == 1
    await reme.add_memory("Retry twice", task_name="t", metadata={"freq": 5.0, "utility": "never"})
    assert [n.content for n in await reme.prune("t", min_freq=3)] == ["Retry twice"]

    await reme.add_memory("Use short queries", tool_name="search", tags=["guideline"],
                          metadata={"stats": 5, "raw": {"times": [1.0], "tokens": "x"}})
    result = await reme.retrieve_memory(tool_name="search")
    assert "0 calls" in result.text
    server.script(GUIDE, {"guideline": "Use short queries."})
    summary = await reme.summarize_memory(tool_calls=[{"tool_name": "search", "time_cost": 2.0}])
    assert summary.updated[0].metadata["stats"]["calls"] == 1

    history = await reme.add_memory("[0] alice: I like tea", user_name="alice", memory_type="history",
                                    metadata={"messages": "x"})
    for turns in ([[1]], "abc", [True, -1, 99], 5):
        await reme.add_memory(f"Alice likes tea {turns}", user_name="alice", ref_ids=[history.memory_id],
                              metadata={"source_turns": turns})
    found = await reme.retrieve_memory("tea", user_name="alice", with_source=True, rewrite=False)
    assert found.memories and all(m.source == history.content for m in found.memories)


# -- the command line ----------------------------------------------------------------------------
def cli(wd: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "REME_EMBEDDING__BACKEND": "hash", "REME_WORKING_DIR": str(wd),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-m", "reme.cli", *args], capture_output=True, env=env, timeout=120,
                          check=False)


@pytest.mark.parametrize("args", [
    [b"add", b"\xff\xfe", b"--user", b"alice"], [b"add", b"hi", b"--user", b"\xed\xa0\x80"],
    ["add", "hi", "--user", "a", "--metadata", "[1]"], ["add", "hi", "--user", "a", "--metadata", "[" * 100_000],
    ["list", "--limit", "9" * 30], ["list", "--filter", '{"$not": ' * 900 + "{}" + "}" * 900],
    ["list", "--cursor", _b64(b'{"offset": 5}')], ["search", "x", "--top-k", "0"],
    ["list", "--filter", '{"score": {"gte": NaN}}'], ["add", "hi", "--user", "a", "--score", "nan"],
    ["get", "\udcff"], ["import", "/nonexistent/file.jsonl"],
])
def test_cli_maps_every_rejection_to_a_documented_exit_code(tmp_path: Path, args: list[Any]) -> None:
    # A store to read: on a missing one, a reading command stops first (exit 3, nothing created).
    assert cli(tmp_path / "wd", "add", "seed", "--user", "seed").returncode == 0
    proc = cli(tmp_path / "wd", *[a.encode("utf-8", "surrogateescape") if isinstance(a, str) else a for a in args])
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) >= 1
    if not err.startswith("usage:"):  # argparse's own usage errors print the usage first
        assert len(err.strip().splitlines()) == 1


def test_cli_last_resort_handler_prints_one_line_and_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from reme import cli as cli_module

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug\nwith two lines")

    monkeypatch.setattr(ReMe, "add_memory", broken)
    code = cli_module.main(["add", "hi", "--user", "a", "--working-dir", str(tmp_path / "wd"), "--embedding", "hash"])
    err = capsys.readouterr().err
    assert code == 1 and err == "reme add: RuntimeError: a bug with two lines\n"


@pytest.mark.parametrize("name", ["\x00", "alice\x00", "\ud800"])
async def test_a_name_that_cannot_be_stored_is_an_invalid_input_on_every_reading_call(reme: ReMe, name: str) -> None:
    # the service's property test found it: search with user_name "\x00" answered 500, "unexpected ValidationError"
    await reme.add_memory("Alice likes tea", user_name="alice")
    for call in (lambda: reme.search_memory("tea", user_name=name), lambda: reme.list_memory(user_name=name),
                 lambda: reme.count_memory(user_name=name), lambda: reme.retrieve_memory("tea", user_name=name),
                 lambda: reme.delete_all(user_name=name), lambda: reme.search_memory("tea", task_name=name)):
        with pytest.raises(InvalidInputError, match="_name"):
            await call()
    assert await reme.count_memory(user_name="alice") == 1  # a rejected call changes nothing
