"""A tool result the agent read back with `read_tool_result` is never offloaded again: otherwise
the agent could never see it whole (found by the LangGraph middleware's agent loop)."""

from __future__ import annotations

from reme import ReMe


async def test_a_result_read_back_stays_whole_while_other_big_results_move_out(reme: ReMe) -> None:
    big = "".join(f"hotel {i}\n" for i in range(2_000))
    calls = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "search", "content": big}]
    first = await reme.compact_tool_results(calls, session_name="s1", max_chars=2_000)
    ref = first.offloaded[0].ref
    whole = await reme.read_tool_result(ref, session_name="s1")
    read_back = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "c2", "type": "function", "function": {"name": "read_tool_result", "arguments": f'{{"ref": "{ref}"}}'}}]},
        {"role": "tool", "tool_call_id": "c2", "name": "read_tool_result", "content": whole}]

    second = await reme.compact_tool_results(first.messages + read_back, session_name="s1", max_chars=2_000)
    assert second.offloaded == [] and second.messages[-1]["content"] == big
