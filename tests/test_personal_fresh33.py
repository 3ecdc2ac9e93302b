"""What reading fresh33 (the memory-quality set's part measured once before anyone tuned on it) taught the personal
summarizer's code, through the public helpers that do it, on the dialogues' own words."""

from __future__ import annotations

from datetime import datetime, timezone

from reme import ReMe
from reme.memory.personal import (Transcript, declined, ending, health_left_behind, in_the_past, it_copied,
                                   kept_apart, led_in, misnamed, named_subject, named_thing, needs_before, restricted,
                                   revalued, said_whole, short_things, subject_named, to_messages, unheld_avoided,
                                   unheld_health, when_answered)
from reme.memory.wording import anchor_times

from openai_server import OpenAITestServer


def transcript(*turns: tuple[str, str]) -> Transcript:
    return Transcript.of(to_messages([{"role": "assistant", "content": text} if who == "assistant" else
                                      {"role": "user", "name": who, "content": text} for who, text in turns]),
                         datetime(2026, 4, 14, 20, 0, tzinfo=timezone.utc))


def test_a_when_answered_in_a_few_words_says_what_was_found() -> None:
    # fresh33: "When was it found?" -- "In 2003, when I was three." was kept as "In 2003, when Zineb was three.", and
    # fresh32's "In 2009, at the dentist.": the year kept, what was found in it not
    talk = transcript(("Zineb", "Salam. I'm Zineb Alaoui, twenty-six, from Fès. I present the night programme on Radio "
                                "Saïss, which suits me, because I have xeroderma pigmentosum, XP: my skin can't repair "
                                "the damage that daylight does to it."),
                      ("assistant", "Thank you for telling me. When was it found?"),
                      ("Zineb", "In 2003, when I was three. One afternoon on the beach at Saïdia, and my face "
                                "blistered for a week."))
    assert when_answered(talk, 2, "In 2003, when I was three.") == \
        "My xeroderma pigmentosum was found in 2003, when I was three."
    senait = transcript(("Senait", "I was born with methaemoglobinaemia, the inherited kind: an enzyme doesn't work "
                                   "in me."),
                        ("assistant", "Thank you for explaining. When was it found?"),
                        ("Senait", "In 2009, at the dentist. He rubbed a benzocaine gel on my gum."))
    assert when_answered(senait, 2, "In 2009, at the dentist. He rubbed a benzocaine gel on my gum.") == \
        "My methaemoglobinaemia was found in 2009, at the dentist. He rubbed a benzocaine gel on my gum."
    asked = transcript(("assistant", "When were you diagnosed?"), ("Bo", "In 2019, after a fall."))
    assert when_answered(asked, 1, "In 2019, after a fall.") == "I was diagnosed in 2019, after a fall."
    # not a sentence that says its own subject, nor an answer to another question, nor one later in the line
    assert when_answered(talk, 2, "One afternoon on the beach at Saïdia, and my face blistered for a week.") == \
        "One afternoon on the beach at Saïdia, and my face blistered for a week."
    own = transcript(("assistant", "When was it found?"), ("Bo", "In 2019 I was diagnosed by Dr Lee."))
    assert when_answered(own, 1, "In 2019 I was diagnosed by Dr Lee.") == "In 2019 I was diagnosed by Dr Lee."
    other = transcript(("assistant", "When is the wedding?"), ("Bo", "In June, at the lake."))
    assert when_answered(other, 1, "In June, at the lake.") == "In June, at the lake."


def test_the_one_i_did_stays_with_what_it_is_one_of() -> None:
    # fresh33: "I prick a blood spot card at home every month and post it to the lab. The one I did last Monday came
    # back at 610, ..." was kept as "The one Araceli did last Monday came back at 610": a result of nothing
    line = ("My tyrosine has to stay under 500. I prick a blood spot card at home every month and post it to the lab. "
            "The one I did last Monday came back at 610, so Dr Cáceres wants another a week today.")
    talk = transcript(("assistant", "How often are you checked?"), ("Araceli", line))
    said = "The one I did last Monday came back at 610, so Dr Cáceres wants another a week today."
    assert needs_before(said) and not needs_before("The one thing I miss is cheese.")
    assert led_in(talk, 1, said, said) == line[line.index("I prick"):]


def test_a_rule_before_a_colon_is_kept_with_its_no() -> None:
    # fresh33: "And no alcohol: if I drink and nod off without the machine, I don't wake up." was kept by the model as
    # "If Kurt drinks and nod off without the machine, Kurt doesn't wake up.": the rule itself lost
    said = "And no alcohol: if I drink and nod off without the machine, I don't wake up."
    assert said_whole(said) == "No alcohol: if I drink and nod off without the machine, I don't wake up."
    assert restricted(said) == ["alcohol"] and restricted("No worries: I will be there.") == []
    talk = transcript(("assistant", "Kurt, what must doctors know?"), ("Kurt", said))
    assert unheld_health(talk, ["If Kurt drinks and nods off without the machine, Kurt doesn't wake up."]) == \
        [(1, said_whole(said))]
    assert unheld_health(talk, ["Kurt must have no alcohol: if he drinks and nods off, he does not wake up."]) == []


def test_none_to_what_about_says_what_there_is_none_of() -> None:
    # fresh33: "What about naps?" -- "None without the ventilator, not even on the sofa." kept as said: none of what?
    talk = transcript(("assistant", "What about naps?"),
                      ("Kurt", "None without the ventilator, not even on the sofa. And no swimming underwater."))
    assert when_answered(talk, 1, "None without the ventilator, not even on the sofa.") == \
        "No naps without the ventilator, not even on the sofa."
    assert when_answered(transcript(("assistant", "Any allergies?"), ("Kurt", "None.")), 1, "None.") == "None."


def test_a_warning_that_the_drips_could_flood_the_lungs_is_a_health_fact() -> None:
    # fresh33: "That means the emergency department straight away, and they must be told it's capillary leak: they have
    # to be careful with the drips, because too much fluid during the attack floods my lungs when it comes back." was
    # counted as held by "Sreymom is a nurse in the emergency department at Calmette" (its one health word)
    line = ("It starts like a cold. Then I'm very thirsty and dizzy, and my face and hands go puffy. That means the "
            "emergency department straight away, and they must be told it's capillary leak: they have to be careful "
            "with the drips, because too much fluid during the attack floods my lungs when it comes back.")
    talk = transcript(("assistant", "What are the warning signs of an attack?"), ("Sophea", line))
    held = ["Sreymom is a nurse in the emergency department at Calmette.",
            "Sophea has IVIG through a drip once a month.", "Then Sophea is very thirsty and dizzy, and Sophea's face "
                                                            "and hands go puffy.",
            "In an attack fluid pours out of Sophea's blood into Sophea's body."]
    assert [sentence for _, sentence in unheld_health(talk, held)] == [line[line.index("That means"):]]


def test_a_new_job_said_with_now_ends_the_old_one() -> None:
    # fresh33: "And I've left the ferries: I'm a dispatcher in the ferry company's office now, ..." left "Kurt is a
    # deckhand on the Grand Harbour ferries."
    line = ("And I've left the ferries: I'm a dispatcher in the ferry company's office now, day shifts only, because "
            "the mask needs a proper night's sleep.")
    assert ending(line, "Kurt is a deckhand on the Grand Harbour ferries.", "Kurt") == {"deckh"}
    assert ending(line, "Kurt's brother Pawlu is a deckhand.", "Kurt") == set()


def test_a_dose_said_as_its_names_the_medicine_asked_about() -> None:
    # fresh33: "Any change to the desmopressin?" -- "Yes. I was still up all night passing water, so since the 12th of
    # May it's 0.2 milligrams at night and 0.1 in the morning." was kept with "it's": 0.2 milligrams of what?
    talk = transcript(("assistant", "Congratulations to you both! Any change to the desmopressin?"),
                      ("Yassine", "Yes. I was still up all night passing water, so since the 12th of May it's 0.2 "
                                  "milligrams at night and 0.1 in the morning."))
    kept = ("Yassine was still up all night passing water, so since the 12th of May 2026 it's 0.2 milligrams at night "
            "and 0.1 in the morning.")
    assert it_copied(kept, talk, [1]) == ("Yassine was still up all night passing water, so since the 12th of May 2026 "
                                          "the desmopressin is 0.2 milligrams at night and 0.1 in the morning.")
    assert it_copied("Since May it's warm at night.", talk, [1]) == "Since May it's warm at night."


def test_a_dose_said_in_hundreds_is_the_whole_number() -> None:
    # fresh33: "Dr Nghipandulwa raised the deferasirox to twelve hundred milligrams" made "deferasirox, 900 milligrams"
    # "deferasirox, 12 milligrams": a dose a hundred times too small
    stored = ("Iron piles up from all that blood, so Ndapewa takes deferasirox, 900 milligrams every morning on an "
              "empty stomach.")
    line = ("My ferritin came back at three thousand four hundred, so Dr Nghipandulwa raised the deferasirox to twelve "
            "hundred milligrams.")
    assert revalued(stored, line) == (stored.replace("900", "1200"), "900", "1200")
    assert "defer" in ending(line, stored, "Ndapewa")


def test_its_at_a_place_on_a_day_is_the_event_named_before() -> None:
    # fresh33: "I'm going to have a bone marrow transplant! Nangula was tested in July: ... It's at Groote Schuur in
    # Cape Town, on the 9th of November." kept the date with Nangula's test, the transplant not
    before = ("I'm going to have a bone marrow transplant! Nangula was tested in July: she's a full match, and she "
              "doesn't have DBA. ")
    assert named_thing(before, "It's at Groote Schuur in Cape Town, on the 9th of November.") == \
        "My transplant is at Groote Schuur in Cape Town, on the 9th of November."
    assert named_thing("We went to the wedding. ", "It's on the 3rd of May.") == "The wedding is on the 3rd of May."
    # not when two events are named, nor when "it" is the weather
    assert named_thing("The scan and the biopsy are booked. ", "It's on the 3rd of May.") == "It's on the 3rd of May."
    assert named_thing("I had the scan. ", "It's warm in Cape Town.") == "It's warm in Cape Town."


def test_a_medicine_ended_stays_where_it_is_given_before_something() -> None:
    # fresh33: "The prednisone is finished: I came off it in April" cut "so now they give Facundo prednisone and an
    # antihistamine first" from the contrast dye allergy: the premedication before a scan is no course of prednisone
    line = "Lots of changes. The prednisone is finished: I came off it in April, my sugar went back to normal."
    stored = ("Contrast dye for scans: in 2024 Facundo broke out in hives, so now they give Facundo prednisone and an "
              "antihistamine first.")
    assert ending(line, stored, "Facundo") == set()
    assert "predn" in ending(line, "Facundo is on prednisone, 20 milligrams every morning.", "Facundo")


def test_a_move_and_a_retirement_end_the_home_and_the_bus() -> None:
    # fresh33: "I retired from the buses in June ... And we've moved to Colonia del Sacramento" left "Facundo drives a
    # city bus in Montevideo, line 121." and "Facundo lives in the Cordón neighbourhood with his wife, Graciela."
    line = ("I retired from the buses in June; my back couldn't take the seat any more. And we've moved to Colonia del "
            "Sacramento, to be near our daughter Lucía and her twins.")
    assert ending(line, "Facundo drives a city bus in Montevideo, line 121.", "Facundo")
    assert ending(line, "Facundo lives in the Cordón neighbourhood with his wife, Graciela.", "Facundo")
    assert ending(line, "Facundo's son drives a taxi in Salto.", "Facundo") == set()
    assert ending("I love my garden.", "Facundo lives in the Cordón neighbourhood.", "Facundo") == set()


def test_a_cake_shaped_like_a_bus_is_no_past_tense() -> None:
    # fresh33: "Then his birthday, on the 30th of March: he wants a cake shaped like a bus." (said in February 2026) was
    # dated March 2025: "a cake shaped" read as a past tense
    line = "Then his birthday, on the 30th of March: he wants a cake shaped like a bus."
    said = datetime(2026, 2, 19, 8, 0, tzinfo=timezone.utc)
    assert "30th of March 2026" in anchor_times("Murad's birthday is on the 30th of March.", said, [line])
    assert "3rd of May 2025" in anchor_times("Murad had a cake on the 3rd of May.", said,
                                             ["The cake arrived on the 3rd of May."])


def test_an_allergy_asked_of_someone_is_theirs() -> None:
    # fresh33: "Does Murad have any allergies?" -- "Latex. In 2024 a dentist's glove made his lips swell. Me? Nothing."
    # was kept as "Leyla's allergies: Latex.": the mother's, who has none
    talk = transcript(("assistant", "Does Murad have any allergies?"),
                      ("Leyla", "Latex. In 2024 a dentist's glove made his lips swell. Me? Nothing."))
    assert unheld_avoided(talk, "Leyla", []) == [(1, "Murad's allergies: Latex.")]
    own = transcript(("assistant", "Any allergies?"), ("Leyla", "Latex. In 2024 a glove made my lips swell."))
    assert unheld_avoided(own, "Leyla", []) == [(1, "Leyla's allergies: Latex.")]


def test_a_pair_offered_is_what_the_sentence_before_names() -> None:
    # fresh33: "Compression stockings are good for people who stand at work. Shall I find a pair?" -- "No. Anything
    # tight or warm on my legs is a flare." was stored as "Tadej uses compression stockings to keep his legs warm."
    offer = ("assistant", "Compression stockings are good for people who stand at work. Shall I find a pair?")
    no = transcript(offer, ("Tadej", "No. Anything tight or warm on my legs is a flare. I'll stay in sandals."))
    kept = "Tadej Kovačič uses compression stockings to keep his legs warm."
    assert "compression" in declined(kept, no.messages)
    assert declined(kept, transcript(offer, ("Tadej", "Yes please, a pair would help.")).messages) == []


def test_a_dose_said_as_its_ends_the_dose_of_the_medicine_asked_about() -> None:
    # fresh33: "Any change to the desmopressin?" -- "... since the 12th of May it's 0.2 milligrams at night and 0.1 in
    # the morning." left "Desmopressin tablets, 0.1 milligrams twice a day, ..." as it was
    line = ("Yes. I was still up all night passing water, so since the 12th of May it's 0.2 milligrams at night and "
            "0.1 in the morning.")
    stored = "Desmopressin tablets, 0.1 milligrams twice a day, for the diabetes insipidus."
    assert "desmo" in ending(line, stored, "Yassine", asked="Any change to the desmopressin?")
    assert ending(line, stored, "Yassine", asked="Any change to the insulin?") == set()


def test_she_in_an_answer_to_who_someone_is_is_them() -> None:
    # fresh33: "Who is Dr Aliyeva?" -- "His metabolic doctor at the children's hospital. She sees him in three weeks,
    # ..." was kept as "She sees him in three weeks (12 March 2026), ...": the "his" before it kept "She" unnamed
    line = ("His metabolic doctor at the children's hospital. She sees him in three weeks, and his heart scan is on "
            "the 4th of March.")
    talk = transcript(("assistant", "Who is Dr Aliyeva?"), ("Leyla", line))
    said = "She sees him in three weeks, and his heart scan is on the 4th of March."
    assert named_subject(talk, 1, said) == \
        "Dr Aliyeva sees him in three weeks, and his heart scan is on the 4th of March."
    other = transcript(("assistant", "Who is Dr Aliyeva?"),
                       ("Leyla", "My sister Nigar knows her. She sees him weekly."))
    assert not named_subject(other, 1, "She sees him weekly.").startswith("Dr Aliyeva")  # the line names another


def test_a_stored_dose_said_in_hundreds_is_not_read_as_its_first_word() -> None:
    # review of fresh33's fix: a stored "twelve hundred milligrams" was read as 12, so a new dose would have been put in
    # place of "twelve" alone ("1500 hundred milligrams")
    stored = "Ndapewa takes deferasirox, twelve hundred milligrams every morning."
    changed = revalued(stored, "Dr Nghipandulwa raised the deferasirox to 1500 milligrams.")
    assert changed is None or "hundred" not in changed[0]
    assert revalued("Ndapewa takes deferasirox, 900 milligrams every morning.",
                    "Dr Nghipandulwa raised the deferasirox to 1500 milligrams.") is not None


# -- read further (the stale values a replay of fresh33 still kept) ----------------------------------------------------
def test_no_more_pens_ends_the_pen_a_memory_names() -> None:
    # "In April I switched to an insulin pump ... No more pens." left "Insulin by pen: glargine, ..." as it was:
    # words of three letters were never compared
    line = ("In April I switched to an insulin pump, an Omnipod, with a sensor on my arm that talks to my phone and "
            "reads the numbers out loud. No more pens.")
    assert ending(line, "Insulin by pen: glargine, twenty-two units at night, and aspart with meals.", "Yassine") == \
        {"pen"}
    both = ("Yassine takes insulin by pen, glargine at night and aspart with meals, and desmopressin tablets for "
            "diabetes insipidus.")
    assert kept_apart(both, ending(line, both, "Yassine"), {"yassine"}) == \
        "Yassine takes desmopressin tablets for diabetes insipidus."
    # a word of three letters only when it names a thing, and only where a line says it ended
    assert short_things("No more pens at the gym, ok?") == {"pen", "gym"}
    assert ending(line, "Yassine has a white cane and a dog.", "Yassine") == set()
    assert ending("No more bad nights.", "Yassine has a bad back.", "Yassine") == set()


def test_a_medicine_ended_in_a_memory_that_must_stay_is_said_in_the_past() -> None:
    # "The prednisone is finished: ..., and the metformin stopped too" left "..., so Facundo is on metformin, 850
    # milligrams twice a day": the memory names the diabetes, which the line does not, so it stayed as it was
    stored = ("The prednisone pushed Facundo's sugar up into diabetes, so Facundo is on metformin, 850 milligrams "
              "twice a day.")
    assert in_the_past(stored, {"predn", "metfo"}) == stored.replace("is on", "was on")
    assert in_the_past("Kemal takes adalimumab and uses a cream for his Crohn's.", {"adali"}) == \
        "Kemal took adalimumab and uses a cream for his Crohn's."
    assert in_the_past(stored, {"predn"}) is None  # what is taken goes on: nothing to say in the past


def test_how_often_said_since_when_changes_how_often_it_was() -> None:
    # "And since April my transfusions are every three weeks" left "A blood transfusion every four weeks at Windhoek
    # Central Hospital, two units, always on a Friday." (two numbers in it: no one number to change)
    stored = "A blood transfusion every four weeks at Windhoek Central Hospital, two units, always on a Friday."
    line = ("My ferritin came back at three thousand four hundred, so Dr Nghipandulwa raised the deferasirox to twelve "
            "hundred milligrams. And since April my transfusions are every three weeks: my haemoglobin was dropping "
            "to 6 before each one.")
    assert ending(line, stored, "Ndapewa") == {"trans"}
    assert revalued(stored, line) == (stored.replace("four", "3"), "4", "3")
    # not without "since" or "now", nor of something else, nor the same
    assert ending("My transfusions are every three weeks, as they were.", stored, "Ndapewa") == set()
    assert revalued(stored, "Since May my physio is every three weeks.") is None
    assert revalued(stored, "Since May my transfusions are every four weeks.") is None


def test_who_should_be_called_in_an_emergency_is_a_contact_a_new_one_ends() -> None:
    # "Who is your emergency contact now?" -- "Tangeni first, since we live together. My mother second." left
    # "Ndapewa should be called in an emergency by her mother, Selma." as the contact
    asked, line = "Who is your emergency contact now?", "Tangeni first, since we live together. My mother second."
    stored = "Ndapewa should be called in an emergency by her mother, Selma."
    assert ending(line, stored, "Ndapewa", asked=asked) == {"emerg", "conta", "call"}
    assert kept_apart(stored, ending(line, stored, "Ndapewa", asked=asked), {"ndapewa"}) == "Selma is Ndapewa's mother."
    # calling someone in an emergency is no contact, nor is a contact the new one already is
    assert ending(line, "In an emergency Ndapewa calls 112.", "Ndapewa", asked=asked) == set()
    assert ending(line, "In an emergency Ndapewa should be called by Tangeni.", "Ndapewa", asked=asked) == set()


def test_a_tracheostomy_taken_out_has_ended() -> None:
    line = ("Big news: in May they took the tracheostomy out at Mater Dei hospital. Now I sleep on a BiPAP ventilator "
            "through a nose mask, and the hole in my neck has nearly closed.")
    assert ending(line, "Kurt has a tracheostomy in his neck.", "Kurt") == {"trach"}
    assert ending(line, "Kurt has been on a ventilator since he was a baby.", "Kurt") == set()
    assert ending("I took the dog out at six.", "Kurt has a dog.", "Kurt") == set()  # of the body's care only
    assert ending("They removed the stoma bag in March.", "Kurt has a colostomy and a stoma bag.", "Kurt") == set()
    assert ending("They removed the colostomy in March.", "Kurt has a colostomy and a stoma bag.", "Kurt") == \
        {"colos"}


def test_a_job_said_after_a_name_and_an_age_ends_on_a_new_job() -> None:
    # "I've changed jobs: since May I'm an auditor at the Ministry of Finance" left "Ndapewa is Ndapewa Shikongo,
    # twenty-six, an accountant at a mining company in Windhoek."
    line = ("I've changed jobs: since May I'm an auditor at the Ministry of Finance. Fewer hours, and they let me go "
            "to my transfusions.")
    stored = "Ndapewa is Ndapewa Shikongo, twenty-six, an accountant at a mining company in Windhoek."
    assert ending(line, stored, "Ndapewa") == {"accou"}
    assert ending("Since May I'm an auditor at the Ministry.", "Ndapewa is an accountant at a mine.", "Ndapewa") == \
        {"accou"}
    # a comma before "a doctor" is no job, and the job named again does not end
    assert ending(line, "Ndapewa is allergic to nuts, a doctor said.", "Ndapewa") == set()
    assert ending("Since May I'm an accountant at the Ministry.", stored, "Ndapewa") == set()


async def test_a_first_person_memory_citing_the_question_is_named_for_the_answer(llm_reme: ReMe,
                                                                                server: OpenAITestServer) -> None:
    # qwen1.5b cited the question between Tangeni's line and Ndapewa's answer: "My emergency contact now is Tangeni
    # first, ..." had two speakers beside it, was named for neither, and its repair gave it back as it was
    chat = [{"role": "user", "name": "Tangeni", "content": "And I've moved in with her, in Klein Windhoek."},
            {"role": "assistant", "content": "Who is your emergency contact now?"},
            {"role": "user", "name": "Ndapewa", "content": "Tangeni first, since we live together. My mother second."}]
    said = "My emergency contact now is Tangeni first, since we live together. My mother second."
    server.script("Read the conversation below", {"memories": [
        {"kind": "fact", "importance": 0.9, "time": None, "content": said, "sources": [1]}]})
    server.script("cannot be understood on its own", {"memories": [{"index": 0, "content": said}]})
    result = await llm_reme.summarize_memory(chat, user_name="Ndapewa")
    added = [n.content for n in result.added]
    assert any(text.startswith("Ndapewa's emergency contact now is Tangeni first") for text in added), added
    assert not any(text.startswith("My ") for text in added), added
    # and it cites the answer, whose words a later session's new contact is read against
    contact = next(n for n in result.added if n.content.startswith("Ndapewa's emergency contact now"))
    assert contact.metadata["source_turns"] == [2]


def test_a_birth_said_of_the_daughter_named_after_the_relation_is_not_the_speaker_s() -> None:
    # qwen1.5b wrote "Yassine was born on the 21st of September 2026." for "Our daughter, Yasmine, was born on the 21st
    # of September!": the relation's verb came after the name said beside it, and "was" was read as done to the speaker
    line = to_messages([{"role": "user", "name": "Yassine", "content": "Our daughter, Yasmine, was born on the 21st of "
                         "September! And harder news: in October I had to stop teaching."}])
    known = {"Yassine", "Yasmine", "Amira"}
    assert misnamed("Yassine was born on the 21st of September 2026.", line, known) == "daughter"
    assert misnamed("Yassine had to stop teaching in October 2026.", line, known) is None
    # done to the speaker stays the speaker's: "My doctor, Dr Lee, was told" is no one else's
    told = to_messages([{"role": "user", "name": "Yassine", "content": "Our daughter, Yasmine, was born in September, "
                         "and I was given a week off."}])
    assert misnamed("Yassine was given a week off.", told, known) is None


def test_what_to_avoid_answered_in_a_list_is_said_as_avoided() -> None:
    # "What must you avoid?" -- "All milk and everything made from it: cheese, ..." was a memory of nobody the model
    # cited the question for, left to the repair, which gave it another memory's words
    talk = transcript(("assistant", "What must you avoid?"),
                      ("Áile", "All milk and everything made from it: cheese, butter, yoghurt, whey, casein."))
    said = "All milk and everything made from it: cheese, butter, yoghurt, whey, casein."
    assert subject_named(said, talk, [0]) == f"I must avoid {said[0].lower()}{said[1:]}"
    assert when_answered(talk, 1, said) == f"I must avoid {said[0].lower()}{said[1:]}"
    # not an answer that names nothing, or says its own subject
    none = transcript(("assistant", "What must you avoid?"), ("Áile", "Nothing I know of."))
    assert when_answered(none, 1, "Nothing I know of.") == "Nothing I know of."
    own = transcript(("assistant", "What must you avoid?"), ("Áile", "I avoid milk."))
    assert when_answered(own, 1, "I avoid milk.") == "I avoid milk."


def test_an_update_about_something_else_keeps_a_rule_it_would_drop() -> None:
    # qwen1.5b UPDATEd "No alcohol: if Kurt drinks and nods off without the machine, ..." to the sleep study's result
    rule = "No alcohol: if Kurt drinks and nods off without the machine, Kurt doesn't wake up."
    study = ("The sleep study on the 14th showed Kurt's carbon dioxide still climbs at night, so the machine's backup "
             "rate went up from fourteen breaths a minute to sixteen.")
    back, tied = health_left_behind(rule, study, study)
    assert rule in back + tied
    # a rule the candidate speaks of is its own to change
    assert health_left_behind("Kurt drinks no alcohol.", "Kurt drinks alcohol again.", "Kurt drinks alcohol again.") \
        == ([], [])
