"""Working memory's types and token counting: what a session holds and what context management
returns. Imports only the schema, so the HTTP client uses them without the engine."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Callable

from pydantic import BaseModel, BeforeValidator, Field, model_validator

from reme.errors import InvalidInputError
from reme.schema import Usage

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a chat format spends per message on roles and separators (estimate)."""
Note = Annotated[str, BeforeValidator(lambda v: "" if v is None else v)]

Tokenizer = Callable[[str], Any]
"""A user's tokenizer: text in, a token count or a sequence of tokens out."""


class SessionMessage(BaseModel):
    """One message of a session: `message` is the OpenAI-style dict as it was added (role,
    content, tool_calls, ...), `marks` its marks, `time` its place in the log."""

    id: str
    message: dict[str, Any]
    marks: list[str] = []
    time: datetime

    @property
    def role(self) -> str:
        return str(self.message.get("role", ""))


class SessionSize(BaseModel):
    """How big a session is: messages (the summary not counted) and tokens (messages and summary)."""

    messages: int
    tokens: int
    summary_tokens: int = 0


def _str_list(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [v if isinstance(v, str) else str(v) for v in value if v is not None]
    return value


StrList = Annotated[list[str], BeforeValidator(_str_list)]


class ContextSummary(BaseModel):
    """What a compaction keeps of the compacted messages. At least one part holds text: a reply
    with none (`{}`, empty fields, the content under keys of its own) would replace the previous
    summary with nothing and drop the compacted messages from every later context, so it does
    not validate (the model is shown why once, then `LLMOutputError`)."""

    goal: Note = ""
    constraints: StrList = Field(default_factory=list)
    progress: StrList = Field(default_factory=list)
    decisions: StrList = Field(default_factory=list)
    suggestions: StrList = Field(default_factory=list)
    """What the assistant proposed that the user has not taken up: kept apart from progress and
    decisions, which hold only what happened and what the user chose."""
    next_steps: StrList = Field(default_factory=list)
    critical_context: StrList = Field(default_factory=list)

    @model_validator(mode="after")
    def _says_something(self) -> "ContextSummary":
        if not self.render():
            raise ValueError("the summary is empty: fill in at least one of goal, constraints, progress, decisions, "
                             "suggestions, next_steps, critical_context")
        return self

    def render(self) -> str:
        """The summary as text for the model: one heading per non-empty part."""
        parts = [f"## Goal\n{self.goal.strip()}"] if self.goal.strip() else []
        for title, items in self.sections():
            lines = [f"- {item.strip()}" for item in items if item.strip()]
            if lines:
                parts.append(f"## {title}\n" + "\n".join(lines))
        return "\n\n".join(parts)

    def sections(self) -> list[tuple[str, list[str]]]:
        """The list parts under the headings `render` gives them, in order."""
        return [(title, getattr(self, name)) for title, name in SUMMARY_SECTIONS]


SUMMARY_SECTIONS = (("Constraints", "constraints"), ("Progress", "progress"), ("Decisions", "decisions"),
                    ("Suggested, not decided", "suggestions"), ("Next steps", "next_steps"),
                    ("Critical context", "critical_context"))
"""`ContextSummary`'s list parts: the heading each has in the rendered summary, and its field."""


class ContextSplit(BaseModel):
    """`check_context`'s answer: `compact + keep` are the messages given, in order."""

    compact: list[dict[str, Any]]
    keep: list[dict[str, Any]]
    tokens: int
    """Tokens of all the messages."""
    keep_tokens: int

    @property
    def needed(self) -> bool:
        return bool(self.compact)


class OffloadedResult(BaseModel):
    """A tool result moved out of the context: read it back with `read_tool_result(ref)`."""

    ref: str
    chars: int
    expires_at: datetime
    message_index: int


class CompactedContext(BaseModel):
    """What to send to the model: `messages` (the summary first, when there is one, then the
    messages kept), and what it took to get there."""

    messages: list[dict[str, Any]]
    summary: str = ""
    structured: ContextSummary | None = None
    """The new summary's parts, when this call wrote one."""
    compacted: int = 0
    """Messages compacted into the summary by this call."""
    offloaded: list[OffloadedResult] = Field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    usage: Usage = Field(default_factory=Usage)



# -- tokens ------------------------------------------------------------------------------------
_WIDE = re.compile("[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]")
"""CJK characters (kana, 0x3040-0x30FF, lie inside the first range)."""


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: a CJK character is about one token, other text about four
    characters a token (what BPE tokenizers average on English and code)."""
    wide = 0 if text.isascii() else len(_WIDE.findall(text))
    return wide + math.ceil((len(text) - wide) / 4)


def count_tokens(text: str, tokenizer: Tokenizer | None = None) -> int:
    if tokenizer is None:
        return estimate_tokens(text)
    counted = tokenizer(text)
    if isinstance(counted, bool):
        raise InvalidInputError("a tokenizer returns a token count or a sequence of tokens, not a bool")
    if isinstance(counted, int):
        return counted
    try:
        return len(counted)
    except TypeError:
        raise InvalidInputError("a tokenizer returns a token count or a sequence of tokens") from None


def message_tokens(message: Mapping[str, Any], tokenizer: Tokenizer | None = None) -> int:
    """Tokens a message takes in a prompt: its text, its tool calls, and a per-message overhead."""
    return MESSAGE_OVERHEAD_TOKENS + count_tokens(text_of(message), tokenizer)


def text_of(message: Mapping[str, Any]) -> str:
    """The text of a message: its content (text parts of a list), else a rendering of its tool calls."""
    content = message.get("content")
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif part.get("type") in ("tool_use", "tool_result"):
                    parts.append(json.dumps(part, ensure_ascii=False, default=str))
            elif isinstance(part, str):
                parts.append(part)
        content = "\n".join(parts)
    text = content if isinstance(content, str) else ""
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        rendered = []
        for call in calls:
            fn = call.get("function", call) if isinstance(call, Mapping) else {}
            fn = fn if isinstance(fn, Mapping) else {}
            args = fn.get("arguments", "")
            rendered.append(f"{fn.get('name', '?')}({args if isinstance(args, str) else json.dumps(args)})")
        text = (text + "\n" if text.strip() else "") + "calls " + ", ".join(rendered)
    return text


__all__ = ["CompactedContext", "ContextSplit", "ContextSummary", "OffloadedResult", "SessionMessage", "SessionSize",
           "Tokenizer", "count_tokens", "estimate_tokens", "message_tokens", "text_of"]
