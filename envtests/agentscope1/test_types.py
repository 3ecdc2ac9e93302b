"""`reme.mcp` type-checks clean under mcp 1.x: this environment pins mcp<2 (AgentScope 1.x needs
it), while the main .venv has mcp 2.x and scripts/test.sh checks the whole package there. The
module uses only what both majors offer, with no `type: ignore` that one of them calls unused."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_reme_mcp_type_checks_clean_under_mcp_1() -> None:
    assert version("mcp").startswith("1."), version("mcp")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports",
                           "--cache-dir", str(Path(sys.prefix) / "mypy-cache"), "reme/mcp.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
