"""Test support: a real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings protocol.

Each test scripts it: `server.fail_next(status, times, retry_after=None)` injects errors before the
real answers. Vectors come from the hashing embedder, so they are deterministic. It never ships
with the package.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from reme.embedding import HashEmbedder


class OpenAITestServer:
    def __init__(self, dim: int = 32) -> None:
        self.embedder = HashEmbedder(dim=dim)
        self.requests: list[dict[str, Any]] = []
        self._failures: list[tuple[int, str | None]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "auth": self.headers.get("Authorization")})
                    failure = server._failures.pop(0) if server._failures else None
                if failure is not None:
                    status, retry_after = failure
                    self._reply(status, {"error": {"message": f"injected {status}", "type": "test"}},
                                {"Retry-After": retry_after} if retry_after else {})
                    return
                if self.path.endswith("/embeddings"):
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [{"object": "embedding", "index": i, "embedding": server.embedder.embed_one(t)}
                            for i, t in enumerate(texts)]
                    self._reply(200, {"object": "list", "data": data, "model": body.get("model"),
                                      "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})
                else:
                    self._reply(404, {"error": {"message": f"no route {self.path}"}})

            def _reply(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def fail_next(self, status: int, times: int = 1, retry_after: str | None = None) -> None:
        with self._lock:
            self._failures.extend([(status, retry_after)] * times)

    def __enter__(self) -> "OpenAITestServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
