"""The `reme` command line, run as a user runs it: a subprocess, JSON output, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reme.cli import build_parser

COMMANDS = ["add", "get", "list", "search", "update", "delete", "export", "import", "demo"]


def reme(wd: Path, *args: str, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REME_EMBEDDING__BACKEND": "hash", "REME_WORKING_DIR": str(wd)}
    proc = subprocess.run([sys.executable, "-m", "reme.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)
    if check is not None:
        assert proc.returncode == check, proc.stderr
    return proc


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([command, "--help"])
    assert exit_.value.code == 0
    assert f"usage: reme {command}" in capsys.readouterr().out


def test_add_get_list_search_update_delete_round_trip(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    added = json.loads(reme(wd, "add", "Alice prefers window seats", "--user", "alice", "--tag", "travel",
                            "--metadata", '{"source": "chat"}', "--json").stdout)
    memory_id = added["memory_id"]
    assert added["memory_type"] == "personal" and added["tags"] == ["travel"]
    reme(wd, "add", "Bob prefers aisle seats", "--user", "bob")

    got = json.loads(reme(wd, "get", memory_id, "--json").stdout)
    assert got == added

    listed = json.loads(reme(wd, "list", "--user", "alice", "--sort", "time_created", "--json").stdout)
    assert [m["memory_id"] for m in listed["memories"]] == [memory_id]
    filtered = json.loads(reme(wd, "list", "--filter", '{"metadata.source": "chat"}', "--json").stdout)
    assert [m["memory_id"] for m in filtered["memories"]] == [memory_id]

    hits = json.loads(reme(wd, "search", "window", "--user", "alice", "--mode", "keyword", "--json").stdout)
    assert hits[0]["node"]["memory_id"] == memory_id and hits[0]["rank"] == 1

    updated = json.loads(reme(wd, "update", memory_id, "--content", "Alice prefers aisle seats", "--json").stdout)
    assert updated["version"] == 2 and updated["memory_id"] == memory_id

    assert "deleted" in reme(wd, "delete", memory_id, "--user", "alice").stdout
    assert reme(wd, "get", memory_id, check=3).stderr.startswith("reme get: MemoryNotFoundError")


def test_export_and_import(tmp_path: Path) -> None:
    wd, other, dump = tmp_path / "wd", tmp_path / "other", tmp_path / "dump.jsonl"
    for text in ("one fact", "two facts", "three facts"):
        reme(wd, "add", text, "--task", "appworld")
    assert json.loads(reme(wd, "export", str(dump), "--task", "appworld", "--json").stdout)["exported"] == 3
    assert json.loads(reme(other, "import", str(dump), "--json").stdout)["imported"] == 3
    listed = json.loads(reme(other, "list", "--task", "appworld", "--json").stdout)
    assert sorted(m["content"] for m in listed["memories"]) == ["one fact", "three facts", "two facts"]


def test_exit_codes_scripts_can_rely_on(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    assert reme(wd, "add", "", "--user", "a", check=2).stderr.startswith("reme add: InvalidInputError")
    reme(wd, "list", "--filter", '{"nope": 1}', check=2)
    reme(wd, "list", "--filter", "{not json", check=2)  # argparse usage error
    reme(wd, "add", "x", check=2)  # no target
    reme(wd, "get", "00000000-0000-4000-8000-000000000000", check=3)
    reme(wd, "import", str(tmp_path / "missing.jsonl"), check=2)
    bad_config = tmp_path / "bad.json"
    bad_config.write_text('{"vector_store": {"backend": "nosuch"}}')
    reme(wd, "list", "--config", str(bad_config), check=4)
    blocker = tmp_path / "file"
    blocker.write_text("")
    reme(blocker / "wd", "list", check=4)


def test_demo_runs_and_reports_each_step(tmp_path: Path) -> None:
    out = reme(tmp_path / "demo", "demo", "--json").stdout
    steps = json.loads(out)
    actions = [s["action"] for s in steps]
    assert actions[:2] == ["added", "added"] and {"listed", "updated", "deleted", "searched"} <= set(actions)
    assert next(s for s in steps if s["action"] == "added a duplicate")["same_id"] is True
    searched = [s for s in steps if s["action"] == "searched"]
    assert all(s["top"] for s in searched)
