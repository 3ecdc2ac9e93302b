"""The memory-quality set on a peer library (`--lib mem0`), through the peer harness.

The peer runs in its own environment (`benchmark/peers`: `.venvs/peer-mem0`, created on first
use), in a worker process (`benchmark/peers/worker.py`, job `quality`), with its own LLM pipeline
(mem0: `add(..., infer=True)` once per session). It embeds through the harness's local endpoint
(all-MiniLM-L6-v2, as ReMe's `local` embedding), and every LLM call goes through the harness's
proxy (`LLMProxy`, replies capped at `max_tokens` as `scripts/llm.sh` caps ReMe's) at a path of
its dialogue, so calls, tokens and seconds are counted per dialogue. The memories it holds after
a dialogue's sessions are scored by the same rule as ReMe's (`score.py`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from benchmark.quality.score import Dialogue, score

PEERS = ("mem0",)


def run_peer(lib: str, dialogues: Sequence[Dialogue], llm_url: str, model: str, *, envs: Path,
             install: bool = True, max_tokens: int = 1024, embed_url: str | None = None,
             work: Path | None = None) -> list[dict[str, Any]]:
    """Each dialogue through `lib`: rows as `run.run_dialogue` makes them (memories, score,
    calls, tokens, seconds; `error` when the library failed on it)."""
    from benchmark.peers.full import LLMProxy, stream_worker
    from benchmark.peers.run import WORKER, Embeddings, python_for

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(work or tmp)
        server = None
        if embed_url is None:
            server, embed_url = Embeddings(Path.home() / ".cache" / "reme" / "peers").serve()
        log = base / "calls.jsonl"
        proxy = LLMProxy(llm_url, log, max_tokens).serve()
        done: dict[str, Any] = {}
        try:
            job = {"kind": "quality", "model": model, "dialogues": [
                {"id": d.id, "user": d.user, "sessions": d.sessions, "base_url": proxy.url(lib, d.id)}
                for d in dialogues]}

            def finished(key: str, value: Any) -> None:
                done[key] = value
                print(f"{key}: {len(value['memories'])} memories, {value['seconds']} s"
                      f"{' ' + value['error'] if 'error' in value else ''}", file=sys.stderr, flush=True)

            stream_worker(python_for(lib, envs, install), WORKER, lib, job, base / lib, embed_url, finished)
        finally:
            proxy.shutdown()
            if server is not None:
                server.shutdown()
        calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    rows = []
    for d in dialogues:
        value = done.get(d.id, {"memories": [], "seconds": 0.0, "error": "not run"})
        mine = [c for c in calls if c["phase"] == d.id]
        rows.append({"id": d.id, "split": d.split, "memories": value["memories"], "sources": [], "rejected": [],
                     **({"error": value["error"]} if "error" in value else {}),
                     "score": score(d, value["memories"]), "calls": len(mine),
                     "tokens": sum(c.get("prompt_tokens", 0) + c.get("completion_tokens", 0) for c in mine),
                     "malformed": sum(1 for c in mine if c.get("malformed")), "seconds": value["seconds"]})
    return rows
