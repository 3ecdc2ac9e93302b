"""Context management: keeping what is sent to the model within its context window.

Three steps, each usable alone, and `prepare_context` on the facade doing all three before a
model call:

1. `compact_tool_results`: a tool result longer than a limit moves out of the messages into the
   session's store (`reme.memory.session`), leaving its head and a reference the agent can read
   the whole result back with (`read_tool_result`), until it expires.
2. `check_context(messages, threshold, reserve)`: when the messages take more than `threshold`
   tokens, splits them into the older part to compact and the recent part to keep (at most
   `reserve` tokens, less when a tool call and its result would otherwise be separated: the split
   never falls between them).
3. `compact(messages, previous_summary)`: one LLM call (`prompts/context/compact`) per chunk of
   the part to compact writes a structured summary (goal, constraints, progress, decisions, next
   steps, critical context), building on the previous summary.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from reme.errors import InvalidInputError
from reme.llm import ChatModel
from reme.memory.session import SessionLog, message_dict, summary_message
from reme.working import (CompactedContext, ContextSplit, ContextSummary, OffloadedResult, SessionMessage, Tokenizer,
                          message_tokens, text_of)
from reme.prompts import PromptLibrary
from reme.schema import MemoryNode, Scope, Usage, check_int, utcnow

log = logging.getLogger("reme.context")

MESSAGE_CHARS_IN_PROMPT = 4_000
"""A message longer than this is cut (head and tail kept) in the compaction prompt."""
PROMPT_OVERHEAD_CHARS = 8_000
"""Room kept in `llm.max_prompt_chars` for the template and the previous summary's framing."""


# -- 1. pairing and the split -------------------------------------------------------------------
def _call_ids(message: Mapping[str, Any]) -> list[str]:
    ids = []
    for call in message.get("tool_calls") or []:
        if isinstance(call, Mapping) and isinstance(call.get("id"), str):
            ids.append(call["id"])
    content = message.get("content")
    if isinstance(content, list):
        ids += [p["id"] for p in content if isinstance(p, Mapping) and p.get("type") == "tool_use"
                and isinstance(p.get("id"), str)]
    return ids


def _calls_tools(message: Mapping[str, Any]) -> bool:
    return bool(message.get("tool_calls") or message.get("function_call") or _call_ids(message))


def _result_ids(message: Mapping[str, Any]) -> list[str] | None:
    """The call ids a message answers ([] for a result naming none), or None for no result."""
    ids = [message["tool_call_id"]] if isinstance(message.get("tool_call_id"), str) else []
    content = message.get("content")
    blocks = [p for p in content if isinstance(p, Mapping) and p.get("type") == "tool_result"] \
        if isinstance(content, list) else []
    for block in blocks:
        ref = block.get("tool_use_id", block.get("id"))
        if isinstance(ref, str):
            ids.append(ref)
    if ids or blocks or message.get("role") in ("tool", "function"):
        return ids
    return None


def tool_pairs(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """(call index, result index) for every tool result: matched by call id, or, for a result
    naming no known id, with the latest message before it that calls a tool."""
    owner: dict[str, int] = {}
    last_call: int | None = None
    pairs: list[tuple[int, int]] = []
    for j, message in enumerate(messages):
        ids = _result_ids(message)
        if ids is not None:
            calls = [owner[i] for i in ids if i in owner]
            if calls:
                pairs += [(i, j) for i in set(calls)]
            elif last_call is not None:
                pairs.append((last_call, j))
        if _calls_tools(message):
            last_call = j
            for call_id in _call_ids(message):
                owner[call_id] = j
    return pairs


def check_context(messages: Sequence[Any], threshold: int, reserve: int, *,
                  tokenizer: Tokenizer | None = None) -> ContextSplit:
    """Split `messages` into the older part to compact and the recent part to keep.

    Nothing is compacted while all of them take at most `threshold` tokens. Otherwise the
    newest messages that fit in `reserve` tokens are kept, and the split moves later until no
    tool call is separated from its result (so the part kept may be smaller than `reserve`, or
    empty). `compact + keep` are always the messages given, in order.

    >>> split = check_context(messages, threshold=8000, reserve=2000)
    >>> split.compact, split.keep
    """
    threshold = check_int(threshold, "threshold", low=0, high=2 ** 40)
    reserve = check_int(reserve, "reserve", low=0, high=2 ** 40)
    if reserve > threshold:
        raise InvalidInputError(f"reserve ({reserve}) must not exceed threshold ({threshold})")
    dicts = [m.message if isinstance(m, SessionMessage) else message_dict(m, i) for i, m in enumerate(messages)]
    sizes = [message_tokens(m, tokenizer) for m in dicts]
    total = sum(sizes)
    if total <= threshold:
        return ContextSplit(compact=[], keep=dicts, tokens=total, keep_tokens=total)
    n = len(dicts)
    k, kept = n, 0
    while k > 0 and kept + sizes[k - 1] <= reserve:
        kept += sizes[k - 1]
        k -= 1
    inside = [False] * (n + 1)  # inside[k]: splitting before message k separates a call from its result
    for i, j in tool_pairs(dicts):
        for b in range(i + 1, j + 1):
            inside[b] = True
    while k < n and inside[k]:
        k += 1
    return ContextSplit(compact=dicts[:k], keep=dicts[k:], tokens=total, keep_tokens=sum(sizes[k:]))


# -- 2. the summary ------------------------------------------------------------------------------
def _clip(text: str, limit: int = MESSAGE_CHARS_IN_PROMPT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


def transcript_lines(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for message in messages:
        who = str(message.get("name") or message.get("role") or "?")
        if _result_ids(message) is not None:
            who = f"{who} (tool result)"
        when = message.get("time")
        stamp = f"[{when}] " if isinstance(when, str) else ""
        lines.append(f"{stamp}{who}: {_clip(text_of(message).strip())}")
    return lines


def chunks(lines: list[str], budget: int) -> list[list[str]]:
    """Consecutive lines in groups of at most `budget` characters (a longer line alone)."""
    out: list[list[str]] = [[]]
    size = 0
    for line in lines:
        if out[-1] and size + len(line) + 1 > budget:
            out.append([])
            size = 0
        out[-1].append(line)
        size += len(line) + 1
    return [c for c in out if c]


async def compact(messages: Sequence[Mapping[str, Any]], previous_summary: str, llm: ChatModel,
                  prompts: PromptLibrary, *, usage: Usage | None = None) -> ContextSummary:
    """The structured summary of `previous_summary` and `messages`: one LLM call per chunk of
    the transcript that fits in `llm.max_prompt_chars`, each building on the one before."""
    usage = usage if usage is not None else Usage()
    budget = max(2_000, llm.config.max_prompt_chars - PROMPT_OVERHEAD_CHARS - 2 * len(previous_summary))
    summary_text = previous_summary
    result: ContextSummary | None = None
    for chunk in chunks(transcript_lines(messages), budget) or [[]]:
        result = await llm.structured(
            prompts.messages("context/compact", previous_summary=summary_text,
                             conversation="\n".join(f"[{i}] {line}" for i, line in enumerate(chunk))),
            ContextSummary, usage=usage)
        summary_text = result.render()
    assert result is not None  # there is always one chunk
    return result


# -- 3. tool results ---------------------------------------------------------------------------
def offload_reference(ref: str, chars: int, head: str) -> str:
    return (f"[Tool result offloaded: {chars} characters, the first {len(head)} below. The whole result: "
            f"read_tool_result(ref=\"{ref}\").]\n{head}")


READ_BACK_TOOL = "read_tool_result"
"""The tool an agent reads an offloaded result back with: its result is never offloaded again."""


def oversized(message: Mapping[str, Any], max_chars: int) -> bool:
    return _result_ids(message) is not None and isinstance(message.get("content"), str) \
        and len(message["content"]) > max_chars and message.get("name") != READ_BACK_TOOL


def _output_key(block: Mapping[str, Any]) -> str:
    """Where a tool_result block holds the result: `output` (AgentScope), else `content` (Anthropic)."""
    return "output" if "output" in block else "content"


def block_text(block: Any) -> str | None:
    """The text a tool_result content block holds (a string, or the text of its text parts), or
    None for anything else."""
    if not isinstance(block, Mapping) or block.get("type") != "tool_result" or block.get("name") == READ_BACK_TOOL:
        return None
    output = block.get(_output_key(block))
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(p["text"] for p in output if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return None


def with_text(block: Mapping[str, Any], text: str) -> dict[str, Any]:
    """`block` holding `text` in place of its result's text (other parts, such as images, stay)."""
    key = _output_key(block)
    output = block.get(key)
    if isinstance(output, list):
        rest = [p for p in output if not (isinstance(p, Mapping) and isinstance(p.get("text"), str))]
        return {**block, key: [{"type": "text", "text": text}, *rest]}
    return {**block, key: text}


def compact_tool_results(messages: Sequence[Any], log_: SessionLog, scope: Scope, *, max_chars: int,
                         ttl: timedelta, preview_chars: int, now: datetime | None = None
                         ) -> tuple[list[dict[str, Any]], list[OffloadedResult], list[MemoryNode]]:
    """`messages` with every tool result over `max_chars` characters replaced by its head and a
    reference, what was offloaded, and the records holding the results (for the caller to
    write, in the same write as whatever else goes with it)."""
    now = now or utcnow()
    expires_at = now + ttl
    dicts = [m.message if isinstance(m, SessionMessage) else message_dict(m, i) for i, m in enumerate(messages)]
    out: list[dict[str, Any]] = []
    refs: list[OffloadedResult] = []
    nodes: list[MemoryNode] = []

    def offload(text: str, tool: Any, i: int) -> str:
        ref, parts = log_.tool_result_nodes(scope, text, expires_at, str(tool or "tool"))
        nodes.extend(parts)
        refs.append(OffloadedResult(ref=ref, chars=len(text), expires_at=expires_at, message_index=i))
        return offload_reference(ref, len(text), text[:preview_chars])

    for i, message in enumerate(dicts):
        content = message.get("content")
        if oversized(message, max_chars):
            message = {**message, "content": offload(message["content"], message.get("name"), i)}
        elif isinstance(content, list):  # tool_result blocks (AgentScope, Anthropic), each offloaded alone
            blocks = list(content)
            for j, block in enumerate(blocks):
                text = block_text(block)
                if text is not None and len(text) > max_chars:
                    blocks[j] = with_text(block, offload(text, block.get("name") or message.get("name"), i))
            message = {**message, "content": blocks} if blocks != content else message
        out.append(message)
    return out, refs, nodes


def context_messages(summary: str, keep: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return ([summary_message(summary)] if summary.strip() else []) + [dict(m) for m in keep]


def tokens_of(messages: Sequence[Mapping[str, Any]], tokenizer: Tokenizer | None) -> int:
    return sum(message_tokens(m, tokenizer) for m in messages)


def positive(value: Any, name: str) -> int:
    return check_int(value, name, low=1, high=2 ** 40)


__all__ = ["check_context", "compact", "compact_tool_results", "tool_pairs"]
