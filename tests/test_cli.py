"""The `reme` command line, run as a user runs it: a subprocess, JSON output, exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reme.cli import build_parser

from openai_server import OpenAITestServer

COMMANDS = ["add", "get", "list", "search", "update", "delete", "export", "import", "demo", "history", "count",
            "delete-all", "summarize", "retrieve", "optimize", "backup", "restore"]
ROOT = Path(__file__).resolve().parents[1]


def reme(wd: Path, *args: str, check: int | None = 0, env: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REME_EMBEDDING__BACKEND": "hash", "REME_WORKING_DIR": str(wd), **(env or {})}
    if cwd is not None:  # the package from this checkout, run from elsewhere
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-m", "reme.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd)
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
    assert not wd.exists()  # a failed command leaves no store behind
    reme(wd, "add", "x", "--user", "a")
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
    reme(blocker / "wd", "add", "x", "--user", "a", check=4)


def test_demo_runs_and_reports_each_step(tmp_path: Path) -> None:
    out = reme(tmp_path / "demo", "demo", "--json").stdout
    steps = json.loads(out)
    actions = [s["action"] for s in steps]
    assert actions[:2] == ["added", "added"] and {"listed", "updated", "deleted", "searched"} <= set(actions)
    assert next(s for s in steps if s["action"] == "added a duplicate")["same_id"] is True
    searched = [s for s in steps if s["action"] == "searched"]
    assert all(s["top"] for s in searched)


def test_help_lists_every_command_on_one_line_each() -> None:
    out = subprocess.run([sys.executable, "-m", "reme.cli", "--help"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "80"}, check=True).stdout
    lines = out.splitlines()
    for command in COMMANDS:
        (line,) = [ln for ln in lines if ln.split()[:1] == [command]]
        assert len(line.split()) > 1, f"{command} has no help on its line"


def test_reading_commands_never_load_the_embedding_model(tmp_path: Path) -> None:
    wd, dump = tmp_path / "wd", tmp_path / "dump.jsonl"
    memory_id = reme(wd, "add", "Alice prefers window seats", "--user", "alice").stdout.strip()
    no_model = ["--embedding", "local", "--embedding-model", str(tmp_path / "no-such-model-folder")]
    assert "Alice prefers window seats" in reme(wd, "list", *no_model).stdout
    assert "Alice prefers window seats" in reme(wd, "get", memory_id, *no_model).stdout
    assert reme(wd, "count", *no_model).stdout.strip() == "1"
    reme(wd, "export", str(dump), *no_model)
    failed = reme(wd, "search", "seat", "--user", "alice", *no_model, check=4)
    assert failed.stderr.startswith("reme search: ConfigError") and "no-such-model-folder" in failed.stderr


@pytest.mark.parametrize("command", [["list"], ["get", "00000000-0000-4000-8000-000000000000"], ["search", "x"],
                                     ["export", "out.jsonl"], ["count"], ["retrieve", "x", "--user", "a"],
                                     ["history", "00000000-0000-4000-8000-000000000000"], ["optimize"]])
def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "typo"
    proc = reme(typo, *command, check=3, cwd=tmp_path)
    assert proc.stderr.count("\n") == 1 and str(typo / "store") in proc.stderr
    assert not typo.exists() and not (tmp_path / "out.jsonl").exists()


def test_empty_results_say_so_and_json_stays_json(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    reme(wd, "add", "Alice prefers window seats", "--user", "alice")
    none = ("--filter", '{"score": {"gte": 0.9}}')  # alice has memories, none of them this important
    assert reme(wd, "list", "--user", "alice", *none).stdout == "no memories\n"
    assert reme(wd, "search", "seats", "--user", "alice", *none).stdout == "no memories match\n"
    assert json.loads(reme(wd, "list", "--user", "alice", *none, "--json").stdout) == {"memories": [],
                                                                                      "next_cursor": None}
    assert json.loads(reme(wd, "search", "seats", "--user", "alice", *none, "--json").stdout) == []
    assert reme(wd, "list", "--user", "bob", check=3).stdout == ""  # no memory of bob at all: not found


def test_export_to_a_missing_folder_names_the_path_given(tmp_path: Path) -> None:
    wd, target = tmp_path / "wd", tmp_path / "missing" / "dir" / "x.jsonl"
    reme(wd, "add", "one fact", "--user", "alice")
    proc = reme(wd, "export", str(target), check=2)
    assert proc.stderr.startswith("reme export: InvalidInputError") and str(target) in proc.stderr
    assert ".tmp" not in proc.stderr
    assert reme(wd, "export", str(tmp_path / "one.jsonl")).stdout.startswith("exported 1 memory to")


def test_history_and_count(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    memory_id = reme(wd, "add", "Alice prefers window seats", "--user", "alice").stdout.strip()
    reme(wd, "add", "Bob prefers aisle seats", "--user", "bob")
    assert reme(wd, "history", memory_id).stdout == "no earlier versions\n"
    reme(wd, "update", memory_id, "--content", "Alice prefers aisle seats")
    (version,) = json.loads(reme(wd, "history", memory_id, "--json").stdout)
    assert version["event"] == "UPDATE" and version["node"]["content"] == "Alice prefers window seats"
    assert "UPDATE" in reme(wd, "history", memory_id, "--user", "alice").stdout
    reme(wd, "history", memory_id, "--user", "bob", check=3)
    assert reme(wd, "count").stdout == "2\n"
    assert json.loads(reme(wd, "count", "--user", "alice", "--json").stdout) == {"count": 1}
    assert reme(wd, "count", "--filter", '{"content": {"contains": "aisle"}}').stdout == "2\n"


def test_delete_all_needs_a_scope_and_a_confirmation(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    for user, text in (("alice", "one"), ("alice", "two"), ("bob", "three")):
        reme(wd, "add", text, "--user", user)
    refused = reme(wd, "delete-all", "--user", "alice", check=2)
    assert "would delete 2 memories of user 'alice'" in refused.stderr and "--yes" in refused.stderr
    reme(wd, "delete-all", "--yes", check=2)  # no scope
    reme(wd, "delete-all", "--user", "alice", "--everything", "--yes", check=2)
    assert reme(wd, "count").stdout == "3\n"
    assert reme(wd, "delete-all", "--user", "alice", "--yes").stdout == "deleted 2 memories\n"
    assert reme(wd, "count").stdout == "1\n"
    assert json.loads(reme(wd, "delete-all", "--everything", "--yes", "--json").stdout) == {"deleted": 1}
    assert reme(wd, "count").stdout == "0\n"


@pytest.fixture
def llm_env(server: OpenAITestServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k", "REME_LLM__MODEL": "test-model",
            "REME_LLM__MAX_RETRIES": "0"}


def test_summarize_and_retrieve_personal_memory(tmp_path: Path, server: OpenAITestServer,
                                                llm_env: dict[str, str]) -> None:
    wd, chat = tmp_path / "wd", tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "name": "Alice", "content": "I always take the window seat.",
                                 "time": "2024-05-03T10:00:00Z"}]))
    server.script("Read the conversation below", {"memories": [
        {"content": "Alice prefers the window seat", "kind": "preference", "sources": [0], "importance": 0.5,
         "time": None}]})
    out = reme(wd, "summarize", str(chat), "--user", "alice", env=llm_env).stdout
    assert "added  " in out and "Alice prefers the window seat" in out
    assert re.fullmatch(r"1 added, 0 updated, 0 deleted \(1 LLM call, \d+ tokens\)", out.splitlines()[-1])
    server.script("You prepare a search", {"queries": ["window seat"], "start": None, "end": None})
    text = reme(wd, "retrieve", "Where does Alice sit?", "--user", "alice", env=llm_env).stdout
    assert "Alice prefers the window seat" in text
    result = json.loads(reme(wd, "retrieve", "seat", "--user", "alice", "--no-rewrite", "--json").stdout)
    assert result["memories"][0]["node"]["content"] == "Alice prefers the window seat"
    no_llm = reme(wd, "summarize", str(chat), "--user", "alice", check=4)
    assert "needs an LLM" in no_llm.stderr


def test_summarize_and_retrieve_task_and_tool_memory(tmp_path: Path, server: OpenAITestServer,
                                                     llm_env: dict[str, str]) -> None:
    wd, runs, calls = tmp_path / "wd", tmp_path / "runs.json", tmp_path / "calls.json"
    runs.write_text(json.dumps({"trajectories": [{"messages": [{"role": "user", "content": "Rate songs 5 stars"},
                                                               {"role": "assistant", "content": "review_song"}],
                                                  "score": 1.0}]}))
    server.script("completed the task below successfully", {"memories": [
        {"when_to_use": "When rating songs", "content": "Call spotify.review_song per song", "confidence": 0.8}]})
    server.script("Rate each candidate lesson", {"results": [{"index": 0, "score": 0.9}]})
    assert "1 added" in reme(wd, "summarize", str(runs), "--task", "appworld", env=llm_env).stdout
    assert "spotify.review_song" in reme(wd, "retrieve", "Rate albums", "--task", "appworld").stdout

    calls.write_text(json.dumps([{"tool_name": "web_search", "input": {"q": "x"}, "output": "ok", "time_cost": 1.0}]))
    server.script("Write the usage guideline", {"guideline": "Search the web."})
    reme(wd, "summarize", str(calls), "--tool", "web_search", env=llm_env)
    guide = reme(wd, "retrieve", "--tool", "web_search").stdout
    assert guide.startswith("Tool web_search: 1 call, 100% succeeded") and "Search the web." in guide
    reme(wd, "summarize", str(tmp_path / "missing.json"), "--tool", "web_search", env=llm_env, check=2)


def test_bench_is_listed_and_runs_wherever_the_benchmarks_import(tmp_path: Path) -> None:
    """From the checkout's root, or from anywhere when `benchmark` imports (an editable install,
    PYTHONPATH); where it does not (a wheel), the command says where the benchmarks live."""
    assert re.search(r"^\s+bench\s+\S", reme(tmp_path / "wd", "--help", cwd=tmp_path).stdout, re.M)
    elsewhere = reme(tmp_path / "wd", "bench", "locomo", "--help", cwd=tmp_path)  # PYTHONPATH: the checkout
    assert "usage:" in elsewhere.stdout and "--data" in elsewhere.stdout
    assert "usage:" in reme(tmp_path / "wd", "bench", "locomo", "--help").stdout  # the checkout's root
    shadow = tmp_path / "shadow" / "benchmark"  # a `benchmark` package that is not ReMe's
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("", encoding="utf-8")
    env = {**os.environ, "REME_EMBEDDING__BACKEND": "hash",
           "PYTHONPATH": os.pathsep.join([str(shadow.parent), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "reme.cli", "bench", "locomo"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 4
    assert "not part of the installed package" in proc.stderr and "source checkout" in proc.stderr


def test_a_busy_working_directory_can_be_waited_for(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    reme(wd, "add", "held", "--user", "alice")
    # The holder keeps the store open until its stdin closes (not for a fixed time, which a busy
    # machine can spend before the next command has even started).
    holder = ("import sys\nfrom reme import ReMeSync\n"
              "with ReMeSync(working_dir=sys.argv[1], embedding={'backend': 'hash'}):\n"
              "    print('ready', flush=True)\n    sys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", holder, str(wd)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        busy = reme(wd, "count", check=5)
        assert busy.stderr.startswith("reme count: StoreLockedError") and busy.stderr.count("\n") == 1
        assert "--wait SECONDS" in busy.stderr and "reme serve" in busy.stderr
        assert proc.stdin is not None
        threading.Timer(1.5, proc.stdin.close).start()  # the holder lets go 1.5 s after the command starts
        assert reme(wd, "count", "--wait", "30").stdout == "1\n"
    finally:
        proc.kill()
        proc.wait(timeout=60)
    proc = subprocess.Popen([sys.executable, "-c", holder, str(wd)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        timed_out = reme(wd, "count", "--wait", "0.3", check=5)
        assert "after waiting 0.3 s" in timed_out.stderr
    finally:
        proc.kill()
        proc.wait(timeout=60)


def test_long_commands_say_what_they_are_doing_unless_quiet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import reme.cli

    monkeypatch.setattr(reme.cli, "PROGRESS_AFTER_S", 0.01)
    monkeypatch.setattr(reme.cli, "_interactive", lambda: True)  # stderr is a terminal
    monkeypatch.setenv("REME_EMBEDDING__BACKEND", "hash")
    pool = tmp_path / "pool.jsonl"
    wd = tmp_path / "wd"
    lines = [json.dumps({"content": f"lesson number {i}", "memory_type": "procedural", "target_kind": "task",
                         "memory_target": "t"}) for i in range(600)]
    pool.write_text("\n".join(lines) + "\n")
    assert reme.cli.main(["import", str(pool), "-w", str(wd)]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^reme import: .+ \(\d+ s\)$", err, re.M), err
    for quiet in (["--quiet"], ["--json"]):
        assert reme.cli.main(["import", str(pool), "-w", str(tmp_path / quiet[0])] + quiet) == 0
        assert capsys.readouterr().err == ""
    monkeypatch.setattr(reme.cli, "_interactive", lambda: False)  # a script reading stderr: errors only
    assert reme.cli.main(["import", str(pool), "-w", str(tmp_path / "script")]) == 0
    assert capsys.readouterr().err == ""


def test_optimize_builds_the_index_on_request_and_keeps_every_memory(tmp_path: Path) -> None:
    from reme.store.edge import EdgeStore

    wd, rows = tmp_path / "wd", tmp_path / "rows.jsonl"
    # 8,000 vectors of size 384: enough for the engine to build HNSW rather than keep a plain segment
    rows.write_text("".join(json.dumps({"memory_type": "personal", "memory_target": "alice", "content": f"fact {i}"})
                            + "\n" for i in range(8000)))
    env = {"REME_EMBEDDING__DIMENSIONS": "384"}
    reme(wd, "import", str(rows), "--quiet", env=env)
    assert json.loads(reme(wd, "optimize", "--json", env=env).stdout) == {"optimized": True}

    async def unindexed() -> int:
        store = EdgeStore(wd / "store")
        try:
            return store.unindexed("reme")
        finally:
            await store.close()
    assert asyncio.run(unindexed()) == 0
    assert reme(wd, "count", env=env).stdout == "8000\n"


CORE_ONLY = ("import sys; sys.modules['sentence_transformers'] = None  # as on a core install: not importable\n"
             "from reme.cli import main; sys.exit(main())")


def core_reme(wd: Path, *args: str, check: int = 0) -> subprocess.CompletedProcess[str]:
    """`reme` where sentence-transformers cannot be imported, with the default (local) embedder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REME_")}
    env.update({"REME_WORKING_DIR": str(wd), "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])})
    proc = subprocess.run([sys.executable, "-c", CORE_ONLY, *args], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == check, proc.stderr
    return proc


def test_commands_that_embed_nothing_work_on_a_core_install(tmp_path: Path) -> None:
    """The store knows its vector size: listing, reading, exporting, counting, deleting and a
    keyword search need no embedder, so a core install runs them without `--embedding` again."""
    wd, dump = tmp_path / "wd", tmp_path / "dump.jsonl"
    memory_id = reme(wd, "add", "Alice prefers window seats", "--user", "alice").stdout.strip()
    reme(wd, "add", "Bob prefers aisle seats", "--user", "bob")
    reme(wd, "update", memory_id, "--score", "0.5")
    assert "Alice prefers window seats" in core_reme(wd, "list").stdout
    assert "Alice prefers window seats" in core_reme(wd, "get", memory_id).stdout
    assert core_reme(wd, "count").stdout.strip() == "2"
    assert "update_memory" in core_reme(wd, "history", memory_id).stdout
    hits = json.loads(core_reme(wd, "search", "window", "--user", "alice", "--mode", "keyword", "--json").stdout)
    assert [h["node"]["memory_id"] for h in hits] == [memory_id]
    core_reme(wd, "export", str(dump), "--user", "bob", "--with-vectors")
    core_reme(wd, "delete-all", "--user", "bob", "--yes")
    core_reme(wd, "optimize")
    assert json.loads(core_reme(wd, "import", str(dump), "--json").stdout)["imported"] == 1  # vectors given
    core_reme(wd, "delete-all", "--user", "bob", "--yes")
    # what does embed says which extra it needs, exit 4, and changes nothing
    for args in (["search", "window", "--user", "alice"], ["add", "new", "--user", "alice"]):
        failed = core_reme(wd, *args, check=4)
        assert "pip install" in failed.stderr and "sentence-transformers" in failed.stderr
    assert reme(wd, "count").stdout.strip() == "1"
    # a new store needs the vector size at once
    failed = core_reme(tmp_path / "new", "add", "x", "--user", "alice", check=4)
    assert "sentence-transformers" in failed.stderr


def test_a_working_directory_that_is_a_file_is_named_as_one(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    for wd in (blocker, blocker / "wd"):
        for args in (["add", "x", "--user", "a"], ["list"], ["count"], ["demo", "-w", str(wd)]):
            failed = reme(wd, *args, check=4)
            assert f"{blocker} is a file" in failed.stderr and "File exists" not in failed.stderr, failed.stderr
    assert blocker.read_text() == ""


@pytest.mark.parametrize("command", [["get"], ["delete"], ["history"], ["update", "--content", "y"]])
def test_an_id_that_is_not_a_uuid_is_invalid_not_missing(tmp_path: Path, command: list[str]) -> None:
    wd = tmp_path / "wd"
    reme(wd, "add", "x", "--user", "a")
    failed = reme(wd, command[0], "not-a-uuid", *command[1:], check=2)
    assert failed.stderr.startswith(f"reme {command[0]}: InvalidInputError") and "UUID" in failed.stderr
    spelt = reme(wd, "list", "--json").stdout
    memory_id = json.loads(spelt)["memories"][0]["memory_id"]
    assert reme(wd, "get", memory_id.replace("-", "").upper(), "--json").stdout.count(memory_id) == 1


def test_version_is_printed(tmp_path: Path) -> None:
    from reme import __version__

    proc = subprocess.run([sys.executable, "-m", "reme.cli", "--version"], capture_output=True, text=True,
                          check=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.strip() == f"reme {__version__}"
