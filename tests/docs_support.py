"""Running documentation as a user would: the fenced blocks of README.md and of every page in docs/,
and the environment a user exports (hash embeddings, the scripted LLM server as OPENAI_BASE_URL).
Shared by tests/test_docs.py and the framework suites in envtests/ (each in its own virtual
environment)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ENVTESTS = ROOT / "envtests"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def doc_pages() -> list[Path]:
    """README.md, then every page in docs/ (a new page is picked up without being listed)."""
    return [README, *sorted(DOCS.glob("*.md"))]


def doc_blocks() -> list[tuple[str, str, set[str], str, int]]:
    """(page, language, flags, code, line) of every fenced block of every documentation page; the
    page as a path from the repository root (docs/memory.md)."""
    return [(page.relative_to(ROOT).as_posix(), *block) for page in doc_pages() for block in fenced_blocks(page)]


def fenced_blocks(path: Path) -> list[tuple[str, set[str], str, int]]:
    """(language, flags, code, line) of every fenced block of one page."""
    text = path.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        info = match.group(1).split()
        line = text.count("\n", 0, match.start()) + 1
        out.append((info[0] if info else "", set(info[1:]), match.group(2), line))
    return out


def env_of(flags: set[str]) -> str | None:
    """The framework environment a block needs (```python env=langgraph), if any."""
    names = [f.split("=", 1)[1] for f in flags if f.startswith("env=")]
    return names[0] if names else None


def user_environment(base_url: str, tmp_path: Path) -> dict[str, str]:
    """What a user exports: no REME_WORKING_DIR (the default .reme in the current directory); `reme`
    and `python` on PATH are the interpreter running the tests."""
    shims = tmp_path / "bin"
    shims.mkdir(exist_ok=True)
    (shims / "reme").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m reme.cli "$@"\n')
    (shims / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # the environment ReMe is in
    for shim in shims.iterdir():
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REME_", "OPENAI_"))}
    env.update({"REME_EMBEDDING__BACKEND": "hash", "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test",
                "REME_LLM__MODEL": "test-model", "REME_LLM__MAX_RETRIES": "0", "HF_HUB_OFFLINE": "1",
                "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
                "PATH": os.pathsep.join([str(shims), env.get("PATH", "")])})
    return env


def run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout
