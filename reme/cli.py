"""`reme`: the memory store from the command line.

Exit codes: 0 success, 1 unexpected failure, 2 usage or invalid input, 3 not found,
4 configuration error, 5 store error (for instance the directory is open elsewhere),
6 embedding or LLM failure.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import shutil
import os
import sys
import tempfile
from typing import Any, Sequence

from reme.errors import (ConfigError, EmbeddingError, InvalidInputError, LLMError, NotFoundError, ReMeError,
                         StoreError)
from reme.reme import ReMe
from reme.schema import MemoryNode, parse_json

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


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--working-dir", "-w", help="where memories live (default: $REME_WORKING_DIR or .reme)")
    common.add_argument("--config", help="a JSON or TOML config file")
    common.add_argument("--embedding", choices=["local", "openai", "hash"], help="embedding backend")
    common.add_argument("--embedding-model", help="embedding model name or path")
    common.add_argument("--json", action="store_true", help="print JSON")

    parser = argparse.ArgumentParser(prog="reme", description="Typed long-term memory for AI agents.",
                                     epilog="reme bench locomo [options]: the LoCoMo benchmark, from a source checkout")
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
    p.add_argument("--type", dest="memory_type")
    p.add_argument("--filter", type=_json_arg, default=None, help='JSON filter, e.g. \'{"score": {"gte": 0.5}}\'')
    p.add_argument("--sort", dest="sort_key", help="time_created, time_modified, message_time, score or version")
    p.add_argument("--asc", action="store_true", help="ascending (default: descending)")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--cursor", help="next_cursor of the previous page")

    p = sub.add_parser("search", parents=[common], help="search memories")
    p.add_argument("query")
    _scope_args(p)
    p.add_argument("--type", dest="memory_type")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--mode", choices=["hybrid", "dense", "keyword"], default="hybrid")
    p.add_argument("--filter", type=_json_arg, default=None)

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
    p.add_argument("--type", dest="memory_type")
    p.add_argument("--with-vectors", action="store_true")

    p = sub.add_parser("import", parents=[common], help="load memories from a JSONL file")
    p.add_argument("file")
    p.add_argument("--format", default="jsonl", choices=["jsonl", "reme-jsonl"],
                   help="jsonl: written by `reme export`; reme-jsonl: a task-memory pool of the original ReMe")
    p.add_argument("--task-name", "--task", dest="task_name", help="the task a reme-jsonl pool belongs to")

    p = sub.add_parser("serve", parents=[common], help="serve the memory API over HTTP (extra: server)")
    p.add_argument("--host", help="address to bind (default 127.0.0.1; others need tokens)")
    p.add_argument("--port", type=int, help="port (default 8000)")
    p.add_argument("--server-config", help="JSON/TOML file with tokens and limits (default: $REME_SERVER_CONFIG)")

    p = sub.add_parser("mcp", parents=[common], help="serve memory tools over MCP (extra: mcp)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", help="address for --transport http (default 127.0.0.1; others need tokens)")
    p.add_argument("--port", type=int, help="port for --transport http (default 8000)")
    p.add_argument("--server-config", help="JSON/TOML file with tokens and limits (default: $REME_SERVER_CONFIG)")
    _scope_args(p)

    p = sub.add_parser("demo", parents=[common], help="a guided tour on a fresh working directory")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (when no --working-dir is given)")
    return parser


def _scope(args: argparse.Namespace) -> dict[str, Any]:
    return {k: getattr(args, k) for k in ("user_name", "task_name", "tool_name") if getattr(args, k, None)}


def _line(node: MemoryNode) -> str:
    tags = f" [{', '.join(node.tags)}]" if node.tags else ""
    return f"{node.memory_id}  {node.memory_type.value}/{node.memory_target}  v{node.version}  {node.content}{tags}"


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


async def _run(args: argparse.Namespace) -> int:
    embedding: dict[str, Any] = {}
    if args.embedding:
        embedding["backend"] = args.embedding
    if args.embedding_model:
        embedding["model"] = args.embedding_model
    working_dir = args.working_dir
    scratch = args.command == "demo" and working_dir is None
    if scratch:
        working_dir = tempfile.mkdtemp(prefix="reme-demo-")
    try:
        async with ReMe(working_dir=working_dir, embedding=embedding or None, config_file=args.config) as reme:
            return await _dispatch(reme, args)
    finally:
        if scratch and not args.keep:
            shutil.rmtree(working_dir, ignore_errors=True)


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
        page = await reme.list_memory(memory_type=args.memory_type, filters=args.filter, sort_key=args.sort_key,
                                      direction="asc" if args.asc else "desc", limit=args.limit, cursor=args.cursor,
                                      **_scope(args))
        if args.json:
            out(_dump({"memories": [n.model_dump(mode="json") for n in page], "next_cursor": page.next_cursor}))
        else:
            for node in page:
                out(_line(node))
            if page.next_cursor:
                out(f"more: --cursor {page.next_cursor}")
    elif cmd == "search":
        hits = await reme.search_memory(args.query, memory_type=args.memory_type, top_k=args.top_k, mode=args.mode,
                                        filters=args.filter, **_scope(args))
        if args.json:
            out(_dump([h.model_dump(mode="json") for h in hits]))
        else:
            for hit in hits:
                out(f"{hit.rank}. ({hit.similarity:.3f}) {_line(hit.node)}")
    elif cmd == "update":
        node = await reme.update_memory(args.memory_id, content=args.content, when_to_use=args.when_to_use,
                                        tags=args.tags, metadata=args.metadata, score=args.score, **_scope(args))
        out(_dump(node.model_dump(mode="json")) if args.json else _line(node))
    elif cmd == "delete":
        await reme.delete_memory(args.memory_id, **_scope(args))
        out(_dump({"deleted": args.memory_id}) if args.json else f"deleted {args.memory_id}")
    elif cmd == "export":
        n = await reme.export_memory(args.file, memory_type=args.memory_type, with_vectors=args.with_vectors,
                                     **_scope(args))
        out(_dump({"exported": n, "file": args.file}) if args.json else f"exported {n} memories to {args.file}")
    elif cmd == "import":
        if args.format == "reme-jsonl" and not args.task_name:
            raise InvalidInputError("--format reme-jsonl needs --task-name NAME")
        n = await reme.import_memory(args.file, format=args.format, task_name=args.task_name)
        out(_dump({"imported": n, "file": args.file}) if args.json else f"imported {n} memories from {args.file}")
    elif cmd == "demo":
        await demo(reme, as_json=args.json)
    return EXIT_OK


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
        say("searched", user=user, query=query, top=[f"{h.node.content} ({h.similarity:.3f})" for h in hits])
    if as_json:
        print(_dump(steps))



def _bench(argv: list[str]) -> int:
    """`reme bench locomo ...` runs `python -m benchmark.locomo ...` (from a source checkout:
    the benchmarks are not part of the installed package)."""
    if not argv or argv[0] != "locomo":
        print("usage: reme bench locomo [options]  (see python -m benchmark.locomo --help)", file=sys.stderr)
        return EXIT_USAGE
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        from benchmark.locomo.run import main as locomo_main
    except ImportError:
        print("reme bench: the benchmarks live in the source checkout; run this from its root", file=sys.stderr)
        return EXIT_CONFIG
    return int(locomo_main(argv[1:]))


def _serve(args: argparse.Namespace) -> int:
    """`reme serve` / `reme mcp`: the facade behind HTTP or MCP, until SIGTERM or SIGINT."""
    embedding: dict[str, Any] = {}
    if args.embedding:
        embedding["backend"] = args.embedding
    if args.embedding_model:
        embedding["model"] = args.embedding_model
    reme = ReMe(working_dir=args.working_dir, embedding=embedding or None, config_file=args.config)
    from reme.access import ServerConfig

    config = ServerConfig.load(args.server_config, host=args.host, port=args.port)
    module = "server" if args.command == "serve" else "mcp"
    try:
        service = importlib.import_module(f"reme.{module}")
    except ImportError as exc:
        raise ConfigError(f"reme {args.command} needs the `{module}` extra: pip install 'reme[{module}]' ({exc})")
    if args.command == "serve":
        return int(service.serve(config, reme))
    return int(service.serve(config, reme, transport=args.transport, **_scope(args)))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])
    args = build_parser().parse_args(argv)
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
        _fail(args.command, exc)
        return code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, never a traceback
        _fail(args.command, exc)
        return EXIT_FAIL


def _fail(command: str, exc: BaseException) -> None:
    """One line on stderr, whatever the message holds (newlines, characters the terminal cannot show)."""
    text = " ".join(str(exc).split())
    print(f"reme {command}: {type(exc).__name__}: {text}".encode("utf-8", "backslashreplace").decode("utf-8"),
          file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
