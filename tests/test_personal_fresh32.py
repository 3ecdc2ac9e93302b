"""What reading fresh32 (the memory-quality set's part measured once before anyone tuned on it) taught the personal
summarizer's code, through the public helpers that do it, on the dialogues' own words: what is ruled out, kept with
its "no"."""

from __future__ import annotations

from datetime import datetime, timezone

from reme.memory.personal import (Transcript, declined, ending, kept_apart, said_whole, to_messages, unheld_avoided,
                                   unheld_refusals)


def transcript(*turns: tuple[str, str]) -> Transcript:
    return Transcript.of(to_messages([{"role": "assistant", "content": text} if who == "assistant" else
                                      {"role": "user", "name": who, "content": text} for who, text in turns]),
                         datetime(2026, 6, 12, 9, 0, tzinfo=timezone.utc))


def test_a_no_before_a_colon_is_what_is_ruled_out_not_a_lead_in() -> None:
    # fresh32: "No estrogen: the pill sends triglycerides up, so I have a copper coil." was kept as "The pill sends
    # triglycerides up, so Mohira has a copper coil.": the estrogen ruled out was lost
    assert said_whole("No estrogen: the pill sends triglycerides up, so I have a copper coil.") == \
        "No estrogen: the pill sends triglycerides up, so I have a copper coil."
    assert said_whole("Funny thing: I met her at the pool.") == "I met her at the pool."


def test_what_to_avoid_listed_before_a_colon_is_kept_as_what_to_avoid() -> None:
    # fresh32: "Soil, compost, hay, rotting leaves, mulch and building dust: anything full of mould spores." answered
    # "what must you avoid?" and was kept without saying it is to be avoided
    talk = transcript(("assistant", "Thank you, Sarita. Bishnu, what must you avoid?"),
                      ("Bishnu", "Soil, compost, hay, rotting leaves, mulch and building dust: anything full of mould "
                                 "spores. In January our neighbour knocked down a wall."))
    assert unheld_avoided(talk, "Bishnu", []) == [(1, "Bishnu must avoid: Soil, compost, hay, rotting leaves, mulch "
                                                      "and building dust: anything full of mould spores.")]
    assert unheld_avoided(talk, "Bishnu", ["Bishnu must avoid soil, compost and hay."]) == []


def test_a_no_to_an_activity_offered_is_kept_with_the_activity() -> None:
    # fresh32: "Would you like some tips on vaping?" -- "No. For me, vaping is smoking: ..." was kept without its "No";
    # "Gardening can be relaxing. Would you like to grow vegetables ...?" -- "No. Dr Shrestha banned gardening ..."
    vaping = transcript(("assistant", "Many people find an e-cigarette helps with the cravings. Would you like some "
                                      "tips on vaping?"),
                        ("Arben", "No. For me, vaping is smoking: any nicotine squeezes the arteries. Dr Berisha was "
                                  "very clear."))
    assert unheld_refusals(vaping, "Arben", []) == [
        (1, "No vaping for Arben: for me, vaping is smoking: any nicotine squeezes the arteries.")]
    garden = transcript(("assistant", "Gardening can be relaxing. Would you like to grow vegetables on your roof "
                                      "terrace?"),
                        ("Bishnu", "No. Dr Shrestha banned gardening completely: soil is full of fungus."))
    assert unheld_refusals(garden, "Bishnu", []) == [
        (1, "No gardening for Bishnu: Dr Shrestha banned gardening completely: soil is full of fungus.")]
    assert unheld_refusals(garden, "Bishnu", ["Bishnu must not do any gardening."]) == []
    assert unheld_refusals(transcript(("assistant", "Would you like some tips on vaping?"),
                                      ("Arben", "Yes. For me, vaping helps.")), "Arben", []) == []


def test_a_boat_sold_a_value_fallen_and_a_dose_gone_up_end_what_they_change() -> None:
    # fresh32: "I sold the boat in May" left "Efisio still takes his little boat out at dawn"; "My haemoglobin fell to
    # 8.6" left "... his haemoglobin is still only 9.8"; "My sirolimus level was low, so three weeks ago the dose went
    # up to 3 milligrams" left "Sirolimus, Rapamune, 2 milligrams every morning."
    assert ending("I sold the boat in May. The cold mornings at sea kept setting off my attacks.",
                  "Efisio still takes Efisio's little boat out at dawn for sea bream.", "Efisio") == {"boat"}
    both = "Efisio has four rituximab infusions in the autumn, but his haemoglobin is still only 9.8."
    gone = ending("My haemoglobin fell to 8.6 in April, and Dr Melis sent me to Dr Zedda.", both, "Efisio")
    assert kept_apart(both, gone, {"efisio"}) == "Efisio has four rituximab infusions in the autumn."
    line = "My sirolimus level was low, so three weeks ago the dose went up to 3 milligrams."
    assert ending(line, "Sirolimus, Rapamune, 2 milligrams every morning.", "Ilze") == {"sirol"}
    assert ending(line, "Ilze takes grapefruit juice every morning.", "Ilze") == set()
    assert ending(line, "Ilze takes sirolimus, 3 milligrams every morning.", "Ilze") == set()


def test_what_the_assistant_offered_to_do_and_was_told_no_is_not_the_users() -> None:
    # fresh32: "For your next blood test, shall I remind you to ask for a numbing cream ...?" -- "No! A numbing cream is
    # EMLA, exactly what I can't have." was stored as "Senait will be reminded to ask for a numbing cream ..."
    offer = ("assistant", "For your next blood test, shall I remind you to ask for a numbing cream, so the needle "
                          "hurts less?")
    no = transcript(offer, ("Senait", "No! A numbing cream is EMLA, exactly what I can't have."))
    kept = "Senait will be reminded to ask for a numbing cream for the next blood test."
    assert "reminded" in declined(kept, no.messages)
    assert declined(kept, transcript(offer, ("Senait", "Yes please, that would help.")).messages) == []
