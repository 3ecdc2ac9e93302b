"""What the `reme` command says when a user gets something wrong: CLI flags and commands, never
the Python API's names; one line; the names that do exist when a target does not."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from reme import cli

from test_cli import reme

PYTHON_NAMES = re.compile(r"\b(delete_all|update_memory|add_memory|list_memory|search_memory|sync_markdown|"
                          r"export_markdown|working_dir|overwrite=True|everything=True)\b|\w+=\w+\(|\(\)")


def _says_cli(proc_stderr: str) -> str:
    line = proc_stderr.strip()
    assert "\n" not in line, proc_stderr
    assert not PYTHON_NAMES.search(line), line
    return line


def test_errors_name_cli_flags_and_commands_not_python(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    added = json.loads(reme(wd, "add", "Alice likes tea", "--user", "alice", "--json").stdout)
    backup = tmp_path / "all.backup"
    reme(wd, "backup", str(backup))

    restore = _says_cli(reme(wd, "restore", str(backup), check=2).stderr)
    assert "reme delete-all --everything --yes" in restore and "--working-dir" in restore

    update = _says_cli(reme(wd, "update", added["memory_id"], check=2).stderr)
    assert all(flag in update for flag in ("--content", "--when-to-use", "--tag", "--metadata", "--score"))

    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "I live in Lisbon"}]), encoding="utf-8")
    summarize = _says_cli(reme(wd, "summarize", str(chat), "--user", "alice", check=4).stderr)
    assert summarize.startswith("reme summarize: ConfigError: reme summarize needs an LLM") and (
        "scripts/llm.sh run qwen1.5b -- reme" in summarize and "REME_LLM__MODEL" in summarize)

    get = _says_cli(reme(wd, "get", "not-a-uuid", check=2).stderr)
    assert "reme list" in get and "reme search" in get

    tree = tmp_path / "md"
    reme(wd, "md", "export", str(tree), "--user", "alice")
    memory_md = tree / "MEMORY.md"
    memory_md.write_text(memory_md.read_text(encoding="utf-8") + "\n- Alice likes green tea\n", encoding="utf-8")
    export = _says_cli(reme(wd, "md", "export", str(tree), "--user", "alice", check=2).stderr)
    assert f"reme md sync {tree}" in export and "--overwrite" in export


def test_every_translated_phrase_is_still_what_the_facade_says() -> None:
    """A facade message reworded would slip past the translation silently: each phrase it looks
    for must still be in the package's source."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in Path(cli.__file__).parent.rglob("*.py")
                       if p.name != "cli.py")
    joined = re.sub(r'"\s*\n\s*f?"', "", source)  # "one literal " "continued" as one string
    for python, _ in cli.CLI_WORDING:
        needs = re.fullmatch(r"(\w+) needs an LLM", python)  # _require_llm(what): "{what} needs an LLM"
        assert (f'_require_llm("{needs.group(1)}")' if needs else python) in joined, python


def test_importing_a_backup_says_to_restore_it_in_one_line(tmp_path: Path) -> None:
    wd, other, backup = tmp_path / "wd", tmp_path / "other", tmp_path / "all.backup"
    reme(wd, "add", "Alice likes tea", "--user", "alice")
    reme(wd, "backup", str(backup))
    line = _says_cli(reme(other, "import", str(backup), check=2).stderr)
    assert f"reme restore {backup}" in line and "Field required" not in line
    assert not other.exists() or json.loads(reme(other, "count", "--json", check=None).stdout or '{"count": 0}') == {
        "count": 0}


def test_an_unknown_flag_is_named_before_a_missing_target(tmp_path: Path) -> None:
    proc = reme(tmp_path / "wd", "add", "Alice likes tea", "--user-name", "alice", check=2)
    last = proc.stderr.strip().splitlines()[-1]
    assert "unrecognized arguments: --user-name" in last and "did you mean --user" in last
    proc = reme(tmp_path / "wd", "md", "sync", str(tmp_path), "--dryrun", check=2)
    assert "unrecognized arguments: --dryrun" in proc.stderr and "--dry-run" in proc.stderr
    # abbreviations argparse accepts stay accepted
    assert reme(tmp_path / "wd", "add", "Alice likes tea", "--us", "alice").stdout.strip()


def test_a_target_with_no_memory_at_all_is_not_found_and_the_names_that_exist_are_suggested(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    reme(wd, "add", "Alice likes tea", "--user", "alice")
    reme(wd, "add", "Bob likes coffee", "--user", "bob")
    reme(wd, "add", "log in first", "--task", "appworld")
    wrong_case = _says_cli(reme(wd, "list", "--user", "Alice", check=3).stderr)
    assert "no memory of user 'Alice'" in wrong_case and "did you mean 'alice'" in wrong_case
    nobody = _says_cli(reme(wd, "search", "tea", "--user", "nobody", "--json", check=3).stderr)
    assert "no memory of user 'nobody'" in nobody and "users with memories: alice, bob" in nobody
    assert "appworld" not in nobody
    # a target that has memories, none of them matching: an empty answer, exit 0
    assert reme(wd, "list", "--user", "alice", "--filter", '{"score": {"gte": 0.9}}').stdout.strip() == "no memories"
    assert json.loads(reme(wd, "search", "tea", "--user", "alice", "--filter", '{"score": {"gte": 0.9}}',
                           "--json").stdout) == []


def test_list_shows_memories_first_and_counts_the_raw_history_it_leaves_out(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    fact = reme(wd, "add", "Alice likes tea", "--user", "alice").stdout.strip()
    raw = reme(wd, "add", "user: hi\nassistant: hello, how can I help today?", "--user", "alice",
               "--type", "history").stdout.strip()
    listed = reme(wd, "list", "--user", "alice").stdout
    assert fact in listed and raw not in listed
    assert "1 history record not shown (--type history lists them)" in listed
    assert [m["memory_id"] for m in json.loads(reme(wd, "list", "--user", "alice", "--json").stdout)["memories"]] == [
        fact]
    assert raw in reme(wd, "list", "--user", "alice", "--type", "history").stdout


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def test_a_dry_run_shows_no_id_the_real_sync_would_not_give(tmp_path: Path) -> None:
    wd, tree = tmp_path / "wd", tmp_path / "md"
    reme(wd, "add", "Alice likes tea", "--user", "alice")
    reme(wd, "md", "export", str(tree), "--user", "alice")
    memory_md = tree / "MEMORY.md"
    memory_md.write_text(memory_md.read_text(encoding="utf-8") + "\n- Alice likes green tea\n", encoding="utf-8")
    dry = reme(wd, "md", "sync", str(tree), "--dry-run").stdout
    [planned] = [line for line in dry.splitlines() if line.startswith("added")]
    assert "Alice likes green tea" in planned and not UUID.search(planned), planned
    dry_json = json.loads(reme(wd, "md", "sync", str(tree), "--dry-run", "--json").stdout)
    assert [n["memory_id"] for n in dry_json["added"]] == [None]
    real = reme(wd, "md", "sync", str(tree)).stdout
    [added] = [line for line in real.splitlines() if line.startswith("added")]
    memory_id = UUID.search(added).group(0)
    assert "Alice likes green tea" in reme(wd, "get", memory_id).stdout


def _on_a_terminal(wd: Path, *args: str) -> str:
    """stderr of `reme ARGS` run with stderr on a pseudo-terminal, as a person at a terminal sees it."""
    leader, follower = pty.openpty()
    env = {**os.environ, "REME_WORKING_DIR": str(wd)}
    proc = subprocess.Popen([sys.executable, "-m", "reme.cli", *args], stdout=subprocess.PIPE, stderr=follower,
                            env=env, text=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=300)
    os.close(leader)
    assert proc.returncode == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_command_that_loaded_the_model_says_how_to_keep_one_loaded(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    reme(wd, "add", "Alice likes tea", "--user", "alice", "--embedding", "local")
    said = _on_a_terminal(wd, "search", "tea", "--user", "alice", "--embedding", "local")
    assert "went to loading the embedding model" in said and "reme serve" in said, said
    assert "loading the embedding model" not in _on_a_terminal(wd, "list", "--embedding", "local")
