"""scripts/qdrant.sh as a user runs it: install, serve one node in the background, stop it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from benchmark.qdrant_server import VERSION

ROOT = Path(__file__).resolve().parents[1]


def script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "scripts" / "qdrant.sh"), *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHON=sys.executable))


def test_serve_prints_a_loopback_url_and_stop_ends_the_node(tmp_path: Path) -> None:
    assert Path(script("install").stdout.strip()).is_file()
    served = script("serve", "--dir", str(tmp_path / "node"))
    assert served.returncode == 0, served.stderr
    url = served.stdout.strip()
    assert url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(url, timeout=10) as response:
        assert json.loads(response.read())["version"] == VERSION
    pid = int((tmp_path / "node" / "pid").read_text())
    stopped = script("stop", "--dir", str(tmp_path / "node"))
    assert stopped.stdout == f"{pid} stopped\n"
    assert not (tmp_path / "node" / "pid").exists()
    assert script("stop", str(pid)).stdout == f"{pid} was not running\n"


def test_stop_without_a_folder_or_pids_is_a_usage_error() -> None:
    done = script("stop")
    assert done.returncode == 2 and "stop needs --dir or pids" in done.stderr


def _cluster(url: str) -> dict[str, object]:
    with urllib.request.urlopen(f"{url}/cluster", timeout=10) as response:
        return dict(json.loads(response.read())["result"])


def test_a_stopped_cluster_started_again_on_its_folder_keeps_its_nodes_and_state(tmp_path: Path) -> None:
    folder = str(tmp_path / "cluster")
    first = script("cluster", "3", "--dir", folder)
    assert first.returncode == 0, first.stderr
    urls = first.stdout.split()
    peers = [_cluster(url)["peer_id"] for url in urls]
    assert script("stop", "--dir", folder).returncode == 0
    again = script("cluster", "3", "--dir", folder)
    try:
        assert again.returncode == 0, again.stderr
        assert again.stdout.split() == urls  # the same ports: the peers find each other where they were
        states = [_cluster(url) for url in urls]
        assert [s["peer_id"] for s in states] == peers  # their stored state, not a new cluster
        assert all(sorted(map(int, s["peers"])) == sorted(peers) for s in states)  # type: ignore[call-overload]
    finally:
        script("stop", "--dir", folder)
