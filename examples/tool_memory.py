"""Tool memory: exact statistics and an LLM-written usage guideline per tool, from logged calls.

Needs a chat model, as in personal_memory.py:

    export OPENAI_BASE_URL=... OPENAI_API_KEY=... REME_LLM__MODEL=gpt-4o-mini
    python examples/tool_memory.py
"""

import asyncio

from reme import ReMe, ToolCallRecord


async def main() -> None:
    calls = [
        ToolCallRecord(tool_name="web_search", input={"q": "Berlin weather"}, output="12 C, rain",
                       success=True, time_cost=1.2, token_cost=310),
        ToolCallRecord(tool_name="web_search", input={"q": "Berlin weather tomorrow in Fahrenheit and Kelvin"},
                       output="", success=False, error="timeout", time_cost=9.0, token_cost=0),
    ]
    async with ReMe() as reme:
        await reme.summarize_memory(tool_calls=calls, tool_name="web_search")
        guide = await reme.retrieve_memory(tool_name="web_search")
        print(guide.text)  # Tool web_search: 2 calls, 50% succeeded, ... Guideline: ...


if __name__ == "__main__":
    asyncio.run(main())
