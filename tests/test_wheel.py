"""The newcomer's path from the built wheel: `pip install` of the wheel into a fresh virtual
environment (core only: no torch), then a conversation summarized and retrieved against an
OpenAI-compatible endpoint (the scripted server on 127.0.0.1, for chat and embeddings), and the
installed `reme` command. Proves the wheel ships what a checkout has (prompts, py.typed) and that
the core dependencies are enough."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from openai_server import OpenAITestServer

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent('''
    import asyncio
    import importlib.resources

    import reme
    from reme import ReMe

    assert "site-packages" in reme.__file__, reme.__file__  # the installed wheel, not the checkout
    assert importlib.resources.files("reme").joinpath("py.typed").is_file()


    async def main() -> None:
        async with ReMe() as memory:  # everything from the environment, as the README shows
            messages = [{"role": "user", "name": "Alice", "content": "I moved to Berlin last week!",
                         "time": "2024-05-03T10:00:00Z"}]
            result = await memory.summarize_memory(messages, user_name="alice")
            print("added", [n.content for n in result.added])
            ctx = await memory.retrieve_memory("Where does Alice live?", user_name="alice")
            print("retrieved", ctx.text)


    asyncio.run(main())
''')


def run(args: list[str], env: dict[str, str], cwd: Path, timeout: int = 600) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_the_wheel_installs_alone_and_summarizes_and_retrieves(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REME_", "OPENAI_", "PYTHON"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path / "dist"), str(ROOT)],
        env, tmp_path)
    (wheel,) = (tmp_path / "dist").glob("reme_memory-*.whl")
    run([sys.executable, "-m", "venv", str(tmp_path / "venv")], env, tmp_path)
    python = tmp_path / "venv" / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], env, tmp_path)
    installed = run([str(python), "-m", "pip", "list", "--format=freeze"], env, tmp_path)
    assert "torch" not in installed and "sentence-transformers" not in installed  # the core stays lean

    with OpenAITestServer() as server:
        server.script("Read the conversation below", {"memories": [
            {"content": "Alice moved to Berlin in late April 2024", "kind": "event", "sources": [0],
             "importance": 0.8, "time": "2024-04-26"}]})
        server.script("You prepare a search", {"queries": ["Alice home city"], "start": None, "end": None})
        user = {**env, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test",
                "REME_LLM__MODEL": "test-model", "REME_EMBEDDING__BACKEND": "openai"}
        (tmp_path / "newcomer.py").write_text(SCRIPT)
        out = run([str(python), "newcomer.py"], user, tmp_path)
    assert "added ['Alice moved to Berlin in late April 2024']" in out
    assert "Alice moved to Berlin" in out.split("retrieved", 1)[1]
    assert (tmp_path / ".reme").is_dir()  # the default working directory, where the user is
    help_text = run([str(tmp_path / "venv" / "bin" / "reme"), "--help"], env, tmp_path)
    assert "summarize" in help_text and "retrieve" in help_text
    local = subprocess.run([str(tmp_path / "venv" / "bin" / "reme"), "add", "x", "--user", "a"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, timeout=120)
    assert local.returncode == 4 and "reme-memory[local]" in local.stderr  # the first command says what to install
