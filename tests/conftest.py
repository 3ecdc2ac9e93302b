"""Shared fixtures: every store backend, a hashing embedder, a ReMe on a temporary directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import AsyncIterator, Callable

import pytest

from reme import ReMe
from reme.embedding import HashEmbedder
from reme.store import VectorStore
from reme.store.edge import EdgeStore
from reme.store.qdrant import QdrantStore

DIM = 64
BACKENDS = ["edge", "qdrant"]

# No test reaches the network: the hub and telemetry are off for every child process too.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def make_store(backend: str, path: Path) -> VectorStore:
    if backend == "edge":
        return EdgeStore(path / "edge")
    return QdrantStore(location=":memory:")


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorStore]:
    s = make_store(request.param, tmp_path)
    await s.create_collection("mem", DIM)
    yield s
    await s.close()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=DIM)


@pytest.fixture
def reme_factory(tmp_path: Path) -> Callable[..., ReMe]:
    def make(**kwargs: object) -> ReMe:
        kwargs.setdefault("working_dir", tmp_path / "wd")
        kwargs.setdefault("embedding", {"backend": "hash", "dimensions": DIM})
        return ReMe(**kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture
async def reme(reme_factory: Callable[..., ReMe]) -> AsyncIterator[ReMe]:
    async with reme_factory() as r:
        yield r
