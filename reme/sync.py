# The async object behind a sync face is typed Any here (ReMe or ReMeClient): each method's return
# type is stated once below, and tests/test_service.py compares every signature with the facade.
# mypy: disable-error-code="no-any-return"
"""The sync faces (`ReMeSync`, `ReMeClientSync`): one private event loop in a daemon thread that
runs their coroutines, and the methods both offer. Nothing here imports the store, so the HTTP
client can use it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Coroutine, Sequence, TypeVar

from reme.errors import ReMeError

if TYPE_CHECKING:
    from reme.markdown import MarkdownExport, MarkdownSyncResult
    from reme.schema import (MemoryNode, MemoryPage, MemoryVersion, MessagesSpec, RetrieveResult, SearchResult,
                             SummaryResult)
    from reme.working import CompactedContext, SessionMessage, SessionSize

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


class SyncFace:
    """The methods `ReMe` and `ReMeClient` share, without `async`: each runs the async object's
    method of the same name on the private loop. `ReMeSync` and `ReMeClientSync` add their own
    `open` and extras."""

    _face: Any

    def _start(self, owner: str, make: Callable[[], Any]) -> None:
        """Start the private loop and create the async object on it (a client's connections, a
        store's locks belong to that loop); the loop stops again if that fails."""
        self._loop = LoopThread(owner)

        async def create() -> Any:
            return make()

        try:
            self._face = self._run(create())
        except BaseException:
            self._loop.stop()
            raise

    def _run(self, coro: Coroutine[Any, Any, T] | Awaitable[T]) -> T:
        return self._loop.run(coro)

    def close(self) -> None:
        """Release what the async object holds and stop the private loop; a second close does
        nothing, a call after it raises `ReMeError`."""
        if self._loop.closed:
            return
        try:
            self._run(self._face.close())
        finally:
            self._loop.stop()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_memory(self, content: str, **kwargs: Any) -> MemoryNode:
        return self._run(self._face.add_memory(content, **kwargs))

    def add_memories(self, nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
        return self._run(self._face.add_memories(nodes))

    def get_memory(self, memory_id: str, **kwargs: Any) -> MemoryNode:
        return self._run(self._face.get_memory(memory_id, **kwargs))

    def search_memory(self, query: str, **kwargs: Any) -> list[SearchResult]:
        return self._run(self._face.search_memory(query, **kwargs))

    def list_memory(self, **kwargs: Any) -> MemoryPage:
        return self._run(self._face.list_memory(**kwargs))

    def count_memory(self, **kwargs: Any) -> int:
        return self._run(self._face.count_memory(**kwargs))

    def update_memory(self, memory_id: str, **kwargs: Any) -> MemoryNode:
        return self._run(self._face.update_memory(memory_id, **kwargs))

    def delete_memory(self, memory_id: str, **kwargs: Any) -> None:
        return self._run(self._face.delete_memory(memory_id, **kwargs))

    def delete_all(self, **kwargs: Any) -> int:
        return self._run(self._face.delete_all(**kwargs))

    def export_memory(self, path: str | Path, **kwargs: Any) -> int:
        return self._run(self._face.export_memory(path, **kwargs))

    def import_memory(self, path: str | Path, **kwargs: Any) -> int:
        return self._run(self._face.import_memory(path, **kwargs))

    def backup(self, path: str | Path) -> int:
        return self._run(self._face.backup(path))

    def restore(self, path: str | Path) -> int:
        return self._run(self._face.restore(path))

    def optimize(self) -> bool:
        return self._run(self._face.optimize())

    def export_markdown(self, directory: str | Path, **kwargs: Any) -> MarkdownExport:
        return self._run(self._face.export_markdown(directory, **kwargs))

    def sync_markdown(self, directory: str | Path, **kwargs: Any) -> MarkdownSyncResult:
        return self._run(self._face.sync_markdown(directory, **kwargs))

    def history(self, memory_id: str, **kwargs: Any) -> list[MemoryVersion]:
        return self._run(self._face.history(memory_id, **kwargs))

    def summarize_memory(self, messages: MessagesSpec | None = None, **kwargs: Any) -> SummaryResult:
        return self._run(self._face.summarize_memory(messages, **kwargs))

    def retrieve_memory(self, query: str | None = None, **kwargs: Any) -> RetrieveResult:
        return self._run(self._face.retrieve_memory(query, **kwargs))

    def record_usage(self, memory_ids: Sequence[str], success: bool, **kwargs: Any) -> list[MemoryNode]:
        return self._run(self._face.record_usage(memory_ids, success, **kwargs))

    def prune(self, task_name: str | None = None, **kwargs: Any) -> list[MemoryNode]:
        return self._run(self._face.prune(task_name, **kwargs))

    # -- working memory ----------------------------------------------------------------------------
    def add_messages(self, messages: Sequence[Any], **kwargs: Any) -> list[SessionMessage]:
        return self._run(self._face.add_messages(messages, **kwargs))

    def get_messages(self, **kwargs: Any) -> list[SessionMessage]:
        return self._run(self._face.get_messages(**kwargs))

    def delete_messages(self, ids: Sequence[str], **kwargs: Any) -> int:
        return self._run(self._face.delete_messages(ids, **kwargs))

    def delete_messages_by_mark(self, mark: str | Sequence[str], **kwargs: Any) -> int:
        return self._run(self._face.delete_messages_by_mark(mark, **kwargs))

    def update_marks(self, **kwargs: Any) -> int:
        return self._run(self._face.update_marks(**kwargs))

    def update_compressed_summary(self, summary: str, **kwargs: Any) -> None:
        return self._run(self._face.update_compressed_summary(summary, **kwargs))

    def session_size(self, **kwargs: Any) -> SessionSize:
        return self._run(self._face.session_size(**kwargs))

    def clear_session(self, **kwargs: Any) -> int:
        return self._run(self._face.clear_session(**kwargs))

    def session_state(self, **kwargs: Any) -> dict[str, Any]:
        return self._run(self._face.session_state(**kwargs))

    def load_session_state(self, state: Any, **kwargs: Any) -> int:
        return self._run(self._face.load_session_state(state, **kwargs))

    def compact_tool_results(self, messages: Sequence[Any], **kwargs: Any) -> CompactedContext:
        return self._run(self._face.compact_tool_results(messages, **kwargs))

    def read_tool_result(self, ref: str, **kwargs: Any) -> str:
        return self._run(self._face.read_tool_result(ref, **kwargs))

    def compact_context(self, messages: Sequence[Any], **kwargs: Any) -> CompactedContext:
        return self._run(self._face.compact_context(messages, **kwargs))

    def prepare_context(self, **kwargs: Any) -> CompactedContext:
        return self._run(self._face.prepare_context(**kwargs))

    def wait_background(self, **kwargs: Any) -> int:
        return self._run(self._face.wait_background(**kwargs))

    def forget(self, **kwargs: Any) -> int:
        return self._run(self._face.forget(**kwargs))

    def flush_reads(self) -> int:
        return self._run(self._face.flush_reads())
