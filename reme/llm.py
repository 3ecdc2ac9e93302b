"""`ChatModel`: the one LLM client. OpenAI-compatible chat completions with retries and one
deadline per call, a concurrency bound, token accounting, and replies parsed into pydantic models.

>>> llm = ChatModel(LLMConfig(base_url="http://localhost:8000/v1", api_key="k", model="qwen3"))
>>> plan = await llm.structured([{"role": "user", "content": prompt}], QueryPlan, usage=usage)

Every value a model returns is hostile input: a reply is asked for in the shape of its pydantic
model (`llm.structured_output`), then read leniently (`repair_json`: fences, prose around it,
trailing commas, single quotes, Python literals, a reply cut off at `max_tokens`) and validated
item by item (`structured`): an item or field that does not validate is dropped or set to its
default and reported as a `Rejection`, instead of failing the whole reply or slipping through.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import json
import logging
import math
import re
import time
import typing
import warnings
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping, Sequence, TypeVar

from pydantic import BaseModel, BeforeValidator, ValidationError

from reme.config import LLMConfig

if TYPE_CHECKING:
    import openai
from reme.errors import ConfigError, LLMError, LLMOutputError, PromptTooLargeError, describe
from reme.retry import Backoff, retrying
from reme.schema import Rejection, Usage, parse_json

log = logging.getLogger("reme.llm")
M = TypeVar("M", bound=BaseModel)


# Lenient field types for reply models: models write null where a default was meant.
def _fraction(value: Any) -> float:
    if value is None:
        return 0.5
    if isinstance(value, bool):
        raise ValueError(f"expected a number from 0 to 1, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # pydantic turns only ValueError into a validation error
        raise ValueError(f"expected a number from 0 to 1, got {str(value)[:40]!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"expected a number from 0 to 1, got {number}")
    return min(max(number, 0.0), 1.0)


Fraction = Annotated[float, BeforeValidator(_fraction)]
"""A 0-1 number: null means 0.5, a finite number outside is clamped, NaN or infinity is invalid."""
Note = Annotated[str, BeforeValidator(lambda v: "" if v is None else v)]
"""Free text where null means empty."""
IntList = Annotated[list[int], BeforeValidator(lambda v: [] if v is None else v)]

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)```", re.DOTALL)
_OPEN_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?")


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


# -- near-JSON -----------------------------------------------------------------------------------
_STRING = {'"': re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL), "'": re.compile(r"'((?:[^'\\]|\\.)*)'", re.DOTALL)}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORDS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false", "None": "null",
          "NaN": "NaN", "nan": "NaN", "Infinity": "Infinity", "inf": "Infinity"}
_CONTROL = re.compile(r"[\x00-\x1f]")


def _json_string(body: str, quote: str) -> str:
    """A quoted string's body (escapes as written, JSON's or Python's) as a JSON string literal."""
    text = body
    if quote == "'":
        text = re.sub(r'(\\*)"', lambda m: m.group(1) + ('"' if len(m.group(1)) % 2 else '\\"'), text)
        text = text.replace("\\'", "'")
    try:
        value = json.loads('"' + text + '"', strict=False)  # strict=False: raw newlines and tabs inside
    except ValueError:
        try:  # Python's escapes (\x1f, \U0001f600, \a) in a repr'd dict
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = ast.literal_eval(quote + _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", body) + quote)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError("a string with escapes that are neither JSON's nor Python's") from None
    if not isinstance(value, str):
        raise ValueError("a quoted string that does not read as one")
    return json.dumps(value, ensure_ascii=False)


def repair_json(text: str) -> tuple[str, bool]:
    """Near-JSON as JSON: the first object or array in `text` (inside a ``` fence if there is
    one; prose around it is ignored), with single-quoted strings, Python's True/False/None,
    unquoted keys, trailing or missing commas and raw control characters in strings put right.
    A value cut off before its end (a reply stopped at `max_tokens`) is cut back to its last
    complete item and closed; the second element says whether that happened. ValueError when
    no JSON can be made of it."""
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    else:
        opened = _OPEN_FENCE.search(text)  # a fence the reply never closed
        text = text[opened.end():] if opened else text
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise ValueError("the reply holds no JSON object")
    out: list[str] = []
    stack: list[str] = []  # open brackets
    states: list[str] = []  # per open bracket: what comes next (key, colon, value, comma)
    in_item: list[bool] = []  # per open bracket: whether it is an item of a list
    items_open = 0  # how many of them are
    # (len(out), len(stack)) after the last complete item: where a cut-off reply ends. The brackets
    # open then are still the first ones of `stack` when it is cut: to go below that depth, a
    # bracket closes, and that is a complete item again.
    safe = (0, 0)
    i, n = min(starts), len(text)

    def done() -> None:  # a value ended: the container it is in expects a comma next
        nonlocal safe
        if states:
            states[-1] = "comma"
            if not items_open:  # a part of a list item is no place to stop: the item is whole or left out
                safe = (len(out), len(stack))

    while i < n and (stack or not out):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        state = states[-1] if states else "value"
        if ch in "{[":
            if state == "comma" and stack and stack[-1] == "[":
                out.append(",")  # `}{` between items: the comma a model forgot
            elif state != "value":
                raise ValueError(f"unexpected {ch!r} at character {i}")
            in_item.append(bool(stack) and stack[-1] == "[")
            items_open += in_item[-1]
            out.append(ch)
            stack.append(ch)
            states.append("key" if ch == "{" else "value")
            if not items_open:  # an open field's value is kept (empty) when cut off; an open list item is not
                safe = (len(out), len(stack))
            i += 1
        elif ch in "}]":
            if out and out[-1] == ",":
                out.pop()
            if states[-1] in ("colon", "value") and stack[-1] == "{" and out[-1] != "{":
                raise ValueError(f"a key without a value before character {i}")
            out.append("}" if stack[-1] == "{" else "]")
            stack.pop()
            states.pop()
            items_open -= in_item.pop()
            done()
            i += 1
        elif ch == ",":
            if state == "comma":
                out.append(",")
                states[-1] = "key" if stack[-1] == "{" else "value"
            i += 1
        elif ch == ":":
            if state != "colon":
                raise ValueError(f"unexpected ':' at character {i}")
            out.append(":")
            states[-1] = "value"
            i += 1
        elif ch in "\"'":
            match = _STRING[ch].match(text, i)
            if match is None:
                break  # cut off inside a string
            if state == "comma" and stack[-1] == "[":
                out.append(",")
            elif state == "comma":  # `"a": 1 "b": 2`
                out.append(",")
                states[-1] = "key"
            out.append(_json_string(match.group(1), ch))
            if states[-1] == "key":
                states[-1] = "colon"
            else:
                done()
            i = match.end()
        else:
            number = _NUMBER.match(text, i)
            word = None if number else _WORD.match(text, i)
            token = number or word
            if token is None:
                raise ValueError(f"unexpected {ch!r} at character {i}")
            if token.end() >= n:
                break  # cut off inside a number or word
            if states[-1] == "key" or (state == "comma" and stack[-1] == "{"):
                if word is None:
                    raise ValueError(f"unexpected number at character {i}")
                if state == "comma":
                    out.append(",")
                out.append(json.dumps(word.group()))  # an unquoted key
                states[-1] = "colon"
            else:
                if state == "comma":
                    out.append(",")
                if number:
                    digits = number.group().lstrip("+")
                    out.append(str(int(digits)) if re.fullmatch(r"-?\d{1,30}", digits) else json.dumps(float(digits)))
                elif word and word.group() in _WORDS:
                    out.append(_WORDS[word.group()])
                else:
                    raise ValueError(f"unexpected word {token.group()[:20]!r} at character {i}")
                done()
            i = token.end()
    if not stack:
        return "".join(out), False
    # Cut off: keep what was complete, close what was open then.
    kept = out[:safe[0]]
    if kept and kept[-1] == ",":
        kept.pop()
    closers = ["}" if b == "{" else "]" for b in reversed(stack[:safe[1]])]
    if not kept:
        raise ValueError("the reply ends before any JSON value is complete")
    return "".join(kept + closers), True


def parse_reply(text: str, cut_off: bool = False) -> tuple[Any, bool]:
    """The JSON value in a model's reply, repaired when needed (see `repair_json`); the second
    element says whether only its complete part was kept. That is done only for a reply that was
    `cut_off` (at `max_tokens`): one that stopped by itself before its JSON ended is malformed."""
    try:
        return parse_json(extract_json(text), "the reply"), False
    except ValueError as exc:
        error = exc
    try:
        fixed, cut = repair_json(text)
    except ValueError:
        raise error from None
    if cut and not cut_off:
        raise ValueError("the reply ends before its JSON does")
    return parse_json(fixed, "the reply"), cut


# -- the shape asked for -------------------------------------------------------------------------
KEPT_MAX_ITEMS = 64
"""The largest `maxItems` a reply schema keeps (see `response_schema`)."""


def response_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema in the strict form OpenAI's structured outputs (and llama.cpp's and
    vLLM's grammars) take: every property required, no others allowed, no defaults. Length limits
    are left out (they are checked when the reply is validated): strict mode refuses some, and a
    grammar spelling out 100k characters is no use. A small `maxItems` (at most `KEPT_MAX_ITEMS`)
    stays: it is what stops a small model counting `"sources": [0, 1, 2, ...` until its token
    budget runs out."""
    schema = copy.deepcopy(model.model_json_schema())
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in ("default", "maxLength", "minLength", "maxItems", "minItems", "title"):
                if key == "maxItems" and isinstance(node.get(key), int) and node[key] <= KEPT_MAX_ITEMS:
                    continue
                if key in node and not isinstance(node[key], dict):
                    node.pop(key)
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return schema


def _item_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The model of a list field's items (`memories: list[Memory]` -> Memory), if it is one."""
    field = model.model_fields.get(name)
    args = typing.get_args(field.annotation) if field is not None else ()
    return args[0] if len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], BaseModel) else None


def _salvage(data: Any, model: type[M], errors: list[Any], step: str) -> tuple[dict[str, Any], list[Rejection]] | None:
    """`data` with what did not validate taken out: a list item with an invalid required field
    dropped, an invalid field that has a default removed (so the default applies). None when an
    error is not of that kind (a required top-level field is missing or wrong)."""
    if not isinstance(data, dict):
        return None
    fixed = {k: list(v) if isinstance(v, list) else v for k, v in data.items()}
    drops: dict[tuple[str, int], Rejection] = {}
    defaults: list[tuple[str, int | None, str, str]] = []  # (field, item index, item field, reason)
    for err in errors:
        loc, reason = err["loc"], str(err.get("ctx", {}).get("error") or err["msg"])[:200]
        name = loc[0] if loc and isinstance(loc[0], str) else None
        field = model.model_fields.get(name) if name is not None else None
        if name is None or field is None:
            return None
        if len(loc) >= 2 and isinstance(loc[1], int) and isinstance(fixed.get(name), list):
            index = loc[1]
            item_model = _item_model(model, name)
            sub = loc[2] if len(loc) >= 3 and isinstance(loc[2], str) else None
            sub_field = item_model.model_fields.get(sub) if item_model is not None and sub is not None else None
            if sub is not None and sub_field is not None and not sub_field.is_required():
                defaults.append((name, index, sub, reason))
            elif (name, index) not in drops:
                drops[(name, index)] = Rejection(step=step, path=f"{name}[{index}]" + (f".{sub}" if sub else ""),
                                                 action="dropped", reason=reason)
        elif not field.is_required():
            defaults.append((name, None, "", reason))
        else:
            return None
    rejected = list(drops.values())
    for name, position, sub, reason in defaults:
        if position is None:
            fixed.pop(name, None)
            rejected.append(Rejection(step=step, path=name, action="defaulted", reason=reason))
        elif (name, position) not in drops and isinstance(fixed[name][position], dict):
            fixed[name][position] = {k: v for k, v in fixed[name][position].items() if k != sub}
            rejected.append(Rejection(step=step, path=f"{name}[{position}].{sub}", action="defaulted", reason=reason))
    for name in {name for name, _ in drops}:
        fixed[name] = [v for i, v in enumerate(fixed[name]) if (name, i) not in drops]
    return fixed, rejected


def _wrap(data: Any, model: type[BaseModel]) -> Any:
    """A bare list where the model has a single field: models often drop the one-key wrapper."""
    fields = list(model.model_fields)
    return {fields[0]: data} if isinstance(data, list) and len(fields) == 1 else data


def _raw(value: Any) -> str:
    """A reply value that is not text, as the text `LLMOutputError.raw` keeps."""
    try:
        return json.dumps(value, ensure_ascii=False)[:2000]
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:2000]


_FORMATS: tuple[Literal["json_schema", "json_object", "none"], ...] = ("json_schema", "json_object", "none")


class ChatModel:
    """An OpenAI-compatible chat endpoint with retries, a deadline, a concurrency bound and usage
    counting.

    429, 5xx, timeouts and connection errors are retried `max_retries` times with exponential
    backoff and jitter (a `Retry-After` header is honoured, up to 60 s), all within `llm.timeout`
    seconds per call; any other error, the deadline, or the last failure raises `LLMError`
    naming the endpoint, with the last status and body.
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
        import openai  # here, not at the top: a command that needs no LLM never pays for its import

        self._client = openai.AsyncOpenAI(base_url=config.base_url, api_key=api_key, timeout=config.timeout,
                                          max_retries=0)
        self.url = str(self._client.base_url).rstrip("/")
        self.backoff = Backoff(retry_initial, retry_max)
        mode = config.structured_output
        self._format = "json_schema" if mode == "auto" else mode
        self._limits: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._limits.get(loop)
        if sem is None:
            sem = self._limits[loop] = asyncio.Semaphore(self.config.max_concurrency)
        return sem

    async def chat(self, messages: Sequence[Mapping[str, Any]], *, usage: Usage | None = None,
                   response_model: type[BaseModel] | None = None) -> str:
        """The reply text for `messages`; tokens and seconds are added to `usage`. With a
        `response_model`, the reply is asked for in its shape (see `llm.structured_output`). A
        prompt longer than `llm.max_prompt_chars` is refused (`PromptTooLargeError`) before
        anything is sent."""
        text, _ = await self._complete(messages, usage, response_model)
        return text

    def _response_format(self, response_model: type[BaseModel] | None) -> dict[str, Any] | None:
        if response_model is None or self._format == "none":
            return None
        if self._format == "json_object":
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": re.sub(r"[^A-Za-z0-9_-]", "_", response_model.__name__),
                                                       "schema": response_schema(response_model), "strict": True}}

    async def _complete(self, messages: Sequence[Mapping[str, Any]], usage: Usage | None,
                        response_model: type[BaseModel] | None, budget: int | None = None) -> tuple[str, bool]:
        """The reply text, and whether it was cut off at `max_tokens`."""
        import openai

        size = sum(len(str(m.get("content") or "")) for m in messages)
        if size > self.config.max_prompt_chars:
            raise PromptTooLargeError(f"the prompt for {self.model} is {size} characters; llm.max_prompt_chars is "
                                      f"{self.config.max_prompt_chars}: send less at a time or raise the ceiling")
        kwargs: dict[str, Any] = dict(model=self.model, messages=list(messages), temperature=self.config.temperature)
        if self.config.max_tokens:  # a budget only lowers a ceiling the settings ask to send
            kwargs["max_tokens"] = min(self.config.max_tokens, budget or self.config.max_tokens)
        if self.config.extra_body:
            kwargs["extra_body"] = dict(self.config.extra_body)
        while True:
            response_format = self._response_format(response_model)
            if response_format is None:
                kwargs.pop("response_format", None)
            else:
                kwargs["response_format"] = response_format
            try:
                response = await self._create(kwargs, usage)
                break
            except openai.BadRequestError as exc:
                if response_format is None or self.config.structured_output != "auto":
                    raise self._error(exc) from exc
                # The endpoint does not take this response_format: remember that and ask with the next.
                step_down = _FORMATS[_FORMATS.index(self._format) + 1]
                log.info("%s at %s refused response_format %s (%s); using %s from now on", self.model, self.url,
                         self._format, exc.message, step_down)
                self._format = step_down
            except openai.OpenAIError as exc:
                raise self._error(exc) from exc
            except (ValueError, RecursionError) as exc:  # a 200 whose body is not JSON, or nested too deep
                raise LLMError(f"{self.model} at {self.url} answered with a body that is not a chat completion "
                               f"({type(exc).__name__})") from None
        if usage is not None:
            usage.calls += 1
            counts = getattr(response, "usage", None)
            for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
                value = getattr(counts, name, None)
                if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 53:
                    setattr(usage, name, getattr(usage, name) + value)
        try:  # the client does not check a 200's body: HTML or `{"choices": 5}` arrive as they are
            choice = response.choices[0]
            message = choice.message
        except (AttributeError, TypeError, IndexError, KeyError):
            raise LLMError(f"{self.model} at {self.url} returned no message content",
                           response=response[:2000] if isinstance(response, str) else None) from None
        content = getattr(message, "content", None)
        if not isinstance(content, str):  # null, a number, a list of parts, an object: a malformed reply
            raise LLMOutputError(f"{self.model} at {self.url} answered with content that is not text "
                                 f"({type(content).__name__})", raw=_raw(content))
        return content, getattr(choice, "finish_reason", None) == "length"

    async def _create(self, kwargs: dict[str, Any], usage: Usage | None) -> Any:
        """One request with its retries, inside the concurrency bound and within `llm.timeout`;
        the time it took (not the time queued for the bound) is added to `usage.llm_seconds`."""
        async with self._semaphore():
            started = time.perf_counter()
            try:
                return await asyncio.wait_for(self._attempts(kwargs), self.config.timeout)
            except asyncio.TimeoutError:
                raise LLMError(f"the LLM at {self.url} ({self.model}) gave no answer within llm.timeout = "
                               f"{self.config.timeout:g} s (the deadline for one call, retries included): check "
                               "that the endpoint is up, or raise llm.timeout for a slow model") from None
            finally:
                if usage is not None:
                    usage.llm_seconds += time.perf_counter() - started

    async def _attempts(self, kwargs: dict[str, Any]) -> Any:
        async for attempt in retrying(self.config.max_retries, self.backoff):
            with attempt:
                return await self._client.chat.completions.create(**kwargs)
        raise AssertionError("unreachable")  # pragma: no cover - retrying re-raises the last error

    def _error(self, exc: openai.OpenAIError) -> LLMError:
        import openai

        if isinstance(exc, openai.APIStatusError):
            body = exc.response.text if exc.response is not None else None
            return LLMError(f"LLM request to {self.model} at {self.url} failed with HTTP {exc.status_code}: "
                            f"{exc.message}", status_code=exc.status_code, response=body)
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(f"LLM request to {self.model} at {self.url} timed out after {self.config.timeout:g} s")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f": {cause}" if cause is not None and str(cause) else ""
            return LLMError(f"cannot reach the LLM at {self.url} ({self.model}) after "
                            f"{self.config.max_retries + 1} attempts{detail}; check llm.base_url and that the "
                            "server is running")
        return LLMError(f"LLM request to {self.model} at {self.url} failed: {exc}")

    async def structured(self, messages: Sequence[Mapping[str, Any]], response_model: type[M], *,
                         usage: Usage | None = None, rejected: list[Rejection] | None = None,
                         step: str | None = None, budget: int | None = None) -> M:
        """Ask for JSON in the shape of `response_model` and validate the reply as it.

        The reply is repaired if needed (`parse_reply`). Items of a list field that do not
        validate are dropped, and fields with a default that do not validate get the default;
        each such value is appended to `rejected` as a `Rejection` of `step` (default: the
        model's name), as is a reply cut off at `max_tokens` (its incomplete items are left out).
        A reply that cannot be read at all is shown back to the model with the error, once; a
        second such reply raises `LLMOutputError` with the raw text.

        `budget` is the most tokens a sound reply needs: with `llm.max_tokens` set, the smaller of
        the two is sent, so a small model repeating itself is stopped early (its complete items
        kept); without it no limit is sent (some endpoints refuse `max_tokens`)."""
        step = step or response_model.__name__
        history = list(messages)
        raw = ""
        error = ""
        for attempt in range(2):
            raw, cut = await self._complete(history, usage, response_model, budget)
            if usage is not None:
                usage.steps[step] = usage.steps.get(step, 0) + 1
            log.debug("%s reply (%d characters%s): %s", step, len(raw), ", cut off" if cut else "", raw[:4000])
            try:
                data, repaired_cut = parse_reply(raw, cut)
                data = _wrap(data, response_model)
                try:
                    result, found = response_model.model_validate(data), []
                except ValidationError as exc:
                    salvaged = _salvage(data, response_model, exc.errors(), step)
                    if salvaged is None:
                        raise
                    result, found = response_model.model_validate(salvaged[0]), salvaged[1]
                if repaired_cut:
                    found.append(Rejection(step=step, action="dropped", reason="the reply was cut off at "
                                           "llm.max_tokens: its incomplete last items were left out"))
                for r in found:
                    log.info("%s reply: %s %s (%s)", step, r.action, r.path or "the rest", r.reason)
                if rejected is not None:
                    rejected.extend(found)
                return result
            except (ValidationError, ValueError) as exc:
                error = describe(exc) if isinstance(exc, ValidationError) else str(exc)
                log.info("%s reply did not validate as %s (attempt %d): %s", self.model, response_model.__name__,
                         attempt + 1, error)
            # A reply cut off is asked for again shorter; the error itself would only be repeated
            # back by a small model (`{"guideline": "Field required"}`).
            retry = ("That reply was too long: it was cut off before its end. Answer again with only the JSON "
                     "object, much shorter." if cut else
                     f"That reply is not valid: {error[:2000]}\nAnswer again with only the corrected JSON object.")
            history = [*messages, {"role": "assistant", "content": raw[:20_000]}, {"role": "user", "content": retry}]
        raise LLMOutputError(f"{self.model} did not return a valid {response_model.__name__}: {error}", raw=raw)

    async def close(self) -> None:
        await self._client.close()
