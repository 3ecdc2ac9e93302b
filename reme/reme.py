"""The `ReMe` facade: one object that wires configuration to a store and an embedder and exposes
the memory API. `ReMeSync` mirrors it name for name without `async`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Sequence, TypeVar

from pydantic import ValidationError

from reme.config import LLM_SETTINGS, ReMeConfig
from reme.embedding import Embedder, LazyEmbedder, create_embedder
from reme.errors import (ConfigError, InvalidInputError, MemoryNotFoundError, OriginalReMeAPIError, ReMeError,
                         VectorSizeError, describe)
from reme import markdown
from reme.llm import ChatModel
from reme.markdown import MarkdownExport, MarkdownSyncResult
from reme.memory.personal import PersonalRetriever, PersonalSummarizer, to_messages
from reme.memory.procedural import (ProceduralRetriever, ProceduralSummarizer, counted, failing, prune_filter,
                                    read_reme_jsonl, to_trajectories)
from reme.memory.context import check_context, compact, compact_tool_results, context_messages, positive, tokens_of
from reme.memory.session import (COMPRESSED, SUMMARIZED, SessionLog, as_message, check_marks, frontier_of,
                                 message_dict, session_scope, text_batches, to_plain_messages)
from reme.memory.repo import (HASH_LOOKUP, VERSIONS_SUFFIX, Change, Imported, MemoryRepo, WriteLock, expired,
                              read_export, scope_filter, version_filter, version_record)
from reme.memory.repo import alive as live
from reme.memory.tool import ToolSummarizer, retrieve_tools, to_records
from reme.prompts import PromptLibrary
from reme.schema import (INT64_MAX, MAX_BATCH, MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_TAGS, MemoryNode, MemoryPage,
                         MemoryType, MemoryVersion, MessagesSpec, RetrieveResult, Scope, SearchResult, SummaryResult, TimeWindow,
                         ToolCallRecord, Trajectory, as_aware, check_int, check_number, safe_text, utcnow)
from reme.store import (CreateCollection, Delete, DeleteWhere, DropCollection, Upsert, VectorStore, WriteOp,
                        open_store)
from reme.store import backup as backups
from reme.store.base import Direction, SearchMode, VectorRecord, write_jsonl
from reme.store.filters import And, Eq, Filter, In, Not, TagsAny, parse_filter
from reme.sync import SyncFace
from reme.working import CompactedContext, ContextSplit, SessionMessage, SessionSize, Tokenizer

T = TypeVar("T")
P = TypeVar("P")
log = logging.getLogger("reme")
FilterSpec = Filter | Mapping[str, Any] | None
WindowSpec = TimeWindow | tuple[datetime | None, datetime | None] | None

EXPORT_PAGE = 500
"""Memories an export reads at a time (their versions are looked up together)."""

# What the original ReMe (`reme-ai`) takes: its `ReMe`/`ReMeApp` settings, as AgentScope's shipped
# middlewares pass them. Both packages are `import reme`, so code written for it may call this one.
ORIGINAL_REME_KEYWORDS = frozenset({"workspace_dir", "enable_logo", "log_to_console", "service", "jobs", "components",
                                    "llm_api_key", "llm_api_base", "embedding_api_key", "embedding_api_base",
                                    "config_path"})


def _invalid(exc: ValidationError) -> InvalidInputError:
    return InvalidInputError(describe(exc))


def _named(user_name: Any, task_name: Any, tool_name: Any) -> tuple[str, Any] | None:
    """(kind, what was given for it) for the one kind of target a call names, or None."""
    given = [(k, v) for k, v in (("user", user_name), ("task", task_name), ("tool", tool_name)) if v is not None]
    if len(given) > 1:
        raise InvalidInputError("name one target: user_name, task_name or tool_name, not several")
    return given[0] if given else None


def _scope(kind: str, name: Any) -> Scope:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"{kind}_name must be a non-empty string")
    try:  # a NUL or a lone surrogate: no memory can be stored under it, and the filter on it fails to build
        return Scope(kind, safe_text(name.strip(), f"{kind}_name"))
    except ValueError as e:
        raise InvalidInputError(str(e)) from None


def scope_of(user_name: str | None, task_name: str | None, tool_name: str | None) -> Scope | None:
    """The scope a call names (at most one of the three), or None for an unscoped call."""
    named = _named(user_name, task_name, tool_name)
    return _scope(*named) if named else None


def scopes_of(user_name: str | Sequence[str] | None, task_name: str | Sequence[str] | None,
              tool_name: str | Sequence[str] | None) -> list[Scope] | None:
    """The scopes a reading call names: one target, or a list of targets of one kind (None: unscoped)."""
    named = _named(user_name, task_name, tool_name)
    if named is None:
        return None
    kind, names = named
    if isinstance(names, str):
        return [_scope(kind, names)]
    if not isinstance(names, Sequence) or not names:
        raise InvalidInputError(f"{kind}_name must be a name or a non-empty list of names")
    return list(dict.fromkeys(_scope(kind, n) for n in names))


def scope_types(scope: Scope, memory_type: MemoryType | str | None) -> tuple[MemoryType, ...]:
    """The memory types a call under `scope` looks at: `memory_type`, or all the scope holds."""
    if memory_type is None:
        return scope.all_types
    mtype = _memory_type(memory_type)
    if mtype not in scope.all_types:
        raise InvalidInputError(f"a {scope.kind} holds {', '.join(t.value for t in scope.all_types)} memories, "
                                f"not {mtype.value}")
    return (mtype,)


def _canonical_id(memory_id: Any) -> str:
    """Ids as stored: a UUID in any spelling (no dashes, upper case) means the same memory.
    Anything else is an InvalidInputError: every stored id is a UUID, so it cannot name one."""
    if not isinstance(memory_id, str) or len(memory_id) > MAX_NAME_CHARS:
        raise InvalidInputError(f"a memory id is a UUID string, got {type(memory_id).__name__} "
                                f"{str(memory_id)[:40]!r}")
    _safe(memory_id, "memory id")
    try:
        return str(uuid.UUID(memory_id))
    except ValueError:
        raise InvalidInputError(f"{memory_id[:40]!r} is not a memory id: memory ids are UUIDs, as add_memory, "
                                "list_memory and search_memory return them") from None


def file_in_the_way(path: Path) -> Path | None:
    """`path` itself or the nearest of its parents that exists, when that is not a folder: a
    working directory that can never be opened (None when there is nothing in the way)."""
    for p in (path, *path.parents):
        if p.exists() or p.is_symlink():
            return None if p.is_dir() else p
    return None


def working_dir_is_a_file(path: Path) -> ConfigError:
    blocker = file_in_the_way(path)
    where = "" if blocker == path else f" (on the way to working_dir {str(path)!r})"
    return ConfigError(f"{blocker} is a file, not a folder{where}: point --working-dir / REME_WORKING_DIR / "
                       "working_dir at a folder")


def _safe(value: str, what: str) -> str:
    try:
        return safe_text(value, what)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None


def _text_arg(value: Any, what: str, limit: int) -> str:
    """A non-empty, valid text of at most `limit` characters (a query)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string")
    if len(value) > limit:
        raise InvalidInputError(f"{what} is {len(value)} characters; the limit is {limit}")
    return _safe(value, what)


def _list_arg(value: Any, what: str, limit: int = MAX_BATCH) -> list[Any]:
    """A list from a list or tuple argument (None: empty). A bare string is refused, not split into letters."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{what} must be a list, not {type(value).__name__}")
    if len(value) > limit:
        raise InvalidInputError(f"{what} holds {len(value)} items; the limit is {limit}")
    return list(value)


def _messages_arg(value: Any) -> list[Any]:
    """A list of messages (it may be empty); None or a single message is refused."""
    if value is None:
        raise InvalidInputError("messages must be a list of messages (dicts with role and content), not None")
    return _list_arg(value, "messages")


def _mapping_arg(value: Any, what: str) -> Any:
    """A dict copy of a mapping argument; anything else is passed on for the model to refuse."""
    if value is not None and not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a dict (a JSON object), not {type(value).__name__}")
    return dict(value or {})


def _now_arg(value: Any) -> datetime | None:
    """`now=`: a datetime (naive means UTC) or None."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"now must be a datetime, not {type(value).__name__}")
    return as_aware(value)


def _window_arg(value: Any) -> TimeWindow | None:
    """`time_window=`: a TimeWindow, a (start, end) pair of datetimes or None, or None."""
    if value is None or isinstance(value, TimeWindow):
        return value
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise InvalidInputError("time_window is a TimeWindow or a (start, end) pair of datetimes")
    if not all(v is None or isinstance(v, datetime) for v in value):
        raise InvalidInputError("time_window's start and end are datetimes (naive means UTC) or None")
    return TimeWindow(start=value[0], end=value[1])


def _expiry_arg(expires_at: Any, ttl: Any) -> datetime | None:
    """`expires_at=` (a datetime, naive means UTC) or `ttl=` (a timedelta or seconds from now), not both."""
    if expires_at is not None and ttl is not None:
        raise InvalidInputError("give expires_at or ttl, not both")
    if expires_at is not None:
        if not isinstance(expires_at, datetime):
            raise InvalidInputError(f"expires_at must be a datetime, not {type(expires_at).__name__}")
        return as_aware(expires_at)
    if ttl is None:
        return None
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else check_number(ttl, "ttl", low=0, high=1e11)
    if not 0 < seconds <= 1e11:
        raise InvalidInputError("ttl must be positive and at most about 3,000 years")
    return utcnow() + timedelta(seconds=seconds)


def _path_arg(value: Any) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidInputError(f"path must be a string or a Path, not {type(value).__name__}")
    if "\x00" in str(os.fspath(value)):  # lone surrogates are fine here: POSIX names undecodable bytes so
        raise InvalidInputError("path must not contain NUL characters")
    return Path(value)


def _memory_type(value: MemoryType | str) -> MemoryType:
    try:
        return MemoryType(value)
    except (ValueError, TypeError):
        raise InvalidInputError(f"unknown memory type {value!r}; use one of {[t.value for t in MemoryType]}") from None


def _config_of(config: object, config_file: str | Path | None, sections: dict[str, Any]) -> ReMeConfig:
    """The facade's configuration: a `ReMeConfig` as it is, or a mapping of sections (like the
    keyword sections, over the file and the environment). A setting given twice is refused rather
    than one of the two dropped."""
    given = {name: value for name, value in sections.items() if value is not None}
    if isinstance(config, ReMeConfig):
        if given or config_file is not None:
            named = ", ".join(sorted(given) + (["config_file"] if config_file is not None else []))
            raise TypeError(f"ReMe() got a ReMeConfig and {named}: set those in the ReMeConfig")
        return config
    if config is not None and not isinstance(config, Mapping):
        raise TypeError(f"config must be a ReMeConfig or a mapping of its sections, not {type(config).__name__} "
                        "(a file goes in config_file=)")
    extra = dict(config or {})
    twice = sorted(set(extra) & set(given))
    if twice:
        raise TypeError(f"ReMe() got {', '.join(twice)} both in config and as a keyword")
    return ReMeConfig.load(config_file, **extra, **given)


class ReMe:
    """Typed long-term memory for agents.

    >>> async with ReMe(working_dir=".reme") as reme:
    ...     node = await reme.add_memory("Alice prefers window seats", user_name="alice")
    ...     hits = await reme.search_memory("seat preference", user_name="alice", top_k=5)

    Settings come from keyword arguments, `REME_*` environment variables and an optional file
    (see `ReMeConfig`); each section also accepts its pydantic model. `config` is a whole
    `ReMeConfig`, or a mapping of sections read like the keyword arguments.
    """

    def __init__(self, config: ReMeConfig | Mapping[str, Any] | None = None, *, working_dir: str | Path | None = None,
                 vector_store: Any = None, embedding: Any = None, llm: Any = None, prompts: Any = None,
                 retrieval: Any = None, procedural: Any = None, tool: Any = None, context: Any = None,
                 config_file: str | Path | None = None, embedder: Embedder | None = None,
                 store: VectorStore | None = None, chat_model: ChatModel | None = None,
                 progress: Callable[[str], None] | None = None, **unknown: Any) -> None:
        if unknown:
            original = sorted(set(unknown) & ORIGINAL_REME_KEYWORDS)
            if original:
                raise OriginalReMeAPIError(original)
            raise TypeError(f"ReMe() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
        self.config = _config_of(config, config_file, {
            "working_dir": working_dir, "vector_store": vector_store, "embedding": embedding, "llm": llm,
            "prompts": prompts, "retrieval": retrieval, "procedural": procedural, "tool": tool,
            "context": context})
        self._embedder: Embedder | None = embedder
        self._store: VectorStore | None = store
        self._repo: MemoryRepo | None = None
        self._llm: ChatModel | None = chat_model
        # Components passed in belong to the caller (they may be shared): close() leaves them open.
        self._owns_store, self._owns_embedder, self._owns_llm = store is None, embedder is None, chat_model is None
        self._prompts: PromptLibrary | None = None
        self._opened = False
        self._made_dirs: list[Path] = []
        self._opening = asyncio.Lock()  # binds to a loop only when two openings meet
        self._background: dict[asyncio.Task[None], str] = {}  # background work -> the session it is for
        self._in_flight: set[str] = set()
        self._swept: set[tuple[Scope, str]] = set()  # (session, user) whose compacted messages were all looked at
        self.background_errors: list[BaseException] = []
        """Failures of background work (see `prepare_context`), each also logged."""
        self._error_sessions: list[str] = []  # the session of each of background_errors
        self._errors_seen: dict[str | None, int] = {}  # per session waited on (None: all) -> errors counted
        self._reads: dict[str, tuple[int, datetime]] = {}  # reads counted, not yet written (track_reads)
        self.progress = progress
        """Told, in a few words, what slow work is under way (loading the embedding model, embedding
        N of M texts); the CLI shows it on stderr."""

    @property
    def collection(self) -> str:
        return self.config.vector_store.collection

    @property
    def store(self) -> VectorStore:
        return self._part(self._store)

    @property
    def embedder(self) -> Embedder:
        return self._part(self._embedder)

    @property
    def repo(self) -> MemoryRepo:
        return self._part(self._repo)

    @property
    def llm(self) -> ChatModel:
        """The configured chat model (`await reme.llm.chat(messages)`); `ConfigError`, saying what
        to set, when `llm.model` is not set. Read it before a loop that needs a model, so that an
        unconfigured run fails before it writes anything."""
        self._part(self._store)
        return self._require_llm("reme.llm")

    async def open(self) -> "ReMe":
        """Open the store (a second call, or one racing the first, waits for it and returns)."""
        if self._opened:
            return self
        async with self._opening:
            if not self._opened:
                await self._open()
        return self

    async def _open(self) -> None:
        working_dir = Path(self.config.working_dir).expanduser()
        self._made_dirs = [d for d in (working_dir, *working_dir.parents) if not d.exists()]
        try:
            working_dir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise working_dir_is_a_file(working_dir) from None
        except (OSError, ValueError) as exc:  # ValueError: a NUL or a lone surrogate in the path
            raise ConfigError(f"working_dir {str(working_dir)!r} cannot be created: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None
        if self._store is None:
            if self.config.vector_store.lock_timeout:  # waiting for the directory lock: off the event loop
                self._store = await asyncio.to_thread(open_store, self.config.vector_store, working_dir)
            else:
                self._store = open_store(self.config.vector_store, working_dir)
        try:
            self._prompts = PromptLibrary(self.config.prompts.language, self.config.prompts.dir)
            if self.config.llm.configured and self._llm is None:
                self._llm = ChatModel(self.config.llm)
            if self._embedder is None:
                # Made on first use: commands that embed nothing never load a model (seconds for a
                # local one) nor need its package (a core install lists a store without
                # sentence-transformers). A new store needs the vector size now, and says so here.
                embedding = self.config.embedding
                self._embedder = LazyEmbedder(lambda: create_embedder(embedding), embedding.backend,
                                              self._check_vector_size, self.progress)
            self._repo = MemoryRepo(self._store, self._embedder, self.collection)
            # Finish or undo what a crash interrupted, before anything reads (the repo tells a
            # replay whether a swap it finds replaced was won before: `VectorStore.replay_checks`).
            await self._store.recover()
            if not isinstance(self._embedder, LazyEmbedder) or None in await self._stored_dims():
                await self._repo.create()  # a new store needs the size now; an existing one has it on disk
        except BaseException:
            if not await self._discard_empty_new_store() and self._store is not None:
                await self._store.close()
                self._store = None
            if self._llm is not None and self._owns_llm:
                await self._llm.close()
                self._llm = None
            raise
        self._opened = True

    async def _discard_empty_new_store(self) -> bool:
        store, self._opened = self._store, False
        if store is None or not self._owns_store:
            return False
        self._store = None
        try:
            empty = all([await store.count(name) == 0 for name in (self.collection, self.collection + VERSIONS_SUFFIX)
                         if await store.collection_dim(name) is not None])
        except ReMeError:
            empty = False
        if not (empty and await store.remove()):
            await store.close()
            return False
        for folder in self._made_dirs:  # deepest first; each only if left empty
            try:
                folder.rmdir()
            except OSError:
                break
        return True

    async def _stored_dims(self) -> list[int | None]:
        assert self._store is not None
        return [await self._store.collection_dim(name) for name in (self.collection, self.collection + VERSIONS_SUFFIX)]

    async def _check_vector_size(self, dim: int) -> None:
        """The embedder's size against the stored collections', when it is first loaded."""
        for name, stored in zip((self.collection, self.collection + VERSIONS_SUFFIX), await self._stored_dims()):
            if stored is not None and stored != dim:
                raise VectorSizeError(f"collection {name!r} holds vectors of size {stored}, but the "
                                      f"{self.config.embedding.backend} embedder makes size {dim}: use the "
                                      "embedder it was made with, another vector_store.collection, or export "
                                      "and import into a new one")

    async def close(self, *, discard: bool = False) -> bool:
        """Release the store (and its directory lock) once background work has finished. Writes
        were already durable.

        `discard=True` also removes the store if this `ReMe` created it when it opened and it
        still holds nothing (no memory, no version): what a command that failed before writing
        does, so that it leaves no empty store behind (nor the working directory, if it made that
        and it is left empty). Returns whether the store was removed; a store that was there
        before, or holds anything, is only closed."""
        if self._background:
            await self.wait_background()
        if self._reads and self._repo is not None and self._opened:
            await self.flush_reads()
        removed = discard and await self._discard_empty_new_store()
        if self._store is not None:
            await self._store.close()
            if self._owns_store:
                self._store = None
        if self._embedder is not None and self._owns_embedder:
            await self._embedder.close()
            self._embedder = None
        if self._llm is not None and self._owns_llm:
            await self._llm.close()
            self._llm = None
        self._opened = False
        return removed

    async def __aenter__(self) -> "ReMe":
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- writing ---------------------------------------------------------------------------------
    async def add_memory(self, content: str, *, user_name: str | None = None, task_name: str | None = None,
                         tool_name: str | None = None, memory_type: MemoryType | str | None = None,
                         when_to_use: str = "", metadata: Mapping[str, Any] | None = None,
                         tags: Sequence[str] | None = None, score: float = 0.0,
                         message_time: datetime | None = None, author: str = "",
                         ref_ids: Sequence[str] | None = None, expires_at: datetime | None = None,
                         ttl: timedelta | float | None = None) -> MemoryNode:
        """Store one memory for a user, task or tool and return it.

        Adding the same content (after normalizing case and spaces) for the same type and target
        again returns the memory already stored instead of a duplicate. `expires_at` (or `ttl`, a
        timedelta or seconds from now) makes it expire: no read returns it after that time, and
        `prune` deletes it.
        """
        scope = self._require_scope(user_name, task_name, tool_name, "add_memory")
        mtype = scope_types(scope, memory_type)[0]
        fields: dict[str, Any] = dict(memory_type=mtype, target_kind=scope.kind, memory_target=scope.name,
                                      content=content, when_to_use=when_to_use,
                                      metadata=_mapping_arg(metadata, "metadata"), tags=_list_arg(tags, "tags"),
                                      score=score, author=author, ref_ids=_list_arg(ref_ids, "ref_ids"))
        if message_time is not None:
            fields["message_time"] = message_time
        expiry = _expiry_arg(expires_at, ttl)
        if expiry is not None:
            fields["expires_at"] = expiry
        try:
            node = MemoryNode(**fields)
        except ValidationError as exc:
            raise _invalid(exc) from None
        return (await self.add_memories([node]))[0]

    async def add_memories(self, nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
        """Store several nodes in one batch; each result is the stored node (an existing one for duplicates).
        Each node lives in its own scope (`target_kind`, `memory_target`); a node whose `memory_id`
        is already stored is refused (`InvalidInputError`, nothing written): an add never replaces."""
        nodes = _list_arg(nodes, "nodes")
        if not all(isinstance(n, MemoryNode) for n in nodes):
            raise InvalidInputError("add_memories takes a list of MemoryNode")
        written = await self.repo.apply([Change(new=node) for node in nodes])
        return [node for node, _ in written]

    async def update_memory(self, memory_id: str, *, content: str | None = None, when_to_use: str | None = None,
                            metadata: Mapping[str, Any] | None = None, tags: Sequence[str] | None = None,
                            score: float | None = None, message_time: datetime | None = None,
                            author: str | None = None, ref_ids: Sequence[str] | None = None,
                            expires_at: datetime | None = None, user_name: str | None = None,
                            task_name: str | None = None, tool_name: str | None = None) -> MemoryNode:
        """Change fields of a memory; its id stays, `version` goes up, `time_modified` is now.
        An expired memory is not found (as for every call by id)."""
        changes = {k: v for k, v in dict(content=content, when_to_use=when_to_use, metadata=metadata, tags=tags,
                                         score=score, message_time=message_time, author=author,
                                         ref_ids=ref_ids, expires_at=expires_at).items() if v is not None}
        if not changes:
            raise InvalidInputError("update_memory needs at least one field to change")
        memory_id = _canonical_id(memory_id)
        scope = scope_of(user_name, task_name, tool_name)
        plain = {k: (_mapping_arg(v, k) if k == "metadata" else _list_arg(v, k) if k in ("tags", "ref_ids") else v)
                 for k, v in changes.items()}

        def revise(old: MemoryNode) -> MemoryNode:
            try:
                return old.revised(**plain)
            except ValidationError as exc:
                raise _invalid(exc) from None

        (node,) = await self.repo.modify([_canonical_id(memory_id)], revise, scope=scope, reason="update_memory",
                                         alive_at=utcnow())
        return node

    async def delete_memory(self, memory_id: str, *, user_name: str | None = None, task_name: str | None = None,
                            tool_name: str | None = None) -> None:
        """Delete one memory; `MemoryNotFoundError` if it is not there (in the named scope).
        The deleted state stays readable through `history(memory_id)` until its scope is wiped."""
        # One read, and a write conditional on it (retried on the newer state when another writer got there first).
        await self.repo.modify([_canonical_id(memory_id)], lambda old: None,
                               scope=scope_of(user_name, task_name, tool_name), reason="delete_memory",
                               alive_at=utcnow())

    async def delete_all(self, *, user_name: str | None = None, task_name: str | None = None,
                         tool_name: str | None = None, memory_type: MemoryType | str | None = None,
                         everything: bool = False) -> int:
        """Delete every memory of a scope (optionally of one type), with the versions kept of them;
        wiping all scopes needs `everything=True`. Returns how many memories were deleted."""
        if not isinstance(everything, bool):
            raise InvalidInputError("everything must be True or False")
        scope = scope_of(user_name, task_name, tool_name)
        if scope is None and not everything:
            raise InvalidInputError("delete_all needs user_name, task_name or tool_name, or everything=True")
        flt = self._scope_filter(scope, memory_type, primary=False)
        repo = self.repo
        async with repo.lock:
            if flt is None:
                n = await self.store.count(self.collection)
                dim = await self.store.collection_dim(self.collection)  # recreated as it was: no model needed
                await self.store.mark_purged(self.collection, None)
                await self.store.write([DropCollection(self.collection), DropCollection(repo.versions),
                                        *await repo.create_ops(dim)])
                return n
            n = await self.store.count(self.collection, flt)
            if self.store.shared:  # which memories go, versions included: see `VectorStore.mark_purged`
                await self.store.mark_purged(self.collection, sorted(
                    {r.node.memory_id async for r in self.store.iter_records(self.collection, flt)}
                    | {str(r.node.metadata.get("version_of")) async for r in self.store.iter_records(repo.versions, flt)}))
            # The memories before their versions: see `VectorStore.fences`.
            await self.store.write([DeleteWhere(self.collection, flt), DeleteWhere(repo.versions, flt)])
            return n

    # -- reading ---------------------------------------------------------------------------------
    async def get_memory(self, memory_id: str, *, user_name: str | None = None, task_name: str | None = None,
                         tool_name: str | None = None) -> MemoryNode:
        """One memory by id; with a scope, a memory of another target counts as not found, and so
        does an expired one."""
        found = await self.repo.get([_canonical_id(memory_id)], scope_of(user_name, task_name, tool_name), utcnow())
        if not found:
            raise MemoryNotFoundError(str(memory_id))
        return next(iter(found.values()))

    async def search_memory(self, query: str, *, user_name: str | Sequence[str] | None = None,
                            task_name: str | Sequence[str] | None = None, tool_name: str | Sequence[str] | None = None,
                            memory_type: MemoryType | str | None = None,
                            top_k: int = 10, mode: SearchMode = "hybrid", filters: FilterSpec = None,
                            score_threshold: float | None = None,
                            vector: Sequence[float] | None = None) -> list[SearchResult]:
        """Memories ranked by relevance to `query`: `hybrid` (default), `dense` or `keyword`.

        `vector`: the query's embedding, made by the caller (a framework that embeds its queries
        itself, with this ReMe's embedder): a `dense` search by it, `query` not embedded (it may be
        empty). Its size must be the collection's (`VectorSizeError` names both otherwise).

        With a scope and no `memory_type`, a search looks in the scope's main type (personal for a
        user, procedural for a task, tool for a tool). A list of names (`user_name=["alice",
        "bob"]`) searches those targets' memories as one ranked list; each result's node says whose
        it is (`memory_target`).
        """
        if vector is None:
            _text_arg(query, "query", MAX_QUERY_CHARS)
        elif mode != "dense" or not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
            raise InvalidInputError("a search by vector is a dense search (mode='dense'), its query a string")
        check_int(top_k, "top_k")
        if mode not in ("dense", "keyword", "hybrid"):
            raise InvalidInputError(f"search mode must be dense, keyword or hybrid, not {str(mode)[:40]!r}")
        if score_threshold is not None:
            score_threshold = check_number(score_threshold, "score_threshold")
        flt = self._where(user_name, task_name, tool_name, memory_type, filters, primary=True)
        if vector is not None:
            query_vector: list[float] | None = await self._caller_vector(vector)
        else:
            query_vector = None if mode == "keyword" else (await self.embedder.embed([query]))[0]
        hits = await self.store.search(self.collection, vector=query_vector, text=query, mode=mode, flt=flt,
                                       limit=top_k, score_threshold=score_threshold)
        await self._count_reads([h.node.memory_id for h in hits])
        return hits

    async def _caller_vector(self, vector: Any) -> list[float]:
        """A caller's query vector: finite numbers, as many as the collection's vectors hold."""
        if isinstance(vector, (str, bytes, Mapping)) or not isinstance(vector, Sequence) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
            raise InvalidInputError("vector must be a list of finite numbers")
        stored = await self.store.known_dim(self.collection)
        dim = stored if stored is not None else await self.embedder.dimension()
        if len(vector) != dim:
            raise VectorSizeError(f"the query vector has size {len(vector)}, but collection "
                                  f"{self.collection!r} holds vectors of size {dim} (the "
                                  f"{self.config.embedding.backend} embedder's): embed queries with this ReMe's embedder")
        return [float(x) for x in vector]

    async def list_memory(self, *, user_name: str | Sequence[str] | None = None,
                          task_name: str | Sequence[str] | None = None, tool_name: str | Sequence[str] | None = None,
                          memory_type: MemoryType | str | None = None,
                          filters: FilterSpec = None, sort_key: str | None = None, direction: Direction = "desc",
                          limit: int = 100, cursor: str | None = None) -> MemoryPage:
        """A page of memories; sort by time_created, time_modified, message_time, score or version."""
        check_int(limit, "limit")
        if cursor is not None and not isinstance(cursor, str):
            raise InvalidInputError("cursor must be a string (a page's next_cursor) or None")
        if sort_key is not None and not isinstance(sort_key, str) or not isinstance(direction, str):
            raise InvalidInputError("sort_key and direction are strings")
        flt = self._where(user_name, task_name, tool_name, memory_type, filters)
        return await self.store.list(self.collection, flt=flt, sort_key=sort_key, direction=direction,
                                     limit=limit, cursor=cursor)

    async def count_memory(self, *, user_name: str | Sequence[str] | None = None,
                           task_name: str | Sequence[str] | None = None, tool_name: str | Sequence[str] | None = None,
                           memory_type: MemoryType | str | None = None,
                           filters: FilterSpec = None) -> int:
        return await self.store.count(self.collection,
                                      self._where(user_name, task_name, tool_name, memory_type, filters))

    # -- files -----------------------------------------------------------------------------------
    async def export_memory(self, path: str | Path, *, user_name: str | None = None, task_name: str | None = None,
                            tool_name: str | None = None, memory_type: MemoryType | str | None = None,
                            filters: FilterSpec = None, with_vectors: bool = False,
                            with_history: bool = True) -> int:
        """Write memories to a JSONL file, one a line (every field; vectors on request); returns
        how many. A memory with earlier versions carries them in `history` (oldest first, as
        `history()` returns them, with their vectors on request), so `import_memory` into
        another store restores them too; `with_history=False` leaves them out."""
        path = _path_arg(path)
        if not isinstance(with_vectors, bool) or not isinstance(with_history, bool):
            raise InvalidInputError("with_vectors and with_history are True or False")
        flt = self._where(user_name, task_name, tool_name, memory_type, filters)
        repo = self.repo

        async def rows(records: list[VectorRecord]) -> list[dict[str, Any]]:
            versions = await repo.versions_of([r.node.memory_id for r in records], with_vectors=with_vectors) \
                if with_history else {}
            out = []
            for record in records:
                row = record.node.model_dump(mode="json")
                if with_vectors:
                    row["vector"] = record.vector
                history = [{**v.model_dump(mode="json"), **({"vector": vec} if with_vectors else {})}
                           for v, vec in versions.get(record.node.memory_id, []) if v.node.scope == record.node.scope]
                if history:  # (a version of another scope under this id could only come from a forged file)
                    row["history"] = history
                out.append(row)
            return out

        async def lines() -> AsyncIterator[dict[str, Any]]:
            page: list[VectorRecord] = []
            async for record in self.store.iter_records(self.collection, flt, with_vectors=with_vectors):
                page.append(record)
                if len(page) == EXPORT_PAGE:
                    for row in await rows(page):
                        yield row
                    page = []
            for row in await rows(page):
                yield row

        return await write_jsonl(path, lines())

    async def backup(self, path: str | Path) -> int:
        """Write the whole store (every memory and every version, vectors included) to one JSONL
        file, a fraction of the store's size on disk; returns how many records. `restore` loads it."""
        return await backups.dump(self.store, {"memories": self.collection, "versions": self.repo.versions},
                                 _path_arg(path))

    async def restore(self, path: str | Path) -> int:
        """Load a file written by `backup` into this store, which must hold no memories yet (a new
        working directory, or after `delete_all(everything=True)`); all or nothing, as one write.
        Returns how many records were restored."""
        dim, records = backups.load(_path_arg(path), {"memories": MemoryNode.model_validate,
                                                      "versions": version_record})
        async with self.repo.lock:
            held = await self.store.count(self.collection) + await self.store.count(self.repo.versions)
            if held:
                raise InvalidInputError(f"restore needs an empty store; this one holds {held} records "
                                        "(use a new working_dir, or delete_all(everything=True) first)")
            if dim != await self.store.collection_dim(self.collection):
                raise VectorSizeError(f"the backup holds vectors of size {dim}, this store "
                                      f"{await self.store.collection_dim(self.collection)}: restore it with the "
                                      "embedder it was made with")
            await self.store.write([Upsert(self.collection, records["memories"]),
                                    Upsert(self.repo.versions, records["versions"])])
        return sum(len(r) for r in records.values())

    async def import_memory(self, path: str | Path, *, format: str = "jsonl", user_name: str | None = None,
                            task_name: str | None = None, tool_name: str | None = None) -> int:
        """Load memories from a file, as one batch: every line is validated first, so a bad line
        means nothing is written. Returns how many memories were written.

        `format="jsonl"`: a file written by `export_memory` (lines without a usable vector are
        embedded). A line whose id is stored in the same scope replaces that memory (its old
        state kept in `history`; unchanged lines are skipped); a line whose id is stored under
        another target is an error and nothing is imported. `format="reme-jsonl"`: a memory pool
        of the original ReMe (one procedural memory a line), stored as procedural memories of
        `task_name`; fields without a place in `MemoryNode` go to metadata, memories already
        stored (same text) are skipped, and a line whose id another target uses gets a new id
        (the pool's id kept as `metadata.original_memory_id`), so one pool can serve several tasks.
        With a target named for `jsonl`, every line must belong to it.
        """
        path = _path_arg(path)
        if format == "jsonl":
            scope = scope_of(user_name, task_name, tool_name)
            dim = await self.store.collection_dim(self.collection) or await self.embedder.dimension()
            return await self.repo.restore(read_export(path, dim, scope), source=str(path))
        if format != "reme-jsonl":
            raise InvalidInputError(f"unknown import format {str(format)[:40]!r}; use jsonl or reme-jsonl")
        if user_name is not None or tool_name is not None:
            raise InvalidInputError("a reme-jsonl pool holds task memories: name task_name")
        scope = self._require_scope(None, task_name, None, "import_memory with format reme-jsonl")
        pool = read_reme_jsonl(path, scope.name)
        return await self.repo.restore([Imported(n) for n in pool], source=str(path), foreign="new_id")

    async def history(self, memory_id: str, *, user_name: str | None = None, task_name: str | None = None,
                      tool_name: str | None = None) -> list[MemoryVersion]:
        """Earlier states of a memory, oldest first: what each UPDATE replaced and what a DELETE
        removed. `MemoryNotFoundError` when the id is neither stored nor has versions (in the
        named scope: another target's id is not found)."""
        return await self.repo.history(_canonical_id(memory_id), scope_of(user_name, task_name, tool_name))

    # -- Markdown --------------------------------------------------------------------------------
    async def export_markdown(self, directory: str | Path, *, user_name: str | None = None,
                              task_name: str | None = None, tool_name: str | None = None,
                              overwrite: bool = False) -> MarkdownExport:
        """Write a target's memories as editable Markdown under `directory`: `MEMORY.md` and
        `journal/YYYY-MM-DD.md` for a user, `LESSONS.md` for a task, `TOOL.md` for a tool (see
        docs/markdown.md). `sync_markdown` reads the edited tree back.

        Writing over a tree with edits not synced yet, or over Markdown files ReMe did not
        write, is refused (`InvalidInputError`) unless `overwrite=True`; another target's tree
        always is. Files a previous export wrote that would now be empty journals are removed;
        other files in the directory are left alone."""
        scope = self._require_scope(user_name, task_name, tool_name, "export_markdown")
        root = markdown.directory_arg(directory)
        if not isinstance(overwrite, bool):
            raise InvalidInputError("overwrite must be True or False")
        async with self.repo.target_lock(scope.kind, scope.name):
            nodes = await self._markdown_nodes(scope)
            tree = markdown.read_tree(root)
            held = tree.scope
            if held is not None and held != scope:
                raise InvalidInputError(f"{root} holds the Markdown of {held}, not {scope}: export into another "
                                        "directory")
            if not overwrite:
                if held is None and tree.files:
                    raise InvalidInputError(f"{root} holds {tree.files[0].path}, which ReMe did not write: pass "
                                            "overwrite=True (--overwrite) to replace it, or export elsewhere")
                if held is not None and not markdown.plan(tree, scope, {n.memory_id: n for n in nodes}).empty:
                    raise InvalidInputError(f"{root} has edits not synced yet: sync_markdown them first, or pass "
                                            "overwrite=True (--overwrite) to drop them")
            return self._write_markdown(root, scope, nodes, tree)

    async def sync_markdown(self, directory: str | Path, *, user_name: str | None = None,
                            task_name: str | None = None, tool_name: str | None = None, dry_run: bool = False,
                            force: bool = False) -> MarkdownSyncResult:
        """Read a tree written by `export_markdown` for the same target back into the store: an
        edited item is an update (the old state kept in `history`), a removed item a delete, an
        item without a marker a new memory. An item edited or removed here that the store
        changed since the export is a conflict; an item that cannot be read without guessing
        (a marker twice, a broken marker, text outside a list item) is ambiguous.

        All the changes are written as one batch, or none: with a conflict or an ambiguous item
        nothing is written (`applied` False) unless `force=True`, which writes the clear changes
        and leaves the reported items as the store has them. `dry_run=True` only reports. After
        a clean sync the tree is written again from the store (new items get their markers)."""
        scope = self._require_scope(user_name, task_name, tool_name, "sync_markdown")
        root = markdown.directory_arg(directory)
        if not isinstance(dry_run, bool) or not isinstance(force, bool):
            raise InvalidInputError("dry_run and force must be True or False")
        tree = markdown.read_tree(root)
        held = tree.scope
        if held is None:
            raise InvalidInputError(f"{root} holds no Markdown tree written by ReMe (no file with its front "
                                    "matter): export_markdown writes one")
        if held != scope:
            raise InvalidInputError(f"{root} holds the Markdown of {held}, not {scope}: a tree is synced only "
                                    "into the target it was exported from")
        async with self.repo.target_lock(scope.kind, scope.name):
            stored = {n.memory_id: n for n in await self._markdown_nodes(scope)}
            plan = markdown.plan(tree, scope, stored)
            if dry_run or ((plan.conflicts or plan.ambiguous) and not force):
                return plan.result(dry_run=dry_run, applied=False)
            changes = ([Change(new=n, reason=f"markdown sync: {plan.where[n.memory_id]}") for n in plan.adds]
                       + [Change(new=new, old=old, reason=f"markdown sync: {plan.where[old.memory_id]}")
                          for old, new in plan.updates]
                       + [Change(old=old, reason=f"markdown sync: removed from {plan.where[old.memory_id]}")
                          for old in plan.deletes])
            written = await self.repo.apply(changes) if changes else []
            result = plan.result(dry_run=False, applied=True)
            result.added = [n for (n, wrote), c in zip(written, changes) if wrote and c.old is None]
            result.updated = [n for (n, wrote), c in zip(written, changes) if wrote and c.old and c.new]
            result.deleted = [n for (n, wrote), c in zip(written, changes) if wrote and c.new is None]
            if not result.blocked:
                self._write_markdown(root, scope, await self._markdown_nodes(scope), tree)
                result.rewritten = True
            return result

    async def _markdown_nodes(self, scope: Scope) -> list[MemoryNode]:
        """The memories a tree shows and a sync compares with: the target's main type, not expired."""
        flt = scope_filter(scope, (markdown.main_type(scope),), live())
        return [record.node async for record in self.store.iter_records(self.collection, flt)]

    @staticmethod
    def _write_markdown(root: Path, scope: Scope, nodes: list[MemoryNode], tree: markdown.Tree) -> MarkdownExport:
        files = markdown.render(nodes, scope, utcnow())
        owned = [f.path for f in tree.files if f.scope == scope]
        markdown.write_tree(root, files, stale=owned)
        return MarkdownExport(directory=str(root), files=sorted(files), memories=len(nodes))

    # -- pipelines -------------------------------------------------------------------------------
    async def summarize_memory(self, messages: MessagesSpec | None = None, *,
                               user_name: str | Sequence[str] | None = None,
                               trajectories: Sequence[Trajectory | Mapping[str, Any]] | None = None,
                               task_name: str | None = None,
                               tool_calls: Sequence[ToolCallRecord | Mapping[str, Any]] | None = None,
                               tool_name: str | None = None, now: datetime | None = None,
                               session_name: str | None = None) -> SummaryResult:
        """Turn what happened into memories; one of three inputs:

        - `messages` + `user_name` (one name or several, summarized concurrently): personal
          memories (2 LLM calls per user, 1 when nothing is stored yet or nothing is worth keeping);
          `session_name` instead of `messages` reads them from that session (its summary not included);
        - `trajectories` + `task_name`: procedural lessons (one LLM call per trajectory, one
          comparing the best and worst run when both successes and failures are given, one
          validating the lessons);
        - `tool_calls` (+ `tool_name` to insist they all belong to it): exact statistics and one
          rewritten usage guideline per tool (one LLM call per tool).

        Every LLM call runs before the first write: if one fails for good, `LLMError` is raised
        and nothing is written. `now` stands in for the current time.
        """
        now = _now_arg(now)
        if session_name is not None:
            if messages is not None:
                raise InvalidInputError("summarize_memory takes messages or session_name, not both")
            messages = to_plain_messages(await self.get_messages(session_name=session_name))
            if not messages:
                raise InvalidInputError(f"session {session_name!r} holds no messages with text to summarize")
        given = [k for k, v in (("messages", messages), ("trajectories", trajectories), ("tool_calls", tool_calls))
                 if v is not None]
        if len(given) != 1:
            raise InvalidInputError("summarize_memory takes one of messages (with user_name), trajectories "
                                    "(with task_name) or tool_calls")
        if messages is not None:
            if user_name is None or task_name is not None or tool_name is not None:
                raise InvalidInputError("messages are summarized for user_name (one name or a list)")
            names = [user_name] if isinstance(user_name, str) else _list_arg(user_name, "user_name")
            if not names:
                raise InvalidInputError("summarize_memory needs at least one user_name")
            users = sorted({self._require_scope(n, None, None, "summarize_memory").name for n in names})
            msgs = to_messages(messages)  # type: ignore[arg-type]
            personal = PersonalSummarizer(self.repo, self._require_llm("summarize_memory"), self._prompts_lib,
                                          self.config.retrieval)
            return await self._summarize("user", users, lambda u: personal.plan(msgs, u, now), personal.commit)
        if user_name is not None:
            raise InvalidInputError("user_name goes with messages")
        if trajectories is not None:
            task = self._require_scope(None, task_name, None, "summarize_memory with trajectories").name
            if tool_name is not None:
                raise InvalidInputError("trajectories are summarized for task_name")
            runs = to_trajectories(trajectories)  # type: ignore[arg-type]
            procedural = ProceduralSummarizer(self.repo, self._require_llm("summarize_memory"), self._prompts_lib,
                                              self.config.procedural)
            return await self._summarize("task", [task], lambda t: procedural.plan(runs, t, now), procedural.commit)
        if task_name is not None:
            raise InvalidInputError("task_name goes with trajectories")
        if tool_name is not None:
            tool_name = self._require_scope(None, None, tool_name, "summarize_memory").name
        records = to_records(tool_calls, tool_name)  # type: ignore[arg-type]
        by_tool: dict[str, list[ToolCallRecord]] = {}
        for record in records:
            by_tool.setdefault(record.tool_name, []).append(record)
        tools = ToolSummarizer(self.repo, self._require_llm("summarize_memory"), self._prompts_lib, self.config.tool)
        return await self._summarize("tool", sorted(by_tool), lambda t: tools.plan(by_tool[t], t, now), tools.commit)

    async def _summarize(self, kind: str, targets: list[str], plan: Callable[[str], Awaitable[P]],
                         commit: Callable[[P], Awaitable[SummaryResult]]) -> SummaryResult:
        """Plan every target concurrently (the LLM calls), then write them all. A target's lock is
        held throughout, so two summaries of one target never decide on the same stale state."""
        async with contextlib.AsyncExitStack() as held:
            for target in targets:  # sorted targets: never deadlocks
                await held.enter_async_context(self.repo.target_lock(kind, target))
            plans = await asyncio.gather(*(plan(t) for t in targets))
            result = SummaryResult()
            for p in plans:
                result.merge(await commit(p))
            return result

    async def retrieve_memory(self, query: str | None = None, *, user_name: str | Sequence[str] | None = None,
                              task_name: str | None = None, tool_name: str | Sequence[str] | None = None,
                              top_k: int | None = None, rewrite: bool | None = None, rerank: bool | None = None,
                              time_window: WindowSpec = None, with_source: bool = False,
                              now: datetime | None = None) -> RetrieveResult:
        """What helps before a reply or a task, ranked, with `text` ready for a prompt.

        - `user_name` (top_k 10; one name or a list, ranked as one list whose nodes say whose
          they are): personal memories for `query`. With an LLM configured (and
          `rewrite` not False, see `retrieval.rewrite`) the query is first rewritten into focused
          queries and a time window; `time_window` (a `TimeWindow` or a (start, end) pair) limits
          `message_time` explicitly; `with_source` attaches the conversation lines.
        - `task_name` (top_k 5): procedural lessons for `query` (a task), optionally reranked
          (`rerank`) and rewritten into one block of advice (`rewrite`) by the LLM; `text` has
          `Experience N:` / `When:` / `What:` lines.
        - `tool_name` (one name or a list; no query needed): each tool's guideline and statistics.
        """
        if top_k is not None:
            check_int(top_k, "top_k")
        now = _now_arg(now)
        window = _window_arg(time_window)
        if tool_name is not None and not isinstance(tool_name, str):
            if user_name is not None or task_name is not None:
                raise InvalidInputError("name one target: user_name, task_name or tool_name, not several")
            names = [self._require_scope(None, None, n, "retrieve_memory").name
                     for n in _list_arg(tool_name, "tool_name")]
            if not names:
                raise InvalidInputError("tool_name must name at least one tool")
            return await retrieve_tools(self.repo, list(dict.fromkeys(names)))
        if user_name is not None and not isinstance(user_name, str):
            if task_name is not None or tool_name is not None:
                raise InvalidInputError("name one target: user_name, task_name or tool_name, not several")
            users = [s.name for s in scopes_of(_list_arg(user_name, "user_name"), None, None) or []]
            return await self._retrieve_personal(query, users, top_k, rewrite, window, with_source, now)
        scope = self._require_scope(user_name, task_name, tool_name, "retrieve_memory")
        if scope.kind == "tool":
            return await retrieve_tools(self.repo, [scope.name])
        if scope.kind == "task":
            query = _text_arg(query, "query", MAX_QUERY_CHARS)
            retriever = ProceduralRetriever(self.repo, self._llm, self._prompts_lib, self.config.procedural,
                                            self.config.retrieval)
            found = await retriever.retrieve(query, scope.name, top_k=top_k or 5, rerank=rerank, rewrite=rewrite)
            await self._count_reads([m.node.memory_id for m in found.memories])
            return found
        return await self._retrieve_personal(query, [scope.name], top_k, rewrite, window, with_source, now)

    async def _retrieve_personal(self, query: Any, users: list[str], top_k: int | None, rewrite: bool | None,
                                 window: TimeWindow | None, with_source: bool, now: datetime | None) -> RetrieveResult:
        query = _text_arg(query, "query", MAX_QUERY_CHARS)
        personal = PersonalRetriever(self.repo, self._llm, self._prompts_lib, self.config.retrieval)
        found = await personal.retrieve(query, users, top_k=top_k or 10, rewrite=rewrite, time_window=window,
                                        with_source=with_source, now=now)
        await self._count_reads([m.node.memory_id for m in found.memories])
        return found

    async def _count_reads(self, ids: list[str]) -> None:
        """Note reads (with `retrieval.track_reads`); written in one batch once `read_flush` are pending."""
        if not self.config.retrieval.track_reads or not ids:
            return
        now = utcnow()
        for mid in ids:
            count, _ = self._reads.get(mid, (0, now))
            self._reads[mid] = (count + 1, now)
        if len(self._reads) >= self.config.retrieval.read_flush:
            await self.flush_reads()

    async def flush_reads(self) -> int:
        """Write the reads counted so far (`access_count`, `last_accessed`; see
        `retrieval.track_reads`) in one write; returns how many memories it updated."""
        reads, self._reads = self._reads, {}
        return await self.repo.touch(reads)

    async def record_usage(self, memory_ids: Sequence[str], success: bool, *, user_name: str | None = None,
                           task_name: str | None = None, tool_name: str | None = None) -> list[MemoryNode]:
        """Count one use of each memory (`metadata.freq`) and, when it went well, one success
        (`metadata.utility`). Typically called after an agent used retrieved lessons. With a
        scope, another target's id is not found; an id not found means nothing is counted."""
        if memory_ids is None:
            raise InvalidInputError("record_usage needs memory_ids: a memory id or a list of them")
        if not isinstance(success, bool):
            raise InvalidInputError(f"success must be True or False, not {type(success).__name__}")
        memory_ids = [memory_ids] if isinstance(memory_ids, str) else _list_arg(memory_ids, "memory_ids")
        ids = list(dict.fromkeys(_canonical_id(m) for m in memory_ids))
        now = utcnow()

        def used(old: MemoryNode) -> MemoryNode:
            return counted(old, bool(success)).model_copy(update={"access_count": old.access_count + 1,
                                                                  "last_accessed": now})

        return await self.repo.modify(ids, used, scope=scope_of(user_name, task_name, tool_name), keep_version=False,
                                      alive_at=now)

    async def prune(self, task_name: str | None = None, *, user_name: str | None = None, tool_name: str | None = None,
                    min_freq: int = 3, min_utility_ratio: float = 0.3, everything: bool = False,
                    now: datetime | None = None) -> list[MemoryNode]:
        """Delete what has had its time; returns the memories deleted (their last state stays in
        `history`, see `forget(purge=True)` to remove that too).

        - every memory of the target (user, task or tool; all of them with `everything=True`)
          whose `expires_at` has passed (at `now`, default the current time);
        - with `task_name`, also the task's lessons used at least `min_freq` times that succeeded
          in less than `min_utility_ratio` of their uses.
        """
        if not isinstance(everything, bool):
            raise InvalidInputError("everything must be True or False")
        scope = scope_of(user_name, task_name, tool_name)
        if scope is None and not everything:
            raise InvalidInputError("prune needs user_name, task_name or tool_name, or everything=True")
        check_int(min_freq, "min_freq", high=INT64_MAX)
        check_number(min_utility_ratio, "min_utility_ratio", low=0, high=1)
        when = _now_arg(now) or utcnow()
        doomed: dict[str, Change] = {}
        base = self._scope_filter(scope, None, primary=False)
        flt = expired(when) if base is None else And(filters=[base, expired(when)])
        async for record in self.store.iter_records(self.collection, flt):
            doomed[record.node.memory_id] = Change(old=record.node, reason=f"expired at {record.node.expires_at}")
        if scope is not None and scope.kind == "task":
            async for record in self.store.iter_records(self.collection, prune_filter(scope.name, min_freq)):
                if failing(record.node, min_freq, min_utility_ratio):
                    doomed.setdefault(record.node.memory_id, Change(
                        old=record.node, reason=f"pruned: utility below {min_utility_ratio}"))
        written = await self.repo.apply(list(doomed.values()))
        return [node for node, wrote in written if wrote]

    # -- working memory: sessions (reme/memory/session.py) and context (reme/memory/context.py) ----
    @property
    def _sessions(self) -> SessionLog:
        return SessionLog(self.repo)

    async def add_messages(self, messages: Sequence[Any], *, session_name: str,
                           marks: str | Sequence[str] | None = None) -> list[SessionMessage]:
        """Append messages (OpenAI-style dicts, or `Message`s) to a session, in order, each with
        `marks`; one write. Returns them as stored (with their ids).

        >>> await reme.add_messages([{"role": "user", "content": "Book a table for two"}], session_name="chat-1")
        """
        return await self._sessions.add(session_scope(session_name), messages, check_marks(marks))

    async def get_messages(self, *, session_name: str, mark: str | Sequence[str] | None = None,
                           exclude_mark: str | Sequence[str] | None = None, prepend_summary: bool = False,
                           last: int | None = None, after: str | None = None,
                           message_ids: Sequence[str] | None = None) -> list[SessionMessage]:
        """A session's messages in order: with any of `mark`, without any of `exclude_mark`; of
        those only the ones after the message with id `after` (a `MemoryNotFoundError` when the
        session does not hold it), only the `last` ones, only those added with an `id` among
        `message_ids` (the frameworks' own ids, which AgentScope's and LangChain's messages carry:
        the first message added with each); with `prepend_summary`, the compressed summary (when
        there is one) first, as a user message.

        `last`, `after`, `message_ids` and `exclude_mark="compressed"` read through the engine's
        indexes: they cost what they return, however long the session is.

        >>> tail = await reme.get_messages(session_name="chat-1", last=20)
        >>> since = await reme.get_messages(session_name="chat-1", after=tail[-1].id)  # what came since
        """
        scope = session_scope(session_name)
        marks, excluded = check_marks(mark, "mark"), check_marks(exclude_mark, "exclude_mark")
        count = None if last is None else check_int(last, "last", low=1, high=2 ** 40)
        refs = None if message_ids is None else [_text_arg(i, "message_ids", MAX_NAME_CHARS) for i in _list_arg(
            [message_ids] if isinstance(message_ids, str) else message_ids, "message_ids")]
        cursor = None if after is None else _canonical_id(after)
        return await self._sessions.read(scope, marks, excluded, last=count, after=cursor, refs=refs,
                                         prepend_summary=bool(prepend_summary))

    async def delete_messages(self, ids: Sequence[str], *, session_name: str) -> int:
        """Delete messages of a session by id; returns how many were there."""
        wanted = [_canonical_id(i) for i in _list_arg([ids] if isinstance(ids, str) else ids, "ids")]
        return await self._sessions.delete(session_scope(session_name), wanted)

    async def delete_messages_by_mark(self, mark: str | Sequence[str], *, session_name: str) -> int:
        """Delete a session's messages carrying any of `mark`; returns how many."""
        marks = check_marks(mark, "mark")
        if not marks:
            raise InvalidInputError("delete_messages_by_mark needs at least one mark")
        return await self._sessions.delete_by_mark(session_scope(session_name), marks)

    async def update_marks(self, *, session_name: str, ids: Sequence[str] | None = None,
                           add: str | Sequence[str] | None = None,
                           remove: str | Sequence[str] | None = None) -> int:
        """Remove, then add, marks on a session's messages (those with `ids`; all when None), in
        one write; returns how many messages lost or gained a mark. A mark both removed and added
        is kept (moved last), as AgentScope's `InMemoryMemory` keeps it."""
        wanted = None if ids is None else [_canonical_id(i) for i in _list_arg(
            [ids] if isinstance(ids, str) else ids, "ids")]
        added, removed = check_marks(add, "add"), check_marks(remove, "remove")
        if not added and not removed:
            raise InvalidInputError("update_marks needs marks to add or to remove")
        return await self._sessions.remark(session_scope(session_name), wanted, added, removed)

    async def update_compressed_summary(self, summary: str, *, session_name: str) -> None:
        """Replace a session's compressed summary (an empty string removes it)."""
        if not isinstance(summary, str):
            raise InvalidInputError("summary must be a string")
        await self._sessions.set_summary(session_scope(session_name), _safe(summary, "summary"))

    async def session_size(self, *, session_name: str, tokenizer: Tokenizer | None = None) -> SessionSize:
        """How many messages a session holds and how many tokens they and its summary take:
        estimated without a tokenizer, counted with `tokenizer` (text -> count or tokens)."""
        if tokenizer is not None and not callable(tokenizer):
            raise InvalidInputError("tokenizer must be a callable: text -> token count or list of tokens")
        return await self._sessions.size(session_scope(session_name), tokenizer)

    async def clear_session(self, *, session_name: str) -> int:
        """Delete everything a session holds (messages, summary, offloaded tool results); returns
        how many records."""
        return await self._sessions.clear(session_scope(session_name))

    async def session_state(self, *, session_name: str) -> dict[str, Any]:
        """The session as AgentScope's `MemoryBase.state_dict()` has it: `{"content": [[message,
        marks], ...], "_compressed_summary": str}`."""
        return await self._sessions.state(session_scope(session_name))

    async def load_session_state(self, state: Mapping[str, Any], *, session_name: str) -> int:
        """Replace a session's messages and summary with a `session_state` (as one write);
        returns how many messages it holds now."""
        return await self._sessions.load_state(session_scope(session_name), state)

    async def compact_tool_results(self, messages: Sequence[Any], *, session_name: str,
                                   max_chars: int | None = None, ttl_s: float | None = None) -> CompactedContext:
        """`messages` with every tool result longer than `max_chars` (`context.max_tool_chars`)
        replaced by its head and a reference; the whole results are stored in the session (one
        write) and `read_tool_result` gives them back for `ttl_s` seconds (`context.tool_result_ttl_s`)."""
        scope = session_scope(session_name)
        cfg = self.config.context
        limit = positive(max_chars if max_chars is not None else cfg.max_tool_chars, "max_chars")
        ttl = check_number(ttl_s if ttl_s is not None else cfg.tool_result_ttl_s, "ttl_s", low=1e-3, high=1e10)
        messages = _messages_arg(messages)
        before = tokens_of([message_dict(m, i) for i, m in enumerate(messages)], None)
        out, refs, nodes = compact_tool_results(messages, self._sessions, scope, max_chars=limit,
                                                ttl=timedelta(seconds=ttl), preview_chars=cfg.preview_chars)
        await self._sessions.rewrite(nodes)
        return CompactedContext(messages=out, offloaded=refs, tokens_before=before, tokens_after=tokens_of(out, None))

    async def read_tool_result(self, ref: str, *, session_name: str) -> str:
        """The whole tool result a reference in a compacted message names; `MemoryNotFoundError`
        once it expired (or in another session)."""
        return await self._sessions.read_tool_result(session_scope(session_name), _canonical_id(ref))

    async def compact_context(self, messages: Sequence[Any], *, previous_summary: str = "",
                              threshold: int | None = None, reserve: int | None = None,
                              tokenizer: Tokenizer | None = None) -> CompactedContext:
        """Compact a message list the caller holds: when it takes more than `threshold` tokens
        (with `previous_summary`), the older part is summarized (one LLM call per chunk, building on `previous_summary`)
        and `messages` of the result are the summary then the newest messages (at most
        `reserve` tokens, never a tool call without its result). Stores nothing."""
        if not isinstance(previous_summary, str):
            raise InvalidInputError("previous_summary must be a string")
        split = self._check(messages, threshold, reserve, tokenizer, previous_summary)
        result = CompactedContext(messages=context_messages(previous_summary, split.keep), summary=previous_summary,
                                  tokens_before=tokens_of(context_messages(previous_summary, split.compact + split.keep),
                                                          tokenizer))
        if split.compact:
            structured = await compact(split.compact, previous_summary, self._require_llm("compact_context"),
                                       self._prompts_lib, usage=result.usage)
            result.summary, result.structured, result.compacted = structured.render(), structured, len(split.compact)
            result.messages = context_messages(result.summary, split.keep)
        result.tokens_after = tokens_of(result.messages, tokenizer)
        return result

    def _check(self, messages: Any, threshold: int | None, reserve: int | None, tokenizer: Tokenizer | None,
               summary: str) -> ContextSplit:
        """The split, with `threshold` counting the summary too (what is sent is both)."""
        cfg = self.config.context
        limit = check_int(cfg.threshold if threshold is None else threshold, "threshold", low=0, high=2 ** 40)
        keep = check_int(min(cfg.reserve, limit) if reserve is None else reserve, "reserve", low=0, high=2 ** 40)
        if keep > limit:
            raise InvalidInputError(f"reserve ({keep}) must not exceed threshold ({limit})")
        room = limit - tokens_of(context_messages(summary, []), tokenizer)
        return check_context(_messages_arg(messages), max(room, keep), keep, tokenizer=tokenizer)

    async def prepare_context(self, *, session_name: str, threshold: int | None = None, reserve: int | None = None,
                              user_name: str | None = None, tokenizer: Tokenizer | None = None) -> CompactedContext:
        """Before a model call: the session's messages, made to fit. Offloaded tool results past
        their age are dropped; tool results over `context.max_tool_chars` move to the store (a
        reference stays); when the summary and the messages not yet compacted take more than
        `threshold` tokens,
        the older ones are summarized into the session's compressed summary and marked
        `compressed` (one write with the new summary). Returns the summary then the messages
        kept, ready to send. With `user_name`, what was compacted is also summarized into the
        user's long-term memory in the background (`wait_background` waits for it; `close` does)."""
        scope = session_scope(session_name)
        user = self._require_scope(user_name, None, None, "prepare_context").name if user_name is not None else None
        cfg = self.config.context
        sessions = self._sessions
        self._check([], threshold, reserve, tokenizer, "")  # the arguments, before anything is read or written
        if user is not None:  # filing into long-term memory always takes the LLM: say so before writing
            self._require_llm("prepare_context(user_name=...)")
        async with sessions.lock(scope):
            expired = await sessions.expired(scope)
            head = await sessions.head(scope)
            frontier = frontier_of(head)
            nodes = await sessions.get(scope, [], [COMPRESSED], since=frontier)  # what is new since the summary
            messages = [as_message(n).message for n in nodes]
            summary = head.content if head is not None else ""
            before = tokens_of(context_messages(summary, messages), tokenizer)
            messages, refs, offloads = compact_tool_results(
                messages, sessions, scope, max_chars=cfg.max_tool_chars,
                ttl=timedelta(seconds=cfg.tool_result_ttl_s), preview_chars=cfg.preview_chars)
            now = utcnow()
            for ref in refs:  # the stored message keeps only the reference, in the same write as the result
                nodes[ref.message_index] = sessions.with_message(nodes[ref.message_index], messages[ref.message_index],
                                                                 now)
            changed = {nodes[r.message_index].memory_id for r in refs}
            split = self._check(messages, threshold, reserve, tokenizer, summary)
            result = CompactedContext(messages=[], summary=summary, offloaded=refs, tokens_before=before)
            extra: list[WriteOp] = list(expired)
            if split.compact:  # the LLM call comes before any write: when it fails, nothing is written
                structured = await compact(split.compact, summary, self._require_llm("prepare_context"),
                                           self._prompts_lib, usage=result.usage)
                summary = structured.render()
                for i in range(len(split.compact)):
                    nodes[i] = nodes[i].model_copy(update={"tags": [*nodes[i].tags, COMPRESSED][-MAX_TAGS:],
                                                           "time_modified": now})
                    changed.add(nodes[i].memory_id)
                result.summary, result.structured, result.compacted = summary, structured, len(split.compact)
            # Every message before the first one not compacted is compacted now: later calls start there.
            k = len(split.compact)
            moved = nodes[k].time_created if k < len(nodes) else (
                nodes[-1].time_created + timedelta(microseconds=1) if nodes else frontier)
            if split.compact or (head is not None and moved != frontier):
                extra += sessions.summary_ops(scope, summary, await sessions.placeholder(), moved)
            # One write: expired results gone, offloaded results, the messages now holding references
            # or marked compressed, and the new summary: all there after a crash, or none of them.
            await sessions.rewrite([n for n in nodes if n.memory_id in changed] + offloads, extra)
            result.messages = context_messages(summary, split.keep)
            result.tokens_after = tokens_of(result.messages, tokenizer)
            if user is not None:
                await self._summarize_compacted_later(scope, user, nodes[:k])
        return result

    async def _summarize_compacted_later(self, scope: Scope, user: str, compacted: list[MemoryNode]) -> None:
        """Start summarizing into the user's long-term memory, in the background, the messages
        just `compacted`; the first time in this process, and after a failure, every compacted
        message of the session not yet summarized (those a crash left behind included)."""
        if (scope, user) not in self._swept:
            self._swept.add((scope, user))
            done = Not(filter=TagsAny(field=f"metadata.{SUMMARIZED}", values=[user]))  # narrowed in the engine
            compacted = await self._sessions.nodes(scope, extra=And(filters=[TagsAny(values=[COMPRESSED]), done]))
        pending = [n for n in compacted if not n.metadata.get(SUMMARIZED) and n.memory_id not in self._in_flight]
        if not pending:
            return
        ids = [n.memory_id for n in pending]
        self._in_flight.update(ids)
        task = asyncio.create_task(self._summarize_into(scope, user, ids))
        self._background[task] = scope.name
        task.add_done_callback(lambda t: self._finished(t, ids))
        task.add_done_callback(lambda t: None if t.cancelled() or t.exception() is None
                               else self._swept.discard((scope, user)))  # looked at again next time

    def _background_lock(self, scope: Scope) -> WriteLock:
        """Held while a session's compacted messages are summarized into long-term memory, by
        every process sharing the store (several `reme serve` workers): another process's first
        `prepare_context` of the session sweeps up the same messages while they are being
        summarized; it waits here, then finds them marked and leaves them."""
        return self.repo.target_lock("background", scope.name)

    async def _summarize_into(self, scope: Scope, user: str, ids: list[str]) -> None:
        sessions = self._sessions
        async with self._background_lock(scope):
            nodes = [n for n in await sessions.by_ids(scope, ids) if not n.metadata.get(SUMMARIZED)]
            if not nodes:  # another process summarized them meanwhile
                return
            for batch in text_batches(to_plain_messages([as_message(n) for n in nodes])):
                await self.summarize_memory(batch, user_name=user)
            async with sessions.lock(scope):
                fresh = await sessions.by_ids(scope, [n.memory_id for n in nodes])
                await sessions.rewrite([n.model_copy(update={"metadata": {**n.metadata, SUMMARIZED: user}})
                                        for n in fresh])

    def _finished(self, task: "asyncio.Task[None]", ids: list[str]) -> None:
        session = self._background.pop(task, "")
        self._in_flight.difference_update(ids)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("summarizing compacted session messages into long-term memory failed (session %r): %s",
                      session, exc, exc_info=exc)
            self.background_errors.append(exc)
            self._error_sessions.append(session)

    async def wait_background(self, *, session_name: str | None = None) -> int:
        """Wait for the background work `prepare_context` started (summaries of compacted messages
        into long-term memory) for `session_name` (every session's when None); returns how many
        of them failed since the last call that named the same session (or none). Each session's
        count is its own, and the unscoped count another: reading one resets no other. Each
        failure was logged, is in `background_errors`, and is tried again by the next
        `prepare_context` of its session. With a session named, it also waits for a summary of
        that session another process sharing the store (a `reme serve` worker) is running; the
        failures counted are this process's."""
        name = None if session_name is None else session_scope(session_name).name
        while mine := [t for t, s in self._background.items() if name is None or s == name]:
            await asyncio.gather(*mine, return_exceptions=True)
        if name is not None and self._opened:  # and for the session's summary another process is running
            async with self._background_lock(session_scope(name)):
                pass
        seen = self._errors_seen.get(name, 0)
        self._errors_seen[name] = len(self._error_sessions)
        return sum(1 for s in self._error_sessions[seen:] if name is None or s == name)
    async def forget(self, *, user_name: str | Sequence[str] | None = None,
                     task_name: str | Sequence[str] | None = None, tool_name: str | Sequence[str] | None = None,
                     memory_type: MemoryType | str | None = None, filters: FilterSpec = None,
                     purge: bool = False, scrub: bool = False, everything: bool = False) -> int:
        """Delete every memory of the target(s) matching `filters` (any type the target holds
        unless `memory_type` says which; expired ones included), as one write; returns how many.

        `purge=False`: each deleted memory's last state is kept as a version (`history` shows
        it), as `delete_memory` does. `purge=True`: the memories and every version of them are
        removed from the store (privacy: nothing of them stays readable), and so is every
        version of the target's memories that matches `filters` itself (the state it keeps): of
        a memory deleted before, all its versions go; of one still stored that no longer
        matches (retagged, rewritten), the matching earlier states. The engine marks deleted
        points and reclaims their space later, so their bytes may stay in its files for a while;
        `scrub=True` (with `purge`) rewrites both collections without them at once (the whole
        store passes through memory; one crash-atomic write; on a server, the purge first, then
        the rewrite, once no change of those memories by another process is under way; it
        rewrites even when nothing matches). It writes back what it read: a write by another
        process meanwhile is lost (docs/scaling.md). Forgetting across all targets needs
        `everything=True`.

        >>> await reme.forget(user_name="alice", filters={"tags": {"any": ["health"]}}, purge=True)
        """
        if not all(isinstance(flag, bool) for flag in (purge, scrub, everything)):
            raise InvalidInputError("purge, scrub and everything must be True or False")
        if scrub and not purge:
            raise InvalidInputError("scrub goes with purge=True (a kept history would keep the text)")
        scopes = scopes_of(user_name, task_name, tool_name)
        if scopes is None and not everything:
            raise InvalidInputError("forget needs user_name, task_name or tool_name, or everything=True")
        flt = self._where(user_name, task_name, tool_name, memory_type, filters, alive=False)
        repo = self.repo
        async with repo.lock:
            nodes = [r.node async for r in self.store.iter_records(self.collection, flt)]
            ids = [n.memory_id for n in nodes]
            gone: list[str] = []  # memories deleted before whose versions match: all their versions go
            drop: list[str] = []  # versions that match of stored memories that do not (an earlier state)
            if purge:
                gone, drop = await self._matching_versions(flt, ids)
            if not nodes and not gone and not drop and not scrub:
                return 0
            if not purge:
                written = await repo._write([Change(old=n, reason="forget") for n in nodes])
                return sum(wrote for _, wrote in written)
            if ids or gone:  # see `VectorStore.mark_purged`
                await self.store.mark_purged(self.collection, ids + gone)
            ops: list[WriteOp] = [Delete(self.collection, ids)] if ids else []
            for start in range(0, len(ids + gone), HASH_LOOKUP):  # a filter names at most MAX_FILTER_SIZE values
                ops.append(DeleteWhere(repo.versions, In(field="metadata.version_of",
                                                         values=list((ids + gone)[start:start + HASH_LOOKUP]))))
            if drop:
                ops.append(Delete(repo.versions, drop))
            if scrub:  # the survivors, written into fresh collections: the old files go
                if self.store.shared:
                    # The purge first, then no change by id of these memories still under way in
                    # another process: one that made its conditional write before the purge then
                    # writes the version it keeps (and takes it back), into the files to drop.
                    await self.store.write(ops)
                    await self.store.settle(self.collection, ids + gone)
                ops = await self._rewrite_ops(set(ids + gone + drop))
            await self.store.write(ops)  # one write: the memories and their versions, or nothing
            return len(ids)

    async def _matching_versions(self, flt: Filter | None, ids: list[str]) -> tuple[list[str], list[str]]:
        """What a purge by `flt` (the caller's scope, type and filters) takes of the versions
        besides those of the memories `ids` it deletes: the memories deleted before one of whose
        versions matches (all their versions go), and the matching versions of memories still
        stored that do not match (an earlier state: those versions alone go)."""
        matched: list[tuple[str, str]] = [(r.node.memory_id, str(r.node.metadata.get("version_of"))) async for r in
                                          self.store.iter_records(self.repo.versions,
                                                                  None if flt is None else version_filter(flt))]
        others = sorted({of for _, of in matched} - set(ids))
        stored: set[str] = set()
        for start in range(0, len(others), HASH_LOOKUP):
            stored |= set(await self.repo.get(others[start:start + HASH_LOOKUP]))
        return [m for m in others if m not in stored], [v for v, of in matched if of in stored]

    async def _rewrite_ops(self, dropped: set[str]) -> list[WriteOp]:
        """Both collections dropped and created again holding every record but the memories in
        `dropped` and their versions."""
        dim = await self.store.collection_dim(self.collection)
        assert dim is not None
        ops: list[WriteOp] = []
        for name in (self.collection, self.repo.versions):
            keep = [r async for r in self.store.iter_records(name, with_vectors=True)
                    if r.node.memory_id not in dropped and r.node.metadata.get("version_of") not in dropped]
            ops += [DropCollection(name), CreateCollection(name, dim), Upsert(name, keep)]
        return ops

    def _require_llm(self, what: str) -> ChatModel:
        """The chat model, or the ConfigError naming what to set; called before anything is written."""
        if self._llm is None:
            raise ConfigError(f"{what} needs an LLM and none is configured: {LLM_SETTINGS}")
        return self._llm

    @property
    def _prompts_lib(self) -> PromptLibrary:
        return self._part(self._prompts)

    def _part(self, part: T | None) -> T:
        if not self._opened or part is None:
            raise ReMeError("ReMe is not open: use `async with ReMe(...)` or `await reme.open()`")
        return part

    async def optimize(self) -> bool:
        """Build the search index now (the edge backend otherwise searches exactly)."""
        return await self.store.optimize(self.collection)

    # -- helpers ---------------------------------------------------------------------------------
    @staticmethod
    def _require_scope(user_name: str | None, task_name: str | None, tool_name: str | None, what: str) -> Scope:
        scope = scope_of(user_name, task_name, tool_name)
        if scope is None:
            raise InvalidInputError(f"{what} needs a target: user_name, task_name or tool_name")
        return scope

    @staticmethod
    def _scope_filter(scope: Scope | list[Scope] | None, memory_type: MemoryType | str | None, *,
                      primary: bool) -> Filter | None:
        if not scope:
            return None if memory_type is None else Eq(field="memory_type", value=_memory_type(memory_type).value)
        types = scope_types(scope if isinstance(scope, Scope) else scope[0], memory_type)
        return scope_filter(scope, types[:1] if primary and memory_type is None else types)

    @classmethod
    def _where(cls, user_name: str | Sequence[str] | None, task_name: str | Sequence[str] | None,
               tool_name: str | Sequence[str] | None, memory_type: MemoryType | str | None, filters: FilterSpec, *,
               primary: bool = False, alive: bool = True) -> Filter | None:
        """The caller's scope (or scopes) ANDed with their filters: a filter narrows, never widens;
        with `alive`, expired memories are left out (every read leaves them out)."""
        base = cls._scope_filter(scopes_of(user_name, task_name, tool_name), memory_type, primary=primary)
        parts = [f for f in (base, parse_filter(filters), live() if alive else None) if f is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else And(filters=parts)


class ReMeSync(SyncFace):
    """`ReMe` without `async`: the same methods, run on a private event loop in a thread.

    >>> with ReMeSync(working_dir=".reme", embedding={"backend": "hash"}) as reme:
    ...     reme.add_memory("Alice prefers window seats", user_name="alice")
    """

    _face: ReMe

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._start("ReMeSync", lambda: ReMe(*args, **kwargs))

    @property
    def config(self) -> ReMeConfig:
        return self._face.config

    def open(self) -> "ReMeSync":
        """Open the store; after `close()` this starts a fresh private loop and opens it again."""
        if self._loop.closed:
            self._loop.start()
        self._run(self._face.open())
        return self

    def __enter__(self) -> "ReMeSync":
        return self.open()


__all__ = ["ReMe", "ReMeSync", "Scope"]
