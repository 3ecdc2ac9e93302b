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
   the part to compact writes a structured summary (goal, constraints, progress, decisions,
   suggestions not taken up, next steps, critical context), building on the previous summary.
   Code then checks it against the messages (`checked`), with no further call: what a small
   model gets wrong there, code can see (a suggestion only the assistant made written as
   progress, a constraint or the goal of the previous summary dropped, a limit the user stated
   missing).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from reme.errors import InvalidInputError
from reme.llm import ChatModel
from reme.memory.session import SessionLog, message_dict, summary_message
from reme.working import (SUMMARY_SECTIONS, CompactedContext, ContextSplit, ContextSummary, OffloadedResult,
                          SessionMessage, Tokenizer, message_tokens, text_of)
from reme.prompts import PromptLibrary
from reme.retrieval import words
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
    the transcript that fits in `llm.max_prompt_chars`, each building on the one before, and
    each reply checked against its chunk (`checked`)."""
    usage = usage if usage is not None else Usage()
    budget = max(2_000, llm.config.max_prompt_chars - PROMPT_OVERHEAD_CHARS - 2 * len(previous_summary))
    summary_text = previous_summary
    result: ContextSummary | None = None
    template = terms(" ".join(str(m.get("content", "")) for m in prompts.messages(
        "context/compact", previous_summary="", conversation="")))
    lines = transcript_lines(messages)
    start = 0
    for chunk in chunks(lines, budget) or [[]]:
        conversation = "\n".join(f"[{i}] {line}" for i, line in enumerate(chunk))
        reply = await llm.structured(
            prompts.messages("context/compact", previous_summary=summary_text, conversation=conversation),
            ContextSummary, usage=usage)
        if summary_text and terms(reply.render()) <= terms(summary_text) \
                and terms(" ".join(chunk)) - terms(summary_text) - template:
            # qwen1.5b returned the previous summary unchanged for turns that said new things (the
            # LoCoMo replay, docs/working-memory.md): the new turns are summarized alone, and what
            # that adds is appended to the previous summary's parts
            log.info("the compaction repeated the previous summary; summarizing the new messages alone")
            alone = await llm.structured(prompts.messages("context/compact", previous_summary="",
                                                          conversation=conversation), ContextSummary, usage=usage)
            reply = _with_new(reply, alone)
        result = checked(reply, summary_text, messages[start:start + len(chunk)], template)
        start += len(chunk)
        summary_text = result.render()
    assert result is not None  # there is always one chunk
    return result


def _with_new(summary: ContextSummary, new: ContextSummary) -> ContextSummary:
    """`summary` with the lines of `new` it lacks appended to each part (its goal kept, or
    `new`'s where it has none)."""
    update: dict[str, Any] = {"goal": summary.goal or new.goal}
    for _, name in SUMMARY_SECTIONS:
        have: list[str] = getattr(summary, name)
        known = {" ".join(words(line)) for line in have}
        update[name] = have + [line for line in getattr(new, name) if " ".join(words(line)) not in known]
    return summary.model_copy(update=update)


# -- 2b. what code checks of a summary ---------------------------------------------------------
_STOP = frozenset(
    "the and but for with from into onto over about that this these those there here what which who whom whose will "
    "would can could should shall might must does did done has have had having are was were been being its it's "
    "you your yours our ours their theirs them they she her his him not only also just very too than then when "
    "where while some any all each every such own same other more most much many one two few lot lots let let's "
    "get got make made want wants need needs like please sure yes okay well".split())
_KIN = frozenset("sister brother mother mom mum father dad wife husband partner son daughter kids children child "
                 "friend friends boss colleague family parents baby girlfriend boyfriend grandmother grandfather "
                 "aunt uncle cousin week weeks weekend fortnight days nights months hours minutes".split())
_NEGATION = frozenset("no not never nope skip without cannot nothing".split())
_CUES = frozenset("only never no not avoid without under below over max maximum least most budget limit must "
                  "allergic allergy allergies strictly hate hates dislike dislikes rather prefer cannot exclude "
                  "deadline latest".split())
_LINE_NEGATION = _NEGATION | frozenset("don doesn isn won avoid avoids avoided refused declined rejected turned "
                                        "dropped".split())
_PROPOSING = frozenset("consider considering could might maybe perhaps suggest suggests suggested suggestion "
                       "suggestions recommend recommends recommended propose proposes proposed option options".split())
"""Words in which a model writes down a proposal: such a line is no progress and no decision."""
_CHANGE = frozenset("actually change changed changes update updated instead anymore longer".split())
_EMPTY_WORDS = frozenset("no none nothing yet so far suggestions suggestion progress decisions decision constraints "
                         "constraint next steps critical context".split())
"""A line of only these words ("No suggestions", "Nothing yet") says nothing."""
_PLACEHOLDERS = frozenset(["", "none", "n a", "na", "nothing", "null", "tbd", "unknown", "empty"])
MAX_QUOTES = 6
"""The user's own sentences a check adds to a summary's constraints, at most, per compaction."""
QUOTE_CHARS = 200


def _stem(word: str) -> str:
    return word[:5] if len(word) > 5 and not any(c.isdigit() for c in word) else word


_NOT_CONTENT = frozenset(_stem(w) for w in _CHANGE | {"plan", "plans", "said"})
"""Words that say a change happened or who said it, not what: left out when comparing texts."""


def terms(text: str) -> set[str]:
    """The words of `text` that carry meaning (stems; numbers of any length), for comparing texts."""
    return {_stem(w) for w in words(text) if any(c.isdigit() for c in w) or (len(w) >= 3 and w not in _STOP)}


def anchors(text: str) -> set[str]:
    """What a summary must not lose of `text`: numbers, names (a capitalized word inside a
    sentence), the people and the durations it names."""
    out: set[str] = set()
    for m in re.finditer(r"\w+", text):
        token = m.group()
        before = text[:m.start()].rstrip()
        inside = bool(before) and before[-1] not in ".!?:;\n\"'(["
        if any(c.isdigit() for c in token) or token.casefold() in _KIN or (
                inside and token[0].isupper() and token != "I"):
            out.update(_stem(w) for w in words(token))
    return out


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?;])\s+|\n+", text) if s.strip()]


def _clauses(sentence: str) -> list[str]:
    return [c for c in re.split(r"[,:;()]|\band\b|\bbut\b", sentence) if c.strip()]


def _split_at_negation(clause: str) -> tuple[set[str], set[str]]:
    """A user's clause as the terms asked for and the terms turned down: those before a
    negation ("no pesto", "skip Adyen") and those after it."""
    said = words(clause)
    cut = next((i for i, w in enumerate(said) if w in _NEGATION or w in ("don", "doesn", "isn", "won")), len(said))
    return terms(" ".join(said[:cut])), terms(" ".join(said[cut:]))


def covered(text: str, pool: set[str]) -> bool:
    """Whether `pool` (terms) holds every anchor of `text` and two thirds of its terms."""
    own = terms(text) - _NOT_CONTENT
    return anchors(text) <= pool and (not own or 3 * len(own & pool) >= 2 * len(own))


def parse_summary(text: str) -> dict[str, Any]:
    """A rendered summary's parts (`ContextSummary.render`): {"goal": str, field: [lines]}; {}
    for a text without its headings (a summary a caller wrote)."""
    fields = {title: name for title, name in (("Goal", "goal"), *SUMMARY_SECTIONS)}
    out: dict[str, Any] = {}
    current: str | None = None
    for line in text.splitlines():
        head = re.match(r"^## (.+?)\s*$", line)
        if head:
            current = fields.get(head.group(1))
            continue
        if current == "goal" and line.strip():
            out["goal"] = f"{out.get('goal', '')} {line.strip()}".strip()
        elif current is not None and line.startswith("- "):
            out.setdefault(current, []).append(line[2:].strip())
    return out


def _roles(messages: Sequence[Mapping[str, Any]]) -> tuple[list[str], set[str], set[str], set[str]]:
    """The user's texts; the terms of what happened or the user asked for (tool calls and their
    results, the user's words before a negation); the terms the user turned down (after one);
    and the terms only the assistant said."""
    user: list[str] = []
    support: set[str] = set()
    refused: set[str] = set()
    said: set[str] = set()
    for m in messages:
        if _result_ids(m) is not None:
            support |= terms(text_of(m))
        elif m.get("role") == "assistant":
            said |= terms(text_of({"content": m.get("content")}))
            support |= terms(text_of({**m, "content": None}))  # its tool calls: done, not proposed
        elif m.get("role") == "user":
            text = text_of(m)
            user.append(text)
            for clause in (c for s in sentences(text) for c in _clauses(s)):
                asked, no = _split_at_negation(clause)
                support |= asked
                refused |= no
        else:
            support |= terms(text_of(m))
    return user, support, refused - support, said - support


def _clean(items: list[str], template: set[str] | frozenset[str], source: set[str]) -> list[str]:
    """`items` without placeholders, copies of the prompt's own words, and repeats: a line with
    the words of an earlier one in the same order, a word said again and again counted once
    ("... advocates' supporters' supporters' supporters.", a reply looping, after "... advocates'
    supporters.")."""
    out: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for item in items:
        item = item.strip()
        said = terms(item)
        placeholder = " ".join(words(item)) in _PLACEHOLDERS or set(words(item)) <= _EMPTY_WORDS
        copied = len(said) >= 3 and len(said & template) >= 0.9 * len(said) and 2 * len(said & source) < len(said)
        said_words = words(item)
        key = tuple(w for i, w in enumerate(said_words) if i == 0 or w != said_words[i - 1])
        if not placeholder and not copied and key not in seen:
            out.append(item)
            seen.add(key)
    return out


def _clip_quote(sentence: str) -> str:
    return sentence if len(sentence) <= QUOTE_CHARS else sentence[:QUOTE_CHARS - 3] + "..."


def checked(summary: ContextSummary, previous: str, messages: Sequence[Mapping[str, Any]],
            template: set[str] | frozenset[str] = frozenset()) -> ContextSummary:
    """`summary` of `messages` (building on `previous`) after the checks code can make, with no
    further LLM call:

    - placeholders ("none", "..."), lines copied from the prompt (`template`: its terms) and
      repeats are dropped;
    - in a conversation with an assistant, a progress or decision line that proposes ("could",
      "consider", "suggested"...), or whose words are more than twice as much the assistant's
      alone (or the previous summary's suggestions', or what the user turned down, unless the
      line says so) as the user's, a tool call's or result's or the previous summary's, is a
      suggestion: it moves to `suggestions`;
    - a constraint of the previous summary the new one lost comes back, unless the user's new
      messages touch it or say something changed; so does the previous goal when the new one
      lost some of its names or numbers, unless the user said something changed;
    - in a conversation with an assistant: at the first compaction, a goal without some names,
      numbers and people of the user's first sentence gets that sentence (the task as the user
      put it); a sentence of the user's stating a limit ("only", "never", "under",
      "allergic"...) or a change ("actually", "instead"...) that the goal, constraints and
      decisions do not cover (its numbers and names, two thirds of its words) is added to the
      constraints in the user's words (at most `MAX_QUOTES`).
    """
    before = parse_summary(previous)
    user, support, refused, assistant_only = _roles(messages)
    # the previous summary backs what it held as the task, its limits and what was done or chosen (its
    # next steps and critical context are where a model puts anything, the assistant's ideas too)
    support |= terms(" ".join([before.get("goal", ""), *(line for name in ("constraints", "progress", "decisions")
                                                        for line in before.get(name, []))]))
    # what the previous summary held as suggestions stays the assistant's until the user or a tool backs it
    assistant_only |= terms(" ".join(before.get("suggestions", []))) - support
    source = support | refused | assistant_only | terms(previous)
    parts: dict[str, Any] = {name: _clean(getattr(summary, name), template, source) for _, name in SUMMARY_SECTIONS}
    goal = (_clean([summary.goal], template, source) or [""])[0]
    with_assistant = any(m.get("role") == "assistant" for m in messages)
    if with_assistant:
        _move_suggestions(parts, support, refused, assistant_only)
    goal = _keep_previous(goal, parts, before, user)
    if with_assistant:
        goal = _quote_user(goal, parts, user, first=not before.get("goal"))
    out = summary.model_copy(update={"goal": goal, **parts})
    return out if out.render() else summary


def _move_suggestions(parts: dict[str, Any], support: set[str], refused: set[str], assistant_only: set[str]) -> None:
    """Progress and decision lines in the words of a proposal, or whose words are more than
    twice as much the assistant's alone (or what the user turned down, unless the line says so)
    as the user's or the tools', moved to the suggestions."""
    for name in ("progress", "decisions"):
        kept = []
        for line in parts[name]:
            said = set(words(line))
            own = {t for t in terms(line) if len(t) > 1}  # "1" of "1 TB" backs nothing
            negated = bool(said & _LINE_NEGATION)
            against = own & (assistant_only - refused if negated else assistant_only | refused)
            backed = own & (support | refused if negated else support)
            if said & _PROPOSING or (against and len(against) > 2 * len(backed)):
                if line not in parts["suggestions"]:
                    parts["suggestions"].append(line)
            else:
                kept.append(line)
        parts[name] = kept


def _keep_previous(goal: str, parts: dict[str, Any], before: dict[str, Any], user: list[str]) -> str:
    """The goal, and `parts`' constraints, with what the previous summary (`before`) held and
    the new one lost, unless the user said something changed; returns the goal."""
    if _CHANGE & set(words(" ".join(user))):
        return goal
    old_goal = before.get("goal", "")
    if old_goal and not covered(old_goal, terms(goal)):
        if goal and not covered(goal, terms(old_goal)) and goal not in parts["next_steps"]:
            parts["next_steps"].insert(0, goal)  # the latest request, under the task it belongs to
        goal = old_goal
    pool = terms(" ".join([goal, *parts["constraints"]]))
    user_terms = terms(" ".join(user))
    for line in before.get("constraints", []):
        if not covered(line, pool) and not terms(line) & user_terms:
            parts["constraints"].append(line)
            pool |= terms(line)
    return goal


def _quote_user(goal: str, parts: dict[str, Any], user: list[str], *, first: bool) -> str:
    """The goal with the user's first sentence when it lost its names and numbers (`first`
    compaction only), and `parts`' constraints with the user's sentences of limits and changes
    they do not cover; returns the goal."""
    request = sentences(user[0])[0] if first and user and sentences(user[0]) else ""
    if goal and request and not anchors(request) <= terms(goal):
        goal = f'{goal} (the user\'s request: "{_clip_quote(request)}")'
    pool = terms(" ".join([goal, *parts["constraints"], *parts["decisions"]]))
    quotes = 0
    for sentence in (s for text in user for s in sentences(text)):
        cue = bool((_CUES | _CHANGE) & set(words(sentence))) and (len(terms(sentence)) >= 3 or bool(anchors(sentence)))
        if cue and quotes < MAX_QUOTES and not covered(sentence, pool):
            parts["constraints"].append(f'The user said: "{_clip_quote(sentence)}"')
            pool |= terms(sentence)
            quotes += 1
    return goal


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
