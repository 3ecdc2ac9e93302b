"""ReMeStore against LangGraph's own InMemoryStore: hypothesis generates batteries of operations
(puts, overwrites, deletes, gets, filtered and semantic searches, namespace listings, batches),
each run on both stores, and every result is compared.

Both stores embed with the same hashing embedder, so scores are comparable too. What is compared
as a set rather than in order, and why:
- results with a query are ranked by score; equal scores (equal texts) may come in either order;
- without a query InMemoryStore groups results by namespace (in the order namespaces were first
  used), ReMeStore lists them in creation order: within each namespace the orders must agree,
  and a page is checked against ReMeStore's own full list;
- InMemoryStore fails a batch whose puts index the same text twice (it embeds the text once); the
  expectation is then its reads, then its puts one by one (the last of each key);
- InMemoryStore keeps namespaces that were emptied or only read in `list_namespaces`; ReMeStore
  lists namespaces that hold items (as LangGraph's Postgres store does), so the expectation is
  InMemoryStore's listing over the namespaces holding items;
- where InMemoryStore raises on a range filter meeting a value float() refuses (a missing field,
  a word), ReMeStore treats that item as not matching: the expectation is then InMemoryStore's
  own comparison applied item by item, with such an item left out.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore, _compare_values

from reme.embedding import HashEmbedder
from reme.integrations.langgraph import ReMeStore

DIM = 64
ALL = 10_000
HASH = HashEmbedder(dim=DIM)
NAMESPACES = [("a",), ("a", "x"), ("a", "y"), ("b", "x"), ("b", "x", "z")]
KEYS = ["k1", "k2", "K1", "k 3"]
TEXTS = ["green tea", "Green  tea", "black coffee", "window seat on trains", "red bike"]


def embed(texts: list[str]) -> list[list[float]]:
    return [HASH.embed_one(t) for t in texts]


numbers = st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False, allow_infinity=False))
fields = {"text": st.sampled_from(TEXTS), "n": st.one_of(numbers, st.sampled_from(["2", "two", None, True])),
          "tag": st.sampled_from(["a", "b"]), "meta": st.fixed_dictionaries({"kind": st.sampled_from(["pref", "fact"])}),
          "list": st.lists(st.integers(0, 2), max_size=2)}
values = st.sets(st.sampled_from(sorted(fields))).flatmap(lambda keys: st.fixed_dictionaries({k: fields[k] for k in keys}))
conditions = {
    "text": st.one_of(st.sampled_from(TEXTS), st.dictionaries(st.sampled_from(["$eq", "$ne"]), st.sampled_from(TEXTS),
                                                              min_size=1)),
    "n": st.one_of(numbers, *[st.dictionaries(st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), numbers,
                                              min_size=size, max_size=size) for size in (1, 1, 2)]),
    "tag": st.sampled_from(["a", "b"]),
    "meta": st.fixed_dictionaries({"kind": st.sampled_from(["pref", "fact"])}),
    "list": st.lists(st.integers(0, 2), max_size=2),
}
filters = st.one_of(st.none(), st.sampled_from(sorted(conditions)).flatmap(
    lambda key: st.fixed_dictionaries({key: conditions[key]})), st.fixed_dictionaries(
    {"tag": conditions["tag"], "n": conditions["n"]}))
prefixes = st.sampled_from([(), (), ("a",), ("a",), ("b",), ("a", "x"), ("b", "x"), ("b", "x", "z")])
namespaces, keys = st.sampled_from(NAMESPACES), st.sampled_from(KEYS)
puts = st.tuples(namespaces, keys, st.one_of(values, values, st.none()),
                 st.sampled_from([None, None, False, ["tag"]])).map(lambda a: PutOp(*a))
gets = st.tuples(namespaces, keys).map(lambda a: GetOp(*a))
searches = st.tuples(prefixes, filters, st.sampled_from([1, 2, 3, ALL]), st.sampled_from([0, 0, 1, 2])).map(
    lambda a: SearchOp(*a))
queries = st.tuples(prefixes, filters, st.sampled_from([1, 3, ALL]), st.just(0),
                    st.sampled_from(["tea", "coffee", "bike seat"])).map(lambda a: SearchOp(*a))
patterns = st.lists(st.sampled_from(["a", "b", "x", "z", "*"]), max_size=2).map(tuple)
conditions_of = st.one_of(st.none(), st.tuples(st.sampled_from(["prefix", "suffix"]), patterns).map(
    lambda a: (MatchCondition(*a),)))
listings = st.tuples(conditions_of, st.sampled_from([None, 1, 2]), st.sampled_from([1, 2, 100]),
                     st.sampled_from([0, 1])).map(lambda a: ListNamespacesOp(*a))
single = st.one_of(puts, puts, puts, gets, searches, searches, queries, listings)
batches = st.lists(st.one_of(puts, gets, prefixes.map(lambda p: SearchOp(p, None, ALL))), min_size=2, max_size=4)
battery = st.tuples(st.lists(puts, min_size=3, max_size=12), st.lists(st.one_of(single, single, single, batches),
                                                                     min_size=5, max_size=30)).map(lambda a: a[0] + a[1])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReMeStore]:
    path: Path = tmp_path_factory.mktemp("differential")
    with ReMeStore(working_dir=str(path), embedding={"backend": "hash", "dimensions": DIM}, fields=["text"]) as s:
        yield s


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(battery)
def test_same_results_as_in_memory_store(store: ReMeStore, ops: list[Any]) -> None:
    for item in store.search((), limit=ALL):  # a clean store for each battery (the store's own deletes)
        store.delete(item.namespace, item.key)
    reference = InMemoryStore(index={"dims": DIM, "embed": embed, "fields": ["text"]})
    for op in ops:
        if isinstance(op, list):
            check_batch(store, reference, op)
        elif isinstance(op, PutOp):
            forget_old_vectors(reference, [op])
            assert store.batch([op]) == reference.batch([op]) == [None]
        elif isinstance(op, GetOp):
            check_item(store.batch([op])[0], reference.batch([op])[0])
        elif isinstance(op, SearchOp):
            check_search(store, reference, op)
        else:
            assert store.batch([op])[0] == expected_namespaces(reference, op), op


def forget_old_vectors(reference: InMemoryStore, puts: list[PutOp]) -> None:
    """InMemoryStore keeps an item's vectors of an earlier put when an overwrite indexes other
    fields or none (`index=False`), so a search still finds it by its old text; ReMeStore embeds
    the current value only. Dropping them before each put compares the current values' scores."""
    for op in puts:
        reference._vectors[op.namespace].pop(op.key, None)


def check_item(ours: Item | None, theirs: Item | None) -> None:
    assert (ours is None) == (theirs is None)
    if ours is not None and theirs is not None:
        assert (ours.namespace, ours.key, ours.value) == (theirs.namespace, theirs.key, theirs.value)
        assert ours.created_at <= ours.updated_at


def check_batch(store: ReMeStore, reference: InMemoryStore, ops: list[Any]) -> None:
    """Reads in a batch see the state before its puts; the last put of a key wins."""
    forget_old_vectors(reference, [op for op in ops if isinstance(op, PutOp)])
    for ours, theirs in zip(store.batch(ops), reference_batch(reference, ops), strict=True):
        if isinstance(ours, list):
            assert by_namespace(ours) == by_namespace(theirs)
        else:
            check_item(ours, theirs)


def check_search(store: ReMeStore, reference: InMemoryStore, op: SearchOp) -> None:
    page = store.batch([op])[0]
    whole = store.batch([op._replace(limit=ALL, offset=0)])[0]
    expected = reference_search(reference, op._replace(limit=ALL, offset=0))
    assert same_hits(hits(whole), hits(expected)), op
    if op.query is None:
        assert by_namespace(whole) == by_namespace(expected), op
        assert [key(i) for i in page] == [key(i) for i in whole[op.offset:op.offset + op.limit]]
        if len({i.namespace for i in expected}) <= 1:  # one namespace: the very same page
            assert [key(i) for i in page] == [key(i) for i in expected[op.offset:op.offset + op.limit]]
    else:  # the best `limit`: the same scores as InMemoryStore's best, each item found with its score
        assert same_scores([i.score for i in page], [i.score for i in expected][:op.limit]), op
        everything = hits(expected)
        assert all(same_hits(hits([i]), {k: everything.get(k)} if k in everything else {}) for i in page
                   for k in hits([i]))
    assert all(i.created_at <= i.updated_at for i in whole)


def reference_batch(reference: InMemoryStore, ops: list[Any]) -> list[Any]:
    try:
        return list(reference.batch(ops))
    except ValueError as exc:  # two puts of one batch indexing the same text: InMemoryStore embeds it once
        assert "Number of embeddings" in str(exc)  # and fails before writing anything; so: its reads,
        results = list(reference.batch([op if not isinstance(op, PutOp) else GetOp(("unused",), "") for op in ops]))
        last = {(op.namespace, op.key): op for op in ops if isinstance(op, PutOp)}
        for op in last.values():  # then its puts, the last of each key, in the order of their first put
            reference.batch([op])
        return [None if isinstance(op, PutOp) else r for op, r in zip(ops, results)]


def reference_search(reference: InMemoryStore, op: SearchOp) -> list[Any]:
    try:
        return list(reference.batch([op])[0])
    except (TypeError, ValueError):  # a range met a value float() refuses: that item does not match
        everything = reference.batch([op._replace(filter=None)])[0]
        return [i for i in everything if all(comparable(i.value.get(k), f) for k, f in (op.filter or {}).items())]


def comparable(value: Any, condition: Any) -> bool:
    try:
        return bool(_compare_values(value, condition))
    except (TypeError, ValueError):
        return False


def expected_namespaces(reference: InMemoryStore, op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """InMemoryStore's own listing, over the namespaces that hold items."""
    held = InMemoryStore()
    for namespace in {i.namespace for i in reference.search((), limit=ALL)}:
        held.put(namespace, "k", {})
    return list(held.batch([op])[0])


def key(item: Item) -> tuple[tuple[str, ...], str]:
    return item.namespace, item.key


def by_namespace(items: list[Any]) -> list[Any]:
    """The items grouped by namespace, each group in the store's order (a stable sort)."""
    return [(i.namespace, i.key, i.value) for i in sorted(items, key=lambda i: i.namespace)]


def hits(items: list[Any]) -> dict[tuple[Any, ...], float | None]:
    return {(i.namespace, i.key, repr(i.value)): i.score for i in items}


def same_hits(ours: dict[tuple[Any, ...], float | None], theirs: dict[tuple[Any, ...], float | None]) -> bool:
    return ours.keys() == theirs.keys() and same_scores([ours[k] for k in ours], [theirs[k] for k in ours])


def same_scores(ours: list[float | None], theirs: list[float | None]) -> bool:
    """Equal up to float32 (the engine's vectors) against float64 (InMemoryStore's)."""
    return len(ours) == len(theirs) and all(
        (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, abs_tol=1e-4))
        for a, b in zip(ours, theirs))
