"""Typed records: memory nodes, messages, search results, pages and pipeline results."""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
import uuid
from datetime import datetime, timezone
from enum import Enum
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Iterator, Literal, NamedTuple, TypeVar

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)

from reme.errors import InvalidInputError, describe

M = TypeVar("M", bound=BaseModel)

# -- input limits: every input has one, enforced with InvalidInputError (docs/errors.md lists them) ---
MAX_CONTENT_CHARS = 100_000
"""Longest `content` or `when_to_use` accepted; a whole conversation fits, a 1 MB blob does not."""
MAX_TARGET_CHARS = 256
"""Longest user, task or tool name."""
MAX_NAME_CHARS = 256
"""Longest `author`, tag, ref id, message role/name/id, tool name, metadata key."""
MAX_TAGS = 100
"""Most tags on one memory."""
MAX_REF_IDS = 100
"""Most `ref_ids` on one memory (a pipeline keeps the newest when it would pass this)."""
MAX_METADATA_DEPTH = 8
"""Deepest nesting of metadata (and of a trajectory's metadata, a tool call's input)."""
MAX_METADATA_BYTES = 1_000_000
"""Largest metadata, as JSON."""
MAX_QUERY_CHARS = 10_000
"""Longest search or retrieval query."""
MAX_LIMIT = 10_000
"""Largest `top_k` or `limit` of one call."""
MAX_BATCH = 10_000
"""Most nodes per `add_memories`, ids per `record_usage`, messages or tool calls per summary."""
MAX_TRAJECTORIES = 100
"""Most trajectories per summary (each is one LLM call)."""
MAX_IMPORT_LINES = 1_000_000
"""Most lines in one imported file."""
MAX_SUMMARY_CANDIDATES = 200
"""Most memories taken from one LLM extraction reply; the rest are dropped (and logged)."""
MAX_QUERIES = 10
"""Most search queries one query rewrite writes (the ceiling of `retrieval.max_queries`): also the
bound its reply schema gives a model, which stops a small one writing "Jon's job in 2022", "... in
2023", "... in 2024", ... until its token budget runs out."""
MAX_JSON_DEPTH = 64
"""Deepest JSON read from outside (import lines, LLM replies, command-line arguments)."""
MAX_FILTER_DEPTH = 32
"""Deepest nesting of `$and` / `$or` / `$not` in a filter."""
MAX_FILTER_SIZE = 1_000
"""Most conditions plus listed values in one filter."""
MAX_CURSOR_CHARS = 1_000_000
"""Longest paging cursor."""
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
"""Integers stored or compared (metadata, filter values) fit in signed 64 bits."""


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_aware(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones keep their offset."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


class MemoryType(str, Enum):
    """What a memory is about. `history` holds raw source material such as a conversation."""

    PERSONAL = "personal"
    PROCEDURAL = "procedural"
    TOOL = "tool"
    HISTORY = "history"


def parse_iso(text: str | datetime | None) -> datetime:
    """An ISO 8601 date or datetime (a trailing Z, or no offset, means UTC); ValueError otherwise."""
    if isinstance(text, datetime):
        return as_aware(text)
    if not isinstance(text, str) or not text.strip():
        raise ValueError("no time given")
    return as_aware(datetime.fromisoformat(text.strip().replace("Z", "+00:00")))


def normalize_text(text: str) -> str:
    """The form two texts are compared in for deduplication: NFKC, case-folded, single spaces."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


TargetKind = Literal["user", "task", "tool", "session"]
"""The kind of target a memory belongs to; a scope is (kind, name). A session (working memory:
the messages of one conversation in progress, see reme/memory/session.py) holds history only."""
KIND_TYPES: dict[str, tuple[MemoryType, ...]] = {
    "user": (MemoryType.PERSONAL, MemoryType.HISTORY),
    "task": (MemoryType.PROCEDURAL, MemoryType.HISTORY),
    "tool": (MemoryType.TOOL, MemoryType.HISTORY),
    "session": (MemoryType.HISTORY,),
}
"""The memory types each kind of target holds; the first is its main type."""
TYPE_KIND: dict[MemoryType, str] = {types[0]: kind for kind, types in KIND_TYPES.items() if kind != "session"}
"""The kind a main type implies (history implies none: a history memory names its kind)."""


def content_hash(memory_type: MemoryType | str, target: str, text: str, target_kind: str | None = None) -> str:
    """Hash over (type, target kind, target, normalized text): equal hashes mean the same memory.
    The kind defaults to the one the type implies (history has none: pass it)."""
    mtype = MemoryType(memory_type)
    kind = target_kind or TYPE_KIND.get(mtype, "")
    key = f"{mtype.value}\x1f{kind}\x1f{target}\x1f{normalize_text(text)}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def safe_text(value: str, what: str = "text") -> str:
    """`value` if it can be stored and sent anywhere: valid UTF-8 (no lone surrogates), no NUL."""
    if "\x00" in value:
        raise ValueError(f"{what} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not valid Unicode (it holds a lone surrogate)") from None
    return value


def check_int(value: Any, name: str, *, low: int = 1, high: int = MAX_LIMIT) -> int:
    """`value` if it is an int (not a bool) within [low, high]; InvalidInputError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{name} must be an integer from {low} to {high}, got {_short(value)}")
    return value


def check_number(value: Any, name: str, *, low: float = -math.inf, high: float = math.inf) -> float:
    """`value` as a float if it is a finite real number (not a bool) within [low, high];
    InvalidInputError otherwise (ints too large for a float included)."""
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:
        number = math.nan
    if not math.isfinite(number) or not low <= number <= high:
        raise InvalidInputError(f"{name} must be a finite number from {low} to {high}, got {_short(value)}")
    return number


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def json_depth_ok(value: Any, limit: int) -> bool:
    """Whether `value` (plain JSON values) nests at most `limit` levels; iterative, no recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= limit:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def parse_json(text: str | bytes, what: str = "JSON") -> Any:
    """JSON read from outside: parsed, nested at most `MAX_JSON_DEPTH`, strings valid Unicode.
    ValueError (with a one-line reason) for anything else, never RecursionError."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise ValueError(f"{what} is not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not JSON ({exc.msg})") from None
    if not json_depth_ok(value, MAX_JSON_DEPTH):
        raise ValueError(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels")
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            safe_text(item, f"a string in {what}")
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return value


def _check_json_safe(value: Any, path: str, depth: int = 0) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise ValueError(f"metadata nested deeper than {MAX_METADATA_DEPTH} levels at {path}")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"metadata integer at {path} does not fit in 64 bits")
        return
    if isinstance(value, str):
        safe_text(value, f"metadata value at {path}")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"metadata value at {path} is {value}; only finite numbers are allowed")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json_safe(item, f"{path}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or not key or "." in key or len(key) > MAX_NAME_CHARS:
                raise ValueError(f"metadata key {_short(key)} at {path}: keys are non-empty strings without '.', "
                                 f"at most {MAX_NAME_CHARS} characters")
            safe_text(key, f"metadata key at {path}")
            _check_json_safe(item, f"{path}.{key}", depth + 1)
        return
    raise ValueError(f"metadata value at {path} has type {type(value).__name__}; only JSON values are allowed")


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _json_safe(value: dict[str, Any], depth: int = MAX_METADATA_DEPTH,
               size: int = MAX_METADATA_BYTES) -> dict[str, Any]:
    if not json_depth_ok(value, depth + 1):  # before the recursive walk: no RecursionError
        raise ValueError(f"metadata nested deeper than {depth} levels")
    _check_json_safe(value, "metadata", MAX_METADATA_DEPTH - depth)
    length = len(json.dumps(value, ensure_ascii=False))
    if length > size:
        raise ValueError(f"metadata is {length} characters as JSON; the limit is {size}")
    return value


def _run_metadata(value: dict[str, Any]) -> dict[str, Any]:
    # A trajectory's metadata is kept one level down in its history node's metadata, with room to spare.
    return _json_safe(value, MAX_METADATA_DEPTH - 1, MAX_METADATA_BYTES // 2)


def _json_input(value: dict[str, Any] | str) -> dict[str, Any] | str:
    return _json_safe(value) if isinstance(value, dict) else value


def _text_limit(limit: int) -> AfterValidator:
    def check(value: str) -> str:
        safe_text(value)
        if len(value) > limit:
            raise ValueError(f"text is {len(value)} characters; the limit is {limit}")
        return value

    return AfterValidator(check)


def _no_bare_string(value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        raise ValueError("must be a list of strings, not one string")
    return value


AwareDatetime = Annotated[datetime, AfterValidator(as_aware)]
"""A datetime with a timezone: naive ones are taken as UTC."""
FiniteFloat = Annotated[float, AfterValidator(_finite)]
JsonMetadata = Annotated[dict[str, Any], AfterValidator(_json_safe)]
"""JSON values only (no NaN, integers within 64 bits, valid Unicode), nested at most
`MAX_METADATA_DEPTH` deep, at most `MAX_METADATA_BYTES` as JSON, keys without '.'."""
Text = Annotated[str, _text_limit(MAX_CONTENT_CHARS)]
"""The one text type of every str field: valid Unicode, no NUL, at most `MAX_CONTENT_CHARS`."""
Name = Annotated[str, _text_limit(MAX_NAME_CHARS)]
"""A short text (author, tag, id, role, name): valid Unicode, no NUL, at most `MAX_NAME_CHARS`."""


class Scope(NamedTuple):
    """The wall a call stays behind: a kind of target and its name, e.g. Scope("user", "alice").
    Every stored memory carries both (`target_kind`, `memory_target`)."""

    kind: str
    name: str

    @property
    def all_types(self) -> tuple[MemoryType, ...]:
        return KIND_TYPES[self.kind]

    def holds(self, node: "MemoryNode") -> bool:
        return node.scope == self

    def __str__(self) -> str:
        return f"{self.kind} {self.name!r}"


class MemoryNode(BaseModel):
    """One memory. `memory_id` is a UUID that stays the same across updates.

    >>> MemoryNode(memory_type="personal", memory_target="alice", content="Alice prefers window seats")
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    memory_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    memory_type: MemoryType
    # The default is never kept: `_kind_from_type` fills it in from memory_type, or rejects the node.
    target_kind: TargetKind = Field(default=None)  # type: ignore[arg-type]
    """user, task, tool or session: with `memory_target`, the scope the memory lives in. Implied by
    personal (user), procedural (task) and tool (tool) memories; a history memory names it."""
    memory_target: Name
    when_to_use: Text = ""
    content: Text
    message_time: AwareDatetime = Field(default_factory=utcnow)
    time_created: AwareDatetime = Field(default_factory=utcnow)
    time_modified: AwareDatetime = Field(default_factory=utcnow)
    author: Name = ""
    score: FiniteFloat = 0.0
    tags: Annotated[list[Name], BeforeValidator(_no_bare_string)] = Field(default_factory=list, max_length=MAX_TAGS)
    ref_ids: Annotated[list[Name], BeforeValidator(_no_bare_string)] = Field(default_factory=list,
                                                                             max_length=MAX_REF_IDS)
    metadata: JsonMetadata = Field(default_factory=dict)
    version: int = Field(default=1, ge=1)
    # -- time and forgetting: optional, absent in stores and files written before them ----------
    event_start: AwareDatetime | None = None
    """When what the memory tells happened (the start of a range), resolved against the time it
    was said: "yesterday" said on 2023-05-08 is 2023-05-07. None: not known (`message_time` stands in)."""
    event_end: AwareDatetime | None = None
    """The end of that range (the last microsecond of its last day); equal to `event_start` for an instant."""
    expires_at: AwareDatetime | None = None
    """After this time no read returns the memory and `prune` deletes it. None: never expires."""
    last_accessed: AwareDatetime | None = None
    """When a read last returned the memory or `record_usage` counted it (with `retrieval.track_reads`)."""
    access_count: int = Field(default=0, ge=0, le=INT64_MAX)
    """How many reads returned the memory (counted in batches, see `retrieval.track_reads`) plus uses recorded."""

    ACCESS_FIELDS: ClassVar[tuple[str, ...]] = ("last_accessed", "access_count")
    """Bookkeeping a read updates: not part of a memory's state (no version, no conflict)."""

    @model_validator(mode="before")
    @classmethod
    def _kind_from_type(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("target_kind") is None:
            try:
                kind = TYPE_KIND.get(MemoryType(data.get("memory_type")))
            except ValueError:
                return data  # the type's own error says what is wrong
            if kind is None:
                raise ValueError("a history memory needs target_kind: user, task, tool or session")
            return {**data, "target_kind": kind}
        return data

    @model_validator(mode="after")
    def _kind_holds_type(self) -> "MemoryNode":
        if self.memory_type not in KIND_TYPES[self.target_kind]:
            raise ValueError(f"a {self.target_kind} holds {', '.join(t.value for t in KIND_TYPES[self.target_kind])} "
                             f"memories, not {self.memory_type.value}")
        return self

    @property
    def scope(self) -> Scope:
        """(target_kind, memory_target): the wall the memory lives behind."""
        return Scope(self.target_kind, self.memory_target)

    @model_validator(mode="after")
    def _event_range(self) -> "MemoryNode":
        if self.event_end is not None and self.event_start is None:
            raise ValueError("event_end needs event_start")
        if self.event_start is not None and self.event_end is not None and self.event_end < self.event_start:
            raise ValueError("event_end is before event_start")
        return self

    def expired(self, now: datetime) -> bool:
        """Whether `expires_at` has passed at `now`."""
        return self.expires_at is not None and self.expires_at <= now

    @property
    def event_window(self) -> tuple[datetime, datetime]:
        """When it happened, as (start, end): the event range when known, else `message_time`."""
        if self.event_start is None:
            return self.message_time, self.message_time
        return self.event_start, self.event_end or self.event_start

    def same_state(self, other: "MemoryNode") -> bool:
        """Equal but for the access bookkeeping (`ACCESS_FIELDS`), which reads change."""
        keep = {f: getattr(self, f) for f in self.ACCESS_FIELDS}
        return other.model_copy(update=keep) == self

    @field_validator("memory_id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        try:
            return str(uuid.UUID(str(value)))
        except ValueError:
            raise ValueError(f"memory_id must be a UUID, got {value!r}") from None

    @field_validator("memory_target")
    @classmethod
    def _target(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("memory_target must not be empty")
        if len(value) > MAX_TARGET_CHARS:
            raise ValueError(f"memory_target is longer than {MAX_TARGET_CHARS} characters")
        return value

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be empty")
        return value

    @field_validator("tags", "ref_ids")
    @classmethod
    def _strings(cls, value: list[str]) -> list[str]:
        out = [item.strip() for item in value]
        if not all(out):
            raise ValueError("tags and ref_ids must be non-empty strings")
        return list(dict.fromkeys(out))  # linear: a set, not a scan of the list per item

    def revised(self, **changes: Any) -> "MemoryNode":
        """This memory with `changes` applied (validated), `version` + 1 and `time_modified` now:
        the one way a stored memory becomes its next version."""
        return MemoryNode.model_validate({**self.model_dump(), **changes, "version": self.version + 1,
                                          "time_modified": utcnow()})

    @property
    def retrieval_text(self) -> str:
        """What dense search embeds: `when_to_use`, or the content when that is empty."""
        return self.when_to_use.strip() or self.content

    @property
    def keyword_text(self) -> str:
        """What keyword (BM25) search indexes: the retrieval key and the content."""
        key = self.when_to_use.strip()
        return f"{key}\n{self.content}" if key and key != self.content else self.content

    @property
    def content_hash(self) -> str:
        return content_hash(self.memory_type, self.memory_target, self.content, self.target_kind)


ScoreKind = Literal["cosine", "bm25", "rrf", "fused"]


class SearchResult(BaseModel):
    """A stored node with how it matched a query; `similarity` never touches the node's `score`.

    `score_kind` says what `similarity` is, and it orders one result list only:
    `cosine` (dense search: -1 to 1), `bm25` (keyword search: 0 and up, unbounded),
    `rrf` (hybrid search: reciprocal-rank fusion in the engine, the sum of 1 / (60 + position),
    positions from 0, over the dense and the keyword list: at most 2/60 = 0.033, however close
    the match), `fused` (the retrievers'
    score fusion: max-normalized cosine and BM25 combined, 0 to 1)."""

    node: MemoryNode
    similarity: float
    rank: int
    score_kind: ScoreKind = "cosine"


class MemoryPage(BaseModel):
    """One page of a listing; pass `next_cursor` back to get the next page (None: no more)."""

    nodes: list[MemoryNode]
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[MemoryNode]:  # type: ignore[override]
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, index: int) -> MemoryNode:
        return self.nodes[index]


class Message(BaseModel):
    """One turn of a conversation, as OpenAI-style dicts carry it (plus an optional time and id).

    `time` is when it was said (naive means UTC); `id` is the caller's own reference to the turn
    (kept in the history node, so memories can be traced back to it).
    """

    model_config = ConfigDict(extra="ignore")

    role: Name = "user"
    content: Text
    name: Name | None = None
    time: AwareDatetime | None = None
    id: Name | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        # OpenAI content parts: keep the text parts, drop images and audio.
        if isinstance(value, list):
            return "\n".join(p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text")
        return "" if value is None else value


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 call`, `2 calls`: a count with its noun, for messages."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"



MessagesSpec = Sequence[Message | Mapping[str, Any]]
"""Messages as `Message` objects or plain dicts (`{"role": ..., "content": ...}`)."""

class Usage(BaseModel):
    """Tokens and time spent in LLM calls; summed over a pipeline run."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    llm_seconds: float = 0.0
    steps: dict[str, int] = Field(default_factory=dict)
    """Calls by the step that made them (a prompt's name, `personal/extract`), for calls that name one."""

    def add(self, other: "Usage") -> "Usage":
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.llm_seconds += other.llm_seconds
        for step, calls in other.steps.items():
            self.steps[step] = self.steps.get(step, 0) + calls
        return self


class MemoryVersion(BaseModel):
    """A past state of a memory: the node as it was before `event` changed it at `time`."""

    node: MemoryNode
    event: Literal["UPDATE", "DELETE"]
    time: AwareDatetime
    reason: Text = ""


class Rejection(BaseModel):
    """A value the model returned that was not used as given: an item `dropped` (a memory with no
    usable text, a decision naming nothing shown, items cut off at `max_tokens`) or a field
    `defaulted` (an importance of NaN, an UPDATE's text over the length limit). `step` is the
    prompt (`personal/extract`), `path` the value's place in the reply (`memories[3].importance`)."""

    step: str
    path: str = ""
    action: Literal["dropped", "defaulted"]
    reason: str


class SummaryResult(BaseModel):
    """What one `summarize_memory` call wrote: new, changed and deleted memories (as they were
    before deletion), the history nodes it stored, the LLM usage, and what the model returned
    that was not used (`rejected`; nothing of a rejected value is written)."""

    added: list[MemoryNode] = Field(default_factory=list)
    updated: list[MemoryNode] = Field(default_factory=list)
    deleted: list[MemoryNode] = Field(default_factory=list)
    history: list[MemoryNode] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    rejected: list[Rejection] = Field(default_factory=list)

    def merge(self, other: "SummaryResult") -> "SummaryResult":
        self.added += other.added
        self.updated += other.updated
        self.deleted += other.deleted
        self.history += other.history
        self.usage.add(other.usage)
        self.rejected += other.rejected
        return self


class TimeWindow(BaseModel):
    """An inclusive range of time; either end may be open. A memory falls inside when it was said
    inside (`message_time`) or what it tells happened inside (`event_start`..`event_end` overlaps)."""

    start: AwareDatetime | None = None
    end: AwareDatetime | None = None


class RetrievedMemory(BaseModel):
    """A memory chosen for a query: `score` is the fused, weighted ranking score; `source` the
    excerpt of the conversation it came from (when asked for)."""

    node: MemoryNode
    score: float
    rank: int
    source: str | None = None


class Fallback(BaseModel):
    """An optional LLM step of a retrieval that failed and was skipped: `rewrite` (the query was
    searched as it is), `rerank` (the search's order was kept). `error` says why."""

    step: Literal["rewrite", "rerank"]
    error: str


class RetrieveResult(BaseModel):
    """What `retrieve_memory` found: ranked memories, the text to paste into a prompt, the
    queries actually searched, the time window applied, the LLM usage, and the LLM steps that
    failed and were skipped (`fallbacks`: the result is then plain retrieval's)."""

    memories: list[RetrievedMemory] = Field(default_factory=list)
    text: str = ""
    queries: list[str] = Field(default_factory=list)
    time_window: TimeWindow | None = None
    usage: Usage = Field(default_factory=Usage)
    fallbacks: list[Fallback] = Field(default_factory=list)


def parse_items(items: Any, model: type[M], what: str, limit: int = MAX_BATCH) -> list[M]:
    """A list of `model`s (or dicts for them) checked one by one: `InvalidInputError` names the
    first bad item, e.g. `tool_calls[2]: time_cost: ...`."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence) or not items:
        raise InvalidInputError(f"{what} must be a non-empty list of {model.__name__} models or dicts")
    if len(items) > limit:
        raise InvalidInputError(f"{what} holds {len(items)} items; the limit is {limit} per call")
    out: list[M] = []
    for i, item in enumerate(items):
        try:
            out.append(item if isinstance(item, model) else model.model_validate(item))
        except ValidationError as exc:
            raise InvalidInputError(f"{what}[{i}]: {describe(exc)}") from None
    return out


class Trajectory(BaseModel):
    """One run of an agent on a task: its messages and how well it went (`score`, 1.0 = success).
    `query` is the task as it was asked (the first user message when not given)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(max_length=MAX_BATCH)
    score: FiniteFloat
    query: Text = ""
    metadata: Annotated[dict[str, Any], AfterValidator(_run_metadata)] = Field(default_factory=dict)

    @property
    def task(self) -> str:
        return self.query or next((m.content for m in self.messages if m.role == "user"), "")


class ToolCallRecord(BaseModel):
    """One call of a tool: what went in, what came out, whether it worked and what it cost."""

    model_config = ConfigDict(extra="forbid")

    tool_name: Name
    input: Annotated[dict[str, Any] | Text, AfterValidator(_json_input)] = Field(default_factory=dict)
    output: Text = ""
    success: bool = True
    time_cost: FiniteFloat = Field(default=0.0, ge=0)
    token_cost: int = Field(default=0, ge=0)
    create_time: AwareDatetime = Field(default_factory=utcnow)
    error: Text = ""

    @field_validator("tool_name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("tool_name must not be empty")
        return value
