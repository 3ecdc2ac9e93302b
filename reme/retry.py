"""The one retry policy for OpenAI-compatible endpoints (chat and embeddings): 429, 5xx,
timeouts and connection errors are retried with exponential backoff and jitter, and a
`Retry-After` header (seconds or an HTTP date) is obeyed up to `MAX_RETRY_AFTER`."""

from __future__ import annotations

import email.utils
import math
import sys
import time

from tenacity import (AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential,
                      wait_random)

MAX_RETRY_AFTER = 60.0
"""The longest a `Retry-After` header may make us wait; a longer one is capped, not obeyed."""


def retryable(exc: BaseException) -> bool:
    # APITimeoutError is an APIConnectionError; 5xx arrive as InternalServerError or a bare APIStatusError.
    openai = sys.modules.get("openai")  # not imported yet (it is, lazily, by every client): not its error
    if openai is None:
        return False
    if isinstance(exc, (openai.RateLimitError, openai.APIConnectionError)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def retry_after(exc: BaseException | None) -> float | None:
    """The wait a response's `Retry-After` asks for, capped; None when absent or unreadable."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, OverflowError):
            return None
    if not math.isfinite(seconds):  # "nan" and "inf" parse as floats; NaN would stall every timer
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class Backoff:
    """Exponential backoff (`initial`, doubling, at most `maximum`) plus up to `initial` of jitter,
    unless the server said how long to wait."""

    def __init__(self, initial: float = 0.5, maximum: float = 20.0) -> None:
        self._wait = wait_exponential(multiplier=initial, max=maximum) + wait_random(0, initial)

    def __call__(self, state: RetryCallState) -> float:
        told = retry_after(state.outcome.exception() if state.outcome else None)
        return told if told is not None else float(self._wait(state))


def retrying(max_retries: int, backoff: Backoff) -> AsyncRetrying:
    """`async for attempt in retrying(...): with attempt: ...` — then the last error is re-raised."""
    return AsyncRetrying(stop=stop_after_attempt(max_retries + 1), wait=backoff, retry=retry_if_exception(retryable),
                         reraise=True)
