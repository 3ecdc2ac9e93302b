"""ChatModel against a real loopback HTTP server: retries, timeouts, structured output, JSON mode,
usage and the concurrency bound."""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Any, Iterator

import pytest
from pydantic import BaseModel

from reme import ConfigError, LLMError
from reme.config import LLMConfig
from reme.errors import LLMOutputError
from reme.llm import ChatModel, extract_json
from reme.schema import Usage

from openai_server import OpenAITestServer


class Answer(BaseModel):
    name: str
    count: int


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as s:
        yield s


def make(server: OpenAITestServer, **kwargs: Any) -> ChatModel:
    config = LLMConfig(base_url=server.base_url, api_key="test-key", model="test-model",
                       **{"max_retries": 2, "timeout": 5.0, **kwargs})
    return ChatModel(config, retry_initial=0.01, retry_max=0.05)


ASK = [{"role": "user", "content": "How many apples does Bob have?"}]


async def test_structured_reply_is_parsed_and_usage_counted(server: OpenAITestServer) -> None:
    server.script("apples", {"name": "Bob", "count": 3})
    usage = Usage()
    llm = make(server)
    answer = await llm.structured(ASK, Answer, usage=usage)
    assert answer == Answer(name="Bob", count=3)
    assert usage.calls == 1 and usage.prompt_tokens == 6 and usage.completion_tokens == 4
    assert usage.total_tokens == 10 and usage.llm_seconds > 0
    body = server.chat_requests[0]
    assert body["model"] == "test-model" and body["response_format"] == {"type": "json_object"}
    assert server.requests[0]["auth"] == "Bearer test-key"
    await llm.close()


@pytest.mark.parametrize("text", [
    'Sure! Here it is:\n```json\n{"name": "Bob", "count": 3}\n```\nAnything else?',
    'The answer is {"name": "Bob", "count": 3} as requested.',
])
async def test_json_is_found_in_fenced_or_chatty_replies(server: OpenAITestServer, text: str) -> None:
    server.script("apples", text)
    assert await make(server).structured(ASK, Answer) == Answer(name="Bob", count=3)


class Names(BaseModel):
    names: list[str]


async def test_a_bare_list_fills_a_single_field_model(server: OpenAITestServer) -> None:
    server.script("apples", '["Bob", "Ann"]')
    assert await make(server).structured(ASK, Names) == Names(names=["Bob", "Ann"])


def test_extract_json_prefers_the_fence() -> None:
    assert extract_json('x {"a": 1} ```json\n{"b": 2}\n```') == '{"b": 2}'
    assert extract_json("[1, 2] tail") == "[1, 2]"
    assert extract_json("no json here") == "no json here"


async def test_invalid_reply_is_shown_back_once_and_then_accepted(server: OpenAITestServer) -> None:
    server.script("apples", {"name": "Bob", "count": "three"}, times=1)
    server.script("apples", {"name": "Bob", "count": 3})
    usage = Usage()
    assert await make(server).structured(ASK, Answer, usage=usage) == Answer(name="Bob", count=3)
    second = server.chat_requests[1]["messages"]
    assert second[1] == {"role": "assistant", "content": '{"name": "Bob", "count": "three"}'}
    assert "count" in second[2]["content"] and "not valid" in second[2]["content"]
    assert usage.calls == 2


async def test_malformed_twice_raises_output_error_with_raw_text(server: OpenAITestServer) -> None:
    server.script("apples", '{"name": "Bob", "count": 3')
    with pytest.raises(LLMOutputError) as info:
        await make(server).structured(ASK, Answer)
    assert info.value.raw == '{"name": "Bob", "count": 3'
    assert isinstance(info.value, LLMError)
    assert len(server.chat_requests) == 2


async def test_429_honours_retry_after(server: OpenAITestServer) -> None:
    server.script("apples", {"name": "Bob", "count": 3})
    server.fail_next(429, retry_after="1")
    started = time.monotonic()
    assert await make(server).structured(ASK, Answer) == Answer(name="Bob", count=3)
    assert time.monotonic() - started >= 0.95  # backoff alone would wait ~0.01 s
    assert len(server.chat_requests) == 2


async def test_an_http_date_retry_after_is_honoured_and_a_garbled_one_ignored(server: OpenAITestServer) -> None:
    server.script("apples", "fine")
    server.fail_next(429, retry_after=email.utils.formatdate(time.time() + 2, usegmt=True))
    started = time.monotonic()
    assert await make(server).chat(ASK) == "fine"
    assert time.monotonic() - started >= 0.9  # the date has one-second resolution
    server.fail_next(503, retry_after="soon")
    assert await make(server).chat(ASK) == "fine"  # backoff instead of a crash


async def test_5xx_is_retried_with_backoff(server: OpenAITestServer) -> None:
    server.script("apples", {"name": "Bob", "count": 3})
    server.fail_next(500, times=1)
    server.fail_next(503, times=1)
    usage = Usage()
    assert await make(server).structured(ASK, Answer, usage=usage) == Answer(name="Bob", count=3)
    assert len(server.chat_requests) == 3 and usage.calls == 1


async def test_persistent_5xx_raises_llm_error_with_last_response(server: OpenAITestServer) -> None:
    server.fail_next(500, times=10)
    with pytest.raises(LLMError) as info:
        await make(server).chat(ASK)
    assert info.value.status_code == 500 and "injected 500" in (info.value.response or "")
    assert len(server.chat_requests) == 3  # max_retries=2: three attempts, then give up


async def test_client_errors_are_not_retried(server: OpenAITestServer) -> None:
    server.fail_next(401, times=5)
    with pytest.raises(LLMError) as info:
        await make(server).chat(ASK)
    assert info.value.status_code == 401
    assert len(server.chat_requests) == 1


async def test_a_hang_past_the_timeout_is_retried_then_reported(server: OpenAITestServer) -> None:
    server.script("apples", "fine")
    server.hang_next(2.0, times=1)
    llm = make(server, timeout=0.5)
    assert await llm.chat(ASK) == "fine"
    server.hang_next(2.0, times=3)
    with pytest.raises(LLMError, match="timed out"):
        await llm.chat(ASK)


async def test_json_mode_is_dropped_when_the_endpoint_refuses_it(server: OpenAITestServer) -> None:
    server.reject_json_mode = True
    server.script("apples", {"name": "Bob", "count": 3})
    llm = make(server)
    assert await llm.structured(ASK, Answer) == Answer(name="Bob", count=3)
    assert await llm.structured(ASK, Answer) == Answer(name="Bob", count=3)
    formats = ["response_format" in body for body in server.chat_requests]
    assert formats == [True, False, False]  # refused once, never sent again


async def test_json_mode_forced_on_surfaces_the_refusal(server: OpenAITestServer) -> None:
    server.reject_json_mode = True
    with pytest.raises(LLMError) as info:
        await make(server, json_mode=True).structured(ASK, Answer)
    assert info.value.status_code == 400


async def test_concurrency_is_bounded_per_model(server: OpenAITestServer) -> None:
    server.script("apples", "ok")
    server.hang_next(0.2, times=8)
    llm = make(server, max_concurrency=2)
    assert await asyncio.gather(*(llm.chat(ASK) for _ in range(8))) == ["ok"] * 8
    assert server.max_in_flight == 2


async def test_unconfigured_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="llm.model"):
        ChatModel(LLMConfig())
    with pytest.raises(ConfigError, match="api key"):
        ChatModel(LLMConfig(model="gpt-4o-mini"))
