"""ReMeStorage beside CrewAI's own LanceDBStorage (its default): the same records, embedded by
ReMe's embedder, saved to both, then the same save / search / update / delete / list / count /
scope / reset calls asked of both, sync and async, and the answers compared. Scores differ by
definition (cosine here, 1 / (1 + L2 distance) in LanceDB), so what is compared is the order and
membership of results. Scopes are chosen so that no scope name is a string prefix of a sibling's
(LanceDB matches `scope_prefix` as a string, ReMe segment by segment)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.storage.lancedb_storage import LanceDBStorage
from crewai.memory.types import MemoryRecord

from reme import VectorSizeError
from reme.integrations.crewai import ReMeStorage

FACTS = [("/crew/research/alice", "Alice loves green tea", ["food"], {"user": "alice"}),
         ("/crew/research/alice", "Alice rides a red bicycle to work", ["travel"], {"user": "alice"}),
         ("/crew/research/bob", "Bob drinks black coffee every morning", ["food"], {"user": "bob"}),
         ("/crew/sales/carol", "Carol flies to Tokyo in May", ["travel"], {"user": "carol"}),
         ("/crew/sales", "The sales crew meets on Mondays", [], {})]


def ids(found: list[tuple[MemoryRecord, float]] | list[MemoryRecord]) -> list[str]:
    return [x[0].id if isinstance(x, tuple) else x.id for x in found]


def ranking(found: list[tuple[MemoryRecord, float]]) -> list[set[str]]:
    """The ids in order, those of equal score (a tie either store may break its own way) as one set."""
    groups: list[tuple[float, set[str]]] = []
    for record, score in found:
        if groups and abs(groups[-1][0] - score) < 1e-6:
            groups[-1][1].add(record.id)
        else:
            groups.append((score, {record.id}))
    return [ids for _, ids in groups]


def same(record: MemoryRecord) -> tuple[object, ...]:
    return (record.id, record.content, record.scope, record.categories, record.metadata, record.importance,
            record.created_at.replace(microsecond=0), record.source, record.private)


@pytest.fixture
def both(tmp_path: Path):  # type: ignore[no-untyped-def]
    ours = ReMeStorage(working_dir=tmp_path / "reme", embedding={"backend": "hash"})
    theirs = LanceDBStorage(path=str(tmp_path / "lance"))
    yield ours, theirs
    ours.close()


def records(ours: ReMeStorage) -> list[MemoryRecord]:
    start = datetime(2026, 1, 1)
    vectors = ours.embedder([text for _, text, _, _ in FACTS])
    return [MemoryRecord(content=text, scope=scope, categories=cats, metadata=meta, importance=0.5 + i / 10,
                         created_at=start + timedelta(days=i), embedding=vec, source=f"s{i}")
            for i, ((scope, text, cats, meta), vec) in enumerate(zip(FACTS, vectors))]


def test_every_call_answers_as_lancedb_does(both: tuple[ReMeStorage, LanceDBStorage]) -> None:
    ours, theirs = both
    assert isinstance(ours, StorageBackend)
    saved = records(ours)
    for storage in both:
        storage.save([r.model_copy(update={"embedding": r.embedding}) for r in saved])
    (query,) = ours.embedder(["green tea"])
    calls = [dict(), dict(scope_prefix="/crew/research"), dict(scope_prefix="/crew/research/alice"),
             dict(categories=["food"]), dict(metadata_filter={"user": "alice"}),
             dict(scope_prefix="/crew/sales", categories=["travel"]), dict(limit=2), dict(scope_prefix="/nowhere")]
    for kwargs in calls:
        a, b = ours.search(query, **kwargs), theirs.search(query, **kwargs)  # type: ignore[arg-type]
        assert ranking(a) == ranking(b), kwargs
        assert sorted(map(same, (r for r, _ in a))) == sorted(map(same, (r for r, _ in b)))
    assert ids(ours.search(query, limit=1)) == [saved[0].id]
    for prefix in (None, "/", "/crew", "/crew/research", "/crew/sales", "/crew/sales/carol", "/nowhere"):
        assert ours.count(prefix) == theirs.count(prefix), prefix
        assert ids(ours.list_records(prefix)) == ids(theirs.list_records(prefix)), prefix
        assert ours.list_categories(prefix) == theirs.list_categories(prefix), prefix
    assert ids(ours.list_records(limit=2, offset=1)) == ids(theirs.list_records(limit=2, offset=1))
    for parent in ("/", "/crew", "/crew/research"):
        assert ours.list_scopes(parent) == theirs.list_scopes(parent), parent
        mine, lance = ours.get_scope_info(parent), theirs.get_scope_info(parent)
        assert (mine.record_count, sorted(mine.categories), mine.child_scopes) == \
            (lance.record_count, sorted(lance.categories), lance.child_scopes), parent
        assert (mine.oldest_record, mine.newest_record) == (lance.oldest_record, lance.newest_record), parent

    changed = saved[1].model_copy(update={"content": "Alice rides a green tram", "categories": ["travel", "city"]})
    for storage in both:
        storage.update(changed.model_copy(update={"embedding": ours.embedder([changed.content])[0]}))
    assert same(ours.get_record(changed.id)) == same(theirs.get_record(changed.id))  # type: ignore[arg-type]
    assert ranking(ours.search(query, limit=2)) == ranking(theirs.search(query, limit=2))

    assert ours.delete(record_ids=[saved[2].id]) == theirs.delete(record_ids=[saved[2].id]) == 1
    assert ours.delete(older_than=datetime(2026, 1, 2)) == theirs.delete(older_than=datetime(2026, 1, 2)) == 1
    assert ours.delete(metadata_filter={"user": "carol"}) == theirs.delete(metadata_filter={"user": "carol"}) == 1
    assert ours.get_record(saved[2].id) is None and theirs.get_record(saved[2].id) is None
    assert ids(ours.list_records()) == ids(theirs.list_records())
    for storage in both:
        storage.reset("/crew/research")
    assert ids(ours.list_records()) == ids(theirs.list_records()) == [saved[4].id]
    for storage in both:
        storage.reset()
    assert ours.count() == theirs.count() == 0


async def test_the_async_faces_answer_as_the_sync_ones(both: tuple[ReMeStorage, LanceDBStorage]) -> None:
    ours, theirs = both
    saved = records(ours)
    await asyncio.gather(ours.asave(saved[:3]), theirs.asave(saved[:3]))
    await ours.asave(saved[3:])
    await theirs.asave(saved[3:])
    (query,) = ours.embedder(["coffee"])
    assert ranking(await ours.asearch(query, scope_prefix="/crew")) == \
        ranking(await theirs.asearch(query, scope_prefix="/crew"))
    assert await ours.adelete(scope_prefix="/crew/research") == await theirs.adelete(scope_prefix="/crew/research") == 3
    assert ours.count() == theirs.count() == 2


def test_a_vector_of_another_size_is_refused_and_changes_nothing(both: tuple[ReMeStorage, LanceDBStorage]) -> None:
    ours, _ = both
    saved = records(ours)
    ours.save(saved[:1])
    with pytest.raises(VectorSizeError, match="size 3"):
        ours.search([0.1, 0.2, 0.3])
    with pytest.raises(VectorSizeError, match="size 3"):
        ours.save([saved[1].model_copy(update={"embedding": [0.1, 0.2, 0.3]})])
    assert ids(ours.list_records()) == [saved[0].id]


def test_two_crews_never_see_each_others_and_a_reopen_keeps_everything(tmp_path: Path) -> None:
    settings = dict(working_dir=tmp_path, embedding={"backend": "hash"})
    with ReMeStorage(**settings) as storage:  # type: ignore[arg-type]
        (vec,) = storage.embedder(["passport"])
        storage.save([MemoryRecord(content="Alice's passport expires in May", scope="/crew/a/alice", embedding=vec),
                      MemoryRecord(content="Bob's passport expires in June", scope="/crew/ab/bob", embedding=vec)])
        assert [r.content for r, _ in storage.search(vec, scope_prefix="/crew/a")] == ["Alice's passport expires in May"]
        assert [r.content for r, _ in storage.search(vec, scope_prefix="/crew/ab")] == ["Bob's passport expires in June"]
    with ReMeStorage(**settings) as storage:  # type: ignore[arg-type]
        assert storage.count() == 2 and storage.count("/crew/a") == 1
        assert storage.list_scopes("/crew") == ["/crew/a", "/crew/ab"]
