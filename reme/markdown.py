"""Memory as Markdown: the file format behind `ReMe.export_markdown` / `sync_markdown` (`reme md
export` / `reme md sync`). Reading and writing the store is the facade's; this module only
renders memories as a tree of files, reads an edited tree back and plans what changed.

A tree holds one target's memories of its main type:

- a user: `MEMORY.md` (personal facts and preferences) and `journal/YYYY-MM-DD.md` (personal
  memories tagged `event`, by the UTC day of their `message_time`);
- a task: `LESSONS.md` (procedural lessons); a tool: `TOOL.md` (its guideline).

Each memory is one list item (`- text`, further lines indented by two spaces) that ends with a
marker, `<!-- reme:KEY -->` (KEY: the first characters of its id, invisible when the Markdown
is rendered). Each file starts with front matter (YAML whose values are JSON) naming the target
and mapping every KEY in it to the memory's full id, the version exported and a hash of the text
exported. Sync compares each item with that: same text, nothing to do; other text, an update
(unless the store changed since: a conflict); an item gone, a delete (the same); an item without
a marker, a new memory. What cannot be read without guessing (a marker twice, a broken marker,
text outside a list item) is reported, never guessed at.

Only stdlib, the schema and the errors are imported: the HTTP client may use it too."""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, time, timezone
from hashlib import sha256
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from pydantic import BaseModel, Field, ValidationError

from reme.errors import InvalidInputError, describe
from reme.schema import KIND_TYPES, MemoryNode, MemoryType, Scope, normalize_text, parse_json

FORMAT = "reme-markdown/1"
ROOT_FILES = {"user": "MEMORY.md", "task": "LESSONS.md", "tool": "TOOL.md"}
JOURNAL_DIR = "journal"
EVENT_TAG = "event"
"""Personal memories with this tag (the personal summarizer's `kind` of an event) go to the journal."""
KEY_CHARS = 8
"""A marker's key is the shortest prefix of the id's hex digits, at least this long, unique in the tree."""
MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest Markdown file read back."""
HEADINGS = {"user": "Memories of user", "task": "Lessons of task", "tool": "Guideline of tool"}

_MARKER = re.compile(r"[ \t]*<!--[ \t]*reme:[ \t]*([0-9A-Fa-f-]{4,36})[ \t]*-->[ \t]*\Z")
_WHOLE_MARKER = re.compile(r"<!--[ \t]*reme:[ \t]*[0-9A-Fa-f-]{4,36}[ \t]*-->")
"""A marker as written, anywhere in an item (`_MARKER` is one at its end)."""
_BROKEN = re.compile(r"reme:[ \t]*[0-9A-Fa-f]{8}")
"""What is left of a marker an edit broke (`<!- reme:ab12cd34 -->`, `reme:ab12cd34 -->`): looked
for only in new or edited items, whose text is then reported instead of stored."""
_LITERAL_COMMENT = re.compile(r"<\\+!--.*?(?:-->|\Z)", re.DOTALL)
_LOOSE_KEY = re.compile(r"reme:[ \t]*([0-9A-Fa-f-]{8,36})")
_ITEM = re.compile(r"([-*+]|\d{1,9}[.)])(?: (.*))?\Z", re.DOTALL)
_RULE = re.compile(r"(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,}")
_JOURNAL_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})\.md\Z")
_ENTRY = re.compile(r"[ \t]+(\S+):[ \t]*(\{.*\})[ \t]*\Z")
_FIELD = re.compile(r"([A-Za-z_]+):[ \t]*(.*?)[ \t]*\Z")


# -- results -------------------------------------------------------------------------------------
class MarkdownIssue(BaseModel):
    """A line (or a file, `line` 0) of an edited tree that sync did not apply, and why."""

    file: str
    line: int = 0
    reason: str
    text: str = ""
    memory_id: str | None = None


class MarkdownSyncResult(BaseModel):
    """What `sync_markdown` found in an edited tree: memories added, updated (their new states)
    and deleted (as they were), and the items it would not apply: `conflicts` (edited or removed
    here, changed in the store since the export) and `ambiguous` (not readable without guessing).

    `applied` says whether the changes listed were written: False for a dry run, and for a sync
    blocked by a conflict or an ambiguous item (nothing is written then unless `force=True`,
    which writes the clear changes and leaves the reported items as the store has them)."""

    added: list[MemoryNode] = Field(default_factory=list)
    updated: list[MemoryNode] = Field(default_factory=list)
    deleted: list[MemoryNode] = Field(default_factory=list)
    conflicts: list[MarkdownIssue] = Field(default_factory=list)
    ambiguous: list[MarkdownIssue] = Field(default_factory=list)
    unchanged: int = 0
    dry_run: bool = False
    applied: bool = False
    rewritten: bool = False
    """Whether the tree was written again from the store (after a sync that reported nothing)."""

    @property
    def blocked(self) -> bool:
        """Whether something was reported (a conflict or an ambiguous item)."""
        return bool(self.conflicts or self.ambiguous)

    @property
    def changes(self) -> int:
        return len(self.added) + len(self.updated) + len(self.deleted)


class MarkdownExport(BaseModel):
    """What `export_markdown` wrote: the tree's directory, its files (relative, `/`-separated)
    and how many memories they hold."""

    directory: str
    files: list[str]
    memories: int


class MarkdownTree(BaseModel):
    """A tree's files as text, by relative path: how the service and its client pass a tree."""

    files: dict[str, str] = Field(default_factory=dict)


class MarkdownExportReply(MarkdownTree):
    export: MarkdownExport


class MarkdownSyncReply(MarkdownTree):
    result: MarkdownSyncResult


# -- text ----------------------------------------------------------------------------------------
def canonical(text: str) -> str:
    """A memory's text as the tree keeps it: `\\n` line ends, no trailing spaces on a line, no
    blank lines or spaces around it. Two texts with the same canonical form are the same edit."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def text_hash(text: str) -> str:
    return sha256(canonical(text).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _escape(text: str) -> str:
    """`<!--` in a memory becomes `<\\!--` (Markdown shows it as `<!--`), so only markers open a
    comment; backslashes already there get one more, so reading back is exact."""
    return re.sub(r"<(\\*)!--", lambda m: "<\\" + m.group(1) + "!--", text)


def _unescape(text: str) -> str:
    return re.sub(r"<\\(\\*)!--", lambda m: "<" + m.group(1) + "!--", text)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- rendering -----------------------------------------------------------------------------------
def main_type(scope: Scope) -> MemoryType:
    return KIND_TYPES[scope.kind][0]


def file_of(node: MemoryNode) -> str:
    """Where a memory goes in its target's tree."""
    if node.target_kind == "user" and EVENT_TAG in node.tags:
        return f"{JOURNAL_DIR}/{utc_day(node.message_time).isoformat()}.md"
    return ROOT_FILES[node.target_kind]


def utc_day(when: datetime) -> date:
    """The UTC day of `when`; a time whose UTC day lies before year 1 or after 9999 (the first or
    last hours of the calendar in another timezone) is in its first or last day."""
    try:
        return when.astimezone(timezone.utc).date()
    except OverflowError:
        return date.min if when.year == 1 else date.max


def _keys(ids: Iterable[str]) -> dict[str, str]:
    """id -> the shortest prefix of its hex digits (at least KEY_CHARS) no other id shares: one
    longer than what it shares with its neighbours in sorted order."""
    ordered = sorted((uuid.UUID(i).hex, i) for i in ids)

    def shared(a: str, b: str) -> int:
        return next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), len(a))

    out: dict[str, str] = {}
    for i, (h, mid) in enumerate(ordered):
        near = [ordered[j][0] for j in (i - 1, i + 1) if 0 <= j < len(ordered)]
        out[mid] = h[:max([KEY_CHARS] + [shared(h, other) + 1 for other in near])]
    return out


def _item(text: str, key: str) -> str:
    lines = _escape(canonical(text)).split("\n")
    body = [f"- {lines[0]}"] + [f"  {line}" if line else "" for line in lines[1:]]
    body[-1] += f" <!-- reme:{key} -->"
    return "\n".join(body)


def _front_matter(scope: Scope, exported: datetime, entries: Mapping[str, MemoryNode], keys: Mapping[str, str],
                  extra: Sequence[tuple[str, object]] = ()) -> list[str]:
    lines = ["---",
             "# ReMe memories as Markdown: edit, add (\"- text\") or remove items, then `reme md sync`.",
             "# Keep each item's <!-- reme:... --> marker; the entries below say what was exported.",
             f"format: {json.dumps(FORMAT)}",
             f"target_kind: {json.dumps(scope.kind)}",
             f"target_name: {json.dumps(scope.name, ensure_ascii=False)}",
             f"memory_type: {json.dumps(main_type(scope).value)}",
             f"exported_at: {json.dumps(exported.isoformat())}"]
    lines += [f"{name}: {json.dumps(value, ensure_ascii=False)}" for name, value in extra]
    lines.append("memories:" + ("" if entries else " {}"))
    for mid, node in entries.items():
        entry = {"id": mid, "version": node.version, "sha": text_hash(node.content)}
        lines.append(f"  {keys[mid]}: {json.dumps(entry)}")
    lines.append("---")
    return lines


def render(nodes: Sequence[MemoryNode], scope: Scope, exported: datetime) -> dict[str, str]:
    """The tree for `nodes` (all of `scope`, its main type): relative path -> file text."""
    keys = _keys(n.memory_id for n in nodes)
    by_file: dict[str, list[MemoryNode]] = {ROOT_FILES[scope.kind]: []}
    for node in nodes:
        by_file.setdefault(file_of(node), []).append(node)
    root = ROOT_FILES[scope.kind]
    journals = sorted(p for p in by_file if p != root)
    out: dict[str, str] = {}
    for path, members in by_file.items():
        in_journal = path != root
        members.sort(key=lambda n: ((n.message_time if in_journal else n.time_created), n.memory_id))
        entries = {n.memory_id: n for n in members}
        if in_journal:
            day = path[len(JOURNAL_DIR) + 1:-3]
            head = _front_matter(scope, exported, entries, keys, [("date", day)]) + ["", f"# {day}"]
        else:
            head = _front_matter(scope, exported, entries, keys, [("files", journals)])
            head += ["", f"# {HEADINGS[scope.kind]} {_one_line(scope.name)}"]
        out[path] = "\n".join(head + [""] + [_item(n.content, keys[n.memory_id]) for n in members]) + "\n"
    return out


# -- reading -------------------------------------------------------------------------------------
@dataclass
class Entry:
    key: str
    memory_id: str
    version: int
    sha: str
    file: str


@dataclass
class Item:
    file: str
    line: int
    raw: str
    key: str | None = None
    text: str = ""
    problem: str | None = None
    broken: bool = False
    """Whether what is left of a marker shows outside a literal (`<\\!--`) comment."""


@dataclass
class MarkdownFile:
    path: str
    scope: Scope | None = None
    day: date | None = None
    files: list[str] | None = None
    entries: list[Entry] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    stray: list[MarkdownIssue] = field(default_factory=list)


@dataclass
class Tree:
    directory: Path
    files: list[MarkdownFile]

    @property
    def scope(self) -> Scope | None:
        """The target the tree's front matter names (None: no file has front matter);
        `InvalidInputError` when files name different targets."""
        scopes = {f.scope for f in self.files if f.scope is not None}
        if len(scopes) > 1:
            named = ", ".join(sorted(str(s) for s in scopes))
            raise InvalidInputError(f"{self.directory} mixes the memories of several targets ({named}): "
                                    "a tree holds one target's")
        return next(iter(scopes), None)

    @property
    def root(self) -> MarkdownFile | None:
        return next((f for f in self.files if f.path in ROOT_FILES.values()), None)


def _bad(path: str, line: int, what: str) -> InvalidInputError:
    return InvalidInputError(f"{path}:{line}: {what}; fix the front matter (or export again)")


def _front(path: str, lines: list[str]) -> tuple[MarkdownFile, int]:
    """The file's front matter (when it starts with `---`) and the index of its first body line."""
    out = MarkdownFile(path)
    if not lines or lines[0].strip() != "---":
        return out, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise _bad(path, 1, "the front matter has no closing `---`")
    fields: dict[str, object] = {}
    in_memories = False
    for i in range(1, end):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        entry = _ENTRY.match(line) if in_memories else None
        if entry:
            try:
                value = parse_json(entry.group(2), "an entry")
                mid, version, sha = value["id"], value["version"], value["sha"]
                mid = str(uuid.UUID(mid))
                if not isinstance(version, int) or isinstance(version, bool) or version < 1 \
                        or not isinstance(sha, str):
                    raise ValueError
            except (ValueError, TypeError, KeyError, AttributeError):
                raise _bad(path, i + 1, "a memory entry is not {\"id\": UUID, \"version\": N, \"sha\": HASH}") from None
            out.entries.append(Entry(entry.group(1).lower(), mid, version, sha, path))
            continue
        match = _FIELD.match(line)
        if not match:
            raise _bad(path, i + 1, f"{line.strip()[:60]!r} is not `name: value`")
        name, raw = match.groups()
        in_memories = name == "memories"
        if in_memories and raw in ("", "{}"):
            continue
        try:
            fields[name] = parse_json(raw, name)
        except ValueError as exc:
            raise _bad(path, i + 1, str(exc)) from None
    if fields.get("format") != FORMAT:
        raise _bad(path, 2, f"format is {fields.get('format')!r}, not {FORMAT!r}")
    kind, name, mtype = fields.get("target_kind"), fields.get("target_name"), fields.get("memory_type")
    if kind not in ROOT_FILES or not isinstance(name, str) or not name.strip():
        raise _bad(path, 2, "target_kind (user, task or tool) and target_name are required")
    out.scope = Scope(str(kind), name.strip())
    if mtype != main_type(out.scope).value:
        raise _bad(path, 2, f"a {kind}'s tree holds {main_type(out.scope).value} memories, not {mtype!r}")
    files = fields.get("files")
    if files is not None:
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise _bad(path, 2, "files is a list of paths")
        out.files = list(files)
    return out, end + 1


def _dedent(line: str) -> str:
    if line.startswith("  "):
        return line[2:]
    return line[1:]


def parse(path: str, text: str) -> MarkdownFile:
    """One file of a tree: its front matter, its items and the lines that belong to no item."""
    lines = text.removeprefix("\ufeff").split("\n")
    out, start = _front(path, lines)
    journal = _JOURNAL_NAME.fullmatch(path.removeprefix(JOURNAL_DIR + "/")) if path.startswith(JOURNAL_DIR + "/") \
        else None
    if journal:
        try:
            out.day = date.fromisoformat(journal.group(1))
        except ValueError:
            raise InvalidInputError(f"{path}: not a date: journal files are named YYYY-MM-DD.md") from None
    current: list[str] | None = None
    first = blanks = 0

    def close() -> None:
        if current is not None:
            out.items.append(_read_item(path, first, "\n".join(current)))

    for number, line in enumerate(lines[start:], start + 1):
        item = _ITEM.match(line)
        if item:
            close()
            current, first, blanks = [item.group(2) or ""], number, 0
        elif not line.strip():
            blanks += 1
        elif line[0] in " \t" and current is not None:
            current += [""] * blanks + [_dedent(line)]
            blanks = 0
        elif line.startswith("#") or _RULE.fullmatch(line.rstrip()):
            close()
            current = None
        else:
            close()
            current = None
            out.stray.append(MarkdownIssue(file=path, line=number, text=line.strip()[:200],
                                           reason="text outside a list item: start a memory with `- `, "
                                                  "indent its further lines by two spaces"))
    close()
    return out


def _read_item(path: str, line: int, raw: str) -> Item:
    item = Item(path, line, raw)
    marker = _MARKER.search(raw)
    text = raw[:marker.start()] if marker else raw
    if marker:
        item.key = marker.group(1).replace("-", "").lower()
    if "<!--" in text:
        if _WHOLE_MARKER.search(text):
            item.problem = "two markers in one item" if marker else "a marker not at the end of its item"
        elif re.search(r"<!--[ \t]*reme:", text):
            item.problem = "a broken marker: restore it as <!-- reme:KEY --> at the item's end, or remove it"
        else:
            item.problem = "a broken marker or an HTML comment (write <\\!-- for a literal one)"
    item.text = canonical(_unescape(text))
    item.broken = bool(_BROKEN.search(_LITERAL_COMMENT.sub("", text)))
    return item


def directory_arg(value: object) -> Path:
    """A tree's directory argument: a string or a path, without NUL."""
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidInputError(f"directory must be a string or a Path, not {type(value).__name__}")
    if "\x00" in str(os.fspath(value)):
        raise InvalidInputError("directory must not contain NUL characters")
    return Path(value)


def tree_path(rel: str) -> bool:
    """Whether `rel` (relative, `/`-separated) names a file of a tree: a root file or a journal day."""
    return rel in ROOT_FILES.values() or (rel.startswith(JOURNAL_DIR + "/")
                                          and bool(_JOURNAL_NAME.fullmatch(rel[len(JOURNAL_DIR) + 1:])))


def tree_texts(directory: Path) -> dict[str, str]:
    """The text of each file of the tree under `directory` (root files, `journal/YYYY-MM-DD.md`),
    by relative path; nothing when it does not exist."""
    if not directory.exists():
        return {}
    if not directory.is_dir():
        raise InvalidInputError(f"{directory} is not a directory")
    candidates = [directory / name for name in sorted(set(ROOT_FILES.values()))]
    journal = directory / JOURNAL_DIR
    if journal.is_dir():
        candidates += sorted(journal.iterdir())
    out: dict[str, str] = {}
    for file in candidates:
        rel = file.relative_to(directory).as_posix()
        if not tree_path(rel) or not file.is_file():
            continue
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                raise InvalidInputError(f"{rel} is larger than {MAX_FILE_BYTES} bytes")
            with open(file, encoding="utf-8", newline=None) as handle:
                out[rel] = handle.read()
        except UnicodeDecodeError:
            raise InvalidInputError(f"{rel} is not UTF-8 text") from None
        except OSError as exc:
            raise InvalidInputError(f"cannot read {rel}: {exc.strerror or exc}") from None
    return out


def read_tree(directory: Path) -> Tree:
    """The tree under `directory`, parsed (a directory that does not exist is an empty tree)."""
    return Tree(directory, [parse(rel, text) for rel, text in tree_texts(directory).items()])


def _file_mode(target: Path) -> int:
    """The mode `target` keeps (its own, when it exists) or gets (what the umask gives a new file)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)  # reading the umask means setting it: put it straight back
        os.umask(umask)
        return 0o666 & ~umask


def write_tree(directory: Path, files: Mapping[str, str], stale: Iterable[str] = ()) -> None:
    """Write `files` under `directory` (each through a temporary file and a rename, so a file is
    never half written) and remove the `stale` ones a previous export wrote."""
    bad = [rel for rel in [*files, *stale] if not tree_path(rel)]
    if bad:
        raise InvalidInputError(f"{bad[0][:80]!r} is not a file of a Markdown tree ({', '.join(ROOT_FILES.values())} "
                                f"or {JOURNAL_DIR}/YYYY-MM-DD.md)")
    try:
        for rel, text in files.items():
            target = directory / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".reme-", suffix=".tmp")
            try:
                os.fchmod(fd, _file_mode(target))  # mkstemp's 0600 is a temporary file's, not the tree's
                with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                    handle.write(text)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        for rel in stale:
            if rel not in files:
                (directory / rel).unlink(missing_ok=True)
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"cannot write the Markdown tree at {directory}: "
                                f"{getattr(exc, 'strerror', None) or exc}") from None


# -- planning ------------------------------------------------------------------------------------
@dataclass
class Plan:
    """What an edited tree asks of the store: nodes to add, (old, new) replacements, deletions,
    and what is reported instead of applied. `where` says which item asked for each change."""

    adds: list[MemoryNode] = field(default_factory=list)
    updates: list[tuple[MemoryNode, MemoryNode]] = field(default_factory=list)
    deletes: list[MemoryNode] = field(default_factory=list)
    where: dict[str, str] = field(default_factory=dict)
    conflicts: list[MarkdownIssue] = field(default_factory=list)
    ambiguous: list[MarkdownIssue] = field(default_factory=list)
    unchanged: int = 0

    @property
    def empty(self) -> bool:
        return not (self.adds or self.updates or self.deletes or self.conflicts or self.ambiguous)

    def result(self, *, dry_run: bool, applied: bool) -> MarkdownSyncResult:
        return MarkdownSyncResult(added=self.adds, updated=[new for _, new in self.updates], deleted=self.deletes,
                                  conflicts=self.conflicts, ambiguous=self.ambiguous, unchanged=self.unchanged,
                                  dry_run=dry_run, applied=applied)


def _issue(item: Item, reason: str, memory_id: str | None = None) -> MarkdownIssue:
    return MarkdownIssue(file=item.file, line=item.line, reason=reason, text=item.raw[:500], memory_id=memory_id)


def plan(tree: Tree, scope: Scope, stored: Mapping[str, MemoryNode]) -> Plan:
    """Compare an edited tree of `scope` with the memories `stored` in it (by id, its main type).

    Per exported memory (an entry of some file's front matter): its item unchanged (the hash of
    its text matches), nothing; edited, an update; gone, a delete. Either way, when the store
    changed it since the export (another version, or it is gone), a conflict instead. An item
    without a marker is a new memory (skipped when the target already holds that text)."""
    out = Plan()
    entries: dict[str, Entry] = {}
    for file in tree.files:
        for entry in file.entries:
            seen = entries.setdefault(entry.key, entry)
            if (seen.memory_id, seen.version, seen.sha) != (entry.memory_id, entry.version, entry.sha):
                raise InvalidInputError(f"{entry.file} and {seen.file} list key {entry.key} differently in their "
                                        "front matter; export again")
        out.ambiguous += file.stray
    if tree.root is not None and tree.root.files is not None:
        present = {f.path for f in tree.files}
        for missing in sorted(set(tree.root.files) - present):
            out.ambiguous.append(MarkdownIssue(file=missing, reason="this exported file is gone: to delete its "
                                                                    "memories, remove their items instead; restore "
                                                                    "the file (or export again)"))
    by_id: dict[str, Entry] = {}
    for entry in entries.values():
        twin = by_id.setdefault(entry.memory_id, entry)
        if twin.key != entry.key:
            raise InvalidInputError(f"{entry.file} lists memory {entry.memory_id} under two keys ({twin.key}, "
                                    f"{entry.key}) in its front matter; export again")
    items: dict[str, list[Item]] = {}
    new: list[tuple[Item, MarkdownFile]] = []
    held: set[str] = set()
    """Keys named by a reported item: their memories are neither updated nor deleted."""

    def resolve(key: str) -> str | None:
        if key in entries:
            return key
        return next((e.key for mid, e in by_id.items() if len(key) >= KEY_CHARS and uuid.UUID(mid).hex.startswith(key)),
                    None)

    untied = bool(out.ambiguous)  # text outside items, a file gone: which memories they were is unknown

    def report(item: Item, reason: str) -> None:
        nonlocal untied
        out.ambiguous.append(_issue(item, reason))
        keys = {resolve(loose.replace("-", "").lower()) for loose in _LOOSE_KEY.findall(item.raw)}
        held.update(k for k in keys if k is not None)
        untied = untied or not keys or None in keys

    for file in tree.files:
        for item in file.items:
            if item.problem:
                report(item, item.problem)
            elif item.key is None and item.broken:
                report(item, "what looks like a broken marker: restore it as <!-- reme:KEY --> at the item's end, "
                             "or remove it")
            elif item.key is None:
                new.append((item, file))
            elif resolve(item.key) is None:
                report(item, f"marker reme:{item.key} is not in any front matter of this tree")
            else:
                items.setdefault(str(resolve(item.key)), []).append(item)
    for key, entry in entries.items():
        found = items.get(key, [])
        old = stored.get(entry.memory_id)
        if len(found) > 1:
            for item in found:
                out.ambiguous.append(_issue(item, f"marker reme:{key} is on {len(found)} items", entry.memory_id))
            continue
        if key in held:
            continue
        if not found:
            if old is None:
                continue  # deleted here and in the store: nothing left to do
            if untied:
                out.ambiguous.append(MarkdownIssue(file=entry.file, text=old.content[:500], memory_id=old.memory_id,
                                                   reason="its item is gone, but an item reported here may be it: "
                                                          "not deleted until those are fixed"))
                continue
            if old.version != entry.version:
                out.conflicts.append(MarkdownIssue(file=entry.file, reason=f"removed here, but the store changed it "
                                                   f"since the export (version {entry.version} -> {old.version})",
                                                   text=old.content[:500], memory_id=entry.memory_id))
                continue
            out.deletes.append(old)
            out.where[old.memory_id] = entry.file
            continue
        item = found[0]
        if text_hash(item.text) == entry.sha or (old is not None and item.text == canonical(old.content)):
            out.unchanged += 1
            continue
        if item.broken:
            out.ambiguous.append(_issue(item, "what looks like a broken marker in an edited item: restore it as "
                                              "<!-- reme:KEY --> at the item's end, or remove it", entry.memory_id))
            continue
        if not item.text:
            out.ambiguous.append(_issue(item, "an empty item: to delete a memory remove its whole item",
                                        entry.memory_id))
            continue
        if old is None:
            out.conflicts.append(_issue(item, "edited here, but it is no longer in the store (deleted since the "
                                              "export, or not this target's)", entry.memory_id))
            continue
        if old.version != entry.version:
            out.conflicts.append(_issue(item, f"edited here, and the store changed it since the export "
                                              f"(version {entry.version} -> {old.version})", entry.memory_id))
            continue
        try:
            out.updates.append((old, old.revised(content=item.text)))
        except ValidationError as exc:
            out.ambiguous.append(_issue(item, f"not a valid memory: {describe(exc)}", entry.memory_id))
            continue
        out.where[old.memory_id] = f"{item.file}:{item.line}"
    texts = {normalize_text(n.content) for n in stored.values()}
    for item, file in new:
        if not item.text:
            continue  # an empty bullet: nothing to add
        if normalize_text(item.text) in texts:
            out.unchanged += 1
            continue
        fields: dict[str, object] = dict(memory_type=main_type(scope), target_kind=scope.kind,
                                         memory_target=scope.name, content=item.text)
        if file.day is not None and scope.kind == "user":
            fields.update(tags=[EVENT_TAG], message_time=datetime.combine(file.day, time(), timezone.utc))
        try:
            node = MemoryNode.model_validate(fields)
        except ValidationError as exc:
            out.ambiguous.append(_issue(item, f"not a valid memory: {describe(exc)}"))
            continue
        texts.add(normalize_text(item.text))
        out.adds.append(node)
        out.where[node.memory_id] = f"{item.file}:{item.line}"
    return out


__all__ = ["MarkdownExport", "MarkdownExportReply", "MarkdownIssue", "MarkdownSyncReply", "MarkdownSyncResult",
           "MarkdownTree", "canonical", "directory_arg", "plan", "read_tree", "render", "tree_path", "tree_texts", "write_tree"]
