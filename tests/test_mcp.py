"""`reme mcp`: the memory tools through the `mcp` package's own client, in process (memory
streams), over stdio (a real `reme mcp` subprocess) and over streamable HTTP (with tokens)."""

from __future__ import annotations

import asyncio

import json
import re
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession

from reme import ReMe
from reme.access import Caller, Limits, ServerConfig, TokenConfig
from reme.mcp import TOOLS, MemoryTools, build_server

from conftest import dump_store
from openai_server import OpenAITestServer
from service_process import DIM, ROOT, Served, pythonpath

EXTRACT = "Read the conversation below"


async def with_session(tools: MemoryTools, body: Callable[[ClientSession], Awaitable[None]]) -> dict[str, Any]:
    """Run `body` with an MCP client session connected to the tools in process; returns what the
    server said when the session was initialized."""
    server = build_server(tools)
    to_server_send, to_server_recv = anyio.create_memory_object_stream[Any](100)
    to_client_send, to_client_recv = anyio.create_memory_object_stream[Any](100)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run, to_server_recv, to_client_send, server.create_initialization_options())
            async with ClientSession(to_client_recv, to_server_send) as session:
                initialized: dict[str, Any] = (await session.initialize()).model_dump(by_alias=True)
                await body(session)
            tg.cancel_scope.cancel()
    return initialized


async def call(session: ClientSession, name: str, **arguments: Any) -> Any:
    result = (await session.call_tool(name, arguments)).model_dump(by_alias=True)  # 1.x and 2.x spellings
    text = result["content"][0]["text"]
    if result["isError"]:
        return {"error": text}
    return json.loads(text)


async def test_the_tools_are_listed_with_descriptions_for_a_model(reme: ReMe) -> None:
    compact = next(t for t in TOOLS if t["name"] == "compact_context")["inputSchema"]
    assert compact["additionalProperties"] is False and compact["properties"]["messages"]["items"][
        "additionalProperties"] is False  # strict: unknown arguments are not silently dropped

    async def body(session: ClientSession) -> None:
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == [t["name"] for t in TOOLS]
        assert {t.name for t in listed} == {"retrieve_personal_memory", "retrieve_task_memory",
                                            "retrieve_tool_memory", "add_memory", "search_memory", "list_memory",
                                            "summarize_memory", "compact_context", "delete_memory"}
        for tool in listed:
            assert len(tool.description or "") > 60
            assert tool.model_dump(by_alias=True)["inputSchema"]["type"] == "object"

    await with_session(MemoryTools(reme, user_name="alice"), body)


async def test_add_search_list_retrieve_delete_on_the_default_target(reme: ReMe) -> None:
    async def body(session: ClientSession) -> None:
        added = await call(session, "add_memory", content="Alice prefers window seats", tags=["travel"])
        assert added["target"] == "user:alice"
        await call(session, "add_memory", content="Bob prefers aisle seats", user_name="bob")
        hits = await call(session, "search_memory", query="window seat")
        assert [h["memory_id"] for h in hits] == [added["memory_id"]]
        page = await call(session, "list_memory", limit=5)
        assert [m["content"] for m in page["memories"]] == ["Alice prefers window seats"]
        found = await call(session, "retrieve_personal_memory", query="which seat does she like")
        assert "Alice prefers window seats" in found["text"]
        lesson = await call(session, "add_memory", content="Check the docs first", task_name="trip")
        task = await call(session, "retrieve_task_memory", query="plan a trip", task_name="trip")
        assert [m["memory_id"] for m in task["memories"]] == [lesson["memory_id"]]
        assert await call(session, "delete_memory", memory_id=added["memory_id"]) == {"deleted": added["memory_id"]}
        assert await reme.count_memory(user_name="alice") == 0

    await with_session(MemoryTools(reme, user_name="alice"), body)


async def test_errors_reach_the_model_typed_and_limits_hold(reme: ReMe) -> None:
    config = ServerConfig(limits=Limits(max_top_k=3, max_limit=4))

    async def body(session: ClientSession) -> None:
        missing = await call(session, "delete_memory", memory_id="8c1c5f0e-5a8e-4a7e-9a53-1d4f8e0f0a11")
        assert missing["error"].startswith("MemoryNotFoundError:")
        assert (await call(session, "search_memory", query="x", top_k=4))["error"].startswith("InvalidInputError")
        assert (await call(session, "list_memory", limit=5))["error"].startswith("InvalidInputError")
        no_task = await call(session, "retrieve_task_memory", query="anything")
        assert no_task["error"].startswith("InvalidInputError") and "task_name" in no_task["error"]
        assert (await call(session, "add_memory", content="  "))["error"].startswith("InvalidInputError")
        assert (await call(session, "summarize_memory"))["error"].startswith("InvalidInputError")

    await with_session(MemoryTools(reme, config, user_name="alice"), body)


async def test_a_tokens_scope_limits_the_tools_and_a_refusal_writes_nothing(reme: ReMe) -> None:
    token = TokenConfig(name="alice-app", secret="s" * 20, users=["alice"])

    async def body(session: ClientSession) -> None:
        assert (await call(session, "add_memory", content="mine"))["target"] == "user:alice"
        refused = await call(session, "add_memory", content="for bob", user_name="bob")
        assert refused["error"].startswith("PermissionDeniedError")
        assert (await call(session, "search_memory", query="x", task_name="t"))["error"].startswith(
            "PermissionDeniedError")
        assert (await call(session, "retrieve_tool_memory", tool_names=["web"]))["error"].startswith(
            "PermissionDeniedError")
        assert await reme.count_memory(user_name="bob") == 0

    await with_session(MemoryTools(reme, ServerConfig(tokens=[token]), caller=Caller(token), user_name="alice"),
                       body)


async def test_with_tokens_a_call_that_brings_none_is_refused_never_let_through(reme: ReMe) -> None:
    """Over HTTP each request carries its token in the context; a call that arrives without one
    (no caller set by the transport) must fail closed, not fall back to an unrestricted caller."""
    token = TokenConfig(name="alice-app", secret="s" * 20, users=["alice"])

    async def body(session: ClientSession) -> None:
        assert (await call(session, "add_memory", content="anyone?"))["error"].startswith("AuthenticationError")
        assert await reme.count_memory() == 0

    await with_session(MemoryTools(reme, ServerConfig(tokens=[token]), user_name="alice"), body)


async def test_summarize_messages_for_the_default_user(llm_reme: ReMe, server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice moved to Berlin", "kind": "event", "sources": [0],
                                          "importance": 0.9, "time": "2024-04-26"}]})

    async def body(session: ClientSession) -> None:
        result = await call(session, "summarize_memory",
                            messages=[{"role": "user", "content": "I moved to Berlin!", "time": "2024-05-03"}])
        assert [n["content"] for n in result["added"]] == ["Alice moved to Berlin"]
        assert result["updated"] == [] and result["deleted"] == []

    await with_session(MemoryTools(llm_reme, user_name="alice"), body)
    assert await llm_reme.count_memory(user_name="alice", memory_type="personal") == 1


async def test_compact_context_summarizes_the_old_part_and_stores_nothing(llm_reme: ReMe,
                                                                          server: OpenAITestServer) -> None:
    server.script("working memory of an AI agent", {"goal": "Plan a trip to Oslo", "next_steps": ["book a hotel"]})
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "word " * 60}
             for i in range(8)]
    call_turns = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "rain"}]
    before = await llm_reme.count_memory()

    async def body(session: ClientSession) -> None:
        result = await call(session, "compact_context", messages=turns + call_turns, threshold=300, reserve=40,
                            previous_summary="The user is travelling.")
        assert result["compacted"] == 8 and result["messages"][1:] == call_turns
        assert "## Goal\nPlan a trip to Oslo" in result["summary"]
        assert result["tokens_after"] < result["tokens_before"]
        assert "The user is travelling." in server.requests[-1]["body"]["messages"][0]["content"]
        small = await call(session, "compact_context", messages=turns[:1])
        assert small["compacted"] == 0 and small["messages"] == turns[:1]
        for bad in ({"messages": "hi"}, {"messages": turns, "threshold": 10, "reserve": 20},
                    {"messages": [{"content": "no role"}]}, {"messages": turns, "previous_summary": 5},
                    {"messages": [{"role": "user", "content": "x", "extra": 1}]}):
            assert "error" in await call(session, "compact_context", **bad), bad

    await with_session(MemoryTools(llm_reme, user_name="alice"), body)
    assert await llm_reme.count_memory() == before


async def test_a_slow_tool_call_times_out_typed_and_its_write_still_completes(llm_reme: ReMe,
                                                                              server: OpenAITestServer) -> None:
    server.script(EXTRACT, {"memories": [{"content": "Alice moved to Berlin", "kind": "event", "sources": [0],
                                          "importance": 0.9, "time": "2024-04-26"}]})
    server.hang_next(1.5)  # the summarizer's LLM call outlasts the tool's time limit
    tools = MemoryTools(llm_reme, ServerConfig(limits=Limits(timeout_s=0.3)), user_name="alice")

    async def body(session: ClientSession) -> None:
        result = await call(session, "summarize_memory", messages=[{"role": "user", "content": "I moved to Berlin!"}])
        assert result["error"].startswith("RequestTimeoutError")

    await with_session(tools, body)
    for _ in range(50):  # shielded: the summary under way is written all the same
        if await llm_reme.count_memory(user_name="alice", memory_type="personal") == 1:
            break
        await asyncio.sleep(0.1)
    assert await llm_reme.count_memory(user_name="alice", memory_type="personal") == 1


@pytest.mark.parametrize("with_token", [False, True])
async def test_reme_mcp_over_stdio_with_the_mcp_client(tmp_path: Path, with_token: bool) -> None:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    args = ["-m", "reme.cli", "mcp", "-w", str(tmp_path / "wd"), "--user", "alice"]
    env = {"REME_EMBEDDING__BACKEND": "hash", "REME_EMBEDDING__DIMENSIONS": str(DIM), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": pythonpath()}
    if with_token:  # the token comes from $REME_TOKEN and holds the session to alice
        settings = tmp_path / "server.json"
        settings.write_text(json.dumps({"tokens": [{"name": "alice-app", "secret": "a" * 20, "users": ["alice"]}]}))
        args += ["--server-config", str(settings)]
        env["REME_TOKEN"] = "a" * 20
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env)
    with anyio.fail_after(60):
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                assert len((await session.list_tools()).tools) == len(TOOLS)
                added = await call(session, "add_memory", content="Alice speaks Finnish")
                hits = await call(session, "search_memory", query="Finnish")
                assert [h["memory_id"] for h in hits] == [added["memory_id"]]
                bob = await call(session, "add_memory", content="Bob speaks Dutch", user_name="bob")
                assert ("error" in bob) == with_token
    async with ReMe(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": DIM}) as reme:
        assert (await reme.get_memory(added["memory_id"], user_name="alice")).content == "Alice speaks Finnish"
        assert await reme.count_memory(user_name="bob") == (0 if with_token else 1)


async def test_reme_mcp_over_http_needs_a_token_and_keeps_to_its_scope(tmp_path: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    tokens = [{"name": "alice-app", "secret": "alice-secret-0123456789", "users": ["alice"]}]
    served = Served(tmp_path / "wd", command="mcp", server_config={"tokens": tokens,
                                                                   "limits": {"max_body_bytes": 4096}},
                    args=["--transport", "http", "--user", "alice"])
    try:
        with anyio.fail_after(60):
            while True:
                try:
                    r = httpx.post(f"{served.url}/mcp", json={})
                    break
                except httpx.TransportError:
                    assert served.proc.poll() is None, served.output()
                    await anyio.sleep(0.1)
            assert r.status_code == 401 and r.json()["error"]["type"] == "AuthenticationError"
            headers = {"Authorization": "Bearer alice-secret-0123456789"}
            async with httpx.AsyncClient(headers=headers) as http:
                async with streamable_http_client(f"{served.url}/mcp", http_client=http) as streams:
                    async with ClientSession(streams[0], streams[1]) as session:
                        await session.initialize()
                        added = await call(session, "add_memory", content="Alice likes tea")
                        assert added["target"] == "user:alice"
                        refused = await call(session, "add_memory", content="x", user_name="bob")
                        assert refused["error"].startswith("PermissionDeniedError")
            big = httpx.post(f"{served.url}/mcp", json={"x": "y" * 5000}, headers=headers)
            assert big.status_code == 413 and big.json()["error"]["type"] == "PayloadTooLargeError"
    finally:
        assert served.stop() == 0, served.output()
    assert "alice-secret" not in served.output() and "Alice likes tea" not in served.output()
    lines = [json.loads(line) for line in served.output().splitlines() if line.startswith("{")]
    assert any(line == {**line, "method": "POST", "path": "/mcp", "status": 200, "token": "alice-app"}
               for line in lines)
    assert any(line["status"] == 413 for line in lines)


@pytest.mark.parametrize("argv,message", [
    (["--user", "a", "--task", "b"], "not allowed with argument"),
])
def test_mcp_takes_one_default_target(argv: list[str], message: str, tmp_path: Path) -> None:
    served = Served(tmp_path / "wd", command="mcp", args=argv)
    assert served.wait_exit(30) == 2 and message in served.output()


# An argument each tool does not declare, and a value its schema refuses: the schema says
# additionalProperties false, so a misspelt target (`user` for `user_name`) must not fall back to
# the default target and read or write another user's memories.
UNDECLARED = {
    "retrieve_personal_memory": {"query": "seats", "user": "bob"},
    "retrieve_task_memory": {"query": "plan", "task_name": "trip", "task": "other"},
    "retrieve_tool_memory": {"tool_names": ["web"], "tool": "other"},
    "add_memory": {"content": "Bob likes jazz", "user": "bob"},
    "search_memory": {"query": "seats", "user": "bob"},
    "list_memory": {"user": "bob"},
    "summarize_memory": {"messages": [{"role": "user", "content": "hi"}], "user": "bob"},
    "delete_memory": {"memory_id": "8c1c5f0e-5a8e-4a7e-9a53-1d4f8e0f0a11", "memoryid": "x"},
    "compact_context": {"messages": [{"role": "user", "content": "hi"}], "session_name": "s"},
}


def test_every_tool_is_checked_for_undeclared_arguments() -> None:
    assert set(UNDECLARED) == {t["name"] for t in TOOLS}


@pytest.mark.parametrize("tool", sorted(UNDECLARED))
async def test_an_undeclared_argument_is_refused_typed_and_nothing_is_read_or_written(reme: ReMe, tool: str) -> None:
    await reme.add_memory("Alice prefers window seats", user_name="alice")
    before = await dump_store(reme)

    async def body(session: ClientSession) -> None:
        refused = await call(session, tool, **UNDECLARED[tool])
        assert refused["error"].startswith("InvalidInputError"), refused
        unknown = sorted(set(UNDECLARED[tool]) - set(next(t for t in TOOLS if t["name"] == tool)
                                                      ["inputSchema"]["properties"]))
        assert all(repr(name) in refused["error"] for name in unknown), refused
        assert "Alice" not in refused["error"]

    await with_session(MemoryTools(reme, user_name="alice"), body)
    assert await dump_store(reme) == before


async def test_arguments_that_break_the_tools_schema_are_refused_typed(reme: ReMe) -> None:
    async def body(session: ClientSession) -> None:
        for name, arguments in [("search_memory", {}), ("search_memory", {"query": 7}),
                                ("search_memory", {"query": "x", "top_k": "3"}),
                                ("search_memory", {"query": "x", "top_k": 0}),
                                ("add_memory", {"content": "x", "tags": "travel"}),
                                ("summarize_memory", {"trajectories": [{"messages": []}]})]:
            refused = await call(session, name, **arguments)
            assert refused["error"].startswith("InvalidInputError"), (name, arguments, refused)
        assert await reme.count_memory() == 0
        # a null stands for an argument not given: the default target
        assert (await call(session, "add_memory", content="Alice likes tea", user_name=None))["target"] == "user:alice"

    await with_session(MemoryTools(reme, user_name="alice"), body)


async def test_the_server_reports_the_package_version(reme: ReMe) -> None:
    from reme import __version__

    async def nothing(session: ClientSession) -> None:
        pass

    info = (await with_session(MemoryTools(reme, user_name="alice"), nothing))["serverInfo"]
    assert info["name"] == "reme" and info["version"] == __version__ and __version__


def test_the_service_page_names_every_tool_and_counts_them_right() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "service.md").read_text(encoding="utf-8")
    found = re.search(r"`reme mcp` gives a model (\w+) tools \(([^)]*)\)", " ".join(page.split()))
    assert found, "docs/service.md no longer says how many tools `reme mcp` gives"
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
             "twelve"]
    assert re.findall(r"`(\w+)`", found.group(2)) == [t["name"] for t in TOOLS]
    assert found.group(1) == words[len(TOOLS)]
