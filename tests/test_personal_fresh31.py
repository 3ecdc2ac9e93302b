"""What reading fresh31 (the memory-quality set's part measured once before anyone read it) taught the personal
summarizer's code, through the public helper that does it, on the dialogue's own words: the medicine an "it" the model
kept stands for."""

from __future__ import annotations

from datetime import datetime, timezone

from reme.memory.personal import Transcript, it_copied, to_messages


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
