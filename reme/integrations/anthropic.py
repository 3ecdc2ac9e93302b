"""Claude's memory tool (tool type `memory_20250818`): `ReMeMemoryTool`, the client-side handler
of its commands (`view`, `create`, `str_replace`, `insert`, `delete`, `rename`) over a tree of
files under `/memories` kept in ReMe, one tree per user (extra `anthropic`).

>>> tool = ReMeMemoryTool(reme, user_name="alice")
>>> runner = client.beta.messages.tool_runner(model=..., max_tokens=1024, messages=[...], tools=[tool])
>>> final = await runner.until_done()

It subclasses the SDK's `BetaAsyncAbstractMemoryTool` (`ReMeMemoryToolSync`: the sync
`BetaAbstractMemoryTool` over a `ReMeSync`), so the SDK's tool runner dispatches to it. Each
file is one personal memory of the user (author `claude-memory-tool`, its path in
`metadata.claude_memory`, its content the path's line then the file's text): an edit or a rename
is an update (same id, the old text kept in `ReMe.history`), a delete keeps the last state there
too, and the user's `search_memory` / `retrieve_memory` find the files. Results and error
messages are the SDK's own `BetaLocalFilesystemMemoryTool`'s (tested against it command for
command), with these differences:
- nothing is on disk: a path is a name in the user's tree, so `..` past `/memories`, another
  user's tree and symlinks are out of reach (`..` inside the tree is resolved as the SDK does);
- a directory exists while it holds a file (as in git), and its size is its files' bytes;
- a file holds at most `MAX_FILE_CHARS` characters (an edit past that changes nothing); a path
  is at most `MAX_PATH_CHARS` characters, 255 bytes a name, without control characters;
- renaming or deleting a directory is one write per file, each atomic.
"""

from __future__ import annotations

import asyncio
import posixpath
import uuid
import weakref
from typing import Any, Iterable

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (BetaMemoryTool20250818Command, BetaMemoryTool20250818CreateCommand,
                                  BetaMemoryTool20250818DeleteCommand, BetaMemoryTool20250818InsertCommand,
                                  BetaMemoryTool20250818RenameCommand, BetaMemoryTool20250818StrReplaceCommand,
                                  BetaMemoryTool20250818ViewCommand)

from reme.errors import InvalidInputError, MemoryNotFoundError
from reme.reme import ReMe, ReMeSync
from reme.schema import MAX_CONTENT_CHARS, MAX_LIMIT, MemoryNode, MemoryType, MemoryVersion

ROOT = "/memories"
AUTHOR, TAG = "claude-memory-tool", "memory-file"
KEY = "claude_memory"
"""The metadata key of a file's memory: {"path": "/memories/...", "dirs": [its directories]}."""
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255
MAX_FILE_CHARS = MAX_CONTENT_CHARS - MAX_PATH_CHARS - 64
"""Longest file: a memory's content holds the path's line, then the text."""
LINE_NUMBER_WIDTH = 6
_locks: "weakref.WeakKeyDictionary[ReMe, dict[str, asyncio.Lock]]" = weakref.WeakKeyDictionary()


def resolve(path: Any) -> str:
    """`path` as the file's name in the tree ("/memories/a/b.md"), `..` and `.` resolved as the
    SDK resolves them; ToolError for a path outside `/memories` or one that cannot be a name."""
    if not isinstance(path, str) or not path.startswith(ROOT):
        raise ToolError(f"Path must start with /memories, got: {path}")
    rest = path[len(ROOT):]
    if rest and not rest.startswith("/"):
        raise ToolError(f"Path {path} would escape /memories directory")
    parts: list[str] = []
    for part in rest.split("/"):
        if part == "..":
            if not parts:
                raise ToolError(f"Path {path} would escape /memories directory")
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise ToolError(f"Path {path!r} holds a control character")
    if any(len(p.encode("utf-8", "replace")) > MAX_NAME_BYTES for p in parts) or len(path) > MAX_PATH_CHARS:
        raise ToolError(f"Path {path[:200]} is too long: at most {MAX_NAME_BYTES} bytes a name, "
                        f"{MAX_PATH_CHARS} characters in all")
    return "/".join([ROOT, *parts])


def _dirs(path: str) -> list[str]:
    """The directories holding `path`, from `/memories` down."""
    out, parent = [], posixpath.dirname(path)
    while parent.startswith(ROOT):
        out.append(parent)
        parent = posixpath.dirname(parent)
    return out[::-1]


def _text(node: MemoryNode) -> str:
    return node.content.split("\n", 1)[1]


def _path(node: MemoryNode) -> str:
    return str(node.metadata[KEY]["path"])


def _size(n: int) -> str:
    """Bytes as the SDK shows them (4K, 1.5K, 12B)."""
    if n == 0:
        return "0B"
    i = min((n.bit_length() - 1) // 10, 3)
    size = n / 1024 ** i
    return f"{int(size) if size == int(size) else f'{size:.1f}'}{'BKMG'[i]}"


def _numbered(lines: Iterable[str], start: int) -> str:
    return "\n".join(f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines))


class ReMeMemoryTool(BetaAsyncAbstractMemoryTool):  # type: ignore[misc, unused-ignore]  # Any without anthropic
    """Claude's memory tool over one user's tree of files in ReMe. The `ReMe` belongs to the
    caller, who opens and closes it; commands of one user in one process run one at a time."""

    def __init__(self, reme: ReMe, *, user_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(user_name, str) or not user_name.strip():
            raise InvalidInputError("the memory tool needs the user_name whose tree it reads and writes")
        self.reme, self.user_name = reme, user_name

    @property
    def _lock(self) -> asyncio.Lock:
        return _locks.setdefault(self.reme, {}).setdefault(self.user_name, asyncio.Lock())

    async def execute(self, command: BetaMemoryTool20250818Command) -> str:
        async with self._lock:
            try:
                return str(await super().execute(command))
            except InvalidInputError as exc:  # text ReMe will not store (a NUL, a lone surrogate)
                raise ToolError(str(exc)) from None

    # -- reading the tree ------------------------------------------------------------------------
    async def _files(self, where: dict[str, Any]) -> list[MemoryNode]:
        nodes: list[MemoryNode] = []
        cursor: str | None = None
        while True:
            page = await self.reme.list_memory(user_name=self.user_name, filters={"author": AUTHOR, **where},
                                               limit=MAX_LIMIT, cursor=cursor, sort_key="time_created",
                                               direction="asc")
            nodes += page.nodes
            cursor = page.next_cursor
            if cursor is None:
                return nodes

    async def _file(self, path: str) -> MemoryNode | None:
        found = await self._files({f"metadata.{KEY}.path": path})
        return found[0] if found else None

    async def _under(self, directory: str) -> list[MemoryNode]:
        return await self._files({f"metadata.{KEY}.dirs": {"any": [directory]}})

    async def _exists(self, path: str) -> bool:
        return path == ROOT or await self._file(path) is not None or bool(await self._under(path))

    async def _file_or_error(self, path: str, given: str) -> MemoryNode:
        node = await self._file(path)
        if node is None:
            if path == ROOT or await self._under(path):
                raise ToolError(f"The path {given} is not a file.")
            raise ToolError(f"The path {given} does not exist. Please provide a valid path.")
        return node

    async def _parents_are_directories(self, path: str) -> None:
        for parent in _dirs(path)[1:]:
            if await self._file(parent) is not None:
                raise ToolError(f"The path {parent} is a file, not a directory")

    # -- writing ---------------------------------------------------------------------------------
    @staticmethod
    def _fields(path: str, text: str, head: str | None = None) -> dict[str, Any]:
        if len(text) > MAX_FILE_CHARS:
            raise ToolError(f"File {path} would be {len(text)} characters long; a memory file holds at most "
                            f"{MAX_FILE_CHARS}. Nothing was changed.")
        return {"content": f"{head or path}\n{text}", "metadata": {KEY: {"path": path, "dirs": _dirs(path)}}}

    async def _write(self, node: MemoryNode, text: str, path: str | None = None) -> None:
        await self.reme.update_memory(node.memory_id, user_name=self.user_name,
                                      **self._fields(path or _path(node), text))

    async def _add(self, path: str, text: str) -> None:
        fields = self._fields(path, text)
        stored = await self.reme.add_memory(fields["content"], user_name=self.user_name, author=AUTHOR,
                                            metadata=fields["metadata"], tags=[TAG])
        if stored.metadata.get(KEY) != fields["metadata"][KEY]:
            # ReMe keeps one memory per text (case and spacing aside): this path differs from a
            # stored one in case only, or a memory of the user holds this very text. The id in the
            # path's line makes the text this file's own.
            memory_id = str(uuid.uuid4())
            await self.reme.add_memories([MemoryNode(
                memory_id=memory_id, memory_type=MemoryType.PERSONAL, memory_target=self.user_name, author=AUTHOR, tags=[TAG],
                **self._fields(path, text, f"{path} [{memory_id}]"))])

    # -- the commands ----------------------------------------------------------------------------
    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        path = resolve(command.path)
        node = None if path == ROOT else await self._file(path)
        if node is not None:
            lines = _text(node).split("\n")
            start = 1
            if command.view_range and len(command.view_range) == 2:
                first = max(1, command.view_range[0]) - 1
                last = len(lines) if command.view_range[1] == -1 else command.view_range[1]
                lines, start = lines[first:last], first + 1
            return f"Here's the content of {command.path} with line numbers:\n" + _numbered(lines, start)
        files = {_path(n)[len(path) + 1:]: len(_text(n).encode()) for n in await self._under(path)}
        if not files and path != ROOT:
            raise ToolError(f"The path {command.path} does not exist. Please provide a valid path.")
        sizes: dict[str, int] = {}
        for rel, size in files.items():
            names = rel.split("/")
            for depth in range(1, min(len(names), 2) + 1):
                if names[depth - 1].startswith("."):  # hidden, and so is what it holds
                    break
                key = "/".join(names[:depth]) + ("/" if depth < len(names) else "")
                sizes[key] = sizes.get(key, 0) + size
        lines = [f"{_size(sum(files.values()))}\t{command.path}"]
        lines += [f"{_size(sizes[k])}\t{command.path}/{k}" for k in sorted(sizes, key=lambda k: k.rstrip("/").split("/"))]
        return (f"Here're the files and directories up to 2 levels deep in {command.path}, excluding hidden items:\n"
                + "\n".join(lines))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        path = resolve(command.path)
        if await self._exists(path):
            raise ToolError(f"File {command.path} already exists")
        await self._parents_are_directories(path)
        await self._add(path, command.file_text)
        return f"File created successfully at: {command.path}"

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        node = await self._file_or_error(resolve(command.path), command.path)
        content, old = _text(node), command.old_str
        count = content.count(old)
        if count == 0:
            raise ToolError(f"No replacement was performed, old_str `{old}` did not appear verbatim in {command.path}.")
        if count > 1:
            lines, pos = [], content.find(old)
            while pos != -1:
                lines.append(content[:pos].count("\n") + 1)
                pos = content.find(old, pos + 1)
            raise ToolError(f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
                            f"{', '.join(map(str, lines))}. Please ensure it is unique")
        changed = content[:content.find(old)].count("\n")
        new_content = content.replace(old, command.new_str)
        await self._write(node, new_content)
        new_lines = new_content.split("\n")
        first, last = max(0, changed - 2), min(len(new_lines), changed + 3)
        return ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                + _numbered(new_lines[first:last], first + 1))

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        node = await self._file_or_error(resolve(command.path), command.path)
        lines = _text(node).split("\n")
        if lines[-1] == "":
            lines.pop()
        if command.insert_line < 0 or command.insert_line > len(lines):
            raise ToolError(f"Invalid `insert_line` parameter: {command.insert_line}. "
                            f"It should be within the range [0, {len(lines)}].")
        lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
        new_content = "\n".join(lines)
        await self._write(node, new_content if new_content.endswith("\n") else new_content + "\n")
        return f"The file {command.path} has been edited."

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        path = resolve(command.path)
        if path == ROOT:
            raise ToolError("Cannot delete the /memories directory itself")
        node = await self._file(path)
        nodes = [node] if node is not None else await self._under(path)
        if not nodes:
            raise ToolError(f"The path {command.path} does not exist")
        for n in nodes:
            await self.reme.delete_memory(n.memory_id, user_name=self.user_name)
        return f"Successfully deleted {command.path}"

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old, new = resolve(command.old_path), resolve(command.new_path)
        if old == ROOT:
            raise ToolError("Cannot rename the /memories directory itself")
        if await self._exists(new):
            raise ToolError(f"The destination {command.new_path} already exists")
        node = await self._file(old)
        nodes = [node] if node is not None else await self._under(old)
        if not nodes:
            raise ToolError(f"The path {command.old_path} does not exist")
        if new.startswith(old + "/"):
            raise ToolError(f"Cannot move {command.old_path} into itself ({command.new_path})")
        await self._parents_are_directories(new)
        for n in nodes:
            await self._write(n, _text(n), new + _path(n)[len(old):])
        return f"Successfully renamed {command.old_path} to {command.new_path}"

    async def clear_all_memory(self) -> str:
        """Delete every file of the user's tree (each kept in `ReMe.history`)."""
        async with self._lock:
            for n in await self._under(ROOT):
                await self.reme.delete_memory(n.memory_id, user_name=self.user_name)
        return "All memory cleared"

    # -- beyond the tool -------------------------------------------------------------------------
    async def history(self, path: str) -> list[MemoryVersion]:
        """Earlier states of the file now at `path` (oldest first), across edits and renames."""
        node = await self._file(resolve(path))
        if node is None:
            raise MemoryNotFoundError(f"no memory file {path}")
        return await self.reme.history(node.memory_id, user_name=self.user_name)


class ReMeMemoryToolSync(BetaAbstractMemoryTool):  # type: ignore[misc, unused-ignore]  # Any without anthropic
    """`ReMeMemoryTool` for the sync client (`Anthropic().beta.messages.tool_runner`), over a
    `ReMeSync`: each command runs on the `ReMeSync`'s own loop."""

    def __init__(self, reme: ReMeSync, *, user_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reme = reme
        self._tool = ReMeMemoryTool(reme._face, user_name=user_name)

    def execute(self, command: BetaMemoryTool20250818Command) -> str:
        return self.reme._run(self._tool.execute(command))

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self.execute(command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self.execute(command)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self.execute(command)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self.execute(command)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self.execute(command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self.execute(command)

    def clear_all_memory(self) -> str:
        return self.reme._run(self._tool.clear_all_memory())

    def history(self, path: str) -> list[MemoryVersion]:
        return self.reme._run(self._tool.history(path))
