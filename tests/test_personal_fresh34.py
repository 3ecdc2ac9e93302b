"""What reading fresh34 (the memory-quality set's part measured once before anyone tuned on it) taught the personal
summarizer's code, through the public helpers that do it, on the dialogues' own words."""

from __future__ import annotations

from datetime import datetime, timezone

from reme import ReMe
from reme.memory.personal import (Transcript, allergy_asked_of, cited_or_beside, ending, gender_said, health_word,
                                  it_copied, kept_apart, led_in, misnamed, named_subject, needs_before, subject_named,
                                  to_messages, unheld_answers, unheld_content, unheld_dates, unheld_health, unheld_refusals,
                                  unheld_relations, when_answered, worth_reading)
from reme.memory.wording import anchor_times, name_the_speaker

from openai_server import OpenAITestServer


def transcript(*turns: tuple[str, str],
               now: datetime = datetime(2026, 6, 17, 4, 30, tzinfo=timezone.utc)) -> Transcript:
    return Transcript.of(to_messages([{"role": "assistant", "content": text} if who == "assistant" else
                                      {"role": "user", "name": who, "content": text} for who, text in turns]), now)


DAVIT = (("Anahit", "Barev dzez. I'm Anahit Petrosyan; I restore old carpets for the History Museum in Yerevan. I'm "
                    "writing for my son, Davit. He's six, and he has Williams syndrome: a small piece of chromosome 7 "
                    "is missing."),
         ("assistant", "What does it mean for his health?"),
         ("Anahit", "His aorta is narrow just above the valve: supravalvular aortic stenosis. The big danger is "
                    "anaesthesia: children like Davit can have a cardiac arrest under it."),
         ("assistant", "And the calcium?"),
         ("Anahit", "No vitamin D drops, no calcium supplements, no milk with added vitamin D."),
         ("assistant", "Does he take any medicines?"),
         ("Anahit", "Amlodipine, two and a half milligrams every morning, for his blood pressure. He started it in "
                    "March."),
         ("assistant", "Does Davit have any allergies?"),
         ("Anahit", "Kiwi. In 2024 his lips and tongue swelled up after one slice. Me? Nothing at all."))


def test_a_memory_citing_a_question_far_from_its_line_is_named_and_checked_by_that_line() -> None:
    # qwen1.5b wrote "He has Williams syndrome: ..." citing "And the calcium?"; the repair made it "Anahit has Williams
    # syndrome", and the check that it is said of someone else read the assistant's line, which names no one
    talk = transcript(*DAVIT)
    said = "He has Williams syndrome: a small piece of chromosome 7 is missing."
    assert cited_or_beside("Anahit has Williams syndrome.", talk, [3]) == [talk.messages[0]]
    assert subject_named(said, talk, [0]) == "Davit has Williams syndrome: a small piece of chromosome 7 is missing."
    # a line beside that holds half its words is still the one read
    assert cited_or_beside("No vitamin D drops for Davit.", talk, [3]) == [talk.messages[4]]


def test_an_allergy_asked_of_the_child_is_the_child_s() -> None:
    talk = transcript(*DAVIT)
    assert allergy_asked_of("Anahit has Kiwi as an allergy.", talk, [8]) == "Davit has Kiwi as an allergy."
    assert allergy_asked_of("Anahit's allergies: Kiwi.", talk, [8]) == "Davit's allergies: Kiwi."
    # "Me? Nothing at all." is the mother's; another line's allergy is not asked of anyone
    assert allergy_asked_of("Anahit has no allergies.", talk, [8]) == "Anahit has no allergies."
    assert allergy_asked_of("Anahit has Kiwi as an allergy.", talk, [4]) == "Anahit has Kiwi as an allergy."


def test_his_birthday_is_not_the_speaker_s() -> None:
    line = to_messages([{"role": "user", "name": "Anahit", "content": "His seventh birthday, on Sunday the 25th of "
                         "October. And this Friday a genetic counsellor sees Aram and me."}])
    known = {"Anahit", "Davit", "Aram"}
    assert misnamed("Anahit's seventh birthday is on Sunday the 25th of October 2026.", line, known) == "his"
    mine = to_messages([{"role": "user", "name": "Anahit", "content": "My birthday is Sunday, and his is in May."}])
    assert misnamed("Anahit's birthday is on Sunday.", mine, known) is None


def test_what_he_started_in_march_is_the_medicine_before() -> None:
    talk = transcript(*DAVIT)
    assert it_copied("Davit started it in March 2026.", talk, [6]) == "Davit started Amlodipine in March 2026."


def test_no_weights_to_lifting_weights_is_a_refusal_with_its_reason() -> None:
    talk = transcript(("assistant", "Strength training could protect your joints. Have you thought about lifting "
                                    "weights?"),
                      ("Siobhán", "No weights. Straining sends my pressure up, and that's how the spleen artery went. "
                                  "I walk the strand every morning, and that's my exercise."))
    assert unheld_refusals(talk, "Siobhán", []) == [
        (1, "No weights for Siobhán: straining sends my pressure up, and that's how the spleen artery went.")]
    # not what the question does not offer
    other = transcript(("assistant", "Have you thought about swimming?"), ("Siobhán", "No weights. I walk instead."))
    assert unheld_refusals(other, "Siobhán", []) == []


HEMIPLEGIC = (("assistant", "When was your last attack?"),
              ("Nadeesha", "Last Sunday. My right arm and the right side of my face went numb and heavy for six "
                           "hours."),
              ("assistant", "What sets the attacks off?"),
              ("Nadeesha", "A knock on the head, even a small one, and nights without sleep."),
              ("assistant", "When do you see your neurologist?"),
              ("Nadeesha", "Dr Jayasuriya, at the teaching hospital in Kandy, on Monday the 29th. She wants an MRI "
                           "first; that's the day after tomorrow, at seven in the morning."))


def test_a_short_answer_is_said_with_what_the_question_asks() -> None:
    talk = transcript(*HEMIPLEGIC)
    assert when_answered(talk, 1, "Last Sunday.") == "My last attack was last Sunday."
    assert when_answered(talk, 3, "A knock on the head, even a small one, and nights without sleep.") == \
        "My attacks are set off by a knock on the head, even a small one, and nights without sleep."
    assert when_answered(talk, 5, "Dr Jayasuriya, at the teaching hospital in Kandy, on Monday the 29th.") == \
        "I see my neurologist, Dr Jayasuriya, at the teaching hospital in Kandy, on Monday the 29th."
    doctor = transcript(("assistant", "Who is your doctor?"), ("Jomar", "Dr Ramos, an immunologist at Chong Hua."))
    assert when_answered(doctor, 1, "Dr Ramos, an immunologist at Chong Hua.") == \
        "My doctor is Dr Ramos, an immunologist at Chong Hua."
    # not a sentence of its own, nor an answer to another question
    assert when_answered(talk, 1, "My right arm went numb.") == "My right arm went numb."
    assert when_answered(talk, 3, "I get them after a knock on the head.") == "I get them after a knock on the head."
    assert when_answered(doctor, 1, "Dr Ramos said I was fine.") == "Dr Ramos said I was fine."


def test_the_day_of_the_last_attack_is_kept() -> None:
    # "Last Sunday." held a date no memory held, and said nothing else
    talk = transcript(*HEMIPLEGIC)
    assert (1, "My last attack was last Sunday.") in unheld_dates(talk, [])
    assert anchor_times("My last attack was last Sunday.", talk.times[1]) == \
        "My last attack was last Sunday (14 June 2026)."


def test_she_after_a_doctor_and_a_place_is_the_doctor() -> None:
    # "in Kandy" named a place after the doctor: "She wants an MRI first" was dropped unnamed
    talk = transcript(*HEMIPLEGIC)
    assert named_subject(talk, 5, "She wants an MRI first;") == "Dr Jayasuriya wants an MRI first;"


def test_a_time_counted_from_a_day_said_before_it_is_dated() -> None:
    said = datetime(2026, 7, 21, 13, 0, tzinfo=timezone.utc)
    assert anchor_times("Rico's first communion is on Sunday the 2nd of August, and four days later Dada and Wilner "
                        "have their twenty-fifth anniversary.", said) == \
        ("Rico's first communion is on Sunday the 2nd of August 2026, and four days later (6 August 2026) Dada and "
         "Wilner have their twenty-fifth anniversary.")
    assert anchor_times("The next time is on the 17th of March, and the trough level blood test is a week before "
                        "that.", datetime(2026, 2, 24, 2, 0, tzinfo=timezone.utc)).endswith(
        "is a week before that (10 March 2026).")
    # nothing to count from: as it is
    assert anchor_times("Two days later it was fine.", said) == "Two days later it was fine."


XLA = (("Jomar", "Maayong buntag. I'm Jomar Villanueva, twenty-four; I work nights at a call centre in Cebu IT Park."),
       ("Marites", "I'm Marites, his mother. Write down that the high blood pressure is mine, and so is the losartan "
                   "on the counter."),
       ("assistant", "Thank you, Marites. Jomar, how is it treated?"),
       ("Jomar", "Immunoglobulin under the skin, every Sunday night: ten grams, with a small pump and two needles in "
                 "my belly. I've done it myself since 2019."),
       ("Rhea", "I'm Rhea, his cousin. I'm the one who had dengue last month, not him."),
       ("assistant", "Noted. Jomar, any allergies?"),
       ("Jomar", "Vancomycin. In 2015 it turned my whole top half red and itchy while it was running in."),
       ("Rhea", "And I'm the one who's allergic to shrimp. He eats shrimp every week, no problem."),
       ("assistant", "Who should be called in an emergency?"),
       ("Jomar", "My mother first: 0917 482 3361. If she's at the market, Rhea; she works in the pharmacy."))


def test_who_the_people_beside_the_user_are_is_kept_and_named() -> None:
    talk = transcript(*XLA, now=datetime(2026, 2, 24, 2, 0, tzinfo=timezone.utc))
    assert unheld_relations(talk, "Jomar", []) == [(1, "Marites is Jomar's mother."), (4, "Rhea is Jomar's cousin.")]
    assert unheld_answers(talk, "Jomar", [])[0][1].startswith("Jomar's emergency contacts: My mother, Marites, first")
    assert gender_said(talk, "Marites") == "She"
    # so the cousin's "he" is the one other man speaking, and what she says of him is kept
    assert named_subject(talk, 7, "He eats shrimp every week, no problem.") == \
        "Jomar eats shrimp every week, no problem."
    assert (7, "He eats shrimp every week, no problem.") in unheld_content(
        talk, worth_reading(talk), "Jomar", ["Rhea is allergic to shrimp."], [([7], "Rhea is allergic to shrimp.")])
    # not a speaker who only says their name
    plain = transcript(("Jomar", "Hello."), ("Rhea", "I'm Rhea. He eats shrimp."))
    assert unheld_relations(plain, "Jomar", []) == []


def test_done_myself_stays_with_what_was_done() -> None:
    assert needs_before("I've done it myself since 2019.") and not needs_before("I've done my exams since.")
    assert name_the_speaker("I've done it myself since 2019.", "Jomar") == "Jomar has done it themselves since 2019."
    assert name_the_speaker("Nobody but myself.", "Jomar") == "Nobody but Jomar."


def test_where_to_go_and_a_doctor_s_specialty_are_news() -> None:
    # "a fever, or a cough with blood, means the hospital the same day" was held by the model's "... should be called
    # in an emergency if he has a fever or a cough with blood"; "Dr Ramos, an immunologist" by "... is Dr Ramos"
    assert health_word("cough") and health_word("coughing")
    assert not any(map(health_word, ["geologist", "coffee", "fever", "immunologist"]))  # "hay fever is over"
    line = "Infections are dangerous for me: a fever, or a cough with blood, means the hospital the same day."
    pap = transcript(("assistant", "What must you avoid?"), ("Ivalo", line))
    model = "Ivalo should be called in an emergency if he has a fever or a cough with blood."
    assert unheld_health(pap, [model]) == [(1, line)]
    held = "Infections are dangerous for Ivalo: a fever, or a cough with blood, means the hospital the same day."
    assert unheld_health(pap, [model, held]) == []
    talk = transcript(("assistant", "Who is your doctor?"),
                      ("Jomar", "Dr Ramos, an immunologist at Chong Hua. I see her every three months."))
    assert unheld_health(talk, ["Jomar's doctor is Dr Ramos."]) == [(1, "Dr Ramos, an immunologist at Chong Hua.")]
    assert unheld_health(talk, ["Jomar's doctor is Dr Ramos, an immunologist."]) == []


def test_what_a_later_session_changes_ends_the_old_value() -> None:
    user = "Rūta"
    driving = "Rūta doesn't drive: Dr Petrauskas says not until it's under control."
    assert ending("And since July I'm allowed to drive again, short trips only.", driving, user) == {"driv"}
    assert ending("I'm still not allowed to drive.", driving, user) == set()
    home = "Rūta lives in Žaliakalnis with Rūta's husband, Tomas, and Rūta's son, Matas, who's nine."
    moved = "We've moved! Since June we live in Vilnius, in Antakalnis, because Tomas got a job at the university."
    assert kept_apart(home, ending(moved, home, user), {"rūta"}) == \
        "Rūta's son, Matas, who's nine. Tomas is Rūta's husband."
    contact = "Rūta's emergency contacts: Tomas: 8612 44 903."
    assert ending("Still Tomas, but he has a new number: 8699 31 507.", contact, user) == {"8612", "44", "903"}
    assert ending("Tomas has a new number: 8699 31 507.", "Rūta's sister Eglė: 8612 44 903.", user) == set()
    pregnant = "Voahangy is pregnant with her first child, due in October 2026."
    assert ending("Our son was born on the 2nd of October: Aina. Everyone is well.", pregnant, "Hery") == {"pregn"}
    assert ending("Our son was born in 2019.", "Hery has a son who loves trains.", "Hery") == set()
    oxygen = "The oxygen is down to one litre a minute, and only on stairs."
    assert ending("And the oxygen is off completely since July: my walking test was normal.", oxygen, "Ivalo") == \
        {"oxyge"}
    assert ending("I'm off work this week.", "Ivalo works at the shrimp factory.", "Ivalo") == set()


def test_a_day_said_without_its_month_is_dated() -> None:
    # "Dr Jayasuriya, ..., on Monday the 29th" was stored as "... on Monday the 29th, 2026": which month?
    said = datetime(2026, 6, 17, 4, 30, tzinfo=timezone.utc)
    assert anchor_times("Nadeesha sees her neurologist on Monday the 29th, 2026.", said) == \
        "Nadeesha sees her neurologist on Monday the 29th, 2026 (29 June 2026)."
    assert anchor_times("On Monday the 3rd he flies.", said) == "On Monday the 3rd (3 August 2026) he flies."
    # not without a weekday, nor with a month in the sentence
    assert anchor_times("She sees him on the 3rd.", said) == "She sees him on the 3rd."
    assert anchor_times("The party is on Sunday the 2nd, in August.", said) == \
        "The party is on Sunday the 2nd, in August."
    # in the past, the last such day of this month or the two before (fresh35), else none
    assert anchor_times("We married on Saturday the 9th.", said) == "We married on Saturday the 9th (9 May 2026)."
    assert anchor_times("We married on Wednesday the 9th.", said) == "We married on Wednesday the 9th."


def test_the_next_time_stays_with_whom_it_is_seen() -> None:
    # "Dr Ramos, an immunologist at Chong Hua. I see her every three months; the next time is on the 17th of March"
    # was kept as "The next time is on the 17th of March 2026, ...": of what?
    talk = transcript(("assistant", "Who is your doctor?"),
                      ("Jomar", "Dr Ramos, an immunologist at Chong Hua. I see her every three months; the next time "
                                "is on the 17th of March."))
    said = "the next time is on the 17th of March."
    assert needs_before(said)
    assert led_in(talk, 1, said, said) == \
        "I see Dr Ramos every three months; the next time is on the 17th of March."


def test_a_specialist_is_held_by_its_whole_name() -> None:
    # "immunologist" and "immunoglobulin" share a stem: the doctor's specialty was held by the medicine
    talk = transcript(("assistant", "Who is your doctor?"), ("Jomar", "Dr Ramos, an immunologist at Chong Hua."))
    written = ["Jomar's doctor is Dr Ramos.", "Jomar takes immunoglobulin under the skin every Sunday night."]
    assert unheld_health(talk, written) == [(1, "Dr Ramos, an immunologist at Chong Hua.")]


async def test_a_relation_code_wrote_is_not_renamed_for_the_user_s_my_cousin(llm_reme: ReMe,
                                                                            server: OpenAITestServer) -> None:
    # "Rhea is Jomar's cousin." (of "I'm Rhea, his cousin.") was stored as "Jomar is Jomar's cousin.": Jomar had said
    # "my cousin came with me", so it read as what Jomar said he is
    chat = [{"role": "user", "name": "Jomar", "content": "My mother and my cousin came with me, because they remember "
             "my medicines better than I do."},
            {"role": "user", "name": "Rhea", "content": "I'm Rhea, his cousin. I'm the one who had dengue last month."}]
    server.script("Read the conversation below", {"memories": []})
    result = await llm_reme.summarize_memory(chat, user_name="Jomar")
    added = [n.content for n in result.added]
    assert "Rhea is Jomar's cousin." in added, added
    assert "Jomar is Jomar's cousin." not in added, added
