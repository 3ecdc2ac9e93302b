"""The servers the tests and benchmarks start (a Qdrant node, `reme serve`) are the ones that
answer: a port `free_port` found free can be taken by another process (parallel test workers
start servers together) before the server binds it."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from qdrant_client import QdrantClient

import service_process
from benchmark import qdrant_server
from benchmark.qdrant_server import VERSION, listener


class _Impostor(http.server.BaseHTTPRequestHandler):
    """Another process's server on the port: it answers like a ready Qdrant node and a healthy
    `reme serve`."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps({"title": "qdrant - vector search engine", "version": VERSION, "status": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def impostor() -> Iterator[int]:
    """The port an HTTP server of the test listens on."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def offer(module: object, taken: int, monkeypatch: pytest.MonkeyPatch, *, first: int = 0) -> None:
    """`module.free_port` hands out `taken` after `first` free ports: someone took it meanwhile."""
    real = getattr(module, "free_port")
    offered = iter([real() for _ in range(first)] + [taken])
    monkeypatch.setattr(module, "free_port", lambda: next(offered, None) or real())


@pytest.mark.parametrize("taken", ["http", "grpc"])
def test_a_qdrant_port_taken_after_it_was_found_free_moves_the_node(
        tmp_path: Path, impostor: int, monkeypatch: pytest.MonkeyPatch, taken: str) -> None:
    """The node must answer over HTTP and over gRPC (one whose gRPC port is taken keeps running
    without it, and a gRPC client reached an HTTP/1.1 server)."""
    offer(qdrant_server, impostor, monkeypatch, first=1 if taken == "grpc" else 0)
    with qdrant_server.serve(tmp_path / "node") as node:
        assert impostor not in (node.http_port, node.grpc_port) and node.pid is not None
        assert [listener(node.pid, p) for p in (node.http_port, node.grpc_port)] == ["ours", "ours"]
        client = QdrantClient(url=node.url, grpc_port=node.grpc_port, prefer_grpc=True, timeout=10,
                              check_compatibility=False)
        try:
            assert client.get_collections().collections == []
        finally:
            client.close()


def test_a_qdrant_port_asked_for_that_is_taken_is_an_error(tmp_path: Path, impostor: int) -> None:
    """Not someone else's server taken for the node."""
    with pytest.raises(qdrant_server.PortTaken):
        qdrant_server.node(tmp_path / "node", port=impostor).start(timeout=30)


def test_a_service_port_taken_after_it_was_found_free_moves_the_service(
        tmp_path: Path, impostor: int, monkeypatch: pytest.MonkeyPatch) -> None:
    offer(service_process, impostor, monkeypatch)
    served = service_process.Served(tmp_path / "wd").wait_ready()
    try:
        assert served.port != impostor and listener(served.proc.pid, served.port) == "ours"
        r = httpx.post(f"{served.url}/v1/memories/count", json={"user_name": "alice"})
        assert r.status_code == 200 and r.json()["count"] == 0, r.text
    finally:
        assert served.stop() == 0, served.output()
