"""The scripted test server speaks the protocol agent frameworks use: tool calls, streaming, models."""

from __future__ import annotations

import json

import openai

from openai_server import Message, OpenAITestServer


def test_tool_calls_and_text_plain_and_streamed() -> None:
    with OpenAITestServer() as server:
        server.script("", Message(tool_calls=[{"name": "lookup", "arguments": {"q": "tea"}}]), times=1)
        server.script("", "You like green tea.", times=1)
        server.script("", Message("again", tool_calls=[{"name": "lookup", "arguments": '{"q": "x"}'}]), times=1)
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        assert first.choices[0].finish_reason == "tool_calls"
        assert call.function.name == "lookup" and json.loads(call.function.arguments) == {"q": "tea"}
        second = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert second.choices[0].message.content == "You like green tea."
        assert second.choices[0].message.tool_calls is None
        stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": [
            {"type": "text", "text": "parts"}]}], stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        args = "".join(tc.function.arguments or "" for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or [])
        assert text == "again" and json.loads(args) == {"q": "x"}
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
        assert [m.id for m in client.models.list()] == ["test-model"]
        # the queue is used up: the next request matches nothing
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        except openai.APIStatusError as exc:
            assert exc.status_code == 418
        else:
            raise AssertionError("an unscripted request must be refused")


def test_anthropic_messages_with_tool_use_and_a_continued_thread() -> None:
    import httpx

    with OpenAITestServer() as server:
        server.script(["be brief", "hi"], Message("Let me look.", tool_calls=[{"name": "memory", "arguments": {
            "command": "view", "path": "/memories"}}]), times=1)
        server.script(["be brief", "hi", "0B\t/memories"], "Nothing yet.", times=1)
        url = server.anthropic_url + "/v1/messages?beta=true"
        first = httpx.post(url, json={"model": "m", "max_tokens": 9, "system": "be brief", "thread": {"type": "create"},
                                      "messages": [{"role": "user", "content": "hi"}]}).json()
        assert first["stop_reason"] == "tool_use" and first["content"][0] == {"type": "text", "text": "Let me look."}
        use = first["content"][1]
        assert use["type"] == "tool_use" and use["input"] == {"command": "view", "path": "/memories"}
        # The continuation carries only the tool result: the server holds the system prompt and the turns before.
        second = httpx.post(url, json={"model": "m", "max_tokens": 9, "thread": {
            "type": "continue", "previous_message_id": first["id"]}, "messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": use["id"], "content": "0B\t/memories"}]}]}).json()
        assert second["stop_reason"] == "end_turn" and second["content"] == [{"type": "text", "text": "Nothing yet."}]
        assert len(server.messages_requests) == 2
        missing = httpx.post(url, json={"model": "m", "max_tokens": 9, "messages": [],
                                        "thread": {"type": "continue", "previous_message_id": "msg_nope"}})
        assert missing.status_code == 404
