"""`reme serve --workers N`: several processes serve one port on one Qdrant server (a real node,
scripts/qdrant.sh), with the same tokens, scopes and API as one; the embedded store refuses more
than one worker before anything starts. And the service's background work stays right when the
processes sharing the store are several."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from benchmark.qdrant_server import Node
from reme import ReMe
from reme.access import ServerConfig
from reme.server import create_app

from conftest import DIM
from openai_server import OpenAITestServer
from service_process import Served
from test_context import COMPACT_PROMPT, SUMMARY, turn

ADMIN = "admin-secret-0123456789"
BOT = "bot-secret-0123456789abc"
TOKENS = [{"name": "admin", "secret": ADMIN, "users": ["*"], "tasks": ["*"], "tools": ["*"], "sessions": ["*"]},
          {"name": "bot", "secret": BOT, "users": ["alice"]}]


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def _lines(served: Served) -> list[dict[str, Any]]:
    return [json.loads(line) for line in served.output().splitlines() if line.startswith("{")]


def test_two_workers_on_one_node_share_tokens_scopes_api_and_every_add(empty_node: Node, tmp_path: Path) -> None:
    served = Served(tmp_path / "wd", server_config={"tokens": TOKENS}, args=["--workers", "2"],
                    env={"REME_VECTOR_STORE__BACKEND": "qdrant", "REME_VECTOR_STORE__URL": empty_node.url})
    acknowledged: list[str] = []
    refused: list[int] = []
    try:
        served.wait_ready(60)

        def add(i: int) -> None:  # a connection per request: the kernel hands each to either worker
            r = httpx.post(f"{served.url}/v1/memories", headers=_bearer(BOT), timeout=30,
                           json={"content": f"Alice note {i}", "user_name": "alice"})
            assert r.status_code == 200, r.text
            acknowledged.append(r.json()["memory_id"])
            refused.append(httpx.post(f"{served.url}/v1/memories", headers=_bearer(BOT), timeout=30,
                                      json={"content": f"Bob note {i}", "user_name": "bob"}).status_code)

        def workers_that_added() -> set[int]:
            return {line["worker"] for line in _lines(served) if line.get("path") == "/v1/memories"
                    and line.get("status") == 200}

        with ThreadPoolExecutor(8) as pool:
            rounds = itertools.count()
            while len(workers_that_added()) < 2 and next(rounds) < 10:  # until both have answered
                list(pool.map(add, range(len(acknowledged), len(acknowledged) + 16)))
        assert len(workers_that_added()) == 2

        admin = _bearer(ADMIN)
        page = httpx.post(f"{served.url}/v1/memories/list", headers=admin,
                          json={"user_name": "alice", "limit": 1000}).json()
        assert sorted(n["memory_id"] for n in page["nodes"]) == sorted(acknowledged)
        for who in ("alice", "bob"):  # a count on whichever worker answers agrees
            count = httpx.post(f"{served.url}/v1/memories/count", headers=admin, json={"user_name": who}).json()
            assert count == {"count": len(acknowledged) if who == "alice" else 0}
        assert set(refused) == {403}  # bob is outside the bot's token on every worker
        assert httpx.get(f"{served.url}/v1/health").status_code == 200
        assert httpx.post(f"{served.url}/v1/memories/count", json={"user_name": "alice"}).status_code == 401
        one = create_app(ReMe(working_dir=tmp_path / "unopened"), ServerConfig.model_validate({"tokens": TOKENS}))
        assert httpx.get(f"{served.url}/openapi.json").json() == one.openapi()
    finally:
        code = served.stop()
    assert code == 0  # SIGTERM: every worker finished and closed its store
    lines = _lines(served)
    assert [line["workers"] for line in lines if line.get("event") == "start"] == [2]
    assert len({line["worker"] for line in lines if line.get("event") == "worker"}) == 2
    assert not [line for line in lines if line.get("level") == "error"]


def test_the_embedded_store_refuses_two_workers_before_anything_starts(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    served = Served(wd, args=["--workers", "2"])
    assert served.wait_exit(60) == 4  # a ConfigError
    (line,) = _lines(served)
    assert line["type"] == "ConfigError" and "workers = 2" in line["message"] and "one process" in line["message"]
    assert list(wd.iterdir()) == []  # no store was made
    with socket.socket() as s:  # and nothing listens on the port
        assert s.connect_ex(("127.0.0.1", served.port)) != 0


def _process(i: int, tmp_path: Path, node: Node, server: OpenAITestServer) -> ReMe:
    """The ReMe of worker process `i` (its own working directory) on the shared node."""
    return ReMe(working_dir=tmp_path / f"wd{i}", embedding={"backend": "hash", "dimensions": DIM},
                vector_store={"backend": "qdrant", "url": node.url},
                llm={"base_url": server.base_url, "api_key": "k", "model": "m", "max_retries": 0, "timeout": 30})


async def test_two_processes_summarize_a_sessions_compacted_messages_once(empty_node: Node, server: OpenAITestServer,
                                                                         tmp_path: Path) -> None:
    """Two workers sharing a server: the first `prepare_context` of a session on the second one
    sweeps up the compacted messages not yet summarized, while the first worker is summarizing
    them in the background. They are summarized once, not once per worker."""
    takes = itertools.count(1)

    def extract(body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(1.0)  # a model thinking: the second worker looks at the session meanwhile
        return {"memories": [{"content": f"Alice writes word after word in every turn (take {next(takes)})", "kind": "plan",
                              "sources": [0], "importance": 0.7}]}

    server.script(COMPACT_PROMPT, SUMMARY)
    server.script("Read the conversation below", extract)
    server.script("long-term memory consistent", {"decisions": [{"candidate": 0, "action": "ADD", "reason": "new"}]})

    async with _process(0, tmp_path, empty_node, server) as first, _process(1, tmp_path, empty_node, server) as second:
        await first.add_messages([turn(i) for i in range(10)], session_name="s1")
        await first.prepare_context(session_name="s1", threshold=300, reserve=100, user_name="alice")
        await second.prepare_context(session_name="s1", threshold=300, reserve=100, user_name="alice")
        assert await asyncio.gather(first.wait_background(), second.wait_background()) == [0, 0]
        memories = await second.list_memory(user_name="alice", memory_type="personal")
    assert [n.content for n in memories] == ["Alice writes word after word in every turn (take 1)"]
    assert next(takes) == 2  # one extraction


async def test_waiting_for_a_sessions_background_work_waits_for_another_process(
        empty_node: Node, server: OpenAITestServer, tmp_path: Path) -> None:
    """`POST /v1/background/wait` for a session may land on a worker that did not start its summary."""
    def extract(body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(1.0)
        return {"memories": [{"content": "Alice writes word after word in every turn", "kind": "plan", "sources": [0],
                              "importance": 0.7}]}

    server.script(COMPACT_PROMPT, SUMMARY)
    server.script("Read the conversation below", extract)

    async with _process(0, tmp_path, empty_node, server) as first, _process(1, tmp_path, empty_node, server) as second:
        await first.add_messages([turn(i) for i in range(10)], session_name="s1")
        await first.prepare_context(session_name="s1", threshold=300, reserve=100, user_name="alice")
        await asyncio.sleep(0.2)  # the summary has started (prepare_context returns as it starts)
        assert await second.wait_background(session_name="s1") == 0
        assert await second.count_memory(user_name="alice", memory_type="personal") == 1
