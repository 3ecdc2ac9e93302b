"""LoCoMo data: loading (a local file, or the public file downloaded once into a cache), turns,
session dates, questions and their evidence turns, with the official category names."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

PUBLIC_URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
CACHE = Path(os.environ.get("REME_CACHE_DIR", Path.home() / ".cache" / "reme")) / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SCORED = (1, 2, 3, 4)
"""Categories in the overall score; 5 (adversarial) is reported on its own."""
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


class DataError(Exception):
    """The data file is missing or not LoCoMo."""


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    time: datetime

    @property
    def content(self) -> str:
        """The turn as spoken: speaker, text, and the shared image's caption if any."""
        said = f"{self.speaker}: {self.text}"
        return f"{said} [shares {self.caption}]" if self.caption else said


@dataclass
class Question:
    index: int
    question: str
    answer: str
    category: int
    evidence: list[str]
    dropped_evidence: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: list[tuple[datetime, list[Turn]]]
    questions: list[Question]
    observations: dict[int, dict[str, list[tuple[str, list[str]]]]] = field(default_factory=dict)
    """Per session number and speaker: LoCoMo's observed facts, each with the dia_ids it cites."""

    @property
    def turns(self) -> list[Turn]:
        return [t for _, turns in self.sessions for t in turns]


def parse_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def resolve_data(path: str | None) -> Path:
    """The file to read: `path`, else the cached public file, downloaded now if missing."""
    if path:
        p = Path(path).expanduser()
        if not p.is_file():
            raise DataError(f"no LoCoMo file at {p}")
        return p
    if CACHE.is_file():
        return CACHE
    if os.environ.get("REME_OFFLINE") or os.environ.get("HF_HUB_OFFLINE"):
        raise DataError(f"offline (REME_OFFLINE/HF_HUB_OFFLINE set) and no LoCoMo file: put locomo10.json at "
                        f"{CACHE} or pass --data PATH")
    try:
        with urllib.request.urlopen(PUBLIC_URL, timeout=30) as response:  # noqa: S310 - a fixed https URL
            raw = response.read()
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(f"cannot download {PUBLIC_URL} ({exc}); put locomo10.json at {CACHE} "
                        "or pass --data PATH") from None
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(".tmp")
    tmp.write_bytes(raw)
    tmp.replace(CACHE)
    return CACHE


def load(path: Path, limit: int | None = None) -> list[Conversation]:
    try:
        samples: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not a readable JSON file: {exc}") from None
    if not isinstance(samples, list) or not all(isinstance(s, dict) and "conversation" in s for s in samples):
        raise DataError(f"{path} is not LoCoMo: expected a list of samples with a 'conversation'")
    return [_conversation(s) for s in samples[:limit]]


def _conversation(sample: dict[str, Any]) -> Conversation:
    conv = sample["conversation"]
    sessions: list[tuple[datetime, list[Turn]]] = []
    n = 1
    while f"session_{n}" in conv:
        when = parse_date(conv[f"session_{n}_date_time"])
        turns = [Turn(dia_id=t["dia_id"], speaker=t["speaker"], text=t["text"], caption=t.get("blip_caption"),
                      time=when) for t in conv[f"session_{n}"]]
        sessions.append((when, turns))
        n += 1
    known = {t.dia_id for _, turns in sessions for t in turns}
    questions = []
    for i, qa in enumerate(sample["qa"]):
        ids = [f"D{a}:{b}" for e in qa.get("evidence", []) for a, b in _EVIDENCE.findall(str(e))]
        ids = list(dict.fromkeys(ids))
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        questions.append(Question(index=i, question=qa["question"], answer=str(answer), category=int(qa["category"]),
                                  evidence=[e for e in ids if e in known],
                                  dropped_evidence=[e for e in ids if e not in known]))
    observations: dict[int, dict[str, list[tuple[str, list[str]]]]] = {}
    for number in range(1, len(sessions) + 1):
        for speaker, facts in (sample.get("observation", {}).get(f"session_{number}_observation") or {}).items():
            observations.setdefault(number, {})[speaker] = [
                (str(fact), [f"D{a}:{b}" for a, b in _EVIDENCE.findall(str(cited))]) for fact, cited in facts]
    return Conversation(sample_id=sample["sample_id"], speakers=(conv["speaker_a"], conv["speaker_b"]),
                        sessions=sessions, questions=questions, observations=observations)
