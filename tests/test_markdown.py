"""Memory as Markdown: `export_markdown` writes a target's memories as files a person edits,
`sync_markdown` reads the edits back (update with history, delete, add), reports conflicts and
ambiguous items instead of guessing, and never reaches another target."""

from __future__ import annotations

import inspect
import json
import os
import re
import stat
import subprocess
import sys
import uuid
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import DIM, dump_store, every_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reme import InvalidInputError, MemoryNode, ReMe, ReMeSync
from reme.markdown import MarkdownSyncResult, canonical

ROOT = Path(__file__).resolve().parents[1]

HOSTILE = [
    "first line\nsecond line\n\n  indented after a blank line\n\ttabbed",
    "# not a heading\n- not an item\n1. not a numbered item\n---\n```python\nprint('x')\n```",
    "closes a comment --> and opens one <!-- here",
    "ends like a marker <!-- reme:deadbeef -->",
    "escaped already <\\!-- and <\\\\!-- twice",
    "emoji 😀, right-to-left שלום, CJK 记忆, combining é, line sep\u2028para sep\u2029next\x85",
    "trailing spaces   \r\nwindows line end\rold mac line end",
    "**bold** _it_ [link](http://x) | table | `code` > quote \\ backslash",
]


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (old, text)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def drop_line(path: Path, containing: str) -> None:
    lines = lines_of(path)
    kept = [line for line in lines if containing not in line]
    assert len(kept) == len(lines) - 1
    path.write_text("\n".join(kept), encoding="utf-8")


async def alice_tree(reme: ReMe, tmp_path: Path) -> tuple[Path, dict[str, MemoryNode]]:
    nodes = {
        "seat": await reme.add_memory("Alice prefers window seats", user_name="alice"),
        "food": await reme.add_memory("Alice is vegetarian", user_name="alice"),
        "move": await reme.add_memory("Alice moved to Berlin", user_name="alice", tags=["event"],
                                      message_time=datetime(2024, 4, 26, 15, tzinfo=timezone.utc)),
    }
    tree = tmp_path / "alice-md"
    done = await reme.export_markdown(tree, user_name="alice")
    assert done.files == ["MEMORY.md", "journal/2024-04-26.md"] and done.memories == 3
    return tree, nodes


# -- round trip ----------------------------------------------------------------------------------
@every_store
async def test_export_then_sync_without_edits_changes_nothing(reme: ReMe, tmp_path: Path) -> None:
    for text in HOSTILE:
        await reme.add_memory(text, user_name="alice")
    await reme.add_memory("Alice met Bob\nat the station", user_name="alice", tags=["event"])
    tree = tmp_path / "md"
    await reme.export_markdown(tree, user_name="alice")
    before = await dump_store(reme)
    result = await reme.sync_markdown(tree, user_name="alice")
    assert (result.changes, result.conflicts, result.ambiguous) == (0, [], [])
    assert result.applied and result.unchanged == len(HOSTILE) + 1
    assert await dump_store(reme) == before  # not a version written, not a vector changed
    again = await reme.sync_markdown(tree, user_name="alice")  # the rewritten tree is as good
    assert (again.changes, again.unchanged, await dump_store(reme)) == (0, len(HOSTILE) + 1, before)


async def test_markdown_reads_as_markdown(reme: ReMe, tmp_path: Path) -> None:
    tree, nodes = await alice_tree(reme, tmp_path)
    memory = (tree / "MEMORY.md").read_text(encoding="utf-8")
    assert memory.startswith("---\n") and "# Memories of user alice" in memory
    key = uuid.UUID(nodes["seat"].memory_id).hex[:8]
    assert f"- Alice prefers window seats <!-- reme:{key} -->" in memory
    assert f'"id": "{nodes["seat"].memory_id}", "version": 1' in memory  # the id in front matter
    journal = (tree / "journal" / "2024-04-26.md").read_text(encoding="utf-8")
    assert "- Alice moved to Berlin <!-- reme:" in journal and "window" not in journal


async def test_exported_files_get_ordinary_permissions(reme: ReMe, tmp_path: Path) -> None:
    """A tree is for people and their editors: a new file gets the mode the user's umask gives any
    new file (not a temporary file's 0600), and a file already there keeps its own mode."""
    old = os.umask(0o022)
    try:
        tree, _ = await alice_tree(reme, tmp_path)
        assert stat.S_IMODE((tree / "MEMORY.md").stat().st_mode) == 0o644
        (tree / "MEMORY.md").chmod(0o640)
        await reme.add_memory("Alice drinks green tea", user_name="alice")
        await reme.export_markdown(tree, user_name="alice")
    finally:
        os.umask(old)
    assert "green tea" in (tree / "MEMORY.md").read_text(encoding="utf-8")
    assert stat.S_IMODE((tree / "MEMORY.md").stat().st_mode) == 0o640


# -- edits ---------------------------------------------------------------------------------------
@every_store
async def test_edited_item_is_an_update_with_history(reme: ReMe, tmp_path: Path) -> None:
    tree, nodes = await alice_tree(reme, tmp_path)
    edit(tree / "MEMORY.md", "window seats", "aisle seats\n  on long flights")
    result = await reme.sync_markdown(tree, user_name="alice")
    assert result.applied and [n.memory_id for n in result.updated] == [nodes["seat"].memory_id]
    node = await reme.get_memory(nodes["seat"].memory_id, user_name="alice")
    assert (node.content, node.version) == ("Alice prefers aisle seats\non long flights", 2)
    (old,) = await reme.history(node.memory_id, user_name="alice")
    assert (old.event, old.node.content) == ("UPDATE", "Alice prefers window seats")
    assert "markdown sync" in old.reason
    assert "version\": 2" in (tree / "MEMORY.md").read_text(encoding="utf-8")  # rewritten from the store
    assert (await reme.sync_markdown(tree, user_name="alice")).changes == 0


async def test_removed_item_is_a_delete(reme: ReMe, tmp_path: Path) -> None:
    tree, nodes = await alice_tree(reme, tmp_path)
    drop_line(tree / "journal" / "2024-04-26.md", "Berlin")
    result = await reme.sync_markdown(tree, user_name="alice")
    assert [n.content for n in result.deleted] == ["Alice moved to Berlin"]
    assert await reme.count_memory(user_name="alice") == 2
    (gone,) = await reme.history(nodes["move"].memory_id, user_name="alice")
    assert gone.event == "DELETE"
    assert not (tree / "journal" / "2024-04-26.md").exists()  # an empty journal day is removed


async def test_new_items_are_added(reme: ReMe, tmp_path: Path) -> None:
    tree, _ = await alice_tree(reme, tmp_path)
    with open(tree / "MEMORY.md", "a", encoding="utf-8") as f:
        f.write("- Alice plays the cello\n  in an orchestra\n* Alice drinks green tea\n- Alice is vegetarian\n")
    (tree / "journal" / "2024-05-01.md").write_text("# May Day\n\n- Alice ran a marathon\n", encoding="utf-8")
    result = await reme.sync_markdown(tree, user_name="alice")
    added = {n.content: n for n in result.added}
    assert set(added) == {"Alice plays the cello\nin an orchestra", "Alice drinks green tea", "Alice ran a marathon"}
    assert result.unchanged == 4  # three exported items, and the new line that repeats one of them
    assert added["Alice drinks green tea"].tags == []
    marathon = added["Alice ran a marathon"]
    assert marathon.tags == ["event"] and marathon.message_time == datetime(2024, 5, 1, tzinfo=timezone.utc)
    assert await reme.count_memory(user_name="alice") == 6
    journal = (tree / "journal" / "2024-05-01.md").read_text(encoding="utf-8")
    assert journal.startswith("---\n") and "- Alice ran a marathon <!-- reme:" in journal  # now with its marker


async def test_dry_run_reports_and_writes_nothing(reme: ReMe, tmp_path: Path) -> None:
    tree, _ = await alice_tree(reme, tmp_path)
    edit(tree / "MEMORY.md", "vegetarian", "vegan")
    snapshot = {p: p.read_bytes() for p in tree.rglob("*.md")}
    before = await dump_store(reme)
    result = await reme.sync_markdown(tree, user_name="alice", dry_run=True)
    assert result.dry_run and not result.applied and [n.content for n in result.updated] == ["Alice is vegan"]
    assert await dump_store(reme) == before
    assert {p: p.read_bytes() for p in tree.rglob("*.md")} == snapshot


# -- conflicts -----------------------------------------------------------------------------------
@every_store
async def test_store_changed_since_export_is_a_conflict(reme: ReMe, tmp_path: Path) -> None:
    tree, nodes = await alice_tree(reme, tmp_path)
    await reme.update_memory(nodes["seat"].memory_id, content="Alice prefers the front row")
    await reme.update_memory(nodes["move"].memory_id, content="Alice moved to Hamburg")
    edit(tree / "MEMORY.md", "window seats", "aisle seats")  # edited here and there
    drop_line(tree / "journal" / "2024-04-26.md", "Berlin")  # removed here, edited there
    edit(tree / "MEMORY.md", "vegetarian", "vegan")  # a clear edit: held back with the rest
    before = await dump_store(reme)
    result = await reme.sync_markdown(tree, user_name="alice")
    assert not result.applied and result.blocked
    assert {c.memory_id for c in result.conflicts} == {nodes["seat"].memory_id, nodes["move"].memory_id}
    assert all("changed it since the export" in c.reason for c in result.conflicts)
    assert await dump_store(reme) == before  # nothing half-applied
    assert "aisle seats" in (tree / "MEMORY.md").read_text(encoding="utf-8")  # the tree is left as edited

    forced = await reme.sync_markdown(tree, user_name="alice", force=True)
    assert forced.applied and [n.content for n in forced.updated] == ["Alice is vegan"]
    assert len(forced.conflicts) == 2 and not forced.rewritten
    assert (await reme.get_memory(nodes["seat"].memory_id)).content == "Alice prefers the front row"
    assert (await reme.get_memory(nodes["move"].memory_id)).content == "Alice moved to Hamburg"


async def test_an_unchanged_item_of_a_changed_memory_is_no_conflict(reme: ReMe, tmp_path: Path) -> None:
    tree, nodes = await alice_tree(reme, tmp_path)
    await reme.update_memory(nodes["seat"].memory_id, content="Alice prefers the front row")
    await reme.delete_memory(nodes["food"].memory_id)
    result = await reme.sync_markdown(tree, user_name="alice")
    assert result.applied and result.changes == 0 and not result.blocked  # the store's newer state stays
    assert (await reme.get_memory(nodes["seat"].memory_id)).content == "Alice prefers the front row"
    assert "front row" in (tree / "MEMORY.md").read_text(encoding="utf-8")


async def test_export_over_unsynced_edits_is_refused(reme: ReMe, tmp_path: Path) -> None:
    tree, _ = await alice_tree(reme, tmp_path)
    edit(tree / "MEMORY.md", "vegetarian", "vegan")
    with pytest.raises(InvalidInputError, match="edits not synced"):
        await reme.export_markdown(tree, user_name="alice")
    assert "vegan" in (tree / "MEMORY.md").read_text(encoding="utf-8")
    await reme.export_markdown(tree, user_name="alice", overwrite=True)
    assert "vegetarian" in (tree / "MEMORY.md").read_text(encoding="utf-8")
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "MEMORY.md").write_text("my own notes\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="did not write"):
        await reme.export_markdown(mine, user_name="alice")
    assert (mine / "MEMORY.md").read_text(encoding="utf-8") == "my own notes\n"


# -- ambiguity -----------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["duplicate", "broken-close", "broken-open", "comment", "stray", "empty",
                                    "gone-file", "unknown-key"])
async def test_ambiguous_items_are_reported_not_guessed(reme: ReMe, tmp_path: Path, damage: str) -> None:
    tree, nodes = await alice_tree(reme, tmp_path)
    memory = tree / "MEMORY.md"
    seat = next(line for line in lines_of(memory) if "window seats" in line)
    key = uuid.UUID(nodes["seat"].memory_id).hex[:8]
    if damage == "duplicate":
        edit(memory, seat, seat + "\n" + seat.replace("window", "aisle"))
    elif damage == "broken-close":
        edit(memory, f"reme:{key} -->", f"reme:{key} ->")
    elif damage == "broken-open":
        edit(memory, f"<!-- reme:{key}", f"<!- reme:{key}")
    elif damage == "comment":
        edit(memory, "window seats", "window seats <!-- ask again -->")
    elif damage == "stray":
        edit(memory, seat, seat + "\nnot indented, so not part of the item")
    elif damage == "empty":
        edit(memory, "Alice prefers window seats ", "")
    elif damage == "gone-file":
        (tree / "journal" / "2024-04-26.md").unlink()
    else:
        edit(memory, f"reme:{key}", "reme:0123abcd")
    edit(memory, "vegetarian", "vegan")  # a clear edit beside it: held back too
    before = await dump_store(reme)
    result = await reme.sync_markdown(tree, user_name="alice")
    assert result.ambiguous and not result.conflicts and not result.applied
    assert all(i.file in ("MEMORY.md", "journal/2024-04-26.md") and i.reason for i in result.ambiguous)
    assert await dump_store(reme) == before
    forced = await reme.sync_markdown(tree, user_name="alice", force=True)
    assert [n.content for n in forced.updated] == ["Alice is vegan"] and forced.ambiguous
    assert forced.deleted == [] and not forced.rewritten  # the damaged memory is neither changed nor deleted
    if damage != "gone-file":
        assert (await reme.get_memory(nodes["seat"].memory_id)).content == "Alice prefers window seats"
    assert await reme.count_memory(user_name="alice") == 3


# -- isolation -----------------------------------------------------------------------------------
async def test_a_tree_of_alice_cannot_write_bobs_memories(reme: ReMe, tmp_path: Path) -> None:
    bob = [await reme.add_memory("Bob is allergic to peanuts", user_name="bob"),
           await reme.add_memory("Bob plays bass", user_name="bob"),
           await reme.add_memory("Bob lives in Oslo", user_name="bob")]
    tree, nodes = await alice_tree(reme, tmp_path)
    with pytest.raises(InvalidInputError, match="user 'alice'"):
        await reme.sync_markdown(tree, user_name="bob")
    with pytest.raises(InvalidInputError, match="user 'alice'"):
        await reme.sync_markdown(tree, task_name="alice")
    before = await dump_store(reme)

    memory = tree / "MEMORY.md"
    exported = memory.read_text(encoding="utf-8")
    memory.write_text(exported.replace('target_name: "alice"', 'target_name: "bob"'), encoding="utf-8")
    for name in ("alice", "bob"):
        with pytest.raises(InvalidInputError, match="several targets"):  # the journal still says alice
            await reme.sync_markdown(tree, user_name=name)
    memory.write_text(exported, encoding="utf-8")
    with pytest.raises(InvalidInputError, match="user 'alice'"):
        await reme.export_markdown(tree, user_name="bob", overwrite=True)  # another target's tree: never

    # Point alice's entries at bob's ids and edit their items; aim a marker at another of bob's.
    text = memory.read_text(encoding="utf-8")
    text = text.replace(nodes["seat"].memory_id, bob[0].memory_id).replace(nodes["food"].memory_id, bob[1].memory_id)
    text = text.replace("window seats", "no allergies").replace("is vegetarian", "plays drums")
    text += f"- Bob lives in Rome <!-- reme:{uuid.UUID(bob[2].memory_id).hex} -->\n"
    memory.write_text(text, encoding="utf-8")
    result = await reme.sync_markdown(tree, user_name="alice", force=True)
    assert {c.memory_id for c in result.conflicts} == {bob[0].memory_id, bob[1].memory_id}
    assert all("no longer in the store" in c.reason for c in result.conflicts)
    assert [i.reason for i in result.ambiguous] == [f"marker reme:{uuid.UUID(bob[2].memory_id).hex} is not in "
                                                    "any front matter of this tree"]
    assert result.deleted == [] and result.updated == [] and result.added == []
    # ... and remove those items: alice's sync deletes nothing of bob's either.
    memory.write_text("\n".join(line for line in text.split("\n") if "<!-- reme:" not in line), encoding="utf-8")
    result = await reme.sync_markdown(tree, user_name="alice")
    assert result.applied and result.deleted == []
    after = await dump_store(reme)
    bobs = {mid: rec for name in after for mid, rec in after[name].items() if '"memory_target":"bob"' in rec}
    assert bobs == {mid: rec for name in before for mid, rec in before[name].items()
                    if '"memory_target":"bob"' in rec}
    assert await reme.count_memory(user_name="bob") == 3


async def test_a_task_tree_holds_lessons(reme: ReMe, tmp_path: Path) -> None:
    lesson = await reme.add_memory("Log in before rating songs", task_name="spotify",
                                   when_to_use="rating songs in a Spotify library")
    await reme.add_memory("Alice prefers window seats", user_name="spotify")
    tree = tmp_path / "lessons"
    assert (await reme.export_markdown(tree, task_name="spotify")).files == ["LESSONS.md"]
    text = (tree / "LESSONS.md").read_text(encoding="utf-8")
    assert "Log in before rating songs" in text and "window" not in text
    edit(tree / "LESSONS.md", "Log in before", "Log in once before")
    result = await reme.sync_markdown(tree, task_name="spotify")
    (node,) = result.updated
    assert node.memory_id == lesson.memory_id and node.when_to_use == lesson.when_to_use  # other fields kept
    assert node.memory_type.value == "procedural" and node.target_kind == "task"


async def test_ids_that_share_their_start_get_longer_markers(reme: ReMe, tmp_path: Path) -> None:
    nodes = await reme.add_memories([MemoryNode(memory_id=f"abcdef12-0000-4000-8000-00000000000{i}",
                                                memory_type="personal", memory_target="alice", content=f"fact {i}")
                                     for i in range(3)])
    tree = tmp_path / "md"
    await reme.export_markdown(tree, user_name="alice")
    text = (tree / "MEMORY.md").read_text(encoding="utf-8")
    assert len(set(re.findall(r"<!-- reme:([0-9a-f]+) -->", text))) == 3 and "<!-- reme:abcdef12 -->" not in text
    edit(tree / "MEMORY.md", "fact 1", "fact one")
    result = await reme.sync_markdown(tree, user_name="alice")
    assert [(n.memory_id, n.content) for n in result.updated] == [(nodes[1].memory_id, "fact one")]


# -- hostile content -----------------------------------------------------------------------------
@pytest.mark.parametrize("text", HOSTILE)
async def test_hostile_content_round_trips_and_edits_exactly(reme: ReMe, tmp_path: Path, text: str) -> None:
    node = await reme.add_memory(text, user_name="alice")
    tree = tmp_path / "md"
    await reme.export_markdown(tree, user_name="alice")
    assert (await reme.sync_markdown(tree, user_name="alice")).changes == 0
    memory = tree / "MEMORY.md"
    marker = f" <!-- reme:{uuid.UUID(node.memory_id).hex[:8]} -->"
    edit(memory, marker, " (edited)" + marker)
    result = await reme.sync_markdown(tree, user_name="alice")
    assert [n.content for n in result.updated] == [canonical(text) + " (edited)"], result
    assert (await reme.sync_markdown(tree, user_name="alice")).changes == 0


ALPHABET = st.characters(codec="utf-8", exclude_characters="\x00")
SNIPPETS = st.sampled_from(["<!--", "-->", "<\\!--", "\\", "\n", "\r\n", "\r", "  ", "\t", "- ", "# ", "---",
                            "<!-- reme:0123abcd -->", "reme:deadbeef", "\u2028", "😀", "`", "*"])
contents = st.lists(st.one_of(st.text(ALPHABET, min_size=1, max_size=12), SNIPPETS), min_size=1,
                    max_size=12).map("".join).filter(lambda t: bool(t.strip()))


def test_any_content_round_trips_and_any_edit_is_read_exactly(tmp_path: Path) -> None:
    """Any storable text exports and syncs back unchanged; any text written in its item the way
    docs/markdown.md says is read back exactly (canonically: no trailing spaces, `\\n` line ends),
    or reported when it holds what looks like a broken marker."""
    seen: Counter[str] = Counter()
    with ReMeSync(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": DIM}) as reme:

        @settings(deadline=None, derandomize=True, database=None, max_examples=100,
                  suppress_health_check=[HealthCheck.too_slow])
        @given(before=contents, after=contents)
        def check(before: str, after: str) -> None:
            user = uuid.uuid4().hex
            tree = tmp_path / user
            node = reme.add_memory(before, user_name=user)
            reme.export_markdown(tree, user_name=user)
            same = reme.sync_markdown(tree, user_name=user)
            assert (same.changes, same.blocked, same.unchanged) == (0, False, 1)
            memory = tree / "MEMORY.md"
            text = memory.read_text(encoding="utf-8")
            start = text.index("\n- ", text.index("# Memories of user")) + 1
            marker = re.search(r" <!-- reme:[0-9a-f]+ -->\n\Z", text)
            assert marker is not None
            # The new text as docs/markdown.md says to write it: "- " before the first line, two
            # spaces before the others, "<!--" as "<\\!--" (one backslash more where some stand).
            escaped = re.sub(r"<(\\*)!--", lambda m: "<\\" + m.group(1) + "!--", canonical(after)).split("\n")
            item = "\n".join([f"- {escaped[0]}"] + [f"  {line}" if line else "" for line in escaped[1:]])
            memory.write_text(text[:start] + item + marker.group(0), encoding="utf-8")
            result = reme.sync_markdown(tree, user_name=user)
            stored = reme.get_memory(node.memory_id, user_name=user)
            outside_literals = re.sub(r"<\\+!--.*?(?:-->|\Z)", "", "\n".join(escaped), flags=re.DOTALL)
            if canonical(after) == canonical(before):
                seen['same text'] += 1
                assert result.changes == 0 and stored.content == before
            elif re.search(r"reme:[ \t]*[0-9A-Fa-f]{8}", outside_literals):
                seen['reported'] += 1
                assert result.ambiguous and not result.applied and stored.content == before
            else:
                seen['updated'] += 1
                assert [n.content for n in result.updated] == [canonical(after)] == [stored.content]

        check()
    assert seen["updated"] >= 50 and seen["reported"] >= 1, seen  # both outcomes were exercised


LINES = st.one_of(st.sampled_from(["", "- a new fact", "  a further line", "# a heading", "---", "stray text",
                                   "- <!-- reme:", "-->", "<!-- reme:0123abcd -->", "1. numbered", "* starred",
                                   "\t- tabbed", "- \u2028", "\ufeff- bom", "- x <!-- a --> <!-- b -->"]),
                  st.text(ALPHABET, max_size=30))


def test_any_edit_of_a_tree_syncs_or_is_refused_and_never_half_applied(tmp_path: Path) -> None:
    """Whatever the text of an exported file becomes (kept lines shuffled and damaged, lines of
    any kind added), a sync returns a result or raises a ReMeError; when it writes nothing, the
    store is as it was; another target is never touched."""
    from reme import ReMeError

    seen: Counter[str] = Counter()
    with ReMeSync(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": DIM}) as reme:
        bob = reme.add_memory("Bob plays bass", user_name="bob")

        @settings(deadline=None, derandomize=True, database=None, max_examples=60,
                  suppress_health_check=[HealthCheck.too_slow])
        @given(data=st.data(), force=st.booleans())
        def check(data: st.DataObject, force: bool) -> None:
            user = uuid.uuid4().hex
            for text in ("Alice prefers window seats", "Alice is vegetarian\nand likes tea", "Alice plays chess"):
                reme.add_memory(text, user_name=user)
            tree = tmp_path / user
            reme.export_markdown(tree, user_name=user)
            memory = tree / "MEMORY.md"
            lines = memory.read_text(encoding="utf-8").split("\n")
            body = lines.index("---", 1) + 1
            kept = data.draw(st.lists(st.sampled_from(lines[1:]), max_size=len(lines)))
            kept = [line[:data.draw(st.integers(0, len(line)))] if data.draw(st.booleans()) else line
                    for line in kept]
            head = lines[:body] if data.draw(st.booleans()) else ["---"] + kept[:3] + ["---"]
            memory.write_text("\n".join(head + kept + data.draw(st.lists(LINES, max_size=8))), encoding="utf-8")
            before = reme.list_memory(user_name=user, limit=100).nodes
            try:
                result = reme.sync_markdown(tree, user_name=user, force=force)
            except ReMeError:
                result = None
            after = reme.list_memory(user_name=user, limit=100).nodes
            seen["refused" if result is None else "blocked" if not result.applied else "applied"] += 1
            if result is None or not result.applied or result.changes == 0:
                assert sorted(n.model_dump_json() for n in after) == sorted(n.model_dump_json() for n in before)
            else:
                ids = {n.memory_id for n in after}
                assert {n.memory_id for n in result.added + result.updated} <= ids
                assert not {n.memory_id for n in result.deleted} & ids
            assert reme.get_memory(bob.memory_id, user_name="bob") == bob

        check()
    assert min(seen["refused"], seen["blocked"], seen["applied"]) >= 5, seen


# -- faces ---------------------------------------------------------------------------------------
def test_sync_face_mirrors_the_markdown_methods() -> None:
    for name in ("export_markdown", "sync_markdown"):
        assert inspect.signature(getattr(ReMeSync, name)).return_annotation == \
            inspect.signature(getattr(ReMe, name)).return_annotation


def test_sync_face_runs_them(tmp_path: Path) -> None:
    with ReMeSync(working_dir=tmp_path / "wd", embedding={"backend": "hash", "dimensions": DIM}) as reme:
        reme.add_memory("Alice prefers window seats", user_name="alice")
        assert reme.export_markdown(tmp_path / "md", user_name="alice").memories == 1
        assert isinstance(reme.sync_markdown(tmp_path / "md", user_name="alice"), MarkdownSyncResult)


async def test_sync_rejects_what_is_not_a_tree(reme: ReMe, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no Markdown tree"):
        await reme.sync_markdown(tmp_path / "nothing", user_name="alice")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "MEMORY.md").write_text("---\nformat: 3\n---\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="MEMORY.md:2"):
        await reme.sync_markdown(tmp_path / "bad", user_name="alice")
    (tmp_path / "bad" / "MEMORY.md").write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        await reme.sync_markdown(tmp_path / "bad", user_name="alice")
    with pytest.raises(InvalidInputError):
        await reme.export_markdown(tmp_path / "md")  # no target


# -- command line --------------------------------------------------------------------------------
def cli(wd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REME_EMBEDDING__BACKEND": "hash", "REME_WORKING_DIR": str(wd)}
    return subprocess.run([sys.executable, "-m", "reme.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=ROOT)


def test_cli_exports_syncs_and_reports(tmp_path: Path) -> None:
    wd, tree = tmp_path / "wd", tmp_path / "md"
    assert cli(wd, "md", "export", str(tree), "--user", "alice").returncode == 3  # no store: nothing created
    assert cli(wd, "add", "Alice likes tea", "--user", "alice").returncode == 0
    out = cli(wd, "md", "export", str(tree), "--user", "alice")
    assert out.returncode == 0 and "exported 1 memory" in out.stdout
    edit(tree / "MEMORY.md", "tea", "green tea")
    dry = cli(wd, "md", "sync", str(tree), "--dry-run", "--json")
    assert dry.returncode == 0 and json.loads(dry.stdout)["updated"][0]["content"] == "Alice likes green tea"
    done = cli(wd, "md", "sync", str(tree))  # the target comes from the tree
    assert done.returncode == 0 and "1 updated" in done.stdout and "rewritten" in done.stdout
    with open(tree / "MEMORY.md", "a", encoding="utf-8") as f:
        f.write("stray text\n")
    blocked = cli(wd, "md", "sync", str(tree))
    assert blocked.returncode == 2 and "ambiguous MEMORY.md:" in blocked.stdout and "nothing written" in blocked.stdout
    assert cli(wd, "md", "sync", str(tree), "--user", "bob").returncode == 2
    listed = cli(wd, "list", "--user", "alice", "--json")
    assert [m["content"] for m in json.loads(listed.stdout)["memories"]] == ["Alice likes green tea"]


def test_cli_md_has_help() -> None:
    for action in ("export", "sync"):
        out = subprocess.run([sys.executable, "-m", "reme.cli", "md", action, "--help"], capture_output=True,
                             text=True, timeout=60, cwd=ROOT)
        assert out.returncode == 0 and f"usage: reme md {action}" in out.stdout


# -- over HTTP -----------------------------------------------------------------------------------
async def test_the_client_exports_and_syncs_through_the_service(tmp_path: Path) -> None:
    from reme import PermissionDeniedError
    from reme.client import ReMeClient
    from service_process import Served

    alice_token, admin_token = "alice-token-0123456789", "admin-token-0123456789"
    tokens = [{"name": "alice-app", "secret": alice_token, "users": ["alice"]},
              {"name": "admin", "secret": admin_token, "users": ["*"], "tasks": ["*"], "tools": ["*"]}]
    served = Served(tmp_path / "wd", server_config={"server": {"tokens": tokens}}).wait_ready()
    try:
        async with ReMeClient(served.url, token=alice_token) as alice, \
                ReMeClient(served.url, token=admin_token) as admin:
            seat = await alice.add_memory("Alice prefers window seats", user_name="alice")
            food = await alice.add_memory("Alice is vegetarian", user_name="alice")
            bob = await admin.add_memory("Bob plays bass", user_name="bob")
            tree = tmp_path / "md"
            done = await alice.export_markdown(tree, user_name="alice")
            assert (done.directory, done.files, done.memories) == (str(tree), ["MEMORY.md"], 2)
            assert (await alice.sync_markdown(tree, user_name="alice")).changes == 0

            edit(tree / "MEMORY.md", "window seats", "aisle seats")
            with open(tree / "MEMORY.md", "a", encoding="utf-8") as f:
                f.write("- Alice drinks green tea\n")
            result = await alice.sync_markdown(tree, user_name="alice")
            assert [n.content for n in result.updated] == ["Alice prefers aisle seats"] and result.rewritten
            assert [n.content for n in result.added] == ["Alice drinks green tea"]
            assert "Alice drinks green tea <!-- reme:" in (tree / "MEMORY.md").read_text(encoding="utf-8")
            assert [v.node.content for v in await alice.history(seat.memory_id, user_name="alice")] == \
                ["Alice prefers window seats"]

            await alice.update_memory(food.memory_id, content="Alice is vegan", user_name="alice")
            edit(tree / "MEMORY.md", "is vegetarian", "eats fish")
            blocked = await alice.sync_markdown(tree, user_name="alice")
            assert not blocked.applied and [c.memory_id for c in blocked.conflicts] == [food.memory_id]
            assert "eats fish" in (tree / "MEMORY.md").read_text(encoding="utf-8")  # left as edited

            with pytest.raises(PermissionDeniedError):  # the token's wall holds for trees too
                await alice.sync_markdown(tree, user_name="bob")
            with pytest.raises(PermissionDeniedError):
                await alice.export_markdown(tmp_path / "bob-md", user_name="bob")
            with pytest.raises(InvalidInputError, match="user 'alice'"):
                await admin.sync_markdown(tree, user_name="bob")  # a tree syncs only into its own target
            assert (await admin.get_memory(bob.memory_id)).version == 1
            assert not (tmp_path / "bob-md").exists()
    finally:
        assert served.stop() == 0, served.output()
