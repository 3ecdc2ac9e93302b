"""What reading fresh32 (the memory-quality set's part measured once before anyone tuned on it) taught the personal
summarizer's code, through the public helpers that do it, on the dialogues' own words: what is ruled out, kept with
its "no"."""

from __future__ import annotations

from datetime import datetime, timezone

from reme.memory.personal import (Transcript, declined, ending, kept_apart, said_whole, to_messages, unheld_avoided,
                                   subject_named, unheld_health, unheld_refusals)
from reme.memory.wording import anchor_times


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


def test_a_when_answered_in_a_few_words_stays_with_the_sentence_after_it() -> None:
    # fresh32: "When was it found?" -- "In 2009, at the dentist. He rubbed a benzocaine gel on my gum ..." kept the gel
    # without its year, and the year alone went to the repair ("It found was in 2009, ...") and was dropped
    said = ("In 2009, at the dentist. He rubbed a benzocaine gel on my gum before a filling, and within half an hour "
            "I was grey and fainting. At Orotta hospital my methaemoglobin was 38 percent.")
    talk = transcript(("assistant", "Thank you for explaining. When was it found?"), ("Senait", said))
    held = ["At Orotta hospital Senait's methaemoglobin was 38 percent."]
    assert unheld_health(talk, held) == [(1, said[:said.index(" At Orotta")])]
    # nothing joined when the few words hold no time, or the sentence after them no health word
    assert unheld_health(transcript(("Senait", "At the dentist. He rubbed a benzocaine gel on my gum.")), []) == [
        (0, "He rubbed a benzocaine gel on my gum.")]
    kind = transcript(("Senait", "In 2009, at the dentist. He was very kind. I take folic acid, 5 milligrams a day."))
    assert unheld_health(kind, []) == [(0, "I take folic acid, 5 milligrams a day.")]


def test_a_value_measured_again_ends_the_value_before() -> None:
    # fresh32: "My haemoglobin was 12.1 at the check on the 9th of November" left "Efisio's haemoglobin fell to 8.6 in
    # April 2026, and Dr Melis sent Efisio to Dr Zedda ..." stated as it was
    stored = ("Efisio's haemoglobin fell to 8.6 in April 2026, and Dr Melis sent Efisio to Dr Zedda at the Brotzu "
              "hospital, who runs a clinic for this disease.")
    gone = ending("Much better. My haemoglobin was 12.1 at the check on the 9th of November, the best in two years.",
                  stored, "Efisio")
    assert kept_apart(stored, gone, {"efisio"}) == ("Dr Melis sent Efisio to Dr Zedda at the Brotzu hospital, who runs "
                                                    "a clinic for this disease.")
    assert "haemo" in ending("My haemoglobin is 12.1 now.", stored, "Efisio")
    # a value of the past, or the same value, ends nothing
    assert ending("When I was diagnosed in 2019 my haemoglobin was 6.", stored, "Efisio") == set()
    assert ending("My haemoglobin was 8.6 at the check on Monday.", stored, "Efisio") == set()
    assert ending("My yearly bronchoscopy is two weeks today.", "Bo has a bronchoscopy on 3 May, once a year.",
                  "Bo") == set()


def test_a_wont_is_no_past_tense_for_the_month_said() -> None:
    # fresh32: "And I'm off to Germany in August, ..., so I won't be around much." (said in July 2026) was dated August
    # 2025: the "won" of "won't" read as the past of "win"
    said = datetime(2026, 7, 10, 9, 0, tzinfo=timezone.utc)
    line = "And I'm off to Germany in August, driving lorries out of Regensburg, so I won't be around much."
    assert "August 2026" in anchor_times("Marián is off to Germany in August, so Marián won't be around much.", said,
                                         [line])
    assert "May 2026" in anchor_times("Marián won the race in May.", said, ["I won the race in May."])


def test_a_blood_pressure_changed_changes_no_blood_test() -> None:
    # fresh32: "my blood pressure went up to 170" cut "..., and have a tyrosine blood test every three months" (the two
    # share "blood" alone)
    stored = ("Ľubomír has to eat less protein, small portions of meat and cheese, and have a tyrosine blood test "
              "every three months.")
    assert ending("The etoricoxib is stopped: my blood pressure went up to 170.", stored, "Ľubomír") == set()
    assert "press" in ending("My blood pressure went up to 170.", "Ľubomír's blood pressure is 130.", "Ľubomír")
    assert "press" in ending("My blood pressure is 170 now.", "Ľubomír's blood pressure is 130.", "Ľubomír")


def test_a_model_memory_starting_with_it_names_it_though_the_model_changed_the_i() -> None:
    # fresh32: "Have you asked about fenofibrate? ..." -- "It does nothing for FCS: it works through the very enzyme I
    # don't have. Dr Akhmedov said no." was kept by the model as "It does nothing for FCS: it works through the very
    # enzyme she doesn't have. Dr Akhmedov said no." (the line not word for word: its "It" stayed unnamed)
    talk = transcript(("assistant", "Have you asked about fenofibrate? It lowers triglycerides in many people."),
                      ("Mohira", "It does nothing for FCS: it works through the very enzyme I don't have. Dr Akhmedov "
                                 "said no."))
    kept = "It does nothing for FCS: it works through the very enzyme she doesn't have. Dr Akhmedov said no."
    assert subject_named(kept, talk, [1]) == ("Fenofibrate does nothing for FCS: it works through the very enzyme "
                                              "she doesn't have. Dr Akhmedov said no.")
    # not a sentence the line says otherwise
    assert subject_named("It does a lot for FCS: it works well for her.", talk, [1]) == \
        "It does a lot for FCS: it works well for her."
