"""Typed records: memory nodes, messages, search results, pages and pipeline results."""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
import uuid
from datetime import datetime, timezone
from enum import Enum
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Iterator, Literal, NamedTuple, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from reme.errors import InvalidInputError, describe

M = TypeVar("M", bound=BaseModel)
MAX_CONTENT_CHARS = 100_000
"""Longest `content` or `when_to_use` accepted; a whole conversation fits, a 1 MB blob does not."""
MAX_TARGET_CHARS = 256
MAX_METADATA_DEPTH = 8


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


TargetKind = Literal["user", "task", "tool"]
"""The kind of target a memory belongs to; a scope is (kind, name)."""
KIND_TYPES: dict[str, tuple[MemoryType, ...]] = {
    "user": (MemoryType.PERSONAL, MemoryType.HISTORY),
    "task": (MemoryType.PROCEDURAL, MemoryType.HISTORY),
    "tool": (MemoryType.TOOL, MemoryType.HISTORY),
}
"""The memory types each kind of target holds; the first is its main type."""
TYPE_KIND: dict[MemoryType, str] = {types[0]: kind for kind, types in KIND_TYPES.items()}


def content_hash(memory_type: MemoryType | str, target: str, text: str, target_kind: str | None = None) -> str:
    """Hash over (type, target kind, target, normalized text): equal hashes mean the same memory.
    The kind defaults to the one the type implies (history has none: pass it)."""
    mtype = MemoryType(memory_type)
    kind = target_kind or TYPE_KIND.get(mtype, "")
    key = f"{mtype.value}\x1f{kind}\x1f{target}\x1f{normalize_text(text)}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _check_json_safe(value: Any, path: str, depth: int = 0) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise ValueError(f"metadata nested deeper than {MAX_METADATA_DEPTH} levels at {path}")
    if value is None or isinstance(value, (bool, int, str)):
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
            if not isinstance(key, str) or not key or "." in key:
                raise ValueError(f"metadata key {key!r} at {path}: keys are non-empty strings without '.'")
            _check_json_safe(item, f"{path}.{key}", depth + 1)
        return
    raise ValueError(f"metadata value at {path} has type {type(value).__name__}; only JSON values are allowed")


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _json_safe(value: dict[str, Any]) -> dict[str, Any]:
    _check_json_safe(value, "metadata")
    return value


AwareDatetime = Annotated[datetime, AfterValidator(as_aware)]
"""A datetime with a timezone: naive ones are taken as UTC."""
FiniteFloat = Annotated[float, AfterValidator(_finite)]
JsonMetadata = Annotated[dict[str, Any], AfterValidator(_json_safe)]
"""JSON values only (no NaN), nested at most 8 deep, keys without '.'."""


class Scope(NamedTuple):
    """The wall a call stays behind: a kind of target and its name, e.g. Scope("user", "alice").
    Every stored memory carries both (`target_kind`, `memory_target`)."""

    kind: str
    name: str

    @property
    def all_types(self) -> tuple[MemoryType, ...]:
        return KIND_TYPES[self.kind]

    def holds(self, node: "MemoryNode") -> bool:
        return node.target_kind == self.kind and node.memory_target == self.name

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
    """user, task or tool: with `memory_target`, the scope the memory lives in. Implied by
    personal (user), procedural (task) and tool (tool) memories; a history memory names it."""
    memory_target: str
    when_to_use: str = ""
    content: str
    message_time: AwareDatetime = Field(default_factory=utcnow)
    time_created: AwareDatetime = Field(default_factory=utcnow)
    time_modified: AwareDatetime = Field(default_factory=utcnow)
    author: str = ""
    score: FiniteFloat = 0.0
    tags: list[str] = Field(default_factory=list)
    ref_ids: list[str] = Field(default_factory=list)
    metadata: JsonMetadata = Field(default_factory=dict)
    version: int = Field(default=1, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _kind_from_type(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("target_kind") is None:
            try:
                kind = TYPE_KIND.get(MemoryType(data.get("memory_type")))
            except ValueError:
                return data  # the type's own error says what is wrong
            if kind is None:
                raise ValueError("a history memory needs target_kind: user, task or tool")
            return {**data, "target_kind": kind}
        return data

    @model_validator(mode="after")
    def _kind_holds_type(self) -> "MemoryNode":
        if self.memory_type not in KIND_TYPES[self.target_kind]:
            raise ValueError(f"a {self.target_kind} holds {', '.join(t.value for t in KIND_TYPES[self.target_kind])} "
                             f"memories, not {self.memory_type.value}")
        return self

    @property
    def scope(self) -> tuple[str, str]:
        """(target_kind, memory_target): the wall the memory lives behind."""
        return self.target_kind, self.memory_target

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
        if len(value) > MAX_CONTENT_CHARS:
            raise ValueError(f"content is {len(value)} characters; the limit is {MAX_CONTENT_CHARS}")
        if "\x00" in value:
            raise ValueError("content must not contain NUL characters")
        return value

    @field_validator("when_to_use")
    @classmethod
    def _when(cls, value: str) -> str:
        if len(value) > MAX_CONTENT_CHARS:
            raise ValueError(f"when_to_use is longer than {MAX_CONTENT_CHARS} characters")
        return value

    @field_validator("tags", "ref_ids")
    @classmethod
    def _strings(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for item in value:
            item = item.strip()
            if not item:
                raise ValueError("tags and ref_ids must be non-empty strings")
            if item not in out:
                out.append(item)
        return out

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


class SearchResult(BaseModel):
    """A stored node with how it matched a query; `similarity` never touches the node's `score`."""

    node: MemoryNode
    similarity: float
    rank: int


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

    role: str = "user"
    content: str
    name: str | None = None
    time: AwareDatetime | None = None
    id: str | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        # OpenAI content parts: keep the text parts, drop images and audio.
        if isinstance(value, list):
            return "\n".join(p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text")
        return "" if value is None else value


class Usage(BaseModel):
    """Tokens and time spent in LLM calls; summed over a pipeline run."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    llm_seconds: float = 0.0

    def add(self, other: "Usage") -> "Usage":
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.llm_seconds += other.llm_seconds
        return self


class MemoryVersion(BaseModel):
    """A past state of a memory: the node as it was before `event` changed it at `time`."""

    node: MemoryNode
    event: Literal["UPDATE", "DELETE"]
    time: datetime
    reason: str = ""


class SummaryResult(BaseModel):
    """What one `summarize_memory` call wrote: new, changed and deleted memories (as they were
    before deletion), the history nodes it stored, and the LLM usage."""

    added: list[MemoryNode] = Field(default_factory=list)
    updated: list[MemoryNode] = Field(default_factory=list)
    deleted: list[MemoryNode] = Field(default_factory=list)
    history: list[MemoryNode] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)

    def merge(self, other: "SummaryResult") -> "SummaryResult":
        self.added += other.added
        self.updated += other.updated
        self.deleted += other.deleted
        self.history += other.history
        self.usage.add(other.usage)
        return self


class TimeWindow(BaseModel):
    """An inclusive range of `message_time`; either end may be open."""

    start: AwareDatetime | None = None
    end: AwareDatetime | None = None


class RetrievedMemory(BaseModel):
    """A memory chosen for a query: `score` is the fused, weighted ranking score; `source` the
    excerpt of the conversation it came from (when asked for)."""

    node: MemoryNode
    score: float
    rank: int
    source: str | None = None


class RetrieveResult(BaseModel):
    """What `retrieve_memory` found: ranked memories, the text to paste into a prompt, the
    queries actually searched, the time window applied, and the LLM usage."""

    memories: list[RetrievedMemory] = Field(default_factory=list)
    text: str = ""
    queries: list[str] = Field(default_factory=list)
    time_window: TimeWindow | None = None
    usage: Usage = Field(default_factory=Usage)


def parse_items(items: Any, model: type[M], what: str) -> list[M]:
    """A list of `model`s (or dicts for them) checked one by one: `InvalidInputError` names the
    first bad item, e.g. `tool_calls[2]: time_cost: ...`."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence) or not items:
        raise InvalidInputError(f"{what} must be a non-empty list of {model.__name__} models or dicts")
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

    messages: list[Message]
    score: FiniteFloat
    query: str = ""
    metadata: JsonMetadata = Field(default_factory=dict)

    @property
    def task(self) -> str:
        return self.query or next((m.content for m in self.messages if m.role == "user"), "")


class ToolCallRecord(BaseModel):
    """One call of a tool: what went in, what came out, whether it worked and what it cost."""

    model_config = ConfigDict(extra="forbid")

    tool_name: str
    input: dict[str, Any] | str = Field(default_factory=dict)
    output: str = ""
    success: bool = True
    time_cost: FiniteFloat = Field(default=0.0, ge=0)
    token_cost: int = Field(default=0, ge=0)
    create_time: AwareDatetime = Field(default_factory=utcnow)
    error: str = ""

    @field_validator("tool_name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("tool_name must not be empty")
        return value
