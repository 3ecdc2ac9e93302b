"""Shared by the framework suites (envtests/NAME/, each run in .venvs/NAME by scripts/envs.sh):
the scripted OpenAI-compatible server and the documentation helpers live in tests/."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from docs_support import doc_blocks, env_of  # noqa: E402

if TYPE_CHECKING:
    from openai_server import OpenAITestServer


def name_of(flags: set[str]) -> str | None:
    """The name that tells apart an environment's blocks (```python env=langgraph name=session), if any."""
    names = [f.split("=", 1)[1] for f in flags if f.startswith("name=")]
    return names[0] if names else None


def readme_code(env: str, name: str | None = None) -> list[tuple[str, str, int]]:
    """(language, code, line) of the blocks marked `env=<env>` (and `name=<name>`, or no name) in
    README.md and docs/*.md."""
    return [(lang, code, line) for _, lang, flags, code, line in doc_blocks()
            if env_of(flags) == env and name_of(flags) == name]


@pytest.fixture
def llm() -> Iterator[OpenAITestServer]:
    # Imported here: it needs reme, which AppWorld's environment (pydantic 1) cannot import.
    from openai_server import OpenAITestServer

    with OpenAITestServer() as server:
        yield server
