"""One typed filter model for every store backend.

Build filters with the helpers (`eq`, `in_`, `range_`, ... combined with `&`, `|`, `~`) or from a
plain dict, which is also what the command line takes as JSON:

>>> parse_filter({"memory_type": "personal", "score": {"gte": 0.5}, "tags": {"any": ["travel"]}})
>>> eq("metadata.topic", "travel") & ~contains("content", "aisle")

Fields are the `MemoryNode` fields below and `metadata.<key>`. Unknown fields and values of the
wrong type raise `InvalidFilterError` before any store call.
"""

from __future__ import annotations

import functools
import math
import uuid
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Annotated, Any, Callable, Generic, Literal, Mapping, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from reme.errors import InvalidFilterError
from reme.schema import INT64_MAX, INT64_MIN, MAX_FILTER_DEPTH, MAX_FILTER_SIZE, MemoryType, as_aware, safe_text

Scalar = Union[bool, int, float, str, datetime]
Kind = Literal["keyword", "text", "datetime", "float", "int", "list", "metadata"]

FIELD_KINDS: dict[str, Kind] = {
    "memory_id": "keyword",
    "memory_type": "keyword",
    "target_kind": "keyword",
    "memory_target": "keyword",
    "author": "keyword",
    "when_to_use": "text",
    "content": "text",
    "message_time": "datetime",
    "time_created": "datetime",
    "time_modified": "datetime",
    "score": "float",
    "version": "int",
    "tags": "list",
    "ref_ids": "list",
    "content_hash": "keyword",  # derived: sha256 over (type, target, normalized content)
}
SORT_KEYS = ("time_created", "time_modified", "message_time", "score", "version")


def field_kind(name: str) -> Kind:
    _text(name, "a filter field")
    if name.startswith("metadata.") and all(name.split(".")[1:]):
        return "metadata"
    if name in FIELD_KINDS:
        return FIELD_KINDS[name]
    known = ", ".join(sorted(FIELD_KINDS))
    raise InvalidFilterError(f"unknown filter field {name!r}; use one of {known} or metadata.<key>")


def _parse_datetime(value: Any, name: str) -> datetime:
    if isinstance(value, datetime):
        return as_aware(value)
    if isinstance(value, str):
        try:
            return as_aware(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            pass
    raise InvalidFilterError(f"{name} compares with datetimes; got {value!r}")


def _text(value: str, what: str) -> str:
    try:
        return safe_text(value, what)
    except ValueError as exc:
        raise InvalidFilterError(str(exc)) from None


def _number(name: str, value: float) -> float:
    """Numbers the engine can hold: finite floats, integers within signed 64 bits."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidFilterError(f"{name} compares with finite numbers; got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        raise InvalidFilterError(f"{name} compares with integers within 64 bits")
    return value


def _check_value(name: str, kind: Kind, value: Any) -> Scalar:
    """Return `value` in the type the field holds, or raise InvalidFilterError."""
    if isinstance(value, (int, float)):
        _number(name, value)
    elif isinstance(value, str):
        _text(value, f"the value {name} compares with")
    if kind == "metadata":
        if isinstance(value, (bool, int, float, str, datetime)):
            return as_aware(value) if isinstance(value, datetime) else value
        raise InvalidFilterError(f"{name} compares with a string, number, bool or datetime; got {value!r}")
    if kind == "datetime":
        return _parse_datetime(value, name)
    if kind in ("float", "int"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidFilterError(f"{name} compares with numbers; got {value!r}")
        if kind == "int" and isinstance(value, float) and not value.is_integer():
            raise InvalidFilterError(f"{name} holds whole numbers; got {value!r}")
        return _number(name, int(value)) if kind == "int" else float(value)
    if not isinstance(value, str):
        raise InvalidFilterError(f"{name} compares with strings; got {value!r}")
    if name == "target_kind" and value not in ("user", "task", "tool", "session"):
        raise InvalidFilterError(f"unknown target kind {value!r}; use user, task, tool or session")
    if name == "memory_type" and value not in {t.value for t in MemoryType}:
        raise InvalidFilterError(f"unknown memory type {value!r}; use one of {[t.value for t in MemoryType]}")
    if name == "memory_id":
        try:
            return str(uuid.UUID(value))
        except ValueError:
            raise InvalidFilterError(f"memory_id compares with UUIDs; got {value!r}") from None
    return value


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def __and__(self, other: "Filter") -> "And":
        return And(filters=[self, other])  # type: ignore[list-item]

    def __or__(self, other: "Filter") -> "Or":
        return Or(filters=[self, other])  # type: ignore[list-item]

    def __invert__(self) -> "Not":
        return Not(filter=self)  # type: ignore[arg-type]


class Eq(_Node):
    op: Literal["eq"] = "eq"
    field: str
    value: Scalar

    @model_validator(mode="after")
    def _check(self) -> "Eq":
        kind = field_kind(self.field)
        object.__setattr__(self, "value", _check_value(self.field, "keyword" if kind == "list" else kind, self.value))
        return self


class Ne(Eq):
    op: Literal["ne"] = "ne"  # type: ignore[assignment]


class In(_Node):
    op: Literal["in"] = "in"
    field: str
    values: list[Scalar]

    @model_validator(mode="after")
    def _check(self) -> "In":
        kind = field_kind(self.field)
        kind = "keyword" if kind == "list" else kind
        object.__setattr__(self, "values", [_check_value(self.field, kind, v) for v in self.values])
        return self


class NotIn(In):
    op: Literal["not_in"] = "not_in"  # type: ignore[assignment]


class Range(_Node):
    op: Literal["range"] = "range"
    field: str
    gt: Scalar | None = None
    gte: Scalar | None = None
    lt: Scalar | None = None
    lte: Scalar | None = None

    @model_validator(mode="after")
    def _check(self) -> "Range":
        kind = field_kind(self.field)
        if kind not in ("datetime", "float", "int", "metadata"):
            raise InvalidFilterError(f"range does not apply to {self.field} (a {kind} field)")
        bounds = {k: getattr(self, k) for k in ("gt", "gte", "lt", "lte") if getattr(self, k) is not None}
        if not bounds:
            raise InvalidFilterError(f"range on {self.field} needs at least one of gt, gte, lt, lte")
        if kind == "metadata":
            dates = [isinstance(v, (datetime, str)) for v in bounds.values()]
            kind = "datetime" if all(dates) else "float"
        for key, value in bounds.items():
            if kind == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InvalidFilterError(f"range bounds on {self.field} must all be numbers or all datetimes")
            object.__setattr__(self, key, _check_value(self.field, kind, value))
        return self

    @property
    def is_datetime(self) -> bool:
        return any(isinstance(getattr(self, k), datetime) for k in ("gt", "gte", "lt", "lte"))


class Contains(_Node):
    """Every word of `text` occurs in the field, ignoring case."""

    op: Literal["contains"] = "contains"
    field: str
    text: str

    @model_validator(mode="after")
    def _check(self) -> "Contains":
        kind = field_kind(self.field)
        if kind not in ("text", "keyword", "metadata"):
            raise InvalidFilterError(f"contains does not apply to {self.field} (a {kind} field)")
        if not self.text.strip():
            raise InvalidFilterError("contains needs a non-empty text")
        _text(self.text, "contains text")
        return self


class TagsAny(_Node):
    """The list field holds at least one of `values`."""

    op: Literal["any"] = "any"
    field: str = "tags"
    values: list[str]

    @model_validator(mode="after")
    def _check(self) -> "TagsAny":
        kind = field_kind(self.field)
        if kind not in ("list", "metadata"):
            raise InvalidFilterError(f"{self.op} applies to list fields (tags, ref_ids, metadata.<key>), not {self.field}")
        if not self.values or not all(isinstance(v, str) and v for v in self.values):
            raise InvalidFilterError(f"{self.op} on {self.field} needs a non-empty list of non-empty strings")
        for value in self.values:
            _text(value, f"a value of {self.op} on {self.field}")
        return self


class TagsAll(TagsAny):
    """The list field holds every one of `values`."""

    op: Literal["all"] = "all"  # type: ignore[assignment]


class And(_Node):
    op: Literal["and"] = "and"
    filters: list["Filter"]


class Or(_Node):
    op: Literal["or"] = "or"
    filters: list["Filter"]

    @model_validator(mode="after")
    def _check(self) -> "Or":
        if not self.filters:
            raise InvalidFilterError("or needs at least one filter")
        return self


class Not(_Node):
    op: Literal["not"] = "not"
    filter: "Filter"


Filter = Annotated[
    Union[Eq, Ne, In, NotIn, Range, Contains, TagsAny, TagsAll, And, Or, Not], Field(discriminator="op")
]
for _model in (And, Or, Not):
    _model.model_rebuild()


F = TypeVar("F")


def _typed(make: Callable[..., F]) -> Callable[..., F]:
    """Helpers raise InvalidFilterError, not pydantic's ValidationError."""

    @functools.wraps(make)
    def wrapper(*args: Any, **kwargs: Any) -> F:
        try:
            return make(*args, **kwargs)
        except ValidationError as exc:
            raise InvalidFilterError(_first_error(exc)) from None

    return wrapper


@_typed
def eq(field: str, value: Scalar) -> Eq:
    return Eq(field=field, value=value)


@_typed
def ne(field: str, value: Scalar) -> Ne:
    return Ne(field=field, value=value)


@_typed
def in_(field: str, values: list[Scalar]) -> In:
    return In(field=field, values=values)


@_typed
def not_in(field: str, values: list[Scalar]) -> NotIn:
    return NotIn(field=field, values=values)


@_typed
def range_(field: str, *, gt: Scalar | None = None, gte: Scalar | None = None,
           lt: Scalar | None = None, lte: Scalar | None = None) -> Range:
    return Range(field=field, gt=gt, gte=gte, lt=lt, lte=lte)


@_typed
def contains(field: str, text: str) -> Contains:
    return Contains(field=field, text=text)


@_typed
def tags_any(values: list[str], field: str = "tags") -> TagsAny:
    return TagsAny(field=field, values=values)


@_typed
def tags_all(values: list[str], field: str = "tags") -> TagsAll:
    return TagsAll(field=field, values=values)


@_typed
def and_(*filters: "Filter") -> And:
    return And(filters=list(filters))


@_typed
def or_(*filters: "Filter") -> Or:
    return Or(filters=list(filters))


_OPS = {"eq", "ne", "in", "not_in", "gt", "gte", "lt", "lte", "contains", "any", "all"}


def _field_filter(name: str, spec: Any) -> list["Filter"]:
    if isinstance(spec, list):
        return [In(field=name, values=spec)]
    if not isinstance(spec, Mapping):
        return [Eq(field=name, value=spec)]
    unknown = set(spec) - _OPS
    if unknown or not spec:
        raise InvalidFilterError(f"unknown operator(s) {sorted(unknown)} on {name}; use {sorted(_OPS)}")
    out: list[Filter] = []
    bounds = {k: spec[k] for k in ("gt", "gte", "lt", "lte") if k in spec}
    if bounds:
        out.append(Range(field=name, **bounds))
    for op, value in spec.items():
        if op == "eq":
            out.append(Eq(field=name, value=value))
        elif op == "ne":
            out.append(Ne(field=name, value=value))
        elif op == "in":
            out.append(In(field=name, values=value))
        elif op == "not_in":
            out.append(NotIn(field=name, values=value))
        elif op == "contains":
            out.append(Contains(field=name, text=value))
        elif op == "any":
            out.append(TagsAny(field=name, values=value))
        elif op == "all":
            out.append(TagsAll(field=name, values=value))
    return out


def parse_filter(spec: "Filter | Mapping[str, Any] | None") -> "Filter | None":
    """Turn a filter model or a dict into a validated filter (None stays None).

    Dict form: `{field: value}` (eq), `{field: [v, ...]}` (in), `{field: {op: value, ...}}` with
    op in eq, ne, in, not_in, gt, gte, lt, lte, contains, any, all; `{"$and": [...]}`,
    `{"$or": [...]}`, `{"$not": {...}}`. Several keys are ANDed.
    """
    if spec is None:
        return None
    check_filter_shape(spec)  # before recursing: depth and size are bounded here, once
    if isinstance(spec, _Node):
        return spec
    return _parse(spec)


def check_filter_shape(spec: Any, max_depth: int = MAX_FILTER_DEPTH) -> None:
    """InvalidFilterError when a filter (a dict or a model) nests `$and`/`$or`/`$not` deeper than
    `MAX_FILTER_DEPTH` or holds more than `MAX_FILTER_SIZE` conditions and values. Iterative:
    a deep filter must not exhaust Python's stack here, nor the engine's later."""
    stack: list[tuple[Any, int]] = [(spec, 0)]
    size = 0
    while stack:
        item, depth = stack.pop()
        size += 1
        if size > MAX_FILTER_SIZE:
            raise InvalidFilterError(f"filter holds more than {MAX_FILTER_SIZE} conditions and values")
        if depth > max_depth:
            raise InvalidFilterError(f"filter is nested deeper than {MAX_FILTER_DEPTH} levels")
        if isinstance(item, (And, Or)):
            stack.extend((f, depth + 1) for f in item.filters)
        elif isinstance(item, Not):
            stack.append((item.filter, depth + 1))
        elif isinstance(item, (In, TagsAny)):
            size += len(item.values)
        elif isinstance(item, Mapping):
            for key, value in item.items():
                if key in ("$and", "$or") and isinstance(value, (list, tuple)):
                    stack.extend((v, depth + 1) for v in value)
                elif key == "$not":
                    stack.append((value, depth + 1))
                else:  # a field's condition: {op: value} or a list of values, counted, not nested
                    size += _values_in(value)
    if size > MAX_FILTER_SIZE:
        raise InvalidFilterError(f"filter holds more than {MAX_FILTER_SIZE} conditions and values")


def _values_in(spec: Any) -> int:
    if isinstance(spec, Mapping):
        return sum(len(v) if isinstance(v, (list, tuple)) else 1 for v in spec.values())
    return len(spec) if isinstance(spec, (list, tuple)) else 1


def _parse(spec: Any) -> "Filter | None":
    if not isinstance(spec, Mapping):
        raise InvalidFilterError(f"a filter is a dict or a filter model, not {type(spec).__name__}")
    try:
        parts: list[Filter] = []
        for key, value in spec.items():
            if key in ("$and", "$or"):
                if not isinstance(value, list):
                    raise InvalidFilterError(f"{key} takes a list of filters")
                subs = [_parse(v) for v in value]
                group = And if key == "$and" else Or
                parts.append(group(filters=[s for s in subs if s is not None]))
            elif key == "$not":
                sub = _parse(value)
                if sub is None:
                    raise InvalidFilterError("$not takes a filter")
                parts.append(Not(filter=sub))
            elif "op" == key:
                raise InvalidFilterError("use the helpers or the dict form, not a raw model dump")
            elif not isinstance(key, str):
                raise InvalidFilterError(f"filter keys are field names (strings), not {type(key).__name__}")
            else:
                parts.extend(_field_filter(key, value))
    except ValidationError as exc:
        raise InvalidFilterError(_first_error(exc)) from None
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(filters=parts)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    ctx = err.get("ctx", {}).get("error")
    return str(ctx) if ctx else f"{'.'.join(map(str, err['loc']))}: {err['msg']}"


C = TypeVar("C")


class FilterTranslator(ABC, Generic[C]):
    """Turns a `Filter` into a backend's own conditions; each backend fills in the constructors."""

    @abstractmethod
    def match_value(self, key: str, value: str | int | bool) -> C: ...

    @abstractmethod
    def match_any(self, key: str, values: list[Any]) -> C: ...

    @abstractmethod
    def match_text(self, key: str, text: str) -> C: ...

    @abstractmethod
    def range_number(self, key: str, gt: Any, gte: Any, lt: Any, lte: Any) -> C: ...

    @abstractmethod
    def range_datetime(self, key: str, gt: Any, gte: Any, lt: Any, lte: Any) -> C: ...

    @abstractmethod
    def group(self, must: list[C] | None = None, should: list[C] | None = None,
              must_not: list[C] | None = None) -> C: ...

    def build(self, flt: "Filter | None") -> C | None:
        """The backend's top-level filter for `flt` (None for no filter)."""
        if flt is None:
            return None
        # A model built with the helpers may not have gone through parse_filter; the slack leaves
        # room for the scope conditions the facade and the pipelines wrap around a caller's filter.
        check_filter_shape(flt, MAX_FILTER_DEPTH + 8)
        return self.group(must=self._conjuncts(flt))

    def _conjuncts(self, flt: "Filter") -> list[C]:
        """The conditions that must all hold, nested ANDs flattened into one list: the engine plans
        a flat list of conditions on indexed fields (for instance a scope's target) as an index
        lookup, but a nested group as a condition checked point by point, which after an HNSW
        index is built made a search filtered to one target several times slower."""
        if isinstance(flt, And):
            return [c for f in flt.filters for c in self._conjuncts(f)]
        return [self.translate(flt)]

    def translate(self, flt: "Filter") -> C:
        if isinstance(flt, And):
            return self.group(must=self._conjuncts(flt))
        if isinstance(flt, Or):
            return self.group(should=[self.translate(f) for f in flt.filters])
        if isinstance(flt, Not):
            return self.group(must_not=[self.translate(flt.filter)])
        if isinstance(flt, (Ne, NotIn)):
            positive = Eq(field=flt.field, value=flt.value) if isinstance(flt, Ne) else In(field=flt.field, values=flt.values)
            return self.group(must_not=[self.translate(positive)])
        if isinstance(flt, Eq):
            return self._equal(flt.field, flt.value)
        if isinstance(flt, In):
            if all(isinstance(v, str) for v in flt.values) or all(
                    isinstance(v, int) and not isinstance(v, bool) for v in flt.values):
                return self.match_any(flt.field, list(flt.values))
            return self.group(should=[self._equal(flt.field, v) for v in flt.values])
        if isinstance(flt, Range):
            bounds = [_iso(getattr(flt, k)) for k in ("gt", "gte", "lt", "lte")]
            make = self.range_datetime if flt.is_datetime else self.range_number
            return make(flt.field, *bounds)
        if isinstance(flt, Contains):
            return self.match_text(flt.field, flt.text)
        if isinstance(flt, TagsAll):
            return self.group(must=[self.match_value(flt.field, v) for v in flt.values])
        if isinstance(flt, TagsAny):
            return self.match_any(flt.field, list(flt.values))
        raise InvalidFilterError(f"unsupported filter {flt!r}")  # pragma: no cover

    def _equal(self, key: str, value: Scalar) -> C:
        if isinstance(value, datetime):
            iso = _iso(value)
            return self.range_datetime(key, None, iso, None, iso)
        if isinstance(value, float):
            return self.range_number(key, None, value, None, value)
        return self.match_value(key, value)


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
