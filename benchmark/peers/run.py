"""`python -m benchmark.peers`: ReMe beside other memory libraries on the same work, in one run.

Each peer runs in an environment of its own (`.venvs/peer-NAME`, created from
`benchmark/peers/requirements-NAME.txt` on first use): the original ReMe (PyPI `reme-ai`) installs
a top-level `reme` package, as this project does. Every library embeds through one local
OpenAI-compatible endpoint that this process serves from all-MiniLM-L6-v2 vectors computed once
(and cached), so all of them search the same vectors. Each workload runs on every library in
turn before the next workload starts; ratios are against ReMe in the same run.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import numpy as np

from benchmark.locomo.data import SCORED, load, resolve_data
from benchmark.locomo.metrics import KS, evidence_scores
from benchmark.peers.full import FULL_LIBS, main_full
from benchmark.peers.full import add_arguments as add_full_arguments

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
WORKER = HERE / "worker.py"
LIBS = ("reme", "reme-server", "reme-ai-local", "reme-ai-chroma", "mem0")
SERVER: dict[str, str] = {}
"""`PEERS_QDRANT` for `reme-server`: the url and gRPC port of the node this run started."""
ENVS = {"reme-ai-local": "reme-ai", "reme-ai-chroma": "reme-ai", "reme-ai": "reme-ai", "mem0": "mem0"}
"""The environment each peer runs in (its requirements file: requirements-ENV.txt)."""


class Embeddings:
    """A local `/v1/embeddings` endpoint: vectors from a table filled ahead of time (misses are
    computed, once). Answers `float` and `base64` encodings, as the OpenAI clients ask."""

    def __init__(self, cache_dir: Path | None, encode: Callable[[list[str]], np.ndarray] | None = None) -> None:
        """`encode`: texts to vectors (default: all-MiniLM-L6-v2, with its vectors cached under `cache_dir`)."""
        self.cache_dir = cache_dir
        self.table: dict[str, np.ndarray] = {}
        self.lock = threading.Lock()
        self._encode = encode

    def encode(self, texts: list[str]) -> np.ndarray:
        if self._encode is None:
            from sentence_transformers import SentenceTransformer

            from benchmark.embedding import embedding_config

            model = SentenceTransformer(embedding_config("local")["model"], device="cpu")
            self._encode = lambda batch: model.encode(batch, batch_size=128, normalize_embeddings=True,
                                                      convert_to_numpy=True)
        return np.asarray(self._encode(texts), dtype=np.float32)

    def fill(self, texts: list[str]) -> None:
        todo = sorted({t for t in texts if t not in self.table})
        if not todo:
            return
        key = hashlib.sha256("\n".join(todo).encode()).hexdigest()[:16]
        cached = self.cache_dir / f"minilm-{key}.npy" if self.cache_dir and self._encode is None else None
        if cached is not None and cached.exists():
            vecs = np.load(cached)
        else:
            vecs = self.encode(todo)
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                np.save(cached, vecs)
        self.table.update(zip(todo, vecs))

    def vectors(self, texts: list[str]) -> list[np.ndarray]:
        with self.lock:
            missing = sorted({t for t in texts if t not in self.table})
            if missing:
                self.table.update(zip(missing, self.encode(missing)))
        return [self.table[t] for t in texts]

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                b64 = body.get("encoding_format") == "base64"
                data = [{"object": "embedding", "index": i,
                         "embedding": base64.b64encode(v.tobytes()).decode() if b64 else v.tolist()}
                        for i, v in enumerate(owner.vectors([str(t) for t in texts]))]
                out = json.dumps({"object": "list", "data": data, "model": body.get("model", ""),
                                  "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def python_for(lib: str, envs: Path, install: bool) -> tuple[str, dict[str, str]]:
    """The interpreter a library runs under, and its environment variables. ReMe: this one, with
    the repository on the path; a peer: its own virtual environment (created when missing)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEM0_TELEMETRY": "False", "ANONYMIZED_TELEMETRY": "False",
           "OPENAI_API_KEY": "local"}
    if lib in ("reme", "reme-server"):
        return sys.executable, {**env, "PYTHONPATH": str(ROOT), **SERVER}
    name = ENVS[lib]
    venv = envs.resolve() / f"peer-{name}"
    python = venv / "bin" / "python"
    if install and not python.exists():
        print(f"creating {venv} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r",
                        str(HERE / f"requirements-{name}.txt")], check=True)
    env.pop("PYTHONPATH", None)
    return str(python), env


def run_worker(lib: str, job: dict[str, Any], store: Path, url: str, envs: Path, install: bool) -> Any:
    python, env = python_for(lib, envs, install)
    job_file = store.with_suffix(".job.json")
    job_file.write_text(json.dumps(job), encoding="utf-8")
    proc = subprocess.run([python, str(WORKER), lib, str(job_file), str(store), url], cwd=store.parent, env=env,
                          capture_output=True, text=True)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith('{"result"'):
            return json.loads(line)["result"]
    raise RuntimeError(f"{lib} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


def crash_check(lib: str, store: Path, url: str, envs: Path, install: bool, acks: int = 200) -> dict[str, Any]:
    """Acknowledged writes after SIGKILL: one add a call until `acks` returned, then kill -9 and
    count how many of the acknowledged ids a fresh process finds."""
    python, env = python_for(lib, envs, install)
    job_file = store.with_suffix(".job.json")
    job_file.write_text(json.dumps({"kind": "crash-write", "n": acks * 10}), encoding="utf-8")
    proc = subprocess.Popen([python, str(WORKER), lib, str(job_file), str(store), url], cwd=store.parent, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    acked: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith('{"ack"'):
            acked.append(json.loads(line)["ack"])
            if len(acked) == acks:
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    found = set(run_worker(lib, {"kind": "crash-read"}, store, url, envs, install)["found"])
    return {"acknowledged": len(acked), "kept": sum(1 for a in acked if a in found)}


def speed_pairs(t: int, n: int) -> list[tuple[int, int]]:
    """`n` distinct pairs of indices below `t`."""
    return [(i % t, (i % t + 1 + i // t) % t) for i in range(n)]


def speed_items(turns: list[str], n: int, users: int = 1000) -> list[tuple[str, str]]:
    """`n` distinct texts (two LoCoMo turns joined), spread over `users` users."""
    return [(f"user{i % users}", f"{turns[a]} {turns[b]}") for i, (a, b) in enumerate(speed_pairs(len(turns), n))]


def locomo_job(path: Path) -> tuple[dict[str, Any], list[list[str]]]:
    convs = load(path)
    asked = [(c, q) for c in convs for q in c.questions if q.category in SCORED and q.evidence]
    job = {"kind": "locomo", "k": max(KS), "conversations": [
        {"user": c.sample_id, "turns": [{"id": t.dia_id, "text": t.content} for t in c.turns]} for c in convs],
           "questions": [{"user": c.sample_id, "text": q.question} for c, q in asked]}
    return job, [q.evidence for _, q in asked]


def recall(ranked: list[list[str]], evidence: list[list[str]]) -> dict[str, float]:
    rows = [evidence_scores([[d] for d in r], ev) for r, ev in zip(ranked, evidence)]
    return {k: float(np.mean([row[k] for row in rows])) for k in rows[0]}


def table(title: str, cols: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
        if isinstance(v, list) and len(v) == 2 and all(isinstance(x, float) for x in v):
            return f"{cell(v[0])} / {cell(v[1])}"
        return "" if v is None else str(v)

    lines = [f"\n{title}\n", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def ratio(value: Any, base: Any, higher_better: bool) -> str:
    a = value[0] if isinstance(value, list) else value
    b = base[0] if isinstance(base, list) else base
    if not a or not b:
        return ""
    return f"x{(b / a if higher_better else a / b):.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="LoCoMo JSON (CC BY-NC 4.0); default: the cached public file")
    parser.add_argument("--libs", help=f"a subset of {','.join(LIBS)} (default: all but reme-server, which "
                                       f"starts a Qdrant node; for the full workload {','.join(FULL_LIBS)})")
    parser.add_argument("--sizes", default="10000", help="memories in the speed workload (1,000 users)")
    parser.add_argument("--max", action="append", default=[], metavar="LIB=N",
                        help="skip sizes above N for LIB (e.g. mem0=10000)")
    parser.add_argument("--queries", type=int, default=100, help="searches and lists per size")
    parser.add_argument("--single", type=int, default=1000, help="memories added one call each (the rest in batches)")
    parser.add_argument("--deletes", type=int, default=50)
    parser.add_argument("--workloads", default="locomo,speed,behaviour,crash")
    parser.add_argument("--envs", type=Path, default=ROOT / ".venvs", help="where the peers' environments live")
    parser.add_argument("--no-install", action="store_true", help="do not create missing peer environments")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("REME_CACHE_DIR", Path.home() / ".cache"
                                                                          / "reme")) / "peers")
    parser.add_argument("--out", type=Path, help="write every result as JSON here")
    add_full_arguments(parser)
    args = parser.parse_args(argv)
    workloads = args.workloads.split(",")
    default = [lib for lib in LIBS if lib != "reme-server"]
    libs = (args.libs or ",".join(FULL_LIBS if workloads == ["full"] else default)).split(",")
    if libs[0] != "reme" and workloads != ["full"]:
        parser.error("--libs starts with reme: ratios are against it")
    limits = {k: int(v) for k, v in (m.split("=") for m in args.max)}
    embed = Embeddings(args.cache)
    server, url = embed.serve()
    tmp = Path(tempfile.mkdtemp(prefix="reme-peers-"))
    node = None
    if "reme-server" in libs:  # ReMe on a Qdrant node on loopback, started for the run
        from benchmark.qdrant_server import node as qdrant_node

        node = qdrant_node(tmp / "qdrant").start()
        SERVER["PEERS_QDRANT"] = f"{node.url} {node.grpc_port}"
    results: dict[str, Any] = {"libs": libs}
    report: list[str] = []

    def out(text: str) -> None:
        report.append(text)
        print(text, flush=True)

    try:
        if "full" in workloads:
            results["full"] = main_full(args, url, lambda lib: python_for(lib, args.envs, not args.no_install),
                                        WORKER, libs)
            report.append(results["full"]["table"])
        if not set(workloads) - {"full"}:
            return
        convs_path = resolve_data(args.data)
        job, evidence = locomo_job(convs_path)
        turns = [t["text"] for c in job["conversations"] for t in c["turns"]]
        embed.fill(turns + [q["text"] for q in job["questions"]])
        if "locomo" in workloads:
            rows = []
            for lib in libs:
                ranked = run_worker(lib, job, tmp / f"locomo-{lib}", url, args.envs, not args.no_install)
                for name, lists in ranked.items():
                    scores = recall(lists, evidence)
                    results.setdefault("locomo", {})[f"{lib} {name}"] = scores
                    rows.append([lib, name, *(scores[f"recall@{k}"] for k in KS)])
            out(table(f"LoCoMo retrieval, no LLM ({len(evidence)} questions, {len(turns)} turns): evidence recall %",
                      ["library", "call", *(f"R@{k}" for k in KS)], rows))
        for n in [int(s) for s in args.sizes.split(",")] if "speed" in workloads else []:
            items = speed_items(turns, n)
            rng = np.random.default_rng(0)
            picks = rng.integers(0, n, args.queries)
            queries = [(items[i][0], " ".join(items[i][1].split()[:12])) for i in picks]
            # A memory's vector: the normalized sum of its two turns' vectors (MiniLM on 100k texts
            # takes longer than the run on two cores); the queries' vectors come from the model.
            for (_, text), (a, b) in zip(items, speed_pairs(len(turns), n)):
                v = embed.table[turns[a]] + embed.table[turns[b]]
                embed.table[text] = v / np.linalg.norm(v)
            embed.fill([q for _, q in queries])
            speed_job = {"kind": "speed", "items": items, "single": min(args.single, n), "queries": queries,
                         "deletes": min(args.deletes, args.queries)}
            got = {}
            for lib in libs:
                if n > limits.get(lib, n):
                    continue
                print(f"speed n={n:,}: {lib} ...", file=sys.stderr, flush=True)
                got[lib] = run_worker(lib, speed_job, tmp / f"speed-{n}-{lib}", url, args.envs, not args.no_install)
                shutil.rmtree(tmp / f"speed-{n}-{lib}", ignore_errors=True)
            results.setdefault("speed", {})[str(n)] = got
            base = got["reme"]
            cols = ["library", "add one p50 ms", "add one/s", "add batch/s", "search p50 / p95 ms",
                    "list p50 / p95 ms", "delete p50 ms", "reopen s", "disk MB (apparent)", "kept after reopen",
                    "foreign hits"]
            rows = [[lib, r["add one"][0], r["add one/s"], r["add batch/s"], r["search"], r["list"], r["delete"][0],
                     r["reopen s"], f"{r['disk']['used'] / 1e6:.0f} ({r['disk']['apparent'] / 1e6:.0f})",
                     f"{r['count after reopen']}/{r['count expected']}", r["foreign hits"]] for lib, r in got.items()]
            out(table(f"{n:,} memories of 1,000 users ({min(args.single, n):,} added one call each, the rest "
                      f"a user's batch at a time; {args.queries} searches filtered to one user, top 10)", cols, rows))
            out("\nratios to ReMe (how many times slower than ReMe; below 1: faster): " + "; ".join(
                f"{lib}: search {ratio(r['search'], base['search'], False)}, list {ratio(r['list'], base['list'], False)}, "
                f"add one {ratio(r['add one/s'], base['add one/s'], True)}, "
                f"add batch {ratio(r['add batch/s'], base['add batch/s'], True)}, "
                f"delete {ratio(r['delete'], base['delete'], False)}, reopen {ratio(r['reopen s'], base['reopen s'], False)}"
                for lib, r in got.items() if lib != "reme"))
        if "behaviour" in workloads or "crash" in workloads:
            rows = []
            for lib in libs:
                row: list[Any] = [lib]
                if "behaviour" in workloads:
                    b = run_worker(lib, {"kind": "behaviour"}, tmp / f"behaviour-{lib}", url, args.envs,
                                   not args.no_install)
                    row += [b["foreign hits"], json.dumps(b["copies per user"])]
                    results.setdefault("behaviour", {})[lib] = b
                if "crash" in workloads:
                    c = crash_check(lib, tmp / f"crash-{lib}", url, args.envs, not args.no_install)
                    row.append(f"{c['kept']}/{c['acknowledged']}")
                    results.setdefault("crash", {})[lib] = c
                rows.append(row)
            cols = ["library"] + (["foreign hits", "copies per user (ann added it 3x)"] if "behaviour" in workloads
                                  else []) + (["acknowledged adds kept after SIGKILL"] if "crash" in workloads else [])
            out(table("Behaviour", cols, rows))
    finally:
        server.shutdown()
        if node is not None:
            node.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        if args.out:
            args.out.write_text(json.dumps({**results, "report": "\n".join(report)}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
