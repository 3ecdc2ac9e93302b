"""The private event loop behind the sync faces (`ReMeSync`, `ReMeClientSync`): one loop in a
daemon thread that runs their coroutines. Standard library only, so the HTTP client can use it
without pulling in the store."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Awaitable, Coroutine, TypeVar

from reme.errors import ReMeError

T = TypeVar("T")


class LoopThread:
    """Runs coroutines on a private loop. After `stop()` a call raises `ReMeError` instead of
    waiting forever on a loop that no longer runs; `start()` makes a fresh loop."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.start()

    def start(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=self.owner, daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._loop.is_closed()

    def stop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()

    def run(self, coro: Coroutine[Any, Any, T] | Awaitable[T]) -> T:
        return self.submit(coro).result()

    def submit(self, coro: Coroutine[Any, Any, T] | Awaitable[T]) -> "concurrent.futures.Future[T]":
        """Start `coro` on the private loop; `asyncio.wrap_future` awaits it from another loop."""
        if self._loop.is_closed() or not self._thread.is_alive():
            if asyncio.iscoroutine(coro):
                coro.close()
            raise ReMeError(f"{self.owner} is closed: call open() (or use `with {self.owner}(...)`) again")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
