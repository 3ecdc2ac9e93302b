"""Time expressions in text, resolved against a reference time: rule-based, no model.

`find_window("What did Alice do last weekend?", now)` is the weekend before `now`;
`find_window("I went hiking yesterday", said)` is the day before the message was said. The
summarizer resolves what a memory's source says against the message's time (when the LLM gave
no date), and the retriever finds the period a question asks about (before, or without, the LLM
rewrite). English, plus the commonest Chinese expressions; anything else finds nothing, which
is always a safe answer: a window only narrows or reorders, it is never required.

>>> find_window("in May 2023", datetime(2024, 1, 1, tzinfo=timezone.utc))
TimeWindow(start=datetime(2023, 5, 1, 0, 0, tzinfo=...), end=datetime(2023, 5, 31, 23, 59, 59, 999999, ...))
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from typing import Callable

from reme.schema import TimeWindow, as_aware

MONTHS = {name: i for i, names in enumerate(
    [(), ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
     ("december", "dec")]) for name in names}
WEEKDAYS = {name: i for i, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                               "sunday"))}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2, "couple of": 2,
           "a few": 3, "few": 3, "several": 4}
_UNITS = {k: NUMBERS[k] for k in "one two three four five six seven eight nine".split()}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
COUNTS = {**NUMBERS, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
          "nineteen": 19, **_TENS, **{f"{t}{sep}{u}": tv + uv for t, tv in _TENS.items() for u, uv in _UNITS.items()
                                      for sep in ("-", " ")}}
"""The counts a time is said with: `NUMBERS` and thirteen to ninety-nine in words ("twenty-four
years ago" is 24 years, not 4)."""
FUZZY = {"a couple of", "a couple", "couple of", "a few", "few", "several"}

_ONES = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                      "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_SCALES = {"hundred": 100, "thousand": 1000}
_NUMBER_WORD = "|".join([*_ONES, *_TENS, *_SCALES])
SPELLED_NUMBER = re.compile(rf"\b(?:an?\s+(?=(?:hundred|thousand)\b))?(?:{_NUMBER_WORD})"
                            rf"(?:(?:[\s-]+|\s+and\s+)(?:{_NUMBER_WORD}))*\b", re.IGNORECASE)


def _number_of(said: list[str]) -> int | None:
    """The number a run of number words says ("a hundred and forty two", "fifteen hundred",
    "twenty five"), or None when the words make none ("five six", "hundred" alone)."""
    total = part = 0
    last = ""
    for w in said:
        if w == "and":
            if last not in _SCALES:
                return None
        elif w in ("a", "an"):
            part = 1
        elif w in _SCALES:
            if not last or last in _SCALES or last == "and":
                return None
            part *= _SCALES[w]
            if w == "thousand":
                total, part = total + part, 0
        else:
            value = _ONES.get(w, _TENS.get(w, 0))
            if last and not (last in _SCALES or last == "and" or last in _TENS and value < 10):
                return None
            part += value
        last = w
    return None if last in ("and", "a", "an") else total + part


def with_digits(text: str) -> str:
    """`text` with its numbers said in words as digits: "two hundred and fifty milligrams" is
    "250 milligrams", "twenty a day" "20 a day". "one" alone (the one thing), "a" and "an" stay
    words, and a run that makes no number ("five six") is left as it is."""
    def digits(m: re.Match[str]) -> str:
        said = re.findall(r"[a-z]+", m.group(0).lower())
        if said == ["one"]:
            return m.group(0)
        value = _number_of(said)
        return m.group(0) if value is None else str(value)
    return SPELLED_NUMBER.sub(digits, text)
"""Counts that are not exact: "a few days ago" is a range of days around three."""
SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11), "winter": (12, 2)}
MAX_TEXT = 2_000
"""Only the first characters of a text are read: a question or a memory, not a book."""

IRREGULAR_PAST = set("""arose awoke bore beat became began bent bet bit bled blew broke brought built burnt burned
bought caught chose clung came cost crept cut dealt dug dove drew dreamt drank drove ate fell fed felt fought found
fled flew forbade forgot forgave froze got gave went ground grew hung heard hid hit held hurt kept knelt knew laid
led leapt learnt left lent let lay lit lost made meant met paid proved put quit read rode rang rose ran said saw
sought sold sent set shook shone shot showed shrank shut sang sank sat slept slid spoke sped spent spun spat split
spread sprang stood stole stuck stung stank struck swore swept swam swung took taught tore told thought threw
understood woke wore wove wept won wound wrote""".split())
"""Past tenses that do not end in "-ed" (some are present tenses too: "read", "put")."""
PAST_WORDS = IRREGULAR_PAST - set("read put set cut let hit hurt cost quit bet lay left lit fed bit shut spread split ground wound "
                                  "burst".split())
"""Past tenses that are no present tense or other word too ("paid", not "read" or "left")."""
_TOLD_PAST = re.compile(r"\b(?i:was|were|did|had)\b|\b(?i:didn|wasn|weren|hadn|couldn)['’]t\b"
                        r"|\b(?:[A-Z][a-z]+|(?i:i|we|he|she|it|they|you|has|have)"
                        r"|(?i:the|a|an|my|our|his|her|their|this|that)\s+(?:[a-z]+\s+)?[a-z]+)\s+"
                        r"(?:just\s+|[a-z]+ly\s+)?(?!(?:called|named|based|used|supposed|scheduled|planned|booked"
                        r"|related|located|designed)\b)[a-z]{2,}ed\b(?!\s+(?:like|as)\b)")


_LEADING_PAST = re.compile(r"^\s*(?!(?:Scheduled|Booked|Planned|Supposed|Expected|Pencilled|Penciled)\b)"
                           r"[A-Z][a-z]{2,}ed\b(?!\s+(?:by|to|for)\b)")
"""A sentence that starts with its verb in "-ed", its subject left out: "Stopped it in June"."""


HAVE_GOT = re.compile(r"(?:['’](?:ve|s)|\b(?:have|has))\s+got\b(?!\s+(?:back|home|in|out|up|off|through|into|over"
                      r"|rid|lost|married|engaged|divorced|sick|ill)\b)", re.IGNORECASE)
""""I've got", "she's got": has, not a past ("I've got a heart MRI on Friday" is ahead); not "I've
got back" or "we've got married"."""


_DONE_ALREADY = re.compile(r"\b(?:both|all|already)\s+(?:done|taken|had|sent|given|seen|finished|completed)\b",
                          re.IGNORECASE)
"""A participle said of what is over, with no "was": "Bloods for hepatitis B and a TB test, both done on Monday"
(fresh18, said on a Thursday, was dated the next Monday)."""


def told_of_past(sentence: str) -> bool:
    """Whether a sentence tells of the past: "was", "had", a subject and a verb in "-ed" ("Kim
    finished", "a new one arrived"; not "gets a crown fitted", nor "a man called Dave"), a verb in
    "-ed" it starts with ("Stopped it in June"), "didn't", "wasn't", "couldn't" (fresh36: "I lay on the sofa
    ... and couldn't lift my arms"), or a past tense of `PAST_WORDS` ("I went",
    "paid"; not the "won" of "won't"), "both done" (`_DONE_ALREADY`); "have got" is no past (`HAVE_GOT`)."""
    sentence = HAVE_GOT.sub(" hold", sentence)
    return bool(_TOLD_PAST.search(sentence) or _LEADING_PAST.match(sentence) or _DONE_ALREADY.search(sentence)) \
        or not PAST_WORDS.isdisjoint(re.findall(r"\b[a-z]+\b(?!['’]t\b)", sentence.lower()))


_QUALITY = r"(?!(?:amazing|interesting|boring|exciting|stunning|charming|relaxing|refreshing|appealing|inviting" \
           r"|pleasing|tempting|thrilling|depressing|annoying|tiring|freezing|sweltering|lovely|nothing|something)\b)"
_FUTURE = re.compile(r"\b(?:will|won['’]t|shall|going to|gonna|due|plan(?:s|ned|ning)?\s+to|hop(?:e|es|ing) to"
                    rf"|booked|scheduled)\b|['’]ll\b|\b(?:am|is|are)\s+(?:not\s+)?{_QUALITY}\w+ing\b"
                    rf"|['’](?:m|re|s)\s+(?:not\s+)?{_QUALITY}\w+ing\b", re.IGNORECASE)


def told_of_future(sentence: str) -> bool:
    """Whether a sentence tells of a time ahead: "will", "is due", "are getting married", "we're not
    trying till April" (not "is amazing": "Lisbon is amazing in May" is of every May)."""
    return bool(_FUTURE.search(sentence))


_SAME_IN_PAST = re.compile(r"\b(?:I|we|he|she|they|[A-Z][a-z]+)\s+(?:(?:finally|just|already|eventually)\s+)?"
                           r"(?:quit|left|cut|shut|split)\b(?!\s+(?:it\s+)?(?:till|until|for now)\b)")
"""Someone who did what says the same now and before ("I quit smoking in January", "we split in May"):
of the past, when a month is said with it (fresh19: "I finally quit smoking, in March" had no year)."""
_REPORTED = re.compile(r",\s+(?:(?:the|my|his|her|our|their)\s+)?(?:[\w-]+\s+){0,3}?"
                       r"(?:said|told\s+\w+|warned|explained|reckoned|mentioned)\b[^.;!?]*")
"""A clause that says who said it: "..., the paeds lipid doctor said ten is the age"."""
_SCHEDULED = re.compile(r"\b(?:I|we|you|they|he|she|it|[A-Z][a-z]+)\s+(?:(?:only|just|then)\s+)?"
                        r"(?:starts?|begins?|gets?|goes|go|flies|fly|leaves?|comes?|moves?|finishes|finish|ends?"
                        r"|opens?|has|have|is|are|am)\b|['’](?:m|re)\s+(?:on|off|in|at|due|back)\b")
"""A verb in the present before a day: what is planned ("She starts pravastatin on ...")."""


_CLAUSE_BREAK = re.compile(r",\s+(?:and|but|so|then|and\s+then)\s+|;\s+", re.IGNORECASE)
_OWN_SUBJECT = re.compile(r"(?:I|we|you|he|she|it|they)\b", re.IGNORECASE)


def told_of_past_at(sentence: str, at: int) -> bool:
    """Whether the time said at `at` in `sentence` is of the past: as `told_of_past` says of the
    sentence, or of the clause it is in when that clause has a subject of its own after ", and",
    ", but" or ";" (fresh20: "250 milligrams since I was diagnosed, and it goes up to 500 from
    Saturday" was dated the Saturday before); a clause after it that says who said so ("..., the
    doctor said ...") does not make a day in the present past (fresh19: "She starts pravastatin
    on her tenth birthday, the 14th of May, the paeds lipid doctor said ten is the age" was dated
    the May before)."""
    start = max((m.end() for m in _CLAUSE_BREAK.finditer(sentence, 0, at)), default=0)
    end = next((m.start() for m in _CLAUSE_BREAK.finditer(sentence, at)), len(sentence))
    if start and _OWN_SUBJECT.match(sentence, start):  # a clause of its own: its tense, not the sentence's
        sentence, at = sentence[start:end], at - start
    before = sentence[:at]
    reported = next((m for m in _REPORTED.finditer(sentence) if m.start() >= at), None)
    if reported is not None and not told_of_past(before) and _SCHEDULED.search(before):
        sentence = sentence[:reported.start()] + sentence[reported.end():]
    return told_of_past(sentence)


def month_year(month: int, today: date, sentence: str) -> int | None:
    """The year of a month a sentence says alone ("in July"), when its tense tells which: the
    latest such month up to today's when told of the past, the next one from it on when of a time
    ahead (today's own month is this year's: "We moved at the start of October", said in October,
    fresh15); None for a sentence of neither (a habit: "goes skiing in February"), or a year out of
    range."""
    if told_of_past(sentence) or _SAME_IN_PAST.search(sentence) and not told_of_future(sentence):
        year = today.year if month <= today.month else today.year - 1
    elif told_of_future(sentence):
        year = today.year if month >= today.month else today.year + 1
    else:
        return None
    return year if 1 <= year <= 9999 else None


_SENTENCE_END = re.compile(r"[.!?;\n]")

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_NUM = r"(?<![\w-])(?P<n>\d{1,3}|" + "|".join(sorted((re.escape(k) for k in COUNTS), key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>day|week|fortnight|month|year)s?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")s?"


@dataclass(frozen=True)
class Span:
    """A period found in a text: whole days, `first` to `last` inclusive."""

    first: date
    last: date

    def window(self, zone: tzinfo) -> TimeWindow:
        return TimeWindow(start=datetime.combine(self.first, time.min, zone),
                          end=datetime.combine(self.last, time.max, zone))


def month_span(year: int, month: int) -> Span:
    return Span(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def _week_of(day: date) -> Span:
    monday = day - timedelta(days=day.weekday())
    return Span(monday, monday + timedelta(days=6))


def _weekday_of_week(m: re.Match[str], today: date) -> Span:
    """"Monday last week", "Thursday next week": that day of the week before, this or after `today`'s."""
    week = _week_of(today + timedelta(weeks={"last": -1, "this": 0, "next": 1}[m["which"].lower()]))
    day = week.first + timedelta(days=WEEKDAYS[m["weekday"].lower()])
    return Span(day, day)


def _add_months(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _day(year: int, month: int, day: int) -> Span | None:
    try:
        d = date(year, month, day)
    except ValueError:
        return None
    return Span(d, d)


def _latest_month(month: int, today: date) -> int:
    """The year of the latest `month` not after today's month (a question about "May" in
    January means last May)."""
    return today.year if month <= today.month else today.year - 1


def _season(name: str, year: int) -> Span:
    first, last = SEASONS[name]
    if first > last:  # winter runs into the next year
        return Span(date(year, first, 1), month_span(year + 1, last).last)
    return Span(date(year, first, 1), month_span(year, last).last)


Rule = tuple["re.Pattern[str]", Callable[["re.Match[str]", date], "Span | None"]]


def _month(m: re.Match[str]) -> int:
    """The month a match names; "may" and "march" in lower case are the verbs (KeyError: no match)."""
    name = m["month"]
    if name in ("may", "march", "mar"):
        raise KeyError(name)
    return MONTHS[name.lower()]


def _absolute_day(m: re.Match[str], today: date) -> Span | None:
    year = int(m["year"]) if m["year"] else None
    month, day = _month(m), int(m["day"])
    if year is None:
        year = today.year if (month, day) <= (today.month, today.day) else today.year - 1
    return _day(year, month, day)


def _count(raw: str) -> int:
    """The number a count says: "3", "three", "a couple of" (2)."""
    raw = raw.lower()
    return int(raw) if raw.isdigit() else COUNTS.get(re.sub(r"\s+", " ", raw), 1)


_WEEKS_AGO = re.compile(rf"{_NUM}\s+(?P<unit>week|fortnight)s?\s+ago", re.IGNORECASE)


def day_weeks_ago(expression: str, today: date) -> date | None:
    """The day an exact count of weeks ago means ("two weeks ago" said on 20 May 2025: 6 May),
    where its span is the week that day fell in; None for any other expression, or a count that
    is not exact ("a few weeks ago")."""
    m = _WEEKS_AGO.fullmatch(expression.strip())
    if m is None or m["n"].lower() in FUZZY or _count(m["n"]) > 400:
        return None
    return today - timedelta(weeks=_count(m["n"]) * (2 if m["unit"].lower() == "fortnight" else 1))


def _counted(m: re.Match[str]) -> tuple[int, str, bool]:
    """A count of units a match says, its unit (a fortnight as two weeks), and whether the count
    is not exact ("a few")."""
    raw, unit = m["n"].lower(), m["unit"].lower()
    n = _count(raw)
    return (n * 2, "week", raw in FUZZY) if unit == "fortnight" else (n, unit, raw in FUZZY)


def _relative_unit(m: re.Match[str], today: date) -> Span | None:
    n, unit, fuzzy = _counted(m)
    if n > 400:
        return None
    if unit == "day":
        d = today - timedelta(days=n)
        return Span(d - timedelta(days=1), d + timedelta(days=1)) if fuzzy else Span(d, d)
    if unit == "week":
        d = today - timedelta(weeks=n)
        return Span(d - timedelta(days=3), d + timedelta(days=3)) if fuzzy else _week_of(d)
    if unit == "month":
        year, month = _add_months(today, -n)
        return month_span(year, month)
    if today.year - n < 1:
        return None
    return Span(date(today.year - n, 1, 1), date(today.year - n, 12, 31))


def _sentence_start(m: re.Match[str]) -> int:
    """Where the sentence of the text a match lies in starts."""
    return max((e.end() for e in _SENTENCE_END.finditer(m.string, 0, m.start())), default=0)


def _sentence_of(m: re.Match[str]) -> str:
    """The sentence of the text a match lies in."""
    start = _sentence_start(m)
    end = _SENTENCE_END.search(m.string, m.end())
    return m.string[start:end.start() if end else len(m.string)]


_CLAUSE_END = re.compile(r",\s+(?:and|but|so)\s+|;\s*", re.IGNORECASE)


def _clause_of(m: re.Match[str]) -> str:
    """The clause of the sentence a match lies in (parted at ", and", ", but", ", so" and ";")."""
    at = _sentence_start(m)
    sentence = _sentence_of(m)
    start, end = m.start() - at, m.end() - at
    cut = [0] + [e.end() for e in _CLAUSE_END.finditer(sentence) if e.end() <= start]
    after = _CLAUSE_END.search(sentence, end)
    return sentence[max(cut):after.start() if after else len(sentence)]


def _ahead(m: re.Match[str], today: date) -> Span | None:
    """ "in ten days", "three weeks from now": counted forward from `today` (days and weeks to the
    day, months and years as a whole). None when its clause tells of the past: "finished the
    course in ten days" is a time it took (but "Natan was tested last Thursday, and the result
    comes in six weeks" is ahead: fresh29); "from now" and "from today" are ahead however the
    verb reads ("I'm signed off for six weeks from today")."""
    if not re.search(r"\bfrom\s", m.group(0), re.IGNORECASE) and told_of_past(_clause_of(m)):
        return None
    n, unit, fuzzy = _counted(m)
    if n > 400:
        return None
    if unit in ("day", "week"):
        d = today + timedelta(days=n * (7 if unit == "week" else 1))
        spread = (3 if unit == "week" else 1) if fuzzy else 0
        return Span(d - timedelta(days=spread), d + timedelta(days=spread))
    if unit == "month":
        return month_span(*_add_months(today, n))
    return Span(date(today.year + n, 1, 1), date(today.year + n, 12, 31))


def _relative_period(m: re.Match[str], today: date) -> Span | None:
    which, unit = m["which"].lower(), m["unit"].lower()
    shift = {"last": -1, "past": -1, "previous": -1, "this": 0, "current": 0, "next": 1, "coming": 1}[which]
    if unit == "week":
        if which == "past":
            return Span(today - timedelta(days=7), today)
        return _week_of(today + timedelta(weeks=shift))
    if unit == "weekend":
        if shift < 0:  # the latest Saturday and Sunday both before today
            saturday = today - timedelta(days=(today.weekday() - 5) % 7)
            if saturday + timedelta(days=1) >= today:
                saturday -= timedelta(days=7)
        else:
            saturday = today - timedelta(days=today.weekday()) + timedelta(days=5 + 7 * shift)
        return Span(saturday, saturday + timedelta(days=1))
    if unit == "month":
        if which == "past":
            return Span(today - timedelta(days=30), today)
        return month_span(*_add_months(today, shift))
    if unit == "year":
        if which == "past":
            return Span(today - timedelta(days=365), today)
        return Span(date(today.year + shift, 1, 1), date(today.year + shift, 12, 31))
    if shift < 0:  # the latest season of that name that has ended
        year = today.year
        while _season(unit, year).last >= today:
            year -= 1
        return _season(unit, year)
    return _season(unit, today.year + shift)


def _month_end(m: re.Match[str], today: date) -> Span:
    """ "by the end of the month": the last day of this month (of the next or last one when it says so)."""
    year, month = _add_months(today, {"next": 1, "last": -1}.get(m["which"].lower(), 0))
    last = month_span(year, month).last
    return Span(last, last)


def _named_month(m: re.Match[str], today: date) -> Span:
    """ "last October": the latest October before this month; "next March": the first March after
    it; "this September": this year's."""
    month, which = _month(m), m["which"].lower()
    if which == "last":
        return month_span(today.year if month < today.month else today.year - 1, month)
    if which == "this":
        return month_span(today.year, month)
    return month_span(today.year if month > today.month else today.year + 1, month)


NTH = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": -1}


def _nth_weekday(m: re.Match[str], today: date) -> Span | None:
    """ "the last Saturday of next month", "the first Monday in March 2027", "the last Friday of the month" (this
    one): that day. A month
    named without its year is the one nearest today (July said in June is this July)."""
    if m["which"]:
        year, month = _add_months(today, {"this": 0, "the": 0, "next": 1, "last": -1}[m["which"].lower()])
    else:
        month = _month(m)
        year = int(m["year"]) if m["year"] else min(
            (today.year - 1, today.year, today.year + 1), key=lambda y: abs((y - today.year) * 12 + month - today.month))
    target, nth = WEEKDAYS[m["weekday"].lower()], NTH[m["nth"].lower()]
    days = [d for d in range(1, month_span(year, month).last.day + 1) if date(year, month, d).weekday() == target]
    return _day(year, month, days[nth if nth < 0 else nth - 1]) if len(days) >= nth else None


def _weekday(m: re.Match[str], today: date) -> Span | None:
    which = (m["which"] or "on").lower()
    target = WEEKDAYS[m["weekday"].lower()]
    if which == "next" or which.endswith("coming"):  # "this coming Monday": the next one
        ahead = (target - today.weekday()) % 7 or 7
        d = today + timedelta(days=ahead)
    elif which == "this":  # this week's, or the coming one when it has gone and the sentence is not of the past
        d = today - timedelta(days=today.weekday()) + timedelta(days=target)
        if d < today and not told_of_past(_sentence_of(m)):
            d += timedelta(days=7)
    else:  # last, past, on: the latest one before today
        back = (today.weekday() - target) % 7 or 7
        d = today - timedelta(days=back)
    return Span(d, d)


HOLIDAYS = {"christmas eve": (12, 24), "christmas day": (12, 25), "christmas": (12, 25), "new year's eve": (12, 31),
            "new year's day": (1, 1), "new year's": (1, 1), "new year": (1, 1), "halloween": (10, 31),
            "valentine's day": (2, 14)}
"""Holidays on a fixed day, read when said with last, this or next ("he proposed last Christmas")."""
_HOLIDAY = r"(?P<holiday>" + "|".join(h.replace("'", "['’]?").replace(" ", r"\s+") for h in HOLIDAYS) + r")"


def _holiday(m: re.Match[str], today: date) -> Span:
    month, day = HOLIDAYS[re.sub(r"\s+", " ", m["holiday"].lower().replace("’", "'").replace("years", "year's")
                                 .replace("valentines", "valentine's"))]
    d = date(today.year, month, day)
    which = m["which"].lower()
    if which == "last" and d >= today:
        d = date(today.year - 1, month, day)
    elif which == "next" and d <= today:
        d = date(today.year + 1, month, day)
    return Span(d, d)


def _fixed(offset: int) -> Callable[[re.Match[str], date], Span]:
    def make(m: re.Match[str], today: date) -> Span:
        d = today + timedelta(days=offset)
        return Span(d, d)

    return make


def _cn_days_ago(m: re.Match[str], today: date) -> Span | None:
    n = int(m["n"])
    return None if n > 10_000 else _fixed(-n)(m, today)


_F = re.IGNORECASE
RULES: list[Rule] = [
    # one day, not every one ("every first Monday of the month")
    (re.compile(rf"(?<!\bevery\s)(?<!\beach\s)\b(?:the\s+)?(?P<nth>" + "|".join(NTH) + rf")\s+{_WEEKDAY}\s+(?:of|in)\s+"
                rf"(?:(?P<which>this|next|last|the)\s+month|{_MONTH}(?:,?\s+{_YEAR})?)\b", _F), _nth_weekday),
    (re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b"),
     lambda m, t: _day(int(m["year"]), int(m["m"]), int(m["d"]))),
    (re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b", _F), _absolute_day),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", _F), _absolute_day),
    (re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", _F),
     lambda m, t: month_span(int(m["year"]), _month(m))),
    (re.compile(r"\b(?:the\s+)?(?P<unit>spring|summer|autumn|fall|winter)\s+(?:of\s+)?(?P<year>(?:19|20)\d\d)\b", _F),
     lambda m, t: _season(m["unit"].lower(), int(m["year"]))),
    (re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}(?!\w)(?P<year>)", _F), _absolute_day),
    (re.compile(rf"\b(?:on\s+)?{_MONTH}\s+{_DAY}\b(?P<year>)(?!,?\s*\d)", _F), _absolute_day),
    (re.compile(rf"\b(?:in\s+)?{_MONTH}\s+(?P<which>last|this|next)\s+year\b", _F),
     lambda m, t: month_span(t.year + {"last": -1, "this": 0, "next": 1}[m["which"].lower()], _month(m))),
    (re.compile(rf"\b(?P<which>last|this|next|coming)\s+{_MONTH}(?!\w)", _F), _named_month),
    (re.compile(rf"\b(?:in|during|since|by|throughout|early|late|mid)[\s-]+{_MONTH}(?!\w)", _F),
     lambda m, t: month_span(_latest_month(_month(m), t), _month(m))),
    (re.compile(rf"\bin\s+{_NUM}\s+{_UNIT}(?:['’]\s*time)?\b", _F), _ahead),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+(?:from\s+(?:now|today)|today)\b", _F), _ahead),  # "two weeks today"
    (re.compile(r"\ba\s+week\s+(?:from\s+)?today\b", _F), _fixed(7)),  # British "a week tomorrow"
    (re.compile(r"\ba\s+week\s+(?:from\s+)?tomorrow\b", _F), _fixed(8)),
    (re.compile(rf"\b(?P<which>last|this|next)\s+{_HOLIDAY}(?!\w)", _F), _holiday),
    (re.compile(r"\bthe\s+day\s+before\s+yesterday\b", _F), _fixed(-2)),
    (re.compile(r"\byesterday\b|\blast\s+night\b", _F), _fixed(-1)),
    (re.compile(r"\btoday\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b", _F), _fixed(0)),
    (re.compile(r"\bthe\s+day\s+after\s+tomorrow\b", _F), _fixed(2)),
    (re.compile(r"\btomorrow\b", _F), _fixed(1)),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", _F), _relative_unit),
    (re.compile(r"\b(?:the\s+)?end\s+of\s+(?P<which>the|this|next|last)\s+month\b", _F), _month_end),
    # one day of a week said ("on Monday last week", "Thursday next week": fresh35 dated the Monday and the week apart)
    (re.compile(rf"\b{_WEEKDAY}\s+(?:of\s+)?(?P<which>last|this|next)\s+week\b", _F), _weekday_of_week),
    (re.compile(r"\b(?P<which>last|past|previous|this|current|next|coming)\s+"
                r"(?P<unit>week|weekend|month|year|spring|summer|autumn|fall|winter)\b", _F), _relative_period),
    (re.compile(rf"\b(?P<which>last|past|this\s+coming|this|next|coming|on)\s+{_WEEKDAY}\b"
                r"(?!\s+(?:of|in)\s+(?:the|this|next|last)\s+month\b)", _F), _weekday),
    (re.compile(r"\bearlier\s+this\s+year\b", _F), lambda m, t: Span(date(t.year, 1, 1), t)),
    (re.compile(r"\b(?:in|during|since|of|by)\s+(?P<year>(?:19|20)\d\d)\b(?!-)", _F),
     lambda m, t: Span(date(int(m["year"]), 1, 1), date(int(m["year"]), 12, 31))),
    # Chinese: 前天 昨天 今天 明天, 上周 本周 下周, 上个月 这个月 下个月, 去年 今年 明年, N天前
    (re.compile(r"前天"), _fixed(-2)),
    (re.compile(r"昨天|昨晚"), _fixed(-1)),
    (re.compile(r"今天|今晚"), _fixed(0)),
    (re.compile(r"明天"), _fixed(1)),
    (re.compile(r"(?P<n>\d{1,4})\s*天前"), _cn_days_ago),
    (re.compile(r"上(?:个)?(?:周|星期|礼拜)"), lambda m, t: _week_of(t - timedelta(weeks=1))),
    (re.compile(r"(?:本|这)(?:个)?(?:周|星期|礼拜)"), lambda m, t: _week_of(t)),
    (re.compile(r"下(?:个)?(?:周|星期|礼拜)"), lambda m, t: _week_of(t + timedelta(weeks=1))),
    (re.compile(r"上个?月"), lambda m, t: month_span(*_add_months(t, -1))),
    (re.compile(r"(?:这个|本)月"), lambda m, t: month_span(t.year, t.month)),
    (re.compile(r"下个?月"), lambda m, t: month_span(*_add_months(t, 1))),
    (re.compile(r"去年"), lambda m, t: Span(date(t.year - 1, 1, 1), date(t.year - 1, 12, 31))),
    (re.compile(r"今年"), lambda m, t: Span(date(t.year, 1, 1), date(t.year, 12, 31))),
    (re.compile(r"(?P<year>(?:19|20)\d\d)\s*年(?:\s*(?P<m>1[0-2]|0?[1-9])\s*月)?(?:\s*(?P<d>[0-3]?\d)\s*日)?"),
     lambda m, t: (_day(int(m["year"]), int(m["m"]), int(m["d"])) if m["d"] and m["m"] else
                   month_span(int(m["year"]), int(m["m"])) if m["m"] else
                   Span(date(int(m["year"]), 1, 1), date(int(m["year"]), 12, 31)))),
]
_ANCHOR = re.compile(r"^\s*(?:before|prior\s+to|preceding)\s+", _F)


def find_spans(text: str, today: date) -> list[tuple[int, int, Span]]:
    """Every period the rules find in `text` read on `today`, as (start, end, span), in text order;
    where two matches overlap, the one found first by the rule list (the more specific) is kept."""
    text = text[:MAX_TEXT]
    taken: list[tuple[int, int, Span]] = []
    for pattern, resolve in RULES:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end, _ in taken):
                continue
            try:
                span = resolve(m, today)
            except (ValueError, OverflowError, KeyError):  # a date out of range, a made-up month
                span = None
            if span is not None:
                taken.append((m.start(), m.end(), span))
    return sorted(taken, key=lambda t: t[0])


def find_window(text: str, now: datetime) -> TimeWindow | None:
    """The period `text` speaks of, read at `now` (whole days in `now`'s timezone; naive means
    UTC), or None when it names none. Of several, the narrowest is taken; a relative period
    followed by "before <date>" ("last weekend before April 10, 2023") is read at that date."""
    if not isinstance(text, str) or not text.strip():
        return None
    now = as_aware(now)
    zone = now.tzinfo or timezone.utc
    found = find_spans(text, now.date())
    if not found:
        return None
    for i, (start, end, _) in enumerate(found[:-1]):
        nxt_start, nxt_end, anchor = found[i + 1]
        if _ANCHOR.match(text[end:nxt_start]) and anchor.first == anchor.last:
            again = find_spans(text[start:end], anchor.first)
            if again:
                found[i] = (start, end, again[0][2])
                del found[i + 1]
                break
    best = min(found, key=lambda t: ((t[2].last - t[2].first).days, t[0]))
    return best[2].window(zone)


__all__ = ["find_window", "find_spans", "told_of_past", "told_of_past_at", "Span"]
