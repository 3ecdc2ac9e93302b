"""Personal memory: what a conversation tells about a user, and finding it again before a reply.

Summarizer, per user:
  1. the conversation becomes a `history` node of the user (what memories cite in `ref_ids`);
  2. one LLM call writes a memory of each line worth reading (`worth_reading`), shown marked
     after the line before it (`prompts/personal/extract`); code then names the speaker of a
     memory left in the first person and dates its relative times ("last week") from when they
     were said (`reme.memory.wording`), drops what is no memory (a question, the assistant's
     words copied, the conversation itself, words no one said), keeps as said a health fact,
     name or time no memory holds, and sends what cannot stand on its own (a fragment, a leading
     pronoun, "I" or "we" of two speakers) to one repair call (`prompts/personal/repair`);
  3. the user's stored memories most similar to them are found (hybrid search) and, when there
     are any, one LLM call decides ADD / UPDATE / DELETE / NONE per candidate
     (`prompts/personal/reconcile`); stored memories are shown by short integers, so an id the
     model makes up cannot touch anything;
  4. the decisions are written through `MemoryRepo`, which keeps every replaced or deleted
     memory as a version.
All LLM calls happen before the first write: a failed call leaves the store as it was.

Retriever: an optional LLM rewrite into focused queries and a time window
(`prompts/personal/rewrite`), hybrid search per query in the user's memories, each result scored
in its conversation (`reme.retrieval.in_context`), RRF fusion of the queries' lists, recency and
importance weighting (`reme.retrieval`), optional source excerpts.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Annotated, Any, Callable, Collection, Iterable, Iterator, Literal, Sequence

from pydantic import BaseModel, BeforeValidator, Field, ValidationError, create_model, field_validator
from pydantic.json_schema import SkipJsonSchema

from reme.config import RetrievalConfig
from reme.errors import InvalidInputError, LLMError, describe
from reme.llm import ChatModel, Fraction, IntList, Note
from reme.memory.repo import Change, MemoryRepo, scope_filter
from reme.memory.repo import alive as live  # `alive` would read as a flag at the call sites
from reme.memory.wording import (BARE_MONTH, DAY_OF, PARENTHESES, YEAR, anchor_times, anchor_weekdays, describe_span,
                                 name_the_speaker, relative_spans, weekday_spans, year_of_days, year_of_month)
from reme.prompts import PromptLibrary
from reme.retrieval import cosine, day_window, fused_search, in_context, rank, render, window_filter, words
from reme.schema import (MAX_CONTENT_CHARS, MAX_NAME_CHARS, MAX_QUERIES, MAX_REF_IDS, MAX_SUMMARY_CANDIDATES,
                         MAX_TAGS, Fallback, MemoryNode, MemoryType, Message, Rejection, RetrieveResult, Scope,
                         SearchResult, SummaryResult, TimeWindow, Usage, normalize_text, parse_items, parse_iso, utcnow)
from reme.store.filters import And, Filter
from reme.temporal import (COUNTS, FUZZY, MONTHS, NUMBERS, SPELLED_NUMBER, WEEKDAYS, Span, find_spans, find_window,
                           month_span, with_digits)

log = logging.getLogger("reme.personal")

SIMILAR_PER_CANDIDATE = 5
"""Stored memories fetched per candidate for the reconcile step."""
MAX_SHOWN = 40
"""At most this many stored memories are shown to the reconcile call."""
NEAR_DUPLICATE = 0.95
"""Two memories of one extraction are one memory said twice when their vectors are at least this
similar (cosine), their event times (`event_start`, `event_end`) are the same, and one holds every
word of the other: a small model that loops writes "... discussed the project again", "... one more
time". The first is kept. The words matter: MiniLM puts "Melanie has two kids" and "Melanie has
three kids" at 0.976."""
WINDOW = 8
"""A conversation with more lines worth reading (`worth_reading`) is read by several extraction
calls, one per part with at most this many (`Transcript.windows`). qwen1.5b wrote one memory, of
the last line, for a 20-line session shown whole; shown only the lines worth reading, each after
the line before it, it read parts of up to 9 such lines (fresh13-fresh20, when a part was 12
lines of any kind: a 15-line dialogue with 8 lines worth reading took two calls)."""
OVERLAP = 2
"""Lines of the part before that each later part shows again (a question and what it refers to)."""
SAME_SUBJECT = 0.5
"""The reconcile's UPDATE or DELETE of a stored memory stands only when the memory is at least
this similar (cosine) to the candidate, or the candidate's line says it has ended (`ended`);
otherwise the candidate is added and the memory stays. Measured with all-MiniLM-L6-v2: a home, a
job, a diet or a drink changed 0.59-0.86 ("Alice lives in Paris" / "Alice moved to Berlin"
0.67); qwen1.5b's UPDATEs of a memory about something else 0.11-0.37 ("Dan enjoys mushroom
risotto" / "Dan's doctor said Dan was low on iron" 0.35; a flat hunt / a latex allergy 0.11).
Not checked with an embedder that does not embed meaning (`hash`)."""
SAME_SUBJECT_UNSHARED = 0.58
"""`SAME_SUBJECT` for a memory and a candidate that share no word worth comparing (`topic_words`,
names aside): two sentences that name one person are 0.5 and more apart from anything else they
say (fresh19, qwen1.5b: "Emergency contact is Goran's brother Zvonko." UPDATEd to "Not one since,
not even at Goran's cousin's stag." 0.53; "Njeri is Baraka's first contact, always." to "Baraka is
a transport planner in the office, ..." 0.55; the changes above share a word, or are 0.59 and
more)."""
MAX_SOURCES = 32
"""Messages one extracted memory may cite: also the bound its reply schema gives a model, which
stops a small one counting `"sources": [0, 1, 2, ...` until its token budget runs out."""


# -- what the LLM returns ----------------------------------------------------------------------
class ExtractedMemory(BaseModel):
    content: str = Field(max_length=MAX_CONTENT_CHARS)
    kind: Annotated[str, BeforeValidator(lambda v: "fact" if v is None else v)] = Field(
        default="fact", max_length=MAX_NAME_CHARS)
    # Not asked for (left out of the reply schema and the prompt): qwen1.5b wrote the line's own time-stamp, or a
    # wrong date, for nearly every memory, a third of each memory's tokens, and replies cut off at the token cap lost
    # memories; code resolves times (`event_time`). One a model sends unasked is read.
    time: SkipJsonSchema[str | None] = Field(default=None, max_length=64)
    time_end: SkipJsonSchema[str | None] = Field(default=None, max_length=64)
    sources: IntList = Field(default_factory=list, max_length=MAX_SOURCES)
    importance: Fraction = 0.5


class Extraction(BaseModel):
    memories: list[ExtractedMemory]


class RepairedMemory(BaseModel):
    index: int
    content: str = Field(default="", max_length=MAX_CONTENT_CHARS)


class Repairs(BaseModel):
    memories: list[RepairedMemory]


class Decision(BaseModel):
    candidate: int
    action: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    id: int | None = None
    text: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)
    reason: SkipJsonSchema[Note] = Field(default="", max_length=2000)  # not asked for: boilerplate from a small model

    @field_validator("action", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


class Decisions(BaseModel):
    decisions: list[Decision]


@functools.lru_cache(maxsize=256)
def decisions_for(candidates: int, shown: int) -> type[Decisions]:
    """`Decisions` whose JSON schema (what a grammar-constrained endpoint holds the reply to)
    allows only the candidates and memory ids there are, and at most two decisions a candidate:
    qwen1.5b went on to decide for candidates 8 to 14 of 8 until its budget ran out. A reply
    from an endpoint that does not hold to it is validated as `Decisions` (the `Decider` drops
    what names nothing shown)."""
    memory_id = Annotated[int, Field(json_schema_extra={"enum": list(range(shown))} if shown else None)]
    item = create_model("Decision", __base__=Decision,
                        candidate=(int, Field(json_schema_extra={"enum": list(range(candidates))})),
                        id=(memory_id | None, None))
    return create_model("Decisions", __base__=Decisions,
                        decisions=(list[item],  # type: ignore[valid-type]
                                   Field(json_schema_extra={"maxItems": 2 * candidates})))


class QueryPlan(BaseModel):
    queries: Annotated[list[str], BeforeValidator(lambda v: v[:MAX_QUERIES] if isinstance(v, list) else v)] = Field(
        default_factory=list, max_length=MAX_QUERIES)
    start: date | None = None
    end: date | None = None

    @field_validator("start", "end", mode="before")
    @classmethod
    def _date(cls, value: Any) -> Any:
        if value in (None, "", "null", "None"):
            return None
        return parse_iso(str(value)).date() if isinstance(value, str) else value


# -- the conversation ----------------------------------------------------------------------------
def names_in(messages: Sequence[Message]) -> frozenset[str]:
    """The capitalized words some line writes inside a sentence, not at its start ("Tomás", not
    "Nervous"), that are no speaker's name nor a word that is never one ("I", "Monday", a title:
    fresh27's "with a one-to-one assistant, Mr Doherty. ... he's obsessed with trains" became
    "Mr's obsessed with trains"); a hyphened one both whole and by its first word ("Ha-neul", "Ha")."""
    speakers = {w for m in messages if m.role == "user" and m.name for w in words(m.name)}
    found = {m for line in messages for said in SENTENCE.split(line.content) for pattern in (CAPITALIZED, HYPHENED)
             for k, m in enumerate(pattern.findall(said)) if k or not said.strip().startswith(m)}
    things = {m[0] for line in messages for pattern in (CAPITALIZED, HYPHENED) for m in pattern.finditer(line.content)
              if NO_PERSON_AFTER.match(line.content, m.end())}
    return frozenset(m for m in found if m.casefold() not in NOT_NAMES | FILLER | speakers | _TITLES
                     and not set(words(m)) <= speakers and m not in things)


DOSE_UNIT = r"(?:mg|milligrams?|mcg|micrograms?|µg|g|grams?|ml|millilit(?:re|er)s?|units?|iu)\b"
"""What a dose is counted in ("mg", "micrograms", "units"): `DOSE` and `DOSE_ALONE`."""
DOSE_FORM = r"(?:sachets?|tablets?|capsules?|puffs?|drops?|pills?|patch(?:es)?|injections?)\b"
"""What a dose is counted out in ("one sachet", "two puffs"): `NO_PERSON_AFTER`."""
NO_PERSON_AFTER = re.compile(r"(?:['’]s)?\s+(?:syndrome|disease|palsy|ataxia|dystrophy|phenomenon)\b"
                             rf"|\s*,\s*(?:\d+(?:\.\d+)?|one|two|three|four|half\s+a|a)\s+(?:{DOSE_FORM}|{DOSE_UNIT})",
                             re.IGNORECASE)
"""What says a capitalized word is no person: a condition named after one ("Rett syndrome", "Crohn's disease"), or a
dose after it ("And Movicol, one sachet a day": fresh29 read "She eats ..." as "Movicol eats ...")."""


def to_messages(messages: Sequence[Message | dict[str, Any]]) -> list[Message]:
    out = [m for m in parse_items(messages, Message, "messages") if m.content.strip()]
    if not out:
        raise InvalidInputError("messages holds no text to summarize")
    return out


@dataclass
class Transcript:
    """The conversation as numbered lines, each message with the time it was said."""

    messages: list[Message]
    times: list[datetime]
    lines: list[str]

    @classmethod
    def of(cls, messages: list[Message], now: datetime) -> "Transcript":
        times: list[datetime] = []
        known = next((m.time for m in messages if m.time is not None), now)
        for message in messages:
            known = message.time or known  # a message without a time was said when the one before it was
            times.append(known)
        lines = [f"[{t.strftime('%Y-%m-%d %H:%M')}] {m.name or m.role}: {m.content.strip()}"
                 for m, t in zip(messages, times)]
        return cls(messages, times, lines)

    @functools.cached_property
    def speakers(self) -> set[str]:
        """The names the people's messages give their speakers."""
        return {m.name for m in self.messages if m.role == "user" and m.name}

    @functools.cached_property
    def names(self) -> frozenset[str]:
        """The names the lines say (`names_in`)."""
        return names_in(self.messages)

    @functools.cached_property
    def introduced(self) -> dict[tuple[int, str], re.Match[str]]:
        """The sentences in which a speaker says who they are to the one they came with (`SELF_KIN`: "I'm Marites,
        his mother."), by the index of their line and the sentence, with the match; only where the name is the
        speaker's own."""
        return {(index, sentence): me for index, sentence in statements(self)
                if (me := SELF_KIN.match(sentence)) and me["name"] == self.messages[index].name}

    def people(self, user_name: str) -> set[str]:
        """The words of the names of the people speaking (and the user's), when the messages name
        their speakers; empty when none does (then nothing says what a memory should name)."""
        if not any(m.name for m in self.messages):
            return set()
        return {w for name in (user_name, *(m.name for m in self.messages if m.name)) for w in words(name)}

    def speaker_words(self, user_name: str) -> set[str]:
        """The words of the user's name and of every speaker's: names no sentence tells as news."""
        return {w for name in (user_name, *self.speakers) for w in words(name)}

    @property
    def numbered(self) -> str:
        return self.numbered_in(range(len(self.lines)))

    def numbered_in(self, window: range) -> str:
        """The lines of `window`, each with its index in the whole conversation."""
        return "\n".join(f"[{i}] {self.lines[i]}" for i in window)

    def marked_in(self, window: range, marked: Collection[int]) -> str:
        """The lines of `window` that are `marked`, each after "> " and with its index in the whole
        conversation, and before each the line before it (what it answers), unmarked; empty when
        none is. A later window's first `OVERLAP` lines are the one before's to read."""
        read = [i for i in window if i in marked and (i >= window[0] + OVERLAP or window[0] == 0)]
        shown = sorted({j for i in read for j in (i - 1, i) if j >= 0})
        return "\n".join(f"{'> ' if j in read else '  '}[{j}] {self.lines[j]}" for j in shown)

    def windows(self, marked: Collection[int]) -> list[range]:
        """The parts read by one extraction call each: the whole when at most `WINDOW` of its
        lines are `marked`, else as many parts as that needs, each with about as many marked lines,
        each after the last `OVERLAP` lines of the one before (what "she" or "yes" there answers)."""
        read = sorted(i for i in marked if 0 <= i < len(self.lines))
        if len(read) <= WINDOW:
            return [range(len(self.lines))]
        size = -(-len(read) // -(-len(read) // WINDOW))  # even parts, each at most WINDOW marked lines
        ends = [read[k + size - 1] + 1 for k in range(0, len(read) - size, size)] + [len(self.lines)]
        return [range(max(0, start - OVERLAP) if start else 0, end) for start, end in zip([0] + ends, ends)]

    def history_node(self, user_name: str) -> MemoryNode:
        content = "\n".join(self.lines)
        if len(content) > MAX_CONTENT_CHARS:
            raise InvalidInputError(f"the conversation is {len(content)} characters; summarize at most "
                                    f"{MAX_CONTENT_CHARS} at a time")
        spans: list[dict[str, Any]] = []
        start = 0
        for message, when, line in zip(self.messages, self.times, self.lines):
            span: dict[str, Any] = {"role": message.role, "time": when.isoformat(), "start": start,
                                    "end": start + len(line)}
            if message.name:
                span["name"] = message.name
            if message.id:
                span["id"] = message.id
            spans.append(span)
            start += len(line) + 1
        try:
            return MemoryNode(memory_type=MemoryType.HISTORY, target_kind="user", memory_target=user_name, content=content,
                              message_time=self.times[-1], metadata={"messages": spans})
        except ValidationError as exc:  # e.g. thousands of messages with long names and ids
            raise InvalidInputError(f"the conversation cannot be stored as one history node: {describe(exc)}; "
                                    "summarize fewer messages at a time") from None


def excerpt(history: MemoryNode, turns: Any) -> str:
    """The lines of a history node for the given message indexes (all of it when none are known).
    Both come from metadata a caller may have set to anything: what is not a list of indexes and
    a list of `{start, end}` spans is ignored."""
    spans = history.metadata.get("messages")
    if not isinstance(spans, list) or not isinstance(turns, list):
        return history.content
    indexes = sorted({i for i in turns if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(spans)})
    picked = [(s.get("start"), s.get("end")) for s in (spans[i] for i in indexes) if isinstance(s, dict)]
    lines = [history.content[a:b] for a, b in picked
             if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool)]
    return "\n".join(lines) if lines else history.content


# -- when it happened ----------------------------------------------------------------------------
def _day_or_instant(text: str | None, said: datetime, last: bool) -> datetime | None:
    """A date the model wrote ("2023-05-06": that whole day, in the timezone of the message) or a
    datetime (that instant); None for anything else."""
    if not text or not isinstance(text, str):
        return None
    try:
        when = parse_iso(text)
    except ValueError:
        return None
    if len(text.strip()) <= 10:  # a bare date
        return datetime.combine(when.date(), time.max if last else time.min, said.tzinfo)
    return when


def event_time(item: ExtractedMemory, content: str, sources: list[str], said: datetime) -> TimeWindow | None:
    """When what a memory tells happened: the model's resolved date (or range), else the first
    time expression found in the memory or in the messages it comes from, resolved against the
    time they were said (`reme.temporal`: "yesterday" said on 8 May is 7 May). None when nothing
    says when."""
    start = _day_or_instant(item.time, said, last=False)
    if start is not None:
        end = (_day_or_instant(item.time_end, said, last=True) or _day_or_instant(item.time, said, last=True)
               or start)
        return TimeWindow(start=start, end=max(end, start))
    for text in (content, *sources):
        window = find_window(text, said)
        if window is not None:
            return window
    return None


# -- a memory that is not one ----------------------------------------------------------------------
@dataclass
class Draft:
    """An extracted memory on its way to the store: `raw` as the model wrote it (or the repair
    rewrote it), `text` as it will be stored, and what keeps it from standing on its own."""

    index: int
    item: ExtractedMemory
    raw: str
    text: str
    sources: list[int]
    said: datetime
    problem: str | None = None
    step: str = "personal/extract"
    """The step that wrote it: `personal/extract`, or code keeping a sentence as said (`personal/kept`, ...)."""


ELLIPSIS_ENDINGS = frozenset("""will won't can can't could would should does doesn't did didn't do don't is isn't
was wasn't are am has have had too not so either""".split())
"""A short memory ending so ("Kenji will.", "Sam does too.") answers a line it does not hold."""
SPEAKER_PREFIX = re.compile(r"\s*(?:\[[^\]\n]{0,40}\]\s*)?([^:\n\[\]]{1,40}):\s+(?=\S)")
"""A transcript line's speaker (and time) as a memory copied it: "Annika: ...", "[2024-05-03 10:00] Alice: ..."."""
IT_TURNED_OUT = re.compile(r"It\s+(?:turned|turns|has\s+turned)\s+out\s+(?:that\s+|(?=[A-Z]|(?:the|a|an|my|his|her|"
                           r"their|our)\s))"
                           r"|It\s+(?:seems|seemed|appears|appeared)\s+that\s+(?=\S)")
"""An "it" that stands for nothing, leading what a memory says: "It turned out that Xóchitl's heart had weakened in the
pregnancy" (fresh29, qwen1.5b: a memory starting with a pronoun, kept when the repair did not mend it)."""


def without_empty_it(text: str) -> str:
    """A memory without an empty "It turned out (that)" or "It seems that" leading it (`IT_TURNED_OUT`: not "It turned
    out well"), when what follows is a sentence of three words or more; else as it is."""
    lead = IT_TURNED_OUT.match(text.lstrip())
    rest = text.lstrip()[lead.end():] if lead else ""
    if not lead or len(words(SENTENCE.split(rest)[0])) < 3:
        return text
    return rest[:1].upper() + rest[1:]


FIRST_PERSON = frozenset("me my mine myself we us our ours ourselves".split())
I_WORDS = frozenset("i me my mine myself".split())
"""A speaker's own first person, as `words` splits it ("I'm": "i", "m")."""
"""Words a memory still holds in the first person when `name_the_speaker` could not name them (two speakers cited)."""
PRONOUNS = frozenset("he she they it him her his hers their them this that these those its".split())
CJK_CHAR = re.compile(r"[\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z0-9]+")
PROBLEMS = {"fragment": "a fragment, not a sentence", "pronoun": "starts with a pronoun",
            "nobody": "does not name whom it is about", "first_person": "says \"I\", \"we\" or \"my\": name them",
            "dangling": "says \"it\" or \"that\" without saying what",
            "misnamed": "says of the speaker what the line says of someone else (\"she\", \"he\"): name them"}
"""How each flaw is described to the repair call."""


def fragment(text: str) -> bool:
    """Fewer than three words, such as "Marine biology.", or a short one ending in an ellipsis,
    such as "Kenji will."; for Chinese, fewer than four characters and Latin words."""
    cjk = CJK_CHAR.findall(text)
    if cjk:  # a Chinese memory is one "word" to `words`: its characters count, and any Latin words
        return len(cjk) + len(LATIN_WORD.findall(text)) < 4
    said = words(text)
    return len(said) < 3 or (len(said) <= 4 and said[-1] in ELLIPSIS_ENDINGS)


def flaw(text: str, people: set[str]) -> str | None:
    """What keeps a memory from standing on its own, found by rules: `fragment` (see `fragment`),
    `pronoun` (it starts with "she", "they", "it"...: who?), `first_person` ("we", "our", or an
    "I" no one was found to have said), `nobody` (it names none of `people`, the conversation's
    speakers, when they are known). None for a memory a careful writer would store as it is (a
    Chinese one is checked for being a fragment only)."""
    if fragment(text):
        return "fragment"
    if CJK_CHAR.search(text):
        return None
    said = words(text)
    if said[0] in PRONOUNS and not (said[0] in ("this", "that") and said[1:2] and said[1] in TIME_WORDS | SPAN_WORDS):
        return "pronoun"  # not a time: "This Thursday Tharshini sees Dr Lindqvist" (fresh30, kept as said, dropped)
    if any(w == "I" or (w.lower() in FIRST_PERSON and w != "US") for w in LATIN_WORD.findall(text)):
        return "first_person"
    if dangling(text, people):
        return "dangling"
    if people and not people & set(said):
        return "nobody"
    return None


DANGLING = frozenset("it this that them these those".split())


def dangling(text: str, people: set[str]) -> list[str]:
    """The sentences of a memory that say "it", "that" or "them" and hardly anything else (one
    word worth keeping at most, names aside): "Alice loves it." (qwen1.5b, for "Love it.",
    an answer about Berlin): what is "it"? Empty for a Chinese memory."""
    if CJK_CHAR.search(text):
        return []
    out = []
    for sentence in SENTENCE.split(text):
        said = words(sentence)
        if DANGLING & set(said) and len([w for w in said if len(w) >= 3 and w not in FILLER and w not in
                                          COMMON_WORDS and w not in people and w not in DANGLING]) <= 1:
            out.append(sentence.strip())
    return out


SUBJECT_PRONOUNS = frozenset("she he they".split())
PASSIVE = ("is", "was", "were", "been", "be", "got", "gets", "being")
"""Before the verb of "she ..." in a memory, the speaker is who it was done to ("She prescribed
azithromycin": "Omar is prescribed azithromycin" is right)."""


def own_words(text: str, names: set[str]) -> set[str]:
    """A memory's words to find the sentence it comes from by: the `_stem`s of three letters or
    more, `names`' words aside, and its numbers ("Wei is 91." for "She's 91 ...")."""
    return {_stem(w) for w in content_words(text, names, shortest=3)} | {w for w in words(text) if w.isdigit()}


def closest_sentences(text: str, cited: Sequence[Message], names: set[str]) -> tuple[list[str], int, int]:
    """The sentences of the cited lines sharing the most of a memory's words (`_stem`s of three
    letters or more, `names`' words aside) with it (none when none shares one), how many they
    share, and how many the memory has. Numbers count as words ("Wei is 91.")."""
    own = own_words(text, names)
    shared = [(len(own & stems([sentence])), sentence) for m in cited for sentence in SENTENCE.split(m.content)]
    most = max((n for n, _ in shared), default=0)
    return [sentence for n, sentence in shared if n == most and n], most, len(own)


OWN_PRONOUN = re.compile(r"^(?P<pronoun>She|He|Her|His)\s+(?P<next>[^\W\d_]+)")
THIRD_PERSON = frozenset("she he her his hers him herself himself".split())


def own_pronoun(text: str, cited: Sequence[Message], speaker: str) -> str:
    """A memory that starts with "She" or "He" (or "Her"/"His") where the cited sentence it comes
    from starts with "I" (or "My" and the same word) and speaks of no "she" or "he", or a sentence of the speaker's
    starts with "My" or "Our" and the memory's next three words: the speaker
    named instead ("She needs an eye check every year" for "I need an eye check every year",
    "Her husband Tendai" for "My husband Tendai"). Else the text as it is."""
    m = OWN_PRONOUN.match(text.strip())
    if not m or not speaker:
        return text
    possessive = m["pronoun"] in ("Her", "His")
    for sentence in closest_sentences(text, cited, set(words(speaker)))[0]:
        said = unled(words(sentence))
        if THIRD_PERSON & set(said) or not said:
            continue
        if possessive and said[:2] == ["my", m["next"].lower()] or not possessive and said[0] == "i":
            name = speaker[:1].upper() + speaker[1:]
            return (f"{name}'s" if possessive else name) + text.strip()[len(m["pronoun"]):]
    # a sentence of the speaker's that starts as the memory does after "Her"/"His", with "my" or "our" before it ("Our
    # son, Máté, is eight; he doesn't have it" -> "Her son, Máté, is eight; ...": fresh35, whose son?)
    after = words(text.strip()[len(m["pronoun"]):])[:3]
    if possessive and len(after) == 3 and any(
            unled(words(sentence))[:4] in (["my", *after], ["our", *after])
            for line in cited if line.role == "user" and line.name in (None, speaker)
            for sentence in SENTENCE.split(line.content)):
        return f"{speaker[:1].upper() + speaker[1:]}'s" + text.strip()[len(m["pronoun"]):]
    return text


def misnamed(text: str, cited: Sequence[Message], known: Collection[str] = ()) -> str | None:
    """Whom the cited line's clause says a memory's words of ("she", "dad"), when the memory says
    them of the line's own speaker instead: "Wei is 91 and still gardens every day." (qwen1.5b)
    for Wei's "She's 91 and still gardens every day." (his grandmother); "Dagny is allergic to
    penicillin" for Dagny's "Dad's allergic to penicillin, and I'm the contact". The clause is
    the one of the closest sentence sharing the most words with the memory, its subject the
    first a clause back from it names (a pronoun, a relation, "my dad"; "I" or "we": the
    speaker's own). Not when the memory says it was done to the speaker (`PASSIVE`), nor when it
    says whom a pronoun is by a relation ("his son" for "he"), nor when it says the relation
    itself ("Kate has a cat called Miso" for "My cat Miso comes along"). None when the memory
    starts with someone else or a possessive ("Wei's grandmother..."), or for a Chinese memory.
    `known`: the conversation's names of people (`Transcript.names`), subjects too ("Abbu did a
    20 km practice walk"), but not half of a subject of two ("Me and Abbu walked"). A memory
    starting "Wei's <word>" is read as "Wei is" when a cited line says "she's <word>" or "he's
    <word>" (fresh12: "Kwabena's diabetic too" for "She's diabetic too", of his mother)."""
    speakers = {m.name for m in cited if m.role == "user" and m.name}
    if len(speakers) != 1 or CJK_CHAR.search(text):
        return None
    name = speakers.pop()
    start = re.match(rf"{re.escape(name)}\b(?P<s>['’]s\s+(?P<next>[^\W\d_]+))?", text.strip())
    if not start or text.strip()[start.end():start.end() + 1] in ("'", "’"):
        return None
    told = " ".join(m.content for m in cited if m.role == "user")
    if start["s"] and (whose := re.search(rf"\b(his|her)\s+{re.escape(start['next'])}\b", told, re.IGNORECASE)) \
            and not re.search(rf"\b(?:my|our)\s+{re.escape(start['next'])}\b", told, re.IGNORECASE):
        return whose[1].lower()  # "His seventh birthday, on Sunday ..." is no "Anahit's seventh birthday" (fresh34)
    if start["s"] and not any(re.search(rf"\b(?:she|he)['’]s\s+{re.escape(start['next'])}\b", m.content, re.IGNORECASE)
                              for m in cited if m.role == "user"):
        return None  # "Wei's sister": whose; "Wei's diabetic" where the line says "She's diabetic": "is"
    others = frozenset(n.casefold() for n in known) - {w.casefold() for w in words(name)}
    names = set(words(name))
    own = own_words(text, names)
    memory = " ".join(words(text))
    found = None
    for sentence in closest_sentences(text, cited, names)[0]:
        clauses = [words(c) for c in SUBJECT_CLAUSE.split(sentence)]
        best = max(range(len(clauses)), key=lambda k: len(own & {_stem(w) for w in clauses[k]}))
        back = next((k for k in range(best, -1, -1) if _subject_at(clauses, k, others)), None)
        subject = _subject_at(clauses, back, others) if back is not None else None
        if subject is None or back is None or subject[0] == "i":
            return None
        # the clauses from the subject to the memory's words, "my" of "my dad" aside
        said = set(clauses[back][clauses[back][:1] in (["my"], ["our"]):]).union(*clauses[back + 1:best + 1])
        if {"i", *FIRST_PERSON} & said:  # "they want me to deliver in hospital": the speaker's too
            return None
        after = subject[1] or next((c[0] for c in clauses[back + 1:best + 1]  # "Our daughter, Yasmine, was born"
                                    if c and c[0] not in others), "")  # (fresh33: "Yassine was born on ...")
        if after and any(f"{aux} {after}" in memory for aux in PASSIVE) or subject[0] in memory.split():
            return None  # done to the speaker; the relation itself ("Kate has a cat called Miso": "My cat Miso")
        if subject[0] in SUBJECT_PRONOUNS and _KIN_OF.keys() & set(memory.split()):
            return None  # "he" said by the line, whom by the memory ("Quang mentions that his son has ...")
        found = found or subject[0]
    return found


SUBJECT_CLAUSE = re.compile(r"[,:]\s*|\s+(?:and|but|so|because)\s+", re.IGNORECASE)
"""Where `misnamed` parts a sentence into clauses: as `CLAUSE`, and after a colon ("one more for
the list: Dad's allergic to penicillin")."""
_LEADING = frozenset("and but so oh also then well plus".split())


def unled(said: Sequence[str], leading: Collection[str] = _LEADING) -> list[str]:
    """The words of a clause without the words that lead into it ("and", "so", "oh": `_LEADING`;
    or those of `leading`)."""
    start = 0
    while start < len(said) and said[start] in leading:
        start += 1
    return list(said[start:])


def _subject_at(clauses: list[list[str]], k: int, named: Collection[str]) -> tuple[str, str] | None:
    """`_subject_of` clause `k`; not a name after a clause of a word or two, half of a subject of
    two ("Me and Abbu walked ...")."""
    found = _subject_of(clauses[k], named)
    return None if found and found[0] in named and k and len(clauses[k - 1]) <= 2 else found


def _subject_of(clause: list[str], named: Collection[str] = ()) -> tuple[str, str] | None:
    """(whom a clause is said of, the word after it) for a clause that starts with a subject
    pronoun ("she"), a relation ("dad", "my dog"), one of the people `named` (casefolded) or the
    speaker ("i", "we"; the first is "i"); None for a clause that names none ("still gardens
    every day") or someone else."""
    said = unled(clause)
    if len(said) >= 2 and said[0] in ("my", "our") and said[1] in _KIN_OF:
        said.pop(0)
    if not said:
        return None
    after = said[1] if len(said) > 1 else ""  # "s" for "she's": no verb done to the speaker
    if said[0] in I_WORDS or said[0] in ("we", "us"):
        return "i", after
    if said[0] in SUBJECT_PRONOUNS or said[0] in _KIN_OF or said[0] in named:
        return said[0], after
    return None


SELF_COMPARED = re.compile(r"^(?P<name>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\b(?!['’])[^.;!?]*?\b(?:than|as|(?<!\bit\s)(?<!\bthem\s)to"
                           r"|with|from)\s+(?P=name)\b(?!['’])")
"""Not a thing given to the person: "Temitope is allergic to co-trimoxazole: ... when they gave it to Temitope"
(fresh25: dropped as self-compared)."""


def self_compared(text: str) -> bool:
    """A memory that says its first name again where someone else belongs: "Eero is six years
    younger than Eero" (qwen1.5b's repair of "She's six years younger than me": whose?)."""
    return bool(SELF_COMPARED.match(text.strip()))


def beside(sources: Sequence[int], count: int) -> list[int]:
    """The lines next to those a memory cites (a small model's sources are often off by one), of
    the `count` lines there are, not cited themselves."""
    return [j for i in sources for j in (i - 1, i + 1) if 0 <= j < count and j not in sources]


def cited_or_beside(text: str, transcript: Transcript, sources: Sequence[int]) -> list[Message]:
    """The lines a memory cites, or, when it cites no user's line (a small model's sources are
    often off by one: fresh9's "Giedrė has a collapsed lung" cited the assistant's next line), the
    user's line beside one of them that shares the most of its words (`closest_sentences`), or
    when the user's lines it cites hold few of its words, the one line that holds them
    (`elsewhere`)."""
    cited = [transcript.messages[i] for i in sources]
    names = {w for n in transcript.speakers for w in words(n)}
    if any(m.role == "user" for m in cited):
        there = elsewhere(text, transcript, sources, names)
        return cited if there is None else [transcript.messages[there]]
    near = [transcript.messages[j] for j in beside(sources, len(transcript.messages))
            if transcript.messages[j].role == "user"]
    scored = [(closest_sentences(text, [m], names)[1:], k) for k, m in enumerate(near)]
    (most, size), k = max(scored) if scored else ((0, 0), 0)
    # none beside holds half its words: the one line that does, if one does (fresh34, qwen1.5b: "He has Williams
    # syndrome: ..." cited "And the calcium?", two lines after the mother's "my son, Davit. He's six, and he has ...")
    there = elsewhere(text, transcript, sources, names) if 2 * most < size else None
    if there is not None:
        return [transcript.messages[there]]
    return [near[k]] if most else cited


def elsewhere(text: str, transcript: Transcript, sources: Sequence[int], names: set[str]) -> int | None:
    """The index of the one user's line the memory does not cite that holds at least half of its
    words (`closest_sentences`) when the lines it cites hold fewer than half, and no other line as
    many: fresh20's "Narek is on injections, canakinumab, every four weeks" cited Narek's first
    line, and his sister Ani had said "I am the one on the injections, canakinumab, every four
    weeks". None otherwise."""
    cited = [transcript.messages[i] for i in sources if 0 <= i < len(transcript.messages)]
    _, most, size = closest_sentences(text, cited, names)
    if not size or 2 * most >= size:
        return None
    others = [i for i, m in enumerate(transcript.messages) if m.role == "user" and i not in sources]
    scored = sorted(((closest_sentences(text, [transcript.messages[i]], names)[1], i) for i in others),
                    key=lambda pair: pair[0], reverse=True)
    if not scored or 2 * scored[0][0] < size or len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None
    return scored[0][1]


def said_by_another(text: str, cited: Sequence[Message], speakers: set[str]) -> tuple[str, str] | None:
    """(the speaker a memory names first, the one who said it of themselves) when a memory
    starts with one speaker's name ("Leilani is lactose intolerant"; not "Leilani's dad", someone
    else) for what another, whom it does not name, says in the first person in every line it
    cites: the sentence (no question) of those lines sharing the most words with it does not name
    the first, and it, or those lines together, hold at least half of the memory's other words ("I'm lactose
    intolerant", Sione's; qwen1.5b wrote the flatmate's allergy and job under the user's name). None
    otherwise, or for a Chinese memory. `speakers`: the conversation's speakers' names."""
    whose = {m.name for m in cited if m.role == "user" and m.name}
    if len(whose) != 1 or CJK_CHAR.search(text):
        return None
    speaker = whose.pop()
    # "Zdeněk's migraines" is his as "Zdeněk has migraines" is; "Ravi's dad ..." is someone else (fresh27: Lenka's
    # "And my migraines are worse since the move" became "Zdeněk's migraines are worse since the move")
    first = sorted((n for n in speakers if (m := re.match(rf"{re.escape(n)}\b(?:['’]s\s+(?P<what>[^\W\d_]+))?",
                                                          text.strip()))
                    and not (m["what"] and (m["what"].lower() in _KIN_OF or m["what"].lower() in PRONOUNS))
                    and not re.match(rf"{re.escape(n)}\b['’](?!s\s)", text.strip())), key=len)
    if not first or first[-1] == speaker or set(words(speaker)) & set(words(text)):
        return None  # "Ravi's dad ..." is someone else; a memory naming the speaker says whose it is
    named = first[-1]  # the longest: "Ann Lee" before "Ann"
    # a date code added in parentheses is none of the line's words (fresh27: "Ruaridh is packing double supplies for
    # the Edinburgh half marathon on Sunday (17 May 2026)", of Callum's "I'm running the Edinburgh half marathon")
    names = {w for n in speakers for w in words(n)}
    best, most, size = closest_sentences(PARENTHESES.sub(" ", text), cited, names)
    # or the sentences of the lines together, the closest one of the speaker's own (fresh28: Nekesa's "And I've a bad
    # back myself, so I can't lift him. Our son Barasa does the lifting." became "Wanjala has a bad back and cannot
    # lift his son Barasa.")
    together = len(own_words(PARENTHESES.sub(" ", text), names) & stems([m.content for m in cited]))
    if not best or 2 * max(most, together) < size:
        return None
    sentence = best[0]
    if set(words(named)) & set(words(sentence)) or not I_WORDS & set(words(sentence)) \
            or sentence.rstrip().endswith(("?", "？")):
        return None
    return named, speaker


OWNED = re.compile(r"\b(?P<owner>[A-Z][^\W\d_]+)['’]s\s+(?P<rel>[a-z]+)(?:\s+(?P<then>[a-z]+))?")
"""Whose relation: "Nikau's parents", "Aroha's new landlord", "Nadia's class teacher"."""


def kin_of(m: re.Match[str]) -> str | None:
    """The relation an `OWNED` match names: its first word, or the second ("new landlord")."""
    return m["rel"] if m["rel"] in _KIN_OF else m["then"] if m["then"] in _KIN_OF else None


def _relation(text: str, cited: Sequence[Message]) -> tuple[re.Match[str], str, set[str], str] | None:
    """For a memory that starts with someone's relation (`OWNED`: "Aroha's parents"): the match,
    the relation word, the speakers of the lines it cites and those people's lines joined; else
    None."""
    m = OWNED.match(text.strip())
    kin = kin_of(m) if m else None
    if not m or not kin:
        return None
    speakers = {c.name for c in cited if c.role == "user" and c.name}
    return m, kin, speakers, " ".join(c.content for c in cited if c.role == "user")


def _calls_it(owners: str, kin: str, lines: str) -> bool:
    """Whether `lines` say "<one of owners> [word] <kin>" ("my husband", "her class teacher")."""
    return bool(re.search(rf"\b(?:{owners})\s+(?:[a-z]+\s+)?{kin}\b", lines, re.IGNORECASE))


def wrong_owner(text: str, cited: Sequence[Message]) -> tuple[str, str] | None:
    """(whom the memory gives a relation, whose it is) when a memory starts with its speaker's
    relation ("Aroha's parents, Wiremu and Ana, ...") and the lines it cites give that relation
    to one other person ("Nikau's parents, Wiremu and Ana, are staying with us": qwen1.5b) and
    never to the speaker ("my parents"); or when it gives someone else a relation the one speaker
    of its lines calls only their own ("Leila's husband Karim" for "My husband Karim"); else None."""
    found = _relation(text, cited)
    if found is None:
        return None
    m, kin, speakers, lines = found
    own = _calls_it("my|our", kin, lines)
    given = {o["owner"] for o in OWNED.finditer(lines) if kin_of(o) == kin}
    if m["owner"] not in speakers:  # "My husband Karim" written "Leila's husband Karim"
        theirs = _calls_it("his|her|their", kin, lines)
        return (m["owner"], next(iter(speakers))) if own and len(speakers) == 1 and not given and not theirs \
            else None
    others = given - speakers
    return (m["owner"], others.pop()) if not own and len(others) == 1 else None


def anothers_relation(text: str, cited: Sequence[Message]) -> bool:
    """Whether a memory starts with its speaker's relation ("Nadia's class teacher is Ms Park")
    that the lines it cites give only to "her", "his" or "their" ("her class teacher there is Ms
    Park", of her daughter: qwen1.5b), never to the speaker ("my"): whose it is, the repair reads
    from the lines around."""
    found = _relation(text, cited)
    if found is None:
        return False
    m, kin, speakers, lines = found
    return m["owner"] in speakers and _calls_it("his|her|their", kin, lines) and not _calls_it("my|our", kin, lines)


def anothers_diagnosis(text: str, messages: Sequence[Message]) -> str | None:
    """A diagnosis (`DIAGNOSES`) a memory starting with a speaker's name gives them that only
    another speaker names, each time of their own ("the migraines in this family are mine", "my
    migraines are worse"), never with "he", "she" or the name (fresh27, qwen1.5b: "Zdeněk was
    diagnosed with migraines and was prescribed lacosamide", his daughter's migraines); None when
    a line of that speaker, the assistant's, or one of someone else's about another names it."""
    speakers = {m.name for m in messages if m.role == "user" and m.name}
    first = next((n for n in sorted(speakers, key=len, reverse=True)
                  if re.match(rf"{re.escape(n)}\b(?!['’])", text.strip())), None)
    if first is None or CJK_CHAR.search(text):
        return None
    for w in dict.fromkeys(words(text)):
        if (p := next((p for p in DIAGNOSES if w.startswith(p)), None)) is None:
            continue
        saying = [(m, sentence) for m in messages for sentence in SENTENCE.split(m.content)
                  if any(x.startswith(p) for x in words(sentence))]
        if saying and all(m.role == "user" and m.name != first and I_WORDS & set(words(sentence))
                          and not (THIRD_PERSON | set(words(first))) & set(words(sentence)) for m, sentence in saying):
            return w
    return None


INTEREST_CLAIMED = re.compile(r"\b(?:is|are|was|were)\s+(?:a\s+person\s+who\s+is\s+)?(?:very\s+)?"
                              r"(?:interested|curious|fascinated|intrigued)\b|\bwants?\s+to\s+(?:know|learn)\b",
                              re.IGNORECASE)
INTEREST_SAID = re.compile(r"\b(?:interest\w*|curious|fascinat\w*|intrigu\w*|love|loves|like|likes|hobby|hobbies"
                           r"|passion\w*|enjoy\w*|into|keen|want\w*|excit\w*|learn\w*)\b", re.IGNORECASE)
"""A person's interest the model reads into their questions, when no line of theirs says one: fresh29's small talk
about soap bubbles ("Why are soap bubbles always round?") gave four memories "Liang is a person who is interested in
the properties of ..."."""
LINE_STAMP = re.compile(r"(?<!\d)\d{4}-\d\d-\d\d \d\d:\d\d(?!\d)")
"""The time stamp a line of the conversation is shown with to the model ("[2026-01-20 19:52] Sanele: ...")."""


ASSISTANT_JOB = re.compile(r"\b(?:teaching|nursing|care|healthcare|health\s+care|dental|medical|physician|"
                           r"personal|research|shop|sales|administrative|admin|legal|veterinary|vet|pharmacy|lab"
                           r"|laboratory|classroom|library|office|executive|store|kitchen|production|camera)\s+"
                           r"(?:[a-z]+\s+)?assistants?\b", re.IGNORECASE)
""""Assistant" said of a person's work ("She's a teaching assistant at the primary school": fresh35 dropped an
emergency contact for it), not of the assistant in the conversation."""


def not_a_memory(text: str, messages: list[Message], sources: list[int], user_name: str = "") -> str | None:
    """Why an extracted text is not to be stored at all, or None: a question (qwen1.5b copied the
    assistant's "What is the PhD about?"), a line's time stamp copied (`LINE_STAMP`), one of the
    assistant's turns or sentences copied whole
    whose words are not all a person's too, or a suggestion only the assistant made
    (`assistant_words`)."""
    if text.rstrip().endswith(("?", "？")):
        return f"{text[:80]!r} is a question, not a memory"
    said = words(text)
    if " ".join(said) in PLACEHOLDERS:
        return f"{text[:80]!r} is the prompt's own example"
    if any(not re.fullmatch(r"\s*\[", text[:m.start()]) for m in LINE_STAMP.finditer(text)):
        # fresh19 (qwen1.5b): "Sanele is a 2026-01-20 19:52 electrician." (a line copied whole, stamp first, is
        # the speaker's: `SPEAKER_PREFIX`)
        return f"{text[:80]!r} copies the time stamp the conversation's lines are shown with"
    by_others = {w for m in messages if m.role != "assistant" for w in words(m.content)}
    mine = [words(part) for part in SENTENCE.split(text)]
    for m in messages:
        if m.role != "assistant":
            continue
        theirs = [words(part) for part in (m.content, *SENTENCE.split(m.content))]
        if said in theirs and not set(said) <= by_others:
            return f"{text[:80]!r} copies what the assistant said"
        # a sentence of the assistant's copied into a memory with more (fresh19: the user's question and the
        # assistant's answer to it, "Is there a trick ...? Press your tongue ... to warm it, or sip something warm.")
        if any(len(part) >= 8 and part in theirs and not set(part) <= by_others for part in mine):
            return f"{text[:80]!r} copies a sentence the assistant said"
    borrowed = assistant_words(text, messages, sources)
    if borrowed:
        return (f"{text[:80]!r} cites only the assistant's turns and says what only the assistant said "
                f"({', '.join(borrowed[:5])})")
    if "assistant" in words(ASSISTANT_JOB.sub(" ", text)) or "助手" in text:
        return f"{text[:80]!r} tells what happened in the conversation with the assistant, not about a person"
    if IN_CONVERSATION.search(text):
        return f"{text[:80]!r} tells who is in the conversation, not about a person"
    if INTEREST_CLAIMED.search(text) and not any(INTEREST_SAID.search(m.content) for m in messages if m.role == "user"):
        return f"{text[:80]!r} says its person is interested in what they only asked about"
    unsaid = unsaid_words(text, messages, user_name)
    if unsaid:
        return f"{text[:80]!r} says what no one said in the conversation ({', '.join(unsaid[:5])})"
    if role := anothers_role(text, messages):
        return f"{text[:80]!r} says its person is a {role}; the lines say their {role} is someone else"
    if invented := invented_health(text, messages):
        return f"{text[:80]!r} names {', '.join(invented[:5])}, which no one named in the conversation"
    if (age := invented_age(text, messages)) is not None:
        return f"{text[:80]!r} gives an age, {age}, that no one said in the conversation"
    cited = [messages[i].content for i in sources if 0 <= i < len(messages) and messages[i].role == "user"]
    if allergen := taken_though_allergic(text, cited or [m.content for m in messages if m.role == "user"]):
        return f"{text[:80]!r} says someone takes {allergen}; the line says they are allergic to {allergen}"
    asked = asked_before(messages, min(sources)) if cited else ""
    if avoided := taken_though_avoided(text, cited, asked):
        return f"{text[:80]!r} says someone takes {avoided}; the line says it is to be avoided"
    everyone = " ".join(m.content for m in messages if m.role == "user")
    if answered := next((thing for _, _, thing, _ in avoided_answers(messages)
                         if _taken_though_not(thing, text, everyone)), None):
        # an answer to what is to be avoided, in a line it does not cite (fresh22: "Fiifi takes ... co-trimoxazole")
        return f"{text[:80]!r} says someone takes {answered}; it was named when asked what to avoid"
    if unsafe := fine_though_unsaid(text, cited or [m.content for m in messages if m.role == "user"]):
        return f"{text[:80]!r} says {unsafe} is fine to take; no sentence that names it says so"
    if GENERAL.search(text) and not told_of_someone(text, messages, user_name):
        return f"{text[:80]!r} tells what a thing is or is for, of no one: not what a person said of themselves"
    return None


IN_CONVERSATION = re.compile(r"\b(?:is|are|was|were)\s+(?:also\s+)?(?:in|part\s+of|joining|present\s+in)\s+"
                             r"(?:the|this)\s+(?:conversation|chat)\b", re.IGNORECASE)
"""A memory of who takes part in the conversation: "Laleh's friend Shirin is also in the conversation" (fresh24,
of a friend who was only named)."""


GENERAL = re.compile(r"^\s*(?:[\w'’-]+\s+){1,4}?(?:is|are)\s+(?:(?:often|commonly|usually|typically|mainly|mostly)\s+)?"
                     r"(?:used|prescribed|given)\s+(?:to\s+(?:treat|manage|control|prevent|reduce|lower|raise|block"
                     r"|relieve|ease)|for\s+(?:the\s+)?(?:treatment|management|prevention|relief))\b"
                     r"|^\s*(?:[\w'’-]+\s+){1,4}?(?:is|are)\s+an?\s+(?:[\w-]+\s+){0,3}?(?:condition|disease|disorder"
                     r"|illness|medicine|medication|drug|treatment|type|kind|class|form)\s+(?:where|that|which|in which"
                     r"|of|used|when)\b", re.IGNORECASE)
"""What a thing is or is for, as a textbook says it: qwen1.5b wrote "Carbimazole is used to treat Graves' disease
by blocking the production of thyroid hormones" of "Carbimazole 20mg every morning" (fresh19), and the dose was
not kept as said (carbimazole was held)."""


def told_of_someone(text: str, messages: Sequence[Message], user_name: str) -> bool:
    """Whether a text names a person: the user, a speaker, someone named in the conversation
    (a capitalized word of a message that does not start its sentence), or a personal pronoun."""
    said = set(words(text))
    if said & (FIRST_PERSON | OTHERS_WORDS | {"you", "your"}):
        return True
    names = {*words(user_name), *(w for m in messages if m.name for w in words(m.name)),
             *(w for name in names_in(messages) for w in words(name))}
    eponyms = {w for m in EPONYM.finditer(text) for w in words(m["c"])}  # "Graves' disease" names no one
    return bool(said & names - eponyms - {w for w in said if medicine_word(w) or health_word(w)})


EPONYM = re.compile(r"(?P<c>\b(?-i:[A-ZÀ-ÖØ-Þ])[^\W\d_]*(?:['’]s?)?(?:[\s-]+(?-i:[A-ZÀ-ÖØ-Þ])[^\W\d_]*(?:['’]s?)?)*"
                    r"\s+(?:disease|syndrome|palsy|disorder|phenomenon))\b", re.IGNORECASE)
"""A disease or syndrome named after someone: "Graves' disease", "Ménière's disease", "Ehlers-Danlos syndrome"."""


FINE = re.compile(r"\b(?:fine|ok|okay|safe|alright|all right|no problem)\b", re.IGNORECASE)
NOT_FINE = re.compile(r"\b(?:not|never|no)\b|n['’]t\b", re.IGNORECASE)
CAN_TAKE = re.compile(r"\b(?:can|could)\s+(?:still\s+)?(?:take|have|use)\b|\ballowed\b", re.IGNORECASE)


def fine_though_unsaid(text: str, lines: Sequence[str]) -> str | None:
    """A medicine a memory says is fine (safe, OK) that the `lines` it comes from name, in no
    sentence that says so: qwen1.5b wrote "Ibuprofen and paracetamol are fine for Mirza" of
    "Ibuprofen and that whole family, they make the desmopressin hang on to even more water.
    Paracetamol is fine." (fresh19). None when the memory says nothing is fine, or says it with a
    "not"."""
    if not says_fine(text) or CJK_CHAR.search(text):
        return None
    sentences = [s for line in lines for s in SENTENCE.split(line)]
    for w in dict.fromkeys(words(text)):
        if not (w.startswith(NAMED_MEDICINES) or medicine_word(w)):
            continue
        naming = [s for s in sentences if _stem(w) in {_stem(x) for x in words(s)}]
        if naming and not any(says_fine(s, said=True) for s in naming):
            return w
    return None


def says_fine(text: str, *, said: bool = False) -> bool:
    """Whether a text says something is fine (`FINE`; a line that is `said` may say it as "I can
    take ...", `CAN_TAKE`), with no "not" before it in its clause."""
    found = [*FINE.finditer(text), *(CAN_TAKE.finditer(text) if said else ())]
    return any(not NOT_FINE.search(CLAUSE.split(text[:m.start()])[-1]) and not FEELS.search(text[:m.start()])
               for m in found)


FEELS = re.compile(r"\b(?:feel|feels|felt|feeling|look|looks|looked|seem|seems|seemed|sound|sounds|I['’]m|I\s+am|"
                   r"(?:he|she|they|we)\s+(?:is|are|was|were))\s+(?:\w+\s+)?$", re.IGNORECASE)
"""Before "fine": how a person is, not that a medicine is safe ("Every day for life, even when I feel fine": fresh20,
the colchicine memories were dropped as saying it was fine to take)."""


_COUNT_WORD = r"(?:" + "|".join(sorted((re.escape(k) for k in COUNTS if k not in FUZZY and k not in ("a", "an")),
                                        key=len, reverse=True)) + r")"
AGE = re.compile(rf"\b(?P<n>\d{{1,3}}|{_COUNT_WORD})[\s-]+years?[\s-]+old\b|\baged\s+(?P<m>\d{{1,3}}|{_COUNT_WORD})\b",
                 re.IGNORECASE)
"""An age a memory gives: "a 51-year-old man", "twenty years old", "aged 40"."""
COUNT_SAID = re.compile(rf"\b(?:\d{{1,3}}|{_COUNT_WORD})\b", re.IGNORECASE)


def _count_of(raw: str) -> int:
    """A count in digits or words (`COUNTS` has "twenty-nine" and "twenty nine" both)."""
    raw = re.sub(r"\s+", " ", raw.casefold())
    return int(raw) if raw.isdigit() else COUNTS.get(raw, -1)


def invented_age(text: str, messages: Sequence[Message]) -> int | None:
    """An age a memory gives (`AGE`) that no message says, in digits or words (fresh15: qwen1.5b
    wrote "Kristjan is a 51-year-old man" of a man who said no age); else None."""
    ages = [_count_of(m["n"] or m["m"]) for m in AGE.finditer(text)]
    if not ages:
        return None
    said = {_count_of(n) for message in messages for n in COUNT_SAID.findall(message.content)}
    return next((age for age in ages if age not in said), None)


IS_WHAT = re.compile(r"^(?P<name>[A-ZÀ-ÖØ-Þ][^\W\d_]+(?:\s+[A-ZÀ-ÖØ-Þ][^\W\d_]+)?)\s+(?:is|was|works\s+as)\s+"
                     r"(?P<article>an?\s+)?(?P<first>[A-Za-z]+)\b(?:\s+(?P<second>[A-Za-z]+)\b)?")
"""A memory that says what someone is: "Dragan is a cardiologist at the Institute", "Zubair is
coeliac"; its first two words after it ("a retired nurse")."""


def _what_they_are(m: re.Match[str]) -> list[str]:
    """The words of an `IS_WHAT` match that may say what someone is: not "also", "and", "the"."""
    return [w for w in (m["first"], m["second"]) if w and w.lower() not in COMMON_WORDS | FILLER | SHORT_WORDS | ADVERBS]


def says_they_are(word: str, lines: str) -> bool:
    """Whether `lines` say in the first person that the speaker is (or works as) `word`: "I'm a
    GP", "I am coeliac", "I work as a nurse", "I've been a paramedic"."""
    return bool(re.search(rf"\b(?:i['’]m|i\s+am|i\s+was|i\s+work(?:ed)?\s+as|i['’]ve\s+been|i\s+have\s+been)\s+"
                          rf"(?:an?\s+)?(?:[a-z]+\s+)?{re.escape(word)}\b", lines, re.IGNORECASE))


def _lines_by(messages: Sequence[Message]) -> dict[str, str]:
    """Each named speaker's lines, joined."""
    out: dict[str, str] = {}
    for x in messages:
        if x.role == "user" and x.name:
            out[x.name] = out.get(x.name, "") + " " + x.content
    return out


def anothers_role(text: str, messages: Sequence[Message]) -> str | None:
    """The role a memory gives a speaker ("Dragan is a cardiologist") that their lines give only
    to someone of theirs, named or said to be or do something ("My cardiologist is Dr Petrović,
    at the Institute": qwen1.5b; not "my barista job"; "The neurologist weaned me off the
    levetiracetam": fresh20, "Hemi is a neurologist"), never to themselves (`says_they_are`);
    else None."""
    m = IS_WHAT.match(text.strip())
    if not m or not m["article"]:
        return None
    lines = " ".join(said for name, said in _lines_by(messages).items() if set(words(name)) <= set(words(m["name"])))
    for role in _what_they_are(m):  # "a cardiologist at", "a retired nurse"
        if lines and re.search(rf"\b(?i:my|our)\s+(?:[a-zA-Z]+\s+)?(?i:{re.escape(role)})(?:['’]s\b|\s+(?i:is|was|says"
                               rf"|said|called|named)\b|\s*,?\s+(?:Dr\.?\s+)?[A-ZÀ-ÖØ-Þ])"
                               rf"|\b(?i:my|our|the)\s+(?i:{re.escape(role)})\s+(?:has\s+)?[a-z]{{3,}}ed\b", lines) \
                and not says_they_are(role, lines):
            return role
    return None


def claimed_by_another(text: str, messages: Sequence[Message]) -> tuple[str, str] | None:
    """(the speaker a memory names, the one speaker who said it of themselves) when a memory says
    what a speaker is ("Zubair is coeliac", "Zubair is a GP") that one other speaker said of
    themselves (`says_they_are`: "I'm coeliac, so ...", Cormac's) and the one named never did
    (fresh13: qwen1.5b cited the user's first line for a friend's words, so no check of the cited
    lines saw it); else None."""
    m = IS_WHAT.match(text.strip())
    lines = _lines_by(messages)
    if not m or m["name"] not in lines:
        return None
    for said in _what_they_are(m):  # "a GP and", "a keen sailor"
        if says_they_are(said, lines[m["name"]]):
            return None
        others = [name for name, by in lines.items() if name != m["name"] and says_they_are(said, by)]
        if len(others) == 1:
            return m["name"], others[0]
    return None


ALLERGIC_TO = re.compile(r"\ballerg(?:ic|y|ies)\s+to\s+(?:the\s+|any\s+|all\s+|some\s+)?([^\W\d_][\w-]*)"
                         r"|\b([^\W\d_][\w-]*)\s+allerg(?:y|ies)\b", re.IGNORECASE)
TAKES = (r"\b(?:takes?|taking|took|taken|uses?|using|prescribed|(?:is|was|are|were|been|be|being|put|started|stays?|"
         r"stayed)\s+on)\s+(?:[\w'’-]+\s+){0,2}?"
         r"(?:(?!(?:not|no|never|except|but|without|nor)\b)[\w'’-]+(?:\s+[\w'’-]+)?,\s+(?:and\s+|or\s+)?){0,4}?")
"""Says someone takes what follows ("is taking", "was put on"; not "read up on"), or a thing
further down the list it begins ("is taking furosemide, dalteparin, co-trimoxazole, and ramipril"),
not one after "not" ("taking ramipril, not furosemide")."""


def taken_though_allergic(text: str, lines: Sequence[str]) -> str | None:
    """What a memory says someone takes (a medicine) that the `lines` it comes from only say
    someone is allergic to: "Rosalind is taking codeine for her allergy." (qwen1.5b) for "I'm
    allergic to codeine", the opposite of the safety fact. None when the lines say it is taken too."""
    said = " ".join(lines)
    return next((allergen for match in ALLERGIC_TO.finditer(said)
                 if _taken_though_not((allergen := (match[1] or match[2]).casefold()), text, said)), None)


AVOID = re.compile(r"\b(?:avoid(?:s|ing)?|can(?:no|['’])?t\s+(?:have|take|eat|drink)|(?:must|should)\s*(?:n['’]t|\s+not)\s+"
                   r"(?:have|take|eat|drink)|stay\s+away\s+from|not\s+allowed)\b", re.IGNORECASE)
AVOIDED = re.compile(rf"(?:{AVOID.pattern}|\b(?:no|never)(?:\s+more)?)\s+(?:the\s+|any\s+|all\s+)?([^\W\d_][\w-]*)",
                     re.IGNORECASE)
"""What a line says is not to be had: "I can't take aspirin", "stay away from grapefruit", "Still no
ibuprofen, still no kiwi" (fresh20: qwen1.5b wrote "Radek is taking ibuprofen and kiwi")."""
REACTS = re.compile(r"\b(?:allerg|react|intoleran|sensitiv)", re.IGNORECASE)
"""A question of what someone reacts to ("Any allergies?", "Are there medicines you react to?"):
the answer names first what is not to be given (fresh15: "Ciprofloxacin. It tore my Achilles
tendon" became "Lerato is taking ciprofloxacin")."""


def taken_though_avoided(text: str, lines: Sequence[str], asked: str = "") -> str | None:
    """What a memory says someone takes that the `lines` it comes from say is to be avoided ("I
    can't have ibuprofen"), or name first in answer to a question of what to avoid (`asked`:
    "Anything you have to avoid?" "Ibuprofen and anything like it, they set off flares", for which
    qwen1.5b wrote "Ximena is taking Ibuprofen and other NSAIDs"). None when the lines say it is
    taken too."""
    said = " ".join(lines)
    things = [m[1].casefold() for m in AVOIDED.finditer(said)]
    if asked and (AVOID.search(asked) or REACTS.search(asked)) and lines:
        first = [w for w in words(lines[0]) if w not in _LEADING]
        things += first[:1]
    return next((thing for thing in things if _taken_though_not(thing, text, said)), None)


def _taken_though_not(thing: str, text: str, said: str) -> bool:
    """Whether a memory says someone takes `thing` (not after "not", "avoid"...) and the lines
    `said` do not ("I can't take aspirin" does not)."""
    if thing in COMMON_WORDS or thing in FIRST_PERSON or thing in FILLER or len(thing) < 3:
        return False
    taken = re.compile(TAKES + re.escape(thing) + r"\b(?![-\s]?free)"  # "peanut-free"
                       # or given it: "Sulfa antibiotics were prescribed to Kemal", "was given penicillin"
                       r"|\b" + re.escape(thing) + r"\b(?:\s+[\w'’-]+){0,2}?\s+(?:is|are|was|were|been)\s+"
                       r"(?:being\s+)?(?:prescribed|given|taken)\b|\b(?:was|were|been|being)\s+given\s+"
                       r"(?:[\w'’-]+\s+){0,2}?" + re.escape(thing) + r"\b", re.IGNORECASE)
    return all(any(not NOT_TO.search(t[:m.start()]) for m in taken.finditer(t)) == (t is text) for t in (text, said))


NOT_TO = re.compile(r"\b(?:not|never|no|cannot|avoid|avoids|avoiding|stop|stops|stopped|without)\s*(?:\w+\s+){0,1}$"
                    r"|n['’]t\s+(?:\w+\s+){0,1}$", re.IGNORECASE)
"""What says a medicine is not to be taken, right before "take" ("must not take", "can't take",
"should avoid taking", "stopped taking")."""


def unsaid_words(text: str, messages: list[Message], user_name: str = "") -> list[str]:
    """The words of a memory that no message holds (compared as `_stem`s), when
    they are at least two and more than half of its words worth checking (four letters or more,
    no filler, name, month, weekday or number: code adds dates): a small model asked about small
    talk writes "Ivy is a friendly and outgoing person". Empty otherwise, so a memory that says
    what was said in other words ("Lena is sensitive to flashing lights") is kept, and so is one
    holding a number, a health word or a name (not a speaker's) that a message holds ("Aisha is
    pregnant and has specific dietary restrictions"). A Chinese memory is not checked (its words
    are not split)."""
    if CJK_CHAR.search(text):
        return []
    names = {w for name in (user_name, *(m.name for m in messages if m.name)) for w in words(name)}
    held = stems(m.content for m in messages)
    said = [w for w in content_words(text, names | TIME_WORDS) if not w.isdigit()]
    unsaid = [w for w in said if _stem(w) not in held]
    if len(unsaid) < 2 or 2 * len(unsaid) <= len(said):
        return []
    named = {m.lower() for msg in messages for sentence in SENTENCE.split(msg.content)
             for k, m in enumerate(CAPITALIZED.findall(sentence)) if k or not sentence.strip().startswith(m)}
    if any((w.isdigit() or health_word(w) or (w in named and w not in names)) and _stem(w) in held
           for w in words(text)):
        return []  # it holds what matters of a line, in its own words ("pregnant", "Lif")
    return unsaid


TITLES = ("Dr.", "Dra.", "Mr.", "Mrs.", "Ms.", "Sr.", "Sra.", "St.", "Prof.")
"""The titles written with a full stop before a name: no sentence ends after one."""
SENTENCE = re.compile(r"(?<=[.!?;])" + "".join(rf"(?<!\b{re.escape(t)})" for t in TITLES) + r"\s+|(?<=[。！？；])\s*")
"""Where a text's sentences part: after ".", "!", "?" or ";" and a space ("2.5 mg" is one
sentence; not after a title: "Dr. Okafor", "Dra. Quiroga", fresh24), after Chinese punctuation at once."""
PLACEHOLDERS = frozenset(" ".join(words(t)) for t in ("the memory", "the rewritten memory, or an empty string",
                                                       "记忆内容", "改写后的记忆，或空字符串"))
"""The examples of the extract and repair prompts' reply shapes: qwen0.5b copies them as memories."""


# -- what the memories leave out ------------------------------------------------------------------
FILLER = frozenset("""about above after again against also although always another anyway around away back
because been before being below between both bye cheers could does doing done down during each either else
enough even ever every everyone everything fine first from further good great have having hello here hers herself
hey himself into isn itself just kind later lets lovely maybe might more most much must myself nice nope okay once
only other ours ourselves over perfect please pretty quite rather really same shall should since some something
sort still such sure than thank thanks that thats their theirs them themselves then there these they thing things
this those though through today together tomorrow tonight under until very well were what whatever when where
which while whom whose with would yeah yours yourself yourselves haha wow cool awesome anything nothing lot
lots finally actually already basically eventually totally honestly literally definitely probably recently
currently obviously apparently hopefully luckily sadly unfortunately fortunately suddenly certainly clearly simply
especially""".split())
"""Words that tell nothing on their own (a greeting, a filler, an adverb of the sentence): a line of only these is
small talk, and two texts that share only these are not about one thing (fresh19: "I finally quit smoking" ended
"... in December they finally put a name on it: ankylosing spondylitis", and the diagnosis was cut)."""
TIME_WORDS = frozenset("""monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays
thursdays fridays saturdays sundays january february march april may june july august september october
november december""".split())
SPAN_WORDS = frozenset("morning afternoon evening night week weekend month year summer winter spring autumn".split())
"""What "this" or "that" says of a time ("This weekend", "That summer")."""
CONDITIONS = ("allerg", "intoler", "diabet", "asthma", "epilep", "coeliac", "celiac", "dialys", "kidney", "cancer",
              "heart", "stroke", "arthrit", "dement", "alzheim", "parkinson", "thyroid", "pacemaker", "eczema",
              "fibrill", "arrhythm", "anaphyla", "seizure", "migrain", "phobi", "gout", "cholest", "blood")
"""Health words of what lasts: a change of medicine, diet or plan does not end an allergy or diabetes."""
LASTING = CONDITIONS + ("emergenc", "ambulanc")
"""What a change of something else does not end: a condition, and what to do in an emergency."""
CONDITION_ENDINGS = ("pathy", "itis", "osis", "aemia", "emia", "trophy", "plasia", "paresis", "plegia", "algia")
"""Endings of the names of conditions ("polyneuropathy", "vasculitis", "amyloidosis", "dystrophy", and
"gastroparesis", "fibromyalgia": fresh19's "I've got gastroparesis" held no health word)."""
HAS_ACRONYM = re.compile(r"\b(?:has|have|had|diagnosed\s+with)\s+(?P<name>[A-Z]{2,6})\b"
                         r"(?!\s+(?:on|at|in|scan|appointment)\b)")
"""A condition said by its letters: "Wayra has CIDP", "I have PNH" (not "has an MRI", "has MRI on Friday")."""


def conditions_named(text: str) -> set[str]:
    """The `_stem`s of the words of a text that name a lasting condition: a condition's word
    (`CONDITIONS`, `DIAGNOSES`; not what to do in an emergency, which a split ends), a name ending
    as a condition's does (`CONDITION_ENDINGS`), "disease", "syndrome", "disorder", or the letters
    one has (`HAS_ACRONYM`)."""
    named = {_stem(w) for w in words(text) if w.startswith(CONDITIONS + DIAGNOSES)
             or w in ("disease", "syndrome", "disorder") or condition_word(w, procedures=False)}
    return named | {_stem(m["name"].lower()) for m in HAS_ACRONYM.finditer(text)}


HEALTH_STEMS = CONDITIONS + ("gluten", "lactose", "insulin", "inhaler", "medic", "prescri", "dose", "pill", "tablet",
                            "surgery", "injur", "pain", "pregnan", "disease", "infect", "afraid", "seasick", "vegan",
                            "vegetar", "pescat", "halal", "kosher", "epipen", "sting", "anxi", "depress", "hives",
                            "adrenal", "antihist", "mg", "mcg", "microgram", "emergenc", "ambulanc", "unconscious",
                            "defibrill", "dislocat", "sprain", "fractur", "concuss", "physio", "swoll", "swell",
                            "renal", "potassium", "glucos", "glucagon", "sedat", "anaesthe", "anesthe", "chemo",
                            "biops", "vomit", "nause", "paracetamol", "ibuprofen", "aspirin", "codeine", "morphine",
                            "opioid", "steroid", "antibiot", "transplant", "breastfe", "latex", "isophane",
                            # fresh15: a dose in words, what is done to a body, its parts and troubles ("Fifteen
                            # milligrams every morning", "Intermittent catheters every four hours", "Pounding
                            # headache"; not whose care it is: "my oncologist" is a name's to keep)
                            "milligram", "millilit", "inject", "infus", "transfus", "cathet", "bladder", "bowel",
                            "urin", "headach", "backach", "syndrom", "symptom", "diagnos", "surgeon", "surgical",
                            "melanom", "carcinom", "lymphom", "sarcom", "myelom", "glaucom", "tumour", "tumor",
                            "spasm", "wheez", "ulcer", "apnoea", "apnea", "cpap", "wheelchair", "parapleg",
                            "tetrapleg", "quadripleg", "hemipleg", "dysreflex", "dyslex", "dysprax", "dysphag",
                            "cardiac", "vaccin", "immunis", "immuniz", "clot", "thyrox", "rash",
                            # fresh26: "Since May he's on a BiPAP machine at night" was kept without "since May"
                            "bipap", "nippv", "mri", "dexa", "ecg", "ekg",
                            # fresh35: "calcium gluconate into a vein", "My calcium and phosphate are checked every
                            # three months", "Give me three spoons of sugar in water, then food", "always something
                            # with carbohydrates before exercise" (none kept)
                            "calcium", "phosphat", "magnesium", "gluconat", "intraven", "vein", "sugar", "carbohydrat",
                            # fresh36: "The root of my aorta is forty-two millimetres wide, so it's watched closely."
                            "aort", "arteri", "artery", "deficien")
"""Beginnings of words that make a line a health or safety fact, never to be left out."""
NOT_HEALTH = ("paint", "hearth", "hearty", "stingy", "cloth", "rasher")
"""Words that begin as a health word does and are none ("Only the painting.")."""
DRUG_ENDINGS = ("statin", "pril", "sartan", "dipine", "olol", "cillin", "mycin", "cycline", "floxacin", "prazole",
                "oxetine", "azepam", "azolam", "triptan", "formin", "gliptin", "parin", "xaban", "semide", "thiazide",
                "codone", "trigine", "lukast", "isone", "olone", "limus", "racetam", "pressin", "traline", "alopram",
                # the stems of international nonproprietary names, WHO's list (fresh15: betahistine, gentamicin,
                # adalimumab, tizanidine, prochlorperazine, nitrofurantoin, trimethoprim, pseudoephedrine, ...)
                "mab", "tinib", "anib", "rafenib", "ciclovir", "zole", "idine", "azine", "histine", "micin", "toin",
                "oprim",
                "ephedrine", "farin", "alexin", "setron", "peridone", "dronate", "dronic", "purinol", "tropin",
                "relix", "sterone", "ynin", "fenac", "profen", "afil", "gliflozin", "glutide", "triptyline",
                "chicine", "idogrel", "goxin", "darone", "sonide", "gabalin", "itis",
                # more of WHO's stems, each checked against the words of LoCoMo's conversations (fresh16:
                # phenelzine, clozapine, haloperidol, cetirizine, hydroxyurea were no health words)
                "apine", "azepine", "peridol", "idone", "faxine", "azodone", "pidem", "piclone", "barbital", "dopa",
                "pexole", "giline", "inirole", "stigmine", "pezil", "mantine", "phenidate", "amfetamine", "codone",
                "morphone", "orphine", "adone", "oxone", "trexone", "caine", "glitazone", "glinide", "lutide",
                "parib", "ciclib", "fenib", "zomib", "lisib", "kinra", "leukin", "platin", "rubicin", "taxel",
                "mustine", "tecan", "trexate", "fosfamide", "citabine", "uracil", "tropium", "atadine", "izine",
                "astine", "fenadine", "carbamide", "urea", "fibrate", "sulosin", "azosin", "entan", "gatran",
                "dilol", "etanide", "fenacin", "begron", "xostat", "proate", "piramate", "suximide", "pentin",
                "niazid", "ampicin", "butol", "actone", "iloride", "quine", "elzine", "cypromine", "bemide",
                "propion", "spirone", "navir", "previr", "asvir", "buvir", "tegravir", "vudine", "amivir", "penem",
                "bactam", "fungin", "tiazem", "triptan", "thioprine", "pramide", "clofen", "icline", "tonin",
                # fresh27: lacosamide, bicalutamide, enzalutamide, temozolomide, indapamide were no medicines
                "cosamide", "lutamide", "zolomide", "pamide",
                # fresh29: trofinetide (peptides: octreotide, exenatide, teriparatide), eplerenone (finerenone)
                "tide", "renone",
                # fresh31: ciclosporin, cysteamine, lumasiran (inclisiran), alfacalcidol, tranexamic acid, deferasirox,
                # and a brand of drops (Cystadrops; "drops" alone is none: an ending needs two letters before it)
                "sporin", "eamine", "siran", "calcidol", "examic", "asirox", "drops",
                # more of WHO's stems, none of them the end of any other word of LoCoMo or the set before fresh32
                "nercept", "tacept", "bercept", "poetin", "grastim", "plase", "axone", "meterol", "moterol", "butamol",
                "phylline", "curonium", "thasone", "fentanyl", "amadol", "pramine", "hydramine", "ciferol", "citriol",
                # fresh35: indomethacin, celecoxib, cabergoline were no medicines ("So it's stopped" ended no
                # indomethacin)
                "methacin", "metacin", "coxib", "goline", "criptine")
"""Endings of the generic names of common medicines (atorvastatin, ramipril, losartan, amlodipine,
propranolol, amoxicillin, omeprazole, fluoxetine, metformin, tacrolimus, levetiracetam, sertraline,
citalopram, adalimumab, ...; fresh6: "They put me on amlodipine" was no health fact) and of an
inflammation ("colitis", "arteritis"), each after at least two letters."""
NOT_DRUGS = frozenset({"april", "capril", "magazine", "magazines", "riptide", "yuletide", "eventide", "noontide",
                       "springtide", "ebbtide"})
"""Words that end as a medicine's name does and are none."""


SPECIALISTS = frozenset(f"{w}{s}" for w in """neurologist nephrologist immunologist rheumatologist cardiologist
endocrinologist haematologist hematologist oncologist dermatologist gastroenterologist hepatologist pulmonologist
urologist gynaecologist gynecologist obstetrician ophthalmologist audiologist geneticist paediatrician pediatrician
neurosurgeon psychiatrist""".split() for s in ("", "s"))
"""A doctor's specialty, news for `unheld_health` (fresh34: "Dr Ramos, an immunologist at Chong Hua" was kept as
"Jomar's doctor is Dr Ramos"; the specialty was in no memory, and no rule looked, in four dialogues of fresh33 and
fresh34); no health word elsewhere: a doctor who looks after someone now ends the one before, where a health fact would
stay."""
HEALTH_WORDS = frozenset("flu jab jabs booster boosters aura auras lung lungs drip drips fluid fluids ventilator "
                         "ventilators oxygen cough coughs coughing".split())
"""Short health words that begin other words ("fluent", "lunge", "dripping"): health words only whole ("She had her
flu jab last Friday": fresh30; "too much fluid during the attack floods my lungs": fresh33; "a fever, or a cough with
blood, means the hospital the same day": fresh34; not "fever", which "hay fever" is said with)."""


def health_word(word: str) -> bool:
    """Whether a word (lower case) is a health or safety word: one of `HEALTH_WORDS`, or it begins as one of
    `HEALTH_STEMS` does, ends as a medicine's name does (`DRUG_ENDINGS`), or as a condition's does
    (`condition_word`)."""
    if word in HEALTH_WORDS:
        return True
    if word.startswith(HEALTH_STEMS):
        return not word.startswith(NOT_HEALTH)
    return word not in NOT_DRUGS and any(word.endswith(e) and len(word) >= len(e) + 2 for e in DRUG_ENDINGS) \
        or condition_word(word)


PROCEDURE_ENDINGS = ("ectomy", "otomy", "ostomy", "oscopy")
"""Endings of the names of procedures ("hysterectomy", "colonoscopy", "tracheostomy": fresh33)."""
NOT_CONDITIONS = frozenset("hypnosis osmosis metamorphosis apotheosis symbiosis nostalgia academia bohemia empathy "
                           "sympathy telepathy dichotomy diagnosis diagnoses prognosis".split())


def condition_word(word: str, *, procedures: bool = True) -> bool:
    """Whether a word (lower case) names a condition by its ending (`CONDITION_ENDINGS`), or a
    procedure (`PROCEDURE_ENDINGS`) unless not `procedures`; not a word that only ends so
    (`NOT_CONDITIONS`: "empathy", "nostalgia")."""
    endings = CONDITION_ENDINGS + PROCEDURE_ENDINGS if procedures else CONDITION_ENDINGS
    return len(word) > 6 and word.endswith(endings) and word not in NOT_CONDITIONS


def medicine_word(word: str) -> bool:
    """Whether a word (lower case) is a medicine's name by its ending (`DRUG_ENDINGS`), not a
    health word by its beginning ("clindamycin", not "tablet"), nor a condition's name."""
    return health_word(word) and not word.startswith(HEALTH_STEMS) and not condition_word(word)


DIAGNOSES = ("diabet", "asthma", "epilep", "coeliac", "celiac", "cancer", "stroke", "arthrit", "dement", "alzheim",
             "parkinson", "eczema", "fibrill", "arrhythm", "migrain", "gout", "tumou", "tumor", "leukaem",
             "leukem", "lymphom", "sclerosis", "copd", "lupus", "crohn", "colitis", "hepatit", "anaemi", "anemi",
             "osteopor", "bipolar", "schizo", "autis", "adhd", "sarcoid", "narcolep", "psoria", "angina")
"""Beginnings of the names of diagnoses: a memory that names one must have it from the conversation."""
NAMED_MEDICINES = ("paracetamol", "ibuprofen", "aspirin", "codeine", "morphine", "insulin", "naproxen")


def invented_health(text: str, messages: Sequence[Message]) -> list[str]:
    """The words of a memory that name a diagnosis (`DIAGNOSES`) or a medicine (by its name's
    ending, `DRUG_ENDINGS`, or `NAMED_MEDICINES`) that no message names (in any form of the word:
    "diabetic" names diabetes): a small model wrote "diagnosed with lung cancer" of a biopsy that
    found sarcoidosis. Other health words may be the model's own ("medication", "a heart
    condition"), and so may a medicine in a memory that says to avoid one. Empty for Chinese."""
    if CJK_CHAR.search(text):
        return []
    said = {w for m in messages for w in words(m.content)}
    stemmed = {_stem(w) for w in said}
    told = words(text)
    # a medicine to avoid may be one the model knows goes with the one named ("avoid penicillin or amoxicillin")
    avoided = bool(TURNED_DOWN & set(told)) or any(w.startswith(("avoid", "allerg")) for w in told)
    out: list[str] = []
    for w in dict.fromkeys(told):
        if (p := next((p for p in DIAGNOSES if w.startswith(p)), None)) is not None:
            if not any(p in s for s in said):
                out.append(w)
        elif not avoided and (w.startswith(NAMED_MEDICINES) or medicine_word(w)) \
                and _stem(w) not in stemmed:
            out.append(w)
    return out


CAPITALIZED = re.compile(r"[A-ZÀ-ÖØ-Þ][^\W\d_A-ZÀ-ÖØ-Þ]+")
"""A capitalized word, accents too ("Tomás", "Snježana": fresh25 lost a new first contact whose name an ASCII
pattern read as "Snje")."""
HYPHENED = re.compile(r"[A-ZÀ-ÖØ-Þ][^\W\d_A-ZÀ-ÖØ-Þ]+(?:-[^\W\d_]{2,}){1,2}")
"""A hyphened name, whole ("Ha-neul": fresh28's "My wife, Ha-neul. She's ..." was kept as "Ha is ...")."""


def _stem(word: str) -> str:
    """What two forms of a word share, roughly: "works" and "work", "allergic" and "allergy",
    "smokes", "smoking" and "smoked", "stopped" and "stop"."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    elif len(word) > 5 and word.endswith("ing") or len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        word = word[:-3] if word.endswith("ing") else word[:-2]
        if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
            word = word[:-1]  # "stopped", "quitting"
        return word[:5]
    if len(word) > 4 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]  # "smoke" as "smoking" has it
    return word[:5]


BODY_STEMS = frozenset(_stem(w) for w in ("kidney", "kidneys", "heart", "blood"))
"""Words of `CONDITIONS` that name a part of the body, not a condition a memory must keep: fresh20
kept "Nifedipine, ten milligrams ..., to open up the blood vessels in Ayodele's fingers" whole when
the nifedipine had gone, for its "blood"."""


def stems(texts: Iterable[str]) -> set[str]:
    """The `_stem`s of every word of `texts`."""
    return {_stem(w) for text in texts for w in words(text)}


def content_words(text: str, skip: Collection[str] = (), *, shortest: int = 4, filler: bool = True) -> list[str]:
    """The distinct words of a text worth comparing, in order: `shortest` letters or more, not a
    common word (`COMMON_WORDS`), nor a filler word (`FILLER`, unless `filler` is False), nor one
    of `skip` (names)."""
    return [w for w in dict.fromkeys(words(text)) if len(w) >= shortest and w not in COMMON_WORDS
            and not (filler and w in FILLER) and w not in skip]


SENTENCE_ENDS = (".", "!", "?", "。", "！", "？")


def relation_left_behind(stored: str, merged: str, ends: set[str]) -> str | None:
    """A word of `KIN` ("wife", "neurologist") that a stored memory says someone is and the text
    an UPDATE merged it into says nothing of (no word of its group: "husband" for "fiancé"), unless
    the candidate's line ends it (`ends`, `_stem`s: "we got married" of "girlfriend")."""
    said = set(words(merged))
    return next((w for w in words(stored) if w in _KIN_OF and not said & set(_KIN_OF[w])
                 and _stem(w) not in ends), None)


def health_left_behind(stored: str, merged: str, candidate: str) -> tuple[list[str], list[str]]:
    """The sentences of a stored memory with a health word (`health_word`) that an UPDATE's
    merged text drops while neither it nor the candidate says anything of that word: those that
    share no other word with the candidate (names aside), which can go back into the merged text
    as they were, and those that do (the candidate changes something else in them, as a new dose
    beside a condition), which cannot. When no sentence of the stored memory shares a word with
    the candidate, the UPDATE replaces all of it ("Dan started eating fish again" for "Dan has been
    vegetarian": putting a sentence back would state a value the user changed), unless a sentence
    holds a lasting condition or what to do in an emergency (`LASTING`) neither says anything of:
    those sentences are the second list (fresh6: "Parveen's dad has type 2 diabetes." was replaced
    by a medicine stopped; fresh16: "..., it's the emergency room" by a laxative changed).
    A Chinese memory is not judged (its words are not split)."""
    if CJK_CHAR.search(stored):
        return [], []
    said, proposed = stems([merged, candidate]), stems([candidate])
    back: list[str] = []
    tied: list[str] = []
    lasting: list[str] = []  # with a condition none of them says anything of
    addressed = False
    for sentence in SENTENCE.split(stored):
        sentence = sentence.strip()
        names = {m.lower() for m in CAPITALIZED.findall(sentence)}
        kept = [w for w in words(sentence) if len(w) >= 3 and w not in FILLER and w not in COMMON_WORDS
                and w not in names]
        shares = any(_stem(w) in proposed for w in kept)
        addressed = addressed or shares
        health = [w for w in kept if health_word(w)]
        # a lasting condition, or what to do in an emergency, none of them says anything of ("emergency" is no
        # health word, nor a name when it leads: fresh19, "Emergency contact is Goran's brother Zvonko." was
        # UPDATEd to "Not one since, not even at Goran's cousin's stag.")
        unsaid = [w for w in {*kept, *words(sentence)[:1]} if w.startswith(LASTING) and _stem(w) not in said]
        if FIRST_CALL.search(sentence) and not says_whom_to_call(f"{merged} {candidate}"):
            unsaid.append("first")  # whom to call first ("Njeri is Baraka's first contact, always.")
        # a rule ("No alcohol: if Kurt drinks and nods off without the machine, ...": fresh33, UPDATEd to a sleep study)
        unsaid += [w for w in restricted(sentence) if _stem(w) not in said]
        if all(_stem(w) in said for w in health) and not unsaid:  # each one said again ("gout" dropped is not)
            continue
        (tied if shares else back).append(sentence)
        if unsaid:
            lasting.append(sentence)
    return (back, tied) if addressed else ([], lasting)


def statements(transcript: Transcript, *, questions: bool = False) -> Iterator[tuple[int, str]]:
    """The sentences people said (not the assistant, nor a tool's result) that are no question
    (with `questions`, those too), stripped, each with the index of its line; a Chinese line is
    not judged (its words are not split)."""
    for index, message in enumerate(transcript.messages):
        if message.role != "user" or CJK_CHAR.search(message.content):
            continue
        for sentence in SENTENCE.split(message.content):
            sentence = sentence.strip()
            if sentence and (questions or not sentence.endswith(("?", "？"))):
                yield index, sentence


def worth_holding(text: str) -> list[str]:
    """The words of a memory that make it news when no other memory has them: three letters or
    more and no filler, or a number ("15" mg)."""
    return [w for w in words(text) if (len(w) >= 3 or w.isdigit()) and w not in FILLER]


def salient(sentence: str) -> list[str]:
    """The words of a sentence that tell a fact whatever else it says: a number, a name (a
    capitalized word not first in it, nor a weekday or month), a health word."""
    names = {m.lower() for k, m in enumerate(CAPITALIZED.findall(sentence)) if k or not sentence.startswith(m)} - TIME_WORDS
    return [w for w in worth_holding(sentence) if w.isdigit() or w in names or health_word(w)]


def worth_reading(transcript: Transcript) -> set[int]:
    """The lines the extraction reads: those a person said (not the assistant) with a sentence
    that has a number, a name or a health word (`salient`; a question too: "I outgrew my cat
    allergy, can you believe it?"), or, no question, a clause (`CLAUSE`) with two words worth
    remembering ("Everyone calls me Bobby"; not "How are you?"); an answer
    to the line before's question ("Are you still vegetarian?" -- "Nope."); and any a person said
    in Chinese (not judged: its words are not split). Not small talk ("Thanks, have a good one!").
    Shown only these, each after the line before it, and asked for a memory of each, qwen1.5b
    found as much as when it read the whole conversation and was then shown the lines none of its
    memories held anything of, in half the calls (fresh13); it is now asked for a memory of each
    fact a line states (a LoCoMo line often holds several)."""
    messages = transcript.messages
    out = {i for i, m in enumerate(messages) if m.role == "user" and (CJK_CHAR.search(m.content) or (
        i and messages[i - 1].content.rstrip().endswith(("?", "？")) and words(m.content)))}
    for index, sentence in statements(transcript, questions=True):
        if index not in out and (salient(sentence) or not sentence.endswith(("?", "？")) and any(
                len([w for w in words(clause) if len(w) >= 3 and w not in FILLER and w not in TIME_WORDS]) >= 2
                for clause in CLAUSE.split(sentence))):
            out.add(index)
    return out


NOT_ALLOWED = re.compile(r"\b(?:no\s+(?:more\s+)?|nothing\s+\w+er\s+than\s+(?:an?\s+|the\s+)?)([a-z][\w-]*)",
                         re.IGNORECASE)
"""What a sentence rules out: "no herbal stuff", "no driving", "nothing heavier than a kettle"."""
MUST_NOT = re.compile(r"\b(?-i:I)(?:['’]m|\s+am)?\s+(?:do\s+not|don['’]t|can\s?not|can['’]t|must\s+not|mustn['’]t"
                      r"|won['’]t|shouldn['’]t|should\s+not|not\s+allowed\s+to|never)\s+(?:be\s+allowed\s+to\s+)?"
                      r"(?P<what>drive|fly|swim|lift|cycle|bathe|drink|work|run|bend|carry|travel|dive|fast)\b",
                      re.IGNORECASE)
"""What the speaker says they must not do, in the first person: "Until he says so, I don't drive." (fresh27: no memory
kept it), "I'm not allowed to lift anything heavy"."""
NO_RULE = frozenset("""one idea problem problems worries worry rush way thanks need longer doubt kidding matter big
plans plan news change changes luck time reason wonder chance surprise difference point end sign word pressure
rain harm hurry clue""".split())
"""What follows "no" and rules nothing out ("no worries", "no idea")."""
RULE_THEN_WHY = re.compile(r"(?:(?:and|but|so|also)\s+)?no\s+[a-z][\w-]*(?:\s+[a-z][\w-]*)?\s*:\s", re.IGNORECASE)
"""A rule a sentence starts with, why after a colon: "And no alcohol: if I drink and nod off ..., I don't wake up"
(fresh33)."""
AT_ALL = re.compile(r"\b(?:at\s+all|ever|whatsoever|completely|full\s+stop|under\s+any\s+circumstances)\b",
                    re.IGNORECASE)
"""What makes "no X" a rule said on its own ("No alcohol at all, not even at the wedding", fresh22)."""
FOR_A_WHILE = re.compile(r"\b(?:for\s+(?:now|the\s+moment|a\s+while|(?:\d+|a|an|one|two|three|four|five|six|seven"
                         r"|eight|nine|ten|twelve|a\s+few|a\s+couple\s+of)\s+(?:day|week|month|year)s?)|until)\b",
                         re.IGNORECASE)


NOTHING_AFTER = re.compile(r"\s*(?:,?\s*(?:at\s+all|again|any\s*more|ever))?\s*[.!;]?\s*$", re.IGNORECASE)
"""Nothing after what someone never does but how absolutely: "I never fast.", "I never drive at all"."""


CARER = re.compile(r"\b(?:Dr\.?\s+[A-Z]|(?i:doctors?|GP|consultant|nurse|pharmacist|dietitian|dietician|surgeon|"
                   r"[a-z]+(?:ologist|iatrist)s?)\b)")
"""Who sets a rule for someone's health: "Dr Virtanen was very clear: no sauna at all" (fresh16)."""


def restricted(sentence: str) -> list[str]:
    """The words of what a sentence says someone must not do or have (`NOT_ALLOWED`), when it says
    so beside a health word, for a while (`FOR_A_WHILE`), as a doctor's rule (`CARER`) or as a list
    of them, or that the speaker must not do (`MUST_NOT`: "Until he says so, I don't drive",
    fresh27; "I never fast", fresh35, a rule on its own): "The transplant team said no herbal stuff at all, it can
    mess with the tacrolimus levels", "no driving for two weeks" (fresh10: no memory kept either), "Dr Virtanen was very
    clear: no sauna at all", "No alcohol at all" (`AT_ALL`), "No aged cheese, no cured sausage, ...,
    no soy sauce" (fresh16), "And no alcohol: if I drink ..." (`RULE_THEN_WHY`). Not
    "no worries" (`NO_RULE`), nor "no plans this weekend"."""
    ruled = [m[1].lower() for m in NOT_ALLOWED.finditer(sentence) if m[1].lower() not in NO_RULE]
    musts = list(MUST_NOT.finditer(sentence))
    ruled += [m["what"].lower() for m in musts]
    # "I never fast." (fresh35: CPT2 deficiency; kept by none), with nothing after it ("I never drink coffee" is a taste)
    never = any("never" in words(m[0]) and NOTHING_AFTER.match(sentence, m.end()) for m in musts)
    if ruled and (len(ruled) > 1 or never or FOR_A_WHILE.search(sentence) or CARER.search(sentence)
                  or AT_ALL.search(sentence)
                  or RULE_THEN_WHY.match(sentence) or any(health_word(w) for w in words(sentence))):
        return ruled
    return []


_CALL = r"(?:call|ring|phone|contact|get|fetch|text)\s+(?!(?:me|you|us)\b)"
_UNWELL = r"(?:if|when|whenever|should|in\s+case)\s+(?!you\b)(?:i|he|she|they|my\s+\w+|(?-i:[A-Z][^\W\d_]+))\b[^,;.]*"
CALL_WHEN = re.compile(rf"^(?:(?:and|but|so|oh|also|just)\s+)*(?P<cond>{_UNWELL})[,;]\s*(?:(?:then|just|please)\s+)?"
                       rf"{_CALL}|^(?:(?:and|but|so|just|please)\s+)*{_CALL}[^,;.]*?\s(?P<after>{_UNWELL})",
                       re.IGNORECASE)
"""Whom to call when the speaker (or someone they speak of) is not well: "If I ever go yellow or start
talking nonsense, call Kaloyan first" (fresh12: no health word, and no memory kept it); not "If
you're in town, call Dave", nor "Call me when it's ready"."""


def call_when(sentence: str) -> list[str]:
    """The words of the condition (`CALL_WHEN`) of a sentence saying whom to call when someone is
    not well, or none."""
    found = CALL_WHEN.search(sentence)
    return content_words(found["cond"] or found["after"]) if found else []


NOT_FRAGMENT = frozenset("i we he she they it you is are am was were be been have has had do does did s m re ve ll d "
                         "take takes took get got make makes made give gave".split())
"""Words that make a sentence more than a thing named alone: a subject, a verb."""


ONE_BACK = re.compile(r"^(?:he|she|they|we|i)\s+(?:[^\W\d_]+\s+){0,2}?(?:one|it|them)\b", re.IGNORECASE)
"""A clause whose "one" or "it" is the thing the clause before it names: "he needs one about every three weeks now"."""


def clauses_joined(transcript: Transcript) -> Iterator[tuple[int, str]]:
    """`statements`, a clause after a ";" that says "one" or "it" of what the clause before names (`ONE_BACK`), with
    no health word of its own, kept with that clause: "so he has a transfusion this Thursday; he needs one about every
    three weeks now" (fresh31: how often, the clause alone did not say of what)."""
    said = list(statements(transcript))
    k = 0
    while k < len(said):
        index, sentence = said[k]
        while k + 1 < len(said) and said[k + 1][0] == index and sentence.endswith(";") \
                and ONE_BACK.match(said[k + 1][1]) and any(health_word(w) for w in words(sentence)) \
                and not any(health_word(w) for w in words(said[k + 1][1])):
            sentence = f"{sentence} {said[k + 1][1]}"
            k += 1
        yield index, sentence
        k += 1


WHEN_SAID = re.compile(r"(?:In|On|Since|From|Back\s+in)\s+[^.]*\d")
"""A time said in a few words: "In 2009, at the dentist.", "On the 3rd of May."."""


WHEN_ASKED = re.compile(r"\bwhen\s+(?:was|were)\s+(?P<who>it|that|this|you)\s+(?:first\s+)?(?P<verb>found|diagnosed"
                        r"|discovered|picked\s+up|spotted|confirmed)\b[^?]*\?\s*$", re.IGNORECASE)
"""A question of when something was found: "When was it found?", "When were you diagnosed?"."""
HAS_CONDITION = re.compile(r"\bI\s+(?:have|['’]ve\s+got|was\s+born\s+with|live\s+with|suffer\s+from)\s+"
                           r"(?P<what>(?!(?:a|an|the|no|two|to|been|had|it|this|that)\b)[^\W\d_][^\W_]*"
                           r"(?:[\s-][^\W\d_]+)?)"
                           r"\s*(?=[,.:;(]|$)")
"""What the speaker says they have, in a word or two before a pause: "I have xeroderma pigmentosum, XP: ...", "I was
born with methaemoglobinaemia, the inherited kind", "I have CPT2 deficiency, ..." (fresh35)."""


WHAT_ABOUT = re.compile(r"\b(?:what|how)\s+about\s+(?P<what>(?:[a-z-]+\s+){0,2}?[a-z-]+)\s*\?\s*$", re.IGNORECASE)
"""A question of one thing: "What about naps?"."""
NONE_LEADS = re.compile(r"None\b(?=[\s,;:]+\S)")
"""An answer that there is none, saying more: "None without the ventilator, not even on the sofa."."""


LAST_ASKED = re.compile(r"\bwhen\s+(?:was|did\s+you\s+have)\s+(?:your|the)\s+(?:very\s+)?last\s+"
                        r"(?P<what>[a-z-]+(?:\s+[a-z-]+)?)\s*\?\s*$", re.IGNORECASE)
"""A question of when something last was: "When was your last attack?"."""
SET_OFF_ASKED = re.compile(r"\bwhat\s+(?:usually\s+)?(?:(?P<verb>sets?|brings?)\s+(?:the|your|an?|those)\s+"
                           r"(?P<what>[a-z-]+(?:\s+[a-z-]+)?)\s+(?P<part>off|on)"
                           r"|(?P<cause>triggers?|causes?|starts?)\s+(?:the|your|an?|those)\s+"
                           r"(?P<caused>[a-z-]+(?:\s+[a-z-]+)?))\s*\?\s*$", re.IGNORECASE)
"""A question of what sets something off: "What sets the attacks off?", "What triggers your migraines?"."""
SET_OFF_SAID = {"set": "set off", "bring": "brought on", "trigger": "triggered", "cause": "caused", "start": "started"}
ROLE_ASKED = re.compile(r"\b(?:(?P<when>when)\s+(?:do|will)\s+you\s+(?:next\s+)?see|who\s*(?:is|['’]s))"
                        r"\s+(?:your|the)\s+"
                        r"(?P<role>[a-z-]+(?:\s+[a-z-]+)?)(?:\s+now)?\s*\?\s*$", re.IGNORECASE)
"""A question of who someone's doctor is, or when they see them: "Who's your consultant?", "When do you see your
neurologist?"."""


def when_answered(transcript: Transcript, index: int, sentence: str) -> str:
    """`sentence`, the start of line `index`, that answers a question of when something was found (`WHEN_ASKED`) with
    a time and no subject of its own before its first pause (`WHEN_SAID`), said as what was found when: "When was it
    found?" -- "In 2003, when I was three." is "My xeroderma pigmentosum was found in 2003, when I was three." when the
    line before the question says "I have xeroderma pigmentosum, ..." (the one thing `HAS_CONDITION` finds there);
    "When were you diagnosed?" -- "In 2019, after a fall." is "I was diagnosed in 2019, after a fall." (fresh32,
    fresh33: the year kept, what was found in it not). One that says "None ..." to a question of one thing
    (`WHAT_ABOUT`) says of what: "What about naps?" -- "None without the ventilator" is "No naps without the
    ventilator" (fresh33). Otherwise as it is."""
    message = transcript.messages[index]
    question = transcript.messages[index - 1].content if index and message.role == "user" else ""
    if not question or not sentence or found_at(message.content, sentence) != 0:
        return sentence
    if NONE_LEADS.match(sentence) and (about := WHAT_ABOUT.search(question)):
        return f"No {about['what'].lower()}{sentence[len('None'):]}"
    said, lead = sentence[0].lower() + sentence[1:], re.split(r"[,;:.]", sentence, maxsplit=1)[0]
    # "When was your last attack?" -- "Last Sunday. My right arm ..." (fresh34: the date of the attack was lost)
    if (last := LAST_ASKED.search(question)) and len(words(sentence)) <= 6 and NOT_FRAGMENT.isdisjoint(words(
            sentence)) and not content_words(sentence, TIME_WORDS | WHICH_TIME) and times_said(
            sentence, transcript.times[index], sentence):
        return f"My last {last['what'].lower()} was {said}"
    # "What sets the attacks off?" -- "A knock on the head, even a small one, and nights without sleep." (fresh34)
    if (sets := SET_OFF_ASKED.search(question)) and NOT_FRAGMENT.isdisjoint(words(lead)) and len(words(lead)) >= 2:
        what = (sets["what"] or sets["caused"]).lower()
        verb = SET_OFF_SAID[(sets["verb"] or sets["cause"]).lower().removesuffix("s")]
        return f"My {what} {'are' if what.endswith('s') else 'is'} {verb} by {said}"
    # "What must you avoid?" -- "All milk and everything made from it: cheese, ..." (fresh33: left to the repair)
    if AVOID_ASKED.search(question) and words(lead)[:1] and words(lead)[0] not in NOT_FRAGMENT | NAMES_NOTHING \
            and I_WORDS.isdisjoint(words(lead)):
        return f"I must avoid {said}"
    # "When do you see your neurologist?" -- "Dr Jayasuriya, at the teaching hospital in Kandy, on Monday the 29th."
    if (role := ROLE_ASKED.search(question)) and NAMED_FIRST.match(sentence) and NOT_FRAGMENT.isdisjoint(words(lead)):
        who = role["role"].lower()
        return f"I see my {who}, {sentence}" if role["when"] else f"My {who} is {sentence}"
    asked = WHEN_ASKED.search(question)
    if asked is None or not WHEN_SAID.match(sentence) \
            or not NOT_FRAGMENT.isdisjoint(words(re.split(r"[,;:.]", sentence, maxsplit=1)[0])):
        return sentence
    verb = " ".join(asked["verb"].lower().split())
    if asked["who"].lower() == "you":
        return f"I was {verb} {said}"
    before = transcript.messages[index - 2] if index >= 2 else None
    had = {m["what"] for m in HAS_CONDITION.finditer(before.content)} \
        if before is not None and before.role == "user" and before.name == message.name else set()
    return f"My {had.pop()} was {verb} {said}" if len(had) == 1 else sentence


def health_led(transcript: Transcript) -> Iterator[tuple[int, str]]:
    """The sentences people said (`statements`), each run of things named alone ("Trimethoprim.",
    "Sulfa antibiotics.": four words or fewer, no subject or verb of `NOT_FRAGMENT`) that holds a
    health word joined to the sentence after it in its line ("Trimethoprim. Hives all over, in my
    twenties.": the reaction kept without the medicine is no safety fact); not to one starting
    with "It", which `named_thing` names. So too a time said in a few words (six at most,
    `WHEN_SAID`) before a sentence with a health word: "When was it found?" -- "In 2009, at the
    dentist. He rubbed a benzocaine gel on my gum ..." (fresh32: the gel kept, its year lost)."""
    run: list[str] = []
    line = -1
    for index, sentence in clauses_joined(transcript):
        if index != line:
            yield from ((line, kept) for kept in run)
            run, line = [], index
        told = words(sentence)
        if (len(told) <= 4 or len(told) <= 6 and WHEN_SAID.match(sentence)) and sentence.endswith(".") \
                and NOT_FRAGMENT.isdisjoint(told):
            run.append(sentence)
            continue
        if run and not IT_LEADS.match(sentence) and (
                any(health_word(w) for kept in run for w in words(kept))
                or any(WHEN_SAID.match(kept) for kept in run) and any(health_word(w) for w in told)):
            content = transcript.messages[index].content  # as said, spaces and all
            start = content.find(run[0])
            end = content.find(sentence, start)
            sentence = content[start:end + len(sentence)] if 0 <= start <= end else " ".join([*run, sentence])
        else:
            yield from ((index, kept) for kept in run)
        run = []
        yield index, sentence
    yield from ((line, kept) for kept in run)


FIRST_CALL = re.compile(r"\b(?:first|second|next|main)\s+(?:call|contact|port\s+of\s+call"
                        r"|person\s+to\s+(?:call|ring))\b|\bnext\s+of\s+kin\b"
                        r"|\b(?:call|ring|phone)\s+(?:\w+\s+){0,2}?first\b", re.IGNORECASE)
"""Whom to call first, said without "emergency": "She's my first call for anything", "First call is my
husband, Tinashe, then Tatenda" (fresh17: no memory kept either)."""


EMERGENCY_CONTACT = re.compile(r"\bemergency\s+contacts?\b", re.IGNORECASE)


def unheld_health(transcript: Transcript, written: Sequence[str]) -> list[tuple[int, str]]:
    """The sentences a person said (no question, not the assistant) with a health word
    (`health_word`) or a rule (`restricted`), and a health word, a word of the rule or a number
    that none of `written` (the memories so far) holds, or a clause whose health words and numbers
    no one memory holds together (`needs`), or whom to call first (`FIRST_CALL`, or an emergency contact) or
    when someone is unwell (`call_when`) with a name or condition no memory holds (half of), with
    the index of their line: a safety fact no memory kept ("He's eight and he's allergic to egg",
    "I take clopidogrel, 75 mg, every morning": qwen1.5b kept neither, even when shown the line
    again). A Chinese line is not judged."""
    held = stems(written) | stems(with_digits(text) for text in written)
    # a medicine is held by its whole name, not its stem: "Cystadrops" is not "Cystagon" (fresh31); so is a specialist
    # ("immunologist" is no "immunoglobulin": fresh34)
    whole = {w.removesuffix("s") for text in written for w in words(text)}
    each = [stems([text]) | ({NEVER_SAID} if NEVER.search(text) else set()) for text in written]
    out: list[tuple[int, str]] = []
    for index, sentence in health_led(transcript):
        sentence = said_whole(sentence)
        if sentence.endswith(("?", "？")):  # "Allergic. What to?," once its comma goes
            continue
        said = words(sentence)
        # a specialist with their name: "Dr Ramos, an immunologist at ..." (not "The neurologist put it up")
        whose = TITLED_SOMEONE.search(sentence) is not None
        health = [w for w in said if health_word(w) or whose and w in SPECIALISTS] + restricted(sentence) + [
            m[0].split()[-1].lower().removesuffix("s") for m in EMERGENCY_THING.finditer(sentence)]
        if first := FIRST_CALL.search(sentence) or EMERGENCY_CONTACT.search(sentence):
            # whom to call: the names said (the one a "She" leading it is too: fresh28's "My mother, Mercedes. She's
            # my emergency contact." was kept by no memory), else the words saying so
            subject = SUBJECT_NAME.match(named_subject(transcript, index, sentence))
            names = [w.lower() for w in named_in(sentence)] + (
                words(subject["name"]) if subject and subject["name"] in transcript.names else [])
            # each held by a memory that says whom to call, not only by one of who they are (fresh19: "Jo knows
            # the drill, she's my first call, then Big Tom" beside "Mariko's wife is Josephine, she's Jo")
            calling = stems([text for text in written if says_whom_to_call(text)])
            if any(_stem(n) not in calling for n in names) and len(sentence) <= MAX_CONTENT_CHARS:
                out.append((index, sentence))
                continue
            health += names or words(first[0])
        condition = call_when(sentence)
        if len(sentence) <= MAX_CONTENT_CHARS and (
                # its numbers said in words too (fresh31: "Cysteamine, Cystagon, every six hours, ..." was held by
                # "Sumaq takes cysteamine, Cystagon, and ...")
                health and any(_stem(w) not in held for w in health + [w for w in words(with_digits(sentence))
                                                                       if w.isdigit()])
                or any((medicine_word(w) or w in SPECIALISTS) and w.removesuffix("s") not in whole for w in health)
                or health and any(not any(need <= one for one in each) for need in needs(sentence))
                or condition and 2 * sum(_stem(w) in held for w in condition) < len(condition)
                or health and not any(of_someone(transcript, index, sentence, health) <= one for one in each)):
            out.append((index, sentence))
    return out


def of_someone(transcript: Transcript, index: int, sentence: str, health: Sequence[str]) -> set[str]:
    """What one memory must hold of a health sentence of line `index` whose subject is someone the conversation
    names, not its speaker: that one's name with the sentence's health words (fresh36: "Our younger daughter, Vy,
    seven, has protein C deficiency too" was held by the mother's own "Lan has protein C deficiency"); nothing
    (held by any memory) for a sentence of no such one."""
    subject = SUBJECT_NAME.match(sentence)
    speaker = transcript.messages[index].name or ""
    if subject is None or subject["name"] not in transcript.names or subject["name"] in speaker.split():
        return set()
    return stems([subject["name"], *health])


NEVER = re.compile(r"\bnever\b|\bno\s+one\b|\bnobody\b|\bmust\s+not\b|\bmustn['’]t\b|\bnot\s+allowed\b"
                   r"|\bnot\s+supposed\s+to\b", re.IGNORECASE)
TO_HOSPITAL = re.compile(r"\bmeans?\s+(?:the\s+|a\s+)?(?P<where>hospital|ambulance|A\s*&\s*E|ER)\b", re.IGNORECASE)
NEVER_SAID = "<never>"
"""What `needs` asks of a memory for a clause that says "never" (or "no one", "nobody", "must not"): that it says so
too (fresh29: "..., and no one takes blood from it" was held by "Blood tests on the 2nd of November", "I must not get
pregnant again" by "... her heart had weakened in the pregnancy")."""


def needs(sentence: str) -> Iterator[set[str]]:
    """What one memory must hold of each clause of a health sentence (`CLAUSE`) for it to be held:
    its health words and numbers, together, and a "never" when the clause says one (fresh22:
    "With the azathioprine I need a blood count every three months, and I must never take
    allopurinol" was held by three memories, one of them another speaker's allopurinol, and the
    blood count was kept by none; fresh23: "And I must never stop the prednisolone suddenly" was
    held by "Hamish is taking prednisolone, omeprazole, and alendronic acid")."""
    for clause in CLAUSE.split(sentence):
        need = {_stem(w) for w in words(clause) if health_word(w) or w.isdigit()}
        # where to go, too: "a fever, or a cough with blood, means the hospital the same day" was held by "... should
        # be called in an emergency if he has a fever or a cough with blood" (fresh34)
        need |= {_stem(w) for m in TO_HOSPITAL.finditer(clause) for w in words(m["where"])}
        if need:
            yield need | ({NEVER_SAID} if NEVER.search(clause) else set())


KIN = [group.split() for group in (
    "wife husband spouse partner married fiancé fiancée fiance fiancee boyfriend girlfriend",
    "son daughter child kid boy girl",
    "baby", "mum mom mother mama mamá mam", "dad father papa", "parents", "sister", "brother", "twin",
    "grandmother grandma granny nan nana", "grandfather grandpa granddad", "grandson granddaughter grandchild",
    "aunt auntie", "uncle", "cousin", "niece", "nephew", "friend pal", "flatmate roommate housemate", "neighbour neighbor",
    "colleague coworker", "boss manager", "coach trainer", "teacher", "doctor gp", "cardiologist", "dentist",
    "therapist", "dog", "cat", "puppy", "kitten", "stepmum stepmom stepmother", "stepdad stepfather",
    "stepson stepdaughter stepchild", "stepsister", "stepbrother", "godson goddaughter godchild", "godmother",
    "godfather", "mate", "landlord landlady", "vet", "physio physiotherapist", "midwife", "nanny babysitter",
    "tutor", "mentor", "carer caregiver")]
"""The relations `unheld_relations` reads ("my husband Arjun"), each with the words a memory may
say it in."""
_KIN_OF = {word: group for group in KIN for word in group if word != "married"}
_NAME = r"(?:Dr\.?\s+)?[A-ZÀ-ÖØ-Þ][^\W\d_]+(?:-[^\W\d_]{2,}){0,2}"
_REL = r"(?P<rel>(?i:" + "|".join(sorted(map(re.escape, _KIN_OF), key=len, reverse=True)) + r"))(?P<law>-in-law)?"
_ADJ = r"(?:(?P<adj>(?!(?:and|or|own|my|our|your|his|her|their|the|an?)\b)[a-z]+)\s+)?"
_AGE_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
              "seventeen eighteen nineteen twenty").split()
_AGE = (r"(?:\s*,\s*|\s+)(?:(?i:who|he|she)(?:['’]s|\s+is)|aged)\s+(?P<age>(?:\d{1,2}|" + "|".join(_AGE_WORDS)
        + r")(?:\s+(?:years?|months?|weeks?)\s+old)?)(?![\w-])(?!\s*(?:kg|kilo|pound|lb|cm|%|percent|minute|hour))")
_OWNER = rf"(?P<owner>{_NAME})['’]s"
_REL_NAME = rf"\s+{_ADJ}{_REL}\s*,?\s+(?P<name>{_NAME})\b"
"""Whose relation (" Ximena's"), and a relation with its name after it (" new partner, Ignacio")."""
MY_KIN = re.compile(rf"\b(?i:my|our){_REL_NAME}(?:{_AGE})?")
KIN_NAMED = re.compile(rf"(?P<name>{_NAME}),\s+(?i:my|our)\s+{_ADJ}{_REL}\b(?!\s*,?\s+{_NAME})")
"""A name the relation after it says ("Tove, my sister, ..."); not one called before a relation
that names its own ("Hey Mel, my cousin Ingrid ...": Ingrid is the cousin)."""
THEIR_KIN = re.compile(rf"\b{_OWNER}{_REL_NAME}(?:{_AGE})?")
PARENT_OF = re.compile(rf"\bI(?:['’]m|\s+am)\s+(?P<name>{_NAME})['’]s\s+"
                       r"(?i:mum|mom|mother|mam|mama|dad|father|papa)\b")
"""A child named by the speaker saying whose parent they are: "I'm Tobi's mum; on paper he's Oluwatobi, and he's nine.
He has Prader-Willi syndrome." (fresh27: every "he" of the line was kept unnamed)."""
NAME_IS = re.compile(rf"\b(?P<pronoun>[Hh]er|[Hh]is)\s+name(?:['’]s|\s+is)\s+(?P<name>{_NAME})\b")
"""A name given after the relation, in a sentence of its own: "My mother had a stroke. ... Her name's Rosemary"."""
UNNAMED_KIN = re.compile(rf"\b(?:(?i:my|our)|{_OWNER})\s+{_ADJ}{_REL}\b(?!\s*,?\s+{_NAME})")
"""A relation said without its name ("my new manager", "Idris's mum")."""
MALE = frozenset("""husband fiancé fiance boyfriend son boy dad father papa brother grandfather grandpa granddad
grandson uncle nephew stepdad stepfather stepson stepbrother godson godfather landlord""".split())
FEMALE = frozenset("""wife fiancée fiancee girlfriend daughter girl mum mom mother mama mamá mam sister grandmother
grandma granny nan nana granddaughter aunt auntie niece stepmum stepmom stepmother stepdaughter stepsister goddaughter
godmother landlady""".split())
"""Relations "his" and "her" never name ("Her name's Samira" is no brother's)."""
NOT_NAMES = frozenset("""i and but so then the a he she they we it this that who is was yes no oh well thanks thank
hi hello hey sure okay ok sorry please also plus anyway actually honestly funny mind my our your his her their its
me us them god""".split()) | TIME_WORDS


HE_OR_SHE = re.compile(r"(?P<pronoun>[Ss]he|[Hh]e)(?P<s>['’]s)?\s+(?P<next>[\w’']+)")
SUBJECT_NAME = re.compile(rf"^(?:(?i:and|but|so|oh|also|then|well)\s+)*"
                          rf"(?:(?i:my|our)\s+{_ADJ}{_REL}(?:\s+is|['’]s)?\s*,?\s+)?(?P<name>{_NAME})\b(?!['’])")
"""A clause's subject when it is a name, after the relation it is ("My wife, Ha-neul", "My wife is Solongo": fresh28
kept "She's ... my emergency contact" unnamed)."""
ALIAS = re.compile(r"\b(?:call(?:s|ed)?\s+(?:her|him|them|me)|known\s+as|goes\s+by|nicknamed|for\s+short)\b",
                   re.IGNORECASE)
"""A clause giving another name of someone ("though everyone calls her Doña Chayo", "I'm Onalenna, Ona for short")."""
APPOSITIVE = re.compile(r"an?\s+[a-z]+(?:\s+[a-z]+)?\s+(?:at|in|from|of|with|on)\b")
"""A clause saying what the one before it is, naming only places: "Dr Andrade, a cardiologist at the Hospital Eugenio
Espejo. She wants ..." (fresh28: the "She" was kept)."""
HIS = frozenset("he him his himself".split())
HERS = frozenset("she her hers herself".split())
ADVERBS = frozenset("never always already just also still really only ever recently".split())
PARTICIPLES = frozenset("""been got gotten had done gone met seen taken given made known told said put left lost won
run come become brought bought thought found kept held heard read written started moved lived worked booked
signed decided agreed asked offered promised stopped quit changed switched finished""".split())
"""Words after "she's" (an adverb aside) that make it "she has": "He's had anaphylaxis once"; and
any word ending in "ed", for "she's called" and "she's worried" alike ("'s" is kept)."""


def the_one_related(transcript: Transcript, index: int, at: int, pronoun: str) -> str | None:
    """Whom "he" or "she" (`pronoun`) at `at` in line `index` is when no sentence
    before it says so as `named_subject` reads one: the one person of that gender introduced with
    a relation ("my daughter Yasmin", "My father-in-law, Haruto,") in the lines up to it, where no
    clause there starts with another name ("Bethan says ...") than people introduced with a
    relation ("Donepezil 5 mg at bedtime. He's diabetic too" after "My father-in-law, Haruto, moved
    in. He's 81 and has Alzheimer's"). None when none or more than one could be."""
    lines = [m.content for m in transcript.messages[:index]] + [transcript.messages[index].content[:max(at, 0)]]
    said = [m for t in lines for m in [*MY_KIN.finditer(t), *THEIR_KIN.finditer(t), *KIN_NAMED.finditer(t)]]
    same, other = (MALE, FEMALE) if pronoun == "He" else (FEMALE, MALE)
    ones = {m["name"] for m in said if m["rel"].lower() in same}
    others = {m["name"] for m in said if m["rel"].lower() in other}
    for text in lines:  # "I'm Tobi's mum; on paper he's Oluwatobi": the first "he" or "she" after it says which
        for parent in PARENT_OF.finditer(text):
            if said_of := next((w for w in words(text[parent.end():]) if w in HIS | HERS), None):
                (ones if (said_of in HIS) == (pronoun == "He") else others).add(parent["name"])
    # a speaker's own name is no one else (fresh31: "I'm Sumaq Huarancca ... I'm writing for my son, Yaku")
    speaking = {w for name in transcript.speakers for w in CAPITALIZED.findall(name)}
    subjects = {m["name"] for text in lines for one in SENTENCE.split(text) for clause in SUBJECT_CLAUSE.split(one)
                if (m := SUBJECT_NAME.match(clause.strip())) and m["name"] in transcript.names
                and m["name"] not in speaking and clause.strip().rstrip(".,;:!") != m[0].strip()  # not a name alone
                and not ALIAS.search(clause)}  # "I'm Onalenna, Ona for short" (fresh28): no one else
    if len(ones) != 1 or not subjects <= ones | others:
        return None
    return next(iter(ones))


def topic_person(transcript: Transcript, pronoun: str) -> str | None:
    """Whom "he" or "she" (`pronoun`) is when the talk is about one person the speakers care for and no line before it
    says who: the one person the assistant's lines ask about by name ("How is Embla?", "Would that help Tia?"; no
    speaker, no one asked "you" of) whom the talk says is of that gender (`gender_said`); None when none, or more than
    one, could be. A session after the first names the child only in the assistant's lines (fresh30: "She has pulsed
    dye laser on it" after "What about the birthmark?", kept unnamed), and a grandmother introduced beside the child
    ("my mum, Ana") makes `the_one_related` two."""
    speaking = {w for name in transcript.speakers for w in words(name)}
    asked = {n for m in transcript.messages if m.role == "assistant" and not YOU.search(m.content)
             for n in CAPITALIZED.findall(m.content) if n in transcript.names and n.lower() not in speaking}
    ones = [n for n in asked if gender_said(transcript, n) == pronoun]
    return ones[0] if len(ones) == 1 else None


SHORT_FOR = re.compile(rf"(?P<name>{_NAME}),\s+(?P<alias>{_NAME})\s+for\s+short\b")
"""A name and the short one said for it: "My daughter Litia, Tia for short"."""


def gender_said(transcript: Transcript, name: str) -> str | None:
    """"He" or "She" for `name`, when what the talk says of them agrees: the relations it (or the name it is short
    for: `SHORT_FOR`) is said with ("my daughter Embla"; "My daughter Litia, Tia for short"), and the first "he" or
    "she" (or "his", "her", "him") of a person's answer to the assistant asking after them by name, in the answer's
    first sentence, with no one else and no relation named before it ("How is Embla?" -- "She had a cluster of
    seizures"); None when nothing says, or the lines disagree."""
    said: set[str] = set()
    same = {name} | {m["name"] if m["alias"] == name else m["alias"] for message in transcript.messages
                     for m in SHORT_FOR.finditer(message.content) if name in (m["name"], m["alias"])}
    for index, message in enumerate(transcript.messages):
        for m in [*MY_KIN.finditer(message.content), *THEIR_KIN.finditer(message.content),
                  *KIN_NAMED.finditer(message.content),
                  *(me for (i, _), me in transcript.introduced.items() if i == index)]:  # "I'm Marites, his mother"
            if m["name"] in same and m["rel"].lower() in MALE | FEMALE:
                said.add("He" if m["rel"].lower() in MALE else "She")
        if message.role != "assistant" or name not in CAPITALIZED.findall(message.content) or YOU.search(
                message.content) or index + 1 >= len(transcript.messages) or \
                transcript.messages[index + 1].role != "user":
            continue
        answer = next((t for t in SENTENCE.split(transcript.messages[index + 1].content) if t.strip()), "")
        first = re.search(r"\b(?:he|she|his|her|him)\b", answer, re.IGNORECASE)
        head = answer[:first.start()] if first else ""
        if first and not KIN_WORD.search(head) and not any(n in transcript.names for n in CAPITALIZED.findall(head)):
            said.add("He" if first[0].lower() in HIS else "She")
    return said.pop() if len(said) == 1 else None


IT_LEADS = re.compile(r"It(?P<s>['’]s)?\s+(?=\S)")
SWITCHED_TO = re.compile(r"\b(?:switched|changed|moved|put)\s+(?:(?:me|him|her|them|us)\s+)?(?:over\s+)?"
                         r"(?:to|on(?:to)?)\s+(?:the\s+)?(?P<to>[\w-]+)", re.IGNORECASE)
"""A medicine someone was switched to: "stopped it and switched me to nintedanib" (fresh24)."""


def switched(clause: str) -> bool:
    """Whether a clause says someone was put on another medicine, not naming what they came off (`SWITCHED_TO`): "so
    the neurologist switched me to lacosamide" (fresh27: "Zdeněk is taking levetiracetam" stayed)."""
    return any(medicine_word(m["to"].lower()) for m in SWITCHED_TO.finditer(clause))


THE_THING = re.compile(r"^(?P<thing>(?:(?:The|My|Her|His|Their)\s+)?(?P<word>[A-Za-z][\w-]+))\b")
BODY_PARTS = frozenset("""heart kidney kidneys liver lung lungs skin spleen blood brain stomach bone bones bowel bowels
gut eye eyes ear ears joint joints muscle muscles nerve nerves chest back throat""".split())


def named_thing(before: str, sentence: str) -> str:
    """`sentence` with the "It" it starts with named, when the sentence just before it (`before`
    is its line up to it; no question) starts with a medicine or other health word ("Prednisolone,
    20 mg every morning, started ten days ago. It comes down by 5 mg every four weeks.": qwen1.5b
    kept the second as said, "it" unnamed), or names one condition (`condition_word`, `DIAGNOSES`:
    "I've got gastroparesis. It started after a norovirus"; or one `EPONYM`: "Ménière's disease"), or,
    when the sentence states a dose, the one medicine its line names before it with no question
    between; else as it is. A medicine
    the sentence before says someone was switched to is the "it" (`SWITCHED_TO`: "The pirfenidone
    ..., so ... stopped it and switched me to nintedanib. It gives me diarrhoea"), and the medicine
    it starts with is not when it names another medicine after it. "It's at ..." or "It's on ..." is the one event
    (`EVENTS`) the line names before it, with no question between."""
    said = [t.strip() for t in SENTENCE.split(before) if t.strip()]
    last = said[-1] if said and not said[-1].endswith(("?", "？")) else ""
    found = THE_THING.match(last)
    lead = IT_LEADS.match(sentence)
    assert lead is not None
    if switched := [m["to"] for m in SWITCHED_TO.finditer(last) if medicine_word(m["to"].lower())]:
        return _subject_put(f"The {switched[-1]}", " " + sentence[lead.end():], bool(lead["s"]))
    if found and health_word(found["word"].lower()) and not {
            w for w in words(last) if medicine_word(w) and w != found["word"].lower()} and not (
            found["thing"] != found["word"] and found["word"].lower() in BODY_PARTS):
        # not a part of someone's body: "His heart has a narrowing too, pulmonary stenosis. It was found in 2020"
        # (fresh36: "His heart was found in 2020"); the condition the sentence names is meant
        return _subject_put(found["thing"], " " + sentence[lead.end():], bool(lead["s"]))  # "It's been stopped"
    # the one condition the sentence before names (fresh19: "I've got gastroparesis, my stomach's basically on a
    # permanent go-slow. It started after a horrible norovirus in 2023 and never bounced back.")
    named = {w for w in words(said[-1]) if condition_word(w) or w.startswith(DIAGNOSES)} \
        if said and not said[-1].endswith(("?", "？")) else set()
    if len(named) == 1:
        return _subject_put(f"The {named.pop()}", " " + sentence[lead.end():], bool(lead["s"]))
    # the one disease or syndrome named after someone (fresh25: "I have Ménière's disease in my right ear: attacks of
    # vertigo, ... It was diagnosed in 2022", kept unnamed)
    eponyms = {m["c"] for m in EPONYM.finditer(said[-1])} if said and not said[-1].endswith(("?", "？")) else set()
    if not named and len(eponyms) == 1:
        return _subject_put(eponyms.pop(), " " + sentence[lead.end():], bool(lead["s"]))
    # a dose of the one medicine the line names before it, with no question between (fresh16: "But it
    # messed with the clozapine. ... So it's two hundred and fifty milligrams now.")
    asked = max((k for k, t in enumerate(said) if t.endswith(("?", "？"))), default=-1)
    named = {w for t in said[asked + 1:] for w in words(t) if medicine_word(w)}
    if len(named) != 1 or not doses(with_digits(sentence)):
        # an event the line names before it, once, when the sentence says where or when it is: "I'm going to have a
        # bone marrow transplant! ... It's at Groote Schuur in Cape Town, on the 9th of November." (fresh33)
        events = {w for t in said[asked + 1:] for w in words(t) if w in EVENTS}
        if len(events) != 1 or not lead["s"] or not IT_IS_WHEN.match(sentence, lead.end()):
            return sentence
        event = events.pop()
        told = " ".join(said[asked + 1:])
        owner = "My" if re.search(rf"\b(?:I|my)\b[^.!?]*\b{event}", told, re.IGNORECASE) else "The"
        return _subject_put(f"{owner} {event}", " " + sentence[lead.end():], True)
    return _subject_put(f"The {named.pop()}", " " + sentence[lead.end():], bool(lead["s"]))


EVENTS = frozenset("""transplant operation surgery procedure scan biopsy appointment infusion wedding party concert
interview exam funeral christening birthday graduation trip flight""".split())
"""Things that happen somewhere on a day, which an "It's on the 9th" is of."""
IT_IS_WHEN = re.compile(r"(?:at|on|in)\s+(?:the\s+)?(?:\d|(?-i:[A-Z]))", re.IGNORECASE)
"""Where or when, after "It's": "at Groote Schuur", "on the 9th of November", "in June"."""


IT_IS_DAY = re.compile(r"\s*(?:(?:at|on|in)\s+(?:the\s+)?(?:\d|(?-i:[A-Z]))|(?:this\s+|next\s+)?(?:monday|tuesday"
                       r"|wednesday|thursday|friday|saturday|sunday)\b|next\s+(?:week|month)\b|tomorrow\b"
                       r"|the\s+\d)", re.IGNORECASE)
"""When, after "It's": "on the 9th", "Saturday next week", "tomorrow"."""


def asked_event(transcript: Transcript, index: int, at: int, sentence: str) -> str | None:
    """`sentence` (at `at` in line `index`), an "It's" saying when, with its "It" named as the one event (`EVENTS`)
    the assistant's line before it names, whose its "his" or "her" or "your" says (`pronoun_person`, the speaker):
    "His birthday must be coming up. A trampoline park party, perhaps?" -- "No trampolines, I said: his spleen. It's
    Saturday next week, he turns seven" (fresh36: "His spleen is Saturday next week"); None otherwise, or when the
    line names an event before it."""
    lead = IT_LEADS.match(sentence)
    if lead is None or not lead["s"] or not IT_IS_DAY.match(sentence, lead.end()):
        return None
    message, asked = transcript.messages[index], transcript.messages[index - 1].content
    said = [w for t in SENTENCE.split(asked) if not t.strip().endswith("?") for w in words(t)]
    events = {w for w in said if w in EVENTS}
    if len(events) != 1 or any(w in EVENTS for w in words(message.content[:at])):
        return None
    event = events.pop()
    whose = re.search(rf"\b(his|her|your)\s+{event}\b", asked, re.IGNORECASE)
    owner = whose[1].lower() if whose else ""
    who = message.name if owner == "your" else pronoun_person(transcript, index, at, "He" if owner == "his" else
                                                             "She") if owner else None
    return _subject_put(f"{who}'s {event}" if who else f"The {event}", " " + sentence[lead.end():], True)


def _subject_put(name: str, rest: str, s: bool) -> str:
    """`name` in place of the pronoun a sentence starts with, `rest` the words after it (after its
    "'s" when `s`): "Nomvula is" for "She's", or "Nomvula's" before a participle ("She's had
    anaphylaxis", "She's called twice")."""
    if not s:
        return name + rest
    after = [w for w in words(rest) if w not in ADVERBS][:1]  # the word after "'s" and any adverb
    return name + ("'s" if after and (after[0] in PARTICIPLES or after[0].endswith("ed")) else " is") + rest


CARERS_DID = re.compile(r"They(?:\s+(?:have|had|will)\s+|['’](?:ve|d|ll)\s+|\s+)(?P<verb>gave|given|put|took|taken|found"
                        r"|started|stopped|switched|changed|removed|diagnosed|fitted|implanted|operated?|admitted"
                        r"|discharged|prescribed|upped|doubled|halved|lowered|raised|increased|reduced|scanned|tested"
                        r"|cut|drained|injected|transfused|ruled|caught|warned|referred|booked|scheduled|arranged"
                        r"|heard|spotted|detected|picked\s+up"
                        r"|did a (?:\w+ )?(?:biopsy|scan|test|transplant|operation|procedure))\b")
"""A sentence opening with what "they" did to someone in care ("They put a pacemaker in, on the 16th of last
month", "They gave me five days of IV methylprednisolone", "They've warned the team for the CT": fresh19; "They'll
operate", "They did a kidney biopsy": fresh20): the
people who treat them, not anyone the
conversation named (fresh18: qwen1.5b kept four such sentences, dropped as starting with a pronoun or stored
starting with "They")."""
PLURAL_PEOPLE = re.compile(r"\b(?:parents|kids|children|boys|girls|twins|grandparents|folks|family|friends|neighbours"
                           r"|neighbors|sisters|brothers|sons|daughters|they|them|both|[A-Z][a-z]+\s+and\s+[A-Z][a-z]+)\b")
"""Words in the sentence before a "They" that make it people the speaker named: "My parents live in Leeds. They
took me in"."""


def carers_named(before: str, sentence: str) -> str:
    """`sentence` with the "They" it opens with (`CARERS_DID`) as "The doctors", when it or the
    sentence before it (in `before`, its line up to it) has a health word and that sentence names
    no people "they" could be (`PLURAL_PEOPLE`); else as it is."""
    if not CARERS_DID.match(sentence):
        return sentence
    said = [t.strip() for t in SENTENCE.split(before) if t.strip()]
    last = said[-1] if said else ""
    if PLURAL_PEOPLE.search(last) or not any(health_word(w) for w in words(f"{last} {sentence}")):
        return sentence
    rest = sentence[len("They"):]
    short = re.match(r"['’](ve|d|ll)\b", rest)
    return "The doctors" + ({"ve": " have", "d": " had", "ll": " will"}[short[1]] + rest[short.end():] if short
                            else rest)


def found_at(line: str, sentence: str) -> int:
    """Where `sentence` stands in `line`: as it is, or as `said_whole` kept it (its ";" made a ".",
    its lead-in gone: "He died of emphysema in 2011." of "... too late. He died of emphysema in
    2011; he was fifty-four."); -1 when it is not there."""
    if (at := line.find(sentence)) >= 0:
        return at
    core = sentence.rstrip(".!?;:, ")
    if len(core) < 3:
        return -1
    if (at := line.find(core)) >= 0:
        return at
    return line.find(core[0].lower() + core[1:])


OBJECT_PRONOUN = re.compile(r"\b(?P<pronoun>him|her)\b(?=\s*[,.;:!?]|\s*$|\s+(?:on|at|in|every|each|if|when|first"
                            r"|and|or|today|tonight|tomorrow|next|once|twice|about|for|to|after|before|again|now|then"
                            r"|the|an?)\b)")
""""him" or "her" as the object of a sentence ("I see him on the 2nd", "ring her if", "I see her the day after
tomorrow"), not "her" before a noun."""
TITLE_WORDS = frozenset(t.rstrip(".") for t in TITLES) | frozenset("Doctor Miss Professor Nurse Sister".split())
TITLED = rf"(?:(?:{'|'.join(TITLE_WORDS)})\.?\s+)?"


PLACE_BEFORE = re.compile(r"\b(?:in|at|from|near)\s+(?:[A-ZÀ-ÖØ-Þ][^\W\d_]+\s+)?$")
"""What a place is said after ("... a neurologist at the CHU in Brest", "an immunologist at Chong Hua": fresh34)."""


def object_named(transcript: Transcript, before: str, sentence: str) -> str:
    """`sentence` with the one "him" or "her" it says (`OBJECT_PRONOUN`) as the one person the
    sentence before it in its line names (`before`: the line up to it; no question), title and
    all ("My new haematologist down here is Dr Tregear; I see him on the 2nd of next month":
    fresh18 kept "Dalit sees him on the 2nd", whom?); as it is when the sentence names anyone,
    the one before names no one or two (a place it is "in" or "at" is no one), or a relation there says the other
    gender."""
    found = list(OBJECT_PRONOUN.finditer(sentence))
    said = [t.strip() for t in SENTENCE.split(before) if t.strip()]
    if len(found) != 1 or not said or said[-1].endswith(("?", "？")):
        return sentence
    known = transcript.names
    if {n for n in CAPITALIZED.findall(sentence) if n in known and n not in TITLE_WORDS}:
        return sentence
    # one person's whole name is one name ("Dr Steinunn Ólafsdóttir, a haematologist at Landspítali": fresh35)
    names = {m[0] for m in CAPITALIZED.finditer(said[-1]) if m[0] in known and m[0] not in TITLE_WORDS
             and not PLACE_BEFORE.search(said[-1][:m.start()])  # "Dr Kerjean, a neurologist at the CHU in Brest"
             and not re.search(rf"\b(?!(?:{'|'.join(TITLE_WORDS)})\b)[A-ZÀ-ÖØ-Þ][^\W\d_]+\s+$", said[-1][:m.start()])}
    other = FEMALE if found[0]["pronoun"] == "him" else MALE
    if len(names) != 1 or other & set(words(said[-1])) or (HERS if other is FEMALE else HIS) & set(words(said[-1])):
        return sentence
    name = next(iter(names))
    titled = re.search(rf"\b{TITLED}{re.escape(name)}\b(?:\s+[A-ZÀ-ÖØ-Þ][^\W\d_]+\b(?!\s*['’]))*", said[-1])
    return sentence[:found[0].start()] + (titled[0] if titled else name) + sentence[found[0].end():]


def object_copied(text: str, transcript: Transcript, sources: Sequence[int]) -> str:
    """A memory with the one "him" or "her" it says (`OBJECT_PRONOUN`, two words or more after it) named as
    `object_named` names it in the sentence of a cited person's line (or one beside it) the memory copies from the
    pronoun on ("Dr Kerjean, a neurologist at the CHU in Brest. I see her the day after tomorrow for my blood results"
    -> "Maïwenn sees her the day after tomorrow ...": fresh30, qwen1.5b; whom?); otherwise as it is."""
    found = list(OBJECT_PRONOUN.finditer(text))
    after = words(text[found[0].end():])[:3] if len(found) == 1 else []
    if len(after) < 2:
        return text
    key = re.compile(rf"\b{found[0]['pronoun']}\s+" + r"\W+".join(map(re.escape, after)) + r"\b", re.IGNORECASE)
    if (copied := copied_sentence(key, transcript, sources)) is None:
        return text
    before, said, _ = copied
    named = object_named(transcript, before, said)
    at = OBJECT_PRONOUN.search(said)
    if named == said or at is None:
        return text
    who = named[at.start():len(named) - len(said) + at.end()]
    return text[:found[0].start()] + who + text[found[0].end():]


def copied_sentence(key: re.Pattern[str], transcript: Transcript,
                    sources: Sequence[int]) -> tuple[str, str, int] | None:
    """The first sentence `key` finds in a person's line a memory cites (or one beside it: a small model's sources
    are often off by one), with its line up to it and the line's index; None when none."""
    for i in [*(j for j in sources if 0 <= j < len(transcript.messages)), *beside(sources, len(transcript.messages))]:
        line = transcript.messages[i]
        said = next((t for t in SENTENCE.split(line.content) if key.search(t)), None) if line.role == "user" else None
        if said is not None:
            return line.content[:line.content.find(said)], said, i
    return None


IT_OBJECT = re.compile(r"\b(?:stop|stopping|stopped|take|taking|start|starting|started|began|begun|skip|skipping"
                       r"|miss|missing|crush|chew|halve|halved|double|doubled|raised|lowered|increased|reduced|upped"
                       r"|cut|put|with|on|off|without|use|used|using|tried|trying)\s+(?P<it>it)\b(?!['’])")
"""An "it" a medicine is said as, after what is done to it ("never to stop it suddenly", "raised it to 90
milligrams", "I've never used it")."""


IT_DOSE = re.compile(r"\b[Ii]t['’]s(?=\s+(?:now\s+)?\d+(?:\.\d+)?\s*"
                     r"(?:mg|milligrams?|micrograms?|mcg|units?|ml|grams?)\b)")
"""A dose said of "it": "since the 12th of May it's 0.2 milligrams at night"."""


def it_copied(text: str, transcript: Transcript, sources: Sequence[int]) -> str:
    """A memory with the one "it" it says (`IT_OBJECT`) named as `named_thing` names a sentence starting with it in the
    cited person's line (or one beside it) the memory copies it from: "Ruxolitinib, Jakavi, 15 milligrams twice a day.
    Dr Altantsetseg told me never to stop it suddenly" -> "... told Ganzorig never to stop it suddenly" (fresh31,
    qwen1.5b: what not to stop, the memory did not say); a dose said of "it" (`IT_DOSE`), with the one medicine the
    question before its line names; otherwise as it is."""
    found = list(IT_OBJECT.finditer(text))
    if len(re.findall(r"\bit\b", text, re.IGNORECASE)) != 1:
        return text
    if (dose := IT_DOSE.search(text)) is not None:  # of the one medicine asked about ("Any change to the
        # desmopressin?" -- "... since the 12th of May it's 0.2 milligrams at night": fresh33)
        key = re.compile(r"\b" + r"\W+".join(map(re.escape, words(text[dose.start():])[:4])) + r"\b", re.IGNORECASE)
        if (said := copied_sentence(key, transcript, sources)) is None:
            return text
        asked = asked_medicine(asked_before(transcript.messages, said[2]), said[1])
        return text[:dose.start()] + f"the {asked} is" + text[dose.end():] if asked else text
    if len(found) != 1:
        return text
    lead = words(text[:found[0].start("it")])[-1:]
    after = words(text[found[0].end("it"):])[:2]
    key = re.compile(r"\b" + r"\W+".join(map(re.escape, [*lead, "it", *after])) + r"\b", re.IGNORECASE)
    if (copied := copied_sentence(key, transcript, sources)) is None:
        return text
    named = named_thing(copied[0], "It is.")
    question = asked_before(transcript.messages, copied[2])
    if named == "It is." and (asked := asked_medicine(question, copied[0])):
        named = f"{asked} is."  # "How is the burosumab going?" "Dr Asamoah raised it to 90 ..." (fresh31)
    told = [t.strip() for t in SENTENCE.split(copied[0]) if t.strip()]
    prior = offered(transcript.messages, copied[2])
    if named == "It is." and told and not told[-1].endswith(("?", "？")) and (first := THE_THING.match(told[-1])) \
            and first["word"].lower() in set(words(prior)) - STARTERS - PRONOUNS - FILLER:
        # the thing the question asks about that the sentence before starts with: "Would cannabis oil help with the
        # nausea?" -- "No. Cannabis can cause vomiting just like mine ... I've never used it." (fresh35)
        lower = re.search(rf"\b{re.escape(first['word'].lower())}\b", prior)
        named = f"{first['thing'].lower() if lower and first['thing'] == first['word'] else first['thing']} is."
    if named == "It is." or (thing := named[:-len(" is.")]).lower() in text.lower():
        return text
    thing = thing[0].lower() + thing[1:] if thing.startswith("The ") else thing
    return text[:found[0].start("it")] + thing + text[found[0].end("it"):]


def offered(messages: Sequence[Message], index: int) -> str:
    """The assistant's line just before line `index` (whatever it ends with: "Would cannabis oil help? Some people try
    it."), or ""."""
    return messages[index - 1].content if 0 < index < len(messages) and messages[index - 1].role == "assistant" else ""


def asked_medicine(question: str, said: str) -> str | None:
    """The one medicine a question names (a word, lower case), when what answers it (`said`) names none: what its
    "it" is ("Any change to the desmopressin?" -- "... it's 0.2 milligrams at night": fresh33); else None."""
    if any(medicine_word(w) for w in words(said)):
        return None
    named = {w for w in words(question) if medicine_word(w)}
    return named.pop() if len(named) == 1 else None


def led_in(transcript: Transcript, index: int, sentence: str, text: str) -> str:
    """`text` (`sentence` of line `index`, its subject named where code could) after the sentences
    before it in its line that say what its leading "It", "That" or "They" is, when it still
    starts with one ("He" or "She" is for `named_subject`, or the repair), or otherwise needs
    what is before it (`needs_before`): the closest one before it that needs nothing, and any
    between (at most three; no question, no fragment). A repair call mended none of 23 sentences
    kept as said that start with a pronoun (fresh20, qwen1.5b: "It makes me pee like a
    racehorse, so I drink three to four litres of water a day" was dropped). Otherwise `text`
    as it is."""
    message = transcript.messages[index]
    at = found_at(message.content, sentence)
    if not needs_before(text) or at < 0 or CJK_CHAR.search(text):
        return text  # "He's eight" after "Nico and Leo": whose, the sentences before do not say
    taken: list[str] = []
    head = message.content[:at].rstrip()
    pieces = [t.strip() for t in SENTENCE.split(head) if t.strip()]
    if pieces and not head.endswith((".", "!", "?", ";", "。", "！", "？", "；")):
        pieces.pop()  # its lead-in ("So", "But", "Yes,": "So that's the opposite ..." kept from "that's")
    for before in reversed(pieces):
        if before.endswith(("?", "？")) or len(taken) == 3:
            break
        if fragment(without_lead_in(before)):  # "Agreed, 3:45 it is. It was ...": none says what "it" is
            break
        taken.insert(0, before)
        if words(before) and not needs_before(before):  # "She has seizures. If one lasts ...": whom it names
            return " ".join([named_subject(transcript, index, taken[0]), *taken[1:], text])
    return text


KIND_FIRST = re.compile(r"^(?:type|stage|grade|class)\s+(?:\d+|[IV]+|one|two|three|four)\s*[,:;]", re.IGNORECASE)
"""A sentence that starts with which kind of what the one before says: "Type 2, on metformin." after "And the diabetes
in this house is mine as well." (fresh35: the husband's, kept alone under his wife)."""
SAYS_AGAIN = re.compile(r"^(?:the\s+)?same\b|,\s*(?:the\s+)?same[.!]?$", re.IGNORECASE)
"""A sentence that says "the same" of what the one before says: "Same if I get a headache with vomiting.", "The same
with grapefruit.", "Proper blood in my pee, same." (fresh20: each kept without what the same was)."""
SCHEDULE_FIRST = re.compile(r"^(?:every|once|twice|three\s+times|daily|each)\b", re.IGNORECASE)
DONE_IT = re.compile(r"(?:I|We)(?:['’]ve|\s+have)?\s+(?:done|do|give|given|manage|managed|inject|injected)\s+it\s+"
                     r"(?:myself|ourselves|at\s+home|alone|on\s+my\s+own)\b")
"""A sentence of what the one before says, done by the speaker: "I've done it myself since 2019." after "Immunoglobulin
under the skin, every Sunday night: ..." (fresh34: kept as "Jomar has done it Jomar since 2019")."""
ONE_AGAIN = re.compile(r"^(?:the\s+)?(?:first|next|last|second|new)\s+(?:(?:one|time|visit)\b"
                       r"|(?:was|is|will|comes|came|went)\s)"
                       r"|^(?:if|when|whenever|once)\s+one\b(?!\s+of\b)"
                       r"|^the\s+one\s+(?:I|we|you|he|she|they)\s+(?:did|had|sent|took|posted|gave|got)\b",
                       re.IGNORECASE)
"""A sentence about "the next one" of what the one before says: "The next one is on the 3rd of next month." after "So
I have a urine test every six months" (fresh20: too short to keep for its date, and of nothing alone), "the last was
on the 2nd of September" after "... degarelix injections instead, 80 milligrams every four weeks;" (fresh27), "If one
lasts more than five minutes, give buccal midazolam" after "She has seizures." (fresh29: kept with no seizure), "The one
I did last Monday came back at 610" after "I prick a blood spot card at home every month" (fresh33)."""


SINCE_THEN = re.compile(r"^(?:since|after|before|until|till)\s+(?:then|that)\b"
                        r"(?!\s+(?:one|day|week|month|year|time)\b)", re.IGNORECASE)
"""A sentence that counts from what the one before says: "Since then only one, on the 14th of August, and it lasted a
day." after "The episodes came every three weeks in spring, so ... raised the amitriptyline to fifty milligrams."
(fresh35: kept alone, one what?)."""


LATE_SUBJECT = re.compile(r"[a-z](?:[^\W\d_]|\s){0,40}?\b(?:they|it)(?:['’](?:re|s|ll|d)\b|\s+(?:are|is|were|was|will"
                          r"|have|has)\b)")
"""A clause cut from its sentence (at a ";" or ":") whose subject "they" or "it" comes after a few words: "after
the first three they're every eight weeks" (fresh31: kept as said, what "they" are it did not say)."""


SAYS_NO = re.compile(r"^(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?(?:[\w'’-]+\s+){0,3}(?:says|said|agrees|agreed)\s+"
                     r"(?:no|not|so|yes)\s*[.!]?$", re.IGNORECASE)
"""A sentence that says only that someone said no (or so) to what the one before says: "Vitamin C makes me absorb
more iron; Dr Savvides says no." (fresh36: kept alone as "Dr Savvides says no.")."""


def needs_before(sentence: str) -> bool:
    """Whether a sentence says what only the one before it tells: it starts with "it", "that" or
    "they" (`pronoun_led`; "he" and "she" name a person the sentences before may not), says "the
    same" (`SAYS_AGAIN`) or "the next one" (`ONE_AGAIN`), or starts with a dose or how often and
    names no medicine ("Sixty milligrams when I wake up" after "Tolvaptan, the brand's Jinarc.";
    "Every day for life" after "Colchicine, one milligram a day": fresh20), or which kind (`KIND_FIRST`), or counts from
    what the one before says (`SINCE_THEN`)."""
    lead = without_lead_in(sentence)
    if pronoun_led(lead, PRONOUNS - THIRD_PERSON) or SAYS_AGAIN.search(lead.strip()) or ONE_AGAIN.match(lead) \
            or LATE_SUBJECT.match(sentence) or DONE_IT.match(lead) or KIND_FIRST.match(lead) or SINCE_THEN.match(lead) \
            or SAYS_NO.match(lead):
        return True
    dose = DOSE.match(with_digits(lead)) or SCHEDULE_FIRST.match(lead)
    return bool(dose) and not any(medicine_word(w) or w.startswith(NAMED_MEDICINES) for w in words(lead))


FILLER_LEADS = frozenset("and but so oh also well".split())
"""Words a lead-in may start with before what it says: "And no alcohol:" rules out alcohol (fresh33)."""
FILLERS_FIRST = re.compile(r"^(?:(?:" + "|".join(FILLER_LEADS) + r")\b,?\s+)+", re.IGNORECASE)


def without_lead_in(sentence: str) -> str:
    """A sentence without its lead-ins (`LEAD_IN`: "But", "Agreed,", "Oh, and"); not one naming a health word
    ("Erythromycin:")."""
    while (lead := LEAD_IN.match(sentence)) is not None and lead.end():
        if lead.group().rstrip().endswith(":") and (any(health_word(w) for w in words(lead.group()))
                                                    or [w for w in words(lead.group()) if w not in FILLER_LEADS][:1]
                                                    in (["no"], ["never"], ["not"])):
            # "Erythromycin: in 2018 his face swelled up, so he's allergic to it" (fresh28): what it is of;
            # "No estrogen: the pill sends triglycerides up" (fresh32): what is ruled out ("And no alcohol:", its "And")
            return FILLERS_FIRST.sub("", sentence)
        sentence = sentence[lead.end():]
    return sentence


def pronoun_led(sentence: str, pronouns: Collection[str] = PRONOUNS) -> bool:
    """Whether a sentence starts with one of `pronouns`, after any lead-in ("But they found ...")."""
    said = words(without_lead_in(sentence))
    return bool(said) and said[0] in pronouns


def named_subject(transcript: Transcript, index: int, sentence: str) -> str:
    """`sentence` (of line `index`) with the "He" or "She" it starts with named, when what comes
    before says whom it is: the closest sentence before it in its line that names anyone (no
    question) has one subject it can be, its last clause that names someone starting with that
    name ("Sifiso knows, and my partner Nomvula is coming along. She's my emergency contact":
    Nomvula), not one of two ("Sifiso and Nomvula are"), no relation saying otherwise ("my
    husband Kofi ... She"), no sentence between starting with the other pronoun, and the
    assistant's line just before naming no one else; else, when no sentence before it in its line
    names anyone, that line naming one person ("And Mere?" -- "She has eczema"). A name is a
    capitalized word the conversation writes inside a sentence somewhere (not "Nervous, but
    OK."). Not when its line says "he", "his" or "him" before a "She" (or "her" before a "He"), unless
    a sentence after that one names someone.
    Otherwise `sentence` as it is (the repair's to mend). "She's" becomes "Nomvula is", or
    "Nomvula's" before a participle ("He's had anaphylaxis", "She's called twice"). A sentence
    starting with "It" names the medicine the sentence before starts with (`named_thing`)."""
    lead = HE_OR_SHE.match(sentence)
    timed = None if lead else TIME_LED.match(sentence)
    if timed:  # "On the 29th she turns twelve" (fresh29)
        lead = HE_OR_SHE.match(sentence, timed.end())
    message = transcript.messages[index]
    at = found_at(message.content, sentence)
    if (they := re.match(r"(?:They|It)\b", sentence)) and message.role == "user" and index and at >= 0 \
            and re.fullmatch(r"\s*No,\s*", message.content[:at]) \
            and (thing := thing_offered(transcript.messages[index - 1].content)):
        return thing[:1].upper() + thing[1:] + sentence[they.end():]  # "No, they thin the blood" (`thing_offered`)
    if CARERS_DID.match(sentence) and message.role == "user" and at >= 0:
        return carers_named(message.content[:at], sentence)
    if IT_LEADS.match(sentence) and message.role == "user" and at >= 0:
        thing = named_thing(message.content[:at], sentence)
        asked = transcript.messages[index - 1] if index else None
        offered = asked_medicine(asked.content, message.content[:at]) if thing == sentence and asked and \
            asked.role == "assistant" else None
        if offered:  # "There's a newer Rett medicine, trofinetide. Would you ask ...?" -- "We talked about
            lead = IT_LEADS.match(sentence)  # it. It isn't available here" (fresh29: kept as "It isn't ...")
            assert lead is not None
            return _subject_put(offered.capitalize(), " " + sentence[lead.end():], bool(lead["s"]))
        if thing == sentence and asked and asked.role == "assistant" and (event := asked_event(
                transcript, index, at, sentence)):
            return event  # "His birthday must be coming up." -- "... It's Saturday next week, he turns seven" (fresh36)
        return thing
    if not lead and message.role == "user" and at >= 0 and (owned := TIME_OWNED.match(sentence)) \
            and (who := pronoun_person(transcript, index, at, "He" if owned["own"].lower() == "his" else "She")):
        return f"{owned['time']}{who}'s {sentence[owned.end():]}"  # "Last Friday his nose bled" (fresh36)
    if not lead and message.role == "user" and at >= 0 and not re.match(r"(?:[Ss]he|[Hh]e)\b", sentence):
        # not "She ? her" (hypothesis): a sentence led by "she" or "he" with no word after is not one to name within
        return object_named(transcript, message.content[:at], subject_given(transcript, index, sentence))
    if not lead or message.role != "user" or at < 0 or sentence.endswith(TITLES):
        return sentence  # "He's Dr." of "He's Dr. Nwosu with clients": a sentence cut at a title
    name = pronoun_person(transcript, index, at, lead["pronoun"].capitalize())  # "he's" after a semicolon
    if name is None:
        return sentence
    named = _subject_put(name, sentence[lead.end("s" if lead["s"] else "pronoun"):], bool(lead["s"]))
    return timed[0] + named if timed else named


_TIME_LEAD = (r"(?:(?:And|But|So)\s+)?(?:(?:On|In|By|From|Since|Until|Before|After)\s+(?:the\s+)?[^\W_]+"
              r"(?:\s+of\s+[^\W\d_]+)?|(?:Last|Next|This)\s+[^\W\d_]+|Tomorrow|Today|Yesterday|Tonight),?\s+")
TIME_LED = re.compile(_TIME_LEAD + r"(?=(?:[Ss]he|[Hh]e)\b)")
"""A time a sentence starts with, before its "she" or "he": "On the 29th she turns twelve", "In June he starts"."""
TIME_OWNED = re.compile(rf"(?P<time>{_TIME_LEAD})(?P<own>[Hh]is|[Hh]er)\s+(?=[^\W\d_])")
"""A time a sentence starts with, before whose: "Last Friday his nose bled for forty minutes" (fresh36)."""


WHO_IS = re.compile(r"\bWho(?:['’]s|\s+is)\s+(?:(?P<title>Dr|Mr|Mrs|Ms|Prof)\.?\s+)?"
                    r"(?P<name>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\s*\?\s*$")
"""A question of who someone is: "Who is Dr Aliyeva?"."""


def pronoun_person(transcript: Transcript, index: int, at: int, pronoun: str) -> str | None:
    """Whom `pronoun` ("He" or "She") at `at` in line `index` is, as `named_subject` reads it: the
    subject of the closest sentence before it in its line that names anyone, or the one person the
    assistant's question just before names, or the one person of that gender introduced with a
    relation (`the_one_related`) when a sentence before names no one, or one of the other gender
    ("my mother Amparo, his abuela, who lives with us. His dad ..."), or says "they" ("They make
    Dravet seizures much worse. And he's allergic to eggs": fresh25); None when it cannot be told."""
    known = transcript.names
    other = "He" if pronoun == "She" else "She"
    asked = transcript.messages[index - 1] if index and transcript.messages[index - 1].role == "assistant" else None
    named = {m for m in CAPITALIZED.findall(asked.content) if m in known} if asked else set()
    name = None
    before = transcript.messages[index].content[:at]
    # a speaker is no "he" to themselves: "I'm Khulan, the nurse ... I take his blood" (fresh31)
    speaking = set(CAPITALIZED.findall(transcript.messages[index].name or ""))
    theirs = HIS if other == "He" else HERS
    # the one asked about, when the line names no one before it ("Who is Dr Aliyeva?" -- "His metabolic doctor ... She
    # sees him in three weeks": fresh33)
    if asked and (who := WHO_IS.search(asked.content)) and who["name"] in known \
            and not any(m in known for m in CAPITALIZED.findall(before)):
        return f"{who['title']} {who['name']}" if who["title"] else who["name"]
    since = [t for t in SENTENCE.split(before) if t.strip()]
    while since and not theirs & set(words(since[0])):
        since.pop(0)
    lead = SUBJECT_NAME.match(since[0].strip()) if since else None
    # one named after the other pronoun in its own sentence is the one meant ("If she doesn't answer, my younger
    # brother Phúc; his number is ...": fresh31)
    after = re.split(rf"\b(?:{'|'.join(theirs)})\b", since[0], flags=re.IGNORECASE)[-1] if since else ""
    if since and not any(m in known for t in [after, *since[1:]] for m in CAPITALIZED.findall(t)) and not (
            lead and lead["name"] in known and (lead["rel"] or "").casefold() not in (MALE if pronoun == "She" else
                                                                                      FEMALE)):
        # "Back at work today, his first shift. She's called twice": not him; but "My husband Sorin ..., he
        # does the early shifts. Our daughter Ioana is nine. She has a peanut allergy" (fresh24): Ioana; and "My wife
        # Huia is his main carer; she's a physiotherapist" (fresh26): the sentence with "his" is Huia's
        return None
    for said in reversed([t.strip() for t in SENTENCE.split(before)]):
        if not said or said.endswith(("?", "？")):
            continue
        if re.match(rf"{other}\b", said):
            return None  # "She ... He ...": the referent changed
        # a clause giving another name of someone named before it is no one new ("My mother,
        # Rosario, though everyone calls her Doña Chayo": fresh14)
        clauses = [c.strip() for c in SUBJECT_CLAUSE.split(said)]
        # a place is no one ("Dr Jayasuriya, at the teaching hospital in Kandy, on Monday the 29th. She wants ...":
        # fresh34)
        naming = [k for k, c in enumerate(clauses) if {m for m in CAPITALIZED.findall(c) if m in known
                                                       and not re.search(rf"\b(?:in|at|from|to|near)\s+(?:the\s+)?"
                                                                         rf"{re.escape(m)}\b", c)} - speaking
                  and not (k and (ALIAS.search(c) or APPOSITIVE.match(c)))]
        if not naming:
            continue
        k = naming[-1]
        found = SUBJECT_NAME.match(clauses[k])
        if found and found["name"].casefold() in NOT_NAMES:
            found = None  # "They make Dravet seizures much worse. And he's allergic to eggs" (fresh25)
        rel = (found["rel"] or "").casefold() if found else ""
        unlike = rel in (FEMALE if pronoun == "He" else MALE)
        if (not found or found["name"].split()[-1] not in known or unlike
                or k and SUBJECT_NAME.fullmatch(clauses[k - 1])):  # "Sifiso and Nomvula are": which?
            if (not found or unlike) and (related := the_one_related(transcript, index, at, pronoun)
                                          or topic_person(transcript, pronoun)):
                name = related  # "I need somewhere to keep my daughter Yasmin's details. She's four"
                break
            if not found and (only := the_only_object(clauses[k], known - speaking)) \
                    and gender_said(transcript, only) != other:
                name = only  # "I married Marios on the 12th of September. He's a civil engineer." (fresh36)
                break
            return None
        if len(named) == 1 and found["name"] not in named:
            return None  # "And Mere?" -- "Wiremu is fine. She has eczema": which?
        name = found["name"]
        break
    else:
        if len(named) == 1:
            name = named.pop()
        elif named or not (name := the_one_related(transcript, index, at, pronoun)
                           or topic_person(transcript, pronoun) or spoken_of(transcript, index, pronoun)):
            return None
    return name


I_DID = re.compile(r"^(?:(?:And|So|But|Then)\s+)?(?:I|We)\s+(?:(?:just|finally|also)\s+)?[a-z]+ed\s+")


def the_only_object(clause: str, known: Collection[str]) -> str | None:
    """The one person (of `known`) a clause in which the speaker did something names as whom it was done to, right
    after its verb in "-ed": "I married Marios on the 12th" (not "I met Ana and Luis"); None otherwise."""
    did = I_DID.match(clause)
    if did is None:
        return None
    names = [n for n in CAPITALIZED.findall(clause) if n in known]
    return names[0] if len(names) == 1 and clause[did.end():].startswith(names[0]) else None


def spoken_of(transcript: Transcript, index: int, pronoun: str) -> str | None:
    """Whom "he" or "she" (`pronoun`) in line `index`, of a speaker who names no one before it, is when the talk has
    one other person speaking before it whom it does not say is of the other gender (`gender_said`): a nurse or relative speaks of the one they came with ("I'm Khulan, the nurse from the family health
    centre. I take his blood every Monday. His haemoglobin yesterday was 78": fresh31, of Ganzorig, beside his
    daughter Oyuna); None when none or more than one could be, or the line is no named speaker's."""
    speaker = transcript.messages[index].name
    if not speaker or transcript.messages[index].role != "user":
        return None
    other = "She" if pronoun == "He" else "He"
    before = {m.name for m in transcript.messages[:index] if m.role == "user" and m.name and m.name != speaker}
    ones = [n for n in before if gender_said(transcript, n.split()[0]) != other]
    return ones[0].split()[0] if len(ones) == 1 else None


WORK_ASKED = re.compile(r"\bwhat\s+do\s+you\s+do\b|\bfor\s+(?:work|a\s+living)\b|\byour\s+(?:job|work)\b"
                        r"|\bwhat(?:['’]s|\s+is)\s+your\s+(?:job|work|line\s+of\s+work)\b", re.IGNORECASE)
WORK_ALONE = re.compile(r"(?:[A-Za-z-]+\s+){0,2}?(?P<job>[A-Za-z-]{2,}(?:er|or|ist|ian)|chef|nurse|cook|midwife|surgeon"
                        r"|mechanic|vet)(?=\s*[,.;]|\s*$|\s+(?:at|in|for|with|on)\b)", re.IGNORECASE)
NOT_WORK = frozenset("""never ever whatever however other another rather either neither together better after over
under later sooner longer bigger smaller harder easier mother father brother sister daughter grandmother grandfather
power water paper number summer winter member matter letter order color colour honour error motor floor door major
minor labour dinner corner border center centre finger answer weather""".split())
"""The question of someone's work, and an answer that is their work alone: "Sheep farmer, four hundred
ewes near Tregaron", "Nurse at the Royal" (not "Better, finally": `NOT_WORK`)."""


LIVE_ASKED = re.compile(r"\bwhere\s+do\s+you\s+(?:live|stay)\b|\bwhere(?:['’]s|\s+is)\s+home\b"
                        r"|\bwhere\s+are\s+you\s+(?:living|staying|based)\b", re.IGNORECASE)
PLACE_LEADS = re.compile(r"(?:(?:Out|Up|Down|Over|Just|Still)\s+)?(?:In|At|On|Near|Outside)\s+(?=\S)")
HOME_LEADS = re.compile(r"(?:An?|Our|My)\s+(?:[a-z-]+\s+){0,2}?(?:flat|house|bungalow|cottage|apartment|maisonette"
                        r"|terrace|caravan|houseboat|farmhouse|studio)\s+(?:in|on|near|outside)\s+(?=[A-ZÀ-ÖØ-Þ])")
"""The question of where someone lives, and an answer that is a place alone: "Where do you live and work?" --
"In a flat in Prospect, in Adelaide." (fresh25: kept with no subject, so "I moved to Geelong" ended nothing), "A flat
in Leith, in Edinburgh." (fresh26: "I moved in with Leander ..., in Portobello" ended nothing)."""


STATE_LEADS = re.compile(r"(?:Allergic|Anaphylactic|Intolerant|Sensitive|Diabetic|Epileptic|Coeliac|Celiac|Asthmatic"
                         r"|Pregnant)\b")
"""A sentence that says a state with no subject: "Anaphylactic to cashews and pistachios."."""
OWNER_LEADS = re.compile(r"(?P<lead>(?:(?:Then|And|Also|Plus|Or)\s+)?)(?P<own>[Hh]is|[Hh]er)\s+(?=[^\W\d_])")
"""A sentence (or the part of one after a semicolon: "...; his number is 0905 318 442": fresh31) led by whose."""
WHEN_WHERE = re.compile(r"^(?:(?:and|so)\s+)?(?:[A-ZÀ-ÖØ-Þ][^\W\d_]+,\s+)?(?:when|where)(?:['’]s|\s+(?P<verb>is|are|was|were))"
                        r"\s+(?!(?:it|that|this|you|he|she|they|we|i)\b)(?P<thing>[^?]{3,60}?)\s*\?$", re.IGNORECASE)
"""A question of when or where something is: "When is the wedding itself?", "Kristjan, when's the surgery?"; not of
a pronoun ("When was it diagnosed?" made "It diagnosed was in 2003, ...": fresh35)."""


AND_THE = re.compile(r"^(?:and|what\s+about|how\s+about)\s+"
                     r"(?P<thing>(?:the|your)\s+[^\s?,]+(?:\s+[^\s?,]+){0,3}?)\s*\?$", re.IGNORECASE)
_DONE = (r"(?:stopped|finished|started|changed|halved|doubled|increased|reduced|raised|lowered|dropped|switched|swapped"
         r"|tapered|cancelled|canceled|postponed)\b")
DONE_LEADS = re.compile(rf"(?:(?P<all>both|all)\s+)?{_DONE}", re.IGNORECASE)
"""A question that asks only after a thing ("And the bicalutamide?"), and an answer that says what was done to it
with no subject ("Stopped in March, as planned.")."""


DOSE_ASKED = re.compile(r"\b(?:dose|doses|dosage|how\s+much)\b", re.IGNORECASE)
DOSE_ALONE = re.compile(rf"^(?P<n>\d{{1,4}}|[a-z]+(?:[- ][a-z]+)?)\s+{DOSE_UNIT}", re.IGNORECASE)
"""A sentence starting with a dose: "Fifteen milligrams, three times a day", "20 mg at night"."""
TAKEN = re.compile(r"\b(?:(?:been|am|I['’]m|is|are|started|put\s+(?:me|him|her)|kept)\s+on|taking|I\s+take|prescribed)"
                   r"\s+(?:the\s+|my\s+)?(?P<med>[a-z][a-z-]{3,})\b", re.IGNORECASE)
"""A medicine someone says they take: "I've been on phenelzine", "taking the metoprolol"."""


def medicine_taken(messages: Sequence[Message]) -> str | None:
    """The one medicine (`TAKEN`) the last person's line of `messages` says someone takes, or None."""
    line = next((m.content for m in reversed(messages) if m.role == "user"), "")
    found = {m["med"].lower() for m in TAKEN.finditer(line)} - COMMON_WORDS - FILLER - TIME_WORDS
    return found.pop() if len(found) == 1 else None


NOW_ITS = re.compile(r"^(?:(?:And|So|But)\s+)?(?:Now|These\s+days|Instead),?\s+it['’]s\s+(?P<rest>\S.*)$",
                     re.IGNORECASE)
"""What someone takes now, said of "it": "Now it's a sumatriptan nose spray, twenty milligrams, ..." (fresh35)."""
_WHO = r"(?:you|(?-i:[A-ZÀ-ÖØ-Þ][^\W\d_]+))"
TAKE_ASKED = re.compile(rf"\bwhat\s+(?:else\s+)?(?:medicines?\s+|medication\s+)?(?:does|do)\s+(?P<who>{_WHO})\s+"
                        rf"(?:take|use)\b|\b(?:does|do)\s+(?P<who2>{_WHO})\s+take\s+anything\b", re.IGNORECASE)
TAKEN_LEADS = re.compile(r"(?P<lead>(?:(?:And|Also|Plus|Then)\s+)?)(?P<thing>[A-Za-z][\w-]*)\b")
TAKEN_THINGS = frozenset("vitamin vitamins supplement supplements drops inhaler inhalers cream injections tablets "
                         "insulin iron zinc folic".split())
HAS_SUBJECT = re.compile(r"\b(?:I|we|he|she|they|it|you|is|are|was|were|has|have|had)\b|['’]", re.IGNORECASE)
"""The question of what someone takes, and an answer's sentence that starts with what (a medicine, or what is taken
as one: `TAKEN_THINGS`) with no subject or verb before its first comma."""


def subject_given(transcript: Transcript, index: int, sentence: str) -> str:
    """`sentence` (of line `index`, a person's; it starts with no "he" or "she") with the subject
    it leaves out (fresh15, qwen1.5b left each out of a memory): a state said alone ("Anaphylactic
    to cashews") is of the one person the sentence before it in its line names, or, when none
    before it names anyone, of the speaker; a "His" or "Her" it starts with is of the one person
    the question just before names, when its line names no one before it ("Is anyone helping
    Ruwan?" "His sister Anoma ..."); a line's first sentence that is a time or a place alone
    answers the question of when or where something is ("When is the wedding itself?" "Next
    Wednesday, at a hotel in Negombo."), or of where the speaker lives ("Where do you live and work?" "In a flat
    in Prospect, in Adelaide."); a dose alone answering the question of the dose is of the
    one medicine the speaker's line before the question says they take ("I've been on phenelzine"
    ... "What's the dose?" "Fifteen milligrams, three times a day.": fresh16). Otherwise as it is."""
    message = transcript.messages[index]
    known = transcript.names
    at = found_at(message.content, sentence)
    before = [t.strip() for t in SENTENCE.split(message.content[:max(at, 0)]) if t.strip()]
    named = [{n for n in CAPITALIZED.findall(t) if n in known} for t in before]
    if STATE_LEADS.match(sentence):
        # the sentence before may start with the name ("Sahan, he's seven."): a capitalized word no other word is
        last = {n for n in CAPITALIZED.findall(before[-1]) if n in known or n.lower() not in
                STARTERS | COMMON_WORDS | FILLER | TIME_WORDS | I_WORDS} if before else set()
        if len(last) == 1:
            who = next(iter(last))
        elif not any(named) and message.name:
            who = message.name
        else:
            return sentence
        return f"{who} is {sentence[0].lower()}{sentence[1:]}"
    asked = asked_before(transcript.messages, index)
    if not before and message.name and DOSE_ASKED.search(asked) and (dose := DOSE_ALONE.match(sentence)) \
            and _count_of(dose["n"]) > 0 and (medicine := medicine_taken(transcript.messages[:index - 1])):
        return f"{message.name} takes {medicine}: {sentence[0].lower()}{sentence[1:]}"
    if (owner := OWNER_LEADS.match(sentence)) and (sentence[0].isupper() or message.content[:max(at, 0)].rstrip()
                                                   .endswith((";", ":"))):  # "...; his number is": after a ";"
        asked_of = {n for n in CAPITALIZED.findall(asked) if n in known}
        if len(asked_of) == 1 and not any(named):
            return f"{owner['lead']}{asked_of.pop()}'s {sentence[owner.end():]}"
        # fresh25 (qwen1.5b): "His dad, Joaquín, my ex-husband, has him every other weekend" and "His sister Xiomara"
        # of the son the mother speaks of were dropped as led by a pronoun; fresh36: "Then his mother, Halyna, ..."
        his = owner["own"].lower() == "his"
        who = None if asked_of else pronoun_person(transcript, index, at, "He" if his else "She")
        return f"{owner['lead']}{who}'s {sentence[owner.end():]}" if who else sentence
    if (not before and message.name and WORK_ASKED.search(asked) and (work := WORK_ALONE.match(sentence))
            and work["job"].lower() not in NOT_WORK | FILLER):
        # fresh24 (qwen1.5b): "What do you do for work?" -- "Sheep farmer, four hundred ewes near Tregaron." was kept
        # with no subject, so "I've retired" ended nothing of it
        a = "an" if sentence[0].lower() in "aeiou" else "a"
        return f"{message.name} is {a} {sentence[0].lower()}{sentence[1:]}"
    if not before and message.name and LIVE_ASKED.search(asked) and PLACE_LEADS.match(sentence):
        return f"{message.name} lives {sentence[0].lower()}{sentence[1:]}"
    if not before and message.name and LIVE_ASKED.search(asked) and HOME_LEADS.match(sentence):
        home = sentence if sentence.startswith(("A ", "An ")) else "a " + sentence.split(" ", 1)[1]  # "My flat ..."
        return f"{message.name} lives in {home[0].lower()}{home[1:]}"
    if not before and (about := AND_THE.match(asked)) and (done := DONE_LEADS.match(sentence)):
        # fresh27 (qwen1.5b): "And the bicalutamide?" -- "Stopped in March, as planned." was kept without what stopped
        thing = about["thing"]
        if thing.lower().startswith("your"):
            if not message.name:
                return sentence
            thing = f"{message.name}'s{thing[4:]}"
        return f"{thing[0].upper()}{thing[1:]} {'were' if done['all'] else 'was'} {sentence[0].lower()}{sentence[1:]}"
    if message.name and (now := NOW_ITS.match(sentence)) and (
            any(medicine_word(w) for w in words(now["rest"])) or doses(with_digits(now["rest"]))):
        # fresh35, fresh36 (qwen1.5b): "The deferasirox is stopped ... Now it's deferiprone, Ferriprox, fifteen hundred
        # milligrams three times a day." was kept with its "it" unnamed, and lost
        return f"{message.name} now takes {now['rest']}"
    if (taker := TAKE_ASKED.search(asked)) and (taken := TAKEN_LEADS.match(sentence)) and (
            (who := taker["who"] or taker["who2"]).lower() == "you" and message.name or who in known) and (
            taken["thing"].lower() in TAKEN_THINGS or medicine_word(taken["thing"].lower())
            or doses(with_digits(sentence))) and not HAS_SUBJECT.search(sentence.split(",")[0]):
        # "What does Mykyta take?" -- "Ursodeoxycholic acid, Ursofalk, a hundred and fifty milligrams twice a day.
        # Rifampicin, ...": fresh36 kept each with no subject, under the mother who said it
        rest = sentence[taken.end("lead"):]
        return f"{message.name if who.lower() == 'you' else who} takes {rest}"
    question = WHEN_WHERE.match(asked) if asked and not before else None
    if question is None or not NOT_FRAGMENT.isdisjoint(words(sentence)):
        return sentence
    thing = question["thing"]
    if re.match(r"your\b", thing, re.IGNORECASE):
        if not message.name:
            return sentence
        thing = f"{message.name}'s{thing[4:]}"
    first = sentence.split(" ", 1)[0].strip(",.;:")
    start = sentence if first in known or first in TITLES else sentence[0].lower() + sentence[1:]
    return f"{thing[0].upper()}{thing[1:]} {(question['verb'] or 'is').lower()} {start}"


def subject_named(text: str, transcript: Transcript, sources: Sequence[int]) -> str:
    """A memory the model starts with "He" or "She" in a sentence a user line it cites (or one
    beside it: a small model's sources are often off by one) says word for word ("He's diabetic
    too, gliclazide 80 with breakfast."), named as `named_subject` names that sentence in its
    line ("My father-in-law Duarte moved in. He's diabetic too ..."); one no such line says word
    for word, for the speaker, when that can be no one else (`speaker_meant`); one starting with a
    dose (`DOSE_ALONE`) a cited line says word for word, with the medicine `subject_given` finds; one starting with
    "His" or "Her" a cited line says word for word, with whose `subject_given` finds ("My daughter Litia ... Her body
    can't break down leucine": fresh30); one starting with "It", as `it_named` names it; one a cited line starts with
    word for word, as `when_answered` says it; otherwise as it is."""
    pronoun = HE_OR_SHE.match(text)
    first = SENTENCE.split(text.strip(), maxsplit=1)[0]
    # (or the line beside that starts so: fresh33's "All milk and everything made from it: ..." cited the question)
    for i in [*(j for j in sources if 0 <= j < len(transcript.messages)), *beside(sources, len(transcript.messages))]:
        if (answered := when_answered(transcript, i, first)) != first:  # "None without the ventilator" (fresh33)
            return answered + text.strip()[len(first):]
    if (lead := IT_LEADS.match(first)) is not None:
        return it_named(text, first, lead, transcript, sources)
    if not pronoun and not DOSE_ALONE.match(text) and not OWNER_LEADS.match(text):
        return text
    for i in [*(j for j in sources if 0 <= j < len(transcript.messages)), *beside(sources, len(transcript.messages))]:
        if first in transcript.messages[i].content:
            named = named_subject(transcript, i, first)
            return named + text.strip()[len(first):] if named != first else text
    if pronoun and (name := joined_subject(first, pronoun, transcript, [j for j in sources
                                                                         if 0 <= j < len(transcript.messages)])):
        return _subject_put(name, text.strip()[pronoun.end("s") if pronoun["s"] else pronoun.end("pronoun"):],
                            bool(pronoun["s"]))
    return speaker_meant(text, transcript, [j for j in sources if 0 <= j < len(transcript.messages)]) if pronoun else text


def joined_subject(first: str, pronoun: re.Match[str], transcript: Transcript, sources: Sequence[int]) -> str | None:
    """The name of whom a memory's leading "He" or "She" (`pronoun`) is, when a cited user line says the memory's words
    after a clause of the same pronoun ("He's six, and he has Williams syndrome: ..." for "He has Williams syndrome:
    ...": fresh34) and `named_subject` names that sentence's pronoun; else None."""
    said = first[pronoun.end("pronoun"):].strip().rstrip(".!")
    for i in sources:
        if transcript.messages[i].role != "user" or len(words(said)) < 3:
            continue
        for sentence in SENTENCE.split(transcript.messages[i].content):
            lead = HE_OR_SHE.match(sentence)
            if lead is None or lead["pronoun"].lower() != pronoun["pronoun"].lower() or not re.search(
                    rf",\s+(?:and\s+)?{pronoun['pronoun'].lower()}\s+{re.escape(said)}", sentence):
                continue
            named = named_subject(transcript, i, sentence.strip())
            rest = sentence.strip()[lead.end("s") if lead["s"] else lead.end("pronoun"):]
            if named != sentence.strip() and named.endswith(rest):
                return re.sub(r"(?:\s+is|['’]s)$", "", named[:len(named) - len(rest)]) or None
    return None


YOURS = {"she": "i", "he": "i", "her": "my", "his": "my", "him": "me", "doesn": "don", "has": "have", "is": "am"}
"""A word of a line in the first person and as a memory says it of the speaker: "the very enzyme I don't have" is
"the very enzyme she doesn't have"."""


def it_named(text: str, first: str, lead: re.Match[str], transcript: Transcript, sources: Sequence[int]) -> str:
    """`subject_named` of a memory starting with "It": the "It" `named_subject` names in the sentence of a cited user
    line (or one beside it) the memory's first sentence says, word for word but for the speaker said in the third
    person ("It does nothing for FCS: it works through the very enzyme she doesn't have" of "... I don't have":
    fresh32, the fenofibrate the assistant asked about); otherwise as it is."""
    def said_as(sentence: str) -> list[str]:
        return [YOURS.get(w, w) for w in words(sentence)]

    own = said_as(first)
    for i in [*(j for j in sources if 0 <= j < len(transcript.messages)), *beside(sources, len(transcript.messages))]:
        line = transcript.messages[i]
        if line.role != "user":
            continue
        for sentence in SENTENCE.split(line.content):
            sentence = sentence.strip()
            if (its := IT_LEADS.match(sentence)) and said_as(sentence) == own:
                named, rest = named_subject(transcript, i, sentence), sentence[its.end():]
                if named != sentence and named.endswith(rest):
                    return named[:len(named) - len(rest)] + text.strip()[lead.end():]
    return text


KIN_WORD = re.compile(rf"\b{_REL}\b")


def speaker_meant(text: str, transcript: Transcript, sources: Sequence[int]) -> str:
    """A memory the model starts with "She" or "He" for the one who said the lines it cites, in
    the first person ("My homocysteine was high too, so I take vitamin B6, 50 mg a day" ->
    "She takes vitamin B6, 50 mg a day": fresh14, qwen1.5b), with the speaker's name: when those
    user lines (or the one beside them, `cited_or_beside`) are one speaker's, say "I", "me" or
    "my", and the sentence the memory copies (with the one before it, `copied_from`) never says
    the pronoun ("she", "her" for "She") and names no one and no relation the memory does not
    (so the pronoun stands for no one they speak of: "My mum takes aspirin" -> "She takes aspirin"
    stays as it is, the repair's to mend). Otherwise `text` as it is."""
    lead = HE_OR_SHE.match(text)
    if lead is None:
        return text
    lines = [m for m in cited_or_beside(text, transcript, sources) if m.role == "user"]
    speakers = {m.name for m in lines}
    speaker = speakers.pop() if len(speakers) == 1 else None
    if speaker is None:
        return text
    said = " ".join(m.content for m in lines)
    near = copied_from(text, said, speaker)
    told = set(words(near))
    own = HERS if lead["pronoun"].lower() == "she" else HIS
    mine = set(words(speaker))
    others = {n for n in CAPITALIZED.findall(near) if n in transcript.names and n.lower() not in mine}
    kin = {m["rel"].lower() for m in KIN_WORD.finditer(near)}
    # an answer without "I" to a question asked of them ("Do you take anything else?" -- "Omeprazole, 20 milligrams
    # every morning, ...": fresh30, qwen1.5b wrote "He takes Omeprazole ...")
    first = next((i for i, m in enumerate(transcript.messages) if any(m is line for line in lines)), -1)
    asked = asked_before(transcript.messages, first)
    mine_asked = bool(YOU.search(asked)) and not (THIRD_PERSON & (told | set(words(asked))) or KIN_WORD.search(asked))
    if not said_in_first_person(text, said) and (
            own & told or not (I_WORDS & set(words(said)) or mine_asked)
            or not others <= set(CAPITALIZED.findall(text)) or not kin <= set(words(text))):
        return text
    return _subject_put(speaker, text[lead.end("s" if lead["s"] else "pronoun"):], bool(lead["s"]))


SAME_VERB = {"'s": ("am", "['’]m", "have", "['’]ve"), "is": ("am", "['’]m"), "has": ("have", "['’]ve"),
             "was": ("was",), "does": ("do",), "goes": ("go",)}
"""The first person's forms of a verb a memory says in the third (`said_in_first_person`)."""


def said_in_first_person(text: str, said: str) -> bool:
    """Whether a memory starting "She" or "He" is a sentence of `said` word for word but for its "I" and the verb's
    person ("I want her plan kept somewhere safe" -> "She wants her plan kept somewhere safe.": fresh30, qwen1.5b;
    the "her" is the daughter's, the "She" the speaker), with at least three words after the verb."""
    lead = HE_OR_SHE.match(text)
    if lead is None:
        return False
    verb = "'s" if lead["s"] else lead["next"].lower()
    rest = text[lead.end("s") if lead["s"] else lead.end("next"):].strip().rstrip(".!?;: ")
    if len(words(rest)) < 3:
        return False
    forms = SAME_VERB.get(verb, (verb,) if verb.endswith("ed") else (verb[:-1], verb[:-2]) if verb.endswith("s")
                          else ())
    if verb.endswith("ies"):
        forms = (verb[:-3] + "y",)
    joined = "|".join(f"\\s+{form}" if form[0].isalpha() else form for form in forms if form)
    return bool(joined) and re.search(rf"\bI(?:{joined})\s+{re.escape(rest)}", said) is not None


def copied_from(text: str, said: str, speaker: str) -> str:
    """The sentence of `said` that a memory holds most of (at least half of its words worth
    comparing, and two), with the sentence before it (what a pronoun in it may stand for); all of
    `said` when none is."""
    held = _content_stems(text, speaker)
    sentences = [s for s in SENTENCE.split(said) if s.strip()]
    shared = [len(held & _content_stems(s, speaker)) for s in sentences]
    if not shared or max(shared) < max(2, (len(held) + 1) // 2):
        return said
    at = shared.index(max(shared))
    return " ".join(sentences[max(0, at - 1):at + 1])


def unheld_relations(transcript: Transcript, user_name: str, written: Sequence[str]) -> list[tuple[int, str]]:
    """The relations people named in what they said ("my husband Arjun", "Valéria, my running
    coach", "my son Wiremu, he's seven", "Ottilie's dad Lars") that none of `written` (the memories so far) holds (a
    memory with the name and a word of the relation: "husband", "married"), each as a memory
    ("Arjun is Priyanka's husband.", "Wiremu, Aroha's son, is seven.", "Lars is Ottilie's dad.")
    with the index of its line.
    qwen1.5b often writes the person and not who they are to the speaker. A name at the start of a
    sentence counts only when it is also written capitalized inside one ("Sorry, my mum" is no
    name). A Chinese line is not read."""
    held = [stems([text]) for text in written]
    inside = {m for _, sentence in statements(transcript) for k, m in enumerate(CAPITALIZED.findall(sentence))
              if k or not sentence.startswith(m)}
    out: list[tuple[int, str]] = []
    said: set[str] = set()
    before: dict[int, str] = {}  # a person's line -> the line that person said before it
    last: dict[str | None, str] = {}
    for index, message in enumerate(transcript.messages):
        if message.role == "user":
            before[index] = last.get(message.name, "")
            last[message.name] = message.content
    for index, sentence in statements(transcript):
        speaker = transcript.messages[index].name or user_name
        found = [(m.start(), m["name"], m.groupdict().get("owner"), m["rel"], m["law"], m["adj"],
                  m.groupdict().get("age")) for m in [*MY_KIN.finditer(sentence), *THEIR_KIN.finditer(sentence)]
                 + [m for m in KIN_NAMED.finditer(sentence) if m.start() > 0 or m["name"].split()[-1] in inside]]
        # "I'm Marites, his mother." said by Marites of the user beside her (fresh34: no memory said whose mother)
        if (me := transcript.introduced.get((index, sentence))) and speaker != user_name \
                and user_name in transcript.speakers:
            found.append((me.start(), me["name"], user_name, me["rel"], me["law"], me["adj"], None))
        if named := NAME_IS.search(sentence):  # "My mother had a stroke." ... "Her name's Rosemary."
            line = transcript.messages[index].content
            earlier = before[index] + " " + line[:max(line.find(sentence), 0)]
            unnamed = [m for m in UNNAMED_KIN.finditer(earlier)
                       if m["rel"].lower() not in (MALE if named["pronoun"].lower() == "her" else FEMALE)]
            if unnamed:
                said_of = unnamed[-1]
                found.append((named.start(), named["name"], said_of["owner"], said_of["rel"], said_of["law"],
                              said_of["adj"], None))
        for _, name, owner, rel, law, adj, age in sorted(found, key=lambda m: m[0]):
            owner = owner or speaker
            first = name.split()[-1] if name.startswith("Dr") else name
            if {first.lower(), owner.lower()} & NOT_NAMES or normalize_text(first) in {
                    normalize_text(w) for w in owner.split()}:
                continue
            rel, law = rel.lower(), law or ""
            kin = {_stem(w) for w in _KIN_OF[rel]} | ({_stem("married")} if "wife" in _KIN_OF[rel] else set())
            number = age.split()[0] if age else None
            ages = {number, str(_AGE_WORDS.index(number) + 1) if number in _AGE_WORDS else
                    (_AGE_WORDS[int(number) - 1] if number and number.isdigit() and 0 < int(number) <= 20 else None)}
            if any(_stem(words(first)[0]) in h and kin & h and (not age or {_stem(a) for a in ages if a} & h)
                   for h in held):
                continue
            adj = f"{adj} " if adj else ""
            who = f"{owner}'s {adj}{rel}{law}"
            text = f"{name}, {who}, is {age}." if age else f"{name} is {who}."
            if normalize_text(text) not in said:
                said.add(normalize_text(text))
                held.append(stems([text]))
                out.append((index, text))
    return out


def kin_named(said: str, transcript: Transcript, speaker: str | None) -> str:
    """`said` (a line of `speaker`'s) with the name of the one "my mother" or "my cousin" is, when that person said so
    of the speaker in the conversation (`SELF_KIN`: "I'm Marites, his mother."): "My mother first: 0917 ..." is "My
    mother, Marites, first: 0917 ..." (fresh34: the emergency contact was kept without her name)."""
    if not speaker:
        return said
    for (index, _), me in transcript.introduced.items():
        if transcript.messages[index].name == speaker or me["law"]:
            continue
        said = re.sub(rf"\b((?i:my)\s+{re.escape(me['rel'].lower())})\b(?!,?\s+(?-i:[A-Z]))", rf"\1, {me['name']},",
                      said, count=1)
    return said


SELF_KIN = re.compile(rf"^(?:(?i:and|hi|hello|oh)\W+)?I['’]m\s+(?P<name>{_NAME}),\s+(?i:his|her)\s+{_ADJ}{_REL}\b")
"""A speaker saying who they are to the one they came with: "I'm Marites, his mother.", "I'm Nangula, her older
sister."."""


ADDRESSED = re.compile(r"^(?:(?i:hey|hi|hiya|hello|thanks|thank\s+you|bye|morning|yep|yeah|wow|oh|dear)\W+)?"
                       r"([A-Z][a-z]+)(?=\s*[,!])|\b[a-z]+[.!]?,\s*([A-Z][a-z]+)\s*[.!?]*$")
"""A name a sentence only calls someone by ("Hey Mel, ...", "Totally agree, Mel."): whom the
speaker talks to, no fact (LoCoMo: "Mel" is Melanie, "Caro" Caroline; their short names)."""


def named_in(sentence: str, speakers: Collection[str] = ()) -> list[str]:
    """The words of a sentence that are numbers, or names written inside it (capitalized, not
    first; not a weekday or month, nor a word of `speakers`' names, nor one the sentence only
    calls someone by: `ADDRESSED`), lower case."""
    names = {m.lower() for k, m in enumerate(CAPITALIZED.findall(sentence)) if k or not sentence.startswith(m)}
    names -= TIME_WORDS | set(speakers) | {n.lower() for m in ADDRESSED.finditer(sentence) for n in m.groups() if n}
    return [w for w in words(sentence) if w.isdigit() or w in names]


ASKING = frozenset("""rate book find tell remind add set put make give send show play call write create delete remove
save check look search get take let please help buy order schedule cancel list translate summarize summarise open
turn change update use try keep move pick choose suggest recommend draft note remember forget can could would will
shall should do does did""".split())
"""First words of a sentence that asks the assistant for something rather than tells a fact."""


CALL_ME = re.compile(r"(?:^|(?<=[.,;:!?])\s*|\b(?i:please|just|you\s+can|you\s+may|do)\s+)(?i:call\s+me)"
                     r"\s+(?P<name>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\b|\b(?i:I\s+go\s+by)\s+(?P<by>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\b")
"""The name a speaker asks to be called: "please call me Dana", "Call me Mo", "I go by Sol"; not what others call
them ("At school they call me Helen, but I'm Eleni, please": fresh36 kept "Eleni goes by Helen")."""
KIN_CALLED = re.compile(rf"\b(?i:my|our){_REL_NAME}\s*[;,]\s*(?i:we|everyone|they|people)\s+"
                        rf"(?i:calls?)\s+(?i:her|him|them)\s+(?P<alias>{_NAME})\b")
"""Another name of someone the speaker introduces by their relation: "my daughter Ifunanya; we call her Nanya" (fresh29:
no memory held the two names together)."""


def unheld_names(transcript: Transcript, user_name: str, written: Sequence[str]) -> list[tuple[int, str]]:
    """The sentences a person said (no question, not the assistant) with a number or a name (not
    a speaker's) that none of `written` (the memories so far) holds, lead-in dropped, with the
    index of their line: what the extraction was shown and still did not keep ("We're planning
    my build-up to the Porto marathon in November", "Plot 14 at the Hillside site": qwen1.5b);
    not a request to the assistant (`ASKING`). A name a speaker asks to be called (`CALL_ME`) that no
    memory holds is kept as "<speaker> goes by <name>", and another name of someone introduced by their relation
    (`KIN_CALLED`) that no memory holds with the first as "<name> goes by <other>". A Chinese line is not judged."""
    speakers = transcript.speaker_words(user_name)
    held = stems(written)
    out: list[tuple[int, str]] = [
        (index, f"{kin['name']} goes by {kin['alias']}") for index, message in enumerate(transcript.messages)
        if message.role == "user" for kin in KIN_CALLED.finditer(message.content)
        if not any({_stem(kin["name"].lower()), _stem(kin["alias"].lower())} <= stems([text]) for text in written)]
    for index, sentence in statements(transcript):
        sentence = said_whole(sentence)
        if ((alias := CALL_ME.search(sentence)) and _stem((called := alias["name"] or alias["by"]).lower()) not in held
                and called.lower() not in TIME_WORDS | speakers):
            # fresh24 (qwen1.5b): "First thing: please call me Dana." was in no memory (a request, so not read)
            out.append((index, f"{transcript.messages[index].name or user_name} goes by {called}"))
            held |= stems([called])
            continue
        if words(sentence)[:1] and words(sentence)[0] in ASKING:
            continue  # "Rate the songs I liked this year 5 stars." asks the assistant: no fact
        named = named_in(sentence, speakers)
        if named and len(sentence) <= MAX_CONTENT_CHARS and any(_stem(w) not in held for w in named):
            out.append((index, sentence))
            held |= stems([sentence])
    return out


REPORTING = frozenset("said says say told tells tell asked asks reckons reckon thinks think thought wants want "
                      "wanted keeps keep".split())
"""Words that say who says or wants something, not what: "My doctor said I was low on iron" holds
nothing "Dan was low on iron" does not."""


def unheld_content(transcript: Transcript, shown: Collection[int], user_name: str, written: Sequence[str],
                   cited: Sequence[tuple[Collection[int], str]] = ()) -> list[tuple[int, str]]:
    """In a conversation where someone speaks of health (a `health_word` in a sentence of theirs:
    there a sentence left out may be what keeps them safe), the sentences a person said (no
    question, not the assistant, no request to it: `ASKING`) in a line the extraction was `shown`,
    of five words or more (another speaker's only with "I", "my", "me": one that names no speaker
    would read as the user's), lead-in dropped, whose content words
    (`content_words`, names of the speakers aside) are at least half, and two or more, held by none
    of `written` (the memories so far), unless its numbers, names and health words (`salient`) are
    all held by the memories of its line (`cited`: each memory's lines and text; one kept its
    point: "The sickness has finally stopped, so I've come off the ondansetron" beside "... has
    come off the ondansetron"), with the index of their line: what qwen1.5b read and left
    out, whatever it is about ("I just hardly sweat, ... I stay in the shade with a big water
    bottle, and no saunas, ever" beside "Sefo coaches touch rugby on Thursday nights"; "What I do
    stick to: showers only, never a bath, and the bathroom door stays unlocked"; "Now I'm on
    colistin, through the nebuliser, one million units twice a day": fresh17, no health word a list
    of them could hold). Simulated on the memories of fresh11 to fresh17 (one run each, every
    session's memories as they stood, the `salient` words checked against every memory, not the
    line's own): fact recall 0.779 -> 0.846, safety 0.771 -> 0.846, 25% more memories, none for
    small talk. Elsewhere the model's choice stands (a name, a number, a date
    no memory holds are kept all the same: `unheld_names`, `unheld_dates`). A Chinese line is not judged."""
    if not any(health_word(w) for _, sentence in statements(transcript) for w in words(sentence)):
        return []
    speakers = transcript.speaker_words(user_name)
    held = stems(written)
    of_line: dict[int, set[str]] = {}  # the words the memories of each line hold
    for lines, text in cited:
        for line in lines:
            of_line.setdefault(line, set()).update(stems([text]))
    out: list[tuple[int, str]] = []
    for index, sentence in statements(transcript):
        if index not in shown:
            continue
        sentence = said_whole(sentence)
        said = words(sentence)
        if len(said) < 5 or said[0] in ASKING or len(sentence) > MAX_CONTENT_CHARS:
            continue
        speaker = transcript.messages[index].name
        if speaker and words(speaker) != words(user_name) and I_WORDS.isdisjoint(said) and not (
                HE_OR_SHE.match(sentence) and named_subject(transcript, index, sentence) != sentence):
            # another speaker's "Two carriers, one unlucky girl." would be stored as the user's; but whom a "he" of
            # theirs is can be told ("I'm the one who's allergic to shrimp. He eats shrimp every week": fresh34)
            continue
        content, named = [w for w in content_words(sentence, speakers) if w not in REPORTING], salient(sentence)
        new = [w for w in content if _stem(w) not in held]
        if len(new) >= 2 and 2 * len(new) >= len(content) and not (
                named and {_stem(w) for w in named} <= of_line.get(index, set())):
            out.append((index, sentence))
            held |= stems([sentence])
    return out


EMERGENCY = re.compile(r"\bemergenc", re.IGNORECASE)
WHO = re.compile(r"\bwhom?\b", re.IGNORECASE)
TO_CALL = re.compile(r"\b(?:call(?:ed)?|phoned?|ring|rung|contact(?:ed)?|reach(?:ed)?|notif(?:y|ied))\b", re.IGNORECASE)
ANOTHERS_CONTACT = re.compile(r"\b(?:his|her|their)\s+(?:\w+\s+)?contacts?\b|\b(?:did|was|were|had)\b", re.IGNORECASE)
"""A question about whom someone else has, or whom someone called ("Who's his contact back home?",
"Who did you call about the boiler?"): no emergency contact of the speaker's."""


YOUR_CONTACT = re.compile(r"\byour\s+(?:first|main|emergency|next)\s+contact\b|\byour\s+next\s+of\s+kin\b"
                          r"|\b(?:first|main)\s+(?:person|one)\s+to\s+(?:call|ring|phone)\b", re.IGNORECASE)
"""A question of the speaker's first contact: "Is Kian still your first contact?" (fresh24)."""


def says_whom_to_call(text: str) -> bool:
    """Whether a text speaks of calling someone or of an emergency (`TO_CALL`, `EMERGENCY`), or of next of kin."""
    return bool(TO_CALL.search(text) or EMERGENCY.search(text) or FIRST_CALL.search(text))


def asks_whom_to_call(question: str) -> bool:
    """Whether the assistant's turn asks whom to call for the speaker: it says "emergency" (not of
    a thing: `EMERGENCY_THING`), or a
    question of it asks who is to be called, phoned, rung or contacted ("And who should they
    phone?", "Who's your contact at home if anything happens?"; fresh6), not whom another has or
    whom someone called (`ANOTHERS_CONTACT`); or it asks of the speaker's first contact (`YOUR_CONTACT`:
    "Is Kian still your first contact?", fresh24)."""
    if EMERGENCY.search(question) and not EMERGENCY_THING.search(question):
        return True
    if any(YOUR_CONTACT.search(q) for q in re.findall(r"[^.!?]*\?", question)):
        return True
    return any(WHO.search(q) and TO_CALL.search(q) and not ANOTHERS_CONTACT.search(q)
               for q in re.findall(r"[^.!?]*\?", question))


EMERGENCY_THING = re.compile(r"\bemergency\s+(?:plan|kit|card|pack|bag|medication|medicine|dose|procedure"
                             r"|protocol|letter|bracelet|pendant|tag|drink|regimen)s?\b", re.IGNORECASE)
"""An emergency question about a thing, not a person: "Is the emergency plan the same?" (fresh10); a thing for an
emergency a sentence says where it is ("The emergency letter is taped inside the front door": fresh35, kept by
no memory once "emergency" was held)."""


LEAD_WORDS = frozenset("if when whenever since because or not just only first second last either both".split())
"""Words that open a sentence of an answer and name no one ("If I don't pick up, Vesna")."""


def unheld_answers(transcript: Transcript, user_name: str, written: Sequence[str]) -> list[tuple[int, str]]:
    """A person's answer to the assistant's question about an emergency or whom to call
    (`asks_whom_to_call`: "Who should the school ring in an emergency?" -- "Me first. If I
    don't pick up, Vesna. She's my mum.") that names
    someone no memory with an emergency word names, as "<speaker>'s emergency contacts: <the
    answer>", with the index of its line: the emergency word is the question's, the names the
    answer's, so no sentence of either holds the fact (fresh5: four emergency contacts lost so).
    The question may be another speaker's (fresh12: the guide's "Who's the contact?"), and the
    contacts may be speakers too. A place the answer starts with, to a question of where they live too, is no
    contact (fresh28: "Khanyisile's emergency contacts: In Walmer, in Gqeberha. ..."), nor are the sentences from the
    first after the first that the speaker starts with "I" or "we" and that names no one to call ("I work as a
    paralegal"). A Chinese line is not judged."""
    held = [set(words(text)) for text in written if EMERGENCY.search(text)]
    out: list[tuple[int, str]] = []
    for index, message in enumerate(transcript.messages[1:], start=1):
        # the answering speaker's name is no contact, but the others' are (fresh25: "Kahurangi first, then Deepika",
        # his sister and flatmate speaking too, named no one)
        speakers = {w for name in (user_name, message.name or "") for w in words(name)}
        asked = transcript.messages[index - 1]
        if (message.role != "user" or "?" not in asked.content
                or asked.role != "assistant" and not (asked.role == "user" and asked.name and message.name
                                                      and asked.name != message.name)
                or not asks_whom_to_call(asked.content) or CJK_CHAR.search(message.content)):
            continue
        answer = " ".join(message.content.split())
        if LIVE_ASKED.search(asked.content) and (first := SENTENCE.split(answer)[0]) and (
                PLACE_LEADS.match(first) or HOME_LEADS.match(first)):
            answer = answer[len(first):].strip()  # "Where do you live, and who ...?" "In Walmer, in Gqeberha. My ..."
        said = [t for t in SENTENCE.split(answer) if t.strip()]
        # not what the speaker goes on to say of themselves ("Nikhil. We have twin boys ... I'm a chartered
        # accountant ...", "... she's my emergency contact. I work as a paralegal ...": fresh28)
        told = next((k for k, t in enumerate(said) if k and SELF_LED.match(t) and not says_whom_to_call(t)), len(said))
        answer = " ".join(said[:told])
        names = {w.casefold() for w in CAPITALIZED.findall(answer)} - NOT_NAMES - COMMON_WORDS - FILLER - TIME_WORDS \
            - LEAD_WORDS - ASKING - speakers
        text = f"{message.name or user_name}'s emergency contacts: {kin_named(answer, transcript, message.name)}"
        if any(not any(name in h for h in held) for name in names) and len(text) <= MAX_CONTENT_CHARS:
            out.append((index, text))
    return out


SELF_LED = re.compile(r"(?:I|We)(?:['’](?:m|re|ve|d|ll))?\b")
"""A sentence the speaker starts with "I" or "we": of themselves."""


NAMES_NOTHING = frozenset("no none nothing not nope nah yes yeah yep i i'm we".split())
"""First words of an answer that name nothing to avoid ("Nothing I know of", "I'm not sure")."""
TO_AVOID = re.compile(r"\b(?:no|never|not|nothing|avoid\w*|stay\w*\s+away|allerg\w*|react\w*|intoleran\w*"
                      r"|sensitiv\w*)\b|n['’]t\b", re.IGNORECASE)
"""What a memory says something is not to be had with."""


WHY_AFTER = re.compile(r",\s+(?=(?:they|it|that|those|both|which|all)\s+(?!and\b|or\b))"
                       r"|:\s+(?=(?:anything|everything|all|any|they|it|that|those|both)\b)", re.IGNORECASE)
"""Where a list of things ends and what is said of them begins: "Grapefruit and grapefruit juice, and St
John's wort, they change the level in my blood" (fresh24), "Soil, compost, hay, ...: anything full of mould spores"
(fresh32)."""


def avoided_answers(messages: Sequence[Message]) -> Iterator[tuple[int, str, str, bool]]:
    """A person's answer to the assistant's question of what they react to or must avoid
    ("Any allergies?" -- "Co-trimoxazole, Septrin. A big blistering rash in 2015."), whose first
    sentence names it alone (a few words, no "I" or "my"), or names it first and then says why
    (`WHY_AFTER`): the line's index, that sentence, the thing it names first, and whether the
    question was of allergies."""
    for index, message in enumerate(messages):
        asked = asked_before(messages, index)
        if message.role != "user" or not (REACTS.search(asked) or AVOID.search(asked)):
            continue
        first = SENTENCE.split(" ".join(message.content.split()))[0].strip()
        listed = WHY_AFTER.split(first)[0]  # "Grapefruit and grapefruit juice, and St John's wort, they change ..."
        said = words(listed)
        # not a sentence of someone else's ("Does she have allergies?" -- "She's allergic to amoxicillin;": fresh30)
        if (not said or len(said) > (8 if listed == first else 10) or said[0] in NAMES_NOTHING | THIRD_PERSON
                or I_WORDS & set(said) or CJK_CHAR.search(first)):
            continue
        thing = re.split(r"[,;:(]|\s+(?:and|or|or\s+any|and\s+any)\s+", listed)[0].strip(" .!").casefold()
        thing = re.sub(r"^(?:just|only|and|oh|well|definitely)\s+", "", thing)
        if thing:
            yield index, first, thing, bool(REACTS.search(asked))


ASKED_OF = re.compile(r"\b(?i:does|is|has|did|can|must|should)\s+(?P<who>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\s+"
                      r"(?:have|react|get|avoid|take|be|got|had|reacted|ever)\b"
                      r"|\b(?P<whose>[A-ZÀ-ÖØ-Þ][^\W\d_]+)['’]s\s+allerg")
"""A question of someone else's allergies or what they avoid: "Does Murad have any allergies?"."""


def asked_about(transcript: Transcript, index: int) -> str | None:
    """The name of whom the question before line `index` asks about their allergies or what they avoid (`ASKED_OF`),
    when the conversation writes it as a name and another says the line; else None."""
    of = ASKED_OF.search(asked_before(transcript.messages, index))
    named = (of["who"] or of["whose"]) if of else ""
    return named if named in transcript.names and named != transcript.messages[index].name else None


def allergy_asked_of(text: str, transcript: Transcript, sources: Sequence[int]) -> str:
    """A memory of an allergy the model wrote under the speaker of the line it cites, with whom the question before
    that line asks about instead ("Does Davit have any allergies?" -- "Kiwi. ... Me? Nothing at all." gave "Anahit has
    Kiwi as an allergy": fresh34); otherwise as it is."""
    cited = [i for i in sources if 0 <= i < len(transcript.messages) and transcript.messages[i].role == "user"]
    if len(cited) != 1 or not any(w.startswith("allerg") for w in words(text)) \
            or {"no", "not", "nothing", "none", "t"} & set(words(text)):  # "Me? Nothing at all." is the speaker's
        return text
    speaker = transcript.messages[cited[0]].name or ""
    who = asked_about(transcript, cited[0])
    if not who or not speaker or not re.match(rf"{re.escape(speaker)}\b(?!['’]s\s+(?!allerg))", text.strip()):
        return text
    return who + text.strip()[len(speaker):]


def unheld_avoided(transcript: Transcript, user_name: str, written: Sequence[str]) -> list[tuple[int, str]]:
    """A person's answer to what they react to or must avoid (`avoided_answers`) whose first thing
    no memory that says what is not to be had (`TO_AVOID`) holds, as "<speaker>'s allergies:
    <the answer>" or "<speaker> must avoid: <the answer>", with the index of its line: the allergy
    is the question's word, the thing the answer's, so no sentence holds the fact (fresh22:
    "Co-trimoxazole, Septrin." became "Fiifi takes ... co-trimoxazole"; "Alcohol, completely." was
    in no memory)."""
    held = [stems([text]) for text in written if TO_AVOID.search(text)]
    out: list[tuple[int, str]] = []
    for index, first, thing, allergy in avoided_answers(transcript.messages):
        need = {_stem(w) for w in words(thing) if len(w) >= 3 and w not in COMMON_WORDS}
        if not need or any(need <= h for h in held):
            continue
        # whom the question asks about ("Does Murad have any allergies?" -- "Latex. ... Me? Nothing.": fresh33)
        who = asked_about(transcript, index) or transcript.messages[index].name or user_name
        text = f"{who}'s allergies: {first}" if allergy else f"{who} must avoid: {first}"
        if len(text) <= MAX_CONTENT_CHARS:
            out.append((index, text))
    return out


REFUSED_WITH = re.compile(r"(?:No,?\s+)?Not\s+(?:with|while|since|after)\b", re.IGNORECASE)
GERUND_OFFERED = re.compile(r"(?:^|(?<=[.!?]\s)|\b(?:try|trying|about|consider|considered|like)\s+)"
                            r"(?P<act>[A-Za-z]{3,}ing)\b")
GERUND_ON = re.compile(r"\b(?:on|with|for|into|at)\s+(?P<act>[A-Za-z]{3,}ing)\b(?=\s*\?)")
"""The activity a question offers help with, last in it: "Would you like some tips on vaping?"."""
NOT_ACTIVITIES = frozenset("""something anything nothing everything morning evening thing king ring spring string
wedding ceiling building during bring sibling darling pudding stocking""".split())
"""A person's refusal of what the assistant offered, with the reason ("Swimming is gentle exercise. Would that help
you keep fit?" -- "Not with a line in my chest, the nurses won't hear of it."), and the one activity offered."""


def unheld_refusals(transcript: Transcript, user_name: str, written: Sequence[str]) -> list[tuple[int, str]]:
    """A person's answer that turns down the one activity (or thing) the assistant's line offered (`refused`), when no
    memory saying what is not done (`TO_AVOID`) holds it: "No swimming for <speaker>: <what the answer says of it>",
    with the index of its line (fresh29: only "Leif-Arne cycles to the harbour and back instead" was kept; the
    activity is the assistant's word, the refusal the person's); a "No." to stopping a medicine
    (`unheld_refused_stops`), and a "No, it ..." to whether one is still used (`unheld_stops`)."""
    held = [stems([text]) for text in written if TO_AVOID.search(text)]
    out: list[tuple[int, str]] = []
    for index, message in enumerate(transcript.messages):
        found = refused(transcript.messages, index)
        if found is None or any(_stem(w) in h for h in held for w in words(found[0])[-1:]):
            continue
        act, why = found
        head = why.split()[0].rstrip(".,:;") if why.split() else ""
        named = head in TITLE_WORDS or head in transcript.names or head == "I"  # "Dr Shrestha banned ..."
        text = f"No {act} for {message.name or user_name}: {why if named else why[:1].lower() + why[1:]}"
        if len(text) <= MAX_CONTENT_CHARS:
            out.append((index, text))
    return out + unheld_refused_stops(transcript, user_name, written) + unheld_stops(transcript, user_name, written)


def refused(messages: Sequence[Message], index: int) -> tuple[str, str] | None:
    """What line `index`, a person's answer to the assistant's question, turns down, and what it says of it: the one
    activity offered (`GERUND_OFFERED`) and its first sentence, when that gives the reason (`REFUSED_WITH`: "Swimming
    is gentle exercise. Would that help you keep fit?" -- "Not with a line in my chest, ..."); the thing offered by
    "them" or "it" (`thing_offered`) and the reason after "No," ("No, they thin the blood": fresh31); or, after a
    "No." alone, the one activity the question offers (`GERUND_OFFERED`, `GERUND_ON`: "tips on vaping?") and the
    sentence after it (fresh32); None otherwise."""
    message = messages[index]
    if message.role != "user" or not asked_before(messages, index):
        return None
    said = [t.strip() for t in SENTENCE.split(" ".join(message.content.split())) if t.strip()]
    offer = messages[index - 1].content
    if not said or CJK_CHAR.search(said[0]):
        return None
    if REFUSED_WITH.match(said[0]):
        offered = {m["act"].lower() for m in GERUND_OFFERED.finditer(offer)} - NOT_ACTIVITIES
        return (offered.pop(), said[0]) if len(offered) == 1 else None
    if (no := NO_BECAUSE.match(said[0])) and (thing := thing_offered(offer)):
        return thing, no["why"]
    if NO_THEN.match(said[0]) and len(said) >= 2:
        offered = {m["act"].lower() for pattern in (GERUND_OFFERED, GERUND_ON) for m in pattern.finditer(offer)}
        offered -= NOT_ACTIVITIES
        return (offered.pop(), said[1]) if len(offered) == 1 else None
    # "No weights." to "Have you thought about lifting weights?", and why after it (fresh34)
    if (no := NO_THING.match(said[0])) and len(said) >= 2 and {_stem(w) for w in words(no["thing"])} <= {
            _stem(w) for w in words(SENTENCE.split(offer.strip())[-1])}:
        return no["thing"].lower(), said[1]
    return None


NO_THING = re.compile(r"^\W*No\s+(?P<thing>[A-Za-z][a-z-]+(?:\s+[a-z-]+)?)\W*$")
"""A refusal of the thing an offer names, in two words at most: "No weights."."""


NO_BECAUSE = re.compile(r"No,\s+(?P<why>(?:they|it)\s+\S+(?:\s+\S+){1,})", re.IGNORECASE)
THING_IS = re.compile(r"^(?P<thing>[A-Za-z][a-z-]*(?:\s+[a-z-]+){0,3}?)\s+(?:is|are|can|could|may|might|help|helps)\b")
OFFERED_AGAIN = re.compile(r"\b(?:try|take|use|get|have)\s+(?:them|it|some)\b", re.IGNORECASE)


def thing_offered(said: str) -> str:
    """What the assistant's line offers by "them" or "it" (`OFFERED_AGAIN`, in its last sentence, one that suggests:
    `SUGGESTS`), the thing its sentence before starts with (`THING_IS`), in lower case: "fish oil capsules" of "Fish
    oil capsules are good for the heart. Would you like to try them?"; "" when none."""
    sentences = [t.strip() for t in SENTENCE.split(said) if t.strip()]
    if len(sentences) < 2 or not SUGGESTS.match(sentences[-1]) or not OFFERED_AGAIN.search(sentences[-1]):
        return ""
    thing = THING_IS.match(sentences[-2])
    return thing["thing"].lower() if thing and thing["thing"].split()[0].lower() not in STARTERS else ""


STOP_OFFERED = re.compile(r"\b(?:could|should|can|would)\s+(?:you|he|she|we)\s+(?:just\s+)?(?P<verb>stop|drop|skip"
                          r"|come\s+off|cut\s+out|quit)\s+(?:the\s+|your\s+|his\s+|her\s+)?(?P<thing>[\w-]+)",
                          re.IGNORECASE)
NO_THEN = re.compile(r"^\W*No\W*$", re.IGNORECASE)
"""The assistant's offer to stop a medicine ("Since you're feeling better, could you stop the prednisolone?"), and
an answer's "No." before what it says instead."""


def unheld_refused_stops(transcript: Transcript, user_name: str, written: Sequence[str]) -> list[tuple[int, str]]:
    """A person's "No." to the assistant's question whether they could stop the one medicine it names
    (`STOP_OFFERED`), with the sentence after it that says "never" or "not" (`TO_AVOID`), when no memory holds the
    medicine with such a word: "<speaker> will not stop the prednisolone: never on my own, and never suddenly." (fresh31:
    "No. Never on my own, and never suddenly." became "Jaakko should stop the prednisolone when ...")."""
    out: list[tuple[int, str]] = []
    for index, message in enumerate(transcript.messages):
        asked = asked_before(transcript.messages, index)
        offer = STOP_OFFERED.search(asked) if message.role == "user" and asked else None
        if offer is None or not medicine_word(offer["thing"].lower()) or CJK_CHAR.search(message.content):
            continue
        said = [t.strip() for t in SENTENCE.split(" ".join(message.content.split())) if t.strip()]
        if len(said) < 2 or not NO_THEN.match(said[0]) or not TO_AVOID.search(said[1]):
            continue
        thing = _stem(offer["thing"].lower())
        if any(thing in stems([text]) and TO_AVOID.search(text) for text in written):
            continue
        verb = " ".join(offer["verb"].lower().split())
        text = f"{message.name or user_name} will not {verb} the {offer['thing'].lower()}: " \
               f"{said[1][:1].lower()}{said[1][1:]}"
        if len(text) <= MAX_CONTENT_CHARS:
            out.append((index, text))
    return out


STILL_ASKED = re.compile(r"\b(?:are|do|does|is)\s+(?:you|he|she|they)\s+still\s+(?P<verb>use|take|using|taking|on)\b"
                         r"(?:\s+(?:the|your|his|her|their))?\s+(?P<thing>[a-z][\w-]+)\b", re.IGNORECASE)
NO_SO = re.compile(r"^\W*No\s*[,:;.!-]\s*(?P<why>(?:it|they)\b[^.;!?]*)", re.IGNORECASE)
"""The assistant's question whether a medicine is still used ("Do you still use ondansetron when one starts?"), and a
"No" with why after it ("No, it stopped working.")."""


def unheld_stops(transcript: Transcript, user_name: str, written: Sequence[str]) -> list[tuple[int, str]]:
    """A person's "No, it ..." to the assistant's question whether they still use the one medicine it names
    (`STILL_ASKED`), when no memory holds the medicine with a word of its stop (`OFF_WORDS`): "<speaker> no longer
    uses ondansetron: it stopped working." (fresh35: "No, it stopped working. Now it's a sumatriptan nose spray" kept
    only the spray; the stop was nowhere)."""
    out: list[tuple[int, str]] = []
    for index, message in enumerate(transcript.messages):
        asked = asked_before(transcript.messages, index) if message.role == "user" else ""
        found = STILL_ASKED.search(asked) if asked else None
        said = NO_SO.match(" ".join(message.content.split())) if found else None
        if found is None or said is None or not medicine_word(found["thing"].lower()):
            continue
        thing = found["thing"].lower()
        if any(_stem(thing) in stems([text]) and OFF_WORDS.search(text) for text in written):
            continue
        verb = {"use": "uses", "using": "uses", "take": "takes", "taking": "takes"}.get(found["verb"].lower())
        did = f"no longer {verb} {thing}" if verb else f"is no longer on {thing}"
        who = message.name or user_name
        text = f"{who} {did}: {name_the_speaker(said['why'].strip(), who)}."
        if len(text) <= MAX_CONTENT_CHARS:
            out.append((index, text))
    return out


def times_said(text: str, said: datetime, sentence: str) -> list[tuple[int, int, Span]]:
    """The times of `text` (part of `sentence`, said at `said`) relative to when it was said, each
    with its place and the period it means: "last week", "in nine days", "on Friday" as the
    sentence tells it; not one that is only that day ("today")."""
    found = relative_spans(text, said) + weekday_spans(text, said, [sentence])
    return [(start, end, span) for start, end, span in found if not span.first == span.last == said.date()]


WHEN_IT_IS = re.compile(r"^(?:the|my|our|his|her|their)\s+(?:[\w-]+\s+){0,3}?[\w-]+\s+(?:is|are|was|were|will\s+be)\s+",
                        re.IGNORECASE)
"""A sentence that says when a thing of its own is and nothing else: "The pre-op assessment is the day after tomorrow."
(fresh29: one word worth comparing, "assessment", and the date was in no memory)."""


def says_only_when(sentence: str, said: datetime) -> bool:
    """Whether a sentence names a thing (`WHEN_IT_IS`) and then only the time it is, relative to when it was said."""
    lead = WHEN_IT_IS.match(sentence)
    end = len(sentence.rstrip(" .!"))
    return lead is not None and any(start - lead.end() <= len("on ") and stop == end
                                    for start, stop, _ in times_said(sentence, said, sentence))


WHICH_TIME = frozenset("""next last this coming past ago before after day days week weeks fortnight month months year
years today tomorrow yesterday tonight morning evening afternoon""".split())
"""Words that say which time is meant, and nothing of what happens then."""


def unheld_dates(transcript: Transcript, written: Sequence[str]) -> list[tuple[int, str]]:
    """The sentences a person said (no question, not the assistant, no request to it) with a time
    relative to when it was said ("three weeks ago", "last Monday", "on Friday", "in nine days";
    not one that is only that day: "today"), or a day of a month without its year ("on the 5th of
    May", `year_of_days`), that no date of `written` (the memories so far, dated)
    falls in and that say something besides (three words worth comparing, two after a sentence of
    health in the line, or a health word: "My next injection is this Sunday", fresh24), lead-in dropped, with
    the index of their line: qwen1.5b wrote "Rustam works at an engineering firm in Calgary" of
    "I started at an engineering firm in Calgary three weeks ago", and nothing of "Ren started
    last Monday". A Chinese line is not judged."""
    held: dict[date, list[tuple[Span, set[str]]]] = {}  # the periods the memories name, read on each day lines
    # were said, each with its memory's words
    kept: list[tuple[Span, set[str]]] = []  # those of the sentences kept
    out: list[tuple[int, str]] = []
    last: tuple[int, str] = (-1, "")
    for index, sentence in statements(transcript):
        sentence = when_answered(transcript, index, said_whole(sentence))  # "Last Sunday." (fresh34)
        said = transcript.times[index]
        today = said.date()
        dated = year_of_days(sentence, today)  # a day of a month: "The bone scan is on the 5th of May" (fresh15)
        besides = content_words(sentence, I_WORDS | TIME_WORDS)
        # two words are enough after a sentence of health in the line (fresh25: "Last Thursday I was admitted ...
        # for three days on IV fluids ... I came home on Sunday.", the day of discharge lost)
        after_health = last[0] == index and any(map(health_word, words(last[1])))
        last = (index, sentence)
        if (words(sentence)[:1] and words(sentence)[0] in ASKING or len(sentence) > MAX_CONTENT_CHARS
                or len(besides) < (1 if dated != sentence or any(map(health_word, words(sentence)))
                                   else 2 if after_health else 3)
                and not needs_before(sentence) and not says_only_when(sentence, said)):
            # a request, or too little besides its time to stand alone ("We decided on Saturday"); one that is
            # of what the sentence before says is kept after it ("The next one's on the 3rd of next month.")
            continue
        spans = [span for _, _, span in times_said(sentence, said, sentence)]
        if dated != sentence:
            spans += [span for start, end, span in find_spans(dated, today) if YEAR.search(dated[start:end])]
        if not spans:
            continue
        if today not in held:
            # not "next month" of "the 18th of next month", which holds no other day of it (fresh20)
            held[today] = [(span, stems([text])) for text in (year_of_days(t, today) for t in written)
                           for start, _, span in find_spans(text, today) if not DAY_OF.search(text[:start])]
        # a memory's time holds a sentence's when they meet, it is not much wider (fresh20: "last year" in a
        # memory of acne held "Last November I was diagnosed with IIH", and the diagnosis was not dated), and the
        # memory says a word of the sentence (fresh22: "a wedding in Kumasi next month (August 2026)" held "My next
        # liver blood tests are on the 4th of August", stored undated)
        own = {_stem(w) for w in content_words(sentence, I_WORDS | TIME_WORDS | WHICH_TIME)}
        if any(not any(h.first <= span.last and span.first <= h.last and (own & by or not own)
                       and (h.last - h.first).days <= (span.last - span.first).days + 31
                       for h, by in held[today] + kept)
               for span in spans):
            out.append((index, sentence))
            kept += [(span, own) for span in spans]
    return out


def with_the_time_said(text: str, said: datetime, lines: Sequence[str]) -> str:
    """A memory that names no time, given the time of the clause of `lines` (what it cites, said at
    `said`) whose every word worth comparing it holds: "Alice moved to Berlin" of "I moved to Berlin
    last week!" is "Alice moved to Berlin last week (22-28 April 2024)" (qwen1.5b often drops the
    time), and "Khanyisile moved to Cape Town" of "In May I moved to Cape Town" is "... in May 2026" (a month said
    alone, of the year its tense tells: `year_of_month`). Unchanged when no such clause has a time, or two such
    clauses have different times; a clause with two times is not read, nor one that is only the day it was said
    ("today")."""
    if find_spans(text, said.date()) or TIME_WORDS & set(words(text)) or CJK_CHAR.search(text):
        return text
    held = stems([text])
    found: dict[Span, str] = {}
    for line in lines:
        for sentence in SENTENCE.split(line):
            for clause in CLAUSE.split(sentence):
                spans = times_said(clause, said, sentence)
                at = sentence.find(clause)
                months = [] if spans or YEAR.search(sentence) else [
                    (m, year) for m in BARE_MONTH.finditer(sentence) if at <= m.start() and m.end() <= at + len(clause)
                    and (year := year_of_month(sentence, m, said.date())) is not None]
                if len(spans) + len(months) != 1:
                    continue
                if months:  # "In May I moved to Cape Town" (fresh28: "Khanyisile moved to Cape Town", undated)
                    (m, year), = months
                    month = MONTHS[m["month"].lower()]
                    start, end = m.start() - at, m.end() - at
                    start -= len(the[0]) if (the := THE_BEFORE.search(clause[:start])) else 0  # "at the end of"
                    span = month_span(year, month)
                    phrase = f"{clause[start:end]} {year}"
                else:
                    start, end, span = spans[0]
                    phrase = f"{clause[start:end]} ({describe_span(span)})"
                rest = content_words(clause[:start] + " " + clause[end:], I_WORDS)
                if rest and all(_stem(w) in held for w in rest):
                    found.setdefault(span, phrase)
    if len(found) != 1:
        return text
    phrase, = found.values()
    if phrase.split()[0].lower() not in TIME_WORDS:
        phrase = phrase[0].lower() + phrase[1:]
    body = text.rstrip(" .!;")
    return f"{body} {phrase}{text[len(body):]}"


THE_BEFORE = re.compile(r"(?:\b(?:at|by|in|until|till)\s+)?(?:\bthe\s+)?$", re.IGNORECASE)
"""What says a month's part before it: "at the" of "at the end of February"."""
DATED = re.compile(r"\(([^()]*\d[^()]*)\)")
"""A date a memory was given in brackets ("last week (22-28 April 2024)")."""


def said_whole(sentence: str) -> str:
    """A sentence kept as said: without its lead-in (`LEAD_IN`), ending as a sentence ends
    ("Everyone calls me Bobby, actually;" -> "Everyone calls me Bobby, actually.")."""
    rest = without_lead_in(sentence)  # "Oh, and I'm allergic ...": every lead-in goes
    if rest != sentence:  # "And from next week a carer" -> "From next week ..."; "Hey Mel, my cousin" -> "My cousin"
        if GREETING.match(sentence):  # not "And Movicol, one sachet a day" (fresh29: "One sachet a day")
            rest = CALLED.sub("", rest)
        sentence = rest[:1].upper() + rest[1:]
    sentence = sentence.rstrip(";:, ")
    return sentence if not sentence or sentence.endswith(SENTENCE_ENDS) else sentence + "."


CALLED = re.compile(r"^[A-Z][a-z]+,\s+")
GREETING = re.compile(r"(?:oh\s+)?(?:hi|hiya|hello|hey|thanks|thank\s+you|morning|evening|ok|okay|right|yes|no|well)\b",
                      re.IGNORECASE)
"""The name a greeting (or a word said to someone) calls someone by ("Hey Mel, ...", "Thanks, Mel,"), after it."""
SAID_STEPS = frozenset({"personal/said", "personal/dated", "personal/content"})
"""The steps that keep a sentence as said for what it holds that no memory does (a name, a date):
one that starts with a pronoun the repair did not mend is dropped, as the model's to write."""
KEPT_STEPS = SAID_STEPS | {"personal/kept"}
"""The steps that keep a person's sentences as said (the model wrote none of them)."""
LEAD_IN = re.compile(r"^(?:[^\W\d_]+(?:\s+[^\W\d_]+){0,2}:|(?:oh|so|and|but|also|well|okay|ok|actually|anyway|"
                     r"honestly|wow|ha|haha|hmm|hi|hello|hey|alright)\b[,!]?|(?:yes|no|right|nice|great|cool|perfect|"
                     r"sure|thanks|agreed|lovely|good|brilliant|fine|exactly|true|totally|absolutely)[,!])\s+",
                     re.IGNORECASE)
"""What a sentence kept as said (`unheld_health`) starts with that says nothing: "Funny thing:", "Oh,",
"and"; a word that may say something ("no aspirin", "right knee") only when a comma follows it."""


CLAUSE = re.compile(r",\s*|\s+(?:and|but|so|because)\s+", re.IGNORECASE)
"""Where a sentence's clauses part: a memory may hold one clause of a line and nothing of the next
("I'm her maid of honour, so I'm planning the hen party too")."""


# -- summarizer ----------------------------------------------------------------------------------
@dataclass
class Plan:
    """What one user's summary will write, decided before anything is written."""

    user_name: str
    history: MemoryNode
    changes: list[Change] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    rejected: list[Rejection] = field(default_factory=list)
    kept_as_said: dict[str, tuple[set[str], bool]] = field(default_factory=dict)
    """The candidates written by code, not by the model (health sentences kept as said,
    `unheld_health`; relations, `unheld_relations`), by id, each with the words (`_stem`s) that
    make it news, and whether it may end a stored memory: one whose words (when it has any: fresh17's
    "My iron was on the floor ..., so I eat fish and eggs now, still no meat" had none, its rule
    aside, and was dropped as held) a stored memory holds is dropped before the reconcile, unless
    it may and does ("not allergic to penicillin after all": the health sentences)."""


class PersonalSummarizer:
    def __init__(self, repo: MemoryRepo, llm: ChatModel, prompts: PromptLibrary, config: RetrievalConfig) -> None:
        self.repo, self.llm, self.prompts, self.config = repo, llm, prompts, config

    async def plan(self, messages: list[Message], user_name: str, now: datetime | None = None) -> Plan:
        """The LLM calls of a summary; returns the writes to make, makes none."""
        now = now or utcnow()
        transcript = Transcript.of(messages, now)
        history = transcript.history_node(user_name)
        # The same conversation summarized again cites the history node already stored.
        history = (await self.repo.existing_by_hash([history])).get(history.content_hash, history)
        plan = Plan(user_name=user_name, history=history)
        candidates = await self._memories_of(transcript, history, user_name, now, plan)
        if not candidates:
            return plan
        vectors = await self.repo.embedder.embed([c.retrieval_text for c in candidates])
        candidates, vectors = distinct(candidates, vectors, plan.rejected)
        existing = await self._similar(candidates, vectors, user_name)
        if existing and plan.kept_as_said:  # what code kept that a stored memory holds is no news
            held = stems(n.content for n in existing)

            def ends_one(c: MemoryNode) -> bool:  # what it says, or its line as said ("Jago is my emergency contact
                turns = sorted(c.metadata["source_turns"])  # now": fresh27), with the question it answers ("Who
                said = " ".join(transcript.messages[i].content for i in turns)  # should be called now?": fresh29)
                asked = asked_before(transcript.messages, turns[0]) if turns else ""
                return any(ended(c.content, n.content, user_name) or ending(said, n.content, user_name, asked=asked)
                           for n in existing)

            stored = [k for k, c in enumerate(candidates) if c.memory_id in plan.kept_as_said
                      and plan.kept_as_said[c.memory_id][0] and plan.kept_as_said[c.memory_id][0] <= held
                      and not (plan.kept_as_said[c.memory_id][1] and ends_one(c))]
            for k in stored:
                plan.rejected.append(Rejection(step="personal/kept", path=f"memories[{k}]", action="dropped",
                                               reason=f"{candidates[k].content[:80]!r}: a stored memory holds it"))
            candidates = [c for k, c in enumerate(candidates) if k not in stored]
            vectors = [v for k, v in enumerate(vectors) if k not in stored]
            if not candidates:
                return plan
        if not existing:
            plan.changes = [Change(new=c, vector=v) for c, v in zip(candidates, vectors)]
            return plan
        shown = Shown.of(candidates, vectors, existing, transcript, user_name)
        plan.changes = await self._reconcile(shown, transcript, history, user_name, plan)
        return plan

    async def _memories_of(self, transcript: Transcript, history: MemoryNode, user_name: str, now: datetime,
                           plan: Plan) -> list[MemoryNode]:
        """The memories the conversation holds, checked, before they meet the stored ones: one
        extraction call per window that holds a line worth reading (`worth_reading`), shown those
        lines marked, each after the line before it; the health facts, names and times none holds
        kept as said; and one repair call for those that cannot stand on their own."""
        marked = worth_reading(transcript)
        parts = [window for window in transcript.windows(marked) if transcript.marked_in(window, marked)]
        replies = await asyncio.gather(*(self.llm.structured(
            self.prompts.messages("personal/extract", user_name=user_name,
                                  conversation=transcript.marked_in(window, marked)),
            Extraction, usage=plan.usage, rejected=plan.rejected, step="personal/extract",
            budget=96 + 160 * sum(1 for i in marked if i in window))
            for window in parts))
        extraction = Extraction(memories=[m for reply in replies for m in reply.memories])
        written: set[str] = set()  # the memories' texts as they will be stored
        candidates, flawed = self._candidates(extraction, transcript, history, user_name, now, plan.rejected, written)
        # a draft that says of the speaker what its line says of someone else holds nothing yet: the repair may not
        # mend it (fresh26: "Wiremu is a man with Duchenne muscular dystrophy" of "my boy, Tamati. He's eleven and
        # has Duchenne ...", dropped unrepaired, and the diagnosis with it)
        so_far = [c.content for c in candidates] + [d.text for d in flawed if d.problem != "misnamed"]
        unheld = unheld_health(transcript, so_far)
        speaker_words = transcript.speaker_words(user_name)
        if unheld:  # kept as said, its "I" named; one that cannot stand on its own goes to the repair
            more, more_flawed = self._kept_as_said(
                unheld, "personal/kept", "has a health fact no memory holds", transcript, history, user_name, now,
                # news: its health words and numbers, what it rules out, and the names in it (fresh27: "..., so my
                # daughter Aïssatou ... is my emergency contact now" was dropped as held by "... his wife Mariama,
                # who is his emergency contact")
                plan, written, lambda text: {_stem(w) for w in words(text) if w.isdigit() or health_word(w)}
                | {_stem(w) for w in restricted(text)} | {_stem(w) for w in named_in(text, speaker_words)},
                may_end=True, kind="health", importance=1.0)
            candidates += more
            flawed += more_flawed
        so_far += [sentence for _, sentence in unheld]
        answered = unheld_answers(transcript, user_name, so_far)
        if answered:  # the question asks whom to call, the answer who: no sentence holds both
            more, more_flawed = self._kept_as_said(
                answered, "personal/kept", "answers a question about an emergency with a name no memory holds",
                transcript, history, user_name, now, plan, written,
                # news: its names beside the emergency word (each name alone may be in a memory of another kind)
                lambda text: {"emerg"} | {_stem(w) for w in words(text)} & {_stem(w.casefold())
                                                                         for w in CAPITALIZED.findall(text)},
                may_end=True, kind="health", importance=1.0)  # "Who should be called now?" "Dawa first" (fresh29)
            candidates += more
            flawed += more_flawed
            so_far += [text for _, text in answered]
        avoided = unheld_avoided(transcript, user_name, so_far) + unheld_refusals(transcript, user_name, so_far)
        if avoided:  # the question asks what is to be avoided, the answer what: no sentence holds both
            more, more_flawed = self._kept_as_said(
                avoided, "personal/kept", "answers a question about what to avoid with a thing no memory holds",
                transcript, history, user_name, now, plan, written,
                lambda text: {"allerg", "avoid"} & {_stem(w) for w in words(text)} | {
                    _stem(w) for w in words(text.partition(": ")[2].split(",")[0]) if len(w) >= 3},
                kind="health", importance=1.0)
            candidates += more
            flawed += more_flawed
            so_far += [text for _, text in avoided]
        # the same for a name or number no memory holds, once the model was shown its line and kept
        # nothing of it (a relation written below holds its name)
        named = unheld_names(transcript, user_name, so_far + [text for _, text in unheld_relations(
            transcript, user_name, so_far)]) if parts else []
        if named:
            speakers = transcript.speaker_words(user_name)
            cited = {i for c in candidates for i in c.metadata["source_turns"]} | {i for d in flawed for i in d.sources}

            def names(text: str) -> set[str]:
                return {_stem(w) for w in named_in(text, speakers)}

            def names_and_words(text: str) -> set[str]:
                # of a line no memory was written of: a stored memory holding its names need not hold what
                # it says of them (fresh14: "Auckland Transport have found me a job in the depot" beside
                # "... drives the 70 bus for Auckland Transport")
                return names(text) | ({_stem(w) for w in content_words(text, speakers)} - UNITS)

            for group, news in (([(i, text) for i, text in named if i in cited], names),
                                ([(i, text) for i, text in named if i not in cited], names_and_words)):
                if group:
                    more, more_flawed = self._kept_as_said(
                        group, "personal/said", "has a name or number no memory holds", transcript, history,
                        user_name, now, plan, written, news)
                    candidates += more
                    flawed += more_flawed
        # the same for a time no memory dates ("I started ... three weeks ago" kept as "works at")
        dated = unheld_dates(transcript, [c.content for c in candidates] + [d.text for d in flawed])
        if dated:
            more, more_flawed = self._kept_as_said(
                dated, "personal/dated", "has a time no memory dates", transcript, history, user_name, now, plan,
                written, lambda text: {_stem(w) for d in DATED.findall(text) for w in words(d)})
            candidates += more
            flawed += more_flawed
        # the same for any sentence of a line it was shown whose words no memory holds
        so_far_cited = [(c.metadata["source_turns"], c.content) for c in candidates] + [(d.sources, d.text)
                                                                                         for d in flawed]
        unsaid = unheld_content(transcript, marked, user_name, [text for _, text in so_far_cited],
                                so_far_cited) if parts else []
        if unsaid:
            speakers = transcript.speaker_words(user_name)
            more, left = self._kept_as_said(
                unsaid, "personal/content", "says what no memory holds", transcript, history, user_name, now, plan,
                written, lambda text: {_stem(w) for w in content_words(text, speakers)}, may_end=True)
            candidates += more
            if flawed:  # the repair call is made anyway: they go with it
                flawed += left
            else:  # no call of their own: one that names no one is kept as it is, one that cannot stand is dropped
                candidates += self._unmended(left, transcript, history, user_name, now, plan, written)
        if flawed:
            candidates += await self._repair(flawed, transcript, history, user_name, now, plan, written)

        related = unheld_relations(transcript, user_name, [c.content for c in candidates])
        if related:  # written by code: who a person is to the speaker
            more = self._unrepaired(Extraction(memories=[
                ExtractedMemory(content=text, kind="relationship", importance=0.7, sources=[index])
                for index, text in related]), transcript, history, user_name, now, plan, written, "personal/relation")
            plan.kept_as_said |= {c.memory_id: ({_stem(w) for w in worth_holding(c.content)}, False) for c in more}
            candidates += more
        return candidates

    def _kept_as_said(self, found: list[tuple[int, str]], step: str, why: str, transcript: Transcript,
                      history: MemoryNode, user_name: str, now: datetime, plan: Plan, written: set[str],
                      news: Callable[[str], set[str]], *, may_end: bool = False,
                      **extra: Any) -> tuple[list[MemoryNode], list[Draft]]:
        """The sentences `found` (each with its line's index) kept as said, listed in `rejected` as
        `step` ("... `why`: kept as said"), its "He" or "She" named where the sentence before
        says whom it is (`named_subject`), a time answering when something was found said with
        what (`when_answered`), and checked as the extraction's memories are; each one
        kept is noted in `plan.kept_as_said` with the words that make it news (`news` of its text)
        and whether it `may_end` a stored memory. `extra`: the memories' kind and importance."""
        for _, sentence in found:
            plan.rejected.append(Rejection(step=step, action="defaulted",
                                           reason=f"{sentence[:80]!r} {why}: kept as said"))
        def kept(index: int, sentence: str) -> str:  # "She's my ...": whom the sentence before names
            text = led_in(transcript, index, sentence, named_subject(transcript, index, sentence))
            return when_answered(transcript, index, sentence) if text == sentence else text

        more, more_flawed = self._candidates(Extraction(memories=[
            ExtractedMemory(content=kept(index, sentence), sources=[index], **extra) for index, sentence in found]),
            transcript, history, user_name, now, plan.rejected, written, step=step)
        plan.kept_as_said |= {c.memory_id: (news(c.content), may_end) for c in more}
        return more, more_flawed

    def _unmended(self, flawed: list[Draft], transcript: Transcript, history: MemoryNode, user_name: str,
                  now: datetime, plan: Plan, written: set[str]) -> list[MemoryNode]:
        """The drafts `flawed` with no repair call: one that only names no speaker is kept as it
        is, as the repair keeps it; any other flaw drops it."""
        out: list[MemoryNode] = []
        for draft in flawed:
            node = self._node(draft, transcript, history, user_name, now, plan.rejected, written) \
                if draft.problem == "nobody" else None
            if node is not None:
                out.append(node)
                if draft.step in KEPT_STEPS:  # kept as said for what no memory held: news, as the others kept
                    plan.kept_as_said[node.memory_id] = ({_stem(w) for w in worth_holding(node.content)}, False)
            elif draft.problem != "nobody":
                plan.rejected.append(Rejection(
                    step=draft.step, path=f"memories[{draft.index}]", action="dropped",
                    reason=f"{draft.text[:80]!r} {PROBLEMS.get(draft.problem or '', '')}; not repaired"))
        return out

    def _unrepaired(self, extraction: Extraction, transcript: Transcript, history: MemoryNode, user_name: str,
                    now: datetime, plan: Plan, written: set[str], step: str) -> list[MemoryNode]:
        """The memories of `extraction`, checked as the extraction's are, once the repair is over:
        one that only names no speaker ("Lars is Ottilie's dad.") is kept as it is, as the repair
        keeps it; any other flaw drops it."""
        out, flawed = self._candidates(extraction, transcript, history, user_name, now, plan.rejected, written,
                                       step=step)
        return out + self._unmended(flawed, transcript, history, user_name, now, plan, written)

    async def _reconcile(self, shown: Shown, transcript: Transcript, history: MemoryNode, user_name: str,
                         plan: Plan) -> list[Change]:
        """One LLM call decides, per candidate, whether it adds to, updates or deletes a memory
        shown; the decisions are checked (`Decider`). No call when it could only add."""
        stored = await self._vectors_of(shown.existing)
        if stored is not None and not shown.ends and not any(
                cosine(memory, vector) >= SAME_SUBJECT for memory in stored for vector in shown.vectors):
            # Every candidate is about something else than every memory shown: the reconcile could
            # only add them (an UPDATE or DELETE of such a memory is not followed: `Decider.apart`).
            log.info("no candidate is about a memory shown; no reconcile call, they are added")
            decisions = Decisions(decisions=[])
        else:
            existing = [{"id": i, "content": n.content, "time": n.message_time.strftime("%Y-%m-%d")}
                        for i, n in enumerate(shown.existing)]
            listed = [{"index": i, "content": c.content, "time": c.message_time.strftime("%Y-%m-%d")}
                      for i, c in enumerate(shown.candidates)]
            decisions = await self.llm.structured(
                self.prompts.messages("personal/reconcile", user_name=user_name, existing=existing, candidates=listed),
                decisions_for(len(shown.candidates), len(shown.existing)), usage=plan.usage, rejected=plan.rejected,
                step="personal/reconcile",
                budget=64 + 160 * len(shown.candidates))  # at most two decisions of a merged sentence each
        def said(sentence: str, cand: MemoryNode) -> str | None:
            sources = cand.metadata["source_turns"]
            text = self._reworded(subject_named(sentence.strip(), transcript, sources), transcript, sources,
                                  user_name, cand.message_time)
            return None if not text or flaw(text, transcript.people(user_name)) else text

        decider = Decider(shown, history, plan.rejected,
                          lambda text, cand: self._reworded(text, transcript, cand.metadata["source_turns"],
                                                            user_name, cand.message_time), said, stored,
                          news={k for k, c in enumerate(shown.candidates) if c.memory_id in plan.kept_as_said})
        return decider.decide(decisions)

    def _candidates(self, extraction: Extraction, transcript: Transcript, history: MemoryNode,
                    user_name: str, now: datetime, rejected: list[Rejection], written: set[str], *,
                    step: str = "personal/extract") -> tuple[list[MemoryNode], list[Draft]]:
        """The extracted memories ready to store, and those that cannot stand on their own
        (`flaw`), for one repair call. `written`: the texts of the memories to store so far (an
        equal one is stored once), added to here."""
        out: list[MemoryNode] = []
        flawed: list[Draft] = []
        seen: set[str] = set()  # as the model wrote them
        items = extraction.memories
        if len(items) > MAX_SUMMARY_CANDIDATES:
            log.warning("extraction returned %d memories; the first %d are kept", len(items), MAX_SUMMARY_CANDIDATES)
            rejected.append(Rejection(step=step, path=f"memories[{MAX_SUMMARY_CANDIDATES}:]",
                                      action="dropped", reason=f"{len(items)} memories in one reply; the first "
                                                               f"{MAX_SUMMARY_CANDIDATES} are kept"))
            items = items[:MAX_SUMMARY_CANDIDATES]
        people = transcript.people(user_name)
        names = {w for n in transcript.speakers for w in words(n)}
        for index, item in enumerate(items):
            text = item.content.strip()
            if not text or normalize_text(text) in seen:
                continue
            seen.add(normalize_text(text))
            sources = sorted({i for i in item.sources if 0 <= i < len(transcript.times)})
            if I_WORDS & set(words(text)) and sources \
                    and (there := elsewhere(text, transcript, sources, names)) is not None \
                    and {transcript.messages[i].name for i in sources if transcript.messages[i].role == "user"} \
                    != {transcript.messages[there].name}:
                # fresh26: "I'm the pregnant one" of the sister's line cited the assistant
                # whose "I" it is: the line that says it, not the one cited (fresh25, qwen1.5b: "I live in Launceston
                # with my husband Artyom" cited Artyom's line and became "Artyom lives ... with Artyom's husband")
                sources = [there]
            elif I_WORDS & set(words(text)) and sources and all(transcript.messages[i].role == "assistant"
                                                                for i in sources):
                # an "I" or "my" is no assistant's: the answer beside the question it cites (fresh33, qwen1.5b: "My
                # emergency contact now is Tangeni first, ..." cited "Who is your emergency contact now?")
                beside_it = cited_or_beside(text, transcript, sources)
                sources = [j for j in beside(sources, len(transcript.messages))
                           if any(transcript.messages[j] is m for m in beside_it)][:1] or sources
            draft = Draft(index, item, text, text, sources,
                          transcript.times[sources[-1]] if sources else transcript.times[-1], step=step)
            reason = not_a_memory(text, transcript.messages, sources, user_name)
            if reason:
                rejected.append(Rejection(step=step, path=f"memories[{index}]", action="dropped", reason=reason))
                continue
            if turned_down := declined(text, transcript.messages):
                left = without(text, {_stem(w) for w in turned_down}, people, rejected, step, index,
                               f"{text[:80]!r} says what the assistant suggested and was not taken up "
                               f"({', '.join(turned_down[:5])})")
                if left is None:
                    continue
                text = left
            lines = " ".join(transcript.messages[i].content for i in sources if transcript.messages[i].role == "user")
            if lines and (gone := taken_though_stopped(text, lines)):
                # qwen1.5b: "Bartosz is taking modafinil and pitolisant" of "The modafinil stopped working, ..."
                left = without(text, gone, people, rejected, step, index,
                               f"{text[:80]!r} states as current what its own line says has ended "
                               f"({', '.join(sorted(gone))})")
                if left is None:
                    continue
                text = left
            if sources and all(transcript.messages[i].role == "assistant" for i in sources) and len(
                    near := cited_or_beside(text, transcript, sources)) == 1 and near[0].role == "user" and all(
                    near[0] is not transcript.messages[j] for j in beside(sources, len(transcript.messages))):
                # the line that says it, not one beside (`cited_or_beside`), is what it is checked and named by
                sources = draft.sources = [next(i for i, m in enumerate(transcript.messages) if m is near[0])]
            draft.text = allergy_asked_of(self._reworded(subject_named(text, transcript, sources), transcript,
                                                         sources, user_name, draft.said), transcript, sources)
            # another speaker's words in the lines it cites, or what another says they are anywhere
            # (not of a relation code wrote: "Rhea is Jomar's cousin." of "I'm Rhea, his cousin." is no "my cousin"
            # Jomar said of himself: fresh34)
            if step != "personal/relation" and (another := said_by_another(
                    draft.text, cited_or_beside(draft.text, transcript, sources), transcript.speakers)
                                                or claimed_by_another(draft.text, transcript.messages)):
                named, speaker = another
                draft.text = speaker + draft.text.strip()[len(named):]
                rejected.append(Rejection(step=step, path=f"memories[{index}]", action="defaulted",
                                          reason=f"it named {named} for what {speaker} said of themselves: "
                                                 f"{speaker} is named"))
            # the line beside when it cites the assistant's (fresh29: "Nanya's husband Obiora" for "My husband Obiora")
            if owner := wrong_owner(draft.text, cited_or_beside(draft.text, transcript, sources)):
                said_of, whose = owner
                draft.text = whose + draft.text.strip()[len(said_of):]
                rejected.append(Rejection(step=step, path=f"memories[{index}]", action="defaulted",
                                          reason=f"it gave {said_of} what the line says is {whose}'s: "
                                                 f"{whose} is named"))
            near = cited_or_beside(draft.text, transcript, sources)  # the line beside, when it cites no one's
            draft.problem = flaw(draft.text, people) or (
                "misnamed" if misnamed(draft.text, near, transcript.names)
                or self_compared(draft.text)
                or anothers_relation(draft.text, near)
                or anothers_diagnosis(draft.text, transcript.messages) else None)
            if draft.problem:
                flawed.append(draft)
                continue
            node = self._node(draft, transcript, history, user_name, now, rejected, written)
            if node is not None:
                out.append(node)
        return out, flawed

    async def _repair(self, flawed: list[Draft], transcript: Transcript, history: MemoryNode, user_name: str,
                      now: datetime, plan: Plan, written: set[str]) -> list[MemoryNode]:
        """One LLM call rewrites the memories that cannot stand on their own (`_rewrites`); none
        when each only names no one: kept as it is ("No cranberry juice, ever, and no ibuprofen."
        under the user it was said by), as when the call fails (fresh13, qwen1.5b: the call
        named two of eleven such and blanked most of the rest); and none for sentences code kept
        as said (`KEPT_STEPS`) alone: they go with a call the extraction's memories need, and
        are otherwise taken as that call would take them if it gave nothing (fresh20, qwen1.5b:
        it mended none of 23 such sentences starting with a pronoun in 16 calls), but
        for one starting with "He" or "She" whom code could not name ("Nico and Leo are coming
        too. He's eight and he's allergic to egg."): a model that can tell whom is asked; and none for a memory
        given to the wrong person alone (`misnamed`: of about ten such calls replayed on fresh31-fresh35, qwen1.5b
        mended one, a daughter's birth date; the others gave the memory back unmended, or nothing; it is dropped,
        and a health fact it held is kept as said by code). A
        rewrite that is still a fragment, a question or the assistant's, that keeps none of the
        numbers, names and health words the memory held (one index off), or no rewrite, drops a
        fragment; a memory that only names no one, or starts with a pronoun, is kept as it was."""
        rewrites = await self._rewrites(flawed, transcript, user_name, plan) if any(
            d.problem not in ("nobody", "misnamed") and not (d.step in KEPT_STEPS and d.problem == "pronoun"
                                                             and not pronoun_led(d.text, THIRD_PERSON))
            for d in flawed) else {}
        out: list[MemoryNode] = []
        people = transcript.people(user_name)
        for k, draft in enumerate(flawed):
            log.debug("repair: %s %s %r -> %r", draft.step, draft.problem, draft.text[:100], rewrites.get(k, "")[:100])
            text = rewrites.get(k)
            held = {_stem(w) for w in salient(draft.text)}
            if text is not None and held and not held & stems([text]):
                # fresh14 (qwen1.5b): a rewrite one index off ("Bronagh has the copper coil" for
                # "Never an ACE inhibitor, ramipril, lisinopril ...") keeps none of its numbers, names
                # or health words: not a rewrite of it
                plan.rejected.append(Rejection(step="personal/repair", path=f"memories[{draft.index}]",
                                               action="dropped", reason=f"the rewrite {text[:80]!r} keeps nothing "
                                                                        f"{draft.text[:60]!r} named"))
                text = None
            if text is not None and not not_a_memory(text, transcript.messages, draft.sources, user_name):
                text = self._reworded(text, transcript, draft.sources, user_name, draft.said)
                # a rewrite still in the first person, or starting with a pronoun, mends nothing
                if flaw(text, people) not in ("first_person", "pronoun") and not fragment(text) and not dangling(
                        text, people) and not self_compared(text) and not misnamed(
                        text, cited_or_beside(text, transcript, draft.sources), transcript.names):
                    draft.raw, draft.text = rewrites[k], text
                    draft.problem = None
            # a sentence kept as said that starts with "it" or "he" is the model's to write, not ours
            if draft.problem in ("fragment", "misnamed") or (draft.problem == "pronoun" and draft.step in SAID_STEPS):
                why = {"fragment": "is a fragment, not a memory", "pronoun": "starts with a pronoun"}.get(
                    draft.problem, "says of the speaker what the line says of someone else (she, he, they)")
                plan.rejected.append(Rejection(
                    step=draft.step, path=f"memories[{draft.index}]", action="dropped",
                    reason=f"{draft.item.content.strip()[:80]!r} {why}, and was not repaired"))
                continue
            if draft.problem == "dangling":  # what stands without the vague sentences, if anything
                vague = dangling(draft.text, people)
                rest = " ".join(t.strip() for t in SENTENCE.split(draft.text) if t.strip() and t.strip() not in vague)
                plan.rejected.append(Rejection(
                    step=draft.step, path=f"memories[{draft.index}]", action="defaulted" if rest else "dropped",
                    reason=f"{' '.join(vague)[:80]!r} says \"it\" or \"that\" without saying what and was not "
                           "repaired" + ("; the rest is kept" if rest else "")))
                if not rest:
                    continue
                draft.text = rest
            node = self._node(draft, transcript, history, user_name, now, plan.rejected, written)
            if node is not None:
                out.append(node)
                if draft.step in KEPT_STEPS:  # kept as said for what no memory held: news, as the others kept
                    plan.kept_as_said[node.memory_id] = ({_stem(w) for w in worth_holding(node.content)}, False)
        return out

    async def _rewrites(self, flawed: list[Draft], transcript: Transcript, user_name: str,
                        plan: Plan) -> dict[int, str]:
        """The repair call: the memories `flawed`, each with its problem, shown beside the lines
        they cite and the lines around them (an answer and its question); their rewrites by
        index, with any copy of a problem's note taken out; none when the call fails (listed in
        `plan.rejected`)."""
        # an answer and its question; for "she" said of someone, the line before that question too
        near = sorted({j for d in flawed for i in d.sources for j in range(i - 1 - (d.problem == "misnamed"), i + 2)
                       if 0 <= j < len(transcript.lines)})
        lines = "\n".join(f"[{j}] {transcript.lines[j]}" for j in near) if near else transcript.numbered
        shown = [{"index": k, "content": d.text, "problem": PROBLEMS.get(d.problem or "", "")}
                 for k, d in enumerate(flawed)]
        rewrites: dict[int, str] = {}
        try:
            reply = await self.llm.structured(
                self.prompts.messages("personal/repair", user_name=user_name, conversation=lines, memories=shown),
                Repairs, usage=plan.usage, rejected=plan.rejected, step="personal/repair",
                budget=64 + 96 * len(flawed))
        except LLMError as exc:  # the repair only mends wording: without it, keep what can stand
            log.warning("memory repair skipped: %s", exc)
            plan.rejected.append(Rejection(step="personal/repair", action="dropped", reason=str(exc)[:300]))
            return rewrites
        notes = [words(problem) for problem in PROBLEMS.values()]
        for r in reply.memories:
            # "the PhD (a fragment, not a sentence)": the line as shown, its note copied, in any quotes
            content = re.sub(r"\s*\(([^()]*)\)", lambda m: "" if words(m[1]) in notes else m[0], r.content)
            # or a note cut short, or one with parentheses of its own (fresh30: "Mert has coeliac disease ... (says
            # of the speaker what the line says of someone else (")
            content = next((content[:m.start()] for note in PROBLEMS.values()
                            if (m := re.search(r"\s*[(（]\s*" + re.escape(" ".join(note.split()[:4])), content))),
                           content)
            if 0 <= r.index < len(flawed) and content.strip():
                rewrites.setdefault(r.index, content.strip())
        return rewrites

    @staticmethod
    def _node(draft: Draft, transcript: Transcript, history: MemoryNode, user_name: str, now: datetime,
              rejected: list[Rejection], written: set[str]) -> MemoryNode | None:
        """The memory to store for `draft`; None when one with the same text is stored already
        ("I moved ..." of Kate is "Kate moved ...") or it does not validate."""
        if normalize_text(draft.text) in written:
            return None
        written.add(normalize_text(draft.text))
        item, sources = draft.item, draft.sources
        event = event_time(item, draft.raw, [transcript.messages[i].content for i in sources], draft.said)
        try:
            return MemoryNode(memory_type=MemoryType.PERSONAL, memory_target=user_name, content=draft.text,
                              message_time=draft.said, event_start=event.start if event else None,
                              event_end=event.end if event else None,
                              time_created=now, time_modified=now, score=item.importance,
                              tags=[item.kind.strip().lower()] if item.kind.strip() else [],
                              ref_ids=[history.memory_id],
                              metadata={"source_turns": sources, "said_at": draft.said.isoformat()})
        except ValidationError as exc:  # e.g. text that is not valid Unicode
            log.warning("extracted memory %r dropped: %s", draft.text[:80], describe(exc))
            rejected.append(Rejection(step=draft.step, path=f"memories[{draft.index}]", action="dropped",
                                      reason=describe(exc)[:200]))
            return None

    @staticmethod
    def _reworded(text: str, transcript: Transcript, sources: list[int], user_name: str, said: datetime) -> str:
        """The memory with its "I" named (when the messages it cites have one speaker (a user
        turn's name, else the user's); all of the conversation's when it cites none; the speaker
        a memory copied a line with, "Name: ...", whom the prefix names, and the prefix goes) and
        its relative times dated as of when they were said, "on Monday" and "on the 29th" as the
        cited line tells it, else a line of the conversation (`reme.memory.wording`)."""
        cited = [transcript.messages[i] for i in sources] or transcript.messages
        speakers = {m.name or user_name for m in cited if m.role == "user"}
        if CARERS_DID.match(text) and (told := next((m.content[:at] for m in cited if m.role == "user" and
                                                     (at := m.content.find(text[:text.find(" ", 5)])) >= 0), None)) \
                is not None:
            text = carers_named(told, text)  # the line said "They gave me ...", as the model wrote it
        prefix = SPEAKER_PREFIX.match(text)
        named = {m.name or user_name for m in transcript.messages if m.role == "user"}
        if prefix and prefix[1].strip().casefold() in {n.casefold() for n in named}:
            # a line copied with its speaker ("Annika: And I'm allergic to mustard": qwen0.5b): they said it
            speakers = {next(n for n in named if n.casefold() == prefix[1].strip().casefold())}
            text = text[prefix.end():]
        text = it_copied(object_copied(without_empty_it(text), transcript, sources), transcript, sources)
        if not speakers:  # it cites only the assistant: a small model's sources are often off by one
            speakers = {transcript.messages[j].name or user_name for j in beside(sources, len(transcript.messages))
                        if transcript.messages[j].role == "user"}
            if len(speakers) > 1:  # the line beside that holds its words (fresh33: "My emergency contact now is
                # Tangeni first, ..." cited the question between Tangeni's line and Ndapewa's answer)
                speakers = {m.name or user_name for m in cited_or_beside(text, transcript, sources)
                            if m.role == "user"} or speakers
        lines = [m.content for m in cited if m.role == "user"]  # a day's year as the line's tense tells it
        if len(speakers) == 1:
            speaker = speakers.pop()
            # the line beside when it cites only the assistant's (fresh35: "Her husband is ..." cited "Who's in your
            # family?")
            own = cited if any(m.role == "user" for m in cited) else cited_or_beside(text, transcript, sources)
            reworded = anchor_times(own_pronoun(name_the_speaker(text, speaker, we=True), own, speaker), said, lines)
        else:
            reworded = anchor_times(text, said, lines)
        reworded = anchor_weekdays(reworded, said, [m.content for m in cited],
                                   [m.content for m in transcript.messages if m.role == "user"])
        reworded = with_the_time_said(reworded, said, [transcript.messages[i].content for i in sources
                                                       if transcript.messages[i].role == "user"])
        return reworded if len(reworded) <= MAX_CONTENT_CHARS else text

    async def _similar(self, candidates: list[MemoryNode], vectors: list[list[float]],
                       user_name: str) -> list[MemoryNode]:
        """The user's stored memories most like the candidates (not expired), searched as the retriever
        searches, in the order they were said (then by text): the reconcile prompt lists them so, the
        same for the same memories whatever order the store returns equal ones in (a recorded reply
        answers the same request again: `benchmark/quality --replies`)."""
        flt = user_filter(user_name, live())
        lists = await asyncio.gather(*(
            fused_search(self.repo.store, self.repo.collection, c.content, v, flt, SIMILAR_PER_CANDIDATE, self.config)
            for c, v in zip(candidates, vectors)))
        found: dict[str, MemoryNode] = {}
        for results in lists:
            for result in results:
                found.setdefault(result.node.memory_id, result.node)
        return sorted(list(found.values())[:MAX_SHOWN], key=lambda n: (n.message_time, n.content, n.memory_id))

    async def _vectors_of(self, existing: list[MemoryNode]) -> list[list[float]] | None:
        """The stored vectors of the memories shown (read with them; one embedded again only if it
        went meanwhile); None where the embedder embeds no meaning."""
        if not getattr(self.repo.embedder, "semantic", True):
            return None
        got = await self.repo.store.get(self.repo.collection, [n.memory_id for n in existing], with_vectors=True)
        read = {r.node.memory_id: r.vector for r in got.found if r.vector is not None}
        gone = [n.retrieval_text for n in existing if n.memory_id not in read]
        made = iter(await self.repo.embedder.embed(gone) if gone else [])
        return [read[n.memory_id] if n.memory_id in read else next(made) for n in existing]

    async def commit(self, plan: Plan) -> SummaryResult:
        result = SummaryResult(usage=plan.usage, rejected=plan.rejected)
        written = await self.repo.apply([Change(new=plan.history), *plan.changes])
        history, _ = written[0]
        result.history.append(history)
        for change, (node, wrote) in zip(plan.changes, written[1:]):
            if not wrote:
                continue
            if change.old is None:
                result.added.append(node)
            elif change.new is None:
                result.deleted.append(node)
            else:
                result.updated.append(node)
        return result


@dataclass
class Shown:
    """A reconcile's two sides: the candidates (with their vectors) and the user's memories shown
    beside them, with the (candidate, memory id) pairs whose candidate's cited lines say that the
    memory has ended (`ended`)."""

    candidates: list[MemoryNode]
    vectors: list[list[float]]
    existing: list[MemoryNode]
    ends: dict[tuple[int, int], set[str]]
    """(candidate, memory shown) -> the stems of the memory's words the candidate's line ends."""
    own: set[tuple[int, int]]
    """The pairs of `ends` whose line says so of the speaker's own ("I've come off ...")."""
    cited: list[str]
    """Each candidate's cited lines, joined."""
    asked: list[str]
    """The question each candidate's first cited line answers (`asked_before`), or ""."""

    @classmethod
    def of(cls, candidates: list[MemoryNode], vectors: list[list[float]], existing: list[MemoryNode],
           transcript: Transcript, user_name: str) -> "Shown":
        turns = [sorted(c.metadata["source_turns"]) for c in candidates]
        cited = [" ".join(transcript.messages[i].content for i in t) for t in turns]
        asked = [asked_before(transcript.messages, t[0]) if t else "" for t in turns]
        ends = {(k, j): what for k, lines in enumerate(cited) for j, n in enumerate(existing)
                if (what := ending(lines, n.content, user_name, asked=asked[k]))}
        own = {(k, j) for k, j in ends if ending(cited[k], existing[j].content, user_name, own=True, asked=asked[k])}
        return cls(candidates, vectors, existing, ends, own, cited, asked)

    @functools.cached_property
    def conditions(self) -> list[set[str]]:
        """The lasting conditions each memory shown names (`conditions_named` of `lasting`), read once."""
        return [conditions_named(lasting(n.content)) for n in self.existing]


def asked_before(messages: Sequence[Message], index: int) -> str:
    """The question the assistant asked just before line `index` (its last sentence, when that
    asks), or "": what a short answer ("Finished in August") is about."""
    if index <= 0 or index >= len(messages) or messages[index - 1].role != "assistant":
        return ""
    last = SENTENCE.split(messages[index - 1].content.strip())[-1]
    return last if last.endswith("?") else ""


@dataclass
class Decider:
    """The writes a reconcile's decisions call for (`decide`): decisions naming what was not
    shown are dropped, and each decision not followed as given is listed in `rejected`. A merged
    text is reworded as its candidate was (`reword`)."""

    shown: Shown
    history: MemoryNode
    rejected: list[Rejection]
    reword: Callable[[str, MemoryNode], str]
    said: Callable[[str, MemoryNode], str | None]
    """A sentence of a candidate's lines as a memory (its speaker named, its times dated), or None
    when it cannot stand alone."""
    stored: list[list[float]] | None
    """The vectors of the memories shown (None: the embedder embeds no meaning; `apart`)."""
    changes: list[Change] = field(default_factory=list)
    decided: set[int] = field(default_factory=set)  # candidates
    claimed: set[int] = field(default_factory=set)  # memories shown
    added: set[int] = field(default_factory=set)  # candidates
    placed: set[int] = field(default_factory=set)  # candidates that took a memory's place (an update)
    endings: dict[tuple[int, int], list[str]] = field(default_factory=dict)  # `_ending`, by (candidate, memory)
    news: set[int] = field(default_factory=set)
    """Candidates code kept as said for what no memory shown holds (`Plan.kept_as_said`): a NONE of one is not followed
    (fresh35: "Now it's only potassium chloride, twelve tablets a day, and the omeprazole." was lost as known)."""
    texts: dict[str, int] = field(init=False)  # normalized text of a memory shown -> its id

    def __post_init__(self) -> None:
        self.texts = {}
        for i, n in enumerate(self.shown.existing):
            self.texts.setdefault(normalize_text(n.content), i)

    @staticmethod
    def apart(decisions: Decisions, shown: Shown, stored: list[list[float]] | None) -> set[tuple[int, int]]:
        """The (memory id, candidate) pairs of the UPDATE and DELETE decisions whose stored memory
        is about something else than the candidate (`SAME_SUBJECT`; `SAME_SUBJECT_UNSHARED` when the
        two share no word) and which its line does not
        end, given the vectors of the memories shown (`stored`; None: the embedder embeds no
        meaning, and none is)."""
        if stored is None:
            return set()
        return {(d.id, d.candidate) for d in decisions.decisions
                if d.action in ("UPDATE", "DELETE") and d.id is not None and 0 <= d.id < len(shown.existing)
                and 0 <= d.candidate < len(shown.vectors) and (d.candidate, d.id) not in shown.ends
                and cosine(stored[d.id], shown.vectors[d.candidate]) < (
                    SAME_SUBJECT if topic_words(shown.existing[d.id].content)
                    & topic_words(shown.candidates[d.candidate].content) else SAME_SUBJECT_UNSHARED)}

    def decide(self, decisions: Decisions) -> list[Change]:
        """The writes the decisions call for (`apart`: an UPDATE or DELETE of a memory about
        something else adds the candidate instead). A candidate left without a decision is
        added, and so is one code kept for news that the model called known (NONE: `news`), or one whose decisions were
        not followed or only DELETEd a memory (it states
        what made that memory obsolete); one added beside a memory its line says has ended updates
        that memory instead (`_ended_instead`)."""
        shown = self.shown
        apart = self.apart(decisions, shown, self.stored)
        deleting: set[int] = set()  # candidates whose DELETE was followed
        for k, d in enumerate(decisions.decisions):
            if not 0 <= d.candidate < len(shown.candidates):
                self._reject(k, f"it names candidate {d.candidate}; there are {len(shown.candidates)}")
                continue
            cand = shown.candidates[d.candidate]
            if d.action == "NONE" and (ended := next((j for j in range(len(shown.existing))
                                                      if (d.candidate, j) in shown.ends), None)) is not None:
                # qwen1.5b, fresh8: "already known" of "Pyridostigmine is down to three times a day"
                # beside "... 60 mg four times a day": what is known is not what the memory says now
                self.rejected.append(Rejection(
                    step="personal/reconcile", path=f"decisions[{k}]", action="defaulted",
                    reason=f"NONE of candidate {d.candidate}, whose line says memory id {ended} has ended; the "
                           "candidate is added"))
                continue
            if d.action == "NONE" and d.candidate in self.news:
                self.rejected.append(Rejection(
                    step="personal/reconcile", path=f"decisions[{k}]", action="defaulted",
                    reason=f"NONE of candidate {d.candidate}, which holds what no memory shown holds; the candidate "
                           "is added"))
                continue
            if d.action in ("ADD", "NONE"):
                self.decided.add(d.candidate)
                if d.action == "ADD" and (at := self._stored(cand.content)) is not None:
                    self._reject(k, f"ADD of candidate {d.candidate}, whose text stored memory {at} holds already")
                elif d.action == "ADD":
                    self._add(d.candidate)
                continue
            if d.id is None or not 0 <= d.id < len(shown.existing):
                self._reject(k, f"{d.action} names memory id {d.id}, not one of the {len(shown.existing)} shown")
                continue
            if d.id in self.claimed:  # the candidate stays undecided: added below unless another decision takes it
                self.rejected.append(Rejection(
                    step="personal/reconcile", path=f"decisions[{k}]", action="defaulted",
                    reason=f"memory id {d.id} was already changed by an earlier decision; the candidate is kept"))
                continue
            if d.action == "UPDATE":  # a DELETE leaves its candidate undecided: added below unless an ADD takes it
                self.decided.add(d.candidate)
            if (d.id, d.candidate) in apart:
                self.rejected.append(Rejection(
                    step="personal/reconcile", path=f"decisions[{k}]", action="defaulted",
                    reason=f"the {d.action} of memory id {d.id}, which is about something else than the candidate; "
                           "the memory stays and the candidate is added"))
                self._add(d.candidate)
                continue
            self.claimed.add(d.id)
            old = shown.existing[d.id]
            if d.action == "DELETE":
                deleting.add(d.candidate)
                self.changes.append(Change(old=old, reason=d.reason or f"contradicted by: {cand.content}"))
            else:
                self._update(k, d, cand, old)
        for i, cand in enumerate(shown.candidates):
            if i in self.decided or i in self.added or self._stored(cand.content) is not None:
                continue
            if i in deleting:  # what makes a memory obsolete is news itself ("not vegetarian any more")
                self.rejected.append(Rejection(
                    step="personal/reconcile", path=f"candidates[{i}]", action="defaulted",
                    reason="a DELETE gave it no ADD; the candidate is added"))
            else:
                log.info("reconcile gave no decision for candidate %d; it is added", i)
            self.changes.append(Change(new=cand, vector=shown.vectors[i]))
        self._ended_instead()
        self._once()
        return self.changes

    def _ending(self, k: int, j: int) -> list[str]:
        """The sentences of candidate `k`'s lines that end memory `j` (`ending`), alone (the first
        after the question it answers: "No." to "Still driving the trams?") or after the sentence
        before it ("I was on warfarin. They took me off it."); worked out once per pair."""
        if (k, j) in self.endings:
            return self.endings[(k, j)]
        shown = self.shown
        stored, target = shown.existing[j].content, shown.existing[j].memory_target
        sentences = [s for s in SENTENCE.split(shown.cited[k]) if s.strip()]
        return self.endings.setdefault((k, j), [s for i, s in enumerate(sentences)
                if ending(s, stored, target, asked=shown.asked[k] if i == 0 else "")
                or i and ending(" ".join(sentences[i - 1:i + 1]), stored, target)
                - ending(sentences[i - 1], stored, target)])

    def _about(self, k: int, j: int) -> bool:
        """Whether candidate `k` is about what its lines end of memory `j`: it holds a word they
        end (`shown.ends`), says nothing but what a sentence of its lines that ends it and the
        memory say (`_ending`: "Irene is a pastry chef now" of "I quit Deloitte and now I'm a
        pastry chef"; "Ana learns the piano from videos now" of "Dr Hollis is out of the picture, I
        learn from videos now" for "Ana's piano teacher is Dr Hollis"),
        or its vector is near the memory's (`SAME_SUBJECT`)."""
        shown = self.shown
        target = shown.existing[j].memory_target
        # the years and periods dated in code are no words of the candidate's own ("... at the end of February 2026")
        own = _content_stems(YEAR.sub(" ", PARENTHESES.sub(" ", shown.candidates[k].content)), target) - UNITS
        told = _content_stems(" ".join([*self._ending(k, j), shown.existing[j].content]), target)
        if own & shown.ends[(k, j)] or own and own <= told:
            return True
        return self.stored is not None and cosine(self.stored[j], shown.vectors[k]) >= SAME_SUBJECT

    def _as_said(self, k: int, j: int) -> None:
        """Memory `j`, which candidate `k`'s lines end though the candidate is about something
        else (`_about`), takes what those lines say of it, as said (`said`: "The company doctor
        took Lotte off the trams for good."); it stays as it is when that cannot stand alone."""
        cand, over = self.shown.candidates[k], self.shown.existing[j]
        # the first of its sentences that stands alone ("No." to "Still driving the trams?" does not)
        text = next((said for sentence in self._ending(k, j) if (said := self.said(sentence, cand))), None)
        if text and normalize_text(text) != normalize_text(cand.content) and self._stored(text) is None:
            try:
                node = revised(over, cand, text, self.history)
            except ValidationError:
                node = None
            if node is not None:
                self.claimed.add(j)
                self.changes.append(Change(new=node, old=over, reason=f"ended by: {text}"))
                self.rejected.append(Rejection(
                    step="personal/reconcile", path=f"candidates[{k}]", action="defaulted",
                    reason=f"its line says {over.content[:80]!r} has ended, and the candidate is about something "
                           "else: the memory takes what its line says of it, the candidate goes beside it"))
                return
        self.rejected.append(Rejection(
            step="personal/reconcile", path=f"candidates[{k}]", action="defaulted",
            reason=f"its line says {over.content[:80]!r} has ended, and the candidate is about something else: "
                   "the memory stays as it is (what its line says of it cannot stand alone)"))

    def _once(self) -> None:
        """Each text written once: a change that would give a memory the text an update gives
        another is not made: an add is dropped, a later update leaves its memory as it is (qwen1.5b,
        fresh11: "Lamotrigine took its place: ..." UPDATEd one memory and was added beside another's
        UPDATE that was not followed, so the same memory was stored twice), unless code made that update
        from a line that ends part of the memory: then the memory goes, its rest being stored already."""
        updated = {normalize_text(c.new.content) for c in self.changes if c.new is not None and c.old is not None}
        seen: set[str] = set()
        kept: list[Change] = []
        for change in self.changes:
            if change.new is None:  # a deletion
                kept.append(change)
                continue
            text = normalize_text(change.new.content)
            if text in seen and change.old is not None and change.reason.startswith(("in part ended by", "ended by")):
                # what code left of a memory once a line ended part of it is another memory's new text: the memory
                # goes (fresh35: the dose changed in both, the ondansetron ended in one; the other kept the old dose)
                kept.append(Change(old=change.old, reason=f"{change.reason}; what is left is written once"))
                self.rejected.append(Rejection(step="personal/reconcile", action="defaulted",
                                               reason=f"{change.new.content[:80]!r} is written once: "
                                                      f"{change.old.content[:60]!r} is deleted"))
                continue
            if text in seen or change.old is None and text in updated:
                what = "not added" if change.old is None else f"{change.old.content[:60]!r} stays as it is"
                self.rejected.append(Rejection(step="personal/reconcile", action="dropped",
                                               reason=f"{change.new.content[:80]!r} is written once: {what}"))
                continue
            seen.add(text)
            kept.append(change)
        self.changes = kept

    def _reject(self, k: int, reason: str) -> None:
        log.warning("reconcile decision %d ignored: %s", k, reason)
        self.rejected.append(Rejection(step="personal/reconcile", path=f"decisions[{k}]", action="dropped",
                                       reason=reason))

    def _stored(self, text: str) -> int | None:
        """The id of the memory shown whose text is `text` (normalized), if one is."""
        return self.texts.get(normalize_text(text))

    def _add(self, k: int) -> None:
        """Candidate `k` added (once, and not when a memory shown says it already)."""
        cand = self.shown.candidates[k]
        if self._stored(cand.content) is None and k not in self.added:
            self.added.add(k)
            self.changes.append(Change(new=cand, vector=self.shown.vectors[k]))

    def _beside(self, k: int, d: Decision, why: str) -> None:
        """UPDATE decision `k` is not followed: its memory stays, its candidate is added beside it."""
        self.rejected.append(Rejection(step="personal/reconcile", path=f"decisions[{k}]", action="defaulted",
                                       reason=f"the UPDATE of memory id {d.id} {why}"))
        self.claimed.discard(d.id)
        self._add(d.candidate)

    def _update(self, k: int, d: Decision, cand: MemoryNode, old: MemoryNode) -> None:
        """The UPDATE decision `k` of memory `d.id` by `cand`, its merged text checked: one with no
        word of either, or the stored text unchanged, takes the candidate's (unless the candidate
        shares no `topic_words` with the memory: then it is added beside it); a health sentence of
        the stored memory it drops goes back in, or, when that sentence holds words of the
        candidate too, the memory stays and the candidate is added beside it."""
        text = self.reword((d.text or "").strip(), cand) or cand.content
        j = self.shown.existing.index(old)
        ends = self.shown.ends.get((d.candidate, j))
        rest = kept_apart(old.content, ends, set(words(old.memory_target))) if ends else None
        # qwen1.5b, fresh8: "came off the prednisone" UPDATEd "Benedikt was taking pyridostigmine, 60 mg
        # four times a day, and prednisone ..." to "Benedikt is taking" both again
        again = (ending(self.shown.cited[d.candidate], text, old.memory_target, asked=self.shown.asked[d.candidate])
                 if ends else set())
        if rest and (again or _content_stems(rest, old.memory_target) - stems([text])):
            # qwen1.5b merged "not vegetarian any more" into "Fatoumata is vegetarian, and
            # Fatoumata cooks for two, ... her partner Idrissa" and Idrissa went with the diet
            self._parted(d.candidate, j, rest, f"decisions[{k}]")
            return
        if again:
            self.rejected.append(Rejection(
                step="personal/reconcile", path=f"decisions[{k}].text", action="defaulted",
                reason=f"the merged text {text[:80]!r} states again what the candidate's line ends "
                       f"({', '.join(sorted(again))}); the candidate's text is used"))
            text = cand.content
        if not shares_a_word(text, old.content, cand.content):
            self.rejected.append(Rejection(
                step="personal/reconcile", path=f"decisions[{k}].text", action="defaulted",
                reason=f"the merged text {text[:80]!r} has no word of the stored memory or the candidate; "
                       "the candidate's text is used"))
            text = cand.content
        if normalize_text(text) == normalize_text(old.content):
            if normalize_text(cand.content) == normalize_text(old.content):
                return
            # An UPDATE that keeps the stored text would lose what the candidate says (qwen1.5b
            # "updated" Dan's "vegetarian for ten years" to itself for "not vegetarian any more").
            if not topic_words(cand.content) & topic_words(old.content):
                # ... but the candidate is about something else: taking its text would lose the
                # stored one (Camille the pharmacist, for "Camille started at the CHU yesterday")
                self._beside(k, d, "keeps its text, and the candidate shares no word with it: the memory stays "
                                   "and the candidate is added")
                return
            self.rejected.append(Rejection(
                step="personal/reconcile", path=f"decisions[{k}].text", action="defaulted",
                reason=f"the merged text is stored memory {d.id}'s, unchanged; the candidate's text is used"))
            text = cand.content
        if lost := relation_left_behind(old.content, text, ends or set()):
            # qwen1.5b, fresh20: "Kavita is Girish's wife" UPDATEd to "Girish moved to Mickleover in June,
            # bigger garden, Kavita's thrilled": the wife was lost for the move
            self._beside(k, d, f"would drop what it says someone is ({lost}), which the merged text does not "
                               "say: the memory stays and the candidate is added")
            return
        back, tied = health_left_behind(old.content, text, cand.content)
        merged = " ".join([text if text.endswith(SENTENCE_ENDS) else text + ".", *back])
        if tied or (back and len(merged) > MAX_CONTENT_CHARS):
            # qwen1.5b merged Victor's gout away with his old dose: the stored memory stays and
            # the candidate goes beside it (the old dose may stay stated; the gout is not lost).
            self._beside(k, d, f"would drop {(tied or back)[0][:80]!r}, which the candidate says nothing of; the "
                               "candidate is added beside it")
            return
        if back:
            self.rejected.append(Rejection(
                step="personal/reconcile", path=f"decisions[{k}].text", action="defaulted",
                reason=f"the merged text drops {' '.join(back)[:80]!r} of stored memory {d.id}, which the "
                       "candidate says nothing of; it is kept"))
            text = merged
        if (at := self._stored(text)) is not None:  # two stored memories would say the same
            # qwen1.5b, fresh6: the amlodipine doubled went into another memory's text and was lost
            self._beside(k, d, f"would give it the text of stored memory {at}: the memory stays and the candidate "
                               "is added")
            return
        try:
            self.changes.append(Change(new=revised(old, cand, text, self.history), old=old,
                                       reason=d.reason or f"updated by: {cand.content}"))
            self.placed.add(d.candidate)
        except ValidationError as exc:
            self._reject(k, f"UPDATE of memory id {d.id}: {describe(exc)[:200]}")

    def _parted(self, k: int, j: int, rest: str, path: str, *, added: bool = False, why: str = "") -> None:
        """Candidate `k`'s line ends part of memory `j` shown: the memory keeps the rest
        (`kept_apart`), or takes the value changed (`revalued`, `why` says so), and the candidate
        goes beside it (`added`: it is among the changes already)."""
        cand, over = self.shown.candidates[k], self.shown.existing[j]
        try:
            node = over.revised(content=rest, ref_ids=list(dict.fromkeys(over.ref_ids + [self.history.memory_id]))[
                -MAX_REF_IDS:])
        except ValidationError:
            if not added:
                self._add(k)
            return
        self.claimed.add(j)
        self.changes.append(Change(new=node, old=over, reason=f"in part ended by: {cand.content}"))
        if not added:
            self._add(k)
        self.rejected.append(Rejection(step="personal/reconcile", path=path, action="defaulted",
                                       reason=why or f"its line ends part of {over.content[:80]!r}: what it says of "
                                                     f"{rest[:60]!r} stays in it, the candidate goes beside it"))

    def _parted_again(self, k: int, j: int) -> None:
        """Candidate `k`'s line ends part of memory `j`, which another candidate's line already
        parted (`_parted`): what is left of it loses that part too, or, when nothing worth keeping
        is left and the line says so in the first person, the memory is deleted (fresh22: "I moved
        schools, I teach maths in Rondebosch now" came after "Are you back at work?" -- "Yes" had
        ended the sick leave of "Nokuthula teaches maths at a high school in Gugulethu, but ... is on
        sick leave", and the school in Gugulethu stayed)."""
        shown = self.shown
        over, cand = shown.existing[j], shown.candidates[k]
        at = next((n for n, c in enumerate(self.changes) if c.old is over and c.new is not None
                   and c.reason.startswith("in part ended by")), None)
        if at is None:
            return
        change = self.changes[at]
        before = change.new
        if before is None:
            return
        people = set(words(over.memory_target))
        # what the line ends of the memory as the other line left it (a value it changed is not changed again)
        gone = ending(shown.cited[k], before.content, over.memory_target, asked=shown.asked[k])
        if not gone:
            return
        rest = kept_apart(before.content, gone, people)
        if rest is None and worth_keeping(before.content, gone, people):
            # what is left may name no one when the memory named no one either, as when one line ends part of it
            # (fresh35: the dose changed in place, "No, it stopped working" then ended the ondansetron beside it)
            rest = kept_apart(before.content, gone, people, nameless=True)
        if rest is None:  # what is taken said in the past (fresh35: "Paulina is on losartan, furosemide to manage her
            # kidney function and swelling" stayed when "The losartan and the furosemide are both stopped")
            rest = in_the_past(before.content, gone)
        if rest is not None:
            try:
                node = before.revised(content=rest)
            except ValidationError:
                return
            self.changes[at] = Change(new=node, old=over, reason=f"{change.reason}; in part ended by: {cand.content}")
            what = f"what it says of {rest[:60]!r} stays in it"
        elif (ending(shown.cited[k], before.content, over.memory_target, own=True, asked=shown.asked[k])
              and not worth_keeping(before.content, gone, people)
              and not conditions_named(lasting(before.content)) - stems([shown.cited[k]]) - BODY_STEMS):
            self.changes[at] = Change(old=over, reason=f"{change.reason}; ended by: {cand.content}")
            what = "nothing worth keeping is left: that memory is deleted"
        else:
            return
        self.rejected.append(Rejection(step="personal/reconcile", path=f"candidates[{k}]", action="defaulted",
                                       reason=f"its line ends part of {before.content[:80]!r}, which another "
                                              f"line ended in part: {what}"))

    def _ended_instead(self) -> None:
        """A candidate to be added, or one that updated a memory, whose cited lines say that
        memories shown (and not changed by another decision) have ended, or that a value they
        state has changed, ends them: the parts of such a memory that say something else stay in
        it (`kept_apart`: "Alasdair is hypothyroid" of "Alasdair is hypothyroid, and Alasdair is
        on levothyroxine, 50 micrograms" when the dose went up), and the candidate is added beside
        it; when what is left cannot stand alone, the one number the line changes is changed in
        place (`revalued`), or else the memory stays whole; a memory with nothing left is updated to the candidate instead of the candidate being
        added beside it (qwen1.5b added "Irene quit Deloitte ..." beside "Irene works as an
        accountant at Deloitte"), or, once the candidate took the place of another (here or by an
        UPDATE), deleted (when the line says so in the first person: "I've come off the
        ondansetron" ends its dose too)."""
        shown = self.shown
        adding = {k: at for at, change in enumerate(self.changes) for k, c in enumerate(shown.candidates)
                  if change.old is None and change.new is c}
        for k in sorted(adding.keys() | self.placed):
            cand, placed = shown.candidates[k], k in self.placed
            for j in range(len(shown.existing)):
                if (k, j) not in shown.ends:
                    continue
                if j in self.claimed:
                    self._parted_again(k, j)
                    continue
                over = shown.existing[j]
                rest = kept_apart(over.content, shown.ends[(k, j)], set(words(over.memory_target)))
                if rest is not None:
                    self._parted(k, j, rest, f"candidates[{k}]", added=True)
                    continue
                left = worth_keeping(over.content, shown.ends[(k, j)], set(words(over.memory_target))) \
                    and not job_ended(over.content, shown.ends[(k, j)], set(words(over.memory_target)))
                changed = revalued(over.content, shown.cited[k])
                if changed is not None:  # and the parts the line ends beside it go (fresh31: "The ciclosporin went")
                    changed = (without_ended(changed[0], shown.ends[(k, j)], changed[2],
                                             set(words(over.memory_target))), *changed[1:])
                if changed is not None and (left or changed[2] not in amounts(cand.content) or not self._about(k, j)):
                    # the candidate need not say the new value: "My kidney numbers rose, so the givosiran is
                    # 1.25 mg per kilo now" gave "Wei's kidney numbers rose"
                    self._parted(k, j, changed[0], f"candidates[{k}]", added=True,
                                 why=f"its line changes {changed[1]} to {changed[2]} in {over.content[:80]!r}, and "
                                     + ("what is left without it cannot stand alone" if left else
                                        "the candidate is about something else")
                                     + ": changed in place, the candidate goes beside it")
                    continue
                kept = shown.conditions[j] - stems([shown.cited[k]]) - BODY_STEMS
                # a condition another stored memory names is not lost with this one (fresh24: "Laleh is taking
                # mesalazine and budesonide MMX for her ulcerative colitis" beside "Laleh has ulcerative colitis")
                kept -= {w for i, named in enumerate(shown.conditions) if i != j and (k, i) not in shown.ends
                         for w in named}
                kept_words = sorted({w for w in words(over.content) if _stem(w) in kept})
                if kept and not left:
                    # fresh18 (qwen1.5b): "I gave up guiding, my legs can't do the passes any more" ended "Wayra
                    # has CIDP, ..., which causes her legs to go weak": the diagnosis was lost for the job
                    if (past := in_the_past(over.content, shown.ends[(k, j)])) is not None:
                        # ... and a medicine it says is taken is said in the past (fresh33)
                        self._parted(k, j, past, f"candidates[{k}]", added=True,
                                     why=f"its line ends part of {over.content[:80]!r}, which names a condition the "
                                         f"line does not ({', '.join(kept_words)}): what it ends is said in the past")
                        continue
                    self.rejected.append(Rejection(
                        step="personal/reconcile", path=f"candidates[{k}]", action="defaulted",
                        reason=f"its line ends part of {over.content[:80]!r}, which names a condition the line "
                               f"does not ({', '.join(kept_words)}): the memory stays, the candidate goes beside it"))
                    continue
                if left:
                    # what is left may name no one when the memory named no one either (kept as said: fresh26's
                    # "High blood pressure. Amlodipine, 10 milligrams a day." stayed whole when "The GP stopped the
                    # amlodipine")
                    rest = kept_apart(over.content, shown.ends[(k, j)], set(words(over.memory_target)),
                                      nameless=True) or in_the_past(over.content, shown.ends[(k, j)])
                    if rest is not None:
                        self._parted(k, j, rest, f"candidates[{k}]", added=True)
                        continue
                    # what is left cannot stand alone: the memory stays whole rather than lose it
                    self.rejected.append(Rejection(
                        step="personal/reconcile", path=f"candidates[{k}]", action="defaulted",
                        reason=f"its line ends part of {over.content[:80]!r}, and what is left cannot stand "
                               f"alone: the memory stays as it is, the candidate goes beside it"))
                    continue
                if not placed and not self._about(k, j):
                    # fresh14 (qwen1.5b): "... took me off the trams for good. Before each infusion I get
                    # an antihistamine": the tram job took the antihistamine's text, and was lost
                    if not any(self._about(other, j) for other in adding.keys() | self.placed
                               if other != k and (other, j) in shown.ends):
                        self._as_said(k, j)
                    continue
                try:
                    if not placed:
                        new = revised(over, cand, cand.content, self.history)
                        same = new.retrieval_text == cand.retrieval_text  # its vector is the candidate's
                        self.changes[adding[k]] = Change(new=new, old=over, reason=f"ended by: {cand.content}",
                                                         vector=shown.vectors[k] if same else None)
                        placed, what = True, "that memory is updated instead of the candidate being added beside it"
                        self.placed.add(k)
                    elif (k, j) in shown.own:  # a word rule's false positive deletes nothing of another's
                        self.changes.append(Change(old=over, reason=f"ended by: {cand.content}"))
                        what = "that memory is deleted (the candidate took the place of another it ends)"
                    else:
                        continue
                except ValidationError:
                    continue
                self.claimed.add(j)
                self.rejected.append(Rejection(step="personal/reconcile", path=f"candidates[{k}]",
                                               action="defaulted",
                                               reason=f"its line says {over.content[:80]!r} has ended: {what}"))


def revised(old: MemoryNode, cand: MemoryNode, text: str, history: MemoryNode) -> MemoryNode:
    """`old` updated by the summary's candidate `cand` to `text`: the candidate's times and sources,
    the tags and sources of both (the newest kept when the lists would pass their limits)."""
    meta = {**old.metadata, "source_turns": cand.metadata["source_turns"], "said_at": cand.metadata["said_at"]}
    return old.revised(content=text, message_time=cand.message_time, event_start=cand.event_start,
                       event_end=cand.event_end, score=max(old.score, cand.score),
                       tags=list(dict.fromkeys(old.tags + cand.tags))[-MAX_TAGS:],
                       ref_ids=list(dict.fromkeys(old.ref_ids + [history.memory_id]))[-MAX_REF_IDS:], metadata=meta)


SHORT_NAME = re.compile(r"\b[A-Z][a-z]{1,2}\b(?!['’]?\.)")
"""A name of two or three letters ("Tom", "Ama", "Bea"), which `content_words` leaves out as too short."""
SHORT_WORDS = frozenset("""a an and are as at be but by can did do for get got had has he her him his how i if in is it
its me my no not now of off oh ok on one or our out own she so the too two six ten to up us was we who why yes yet you
all any few new old may mum dad jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun""".split())
"""Short words a sentence may start with, months and weekdays cut short, and "Mum" and "Dad": no names."""


def _content_stems(text: str, user_name: str) -> set[str]:
    """The `_stem`s of a text's words worth comparing (four letters or more, no filler or common
    word, not the user's name), its short names ("Tom and I split up" shares "tom" with
    "Kofi's partner Tom") and the last words of names written as one (`CAMEL_TAIL`: "vest" of "LifeVest")."""
    skip = set(words(user_name))
    short = {w.lower() for w in SHORT_NAME.findall(text)} - skip - _TITLES - COMMON_WORDS - SHORT_WORDS
    tails = {_stem(m[1].lower()) for m in CAMEL_TAIL.finditer(text) if m[1].lower() not in COMMON_WORDS}
    return {_stem(w) for w in content_words(text, skip)} | short | tails


CAMEL_TAIL = re.compile(r"\b[A-Z][a-z]+([A-Z][a-z]{3,})\b")
"""The last word of a name written as one ("LifeVest"): the thing it is, which a memory may say alone (fresh29: "the
LifeVest went back" did not end "If Xóchitl collapses, ... let the vest do its work")."""


ENDS_THERE = r"(?=\s*(?:[.,;!?]|$)|\s+(?:too|as well|with|when|after|last|in|on)\b)"
"""After "stopped" or "finished", what says the thing itself ended there: "Furosemide stopped, no
swelling", "The co-trimoxazole stopped with the chemo", "The Ponticelli finished in September" (not
"finished the scarf", "stopped nothing")."""
ENDED = re.compile(r"\b(?:quit|quitting|stopped|gave up|given up|no longer|any ?more|no more|used to|pulled out|sold"
                   r"|called off|call(?:ed|ing) it off|cancell?ed|dropped out|broke up|split up|moved out"
                   r"|c[oa]me off|coming off|replaced (?:by|with)|discontinued|swapped"
                   r"|t(?:ook|aken?|aking) (?:me|him|her|them|us) off|switched (?:(?:me|him|her|them|us) )?(?:over )?from"
                   r"|(?:tapered|weaned) (?:(?:me|him|her|them|us) )?off|separated|divorced"
                   r"|t(?:ook|akes?|aken|aking) its place|in its place|out of the picture"
                   r"|went(?=\s*(?:[.,;!?]|$)|\s+(?:with|too|as well)\b)"
                   r"|went\s+back(?=\s*(?:[.,;!?]|$))|(?:was|were|got)\s+(?:handed|given|sent)\s+back"
                   r"|(?:was|were)\s+returned"
                   r"|(?:smoked|had|drank|took) (?:my|his|her|their|our) (?:very )?last"
                   r")\b|\bno\s+(?:[a-z]+\s+){1,3}now\b"
                   r"|(?:\b(?:is|are|was|were|has|have|had)|['’]s)\s+(?:all\s+|now\s+)?(?:finished|over|gone|ended|done)\b"
                   r"(?!\s+(?:up|on|onto|into|to|out|back|down|for|through|off|away)\b)"
                   r"|\bended\b(?!\s+up\b)"
                   # "the oxygen is off completely since July" (fresh34)
                   r"|(?:\bis|\bare|['’]s)\s+off\s+(?:completely|for\s+good|altogether|entirely)\b"
                   r"|\bfinished\b" + ENDS_THERE +
                   r"|(?:\bnot\b|n't\b|\bnever\b)[^.;!?]*\bafter all\b", re.IGNORECASE)
TAKEN_OUT = re.compile(r"\bt(?:ook|aken?|aking)\s+(?:the|my|his|her|their)\s+(?P<thing>[\w-]+)\s+out\b"
                       r"(?!\s+(?:of|for|to|with|on)\b)|\b(?:removed|took out|taken out)\s+(?:the|my|his|her|their)\s+"
                       r"(?P<other>[\w-]+)", re.IGNORECASE)
"""Something of the body's care taken out: "in May they took the tracheostomy out" (fresh33), "they removed the port";
a thing of health only (`taken_out`), not "took the dog out"."""


def taken_out(clause: str) -> re.Match[str] | None:
    """The `TAKEN_OUT` match of a clause whose thing taken out is a health word, else None."""
    m = TAKEN_OUT.search(clause)
    return m if m and health_word((m["thing"] or m["other"]).lower()) else None


OVER_WORDS = ("finished", "over", "gone", "ended", "stop", "stops", "stopped", "stopping", "quit", "quits")
"""The words of `ENDED` that say a thing is over ("the senna is gone"), not what is: "the aspirin has been
stopped" ends no "must never stop the prednisolone suddenly" (fresh23)."""
OVER_STEMS = frozenset(_stem(w) for w in OVER_WORDS)
SPELLED = {w: str(n) for w, n in NUMBERS.items() if w not in FUZZY and w not in ("a", "an")}
"""Numbers said in words ("four times a day"), as `amounts` states them: "one" to "twelve"."""
_WHOLE = r"(?!\s+(?:hundred|thousand|million)\b)"
"""After a number said in words: not the first word of a bigger one ("twelve hundred" is no 12: fresh33)."""
_NUMBER = r"\d+(?:\.\d+)?(?!\d|\.\d)|(?:" + "|".join(SPELLED) + r")\b" + _WHOLE
THE_DOSE = re.compile(r"\bthe\s+(?:dose|dosage)\b", re.IGNORECASE)
"""A dose said of what the clause before names: "My sirolimus level was low, so ... the dose went up to 3 milligrams"
(fresh32)."""
CHANGED_TO = re.compile(r"\b(?:upped|increased|raised|lowered|reduced|decreased|doubled|halved|cut|switched|changed"
                        r"|moved|fell|dropped|rose|climbed)\b(?:(?!\bto\s)[^.;!?\d]){0,40}?(?:\bto|:)\s+"
                        r"(?P<n>" + _NUMBER + ")"
                        r"|\b(?:up|down)\s+to\s+(?:(?-i:[A-Z])[\w-]+\s+)?(?P<m>" + _NUMBER + ")", re.IGNORECASE)
"""A value changed: "they upped my levothyroxine to 75", "put my sertraline up to 100 mg", "put me up to Creon
40,000" (fresh25), "doubled
the metformin: 1000 mg", "down to three times a day"; or a value of "it" now: "so it's 500 mg twice
a day now" (after "put her levetiracetam up"); not a number after what was switched to ("switched me to canakinumab,
Ilaris: one injection every four weeks" changed no "100 milligrams" to 1: fresh30)."""
NOW_VALUE = re.compile(r"\b(?:it['’]s|it is|they['’]re|they are)\s+(?:(?:only|just|down|up)\s+)?(?P<n>" + _NUMBER
                       + r")[^.;!?\d]{0,30}?\bnow\b", re.IGNORECASE)
EVERY_NOW = re.compile(r"\b(?:is|are|['’]s|['’]re)\s+(?:now\s+)?every\s+(?P<n>" + _NUMBER
                       + r")\s+(?:days?|weeks?|months?|years?)\b", re.IGNORECASE)
"""How often something is done, in a clause that says since when or "now": "since April my transfusions are every three
weeks" changes "A blood transfusion every four weeks ..." (fresh33)."""
EVERY_N = re.compile(r"\bevery\s+(?P<n>" + _NUMBER + r")\s+(?P<unit>days?|weeks?|months?|years?)\b", re.IGNORECASE)
SINCE_OR_NOW = re.compile(r"\b(?:since|now)\b", re.IGNORECASE)
MEASURED_NOW = re.compile(r"\bmy\s+(?:[a-z]+\s+)?[a-z]+\s+(?:is|['’]s)\s+(?:now\s+)?(?P<n>" + _NUMBER + ")"
                          r"(?!\s+(?:days?|weeks?|months?|years?|hours?|minutes?|times?)\b)"
                          r"|\bmy\s+(?:[a-z]+\s+)?[a-z]+\s+was\s+(?P<m>" + _NUMBER + r")[^.;!?]{0,12}?\b(?:at|on)\s+"
                          r"(?:the|my)\s+(?:last\s+|latest\s+)?(?:check|test|blood\s+test|clinic|review|appointment)\b",
                          re.IGNORECASE)
"""A value of the speaker's measured again, now or at the last check: "My haemoglobin was 12.1 at the check on the 9th
of November" (fresh32: "... haemoglobin fell to 8.6 in April" stayed as it was); not one of the past ("when I was
diagnosed my haemoglobin was 6"), nor a time ("My yearly bronchoscopy is two weeks today")."""
INSTEAD = re.compile(r"(?<![\d.])(?P<new>" + _NUMBER + r")[^.;!?\d]{0,30}?(?:\binstead of|\bnow,?\s+not)\s+(?:the\s+)?"
                     r"(?P<old>" + _NUMBER + ")", re.IGNORECASE)
"""A value said with the one it replaces: "it's 600 mg now instead of 800", "the 12th of May now, not
the 19th"."""
EVERY = re.compile(r"\b(?:every|each|once an?|once per|per)\s+(?P<unit>day|week|fortnight|month|year)\b"
                   r"|\b(?P<ly>daily|weekly|fortnightly|monthly|yearly)\b", re.IGNORECASE)
INSTEAD_OF_EVERY = re.compile(r"\binstead of\s+(?:" + EVERY.pattern + ")", re.IGNORECASE)
"""How often, and how often it was: "every three months now instead of every month"."""
FROM_TO = re.compile(r"\bfrom\s+(?P<old>" + _NUMBER + r")[^.;!?\d]{0,20}?\bto\s+(?:(?:only|just)\s+)?(?P<new>"
                     + _NUMBER + ")", re.IGNORECASE)
FROM_EVERY = re.compile(r"\bfrom\s+(?:" + EVERY.pattern + r")\s+to\b", re.IGNORECASE)
"""A value and the one before it: "the dose went from 300 to 250", "from every week to every two weeks"."""


def every_unit(m: re.Match[str]) -> str:
    """The unit of an `EVERY` match: "month" of "every month" and "monthly"."""
    return (m["unit"] or {"daily": "day"}.get(m["ly"].lower(), m["ly"].lower()[:-2])).lower()


AMOUNT = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?!\d|\.\d)|\b(?:" + "|".join(SPELLED) + r")\b" + _WHOLE, re.IGNORECASE)
STOPPED_DOING = re.compile(r"\b(?:stop(?:ped|ping|s)?|quit(?:ting|s)?|gave up|given up|giving up|no longer)\s+"
                           r"(?:(?:my|his|her|their|our|(?-i:[A-ZÀ-ÖØ-Þ])[^\W\d_]*['’]s)\s+)?(?P<w>[a-z]{4,})"
                           r"|\bno\s+(?P<n>[a-z]{2,}ing)\b|\bnot\s+(?:allowed\s+)?to\s+(?P<t>[a-z]{3,})"
                           r"|\bcan(?:no|['’])?t\s+(?!(?:have|take|eat|drink|use|be|do|get|go)\b)(?P<c>[a-z]{3,})"
                           # "Rūta doesn't drive: Dr Petrauskas says not until ..." (fresh34: "allowed to drive again")
                           r"|\b(?:doesn['’]t|does\s+not|don['’]t|do\s+not)\s+(?P<d>drive|fly|swim|cycle|ride|work)\b",
                           re.IGNORECASE)
"""What a memory says someone stopped doing, or must not do: "stopped cycling to work", "no longer
drives", "stopped Laleh's iron tablets" (fresh24), "No driving for at least six months", "No flying till the
neurosurgeon clears Hemi" (fresh20), "can't drive", "is not to drive until the eye specialist has checked him"
(fresh23)."""
AGAIN = (re.compile(r"\b(?:i|we)(?:'m|'ve been|'ve started| am| have been| are|'re| started| began| have started)?"
                    r"\s+(?P<w>[a-z]{4,})\b[^.;!?]{0,30}\bagain\b", re.IGNORECASE),
         re.compile(r"\bback (?:to|on) (?:the |my )?(?P<w>[a-z]{4,})\b", re.IGNORECASE),
         re.compile(r"\b(?:re-?start(?:ed|ing|s)?|resum(?:ed|ing|es))\s+(?:(?:my|the|his|her|their|our|taking)\s+)?"
                    r"(?P<w>[a-z]{3,})", re.IGNORECASE),
         re.compile(r"\b(?P<w>[a-z]{4,}) (?:is|are)(?: \w+)? back\b", re.IGNORECASE),
         re.compile(r"(?<!not )(?<!n't )(?<!never )\b(?:allowed|cleared|okayed)\s+(?:(?:me|him|her|them|us)\s+)?"
                    r"to\s+(?P<w>[a-z]{3,})", re.IGNORECASE))
"""Someone doing again what they had stopped: "I've been cycling to work again", "back to running",
"back on coffee", "I've restarted iron" (fresh24), "coffee is back too", or allowed to: "The neurosurgeon
cleared me to fly in May", "I'm allowed to drive again" (fresh20; not "not allowed to drive"). Each is looked for
on its own (`done_again`): "I'm allowed to drive again" is "allowed" again by the first, "drive" by the last."""


def done_again(clause: str) -> set[str]:
    """The `_stem`s of what a clause says is done again (`AGAIN`)."""
    return {_stem(m["w"].lower()) for way in AGAIN for m in way.finditer(clause)}


UNITS = frozenset(_stem(w) for w in [
    *"times weeks months years hours minutes daily weekly monthly mornings evenings nights bedtime once twice thrice"
    .split(), *MONTHS, *WEEKDAYS, *SPELLED])
"""What a number counts or when, not what it is of: a memory and a line that share only these
are not about one thing."""
_TITLES = {t.rstrip(".").lower() for t in TITLES} | {"miss"}
_TITLE = r"(?:(?:" + "|".join(t.capitalize() for t in sorted(_TITLES)) + r")\.?\s+)?"
TITLED_NAME = re.compile(r"\b" + _TITLE[:-1] + r"(?P<name>[A-Z][^\W\d_]+)")
"""Someone named with a title: "Dr Pritchard", "Nurse Okoye"."""
AVOID_ASKED = re.compile(r"\bwhat\s+(?:must|should|do)\s+you\s+(?:avoid|stay\s+away\s+from|never\s+(?:eat|take|have))"
                         r"\s*\?\s*$", re.IGNORECASE)
"""A question of what is to be avoided: "What must you avoid?"."""
NAMED_FIRST = re.compile(_TITLE + r"[A-ZÀ-ÖØ-Þ][^\W\d_]+(?:\s+[A-ZÀ-ÖØ-Þ][^\W\d_]+)?\s*(?:[,;.]|$)")
"""An answer that starts with whom, named with a title: "Dr Jayasuriya, at the teaching hospital in Kandy, ..."."""
_HOLDER = r"(?:(?i:his|her|their|my|our)\s+[a-z]+,?\s+)?" + _TITLE + r"(?P<{}>[A-Z][^\W\d_]+)\b(?!')"
NOW_HOLDS = re.compile(r"\b(?P<role>[a-z]{3,}) (?:is|are) (?:now " + _HOLDER.format("name")
                       + r"|" + _TITLE + r"(?P<other>[A-Z][^\W\d_]+) now\b)"
                       r"|\b(?P<here>[a-z]{3,}) (?:here|these days|at the moment) (?:is|are) " + _HOLDER.format("there")
                       + r"|\b(?i:new) (?P<new>[a-z]{3,}) (?:is|are) " + _HOLDER.format("newly")
                       + r"|\b(?i:my|our) (?P<plain>(?i:[a-z]{2,})) (?:is|are) " + _HOLDER.format("named"))
"""Someone else in a role: "my neurologist is now Dr Steinwender", "their social worker is Mr
Delgado now", "my gastroenterologist here is Dr Araya", "my new dentist is Dr Okafor"; or plainly,
"my GP is Dr Osei", of a role one person holds at a time (`ONE_HOLDER`)."""
ONE_HOLDER = ("ologist", "iatrist", "ician", "gp", "doctor", "dentist", "therapist", "physio", "surgeon", "midwife",
              "consultant", "landlord", "landlady", "boss", "manager", "headteacher", "principal", "solicitor",
              "lawyer", "vet", "caseworker", "keyworker", "nurse", "carer", "childminder", "nanny", "tutor", "coach")
"""The endings of roles a person has one of at a time: a new name in one ends the old."""


DOSE = re.compile(rf"(?<![\d./])(?P<n>\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?)\s*{DOSE_UNIT}"
                  r"|(?<![\d./])(?P<s>\d+/\d+)(?![\d/])", re.IGNORECASE)
"""A dose: a number with its unit ("1.25 mg", "50 micrograms", "8 units"), or a strength ("the 49/51")."""
QUALIFIERS = frozenset(_stem(w) for w in "blood heart level".split())
"""Words that say which of several things a value is of, none of them alone: "blood pressure", "blood test", "blood
sugar"; "heart rate", "heart echo"."""
DOSE_WORDS = frozenset(_stem(w) for w in "dose doses dosage tablet tablets pill pills capsule capsules take takes "
                                          "taking injection injections strength medicine medicines milligram "
                                          "milligrams microgram micrograms".split())
"""Words a dose of any medicine is said with: two mentions that share only these are not of one thing."""


def doses(text: str) -> set[str]:
    """The doses a text states (`DOSE`), less what is in parentheses."""
    return {m["n"] or m["s"] for m in DOSE.finditer(PARENTHESES.sub(" ", text))}


def amounts(text: str) -> set[str]:
    """The numbers a text states (spelled ones as digits), less years and what is in parentheses
    (the dates ReMe adds)."""
    found = (SPELLED.get(n.lower(), n) for n in AMOUNT.findall(with_digits(PARENTHESES.sub(" ", text))))
    return {n for n in found if not YEAR.fullmatch(n)}


OWN_WORDS = frozenset("i my me we our us".split())
OTHERS_WORDS = THIRD_PERSON | {"they", "them", "their", "theirs"}


def says_own(clause: str, sentence: str | None = None) -> bool:
    """Whether a clause of a person's line (or a whole sentence) says something of the speaker's
    own: it says "I", "my", "we"..., or its `sentence` names no one (no he, she or they, no name
    after its first word, or a medicine's name first: "The diabetes went away after the birth, so no
    insulin and no metformin now", "Furosemide stopped, no swelling at all"; a month or a weekday is
    no name), or it says what "they" did to a medicine or a dose (`CARERS_DID`: "they halved the
    mycophenolate, to 500 milligrams")."""
    sentence = clause if sentence is None else sentence
    if OWN_WORDS & set(words(clause)):
        return True
    led = without_lead_in(sentence.strip())
    if CARERS_DID.match(led[:1].upper() + led[1:]) and not THIRD_PERSON & set(words(sentence)) \
            and (any(medicine_word(w) for w in words(sentence)) or doses(with_digits(sentence))):
        return True  # what the doctors did to a medicine: "And they halved the mycophenolate, to 500 mg" (fresh25)
    capitals = CAPITALIZED.findall(sentence)
    if capitals and sentence.lstrip().startswith(capitals[0]) and (capitals[0].lower() in STARTERS | SAID_ALONE
                                                                   or medicine_word(capitals[0].lower())):
        capitals = capitals[1:]  # "The diabetes ...", "Furosemide stopped", "Married!" (fresh20), not "Nikau's ..."
    capitals = [c for c in capitals if c.lower() not in MONTHS and c.lower() not in WEEKDAYS]  # "in September"
    return not OTHERS_WORDS & set(words(sentence)) and not capitals


SAID_ALONE = frozenset({"married", "engaged", "finished", "stopped", "done", "gone", "retired"})
"""What a line can say of the speaker in one word ("Married! On the 12th of September"): no name."""
STARTERS = frozenset("""the a an so and but it its this that these those there then now no not oh well yes all
everything nothing something both each every one our your""".split())
"""First words of a sentence that name no one."""


SUBJECTLESS = re.compile(r"^\s*(?:(?:and|but|oh|well)\s+)?(?:(?:all|long|completely)\s+)?(?:finished|done|stopped|over)\b",
                         re.IGNORECASE)
"""A clause that says something ended without saying what: "Finished in August" (after "And the budesonide?")."""
YES = re.compile(r"^\s*(?:yes|yep|yeah|i\s+am|i\s+have)\b", re.IGNORECASE)
"""An answer that opens with a yes: "Yes, the eye specialist cleared me" (to "Are you driving again?")."""
YOU = re.compile(r"\byou\b", re.IGNORECASE)
"""The question's "you", read as the answer's "I": "Are you driving again?" asks what `AGAIN` reads in
"I ... again"."""
YOURS_ASKED = re.compile(r"\byou(?:r|rs|rself)?\b", re.IGNORECASE)
"""A question put to the one who answers it ("Who's your emergency contact now?"): the answer is theirs."""
NOT_STILL = re.compile(r"^\s*(?:no|nope|not any ?more|no longer)\W*$", re.IGNORECASE)
"""A first answer that says no (to a question with "still": "Still on the warfarin?")."""
REFERRING = frozenset("it its them they those".split())
_DETERMINERS = frozenset("the my our his her their a an".split())


SUBJECT_SHARED = frozenset("made gave took kept got went left put set brought caused".split())
"""Verbs in the past that start a clause whose subject is the one before it ("... and gave me a rash")."""
WHO_ALONE = re.compile(r"^\s*(?:(?:and|but|so|then)\s+)?(?:(?:in|on|last|this)\s+\w+\s+)?(?:(?:my|our|his|her|their)\s+"
                       r"[a-z]+|" + _TITLE[:-1] + r"[A-Z][^\W\d_]+)\s*[.!]?\s*$")
"""A clause that only names who did something, before what they did: "so my gastroenterologist", "Dr Farahani", "so in
April my rheumatologist" (fresh30: "The anakinra left big red welts ..., so in April my rheumatologist, Dr Vlachou,
switched me to canakinumab" ended nothing)."""


OBJECT_END = re.compile(r"[,;:.!?]|\s(?=(?:because|since|as|when|so|but|after|while|though|although)\s)",
                        re.IGNORECASE)
"""Where the object of an ending word ends: "the metformin at once" of "... stopped the metformin at once: in MELAS
it can cause lactic acidosis"."""
REASON_AFTER = re.compile(r"[^.;!?:]{0,20}?(:)\s")
"""The colon after an ending word and a few words, before why: "is stopped: my blood pressure went up"."""
STOPPED_WHAT = re.compile(r"\s+(?!(?:in|on|at|last|this|after|before|for|because|when|and|so|but|then|now|too)\b)"
                          r"(?:it|them|the|my|his|her|their|our|a|an|[a-z]{3,})\b")
"""What follows an ending word when it has an object ("stopped it", "stopped the pirfenidone"): its subject,
then, is who ended it, not what ended ("Dr Hollis is out of the picture", "Dr Hollis quit in May")."""


def referent(before: Sequence[str], asked: str, held: set[str], user_name: str) -> set[str]:
    """The `_stem`s of a stored memory's words (`held`) that an "it" (or a clause with no subject:
    "Finished in August") refers to, given the clauses before it, nearest last, and the question
    the line answers (`asked`): those of the nearest clause that names a thing first ("the
    topiramate made my fingers tingle and I couldn't find my words, so it was stopped"), or of the
    nearest first-person clause that names one the memory holds ("I was on warfarin, but they took
    me off it"), else of the question. A clause that only names someone (`WHO_ALONE`), or starts
    with a verb in the past (its subject is the one before it), is passed over."""
    for clause in reversed(before):
        said = unled(words(clause))
        if not _content_stems(" ".join(said), user_name) or WHO_ALONE.match(clause):
            continue  # "No", "thank goodness"; "so my gastroenterologist, Dr Farahani, stopped it" (fresh24)
        if said[0].endswith("ed") or said[0] in SUBJECT_SHARED:
            continue  # the subject of the clause before: "The pirfenidone gave me a rash and killed my appetite"
        if said[0] in ("i", "we"):
            if found := held & _content_stems(" ".join(said[1:]), user_name):
                return found
            continue  # "I couldn't find my words"
        if said[0] in PRONOUNS:
            continue
        whole = held & _content_stems(" ".join(said), user_name)
        said = unled(said, _DETERMINERS)
        # its subject, else what it names after: "The neurologist put her levetiracetam up, so it's 500 mg now"
        subject = held & _content_stems(" ".join(said[:3]), user_name)
        form = next((k for k, w in enumerate(said[:3]) if _stem(w) in DOSE_WORDS), 0)
        if subject and subject <= DOSE_WORDS and form and not held & _content_stems(" ".join(said[:form]), user_name):
            return set()  # "The iron tablets ..., so I stopped them" ends no tranexamic acid tablets (fresh31)
        if not subject and any(medicine_word(w) for w in said[:1]):
            return set()  # "The indomethacin gave me a stomach ulcer; ... So it's stopped" ends no ulcer (fresh35)
        return subject or whole
    return held & _content_stems(asked, user_name)


MOVED_TO = re.compile(r"\b(?i:i|we)(?:'ve| have)?\s+(?:(?:just|finally|now)\s+)?(?:moved|relocated)\s+"
                      r"(?:(?:back|in\s+together|house|over),?\s+)?(?:(?:in|on|last|this)\s+[^,.;!?]{1,20}?,?\s+)?"
                      r"(?:(?:out\s+of|off|away\s+from)\s+[^,.;!?]{1,40}?,?\s+)?(?:to|into)\s+"
                      r"(?:[^.;!?]{0,50}?\bin\s+)?(?P<to>[A-Z][^\W\d_]+)")
MOVED_IN_WITH = re.compile(r"\b(?i:i|we)(?:'ve| have)?\s+(?:just\s+|finally\s+)?moved\s+in\s+with\s+"
                           r"[^.;!?]{1,60}?\bin\s+"
                           r"(?!(?:" + "|".join(m.capitalize() for m in MONTHS) + r")\b)(?P<to>[A-Z][^\W\d_]+)")
"""A move in with someone, the place after it: "I moved in with Leander in June, a terraced house in Portobello"
(fresh26)."""
LIVE_NOW = re.compile(r"\b(?:(?i:since)\s+[^,.;!?]{1,25}?,?\s+(?i:i|we)|(?i:i|we)\s+now)\s+live\s+in\s+"
                      r"(?P<to>[A-Z][^\W\d_]+)")
"""Where the user lives now, said without "moved to": "since July we live in Hobart" (fresh25), "I now live in Ayr"."""
_UPPER = "A-ZÀ-ÖØ-Þ" + "".join(chr(c) for c in range(0x100, 0x180) if chr(c).isupper())
"""Capital letters, those of Latin Extended-A too ("Žaliakalnis": fresh34, where "We've moved ... Vilnius" ended no home
the rules could not read)."""
TITLED_SOMEONE = re.compile(rf"\b(?:{'|'.join(sorted(TITLE_WORDS))})\.?\s+[{_UPPER}]")
"""Someone named with a title of `TITLE_WORDS` ("Dr Ramos", "Professor Hennessy"), a name of any Latin capital."""
LIVES_IN = re.compile(r"\b(?:(?:lives|live|living|based|resides)\b[^.;!?]{0,40}?\b(?:in|on|at)"
                      r"|(?:home|house|flat)\s+in)\s+(?:the\s+)?(?P<at>[" + _UPPER + r"][^\W\d_]+)")
JOINED = re.compile(r"\b(?i:i|we)(?:'ve| have|'m| am)?\s+(?:(?:just|now)\s+)?(?:started(?:\s+(?:a\s+new\s+job|work|working))?"
                    r"\s+(?:at|with)|joined|(?:working|employed)\s+(?:at|for)|work\s+(?:at|for))\s+(?:the\s+)?"
                    r"(?P<to>[A-Z][^\W\d_]+)")
WORKS_AT = re.compile(r"\b(?:works|work|working|employed|job)\b[^.;!?,]{0,30}?\b(?:at|for)\s+(?:the\s+)?"
                      r"(?P<at>[A-Z][^\W\d_]+)")
"""A move, a new employer said in the first person ("We moved to Santiago", "I moved into the annexe
at my daughter's, in Headington", "Dariush and I moved in together in May, into a house in Hamilton"
(fresh24), "We moved in May, out of the Croix-Rousse to a flat in Villeurbanne" (fresh27), "In August we moved off
the farm to a house in Naivasha town" (fresh28), "I started at Bosch"), and where a memory says its user lives or
works ("Ines lives in Valparaíso", "Bea lives on her own in a flat on Cowley Road", "Wanjala is home in Nakuru now",
"Rui works as an engineer at Siemens")."""


OFFICE_AGAIN = re.compile(r"\bback (?:in|at|to|into) (?:the |my )?office\b|\b(?:in|at|to) the office again\b",
                          re.IGNORECASE)
FROM_HOME = re.compile(r"\b(?:works?|working|job)\s+(?:\w+\s+){0,2}?(?:from home|remotely)\b|\bremote (?:job|work)\b",
                       re.IGNORECASE)
"""Back at the office, and a memory of working from home."""
BACK_AT_WORK = re.compile(r"\b(?:back\s+(?:at|to)\s+work|back\s+at\s+my\s+job|back\s+on\s+the\s+job)\b", re.IGNORECASE)
OFF_SICK = re.compile(r"\boff\s+sick\b|\bon\s+sick\s+leave\b|\bsigned\s+off\b", re.IGNORECASE)
"""Back at work, and a memory of being off sick (fresh27: "I'm back at work" left "Ruaridh is a postman, ..., off
sick for the moment")."""
BACK_AGAIN = ((OFFICE_AGAIN, FROM_HOME, frozenset({"home", "remot"})),
              (BACK_AT_WORK, OFF_SICK, frozenset({"sick", "leav"})))
"""What a clause saying the user is back (at the office, at work) ends in a memory that says the other (working from
home, off sick): the words of the memory that stop being so."""
DIET_NOW = re.compile(r"\b(?-i:I)(?:['’]m|\s+am)\s+(?:now\s+|fully\s+|strictly\s+|also\s+)?(?:an?\s+)?"
                      r"(?P<diet>vegetarian|vegan|pescatarian|pescetarian)\b", re.IGNORECASE)
NOT_EATEN = {"vegetarian": ("meat", "beef", "lamb", "pork", "chicken", "bacon", "ham", "steak", "sausages", "fish",
                            "seafood"),
             "pescatarian": ("meat", "beef", "lamb", "pork", "chicken", "bacon", "ham", "steak", "sausages"),
             "vegan": ("meat", "beef", "lamb", "pork", "chicken", "bacon", "ham", "steak", "sausages", "fish",
                       "seafood", "cheese", "eggs", "milk", "dairy")}
NOT_EATEN["pescetarian"] = NOT_EATEN["pescatarian"]
"""A diet the user keeps now, and what it is without (fresh27: "I'm pescatarian since June: fish, but no meat" left
"Amadou eats meat every day")."""


NEW_JOB = re.compile(r"\b(?-i:I)(?:['’]ve| have)?\s+(?:just\s+|now\s+|also\s+)?(?:started|begun)\s+(?:teaching|working\s+as)\b"
                     r"|\b(?-i:I)(?:['’]m| am)?\s+(?:now\s+)?(?:teach(?:ing)?|work(?:ing)?\s+as)\b[^.;!?]*\bnow\b"
                     r"|\b(?-i:I)(?:['’]m| am)?\s+(?:now\s+)?teach(?:ing)?\s+[^.;!?]*?\bat\s+(?:the\s+)?"
                     r"(?:[a-z]+\s+){0,2}?(?:college|school|university|polytech|academy|(?-i:[A-Z]))"
                     r"|\b(?:since|from)\s+(?:the\s+)?[^,.;!?]{1,30}?,?\s+(?-i:I)\s+(?:work|teach)\b"
                     # "I've changed jobs: since May I'm an auditor at the Ministry of Finance" (fresh33)
                     r"|\b(?-i:I)(?:['’]ve| have)\s+changed\s+jobs\b"
                     r"|\b(?:since|from)\s+(?:the\s+)?[^,.;!?]{1,30}?,?\s+(?-i:I)(?:['’]m| am)\s+an?\s+(?:[a-z-]+\s+)?"
                     r"[a-z-]+(?:er|or|ist|ian)\b"
                     r"|\b(?-i:I)(?:['’]m| am)\s+(?:now\s+)?an?\s+[a-z-]+(?:\s+[a-z-]+)?\s+now\b"
                     r"|\b(?-i:I)(?:['’]m| am)\s+an?\s+[a-z-]+(?:er|or|ist|ian)\s+(?:in|at|for|with)\s+"
                     r"[^.;!?]{0,50}?\bnow\b"
                     r"|\b(?-i:I)(?:['’]ve| have)?\s+(?:had\s+to\s+)?(?:left|sold|quit|closed|given\s+up)\s+(?:the|my|our)\s+"
                     r"(?:[a-z-]+\s+){0,2}?(?P<left>restaurant|salon|shop|firm|company|practice|business|job|café|cafe"
                     r"|bakery|garage|studio|farm|library|warehouse|factory|depot|hospital|nursery|bank)\b"
                     r"(?=\s*(?:[.,;:!?]|$)|\s+(?:in|at|on|last|this|since|after|before|for|because|when|and|so|but|then"
                     r"|now|too|altogether|behind)\b)"
                     r"|\bnot\s+going\s+back\s+(?:on\s+the\s+tools|to\s+(?:work|the\s+job|my\s+job))\b"
                     r"|\b(?-i:I)(?:['’]ve| have)?\s+retired\b"
                     r"|\b(?-i:I)(?:['’]ve| have)?\s+(?:left|quit|given\s+up)\s+(?:flying|nursing|teaching"
                     r"|driving|farming"
                     r"|cleaning|policing|modelling|modeling|coaching|acting|sailing|fishing|mining|lecturing)\b",
                     re.IGNORECASE)
"""A first-person clause that says the user does other work now, or left their work: "I teach
cookery at the further education college now", "I've left the restaurant", "I left the warehouse job"
(fresh25), "I've left the library since the episode" (fresh27: the place itself ends where the user works there), "I've had to sell the
salon", "I'm not going back on the tools" (fresh20), "I'm a childminder now", "I'm a dispatcher in the ferry
company's office now" (fresh33), "I retired", "I've left flying" (fresh26)."""
JOB = re.compile(r"\b(?P<who>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\s+(?:is|was|works\s+as|worked\s+as)\s+"
                 # "Ndapewa is Ndapewa Shikongo, twenty-six, an accountant at ..." (fresh33: it stayed on a new job)
                 r"(?:(?:[A-ZÀ-ÖØ-Þ][^\W\d_]+\s+){0,2}[A-ZÀ-ÖØ-Þ][^\W\d_]+,\s+(?:[a-z]+-[a-z]+|[a-z]+|\d+),\s+)?"
                 r"an?\s+(?:[a-z-]+\s+){0,3}?"
                 r"(?P<job>[a-z]+(?:er|or|ist|ian|hand|ant)|chef|nurse|cook|stylist|midwife|surgeon|mechanic)\b")
"""What a memory says someone works as: "Girish is a head chef", "Hemi is a builder"."""
INTRO_JOB = re.compile(r"^(?P<who>[A-ZÀ-ÖØ-Þ][^\W\d_]+)(?:\s+[A-ZÀ-ÖØ-Þ][^\W\d_]+){1,2},\s+(?:[a-z]+-[a-z]+|[a-z]+|\d+),"
                       r"\s+(?:an?\s+)?(?:[a-z-]+\s+){0,2}?(?P<job>[a-z]+(?:er|or|ist|ian)|chef|nurse|cook|midwife"
                       r"|surgeon|mechanic)\b")
"""The work an introduction kept as said gives: "Bogdan Ionescu, fifty-eight, tram driver in Cluj-Napoca for twenty-six
years." (fresh36: it stayed when he became a dispatcher)."""
DRIVES = re.compile(r"\b(?P<who>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\s+(?P<job>drives)\s+an?\s+(?:[a-z]+\s+)?"
                    r"(?:bus|taxi|tram|lorry|truck|van|cab|ambulance)\b")
"""Driving for work, as a memory says it: "Facundo drives a city bus in Montevideo" (fresh33: it stayed when he
retired)."""


WORK_MOVED = re.compile(r"\b(?-i:I)(?:['’]ve| have)?\s+(?:just\s+|now\s+)?(?:moved|switched|changed)\s+"
                        r"(?:to\s+(?:a|another|the)\s+(?:new\s+)?)?(?:schools?|jobs?|practices?|hospitals?|firms?"
                        r"|compan(?:y|ies)|clinics?|offices?|employers?|wards?|surgery|surgeries)\b", re.IGNORECASE)
"""A first-person clause that says the user works somewhere else now: "I moved schools", "I switched to
a practice there" (fresh22)."""
MOVED_FROM = re.compile(r"\b(?-i:I)(?:['’]ve| have)?\s+(?:just\s+|now\s+)?(?:moved|switched|changed|gone)\s+from\s+"
                        r"(?:the\s+|my\s+)?(?P<old>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+to\b", re.IGNORECASE)
"""A first-person clause that says the user left one work for another: "I've moved from loans to the bank's training
team" (fresh35: "Losaline is a loans officer" stayed)."""
WORK_PLACE = re.compile(r"\b(?:is\s+an?|works?|working|teach(?:es|ing)?|employed)\b[^.;!?]{0,60}?\b(?:at|in|for)\s+"
                        r"(?:[a-z]+\s+){0,3}?(?P<at>[A-ZÀ-ÖØ-Þ][^\W\d_]+)")
"""Where a memory says someone works: "teaches maths at a high school in Gugulethu", "is a court interpreter in
Coimbra"."""


WORKS_THERE = re.compile(r"\b(?:works?|working|job|employed)\b"
                         r"|\ban?\s+(?:[a-z-]+\s+){0,2}?[a-z]{3,}(?:er|or|ist|ian|ect|ant)\s+(?:at|for|with)\b",
                         re.IGNORECASE)
"""A part of a memory that says someone works somewhere: "works part-time at the library", "an architect at a firm in
Gemmayzeh" (fresh29: "I've left the architecture firm" ended nothing)."""


NOT_THERE = re.compile(r"\b(?:not|no\s+longer)\s+(?:in|at|for)\s+(?:the\s+)?\w+", re.IGNORECASE)
"""Where someone says they are not now: "but not in Gugulethu"."""


def new_job(sentence: str, stored: str, user_name: str) -> set[str]:
    """The `_stem` of the work a stored memory says the user does ("Girish is a head chef") when a
    first-person sentence says they do other work now or left theirs (`NEW_JOB`), and does not
    name that work; not a relation ("Girish is a father", `KIN`); and of where a part of it whose
    subject is the user says they work (`WORK_PLACE`), when the sentence says so or that they work
    somewhere else now (`WORK_MOVED`) and does not name the place; and the work a sentence says the user moved from
    (`MOVED_FROM`), of what the memory says they are."""
    other, moved = NEW_JOB.search(sentence), WORK_MOVED.search(sentence)
    if (moved_from := MOVED_FROM.search(sentence)) is not None:  # the work the user moved from, where a part of the
        # memory says they do it ("I've moved from loans to ..." of "Losaline is a loans officer at a bank")
        name = words(user_name)[:1]
        gone = {_stem(w) for w in words(moved_from["old"])} - {_stem(w) for w in words(sentence[moved_from.end():])}
        return {w for m in JOB.finditer(stored) if name and name[0] in words(stored[:m.end("who")])[-2:]
                for w in {_stem(x) for x in words(m[0])} & gone}  # "Losaline Fonua is ...": her surname leads
    if not other and not moved:
        return set()
    said = {_stem(w) for w in words(NOT_THERE.sub(" ", sentence))}
    name = words(user_name)[:1]
    out = {_stem(m["job"]) for m in (*JOB.finditer(stored), *DRIVES.finditer(stored), *INTRO_JOB.finditer(stored))
           if other and words(m["who"]) == name and _stem(m["job"]) not in said and m["job"] not in _KIN_OF}
    for part in users_parts(stored, user_name):
        out |= {_stem(m["at"].lower()) for m in WORK_PLACE.finditer(part)} - said
        if other and (left := other["left"]) and left.lower() != "job" and left.lower() in words(part) \
                and WORKS_THERE.search(part):  # "I've left the library" of "Fenella works part-time at the library"
            out.add(_stem(left.lower()))
    return out


def users_parts(stored: str, user_name: str) -> Iterator[str]:
    """The parts of a stored memory (`JOINT`) whose subject is the user ("Ines lives in ..."), not
    something of theirs ("Ines's brother ...")."""
    name = words(user_name)[:1]
    theirs = False
    for sentence in SENTENCE.split(stored):
        theirs = theirs and sentence.startswith("they ")  # after a ";"
        for part in JOINT.split(sentence)[0::2]:
            if name and words(part)[:1] == name and not re.match(r"^\S+['’]", part):
                theirs = True
                yield part
            elif theirs and words(part)[:1] == ["they"]:  # "Ji-woo has a boyfriend, Daan; they live together in ..."
                yield part


BOUGHT_HOME = re.compile(r"\b(?:(?i:i|we)|[A-Z][^\W\d_]+\s+and\s+I)\s+(?:(?:just|finally)\s+)?bought\s+"
                         r"(?:a|an|our|my)\s+(?:new\s+)?(?:[a-z]+\s+)?(?:house|flat|home|apartment|bungalow|cottage)"
                         r"\s+in\s+(?P<to>[A-Z][^\W\d_]+)")
"""A home bought somewhere, said as a move: "Daan and I bought a house in Delft; we moved on the 1st of June" (fresh31:
"they live together in Kralingen" stayed)."""


def moved_on(clause: str, stored: str, user_name: str) -> set[str]:
    """The `_stem`s of the place or employer a first-person clause says the user left for another
    (`MOVED_TO`, `MOVED_IN_WITH`, `LIVE_NOW`, `JOINED`), where a part of the stored memory whose
    subject is the user says they live or work there."""
    out: set[str] = set()
    for said, held in ((MOVED_TO, LIVES_IN), (MOVED_IN_WITH, LIVES_IN), (LIVE_NOW, LIVES_IN), (BOUGHT_HOME, LIVES_IN),
                       (JOINED, WORKS_AT)):
        for m in said.finditer(clause):
            for part in users_parts(stored, user_name):
                out |= {_stem(h["at"].lower()) for h in held.finditer(part)
                        if h["at"].lower() != m["to"].lower() and m["to"].lower() not in words(part)}
    return out


def ending(lines: str, stored: str, user_name: str, *, own: bool = False, asked: str = "") -> set[str]:
    """The `_stem`s of the stored memory's words that a clause of `lines` says have ended, or
    whose value has changed (empty: none). A clause ends the words it shares with the memory
    when it says "quit", "stopped", "no longer", "not ... any more", "no more", "used to",
    "pulled out", "called off", "cancelled", "dropped out", "broke up", "moved out", "came off",
    "smoked my last", "no ... now" or "not ... after all" ("I quit Deloitte" for "Irene works as an accountant at
    Deloitte"; "I stopped drinking coffee, but I love my job at Google" does not end "Bob works at
    Google"), or when it changes a number to one the memory does not state, which states one
    ("they upped my levothyroxine to 75" for "Alasdair is on levothyroxine, 50 micrograms"). The
    shared word may belong to something else in the same clause: "The Google offsite got
    cancelled" would end "Bob works at Google" (a known false positive of a word rule). `own`:
    only clauses in the first person count ("I've come off the ondansetron", not "a baker who used
    to work in Barcelona"), or clauses of a sentence that names no one (`says_own`). The parts of
    a memory that say something has ended themselves are not ended again, but what they say was
    stopped ends when a clause says it is done again ("I've been cycling to work again" for
    "Benedikt stopped cycling to work"); a role ends when a clause says someone else now holds it
    ("my neurologist is now Dr Steinwender" for "Benedikt's neurologist is Dr Pichler"), unless
    that part of the memory holds a health fact too (a social worker's word of an allergy stays).
    What an "it" of an ending clause refers to, or a clause that says only "Finished", is found in
    the clauses before it (`referent`), or in the question the first line answers (`asked`: "And
    the budesonide?" "Finished in August"; a "No" to a question with "still" ends what it asks
    about). A move or a new employer said in the first person ends where a memory says its user
    lives or works (`moved_on`), and other work, or work left, ends what a memory says they work as
    (`new_job`); being back at the office ends working from home. Empty for Chinese."""
    if CJK_CHAR.search(stored + lines):
        return set()
    lines, stored = with_digits(lines), with_digits(stored)  # "two hundred and fifty milligrams" of "300 mg"
    sentences = SENTENCE.split(PARENTHESES.sub(" ", stored))
    held = {w for sentence in sentences for clause in CLAUSE.split(sentence) if not ENDED.search(clause)
            for w in _content_stems(clause, user_name) | short_things(clause)} - UNITS
    # the numbers of each part of the memory ("..., and Alasdair is on levothyroxine, 50 micrograms"), with its words
    pieces = [part for sentence in sentences for part in JOINT.split(sentence)[0::2] if not ENDED.search(part)]
    valued = [(_content_stems(part, user_name) - UNITS, amounts(part)) for part in pieces]
    stopped = {_stem((m["w"] or m["n"] or m["t"] or m["c"] or m["d"]).lower()) for m in STOPPED_DOING.finditer(stored)}
    out: set[str] = set()
    sentences = SENTENCE.split(lines)
    clauses = [clauses_of(sentence) for sentence in sentences]
    for s, sentence in enumerate(sentences):
        # the first sentence of an answer to a question put to the speaker is the speaker's own ("Who's your emergency
        # contact now?" -- "Marcelo first now: 765 20 418.": fresh35)
        mine = not own or says_own(sentence) or s == 0 and bool(asked) and YOURS_ASKED.search(asked) is not None
        if mine:  # "My lithium ..., so it's 600 mg now instead of 800"
            said = _content_stems(sentence, user_name) - UNITS
            for m in (*INSTEAD.finditer(with_digits(sentence)), *FROM_TO.finditer(with_digits(sentence))):
                new, old = (SPELLED.get(n.lower(), n) for n in (m["new"], m["old"]))
                out |= {w for about, numbers in valued if old in numbers and new not in numbers
                        for w in about & said - DOSE_WORDS}
            # "every three months now instead of every month", "went from every week to every two weeks"
            for m in (*INSTEAD_OF_EVERY.finditer(sentence), *FROM_EVERY.finditer(sentence)):
                gone = every_unit(m)
                out |= {w for (about, _), part in zip(valued, pieces)
                        if gone in {every_unit(e) for e in EVERY.finditer(part)} for w in about & said}
            if s == 0 and asked and "still" in words(asked) and NOT_STILL.match(clauses[0][0]):
                out |= held & _content_stems(asked, user_name)  # "Still on the warfarin?" "No, ..."
            if s == 0 and asked and CONTACT_ASKED_NOW.search(asked) and (named := SUBJECT_NAME.match(sentence)) and (
                    named["rel"] or (NAME_ALONE.fullmatch(sentence.strip()) or FIRST_NOW.match(sentence.strip()))
                    and named["name"].lower() not in NOT_NAMES | FILLER | COMMON_WORDS | {"nobody", "unchanged"}):
                # "Who's your emergency contact now?" "My sister Mandisa." (not "Same.", nor "Mandisa and Nokwanda.")
                others = {w.lower() for w in CAPITALIZED.findall(sentence)} - {named["name"].lower()}
                if not others & set(words(stored)):
                    out |= contact_replaced(named["name"].lower(), stored, user_name)
            if s == 0 and asked and "contact" in asked.lower() and (after := AFTER_THEM.search(lines)):
                out |= contact_after(f"{asked} {lines}", after["name"] or after["then"], stored, user_name)
            if s == 0 and asked and CARER_ASKED_NOW.search(asked) and (carer := CARER_NAMED.match(sentence.strip())):
                out |= role_taken(carer["role"].lower(), carer["name"], stored, user_name)
            if s == 0 and asked and YES.match(clauses[0][0]) and stopped & (again := done_again(YOU.sub("I", asked))):
                out |= _content_stems(stored, user_name) & again  # "Are you driving again?" "Yes, ..." (fresh23)
        # a dose said of "it", of the one medicine the question asks about ("Any change to the desmopressin?" -- "...
        # since the 12th of May it's 0.2 milligrams at night": fresh33)
        asked_of = {_stem(one)} if asked and IT_DOSE.search(sentence) and (one := asked_medicine(asked, sentence)) \
            else set()
        for i, clause in enumerate(clauses[s]):
            said = _content_stems(clause, user_name) - UNITS | (asked_of if IT_DOSE.search(clause) else set())
            switch = switched(clause)
            valued_as = with_digits(clause)  # "twelve hundred milligrams" is 1200 (fresh33)
            changed = {SPELLED.get((m["n"] or m["m"]).lower(), m["n"] or m["m"])
                       for m in CHANGED_TO.finditer(valued_as)}
            changed |= {SPELLED.get(m["n"].lower(), m["n"]) for m in NOW_VALUE.finditer(valued_as)}
            if SINCE_OR_NOW.search(clause):
                changed |= {SPELLED.get(m["n"].lower(), m["n"]) for m in EVERY_NOW.finditer(valued_as)}
            # a value measured again changes one measured, not a dose ("My lithium level is 0.9 now" of "800 mg")
            measured = {SPELLED.get((m["n"] or m["m"]).lower(), m["n"] or m["m"])
                        for m in MEASURED_NOW.finditer(valued_as)}
            # the word saying it ended is not what ended ("Stopped in March" of "..., to stop a flare": fresh27)
            # (a unit it shares is no thing: "raised it to 90 milligrams" of "burosumab, 80 milligrams": fresh31)
            if (not held & said - OVER_STEMS - DOSE_WORDS and (not own or says_own(sentence))
                    and ((ENDED.search(clause) or changed)
                         and (REFERRING & set(words(clause)) or THE_DOSE.search(clause))
                         or SUBJECTLESS.match(clause) or switch)):
                # "the topiramate made my fingers tingle, so it was stopped"; "And the budesonide?" "Finished in
                # August"; "The sumatriptan helps, so they put it up to 100 mg"
                # the clauses of the sentences before too, nearest last: "The indomethacin gave me a stomach ulcer; it
                # bled in May and I spent two days in hospital. So it's stopped." (fresh35: ended nothing)
                them = referent([*(c for before in clauses[:s] for c in before), *clauses[s][:i]], "" if s else asked,
                                held, user_name)
                if switch:  # what was switched from is no doctor: "Dr Pritchard stopped it and switched me to ..."
                    them -= {_stem(m["name"].lower()) for m in TITLED_NAME.finditer(sentence)}
                out |= {w for about, numbers in valued if numbers and changed - numbers
                        for w in about & them - DOSE_WORDS - QUALIFIERS} \
                    if changed else them
            if own and not says_own(clause, sentence):
                continue
            if held & said and (over := ENDED.search(clause) or taken_out(clause)):
                # what ended, not the word saying so ("The senna and docusate are gone" ends no "hasn't gone"), nor
                # a doctor who ended it (fresh24: "Dr Pritchard stopped it" ended "Dr Pritchard ... says ...")
                agents = {_stem(m["name"].lower()) for m in TITLED_NAME.finditer(clause[:over.start()])} \
                    if STOPPED_WHAT.match(clause[over.end():]) else set()
                # what was stopped, when the memory holds it, not the reason said after it (fresh27: "The metabolic
                # team stopped the metformin at once: in MELAS it can cause lactic acidosis" ended the MELAS)
                what = held & _content_stems(OBJECT_END.split(clause[over.end():], 1)[0], user_name) \
                    if STOPPED_WHAT.match(clause[over.end():]) else set()
                # "The etoricoxib is stopped: my blood pressure went up": what is after the colon is why (fresh32: it
                # ended "a tyrosine blood test")
                why = REASON_AFTER.match(clause[over.end():])
                told = _content_stems(clause[:over.end() + why.start(1)], user_name) - UNITS if why else said
                told |= short_things(clause[:over.end() + why.start(1)] if why else clause)  # "No more pens" (fresh33)
                out |= (what or held & told) - OVER_STEMS - agents
                if BROKE_UP.match(over[0]):  # "Stavros and I split up in March": no partner now (fresh30)
                    out |= {_stem(w) for w in words(stored) if w in PARTNERS}
            # the value of what the part is about: "cut the season to five weeks" changes no dose "every two
            # weeks", "the flushes are down to two a day" no age of "Filipa is 51 ..., including hot flushes"
            # (not by a word that only qualifies: "my blood pressure went up to 170" changes no "blood test": fresh32)
            out |= {w for about, numbers in valued if numbers and changed - numbers
                    for w in about & said - DOSE_WORDS - QUALIFIERS}
            out |= {w for (about, numbers), part in zip(valued, pieces) if numbers and measured - numbers
                    and not doses(part) for w in about & said - DOSE_WORDS - QUALIFIERS}
            if dosed := doses(clause):  # a dose said again: "Bisoprolol is 5 mg" of "Bisoprolol, 1.25 mg ..."
                out |= {w for (about, _), part in zip(valued, pieces) if (was := doses(part)) and not dosed & was
                        for w in about & said - DOSE_WORDS}
            if stopped & done_again(clause):
                out |= _content_stems(stored, user_name) & said
            # "I'm back in the office three days a week", "I'm back at work"
            out |= {w for back, was, gone in BACK_AGAIN if back.search(clause) and was.search(stored)
                    for w in held & gone}
            if BORN.search(clause):  # "Our son was born on the 2nd of October" ends "... is pregnant" (fresh34)
                out |= held & PREGNANT
            if (diet := DIET_NOW.search(clause)) and diet["diet"].lower() not in words(stored):
                out |= held & {_stem(w) for w in NOT_EATEN[diet["diet"].lower()]}
        if mine:
            out |= (new_holder(sentence, stored, user_name) | moved_on(sentence, stored, user_name)
                    | new_job(sentence, stored, user_name) | new_number(sentence, stored))
    # a medicine given before something ends with no course of it (fresh33: "The prednisone is finished" ended "so now
    # they give Facundo prednisone and an antihistamine first", before contrast dye)
    if not out:
        return out
    given_before = {_stem(w) for t in SENTENCE.split(stored) if PREMEDICATION.search(t) for w in words(t)
                    if medicine_word(w)}
    other = {_stem(w) for t in SENTENCE.split(stored) if not PREMEDICATION.search(t) for w in words(t)}
    return out - (given_before - other)


SHORT_THINGS_NOT = frozenset("""day way lot bit end far big bad let see say put try use set run get ago age per via
yes own odd ill low top two six ten new old due non pre""".split())


def short_things(text: str) -> set[str]:
    """The `_stem`s of the words of three letters a text names things with ("pen", "gym", "car"), which
    `_content_stems` leaves out: "No more pens" ends "Insulin by pen: glargine ..." (fresh33)."""
    return {_stem(w) for w in words(text) if len(w) == 3 and w.isalpha() and w not in SHORT_WORDS
            and w not in FILLER and w not in SHORT_THINGS_NOT and w not in TIME_WORDS} | {
        stem for w in words(text) if len(w) == 4 and len(stem := _stem(w)) == 3 and stem not in SHORT_WORDS
        and stem not in SHORT_THINGS_NOT}


BORN = re.compile(r"\b(?:our|my|her|his|their)\s+(?:[a-z]+\s+)?(?:son|daughter|baby|boy|girl|twins)\b[^.;!?]{0,30}?"
                  r"\b(?:was|were)\s+born\b", re.IGNORECASE)
PREGNANT = frozenset(_stem(w) for w in "pregnant pregnancy expecting".split())
PHONE = re.compile(r"(?<![\d.,])\+?\d{2,5}(?:[ -]\d{2,4}){1,3}(?![\d.,]\d)")
NEW_NUMBER = re.compile(r"\bnew\s+(?:phone\s+|mobile\s+|cell\s+)?number\b", re.IGNORECASE)


def new_number(sentence: str, stored: str) -> set[str]:
    """The words of a phone number of the stored memory when `sentence` says someone it names has a new one
    (`NEW_NUMBER`, with the number) and the memory names them too: "Still Tomas, but he has a new number: 8699 31
    507." ends "Rūta's emergency contacts: Tomas: 8612 44 903." (fresh34)."""
    if not NEW_NUMBER.search(sentence) or not (said := PHONE.findall(sentence)):
        return set()
    named = {w for w in CAPITALIZED.findall(sentence)} - TITLE_WORDS
    if not named & set(CAPITALIZED.findall(stored)):
        return set()
    return {w for number in PHONE.findall(stored) if number not in said for w in words(number)}


PREMEDICATION = re.compile(r"\b(?:first|beforehand)\s*[.!;]?\s*$|\bbefore\s+(?:each|every|any)\b", re.IGNORECASE)
"""A sentence that says something is given before something else: "..., so now they give me prednisone and an
antihistamine first", "Before each rituximab they give me paracetamol"."""


BROKE_UP = re.compile(r"broke up|split up|separated|divorced")
PARTNERS = frozenset("partner boyfriend girlfriend husband wife fiancé fiance fiancée fiancee spouse".split())
"""An ending that is a couple parting, and what it ends a memory calls the one parted from."""


LISTED = re.compile(r"^(?:the|my|our|his|her|their)\s+[^\s,]+(?:\s+[^\s,]+){0,2}$", re.IGNORECASE)
"""A clause that is only a thing named ("The ursodeoxycholic acid"): the first of a compound subject."""
NO_LISTED = re.compile(r"\bno\s+[^\s,]+\s*$", re.IGNORECASE)
"""A clause that ends in a thing ruled out, before "and no ...": "so no insulin and no metformin now" is one."""
NAME_AND_I = re.compile(r"^\s*(?:(?:and|but|so)\s+)?[A-Z][^\W\d_]+\s*$")
"""A name alone before "and I ...": the two are the clause's subject ("Ama and I separated in the spring")."""


TO_VALUE = re.compile(r"\s*to\s+(?:" + _NUMBER + r")\b", re.IGNORECASE)
"""A clause that is only the value something was changed to: ", to 500 milligrams twice a day"."""


def clauses_of(sentence: str) -> list[str]:
    """A sentence's clauses (`CLAUSE`), a thing named before "and" kept with the clause it is the
    subject of: "The ursodeoxycholic acid and the cholestyramine are finished" is one, and so are
    "no insulin and no metformin now" and "Ama and I separated in the spring"; a thing named after
    "and" goes with the clause before it ("I came off the azathioprine and the budesonide"), and so
    does a value it was changed to ("they halved the mycophenolate, to 500 milligrams")."""
    # and after a colon before a clause of its own (fresh15), not before what it says ("doubled my metformin: 1000 mg")
    pieces = re.split(f"({CLAUSE.pattern}|:\\s+(?=(?-i:[A-ZÀ-ÖØ-Þ])))", sentence, flags=re.IGNORECASE)
    out = [pieces[0]]
    for joint, clause in zip(pieces[1::2], pieces[2::2]):
        if joint.strip().lower() == "and" and (LISTED.match(out[-1].strip()) or NO_LISTED.search(out[-1])
                                                and clause.lstrip().lower().startswith("no ")
                                                or NAME_AND_I.match(out[-1]) and re.match(r"\s*I\b", clause)
                                                or LISTED.match(clause.strip().rstrip(".!;"))) \
                or TO_VALUE.match(clause):  # "they halved the mycophenolate, to 500 milligrams" (fresh25)
            out[-1] += joint + clause
        else:
            out.append(clause)
    return out


GONE = re.compile(r"\b(?P<name>[A-Z][^\W\d_]+)\s+(?:has\s+|had\s+|is\s+|just\s+)?(?:retired|passed away|died|moved away"
                  r"|left(?=\s*(?:[.,;!?]|$)|\s+(?:in|at|on|last|this|after|before|for good)\b)"
                  r"|hand(?:ed|ing|s) (?:me|him|her|them|us) over(?!\s+(?:a|an|the|some|his|her|my)\b)"
                  r"|(?:gone|going|went) on (?:sabbatical|leave|maternity leave|paternity leave|long leave))\b")
"""Someone gone from where a memory has them: "Don Ernesto retired after the harvest", "Tomasz left
in June" (not "Tomasz left the sheet music"), "Dr Visser has handed me over to Dr Bakker", "Dr
Tuilagi has gone on sabbatical" (not "handed me over a leaflet")."""


WED = re.compile(r"\b(?:(?P<name>[A-Z][^\W\d_]+) and I|I|[Ww]e)\s+(?:(?:have|had|got|are|were|just)\s+|['’](?:re|ve)\s+)*"
                 r"(?:got\s+|get\s+)?(?P<how>married|engaged|wed)\b(?:\s+(?:to\s+)?(?P<to>[A-Z][^\W\d_]+))?")
"""A wedding or an engagement said in the first person: "Hana and I got married", "we're engaged", "I married
Tomas"."""
WED_ALONE = re.compile(r"^\s*(?P<name>(?!))?(?P<to>(?!))?(?:(?:Just|Finally|Now)\s+)?(?P<how>married|engaged)\b(?=\s*[!.,])",
                       re.IGNORECASE)
"""A wedding or an engagement said in one word, as a line starts: "Married! On the 12th of September" (fresh20)."""
COURTING = {"married": ("girlfriend", "boyfriend", "fiancé", "fiance", "fiancée", "fiancee", "partner"),
            "wed": ("girlfriend", "boyfriend", "fiancé", "fiance", "fiancée", "fiancee", "partner"),
            "engaged": ("girlfriend", "boyfriend", "partner")}
"""What someone stops being to the speaker when they marry (get engaged): fresh18 kept "Ji-ho's girlfriend is
Hana" beside "Hana and Ji-ho got married"."""


CONTACT_NOW = re.compile(r"\b(?:(?P<name>[A-ZÀ-ÖØ-Þ][^\W\d_]+)|[Ss]he|[Hh]e)(?:\s*,\s*who\b[^,.;!?]{1,60},)?"
                         r"(?:['’]s|\s+is)\s+(?:now\s+)?(?i:my|our)\s+"
                         r"(?:(?i:first|main)\s+)?(?i:emergency\s+contact)\s+now\b"
                         r"|\b(?i:my|our)\s+(?:(?i:first|main)\s+)?(?i:emergency\s+contact)\s+is\s+(?:(?i:now)\s+)?"
                         r"(?:(?i:my|our)\s+[a-z]+\s+)?(?P<named>[A-ZÀ-ÖØ-Þ][^\W\d_]+)(?=[^.;!?]*\bnow\b)")
"""Someone the user's emergency contact is now: "She's my emergency contact now; Jerzy is second", "so my emergency
contact is my daughter Marisa now" (fresh26: the old contacts stayed), "my daughter Aïssatou, who lives in Villeurbanne
too, is my emergency contact now" (fresh27)."""
CONTACT_ASKED_NOW = re.compile(r"\bemergency\s+contact\b[^?]*\bnow\b|\bnow\b[^?]*\bemergency\s+contact\b"
                               r"|\b(?:new|current)\s+emergency\s+contact\b"
                               r"|\bwho\b[^?]*\b(?:call(?:ed)?|rung|ring|phoned?)\b[^?]*\bnow\b", re.IGNORECASE)
NAME_ALONE = re.compile(r"[A-ZÀ-ÖØ-Þ][^\W\d_]+(?:-[^\W\d_]{2,})?\.?")
FIRST_NOW = re.compile(r"[A-ZÀ-ÖØ-Þ][^\W\d_]+(?:-[^\W\d_]{2,})?\s+first\b")
"""The question of whom the user's emergency contact is now, and an answer that is a name alone: "Who's your emergency
contact now?" "My sister Mandisa." (fresh28: the cousin stayed the contact) or "Mandisa.", or a name first ("Who
should be called now?" "Dawa first, now that she's here for good.": fresh29, the brother stayed the contact)."""
RANKS = ("first", "second", "third")
RANKED = re.compile(r"\b(?P<name>[A-ZÀ-ÖØ-Þ][^\W\d_]+)(?:['’]s|\s+is)?\s+(?:now\s+)?"
                    r"(?P<rank>first|second|third)\b")
"""Whom someone calls in which order now: "so he's first now and Busisiwe second" (fresh22: "Busisiwe is
first" stayed)."""


def contact_replaced(name: str, stored: str, user_name: str) -> set[str]:
    """The `_stem`s of "emergency contact" when a sentence of the stored memory says who it is
    ("... emergency contacts: Senad.") and does not name `name`, the user's contact now (not the user; "" for a
    "she" or "he": any other)."""
    named = set(words(name))  # none for "She's my emergency contact now": any other
    if named and named <= set(words(user_name)):
        return set()
    # "... should be called in an emergency by her mother, Selma" says who it is too (fresh33)
    stated = [said for said in map(words, SENTENCE.split(stored)) if "emerg" in (stemmed := {_stem(w) for w in said})
              and ("conta" in stemmed or "called" in said) and not (named and named <= set(said))]
    return {"emerg", "conta"} | ({"call"} if any("called" in said for said in stated) else set()) if stated else set()


def new_holder(clause: str, stored: str, user_name: str) -> set[str]:
    """The `_stem` of a role (a word) that `clause` (a sentence) says someone else now holds
    (`NOW_HOLDS`: "The new foreman is his nephew, Leandro"), when a part of the stored memory (a
    sentence) names it with someone else, or of the name of someone it says is gone (`GONE`) that
    such a part names; not when that part holds a health fact; and of the place someone had in the
    order of whom to call when the clause gives them another (`RANKED`)."""
    out: set[str] = set()
    for m in GONE.finditer(clause):
        name = m["name"].lower()
        if name not in _TITLES and name not in words(user_name):
            out |= {_stem(name) for sentence in SENTENCE.split(stored) if name in words(sentence)
                    and not health_said(sentence)}
    for m in (*WED.finditer(clause), *WED_ALONE.finditer(clause)):
        who = (m["name"] or m["to"] or "").lower()
        for sentence in SENTENCE.split(stored):
            said = set(words(sentence))
            roles = said & set(COURTING[m["how"].lower()])
            if len(roles) == 1 and (who in said if who else True) and not health_said(sentence):
                out.add(_stem(roles.pop()))
    for m in CONTACT_NOW.finditer(clause):  # whom a memory says the emergency contact is, when another is now
        out |= contact_replaced((m["name"] or m["named"] or "").lower(), stored, user_name)
    for m in RANKED.finditer(clause):  # "he's first now and Busisiwe second" of "Busisiwe is first"
        name, rank = m["name"].lower(), m["rank"].lower()
        if name in words(stored) and name not in STARTERS and name not in words(user_name):
            out |= {r for r in RANKS if r != rank and r in words(stored)}
    for m in NOW_HOLDS.finditer(clause):
        role = (m["role"] or m["here"] or m["new"] or m["plain"]).lower()
        name = m["name"] or m["other"] or m["there"] or m["newly"] or m["named"]
        if m["plain"] and not role.endswith(ONE_HOLDER):
            continue  # "my friend is Anna" ends no other friend
        out |= role_taken(role, name, stored, user_name)
    return out


AFTER_THEM = re.compile(r"\bafter\s+(?:her|him|them|that)\s*,?\s+(?:it['’]s|it\s+is|comes|I\s+call)\s+"
                        r"(?:(?:my|our)\s+[a-z-]+\s+)?(?P<name>[A-ZÀ-ÖØ-Þ][^\W\d_]+)"
                        r"|(?:^|[.!?]\s+)Then\s+(?:(?:my|our|[A-ZÀ-ÖØ-Þ][^\W\d_]+['’]s)\s+[a-z-]+,?\s+)?"
                        r"(?P<then>[A-ZÀ-ÖØ-Þ][^\W\d_]+)")
"""Whom an answer says comes after the first to call: "so after her it's my cousin Leota", "Daan first. Then Daan's
sister, Fenna"."""
NAME_WORD = re.compile(r"\b[A-ZÀ-ÖØ-Þ][^\W\d_]*(?:['’][^\W\d_]+)*")
FIRST_SAID = re.compile(r"\b(?P<name>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\s+(?:first|still)\b")


def contact_after(lines: str, name: str, stored: str, user_name: str) -> set[str]:
    """The `_stem`s of the names of people a stored memory of whom to call (one that says "contact", "call" or "after
    her") names, that the question of an emergency contact and its answer (`lines`) name too, when the
    answer says someone else, `name`, now comes after the first (`AFTER_THEM`): "Yes, Vailea first. But Fa'afetai is
    back in Apia, so after her it's my cousin Leota" ends Fa'afetai in "Tupe's emergency contact is her wife Vailea and
    brother Fa'afetai." (fresh31), and "Who's your emergency contact now, with Taemin leaving?" -- "Daan first. Then
    Daan's sister, Fenna" ends Taemin; not the one said first (`FIRST_SAID`), nor `name`, nor the user."""
    kept = {name.lower(), *words(user_name), *(m["name"].lower() for m in FIRST_SAID.finditer(lines))}
    said = {n.lower() for n in NAME_WORD.findall(lines)} - kept - {w.lower() for w in STARTERS}
    if not re.search(r"\bcontact|\bcall|\bafter\s+(?:her|him)\b", stored, re.IGNORECASE) or name.lower() in words(
            stored):
        return set()
    return {_stem(w) for n in NAME_WORD.findall(stored) if n.lower() in said - _TITLES for w in words(n) if len(w) >= 3}


def role_taken(role: str, name: str, stored: str, user_name: str) -> set[str]:
    """The `_stem` of `role` when a sentence of the stored memory names it with someone else than `name` and holds no
    health fact (`health_said`): `name` holds it now."""
    for sentence in SENTENCE.split(stored):
        said = set(words(sentence))
        others = {w.lower() for w in CAPITALIZED.findall(sentence)} - {name.lower(), *words(user_name)} - _TITLES
        if role in said and name.lower() not in said and others and not health_said(sentence):
            return {_stem(role)}
    return set()


CARER_ASKED_NOW = re.compile(r"\bwho\b[^?]*\b(?:looks?\s+after|treats?|is\s+treating|takes?\s+care\s+of)\b[^?]*\bnow\b"
                             r"|\bwho(?:['’]s|\s+is)\s+your\s+(?:new\s+)?[a-z]+\s+now\b", re.IGNORECASE)
CARER_NAMED = re.compile(r"(?:(?:Dr|Prof)\.?\s+)(?P<name>[A-Z][^\W\d_]+)(?:\s+[A-Z][^\W\d_]+)?,\s+(?:a|an|the|my)\s+"
                         r"(?:new\s+)?(?P<role>[a-z]+(?:ologist|ician|iatrist|surgeon|consultant))\b")
"""The question of who looks after someone now, and an answer naming a doctor and what they are: "Tafsut, who looks
after your Glanzmann now?" -- "Dr Hadjadj, a haematologist at the CHU Mustapha." (fresh31: "Dr Benali, Tafsut's
haematologist, ..." stayed)."""


def health_said(sentence: str) -> bool:
    """Whether a sentence holds a health word (`health_word`) that is not part of a name
    ("Brookfield Surgery", a GP's practice, is none)."""
    tokens = re.findall(r"[^\W_][\w'’-]*", sentence)
    return any(health_word(w) for k, t in enumerate(tokens) if not (k and t[:1].isupper())
               for w in words(t))


def ended(lines: str, stored: str, user_name: str) -> bool:
    """Whether a clause of `lines` says that what a stored memory states has ended (`ending`)."""
    return bool(ending(lines, stored, user_name))


_NOT_VERBS = "morning|evening|nothing|something|anything|everything|during|wedding|building|sibling|ceiling|pudding"
JOINT = re.compile(r"(,?\s+(?:and|but)\s+(?!an?\s+(?:half|quarter)\b)|,\s+so\s+|,\s+(?=(?:she|he|they)\s)"
                   r"|,\s+(?=(?!(?:" + _NOT_VERBS + r")\b)[a-z]{3,}ing\s))")
"""Where a sentence's parts meet: "..., and Alasdair is ...", "... and is taking ...", "..., she is
an architect", "..., so she is on warfarin", "..., requiring warfarin" (a clause of its own: not
"..., morning and night", nor the "and" of "two and a half": fresh20 kept "Girish has to drink two, so ...")."""
LEADING_PRONOUN = re.compile(r"^(?:(?P<subject>she|he|they)|(?P<owner>her|his|their))\b", re.IGNORECASE)


def without(text: str, gone: set[str], people: set[str], rejected: list[Rejection], step: str, index: int,
            what: str) -> str | None:
    """A candidate less its parts that hold one of the `_stem`s `gone` (`kept_apart`), listed in
    `rejected` as `what` ("...: that part is left out"); None, listed as dropped, when what is left
    cannot stand alone."""
    rest = kept_apart(text, gone, people)
    rejected.append(Rejection(step=step, path=f"memories[{index}]", action="dropped" if rest is None else "defaulted",
                              reason=what if rest is None else f"{what}: that part is left out"))
    return rest


def kept_apart(stored: str, gone: set[str], people: set[str], *, nameless: bool = False) -> str | None:
    """A stored memory less its parts (sentences, and their parts joined by "and" or "but") that
    hold one of the `_stem`s `gone`, when some part holds one and what is left stands alone (`flaw`
    finds nothing; `people`, the memory's own names, in words); else None. "Alasdair is
    hypothyroid, diagnosed last autumn" of "..., and he is on levothyroxine, 50 micrograms" when
    the dose went up; "Soraya is sick" of "... and is taking ondansetron" when she came off it.
    `nameless`: what is left may name no one when the memory named no one either. Who someone is to the user
    (`relations_left`) stays when the part saying it goes.
    What is left starting with "she" or "her" (not "they") is said of whom the memory starts with
    when that is one of `people`: "Ximena is an architect. Ximena's partner Ignacio does the shopping." of
    "Ximena is working from home for now, she is an architect. Her partner Ignacio does ..."."""
    first = (stored.strip().split() or [""])[0]
    listed = unlisted(stored, gone)
    out, dropped = _parts_left(listed, gone, first if first.lower() in people else "")
    dropped = dropped or listed != stored
    text = " ".join(out)
    if first.lower() in people and (m := LEADING_PRONOUN.match(text)) and m[0].lower() not in ("they", "their"):
        text = (first if m["subject"] else f"{first}'s") + text[m.end():]  # "they" is not whom it starts with
    head = LIST_HEAD.match(stored.strip())
    if head and text and head["who"].lower() in people and not text.startswith(head["who"]) \
            and any(medicine_word(w) for w in words(text.split(" ", 1)[0])):
        text = head[0] + text[0].lower() + text[1:]  # what is left of a list of medicines: "Kemal is on" it
    problem = flaw(text, people) if text else None
    flawed = problem is not None and not (nameless and problem == "nobody" == flaw(stored, people))
    if dropped and not flawed:
        # who someone is to the user goes with no part that ends (fresh27: the move and the new emergency contact
        # ended "Amadou lives in Lyon, ..., with his wife Mariama, who is his emergency contact", and the wife went)
        text = " ".join([text, *relations_left(stored, text, gone, first if first.lower() in people else "")]).strip()
    return None if not dropped or not text or flawed else text


OWNED_KIN = re.compile(rf"\b(?:(?P<pronoun>(?i:his|her|their))|{_OWNER}){_REL_NAME}")
"""Someone a memory says is someone's relation: "with his wife Mariama", "Ximena's partner Ignacio"."""


def relations_left(stored: str, kept: str, gone: set[str], who: str) -> list[str]:
    """Who someone is to `who` (the name a stored memory starts with), as the memory says it
    ("his wife Mariama"), for each relation whose person `kept` (what is left of it) does not
    name and whose word no part ended (`gone`): "Mariama is Amadou's wife."."""
    if not who:
        return []
    out: list[str] = []
    for m in OWNED_KIN.finditer(stored):
        owner, rel = m["owner"], m["rel"].lower() + (m["law"] or "")
        if owner and words(owner)[:1] != words(who)[:1] or _stem(m["rel"].lower()) in gone:
            continue
        if not set(words(m["name"])) & set(words(kept)):
            out.append(f"{m['name']} is {who}'s {rel}.")
    return list(dict.fromkeys(out))


TAKEN_LIST = re.compile(r"\b(?:(?:is|are|was|were)\s+(?:on|taking|using)|takes|take|uses)\s+(?P<list>[^.;:!?]+)",
                        re.IGNORECASE)
LIST_ITEM = re.compile(r",\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
PURPOSE = re.compile(r"\s+(?=(?:to|for|against|because|since|as)\s)")


def unlisted(stored: str, gone: set[str]) -> str:
    """A stored memory less the things of a list of what someone takes that hold one of the
    `_stem`s `gone`, the rest of the list kept, and what the list is for ("to manage his kidney
    function") with it: "Radek is taking ramipril to manage his kidney function" of "Radek is
    taking furosemide, ramipril, and dalteparin injections to manage his kidney function" when the
    furosemide and the dalteparin stopped (fresh20). Every thing listed must start with a health
    word ("ondansetron for morning, noon, and night" is no list of medicines); the memory as it is
    when none goes, or all do."""
    def cut(m: re.Match[str]) -> str:
        # what the list is for goes after it, whatever it says ("... to manage her kidney function and swelling":
        # fresh35 kept "Paulina is on swelling" when both medicines stopped)
        text, *tail = PURPOSE.split(m["list"], maxsplit=1)
        joints = LIST_ITEM.findall(text)
        items = LIST_ITEM.split(text)
        if len(items) < 2:
            return m[0]
        if not all((said := [w for w in words(item) if w not in ("the", "his", "her", "their", "my")])
                   and health_word(said[0]) for item in items):
            return m[0]
        kept = [item for item in items if not {_stem(w) for w in words(item)} & gone]
        if len(kept) in (0, len(items)):
            return m[0]
        conj = re.search(r"\b(?:and|or)\b", joints[-1])
        last_joint = f"{',' if len(kept) > 2 and ',' in joints[-1] else ''} {conj[0] if conj else 'and'} "
        joined = kept[0] if len(kept) == 1 else ", ".join(kept[:-1]) + last_joint + kept[-1]
        return m[0][:m.start("list") - m.start()] + joined + "".join(f" {t}" for t in tail)
    return TAKEN_LIST.sub(cut, stored)


TAKEN_NOW = re.compile(r"\b(?:(?P<be>is|are)\s+(?P<how>on|taking|using)|(?P<verb>takes|uses))\s+(?P<list>[^.;:!?]+)",
                       re.IGNORECASE)
TAKEN_PAST = {"is": "was", "are": "were", "takes": "took", "uses": "used"}


def in_the_past(stored: str, gone: set[str]) -> str | None:
    """A stored memory with what someone takes said in the past where what is taken holds one of the `_stem`s `gone`
    ("..., so Facundo is on metformin, 850 milligrams twice a day" -> "..., so Facundo was on metformin, ..."), for a
    memory that must stay (it names a condition the line ending it does not: fresh33's "The prednisone pushed
    Facundo's sugar up into diabetes, so ..." when "the metformin stopped too"); None when nothing is."""
    def past(m: re.Match[str]) -> str:
        if not {_stem(w) for w in words(m["list"])} & gone:
            return m[0]
        verb = m["be"] or m["verb"]
        said = TAKEN_PAST[verb.lower()]
        return m[0].replace(verb, said[0].upper() + said[1:] if verb[0].isupper() else said, 1)
    text = TAKEN_NOW.sub(past, stored)
    return text if text != stored else None


LIST_HEAD = re.compile(r"(?P<who>[A-ZÀ-ÖØ-Þ][^\W\d_]+)\s+(?:is\s+(?:on|taking|using)|takes|uses)\s+")
"""How a memory listing someone's medicines starts: "Kemal is on adalimumab, ...; doxycycline"."""


def without_ended(text: str, gone: set[str], value: str, people: set[str]) -> str:
    """`text` (a memory with a value changed in place, `revalued`) less its parts (`kept_apart`) that hold a stem of
    `gone` and not the new `value`: "Prednisone, 10 milligrams every morning." of "Prednisone, 10 milligrams every
    morning, and ciclosporin, 150 milligrams twice a day." when the ciclosporin went (fresh31); as it is when none."""
    ended = {w for w in gone if (rest := kept_apart(text, {w}, people, nameless=True)) is not None
             and value in amounts(rest)}
    return (kept_apart(text, ended, people, nameless=True) or text) if ended else text


def amounts_in(text: str) -> list[tuple[int, int, str]]:
    """The numbers `text` states but years, each with where it is and its digits: a number said in words is read whole
    ("twenty-five milligrams" is 25, not 5: fresh35, where "raised the amitriptyline to fifty milligrams" made the
    stored "twenty-five milligrams" "twenty-50 milligrams"; "twelve hundred" is 1200)."""
    spelled = [(m.start(), m.end(), "1" if m[0].lower() == "one" else with_digits(m[0]))
               for m in SPELLED_NUMBER.finditer(text)]
    return sorted([(m.start(), m.end(), m[0]) for m in AMOUNT.finditer(text) if m[0][0].isdigit()
                   and not YEAR.fullmatch(m[0])] + [n for n in spelled if n[2].isdigit()])


UNIT_AFTER = re.compile(rf"\s*(?P<unit>{DOSE_UNIT[3:-4]}|{DOSE_FORM[3:-4]})\b", re.IGNORECASE)
SAME_UNIT = {"mg": "milligram", "mcg": "microgram", "µg": "microgram", "g": "gram", "ml": "millilit", "iu": "unit",
             "pill": "tablet"}


def unit_after(text: str, end: int) -> str | None:
    """The unit or form said right after a number that ends at `end` ("six hundred milligrams" -> "milligram", "ten
    tablets" -> "tablet"), one name for each ("mg" is "milligram"); None when none is."""
    m = UNIT_AFTER.match(text, end)
    if m is None:
        return None
    unit = m["unit"].lower()
    unit = "millilit" if unit.startswith("millilit") else unit.removesuffix("es" if unit.endswith("ches") else "s")
    return SAME_UNIT.get(unit, unit)


def phone_changed(stored: str, lines: str) -> tuple[str, str, str] | None:
    """A stored memory with the one phone number it states changed to the one a line says is someone's new number, of
    someone both name (`new_number`: "Still Wiremu, but on his new number: 022 408 6615" of "...: Wiremu: 021 774 3190.
    He drives a logging truck, ...": fresh36 kept both, what was left without the old one not standing alone); None
    otherwise."""
    def phones(text: str) -> list[re.Match[str]]:
        return [m for m in PHONE.finditer(text) if sum(c.isdigit() for c in m[0]) >= 7]
    old, new = phones(stored), phones(lines)
    if len(old) != 1 or len(new) != 1 or not new_number(lines, stored):
        return None
    whose = CAPITALIZED.findall(stored[:old[0].start()])[-1:]  # the one named just before the number
    if not set(whose) & set(CAPITALIZED.findall(lines)) - TITLE_WORDS:
        return None
    return stored[:old[0].start()] + new[0][0] + stored[old[0].end():], old[0][0], new[0][0]


def revalued(stored: str, lines: str) -> tuple[str, str, str] | None:
    """A stored memory with the one number a line changes (`CHANGED_TO`: "moved him up to 30 mg of
    the Equasym") put in place of the one it states of the same thing, with the old number and the
    new: the part of the memory (a sentence, or its part joined by "and" or "but") that shares a
    medicine's or a name's word with the line's sentence and states exactly one number (fresh12:
    "he takes Equasym XL 20 mg at breakfast. Never after noon, ..." kept its 20 mg beside the 30,
    since what was left without it could not stand), unless the two are said in other units ("went up to ten tablets a
    day" of "six hundred milligrams"). None when no such part, or more than one."""
    if CJK_CHAR.search(stored + lines):
        return None
    if (number := phone_changed(stored, lines)) is not None:
        return number
    found: list[tuple[str, str, str, str]] = []
    # numbers said in words as digits, whole: "twelve hundred milligrams" is 1200, not 12 (fresh33)
    for sentence in SENTENCE.split(with_digits(lines)):
        # what the sentence names: its health words, a unit ("mg") only when it names no other
        named = [w for w in words(sentence) if health_word(w)]
        health = {_stem(w) for w in named if not DOSE.fullmatch("1 " + w)} or {_stem(w) for w in named}
        values = [(SPELLED.get((m["n"] or m["m"]).lower(), m["n"] or m["m"]), health | {
                       _stem(w.lower()) for w in CAPITALIZED.findall(sentence)[1:] if w.lower() not in STARTERS}, False,
                   unit_after(sentence, m.end()))
                  for m in CHANGED_TO.finditer(sentence)]
        # a dose said again, of what its clause names ("Bisoprolol is 5 mg now"), for a dose
        values += [(dose, _content_stems(clause, "") - UNITS - DOSE_WORDS, True, None)
                   for clause in clauses_of(sentence) if not CHANGED_TO.search(clause)
                   for dose in doses(clause) if "/" not in dose]
        # how often, said since when: "since April my transfusions are every three weeks" (fresh33) changes the one
        # "every four weeks" of a part that states other numbers too ("..., two units, ...")
        for clause in clauses_of(sentence):
            for m in EVERY_NOW.finditer(clause) if SINCE_OR_NOW.search(clause) else ():
                unit = _stem(m[0].split()[-1].lower())
                new = SPELLED.get(m["n"].lower(), m["n"])
                for sentence_held in SENTENCE.split(stored):
                    for part in JOINT.split(sentence_held)[0::2]:
                        every = [e for e in EVERY_N.finditer(part) if _stem(e["unit"].lower()) == unit]
                        old = SPELLED.get(every[0]["n"].lower(), every[0]["n"]) if len(every) == 1 else new
                        if old != new and health & {_stem(w) for w in words(part)}:
                            start, end = every[0].span("n")
                            found.append((part, part[:start] + new + part[end:], old, new))
        for new, things, dose, in_unit in values:
            for sentence_held in SENTENCE.split(stored):
                for part in JOINT.split(sentence_held)[0::2]:
                    numbers = amounts_in(PARENTHESES.sub(lambda p: " " * len(p[0]), part))
                    if len(numbers) != 1 or not things & {_stem(w) for w in words(part)}:
                        continue
                    start, end, old = numbers[0]
                    if in_unit and (was := unit_after(part, end)) and was != in_unit:
                        continue  # "went up to ten tablets a day" changes no "six hundred milligrams" (fresh35)
                    if old != new and (not dose or old in doses(with_digits(part))):
                        found.append((part, part[:start] + new + part[end:], old, new))
    if len(set(found)) != 1:
        return None
    part, changed, old, new = found[0]
    return stored.replace(part, changed, 1), old, new


STOPPED_THING = re.compile(r"\b(?:the\s+|my\s+|his\s+|her\s+|their\s+)?(?P<a>[a-z][\w-]{3,})\s+(?:stopped working|(?:was|got|"
                           r"has been|have been|were|is|are) (?:stopped|discontinued|finished)"
                           r"|(?:stopped|finished)" + ENDS_THERE + r")\b"
                           r"|\b(?:stopped|quit|c[oa]me off|coming off|off|discontinued|no longer (?:on|taking))\s+"
                           r"(?:taking\s+)?(?:the\s+|my\s+|his\s+|her\s+|their\s+)?(?P<b>[a-z][\w-]{3,})", re.IGNORECASE)
"""A medicine (or anything taken) a line says was stopped: "The modafinil stopped working", "they
took me off the warfarin", "I've come off the ondansetron", "Furosemide stopped, no swelling at all",
"The co-trimoxazole stopped with the chemo" (fresh20; not "The warfarin stopped nothing")."""
OFF_WORDS = re.compile(r"\b(?:off|stopp\w*|quit|no longer|used to|replac\w*|switch\w*|instead|former\w*|previous\w*"
                       r"|until|before|was|were|had)\b", re.IGNORECASE)
"""A memory that speaks of a stop or of the past itself ("Wei is off warfarin", "switched from")."""


def taken_though_stopped(text: str, lines: str) -> set[str]:
    """The `_stem`s of what a memory says is taken (`_taken_though_not`, as for an allergy:
    "Bartosz is taking modafinil and pitolisant") that the lines it cites say was stopped
    (`STOPPED_THING`: "The modafinil stopped working and made my heart race, so ... it's
    pitolisant": qwen1.5b); none when the memory speaks of a stop or of the past (`OFF_WORDS`)."""
    if CJK_CHAR.search(text) or OFF_WORDS.search(text):
        return set()
    stopped = {(m["a"] or m["b"]).lower() for m in STOPPED_THING.finditer(lines)}
    return {_stem(w) for w in stopped if _taken_though_not(w, text, lines)}


def worth_keeping(stored: str, gone: set[str], people: set[str]) -> bool:
    """Whether what `kept_apart` leaves of a stored memory, when it cannot stand alone, holds
    something worth keeping it whole for: a health word, a number, or a name not the memory's own
    (`people`; a pronoun is none: "Eleftheria's emergency contacts: Stavros. He's home more than Eleftheria is." kept
    nothing worth it when the split ended Stavros, fresh30). fresh20 kept "Can't go up ladders, can't drive to sites.
    It's doing Hemi's head in, excuse the pun." whole when driving and the building job had ended, for its last
    sentence."""
    parts = _parts_left(stored, gone, "", predicates_stay=True)[0]
    return any(health_word(w) or any(c.isdigit() for c in w) for part in parts for w in words(part)) or any(
        w.lower() not in people and w.lower() not in STARTERS | PRONOUNS and w.lower() not in MONTHS
        and w.lower() not in WEEKDAYS for part in parts for w in CAPITALIZED.findall(part))


def job_ended(stored: str, gone: set[str], people: set[str]) -> bool:
    """Whether `gone` holds the work a stored memory says its person does (`JOB`): what is left of
    it is of that work ("Margarida is a court interpreter in Coimbra, Portuguese and French" keeps
    nothing worth keeping when the interpreting ended, fresh22)."""
    return any(_stem(m["job"]) in gone and m["who"].lower() in people for m in JOB.finditer(stored))


def lasting(stored: str) -> str:
    """The clauses of a stored memory that say nothing has ended (`ENDED`): a condition named in
    "Still on the levetiracetam, no more seizures" is over, no diagnosis to keep (fresh20)."""
    return " ".join(clause for sentence in SENTENCE.split(stored) for clause in CLAUSE.split(sentence)
                    if clause and not ENDED.search(clause))


PREDICATE = re.compile(r"^(?:is|are|was|has|had|takes|needs|uses|lives|works|can(?:not|['’]t)?|must|should|will"
                       r"|does(?:n['’]t)?|gets|goes|keeps|avoids)\s", re.IGNORECASE)
"""A part that says more of the sentence's subject: "... and is on a low-fibre diet"."""


NAMED_DOSE = re.compile(rf"\s*(?:the\s+)?[^\W\d_]{{4,}}(?:\s+[^\W\d_]+)?,?\s+\d+(?:\.\d+)?\s*{DOSE_UNIT}",
                        re.IGNORECASE)
"""A part of a list that names a thing and its dose ("and eplerenone, 25 milligrams, all in the morning": fresh29 lost
it with the ramipril before it): a thing of its own, not one of what went before."""


def _parts_left(stored: str, gone: set[str], subject: str, *,
                predicates_stay: bool = False) -> tuple[list[str], bool]:
    """The sentences of a stored memory less the parts that hold one of the `_stem`s `gone`, and
    whether any part held one (`kept_apart`). A part that says more of the memory's `subject`
    (`PREDICATE`) after a dropped one stays, with the subject: "Ximena is on a low-fibre diet" of
    "Ximena is taking azathioprine ... and is on a low-fibre diet"; with no subject, only when
    `predicates_stay` (and as it is)."""
    out: list[str] = []
    dropped = False
    for sentence in SENTENCE.split(stored.strip()):
        pieces = JOINT.split(sentence)  # part, joint, part, ..., part
        parts, joints = pieces[0::2], ["", *pieces[1::2]]
        kept: list[int] = []
        going = False  # the part before was dropped, or went with one that was
        for k, part in enumerate(parts):
            # a part that opens no clause of its own goes with a dropped part before it: "... and
            # is taking ondansetron for morning, noon, and night" loses "night" too
            said = (bool(subject) or predicates_stay) and bool(PREDICATE.match(part))
            opens = LEADING_PRONOUN.match(part)  # a clause of its own, but "they" tell of the part before
            # a medicine of a list that goes on is a thing of its own: "...; doxycycline, 100 mg a day, and
            # clindamycin gel on the lumps" keeps the clindamycin when the doxycycline ends (fresh15)
            listed = any(medicine_word(w) for w in words(part)) or bool(NAMED_DOSE.match(part))
            going = bool({_stem(w) for w in words(part)} & gone) or (
                going and not part[:1].isupper() and not (opens and opens[0].lower() not in ("they", "their"))
                and not said and not listed)
            if going:
                dropped = True
            else:
                if subject and said and (not kept or kept[-1] != k - 1):  # the subject went with the part before
                    parts[k] = f"{subject} {parts[k]}"
                kept.append(k)
        text = "".join(("" if n == 0 else joints[k]) + parts[k] for n, k in enumerate(kept)).strip(" ,;.!?")
        if text:
            out.append(text[0].upper() + text[1:] + ".")
    return out, dropped


def distinct(candidates: list[MemoryNode], vectors: list[list[float]],
             rejected: list[Rejection]) -> tuple[list[MemoryNode], list[list[float]]]:
    """The candidates less those that repeat an earlier one (`NEAR_DUPLICATE`), each dropped one
    listed in `rejected`; where the later one adds a number or a health word to the earlier's
    words, the earlier goes instead (a later memory wrote the dose, "21 mg", an earlier one left
    out; a model looping adds other words: "... again")."""
    kept: list[int] = []
    said = [set(words(c.content)) for c in candidates]
    for i, (cand, vector) in enumerate(zip(candidates, vectors)):
        same = next((at for at, k in enumerate(kept) if (candidates[k].event_start, candidates[k].event_end)
                     == (cand.event_start, cand.event_end) and (said[k] <= said[i] or said[i] <= said[k])
                     and cosine(vectors[k], vector) >= NEAR_DUPLICATE), None)
        if same is None:
            kept.append(i)
            continue
        more = said[i] - said[kept[same]]
        gone, stays = ((kept[same], i) if any(w.isdigit() or health_word(w) for w in more)
                       else (i, kept[same]))
        kept[same] = stays
        rejected.append(Rejection(step="personal/extract", path="memories", action="dropped",
                                  reason=f"{candidates[gone].content[:80]!r} repeats {candidates[stays].content[:80]!r}"))
    return [candidates[i] for i in kept], [vectors[i] for i in kept]


COMMON_WORDS = frozenset("""with will would could should shall that this these those have been were they them
their there then than what when which while about into from your also just some very like much many more most
only over such each""".split())
"""Words too common to say whose idea a memory is."""


NO_ANSWER = [[w] for w in ("no", "not", "nope", "nah", "never", "none")]
"""The first word of an answer that says no: what the question asked is not the person's."""


def assistant_words(text: str, messages: list[Message], sources: list[int] | None) -> list[str]:
    """The words of a memory that no person said, when every message it cites is the assistant's
    and they are at least half of its words (of four letters or more, not a speaker's name nor a
    common word): a suggestion the user did not take up ("Olivia will visit the Gulbenkian
    Museum"), or the assistant's suggestion described from what the model knows ("The Gulbenkian
    Museum is a renowned art museum with a vast collection"). Empty otherwise: a small model's
    sources are often off by one, so a memory that cites the assistant but says what a user said
    is kept. `sources` None: whatever it cites, the words only the assistant said (for a memory
    written of one person's line, which says nothing of the assistant's). A question cited whose
    answer (the next message, a person's, not a "no": `NO_ANSWER`) says a word of the memory the
    question does not is the person's too."""
    if sources is not None and (not sources or any(messages[i].role != "assistant" for i in sources)):
        return []
    names = {w for m in messages if m.name for w in words(m.name)}
    by_assistant = stems(m.content for m in messages if m.role == "assistant")
    by_others = stems(m.content for m in messages if m.role != "assistant")
    said = content_words(text, names, filler=False)
    for i in sources or ():  # a question cited, and a person's answer after it that says a word of the memory:
        # what it asks is theirs ("And the latex?" "Still allergic, obviously.")
        if messages[i].content.rstrip().endswith(("?", "？")) and i + 1 < len(messages) \
                and messages[i + 1].role != "assistant" and words(messages[i + 1].content)[:1] not in NO_ANSWER \
                and {_stem(w) for w in said} & stems([messages[i + 1].content]) - stems([messages[i].content]):
            by_others |= stems([messages[i].content])
    borrowed = [w for w in said if _stem(w) not in by_others and (sources is not None or _stem(w) in by_assistant)]
    return borrowed if borrowed and 2 * len(borrowed) >= len(said) else []


SUGGESTS = re.compile(r"^(?:(?:and|so|or|then|also)\s+)?(?:[^,?]{1,40},\s+)?"
                      r"(?:would (?:you|a|an|it|some)|would [^?]{1,40}\bhelp\b"
                      r"|would [^?]{1,60}\bbe\s+(?:a\s+)?(?:good|wise|worth|better|helpful)\b"
                      r"|should you|shall I|could you (?:try|use|take|get|ask|stop|drop|skip|come off|cut out|quit)"
                      r"|might (?:you|a|an|it)|why not|have you (?:thought|considered|tried|looked (?:into|at)"
                      r"|checked out)|do you want to "
                      r"(?:try|use|take|get)|is it worth|maybe (?:you|a|an|try)|how about (?:trying|using|taking|getting"
                      r"|a|an|some))\b", re.IGNORECASE)
"""A question that suggests: "Would a sleep tracker help?", "Would calamine lotion help ...?", "Would glíma,
Icelandic wrestling, be a good way to stay fit?" (fresh35), "Have you thought about ...?", "Have you looked into ...?" (not "What about your kids?", which asks)."""
ACCEPTS = re.compile(r"^\W*(?:yes|yeah|yep|sure|ok|okay|good (?:idea|shout)|great idea|(?:that )?sounds (?:good|great|"
                     r"like a plan)|why not|i will|i['’]ll|i['’]d (?:like|love)|i would|let['’]s|definitely|absolutely"
                     r"|please|that would|that['’]d|go on|done|will do|happy to|love to)\b", re.IGNORECASE)
"""An answer that takes a suggestion up."""
TURNED_DOWN = frozenset("not no never without nor t".split())
"""A memory saying one of these ("does not want", "didn't") may say that a suggestion was turned down."""


ONE_OF = re.compile(r"\b(?:a\s+pair|one|some)\s*\?", re.IGNORECASE)
"""A question offering some of what the sentence before names: "Shall I find a pair?", "Want one?"."""


def declined(text: str, messages: Sequence[Message]) -> list[str]:
    """The words of a memory that only the assistant said, in a question that suggests
    (`SUGGESTS`) which the person's answer right after it does not take up (`ACCEPTS`), when the
    memory does not say no (`TURNED_DOWN`, "declined", "refused"): qwen1.5b wrote "Linnea would
    like to try a running club" of "Would you like to try a running club?" -- "I'm not adding
    running." Words another speaker said are not the answer's, unless the memory names that
    speaker (fresh12: "Should you take acetazolamide as well?" -- "No, ..." to Sipho, where
    Thandeka takes it), nor words the answer says only in a clause that turns them down ("I don't
    bother with melatonin"). A question that suggests "it" suggests what the sentence before it
    names. Empty for Chinese."""
    said = words(text)
    if CJK_CHAR.search(text) or TURNED_DOWN & set(said) or any(w.startswith(("declin", "refus")) for w in said):
        return []
    names = {w for m in messages if m.name for w in words(m.name)}
    named = {m.name for m in messages if m.name and set(words(m.name)) & set(said)}
    out: list[str] = []
    for i, m in enumerate(messages[:-1]):
        answer = messages[i + 1]
        if m.role != "assistant" or answer.role == "assistant" or ACCEPTS.match(answer.content):
            continue
        # what the one asked, or someone the memory names, said is theirs; not another speaker's words, nor what the
        # answer says only to turn it down (fresh25: "Should you take melatonin for the jet lag?" -- "I don't bother
        # with melatonin.", stored as "Temitope is considering taking melatonin for jet lag.")
        by_them = stems(n.content for n in messages if n is not answer and n.role != "assistant" and (
            n.name in named or n.name == answer.name or not (n.name and answer.name)))
        by_them |= stems(clause for sentence in SENTENCE.split(answer.content) for clause in CLAUSE.split(sentence)
                         if not TURNED_DOWN & set(words(clause)))
        mine = [w for w in content_words(text, names, filler=False) if _stem(w) not in by_them]
        said = SENTENCE.split(m.content)
        for k, sentence in enumerate(said):
            if sentence.strip().endswith("?") and SUGGESTS.match(sentence.strip()):
                # "it" of the sentence before: "Some people take vitamin E for their circulation. Would you like to
                # try it?" (fresh26: "Henrietta takes vitamin E" was stored of "Not while I'm on a blood thinner")
                # (or "a pair", "one", "some" of it: "Compression stockings are good ... Shall I find a pair?": fresh33)
                asked = stems([sentence] + (said[k - 1:k] if k and (REFERRING & set(words(sentence))
                                                                    or ONE_OF.search(sentence)) else []))
                out += [w for w in mine if _stem(w) in asked]
    return list(dict.fromkeys(out))


def topic_words(text: str) -> set[str]:
    """What a memory is about, as `_stem`s: its `content_words`, not the names it writes
    capitalized."""
    names = {w.lower() for w in CAPITALIZED.findall(text)}
    return {_stem(w) for w in content_words(text, names)}


def shares_a_word(text: str, *others: str) -> bool:
    """Whether `text` has a word of three letters or more in common with one of `others`: a merged
    memory keeps something of what it merges ("stored memory's id", the prompt's own words, does not)."""
    known = {w for other in others for w in words(other) if len(w) >= 3}
    return any(w in known for w in words(text))


def and_all(*filters: Filter | None) -> Filter | None:
    given = [f for f in filters if f is not None]
    return None if not given else given[0] if len(given) == 1 else And(filters=given)


def user_filter(users: str | Sequence[str], extra: Filter | None = None) -> Filter:
    """Personal memories of one user or several."""
    names = [users] if isinstance(users, str) else users
    return scope_filter([Scope("user", n) for n in names], (MemoryType.PERSONAL,), extra)


# -- retriever -----------------------------------------------------------------------------------
class PersonalRetriever:
    def __init__(self, repo: MemoryRepo, llm: ChatModel | None, prompts: PromptLibrary,
                 config: RetrievalConfig) -> None:
        self.repo, self.llm, self.prompts, self.config = repo, llm, prompts, config

    async def retrieve(self, query: str, users: list[str], *, top_k: int = 10, rewrite: bool | None = None,
                       time_window: TimeWindow | None = None, with_source: bool = False,
                       now: datetime | None = None) -> RetrieveResult:
        now = now or utcnow()
        usage = Usage()
        queries = [query.strip()]
        window = time_window
        inferred = False
        rewrite = self.config.rewrite if rewrite is None else rewrite
        fallbacks: list[Fallback] = []
        plan: QueryPlan | None = None
        if rewrite and self.llm is not None:
            try:
                plan = await self.llm.structured(
                    self.prompts.messages("personal/rewrite", query=query, user_name=" and ".join(users),
                                          today=now.date().isoformat(), max_queries=self.config.max_queries),
                    QueryPlan, usage=usage, step="personal/rewrite", budget=96 + 64 * self.config.max_queries)
            except LLMError as exc:  # the rewrite only sharpens the search: without it, search the query as asked
                log.warning("query rewrite skipped: %s", exc)
                fallbacks.append(Fallback(step="rewrite", error=str(exc)[:500]))
        if plan is not None:
            seen = {normalize_text(queries[0])}
            for q in plan.queries:
                if q.strip() and normalize_text(q) not in seen and len(queries) <= self.config.max_queries:
                    seen.add(normalize_text(q))
                    queries.append(q.strip())
            if window is None:
                window = day_window(plan.start, plan.end)
                inferred = window is not None
        detected = None
        if window is None and self.config.time_weight:
            # The period the question names, found by rules: it ranks (see `retrieval.weight`), never filters.
            detected = find_window(query, now)
        vectors = await self.repo.embedder.embed(queries)
        limit = max(self.config.candidates, top_k)
        alive = live(now)
        lists = await self._search(queries, vectors, user_filter(users, and_all(window_filter(window), alive)), limit)
        if inferred and not any(lists):
            # A window the model inferred narrows the search; when nothing falls inside it, it is dropped.
            window = None
            lists = await self._search(queries, vectors, user_filter(users, alive), limit)
        memories = rank(lists, self.config, now, top_k, detected, query)
        window = window or detected
        if with_source:
            await self._attach_sources(memories)
        return RetrieveResult(memories=memories, text=render(memories), queries=queries, time_window=window,
                              usage=usage, fallbacks=fallbacks)

    async def _search(self, queries: list[str], vectors: list[list[float]], flt: Filter,
                      limit: int) -> list[list[SearchResult]]:
        lists = await asyncio.gather(*(
            fused_search(self.repo.store, self.repo.collection, q, v, flt, limit, self.config)
            for q, v in zip(queries, vectors)))
        return [in_context(results, self.config) for results in lists]

    async def _attach_sources(self, memories: list[Any]) -> None:
        """Each memory's source lines, from the history node it cites: a reference resolves inside
        the memory's own scope only, so a cited id of another target shows nothing."""
        ids = sorted({m.node.ref_ids[0] for m in memories if m.node.ref_ids})
        if not ids:
            return
        found = await self.repo.get(ids)
        for memory in memories:
            history = found.get(memory.node.ref_ids[0]) if memory.node.ref_ids else None
            if history is not None and history.memory_type == MemoryType.HISTORY and history.scope == memory.node.scope:
                memory.source = excerpt(history, memory.node.metadata.get("source_turns") or [])
