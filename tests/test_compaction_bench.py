"""The compaction-quality benchmark (benchmark/compaction): its set, its keyword scorer on known
summaries, and a run through the real compaction against the scripted LLM server."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark.compaction.run import COMPACT, extractive_reply, rescore, run, table
from benchmark.compaction.score import load, score

from conftest import DIM
from openai_server import OpenAITestServer

TRAJECTORIES = {t.id: t for t in load()}


def test_the_set_holds_what_it_promises() -> None:
    assert len(TRAJECTORIES) >= 12 and sum(t.split == "heldout" for t in TRAJECTORIES.values()) >= 4
    for t in TRAJECTORIES.values():
        assert t.goal and t.constraints and t.decisions and t.false, t.id
        assert t.stages[0][0]["role"] == "user"
    assert sum(len(t.stages) > 1 and bool(t.stale) for t in TRAJECTORIES.values()) >= 3  # a changed value
    assert sum(any(m["role"] == "tool" for s in t.stages for m in s) for t in TRAJECTORIES.values()) >= 6
    for t in TRAJECTORIES.values():  # every tool result answers a call made before it, in its trajectory
        messages = [m for s in t.stages for m in s]
        ids = [c["id"] for m in messages for c in m.get("tool_calls") or []]
        assert len(ids) == len(set(ids)), t.id
        assert all(m["tool_call_id"] in ids for m in messages if m["role"] == "tool"), t.id


def test_scores_the_issue_s_summary_of_the_readme_loop() -> None:
    """What issue 28 quotes: the suggested museums as progress and decisions, a goal without
    Lisbon, May, the week or the sister."""
    bad = {"goal": "Find a hotel and plan a quiet day trip along the coast",
           "constraints": ["Hotel under 150 euros a night"],
           "progress": ["Visited the Gulbenkian Museum and the National Tile Museum", "Booked Convento do Salvador"],
           "decisions": ["Take tram 28 to Belem", "Avoid Sintra because it is crowded"]}
    s = score(TRAJECTORIES["travel-lisbon-readme"], bad)
    assert (s.goal, s.goal_kept) == (4, 0)
    assert (s.constraints, s.constraints_kept) == (8, 1)
    assert (s.decisions, s.decisions_kept) == (1, 1)
    assert s.false_progress == 2 and s.stale == 0  # the museums and tram 28; avoiding Sintra is right
    good = {"goal": "Plan a week in Lisbon in May for the user and their sister",
            "constraints": ["Only by train, never by plane; no night trains", "Hotel in Alfama or Baixa under 150 "
                            "euros a night, two separate beds, breakfast included", "No Sintra: too crowded"],
            "decisions": ["Book Hotel Convento do Salvador"],
            "next_steps": ["The assistant suggested the Gulbenkian Museum; the user has not decided"]}
    s = score(TRAJECTORIES["travel-lisbon-readme"], good)
    assert (s.goal_kept, s.constraints_kept, s.decisions_kept, s.false_progress) == (4, 8, 1, 0)


def test_a_changed_value_still_stated_is_stale() -> None:
    t = TRAJECTORIES["move-toronto-change"]
    assert score(t, {"goal": "Move to Toronto", "constraints": ["Arrive on August 20"]}).stale == 1
    moved = {"goal": "Move to Toronto", "constraints": ["Arrival moved from August 20 to September 3"]}
    assert score(t, moved).stale == 0


async def test_the_run_compacts_stage_by_stage_and_scores_the_last_summary(tmp_path: Path,
                                                                          server: OpenAITestServer) -> None:
    server.script([COMPACT, "Change of plans"], {
        "goal": "Move the family to Toronto", "constraints": ["3 bedrooms near High Park", "No cats: son allergic",
                                                              "Arrival on August 20"],
        "progress": ["Emailed Priya the relocation agent", "Looked at Etobicoke houses"]})
    server.script(COMPACT, extractive_reply)
    llm = {"base_url": server.base_url, "api_key": "k", "model": "test-model", "timeout": 5}
    report = await run([TRAJECTORIES["move-toronto-change"], TRAJECTORIES["laptop-linux"]],
                       {"working_dir": tmp_path / "wd", "embedding": {"backend": "hash", "dimensions": DIM},
                        "llm": llm})
    toronto, laptop = report["trajectories"]
    assert len(toronto["summaries"]) == 2 and toronto["calls"] == 2
    assert "Travel-Lite" not in json.dumps(toronto["summaries"])
    # the second stage builds on the first stage's summary
    assert "We're moving to Toronto" in json.dumps(server.chat_requests[1]["messages"])
    assert toronto["problems"] == ["move-toronto-change: false progress 'Looked at Etobicoke houses'",
                                   "move-toronto-change: stale 'Arrival on August 20'"]
    # the model's summary lost the new date: the check kept it in the user's words
    assert toronto["summaries"][-1]["constraints"][-1] == ('The user said: "Change of plans: our arrival moves to '
                                                          'September 3 because of my wife\'s visa."')
    # "Emailed Priya": only the assistant names Priya in the second stage (the extractive first
    # summary has her in its critical context, which backs nothing), so it is a suggestion
    assert toronto["summaries"][-1]["suggestions"] == ["Emailed Priya the relocation agent"]
    assert toronto["missed"] == ["move-toronto-change#constraints3", "move-toronto-change#decisions0",
                                 "move-toronto-change#decisions1"]
    assert laptop["calls"] == 1 and laptop["summaries"][0]["goal"].startswith("Help me pick a laptop")
    assert report["all"]["trajectories"] == 2 and report["heldout"]["stale"] == 1
    assert report["all"]["calls_per_compaction"] == 1.0 and report["all"]["tokens_per_compaction"] > 0
    assert "| all | 2 |" in table(report)
    assert rescore(json.loads(json.dumps(report)), list(TRAJECTORIES.values()))["all"] == report["all"]
