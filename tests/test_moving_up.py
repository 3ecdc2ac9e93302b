"""Moving up (docs/scaling.md): a store filled on the embedded backend moves to a 3-node cluster
with `reme backup` and `reme restore`, as a user runs them, and back into a new embedded store;
every memory, version and session record comes through with its id, and the three stores' backups
and exports are equal."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from reme import ReMe

from benchmark.qdrant_server import Node
from conftest import DIM, SPREAD
from openai_server import OpenAITestServer
from test_cli import reme as cli
from test_context import COMPACT_PROMPT, SUMMARY, call, result, turn

SESSION = "trip-planning"


async def fill(reme: ReMe) -> dict[str, Any]:
    """Memories of every kind of target and several users, three versions of one, a deleted one
    (its last state kept as a version), an expired one, and a session with an offloaded tool
    result, compacted into a summary, and a message after it."""
    seats = await reme.add_memory("Alice prefers window seats", user_name="alice", tags=["travel"],
                                  metadata={"zeta": 1, "alpha": {"y": [1, 2.5, None], "b": "x"}, "mid": True})
    await reme.update_memory(seats.memory_id, content="Alice prefers aisle seats", user_name="alice")
    await reme.update_memory(seats.memory_id, content="Alice prefers aisle seats near the front", user_name="alice")
    await reme.add_memory("Alice moved to Berlin", user_name="alice", message_time=datetime(2024, 4, 26, tzinfo=timezone.utc))
    await reme.add_memory("[2024-05-03 10:00] alice: I moved to Berlin", user_name="alice", memory_type="history")
    gone = await reme.add_memory("Bob is vegetarian", user_name="bob")
    await reme.delete_memory(gone.memory_id, user_name="bob")
    await reme.add_memory("Bob plays chess on Sundays", user_name="bob", score=0.8)
    await reme.add_memory("Alice's door code is 4711", user_name="alice",
                          expires_at=datetime.now(timezone.utc) - timedelta(days=1))
    lesson = await reme.add_memory("Run the migrations before the deploy", task_name="deploy",
                                   when_to_use="deploying a new release")
    await reme.record_usage([lesson.memory_id], True, task_name="deploy")
    await reme.add_memory("Quote the query; it times out over 30 words", tool_name="web_search")
    await reme.add_messages([turn(i) for i in range(6)] + [call("c1"), result("c1", "r" * 5_000)], session_name=SESSION)
    prepared = await reme.prepare_context(session_name=SESSION, threshold=400, reserve=120)
    assert prepared.compacted and len(prepared.offloaded) == 1
    await reme.add_messages([{"role": "user", "content": "and a hotel near the river?"}], session_name=SESSION)
    return {"seats": seats.memory_id, "gone": gone.memory_id, "ref": prepared.offloaded[0].ref}


async def read_back(reme: ReMe, ids: dict[str, Any], export: Path) -> dict[str, Any]:
    """What the public API shows of the memories and the session; the whole store exported to
    `export` (vectors and versions included)."""
    await reme.export_memory(export, with_vectors=True)
    messages = await reme.get_messages(session_name=SESSION, prepend_summary=True)
    return {"seats": [v.model_dump(mode="json") for v in await reme.history(ids["seats"], user_name="alice")],
            "gone": [v.model_dump(mode="json") for v in await reme.history(ids["gone"], user_name="bob")],
            "messages": [m.model_dump(mode="json") for m in messages],
            "tool_result": await reme.read_tool_result(ids["ref"], session_name=SESSION)}


def backup_rows(path: Path) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    """A backup's header and its records by (role, id), as parsed JSON."""
    header, *rows = [json.loads(line) for line in path.read_text().splitlines()]
    return header, {(r["role"], r["node"]["memory_id"]): r for r in rows}


def export_rows(path: Path) -> dict[str, Any]:
    return {r["memory_id"]: r for r in map(json.loads, path.read_text().splitlines())}


async def test_a_store_moves_to_the_cluster_and_back_with_every_memory_version_and_session(
        empty_cluster: list[Node], server: OpenAITestServer, tmp_path: Path) -> None:
    server.script(COMPACT_PROMPT, SUMMARY)
    home, back = tmp_path / "home", tmp_path / "back"
    options = {"working_dir": home, "embedding": {"backend": "hash", "dimensions": DIM}, "context": {"max_tool_chars": 2000},
               "llm": {"base_url": server.base_url, "api_key": "k", "model": "m", "max_retries": 0}}
    async with ReMe(**options) as reme:  # type: ignore[arg-type]
        ids = await fill(reme)
        shown = await read_back(reme, ids, tmp_path / "home-export.jsonl")
    # The user's commands: the embedded store in `home`, then the cluster through the environment.
    embedded = {"REME_EMBEDDING__DIMENSIONS": str(DIM)}
    cluster = {**embedded, "REME_VECTOR_STORE__BACKEND": "qdrant", "REME_VECTOR_STORE__URL": empty_cluster[0].url,
               **{f"REME_VECTOR_STORE__{key.upper()}": str(value) for key, value in SPREAD.items()}}
    cli(home, "backup", str(tmp_path / "home.jsonl"), env=embedded)
    restored = json.loads(cli(tmp_path / "wd", "restore", str(tmp_path / "home.jsonl"), "--json", env=cluster).stdout)
    cli(tmp_path / "wd", "backup", str(tmp_path / "cluster.jsonl"), env=cluster)
    cli(back, "restore", str(tmp_path / "cluster.jsonl"), env=embedded)

    # Nothing is left out on the way and nothing differs: ids, times, versions, sessions, vectors.
    header, records = backup_rows(tmp_path / "home.jsonl")
    assert restored["restored"] == len(records) and {role for role, _ in records} == {"memories", "versions"}
    assert any("door code" in r["node"]["content"] for r in records.values())  # a backup keeps expired memories
    assert backup_rows(tmp_path / "cluster.jsonl") == (header, records)
    exported = export_rows(tmp_path / "home-export.jsonl")
    assert len(exported[ids["seats"]]["history"]) == 2 and any(r["target_kind"] == "session" for r in exported.values())
    for name, store in (("cluster", {"vector_store": {"backend": "qdrant", "url": empty_cluster[0].url}}),
                        ("back", {"working_dir": back})):
        async with ReMe(**{**options, "working_dir": tmp_path / "wd", **store}) as reme:  # type: ignore[arg-type]
            assert await read_back(reme, ids, tmp_path / f"{name}-export.jsonl") == shown, name
            await reme.backup(tmp_path / f"{name}-again.jsonl")
        assert export_rows(tmp_path / f"{name}-export.jsonl") == exported, name
        assert backup_rows(tmp_path / f"{name}-again.jsonl") == (header, records), name
