"""Scoring memories against the gold facts of `dialogues.json`: keyword rules, no model.

A pattern is a list of keyword groups (`"k"`), optionally with `"none"`, a list of words that
must be absent. A memory matches it when every group has an alternative in the memory, and no
`none` word is in it. Alternatives are separated by `|`; an alternative is one word or several
consecutive words ("window seat"); a `*` after a word matches any word starting so ("allerg*",
"stand* up": "standing up").
Words are `reme.retrieval.words` (case-folded, split at anything not a letter or digit, so
"I'm" is `i m`, "2024-04-26" is `2024 04 26`), with a number apart from a unit stuck to it
("40mg" is `40 mg`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from collections.abc import Collection
from typing import Any, Self

from reme.retrieval import words as _split

DATA = Path(__file__).with_name("dialogues.json")

FIRST_PERSON = re.compile(r"(?<!type\s)(?<!phase\s)(?<!stage\s)(?<!grade\s)(?<!class\s)(?<!war\s)\bI\b(?!\.e\b)"
                          r"|\bI'(?:m|ve|d|ll)\b|\b(?:my|me|(?<!the\s)(?<!\ba\s)mine|myself|we|our|ours"
                          r"|ourselves)\b", re.IGNORECASE)
"""A memory that says "I" or "my" is in the first person: whose "I", months later? ("shifts at the mine", "type I
diabetes", "stage I", "i.e." do not.)"""
LEADING_PRONOUN = {"he", "she", "they", "it", "him", "her", "his", "hers", "their", "them", "this", "that", "these",
                   "those", "its"}
"""A memory that starts with one of these names its subject only by a pronoun."""
_SOME = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|a\s+couple\s+of|several)"
_UNITS = r"(?:days?|weeks?|fortnights?|months?|years?)"
RELATIVE_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last\s+night|(?:last|next|this|past|coming)\s+(?:week|weekend|fortnight|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this\s+(?:morning|afternoon|evening)|"
    rf"{_SOME}\s+{_UNITS}\s+(?:ago|from\s+now)|"
    r"(?:earlier|later)\s+this\s+(?:week|month|year)|the\s+other\s+day|recently)\b",
    re.IGNORECASE)
IN_SOME_TIME = re.compile(rf"\bin\s+(?:about\s+)?(?!(?:a|one)\s+day\b){_SOME}\s+{_UNITS}\b(?!\s+(?:of|after|before)\b)",
                          re.IGNORECASE)
DURATION = re.compile(r"\b(?:not|never|no|nothing|first|second|third|only|more\s+than|less\s+than|up\s+to|over|"
                      r"times|once|twice|kilos?|kg|pounds?|lbs?)\b|n't\b", re.IGNORECASE)
""""In three weeks" is a time from when it was said ("flies to Marseille in three weeks"), unless its clause makes it
a length of time ("put on 2 kilos in three days", "hasn't smoked in ten weeks", "the first break in nine years"); "in
a day" is a rate ("two shocks in a day")."""
ABSOLUTE_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
"""A memory with a relative time ("last week", "in three weeks") and no year in it ("April 2024") cannot be
placed in time once it is read later. (A month or a day without a year is not counted: "on the 1st", "every
March" may be meant to recur.)"""


NUMBER_THEN_LETTER = re.compile(r"(\d)(?=[^\W\d_])")
DECIMAL_POINT = re.compile(r"(?<=\d)\.(?=\d)")
"""The digits after a decimal point are a word marked `_` ("2.5" is `2 _5`): a fact's "2 5" or "2.5" is found in
"2.5 mg", its "5" or "5 mg" is not (an alternative's first word never matches a marked one)."""


_ONES = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                      "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}
_SCALES = {"hundred": 100, "thousand": 1000}


def _spelled(said: list[str], i: int) -> tuple[int, int] | None:
    """The number spelled out in words from `said[i]` ("a hundred and forty two", "fifteen hundred",
    "twenty five") and the index after it; None when none starts there, or only "one" does."""
    total = part = 0
    j, last = i, ""
    if said[i] == "a" and i + 1 < len(said) and said[i + 1] in _SCALES:
        part, j, last = 1, i + 1, "a"
    while j < len(said):
        w = said[j]
        if w in _ONES or w in _TENS:
            if last and not (last in _SCALES or last == "and" or last in _TENS and _ONES.get(w, 10) < 10):
                break
            part += _ONES.get(w, 0) + _TENS.get(w, 0)
        elif w in _SCALES and last and last not in _SCALES and last != "and":
            part = part * _SCALES[w]
            if w == "thousand":
                total, part = total + part, 0
        elif w == "and" and last in _SCALES and j + 1 < len(said) and (said[j + 1] in _ONES or said[j + 1] in _TENS):
            pass
        else:
            break
        last = w
        j += 1
    if j == i or last in ("a", "and") or said[i:j] == ["one"]:  # "one" alone: "one-to-ones", "the one thing"
        return None
    return total + part, j


_ORDINALS = {w: i for i, w in enumerate("first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
                                          "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
                                          "nineteenth twentieth".split(), start=1)} | {"thirtieth": 30}
_MONTH_WORDS = frozenset("january february march april may june july august september october november december "
                         "jan feb mar apr jun jul aug sep sept oct nov dec".split())


def _day_ordinals(said: list[str]) -> list[str]:
    """`said` with a day of a month said in words as digits: "the first of may" is `the 1 st of may`
    as "the 1st of May" is, "may twenty first" `may 21 st` (an ordinal beside no month stays a
    word: "the first scan")."""
    out = list(said)
    for i, w in enumerate(said):
        if w not in _ORDINALS:
            continue
        tens = 20 if i and said[i - 1] == "twenty" else 30 if i and said[i - 1] == "thirty" else 0
        after = said[i + 1:i + 3]
        before = said[max(0, i - (2 if tens else 1)):i - (1 if tens else 0)]
        if after[:1] and after[0] in _MONTH_WORDS or after[:1] == ["of"] and after[1:] and after[1] in _MONTH_WORDS \
                or before and before[-1] in _MONTH_WORDS:
            n = tens + _ORDINALS[w]
            suffix = "th" if 10 < n % 100 < 14 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
            out[i] = f"{n} {suffix}"  # as "1st" is read: `1 st`
            if tens:
                out[i - 1] = ""
    return [part for w in out for part in w.split()]


def words(text: str) -> list[str]:
    """`reme.retrieval.words` of `text`, a number apart from a unit stuck to it: "40mg" is `40 mg`,
    so a fact's "40" is found in "atorvastatin 40mg" as in "40 mg" ("2.5" is `2 _5`); a number spelled out is its
    digits ("forty milligrams" is `40 milligrams`, "a hundred and forty-two kilos" `142 kilos`),
    and so is a day of a month ("the first of May" is `the 1st of may`), in the facts as in the
    memories."""
    said = _day_ordinals(_split(DECIMAL_POINT.sub(" _", NUMBER_THEN_LETTER.sub(r"\1 ", text))))
    out: list[str] = []
    i = 0
    while i < len(said):
        if (found := _spelled(said, i)) is not None:
            out.append(str(found[0]))
            i = found[1]
        else:
            out.append(said[i])
            i += 1
    return out


@dataclass(frozen=True)
class Pattern:
    groups: tuple[tuple[tuple[str, ...], ...], ...]
    none: frozenset[str] = frozenset()

    @classmethod
    def of(cls, spec: dict[str, Any]) -> "Pattern":
        groups = tuple(tuple(_alt(alt) for alt in group.split("|") if words(alt)) for group in spec["k"])
        return cls(groups=groups, none=frozenset(w for raw in spec.get("none", []) for w in _alt(raw)))

    def matches(self, text: str) -> bool:
        said = words(text)
        if any(w in self.none or any(n.endswith("*") and w.startswith(n[:-1]) for n in self.none) for w in said):
            return False
        return all(any(_contains(said, alt) for alt in group) for group in self.groups)


def _alt(raw: str) -> tuple[str, ...]:
    """An alternative's words; a `*` after a word stays on it (a prefix), in the middle of a phrase too
    ("take* over": the `*` was once dropped there, and "taking over" missed)."""
    out: list[str] = []
    for part in raw.split():
        said = words(part)
        out += (*said[:-1], said[-1] + "*") if part.endswith("*") and said else said
    return tuple(out)


def _unmarked(word: str) -> str:
    return word[1:] if word.startswith("_") and word[1:].isdigit() else word


def _contains(said: list[str], alt: tuple[str, ...]) -> bool:
    n = len(alt)
    for i in range(len(said) - n + 1):
        if all(a == w or (a.endswith("*") and w.startswith(a[:-1])) or k and _unmarked(a) == _unmarked(w)
               for k, (a, w) in enumerate(zip(alt, said[i:i + n]))):
            return True
    return False


@dataclass
class Fact:
    pattern: Pattern
    safety: bool = False
    time: bool = False
    optional: bool = False
    of: tuple[tuple[str, ...], ...] = ()
    """Whom the fact is about when that is not the user (gold `"of": "Davit|son"`): alternatives, as a keyword
    group's. A memory that matches the fact but names another person of the dialogue and none of these gives it to
    the wrong one ("Anahit has Williams syndrome" of her son's): it does not recall the fact and is a `speaker`
    claim."""

    def given_to_another(self, text: str, people: Collection[str]) -> bool:
        """Whether `text` matches the fact and names one of `people` (name words) but not whom it is about."""
        if not self.of or not self.pattern.matches(text):
            return False
        said = words(text)
        return not any(_contains(said, alt) for alt in self.of) and any(w in people for w in said)


@dataclass
class Wrong:
    pattern: Pattern
    why: str  # assistant, speaker, stale


@dataclass
class Dialogue:
    id: str
    split: str
    user: str
    topics: list[str]
    sessions: list[list[dict[str, Any]]]
    facts: list[Fact]
    wrong: list[Wrong]

    @property
    def people(self) -> set[str]:
        """The first words of the names of the user, of everyone speaking and of whom a fact is about (`Fact.of`)."""
        named = [self.user, *(m["name"] for s in self.sessions for m in s if m.get("name"))]
        return {said[0] for name in named if (said := words(name))} | {
            alt[0] for f in self.facts for alt in f.of if len(alt) == 1 and not alt[0].endswith("*")}


def load(path: Path = DATA) -> list[Dialogue]:
    """The dialogues, each session as `summarize_memory` messages (a turn's speaker is its `name`,
    "assistant" its role; turns are a minute apart from the session's time)."""
    from datetime import datetime, timedelta

    out = []
    for d in json.loads(path.read_text(encoding="utf-8"))["dialogues"]:
        sessions = []
        for s in d["sessions"]:
            start = datetime.fromisoformat(s["time"].replace("Z", "+00:00"))
            msgs = []
            for i, (who, text) in enumerate(s["turns"]):
                when = (start + timedelta(minutes=i)).isoformat()
                msgs.append({"role": "assistant", "content": text, "time": when} if who == "assistant" else
                            {"role": "user", "name": who, "content": text, "time": when})
            sessions.append(msgs)
        out.append(Dialogue(id=d["id"], split=d["split"], user=d["user"], topics=d["topics"], sessions=sessions,
                            facts=[Fact(Pattern.of(f), f.get("safety", False), f.get("time", False),
                                        f.get("optional", False),
                                        tuple(_alt(alt) for alt in f.get("of", "").split("|") if words(alt)))
                                   for f in d["facts"]],
                            wrong=[Wrong(Pattern.of(w), w["why"]) for w in d.get("wrong", [])]))
    return out


def hygiene(text: str) -> list[str]:
    """What is wrong with a memory's wording, whatever the dialogue: `first_person`,
    `leading_pronoun`, `relative_time`."""
    problems = []
    if FIRST_PERSON.search(text):
        problems.append("first_person")
    first = words(text)[:1]
    if first and first[0] in LEADING_PRONOUN:
        problems.append("leading_pronoun")
    if (RELATIVE_TIME.search(text) or any(not DURATION.search(re.split(r"[.;!?]", text[:m.start()])[-1])
                                          for m in IN_SOME_TIME.finditer(text))) and not ABSOLUTE_YEAR.search(text):
        problems.append("relative_time")
    return problems


def pick(items: list[Any], ids: str | None, split: str | None, error: Any, what: str = "dialogue") -> list[Any]:
    """The items (with `id` and `split`) named by `--ids a,b` and in `--split`; `error` (argparse's)
    names the ids that are not in the set."""
    if ids:
        wanted = ids.split(",")
        unknown = set(wanted) - {item.id for item in items}
        if unknown:
            error(f"no {what} {sorted(unknown)}")
        items = [item for item in items if item.id in wanted]
    return [item for item in items if item.split == split] if split else items


def share(a: int, b: int) -> float | None:
    """`a` of `b` to three places; None when there is nothing to share."""
    return round(a / b, 3) if b else None


class Counts:
    """A dataclass of counts that add up field by field: numbers summed, counts by name merged,
    lists joined (a benchmark's scores of one item, summed over a set)."""

    def add(self, other: Self) -> Self:
        for f in fields(self):  # type: ignore[arg-type]
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, dict):
                for k, v in theirs.items():
                    mine[k] = mine.get(k, 0) + v
            elif isinstance(mine, list):
                mine += theirs
            else:
                setattr(self, f.name, mine + theirs)
        return self


@dataclass
class Score(Counts):
    """One dialogue's memories scored: counts, so that sets of dialogues add up."""

    facts: int = 0
    recalled: int = 0
    safety: int = 0
    safety_recalled: int = 0
    memories: int = 0
    supported: int = 0
    hygiene: dict[str, int] = field(default_factory=lambda: {"first_person": 0, "leading_pronoun": 0,
                                                              "relative_time": 0})
    with_problem: int = 0
    wrong: dict[str, int] = field(default_factory=lambda: {"assistant": 0, "speaker": 0, "stale": 0})
    missed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def table_row(self) -> dict[str, Any]:
        return {"facts": self.facts, "recall": share(self.recalled, self.facts),
                "safety_facts": self.safety, "safety_recall": share(self.safety_recalled, self.safety),
                "memories": self.memories, "precision": share(self.supported, self.memories),
                "hygiene_share": share(self.with_problem, self.memories), **{f"hygiene_{k}": v for k, v in
                                                                              self.hygiene.items()},
                **{f"wrong_{k}": v for k, v in self.wrong.items()}}


def score(dialogue: Dialogue, memories: list[str]) -> Score:
    """`memories` (the texts a library holds for the dialogue's user after all its sessions)
    against the dialogue's gold: a fact is recalled when some memory matches it; a memory is
    supported when it matches a fact (optional ones too) and no `wrong` pattern; a memory with
    a wording problem or matching a `wrong` pattern counts once in `with_problem`."""
    s = Score()
    people = dialogue.people
    for i, fact in enumerate(dialogue.facts):
        hit = any(fact.pattern.matches(m) and not fact.given_to_another(m, people) for m in memories)
        if not fact.optional:
            s.facts += 1
            s.recalled += hit
            if not hit:
                s.missed.append(f"{dialogue.id}#{i}")
        if fact.safety and not fact.optional:
            s.safety += 1
            s.safety_recalled += hit
    for text in memories:
        s.memories += 1
        problems = hygiene(text)
        for p in problems:
            s.hygiene[p] += 1
        claims = [w.why for w in dialogue.wrong if w.pattern.matches(text)]
        if "speaker" not in claims and any(f.given_to_another(text, people) for f in dialogue.facts):
            claims.append("speaker")  # another's fact given to the one it names
        for why in claims:
            s.wrong[why] += 1
        if problems or claims:
            s.with_problem += 1
            s.problems.append(f"{dialogue.id}: {text!r}: {', '.join(problems + claims)}")
        if not claims and any(f.pattern.matches(text) for f in dialogue.facts):
            s.supported += 1
    return s
