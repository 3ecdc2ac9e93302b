"""Data integrity at the file boundary: an import is all or nothing and every bad line is a typed
error naming it; an export carries each memory's history and an import restores it; a backup
restores only what a backup can hold; a failed command leaves no store behind."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import DIM, dump_store, every_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import reme as cli

from reme import InvalidInputError, MemoryNode, ReMe, ReMeError

HASH = {"backend": "hash", "dimensions": DIM}
LINES = 300
"""Lines of an import file in the properties: more than one engine call (batch_size 256) holds."""


def good_line(i: int, **extra: Any) -> dict[str, Any]:
    return {"memory_id": str(uuid.UUID(int=i + 1)), "memory_type": "personal", "memory_target": "imported",
            "content": f"imported fact number {i}", **extra}


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def encoded(row: Any) -> bytes:
    return json.dumps(row, allow_nan=True).encode("utf-8", "surrogatepass")


# -- hostile lines: each is refused, naming its line ----------------------------------------------
HOSTILE: list[Callable[[int], bytes]] = [
    lambda i: encoded(good_line(i, content="a lone surrogate \ud800 here")),
    lambda i: json.dumps(good_line(i, content="raw ")).encode()[:-2] + b"\xed\xa0\x80\"}",  # CESU-8 surrogate
    lambda i: encoded(good_line(i, vector=5)),
    lambda i: encoded(good_line(i, vector="abc")),
    lambda i: encoded(good_line(i, vector=["abc"] * DIM)),
    lambda i: encoded(good_line(i, vector=["0.5"] * DIM)),
    lambda i: encoded(good_line(i, vector=[True] * DIM)),
    lambda i: encoded(good_line(i, vector=[float("nan")] * DIM)),
    lambda i: encoded(good_line(i, vector=[1e308 * 10] * DIM)),
    lambda i: encoded(good_line(i, vector=[[0.1]] * DIM)),
    lambda i: encoded(good_line(i, vector={"dense": [0.1] * DIM})),
    lambda i: encoded(good_line(0, content="another text under the first line's id")),
    lambda i: encoded(good_line(i, history=5)),
    lambda i: encoded(good_line(i, history=[{"event": "UPDATE"}])),
    lambda i: encoded(good_line(i, history=[{"event": "BOOM", "time": "2024-01-01T00:00:00Z",
                                             "node": good_line(i)}])),
    lambda i: encoded(good_line(i, history=[{"event": "UPDATE", "time": "2024-01-01T00:00:00Z",
                                             "node": good_line(i + 1)}])),  # another memory's state
    lambda i: encoded(good_line(i, history=[{"event": "UPDATE", "time": "2024-01-01T00:00:00Z",
                                             "node": {**good_line(i), "memory_target": "someone-else"}}])),
    lambda i: encoded(good_line(i, history=[{"event": "UPDATE", "time": "2024-01-01T00:00:00Z",
                                             "node": good_line(i), "vector": "abc"}])),
    lambda i: encoded(good_line(i, metadata={"n": float("inf")})),
    lambda i: encoded(good_line(i, memory_id=7)),
    lambda i: encoded([good_line(i)]),
    lambda i: b"{" * 10,
]


@pytest.fixture(scope="module")
def one_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One ReMe on its own loop for every example (creating a store takes seconds)."""
    loop = asyncio.new_event_loop()
    reme = ReMe(working_dir=tmp_path_factory.mktemp("prop") / "wd", embedding=HASH)
    loop.run_until_complete(reme.open())
    loop.run_until_complete(reme.add_memory("Alice prefers window seats", user_name="alice"))
    yield loop, reme
    loop.run_until_complete(reme.close())
    loop.close()


@pytest.fixture
async def imported(reme_factory: Callable[..., ReMe]) -> Any:
    async with reme_factory() as reme:
        await reme.add_memory("Alice prefers window seats", user_name="alice")
        yield reme


@pytest.mark.parametrize("hostile", range(len(HOSTILE)))
def test_a_bad_line_late_in_a_long_file_imports_nothing_and_is_named(one_store: Any, tmp_path: Path,
                                                                     hostile: int) -> None:
    loop, reme = one_store
    lines = [encoded(good_line(i)) for i in range(LINES)]
    lines[279] = HOSTILE[hostile](279)
    path = write_lines(tmp_path / "in.jsonl", lines)
    before = loop.run_until_complete(dump_store(reme))
    with pytest.raises(InvalidInputError, match=r"in\.jsonl:280\b"):
        loop.run_until_complete(reme.import_memory(path))
    assert loop.run_until_complete(dump_store(reme)) == before


async def test_the_same_id_on_two_lines_names_both(imported: ReMe, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", [encoded(good_line(0)), encoded(good_line(1)),
                                               encoded(good_line(0, content="other text"))])
    with pytest.raises(InvalidInputError, match=r"in\.jsonl:3: memory_id \S+ is also on line 1"):
        await imported.import_memory(path)
    path = write_lines(tmp_path / "in.jsonl", [encoded(good_line(0)), encoded(good_line(0))])  # even unchanged
    with pytest.raises(InvalidInputError, match=r"in\.jsonl:2:"):
        await imported.import_memory(path)


async def test_a_vector_of_another_size_is_embedded_again(imported: ReMe, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", [encoded(good_line(0, vector=[0.5] * (DIM + 3))),
                                               encoded(good_line(1, vector=None)), encoded(good_line(2, vector=[]))])
    assert await imported.import_memory(path) == 3
    got = await imported.store.get(imported.collection, [good_line(0)["memory_id"]], with_vectors=True)
    assert len(got.found[0].vector or []) == DIM


async def test_the_store_level_import_checks_lines_the_same_way(imported: ReMe, tmp_path: Path) -> None:
    for hostile in (HOSTILE[2], HOSTILE[4], HOSTILE[11]):
        lines = [encoded(good_line(i)) for i in range(5)]
        lines[3] = hostile(3)
        path = write_lines(tmp_path / "in.jsonl", lines)
        before = await dump_store(imported)
        with pytest.raises(InvalidInputError, match=r"in\.jsonl:4\b"):
            await imported.store.import_jsonl(imported.collection, path, embed=imported.embedder.embed)
        assert await dump_store(imported) == before


_line = st.one_of(
    st.integers(0, LINES - 1).map(lambda i: encoded(good_line(i))),
    st.sampled_from(range(len(HOSTILE))).map(lambda k: HOSTILE[k](5)),
    st.fixed_dictionaries({"content": st.text(st.characters(exclude_categories=()), max_size=8)}, optional={
        "vector": st.one_of(st.none(), st.integers(), st.text(max_size=3), st.lists(st.one_of(
            st.floats(), st.integers(), st.text(max_size=2), st.booleans()), max_size=DIM + 1),
            st.lists(st.floats(-1, 1), min_size=DIM, max_size=DIM)),
        "history": st.one_of(st.none(), st.integers(), st.lists(st.dictionaries(
            st.sampled_from(["event", "time", "node", "reason", "vector"]),
            st.one_of(st.none(), st.text(max_size=4), st.sampled_from(["UPDATE", "DELETE", "2024-01-01"]))),
            max_size=2)),
        "memory_id": st.one_of(st.uuids().map(str), st.sampled_from([good_line(0)["memory_id"]])),
        "memory_type": st.sampled_from(["personal", "procedural", "history"]),
        "memory_target": st.sampled_from(["imported", "alice", ""])}).map(encoded),
)


@settings(deadline=None, derandomize=True, database=None, max_examples=20,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(extra=st.lists(st.tuples(st.integers(0, LINES), _line), min_size=1, max_size=3), batch=st.uuids())
def test_any_import_succeeds_or_changes_nothing(one_store: Any, tmp_path_factory: pytest.TempPathFactory,
                                                extra: list[tuple[int, bytes]], batch: uuid.UUID) -> None:
    """Any line anywhere in a long file (whose other lines are new memories: more than one engine
    call): success, or a ReMeError and the store exactly as it was."""
    loop, reme = one_store
    lines = [encoded({**good_line(i, content=f"bulk fact {i} of {batch}"), "memory_id": str(uuid.uuid5(batch, str(i)))})
             for i in range(LINES)]
    for at, line in extra:
        lines.insert(at, line)
    path = write_lines(tmp_path_factory.mktemp("imp") / "in.jsonl", lines)
    before = loop.run_until_complete(dump_store(reme))
    try:
        loop.run_until_complete(reme.import_memory(path))
    except ReMeError:
        assert loop.run_until_complete(dump_store(reme)) == before


# -- record_usage ---------------------------------------------------------------------------------
@pytest.mark.parametrize("memory_ids,success", [(None, True), ([], "yes"), (5, True), ([None], True)])
async def test_record_usage_refuses_what_is_not_a_list_of_ids_and_a_bool(imported: ReMe, memory_ids: Any,
                                                                         success: Any) -> None:
    node = (await imported.list_memory()).nodes[0]
    before = await dump_store(imported)
    with pytest.raises(InvalidInputError):
        await imported.record_usage(memory_ids if memory_ids != [] else [node.memory_id], success)
    assert await dump_store(imported) == before


# -- history travels with an export ---------------------------------------------------------------
async def _versioned(reme: ReMe) -> MemoryNode:
    node = await reme.add_memory("Alice prefers window seats", user_name="alice")
    await reme.update_memory(node.memory_id, content="Alice prefers aisle seats")
    return await reme.update_memory(node.memory_id, content="Alice prefers aisle seats near the front")


@pytest.mark.parametrize("with_vectors", [False, True])
@every_store
async def test_export_then_import_into_a_new_store_keeps_history(reme_factory: Callable[..., ReMe], tmp_path: Path,
                                                                 with_vectors: bool, another_store: dict[str, Any]) -> None:
    async with reme_factory(working_dir=tmp_path / "a") as source:
        v3 = await _versioned(source)
        await source.add_memory("Bob likes jazz", user_name="bob")
        before = await source.history(v3.memory_id)
        assert await source.export_memory(tmp_path / "out.jsonl", with_vectors=with_vectors) == 2
    async with reme_factory(**another_store) as target:
        assert await target.import_memory(tmp_path / "out.jsonl") == 2
        assert await target.get_memory(v3.memory_id) == v3
        after = await target.history(v3.memory_id)
        assert [(v.node, v.event, v.time, v.reason) for v in after] == \
            [(v.node, v.event, v.time, v.reason) for v in before]
        assert [v.node.version for v in after] == [1, 2]
        # Importing the same file again changes nothing: no duplicate versions.
        snapshot = await dump_store(target)
        assert await target.import_memory(tmp_path / "out.jsonl") == 0
        assert await dump_store(target) == snapshot


async def test_an_export_without_history_still_imports(reme_factory: Callable[..., ReMe], tmp_path: Path) -> None:
    async with reme_factory(working_dir=tmp_path / "a") as source:
        v3 = await _versioned(source)
        await source.export_memory(tmp_path / "plain.jsonl", with_history=False)
    row = json.loads((tmp_path / "plain.jsonl").read_text())
    assert "history" not in row  # the format of earlier releases, line for line
    async with reme_factory(working_dir=tmp_path / "b") as target:
        assert await target.import_memory(tmp_path / "plain.jsonl") == 1
        assert await target.get_memory(v3.memory_id) == v3
        assert await target.history(v3.memory_id) == []


async def test_importing_a_newer_state_keeps_both_histories(reme_factory: Callable[..., ReMe], tmp_path: Path) -> None:
    async with reme_factory(working_dir=tmp_path / "a") as source:
        v3 = await _versioned(source)
        await source.export_memory(tmp_path / "out.jsonl")
    async with reme_factory(working_dir=tmp_path / "b") as target:
        await target.import_memory(tmp_path / "out.jsonl")
        await target.update_memory(v3.memory_id, content="Alice now flies business")
        await target.export_memory(tmp_path / "newer.jsonl")
    async with reme_factory(working_dir=tmp_path / "a") as source:
        assert await source.import_memory(tmp_path / "newer.jsonl") == 1
        versions = await source.history(v3.memory_id)
        assert [v.node.version for v in versions] == [1, 2, 3]
        assert (await source.get_memory(v3.memory_id)).content == "Alice now flies business"


# -- backups ------------------------------------------------------------------------------------------
async def _backup_rows(reme_factory: Callable[..., ReMe], tmp_path: Path) -> list[dict[str, Any]]:
    async with reme_factory(working_dir=tmp_path / "src") as source:
        await _versioned(source)
        await source.backup(tmp_path / "backup.jsonl")
    return [json.loads(line) for line in (tmp_path / "backup.jsonl").read_text().splitlines()]


def _version_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in rows[1:] if r["role"] == "versions")


@pytest.mark.parametrize("spoil", [
    lambda meta: meta.pop("node"), lambda meta: meta.update(event="BOOM"), lambda meta: meta.update(time="never"),
    lambda meta: meta.update(node={"content": "x"}), lambda meta: meta.update(version_of="not-an-id"),
    lambda meta: meta["node"].update(memory_target="mallory"),
    lambda meta: meta["node"].update(memory_id=str(uuid.uuid4())),
])
async def test_a_backup_with_a_forged_version_restores_nothing(reme_factory: Callable[..., ReMe], tmp_path: Path,
                                                               spoil: Callable[[dict[str, Any]], Any]) -> None:
    rows = await _backup_rows(reme_factory, tmp_path)
    spoil(_version_row(rows)["node"]["metadata"])
    (tmp_path / "forged.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    async with reme_factory(working_dir=tmp_path / "dst") as target:
        with pytest.raises(InvalidInputError, match=r"forged\.jsonl:\d+"):
            await target.restore(tmp_path / "forged.jsonl")
        assert await target.count_memory() == 0
        assert await target.store.count(target.repo.versions) == 0


async def test_a_backup_with_a_repeated_id_restores_nothing(reme_factory: Callable[..., ReMe], tmp_path: Path) -> None:
    rows = await _backup_rows(reme_factory, tmp_path)
    rows.append(next(r for r in rows[1:] if r["role"] == "memories"))
    (tmp_path / "twice.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    async with reme_factory(working_dir=tmp_path / "dst") as target:
        with pytest.raises(InvalidInputError, match=rf"twice\.jsonl:{len(rows)}: .*also on line"):
            await target.restore(tmp_path / "twice.jsonl")
        assert await target.count_memory() == 0


# -- the command line -------------------------------------------------------------------------------
def test_cli_backup_and_restore_move_a_store_with_its_history(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    memory_id = cli(src, "add", "Alice prefers window seats", "--user", "alice").stdout.strip()
    cli(src, "update", memory_id, "--content", "Alice prefers aisle seats")
    out = json.loads(cli(src, "backup", str(tmp_path / "b.jsonl"), "--json").stdout)
    assert out == {"backed_up": 2, "file": str(tmp_path / "b.jsonl")}
    assert json.loads(cli(dst, "restore", str(tmp_path / "b.jsonl"), "--json").stdout)["restored"] == 2
    history = json.loads(cli(dst, "history", memory_id, "--json").stdout)
    assert [v["node"]["content"] for v in history] == ["Alice prefers window seats"]
    again = cli(dst, "restore", str(tmp_path / "b.jsonl"), check=2)  # a store that holds memories
    assert "empty store" in again.stderr


def test_cli_import_takes_a_target(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    cli(src, "add", "Alice prefers window seats", "--user", "alice")
    cli(src, "add", "Bob likes jazz", "--user", "bob")
    cli(src, "export", str(tmp_path / "all.jsonl"))
    refused = cli(dst, "import", str(tmp_path / "all.jsonl"), "--user", "alice", check=2)
    assert "outside user 'alice'" in refused.stderr
    cli(src, "export", str(tmp_path / "alice.jsonl"), "--user", "alice")
    assert "imported 1 memory" in cli(dst, "import", str(tmp_path / "alice.jsonl"), "--user", "alice").stdout
    assert cli(dst, "import", str(tmp_path / "alice.jsonl"), "--format", "reme-jsonl", "--user", "alice",
               check=2).returncode == 2


@pytest.mark.parametrize("command,content,code", [
    (["summarize", "{file}", "--user", "alice"], '[{"role": "user", "content": "hi"}]', 4),  # no LLM
    (["summarize", "{file}", "--user", "alice"], "not json", 2),
    (["import", "{file}"], "", 2),  # nothing to import
    (["import", "{file}"], '{"content": 5}\n', 2),
    (["import", "{file}"], '{"memory_type": "personal", "memory_target": "a", "content": "x", "vector": 5}\n', 2),
    (["restore", "{file}"], '{"format": "nope"}\n', 2),
    (["add", "x", "--user", "a", "--metadata", '{"a.b": 1}'], "", 2),
])
def test_a_failed_command_leaves_no_store_behind(tmp_path: Path, command: list[str], content: str, code: int) -> None:
    (tmp_path / "in.jsonl").write_text(content)
    wd = tmp_path / "wd"
    cli(wd, *[str(tmp_path / "in.jsonl") if c == "{file}" else c for c in command], check=code,
        env={"OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""})
    assert not wd.exists(), sorted(str(p) for p in wd.rglob("*"))


def test_a_failed_command_keeps_a_store_that_was_there(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    cli(wd, "add", "Alice prefers window seats", "--user", "alice")
    (tmp_path / "bad.jsonl").write_text('{"content": 5}\n')
    cli(wd, "import", str(tmp_path / "bad.jsonl"), check=2)
    assert cli(wd, "count").stdout.strip() == "1"


def test_a_failed_summary_with_an_unreachable_llm_leaves_no_store(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text('[{"role": "user", "content": "I live in Berlin."}]')
    wd = tmp_path / "wd"
    cli(wd, "summarize", str(tmp_path / "m.json"), "--user", "alice", check=6,
        env={"REME_LLM__MODEL": "m", "REME_LLM__BASE_URL": "http://127.0.0.1:9/v1", "REME_LLM__API_KEY": "k",
             "REME_LLM__MAX_RETRIES": "0", "REME_LLM__TIMEOUT": "2"})
    assert not wd.exists()


async def test_a_memory_with_deep_metadata_updates_and_keeps_its_history(reme_factory: Callable[..., ReMe],
                                                                        tmp_path: Path) -> None:
    """Its version record nests the memory's metadata two levels down: that is no reason to refuse it."""
    deep: Any = 1
    for key in "hgfedcba":
        deep = {key: deep}
    async with reme_factory(working_dir=tmp_path / "a") as reme:
        node = await reme.add_memory("Alice's settings", user_name="alice", metadata=deep)
        await reme.update_memory(node.memory_id, content="Alice's new settings")
        assert [v.node.metadata for v in await reme.history(node.memory_id)] == [deep]
        await reme.backup(tmp_path / "b.jsonl")
        await reme.export_memory(tmp_path / "e.jsonl")
    async with reme_factory(working_dir=tmp_path / "b") as other:
        assert await other.restore(tmp_path / "b.jsonl") == 2
        assert [v.node.metadata for v in await other.history(node.memory_id)] == [deep]
    async with reme_factory(working_dir=tmp_path / "c") as other:
        assert await other.import_memory(tmp_path / "e.jsonl") == 1
        assert [v.node.metadata for v in await other.history(node.memory_id)] == [deep]


async def test_close_with_discard_removes_only_a_new_empty_store(reme_factory: Callable[..., ReMe],
                                                                  tmp_path: Path) -> None:
    fresh = ReMe(working_dir=tmp_path / "new" / "wd", embedding=HASH)  # a store it makes (reme_factory copies one)
    await fresh.open()
    assert await fresh.close(discard=True)
    assert not (tmp_path / "new").exists()  # the folders it made, too
    async with reme_factory(working_dir=tmp_path / "kept") as reme:
        await reme.add_memory("Alice prefers window seats", user_name="alice")
    again = reme_factory(working_dir=tmp_path / "kept")
    await again.open()
    assert not await again.close(discard=True)  # it was there before
    async with reme_factory(working_dir=tmp_path / "kept") as reme:
        assert await reme.count_memory() == 1


async def test_an_open_that_fails_leaves_no_store(reme_factory: Callable[..., ReMe], tmp_path: Path) -> None:
    reme = reme_factory(working_dir=tmp_path / "wd", embedding={"backend": "openai", "api_key": "k",
                                                               "base_url": "http://127.0.0.1:9/v1", "max_retries": 0})
    with pytest.raises(ReMeError):
        await reme.open()  # a new store needs the embedder's size, and it cannot be asked
    assert not (tmp_path / "wd").exists()


def test_a_command_waiting_for_a_store_that_is_discarded_makes_its_own(tmp_path: Path) -> None:
    """The holder removes its new store (lock file included) while the command waits for the
    lock: the command must lock the directory anew, not the removed file."""
    import subprocess
    import sys

    wd = tmp_path / "wd"
    holder = ("import asyncio, sys, time\nfrom reme import ReMe\n"
              "async def main():\n"
              "    reme = ReMe(working_dir=sys.argv[1], embedding={'backend': 'hash', 'dimensions': 64})\n"
              "    await reme.open()\n    print('ready', flush=True)\n    time.sleep(4)\n"
              "    assert await reme.close(discard=True)\n"
              "asyncio.run(main())\n")
    proc = subprocess.Popen([sys.executable, "-c", holder, str(wd)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        cli(wd, "add", "Alice prefers window seats", "--user", "alice", "--wait", "60")
    finally:
        assert proc.wait(timeout=60) == 0
    assert cli(wd, "count").stdout.strip() == "1"
    assert (wd / "store" / ".lock").exists()


async def test_a_pool_with_an_id_on_two_lines_names_both(imported: ReMe, tmp_path: Path) -> None:
    row = {"memory_id": str(uuid.UUID(int=7)), "content": "Log in first", "when_to_use": "before any call"}
    path = write_lines(tmp_path / "pool.jsonl", [encoded(row), encoded({**row, "content": "Log out last"})])
    before = await dump_store(imported)
    with pytest.raises(InvalidInputError, match=r"pool\.jsonl line 2: memory_id \S+ is also on line 1"):
        await imported.import_memory(path, format="reme-jsonl", task_name="appworld")
    assert await dump_store(imported) == before
