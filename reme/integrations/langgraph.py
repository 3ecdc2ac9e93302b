"""LangGraph: `ReMeStore`, a `BaseStore` whose items are ReMe memories, and
`ReMeContextMiddleware`, an agent's conversation kept as a ReMe session and compacted before each
model call, and `ReMeChatMessageHistory`, LangChain's chat history over a session (extra `langgraph`).

>>> store = ReMeStore(working_dir=".reme", fields=["text"])
>>> store.put(("memories", "alice"), "tea", {"text": "Alice likes green tea"})
>>> store.search(("memories",), query="what does alice drink", limit=3)  # SearchItem.score: cosine
>>> graph = builder.compile(store=store)  # tools reach it through langgraph.config.get_store()

A namespace is one ReMe target: the store's `kind` (user: personal memories, task: procedural,
tool: tool) named by the namespace's labels joined with "." (LangGraph forbids "." in a label, so
the name is unambiguous): `("memories", "alice")` is user `memories.alice`, whose items ReMe's own
calls see too (`retrieve_memory(user_name="memories.alice")`, `delete_all(...)`). Each item is one
memory: the value is kept whole as JSON in `metadata.langgraph`, the text at the index `fields`
is what is embedded (`when_to_use`) and shown (`content`), `created_at`/`updated_at` are the
memory's `time_created`/`time_modified`; an overwrite is an update (same id, a version in
`history`).

Searching follows LangGraph's `InMemoryStore` (tested against it op for op): filters are
matched on the value with its semantics (`$eq $ne $gt $gte $lt $lte`, nested dicts, lists), a
query ranks the indexed items by cosine similarity (`SearchItem.score`) with unindexed ones after
them unscored, no query lists items in creation order; reads in one batch see the state before
its puts.
"""

from __future__ import annotations

import asyncio
import json
import operator
import uuid
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from langchain.agents.middleware import AgentMiddleware
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.tools import StructuredTool
from langgraph.config import get_config
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.store.base import (BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result,
                                  SearchItem, SearchOp, get_text_at_path, tokenize_path)

from reme.errors import InvalidInputError, MemoryNotFoundError
from reme.integrations._agent import LoopOwned
from reme.reme import ReMe, ReMeSync
from reme.schema import KIND_TYPES, MAX_CONTENT_CHARS, MAX_LIMIT, MemoryNode
from reme.working import CompactedContext, SessionMessage

Kind = Literal["user", "task", "tool"]
ITEM_IDS = uuid.UUID("5d1f0c52-4f7e-4b8a-9a39-6c1b0e7d2a10")
"""Memory ids are uuid5(ITEM_IDS, namespace and key): a get or put is a read by id."""
AUTHOR = "langgraph"
PAGE = 256
_RANGE: dict[str, Callable[[float, float], bool]] = {"$gt": operator.gt, "$gte": operator.ge,
                                                     "$lt": operator.lt, "$lte": operator.le}


class ReMeStore(LoopOwned, BaseStore):  # type: ignore[misc, unused-ignore]  # Any where langgraph is not installed
    """A LangGraph store kept in ReMe, on disk (Qdrant Edge) by default.

    Args:
        kind: the kind of target every namespace becomes: "user" (personal memories), "task"
            (procedural) or "tool".
        fields: the value's paths whose text is embedded for `search(query=...)`, as in
            LangGraph's `IndexConfig` ("$": the whole value); a put's `index` overrides them.
        **settings: ReMe's settings (`working_dir`, `embedding`, `vector_store`, ...); the
            rest comes from `REME_*` variables as for `ReMe`.

    The engine runs on a private event loop, so `batch` and `abatch` work from any thread or
    loop. Close the store (`close()` or `with ReMeStore(...) as store:`) to release the
    working directory.
    """

    supports_ttl = False

    def __init__(self, *, kind: Kind = "user", fields: Sequence[str] = ("$",), **settings: Any) -> None:
        if kind not in KIND_TYPES:
            raise InvalidInputError(f"kind must be user, task or tool, not {kind!r}")
        self.kind = kind
        self.memory_type = KIND_TYPES[kind][0]
        self.fields = list(fields)
        self._open_reme("ReMeStore", settings)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._run(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._arun(self._batch(list(ops)))

    async def _batch(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}  # the last put of a key wins
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        for put in puts.values():
            await self._put(put)
        return results

    # -- the translation ---------------------------------------------------------------------
    def _scope(self, namespace: tuple[str, ...]) -> dict[str, Any]:
        return {f"{self.kind}_name": ".".join(namespace)}

    async def _stored(self, namespace: tuple[str, ...], key: str) -> MemoryNode | None:
        try:
            return await self.reme.get_memory(item_id(namespace, key), **self._scope(namespace))
        except MemoryNotFoundError:
            return None

    async def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        node = await self._stored(tuple(namespace), key)
        return None if node is None else Item(**item_fields(node))

    async def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        old = await self._stored(namespace, op.key)
        if op.value is None:
            if old is not None:
                await self.reme.delete_memory(old.memory_id, **self._scope(namespace))
            return
        if old is not None:
            await self.reme.update_memory(old.memory_id, **self._fields(op), **self._scope(namespace))
            return
        node = self._node(op)
        (stored,) = await self.reme.add_memories([node])
        if stored.memory_id != node.memory_id:  # same text (case and spacing aside) under another key
            await self.reme.add_memories([self._node(op, distinct=True)])

    def _node(self, op: PutOp, distinct: bool = False) -> MemoryNode:
        namespace = tuple(op.namespace)
        return MemoryNode(memory_id=item_id(namespace, op.key), memory_type=self.memory_type, target_kind=self.kind,
                          memory_target=".".join(namespace), author=AUTHOR, **self._fields(op, distinct))

    def _fields(self, op: PutOp, distinct: bool = False) -> dict[str, Any]:
        assert op.value is not None
        value = dict(op.value)
        try:
            value_json = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"a value is stored as JSON: {exc}") from None
        paths = self.fields if op.index is None else [] if op.index is False else list(op.index)
        texts = [t for path in paths for t in get_text_at_path(value, path if path == "$" else tokenize_path(path))]
        text = "\n".join(texts)
        # The key makes the content (and so ReMe's content hash) differ between keys of one namespace.
        head = f"{op.key} [{item_id(tuple(op.namespace), op.key)}]: " if distinct else f"{op.key}: "
        namespace = list(op.namespace)
        return {"content": (head + (text or value_json))[:MAX_CONTENT_CHARS], "when_to_use": text[:MAX_CONTENT_CHARS],
                "metadata": {"langgraph": {"namespace": namespace, "key": op.key, "value": value_json,
                                           "indexed": bool(texts), "prefixes": prefixes(namespace)}}}

    def _where(self, prefix: Sequence[str], indexed: bool | None = None) -> dict[str, Any]:
        flt: dict[str, Any] = {"target_kind": self.kind, "memory_type": self.memory_type.value, "author": AUTHOR}
        if prefix:
            flt["metadata.langgraph.prefixes"] = {"any": [".".join(prefix)]}
        if indexed is not None:
            flt["metadata.langgraph.indexed"] = indexed
        return flt

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit <= 0:
            return []
        want = max(op.offset, 0) + op.limit

        def accept(node: MemoryNode) -> bool:
            return matches(value_of(node), op.filter)

        found: list[tuple[MemoryNode, float | None]]
        if not op.query:
            found = [(node, None) for node in await self._listing(self._where(op.namespace_prefix), accept, want)]
        else:
            found = await self._ranked(op.query, self._where(op.namespace_prefix, indexed=True), accept, want)
            if len(found) < want:  # unindexed items follow, unscored, as in LangGraph's stores
                rest = await self._listing(self._where(op.namespace_prefix, indexed=False), accept, want - len(found))
                found += [(node, None) for node in rest]
        return [SearchItem(**item_fields(node), score=score) for node, score in found[max(op.offset, 0):want]]

    async def _listing(self, flt: dict[str, Any], accept: Callable[[MemoryNode], bool],
                       want: int | None) -> list[MemoryNode]:
        """Matching items in creation order, `want` of them (all: None)."""
        out: list[MemoryNode] = []
        cursor: str | None = None
        while True:
            page = await self.reme.list_memory(filters=flt, sort_key="time_created", direction="asc", limit=PAGE,
                                               cursor=cursor)
            out += [node for node in page if accept(node)]
            if page.next_cursor is None or (want is not None and len(out) >= want):
                return out if want is None else out[:want]
            cursor = page.next_cursor

    async def _ranked(self, query: str, flt: dict[str, Any], accept: Callable[[MemoryNode], bool],
                      want: int) -> list[tuple[MemoryNode, float | None]]:
        """The `want` best matching items by cosine similarity; the engine is asked for more
        while the value filter leaves too few."""
        top_k = want
        while True:
            hits = await self.reme.search_memory(query, filters=flt, mode="dense", top_k=min(top_k, MAX_LIMIT))
            kept: list[tuple[MemoryNode, float | None]] = [(h.node, h.similarity) for h in hits if accept(h.node)]
            if len(kept) >= want or len(hits) < top_k or top_k >= MAX_LIMIT:
                return kept[:want]
            top_k *= 4

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        fixed = next((c.path for c in op.match_conditions or () if c.match_type == "prefix"), ())
        fixed = tuple(fixed[:fixed.index("*")] if "*" in fixed else fixed)
        namespaces = {tuple(node.metadata["langgraph"]["namespace"])
                      for node in await self._listing(self._where(fixed), lambda node: True, None)}
        kept = [ns for ns in namespaces if all(namespace_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            kept = list({ns[:op.max_depth] for ns in kept})
        return sorted(kept)[op.offset:op.offset + op.limit]


def item_id(namespace: tuple[str, ...], key: str) -> str:
    return str(uuid.uuid5(ITEM_IDS, json.dumps([list(namespace), key])))


def prefixes(namespace: Sequence[str]) -> list[str]:
    return [".".join(namespace[:i]) for i in range(1, len(namespace) + 1)]


def value_of(node: MemoryNode) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(node.metadata["langgraph"]["value"])
    return value


def item_fields(node: MemoryNode) -> dict[str, Any]:
    meta = node.metadata["langgraph"]
    return {"namespace": tuple(meta["namespace"]), "key": meta["key"], "value": value_of(node),
            "created_at": node.time_created, "updated_at": node.time_modified}


def matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter semantics: every key's condition holds on the value."""
    return not flt or all(compare(value.get(key), want) for key, want in flt.items())


def compare(item: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(apply_operator(item, op, operand) for op, operand in want.items())
        return isinstance(item, dict) and all(compare(item.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (isinstance(item, (list, tuple)) and len(item) == len(want)
                and all(compare(i, w) for i, w in zip(item, want)))
    return bool(item == want)


def apply_operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op not in _RANGE:
        raise ValueError(f"Unsupported operator: {op}")
    try:
        return _RANGE[op](float(value), float(operand))
    except (TypeError, ValueError):  # InMemoryStore raises here; a value that is no number does not match
        return False


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        part = namespace[:len(path)]
    elif condition.match_type == "suffix":
        part = namespace[len(namespace) - len(path):]
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or p == label for p, label in zip(path, part))


__all__ = ["ReMeStore"]


# -- working memory: the conversation of a thread as a ReMe session ----------------------------------
SUMMARY_MESSAGE_ID = "reme-session-summary"
"""The id of the message holding the session's compressed summary in the graph's state."""


def _session_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI-style dicts that keep their LangChain ids."""
    dicts: list[dict[str, Any]] = convert_to_openai_messages(list(messages))
    return [{**d, "id": m.id} for d, m in zip(dicts, messages)]


def _graph_messages(dicts: Sequence[Mapping[str, Any]]) -> list[AnyMessage]:
    """Session messages as LangChain messages with their ids (the summary with SUMMARY_MESSAGE_ID)."""
    return list(convert_to_messages([{**d, "id": d.get("id") or SUMMARY_MESSAGE_ID} for d in dicts]))


class _Facade:
    """Calls a facade method by name on a `ReMe` (awaited) or a `ReMeSync` (in a worker thread
    from async code), so one adapter serves LangChain's sync and async entry points."""

    reme: ReMe | ReMeSync

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if isinstance(self.reme, ReMe):
            return await getattr(self.reme, name)(*args, **kwargs)
        return await asyncio.to_thread(getattr(self.reme, name), *args, **kwargs)

    def _call_sync(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if isinstance(self.reme, ReMe):
            raise InvalidInputError(f"a {type(self).__name__} over an async ReMe serves async calls (ainvoke, "
                                    "astream, aget_messages...); for sync ones give it a ReMeSync")
        return getattr(self.reme, name)(*args, **kwargs)


class ReMeChatMessageHistory(_Facade, BaseChatMessageHistory):  # type: ignore[misc, unused-ignore]
    """LangChain's `BaseChatMessageHistory` over a ReMe session (for `RunnableWithMessageHistory`
    or any code that keeps a chat history): `messages` are the session's, with its compressed
    summary first (`prepend_summary`), `add_messages` appends in one write, `clear` empties the
    session. `reme` is a `ReMe` (the `a*` methods) or a `ReMeSync` (both)."""

    def __init__(self, reme: ReMe | ReMeSync, session_name: str, *, prepend_summary: bool = True) -> None:
        self.reme, self.session_name, self.prepend_summary = reme, session_name, prepend_summary

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override, unused-ignore]
        got = self._call_sync("get_messages", session_name=self.session_name, prepend_summary=self.prepend_summary)
        return list(_graph_messages([m.message for m in got]))

    async def aget_messages(self) -> list[BaseMessage]:
        got = await self._call("get_messages", session_name=self.session_name, prepend_summary=self.prepend_summary)
        return list(_graph_messages([m.message for m in got]))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self._call_sync("add_messages", _session_dicts(messages), session_name=self.session_name)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await self._call("add_messages", _session_dicts(messages), session_name=self.session_name)

    def clear(self) -> None:
        self._call_sync("clear_session", session_name=self.session_name)

    async def aclear(self) -> None:
        await self._call("clear_session", session_name=self.session_name)


class ReMeContextMiddleware(_Facade, AgentMiddleware):  # type: ignore[misc, unused-ignore]  # Any where langchain is not installed
    """The conversation of a LangGraph agent (`langchain.agents.create_agent`) kept as a ReMe
    session and fitted to the context window before every model call.

    >>> agent = create_agent(model, tools, middleware=[ReMeContextMiddleware(reme, threshold=8000)],
    ...                      checkpointer=InMemorySaver())
    >>> agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "chat-42"}})

    Before each model call (and at the end of a run) the state's new messages are added to the
    session (named `session_name`, else the thread's `thread_id`); before a model call `prepare_context` offloads oversized
    tool results and compacts the older messages into the session's summary once they take more
    than `threshold` tokens. The state's messages become what the model is to see: the summary
    (a user message with id `SUMMARY_MESSAGE_ID`) and the messages kept. So a checkpoint holds
    the fitted context, not the whole log (that is in ReMe, with `compressed` marks), and a
    thread without a checkpointer goes on from the session. The `read_tool_result` tool gives
    the agent an offloaded result back. With `user_name`, what is compacted is also summarized
    into that user's long-term memory, in the background.

    `reme` is a `ReMe` (for `ainvoke`/`astream`) or a `ReMeSync` (for both, the async calls in a
    worker thread); it belongs to the caller.
    """

    def __init__(self, reme: ReMe | ReMeSync, *, session_name: str | None = None, threshold: int | None = None,
                 reserve: int | None = None, user_name: str | None = None) -> None:
        super().__init__()
        self.reme, self.session_name = reme, session_name
        self.threshold, self.reserve, self.user_name = threshold, reserve, user_name
        self.tools = [StructuredTool.from_function(self._read_sync, coroutine=self._read, name="read_tool_result",
                                                   description=self._read.__doc__)]

    def session(self) -> str:
        """The session of the running graph: `session_name`, else its thread's id."""
        if self.session_name is not None:
            return self.session_name
        thread = (get_config().get("configurable") or {}).get("thread_id")
        if thread is None:
            raise InvalidInputError("name the session: ReMeContextMiddleware(session_name=...), or run the graph "
                                    "with config={'configurable': {'thread_id': ...}}")
        return str(thread)

    @staticmethod
    def _new(state: Mapping[str, Any], stored: Sequence[SessionMessage]) -> list[dict[str, Any]]:
        known = {m.message.get("id") for m in stored} | {SUMMARY_MESSAGE_ID}
        return _session_dicts([m for m in state["messages"] if m.id not in known])

    @staticmethod
    def _update(state: Mapping[str, Any], context: CompactedContext) -> dict[str, Any] | None:
        messages = _graph_messages(context.messages)
        if [m.id for m in messages] == [m.id for m in state["messages"]] and not context.offloaded:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}

    @staticmethod
    def _ids(state: Mapping[str, Any]) -> list[list[str]]:
        """The ids of the state's messages, in batches, to look up in the session (not read whole)."""
        ids = list(dict.fromkeys(m.id for m in state["messages"]
                                 if isinstance(m.id, str) and m.id != SUMMARY_MESSAGE_ID))
        return [ids[i:i + MAX_LIMIT] for i in range(0, len(ids), MAX_LIMIT)]

    def _record_sync(self, state: Any) -> str:
        session = self.session()
        held = [m for ids in self._ids(state) for m in self._call_sync("get_messages", session_name=session,
                                                                       message_ids=ids)]
        new = self._new(state, held)
        if new:
            self._call_sync("add_messages", new, session_name=session)
        return session

    async def _record(self, state: Any) -> str:
        session = self.session()
        held = [m for ids in self._ids(state) for m in await self._call("get_messages", session_name=session,
                                                                        message_ids=ids)]
        new = self._new(state, held)
        if new:
            await self._call("add_messages", new, session_name=session)
        return session

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        session = self._record_sync(state)
        return self._update(state, self._call_sync("prepare_context", session_name=session, threshold=self.threshold,
                                                   reserve=self.reserve, user_name=self.user_name))

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        session = await self._record(state)
        return self._update(state, await self._call("prepare_context", session_name=session,
                                                    threshold=self.threshold, reserve=self.reserve,
                                                    user_name=self.user_name))

    def after_agent(self, state: Any, runtime: Any) -> None:
        self._record_sync(state)  # the final reply

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        await self._record(state)

    async def _read(self, ref: str) -> str:
        """Read back the whole output of an earlier tool call that was cut short in the conversation
        ("Tool result offloaded ... read_tool_result(ref=...)").

        Args:
            ref: the reference given in the shortened tool result.
        """
        return str(await self._call("read_tool_result", ref, session_name=self.session()))

    def _read_sync(self, ref: str) -> str:
        return str(self._call_sync("read_tool_result", ref, session_name=self.session()))
