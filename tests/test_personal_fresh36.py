"""What `fresh36` (measured once at 1dfe715, then read) showed, as tests of the public helpers; each with a guard
case."""

from __future__ import annotations

from datetime import datetime, timezone

from reme import ReMe
from reme.memory.personal import (CALL_ME, Transcript, health_word, led_in, named_subject, needs_before, new_job,
                                  revalued, to_messages, unheld_health, unheld_names)
from reme.memory.wording import anchor_times, anchor_weekdays
from reme.temporal import told_of_past

from openai_server import OpenAITestServer
from test_personal import EXTRACT


def transcript(*turns: tuple[str, str],
               now: datetime = datetime(2026, 5, 7, 9, tzinfo=timezone.utc)) -> Transcript:
    return Transcript.of(to_messages([{"role": "assistant", "content": text} if who == "assistant" else
                                      {"role": "user", "name": who, "content": text} for who, text in turns]), now)


def kept(t: Transcript, index: int, sentence: str) -> str:
    return led_in(t, index, sentence, named_subject(t, index, sentence))


def test_a_day_of_the_month_is_not_of_a_date_written_after_it() -> None:
    # fresh36: "on Monday the 29th, and in two weeks (2 July 2026)" dated the 29th in July
    said = datetime(2026, 6, 18, 19, tzinfo=timezone.utc)
    line = ["[2026-06-18 19:00] Noémie: I'm off work until Monday, I see Dr Gagnon on Monday the 29th, and in two "
            "weeks we go camping at Lac-Saint-Jean."]
    text = anchor_times("Noémie sees Dr Gagnon on Monday the 29th, and in two weeks they go camping.", said, line)
    assert anchor_weekdays(text, said, line) == (
        "Noémie sees Dr Gagnon on Monday the 29th (29 June 2026), and in two weeks (2 July 2026) they go camping.")
    # a date written before it still says its month
    assert anchor_weekdays("The MRI is in two weeks (2 July 2026), and the results on the 20th.", said, [
        "[2026-06-18 19:00] Noémie: The MRI is in two weeks, and the results on the 20th."]) == (
        "The MRI is in two weeks (2 July 2026), and the results on the 20th (20 July 2026).")


def test_a_day_said_alone_takes_the_tense_of_the_sentence_after_it() -> None:
    # fresh36: "When was your last attack?" -- "On Tuesday, in the middle of my route. I pulled the bus over ..." and
    # "On Sunday. I lay on the sofa ... and couldn't lift my arms" were dated the days to come
    said = datetime(2026, 6, 18, 19, tzinfo=timezone.utc)
    line = ["[2026-06-18 19:00] Noémie: On Tuesday, in the middle of my route. I pulled the bus over and used the "
            "EpiPen."]
    assert anchor_weekdays("Noémie's last attack was on Tuesday, in the middle of her route.", said, line) == (
        "Noémie's last attack was on Tuesday (16 June 2026), in the middle of her route.")
    april = datetime(2026, 4, 22, 7, tzinfo=timezone.utc)
    assert anchor_weekdays("Dawit's last attack was on Sunday.", april, [
        "[2026-04-22 07:30] Dawit: On Sunday. I lay on the sofa and couldn't lift my arms for two hours."]) == (
        "Dawit's last attack was on Sunday (19 April 2026).")
    assert told_of_past("I didn't sleep") and not told_of_past("I won't go")
    # a day followed by what is to come, or said with a verb of its own, is read as before
    assert anchor_weekdays("Dawit flies on Sunday.", april, [
        "[2026-04-22 07:30] Dawit: On Sunday. I fly to Nairobi for the auction."]) == (
        "Dawit flies on Sunday (26 April 2026).")
    assert anchor_weekdays("Dawit flies on Sunday.", april, [
        "[2026-04-22 07:30] Dawit: I fly on Sunday. I booked it in March."]) == "Dawit flies on Sunday (26 April 2026)."


def test_the_weekday_after_that_is_counted_from_the_day_before_it() -> None:
    # fresh36: "the next one is on Friday next week, and I see her the Monday after that for the results" (undated)
    said = datetime(2026, 3, 10, 15, tzinfo=timezone.utc)
    text = anchor_times("The next MRI is on Friday next week, and Catalina sees her the Monday after that for the "
                        "results.", said)
    assert anchor_weekdays(text, said, []) == (
        "The next MRI is on Friday next week (20 March 2026), and Catalina sees her the Monday after that (23 March "
        "2026) for the results.")
    # "the Monday after the operation" counts from something else
    assert "(" not in anchor_weekdays("Catalina sees her the Monday after the operation.", said, [])


def test_what_others_call_someone_is_not_the_name_they_ask_for() -> None:
    # fresh36: "At school they call me Helen, but I'm Eleni, please." was kept as "Eleni goes by Helen"
    assert CALL_ME.search("At school they call me Helen, but I'm Eleni, please.") is None
    assert CALL_ME.search("Everyone calls me Cata.") is None
    found = [CALL_ME.search(t) for t in ("First thing: please call me Dana.", "Call me Mo.", "I go by Sol.")]
    assert [m and (m["name"] or m["by"]) for m in found] == ["Dana", "Mo", "Sol"]
    t = transcript(("Eleni", "At school they call me Helen, but I'm Eleni, please."))
    assert all("goes by" not in s for _, s in unheld_names(t, "Eleni", []))


def test_what_it_is_now_is_what_the_speaker_takes_now() -> None:
    # fresh35, fresh36: "Now it's deferiprone, Ferriprox, fifteen hundred milligrams three times a day." kept with its
    # "it" unnamed (and lost)
    t = transcript(("assistant", "And your treatment?"),
                   ("Eleni", "The deferasirox is stopped: my creatinine went up. Now it's deferiprone, Ferriprox, "
                             "fifteen hundred milligrams three times a day."))
    assert kept(t, 1, "Now it's deferiprone, Ferriprox, fifteen hundred milligrams three times a day.") == (
        "Eleni now takes deferiprone, Ferriprox, fifteen hundred milligrams three times a day.")
    # "it" of no medicine is not
    t = transcript(("assistant", "How is the knee?"), ("Eleni", "It was sore. Now it's fine."))
    assert kept(t, 1, "Now it's fine.") == "Now it's fine."


def test_an_answer_naming_what_someone_takes_says_who_takes_it() -> None:
    # fresh36: "What does Mykyta take?" -- "Ursodeoxycholic acid, Ursofalk, a hundred and fifty milligrams twice a day.
    # Rifampicin, ... And vitamins A, D, E and K every morning" each kept with no subject, under his mother
    answer = ("Ursodeoxycholic acid, Ursofalk, a hundred and fifty milligrams twice a day. Rifampicin, seventy-five "
              "milligrams twice a day, for the itching. And vitamins A, D, E and K every morning.")
    t = transcript(("Oksana", "I'd like you to keep notes on my son, Mykyta."),
                   ("assistant", "Thank you, Oksana. What does Mykyta take?"), ("Oksana", answer))
    assert kept(t, 2, "Rifampicin, seventy-five milligrams twice a day, for the itching.") == (
        "Mykyta takes Rifampicin, seventy-five milligrams twice a day, for the itching.")
    assert kept(t, 2, "And vitamins A, D, E and K every morning.") == (
        "Mykyta takes vitamins A, D, E and K every morning.")
    t = transcript(("assistant", "What do you take for it?"), ("Dawit", "Hydrochlorothiazide, twenty-five milligrams."))
    assert kept(t, 1, "Hydrochlorothiazide, twenty-five milligrams.") == (
        "Dawit takes Hydrochlorothiazide, twenty-five milligrams.")
    # an answer with a subject of its own, or of no medicine, stays as it is
    t = transcript(("assistant", "What does Mykyta take?"), ("Oksana", "Nothing yet, the doctor is deciding."))
    assert kept(t, 1, "Nothing yet, the doctor is deciding.") == "Nothing yet, the doctor is deciding."


def test_whose_after_a_time_or_a_lead_in_is_named() -> None:
    # fresh36: "Last Friday his nose bled for forty minutes" (kept under his mother) and "Then his mother, Halyna, who
    # minds Mykyta on weekdays." (kept with "His" leading, the husband's mother)
    t = transcript(("Oksana", "I'd like you to keep notes on my son, Mykyta. He's six."),
                   ("assistant", "When does he need a doctor?"),
                   ("Oksana", "A nosebleed over fifteen minutes. Last Friday his nose bled for forty minutes."),
                   ("assistant", "Who should be called in an emergency?"),
                   ("Oksana", "My husband, Andriy: 067 418 25 93. He's a mechanic at the tram depot. Then his mother, "
                              "Halyna, who minds Mykyta on weekdays."))
    assert kept(t, 2, "Last Friday his nose bled for forty minutes.") == (
        "Last Friday Mykyta's nose bled for forty minutes.")
    assert kept(t, 4, "Then his mother, Halyna, who minds Mykyta on weekdays.") == (
        "Then Andriy's mother, Halyna, who minds Mykyta on weekdays.")


def test_a_part_of_the_body_is_not_what_was_found() -> None:
    # fresh36: "His heart has a narrowing too, pulmonary stenosis. It was found in 2020" gave "His heart was found in
    # 2020" (dropped: led by "His")
    t = transcript(("Oksana", "He has Alagille syndrome. His heart has a narrowing too, pulmonary stenosis. It was "
                              "found in 2020, when he was three weeks old."))
    assert kept(t, 0, "It was found in 2020, when he was three weeks old.") == (
        "The stenosis was found in 2020, when he was three weeks old.")
    t = transcript(("Ana", "The metformin upsets my stomach. It was started in 2020."))
    assert kept(t, 0, "It was started in 2020.") == "The metformin was started in 2020."


def test_a_doctor_saying_no_is_kept_with_what_to() -> None:
    # fresh36: "Vitamin C makes me absorb more iron; Dr Savvides says no." kept "Dr Savvides says no." alone
    assert needs_before("Dr Savvides says no.") and needs_before("My GP said so.")
    assert not needs_before("Dr Savvides says I can swim again.")
    t = transcript(("assistant", "Would a vitamin C supplement help?"),
                   ("Eleni", "No. Vitamin C makes me absorb more iron; Dr Savvides says no."))
    assert kept(t, 1, "Dr Savvides says no.") == "Vitamin C makes me absorb more iron; Dr Savvides says no."


def test_the_aorta_is_a_health_word() -> None:
    # fresh36: "The root of my aorta is forty-two millimetres wide, so it's watched closely." was in no memory
    assert health_word("aorta") and health_word("arteries") and health_word("aortic")
    assert not health_word("artist") and not health_word("art")


def test_he_after_whom_the_speaker_did_something_to_is_that_one() -> None:
    # fresh36: "I married Marios on the 12th of September, and we moved to Nicosia in August. He's a civil engineer."
    # (dropped: led by "He")
    t = transcript(("Eleni", "I married Marios on the 12th of September, and we moved to Nicosia in August. He's a "
                             "civil engineer."))
    assert named_subject(t, 0, "He's a civil engineer.") == "Marios is a civil engineer."
    # two named: which is not told
    t = transcript(("Eleni", "I told Marios about Andreas. He's a civil engineer."))
    assert named_subject(t, 0, "He's a civil engineer.") == "He's a civil engineer."


def test_a_health_fact_of_someone_named_is_held_only_with_their_name() -> None:
    # fresh36: "Our younger daughter, Vy, seven, has protein C deficiency too" was held by the mother's own "Lan has
    # protein C deficiency" (and "deficiency" was no health word)
    t = transcript(("Lan", "I have protein C deficiency. Our younger daughter, Vy, seven, has protein C deficiency "
                           "too; she was tested last year."))
    said = "Our younger daughter, Vy, seven, has protein C deficiency too."
    assert unheld_health(t, ["Lan has protein C deficiency.", "Vy is Lan's younger daughter, seven."]) == [(0, said)]
    assert unheld_health(t, ["Lan has protein C deficiency.", "Vy, Lan's daughter, seven, has protein C deficiency."
                             ]) == []


def test_a_new_phone_number_takes_the_old_one_s_place() -> None:
    # fresh36: "Still Wiremu, but on his new number: 022 408 6615." left "Wiremu: 021 774 3190" in the contacts
    stored = "Aroha's emergency contacts: Wiremu: 021 774 3190. He drives a logging truck, so if he's out of range, " \
             "Hinemoa."
    line = "Still Wiremu, but on his new number: 022 408 6615. Hinemoa is second, when she isn't busy with the baby."
    assert revalued(stored, line) == (stored.replace("021 774 3190", "022 408 6615"), "021 774 3190", "022 408 6615")
    # someone else's new number, or a number said with no "new", changes nothing
    assert revalued(stored, "Hinemoa has a new number: 022 408 6615.") is None
    assert revalued(stored, "Still Wiremu: 022 408 6615.") is None


def test_work_an_introduction_gives_ends_with_new_work() -> None:
    # fresh36: "Bogdan Ionescu, fifty-eight, tram driver in Cluj-Napoca for twenty-six years." stayed after "I'll never
    # drive a tram again. I'm a dispatcher in the control room now."
    line = "I'll never drive a tram again. I'm a dispatcher in the control room now."
    assert new_job(line, "Bogdan Ionescu, fifty-eight, tram driver in Cluj-Napoca for twenty-six years.",
                   "Bogdan") == {"drive"}
    assert new_job(line, "Bogdan Ionescu, fifty-eight, has dilated cardiomyopathy.", "Bogdan") == set()


def test_it_is_when_names_the_event_the_assistant_spoke_of() -> None:
    # fresh36: "His birthday must be coming up. A trampoline park party, perhaps?" -- "No trampolines, I said: his
    # spleen. It's Saturday next week, he turns seven" was kept as "His spleen is Saturday next week"
    t = transcript(("Oksana", "I'd like you to keep notes on my son, Mykyta. He's six."),
                   ("assistant", "His birthday must be coming up. A trampoline park party, perhaps?"),
                   ("Oksana", "No trampolines, I said: his spleen. It's Saturday next week, he turns seven."))
    assert kept(t, 2, "It's Saturday next week, he turns seven.") == (
        "Mykyta's birthday is Saturday next week, he turns seven.")
    # an event only asked after is not told of ("How was the party?"), nor an "It's" that says no when
    t = transcript(("assistant", "How was the party?"), ("Oksana", "It's Saturday, actually."))
    assert kept(t, 1, "It's Saturday, actually.") == "It's Saturday, actually."
    t = transcript(("assistant", "His birthday must be coming up."), ("Oksana", "It's going to be loud."))
    assert kept(t, 1, "It's going to be loud.") == "It's going to be loud."


async def test_a_son_s_medicines_are_stored_as_his_through_the_summarizer(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    # the whole path: the model keeps nothing, code keeps the doses as said, each named as the son's (fresh36: they
    # were stored with no subject under his mother, and scored as hers)
    server.script(EXTRACT, {"memories": []})
    result = await llm_reme.summarize_memory([
        {"role": "user", "name": "Oksana", "content": "I'd like you to keep notes on my son, Mykyta."},
        {"role": "assistant", "content": "What does Mykyta take?"},
        {"role": "user", "name": "Oksana", "content": "Rifampicin, seventy-five milligrams twice a day, for the "
                                                      "itching."}], user_name="Oksana")
    assert "Mykyta takes Rifampicin, seventy-five milligrams twice a day, for the itching." in [
        n.content for n in result.added]
