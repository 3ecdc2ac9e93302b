"""Properties of the whole API over generated input: every call either succeeds or raises a
`ReMeError` (never another exception, never a hang), and a rejected call leaves both collections
exactly as they were. Examples are derandomized, so CI runs the same ones every time."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from datetime import timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import DIM, dump_store
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from reme import ReMe, ReMeError
from reme.cli import main as cli_main
from reme.store.filters import FIELD_KINDS

SETTINGS = settings(deadline=None, derandomize=True, database=None, max_examples=100,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])
TIMEOUT = 60.0

# -- strategies ----------------------------------------------------------------------------------
# Every code point, lone surrogates and NUL included; now and then a huge text.
chars = st.characters(exclude_categories=())
plain = st.one_of(st.sampled_from(["Alice", "seats", "window seat", "quota", "travel"]),
                  st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20))
weird = st.one_of(st.text(chars, max_size=20), st.sampled_from(["", " ", "\x00", "\ud800", "a\udfffb"]),
                  st.builds(lambda c, n: c * n, st.sampled_from(["x", "\udc80", " "]),
                            st.sampled_from([300, 10_001, 200_000])))


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`good` three times in four, else `bad` (mapped, so that one_of does not flatten its branches)."""
    return st.sampled_from([True, True, True, False]).flatmap(lambda ok: good if ok else bad)


texts = mostly(plain, weird)
"""Mostly text a caller would send (so that calls also succeed), else anything at all."""
numbers = st.one_of(st.integers(), st.floats(), st.sampled_from([2 ** 63, -(2 ** 63) - 1, 2 ** 64, 10 ** 400]),
                    st.booleans())
scalars = st.one_of(st.none(), numbers, texts)
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(texts, inner, max_size=4)),
                           max_leaves=12)


def _nest(depth: int, inner: Any) -> Any:
    for _ in range(depth):
        inner = [inner]
    return inner


deep = st.builds(_nest, st.sampled_from([10, 100, 1_000, 100_000]), scalars)


def dumps(value: Any) -> str:
    """JSON text for any generated value; a value too deep for `json.dumps` becomes 100,000 `[`."""
    try:
        return json.dumps(value, allow_nan=True)
    except RecursionError:
        return "[" * 100_000
anything = st.one_of(json_values, deep, numbers, texts)
names = st.one_of(st.sampled_from(["alice", "bob", None]), texts)
scopes = st.one_of(st.tuples(st.sampled_from(["user_name", "task_name", "tool_name"]),
                             st.one_of(st.sampled_from(["alice", "appworld", "search"]), texts)).map(lambda kv: {kv[0]: kv[1]}),
                   st.fixed_dictionaries({}, optional={"user_name": names, "task_name": names, "tool_name": names}))
fields = st.sampled_from([*FIELD_KINDS, "metadata.topic", "metadata.n", "bogus", "$and", "$or", "$not", "op"])
ops = st.sampled_from(["eq", "ne", "in", "not_in", "gt", "gte", "lt", "lte", "contains", "any", "all", "nope"])
conditions = st.one_of(scalars, st.lists(scalars, max_size=4), st.dictionaries(ops, st.one_of(scalars, st.lists(
    scalars, max_size=3)), max_size=3))


def _deep_filter(depth: int, op: str) -> Any:
    spec: Any = {"memory_type": "personal"}
    for _ in range(depth):
        spec = {"$not": spec} if op == "$not" else {op: [spec]}
    return spec


filters = st.one_of(
    st.none(), st.just({"memory_type": "personal"}), st.just({"score": {"gte": 0}, "tags": {"any": ["travel"]}}),
    anything,
    st.recursive(st.dictionaries(st.one_of(fields, texts), conditions, max_size=3),
                 lambda inner: st.one_of(st.builds(lambda f: {"$not": f}, inner),
                                         st.builds(lambda fs: {"$and": fs}, st.lists(inner, max_size=3)),
                                         st.builds(lambda fs: {"$or": fs}, st.lists(inner, max_size=3))),
                 max_leaves=8),
    st.builds(_deep_filter, st.sampled_from([5, 33, 900]), st.sampled_from(["$not", "$and", "$or"])))


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


cursors = st.one_of(st.none(), texts, numbers, st.binary(max_size=40).map(_b64),
                    json_values.map(lambda v: _b64(dumps(v).encode("utf-8", "surrogatepass"))),
                    st.fixed_dictionaries({}, optional={"offset": anything, "value": anything, "seen": anything,
                                                        "sort": texts, "direction": texts}).map(
                        lambda d: _b64(dumps(d).encode("utf-8", "surrogatepass"))))
good_metadata = st.dictionaries(st.sampled_from(["topic", "n", "freq", "stats"]),
                                st.one_of(st.integers(-5, 5), plain, st.floats(0, 1)), max_size=3)
metadatas = st.one_of(good_metadata, good_metadata, json_values, deep)
good_tags = st.lists(st.sampled_from(["travel", "food", "work"]), max_size=3)
datetimes = st.one_of(st.none(), st.datetimes(), st.datetimes(timezones=st.just(timezone.utc)), texts, numbers)
windows = st.one_of(st.none(), texts, numbers, st.tuples(datetimes, datetimes), st.lists(datetimes, max_size=3))
lists_of_text = st.one_of(st.none(), texts, numbers, st.lists(texts, max_size=5),
                          st.builds(lambda n: [f"t{i}" for i in range(n)], st.sampled_from([101, 100_000])))


# -- the store under test ------------------------------------------------------------------------
class Harness:
    """One ReMe on its own loop for the whole module (opening one per example would dominate)."""

    def __init__(self, path: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.outcomes: Counter[tuple[str, bool]] = Counter()
        """(test, accepted) -> calls: both halves of "succeeds or rejects cleanly" must occur."""
        self.reme = ReMe(working_dir=path, embedding={"backend": "hash", "dimensions": DIM})
        self.run(self.reme.open())
        self.ids = [self.run(self.reme.add_memory(f"Alice fact {i} about seats", user_name="alice",
                                                  tags=["travel"], metadata={"n": i})).memory_id for i in range(3)]
        self.ids.append(self.run(self.reme.add_memory("Check the quota first", task_name="appworld",
                                                      metadata={"freq": 1, "utility": 1})).memory_id)

    def run(self, coro: Awaitable[Any]) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT))

    def check(self, make: Callable[[], Awaitable[Any]]) -> bool:
        """Success (True) or a ReMeError after which nothing changed (False); anything else fails."""
        before = self.run(dump_store(self.reme))
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[-1].split(" ")[0]
        try:
            self.run(make())
            event("accepted")
            self.outcomes[test, True] += 1
            return True
        except ReMeError as exc:
            event(f"rejected: {type(exc).__name__}")
            self.outcomes[test, False] += 1
            assert self.run(dump_store(self.reme)) == before, "a rejected call changed the store"
            return False

    def close(self) -> None:
        self.run(self.reme.close())
        self.loop.close()


@pytest.fixture(scope="module")
def h(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    harness = Harness(tmp_path_factory.mktemp("props") / "wd")
    yield harness
    harness.close()


ids = st.one_of(st.sampled_from([0, 1, 2, 3]), st.sampled_from([0, 1, 2, 3]), texts, numbers, st.none())


def pick(h: Harness, memory_id: Any) -> Any:
    return h.ids[memory_id] if isinstance(memory_id, int) and not isinstance(memory_id, bool) and \
        0 <= memory_id < len(h.ids) else memory_id


# -- properties ----------------------------------------------------------------------------------
@SETTINGS
@given(content=texts, scope=scopes, optional=st.fixed_dictionaries({}, optional={
    "when_to_use": texts, "metadata": metadatas, "tags": st.one_of(good_tags, good_tags, lists_of_text),
    "score": st.one_of(st.floats(0, 1), numbers), "author": texts, "ref_ids": st.one_of(good_tags, lists_of_text),
    "memory_type": st.one_of(st.sampled_from(["personal", "procedural", "tool", "history"]), weird),
    "message_time": st.one_of(st.datetimes(), datetimes)}))
def test_add_memory_succeeds_or_rejects_cleanly(h: Harness, content: Any, scope: dict[str, Any],
                                                optional: dict[str, Any]) -> None:
    h.check(lambda: h.reme.add_memory(content, **scope, **optional))


@SETTINGS
@given(memory_id=mostly(st.sampled_from([1, 2, 3]), ids), changes=st.fixed_dictionaries({}, optional={
    "content": texts, "metadata": metadatas, "tags": st.one_of(good_tags, lists_of_text),
    "score": st.one_of(st.floats(0, 1), numbers), "author": texts, "when_to_use": texts,
    "message_time": mostly(st.datetimes(), datetimes), "user_name": mostly(st.just("alice"), names)}))
def test_update_memory_succeeds_or_rejects_cleanly(h: Harness, memory_id: Any, changes: dict[str, Any]) -> None:
    h.check(lambda: h.reme.update_memory(pick(h, memory_id), **changes))


@SETTINGS
@given(query=texts, top_k=mostly(st.integers(1, 20), st.one_of(numbers, texts)), flt=mostly(st.none(), filters),
       mode=mostly(st.sampled_from(["hybrid", "dense", "keyword"]), weird), user=names,
       threshold=mostly(st.one_of(st.none(), st.floats(0, 1)), st.one_of(numbers, weird)))
def test_search_memory_succeeds_or_rejects_cleanly(h: Harness, query: Any, top_k: Any, flt: Any, mode: Any,
                                                   user: Any, threshold: Any) -> None:
    h.check(lambda: h.reme.search_memory(query, top_k=top_k, filters=flt, mode=mode, user_name=user,
                                         score_threshold=threshold))


@SETTINGS
@given(limit=mostly(st.integers(1, 20), st.one_of(numbers, texts)), cursor=mostly(st.none(), cursors),
       flt=mostly(st.none(), filters),
       sort=st.one_of(st.none(), st.sampled_from(["score", "version", "time_created"]), weird),
       direction=st.one_of(st.sampled_from(["asc", "desc"]), weird, numbers))
def test_list_and_count_succeed_or_reject_cleanly(h: Harness, limit: Any, cursor: Any, flt: Any, sort: Any,
                                                  direction: Any) -> None:
    h.check(lambda: h.reme.list_memory(limit=limit, cursor=cursor, filters=flt, sort_key=sort, direction=direction))
    h.check(lambda: h.reme.count_memory(filters=flt))


def test_paging_with_real_cursors_still_works(h: Harness) -> None:
    for sort in (None, "score", "time_created"):
        seen, cursor = [], None
        while True:
            page = h.run(h.reme.list_memory(limit=1, cursor=cursor, sort_key=sort))
            seen += [n.memory_id for n in page]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) == h.run(h.reme.count_memory())


@SETTINGS
@given(memory_id=ids, user=names)
def test_get_and_delete_succeed_or_reject_cleanly(h: Harness, memory_id: Any, user: Any) -> None:
    memory_id = pick(h, memory_id) if memory_id != 0 else memory_id  # keep the seed memories for other tests
    h.check(lambda: h.reme.get_memory(memory_id, user_name=user))
    h.check(lambda: h.reme.history(memory_id))
    h.check(lambda: h.reme.delete_memory(memory_id, user_name=user))


@SETTINGS
@given(memory_ids=st.one_of(ids, st.lists(ids, max_size=4)), success=anything)
def test_record_usage_succeeds_or_rejects_cleanly(h: Harness, memory_ids: Any, success: Any) -> None:
    chosen = [pick(h, m) for m in memory_ids] if isinstance(memory_ids, list) else pick(h, memory_ids)
    h.check(lambda: h.reme.record_usage(chosen, success=success))


_line = st.one_of(
    st.binary(max_size=60),
    json_values.map(lambda v: dumps(v).encode("utf-8", "surrogatepass")),
    st.fixed_dictionaries({"content": texts}, optional={
        "memory_type": st.one_of(st.sampled_from(["personal", "procedural", "task"]), texts),
        "memory_target": texts, "memory_id": st.one_of(st.uuids().map(str), texts, numbers),
        "metadata": anything, "tags": anything, "score": numbers, "vector": anything, "when_to_use": texts,
        "time_created": anything}).map(lambda d: dumps(d).encode("utf-8", "surrogatepass")),
    deep.map(lambda v: dumps(v).encode("utf-8", "surrogatepass")))


_good_line = st.builds(lambda content, when, mid: json.dumps(
    {"memory_id": mid, "memory_type": "procedural", "memory_target": "imported", "content": content,
     "when_to_use": when}).encode(), plain, plain, st.uuids().map(str))


@SETTINGS
@given(lines=st.lists(mostly(_good_line, _line), min_size=1, max_size=3),
       fmt=mostly(st.sampled_from(["jsonl", "reme-jsonl"]), st.one_of(texts, numbers)),
       task=mostly(st.just("appworld"), names))
def test_import_memory_succeeds_or_rejects_cleanly(h: Harness, tmp_path_factory: pytest.TempPathFactory,
                                                   lines: list[bytes], fmt: str, task: Any) -> None:
    path = tmp_path_factory.mktemp("imp") / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    h.check(lambda: h.reme.import_memory(path, format=fmt, task_name=task))


@SETTINGS
@given(query=st.one_of(st.none(), texts), scope=scopes,
       tool=mostly(st.none(), st.one_of(st.lists(texts, max_size=3), numbers)),
       top_k=mostly(st.one_of(st.none(), st.integers(1, 20)), st.one_of(numbers, texts)),
       now=mostly(st.one_of(st.none(), st.datetimes()), datetimes), window=mostly(st.none(), windows),
       with_source=anything)
def test_retrieve_memory_succeeds_or_rejects_cleanly(h: Harness, query: Any, scope: dict[str, Any], tool: Any,
                                                     top_k: Any, now: Any, window: Any, with_source: Any) -> None:
    if tool is not None:  # a list of tools (or something that is not one)
        scope = {**scope, "tool_name": tool}
    h.check(lambda: h.reme.retrieve_memory(query, **scope, top_k=top_k, now=now, time_window=window,
                                           with_source=bool(with_source), rewrite=False, rerank=False))


# -- the command line ----------------------------------------------------------------------------
EXIT_CODES = {0, 2, 3}
"""What a rejected argument may end in: success, invalid input (2), not found (3); never 1."""


@settings(SETTINGS, max_examples=25)
@given(argv=st.one_of(
    st.tuples(st.just("add"), texts, st.sampled_from(["--user", "--task", "--tool"]), texts,
              st.sampled_from(["--metadata", "--tag", "--score", "--author", "--type", "--when-to-use"]),
              st.one_of(texts, anything.map(dumps)),
              ),
    st.tuples(st.just("list"), st.sampled_from(["--limit", "--cursor", "--filter", "--sort", "--type"]),
              st.one_of(texts, numbers.map(str), filters.map(dumps))),
    st.tuples(st.just("search"), texts, st.sampled_from(["--top-k", "--filter", "--user"]),
              st.one_of(texts, numbers.map(str))),
    st.tuples(st.sampled_from(["get", "delete"]), texts),
))
def test_cli_exits_with_a_documented_code_and_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                       argv: tuple[str, ...]) -> None:
    wd = tmp_path_factory.getbasetemp() / "cli-props"
    args = [*argv, "--working-dir", str(wd), "--embedding", "hash"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(args)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    assert code in EXIT_CODES, err.getvalue()
    assert "Traceback" not in err.getvalue()
    if code and not err.getvalue().startswith("usage:"):
        assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()


# -- working memory --------------------------------------------------------------------------------
roles = mostly(st.sampled_from(["user", "assistant", "tool", "system"]), st.one_of(weird, numbers, st.none()))
chat_messages = mostly(
    st.fixed_dictionaries({"role": roles, "content": st.one_of(texts, st.none(), st.lists(json_values, max_size=3))},
                          optional={"name": texts, "tool_call_id": texts, "tool_calls": json_values, "time": datetimes,
                                    "id": texts, "extra": json_values}),
    anything)
message_lists = mostly(st.lists(chat_messages, min_size=1, max_size=4), anything)
marks = st.one_of(st.none(), good_tags, texts, lists_of_text, numbers)
sessions = mostly(st.sampled_from(["chat", "other"]), st.one_of(texts, numbers, st.none()))


@SETTINGS
@given(messages=message_lists, session=sessions, marks_=marks)
def test_add_messages_succeeds_or_rejects_cleanly(h: Harness, messages: Any, session: Any, marks_: Any) -> None:
    h.check(lambda: h.reme.add_messages(messages, session_name=session, marks=marks_))


@SETTINGS
@given(state=mostly(st.fixed_dictionaries(
    {"content": st.lists(st.tuples(chat_messages, marks).map(list), max_size=3)},
    optional={"_compressed_summary": st.one_of(texts, numbers, st.none())}), anything), session=sessions)
@example(state={"content": [], "_compressed_summary": "\x00"}, session="chat")  # a ValidationError leaked
def test_load_session_state_succeeds_or_rejects_cleanly(h: Harness, state: Any, session: Any) -> None:
    h.check(lambda: h.reme.load_session_state(state, session_name=session))


@SETTINGS
@given(ids=st.one_of(st.none(), lists_of_text, ids), add=marks, remove=marks, session=sessions,
       mark=marks, exclude=marks)
def test_marks_succeed_or_reject_cleanly(h: Harness, ids: Any, add: Any, remove: Any, session: Any, mark: Any,
                                         exclude: Any) -> None:
    h.check(lambda: h.reme.update_marks(session_name=session, ids=ids, add=add, remove=remove))
    h.check(lambda: h.reme.get_messages(session_name=session, mark=mark, exclude_mark=exclude))
    h.check(lambda: h.reme.delete_messages_by_mark(mark, session_name=session))


@SETTINGS
@given(session=sessions, last=mostly(st.one_of(st.none(), st.integers(1, 5)), st.one_of(numbers, texts)),
       after=st.one_of(st.none(), ids, texts, numbers), refs=st.one_of(st.none(), lists_of_text, texts, numbers),
       exclude=marks)
def test_reading_part_of_a_session_succeeds_or_rejects_cleanly(h: Harness, session: Any, last: Any, after: Any,
                                                               refs: Any, exclude: Any) -> None:
    h.check(lambda: h.reme.get_messages(session_name=session, last=last, after=after, message_ids=refs,
                                        exclude_mark=exclude, prepend_summary=True))


@SETTINGS
@given(messages=message_lists, session=sessions, max_chars=mostly(st.integers(1, 50), st.one_of(numbers, texts)),
       ttl=mostly(st.none(), st.one_of(numbers, texts)), threshold=mostly(st.integers(0, 10_000), numbers),
       reserve=mostly(st.integers(0, 100), numbers))
@example(messages=[{"role": "user", "content": None, "tool_calls": 1}], session="chat", max_chars=1, ttl=None,
         threshold=0, reserve=0)  # a TypeError leaked: tool_calls not a list
def test_context_calls_succeed_or_reject_cleanly(h: Harness, messages: Any, session: Any, max_chars: Any, ttl: Any,
                                                 threshold: Any, reserve: Any) -> None:
    h.check(lambda: h.reme.compact_tool_results(messages, session_name=session, max_chars=max_chars, ttl_s=ttl))
    # no LLM here: a compaction that is needed is a ConfigError, and then nothing is written
    h.check(lambda: h.reme.prepare_context(session_name=session, threshold=threshold, reserve=reserve))
    h.check(lambda: h.reme.compact_context(messages, threshold=threshold, reserve=reserve))


def test_every_property_saw_both_successes_and_rejections(h: Harness) -> None:
    """Runs after the properties above (file order): a property whose inputs were all rejected (or
    all accepted) would pass while testing only half of its claim."""
    tests = {test for test, _ in h.outcomes}
    assert len(tests) >= 8, sorted(tests)
    one_sided = sorted(t for t in tests if not (h.outcomes[t, True] and h.outcomes[t, False]))
    assert one_sided == [], f"properties that never saw both outcomes: {one_sided}"
