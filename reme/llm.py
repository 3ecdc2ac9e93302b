"""`ChatModel`: the one LLM client. OpenAI-compatible chat completions with retries in one place,
a concurrency bound, token accounting, and replies parsed into pydantic models.

>>> llm = ChatModel(LLMConfig(base_url="http://localhost:8000/v1", api_key="k", model="qwen3"))
>>> plan = await llm.structured([{"role": "user", "content": prompt}], QueryPlan, usage=usage)
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from typing import Annotated, Any, Mapping, Sequence, TypeVar

import openai
from pydantic import BaseModel, BeforeValidator, ValidationError

from reme.config import LLMConfig
from reme.errors import ConfigError, LLMError, LLMOutputError, PromptTooLargeError, describe
from reme.retry import Backoff, retrying
from reme.schema import Usage, parse_json

log = logging.getLogger("reme.llm")
M = TypeVar("M", bound=BaseModel)

# Lenient field types for reply models: models write null where a default was meant.
def _fraction(value: Any) -> float:
    if value is None:
        return 0.5
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # pydantic turns only ValueError into a validation error
        raise ValueError(f"expected a number from 0 to 1, got {value!r}") from None
    return 0.5 if math.isnan(number) else min(max(number, 0.0), 1.0)


Fraction = Annotated[float, BeforeValidator(_fraction)]
"""A 0-1 number: null (or NaN) means 0.5, anything outside is clamped."""
Note = Annotated[str, BeforeValidator(lambda v: "" if v is None else v)]
"""Free text where null means empty."""
IntList = Annotated[list[int], BeforeValidator(lambda v: [] if v is None else v)]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json(text: str) -> str:
    """The JSON in a reply: a fenced block, else the span from the first `{`/`[` to the last
    matching bracket, else the text as it is."""
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return text.strip()
    start = min(starts)
    end = text.rfind("}" if text[start] == "{" else "]")
    return text[start:end + 1] if end > start else text[start:]


def _wrap(data: Any, model: type[BaseModel]) -> Any:
    """A bare list where the model has a single field: models often drop the one-key wrapper."""
    fields = list(model.model_fields)
    return {fields[0]: data} if isinstance(data, list) and len(fields) == 1 else data


class ChatModel:
    """An OpenAI-compatible chat endpoint with retries, a concurrency bound and usage counting.

    429, 5xx, timeouts and connection errors are retried `max_retries` times with exponential
    backoff and jitter (a `Retry-After` header is honoured, up to 60 s); any other error, or the
    last failure, raises `LLMError` with the last status and body.
    """

    def __init__(self, config: LLMConfig, *, retry_initial: float = 0.5, retry_max: float = 20.0) -> None:
        if not config.model:
            raise ConfigError("no LLM configured: set llm.model (and llm.base_url, llm.api_key or OPENAI_API_KEY)")
        api_key = config.api_key.get_secret_value() if config.api_key else None
        if not api_key:
            if not config.base_url:
                raise ConfigError("the LLM needs an api key: set llm.api_key or OPENAI_API_KEY")
            api_key = "EMPTY"  # self-hosted endpoints (vLLM, Ollama) usually take any key
        self.config = config
        self.model = config.model
        self._client = openai.AsyncOpenAI(base_url=config.base_url, api_key=api_key, timeout=config.timeout,
                                          max_retries=0)
        self.backoff = Backoff(retry_initial, retry_max)
        self._json_mode = config.json_mode
        self._limits: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._limits.get(loop)
        if sem is None:
            sem = self._limits[loop] = asyncio.Semaphore(self.config.max_concurrency)
        return sem

    async def chat(self, messages: Sequence[Mapping[str, Any]], *, usage: Usage | None = None,
                   json_mode: bool = False) -> str:
        """The reply text for `messages`; tokens and seconds are added to `usage`. A prompt longer
        than `llm.max_prompt_chars` is refused (`PromptTooLargeError`) before anything is sent."""
        size = sum(len(str(m.get("content") or "")) for m in messages)
        if size > self.config.max_prompt_chars:
            raise PromptTooLargeError(f"the prompt for {self.model} is {size} characters; llm.max_prompt_chars is "
                                      f"{self.config.max_prompt_chars}: send less at a time or raise the ceiling")
        kwargs: dict[str, Any] = dict(model=self.model, messages=list(messages), temperature=self.config.temperature)
        if self.config.max_tokens:
            kwargs["max_tokens"] = self.config.max_tokens
        if self.config.extra_body:
            kwargs["extra_body"] = dict(self.config.extra_body)
        use_json = json_mode and self._json_mode is not False
        if use_json:
            kwargs["response_format"] = {"type": "json_object"}
        while True:
            try:
                response = await self._create(kwargs, usage)
                break
            except openai.BadRequestError as exc:
                if "response_format" not in kwargs or self._json_mode is True:
                    raise self._error(exc) from exc
                # The endpoint may not know response_format: remember that and ask without it.
                log.info("%s refused response_format (%s); continuing without JSON mode", self.model, exc.message)
                self._json_mode = False
                use_json = False
                del kwargs["response_format"]
            except openai.OpenAIError as exc:
                raise self._error(exc) from exc
            except (ValueError, RecursionError) as exc:  # a 200 whose body is not JSON, or nested too deep
                raise LLMError(f"{self.model} answered with a body that is not a chat completion "
                               f"({type(exc).__name__})") from None
        if use_json:
            self._json_mode = True
        if usage is not None:
            usage.calls += 1
            counts = getattr(response, "usage", None)
            for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
                value = getattr(counts, name, None)
                if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 53:
                    setattr(usage, name, getattr(usage, name) + value)
        try:  # the client does not check a 200's body: HTML or `{"choices": 5}` arrive as they are
            content = response.choices[0].message.content
        except (AttributeError, TypeError, IndexError, KeyError):
            content = None
        if not isinstance(content, str):
            raise LLMError(f"{self.model} returned no message content",
                           response=response[:2000] if isinstance(response, str) else None)
        return content

    async def _create(self, kwargs: dict[str, Any], usage: Usage | None) -> Any:
        """One request with its retries, inside the concurrency bound; the time it took (not the
        time queued for the bound) is added to `usage.llm_seconds`."""
        async with self._semaphore():
            started = time.perf_counter()
            try:
                async for attempt in retrying(self.config.max_retries, self.backoff):
                    with attempt:
                        return await self._client.chat.completions.create(**kwargs)
            finally:
                if usage is not None:
                    usage.llm_seconds += time.perf_counter() - started
        raise AssertionError("unreachable")  # pragma: no cover - retrying re-raises the last error

    def _error(self, exc: openai.OpenAIError) -> LLMError:
        if isinstance(exc, openai.APIStatusError):
            body = exc.response.text if exc.response is not None else None
            return LLMError(f"LLM request to {self.model} failed with HTTP {exc.status_code}: {exc.message}",
                            status_code=exc.status_code, response=body)
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(f"LLM request to {self.model} timed out after {self.config.timeout:g} s "
                            f"({self.config.max_retries + 1} attempts)")
        return LLMError(f"LLM request to {self.model} failed: {exc}")

    async def structured(self, messages: Sequence[Mapping[str, Any]], response_model: type[M], *,
                         usage: Usage | None = None) -> M:
        """Ask for JSON and validate it as `response_model`. An invalid reply is shown back to the
        model with the error, once; a second invalid reply raises `LLMOutputError` with the raw text."""
        history = list(messages)
        raw = ""
        error = ""
        for attempt in range(2):
            raw = await self.chat(history, usage=usage, json_mode=True)
            try:
                return response_model.model_validate(_wrap(parse_json(extract_json(raw), "the reply"),
                                                           response_model))
            except (ValidationError, ValueError) as exc:
                error = describe(exc) if isinstance(exc, ValidationError) else str(exc)
                log.info("%s reply did not validate as %s (attempt %d): %s", self.model, response_model.__name__,
                         attempt + 1, error)
            history = [*messages, {"role": "assistant", "content": raw},
                       {"role": "user", "content": f"That reply is not valid: {error}\n"
                                                   "Answer again with only the corrected JSON object."}]
        raise LLMOutputError(f"{self.model} did not return a valid {response_model.__name__}: {error}", raw=raw)

    async def close(self) -> None:
        await self._client.close()
