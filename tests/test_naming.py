"""A question that names a person ranks that person's memories higher (`retrieval.named_weight`):
the user of a personal memory, or its `author`, found in the question as whole words."""

from __future__ import annotations

from typing import Callable

from hypothesis import example, given, strategies as st

from reme import MemoryNode, MemoryType, ReMe
from reme.retrieval import naming

FLAT = {"recency_weight": 0.0, "importance_weight": 0.0, "time_weight": 0.0}
QUESTION = "What do Melanie's kids like?"


async def test_a_question_naming_a_user_ranks_that_users_memories_first(make_reme: Callable[..., ReMe]) -> None:
    # Caroline's memory shares more words with the question; Melanie's is the one it asks about.
    async with make_reme(llm={}, retrieval=FLAT) as reme:
        caroline = await reme.add_memory("The kids like dinosaurs and what they like is painting", user_name="Caroline")
        melanie = await reme.add_memory("The children enjoy the beach", user_name="Melanie")
        users = ["Caroline", "Melanie"]
        ctx = await reme.retrieve_memory(QUESTION, user_name=users, rewrite=False)
        assert [m.node.memory_id for m in ctx.memories] == [melanie.memory_id, caroline.memory_id]
        # a question naming no one, or both, ranks by the text alone
        for question in ("What do the kids like?", "What do Caroline and Melanie's kids like?"):
            ctx = await reme.retrieve_memory(question, user_name=users, rewrite=False)
            assert ctx.memories[0].node.memory_id == caroline.memory_id, question
        # the boost ranks, it never filters: Caroline's memory is still found when only she is searched
        ctx = await reme.retrieve_memory(QUESTION, user_name="Caroline", rewrite=False)
        assert [m.node.memory_id for m in ctx.memories] == [caroline.memory_id]

    async with make_reme(llm={}, retrieval={**FLAT, "named_weight": 0.0}, working_dir=reme.config.working_dir) as off:
        ctx = await off.retrieve_memory(QUESTION, user_name=users, rewrite=False)
        assert ctx.memories[0].node.memory_id == caroline.memory_id  # 0 turns it off


async def test_the_author_of_a_memory_counts_as_its_person(make_reme: Callable[..., ReMe]) -> None:
    # one scope (a conversation), each memory said by one of its speakers
    async with make_reme(llm={}, retrieval=FLAT) as reme:
        said = [MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="conv-1", content=text, author=who)
                for who, text in [("Caroline", "The kids like dinosaurs and what they like is painting"),
                                  ("Melanie", "The children enjoy the beach"),
                                  ("Anna", "The garden is what the children enjoy")]]
        await reme.add_memories(said)
        ctx = await reme.retrieve_memory(QUESTION, user_name="conv-1", rewrite=False)
        assert ctx.memories[0].node.author == "Melanie"
        # "Ann" is not "Anna": whole words only
        ctx = await reme.retrieve_memory("What do Ann's kids like?", user_name="conv-1", rewrite=False)
        assert ctx.memories[0].node.author == "Caroline"  # the text decides
        ctx = await reme.retrieve_memory("what do ANNA's kids like", user_name="conv-1", rewrite=False)
        assert ctx.memories[0].node.author == "Anna"  # case is ignored


NAME = st.lists(st.from_regex(r"[^\W_]{1,8}", fullmatch=True), min_size=1, max_size=3).map(" ".join)
GAP = st.text(alphabet=" ,.?!'-:;()\n", min_size=1, max_size=3)


@given(name=NAME, before=st.text(max_size=20), after=st.text(max_size=20), gap1=GAP, gap2=GAP)
def test_a_name_is_found_between_any_words(name: str, before: str, after: str, gap1: str, gap2: str) -> None:
    node = MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="someone", content="x", author=name)
    assert naming(before + gap1 + name + gap2 + after)(node)
    if name.upper().casefold() == name.casefold():  # not so for a few letters (the dotless i's upper case is I)
        assert naming(f"{gap1}{name.upper()}{gap2}")(node)


@given(name=NAME, extra=st.from_regex(r"[^\W_]{1,3}", fullmatch=True))
@example(name="İ", extra="0")  # "İ" case-folds to "i" and a combining dot, which is part of the word
def test_a_name_is_not_found_inside_a_longer_word(name: str, extra: str) -> None:
    node = MemoryNode(memory_type=MemoryType.PERSONAL, memory_target="someone", content="x", author=name)
    assert not naming(f"Where is {name}{extra}?")(node) or name.casefold() in ("where", "is", "where is")
