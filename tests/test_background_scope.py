"""`wait_background` is scoped like every other call: a caller waits for, and learns the failures
of, the sessions it holds; each session's failures are its own, and the unscoped count (the
admin's, or the library's own caller's) is kept apart from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator, Callable

import httpx
import pytest

from reme import ReMe, ReMeSync
from reme.access import ServerConfig
from reme.client import ReMeClient
from reme.errors import InvalidInputError, PermissionDeniedError
from reme.server import create_app

from openai_server import OpenAITestServer
from test_context import COMPACT_PROMPT, SUMMARY, turn

EXTRACT = "Read the conversation below"
SECRETS = {"admin": "admin-secret-0123456789", "alice-app": "alice-secret-0123456789",
           "bob-app": "bob-secret-0123456789ab", "no-sessions": "plain-secret-0123456789"}
TOKENS = [
    {"name": "admin", "secret": SECRETS["admin"], "users": ["*"], "tasks": ["*"], "tools": ["*"], "sessions": ["*"]},
    {"name": "alice-app", "secret": SECRETS["alice-app"], "users": ["alice"], "sessions": ["alice-chat"]},
    {"name": "bob-app", "secret": SECRETS["bob-app"], "users": ["bob"], "sessions": ["bob-chat"]},
    {"name": "no-sessions", "secret": SECRETS["no-sessions"], "users": ["*"], "tasks": ["*"], "tools": ["*"]},
]


def script(server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, SUMMARY)
    server.script([EXTRACT, "bob"], status=500)  # bob's summary into long-term memory fails for good
    server.script(EXTRACT, {"memories": [{"content": "Alice writes word after word", "kind": "plan", "sources": [0]}]})


async def compact_into(reme: Any, session: str, user: str) -> None:
    await reme.add_messages([{**turn(i), "content": f"{user} " + turn(i)["content"]} for i in range(8)],
                            session_name=session)
    await reme.prepare_context(session_name=session, threshold=300, reserve=100, user_name=user)


@pytest.fixture
async def clients(make_reme: Callable[..., ReMe], server: OpenAITestServer) -> AsyncIterator[dict[str, ReMeClient]]:
    script(server)
    async with make_reme(llm={"base_url": server.base_url, "api_key": "k", "model": "m", "max_retries": 0}) as reme:
        app = create_app(reme, ServerConfig.model_validate({"tokens": TOKENS}))
        out = {name: ReMeClient("http://reme.test", token=secret, retries=0,
                                transport=httpx.ASGITransport(app=app)) for name, secret in SECRETS.items()}
        yield out
        for client in out.values():
            await client.close()


async def test_a_token_waits_only_for_its_own_sessions_and_learns_only_their_failures(
        clients: dict[str, ReMeClient]) -> None:
    alice, bob, admin = clients["alice-app"], clients["bob-app"], clients["admin"]
    await compact_into(bob, "bob-chat", "bob")
    await compact_into(alice, "alice-chat", "alice")

    for call in (lambda: alice.wait_background(), lambda: alice.wait_background(session_name="bob-chat"),
                 lambda: clients["no-sessions"].wait_background()):
        with pytest.raises(PermissionDeniedError):  # unscoped without "*", or another token's session
            await call()
    assert await alice.wait_background(session_name="alice-chat") == 0
    assert await bob.wait_background(session_name="bob-chat") == 1
    assert await bob.wait_background(session_name="bob-chat") == 0  # told once
    assert await admin.wait_background() == 1  # the admin's own count: bob's read did not reset it
    assert await admin.wait_background() == 0
    assert (await alice.retrieve_memory("word", user_name="alice", rewrite=False)).memories


async def test_the_facade_counts_each_session_apart_from_the_unscoped_count(
        make_reme: Callable[..., ReMe], server: OpenAITestServer) -> None:
    script(server)
    async with make_reme(llm={"base_url": server.base_url, "api_key": "k", "model": "m", "max_retries": 0}) as reme:
        await compact_into(reme, "bob-chat", "bob")
        await compact_into(reme, "alice-chat", "alice")
        assert await reme.wait_background(session_name="alice-chat") == 0
        assert await reme.wait_background() == 1
        assert await reme.wait_background(session_name="bob-chat") == 1  # not reset by the unscoped wait
        assert await reme.wait_background(session_name="bob-chat") == await reme.wait_background() == 0
        await compact_into(reme, "bob-chat", "bob")  # tried again, and failing again
        assert await reme.wait_background(session_name="bob-chat") == 1
        assert len(reme.background_errors) == 2
        with pytest.raises(InvalidInputError):
            await reme.wait_background(session_name="")


def test_the_sync_face_waits_for_one_session_too(tmp_path: Path) -> None:
    with ReMeSync(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": 64}) as reme:
        assert reme.wait_background(session_name="alice-chat") == reme.wait_background() == 0
