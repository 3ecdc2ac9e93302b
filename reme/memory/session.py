"""Session memory: the ordered message log of one conversation in progress (working memory).

A session is one more kind of target, `Scope("session", name)`, in the same store as every other
memory. Each message is a `history` node of the session:

- `content`: the message's text (for a message without text, such as an assistant turn that only
  calls tools, a one-line rendering of what it holds);
- `metadata.message`: the rest of the message as it was added (role, tool_calls, tool_call_id,
  name, content parts...), so `get` gives back what was added;
- `tags`: the message's marks (`compressed`, `hint`, whatever the caller uses); marks are filtered
  like tags, in the engine;
- `time_created`: its place in the log, strictly increasing within a process, so messages added
  together or concurrently keep one stable order (ties, possible only between two processes
  sharing a Qdrant server, are ordered by id).

Besides its messages a session holds its compressed summary (one node with an id derived from the
session's name, replaced on update) and the tool results `compact_tool_results` moved out of the
messages (`metadata.session_record` tells the three apart). Every write is one `VectorStore.write`:
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
from reme.store.filters import And, Eq, Filter, Not, TagsAny
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
    return out


# -- the store ---------------------------------------------------------------------------------
_clock_lock = threading.Lock()
_last_time = [datetime.min.replace(tzinfo=utcnow().tzinfo)]


def next_times(n: int) -> list[datetime]:
    """`n` strictly increasing times, later than every time this process handed out before."""
    with _clock_lock:
        start = max(utcnow(), _last_time[0] + timedelta(microseconds=1))
        times = [start + timedelta(microseconds=i) for i in range(n)]
        _last_time[0] = times[-1] if times else _last_time[0]
    return times


def summary_id(scope: Scope) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"summary\x1f{scope.name}"))


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

    async def nodes(self, scope: Scope, record: str = MESSAGE, extra: Filter | None = None) -> list[MemoryNode]:
        """The session's records of one kind, in log order."""
        out = [r.node async for r in self.store.iter_records(self.collection, self.filter(scope, record, extra))]
        out.sort(key=lambda n: (n.time_created, n.memory_id))
        return out

    # -- messages ----------------------------------------------------------------------------
    def make_nodes(self, scope: Scope, messages: Sequence[Any], marks: list[str]) -> list[MemoryNode]:
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
            raise InvalidInputError("messages must be a list of messages (dicts with role and content)")
        if len(messages) > MAX_BATCH:
            raise InvalidInputError(f"messages holds {len(messages)} items; the limit is {MAX_BATCH} per call")
        dicts = [message_dict(m, i) for i, m in enumerate(messages)]
        times = next_times(len(dicts))
        return [self.message_node(scope, d, marks, when, i) for i, (d, when) in enumerate(zip(dicts, times))]

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

    async def add(self, scope: Scope, messages: Sequence[Any], marks: list[str]) -> list[SessionMessage]:
        nodes = self.make_nodes(scope, messages, marks)
        if nodes:
            vector = await self.placeholder()
            await self.store.write([Upsert(self.collection, [VectorRecord(node=n, vector=vector) for n in nodes])])
        return [as_message(n) for n in nodes]

    async def get(self, scope: Scope, mark: list[str], exclude_mark: list[str]) -> list[MemoryNode]:
        parts: list[Filter] = []
        if mark:
            parts.append(TagsAny(values=mark))
        if exclude_mark:
            parts.append(Not(filter=TagsAny(values=exclude_mark)))
        return await self.nodes(scope, MESSAGE, And(filters=parts) if parts else None)

    async def summary(self, scope: Scope) -> str:
        got = await self.store.get(self.collection, [summary_id(scope)])
        found = [r.node for r in got.found if r.node.scope == scope]
        return found[0].content if found else ""

    def summary_ops(self, scope: Scope, summary: str, vector: list[float]) -> list[WriteOp]:
        if not summary.strip():
            return [Delete(self.collection, [summary_id(scope)])]
        if len(summary) > MAX_CONTENT_CHARS:
            raise InvalidInputError(f"the summary is {len(summary)} characters; the limit is {MAX_CONTENT_CHARS}")
        node = MemoryNode(memory_id=summary_id(scope), memory_type=MemoryType.HISTORY, target_kind=KIND,
                          memory_target=scope.name, content=summary, metadata={RECORD: SUMMARY})
        return [Upsert(self.collection, [VectorRecord(node=node, vector=vector)])]

    async def set_summary(self, scope: Scope, summary: str) -> None:
        async with self.lock(scope):
            await self.store.write(self.summary_ops(scope, summary, await self.placeholder()))

    async def delete(self, scope: Scope, ids: Iterable[str]) -> int:
        async with self.lock(scope):
            wanted = set(ids)
            doomed = [n.memory_id for n in await self.nodes(scope) if n.memory_id in wanted]
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
            wanted = None if ids is None else set(ids)
            changed, touched = [], 0
            for node in await self.nodes(scope):
                if wanted is not None and node.memory_id not in wanted:
                    continue
                kept = [t for t in node.tags if t not in remove]
                tags = kept + [m for m in add if m not in kept]
                touched += len(kept) < len(node.tags) or len(tags) > len(kept)
                if tags != node.tags:
                    if len(tags) > MAX_TAGS:
                        raise InvalidInputError(f"a message holds at most {MAX_TAGS} marks")
                    changed.append(node.model_copy(update={"tags": tags, "time_modified": utcnow()}))
            await self.rewrite(changed)
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
        nodes = [self.message_node(scope, m, k, t, i) for i, (m, k, t) in enumerate(zip(messages, marks, times))]
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
                            author=tool[:MAX_NAME_CHARS],
                            metadata={RECORD: TOOL_RESULT, "ref": ref, "part": i, "parts": len(parts),
                                      "expires_at": expires_at.isoformat()})
                 for i, part in enumerate(parts)]
        return ref, nodes

    async def read_tool_result(self, scope: Scope, ref: str, now: datetime | None = None) -> str:
        nodes = await self.nodes(scope, TOOL_RESULT, Eq(field="metadata.ref", value=ref))
        if not nodes:
            raise MemoryNotFoundError(ref)
        if _expired(nodes[0], now or utcnow()):  # deleted by the next prepare_context
            raise MemoryNotFoundError(ref)
        nodes.sort(key=lambda n: int(n.metadata.get("part", 0)))
        return "".join(n.content for n in nodes)

    async def expired(self, scope: Scope, now: datetime | None = None) -> list[WriteOp]:
        """Deleting the session's offloaded tool results past their expiry (nothing when none are)."""
        now = now or utcnow()
        doomed = [n.memory_id for n in await self.nodes(scope, TOOL_RESULT) if _expired(n, now)]
        return [Delete(self.collection, doomed)] if doomed else []


def _expired(node: MemoryNode, now: datetime) -> bool:
    try:
        return parse_iso(str(node.metadata.get("expires_at"))) <= now
    except ValueError:
        return True  # an expiry no one can read: gone rather than kept forever


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
