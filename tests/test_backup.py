"""Backups: the whole store, versions and vectors included, in one file that restores exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from reme import InvalidInputError, ReMe, VectorSizeError

from conftest import DIM, dump_store, every_store


@every_store
async def test_a_backup_restores_every_memory_version_and_vector(reme_factory: Callable[..., ReMe],
                                                                  tmp_path: Path, another_store: dict[str, Any]) -> None:
    async with reme_factory(working_dir=tmp_path / "a") as reme:
        node = await reme.add_memory("Alice lives in Paris", user_name="alice", tags=["home"], metadata={"n": 1})
        await reme.update_memory(node.memory_id, content="Alice lives in Berlin")
        await reme.add_memory("the conversation", task_name="t", memory_type="history")
        gone = await reme.add_memory("Bob is vegetarian", user_name="bob")
        await reme.delete_memory(gone.memory_id)
        before = await dump_store(reme)
        assert await reme.backup(tmp_path / "backup.jsonl") == 4  # 2 memories, 2 versions
    size = (tmp_path / "backup.jsonl").stat().st_size
    assert size < 10_000  # vectors as float32 base64, not JSON floats
    async with reme_factory(**another_store) as reme:
        assert await reme.restore(tmp_path / "backup.jsonl") == 4
        assert await dump_store(reme) == before
        assert [v.event for v in await reme.history(node.memory_id)] == ["UPDATE"]
        assert [v.event for v in await reme.history(gone.memory_id)] == ["DELETE"]
        hits = await reme.search_memory("Berlin", user_name="alice", mode="dense")
        assert hits[0].node.memory_id == node.memory_id
        with pytest.raises(InvalidInputError, match="empty store"):  # restoring twice would mix two stores
            await reme.restore(tmp_path / "backup.jsonl")


@pytest.mark.parametrize("content,match", [
    (b"", "not a ReMe backup"),
    (b'{"format": "reme-backup", "version": 1, "dim": 64, "collections": {}}\n{"role": "other"}\n', "role"),
    (b'{"format": "reme-backup", "version": 1, "dim": 64, "collections": {}}\n'
     b'{"role": "memories", "node": {"memory_type": "personal", "memory_target": "a", "content": "x"}, '
     b'"vector": "AAAA"}\n', "values"),
    (b'{"format": "reme-backup", "version": 1, "dim": 64}\n\xff\xfe\n', "UTF-8"),
])
async def test_a_broken_backup_restores_nothing(reme: ReMe, tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=match):
        await reme.restore(path)
    assert await reme.count_memory() == 0


async def test_a_backup_needs_the_embedder_it_was_made_with(reme_factory: Callable[..., Any], tmp_path: Path) -> None:
    async with reme_factory(working_dir=tmp_path / "a") as reme:
        await reme.add_memory("x", user_name="a")
        await reme.backup(tmp_path / "b.jsonl")
    async with reme_factory(working_dir=tmp_path / "c", embedding={"backend": "hash", "dimensions": DIM * 2}) as other:
        with pytest.raises(VectorSizeError):
            await other.restore(tmp_path / "b.jsonl")
    with pytest.raises(InvalidInputError, match="cannot write"):
        async with reme_factory(working_dir=tmp_path / "a") as reme:
            await reme.backup(tmp_path / "missing" / "b.jsonl")
