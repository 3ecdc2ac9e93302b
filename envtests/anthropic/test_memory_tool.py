"""ReMeMemoryTool against the SDK's own BetaLocalFilesystemMemoryTool: hypothesis generates
command sequences (creates, views with ranges, replacements, inserts, deletes and renames of files
and directories, `..` and `.` in paths), each run on both, and every result, error message and
the tree after each command are compared. Two differences are the documented ones: a directory
exists while it holds a file (empty directories are removed from the SDK's tree after each
command) and a directory's size is its files' bytes (directory sizes are left out of the
comparison). Where the SDK fails with an OS error instead of a ToolError (a file used as a
directory, a directory moved into itself), ours must give a ToolError and change nothing.

Then the hostile inputs: paths out of the tree, symlinks, another user's tree, huge files."""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import pytest_asyncio
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reme import ReMe, ReMeSync
from reme.integrations.anthropic import MAX_FILE_CHARS, ReMeMemoryTool, ReMeMemoryToolSync

NAMES = ["a", "b.md", "notes", ".hidden", "B.md"]
paths = st.lists(st.sampled_from(NAMES + NAMES + ["..", ".", ""]), min_size=0, max_size=3).map(
    lambda parts: "/memories/" + "/".join(parts)) | st.sampled_from(["/memories", "/memories/"])
texts = st.sampled_from(["", "green tea\n", "one\ntwo\nthree\n", "tea tea", "no newline", "ü\r\nü\n", "a\n\nb\n"])
fragments = st.sampled_from(["", "tea", "two", "\n", "ü", "one\ntwo", "missing"])
commands = st.one_of(
    st.builds(lambda p, r: {"command": "view", "path": p, **({"view_range": r} if r else {})}, paths,
              st.sampled_from([None, [1, 2], [2, -1], [0, 1], [3, 10]])),
    st.builds(lambda p, t: {"command": "create", "path": p, "file_text": t}, paths, texts),
    st.builds(lambda p, o, n: {"command": "str_replace", "path": p, "old_str": o, "new_str": n}, paths, fragments,
              fragments),
    st.builds(lambda p, i, t: {"command": "insert", "path": p, "insert_line": i, "insert_text": t}, paths,
              st.integers(-1, 4), texts),
    st.builds(lambda p: {"command": "delete", "path": p}, paths),
    st.builds(lambda o, n: {"command": "rename", "old_path": o, "new_path": n}, paths, paths))


def sizes_of_files_only(result: str) -> str:
    """A listing's directory sizes left out: its first line (the directory viewed) and lines ending in /."""
    lines = result.split("\n")
    if lines[0].startswith("Here're the files and directories"):
        lines = [lines[0]] + [re.sub(r"^\S+\t", "-\t", line) if i == 0 or line.endswith("/") else line
                              for i, line in enumerate(lines[1:])]
    return "\n".join(lines)


def outcome(tool: Any, command: dict[str, Any]) -> tuple[str, str]:
    try:
        return "ok", sizes_of_files_only(str(tool.call(command)))
    except ToolError as exc:
        return "error", str(exc)
    except OSError as exc:
        return "os-error", repr(exc)


def sdk_tree(root: Path) -> dict[str, str]:
    for directory, dirs, files in os.walk(root, topdown=False):  # a directory exists while it holds a file
        if Path(directory) != root and not os.listdir(directory):
            os.rmdir(directory)
    return {"/memories/" + str(p.relative_to(root)): p.read_bytes().decode("utf-8")
            for p in root.rglob("*") if p.is_file()}


def reme_tree(tool: ReMeMemoryToolSync) -> dict[str, str]:
    nodes = tool.reme.list_memory(user_name=tool._tool.user_name, limit=1000).nodes
    return {n.metadata["claude_memory"]["path"]: n.content.split("\n", 1)[1] for n in nodes}


@pytest.fixture(scope="module")
def reme() -> Iterator[ReMeSync]:
    with tempfile.TemporaryDirectory() as path, ReMeSync(working_dir=path, embedding={"backend": "hash"}) as engine:
        yield engine


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(commands, min_size=1, max_size=8))
def test_every_command_answers_as_the_sdks_own_tool(reme: ReMeSync, batch: list[dict[str, Any]]) -> None:
    ours = ReMeMemoryToolSync(reme, user_name=f"user-{uuid.uuid4()}")  # a fresh tree for each example
    with tempfile.TemporaryDirectory() as base:
        sdk = BetaLocalFilesystemMemoryTool(base)
        for command in batch:
            before = reme_tree(ours)
            expected, got = outcome(sdk, command), outcome(ours, command)
            if expected[0] == "os-error":
                assert got[0] == "error", (command, got)
                assert reme_tree(ours) == before
            else:
                assert got == expected, command
            assert reme_tree(ours) == sdk_tree(sdk.memory_root), command


# -- hostile input ---------------------------------------------------------------------------------
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One store for the module's tests (each test's users are its own): opening one is most of a test's time."""
    async with ReMe(working_dir=tmp_path_factory.mktemp("reme"), embedding={"backend": "hash"}) as reme:
        yield reme


@pytest.fixture
def alice() -> str:
    return f"alice-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def bob() -> str:
    return f"bob-{uuid.uuid4().hex[:8]}"


async def fails(tool: ReMeMemoryTool, command: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as info:
        await tool.call(command)
    return str(info.value)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_path_out_of_the_tree_is_refused_and_nothing_is_written(engine: ReMe, alice: str) -> None:
    tool = ReMeMemoryTool(engine, user_name=alice)
    for path in ["/etc/passwd", "memories/a.md", "/memories/../etc/passwd", "/memories/a/../../x", "/memoriesX/a.md",
                 "//memories/a.md", "/memories/..", "../memories/a.md", "/memories/../memories/a.md"]:
        for command in ({"command": "create", "path": path, "file_text": "x"}, {"command": "view", "path": path},
                        {"command": "delete", "path": path},
                        {"command": "rename", "old_path": path, "new_path": "/memories/b.md"},
                        {"command": "rename", "old_path": "/memories/b.md", "new_path": path}):
            message = await fails(tool, command)
            assert message.startswith("Path must start with /memories") or "would escape /memories" in message, path
    assert await engine.count_memory(user_name=alice) == 0


@pytest.mark.asyncio(loop_scope="module")
async def test_the_documented_errors(engine: ReMe, alice: str) -> None:
    tool = ReMeMemoryTool(engine, user_name=alice)
    await tool.call({"command": "create", "path": "/memories/a.md", "file_text": "tea\ntea\n"})
    assert await fails(tool, {"command": "create", "path": "/memories/a.md", "file_text": ""}) == \
        "File /memories/a.md already exists"
    assert await fails(tool, {"command": "view", "path": "/memories/no.md"}) == \
        "The path /memories/no.md does not exist. Please provide a valid path."
    assert await fails(tool, {"command": "str_replace", "path": "/memories", "old_str": "a", "new_str": "b"}) == \
        "The path /memories is not a file."
    assert await fails(tool, {"command": "str_replace", "path": "/memories/a.md", "old_str": "tea", "new_str": ""}) \
        == "No replacement was performed. Multiple occurrences of old_str `tea` in lines: 1, 2. Please ensure it is unique"
    assert await fails(tool, {"command": "insert", "path": "/memories/a.md", "insert_line": 3, "insert_text": "x"}) \
        == "Invalid `insert_line` parameter: 3. It should be within the range [0, 2]."
    assert await fails(tool, {"command": "delete", "path": "/memories/"}) == "Cannot delete the /memories directory itself"
    assert await fails(tool, {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}) == \
        "Cannot rename the /memories directory itself"
    assert await fails(tool, {"command": "rename", "old_path": "/memories/no", "new_path": "/memories/x"}) == \
        "The path /memories/no does not exist"
    assert "is a file, not a directory" in await fails(
        tool, {"command": "create", "path": "/memories/a.md/b.md", "file_text": ""})
    for bad in ("/memories/a\x00b", "/memories/a\nb.md", "/memories/" + "x" * 256):
        await fails(tool, {"command": "create", "path": bad, "file_text": "x"})
    await fails(tool, {"command": "create", "path": "/memories/nul.md", "file_text": "a\x00b"})
    assert await engine.count_memory(user_name=alice) == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_symlinks_lead_nowhere_only_names_exist(engine: ReMe, alice: str, tmp_path: Path) -> None:
    """The SDK's tool refuses a symlink out of its folder; here nothing is on disk, so a path
    through a "link" is a name in the user's tree and nothing outside is read or written."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the secret", encoding="utf-8")
    sdk = BetaLocalFilesystemMemoryTool(str(tmp_path / "sdk"))
    os.symlink(secret.parent, sdk.memory_root / "link")
    with pytest.raises(ToolError, match="escape /memories directory"):
        sdk.call({"command": "view", "path": "/memories/link/secret.txt"})
    (Path(engine.config.working_dir) / "link").symlink_to(secret.parent)  # even beside the store: not a path
    tool = ReMeMemoryTool(engine, user_name=alice)
    assert "does not exist" in await fails(tool, {"command": "view", "path": "/memories/link/secret.txt"})
    await tool.call({"command": "create", "path": "/memories/link/secret.txt", "file_text": "overwritten?"})
    await tool.call({"command": "delete", "path": "/memories/link"})
    assert secret.read_text(encoding="utf-8") == "the secret" and os.listdir(secret.parent) == ["secret.txt"]


@pytest.mark.asyncio(loop_scope="module")
async def test_two_users_never_see_each_others_tree(engine: ReMe, alice: str, bob: str) -> None:
    alices, bobs = ReMeMemoryTool(engine, user_name=alice), ReMeMemoryTool(engine, user_name=bob)
    await alices.call({"command": "create", "path": "/memories/tea.md", "file_text": "Alice loves green tea\n"})
    assert "does not exist" in await fails(bobs, {"command": "view", "path": "/memories/tea.md"})
    for command in ({"command": "str_replace", "path": "/memories/tea.md", "old_str": "green", "new_str": "black"},
                    {"command": "insert", "path": "/memories/tea.md", "insert_line": 0, "insert_text": "x"},
                    {"command": "delete", "path": "/memories/tea.md"},
                    {"command": "rename", "old_path": "/memories/tea.md", "new_path": "/memories/mine.md"}):
        assert "does not exist" in await fails(bobs, command)
    assert (await bobs.call({"command": "view", "path": "/memories"})).endswith("\n0B\t/memories")
    await bobs.call({"command": "create", "path": "/memories/tea.md", "file_text": "Bob drinks coffee\n"})
    assert "green tea" in await alices.call({"command": "view", "path": "/memories/tea.md"})
    assert "coffee" in await bobs.call({"command": "view", "path": "/memories/tea.md"})
    assert [h.node.memory_target for h in await engine.search_memory("green tea", user_name=bob)] == [bob]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_huge_file_is_refused_and_an_edit_past_the_limit_changes_nothing(engine: ReMe, alice: str) -> None:
    tool = ReMeMemoryTool(engine, user_name=alice)
    assert "holds at most" in await fails(tool, {"command": "create", "path": "/memories/big.md",
                                                 "file_text": "x" * 10_000_000})
    text = "y" * (MAX_FILE_CHARS - 4) + "END"
    await tool.call({"command": "create", "path": "/memories/big.md", "file_text": text})
    for command in ({"command": "str_replace", "path": "/memories/big.md", "old_str": "END", "new_str": "FINAL"},
                    {"command": "insert", "path": "/memories/big.md", "insert_line": 0, "insert_text": "zz"}):
        assert "Nothing was changed" in await fails(tool, command)
    shown = await tool.call({"command": "view", "path": "/memories/big.md"})
    assert shown.endswith("\t" + text)
    assert await tool.history("/memories/big.md") == []


@pytest.mark.asyncio(loop_scope="module")
async def test_every_edit_is_kept_in_history_and_files_are_searchable(engine: ReMe, alice: str) -> None:
    tool = ReMeMemoryTool(engine, user_name=alice)
    await tool.call({"command": "create", "path": "/memories/prefs.md", "file_text": "- likes tea\n"})
    await tool.call({"command": "str_replace", "path": "/memories/prefs.md", "old_str": "tea", "new_str": "green tea"})
    await tool.call({"command": "insert", "path": "/memories/prefs.md", "insert_line": 1, "insert_text": "- aisle seat"})
    await tool.call({"command": "rename", "old_path": "/memories/prefs.md", "new_path": "/memories/user/prefs.md"})
    versions = await tool.history("/memories/user/prefs.md")
    assert [v.node.content for v in versions] == ["/memories/prefs.md\n- likes tea\n",
                                                  "/memories/prefs.md\n- likes green tea\n",
                                                  "/memories/prefs.md\n- likes green tea\n- aisle seat\n"]
    (hit,) = await engine.search_memory("aisle seat", user_name=alice, filters={"author": "claude-memory-tool"})
    assert hit.node.content == "/memories/user/prefs.md\n- likes green tea\n- aisle seat\n"
    await tool.call({"command": "delete", "path": "/memories/user"})
    assert (await engine.history(hit.node.memory_id, user_name=alice))[-1].event == "DELETE"


async def test_close_and_reopen_keeps_the_tree(tmp_path: Path, alice: str) -> None:
    async with ReMe(working_dir=tmp_path, embedding={"backend": "hash"}) as reme:
        await ReMeMemoryTool(reme, user_name=alice).call(
            {"command": "create", "path": "/memories/notes/a.md", "file_text": "kept\n"})
    async with ReMe(working_dir=tmp_path, embedding={"backend": "hash"}) as reme:
        tool = ReMeMemoryTool(reme, user_name=alice)
        assert (await tool.call({"command": "view", "path": "/memories/notes/a.md"})).endswith("1\tkept\n     2\t")


@pytest.mark.asyncio(loop_scope="module")
async def test_a_file_whose_path_differs_in_case_only_is_its_own(engine: ReMe, alice: str) -> None:
    tool = ReMeMemoryTool(engine, user_name=alice)
    await engine.add_memory("/memories/c.md\nsame", user_name=alice)  # a memory holding the very text
    for path in ("/memories/a.md", "/memories/A.md", "/memories/c.md"):
        await tool.call({"command": "create", "path": path, "file_text": "same"})
    await tool.call({"command": "str_replace", "path": "/memories/A.md", "old_str": "same", "new_str": "other"})
    assert (await tool.call({"command": "view", "path": "/memories/a.md"})).endswith("1\tsame")
    assert (await tool.call({"command": "view", "path": "/memories/c.md"})).endswith("1\tsame")
