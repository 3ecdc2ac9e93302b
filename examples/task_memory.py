"""Task memory: learn lessons from an agent's runs, retrieve them before the next similar task,
and report whether they helped.

Needs a chat model, as in personal_memory.py:

    export OPENAI_BASE_URL=... OPENAI_API_KEY=... REME_LLM__MODEL=gpt-4o-mini
    python examples/task_memory.py
"""

import asyncio

from reme import ReMe, Trajectory

GOOD_RUN = [
    {"role": "user", "content": "Rate all liked songs 5 stars"},
    {"role": "assistant", "content": "spotify.login(), then spotify.review_song(song_id, rating=5) per song"},
    {"role": "tool", "content": "ok: 12 songs rated"},
]
FAILED_RUN = [
    {"role": "user", "content": "Rate all liked songs 5 stars"},
    {"role": "assistant", "content": "spotify.set_song_rating(song_id, 5)"},
    {"role": "tool", "content": "error: no such API"},
]


async def main() -> None:
    async with ReMe() as reme:
        result = await reme.summarize_memory(
            trajectories=[Trajectory(messages=GOOD_RUN, score=1.0), Trajectory(messages=FAILED_RUN, score=0.0)],
            task_name="appworld")
        for lesson in result.added:
            print("lesson:", lesson.when_to_use, "->", lesson.content)

        ctx = await reme.retrieve_memory("Rate every liked album 4 stars", task_name="appworld", top_k=3)
        print(ctx.text)
        # After the agent ran with these lessons in its prompt: did they help?
        await reme.record_usage([m.node.memory_id for m in ctx.memories], success=True, task_name="appworld")


if __name__ == "__main__":
    asyncio.run(main())
