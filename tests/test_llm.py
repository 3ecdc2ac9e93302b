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
    assert body["model"] == "test-model"
    # The reply model's schema, strict: every property required, nothing else allowed.
    assert body["response_format"]["type"] == "json_schema"
    sent = body["response_format"]["json_schema"]
    assert sent["name"] == "Answer" and sent["strict"] is True
    assert sent["schema"]["required"] == ["name", "count"] and sent["schema"]["additionalProperties"] is False
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


async def test_an_endpoint_that_never_answers_fails_at_the_one_deadline_naming_its_url(
        server: OpenAITestServer) -> None:
    server.script("apples", "fine")
    server.hang_next(30.0, times=10)
    llm = make(server, timeout=1.0, max_retries=5)  # five retries of 1 s each used to take 6 s and more
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        await llm.chat(ASK)
    assert time.monotonic() - started < 2.5
    assert server.base_url in str(info.value) and "llm.timeout" in str(info.value)


async def test_retries_happen_within_the_deadline(server: OpenAITestServer) -> None:
    server.script("apples", "fine")
    server.fail_next(503, times=2)
    assert await make(server, timeout=5.0).chat(ASK) == "fine"
    assert len(server.chat_requests) == 3


async def test_a_connection_error_names_the_url() -> None:
    import socket
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    llm = ChatModel(LLMConfig(base_url=url, model="m", max_retries=1), retry_initial=0.01, retry_max=0.02)
    with pytest.raises(LLMError) as info:
        await llm.chat(ASK)
    assert url in str(info.value) and "Connection error." != str(info.value)


@pytest.mark.parametrize("url", ["localhost:8000/v1", "127.0.0.1:8080", "ftp://example.com/v1"])
def test_a_base_url_without_http_is_explained(url: str) -> None:
    from reme.config import ReMeConfig
    with pytest.raises(ConfigError, match="http://") as info:
        ReMeConfig.load(env={}, llm={"base_url": url, "model": "m"})
    if "://" not in url:
        assert f"http://{url}" in str(info.value)


async def test_response_format_steps_down_when_the_endpoint_refuses_it(server: OpenAITestServer) -> None:
    server.reject_formats = {"json_schema"}
    server.script("apples", {"name": "Bob", "count": 3})
    llm = make(server)
    assert await llm.structured(ASK, Answer) == Answer(name="Bob", count=3)
    assert await llm.structured(ASK, Answer) == Answer(name="Bob", count=3)
    formats = [(body.get("response_format") or {}).get("type") for body in server.chat_requests]
    assert formats == ["json_schema", "json_object", "json_object"]  # refused once, never sent again


async def test_an_endpoint_refusing_every_response_format_gets_none(server: OpenAITestServer) -> None:
    server.reject_json_mode = True
    server.script("apples", {"name": "Bob", "count": 3})
    llm = make(server)
    assert await llm.structured(ASK, Answer) == Answer(name="Bob", count=3)
    assert await llm.structured(ASK, Answer) == Answer(name="Bob", count=3)
    formats = ["response_format" in body for body in server.chat_requests]
    assert formats == [True, True, False, False]


@pytest.mark.parametrize("mode", ["json_schema", "json_object"])
async def test_a_named_structured_output_mode_surfaces_the_refusal(server: OpenAITestServer, mode: str) -> None:
    server.reject_json_mode = True
    with pytest.raises(LLMError) as info:
        await make(server, structured_output=mode).structured(ASK, Answer)
    assert info.value.status_code == 400
    assert server.chat_requests[0]["response_format"]["type"] == mode


async def test_structured_output_none_sends_no_response_format(server: OpenAITestServer) -> None:
    server.script("apples", {"name": "Bob", "count": 3})
    assert await make(server, structured_output="none").structured(ASK, Answer) == Answer(name="Bob", count=3)
    assert "response_format" not in server.chat_requests[0]


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
