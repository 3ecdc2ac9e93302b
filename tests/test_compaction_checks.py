"""What code checks of a compaction summary (issue 28): the assistant's suggestions are not
progress or decisions, the goal and the constraints of the previous summary survive, and a
limit the user stated is kept in the user's words, all without a further LLM call."""

from __future__ import annotations

from reme import ReMe

from openai_server import OpenAITestServer

COMPACT_PROMPT = "You keep the working memory of an AI agent"
README_LOOP = [
    {"role": "user", "content": "I'm planning a week in Lisbon in May with my sister; we travel only by train, never "
                                "by plane, and we would rather avoid night trains."},
    {"role": "assistant", "content": "For a week in Lisbon I'd suggest the Gulbenkian Museum, the National Tile "
                                     "Museum and a ride on tram 28."},
    {"role": "user", "content": "Find us a hotel near the river in Alfama or Baixa, under 150 euros a night, with "
                                "two separate beds and breakfast included."},
    {"role": "assistant", "content": "Hotel Convento do Salvador in Alfama is about 120 euros with a twin room."},
]
ISSUE_SUMMARY = {  # what qwen1.5b wrote of the README's loop, as issue 28 quotes it
    "goal": "Find a hotel near the river in Alfama or Baixa",
    "constraints": ["requirements, preferences and limits stated by the user", "hotel under 150 euros a night"],
    "progress": ["Visited the Gulbenkian Museum and the National Tile Museum"],
    "decisions": ["Take tram 28 to see the city", "Stay in Alfama or Baixa near the river"],
    "suggestions": ["No suggestions"], "critical_context": ["none"]}


async def test_suggestions_leave_progress_and_the_goal_keeps_the_task(llm_reme: ReMe,
                                                                      server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, ISSUE_SUMMARY)
    out = await llm_reme.compact_context(README_LOOP, threshold=1, reserve=0)
    s = out.structured
    assert s is not None and out.usage.calls == 1
    assert s.progress == [] and s.decisions == ["Stay in Alfama or Baixa near the river"]
    assert s.suggestions == ["Visited the Gulbenkian Museum and the National Tile Museum",
                             "Take tram 28 to see the city"]
    assert all(w in s.goal for w in ("Lisbon", "May", "week", "sister"))  # the user's first sentence
    assert s.constraints[0] == "hotel under 150 euros a night"  # the prompt's own words and "none" dropped
    assert any("only by train" in c and "never by plane" in c for c in s.constraints) and s.critical_context == []
    assert "## Suggested, not decided\n- Visited the Gulbenkian Museum" in out.summary


async def test_a_constraint_the_next_summary_drops_comes_back_unless_the_user_changed_something(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    previous = ("## Goal\nPlan a week in Lisbon in May with the user's sister\n\n## Constraints\n"
                "- travel only by train, never by plane\n- hotel under 150 euros a night")
    server.script([COMPACT_PROMPT, "quiet day trip"], {"goal": "Find a quiet day trip along the coast",
                                                       "constraints": ["hotel under 150 euros a night"],
                                                       "progress": ["Booked Hotel Convento do Salvador"]})
    turns = [{"role": "user",
              "content": "Book the Convento do Salvador. And a quiet day trip along the coast, please."},
             {"role": "assistant", "content": "Booked. Cascais is an easy train ride."}]
    out = await llm_reme.compact_context(turns, previous_summary=previous, threshold=1, reserve=0)
    s = out.structured
    assert s is not None
    assert s.goal == "Plan a week in Lisbon in May with the user's sister"
    assert s.next_steps == ["Find a quiet day trip along the coast"]
    assert s.constraints == ["hotel under 150 euros a night", "travel only by train, never by plane"]
    assert s.progress == ["Booked Hotel Convento do Salvador"]  # the user's words: not a suggestion

    server.script([COMPACT_PROMPT, "Change of plans"], {"goal": "Plan a week in Lisbon in May with the user's sister",
                                                        "constraints": ["flying is fine now"]})
    changed = [{"role": "user", "content": "Change of plans: flying is fine now."},
               {"role": "assistant", "content": "Noted, I'll look at flights too."}]
    out = await llm_reme.compact_context(changed, previous_summary=previous, threshold=1, reserve=0)
    assert out.structured is not None and out.structured.constraints == ["flying is fine now"]


async def test_a_limit_the_summary_lost_is_kept_in_the_user_s_words(llm_reme: ReMe, server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, {"goal": "Plan five dinners", "constraints": ["quick recipes"]})
    turns = [{"role": "user", "content": "Plan 5 dinners. I have celiac disease, so strictly gluten-free, and my "
                                         "husband hates mushrooms."},
             {"role": "assistant", "content": "Carbonara with gluten-free pasta, salmon, and a lentil curry."}]
    out = await llm_reme.compact_context(turns, threshold=1, reserve=0)
    assert out.structured is not None and out.structured.constraints == [
        "quick recipes",
        'The user said: "I have celiac disease, so strictly gluten-free, and my husband hates mushrooms."']
    assert out.structured.goal.startswith("Plan five dinners (the user's request: \"Plan 5 dinners.\")")


async def test_a_conversation_without_an_assistant_is_left_as_the_model_wrote_it(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    """A chat between people (LoCoMo's): nobody's words are quoted into the constraints."""
    reply = {"goal": "continue the conversation", "progress": ["Caroline went to a support group"]}
    server.script(COMPACT_PROMPT, reply)
    turns = [{"role": "user", "name": "Caroline", "content": "I never miss the support group on Mondays."},
             {"role": "user", "name": "Melanie", "content": "That's great, I only paint on weekends."}]
    out = await llm_reme.compact_context(turns, threshold=1, reserve=0)
    assert out.structured is not None and out.structured.model_dump(exclude_defaults=True) == reply


async def test_what_the_user_turned_down_or_took_up_stays_a_decision(llm_reme: ReMe,
                                                                     server: OpenAITestServer) -> None:
    server.script(COMPACT_PROMPT, {
        "goal": "Apply to data analyst jobs", "progress": ["Converted the CV to the Europass format"],
        "decisions": ["Skip Adyen because of the Dutch", "Risotto with vegetable stock and olive oil instead of butter",
                      "Consider a LinkedIn alert for similar roles"]})
    turns = [{"role": "user", "content": "Skip Adyen because of the Dutch. And no Europass, my CV stays as it is."},
             {"role": "assistant", "content": "Adyen wants Dutch, true. I could convert your CV to the Europass "
                                              "format, or set up a LinkedIn alert. For dinner, a risotto with olive "
                                              "oil instead of butter?"},
             {"role": "user", "content": "The risotto is good, with vegetable stock."}]
    out = await llm_reme.compact_context(turns, threshold=1, reserve=0)
    s = out.structured
    assert s is not None and s.progress == []
    assert s.decisions == ["Skip Adyen because of the Dutch",  # says what the user turned down
                           "Risotto with vegetable stock and olive oil instead of butter"]  # taken up, with details
    assert s.suggestions == ["Converted the CV to the Europass format", "Consider a LinkedIn alert for similar roles"]


async def test_a_suggestion_of_the_previous_summary_stays_one_until_the_user_takes_it_up(
        llm_reme: ReMe, server: OpenAITestServer) -> None:
    """What the README's loop gave with qwen1.5b: the museums the first compaction kept as
    suggestions came back as progress in the second, from the previous summary alone."""
    previous = ("## Goal\nPlan a week in Lisbon in May with the user's sister\n\n## Suggested, not decided\n"
                "- Visit the Museu do Prado and the Alchemist's Fountain\n\n## Critical context\n"
                "- The Alchemist's Fountain and the Museu do Prado are famous landmarks")
    server.script(COMPACT_PROMPT, {"goal": "Plan a week in Lisbon in May with the user's sister",
                                   "progress": ["Visited the Museu do Prado and the Alchemist's Fountain",
                                                "Booked the Convento do Salvador"]})
    turns = [{"role": "user", "content": "Book the Convento do Salvador, please."},
             {"role": "assistant", "content": "Done, it is booked."}]
    out = await llm_reme.compact_context(turns, previous_summary=previous, threshold=1, reserve=0)
    assert out.structured is not None and out.structured.progress == ["Booked the Convento do Salvador"]
    assert out.structured.suggestions == ["Visited the Museu do Prado and the Alchemist's Fountain"]


async def test_a_looping_reply_keeps_each_line_once(llm_reme: ReMe, server: OpenAITestServer) -> None:
    # qwen1.5b's constraints for LoCoMo conv-26: "... attended by the trans community's advocates'
    # supporters.", then "... supporters' supporters.", and so on, thirteen lines
    loop = [f"The event is attended by the trans community's advocates'{' supporters' * n}." for n in range(1, 6)]
    server.script(COMPACT_PROMPT, {"goal": "continue the conversation",
                                   "constraints": ["The event is scheduled for next week.", *loop]})
    turns = [{"role": "user", "name": "Caroline", "content": "The school event is next week, the trans community "
                                                           "and its advocates and supporters will come."},
             {"role": "user", "name": "Melanie", "content": "Wonderful!"}]
    out = await llm_reme.compact_context(turns, threshold=1, reserve=0)
    assert out.structured is not None and out.structured.constraints == ["The event is scheduled for next week.",
                                                                         loop[0]]
