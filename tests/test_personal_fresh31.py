"""What reading fresh31 (the memory-quality set's part measured once before anyone read it) taught the personal
summarizer's code, through the public helper that does it, on the dialogue's own words: the medicine an "it" the model
kept stands for."""

from __future__ import annotations

from datetime import datetime, timezone

from reme.memory.personal import (Transcript, declined, ending, it_copied, led_in, named_subject, to_messages,
                                   kept_apart, unheld_health, unheld_refusals, without_ended)


def transcript(*turns: tuple[str, str]) -> Transcript:
    return Transcript.of(to_messages([{"role": "assistant", "content": text} if who == "assistant" else
                                      {"role": "user", "name": who, "content": text} for who, text in turns]),
                         datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc))


def test_the_it_not_to_stop_is_the_medicine_the_sentence_before_starts_with() -> None:
    talk = transcript(("assistant", "Ganzorig, what treatment are you on?"),
                      ("Ganzorig", "Ruxolitinib, Jakavi, 15 milligrams twice a day. Dr Altantsetseg told me never to "
                                   "stop it suddenly: the symptoms come back hard. And deferasirox, 900 milligrams."))
    kept = "Dr Altantsetseg told Ganzorig never to stop it suddenly: the symptoms come back hard."
    assert it_copied(kept, talk, [1]) == kept.replace("stop it", "stop Ruxolitinib")
    # not when the memory names it already, nor when the sentence before names two medicines
    assert it_copied("Ganzorig takes ruxolitinib and must never stop it suddenly.", talk, [1]) == \
        "Ganzorig takes ruxolitinib and must never stop it suddenly."
    two = transcript(("Ana", "I'm on warfarin and aspirin. My doctor told me never to stop it suddenly."))
    assert it_copied("Ana's doctor told her never to stop it suddenly.", two, [0]) == \
        "Ana's doctor told her never to stop it suddenly."


def test_a_his_after_a_semicolon_is_the_one_the_clause_before_names() -> None:
    # fresh31: "his number is 0905 318 442." was kept as said, then dropped as led by a pronoun: a safety fact lost
    talk = transcript(("assistant", "Who should be called in an emergency?"),
                      ("Thịnh", "Hằng, my wife. If she doesn't answer, my younger brother Phúc; his number is 0905 318 "
                                "442."))
    assert named_subject(talk, 1, "his number is 0905 318 442.") == "Phúc's number is 0905 318 442."
    # not one named before the other pronoun only
    other = transcript(("Ana", "My brother Luis came. Back at work today, she says. His number is 555 0101."))
    assert named_subject(other, 0, "His number is 555 0101.") == "His number is 555 0101."


def test_a_medicine_is_held_by_its_whole_name_not_by_one_that_starts_alike() -> None:
    # fresh31: "Cysteamine eye drops, Cystadrops, four times a day" was held by "... cysteamine, Cystagon ..."
    talk = transcript(("assistant", "What treatment is he on?"),
                      ("Sumaq", "Cysteamine, Cystagon, every six hours. Cysteamine eye drops, Cystadrops, four times "
                                "a day, for the crystals in his eyes."))
    written = ["Sumaq's son takes cysteamine, Cystagon, every six hours."]
    assert (1, "Cysteamine eye drops, Cystadrops, four times a day, for the crystals in his eyes.") in \
        unheld_health(talk, written)
    assert unheld_health(talk, written + ["Sumaq's son has cysteamine eye drops, Cystadrops, four times a day."]) \
        == []


def test_the_iron_tablets_stopped_end_no_other_tablets() -> None:
    # fresh31: "The iron tablets gave me terrible heartburn ..., so I stopped them" updated away "Tafsut takes
    # Tranexamic acid tablets for her periods and for any bleed", a safety fact
    line = "The iron tablets gave me terrible heartburn with the pregnancy, so I stopped them in October."
    assert ending(line, "Tafsut takes tranexamic acid tablets for her periods and for any bleed.", "Tafsut") == set()
    assert ending(line, "Tafsut takes iron tablets for her periods.", "Tafsut") >= {"iron"}


def test_a_dose_raised_names_the_medicine_asked_after_and_ends_the_old_one() -> None:
    # fresh31: "Dr Asamoah raised it to 90 milligrams every four weeks" was kept with "it", and the 80 stayed
    talk = transcript(("assistant", "How is the burosumab going?"),
                      ("Ekow", "Dr Asamoah raised it to 90 milligrams every four weeks in September, because my "
                               "phosphate was still low."))
    kept = "Dr Asamoah raised it to 90 milligrams every four weeks in September."
    assert it_copied(kept, talk, [1]) == kept.replace("raised it", "raised burosumab")
    old = "Ekow is on burosumab, Crysvita, 80 milligrams every four weeks since April 2026."
    assert ending(talk.messages[1].content, old, "Ekow", asked="How is the burosumab going?") == {"buros"}
    assert ending(talk.messages[1].content, old, "Ekow", asked="How is the physio going?") == set()


def test_an_it_led_clause_after_the_medicine_that_went_is_named() -> None:
    # fresh31: "It pushed my kidney numbers ... so I stopped it in April" was kept with "It" (ciclosporin was no
    # medicine word), and "after the first three they're every eight weeks" without what "they" are
    talk = transcript(("assistant", "What changed?"),
                      ("Tupe", "The ciclosporin went: it pushed my kidney numbers and my blood pressure up, so I "
                               "stopped it in April. I started infliximab infusions on the 28th of April; after the "
                               "first three they're every eight weeks, and the next one is in three weeks."))
    assert named_subject(talk, 1, "It pushed my kidney numbers and my blood pressure up, so I stopped it in April.") \
        == "The ciclosporin pushed my kidney numbers and my blood pressure up, so I stopped it in April."
    cut = "after the first three they're every eight weeks, and the next one is in three weeks."
    assert led_in(talk, 1, cut, cut) == "I started infliximab infusions on the 28th of April; " + cut


def test_a_no_to_stopping_a_medicine_is_kept_and_the_models_should_stop_dropped() -> None:
    # fresh31: "Since you're feeling better, could you stop the prednisolone?" -- "No. Never on my own, and never
    # suddenly." became "Jaakko should stop the prednisolone when Dr Räsänen brings it down ..."
    talk = transcript(("Jaakko", "Prednisolone, 7.5 milligrams every morning."),
                      ("assistant", "Since you're feeling better, could you stop the prednisolone?"),
                      ("Jaakko", "No. Never on my own, and never suddenly. Dr Räsänen brings it down a milligram at "
                                 "a time when she decides."))
    assert declined("Jaakko should stop the prednisolone when Dr Räsänen brings it down.", talk.messages) == ["stop"]
    assert unheld_refusals(talk, "Jaakko", []) == [
        (2, "Jaakko will not stop the prednisolone: never on my own, and never suddenly.")]
    assert unheld_refusals(talk, "Jaakko", ["Jaakko must never stop the prednisolone suddenly."]) == []
    yes = transcript(("assistant", "Could you stop the prednisolone?"), ("Jaakko", "Yes. Dr Räsänen said so."))
    assert unheld_refusals(yes, "Jaakko", []) == []


def test_a_nurses_his_is_the_one_other_person_speaking() -> None:
    # fresh31: "I take his blood every Monday. His haemoglobin yesterday was 78, so he has a transfusion this
    # Thursday; he needs one about every three weeks now." (Khulan, the nurse): kept as Khulan's, or not at all
    talk = transcript(("Ganzorig", "I'm Ganzorig. My daughter Oyuna and the nurse, Khulan, are here with me."),
                      ("Oyuna", "I'm Oyuna, his daughter. I'm the one with type 1 diabetes."),
                      ("Khulan", "I'm Khulan, the nurse from the family health centre. I take his blood every Monday. "
                                 "His haemoglobin yesterday was 78, so he has a transfusion this Thursday; he needs "
                                 "one about every three weeks now."))
    sentence = "His haemoglobin yesterday was 78, so he has a transfusion this Thursday; he needs one about every " \
               "three weeks now."
    assert named_subject(talk, 2, sentence) == "Ganzorig's" + sentence[len("His"):]
    assert (2, sentence) in unheld_health(talk, ["Khulan takes Ganzorig's blood every Monday."])
    # of two who could be, none
    two = transcript(("Ganzorig", "I'm Ganzorig."), ("Bold", "I'm Bold."),
                     ("Khulan", "I'm Khulan, the nurse. His haemoglobin was 78."))
    assert named_subject(two, 2, "His haemoglobin was 78.") == "His haemoglobin was 78."


def test_the_doctor_who_looks_after_someone_now_ends_the_one_before() -> None:
    # fresh31: "Tafsut, who looks after your Glanzmann now?" -- "Dr Hadjadj, a haematologist at the CHU Mustapha."
    # left "Dr Benali, Tafsut's haematologist, would be furious." as current
    line = "Dr Hadjadj, a haematologist at the CHU Mustapha. Dr Benali sent him all my records."
    old = "Dr Benali, Tafsut's haematologist, would be furious."
    assert ending(line, old, "Tafsut", asked="Tafsut, who looks after your Glanzmann now?") == {"haema"}
    assert ending(line, old, "Tafsut", asked="Who looks after your Glanzmann?") == set()  # not asked "now"
    assert ending(line, "Dr Hadjadj is Tafsut's haematologist.", "Tafsut",
                  asked="Who looks after your Glanzmann now?") == set()


def test_a_home_bought_elsewhere_ends_where_they_lived_together() -> None:
    # fresh31: "Daan and I bought a house in Delft; we moved on the 1st of June." left "... they live together in
    # Kralingen" as current
    line = "Daan and I bought a house in Delft; we moved on the 1st of June."
    assert ending(line, "Ji-woo has a boyfriend, Daan; they live together in Kralingen.", "Ji-woo") == {"krali"}
    assert ending(line, "Ji-woo has a dog. They live in Kralingen.", "Ji-woo") == set()  # whose "they"?
    assert ending(line, "Ji-woo lives in Delft.", "Ji-woo") == set()


def test_a_schedule_said_in_words_is_no_number_a_memory_holds_already() -> None:
    # fresh31: "Cysteamine, Cystagon, every six hours, day and night: ..." was held by "Sumaq takes cysteamine,
    # Cystagon, and sodium bicarbonate" (its numbers were words): how often, no memory said
    talk = transcript(("assistant", "What medicines does he take?"),
                      ("Sumaq", "Cysteamine, Cystagon, every six hours, day and night: at six, at noon, at six and at "
                                "midnight, so I set an alarm."))
    assert [i for i, _ in unheld_health(talk, ["Sumaq takes cysteamine, Cystagon, and sodium bicarbonate."])] == [1]
    assert unheld_health(talk, ["Sumaq's son takes cysteamine, Cystagon, every six hours, at 6 and at midnight."]) \
        == []


def test_the_child_a_mother_writes_for_is_his_though_she_says_her_own_name() -> None:
    # fresh31: "His kidneys pour out water ..." and "His kidney function was 60 percent" were kept with "His"
    talk = transcript(("Sumaq", "Allillanchu. I'm Sumaq Huarancca, from San Sebastián, in Cusco. I'm writing for my "
                                "son, Yaku; he's eight. Cysteamine, Cystagon, every six hours."),
                      ("assistant", "What should happen if he gets ill?"),
                      ("Sumaq", "His kidneys pour out water, so he must drink whenever he is thirsty."))
    assert named_subject(talk, 2, "His kidneys pour out water, so he must drink whenever he is thirsty.") == \
        "Yaku's kidneys pour out water, so he must drink whenever he is thirsty."
    # not when two of his gender could be
    other = transcript(("Sumaq", "I'm writing for my son, Yaku. My husband, Wilber, works in Apurímac."),
                       ("Sumaq", "His kidneys pour out water."))
    assert named_subject(other, 1, "His kidneys pour out water.") == "His kidneys pour out water."


def test_a_no_to_what_the_assistant_offers_by_them_is_kept_with_the_thing() -> None:
    # fresh31: "Fish oil capsules are good for the heart. Would you like to try them?" -- "No, they thin the blood."
    # was kept as "They thin the blood." (whose?)
    talk = transcript(("assistant", "Fish oil capsules are good for the heart. Would you like to try them?"),
                      ("Tafsut", "No, they thin the blood. Dr Benali, my haematologist, would be furious."))
    assert unheld_refusals(talk, "Tafsut", []) == [(1, "No fish oil capsules for Tafsut: they thin the blood.")]
    assert unheld_refusals(talk, "Tafsut", ["Tafsut avoids fish oil capsules."]) == []
    assert named_subject(talk, 1, "They thin the blood.") == "Fish oil capsules thin the blood."
    yes = transcript(("assistant", "Fish oil capsules are good for the heart. Would you like to try them?"),
                     ("Tafsut", "Yes, they sound good."))
    assert unheld_refusals(yes, "Tafsut", []) == []


def test_a_dose_changed_in_place_loses_the_medicine_that_went_beside_it() -> None:
    # fresh31: "The ciclosporin went: ... The prednisone is down to 10 milligrams." left "Prednisone, 10 milligrams
    # every morning, and ciclosporin, 150 milligrams twice a day."
    listed = "Prednisone, 10 milligrams every morning, and ciclosporin, 150 milligrams twice a day."
    assert without_ended(listed, {"predn", "ciclo"}, "10", {"tupe"}) == "Prednisone, 10 milligrams every morning."
    assert without_ended(listed, {"predn"}, "10", {"tupe"}) == listed


def test_the_contact_after_the_first_is_someone_else_now() -> None:
    # fresh31: "Is Vailea still your emergency contact?" -- "Yes, Vailea first. But Fa'afetai is back in Apia, so
    # after her it's my cousin Leota" left "... her wife Vailea and brother Fa'afetai" as current
    line = "Yes, Vailea first. But Fa'afetai is back in Apia, so after her it's my cousin Leota, here in Ōtara."
    asked = "Is Vailea still your emergency contact?"
    stored = "Tupe's emergency contact is her wife Vailea and brother Fa'afetai."
    gone = ending(line, stored, "Tupe", asked=asked)
    assert kept_apart(stored, gone, {"tupe"}) == "Tupe's emergency contact is her wife Vailea."
    assert ending(line, "Fa'afetai is Tupe's brother.", "Tupe", asked=asked) == set()  # who he is stays
    assert ending(line, stored, "Tupe", asked="How are the ulcers?") == set()
    # "Who's your emergency contact now, with Taemin leaving?" -- "Daan first. Then Daan's sister, Fenna" (fresh31)
    stored = "Ji-woo's emergency contacts: Ji-woo's boyfriend, Daan. And if he can't be reached, Ji-woo's friend Taemin."
    gone = ending("Daan first. Then Daan's sister, Fenna, who lives in Delft too.", stored, "Ji-woo",
                  asked="Who's your emergency contact now, with Taemin leaving?")
    assert kept_apart(stored, gone, {"ji", "woo"}) == "Ji-woo's emergency contacts: Ji-woo's boyfriend, Daan."
