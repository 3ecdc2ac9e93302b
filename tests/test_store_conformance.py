"""What every VectorStore backend must do; each test that takes `store` runs against `edge` (on
disk), `qdrant` (qdrant-client's local mode), `server` (a real Qdrant node) and `cluster` (a real
3-node cluster, 3 shards with 2 copies each)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from reme.embedding import HashEmbedder
from reme.errors import (CollectionNotFoundError, ConflictError, InvalidFilterError, InvalidInputError,
                         MemoryNotFoundError, VectorSizeError)
from reme.schema import MemoryNode, MemoryType
from reme.store import Swap, Upsert, VectorRecord, VectorStore, parse_filter
from reme.store.filters import contains, eq, in_, ne, not_in, range_, tags_all, tags_any

from conftest import DIM, make_store

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def node(content: str, target: str = "alice", **kw: object) -> MemoryNode:
    return MemoryNode(memory_type=kw.pop("memory_type", MemoryType.PERSONAL), memory_target=target,  # type: ignore[arg-type]
                      content=content, **kw)  # type: ignore[arg-type]


async def put(store: VectorStore, *nodes: MemoryNode) -> list[MemoryNode]:
    emb = HashEmbedder(dim=DIM)
    vectors = await emb.embed([n.retrieval_text for n in nodes])
    await store.upsert("mem", [VectorRecord(node=n, vector=v) for n, v in zip(nodes, vectors)])
    return list(nodes)


async def test_create_collection_is_idempotent_and_refuses_another_size(store: VectorStore) -> None:
    await store.create_collection("mem", DIM)
    with pytest.raises(VectorSizeError):
        await store.create_collection("mem", DIM + 1)
    assert await store.collection_dim("mem") == DIM


async def test_collections_are_listed_and_deleted(store: VectorStore) -> None:
    await store.create_collection("other", 8)
    assert {"mem", "other"} <= set(await store.list_collections())
    await store.delete_collection("other")
    assert "other" not in await store.list_collections()
    with pytest.raises(CollectionNotFoundError):
        await store.count("other")
    with pytest.raises(InvalidInputError):
        await store.create_collection("../escape", 8)


async def test_get_returns_found_in_order_and_reports_missing(store: VectorStore) -> None:
    a, b = await put(store, node("Alice likes tea"), node("Alice likes hiking"))
    missing = "00000000-0000-4000-8000-000000000000"
    result = await store.get("mem", [b.memory_id, missing, a.memory_id, "not-a-uuid"])
    assert [r.node.memory_id for r in result.found] == [b.memory_id, a.memory_id]
    assert result.missing == [missing, "not-a-uuid"]
    assert result.found[1].node == a


async def test_get_with_vectors_returns_the_stored_vector(store: VectorStore) -> None:
    (a,) = await put(store, node("Alice likes tea"))
    expected = (await HashEmbedder(dim=DIM).embed([a.content]))[0]
    found = (await store.get("mem", [a.memory_id], with_vectors=True)).found[0]
    assert found.vector == pytest.approx(expected, abs=1e-4)
    # The engine's float32 values as they are, on every store (a server's JSON writes their shortest
    # decimals, 0.13363062, which as a Python float is not the float32 0.13363061845302582).
    assert found.vector is not None and found.vector == np.asarray(found.vector, dtype=np.float32).tolist()


async def test_update_replaces_payload_and_keeps_vector_unless_given(store: VectorStore) -> None:
    (a,) = await put(store, node("Alice likes tea"))
    before = (await store.get("mem", [a.memory_id], with_vectors=True)).found[0].vector
    changed = a.model_copy(update={"score": 0.9, "version": 2})
    await store.update("mem", changed)
    after = (await store.get("mem", [a.memory_id], with_vectors=True)).found[0]
    assert after.node.score == 0.9 and after.node.version == 2
    assert after.vector == pytest.approx(before, abs=1e-6)
    with pytest.raises(MemoryNotFoundError):
        await store.update("mem", node("never stored"))


async def test_a_swap_replaces_and_deletes_what_was_read_and_gives_each_record_a_new_revision(
        store: VectorStore) -> None:
    a, b = await put(store, node("Alice likes tea"), node("Alice likes hiking"))
    read = (await store.get("mem", [a.memory_id, b.memory_id], with_vectors=True)).found
    assert all(r.revision for r in read)
    await store.write([Swap("mem", read, [VectorRecord(node=a.revised(content="Alice likes coffee"),
                                                        vector=read[0].vector)])])
    after = (await store.get("mem", [a.memory_id, b.memory_id])).found
    assert [(r.node.content, r.node.version) for r in after] == [("Alice likes coffee", 2)]
    assert after[0].revision not in (None, read[0].revision)


async def test_a_swap_of_a_record_written_since_it_was_read_writes_nothing(store: VectorStore) -> None:
    a, b = await put(store, node("Alice likes tea"), node("Alice likes hiking"))
    read = (await store.get("mem", [a.memory_id, b.memory_id], with_vectors=True)).found
    await store.update("mem", b.revised(content="Alice likes climbing"))  # another writer, meanwhile
    extra = node("written with the swap")
    with pytest.raises(ConflictError):
        await store.write([Swap("mem", read, [VectorRecord(node=a.revised(content="Alice likes coffee"),
                                                            vector=read[0].vector)]),
                           Upsert("mem", [VectorRecord(node=extra, vector=read[0].vector)])])
    stored = {r.node.memory_id: r for r in (await store.get("mem", [a.memory_id, b.memory_id, extra.memory_id])).found}
    assert [r.node.content for r in stored.values()] == ["Alice likes tea", "Alice likes climbing"]
    assert stored[a.memory_id].revision == read[0].revision  # put back as it was: a swap that read it still wins
    await store.write([Swap("mem", [read[0]])])
    assert await store.count("mem") == 1


async def test_a_swap_of_a_record_deleted_since_it_was_read_does_not_bring_it_back(store: VectorStore) -> None:
    (a,) = await put(store, node("Alice likes tea"))
    read = (await store.get("mem", [a.memory_id], with_vectors=True)).found
    await store.delete("mem", [a.memory_id])  # another writer, meanwhile
    with pytest.raises(ConflictError):
        await store.write([Swap("mem", read, [VectorRecord(node=a.revised(content="Alice likes coffee"),
                                                            vector=read[0].vector)])])
    assert await store.count("mem") == 0


async def test_delete_by_ids_and_by_filter_count_what_existed(store: VectorStore) -> None:
    a, b, c = await put(store, node("one"), node("two", target="bob"), node("three", target="bob"))
    assert await store.delete("mem", [a.memory_id, "00000000-0000-4000-8000-000000000000"]) == 1
    assert await store.delete_by_filter("mem", eq("memory_target", "bob")) == 2
    assert await store.count("mem") == 0


def _filter_fixture() -> list[MemoryNode]:
    return [
        node("Alice prefers window seats", score=0.9, tags=["travel", "seat"], message_time=T0,
             metadata={"topic": "travel", "stars": 5, "when": "2024-05-01T00:00:00+00:00", "ok": True}),
        node("Alice is vegetarian", score=0.5, tags=["food"], message_time=T0 + timedelta(days=10),
             metadata={"topic": "food", "stars": 3}, author="chat"),
        node("Bob prefers aisle seats", target="bob", score=0.2, tags=["travel"],
             message_time=T0 + timedelta(days=20), metadata={"topic": "travel", "stars": 1}),
        node("Fix the login bug by clearing cookies", target="webapp", memory_type=MemoryType.PROCEDURAL,
             when_to_use="login fails", score=0.7, message_time=T0 + timedelta(days=30)),
    ]


FILTER_CASES = [
    ("eq keyword", eq("memory_target", "bob"), {2}),
    ("eq type", eq("memory_type", "procedural"), {3}),
    ("ne", ne("memory_target", "alice"), {2, 3}),
    ("in", in_("memory_target", ["bob", "webapp"]), {2, 3}),
    ("not in", not_in("memory_type", ["personal"]), {3}),
    ("eq float", eq("score", 0.5), {1}),
    ("range float", range_("score", gte=0.5, lt=0.9), {1, 3}),
    ("range int", range_("version", gte=1), {0, 1, 2, 3}),
    ("range datetime", range_("message_time", gt=T0, lte=T0 + timedelta(days=20)), {1, 2}),
    ("range datetime iso", range_("message_time", lt="2024-05-05T00:00:00Z"), {0}),
    ("eq datetime", eq("message_time", T0 + timedelta(days=10)), {1}),
    ("contains", contains("content", "seats"), {0, 2}),
    ("contains case", contains("content", "VEGETARIAN"), {1}),
    ("contains when_to_use", contains("when_to_use", "login"), {3}),
    ("tags any", tags_any(["food", "seat"]), {0, 1}),
    ("tags all", tags_all(["travel", "seat"]), {0}),
    ("eq tag", eq("tags", "travel"), {0, 2}),
    ("metadata eq", eq("metadata.topic", "travel"), {0, 2}),
    ("metadata range", range_("metadata.stars", gte=3), {0, 1}),
    ("metadata bool", eq("metadata.ok", True), {0}),
    ("metadata datetime", range_("metadata.when", gte=T0 - timedelta(days=1)), {0}),
    ("metadata in", in_("metadata.stars", [1, 5]), {0, 2}),
    ("author", eq("author", "chat"), {1}),
    ("and", eq("memory_target", "alice") & tags_any(["travel"]), {0}),
    ("or", eq("memory_target", "bob") | eq("memory_type", "procedural"), {2, 3}),
    ("not", ~eq("memory_target", "alice"), {2, 3}),
    ("nested", (eq("metadata.topic", "travel") | eq("metadata.topic", "food")) & ~range_("score", lt=0.3), {0, 1}),
    ("dict form", parse_filter({"memory_target": "alice", "score": {"gt": 0.6}}), {0}),
    ("dict or", parse_filter({"$or": [{"tags": {"any": ["food"]}}, {"memory_target": ["bob"]}]}), {1, 2}),
    ("dict not", parse_filter({"$not": {"memory_type": "personal"}}), {3}),
]


@pytest.mark.parametrize("label,flt,expected", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
async def test_every_filter_operator(store: VectorStore, label: str, flt: object, expected: set[int]) -> None:
    nodes = await put(store, *_filter_fixture())
    want = {nodes[i].memory_id for i in expected}
    page = await store.list("mem", flt=flt, limit=50)  # type: ignore[arg-type]
    assert {n.memory_id for n in page} == want, label
    assert await store.count("mem", flt) == len(want)  # type: ignore[arg-type]
    query = (await HashEmbedder(dim=DIM).embed(["seats"]))[0]
    hits = await store.search("mem", vector=query, text="seats", mode="hybrid", flt=flt, limit=50)  # type: ignore[arg-type]
    assert {h.node.memory_id for h in hits} <= want


@pytest.mark.parametrize("spec", [
    {"no_such_field": 1}, {"score": "high"}, {"memory_type": "diary"}, {"content": {"gt": 1}},
    {"message_time": {"gte": "yesterday"}}, {"tags": {"any": []}}, {"score": {"near": 1}},
    {"memory_id": "123"}, {"version": 1.5}, {"$or": "x"}, {"metadata.": 1},
])
async def test_invalid_filters_are_rejected_before_any_store_call(spec: dict[str, object]) -> None:
    with pytest.raises(InvalidFilterError):
        parse_filter(spec)


@pytest.mark.parametrize("sort_key", ["time_created", "score", "message_time", "version"])
@pytest.mark.parametrize("direction", ["asc", "desc"])
async def test_sort_and_cursor_paging_over_1000_nodes(store: VectorStore, sort_key: str, direction: str) -> None:
    # Scores repeat (ties across page boundaries) and half the nodes belong to another target.
    nodes = [node(f"memory number {i}", target="alice" if i % 2 else "bob", score=float(i % 7),
                  message_time=T0 + timedelta(minutes=i % 13), version=1 + i % 3,
                  time_created=T0 + timedelta(seconds=i)) for i in range(1000)]
    emb = HashEmbedder(dim=DIM)
    vectors = await emb.embed(["x"] * 1000)
    await store.upsert("mem", [VectorRecord(node=n, vector=v) for n, v in zip(nodes, vectors)])
    seen: list[MemoryNode] = []
    cursor = None
    for _ in range(100):
        page = await store.list("mem", flt=eq("memory_target", "alice"), sort_key=sort_key,
                                direction=direction, limit=37, cursor=cursor)  # type: ignore[arg-type]
        seen.extend(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(seen) == 500 and len({n.memory_id for n in seen}) == 500
    assert all(n.memory_target == "alice" for n in seen)
    values = [getattr(n, sort_key) for n in seen]
    assert values == sorted(values, reverse=direction == "desc")


async def test_id_order_paging_returns_everything_once(store: VectorStore) -> None:
    await put(store, *[node(f"fact {i}") for i in range(95)])
    ids: list[str] = []
    cursor = None
    while True:
        page = await store.list("mem", limit=10, cursor=cursor)
        ids.extend(n.memory_id for n in page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(ids) == 95 == len(set(ids))


async def test_list_rejects_bad_sort_key_and_foreign_cursor(store: VectorStore) -> None:
    with pytest.raises(InvalidInputError):
        await store.list("mem", sort_key="content")
    with pytest.raises(InvalidInputError):
        await store.list("mem", cursor="garbage!")


async def test_dense_search_ranks_nearest_first_and_applies_threshold(store: VectorStore) -> None:
    await put(store, node("Alice prefers window seats"), node("Alice is vegetarian"), node("quarterly tax report"))
    query = (await HashEmbedder(dim=DIM).embed(["window seats"]))[0]
    hits = await store.search("mem", vector=query, mode="dense", limit=3)
    assert hits[0].node.content == "Alice prefers window seats"
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].similarity >= hits[1].similarity >= hits[2].similarity
    high = await store.search("mem", vector=query, mode="dense", limit=3, score_threshold=hits[0].similarity - 1e-4)
    assert [h.node.content for h in high] == ["Alice prefers window seats"]


async def test_hybrid_returns_an_exact_keyword_hit_that_dense_search_misses(store: VectorStore) -> None:
    # The dense side is a model that ignores the rare token; BM25 must still find it.
    filler = [node(f"Alice talked about the weather and her garden, day {i}") for i in range(30)]
    target = node("Alice's passport number is XK-7741")
    await put(store, *filler, target)
    query_vector = (await HashEmbedder(dim=DIM).embed(["Alice talked about the weather and her garden"]))[0]
    dense = await store.search("mem", vector=query_vector, mode="dense", limit=5)
    assert target.memory_id not in {h.node.memory_id for h in dense}
    hybrid = await store.search("mem", vector=query_vector, text="XK-7741 passport", mode="hybrid", limit=5)
    assert target.memory_id in {h.node.memory_id for h in hybrid}
    keyword = await store.search("mem", text="passport", mode="keyword", limit=5)
    assert [h.node.memory_id for h in keyword] == [target.memory_id]


async def test_search_stores_nothing_and_leaves_scores_alone(store: VectorStore) -> None:
    (a,) = await put(store, node("Alice likes tea", score=0.3))
    query = (await HashEmbedder(dim=DIM).embed(["tea"]))[0]
    hit = (await store.search("mem", vector=query, text="tea", limit=1))[0]
    assert hit.node == a and hit.node.score == 0.3
    assert (await store.get("mem", [a.memory_id])).found[0].node == a


async def test_wrong_vector_size_is_refused_and_nothing_is_written(store: VectorStore) -> None:
    await put(store, node("kept"))
    with pytest.raises(VectorSizeError):
        await store.upsert("mem", [VectorRecord(node=node("good"), vector=[0.1] * DIM),
                                   VectorRecord(node=node("bad"), vector=[0.1] * (DIM - 1))])
    with pytest.raises(InvalidInputError):
        await store.upsert("mem", [VectorRecord(node=node("nan"), vector=[float("nan")] * DIM)])
    with pytest.raises(VectorSizeError):
        await store.search("mem", vector=[0.1] * 3, mode="dense")
    assert await store.count("mem") == 1


async def test_data_survives_close_and_reopen(tmp_path: Path) -> None:
    for backend in ("edge", "qdrant-path"):
        path = tmp_path / backend
        first = make_store("edge", path) if backend == "edge" else _qdrant_path(path)
        await first.create_collection("mem", DIM)
        stored = await put(first, node("Alice likes tea", tags=["drink"]))
        await first.close()
        second = make_store("edge", path) if backend == "edge" else _qdrant_path(path)
        assert await second.collection_dim("mem") == DIM
        assert (await second.get("mem", [stored[0].memory_id])).found[0].node == stored[0]
        assert len(await second.search("mem", text="tea", mode="keyword")) == 1
        await second.close()


def _qdrant_path(path: Path) -> VectorStore:
    from reme.store.qdrant import QdrantStore

    return QdrantStore(path=str(path))


@pytest.mark.parametrize("with_vectors", [True, False])
async def test_export_import_round_trips_every_field(store: VectorStore, tmp_path: Path, with_vectors: bool) -> None:
    original = await put(store, *_filter_fixture())
    original[0] = original[0].model_copy(update={"ref_ids": [original[1].memory_id], "version": 3})
    await store.update("mem", original[0])
    path = tmp_path / "dump.jsonl"
    assert await store.export_jsonl("mem", path, with_vectors=with_vectors) == 4
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert ("vector" in rows[0]) is with_vectors
    await store.delete_by_filter("mem", parse_filter({"version": {"gte": 1}}))  # type: ignore[arg-type]
    assert await store.count("mem") == 0
    embedder = HashEmbedder(dim=DIM)
    assert await store.import_jsonl("mem", path, embed=None if with_vectors else embedder.embed) == 4
    restored = {r.node.memory_id: r.node for r in (await store.get("mem", [n.memory_id for n in original])).found}
    assert restored == {n.memory_id: n for n in original}
    assert len(await store.search("mem", text="vegetarian", mode="keyword")) == 1


async def test_import_with_a_bad_line_writes_nothing(store: VectorStore, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = node("fine").model_dump(mode="json")
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "memory_id": "x", "content": ""}) + "\n")
    with pytest.raises(InvalidInputError, match="bad.jsonl:2"):
        await store.import_jsonl("mem", path, embed=HashEmbedder(dim=DIM).embed)
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(InvalidInputError, match="bad.jsonl:2"):
        await store.import_jsonl("mem", path, embed=HashEmbedder(dim=DIM).embed)
    assert await store.count("mem") == 0


@pytest.mark.parametrize("on_close", [True, None])
async def test_edge_counts_unindexed_vectors_and_builds_the_index_on_close_only_when_asked(
        tmp_path: Path, on_close: bool | None) -> None:
    """Building the index holds the whole process for minutes at scale (952 s at 1M), and every
    CLI command and a service's shutdown close the store: by default closing never starts it."""
    from reme import ReMeConfig
    from reme.store.edge import EdgeStore

    n, dim = 8000, 384  # large enough for the engine to build HNSW rather than keep a plain segment
    options = {} if on_close is None else {"index_on_close": on_close}
    store = EdgeStore(tmp_path / "edge", index_threshold=n, **options)
    await store.create_collection("mem", dim)
    vectors = np.random.default_rng(0).normal(size=(n, dim))
    await store.upsert("mem", [VectorRecord(node=node(f"fact {i}"), vector=vectors[i].tolist()) for i in range(n)])
    assert store.unindexed("mem") == n
    await store.close()  # n unindexed >= index_threshold: close builds the index if asked to
    reopened = EdgeStore(tmp_path / "edge")
    assert reopened.unindexed("mem") == (0 if on_close else n)
    assert (await reopened.count("mem")) == n
    await reopened.close()
    assert ReMeConfig.load(env={}).vector_store.index_on_close is False
    if on_close:  # an HNSW search weighs `hnsw_ef` candidates: the default finds nearly the exact top 10
        queries = vectors[:20] + 0.3 * np.random.default_rng(1).normal(size=(20, dim))
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        exact = [set(np.argsort(-(unit @ q))[:10].tolist()) for q in queries]
        found = {}
        for ef in (1, 256):
            store = EdgeStore(tmp_path / "edge", hnsw_ef=ef)
            hits = [await store.search("mem", vector=q.tolist(), mode="dense", limit=10) for q in queries]
            await store.close()
            found[ef] = np.mean([len({int(h.node.content.split()[1]) for h in hs} & ex) / 10
                                 for hs, ex in zip(hits, exact)])
        assert found[256] >= 0.9 and found[256] > found[1] + 0.1, found


@pytest.mark.parametrize("mode", ["dense", "keyword"])
async def test_equal_scores_are_ordered_by_id_across_stores(tmp_path: Path, mode: str) -> None:
    # The same points, written in two different orders and batchings, give the same top k.
    nodes = [node("alpha beta", memory_id=f"00000000-0000-0000-0000-{i:012d}") for i in range(60)]
    vector = HashEmbedder(dim=DIM).embed_one("alpha beta")
    tops = []
    for order, path in ((nodes, tmp_path / "a"), (nodes[::-1], tmp_path / "b")):
        s = make_store("edge", path)
        await s.create_collection("mem", DIM)
        for start in range(0, 60, 7):
            await s.upsert("mem", [VectorRecord(node=n, vector=vector) for n in order[start:start + 7]])
        hits = await s.search("mem", vector=vector if mode == "dense" else None, text="alpha beta", mode=mode,
                              limit=5)
        tops.append([h.node.memory_id for h in hits])
        await s.close()
    assert tops[0] == tops[1] == [n.memory_id for n in nodes[:5]]


async def test_a_read_gives_back_the_node_that_was_written_field_for_field(store: VectorStore) -> None:
    """Reads rebuild nodes from payloads without validating them again: every field, type and
    timezone must still come back as written, through get, list and search."""
    plus2 = timezone(timedelta(hours=2))
    written = node("Alice moved to Berlin", memory_type=MemoryType.HISTORY, target_kind="task", when_to_use="moves",
                   message_time=datetime(2024, 5, 3, 10, 0, tzinfo=plus2), author="alice", score=0.25,
                   tags=["move", "city"], ref_ids=["r1"], metadata={"a": {"b": [1, 2.5, None, True, "x"]}}, version=3)
    await put(store, written)
    (got,) = (await store.get("mem", [written.memory_id])).found
    listed = (await store.list("mem")).nodes[0]
    (hit,) = await store.search("mem", text="Berlin", mode="keyword")
    for read in (got.node, listed, hit.node):
        assert read == written and read.model_dump() == written.model_dump()
        assert read.memory_type is MemoryType.HISTORY and read.target_kind == "task"
        assert read.message_time.utcoffset() == timedelta(hours=2)
        assert read.model_dump_json() == written.model_dump_json()
        assert read.revised(content="Alice moved to Paris").version == 4  # a rebuilt node validates as usual
