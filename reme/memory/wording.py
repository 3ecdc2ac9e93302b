"""Deterministic repairs of an extracted memory's wording, where code knows the answer.

A small model copies the speaker's words: "I always take the window seat", "Alice moved to Berlin
last week". Months later neither says whose "I" it was or which week. The summarizer knows both:
the speaker of the message a memory cites, and when that message was said. So:

- `name_the_speaker("I always take the window seat", "Alice")` -> "Alice always takes the window
  seat" ("my" becomes "Alice's", "I'm" "Alice is", a present-tense verb after "I" takes its "-s");
- `anchor_times("Alice moved to Berlin last week", said)` -> "Alice moved to Berlin last week
  (22-28 April 2024)" for a message said on 3 May 2024.

Both only rewrite what they can read without doubt, and return the text as it was otherwise: a
memory that already holds a year is not anchored again, "on Monday" and "in May" (past or
coming?) are left alone, and "we" is not guessed at. No model call.
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import date, datetime, timedelta
from typing import Sequence

from reme.temporal import (IRREGULAR_PAST, MONTHS, NTH, NUMBERS, WEEKDAYS, Span, day_weeks_ago, find_spans,
                           month_year, told_of_future, told_of_past, told_of_past_at)

# -- whose "I" ------------------------------------------------------------------------------------
ADVERBS = {"always", "never", "usually", "often", "sometimes", "really", "also", "just", "still", "now", "only",
           "rarely", "even", "already", "mostly", "actually", "currently", "recently", "definitely", "absolutely",
           "generally", "typically", "hardly", "seldom", "normally", "totally", "truly", "finally", "probably",
           "especially", "mainly", "occasionally", "regularly", "strongly", "sincerely", "honestly", "personally",
           "rather", "then", "too", "once", "first", "all", "both", "certainly", "barely", "ever"}
KEEP = {"can", "could", "will", "would", "should", "must", "might", "may", "shall", "did", "was", "had", "cannot",
        "can't", "won't", "wouldn't", "couldn't", "shouldn't", "didn't", "wasn't", "hadn't", "used", "need",
        "ought", "dare", "are", "were"}
"""Words after "I" that stay as they are for any subject (modals, past tenses; "are" and "were"
follow "Sione and I")."""
THIRD = {"am": "is", "have": "has", "do": "does", "go": "goes", "be": "is", "don't": "doesn't", "haven't": "hasn't",
         "'m": "is", "'ve": "has", "'d": "would", "'ll": "will", "m": "is", "ve": "has", "d": "would", "ll": "will",
         "aren't": "isn't", "am not": "is not"}

PARTICIPLES = (IRREGULAR_PAST - set("read put set cut let hit hurt cost quit bet lay shut spread split".split())) | set(
    """had been gone done seen taken given known eaten written gotten broken spoken fallen forgotten driven ridden
    chosen begun flown grown shown thrown worn torn woken frozen stolen hidden bitten beaten""".split())
"""Past participles (not "put", which may follow "would" too): "I'd had" is "had had", "I'd like" "would like"."""
_I = re.compile(r"\bI(?:(?P<clitic>['’](?:m|ve|d|ll))\b)?(?![\w'’])")
_NOT_MINE = "".join(rf"(?<!\b{w}\s)" for w in "the The a an coal gold salt land tin copper diamond".split())
_POSSESSIVE = re.compile(rf"\b(?:[Mm]y|MY|{_NOT_MINE}[Mm]ine)\b")
"""The speaker's possessives: not the pit ("shifts at the mine", "a gold mine": fresh28 had "at the Onalenna's")."""
_OBJECT = re.compile(r"\b[Mm]e\b(?!['’])")
_SELF = re.compile(r"\b[Mm]yself\b")
"""The speaker's "myself": "themselves" of whom the memory names ("I've done it myself" was "Jomar has done it Jomar":
fresh34), but where nothing names them ("Nobody but myself")."""
_WORD = re.compile(r"\s+([A-Za-z]+(?:['’][a-z]+)?)")


def _third_person(verb: str) -> str | None:
    """The "he/she" form of a present-tense verb, or None when `verb` is not one to change."""
    low = verb.lower().replace("’", "'")
    if low in THIRD:
        return THIRD[low]
    if low in KEEP or low in IRREGULAR_PAST or low.endswith("ed") or not low.isalpha() or verb != low:
        return None
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return low + "es"
    if len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def _after_i(text: str, at: int) -> tuple[str, int, int] | None:
    """The verb after "I" at `at` (skipping adverbs): its replacement and its place, or None."""
    pos = at
    for _ in range(4):
        m = _WORD.match(text, pos)
        if m is None:
            return None
        word = m.group(1)
        if word.lower() in ADVERBS:
            pos = m.end()
            continue
        replaced = _third_person(word)
        return None if replaced is None else (replaced, m.start(1), m.end(1))
    return None


_WE = [(re.compile(r"\b(?:[Ww]e|WE)\s+were\b"), "I was"), (re.compile(r"\b(?:[Ww]e|WE)\s+are\b"), "I am"),
       (re.compile(r"\b(?:[Ww]e|WE)(?=['’](?:re|ve|ll|d)\b)"), "I"), (re.compile(r"\b(?:[Ww]e|WE)\b"), "I"),
       (re.compile(r"\b[Oo]urselves\b"), "myself"), (re.compile(r"\b[Oo]urs\b"), "mine"),
       (re.compile(r"\b[Oo]ur\b"), "my"), (re.compile(r"\b[Uu]s\b(?!['’])"), "me")]
_WERE = re.compile(r"\bI['’]re\b")


def name_the_speaker(text: str, speaker: str, *, we: bool = False) -> str:
    """`text` with its first person ("I", "my", "me", "I'm"...) made `speaker`: the memory says
    who it is about. With `we`, "we", "our" and "us" are made `speaker` too ("We eat fish now"
    -> "Dan eats fish now"): the speaker is one of "us", so what is true of "us" is true of them,
    and a small model asked to name them does not (it copies "We ..."). "US" stays."""
    if we:
        for pattern, first in _WE:
            text = pattern.sub(first, text)
        text = _WERE.sub("I'm", text)
    speaker = speaker.strip()
    if not speaker or not (_I.search(text) or _POSSESSIVE.search(text) or _OBJECT.search(text) or _SELF.search(text)):
        return text
    out: list[str] = []
    pos = 0
    for m in _I.finditer(text):
        out.append(text[pos:m.start()])
        clitic = m.group("clitic")
        if clitic:
            aux = THIRD[clitic.replace('’', chr(39))]
            after = next((w.lower() for w in _WORD.findall(text[m.end():m.end() + 40]) if w.lower() not in ADVERBS), "")
            if aux == "would" and (after in PARTICIPLES or after.endswith("ed")):
                aux = "had"  # "I'd had headaches" (fresh28 was "Dong-hyun would had headaches")
            out.append(f"{speaker} {aux}")
            pos = m.end()
            continue
        out.append(speaker)
        pos = m.end()
        verb = _after_i(text, m.end())
        if verb is not None:
            replaced, start, end = verb
            out.append(text[pos:start] + replaced)
            pos = end
    out.append(text[pos:])
    text = "".join(out)
    text = _POSSESSIVE.sub(lambda _: f"{speaker}'s", text)  # a function: a name is no template ("\\1")
    text = _SELF.sub(lambda m: "themselves" if speaker in text[:m.start()] else speaker, text)
    return _OBJECT.sub(lambda _: speaker, text)


# -- which day ------------------------------------------------------------------------------------
RELATIVE = re.compile(
    r"yesterday|today|tonight|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening)|\bago\b|"
    r"^(?:last|past|previous|this|current|next|coming)\s+(?:week|weekend|month|year|spring|summer|autumn|fall|"
    r"winter)\b|^(?:last|next|past|this|this\s+coming|coming)\s+\w+day|^(?:last|this|next)\s+(?:christmas|new\s+year|halloween|valentine)|"
    r"^in\s+\S+(?:\s+\S+)?\s+(?:day|week|fortnight|month|year)|\sfrom\s+(?:now|today)$|"
    r"^(?:the\s+)?end\s+of\s+(?:the|this|next|last)\s+month|"
    r"^(?:the\s+)?(?:" + "|".join(NTH) + r")\s+\w+days?\s+(?:of|in)\s+(?:this|next|last|the)\s+month|"
    r"^(?:last|next|this|coming)\s+(?:" + "|".join(MONTHS) + r")\b|"
    r"^(?:in\s+)?(?:" + "|".join(MONTHS) + r")\s+(?:last|this|next)\s+year\b|"
    r"^\w+day\s+(?:of\s+)?(?:last|this|next)\s+week\b|"
    r"前天|昨|今|明天|天前|^[上下本这]|去年",
    re.IGNORECASE)
"""The expressions `anchor_times` dates: relative to when they were said, and unambiguous ("on
Monday" may be the last one or the next; "in May" this year's or last year's)."""
YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
CJK = re.compile(r"[\u3400-\u9fff]")
PARENTHESES = re.compile(r"\([^()]*\)")
"""What is in parentheses: the dates ReMe writes after a time ("last week (22-28 April 2024)")."""
MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December"]


def _day(d: date) -> str:
    return f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}"


def describe_span(span: Span, iso: bool = False) -> str:
    """A period in words: "26 April 2024", "22-28 April 2024", "April 2024", "2024" (ISO dates
    when `iso`)."""
    a, b = span.first, span.last
    if iso:
        return a.isoformat() if a == b else f"{a.isoformat()} - {b.isoformat()}"
    if a == b:
        return _day(a)
    if a.day == 1 and a.month == 1 and (b.month, b.day) == (12, 31) and a.year == b.year:
        return str(a.year)
    if a.day == 1 and a.year == b.year and a.month == b.month and b.day == monthrange(b.year, b.month)[1]:
        return f"{MONTH_NAMES[a.month - 1]} {a.year}"
    if a.year == b.year and a.month == b.month:
        return f"{a.day}-{b.day} {MONTH_NAMES[a.month - 1]} {a.year}"
    if a.year == b.year:
        return f"{a.day} {MONTH_NAMES[a.month - 1]} - {_day(b)}"
    return f"{_day(a)} - {_day(b)}"


def blanked(text: str) -> str:
    """`text` with the dates ReMe writes in parentheses blanked out, each character a space (places stay)."""
    return PARENTHESES.sub(lambda p: " " * len(p[0]), text)


def year_said(text: str) -> bool:
    """Whether `text` names a year outside the dates ReMe writes in parentheses ("the 30th (30 June 2026)")."""
    return bool(YEAR.search(PARENTHESES.sub(" ", text)))


DEICTIC = re.compile(r"\bago\b|\b(?:yesterday|tomorrow|tonight)\b", re.IGNORECASE)
"""Times that can only be of when they were said, whatever year a sentence names ("A TIA in 2022, and three weeks ago
a small lacunar stroke": fresh30, not dated)."""


def relative_spans(text: str, said: datetime) -> list[tuple[int, int, Span]]:
    """The relative time expressions of `text` (`RELATIVE`), each with the period it means when
    said at `said`; when it names a year already, only those that can be of no other time (`DEICTIC`: "three weeks
    ago", "tomorrow"), but for the dates ReMe writes in parentheses (fresh29: "the 30th
    (30 June 2026) ..., and the result comes in six weeks" was not dated); one followed by such a date is left."""
    hidden = blanked(text)
    only_now = bool(YEAR.search(hidden))
    return [(start, end, span) for start, end, span in find_spans(hidden, said.date())
            if (RELATIVE.search(text[start:end]) or NTH_OF_MONTH.match(text[start:end]) and span.first >= said.date()
                and not told_of_past_at(_sentence_at(text, start), start - _sentence_start(text, start)))
            and not DAY_OF.search(text[:start])
            and not (only_now and not DEICTIC.search(text[start:end]))
            and not text[end:].lstrip().startswith(("(", "（"))
            and not (text[start:end].lower().startswith("in") and AMOUNT_BEFORE.search(text[:start]))]


NTH_OF_MONTH = re.compile(r"^(?:the\s+)?(?:" + "|".join(NTH) + r")\s+\w+days?\s+(?:of|in)\s+(?:"
                          + "|".join(MONTHS) + r")\.?$", re.IGNORECASE)
"""A weekday counted in a month named without its year ("the first Monday in February"): dated when it is to come, in
a sentence that does not tell of the past (fresh35: "the next is on the first Monday in February" was not dated; "the
wedding was on the last Saturday of July" is of some July gone)."""


DAY_OF = re.compile(r"\bthe\s+[0-3]?\d(?:st|nd|rd|th)\s+of\s+$", re.IGNORECASE)
_AMOUNT = r"(?:\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|half\s+a)"
AMOUNT_BEFORE = re.compile(rf"\b(?:{_AMOUNT}\s+(?:kilos?|kilograms?|kg|pounds?|lbs?|stones?|grams?|litres?|liters?"
                           r"|miles?|km|kilometres?|kilometers?|centimetres?|cm|inches?)|\d+(?:\.\d+)?\s*%"
                           r"|(?:put|putting|puts)\s+on|gain(?:s|ed|ing)?|los(?:e|es|t|ing)|once|twice|times)\b"
                           r"[^.;:!?]{0,20}$",
                           re.IGNORECASE)
"""An amount, or a gain or loss, or how many times, just before "in three days": how fast, not when ("if I put on two
kilos in three days, I ring Bisi": fresh17 was dated three days on; "If I vomit more than twice in a day": fresh35)."""
"""Before "next month" in "the 4th of next month": a day, which `weekday_spans` dates."""


_CAPITAL_MONTH = "|".join(sorted((m.capitalize() for m in MONTHS if len(m) > 3 or m == "may"), key=len, reverse=True))
"""The months' names and short forms, capitalized: "may" and "march" are verbs too."""
BARE_MONTH = re.compile(r"\b(?P<by>(?i:in|by|since|during|until|till|from|early|late|mid|(?:start|end|beginning|middle)"
                        rf"\s+of))[\s-]+(?P<month>{_CAPITAL_MONTH})\b"
                        r"(?!\s*(?:[0-3]?\d(?:st|nd|rd|th)?\b|,?\s*(?:19|20)\d\d|[(（]))")
"""A month said without its year or day: "in July", "by February", "at the end of June", "In January"
at a sentence's start (the month capitalized: "may" and "march" are verbs too); not "since September 15th" (fresh28
was "since September 2026 15th")."""


def year_of_months(text: str, said: date, *, named: bool = True, lines: Sequence[str] = ()) -> str:
    """`text` with the year put after each month it says alone ("in July" -> "in July 2026"), when
    its sentence's tense tells which (`month_year`), or the tense of the sentence of `lines` (what a memory cites)
    saying that month alone, when one does; not in a text that names a year (`named`: check it does not)."""
    if named and YEAR.search(text):
        return text
    out, pos = [], 0
    for m in BARE_MONTH.finditer(text):
        said_as = next(((line, n) for line in lines for n in BARE_MONTH.finditer(line)
                        if n["month"].lower() == m["month"].lower()), None)
        if (year := year_of_month(*(said_as or (text, m)), said)) is None:
            continue
        out.append(f"{text[pos:m.end()]} {year}")
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def year_of_month(text: str, m: re.Match[str], said: date) -> int | None:
    """The year of the month a `BARE_MONTH` match `m` of `text` says (`year_of_months`), or None."""
    month = MONTHS[m["month"].lower()]
    # since a month: of the past, whatever the tense ("Since March he has walked")
    year: int | None = (said.year if month <= said.month else said.year - 1) if m["by"].lower() == "since" \
        else month_year(month, said, _sentence_at(text, m.start()))
    return year if year is not None and 1 <= year <= 9999 else None


DAY_AND_MONTH = re.compile(rf"\b(?:(?P<day>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{_CAPITAL_MONTH})"
                           rf"|(?P<month2>{_CAPITAL_MONTH})\s+(?P<day2>[0-3]?\d)(?:st|nd|rd|th)?)\b"
                           r"(?!,?\s*(?:19|20)\d\d|\s*[-–]|\s*[:.]\d)")
"""A day with its month and no year: "the 5th of May", "November 30th" (capitalized: "may" is a
verb too; not the first day of a range, "28 September - 4 October")."""


SINCE_OR_FROM = re.compile(r"\b(since|from)\s+(?:the\s+)?$", re.IGNORECASE)
"""What comes right before a day said since or from ("since the 2nd of December", "From the 1st of September")."""


def year_of_days(text: str, said: date, *, named: bool = True, lines: Sequence[str] = ()) -> str:
    """`text` with the year put after each day of a month it says without one (`DAY_AND_MONTH`,
    outside brackets): the last such day on or before `said` when its sentence tells of the past
    (`told_of_past`), else the next one on or after it ("The bone scan is on the 5th of May",
    "next time on the 19th of January"); since a day, the last one; from a day in the present tense,
    the nearest; not in a text that names a year (`named`). The tense is that of the sentence of `lines` (what a
    memory cites) saying the same day, when one does: "Lejla has a feeding tube put in on the 9th of June" of "I had
    a feeding tube ... put into my stomach on the 9th of June" (fresh28) is of the last 9th of June, not the next."""
    if named and YEAR.search(text):
        return text
    hidden = blanked(text)
    out, pos = [], 0
    for m in DAY_AND_MONTH.finditer(hidden):
        month = MONTHS[(m["month"] or m["month2"]).lower()]
        day = int(m["day"] or m["day2"])
        if not 1 <= day <= 31:
            continue
        start = _sentence_start(hidden, m.start())
        sentence = _sentence_at(hidden, m.start())
        past = told_of_past_at(sentence, m.start() - start)
        for line in lines:
            if said_as := next((n for n in DAY_AND_MONTH.finditer(line) if int(n["day"] or n["day2"]) == day
                                and MONTHS[(n["month"] or n["month2"]).lower()] == month), None):
                at = _sentence_start(line, said_as.start())
                past = told_of_past_at(_sentence_at(line, said_as.start()), said_as.start() - at)
                break
        since = SINCE_OR_FROM.search(hidden[start:m.start()])
        if since and since[1].lower() == "from" and re.search(r"[:;]\s*from\s+(?:the\s+)?$", hidden[start:m.start()]):
            past = False  # "they said yes: from the 1st of December" is no past (fresh35: dated December 2025)
        if since and (since[1].lower() == "since" or not past and not told_of_future(sentence)):
            # since a day: of the past; from a day, in the present tense: the nearest such day ("From the 1st
            # of September I teach cooking", said on the 8th of September, fresh22)
            days = [date(y, month, day) for y in (said.year - 1, said.year, said.year + 1)
                    if 1 <= y <= 9999 and day <= monthrange(y, month)[1]]
            if since[1].lower() == "since":
                days = [d for d in days if d <= said]
            if days:
                found = min(days, key=lambda d: (abs((d - said).days), d < said))
                out.append(f"{text[pos:m.end()]} {found.year}")
                pos = m.end()
            continue
        year = None
        for y in ((said.year, said.year - 1) if past else (said.year, said.year + 1)):
            if day <= monthrange(y, month)[1] and ((y, month, day) <= (said.year, said.month, said.day) if past
                                                     else (y, month, day) >= (said.year, said.month, said.day)):
                year = y
                break
        if year is None or not 1 <= year <= 9999:
            continue
        out.append(f"{text[pos:m.end()]} {year}")
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


SENTENCE_GAP = re.compile(r"(?<=[.!?;])(\s+)(?=[A-Z])")
"""Where a memory's sentences meet, kept when it is split."""
NEXT_OF = re.compile(r"\b(?:the\s+(?:next|following)|following)\s+(?:day|week|weekend|month|year)\b", re.IGNORECASE)
"""A time that may follow another said before it rather than now: "the next week", "the following month"."""


FROM_THAT_DAY = re.compile(r"\b(?:(?P<n>an?|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,2})\s+"
                           r"(?P<unit>days?|weeks?)\s+(?P<dir>later|after\s+that|before\s+that|earlier"
                           r"|(?:before|after)(?=\s*(?:[.,;:!?]|$)))\b"
                           r"|the\s+(?P<one>day|week|(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday))"
                           r"\s+(?P<side>before|after)(?=\s*(?:[.,;:!?]|$)))(?!\s*\()",
                           re.IGNORECASE)
"""A time counted from a day said just before it: "on Sunday the 2nd of August, and four days later ...", "on the 17th
of March, and the trough level blood test is a week before that", "on Thursday next week, and the CK blood test is the
day before", "on Thursday the 26th, with the blood test the Monday before" (fresh35; not "the day before my surgery",
nor "the day after tomorrow")."""


_SENTENCE_ENDS = (". ", "! ", "? ")


def sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The bounds of the sentence of `text` that holds `text[start:end]` (split at ". ", "! ", "? ")."""
    first = max(text.rfind(mark, 0, start) for mark in _SENTENCE_ENDS) + 1
    last = min((i for i in (text.find(mark, end) for mark in _SENTENCE_ENDS) if i >= 0), default=len(text))
    return first, last


def from_that_day(text: str, today: date) -> str:
    """`text` with each time counted from the day its sentence says just before it (`FROM_THAT_DAY`) followed by the
    day it means: "... on Sunday the 2nd of August 2026, and four days later (6 August 2026) ..." (fresh34: the
    anniversary and a blood test a week before an appointment were stored with no date). A day of a month with no
    year is read as `find_spans` reads it on `today`; when the sentence names no time before it, the sentence before
    it is read; nothing when that names no single day."""
    out, pos = [], 0
    for m in FROM_THAT_DAY.finditer(text):
        start, _ = sentence_around(text, m.start(), m.end())
        if start > 1 and not find_spans(text[start:m.start()], today):
            # or the sentence before, when it says none ("... on Sunday the 30th (30 August 2026). It seemed fine,
            # and then two days later ...": fresh35)
            start = sentence_around(text, start - 1, start - 1)[0]
        days = [span for a, b, span in find_spans(text[start:m.start()], today) if span.first == span.last]
        if not days:
            continue
        back = (m["dir"] or m["side"]).lower() in ("before that", "earlier", "before")
        if m["wd"]:  # "the Monday before": the last Monday before that day (the first after it)
            gap = (days[-1].first.weekday() - WEEKDAYS[m["wd"].lower()]) % 7 or 7
            day = days[-1].first - timedelta(days=gap) if back else \
                days[-1].first + timedelta(days=(WEEKDAYS[m["wd"].lower()] - days[-1].first.weekday()) % 7 or 7)
        else:
            n = 1 if m["one"] else NUMBERS.get(m["n"].lower(), 1) if not m["n"].isdigit() else int(m["n"])
            step = timedelta(days=n * (7 if (m["unit"] or m["one"]).lower().startswith("week") else 1))
            day = days[-1].first + (-step if back else step)
        out += [text[pos:m.end()], f" ({_day(day)})"]
        pos = m.end()
    return "".join(out) + text[pos:]


DAY_ALONE = re.compile(r"\b(?P<weekday>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\s+the\s+"
                       r"(?P<day>[12]?\d|3[01])(?:st|nd|rd|th)\b(?!\s+(?:of\b|[A-Z]))(?:,\s+(?:19|20)\d\d\b)?"
                       r"(?!\s*[(,]\s*\d)")
"""A day of a month said with its weekday and without its month ("on Monday the 29th"), and the year a small model
wrote after it ("on Monday the 29th, 2026")."""


AMBIGUOUS_PAST = re.compile(r"\b(?:I|we|he|she|they|(?-i:[A-Z])[a-z]+)\s+"
                            r"(?:cut|hurt|hit|put|set|let|quit|shut|burst)\s+"
                            r"(?:my|our|his|her|their|(?-i:[A-Z])[a-z]+['’]s)\b", re.IGNORECASE)
"""A past tense that is a present one too, said of someone's own: "I cut my thumb", "he hurt his knee"."""


def _told_in_past(sentence: str) -> bool:
    return told_of_past(sentence) or bool(AMBIGUOUS_PAST.search(sentence))


def day_alone(text: str, today: date, lines: Sequence[str] = ()) -> str:
    """`text` with a day of a month said with its weekday and without its month (`DAY_ALONE`) followed by the date it
    means when said on `today`: the first such day ahead (today's too) that is that weekday (fresh34: "Dr Jayasuriya,
    ..., on Monday the 29th", said on 17 June 2026, is 29 June 2026). Not one of a sentence that names a month (it
    may be that month's: `year_of_days` dates it). One said in the past tense is the last such day before `today`, in
    this month or the two before ("I cut my thumb ... on Sunday the 30th", said on 16 September 2026, is 30 August
    2026: fresh35 dated it in May 2027), or none ("We married on Saturday the 9th" of long ago); the tense of the
    sentence of `lines` (what it cites) that says the same day counts too."""
    out, pos = [], 0
    for m in DAY_ALONE.finditer(text):
        sentence = text[slice(*sentence_around(text, m.start(), m.end()))]
        if re.search(r"\bmonth\b|" + "|".join(rf"\b{name}\b" for name in MONTH_NAMES), sentence, re.IGNORECASE):
            continue
        # the tense of the line it cites too, saying the same day ("On Saturday the 9th I skipped lunch" written "Lela
        # skips lunch ... on Saturday the 9th": fresh35)
        said = [t for line in lines for t in re.split(r"(?<=[.!?])\s+", line) if m[0] in t]
        past = any(_told_in_past(t) for t in [sentence, *said])
        day = None
        for ahead in range(0, -3, -1) if past else range(13):
            year, month = today.year + (today.month - 1 + ahead) // 12, (today.month - 1 + ahead) % 12 + 1
            if int(m["day"]) > monthrange(year, month)[1]:
                continue
            found = date(year, month, int(m["day"]))
            if (found < today if past else found >= today) and found.weekday() == WEEKDAYS[m["weekday"].lower()]:
                day = found
                break
        if day is not None:
            out += [text[pos:m.end()], f" ({_day(day)})"]
            pos = m.end()
    return "".join(out) + text[pos:]


def anchor_times(text: str, said: datetime, lines: Sequence[str] = ()) -> str:
    """`text` with each relative time expression followed by the date it means when said at
    `said` ("last week" -> "last week (22-28 April 2024)", "two weeks ago" -> "two weeks ago (about
    6 May 2025)"), the year after a month said alone where the tense tells it
    (`year_of_months`), and after a day of a month (`year_of_days`), as `lines` (what it cites) tell them when they
    say them too; when it names a year already, only the times of its sentences that name none, and not a "next ..."
    that may be of the year ("In 2019 Ana moved. The next week she started work."; fresh30: "In 2021 ... The next one
    is the day after tomorrow." was not dated)."""
    return from_that_day(day_alone(_anchored(text, said, lines), said.date(), lines), said.date())


def _anchored(text: str, said: datetime, lines: Sequence[str] = ()) -> str:
    """`anchor_times` but for the times counted from a day said before them (`from_that_day`)."""
    if year_said(text):
        return "".join(_anchored(piece, said, lines) if piece.strip() and not year_said(piece)
                       and not NEXT_OF.search(piece) else _dated(piece, said, DEICTIC)
                       for piece in SENTENCE_GAP.split(text))
    found = relative_spans(text, said)
    if not found:
        return year_of_days(year_of_months(text, said.date(), lines=lines), said.date(), lines=lines)
    out = _dated(text, said)
    return year_of_days(year_of_months(out, said.date(), named=False, lines=lines), said.date(), named=False,
                        lines=lines)


def _dated(text: str, said: datetime, only: re.Pattern[str] | None = None) -> str:
    """`text` with each relative time (`relative_spans`; those `only` matches, when given) followed by the date it
    means when said at `said`."""
    iso = bool(CJK.search(text))
    out, pos = [], 0
    for start, end, span in relative_spans(text, said):
        if only is not None and not only.search(text[start:end]):
            continue
        day = None if iso else day_weeks_ago(text[start:end], said.date())
        if iso:
            said_as = f"（{describe_span(span, iso)}）"
        elif day is not None:  # "two weeks ago": the week it fell in does not say the day
            said_as = f" (about {_day(day)})"
        else:
            said_as = f" ({describe_span(span)})"
        out.append(text[pos:end] + said_as)
        pos = end
    out.append(text[pos:])
    return "".join(out)

ON_WEEKDAY = re.compile(r"\b(?:on|from|until|till)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
                        r"(?!['’]s\b)(?!\s*[(（])(?!\s+(?:of\s+)?(?:last|this|next)\s+week\b)", re.IGNORECASE)
"""A weekday said alone: "on Monday", "from Saturday" (fresh20: "it goes up to 500 twice a day from Saturday" was
not dated), "until Friday"; not a day's thing ("310 on Monday's spot": fresh30 dated it the Monday to come), nor one
of a week said ("on Thursday next week": fresh35, the week's day `anchor_times` dates)."""
ON_DAY = re.compile(r"\b(?:on\s+)?the\s+([0-3]?\d)(?:st|nd|rd|th)\b(?:\s+of\s+(this|next|last)\s+month\b)?(?!\s*[(（])"
                    r"(?=\s*[,.;:!?)]|\s*$|\s+(?:at|in|and|so|but|when|for|or|because|then|to|with"
                    r"|i|you|he|she|we|they)\b|\s+(?-i:[A-ZÀ-ÖØ-Þ][^\W\d_A-ZÀ-ÖØ-Þ]))", re.IGNORECASE)
"""A day of the month without its month: "on the 29th", "the 30th of this month", "On the 29th she turns twelve"
(fresh29: undated), "On the 3rd Ebuka ..." (not "the 30th anniversary", nor "the 30th of May", a date already)."""
THE_DAY_AFTER = re.compile(r"\s*,?\s*the\s+[0-3]?\d(?:st|nd|rd|th)\b", re.IGNORECASE)
"""A day of the month right after a weekday ("on Monday the 22nd"): one day, dated by its number."""
_MONTH_NAME = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
MONTH_DAY = re.compile(rf"\b(?:[0-3]?\d(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_NAME}|{_MONTH_NAME.replace('month', 'm2')}"
                       r"\s+[0-3]?\d(?:st|nd|rd|th)?)\b", re.IGNORECASE)
"""A day with its month ("the 12th of May", "May 12"): a bare "the 19th" in its sentence is of that
month ("the 12th of May now, not the 19th")."""


def _day_of_month(day: int, which: str | None, past: bool, said: date, month: int | None = None) -> date | None:
    """The date "the `day`th" means when said on `said`: of this, next or last month when it says
    which; of `month` when another day of its sentence names it, in the year that puts that month
    nearest `said`; else the latest such day before `said` when told of the past, or the next one
    from `said` on. None when no month nearby has that day."""
    if month is not None:
        years = [y for y in (said.year - 1, said.year, said.year + 1)
                 if 1 <= y <= 9999 and 1 <= day <= monthrange(y, month)[1]]
        return min((date(y, month, day) for y in years), key=lambda d: abs((d - said).days), default=None)
    year, month = said.year, said.month
    shift = {"this": 0, "next": 1, "last": -1}.get((which or "").lower())
    steps = [shift] if shift is not None else (range(0, -13, -1) if past else range(0, 13))
    for step in steps:
        y, m = divmod(year * 12 + month - 1 + step, 12)
        if not 1 <= y <= 9999 or day > monthrange(y, m + 1)[1] or day < 1:
            continue
        found = date(y, m + 1, day)
        if shift is not None or (found < said if past else found >= said):
            return found
    return None


def _sentence_start(text: str, at: int) -> int:
    """Where the sentence of `text` that holds position `at` starts."""
    return max((m.end() for m in re.finditer(r"[.!?;]\s", text[:at])), default=0)


def _sentence_at(text: str, at: int) -> str:
    """The sentence of `text` that holds position `at`."""
    start = _sentence_start(text, at)
    end = re.search(r"[.!?;](?:\s|$)", text[at:])
    return text[start:at + end.start() if end else len(text)]


def weekday_spans(text: str, said: datetime, lines: Sequence[str],
                  others: Sequence[str] = ()) -> list[tuple[int, int, Span]]:
    """Each "on Monday" or "on the 29th" of `text` with the day it means, when a sentence of `lines`
    (what the memory cites, said at `said`) says it too, or else one of `others` (what the people
    said in the conversation): the last Monday (29th) before that day when the sentence tells of
    the past ("I went to the dentist on Monday"), else the next one ("I start on Monday"). A
    memory's own tense does not decide: a small model writes "started" for "I start". None when
    `text` names a year, but for the dates ReMe writes in parentheses ("today (1 January 2000) on
    Monday"); one followed by such a date already is left as it is."""
    if CJK.search(text):
        return []
    year_named = year_said(text)
    out: list[tuple[int, int, Span]] = []
    for m in sorted([*ON_WEEKDAY.finditer(text), *ON_DAY.finditer(text)], key=lambda m: m.start()):
        if out and m.start() < out[-1][1] or text[m.end():].lstrip().startswith("("):
            continue
        weekday = m.re is ON_WEEKDAY
        if weekday and THE_DAY_AFTER.match(text[m.end():]):
            continue  # "on Monday the 22nd": the 22nd's date, not the next Monday's as well
        # a date ReMe wrote after the day is of something else ("on Monday the 29th, and in two weeks (2 July
        # 2026)": fresh36 dated the 29th in July); one before it may say its month
        seen = text[:m.start()] + blanked(text[m.start():])
        dated = None if weekday or m[2] else MONTH_DAY_YEAR.search(_sentence_at(seen, m.start()))
        said_so = (rf"\b(?:on|from|until|till)\s+{m[1].lower()}\b" if weekday else
                   rf"\bthe\s+{int(m[1])}(?:st|nd|rd|th)\b" + (rf"\s+of\s+{m[2]}\s+month" if m[2] else ""))
        told = [(s, found.start(), line) for group in (lines, others) for line in group
                for s in re.split(r"(?<=[.!?;])\s+", line) if (found := re.search(said_so, s, re.IGNORECASE))]
        if not told:
            continue
        past = told_of_past_at(*told[0][:2]) or _told_after(*told[0])
        if dated is None and (weekday or not m[2]) and (
                year_named and past or year_said(_sentence_at(text, m.start()))):
            # a text that names a year: of some other time, but for a day of its sentence's dated month, and one
            # of this, next or last month (fresh20: "a lumbar puncture on the 8th of next month, and Dr F on the
            # 11th of August 2026"); a day to come in a sentence of its own is of now (fresh29: "Since November
            # 2025 omalizumab, ...; the next one is on the 5th" was not dated)
            continue
        end = m.end()
        if weekday:
            later = _weeks_on(text[:m.start()], text[m.end():]) or _weeks_on_in(told[0][0], m[1])
            if later and past:
                continue  # "a week on Thursday" of the past: no date rather than a wrong one
            if later and (after := WEEK_AFTER.match(text[m.end():])):
                end += after.end()
            spans = find_spans(f"{'last' if past else 'next'} {m[1].lower()}", said.date())
            day = spans[0][2] if spans else None  # None: before 1 January 1 or after 9999
            if day is not None and later:
                try:
                    day = Span(day.first + timedelta(days=later), day.last + timedelta(days=later))
                except OverflowError:
                    day = None
        else:
            sentence = _sentence_at(seen, m.start())
            named = MONTH_DAY.search(sentence)
            month = MONTHS[(named["month"] or named["m2"]).lower()] if named and not m[2] else None
            which = OF_WHICH_MONTH.search(_sentence_at(text[:m.start()], m.start()))
            if month is None and not m[2] and which:
                month = _add_month(said.date(), which[1])  # "on the 27th of next month, and I fly out on the 24th"
            if dated is not None:  # "the 12th of November 2026, and Dr Marwood on the 19th"
                on = _on(int(dated["year"]), MONTHS[(dated["month"] or dated["m2"]).lower()], int(m[1]))
            elif not m[2] and out and RANGE_TO.fullmatch(text[out[-1][1]:m.start()]):
                on = _day_after(out[-1][2].last, int(m[1]))  # "from the 1st (1 October) to the 22nd"
            else:
                on = _day_of_month(int(m[1]), m[2], past, said.date(), month)
            day = Span(on, on) if on else None
        if day is not None:
            out.append((m.start(), end, day))
    return _days_after(text, out)


TENSED = re.compile(r"\b(?:I|we|he|she|it|they|you|is|are|am|was|were|has|have|had|do|does|did|will|can|goes|gets)\b"
                    r"|['’]", re.IGNORECASE)


def _told_after(sentence: str, at: int, line: str) -> bool:
    """Whether `sentence` (of `line`) says a day with no verb of its own ("On Tuesday, in the middle of my route.",
    the answer to "When was your last attack?") and the sentence after it in its line tells of the past ("I pulled
    the bus over": fresh36 dated the Tuesday to come)."""
    if TENSED.search(sentence) or told_of_future(sentence) or told_of_past(sentence):
        return False
    parts = re.split(r"(?<=[.!?;])\s+", line)
    after = next((parts[k + 1] for k, part in enumerate(parts[:-1]) if part == sentence), "")
    return bool(after) and told_of_past(after) and not told_of_future(after)


MONTH_DAY_YEAR = re.compile(MONTH_DAY.pattern + r",?\s+(?P<year>(?:19|20)\d\d)\b", re.IGNORECASE)
"""A day with its month and year: a bare "the 19th" in its sentence is of that month of that year."""
RANGE_TO = re.compile(r"\s*(?:\([^()]*\)\s*)?(?:to|until|till|through|[-–])\s*", re.IGNORECASE)
"""What stands between the two days of a range: "from the 1st to the 22nd" (and the date ReMe wrote after the first)."""


def _on(year: int, month: int, day: int) -> date | None:
    """That day, or None when there is none (the 31st of a month of 30 days, a year out of range)."""
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _day_after(start: date, day: int) -> date | None:
    """The first `day`th of a month after `start`: the end of a range that begins on `start`."""
    year, month = start.year, start.month
    for _ in range(13):
        if (found := _on(year, month, day)) is not None and found > start:
            return found
        year, month = (year, month + 1) if month < 12 else (year + 1, 1)
    return None


OF_WHICH_MONTH = re.compile(r"\bthe\s+[0-3]?\d(?:st|nd|rd|th)\s+of\s+(this|next|last)\s+month\b", re.IGNORECASE)
"""A day of a month said by which ("the 27th of next month"): a bare "the 24th" after it in its sentence is of that
month (fresh18: "gets married on the 27th of next month, and I fly out on the 24th" was dated this month's 24th)."""
DAYS_AFTER = re.compile(rf"\b(?:the\s+(?P<weekday>{'|'.join(WEEKDAYS)})\s+after"
                        r"|(?P<n>a|one|two|three|four|five|six|\d)\s+(?P<unit>day|week)s?\s+(?:after|later)"
                        r"|the\s+day\s+after)(?:\s+that\b(?!\s*[(（])"
                        r"|(?!\s*[(（])(?=\s*[,.;:!?)]|\s*$|\s+(?:and|so|but|then)\b))",
                        re.IGNORECASE)
"""A day counted from the day said just before it in its sentence: "the Wednesday after", "two weeks after
that", "the day after" (fresh18: "the FibroScan is on the 14th of next month, and the lung function test is
the Wednesday after"; "the Monday after that for the results": fresh36; not "the Wednesday after the operation", a
day counted from something else)."""


def _add_month(said: date, which: str) -> int:
    """The month "this", "next" or "last" month is, said on `said`."""
    return (said.month - 1 + {"this": 0, "next": 1, "last": -1}[which.lower()]) % 12 + 1


def _days_after(text: str, found: list[tuple[int, int, Span]]) -> list[tuple[int, int, Span]]:
    """`found` (the days `weekday_spans` dated in `text`) with each `DAYS_AFTER` of `text` dated from
    the one day dated just before it in its sentence: one of `found`, or a date in parentheses
    that ReMe wrote ("on the 14th of next month (14 August 2026)"). None of a sentence with no such
    day before it."""
    if not DAYS_AFTER.search(text):
        return found
    days = list(found) + [(p.start(), p.end(), spans[0][2]) for p in PARENTHESES.finditer(text)
                          if len(spans := find_spans(p[0][1:-1], date(2000, 1, 1))) == 1
                          and spans[0][2].first == spans[0][2].last and YEAR.search(p[0])]
    out = list(found)
    for m in DAYS_AFTER.finditer(text):
        if any(start <= m.start() < end for start, end, _ in out):
            continue
        before = [d for d in days if d[1] <= m.start() and not re.search(r"[.!?]\s", text[d[1]:m.start()])]
        if not before:
            continue
        start = max(before, key=lambda d: d[1])[2].first
        if m["weekday"]:
            ahead = (WEEKDAYS[m["weekday"].lower()] - start.weekday()) % 7 or 7
        elif m["unit"]:
            n = int(m["n"]) if m["n"].isdigit() else NUMBERS[m["n"].lower()]
            ahead = n * (7 if m["unit"].lower() == "week" else 1)
        else:
            ahead = 1
        try:
            day = start + timedelta(days=ahead)
        except OverflowError:
            continue
        out.append((m.start(), m.end(), Span(day, day)))
    return sorted(out, key=lambda t: t[0])


WEEKS_BEFORE = re.compile(r"\ba\s+(week|fortnight)\s+$", re.IGNORECASE)
WEEK_AFTER = re.compile(r"\s+week\b(?!\s*(?:ago|end)|['’]s)", re.IGNORECASE)
"""The British "a week on Thursday" (a fortnight on) and "on Thursday week": that weekday a week
(two) after the next one."""


def _weeks_on(before: str, after: str) -> int:
    """The days "a week on <day>" (7), "a fortnight on <day>" (14) or "on <day> week" (7) add to the
    next <day>, reading the text `before` and `after` "on <day>". 0 when it does not."""
    if (ahead := WEEKS_BEFORE.search(before)) is not None:
        return 14 if ahead[1].lower() == "fortnight" else 7
    return 7 if WEEK_AFTER.match(after) else 0


def _weeks_on_in(sentence: str, day: str) -> int:
    """`_weeks_on` of the first "on <day>" of `sentence` that says so (0: none does)."""
    return next((n for m in re.finditer(rf"\bon\s+{day}\b", sentence, re.IGNORECASE)
                 if (n := _weeks_on(sentence[:m.start()], sentence[m.end():]))), 0)


def anchor_weekdays(text: str, said: datetime, lines: Sequence[str], others: Sequence[str] = ()) -> str:
    """`text` with each "on Monday" or "on the 29th" followed by its date, as `weekday_spans`
    reads it; unchanged when it names a year, or no sentence says that day."""
    out, pos = [], 0
    for _, end, day in weekday_spans(text, said, lines, others):
        out.append(text[pos:end] + f" ({describe_span(day)})")
        pos = end
    out.append(text[pos:])
    return "".join(out)


__all__ = ["anchor_times", "anchor_weekdays", "describe_span", "name_the_speaker", "relative_spans", "weekday_spans"]
