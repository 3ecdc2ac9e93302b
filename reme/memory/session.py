"""Session memory: the ordered message log of one conversation in progress (working memory).

A session is one more kind of target, `Scope("session", name)`, in the same store as every other
memory. Each message is a `history` node of the session:

- `content`: the message's text (for a message without text, such as an assistant turn that only
  calls tools, a one-line rendering of what it holds);
- `metadata.message`: the rest of the message as it was added (role, tool_calls, tool_call_id,
  name, content parts...), so `get` gives back what was added;
- `tags`: the message's marks (`compressed`, `hint`, whatever the caller uses); marks are filtered
  like tags, in the engine;
- `time_created`: its place in the log, later than the session's newest message and strictly
  increasing within a process, so messages added together or concurrently keep one stable order
  (ties, possible only between two processes sharing a Qdrant server, are ordered by id);
- `memory_id`: for a message with a string `id` (AgentScope's and LangChain's messages have one),
  derived from the session and that id the first time the session holds it, so a framework's
  message is found by its own id in one read by id (`find`); random otherwise.

Reads that follow the log (`last`, `since`, the messages after the compacted ones) go through the
engine's index on `time_created`: what they cost follows what they return, not the session's
length. The summary record also holds where the compacted part of the log ends (`FRONTIER`: every
message before that time carries `compressed`), so `prepare_context` reads only what follows it.

Besides its messages a session holds its compressed summary (one node with an id derived from the
session's name, replaced on update) and the tool results `compact_tool_results` moved out of the
messages, until their `expires_at` (`metadata.session_record` tells the three apart; an expired
result is left out of reads like any expired memory). Every write is one `VectorStore.write`:
all or nothing across a crash. Messages are stored without an embedding (a fixed unit vector):
they are read in order, not found by meaning; BM25 keyword search over them works as for any node.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ValidationError

from reme.errors import InvalidInputError, MemoryNotFoundError, describe
from reme.memory.repo import MemoryRepo, scope_filter
from reme.schema import (MAX_BATCH, MAX_CONTENT_CHARS, MAX_NAME_CHARS, MAX_TAGS, MemoryNode, MemoryType, Message,
                         Scope, parse_iso, safe_text, utcnow)
from reme.store import Delete, DeleteWhere, Upsert, VectorRecord, WriteOp
from reme.store.filters import And, Eq, Filter, Not, Range, TagsAny
from reme.working import SessionMessage, SessionSize, Tokenizer, count_tokens, message_tokens, text_of

KIND: Literal["session"] = "session"
COMPRESSED = "compressed"
"""The mark `prepare_context` puts on messages it compacted into the summary (AgentScope's name)."""
RECORD = "session_record"
"""Metadata key telling a session's records apart: `message`, `summary` or `tool_result`."""
MESSAGE, SUMMARY, TOOL_RESULT = "message", "summary", "tool_result"
SUMMARIZED = "summarized_into"
"""Metadata key on a compacted message once it was summarized into a user's long-term memory."""
SUMMARY_BATCH_CHARS = 60_000
"""Text summarized into long-term memory per `summarize_memory` call (its history node holds at most
`MAX_CONTENT_CHARS`)."""
SUMMARY_PREFIX = "Summary of the earlier conversation (older messages were compacted into it):\n"
FRONTIER = "uncompressed_from"
"""Summary metadata key: a time before which every message of the session is marked `compressed`."""
PAGE = 1_000
"""Records per engine call when a read follows the log."""
NO_CONTENT = "without_content"
"""Metadata key (True) on a message added without `content`: the node's content is only a rendering
of it (for search), not given back."""
_NAMESPACE = uuid.UUID("6f1d2c3e-8a8b-4f0e-9a51-5e55104e0001")

# -- validation --------------------------------------------------------------------------------
def session_scope(name: Any) -> Scope:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("session_name must be a non-empty string")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInputError(f"session_name is longer than {MAX_NAME_CHARS} characters")
    try:
        safe_text(name, "session_name")
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    return Scope(KIND, name.strip())


def check_marks(marks: Any, what: str = "marks") -> list[str]:
    """Marks as a list of non-empty strings; one string is one mark."""
    if marks is None:
        return []
    if isinstance(marks, str):
        marks = [marks]
    if isinstance(marks, (bytes, Mapping)) or not isinstance(marks, Sequence):
        raise InvalidInputError(f"{what} must be a string or a list of strings")
    out: list[str] = []
    for mark in marks:
        if not isinstance(mark, str) or not mark.strip() or len(mark) > MAX_NAME_CHARS:
            raise InvalidInputError(f"{what} are non-empty strings of at most {MAX_NAME_CHARS} characters, "
                                    f"got {str(mark)[:40]!r}")
        try:
            out.append(safe_text(mark.strip(), "a mark"))
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from None
    if len(out) > MAX_TAGS:
        raise InvalidInputError(f"at most {MAX_TAGS} marks")
    return list(dict.fromkeys(out))


def message_dict(message: Any, index: int = 0) -> dict[str, Any]:
    """A message as a plain dict with a role: a `Message`, a mapping, or any pydantic model."""
    if isinstance(message, BaseModel):
        message = message.model_dump(mode="json", exclude_none=True)
    if not isinstance(message, Mapping):
        raise InvalidInputError(f"messages[{index}] must be a dict with role and content, "
                                f"not {type(message).__name__}")
    out = dict(message)
    role = out.get("role")
    if not isinstance(role, str) or not role.strip():
        raise InvalidInputError(f"messages[{index}]: role must be a non-empty string")
    content = out.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise InvalidInputError(f"messages[{index}]: content must be a string, a list of parts or null")
    calls = out.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise InvalidInputError(f"messages[{index}]: tool_calls must be a list of calls or null, "
                                f"not {type(calls).__name__}")
    return out


# -- the store ---------------------------------------------------------------------------------
_clock_lock = threading.Lock()
_last_time = [datetime.min.replace(tzinfo=utcnow().tzinfo)]


def next_times(n: int, after: datetime | None = None) -> list[datetime]:
    """`n` strictly increasing times, later than every time this process handed out before (and
    than `after`)."""
    tick = timedelta(microseconds=1)
    with _clock_lock:
        start = max(utcnow(), _last_time[0] + tick, after + tick if after is not None else _last_time[0])
        times = [start + timedelta(microseconds=i) for i in range(n)]
        _last_time[0] = times[-1] if times else _last_time[0]
    return times


def summary_id(scope: Scope) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"summary\x1f{scope.name}"))


def message_id(scope: Scope, ref: str) -> str:
    """The id of the first message of the session with the framework id `ref`."""
    return str(uuid.uuid5(_NAMESPACE, f"message\x1f{scope.name}\x1f{ref}"))


def derive_ids(scope: Scope, nodes: list[MemoryNode], taken: set[str]) -> list[MemoryNode]:
    """`nodes` with the id derived from their framework id (`message_id`) where it is not `taken`."""
    out = []
    for node in nodes:
        ref = node.metadata["message"].get("id")
        derived = message_id(scope, ref) if isinstance(ref, str) else None
        if derived is not None and derived not in taken:
            taken.add(derived)
            node = node.model_copy(update={"memory_id": derived})
        out.append(node)
    return out


def log_order(node: MemoryNode) -> tuple[datetime, str]:
    return node.time_created, node.memory_id


def frontier_of(head: MemoryNode | None) -> datetime | None:
    """The time before which every message is compacted, as the summary record `head` holds it."""
    value = head.metadata.get(FRONTIER) if head is not None else None
    try:
        return parse_iso(value) if isinstance(value, str) else None
    except ValueError:
        return None  # unreadable: the whole log is read, as before there was one


class SessionLog:
    """The session operations, on the store the facade opened (`MemoryRepo`'s store and collection)."""

    def __init__(self, repo: MemoryRepo) -> None:
        self.repo = repo

    @property
    def store(self) -> Any:
        return self.repo.store

    @property
    def collection(self) -> str:
        return self.repo.collection

    def lock(self, scope: Scope) -> Any:
        return self.repo.target_lock(scope.kind, scope.name)

    async def placeholder(self) -> list[float]:
        """The vector every session record carries: they are read in order, never by meaning."""
        dim = await self.store.collection_dim(self.collection) or await self.repo.embedder.dimension()
        return [1.0] + [0.0] * (dim - 1)

    def filter(self, scope: Scope, record: str, extra: Filter | None = None) -> Filter:
        parts: list[Filter] = [Eq(field=f"metadata.{RECORD}", value=record)]
        if extra is not None:
            parts.append(extra)
        return scope_filter(scope, (MemoryType.HISTORY,), And(filters=parts))

    async def nodes(self, scope: Scope, record: str = MESSAGE, extra: Filter | None = None, *,
                    since: datetime | None = None, last: int | None = None) -> list[MemoryNode]:
        """The session's records of one kind, in log order: all of them, those added at or after
        `since`, or the `last` ones (of those)."""
        if since is not None:
            extra = Range(field="time_created", gte=since) if extra is None else And(
                filters=[extra, Range(field="time_created", gte=since)])
        flt = self.filter(scope, record, extra)
        if last is None:
            out = [r.node async for r in self.store.iter_records(self.collection, flt, page_size=PAGE)]
        else:  # newest first, in the engine's order on time_created
            out, cursor = [], None
            while len(out) < last:
                page = await self.store.list(self.collection, flt=flt, sort_key="time_created", direction="desc",
                                             limit=min(PAGE, last - len(out)), cursor=cursor)
                out += page.nodes
                if (cursor := page.next_cursor) is None:
                    break
        out.sort(key=log_order)
        return out

    async def by_ids(self, scope: Scope, ids: Iterable[str], record: str = MESSAGE) -> list[MemoryNode]:
        """The session's records of one kind among `ids`, in log order (one read by id)."""
        wanted = list(dict.fromkeys(ids))
        found = [] if not wanted else (await self.store.get(self.collection, wanted)).found
        out = [r.node for r in found if r.node.scope == scope and r.node.memory_type == MemoryType.HISTORY
               and r.node.metadata.get(RECORD) == record]
        out.sort(key=log_order)
        return out

    async def find(self, scope: Scope, refs: Iterable[str]) -> list[MemoryNode]:
        """The session's messages added with a framework id among `refs` (its first message with
        each), in log order: one read by id."""
        wanted = set(refs)
        found = await self.by_ids(scope, [message_id(scope, r) for r in wanted])
        return [n for n in found if n.metadata.get("message", {}).get("id") in wanted]

    async def newest(self, scope: Scope) -> MemoryNode | None:
        last = await self.nodes(scope, last=1)
        return last[0] if last else None

    # -- messages ----------------------------------------------------------------------------
    def make_nodes(self, scope: Scope, messages: Sequence[Any], marks: list[str],
                   after: datetime | None = None) -> list[MemoryNode]:
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
            raise InvalidInputError("messages must be a list of messages (dicts with role and content)")
        if len(messages) > MAX_BATCH:
            raise InvalidInputError(f"messages holds {len(messages)} items; the limit is {MAX_BATCH} per call")
        dicts = [message_dict(m, i) for i, m in enumerate(messages)]
        times = next_times(len(dicts), after)
        return [self.message_node(scope, d, marks, when, i) for i, (d, when) in enumerate(zip(dicts, times))]

    async def own_ids(self, scope: Scope, nodes: list[MemoryNode]) -> list[MemoryNode]:
        """`nodes` with the id derived from their framework id where the session holds none yet."""
        refs = [ref for n in nodes if isinstance(ref := n.metadata["message"].get("id"), str)]
        if not refs:
            return nodes
        ids = list(dict.fromkeys(message_id(scope, r) for r in refs))
        return derive_ids(scope, nodes, {r.node.memory_id for r in (await self.store.get(self.collection, ids)).found})

    @staticmethod
    def message_node(scope: Scope, message: dict[str, Any], marks: list[str], when: datetime,
                     index: int = 0) -> MemoryNode:
        rest = dict(message)
        content = rest.get("content")
        if isinstance(content, str) and content.strip():
            text = content
            del rest["content"]  # kept once, as the node's content
        else:  # the rendering is for search only: `as_message` gives back `rest` as it is
            text = text_of(message).strip() or f"({rest.get('role')} message without text)"
        said = rest.get("time")
        try:
            said_at = parse_iso(said) if said is not None else when
        except ValueError:
            raise InvalidInputError(f"messages[{index}]: time must be an ISO 8601 datetime") from None
        if len(text) > MAX_CONTENT_CHARS:
            raise InvalidInputError(f"messages[{index}] is {len(text)} characters; a message is at most "
                                    f"{MAX_CONTENT_CHARS} (pass big tool results through compact_tool_results)")
        try:
            return MemoryNode(memory_type=MemoryType.HISTORY, target_kind=KIND, memory_target=scope.name,
                              content=text, message_time=said_at, time_created=when, time_modified=when,
                              author=str(rest.get("name") or rest.get("role"))[:MAX_NAME_CHARS], tags=marks,
                              metadata={RECORD: MESSAGE, "message": rest,
                                        **({NO_CONTENT: True} if "content" not in message else {})})
        except ValidationError as exc:
            raise InvalidInputError(f"messages[{index}]: {describe(exc)}") from None

    @classmethod
    def with_message(cls, node: MemoryNode, message: dict[str, Any], when: datetime) -> MemoryNode:
        """The stored message `node` holding `message` instead (same id, place and marks)."""
        fresh = cls.message_node(node.scope, message, list(node.tags), node.time_created)
        return node.model_copy(update={"content": fresh.content, "time_modified": when,
                                       "metadata": {**node.metadata, "message": fresh.metadata["message"]}})

    async def add(self, scope: Scope, messages: Sequence[Any], marks: list[str]) -> list[SessionMessage]:
        newest = await self.newest(scope)  # one read in the engine's time order, whatever the length
        nodes = self.make_nodes(scope, messages, marks, newest.time_created if newest is not None else None)
        if nodes:
            nodes = await self.own_ids(scope, nodes)
            vector = await self.placeholder()
            await self.store.write([Upsert(self.collection, [VectorRecord(node=n, vector=vector) for n in nodes])])
            return [as_message(n) for n in nodes]
        return []

    async def get(self, scope: Scope, mark: list[str], exclude_mark: list[str], *, since: datetime | None = None,
                  last: int | None = None) -> list[MemoryNode]:
        parts: list[Filter] = []
        if mark:
            parts.append(TagsAny(values=mark))
        if exclude_mark:
            parts.append(Not(filter=TagsAny(values=exclude_mark)))
        return await self.nodes(scope, MESSAGE, And(filters=parts) if parts else None, since=since, last=last)

    async def read(self, scope: Scope, mark: list[str], exclude_mark: list[str], *, last: int | None = None,
                   after: str | None = None, refs: list[str] | None = None,
                   prepend_summary: bool = False) -> list[SessionMessage]:
        """`get_messages`: the messages with any of `mark` and none of `exclude_mark`, after the
        message `after`, the `last` of them, among those with framework ids `refs`. What follows
        a known time (`after`, and the frontier when `compressed` is excluded) is read from there
        on, in the engine's order."""
        cursor = None
        if after is not None:
            found = await self.by_ids(scope, [after])
            if not found:
                raise MemoryNotFoundError(after)
            cursor = log_order(found[0])
        head = await self.head(scope) if prepend_summary or COMPRESSED in exclude_mark else None
        starts = [t for t in (cursor[0] if cursor else None, frontier_of(head) if COMPRESSED in exclude_mark else None)
                  if t is not None]
        if refs is not None:
            nodes = [n for n in await self.find(scope, refs) if (not mark or set(mark) & set(n.tags))
                     and not set(exclude_mark) & set(n.tags)]
        else:  # the cursor itself may come back (it is at `since`): one more than `last`
            nodes = await self.get(scope, mark, exclude_mark, since=max(starts) if starts else None,
                                   last=None if last is None else last + (cursor is not None))
        if cursor is not None:
            nodes = [n for n in nodes if log_order(n) > cursor]
        out = [as_message(n) for n in (nodes if last is None else nodes[-last:])]
        summary = head.content if head is not None and prepend_summary else ""
        if summary:
            out.insert(0, SessionMessage(id=summary_id(scope), message=summary_message(summary), marks=[],
                                         time=out[0].time if out else utcnow()))
        return out

    async def head(self, scope: Scope) -> MemoryNode | None:
        """The session's summary record (its compressed summary and `FRONTIER`), if it has one."""
        got = await self.store.get(self.collection, [summary_id(scope)])
        found = [r.node for r in got.found if r.node.scope == scope]
        return found[0] if found else None

    async def summary(self, scope: Scope) -> str:
        head = await self.head(scope)
        return head.content if head is not None else ""

    def summary_ops(self, scope: Scope, summary: str, vector: list[float],
                    frontier: datetime | None = None) -> list[WriteOp]:
        if not summary.strip():
            return [Delete(self.collection, [summary_id(scope)])]
        if len(summary) > MAX_CONTENT_CHARS:
            raise InvalidInputError(f"the summary is {len(summary)} characters; the limit is {MAX_CONTENT_CHARS}")
        metadata: dict[str, Any] = {RECORD: SUMMARY}
        if frontier is not None:
            metadata[FRONTIER] = frontier.isoformat()
        try:
            node = MemoryNode(memory_id=summary_id(scope), memory_type=MemoryType.HISTORY, target_kind=KIND,
                              memory_target=scope.name, content=summary, metadata=metadata)
        except ValidationError as exc:  # a NUL in it: hypothesis found one in a loaded session state
            raise InvalidInputError(f"the summary: {describe(exc)}") from None
        return [Upsert(self.collection, [VectorRecord(node=node, vector=vector)])]

    async def set_summary(self, scope: Scope, summary: str) -> None:
        async with self.lock(scope):  # a framework compacts this way too: where its compacted part ends is kept
            await self.store.write(self.summary_ops(scope, summary, await self.placeholder(),
                                                    await self.compacted_until(scope)))

    async def compacted_until(self, scope: Scope) -> datetime | None:
        """A frontier for the log as it is: the time of its first message not marked `compressed`
        (just after its newest when all are); None for an empty log. The engine walks the
        compacted part in its time order (no record of it is read)."""
        flt = self.filter(scope, MESSAGE, Not(filter=TagsAny(values=[COMPRESSED])))
        page = await self.store.list(self.collection, flt=flt, sort_key="time_created", direction="asc", limit=1)
        first: list[MemoryNode] = page.nodes
        if first:
            return first[0].time_created
        newest = await self.newest(scope)
        return newest.time_created + timedelta(microseconds=1) if newest is not None else None

    async def reopened(self, scope: Scope, nodes: Sequence[MemoryNode]) -> list[WriteOp]:
        """The summary record without its frontier when one of `nodes` (messages that lost the
        `compressed` mark) lies before it: the whole log is read again until the next compaction."""
        head = await self.head(scope)
        frontier = frontier_of(head)
        if head is None or frontier is None or all(n.time_created >= frontier for n in nodes):
            return []
        return self.summary_ops(scope, head.content, await self.placeholder())

    async def delete(self, scope: Scope, ids: Iterable[str]) -> int:
        async with self.lock(scope):
            doomed = [n.memory_id for n in await self.by_ids(scope, ids)]
            if doomed:
                await self.store.write([Delete(self.collection, doomed)])
            return len(doomed)

    async def delete_by_mark(self, scope: Scope, marks: list[str]) -> int:
        async with self.lock(scope):
            doomed = [n.memory_id for n in await self.get(scope, marks, [])]
            if doomed:
                await self.store.write([Delete(self.collection, doomed)])
            return len(doomed)

    async def remark(self, scope: Scope, ids: Sequence[str] | None, add: list[str], remove: list[str]) -> int:
        """Remove marks from, then add marks to, the messages with `ids` (all messages when None);
        returns how many messages lost or gained a mark. A mark both removed and added is kept,
        last, as AgentScope's `InMemoryMemory` keeps it."""
        async with self.lock(scope):
            changed, touched = [], 0
            for node in await (self.nodes(scope) if ids is None else self.by_ids(scope, ids)):
                kept = [t for t in node.tags if t not in remove]
                tags = kept + [m for m in add if m not in kept]
                touched += len(kept) < len(node.tags) or len(tags) > len(kept)
                if tags != node.tags:
                    if len(tags) > MAX_TAGS:
                        raise InvalidInputError(f"a message holds at most {MAX_TAGS} marks")
                    changed.append(node.model_copy(update={"tags": tags, "time_modified": utcnow()}))
            reopened = [n for n in changed if COMPRESSED not in n.tags] if COMPRESSED in remove else []
            await self.rewrite(changed, await self.reopened(scope, reopened) if reopened else [])
            return touched

    async def rewrite(self, nodes: list[MemoryNode], extra: Sequence[WriteOp] = ()) -> None:
        """Store changed records (and `extra` writes) as one write."""
        if not nodes and not extra:
            return
        vector = await self.placeholder()
        await self.store.write([*extra, Upsert(self.collection, [VectorRecord(node=n, vector=vector) for n in nodes])])

    async def clear(self, scope: Scope) -> int:
        async with self.lock(scope):
            flt = scope_filter(scope, (MemoryType.HISTORY,))
            n: int = await self.store.count(self.collection, flt)
            if n:
                await self.store.write([DeleteWhere(self.collection, flt)])
            return n

    # -- state ---------------------------------------------------------------------------------
    async def state(self, scope: Scope) -> dict[str, Any]:
        """AgentScope's `state_dict` shape: `content` as [message, marks] pairs in order, and
        `_compressed_summary`."""
        nodes = await self.nodes(scope)
        return {"content": [[as_message(n).message, list(n.tags)] for n in nodes],
                "_compressed_summary": await self.summary(scope)}

    async def load_state(self, scope: Scope, state: Any) -> int:
        """Replace the session's messages and summary with `state` (offloaded tool results stay),
        as one write. Returns how many messages it holds now."""
        if not isinstance(state, Mapping) or not isinstance(state.get("content", []), list):
            raise InvalidInputError("a session state is a dict with `content` (a list of [message, marks]) "
                                    "and `_compressed_summary`")
        summary = state.get("_compressed_summary") or ""
        if not isinstance(summary, str):
            raise InvalidInputError("_compressed_summary must be a string")
        pairs = state.get("content") or []
        if len(pairs) > MAX_BATCH:
            raise InvalidInputError(f"a session state holds at most {MAX_BATCH} messages")
        messages, marks = [], []
        for i, pair in enumerate(pairs):
            if isinstance(pair, Mapping):  # a bare message: no marks
                pair = [pair, []]
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise InvalidInputError(f"content[{i}] must be a [message, marks] pair")
            messages.append(message_dict(pair[0], i))
            marks.append(check_marks(pair[1], f"content[{i}] marks"))
        times = next_times(len(messages))
        nodes = derive_ids(scope, [self.message_node(scope, m, k, t, i)
                                   for i, (m, k, t) in enumerate(zip(messages, marks, times))], set())
        vector = await self.placeholder()
        async with self.lock(scope):
            await self.store.write([DeleteWhere(self.collection, self.filter(scope, MESSAGE)),
                                    *self.summary_ops(scope, summary, vector),
                                    Upsert(self.collection, [VectorRecord(node=n, vector=vector) for n in nodes])])
        return len(nodes)

    async def size(self, scope: Scope, tokenizer: Tokenizer | None) -> SessionSize:
        nodes = await self.nodes(scope)
        summary = await self.summary(scope)
        summary_tokens = count_tokens(summary, tokenizer) if summary else 0
        tokens = sum(message_tokens(as_message(n).message, tokenizer) for n in nodes)
        return SessionSize(messages=len(nodes), tokens=tokens + summary_tokens, summary_tokens=summary_tokens)

    # -- offloaded tool results ----------------------------------------------------------------
    def tool_result_nodes(self, scope: Scope, text: str, expires_at: datetime, tool: str) -> tuple[str, list[MemoryNode]]:
        """The records holding a tool result too big for the context (in parts of at most
        `MAX_CONTENT_CHARS`) and the reference that reads it back."""
        ref = str(uuid.uuid4())
        parts = [text[i:i + MAX_CONTENT_CHARS] for i in range(0, len(text), MAX_CONTENT_CHARS)] or [text]
        nodes = [MemoryNode(memory_id=ref if i == 0 else str(uuid.uuid5(uuid.UUID(ref), str(i))),
                            memory_type=MemoryType.HISTORY, target_kind=KIND, memory_target=scope.name, content=part,
                            author=tool[:MAX_NAME_CHARS], expires_at=expires_at,
                            metadata={RECORD: TOOL_RESULT, "ref": ref, "part": i, "parts": len(parts)})
                 for i, part in enumerate(parts)]
        return ref, nodes

    async def read_tool_result(self, scope: Scope, ref: str, now: datetime | None = None) -> str:
        first = await self.by_ids(scope, [ref], TOOL_RESULT)
        if not first or first[0].expired(now or utcnow()):  # an expired one is deleted by the next prepare_context
            raise MemoryNotFoundError(ref)
        parts = first[0].metadata.get("parts")
        parts = parts if isinstance(parts, int) and 1 <= parts <= MAX_BATCH else 1
        nodes = first + await self.by_ids(scope, [str(uuid.uuid5(uuid.UUID(ref), str(i))) for i in range(1, parts)],
                                          TOOL_RESULT)
        nodes.sort(key=lambda n: int(n.metadata.get("part", 0)))
        return "".join(n.content for n in nodes)

    async def expired(self, scope: Scope, now: datetime | None = None) -> list[WriteOp]:
        """Deleting the session's offloaded tool results past their `expires_at` (nothing when none
        are; at most `PAGE` records a call, found through the engine's index on `expires_at`)."""
        flt = self.filter(scope, TOOL_RESULT, Range(field="expires_at", lte=now or utcnow()))
        doomed = [n.memory_id for n in (await self.store.list(self.collection, flt=flt, limit=PAGE)).nodes]
        return [Delete(self.collection, doomed)] if doomed else []


def as_message(node: MemoryNode) -> SessionMessage:
    """A stored message node as the message it was added as."""
    stored = node.metadata.get("message")
    message = dict(stored) if isinstance(stored, Mapping) else {"role": node.author or "user"}
    if not node.metadata.get(NO_CONTENT):
        message.setdefault("content", node.content)
    return SessionMessage(id=node.memory_id, message=message, marks=list(node.tags), time=node.time_created)


def summary_message(summary: str) -> dict[str, Any]:
    """The compressed summary as the message `get(prepend_summary=True)` puts first."""
    return {"role": "user", "content": SUMMARY_PREFIX + summary}


def to_plain_messages(messages: Sequence[Any]) -> list[Message]:
    """Session messages as `Message`s the summarizers read (messages without text are left out)."""
    out = []
    for item in messages:
        message = item.message if isinstance(item, SessionMessage) else message_dict(item)
        text = text_of(message).strip()
        if text:
            said = message.get("time")
            try:
                when = parse_iso(said) if said is not None else item.time if isinstance(item, SessionMessage) else None
            except ValueError:
                when = None
            name, ref = message.get("name"), message.get("id")
            out.append(Message(role=str(message.get("role")), content=text[:MAX_CONTENT_CHARS],
                               name=name[:MAX_NAME_CHARS] if isinstance(name, str) and name else None, time=when,
                               id=ref[:MAX_NAME_CHARS] if isinstance(ref, str) and ref else None))
    return out


def text_batches(messages: list[Message], chars: int = SUMMARY_BATCH_CHARS) -> list[list[Message]]:
    """Consecutive messages in groups of at most `chars` characters of text (a longer one alone)."""
    out: list[list[Message]] = [[]]
    size = 0
    for message in messages:
        if out[-1] and size + len(message.content) > chars:
            out.append([])
            size = 0
        out[-1].append(message)
        size += len(message.content) + 60
    return [b for b in out if b]
