"""ReMe over HTTP (`reme serve`) with the standard library only: AppWorld's environment pins
pydantic 1, so it can import neither `reme` nor `reme.client`; these four calls are the service's
JSON endpoints (`/v1/retrieve`, `/v1/memories/usage`, `/v1/summarize`, `/v1/memories/import`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Sequence


class ServiceError(Exception):
    """`reme serve` answered with an error (its body's `error.type` and message), or not at all."""


class RemoteMemory:
    """The task memory of one task name in a running `reme serve`."""

    def __init__(self, url: str, task_name: str, *, token: str | None = None, top_k: int = 5,
                 timeout: float = 300.0) -> None:
        self.url, self.task_name, self.token, self.top_k, self.timeout = url.rstrip("/"), task_name, token, top_k, timeout

    def _post(self, path: str, body: bytes, content_type: str = "application/json") -> Any:
        headers = {"Content-Type": content_type, **({"Authorization": f"Bearer {self.token}"} if self.token else {})}
        request = urllib.request.Request(self.url + path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                error = json.loads(exc.read())["error"]
                detail = f"{error['type']}: {error['message']}"
            except (ValueError, KeyError, TypeError):
                detail = f"HTTP {exc.code}"
            raise ServiceError(f"reme serve {path}: {detail}") from None
        except OSError as exc:
            raise ServiceError(f"reme serve at {self.url} cannot be reached: {exc}") from None

    def _json(self, path: str, body: dict[str, Any]) -> Any:
        return self._post(path, json.dumps(body).encode())

    def experience(self, query: str) -> tuple[str, list[str]]:
        """The lessons for a task, as prompt text, and their ids."""
        found = self._json("/v1/retrieve", {"query": query, "task_name": self.task_name, "top_k": self.top_k})
        return str(found["text"]), [m["node"]["memory_id"] for m in found["memories"]]

    def record(self, memory_ids: Sequence[str], success: bool) -> None:
        if memory_ids:
            self._json("/v1/memories/usage", {"memory_ids": list(memory_ids), "success": success,
                                              "task_name": self.task_name})

    def learn(self, trajectories: Sequence[dict[str, Any]]) -> int:
        """Summarize runs (`messages`, `score`, `query`) into lessons; how many were added."""
        result = self._json("/v1/summarize", {"trajectories": list(trajectories), "task_name": self.task_name})
        return len(result["added"])

    def import_pool(self, path: Path) -> int:
        """Load a pool of the original ReMe (needs a token allowed to import, when tokens are set)."""
        query = urllib.parse.urlencode({"format": "reme-jsonl", "task_name": self.task_name})
        return int(self._post(f"/v1/memories/import?{query}", path.read_bytes(), "application/x-ndjson")["count"])
