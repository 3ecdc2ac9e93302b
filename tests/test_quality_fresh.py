"""The gold of the memory-quality set's `fresh` part, checked without a model: memories written by
hand (tests/quality_fresh_ideal.json) show that every fact can be recalled by a clean memory, that
fair rewordings are accepted, and that each `wrong` pattern and hygiene rule catches the mistake
it is there for. (The fixture describes the fresh dialogues: it is not read while tuning.)"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
import pytest

from benchmark.quality.run import main, parser
from benchmark.quality.score import Dialogue, hygiene, load, score

FRESH = {d.id: d for d in load() if d.split == "fresh"}
MEMORIES = json.loads(Path(__file__).with_name("quality_fresh_ideal.json").read_text(encoding="utf-8"))["dialogues"]


def problems_of(dialogue: Dialogue, memory: str) -> list[str]:
    """What the scorer holds against one memory: hygiene, wrong claims, and `unsupported` when it
    matches no fact of the dialogue."""
    claims = [w.why for w in dialogue.wrong if w.pattern.matches(memory)]
    supported = any(f.pattern.matches(memory) for f in dialogue.facts)
    return hygiene(memory) + claims + ([] if supported else ["unsupported"])


def test_the_fresh_part_holds_what_it_promises() -> None:
    facts = [f for d in FRESH.values() for f in d.facts if not f.optional]
    assert len(FRESH) == 15 and sum("long" in d.topics for d in FRESH.values()) == 2
    assert len(facts) >= 50 and sum(f.safety for f in facts) >= 12 and sum(f.time for f in facts) >= 4
    topics = Counter(t for d in FRESH.values() for t in d.topics)
    assert all(topics[t] >= 2 for t in ("safety", "people", "names", "time", "update", "assistant", "speakers",
                                        "smalltalk"))
    assert {w.why for d in FRESH.values() for w in d.wrong} == {"assistant", "speaker", "stale"}
    assert all(d.id.startswith("fresh-") for d in FRESH.values()) and set(MEMORIES) == set(FRESH)


def test_an_ideal_note_taker_scores_full_marks_on_every_fresh_dialogue() -> None:
    for id_, dialogue in FRESH.items():
        s = score(dialogue, MEMORIES[id_]["ideal"])
        assert (s.recalled, s.safety_recalled, s.missed) == (s.facts, s.safety, []), id_
        assert s.supported == s.memories and s.with_problem == 0 and s.problems == [], id_


def test_fair_rewordings_are_accepted() -> None:
    for id_, dialogue in FRESH.items():
        for memory in MEMORIES[id_]["variants"]:
            assert problems_of(dialogue, memory) == [], (id_, memory)


def test_plausible_mistakes_are_caught_and_every_wrong_pattern_bites() -> None:
    for id_, dialogue in FRESH.items():
        bad = MEMORIES[id_]["bad"]
        for row in bad:
            assert problems_of(dialogue, row["memory"]) == row["problems"], (id_, row["memory"])
            assert row["problems"]
        s = score(dialogue, [row["memory"] for row in bad])
        assert s.with_problem == sum(row["problems"] != ["unsupported"] for row in bad), id_
        assert s.supported == sum(not {"assistant", "speaker", "stale", "unsupported"} & set(row["problems"])
                                  for row in bad), id_  # a wrong claim is never counted as a fact
        for wrong in dialogue.wrong:
            assert any(wrong.pattern.matches(row["memory"]) for row in bad), (id_, wrong.why)


def test_rescoring_a_report_on_the_fresh_split_gives_it_its_own_row(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ideal = {"safety-peanuts": ["Carol is allergic to peanuts"], **{id_: MEMORIES[id_]["ideal"] for id_ in FRESH}}
    rows = [{"id": id_, "memories": memories, "calls": 1, "tokens": 10, "seconds": 0.5}
            for id_, memories in ideal.items()]
    report = tmp_path / "mem0.json"
    report.write_text(json.dumps({"lib": "mem0", "dialogues": rows}), encoding="utf-8")
    assert parser().parse_args(["--lib", "mem0", "--split", "fresh"]).split == "fresh"

    assert main(["--rescore", str(report), "--split", "fresh", "--output", str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert out["lib"] == "mem0" and set(out) == {"lib", "all", "fresh", "dialogues"}  # peanuts is not fresh
    assert out["fresh"]["dialogues"] == 15 and out["fresh"]["recall"] == out["fresh"]["precision"] == 1.0
    assert out["fresh"]["safety_recall"] == 1.0 and out["fresh"]["hygiene_share"] == 0.0
    assert "| fresh | 15 |" in capsys.readouterr().out
