"""The gold of the memory-quality set's never-tuned parts, `fresh`, `fresh2`, `fresh3`, `fresh4`, `fresh5`, `fresh6`,
`fresh7`, `fresh8`, `fresh9`, `fresh10`, `fresh11`, `fresh12`, `fresh13`, `fresh14`, `fresh15`, `fresh16`, `fresh17`,
`fresh18`, `fresh19`, `fresh20`, `fresh21`, `fresh22`, `fresh23`, `fresh24`, `fresh25`, `fresh26`, `fresh27`, `fresh28`,
`fresh29`, `fresh30`, `fresh31`, `fresh32`, `fresh33`, `fresh34`, `fresh35` and `fresh36`, checked without a model:
memories written by hand (tests/quality_<split>_ideal.json) show that every fact can be recalled by a clean memory, that
fair rewordings are accepted, and that each `wrong` pattern and hygiene rule catches the mistake it is there for. (The
fixtures describe the dialogues of their part: they are not read while tuning.)"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
import pytest

from benchmark.quality.run import main, parser
from benchmark.quality.score import Dialogue, hygiene, load, score

SPLITS = ("fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9", "fresh10",
          "fresh11", "fresh12", "fresh13", "fresh14", "fresh15", "fresh16", "fresh17", "fresh18", "fresh19", "fresh20",
          "fresh21", "fresh22", "fresh23", "fresh24", "fresh25", "fresh26", "fresh27", "fresh28", "fresh29", "fresh30",
          "fresh31", "fresh32", "fresh33", "fresh34", "fresh35", "fresh36")
PARTS = {split: {d.id: d for d in load() if d.split == split} for split in SPLITS}
MEMORIES = {split: json.loads(Path(__file__).with_name(f"quality_{split}_ideal.json").read_text(encoding="utf-8"))
            ["dialogues"] for split in SPLITS}
PROMISES = {  # dialogues, long ones, then at least: facts, safety facts, dated facts, wrong patterns, each topic
    "fresh": {"dialogues": 15, "long": 2, "facts": 50, "safety": 12, "time": 4, "wrong": 0, "topic": 2},
    "fresh2": {"dialogues": 20, "long": 5, "facts": 100, "safety": 20, "time": 10, "wrong": 20, "topic": 2},
    "fresh3": {"dialogues": 16, "long": 3, "facts": 85, "safety": 18, "time": 10, "wrong": 16, "topic": 2},
    "fresh4": {"dialogues": 16, "long": 3, "facts": 120, "safety": 30, "time": 15, "wrong": 16, "topic": 2},
    "fresh5": {"dialogues": 16, "long": 3, "facts": 130, "safety": 40, "time": 20, "wrong": 18, "topic": 2},
    "fresh6": {"dialogues": 16, "long": 3, "facts": 160, "safety": 70, "time": 25, "wrong": 24, "topic": 2},
    "fresh7": {"dialogues": 16, "long": 3, "facts": 170, "safety": 75, "time": 28, "wrong": 26, "topic": 2},
    "fresh8": {"dialogues": 16, "long": 3, "facts": 200, "safety": 100, "time": 30, "wrong": 28, "topic": 2},
    "fresh9": {"dialogues": 16, "long": 3, "facts": 230, "safety": 110, "time": 30, "wrong": 30, "topic": 2},
    "fresh10": {"dialogues": 12, "long": 3, "facts": 190, "safety": 100, "time": 28, "wrong": 26, "topic": 2},
    "fresh11": {"dialogues": 14, "long": 3, "facts": 200, "safety": 100, "time": 28, "wrong": 30, "topic": 2},
    "fresh12": {"dialogues": 12, "long": 3, "facts": 180, "safety": 95, "time": 26, "wrong": 28, "topic": 2},
    "fresh13": {"dialogues": 10, "long": 2, "facts": 160, "safety": 110, "time": 26, "wrong": 32, "topic": 2},
    "fresh14": {"dialogues": 12, "long": 3, "facts": 200, "safety": 130, "time": 28, "wrong": 36, "topic": 2},
    "fresh15": {"dialogues": 12, "long": 3, "facts": 210, "safety": 140, "time": 32, "wrong": 40, "topic": 2},
    "fresh16": {"dialogues": 12, "long": 3, "facts": 240, "safety": 160, "time": 36, "wrong": 46, "topic": 2},
    "fresh17": {"dialogues": 12, "long": 3, "facts": 225, "safety": 140, "time": 36, "wrong": 44, "topic": 2},
    "fresh18": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 36, "wrong": 45, "topic": 2},
    "fresh19": {"dialogues": 12, "long": 3, "facts": 220, "safety": 140, "time": 36, "wrong": 45, "topic": 2},
    "fresh20": {"dialogues": 12, "long": 3, "facts": 220, "safety": 140, "time": 36, "wrong": 45, "topic": 2},
    "fresh21": {"dialogues": 12, "long": 3, "facts": 220, "safety": 140, "time": 36, "wrong": 45, "topic": 2},
    "fresh22": {"dialogues": 12, "long": 3, "facts": 220, "safety": 140, "time": 36, "wrong": 45, "topic": 2},
    "fresh23": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh24": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh25": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh26": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh27": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh28": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh29": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh30": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh31": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh32": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh33": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh34": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh35": {"dialogues": 12, "long": 3, "facts": 225, "safety": 145, "time": 38, "wrong": 48, "topic": 2},
    "fresh36": {"dialogues": 12, "long": 3, "facts": 235, "safety": 150, "time": 45, "wrong": 55, "topic": 2},
}
"""What each part promises (docs/memory-quality.md gives the counts)."""
TOPICS = ("safety", "people", "names", "time", "update", "assistant", "speakers", "smalltalk")


def problems_of(dialogue: Dialogue, memory: str) -> list[str]:
    """What the scorer holds against one memory: hygiene, wrong claims, and `unsupported` when it
    matches no fact of the dialogue."""
    claims = [w.why for w in dialogue.wrong if w.pattern.matches(memory)]
    supported = any(f.pattern.matches(memory) for f in dialogue.facts)
    return hygiene(memory) + claims + ([] if supported else ["unsupported"])


@pytest.mark.parametrize("split", SPLITS)
def test_the_part_holds_what_it_promises(split: str) -> None:
    part, promise = PARTS[split], PROMISES[split]
    facts = [f for d in part.values() for f in d.facts if not f.optional]
    assert len(part) == promise["dialogues"] and sum("long" in d.topics for d in part.values()) == promise["long"]
    assert len(facts) >= promise["facts"] and sum(f.safety for f in facts) >= promise["safety"]
    assert sum(f.time for f in facts) >= promise["time"]
    assert sum(len(d.wrong) for d in part.values()) >= promise["wrong"]
    topics = Counter(t for d in part.values() for t in d.topics)
    assert all(topics[t] >= promise["topic"] for t in TOPICS)
    assert {w.why for d in part.values() for w in d.wrong} == {"assistant", "speaker", "stale"}
    assert all(d.id.startswith(f"{split}-") for d in part.values()) and set(MEMORIES[split]) == set(part)


@pytest.mark.parametrize("split", ["fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9",
                                   "fresh10", "fresh11", "fresh12", "fresh13", "fresh14", "fresh15", "fresh16",
                                   "fresh17", "fresh18", "fresh19", "fresh20", "fresh21",
                                   "fresh22", "fresh23", "fresh24", "fresh25", "fresh26", "fresh27", "fresh28",
                                   "fresh29", "fresh30", "fresh31", "fresh32", "fresh33", "fresh34", "fresh35",
                                   "fresh36"])
def test_the_long_dialogues_are_long_and_say_their_facts_all_along(split: str) -> None:
    for dialogue in PARTS[split].values():
        if "long" in dialogue.topics:
            lines = [m["content"] for session in dialogue.sessions for m in session]
            facts = [f for f in dialogue.facts if not f.optional]
            assert 30 <= len(lines) <= 60 and 7 <= len(facts) <= 12, dialogue.id
            said = [next((i for i in range(len(lines)) if f.pattern.matches("\n".join(lines[:i + 1]))), None)
                    for f in facts]  # the line by which a fact's words have all been said (a date in code: never)
            assert sum(i is not None and i >= len(lines) // 2 for i in said) >= 3, (dialogue.id, said)


@pytest.mark.parametrize("split", SPLITS)
def test_an_ideal_note_taker_scores_full_marks_on_every_dialogue(split: str) -> None:
    for id_, dialogue in PARTS[split].items():
        s = score(dialogue, MEMORIES[split][id_]["ideal"])
        assert (s.recalled, s.safety_recalled, s.missed) == (s.facts, s.safety, []), id_
        assert s.supported == s.memories and s.with_problem == 0 and s.problems == [], id_


@pytest.mark.parametrize("split", SPLITS)
def test_fair_rewordings_are_accepted(split: str) -> None:
    for id_, dialogue in PARTS[split].items():
        for memory in MEMORIES[split][id_]["variants"]:
            assert problems_of(dialogue, memory) == [], (id_, memory)


@pytest.mark.parametrize("split", SPLITS)
def test_plausible_mistakes_are_caught_and_every_wrong_pattern_bites(split: str) -> None:
    for id_, dialogue in PARTS[split].items():
        bad = MEMORIES[split][id_]["bad"]
        for row in bad:
            assert problems_of(dialogue, row["memory"]) == row["problems"], (id_, row["memory"])
            assert row["problems"]
        s = score(dialogue, [row["memory"] for row in bad])
        assert s.with_problem == sum(row["problems"] != ["unsupported"] for row in bad), id_
        assert s.supported == sum(not {"assistant", "speaker", "stale", "unsupported"} & set(row["problems"])
                                  for row in bad), id_  # a wrong claim is never counted as a fact
        for wrong in dialogue.wrong:
            assert any(wrong.pattern.matches(row["memory"]) for row in bad), (id_, wrong.why)


@pytest.mark.parametrize("split", SPLITS)
def test_rescoring_a_report_on_the_part_gives_it_its_own_row(split: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    part = PARTS[split]
    ideal = {"safety-peanuts": ["Carol is allergic to peanuts"],
             **{id_: MEMORIES[split][id_]["ideal"] for id_ in part}}
    rows = [{"id": id_, "memories": memories, "calls": 1, "tokens": 10, "seconds": 0.5}
            for id_, memories in ideal.items()]
    report = tmp_path / "mem0.json"
    report.write_text(json.dumps({"lib": "mem0", "dialogues": rows}), encoding="utf-8")
    assert parser().parse_args(["--lib", "mem0", "--split", split]).split == split

    assert main(["--rescore", str(report), "--split", split, "--output", str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert out["lib"] == "mem0" and set(out) == {"lib", "all", split, "dialogues"}  # peanuts is in neither part
    assert out[split]["dialogues"] == len(part) and out[split]["recall"] == out[split]["precision"] == 1.0
    assert out[split]["safety_recall"] == 1.0 and out[split]["hygiene_share"] == 0.0
    assert f"| {split} | {len(part)} |" in capsys.readouterr().out
