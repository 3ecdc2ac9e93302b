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
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        working_dir.mkdir(parents=True, exist_ok=True)
        self.log = working_dir.parent / f"{working_dir.name}-{self.port}.log"
        cmd = [sys.executable, "-m", "reme.cli", command, "-w", str(working_dir), "--port", str(self.port)]
        if server_config is not None:
            path = working_dir.parent / f"{working_dir.name}-server.json"
            path.write_text(json.dumps(server_config))
            cmd += ["--server-config", str(path)]
        cmd += args or []
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("REME_")}
        full_env.update({"REME_EMBEDDING__BACKEND": "hash", "REME_EMBEDDING__DIMENSIONS": str(DIM),
                         "HF_HUB_OFFLINE": "1", "PYTHONPATH": pythonpath(), **(env or {})})
        self._out = self.log.open("wb")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=self._out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 30.0) -> "Served":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"reme serve exited with {self.proc.returncode}: {self.output()}")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
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
