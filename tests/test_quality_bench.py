"""The memory-quality benchmark (benchmark/quality): its set, its keyword scorer on known
memories, and a run through the real pipeline against the scripted LLM server."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from benchmark.quality.run import main, rescore, run, table
from benchmark.quality.score import Pattern, hygiene, load, score

from conftest import DIM
from openai_server import OpenAITestServer, prompt_of

EXTRACT = "Read the conversation below"
RECONCILE = "long-term memory consistent"
DIALOGUES = {d.id: d for d in load()}


def test_the_set_holds_what_it_promises() -> None:
    short = [d for d in DIALOGUES.values() if "long" not in d.topics]
    facts = [f for d in DIALOGUES.values() for f in d.facts if not f.optional]
    assert len(short) >= 40 and len(DIALOGUES) - len(short) >= 3
    assert len(facts) >= 120 and sum(f.safety for f in facts) >= 25 and sum(f.time for f in facts) >= 8
    topics = Counter(t for d in DIALOGUES.values() for t in d.topics)
    assert all(topics[t] >= 4 for t in ("safety", "people", "names", "time", "update", "assistant", "speakers",
                                        "smalltalk"))
    assert {d.split for d in DIALOGUES.values()} == {"tune", "heldout", "fresh", "fresh2", "fresh3", "fresh4", "fresh5",
                                                     "fresh6", "fresh7", "fresh8", "fresh9", "fresh10",
                                                     "fresh11", "fresh12", "fresh13", "fresh14", "fresh15",
                                                     "fresh16", "fresh17", "fresh18", "fresh19",
                                                     "fresh20", "fresh21", "fresh22", "fresh23", "fresh24",
                                                     "fresh25", "fresh26", "fresh27", "fresh28", "fresh29",
                                                     "fresh30", "fresh31", "fresh32", "fresh33", "fresh34", "fresh35",
                                                     "fresh36"}
    assert sum(d.split == "heldout" for d in DIALOGUES.values()) >= 10
    assert sum(d.split == "fresh" for d in DIALOGUES.values()) >= 15  # tests/test_quality_fresh.py checks its gold
    assert sum(d.split == "fresh2" for d in DIALOGUES.values()) >= 20  # and this part's too
    assert sum(d.split == "fresh3" for d in DIALOGUES.values()) >= 16  # and this one's
    assert sum(d.split == "fresh4" for d in DIALOGUES.values()) >= 16  # and the fourth's
    assert sum(d.split == "fresh5" for d in DIALOGUES.values()) >= 16  # and the fifth's
    assert sum(d.split == "fresh6" for d in DIALOGUES.values()) >= 16  # and the sixth's
    assert sum(d.split == "fresh7" for d in DIALOGUES.values()) >= 16  # and the seventh's
    assert sum(d.split == "fresh8" for d in DIALOGUES.values()) >= 16  # and the eighth's
    assert sum(d.split == "fresh9" for d in DIALOGUES.values()) >= 16  # and the ninth's
    assert sum(d.split == "fresh10" for d in DIALOGUES.values()) >= 12  # and the tenth's
    assert sum(d.split == "fresh11" for d in DIALOGUES.values()) >= 14  # and the eleventh's
    assert sum(d.split == "fresh12" for d in DIALOGUES.values()) >= 12  # and the twelfth's
    assert sum(d.split == "fresh13" for d in DIALOGUES.values()) >= 10  # and the thirteenth's
    assert sum(d.split == "fresh14" for d in DIALOGUES.values()) >= 12  # and the fourteenth's
    assert sum(d.split == "fresh15" for d in DIALOGUES.values()) >= 12  # and the fifteenth's
    assert sum(d.split == "fresh16" for d in DIALOGUES.values()) >= 12  # and the sixteenth's
    assert sum(d.split == "fresh17" for d in DIALOGUES.values()) >= 12  # and the seventeenth's
    assert sum(d.split == "fresh18" for d in DIALOGUES.values()) >= 12  # and the eighteenth's
    assert sum(d.split == "fresh19" for d in DIALOGUES.values()) >= 12  # and the nineteenth's
    assert sum(d.split == "fresh20" for d in DIALOGUES.values()) >= 12  # and the twentieth's
    assert sum(d.split == "fresh21" for d in DIALOGUES.values()) >= 12  # and the twenty-first's
    assert sum(d.split == "fresh22" for d in DIALOGUES.values()) >= 12  # and the twenty-second's
    assert sum(d.split == "fresh23" for d in DIALOGUES.values()) >= 12  # and the twenty-third's
    assert sum(d.split == "fresh24" for d in DIALOGUES.values()) >= 12  # and the twenty-fourth's
    assert sum(d.split == "fresh25" for d in DIALOGUES.values()) >= 12  # and the twenty-fifth's
    assert sum(d.split == "fresh26" for d in DIALOGUES.values()) >= 12  # and the twenty-sixth's
    assert sum(d.split == "fresh27" for d in DIALOGUES.values()) >= 12  # and the twenty-seventh's
    assert sum(d.split == "fresh28" for d in DIALOGUES.values()) >= 12  # and the twenty-eighth's
    assert sum(d.split == "fresh29" for d in DIALOGUES.values()) >= 12  # and the twenty-ninth's
    assert sum(d.split == "fresh30" for d in DIALOGUES.values()) >= 12  # and the thirtieth's
    assert sum(d.split == "fresh31" for d in DIALOGUES.values()) >= 12  # and the thirty-first's
    assert sum(d.split == "fresh32" for d in DIALOGUES.values()) >= 12  # and the thirty-second's
    assert sum(d.split == "fresh33" for d in DIALOGUES.values()) >= 12  # and the thirty-third's
    assert sum(d.split == "fresh34" for d in DIALOGUES.values()) >= 12  # and the thirty-fourth's
    assert sum(d.split == "fresh35" for d in DIALOGUES.values()) >= 12  # and the thirty-fifth's
    assert sum(d.split == "fresh36" for d in DIALOGUES.values()) >= 12  # and the thirty-sixth's
    assert all(not d.facts for d in DIALOGUES.values() if "smalltalk" in d.topics)
    assert all(len(d.sessions) >= 2 for d in DIALOGUES.values() if "update" in d.topics and d.wrong
               and any(w.why == "stale" for w in d.wrong) and d.id != "update-negation")
    assert all(f.pattern.groups and all(f.pattern.groups) for d in DIALOGUES.values() for f in d.facts)


def test_a_pattern_matches_whole_words_prefixes_and_phrases_case_folded() -> None:
    allergy = Pattern.of({"k": ["peanut*", "allerg*"]})
    assert allergy.matches("CAROL is allergic to Peanuts")
    assert allergy.matches("Carol's peanut allergy")
    assert not allergy.matches("Carol is nonallergic to peanuts")  # a prefix starts a word
    assert not allergy.matches("Carol is allergic to cats")  # every group
    seat = Pattern.of({"k": ["window seat|aisle"]})
    assert seat.matches("Alice takes the window seat") and not seat.matches("Alice likes a seat by the window")
    dated = Pattern.of({"k": ["berlin", "april|2024 04"]})
    assert dated.matches("Alice moved to Berlin on 2024-04-26") and not dated.matches("Alice moved to Berlin")
    stale = Pattern.of({"k": ["vegetarian"], "none": ["not", "formerly", "stop*"]})
    assert stale.matches("Dan is vegetarian")
    assert not stale.matches("Dan is not vegetarian") and not stale.matches("Dan stopped being vegetarian")
    dose = Pattern.of({"k": ["atorvastatin", "40"]})  # a number is a word even when a unit sticks to it
    assert dose.matches("Victor takes atorvastatin 40mg daily") and dose.matches("Victor takes 40 mg of atorvastatin")
    assert not dose.matches("Victor takes atorvastatin 400mg") and Pattern.of({"k": ["40mg"]}).matches("40 mg")
    # a number spelled out is the number (fresh15 says its doses in words: "Nadolol, forty milligrams")
    assert dose.matches("Victor takes atorvastatin, forty milligrams") and not dose.matches("forty-four mg atorvastatin")
    assert Pattern.of({"k": ["metformin", "1000"]}).matches("Metformin, a thousand milligrams twice a day")
    assert Pattern.of({"k": ["weigh*", "142"]}).matches("Lerato weighs a hundred and forty-two kilos")
    assert Pattern.of({"k": ["follitropin", "225"]}).matches("follitropin, two hundred and twenty-five units")
    assert Pattern.of({"k": ["sodium", "1500"]}).matches("under fifteen hundred milligrams of sodium")
    assert Pattern.of({"k": ["12 and a half"]}).matches("down to twelve and a half")
    assert Pattern.of({"k": ["one to one*", "wednesday*"]}).matches("one-to-ones every Wednesday")  # "one" alone stays
    assert Pattern.of({"k": ["29", "2 metres"]}).matches("twenty-nine, two metres tall")  # two numbers, not 31
    smoke = Pattern.of({"k": ["smok*", "1 may|may 1|1st of may"]})  # a day of a month in words
    assert smoke.matches("Kemal quit smoking on the first of May") and smoke.matches("quit smoking May first")
    assert Pattern.of({"k": ["21st of june"]}).matches("on the twenty-first of June")
    assert not smoke.matches("Kemal quit smoking on the first day, in May")
    # a `*` in the middle of a phrase is a prefix too (it was dropped there: "stands up slowly" missed)
    assert Pattern.of({"k": ["stand* up slowly"]}).matches("Ana stands up slowly")
    # a decimal's digits after the point match only as its part: "5 mg" is not in "2.5 mg"
    assert Pattern.of({"k": ["2 5|2.5"]}).matches("bisoprolol 2.5mg") and Pattern.of({"k": ["2.5"]}).matches("2 5")
    assert not Pattern.of({"k": ["5"]}).matches("bisoprolol 2.5 mg")
    assert not Pattern.of({"k": ["5 mg"]}).matches("2.5 mg")


def test_hygiene_finds_first_person_leading_pronouns_and_undated_relative_times() -> None:
    assert hygiene("I always take the window seat") == ["first_person"]
    assert hygiene("Alice walks my dog") == ["first_person"]
    assert hygiene("She moved to Berlin last week") == ["leading_pronoun", "relative_time"]
    assert hygiene("Alice moved to Berlin last week (22-28 April 2024)") == []
    assert hygiene("Alice moved to Berlin two weeks ago") == ["relative_time"]
    assert hygiene("Alice is Iranian and likes Myanmar") == []  # words, not letters
    assert hygiene("Tom works shifts at the mine") == []  # the pit, not "mine" (fresh28)
    assert hygiene("The blue car is mine") == ["first_person"]
    assert hygiene("Ana has type I diabetes, i.e. no insulin of her own") == []  # no speaker's "I"
    # a time counted from when it was said, but not a length of time ("in three days" as a rate)
    assert hygiene("Ana flies to Marseille in three weeks") == ["relative_time"]
    assert hygiene("Ana flew to Marseille ten days ago") == ["relative_time"]
    assert hygiene("Ana flies in twelve days from now") == ["relative_time"]
    # a fortnight is two weeks (the fresh30 writer: "a fortnight ago" passed where "two weeks ago" did not)
    for said in ("Ana flew to Marseille a fortnight ago", "Ana flies in a fortnight", "Ana flew last fortnight"):
        assert hygiene(said) == ["relative_time"]
    assert hygiene("Ana flies to Marseille in three weeks (on 3 May 2026)") == []
    assert hygiene("Ana rings the nurse if she puts on 2 kilos in three days") == []
    assert hygiene("Ana hasn't smoked in ten weeks") == []


def test_scores_known_memories() -> None:
    peanuts = score(DIALOGUES["safety-peanuts"], [
        "Carol is allergic to peanuts", "I adopted a greyhound called Pixel", "She works from home on Fridays",
        "Carol went to the beach last week", "Carol likes jazz"])
    assert (peanuts.facts, peanuts.recalled, peanuts.safety, peanuts.safety_recalled) == (3, 3, 1, 1)
    assert peanuts.memories == 5 and peanuts.supported == 4  # jazz was never said
    assert peanuts.hygiene == {"first_person": 1, "leading_pronoun": 1, "relative_time": 1}
    assert peanuts.with_problem == 3 and peanuts.missed == []

    missed = score(DIALOGUES["safety-peanuts"], ["Carol adopted a greyhound"])
    assert (missed.recalled, missed.safety_recalled) == (1, 0) and missed.missed == ["safety-peanuts#0",
                                                                                     "safety-peanuts#2"]

    veg = score(DIALOGUES["update-vegetarian"], ["Dan has been vegetarian for ten years",
                                                 "Dan is no longer vegetarian and eats fish again",
                                                 "Dan was low on iron"])
    assert veg.wrong["stale"] == 1 and veg.recalled == veg.facts == 3 and veg.supported == 2

    museums = score(DIALOGUES["assistant-museums"], ["Olivia will visit the Gulbenkian Museum",
                                                     "Olivia is going to Lisbon in May with her sister"])
    assert museums.wrong["assistant"] == 1 and museums.supported == 1

    siblings = score(DIALOGUES["speakers-siblings"], ["Alice is a chef at a ramen place",
                                                      "Bob is a chef and Alice's brother"])
    assert siblings.wrong["speaker"] == 1 and siblings.supported == 1

    small = score(DIALOGUES["smalltalk-weather"], ["Ivy thinks the weather is nice"])
    assert small.facts == 0 and small.memories == 1 and small.supported == 0


def test_a_childs_fact_given_to_the_parent_is_caught() -> None:
    """A fact with `of` (whom it is about) is not recalled by a memory giving it to another person of the dialogue,
    and that memory is another's fact stored as theirs (fresh34: a mother writing for her son, "Anahit has Williams
    syndrome", "Anahit has Kiwi as an allergy")."""
    williams = DIALOGUES["fresh34-people-williams"]
    swapped = score(williams, ["Anahit has Williams syndrome.", "Anahit has Kiwi as an allergy."])
    facts = {"fresh34-people-williams#2", "fresh34-people-williams#23"}  # Williams syndrome, the kiwi allergy
    assert swapped.wrong["speaker"] == 2 and swapped.supported == 0 and swapped.recalled == 0
    assert facts <= set(swapped.missed)
    right = score(williams, ["Anahit's son Davit has Williams syndrome.", "Davit is allergic to kiwi."])
    assert right.wrong["speaker"] == 0 and right.supported == 2 and not facts & set(right.missed)
    # naming no one is a wording matter (hygiene), not a swap; nor is a fact without `of`, whoever it names
    unnamed = score(williams, ["Has Williams syndrome.", "Anahit's husband Aram bakes lavash."])
    assert unnamed.wrong["speaker"] == 0 and unnamed.supported == 2
    assert "fresh34-people-williams#2" not in unnamed.missed


async def test_the_run_drives_the_pipeline_session_by_session(tmp_path: Path, server: OpenAITestServer) -> None:
    def extracted(*texts: str) -> dict[str, object]:
        return {"memories": [{"content": t, "kind": "fact", "time": None, "sources": [0], "importance": 0.5}
                             for t in texts]}

    server.script([EXTRACT, "I moved to Berlin last week"],
                  extracted("I moved to Berlin last week", "Alice starts a job at a bakery"))
    server.script([EXTRACT, "vegetarian for ten years"], extracted("Dan is vegetarian", "Dan likes risotto"))
    server.script([EXTRACT, "not vegetarian any more"], extracted("Dan eats fish and chicken again",
                                                                  "Dan was low on iron"))
    def reconcile(body: dict[str, object]) -> dict[str, object]:
        found = re.search(r"^(\d+)\. \[[^\]]+\] Dan is vegetarian$", prompt_of(body), re.M)
        assert found is not None
        stored = int(found.group(1))
        return {"decisions": [{"candidate": 0, "action": "UPDATE", "id": stored,
                               "text": "Dan is no longer vegetarian; he eats fish again"},
                              {"candidate": 1, "action": "ADD"}]}

    server.script(RECONCILE, reconcile)
    llm = {"base_url": server.base_url, "api_key": "k", "model": "test-model", "timeout": 5}
    report = await run([DIALOGUES["time-moved"], DIALOGUES["update-vegetarian"]],
                       {"working_dir": tmp_path / "wd", "embedding": {"backend": "hash", "dimensions": DIM},
                        "llm": llm})

    moved, veg = report["dialogues"]
    assert sorted(moved["memories"]) == ["Alice moved to Berlin last week (22-28 April 2024)",
                                         "Alice starts a job at a bakery"]  # "I" named, "last week" dated
    assert moved["missed"] == ["time-moved#3"] and moved["problems"] == [] and moved["calls"] == 1
    assert sorted(veg["memories"]) == ["Dan is no longer vegetarian; he eats fish again",
                                       # no memory held it: the ending kept as said
                                       "Dan is not vegetarian any more, Dan started eating fish and chicken again.",
                                       "Dan likes risotto", "Dan was low on iron"]
    assert veg["calls"] == 3 and veg["problems"] == []  # two extractions, a reconcile; stale replaced
    # what each session wrote: the vegetarian memory added, then updated in place (same id)
    first, second = veg["changes"]
    (was,) = [a for a in first["added"] if a.endswith(" Dan is vegetarian")]
    assert second["updated"] == [was[:9] + "Dan is no longer vegetarian; he eats fish again"]
    # "for ten years" (a number said in words) no memory held: kept as said in session 1, and ended in session 2
    (kept,) = [a for a in first["added"] if a.endswith(" Dan has been vegetarian for ten years.")]
    assert [c["session"] for c in veg["changes"]] == [1, 2] and second["deleted"] == [kept]
    assert report["all"]["facts"] == 7 and report["all"]["recall"] == round(6 / 7, 3)
    assert report["all"]["calls_per_dialogue"] == 2.0 and report["all"]["tokens_per_dialogue"] > 0
    assert report["tune"]["dialogues"] == 2 and "heldout" not in report
    assert "| all | 2 | 7 |" in table(report)
    assert rescore(json.loads(json.dumps(report)), list(DIALOGUES.values()))["all"] == report["all"]


async def test_a_dialogue_whose_summary_fails_is_scored_as_stored_and_the_run_goes_on(
        tmp_path: Path, server: OpenAITestServer) -> None:
    # A 70-minute run against a loaded local model ended at its first timed-out call, with no row
    # written: a failed summary is now the dialogue's error, its facts missed, and the next runs.
    server.script([EXTRACT, "I moved to Berlin last week"], {"error": "down"}, status=500)
    server.script([EXTRACT, "vegetarian for ten years"], {"memories": [
        {"content": "Dan is vegetarian", "kind": "fact", "time": None, "sources": [0], "importance": 0.5}]})
    server.script([EXTRACT, "not vegetarian any more"], {"memories": []})
    server.script(RECONCILE, {"decisions": []})
    llm = {"base_url": server.base_url, "api_key": "k", "model": "test-model", "timeout": 5, "max_retries": 0}
    report = await run([DIALOGUES["time-moved"], DIALOGUES["update-vegetarian"]],
                       {"working_dir": tmp_path / "wd", "embedding": {"backend": "hash", "dimensions": DIM},
                        "llm": llm}, tmp_path / "report.json")

    moved, veg = report["dialogues"]
    assert moved["memories"] == [] and "session 1" in moved["error"] and "500" in moved["error"]
    assert moved["missed"] and "error" not in veg and "vegetarian" in " ".join(veg["memories"])
    assert report["all"]["dialogues"] == 2 and report["all"]["failed"] == 1
    assert table(report).splitlines()[2].endswith("| 1 |")  # the failures column, last
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["all"]["failed"] == 1


def test_replies_recorded_once_answer_the_same_requests_again_with_no_model(
        tmp_path: Path, server: OpenAITestServer, capsys: object) -> None:
    # a 45-minute run of the local model, recorded, lets code that changes only what is done with
    # the replies be measured again in seconds, on exactly the replies the model gave
    server.script([EXTRACT, "I moved to Berlin last week"], {"memories": [
        {"content": "I moved to Berlin last week", "kind": "fact", "time": None, "sources": [0], "importance": 0.5}]})
    replies, first, second = tmp_path / "replies.jsonl", tmp_path / "first.json", tmp_path / "second.json"
    common = ["--ids", "time-moved", "--embedding", "hash", "--model", "test-model", "--api-key", "k",
              "--replies", str(replies)]
    assert main([*common, "--base-url", server.base_url, "--output", str(first)]) == 0
    sent = len(server.requests)
    assert sent >= 1 and len(replies.read_text(encoding="utf-8").splitlines()) == sent

    assert main([*common, "--offline", "--output", str(second)]) == 0  # no endpoint at all
    assert len(server.requests) == sent  # nothing went to the model
    was, now = (json.loads(f.read_text(encoding="utf-8")) for f in (first, second))
    assert now["dialogues"][0]["memories"] == was["dialogues"][0]["memories"] == [
        "Alice moved to Berlin last week (22-28 April 2024)"]
    assert now["all"]["calls_per_dialogue"] == was["all"]["calls_per_dialogue"] == 1
    assert now["all"]["tokens_per_dialogue"] == was["all"]["tokens_per_dialogue"] > 0

    # offline, a request never recorded fails its session: scored as such, not sent anywhere
    assert main([*common[:-2], "--replies", str(tmp_path / "none.jsonl"), "--offline", "--output", str(second)]) == 0
    row = json.loads(second.read_text(encoding="utf-8"))["dialogues"][0]
    assert row["memories"] == [] and "404" in row["error"] and len(server.requests) == sent
