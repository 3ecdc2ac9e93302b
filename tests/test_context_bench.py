"""The context benchmark's overhead mode, tiny: sessions are built, turns measured, the window
compacted through the scripted server, and the table the docs quote is printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_overhead_mode_measures_turns_at_every_size_and_compacts() -> None:
    out = subprocess.run([sys.executable, "-m", "benchmark.context_bench", "--overhead", "--sizes", "300", "1200",
                          "--overhead-turns", "30", "--warmup", "1", "--threshold", "600", "--reserve", "200"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, check=True).stdout
    rows = [line for line in out.splitlines() if re.match(r"\| [\d,]+ \|", line)]
    assert [row.split("|")[1].strip() for row in rows] == ["300", "1,200"], out
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == "30"
        for cell in cells[2:6] + cells[7:10]:  # add, prepare, turn, without compaction, last=20, after=, CPU
            assert re.fullmatch(r"\d+\.\d\d / \d+\.\d\d", cell), (cell, row)
        compactions = int(cells[6].split(",")[0])
        assert 1 <= compactions < 30, row  # the window filled and was compacted, not every turn
