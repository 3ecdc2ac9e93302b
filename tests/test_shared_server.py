"""Several processes on one Qdrant server (a real node, scripts/qdrant.sh): no acknowledged write
is lost, ordinary contention never surfaces as `ConflictError`, deduplication holds.

Each test starts two worker processes that open ReMe on the same server and collection, waits
until both are ready, then lets them run together: what they acknowledge is checked against what
the server holds afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from benchmark.qdrant_server import Node
from reme import ReMeSync

from conftest import DIM
from openai_server import OpenAITestServer

N = 50
"""Calls per process: enough for the two to overlap hundreds of times, cheap enough for CI."""


def _worker(body: str, llm: str | None = None) -> str:
    """A program: open ReMe on the server argv[1] (working dir argv[2]; its LLM the scripted
    server at `llm`), say "ready", wait for a line on stdin, run `body` (which fills `out`),
    print `out` as JSON."""
    model = {"base_url": llm, "api_key": "k", "model": "test-model", "max_retries": 0, "timeout": 30} if llm else {}
    head = textwrap.dedent(f"""
        import asyncio, json, sys
        from reme import ReMe
        from reme.errors import ConflictError
        async def main():
            out = {{"ok": 0, "conflicts": 0, "versions": []}}
            async with ReMe(working_dir=sys.argv[2], embedding={{"backend": "hash", "dimensions": {DIM}}},
                            vector_store={{"backend": "qdrant", "url": sys.argv[1]}}, llm={model!r}) as reme:
                print("ready", flush=True)
                sys.stdin.readline()
    """)
    tail = "\n    print(json.dumps(out), flush=True)\nasyncio.run(main())\n"
    return head + textwrap.indent(textwrap.dedent(body), " " * 8) + tail


def _run_together(url: str, tmp_path: Path, body: str, processes: int = 2,
                  llm: str | None = None) -> list[dict[str, object]]:
    program = _worker(body, llm)
    procs = [subprocess.Popen([sys.executable, "-c", program, url, str(tmp_path / f"wd{i}")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for i in range(processes)]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:  # both go at once
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outs = [proc.communicate(timeout=300)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert all(proc.returncode == 0 for proc in procs), outs
    return [json.loads(out.strip().splitlines()[-1]) for out in outs]


def _open(url: str, tmp_path: Path) -> ReMeSync:
    return ReMeSync(working_dir=tmp_path / "checker", embedding={"backend": "hash", "dimensions": DIM},
                    vector_store={"backend": "qdrant", "url": url})


def test_two_processes_recording_usage_lose_no_count(empty_node: Node, tmp_path: Path) -> None:
    with _open(empty_node.url, tmp_path) as reme:
        memory_id = reme.add_memory("Alice prefers window seats", user_name="alice").memory_id
    results = _run_together(empty_node.url, tmp_path, f"""
        for _ in range({N}):
            try:
                await reme.record_usage(["{memory_id}"], True, user_name="alice")
                out["ok"] += 1
            except ConflictError:
                out["conflicts"] += 1
    """)
    assert [r["conflicts"] for r in results] == [0, 0]  # nobody did anything wrong
    with _open(empty_node.url, tmp_path) as reme:
        stored = reme.get_memory(memory_id, user_name="alice")
    acknowledged = sum(int(r["ok"]) for r in results)  # type: ignore[call-overload]
    assert acknowledged == 2 * N
    assert stored.access_count == acknowledged
    assert stored.metadata["freq"] == acknowledged and stored.metadata["utility"] == acknowledged


def test_two_processes_updating_one_memory_keep_every_version(empty_node: Node, tmp_path: Path) -> None:
    with _open(empty_node.url, tmp_path) as reme:
        memory_id = reme.add_memory("draft 0", user_name="alice").memory_id
    results = _run_together(empty_node.url, tmp_path, f"""
        import os
        for i in range({N}):
            try:
                node = await reme.update_memory("{memory_id}", content=f"draft {{os.getpid()}} {{i}}", user_name="alice")
                out["ok"] += 1
                out["versions"].append(node.version)
            except ConflictError:
                out["conflicts"] += 1
    """)
    assert [r["conflicts"] for r in results] == [0, 0]
    acknowledged = sum(int(r["ok"]) for r in results)  # type: ignore[call-overload]
    assert acknowledged == 2 * N
    written = sorted(v for r in results for v in r["versions"])  # type: ignore[attr-defined]
    assert written == list(range(2, 2 * N + 2))  # every update made its own version
    with _open(empty_node.url, tmp_path) as reme:
        stored = reme.get_memory(memory_id, user_name="alice")
        history = reme.history(memory_id, user_name="alice")
    assert stored.version == 1 + acknowledged
    assert [v.node.version for v in history] == list(range(1, acknowledged + 1))  # one entry per version


def test_two_processes_adding_the_same_text_store_it_once(empty_node: Node, tmp_path: Path) -> None:
    results = _run_together(empty_node.url, tmp_path, f"""
        for _ in range({N}):
            await reme.add_memory("Alice prefers window seats", user_name="alice")
            out["ok"] += 1
    """)
    assert sum(int(r["ok"]) for r in results) == 2 * N  # type: ignore[call-overload]
    with _open(empty_node.url, tmp_path) as reme:
        assert [n.content for n in reme.list_memory(user_name="alice")] == ["Alice prefers window seats"]


def test_two_processes_appending_to_one_session_keep_every_message_in_order(empty_node: Node,
                                                                             tmp_path: Path) -> None:
    results = _run_together(empty_node.url, tmp_path, f"""
        import os
        for i in range({N}):
            await reme.add_messages([{{"role": "user", "content": f"{{os.getpid()}} says {{i}}"}}], session_name="chat")
            out["ok"] += 1
        out["pid"] = os.getpid()
    """)
    with _open(empty_node.url, tmp_path) as reme:
        said = [m.message["content"] for m in reme.get_messages(session_name="chat")]
    assert len(said) == 2 * N
    for result in results:  # each process's messages, in the order it added them
        assert [s for s in said if s.startswith(f"{result['pid']} says ")] == \
            [f"{result['pid']} says {i}" for i in range(N)]


def test_two_processes_summarizing_one_user_take_turns(empty_node: Node, server: OpenAITestServer,
                                                       tmp_path: Path) -> None:
    with _open(empty_node.url, tmp_path) as reme:
        paris = reme.add_memory("Alice lives in Paris", user_name="alice")
    revisions = iter(range(1, 100))

    def update_the_candidate(body: dict[str, object]) -> dict[str, object]:
        time.sleep(1.0)  # a model thinking: both summaries are planning at once
        return {"decisions": [{"candidate": 0, "action": "UPDATE", "id": 0,
                               "text": f"Alice lives in Berlin (revision {next(revisions)})", "reason": "moved"}]}

    server.script("Read the conversation below", {"memories": [{"content": "Alice moved to Berlin", "kind": "fact",
                                                                 "sources": [0], "importance": 0.5, "time": None}]})
    server.script("long-term memory consistent", update_the_candidate)
    results = _run_together(empty_node.url, tmp_path, """
        try:
            await reme.summarize_memory([{"role": "user", "content": "I moved to Berlin"}], user_name="alice")
            out["ok"] += 1
        except ConflictError:
            out["conflicts"] += 1
    """, llm=server.base_url)
    assert [r["conflicts"] for r in results] == [0, 0]  # the second summary decided on the first one's result
    with _open(empty_node.url, tmp_path) as reme:
        stored = reme.get_memory(paris.memory_id, user_name="alice")
        history = reme.history(paris.memory_id, user_name="alice")
    assert stored.version == 3 and [v.node.version for v in history] == [1, 2]
