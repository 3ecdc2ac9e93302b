"""Test support: `reme serve` (or `reme mcp`) as a real subprocess on 127.0.0.1, on a free port,
with the hashing embedder. It never ships with the package."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import httpx

from benchmark.qdrant_server import listener

ROOT = Path(__file__).resolve().parents[1]
DIM = 64


def pythonpath() -> str:
    """This checkout first, then whatever the test run itself was given."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def llm_env(base_url: str) -> dict[str, str]:
    """The environment pointing a served ReMe at the scripted LLM server."""
    return {"REME_LLM__BASE_URL": base_url, "REME_LLM__MODEL": "test-model", "REME_LLM__API_KEY": "k",
            "REME_LLM__MAX_RETRIES": "0", "REME_LLM__TIMEOUT": "10"}


class Served:
    """`reme <command>` running in `working_dir`; its output goes to `log` (read it after `stop`)."""

    def __init__(self, working_dir: Path, *, command: str = "serve", server_config: Mapping[str, Any] | None = None,
                 env: Mapping[str, str] | None = None, args: list[str] | None = None) -> None:
        self.working_dir = working_dir
        self.movable = "--port" not in (args or [])
        """Its port came from `free_port`: `wait_ready` moves it to another when someone took it."""
        working_dir.mkdir(parents=True, exist_ok=True)
        self._cmd = [sys.executable, "-m", "reme.cli", command, "-w", str(working_dir)]
        if server_config is not None:
            path = working_dir.parent / f"{working_dir.name}-server.json"
            path.write_text(json.dumps(server_config))
            self._cmd += ["--server-config", str(path)]
        self._args = args or []
        self._env = {k: v for k, v in os.environ.items() if not k.startswith("REME_")}
        self._env.update({"REME_EMBEDDING__BACKEND": "hash", "REME_EMBEDDING__DIMENSIONS": str(DIM),
                          "HF_HUB_OFFLINE": "1", "PYTHONPATH": pythonpath(), **(env or {})})
        self._launch()

    def _launch(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.working_dir.parent / f"{self.working_dir.name}-{self.port}.log"
        self._out = self.log.open("wb")
        self.proc = subprocess.Popen([*self._cmd, "--port", str(self.port), *self._args], cwd=ROOT, env=self._env,
                                     stdout=self._out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 30.0) -> "Served":
        """Until it answers on its port, itself: another process may have taken the port since
        `free_port` found it free (parallel test workers), and its health answers too; then this
        one starts again on another port (up to 5 times)."""
        deadline = time.monotonic() + timeout
        moves = 0
        while time.monotonic() < deadline:
            whose = listener(self.proc.pid, self.port)
            if self.proc.poll() is not None or whose == "other":
                if self.movable and moves < 5 and (whose == "other" or "address already in use" in self.output().lower()):
                    moves += 1
                    self.stop()
                    self._launch()
                    continue
                raise RuntimeError(f"reme serve exited with {self.proc.returncode}: {self.output()}")
            try:
                if whose in ("ours", "unknown") and httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"reme serve did not answer within {timeout} s: {self.output()}")

    def wait_exit(self, timeout: float = 30.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._out.close()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.wait_exit(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.wait_exit(5)

    def output(self) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text(errors="replace")
