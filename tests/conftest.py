"""Shared fixtures: every store backend, a hashing embedder, a ReMe on a temporary directory."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

import pytest

from reme import ReMe
from reme.embedding import HashEmbedder
from reme.retry import Backoff
from reme.store import VectorStore
from reme.store.edge import EdgeStore
from reme.store.base import DENSE
from reme.store.qdrant import JOURNAL, LOCKS, QdrantStore

from benchmark import qdrant_server
from openai_server import OpenAITestServer

DIM = 64
# Taken out of the environment as it is read: REME_* variables are ReMe settings, and an unknown
# one is a ConfigError in every ReMe a test (or its child process) opens.
SHARED_DATA = Path(os.environ.pop("REME_SHARED_DATA", "") or Path(__file__).resolve().parents[2] / "shared" / "data")
"""The project's shared data (LoCoMo dev split, task-memory pools): `../shared/data` beside the
checkout, as CI has it, or `$REME_SHARED_DATA`."""
BACKENDS = ["edge", "qdrant", "server", "cluster"]
"""`qdrant` is qdrant-client's local mode; `server` a real Qdrant node (scripts/qdrant.sh) on loopback;
`cluster` a real 3-node cluster, its collections spread as `SPREAD` says."""
STORES = ["edge", "server", "cluster"]
"""The stores a facade test runs on (`every_store`): embedded, a real node, a real 3-node cluster."""
SPREAD = {"shard_number": 3, "replication_factor": 2, "write_consistency_factor": 1}
"""What docs/scaling.md recommends for 3 nodes. Facade tests on the cluster write to collections
named `spread` (kept between tests, as on the node: creating one takes seconds there)."""

# No test reaches the network: the hub and telemetry are off for every child process too.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def make_store(backend: str, path: Path, url: str | None = None) -> VectorStore:
    if backend == "edge":
        return EdgeStore(path / "edge")
    if backend in ("server", "cluster"):
        assert url is not None, f"the {backend} backend needs a node's url"
        return QdrantStore(url=url, **(SPREAD if backend == "cluster" else {}))  # type: ignore[arg-type]
    return QdrantStore(location=":memory:")


@contextmanager
def on_disk(name: str) -> Iterator[Path]:
    """A new folder in the system's temporary directory (not pytest's, which scripts/test.sh puts
    on the RAM disk), removed at the end: for the Qdrant servers a session keeps, which hold
    gigabytes of preallocated files by the end of a run."""
    folder = Path(tempfile.mkdtemp(prefix=f"reme-{name}-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def qdrant_node() -> Iterator[qdrant_server.Node]:
    """One real Qdrant node on 127.0.0.1 (a free port) for the session (each xdist worker its own),
    stopped at the end. Tests sharing it start from an empty node (`empty_node`)."""
    with on_disk("qdrant") as folder, qdrant_server.serve(folder) as node:
        yield node


@pytest.fixture(scope="session")
def qdrant_cluster() -> Iterator[list[qdrant_server.Node]]:
    """Three Qdrant nodes of one cluster on 127.0.0.1 for the session, stopped at the end. A test
    that kills a node starts it again before it ends."""
    with on_disk("qdrant-cluster") as folder, qdrant_server.cluster(3, folder) as nodes:
        yield nodes


REUSED = frozenset({"mem", "reme", "reme-versions", "spread", "spread-versions", "reme-b", "reme-b-versions",
                    "spread-b", "spread-b-versions", JOURNAL, LOCKS})
"""Collections tests make again and again, of size `DIM`: emptied between tests, not dropped
(a collection with its payload indexes takes a second or more to make here)."""


def wipe(url: str) -> None:
    """Empty the node at `url`: every point goes, and every collection but the `REUSED` ones."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(url=url, check_compatibility=False)
    try:
        for collection in client.get_collections().collections:
            vectors = client.get_collection(collection.name).config.params.vectors
            dim = vectors[DENSE].size if isinstance(vectors, dict) and DENSE in vectors else None
            if collection.name in (JOURNAL, LOCKS) or (collection.name in REUSED and dim == DIM):
                client.delete(collection.name, models.FilterSelector(filter=models.Filter()), wait=True)
            else:
                client.delete_collection(collection.name)
    finally:
        client.close()


@pytest.fixture
def empty_node(qdrant_node: qdrant_server.Node) -> qdrant_server.Node:
    """The session's node, holding no memory."""
    wipe(qdrant_node.url)
    return qdrant_node


@pytest.fixture
def empty_cluster(qdrant_cluster: list[qdrant_server.Node]) -> list[qdrant_server.Node]:
    """The session's cluster, holding no memory."""
    wipe(qdrant_cluster[0].url)
    return qdrant_cluster


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorStore]:
    url = request.getfixturevalue("empty_node").url if request.param == "server" else \
        request.getfixturevalue("empty_cluster")[0].url if request.param == "cluster" else None
    s = make_store(request.param, tmp_path, url)
    await s.create_collection("mem", DIM)
    yield s
    await s.close()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=DIM)


@pytest.fixture
def vector_store(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The store the ReMe of `reme_factory` and `make_reme` opens: the embedded one, unless a test
    is marked `every_store` (or a module parametrizes this fixture over `STORES`)."""
    return on_every_store(request)


def on_every_store(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The `vector_store` settings for `request.param` (one of `STORES`; none: the embedded store):
    the embedded store, the session's Qdrant node or its 3-node cluster, emptied."""
    kind = getattr(request, "param", "edge")
    if kind == "server":
        return {"backend": "qdrant", "url": request.getfixturevalue("empty_node").url}
    if kind == "cluster":
        return {"backend": "qdrant", "url": request.getfixturevalue("empty_cluster")[0].url, "collection": "spread",
                **SPREAD}
    assert kind == "edge", kind
    return {}


every_store = pytest.mark.parametrize("vector_store", STORES, indirect=True)
"""Runs a test of the facade (through `reme`, `reme_factory`, `make_reme`...) on every store."""


@pytest.fixture
def another_store(vector_store: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """`reme_factory` / `make_reme` arguments for a second store, empty, of the kind `vector_store`
    names: another working directory; on a server (which is one store for every working
    directory), another collection too."""
    if not vector_store:
        return {"working_dir": tmp_path / "another"}
    return {"working_dir": tmp_path / "another",
            "vector_store": {**vector_store, "collection": f"{vector_store.get('collection', 'reme')}-b"}}


HASH_EMBEDDING = {"backend": "hash", "dimensions": DIM}


@pytest.fixture(scope="session")
def empty_working_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory holding an empty embedded store for `HASH_EMBEDDING`, made once per
    session (each xdist worker its own) by ReMe itself. Making a store takes most of a second here:
    the engine flushes every file of a collection at each of its payload indexes (2 collections x
    16), and the suite opens a new store in hundreds of tests; a sparse copy of this one takes a
    fraction of that. Tests of a first open make their own (they pass a store or embedder of their own,
    or run the CLI, or tests/test_crash.py's runner)."""
    wd = tmp_path_factory.mktemp("empty") / "wd"

    async def make() -> None:
        async with ReMe(working_dir=wd, embedding=HASH_EMBEDDING):
            pass

    asyncio.run(make())
    return wd


def start_empty(kwargs: dict[str, Any], template: Path) -> None:
    """Copy `template` (see `empty_working_dir`) to the working directory `kwargs` open, when they
    open the embedded store of `HASH_EMBEDDING` in a directory that does not exist yet."""
    wd = Path(str(kwargs["working_dir"]))
    defaults_only = not set(kwargs) & {"config", "config_file", "store", "embedder", "vector_store"}
    if defaults_only and kwargs.get("embedding") == HASH_EMBEDDING and not wd.exists():
        wd.parent.mkdir(parents=True, exist_ok=True)
        # The engine's files are mostly holes (about 500 MB apparent, 2 MB used): copied sparse.
        subprocess.run(["cp", "-r", "--sparse=always", str(template), str(wd)], check=True)


@pytest.fixture
def reme_factory(tmp_path: Path, vector_store: dict[str, Any], empty_working_dir: Path) -> Callable[..., ReMe]:
    def make(**kwargs: object) -> ReMe:
        kwargs.setdefault("working_dir", tmp_path / "wd")
        kwargs.setdefault("embedding", HASH_EMBEDDING)
        if vector_store:
            kwargs.setdefault("vector_store", vector_store)
        start_empty(kwargs, empty_working_dir)
        return ReMe(**kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture
async def reme(reme_factory: Callable[..., ReMe]) -> AsyncIterator[ReMe]:
    async with reme_factory() as r:
        yield r


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    """The scripted OpenAI-compatible server on 127.0.0.1 (see openai_server.py)."""
    with OpenAITestServer() as s:
        yield s


@pytest.fixture
def make_reme(tmp_path: Path, server: OpenAITestServer, vector_store: dict[str, Any],
              empty_working_dir: Path) -> Callable[..., ReMe]:
    """A ReMe whose LLM is the scripted server (pass llm={} for none)."""
    def make(**kwargs: Any) -> ReMe:
        if vector_store:
            kwargs.setdefault("vector_store", vector_store)
        kwargs.setdefault("working_dir", tmp_path / "wd")
        kwargs.setdefault("embedding", HASH_EMBEDDING)
        kwargs.setdefault("llm", {"base_url": server.base_url, "api_key": "k", "model": "test-model",
                                  "max_retries": 2, "timeout": 5})
        start_empty(kwargs, empty_working_dir)
        return ReMe(**kwargs)

    return make


@pytest.fixture
async def llm_reme(make_reme: Callable[..., ReMe]) -> AsyncIterator[ReMe]:
    async with make_reme() as r:
        r.llm.backoff = Backoff(0.01, 0.01)  # type: ignore[union-attr]  # keep retry tests fast
        yield r


async def dump_store(reme: ReMe) -> dict[str, dict[str, str]]:
    """Every record of the main and the versions collection (`memories`, `versions`), vectors
    included, as JSON by id: what "the store is unchanged" compares, and what a backup restored
    into a store of another name must equal. Keys sorted: a cluster's copies of a record hold the
    keys of its metadata in any order (docs/scaling.md)."""
    out: dict[str, dict[str, str]] = {}
    for role, name in (("memories", reme.collection), ("versions", reme.repo.versions)):
        out[role] = {r.node.memory_id: json.dumps(r.model_dump(mode="json"), sort_keys=True)
                     async for r in reme.store.iter_records(name, with_vectors=True)}
    return out


def shared_data(relative: str) -> Path:
    """A path under the shared data; a test that needs it fails (never skips) when it is missing."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.fail(f"{path} is missing: clone next to shared/ (as CI does) or set REME_SHARED_DATA")
    return path
