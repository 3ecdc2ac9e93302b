"""ReMeMemoryService beside ADK's own InMemoryMemoryService: the same sessions and entries added
to both, the same searches asked of both. ADK's service matches words; ReMe summarizes sessions
into memories and ranks by meaning, so what is compared is who finds what: the user who said it
finds it, another user of the app and the same user of another app find nothing, on both."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_loops import open_reme, script_personal
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types
from openai_server import OpenAITestServer

from reme import InvalidInputError, MemoryNotFoundError
from reme.integrations.google_adk import ReMeMemoryService


def session(app: str, user: str, *turns: tuple[str, str]) -> Session:
    return Session(id=f"{app}-{user}", app_name=app, user_id=user, events=[
        Event(author=author, invocation_id="i1", content=types.Content(
            role="user" if author == "user" else "model", parts=[types.Part(text=text)])) for author, text in turns])


def texts(response: object) -> list[str]:
    return [p.text for m in response.memories for p in m.content.parts]  # type: ignore[attr-defined]


async def test_who_finds_what_is_the_same_on_both_services(llm: OpenAITestServer, tmp_path: Path) -> None:
    script_personal(llm, "Alice loves green tea", "green tea", ["green tea"])
    said = session("travel", "alice", ("user", "I love green tea."), ("friday", "Noted: green tea."))
    async with open_reme(llm, tmp_path) as reme:
        ours, theirs = ReMeMemoryService(reme), InMemoryMemoryService()
        for service in (ours, theirs):
            await service.add_session_to_memory(said)
            await service.add_session_to_memory(said)  # added again: nothing doubles
        for app, user, finds in (("travel", "alice", True), ("travel", "bob", False), ("shop", "alice", False)):
            for service in (ours, theirs):
                found = texts(await service.search_memory(app_name=app, user_id=user, query="green tea"))
                assert any("green tea" in t for t in found) is finds, (type(service).__name__, app, user, found)
        assert texts(await ours.search_memory(app_name="travel", user_id="alice", query="green tea")) == \
            ["Alice loves green tea"]


async def test_entries_are_kept_deleted_by_their_user_only_and_survive_a_reopen(llm: OpenAITestServer,
                                                                               tmp_path: Path) -> None:
    entry = MemoryEntry(content=types.Content(parts=[types.Part(text="Alice's passport expires in May 2027")]),
                        author="alice", timestamp="2026-11-20T10:00:00+00:00", custom_metadata={"source": "form"})
    async with open_reme(llm, tmp_path) as reme:
        await ReMeMemoryService(reme, rewrite=False).add_memory(app_name="travel", user_id="alice", memories=[entry])
    async with open_reme(llm, tmp_path) as reme:
        service = ReMeMemoryService(reme, rewrite=False)
        (found,) = (await service.search_memory(app_name="travel", user_id="alice", query="passport")).memories
        assert found.author == "alice" and found.timestamp == "2026-11-20T10:00:00+00:00"
        assert found.custom_metadata["score"] > 0
        assert (await service.search_memory(app_name="travel", user_id="bob", query="passport")).memories == []
        with pytest.raises(MemoryNotFoundError):
            await service.delete_memory(app_name="travel", user_id="bob", memory_id=found.id)
        await service.delete_memory(app_name="travel", user_id="alice", memory_id=found.id)
        assert (await service.search_memory(app_name="travel", user_id="alice", query="passport")).memories == []
        with pytest.raises(InvalidInputError):
            await service.search_memory(app_name="a/b", user_id="alice", query="passport")
