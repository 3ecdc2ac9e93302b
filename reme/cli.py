"""`reme`: the memory store from the command line.

Exit codes: 0 success, 1 unexpected failure, 2 usage or invalid input, 3 not found,
4 configuration error, 5 store error (for instance the directory is open elsewhere),
6 embedding or LLM failure.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import importlib
import importlib.util
import json
import shutil
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from reme import __version__
from reme.errors import (ConfigError, EmbeddingError, InvalidInputError, LLMError, NotFoundError, ReMeError,
                         StoreError)
from reme import markdown
from reme.access import json_line
from reme.config import ReMeConfig
from reme.embedding import LOADING_MODEL
from reme.reme import ReMe, file_in_the_way, working_dir_is_a_file
from reme.schema import MemoryNode, parse_json, plural
from reme.store import edge_root

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_CONFIG, EXIT_STORE, EXIT_MODEL = 0, 1, 2, 3, 4, 5, 6


def _json_arg(text: str) -> Any:
    try:
        return parse_json(text, "the argument")
    except ValueError as exc:  # not JSON, nested too deep, a lone surrogate: a usage error (exit 2)
        raise argparse.ArgumentTypeError(str(exc)) from None


def _scope_args(p: argparse.ArgumentParser, required: bool = False) -> None:
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("--user", dest="user_name", help="a user's memories")
    g.add_argument("--task", dest="task_name", help="a task's memories")
    g.add_argument("--tool", dest="tool_name", help="a tool's memories")


def _selection_args(p: argparse.ArgumentParser, with_filter: bool = True) -> None:
    """--type and, for reading commands, --filter: which memories of the scope a command sees."""
    p.add_argument("--type", dest="memory_type", help="personal, procedural, tool or history")
    if with_filter:
        p.add_argument("--filter", type=_json_arg, default=None, help='JSON filter, e.g. \'{"score": {"gte": 0.5}}\'')


class _OneLineCommands(argparse.HelpFormatter):
    """argparse measures the command names 2 columns short of where it prints them, so a long name
    (delete-all) pushes its help to the next line: measure them where they are printed."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction) and action.choices:
            longest = max(len(name) for name in action.choices) + self._current_indent + 2 * self._indent_increment
            self._action_max_length = max(self._action_max_length, longest)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--working-dir", "-w", help="where memories live (default: $REME_WORKING_DIR or .reme)")
    common.add_argument("--config", help="a JSON or TOML config file")
    common.add_argument("--embedding", choices=["local", "openai", "hash"], help="embedding backend")
    common.add_argument("--embedding-model", help="embedding model name or path")
    common.add_argument("--json", action="store_true", help="print JSON")
    common.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    common.add_argument("--wait", type=float, metavar="SECONDS",
                        help="wait up to SECONDS for a working directory another process has open (default 0)")

    parser = argparse.ArgumentParser(prog="reme", description="Typed long-term memory for AI agents.",
                                     formatter_class=_OneLineCommands)
    parser.add_argument("--version", action="version", version=f"reme {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("add", parents=[common], help="store a memory")
    p.add_argument("content")
    _scope_args(p, required=True)
    p.add_argument("--type", dest="memory_type", help="personal, procedural, tool or history")
    p.add_argument("--when-to-use", default="", help="retrieval key (default: the content)")
    p.add_argument("--tag", dest="tags", action="append", default=[], help="a tag (repeatable)")
    p.add_argument("--metadata", type=_json_arg, default=None, help="a JSON object")
    p.add_argument("--score", type=float, default=0.0, help="stored importance")
    p.add_argument("--author", default="")

    p = sub.add_parser("get", parents=[common], help="print one memory")
    p.add_argument("memory_id")
    _scope_args(p)

    p = sub.add_parser("list", parents=[common], help="list memories")
    _scope_args(p)
    _selection_args(p)
    p.add_argument("--sort", dest="sort_key", help="time_created, time_modified, message_time, score or version")
    p.add_argument("--asc", action="store_true", help="ascending (default: descending)")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--cursor", help="next_cursor of the previous page")

    p = sub.add_parser("search", parents=[common], help="search memories")
    p.add_argument("query")
    _scope_args(p)
    _selection_args(p)
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--mode", choices=["hybrid", "dense", "keyword"], default="hybrid")

    p = sub.add_parser("update", parents=[common], help="change a memory")
    p.add_argument("memory_id")
    _scope_args(p)
    p.add_argument("--content")
    p.add_argument("--when-to-use")
    p.add_argument("--tag", dest="tags", action="append", default=None)
    p.add_argument("--metadata", type=_json_arg, default=None)
    p.add_argument("--score", type=float)

    p = sub.add_parser("delete", parents=[common], help="delete a memory")
    p.add_argument("memory_id")
    _scope_args(p)

    p = sub.add_parser("export", parents=[common], help="write memories to a JSONL file")
    p.add_argument("file")
    _scope_args(p)
    _selection_args(p, with_filter=False)
    p.add_argument("--with-vectors", action="store_true")
    p.add_argument("--no-history", dest="with_history", action="store_false",
                   help="leave out each memory's earlier versions")

    p = sub.add_parser("import", parents=[common], help="load memories from a JSONL file")
    p.add_argument("file")
    p.add_argument("--format", default="jsonl", choices=["jsonl", "reme-jsonl"],
                   help="jsonl: written by `reme export`; reme-jsonl: a task-memory pool of the original ReMe")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--user", dest="user_name", help="every line must be this user's memory")
    g.add_argument("--task", "--task-name", dest="task_name",
                   help="every line must be this task's memory (a reme-jsonl pool: the task it is for)")
    g.add_argument("--tool", dest="tool_name", help="every line must be this tool's memory")

    p = sub.add_parser("backup", parents=[common],
                       help="write the whole store (memories, versions, vectors) to one file")
    p.add_argument("file")

    p = sub.add_parser("restore", parents=[common], help="load a file written by `reme backup` into an empty store")
    p.add_argument("file")

    p = sub.add_parser("serve", parents=[common], help="serve the memory API over HTTP (extra: server)")
    p.add_argument("--host", help="address to bind (default 127.0.0.1; others need tokens)")
    p.add_argument("--port", type=int, help="port (default 8000)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="processes serving the port (default 1; more need a Qdrant server store: docs/scaling.md)")
    p.add_argument("--server-config", help="JSON/TOML file with tokens and limits (default: $REME_SERVER_CONFIG)")

    p = sub.add_parser("mcp", parents=[common], help="serve memory tools over MCP (extra: mcp)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", help="address for --transport http (default 127.0.0.1; others need tokens)")
    p.add_argument("--port", type=int, help="port for --transport http (default 8000)")
    p.add_argument("--server-config", help="JSON/TOML file with tokens and limits (default: $REME_SERVER_CONFIG)")
    _scope_args(p)

    p = sub.add_parser("demo", parents=[common], help="a guided tour on a fresh working directory")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (when no --working-dir is given)")

    p = sub.add_parser("history", parents=[common], help="print the earlier states of a memory, oldest first")
    p.add_argument("memory_id")
    _scope_args(p)

    p = sub.add_parser("count", parents=[common], help="count memories")
    _scope_args(p)
    _selection_args(p)

    p = sub.add_parser("delete-all", parents=[common], help="delete every memory of a user, task or tool (--yes)")
    _scope_args(p)
    p.add_argument("--everything", action="store_true", help="every memory of every target")
    _selection_args(p, with_filter=False)
    p.add_argument("--yes", action="store_true", help="confirm: without it nothing is deleted")

    p = sub.add_parser("summarize", parents=[common],
                       help="memories from a JSON file of messages, runs or tool calls")
    p.add_argument("file", help="a JSON list: messages (--user), trajectories (--task) or tool calls (--tool)")
    _scope_args(p, required=True)

    sub.add_parser("optimize", parents=[common],
                   help="build the search index now (slow at scale: it holds the process; search is exact without it)")

    p = sub.add_parser("retrieve", parents=[common], help="what helps before a reply or a task, ready for a prompt")
    p.add_argument("query", nargs="?", help="the question or task (not needed with --tool)")
    _scope_args(p, required=True)
    p.add_argument("--top-k", type=int)
    p.add_argument("--no-rewrite", dest="rewrite", action="store_false", default=None,
                   help="search the query as given (no LLM rewrite)")
    _markdown_parser(sub, common)
    sub.add_parser("bench", help=BENCH_HELP)  # listed here; main() hands `reme bench ...` to the benchmark
    return parser


def _markdown_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """`reme md export DIR --user NAME` and `reme md sync DIR [--dry-run] [--force]`."""
    p = sub.add_parser("md", help="memories as Markdown files: export, edit, sync back")
    md = p.add_subparsers(dest="md_command", required=True, metavar="ACTION")
    e = md.add_parser("export", parents=[common], help="write MEMORY.md (+ journal/), LESSONS.md or TOOL.md")
    e.add_argument("dir")
    _scope_args(e, required=True)
    e.add_argument("--overwrite", action="store_true", help="replace a tree with edits not synced yet")
    s = md.add_parser("sync", parents=[common], help="write the edits of an exported tree back to the store")
    s.add_argument("dir")
    _scope_args(s)
    s.add_argument("--dry-run", action="store_true", help="only report what would change")
    s.add_argument("--force", action="store_true",
                   help="write the clear changes even when some items are reported (conflicts, ambiguous)")


BENCH_HELP = "`reme bench locomo --help`: the LoCoMo benchmark (from a source checkout)"
READ_COMMANDS = {"get", "list", "search", "export", "history", "count", "retrieve", "optimize", "backup"}
"""Commands that change no memory: on a store that does not exist they fail instead of creating an
empty one."""


def _benchmarks_here() -> bool:
    """Whether the benchmarks can be imported: they live in a source checkout, not in the package,
    so from the checkout's root, or anywhere `import benchmark` finds the checkout's (an editable
    install, PYTHONPATH)."""
    if (Path.cwd() / "benchmark" / "locomo" / "run.py").is_file():
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return True
    try:
        return importlib.util.find_spec("benchmark.locomo.run") is not None
    except (ImportError, ValueError):  # a `benchmark` that is a module, or not ReMe's
        return False


def _scope(args: argparse.Namespace) -> dict[str, Any]:
    return {k: getattr(args, k) for k in ("user_name", "task_name", "tool_name") if getattr(args, k, None)}


def _line(node: MemoryNode, memory_id: str | None = None) -> str:
    tags = f" [{', '.join(node.tags)}]" if node.tags else ""
    return (f"{memory_id or node.memory_id}  {node.memory_type.value}/{node.memory_target}  v{node.version}  "
            f"{node.content}{tags}")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _config(args: argparse.Namespace, working_dir: str | None) -> ReMeConfig:
    """The settings a command runs with: the config file and environment, then its flags."""
    embedding: dict[str, Any] = {}
    if args.embedding:
        embedding["backend"] = args.embedding
    if args.embedding_model:
        embedding["model"] = args.embedding_model
    return ReMeConfig.load(args.config, working_dir=working_dir, embedding=embedding or None,
                           vector_store={"lock_timeout": args.wait} if args.wait is not None else None)


async def _run(args: argparse.Namespace) -> int:
    working_dir = args.working_dir
    scratch = args.command == "demo" and working_dir is None
    if scratch:
        working_dir = tempfile.mkdtemp(prefix="reme-demo-")
    try:
        config = _config(args, working_dir)
        if args.command in READ_COMMANDS or (args.command, getattr(args, "md_command", None)) == ("md", "export"):
            _require_store(config)
        if args.command == "import":
            _require_lines(args.file)
        with _Progress(args.command, enabled=not (args.quiet or args.json) and _interactive()) as progress:
            async with ReMe(config, progress=progress.phase) as reme:
                progress.phase("working")
                try:
                    return await _dispatch(reme, args)
                except BaseException:
                    await reme.close(discard=True)  # a store this command created and left empty goes
                    raise
    finally:
        if scratch and not args.keep:
            shutil.rmtree(working_dir, ignore_errors=True)


PROGRESS_AFTER_S = 2.0
"""A command still running after this many seconds says what it is doing on stderr, every as often."""
MODEL_HINT_AFTER_S = 1.0
"""A command that spent this long loading the embedding model ends with a line on how to keep one loaded."""


def _interactive() -> bool:
    """Progress lines go to a terminal only: a script reading stderr gets one line per error."""
    return sys.stderr.isatty()


class _Progress:
    """One line on stderr every PROGRESS_AFTER_S seconds while a command runs longer than that:
    what it is doing (as the facade reports it) and for how long. Off with --quiet or --json, and
    when stderr is not a terminal."""

    def __init__(self, command: str, *, enabled: bool) -> None:
        self.command, self.enabled = command, enabled
        self.what = "opening the store"
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="reme-progress", daemon=True)
        self._started = self._phase_started = time.monotonic()
        self.model_load_s = 0.0
        """Seconds this command spent loading the embedding model."""

    def phase(self, what: str) -> None:
        now = time.monotonic()
        if self.what.startswith(LOADING_MODEL):
            self.model_load_s += now - self._phase_started
        self.what, self._phase_started = what, now

    def _tick(self) -> None:
        while not self._done.wait(PROGRESS_AFTER_S):
            print(f"reme {self.command}: {self.what} ({time.monotonic() - self._started:.0f} s)",
                  file=sys.stderr, flush=True)

    def __enter__(self) -> "_Progress":
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.enabled and self.model_load_s >= MODEL_HINT_AFTER_S:
            print(f"reme {self.command}: {self.model_load_s:.1f} s of it went to loading the embedding model, "
                  "which every command loads again; to keep one loaded, serve the store from one process "
                  "(`reme serve`, `reme mcp`, or ReMe in your own Python: docs/service.md)",
                  file=sys.stderr, flush=True)


def _require_store(config: ReMeConfig) -> None:
    """A reading command on a store that does not exist is a mistyped path, not a new store."""
    if file_in_the_way(Path(config.working_dir).expanduser()) is not None:
        raise working_dir_is_a_file(Path(config.working_dir).expanduser())
    if config.vector_store.backend != "edge":
        return
    root = edge_root(config.vector_store, Path(config.working_dir))
    if not (root / config.vector_store.collection).is_dir():
        raise NotFoundError(f"no ReMe store at {root} (nothing was created): check --working-dir / "
                            "REME_WORKING_DIR; `reme add` or `reme import` creates one")


def _require_lines(path: str) -> None:
    """An import file with no line at all is a mistake, said before a store is opened or made."""
    try:
        with open(path, "rb") as fh:
            if any(line.strip() for line in fh):
                return
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"cannot read {path!r}: {getattr(exc, 'strerror', None) or exc}") from None
    raise InvalidInputError(f"{path} holds no memories; nothing was imported")


async def _dispatch(reme: ReMe, args: argparse.Namespace) -> int:
    cmd, out = args.command, print
    if cmd == "add":
        node = await reme.add_memory(args.content, memory_type=args.memory_type, when_to_use=args.when_to_use,
                                     tags=args.tags, metadata=args.metadata, score=args.score, author=args.author,
                                     **_scope(args))
        out(_dump(node.model_dump(mode="json")) if args.json else node.memory_id)
    elif cmd == "get":
        node = await reme.get_memory(args.memory_id, **_scope(args))
        out(_dump(node.model_dump(mode="json")) if args.json else _line(node))
    elif cmd == "list":
        await _list(reme, args)
    elif cmd == "search":
        hits = await reme.search_memory(args.query, memory_type=args.memory_type, top_k=args.top_k, mode=args.mode,
                                        filters=args.filter, **_scope(args))
        if not hits:
            await _require_target(reme, args)
        if args.json:
            out(_dump([h.model_dump(mode="json") for h in hits]))
        else:
            for hit in hits:
                out(f"{hit.rank}. ({hit.score_kind} {hit.similarity:.3f}) {_line(hit.node)}")
            if not hits:
                out("no memories match")
    elif cmd == "update":
        node = await reme.update_memory(args.memory_id, content=args.content, when_to_use=args.when_to_use,
                                        tags=args.tags, metadata=args.metadata, score=args.score, **_scope(args))
        out(_dump(node.model_dump(mode="json")) if args.json else _line(node))
    elif cmd == "delete":
        await reme.delete_memory(args.memory_id, **_scope(args))
        out(_dump({"deleted": args.memory_id}) if args.json else f"deleted {args.memory_id}")
    elif cmd == "export":
        n = await reme.export_memory(args.file, memory_type=args.memory_type, with_vectors=args.with_vectors,
                                     with_history=args.with_history, **_scope(args))
        out(_dump({"exported": n, "file": args.file}) if args.json
            else f"exported {plural(n, 'memory', 'memories')} to {args.file}")
    elif cmd == "import":
        if args.format == "reme-jsonl" and not args.task_name:
            raise InvalidInputError("--format reme-jsonl needs --task-name NAME (or --task NAME)")
        n = await reme.import_memory(args.file, format=args.format, **_scope(args))
        out(_dump({"imported": n, "file": args.file}) if args.json
            else f"imported {plural(n, 'memory', 'memories')} from {args.file}")
    elif cmd in ("backup", "restore"):
        n = await (reme.backup(args.file) if cmd == "backup" else reme.restore(args.file))
        done = "backed_up" if cmd == "backup" else "restored"
        out(_dump({done: n, "file": args.file}) if args.json
            else f"{done.replace('_', ' ')} {plural(n, 'record')} {'to' if cmd == 'backup' else 'from'} {args.file}")
    elif cmd == "demo":
        await demo(reme, as_json=args.json)
    elif cmd in ("history", "count", "delete-all", "summarize", "retrieve", "optimize"):
        await _more(reme, args)
    elif cmd == "md":
        return await _markdown(reme, args)
    return EXIT_OK


async def _list(reme: ReMe, args: argparse.Namespace) -> None:
    """`reme list`: without --type (or a filter on memory_type), the memories a user reads first;
    the raw `history` records (whole conversations) are left out and counted at the end."""
    out, scope = print, _scope(args)
    hide_history = args.memory_type is None and "memory_type" not in (args.filter or {})
    filters = {**(args.filter or {}), "memory_type": {"ne": "history"}} if hide_history else args.filter
    page = await reme.list_memory(memory_type=args.memory_type, filters=filters, sort_key=args.sort_key,
                                  direction="asc" if args.asc else "desc", limit=args.limit, cursor=args.cursor,
                                  **scope)
    if not page.nodes and not args.cursor:
        await _require_target(reme, args)
    if args.json:
        out(_dump({"memories": [n.model_dump(mode="json") for n in page], "next_cursor": page.next_cursor}))
        return
    for node in page:
        out(_line(node))
    hidden = 0 if not hide_history or args.cursor else await reme.count_memory(
        memory_type="history", filters=args.filter, **scope)
    if not page.nodes and not args.cursor:
        out("no memories")
    if page.next_cursor:
        out(f"more: --cursor {page.next_cursor}")
    if hidden:
        out(f"{plural(hidden, 'history record')} not shown (--type history lists them)")


TARGET_NAMES_SCANNED = 5000
"""How many memories `_require_target` reads at most to name the targets that do exist."""


async def _require_target(reme: ReMe, args: argparse.Namespace) -> None:
    """An empty answer for a target that holds no memory at all is most likely a misspelt name:
    NotFoundError (exit 3) naming the targets of that kind that exist, the closest first."""
    scope = _scope(args)
    if len(scope) != 1 or await reme.count_memory(**scope):
        return
    [(key, name)] = scope.items()
    kind = key.removesuffix("_name")
    names: set[str] = set()
    cursor, seen = None, 0
    while seen < TARGET_NAMES_SCANNED:
        page = await reme.list_memory(filters={"target_kind": kind}, limit=500, cursor=cursor)
        names.update(n.memory_target for n in page)
        seen, cursor = seen + len(page.nodes), page.next_cursor
        if cursor is None:
            break
    known = sorted(names)
    parts = [f"no memory of {kind} {name!r} at all"]
    close = [n for n in known if n.casefold() == name.casefold()] or difflib.get_close_matches(name, known, n=1)
    if close:
        parts.append(f"did you mean {close[0]!r}?")
    if known:
        shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 or cursor is not None else "")
        parts.append(f"{kind}s with memories: {shown}")
    else:
        parts.append(f"no {kind} has memories in this store")
    raise NotFoundError("; ".join(parts))


async def _markdown(reme: ReMe, args: argparse.Namespace) -> int:
    """`reme md export` / `reme md sync`. A sync that reports items exits 2 (an ambiguous item)
    or 5 (a conflict), a dry run too, so a script can tell before writing."""
    out = print
    if args.md_command == "export":
        done = await reme.export_markdown(args.dir, overwrite=args.overwrite, **_scope(args))
        out(_dump(done.model_dump(mode="json")) if args.json
            else f"exported {plural(done.memories, 'memory', 'memories')} to {done.directory}: "
                 f"{', '.join(done.files)}")
        return EXIT_OK
    scope = _scope(args)
    if not scope:
        named = markdown.read_tree(Path(args.dir)).scope
        if named is None:
            raise InvalidInputError(f"{args.dir} holds no Markdown tree written by `reme md export`")
        scope = {f"{named.kind}_name": named.name}
    result = await reme.sync_markdown(args.dir, dry_run=args.dry_run, force=args.force, **scope)
    code = EXIT_USAGE if result.ambiguous else EXIT_STORE if result.conflicts else EXIT_OK
    # A dry run's new memories have no id yet (the real sync assigns one): show none rather than another
    dumped = result.model_dump(mode="json")
    if result.dry_run:
        for node in dumped["added"]:
            node["memory_id"] = None
    if args.json:
        out(_dump(dumped))
        return code
    for label, nodes in (("added", result.added), ("updated", result.updated), ("deleted", result.deleted)):
        for node in nodes:
            unsaved = result.dry_run and label == "added"
            out(f"{label:9} {_line(node, '(new: the sync gives it an id)' if unsaved else None)}")
    for label, issues in (("conflict", result.conflicts), ("ambiguous", result.ambiguous)):
        for issue in issues:
            where = f"{issue.file}:{issue.line}" if issue.line else issue.file
            text = " ".join(issue.text.split())
            out(f"{label:9} {where}  {issue.reason}" + (f"  | {text[:80]}" if text else ""))
    summary = (f"{len(result.added)} added, {len(result.updated)} updated, {len(result.deleted)} deleted, "
               f"{plural(len(result.conflicts), 'conflict')}, {len(result.ambiguous)} ambiguous, "
               f"{result.unchanged} unchanged")
    if result.dry_run:
        summary += "; dry run: nothing written"
    elif not result.applied:
        summary += "; nothing written: resolve the reported items (or --force to write the rest)"
    elif result.rewritten:
        summary += f"; {args.dir} rewritten from the store"
    out(summary)
    return code


async def _more(reme: ReMe, args: argparse.Namespace) -> None:
    """history, count, delete-all, summarize, retrieve and optimize."""
    cmd, out = args.command, print
    if cmd == "optimize":
        built = await reme.optimize()
        out(_dump({"optimized": built}) if args.json else "index built" if built else "nothing to index")
    elif cmd == "history":
        versions = await reme.history(args.memory_id, **_scope(args))
        if args.json:
            out(_dump([v.model_dump(mode="json") for v in versions]))
        for v in [] if args.json else versions:
            out(f"{v.time:%Y-%m-%d %H:%M:%S}  {v.event}  {v.reason or '-'}  was: {_line(v.node)}")
        if not versions and not args.json:
            out("no earlier versions")
    elif cmd == "count":
        n = await reme.count_memory(memory_type=args.memory_type, filters=args.filter, **_scope(args))
        out(_dump({"count": n}) if args.json else str(n))
    elif cmd == "delete-all":
        scope = _scope(args)
        if bool(scope) == args.everything:
            raise InvalidInputError("delete-all needs one of --user, --task, --tool, or --everything")
        if not args.yes:
            n = await reme.count_memory(memory_type=args.memory_type, **scope)
            what = "of every target" if args.everything else "of " + " ".join(
                f"{k.removesuffix('_name')} {v!r}" for k, v in scope.items())
            raise InvalidInputError(f"this would delete {plural(n, 'memory', 'memories')} {what}; "
                                    "add --yes to confirm")
        n = await reme.delete_all(memory_type=args.memory_type, everything=args.everything, **scope)
        out(_dump({"deleted": n}) if args.json else f"deleted {plural(n, 'memory', 'memories')}")
    elif cmd == "summarize":
        items = _read_json_list(args.file)
        if args.user_name:
            result = await reme.summarize_memory(items, user_name=args.user_name)
        elif args.task_name:
            result = await reme.summarize_memory(trajectories=items, task_name=args.task_name)
        else:
            result = await reme.summarize_memory(tool_calls=items, tool_name=args.tool_name)
        if args.json:
            out(_dump(result.model_dump(mode="json")))
            return
        for label, nodes in (("added", result.added), ("updated", result.updated), ("deleted", result.deleted)):
            for node in nodes:
                out(f"{label}  {_line(node)}")
        out(f"{len(result.added)} added, {len(result.updated)} updated, {len(result.deleted)} deleted "
            f"({plural(result.usage.calls, 'LLM call')}, {plural(result.usage.total_tokens, 'token')})")
    elif cmd == "retrieve":
        ctx = await reme.retrieve_memory(args.query, top_k=args.top_k, rewrite=args.rewrite, **_scope(args))
        if args.json:
            out(_dump(ctx.model_dump(mode="json")))
        else:
            out(ctx.text or "no memories")


def _read_json_list(path: str) -> list[Any]:
    """A JSON list from a file, or the one list an object holds (`{"messages": [...]}`)."""
    try:
        data = parse_json(Path(path).read_text(encoding="utf-8"), path)
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path} is not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)) from None
    if isinstance(data, dict):
        lists = [v for k, v in data.items() if k in ("messages", "trajectories", "tool_calls")]
        data = lists[0] if len(lists) == 1 else data
    if not isinstance(data, list):
        raise InvalidInputError(f"{path} must hold a JSON list (or an object with one of messages, trajectories "
                                "or tool_calls)")
    return data


async def demo(reme: ReMe, *, as_json: bool = False) -> None:
    """Store, list, update, delete and search a handful of memories for two users."""
    steps: list[dict[str, Any]] = []

    def say(action: str, **details: Any) -> None:
        steps.append({"action": action, **details})
        if not as_json:
            print(f"- {action}: " + ", ".join(f"{k}={v}" for k, v in details.items()))

    if not as_json:
        print(f"ReMe demo in {reme.config.working_dir} ({reme.config.vector_store.backend} store, "
              f"{reme.config.embedding.backend} embeddings)")
    facts = {
        "alice": ["Alice prefers window seats on long flights", "Alice is vegetarian and avoids seafood",
                  "Alice's daughter Emma starts school in September", "Alice works as a nurse on night shifts"],
        "bob": ["Bob prefers aisle seats so he can stretch his legs", "Bob is allergic to peanuts",
                "Bob plays bass guitar in a jazz band"],
    }
    nodes: dict[str, list[MemoryNode]] = {}
    for user, texts in facts.items():
        nodes[user] = [await reme.add_memory(t, user_name=user, tags=["demo"]) for t in texts]
        say("added", user=user, count=len(texts))
    dup = await reme.add_memory("alice prefers window seats on long flights", user_name="alice")
    say("added a duplicate", same_id=dup.memory_id == nodes["alice"][0].memory_id)
    page = await reme.list_memory(user_name="alice", sort_key="time_created", direction="asc", limit=10)
    say("listed", user="alice", memories=[n.content for n in page])
    updated = await reme.update_memory(nodes["alice"][0].memory_id, content="Alice now prefers aisle seats on long flights")
    say("updated", id=updated.memory_id, version=updated.version, content=updated.content)
    await reme.delete_memory(nodes["bob"][2].memory_id, user_name="bob")
    say("deleted", user="bob", content=nodes["bob"][2].content, remaining=await reme.count_memory(user_name="bob"))
    for user, query in (("alice", "which seat should I book?"), ("bob", "food allergies")):
        hits = await reme.search_memory(query, user_name=user, top_k=2)
        say("searched", user=user, query=query,
            top=[f"{h.node.content} ({h.score_kind} {h.similarity:.3f})" for h in hits])
    if as_json:
        print(_dump(steps))



def _bench(argv: list[str]) -> int:
    """`reme bench locomo ...` runs `python -m benchmark.locomo ...` (from a source checkout:
    the benchmarks are not part of the installed package)."""
    if not argv or argv[0] != "locomo":
        asked = argv[:1] in (["-h"], ["--help"])
        print("usage: reme bench locomo [options]  (reme bench locomo --help for them)",
              file=sys.stdout if asked else sys.stderr)
        return EXIT_OK if asked else EXIT_USAGE
    if not _benchmarks_here():
        print("reme bench: the benchmarks are not part of the installed package; they live in a source checkout "
              "of ReMe: run `reme bench locomo ...` (or `python -m benchmark.locomo ...`) from its root",
              file=sys.stderr)
        return EXIT_CONFIG
    locomo = importlib.import_module("benchmark.locomo.run")  # by name: the package never depends on it
    return int(locomo.main(argv[1:]))


def _serve(args: argparse.Namespace) -> int:
    """`reme serve` / `reme mcp`: the facade behind HTTP or MCP, until SIGTERM or SIGINT."""
    reme = ReMe(_config(args, args.working_dir))
    from reme.access import ServerConfig

    config = ServerConfig.load(args.server_config, host=args.host, port=args.port, workers=getattr(args, "workers", None))
    module = "server" if args.command == "serve" else "mcp"
    try:
        service = importlib.import_module(f"reme.{module}")
    except ImportError as exc:
        raise ConfigError(f"reme {args.command} needs the `{module}` extra: pip install 'reme-memory[{module}]' ({exc})")
    if args.command == "serve":
        return int(service.serve(config, reme))
    return int(service.serve(config, reme, transport=args.transport, **_scope(args)))


def _refuse_unknown_options(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """An option the command does not know is the error to report, not an argument it then lacks
    (argparse checks required arguments first: `reme add x --user-name alice` would say only that
    a target is required). With the closest option the command has, when one is close."""
    commands = [a for a in argv if not a.startswith("-")][:2]
    for name in commands:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or name not in subs[0].choices:
            break
        parser = subs[0].choices[name]
    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    for arg in argv:
        if arg == "--":
            break
        option = arg.split("=", 1)[0]
        if option.startswith("--") and len(option) > 2 and not any(k.startswith(option) for k in known):
            close = difflib.get_close_matches(option, known, n=1)
            parser.error(f"unrecognized arguments: {option}" + (f" (did you mean {close[0]}?)" if close else ""))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])
    parser = build_parser()
    _refuse_unknown_options(parser, argv)
    args = parser.parse_args(argv)
    codes: list[tuple[type[BaseException], int]] = [
        (InvalidInputError, EXIT_USAGE), (NotFoundError, EXIT_NOT_FOUND), (ConfigError, EXIT_CONFIG),
        (StoreError, EXIT_STORE), (EmbeddingError, EXIT_MODEL), (LLMError, EXIT_MODEL), (ReMeError, EXIT_FAIL),
    ]
    try:
        if args.command in ("serve", "mcp"):
            return _serve(args)
        return asyncio.run(_run(args))
    except ReMeError as exc:
        code = next(c for t, c in codes if isinstance(exc, t))
        _fail(args.command, exc, args)
        return code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, never a traceback
        _fail(args.command, exc)
        return EXIT_FAIL


CLI_WORDING: list[tuple[str, str]] = [
    ("(use a new working_dir, or delete_all(everything=True) first)",
     "(use a new --working-dir, or `reme delete-all --everything --yes` first)"),
    ("update_memory needs at least one field to change",
     "reme update needs at least one of --content, --when-to-use, --tag, --metadata, --score"),
    ("as add_memory, list_memory and search_memory return them", "as `reme add`, `reme list` and `reme search` print them"),
    ("sync_markdown them first, or pass overwrite=True (--overwrite) to drop them",
     "`reme md sync {dir}` them first, or pass --overwrite to drop them"),
    ("pass overwrite=True (--overwrite) to replace it", "pass --overwrite to replace it"),
    ("summarize_memory needs an LLM", "reme summarize needs an LLM"),
    ("in a config file or ReMe(llm={...})", "in a --config file"),
    ("`scripts/llm.sh run qwen1.5b -- python your_script.py` sets all three",
     "`scripts/llm.sh run qwen1.5b -- reme ...` sets all three"),
    ("is a backup, not an export: load it with restore(), into an empty store",
     "is a backup (written by `reme backup`), not an export: load it with `reme restore {file}`, into an empty store"),
]
"""(what the facade says to a Python caller, what the command line says instead): the facade's
messages name its methods and arguments; a command's name its flags and commands. `{dir}` is the
command's DIR argument, `{file}` its FILE."""


def cli_wording(text: str, args: argparse.Namespace | None = None) -> str:
    """A facade error message in the command line's words (see CLI_WORDING)."""
    for python, command_line in CLI_WORDING:
        if python in text:
            for name in ("dir", "file"):
                command_line = command_line.replace(f"{{{name}}}", str(getattr(args, name, None) or name.upper()))
            text = text.replace(python, command_line)
    return text


def _fail(command: str, exc: BaseException, args: argparse.Namespace | None = None) -> None:
    """One line on stderr, whatever the message holds (newlines, characters the terminal cannot show);
    a JSON object from the commands that log JSON lines (serve, mcp)."""
    text = cli_wording(" ".join(str(exc).split()), args)
    if command in ("serve", "mcp"):
        line = json_line(level="error", event="exit", command=f"reme {command}", type=type(exc).__name__, message=text)
    else:
        line = f"reme {command}: {type(exc).__name__}: {text}"
    print(line.encode("utf-8", "backslashreplace").decode("utf-8"), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
