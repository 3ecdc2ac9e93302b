"""What reading fresh29 (the memory-quality set's part measured once before anyone read it) taught the personal
summarizer's code, each through the public helper that does it, on the dialogue's own words: a condition or a
medicine is nobody ("Rett syndrome", "And Movicol, one sachet a day"), a sentence needing the one before ("If one lasts
more than five minutes"), a day said before a pronoun ("On the 29th she turns twelve"), the medicine the assistant
offered as "it", a rule said with "no one" or "must not", an offered activity turned down, a day to come beside a
year ReMe wrote, a listed dose that stays when another ends, and what ends a device, a workplace and a contact."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from reme import ReMe

from reme.memory.personal import (Transcript, ending, kept_apart, led_in, medicine_word, named_subject, names_in,
                                  not_a_memory, said_whole, to_messages, unheld_dates, unheld_health,
                                  unheld_names, unheld_refusals, without_empty_it)
from reme.memory.wording import anchor_times, weekday_spans

from openai_server import OpenAITestServer

T0 = datetime(2026, 3, 11, 21, 10, tzinfo=timezone.utc)


def transcript(*turns: tuple[str, str], now: datetime = T0) -> Transcript:
    return Transcript.of(to_messages([{"role": "assistant", "content": text} if who == "assistant" else
                                      {"role": "user", "name": who, "content": text} for who, text in turns]), now)


RETT = transcript(
    ("Chiamaka", "Good evening. I'm Chiamaka Eze. I want to set down everything about my daughter Ifunanya; we call "
                 "her Nanya. She's eleven and she has Rett syndrome."),
    ("assistant", "Of course. What should anyone caring for Nanya know first?"),
    ("Chiamaka", "She has seizures. If one lasts more than five minutes, give buccal midazolam, 10 milligrams, into "
                 "the side of her cheek, and call 999."),
    ("assistant", "What medicines does she take?"),
    ("Chiamaka", "Sodium valproate, 300 milligrams twice a day. And Movicol, one sachet a day, for constipation. "
                 "All of it goes through her gastrostomy tube; she eats a little puréed food by mouth."),
    ("assistant", "Is there anything she must not be given?"),
    ("Chiamaka", "Her heart tracing shows a long QT, which is common in Rett, so no ondansetron. And she's allergic to "
                 "amoxicillin."),
    ("assistant", "There's a newer Rett medicine, trofinetide. Would you ask Dr Okonkwo-Ade about it?"),
    ("Chiamaka", "We talked about it. It isn't available here, and the diarrhoea it causes would be hard with her "
                 "tube."),
    ("assistant", "Anything else?"),
    ("Chiamaka", "On the 29th she turns twelve."))


def test_a_condition_named_after_someone_and_a_dosed_medicine_are_nobody() -> None:
    names = names_in(RETT.messages)
    assert "Nanya" in names and "Ifunanya" in names
    assert "Rett" not in names and "Movicol" not in names  # "Rett syndrome"; "And Movicol, one sachet a day"
    # so a "she" after them is the daughter, not the syndrome nor the laxative
    assert named_subject(RETT, 6, "She's allergic to amoxicillin.") == "Ifunanya is allergic to amoxicillin."


def test_a_sentence_of_what_the_one_before_names_is_kept_with_it_and_its_she_named() -> None:
    sentence = ("If one lasts more than five minutes, give buccal midazolam, 10 milligrams, into the side of her "
                "cheek, and call 999.")
    assert led_in(RETT, 2, sentence, sentence) == f"Nanya has seizures. {sentence}"


def test_a_pronoun_after_the_day_it_happens_is_named_and_the_day_dated() -> None:
    assert named_subject(RETT, 10, "On the 29th she turns twelve.") == "On the 29th Ifunanya turns twelve."
    (start, end, span), = weekday_spans("On the 29th Ifunanya turns twelve.", T0, ["On the 29th she turns twelve."])
    assert (span.first, span.last) == (datetime(2026, 3, 29).date(),) * 2


def test_it_is_the_medicine_the_assistant_offered_when_the_line_names_none() -> None:
    assert medicine_word("trofinetide") and not medicine_word("riptide")
    assert named_subject(RETT, 8, "It isn't available here, and the diarrhoea it causes would be hard with her "
                                  "tube.").startswith("Trofinetide isn't available here")


def test_a_greeting_drops_the_name_it_calls_but_a_medicine_after_and_stays() -> None:
    assert said_whole("And Movicol, one sachet a day, for constipation.") == \
        "Movicol, one sachet a day, for constipation."
    assert said_whole("Hey Mel, my cousin Ingrid moved to Oslo.") == "My cousin Ingrid moved to Oslo."


LINE = transcript(
    ("assistant", "What's the most urgent thing to watch for?"),
    ("Leif-Arne", "Line infection. Nobody but the home care nurses or the hospital touches that line, and no one "
                  "takes blood from it."),
    ("assistant", "Any plans?"),
    ("Leif-Arne", "Blood tests on the 2nd of November."),
    ("assistant", "Swimming is gentle exercise. Would that help you keep fit?"),
    ("Leif-Arne", "Not with a line in my chest, the nurses won't hear of it. I cycle to the harbour and back instead."),
    now=datetime(2026, 10, 8, 7, 45, tzinfo=timezone.utc))


def test_a_rule_said_with_no_one_is_not_held_by_a_memory_sharing_its_word() -> None:
    kept = [text for _, text in unheld_health(LINE, ["Blood tests on the 2nd of November 2026.",
                                                     "Leif-Arne has a history of line infections."])]
    assert any("Nobody but the home care nurses" in text for text in kept)
    held = "Line infection: nobody but the nurses touches Leif-Arne's line, and no one takes blood from it."
    assert not any("Nobody" in text for _, text in unheld_health(LINE, [held]))


def test_an_offered_activity_turned_down_with_its_reason_is_kept() -> None:
    assert unheld_refusals(LINE, "Leif-Arne", ["Leif-Arne cycles to the harbour and back instead."]) == [
        (5, "No swimming for Leif-Arne: not with a line in my chest, the nurses won't hear of it.")]
    assert unheld_refusals(LINE, "Leif-Arne", ["Leif-Arne must not go swimming with the line."]) == []


def test_a_day_to_come_in_a_sentence_of_its_own_is_dated_beside_a_year_rewritten() -> None:
    said = datetime(2026, 1, 28, 10, 0, tzinfo=timezone.utc)
    text = "Since November 2025 omalizumab, Xolair, an injection every four weeks; the next one is on the 5th."
    line = ("And since November omalizumab, Xolair, an injection every four weeks; the next one is on the 5th. It has "
            "helped a lot.")
    (_, _, span), = weekday_spans(text, said, [line])
    assert span.first == datetime(2026, 2, 5).date()
    # of the past, a year said elsewhere in the memory still keeps the day undated
    assert weekday_spans("In 2019 Ana had surgery; the stitches came out on the 19th.", said,
                         ["In 2019 I had surgery; the stitches came out on the 19th."]) == []
    # a date ReMe wrote in parentheses is no year said: "tomorrow" is dated too
    assert anchor_times("Ana moved last week (19-25 January 2026) and flies tomorrow.", said) == \
        "Ana moved last week (19-25 January 2026) and flies tomorrow (29 January 2026)."


def test_a_listed_medicine_with_its_dose_stays_when_the_one_before_it_ends() -> None:
    stored = ("Bisoprolol, 1.25 milligrams, ramipril, 2.5 milligrams, and eplerenone, 25 milligrams, all in the "
              "morning, and furosemide, 40 milligrams, for the fluid.")
    assert kept_apart(stored, {"ramip"}, {"xóchitl"}, nameless=True) == \
        "Eplerenone, 25 milligrams, all in the morning, and furosemide, 40 milligrams, for the fluid."
    # a second dose of the one that ended goes with it
    assert kept_apart("Ana takes bisoprolol 5 mg in the morning and 2.5 mg at night, and Ana walks daily.", {"bisop"},
                      {"ana"}) == "Ana walks daily."


def test_what_ends_a_device_a_workplace_and_an_emergency_contact() -> None:
    vest = "Xóchitl wears a LifeVest, a defibrillator vest, day and night, except in the shower."
    assert ending("In June the echo showed my heart at forty percent, so the LifeVest went back.", vest, "Xóchitl")
    assert not ending("I went back to work in August.", "Xóchitl works as a teacher.", "Xóchitl")
    # ... and the vest a memory names alone, the last word of "LifeVest"
    assert "vest" in ending("In June the echo showed my heart at forty percent, so the LifeVest went back.",
                            "If Xóchitl collapses, call 911 and let the vest do its work.", "Xóchitl")
    firm = "Rania is Rania Haddad, thirty-one, an architect at a firm in Gemmayzeh, in Beirut."
    assert "firm" in ending("And I've left the architecture firm: since September I teach design in Jbeil.", firm,
                            "Rania")
    contacts = ("Pemba's emergency contacts: Pemba's brother Mingma; he lives on the floor above the studio. Pemba's "
                "wife Dawa is in Solukhumbu most of the year.")
    answer = "Dawa first, now that she's here for good. Mingma stayed in Boudha, which is too far across the city."
    assert {"emerg", "conta"} <= ending(answer, contacts, "Pemba", asked="Who should be called now?")
    assert not ending(answer, contacts, "Pemba", asked="Who should be called if you fall?")


def test_an_interest_read_into_questions_alone_is_no_memory() -> None:
    bubbles = to_messages([
        {"role": "user", "name": "Liang", "content": "Why are soap bubbles always round, never square?"},
        {"role": "assistant", "content": "Surface tension: a sphere is the shape with the smallest surface."},
        {"role": "user", "name": "Liang", "content": "So nature only does squares when you force it. Lovely."}])
    assert not_a_memory("Liang is a person who is interested in the properties of soap and foam.", bubbles, [0, 2],
                        "Liang")
    said = to_messages([{"role": "user", "name": "Yannick", "content": "My daughter Maëlle wants to learn the piano."}])
    assert not_a_memory("Maëlle wants to learn the piano.", said, [0], "Yannick") is None


def test_a_time_ahead_in_a_clause_of_its_own_after_a_past_one_is_dated() -> None:
    from reme.temporal import find_spans
    today = datetime(2026, 6, 17).date()
    found = find_spans("Natan was tested for the gene last Thursday, and the result comes in six weeks.", today)
    assert [span.first for _, _, span in found] == [datetime(2026, 6, 11).date(), datetime(2026, 7, 29).date()]
    assert find_spans("I finished the course in ten days.", today) == []  # a time it took


def test_another_name_of_someone_introduced_by_their_relation_is_kept_with_the_first() -> None:
    assert (0, "Ifunanya goes by Nanya") in unheld_names(RETT, "Chiamaka", ["Chiamaka has a daughter, Ifunanya."])
    assert not any("goes by" in text for _, text in unheld_names(RETT, "Chiamaka", [
        "Chiamaka's daughter Ifunanya is called Nanya."]))


def test_a_sentence_saying_only_when_its_thing_is_is_kept_for_its_date() -> None:
    said = datetime(2026, 4, 14, 9, 20, tzinfo=timezone.utc)
    talk = transcript(("assistant", "When is the operation?"),
                      ("Ruxandra", "On the 12th, under general anaesthetic; the anaesthetist already knows. The pre-op "
                                   "assessment is the day after tomorrow."), now=said)
    assert unheld_dates(talk, ["Ruxandra is under general anaesthetic on 12 May 2026."]) == [
        (1, "The pre-op assessment is the day after tomorrow.")]
    assert unheld_dates(talk, ["Ruxandra is under general anaesthetic on 12 May 2026.",
                               "Ruxandra's pre-op assessment is on 16 April 2026."]) == []
    # a sentence saying more than when, with one word worth comparing, is still too little to stand alone
    assert unheld_dates(transcript(("Ruxandra", "The thing I said is true tomorrow."), now=said), []) == []


async def test_a_relation_the_speaker_calls_their_own_stays_theirs_when_the_memory_cites_the_next_line(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    # fresh29 (qwen1.5b): "Nanya's husband Obiora", citing the assistant's line after "My husband Obiora, her dad"
    chat = [{"role": "assistant", "content": "Who is in Nanya's family?", "time": "2026-03-11T21:10:00Z"},
            {"role": "user", "name": "Chiamaka", "content": "My husband Obiora, her dad; he drives a bus on the 192 "
                                                            "route. And my younger sister Adaeze."},
            {"role": "assistant", "content": "Thank you. Who should be called in an emergency?"}]
    found: list[dict[str, Any]] = [
        {"content": "Nanya's husband Obiora drives a bus on the 192 route.", "sources": [2]},
        {"content": "Nanya's younger sister Adaeze is part of the family.", "sources": [0]}]
    server.script("Read the conversation below", {"memories": [
        {"kind": "fact", "importance": 0.5, "time": None, **item} for item in found]})
    result = await llm_reme.summarize_memory(chat, user_name="chiamaka")

    added = [n.content for n in result.added]
    assert "Chiamaka's husband Obiora drives a bus on the 192 route." in added
    assert "Chiamaka's younger sister Adaeze is part of the family." in added


def test_an_it_that_stands_for_nothing_does_not_lead_a_memory() -> None:
    heart = "Xóchitl's heart had weakened in the pregnancy: peripartum cardiomyopathy."
    assert without_empty_it(f"It turned out that {heart}") == heart
    assert without_empty_it("It turned out Ana had asthma.") == "Ana had asthma."
    # an "it" that is something stays: what turned out well, or what is on Friday
    for kept in ("It turns out well for Ana.", "It turned out fine.", "It is on Friday.", "It seems that way."):
        assert without_empty_it(kept) == kept


async def test_a_new_first_contact_answering_who_to_call_now_is_news_though_stored_memories_name_them(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    # fresh29 (qwen1.5b): "Pemba's emergency contacts: Dawa first, ..." was kept as said, then dropped as held by the
    # stored contacts naming Mingma and Dawa: what it ends was read without the question it answers
    await llm_reme.add_memory("Pemba's emergency contacts: Pemba's brother Mingma; he lives on the floor above the "
                              "studio. Pemba's wife Dawa is in Namche most of the year.", user_name="pemba")
    await llm_reme.add_memory("Pemba Dorje is a thangka painter with a studio in Boudha, in Kathmandu.",
                              user_name="pemba")
    server.script("Read the conversation below", {"memories": []})
    server.script("long-term memory consistent", {"decisions": [{"candidate": 0, "action": "ADD"}]})
    chat = [{"role": "assistant", "content": "Who should be called now?", "time": "2026-11-10T07:30:00Z"},
            {"role": "user", "name": "Pemba", "content": "Dawa first, now that she's here for good. Mingma stayed in "
                                                         "Boudha, which is too far across the city."}]
    result = await llm_reme.summarize_memory(chat, user_name="pemba")

    assert not any("a stored memory holds it" in r.reason for r in result.rejected), [r.reason for r in result.rejected]
    assert any("Dawa first" in n.content for n in result.added + result.updated), [n.content for n in result.added]
