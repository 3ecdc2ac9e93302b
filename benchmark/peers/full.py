"""`python -m benchmark.peers --workloads full`: LoCoMo end to end with an LLM, ReMe beside its
peers. Each library summarizes the same sessions into memories with its own LLM pipeline (ReMe
`summarize_memory`, mem0 `add(..., infer=True)`, the original ReMe's agentic
`summarize_memory`), retrieves the top k memories for each question, and then one answer prompt
and one judge prompt (the same for every library, `benchmark/locomo/prompts`) turn those memories
into a graded answer.

Every LLM call goes through a local proxy (`LLMProxy`) in front of the model's endpoint: it
counts each library's calls, tokens and seconds per phase, caps `max_tokens` (a small model can
loop until its context is full), and records replies that do not have the shape the request
asked for (malformed). Everything finished is checkpointed (`<out>.partial.jsonl`; the stores
stay in `<out>.stores/`), so `--resume` goes on where a run stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmark.locomo.data import CATEGORIES, SCORED, Conversation, Question, load, resolve_data
from benchmark.locomo.metrics import KS, bleu1, evidence_scores, token_f1
from benchmark.runs import Checkpoint, file_digest

FULL_LIBS = ("reme", "mem0", "reme-ai")
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)


def strict_json(text: str) -> bool:
    """Whether `text` is one JSON object or array (one surrounding code fence allowed)."""
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False


def _prompt(body: dict[str, Any]) -> str:
    parts = []
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            parts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
        elif content is not None:
            parts.append(str(content))
    return "\n".join(parts)


class LLMProxy:
    """A local OpenAI-compatible chat endpoint that forwards to `upstream` and logs every call
    (`log`, JSON lines: lib, phase, tokens, seconds, and whether the reply was malformed).
    `url(lib, phase)` is the base URL a library is given for one phase of its work.

    A reply is malformed when the request asked for structure and the reply lacks it: tools were
    offered (and no plain-text answer was acceptable) but no tool call came back, or JSON was
    asked for (`response_format`, or the prompt says JSON) and the content is not one JSON
    object or array.

    With `replies` (a JSON-lines file), every 200 answer to a request that is not streamed is
    written there beside a digest of the request as sent (capped), and a request found there is
    answered from it without calling `upstream` (logged with `replayed`): the same requests get
    the same answers, so code that changes only what is done with them is measured on exactly
    the replies the model gave before. `offline`: a request not found there is answered 404
    (not retried by a client; `upstream` is never called)."""

    def __init__(self, upstream: str, log: Path, max_tokens: int | None, *, replies: Path | None = None,
                 offline: bool = False) -> None:
        self.upstream = upstream.rstrip("/")
        self.log = log
        self.max_tokens = max_tokens
        self.lock = threading.Lock()
        self.base = ""
        self.server: ThreadingHTTPServer | None = None
        self.replies_file, self.offline = replies, offline
        self.replies: dict[str, str] = {}
        if replies is not None and replies.exists():
            for line in replies.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.replies.setdefault(row["request"], row["reply"])

    @staticmethod
    def digest(body: dict[str, Any]) -> str:
        return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def remember(self, key: str, raw: bytes) -> None:
        if self.replies_file is None:
            return
        with self.lock:
            if key not in self.replies:
                self.replies[key] = raw.decode()
                with self.replies_file.open("a", encoding="utf-8") as f:
                    f.write(json.dumps({"request": key, "reply": self.replies[key]}, ensure_ascii=False) + "\n")

    def url(self, lib: str, phase: str) -> str:
        return f"{self.base}/{lib}/{phase}/v1"

    def record(self, row: dict[str, Any]) -> None:
        with self.lock, self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    def serve(self) -> "LLMProxy":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                path = "/" + self.path.strip("/").split("/v1/", 1)[-1]
                try:
                    with urllib.request.urlopen(owner.upstream + path, timeout=60) as r:
                        self._send(r.status, r.read(), r.headers.get("Content-Type", "application/json"))
                except urllib.error.HTTPError as exc:
                    self._send(exc.code, exc.read(), "application/json")

            def _send(self, status: int, raw: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                parts = self.path.strip("/").split("/")
                lib, phase = (parts[0], parts[1]) if len(parts) >= 4 else ("?", "?")
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if owner.max_tokens is not None:
                    for key in ("max_tokens", "max_completion_tokens"):
                        if isinstance(body.get(key), int):
                            body[key] = min(body[key], owner.max_tokens)
                    if not any(isinstance(body.get(k), int) for k in ("max_tokens", "max_completion_tokens")):
                        body["max_tokens"] = owner.max_tokens
                stream = bool(body.get("stream"))
                if stream:
                    body["stream_options"] = {"include_usage": True}
                wants_tools = bool(body.get("tools")) and body.get("tool_choice") != "none"
                wants_json = bool(body.get("response_format")) or "json" in _prompt(body).lower()
                request = urllib.request.Request(owner.upstream + "/chat/completions", json.dumps(body).encode(),
                                                 {"Content-Type": "application/json"})
                started = time.perf_counter()
                row: dict[str, Any] = {"lib": lib, "phase": phase, "stream": stream, "tools": wants_tools,
                                       "json": wants_json and not wants_tools}
                key = owner.digest(body)
                if owner.replies_file is not None and not stream and (key in owner.replies or owner.offline):
                    known = owner.replies.get(key)
                    if known is None:
                        raw = json.dumps({"error": {"message": "no reply recorded for this request (offline)",
                                                    "type": "not_recorded"}}).encode()
                        self._send(404, raw, "application/json")
                        owner.record({**row, "status": 404, "error": "not recorded", "seconds": 0.0})
                        return
                    self._send(200, known.encode(), "application/json")
                    reply = json.loads(known)
                    usage = reply.get("usage") or {}
                    owner.record({**row, "status": 200, "replayed": True,
                                  "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                                  "completion_tokens": int(usage.get("completion_tokens") or 0),
                                  "seconds": round(time.perf_counter() - started, 2)})
                    return
                try:
                    with urllib.request.urlopen(request, timeout=3600) as response:
                        if stream:
                            content, tool_calls, usage, finish = self._relay(response)
                        else:
                            raw = response.read()
                            self._send(response.status, raw, "application/json")
                            if response.status == 200:
                                owner.remember(key, raw)
                            reply = json.loads(raw)
                            choice = (reply.get("choices") or [{}])[0]
                            message = choice.get("message") or {}
                            content, tool_calls = message.get("content") or "", bool(message.get("tool_calls"))
                            usage, finish = reply.get("usage") or {}, choice.get("finish_reason")
                except urllib.error.HTTPError as exc:
                    raw = exc.read()
                    self._send(exc.code, raw, "application/json")
                    owner.record({**row, "status": exc.code, "error": raw[:300].decode(errors="replace"),
                                  "seconds": round(time.perf_counter() - started, 2)})
                    return
                malformed = (wants_tools and not tool_calls and row["tools"]) or (
                    row["json"] and not tool_calls and not strict_json(content))
                owner.record({**row, "status": 200, "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                              "completion_tokens": int(usage.get("completion_tokens") or 0),
                              "seconds": round(time.perf_counter() - started, 2), "finish": finish,
                              "tool_calls": tool_calls, "malformed": bool(malformed),
                              **({"sample": content[:300]} if malformed else {})})

            def _relay(self, response: Any) -> tuple[str, bool, dict[str, Any], str | None]:
                """Pass server-sent events through as they come; gather the content and usage."""
                self.send_response(response.status)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                content, tool_calls, usage, finish = [], False, {}, None
                for line in response:
                    self.wfile.write(line)
                    self.wfile.flush()
                    text = line.decode(errors="replace").strip()
                    if not text.startswith("data:") or text.endswith("[DONE]"):
                        continue
                    try:
                        chunk = json.loads(text[5:])
                    except ValueError:
                        continue
                    usage = chunk.get("usage") or usage
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        content.append(delta.get("content") or "")
                        tool_calls = tool_calls or bool(delta.get("tool_calls"))
                        finish = choice.get("finish_reason") or finish
                self.close_connection = True
                return "".join(content), tool_calls, usage, finish

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def shutdown(self) -> None:
        if self.server is not None:
            self.server.shutdown()


def subset(convs: Sequence[Conversation], names: Sequence[str], sessions: int,
           per_category: int) -> list[tuple[Conversation, list[Question]]]:
    """The named conversations cut to their first `sessions` sessions, each with its questions of
    categories 1-4 whose evidence lies wholly in those sessions, the first `per_category` of each
    category in file order."""
    by_id = {c.sample_id: c for c in convs}
    missing = [n for n in names if n not in by_id]
    if missing:
        raise SystemExit(f"no conversation {', '.join(missing)} in the data (there are {', '.join(by_id)})")
    out = []
    for name in names:
        conv = by_id[name]
        cut = Conversation(sample_id=conv.sample_id, speakers=conv.speakers, sessions=conv.sessions[:sessions],
                           questions=[], observations=conv.observations)
        turns = {t.dia_id for t in cut.turns}
        picked: list[Question] = []
        for category in SCORED:
            picked += [q for q in conv.questions if q.category == category and q.evidence
                       and set(q.evidence) <= turns][:per_category]
        out.append((cut, sorted(picked, key=lambda q: q.index)))
    return out


def conversation_job(conv: Conversation) -> dict[str, Any]:
    return {"id": conv.sample_id, "speakers": list(conv.speakers), "sessions": [
        {"time": when.isoformat(), "turns": [{"id": t.dia_id, "speaker": t.speaker, "text": _said(t)} for t in turns]}
        for when, turns in conv.sessions]}


def _said(turn: Any) -> str:
    """The turn's text as the speaker said it, with the shared image's caption."""
    return f"{turn.text} [shares {turn.caption}]" if turn.caption else turn.text


class Bar:
    """A progress bar (tqdm, when installed) advanced by hand."""

    def __init__(self, total: int, desc: str, done: int = 0) -> None:
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm comes with the bench extra
            self.bar = None
            return
        self.bar = tqdm(total=total, desc=desc, initial=done, file=sys.stderr, disable=None)

    def step(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def stream_worker(python_env: tuple[str, dict[str, str]], worker: Path, lib: str, job: dict[str, Any], store: Path,
                  url: str, on_done: Callable[[str, Any], None]) -> Any:
    """Run one worker job, calling `on_done(key, value)` for each unit it reports as it reports it."""
    python, env = python_env
    store = store.resolve()
    store.mkdir(parents=True, exist_ok=True)
    job_file = store.parent / f"{store.name}.{job['kind']}.json"
    job_file.write_text(json.dumps(job), encoding="utf-8")
    log = store.parent / f"{store.name}.stderr.log"
    with log.open("a", encoding="utf-8") as err:
        proc = subprocess.Popen([python, str(worker), lib, str(job_file), str(store), url], cwd=store.parent, env=env,
                                stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        result = None
        for line in proc.stdout:
            if line.startswith('{"done"'):
                row = json.loads(line)
                on_done(row["done"], row["value"])
            elif line.startswith('{"result"'):
                result = json.loads(line)["result"]
        proc.wait()
    if result is None:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"{lib} {job['kind']} failed ({proc.returncode}); its log {log}:\n{tail}")
    return result


def _when(value: Any) -> str:
    try:
        return datetime.fromisoformat(str(value)).strftime("%d %B %Y, %H:%M")
    except ValueError:
        return str(value or "unknown time")


async def grade(answer_llm: Any, judge_llm: Any, conv: Conversation, q: Question,
                memories: list[dict[str, Any]]) -> dict[str, Any]:
    """The shared answer prompt over a library's memories, and the judge's verdict."""
    from benchmark.locomo.full import PROMPTS

    speakers = [{"name": s, "memories": [{"time": _when(m.get("time")), "content": m["content"]}
                                         for m in memories if m.get("owner") == s]} for s in conv.speakers]
    prompt = PROMPTS.get_template("answer.jinja").render(question=q.question, speakers=speakers)
    started = time.perf_counter()
    prediction = (await answer_llm.chat([{"role": "user", "content": prompt}])).strip()
    return {"prediction": prediction, **await judge(judge_llm, q, prediction),
            "f1": token_f1(prediction, q.answer), "bleu1": bleu1(prediction, q.answer),
            "seconds": round(time.perf_counter() - started, 2)}


async def judge(judge_llm: Any, q: Question, prediction: str) -> dict[str, Any]:
    """The judge's verdict on one answer: CORRECT, WRONG, or INVALID (two replies that are not a
    verdict), graded 100 / 0 / 0."""
    from benchmark.locomo.full import PROMPTS, Verdict
    from reme.errors import LLMError

    try:
        verdict = await judge_llm.structured([{"role": "user", "content": PROMPTS.get_template("judge.jinja").render(
            question=q.question, gold=q.answer, answer=prediction)}], Verdict)
        label = verdict.label
    except LLMError as exc:
        label = f"INVALID ({type(exc).__name__})"
    return {"label": label, "judge": 100.0 if label == "CORRECT" else 0.0}


def run_full(args: argparse.Namespace, embed_url: str, python_for: Callable[[str], tuple[str, dict[str, str]]],
             worker: Path, libs: Sequence[str]) -> dict[str, Any]:
    """Ingest, retrieve, answer and judge for each library in turn; returns the report."""
    from reme.config import LLMConfig
    from reme.llm import ChatModel

    data = resolve_data(args.data)
    names = [n for n in args.conversations.split(",") if n]
    picked = subset(load(data), names, args.sessions, args.per_category)
    out = Path(args.full_out).resolve()
    # What stored work depends on. The sessions and questions may change on --resume: each session
    # and question is checkpointed on its own (a store holds the sessions ingested so far).
    settings = {"data": file_digest(data), "conversations": names, "top_k": args.top_k, "model": args.model,
                "max_tokens": args.max_tokens}
    stores = out.with_suffix(".stores")
    calls_log = out.with_suffix(".calls.jsonl")
    if args.report_only:
        args.resume = True
    if not args.resume:
        shutil.rmtree(stores, ignore_errors=True)
        calls_log.unlink(missing_ok=True)
    checkpoint = Checkpoint(out.with_suffix(".partial.jsonl"), settings, args.resume)
    proxy = LLMProxy(args.llm_url, calls_log, args.max_tokens).serve()
    convs = [conversation_job(c) for c, _ in picked]
    questions = [(c, q) for c, qs in picked for q in qs]
    n_sessions = sum(len(c["sessions"]) for c in convs)
    try:
        for lib in [] if args.report_only else libs:
            if lib not in FULL_LIBS:
                raise SystemExit(f"--workloads full runs {', '.join(FULL_LIBS)}; not {lib}")
            env = python_for(lib)
            # The reply cap the proxy holds every library to. ReMe is told it (`llm.max_tokens`, as
            # scripts/llm.sh sets it), so that its per-step reply budgets apply; without a cap it sends none.
            llm = {"model": args.model, "max_tokens": args.max_tokens}
            done = [k for k in checkpoint.done if k.startswith(f"ingest/{lib}/")]
            bar = Bar(n_sessions, f"{lib}: summarize sessions", len(done))

            def finished(prefix: str, bar: Bar) -> Callable[[str, Any], None]:
                def record(key: str, value: Any) -> None:
                    checkpoint.add(f"{prefix}/{key}", value)
                    bar.step()
                return record

            skip = [k.split("/", 2)[2] for k in done]
            stream_worker(env, worker, lib, {"kind": "full-ingest", "conversations": convs, "skip": skip,
                                             "llm": {**llm, "base_url": proxy.url(lib, "ingest")}},
                          stores / lib, embed_url, finished(f"ingest/{lib}", bar))
            bar.close()
            skip = [f"{c.sample_id}/{q.index}" for c, q in questions if f"retrieve/{lib}/{c.sample_id}/{q.index}"
                    in checkpoint.done]
            bar = Bar(len(questions), f"{lib}: retrieve", len(skip))
            dumped = stream_worker(
                env, worker, lib, {"kind": "full-retrieve", "conversations": convs, "skip": skip, "k": args.top_k,
                                   "llm": {**llm, "base_url": proxy.url(lib, "retrieve")},
                                   "questions": [{"key": f"{c.sample_id}/{q.index}", "conv": c.sample_id,
                                                  "text": q.question} for c, q in questions]},
                stores / lib, embed_url, finished(f"retrieve/{lib}", bar))
            bar.close()
            checkpoint.add(f"memories/{lib}", dumped["memories"])

            def chat(phase: str) -> Any:
                return ChatModel(LLMConfig(base_url=proxy.url(lib, phase), model=args.model, api_key="local",
                                           timeout=3600.0, max_retries=1))

            async def answer_all() -> None:
                answer_llm, judge_llm = chat("answer"), chat("judge")
                try:
                    keys = [(c, q, f"grade/{lib}/{c.sample_id}/{q.index}") for c, q in questions]
                    bar = Bar(len(keys), f"{lib}: answer and judge", sum(k in checkpoint.done for _, _, k in keys))
                    for c, q, key in keys:
                        if key not in checkpoint.done:
                            memories = checkpoint.done[f"retrieve/{lib}/{c.sample_id}/{q.index}"]["memories"]
                            checkpoint.add(key, await grade(answer_llm, judge_llm, c, q, memories))
                            bar.step()
                    bar.close()
                finally:
                    await answer_llm.close()
                    await judge_llm.close()

            asyncio.run(answer_all())
        if args.judge_model:
            asyncio.run(rejudge(args, checkpoint, calls_log, libs, questions))
    finally:
        proxy.shutdown()
    return report(picked, libs, checkpoint, calls_log, {
        **settings, "sessions": args.sessions, "per_category": args.per_category, "judge_model": args.judge_model,
        "questions": {c.sample_id: [q.index for q in qs] for c, qs in picked}})


async def rejudge(args: argparse.Namespace, checkpoint: Checkpoint, calls_log: Path, libs: Sequence[str],
                  questions: Sequence[tuple[Conversation, Question]]) -> None:
    """Every answer given so far graded again by `--judge-model` at `--judge-url` (a larger model
    than the one answering: a small judge calls nearly everything CORRECT)."""
    from reme.config import LLMConfig
    from reme.llm import ChatModel

    proxy = LLMProxy(args.judge_url or args.llm_url, calls_log, args.max_tokens).serve()
    try:
        for lib in libs:
            llm = ChatModel(LLMConfig(base_url=proxy.url(lib, "rejudge"), model=args.judge_model, api_key="local",
                                      timeout=3600.0, max_retries=1))
            todo = [(c, q) for c, q in questions if f"grade/{lib}/{c.sample_id}/{q.index}" in checkpoint.done
                    and f"rejudge/{args.judge_model}/{lib}/{c.sample_id}/{q.index}" not in checkpoint.done]
            bar = Bar(len(todo), f"{lib}: judge with {args.judge_model}")
            try:
                for c, q in todo:
                    prediction = checkpoint.done[f"grade/{lib}/{c.sample_id}/{q.index}"]["prediction"]
                    checkpoint.add(f"rejudge/{args.judge_model}/{lib}/{c.sample_id}/{q.index}",
                                   await judge(llm, q, prediction))
                    bar.step()
            finally:
                bar.close()
                await llm.close()
    finally:
        proxy.shutdown()


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 1) if values else None


def report(picked: list[tuple[Conversation, list[Question]]], libs: Sequence[str], checkpoint: Checkpoint,
           calls_log: Path, settings: dict[str, Any]) -> dict[str, Any]:
    calls = [json.loads(line) for line in calls_log.read_text(encoding="utf-8").splitlines()] \
        if calls_log.exists() else []
    n_convs = len(picked)
    # Scores over the same questions for every library: those each of them has graded.
    judged = settings.get("judge_model")

    def verdict_key(lib: str, c: Conversation, q: Question) -> str:
        return f"rejudge/{judged}/{lib}/{c.sample_id}/{q.index}" if judged else f"grade/{lib}/{c.sample_id}/{q.index}"

    picked = [(c, [q for q in qs if all(f"grade/{lib}/{c.sample_id}/{q.index}" in checkpoint.done
                                        and verdict_key(lib, c, q) in checkpoint.done for lib in libs)])
              for c, qs in picked]
    settings = {**settings, "graded": {c.sample_id: [q.index for q in qs] for c, qs in picked}}
    out: dict[str, Any] = {"settings": settings, "libs": {}}
    for lib in libs:
        grades, recall_rows, per_cat = [], [], {CATEGORIES[c]: [] for c in SCORED}
        retrieve_s = []
        for conv, qs in picked:
            for q in qs:
                g = checkpoint.done.get(f"grade/{lib}/{conv.sample_id}/{q.index}")
                r = checkpoint.done.get(f"retrieve/{lib}/{conv.sample_id}/{q.index}")
                if g is None or r is None:
                    continue
                verdict = checkpoint.done[verdict_key(lib, conv, q)]
                g = {**g, "self_judge": g["judge"], "judge": verdict["judge"], "label": verdict["label"]}
                grades.append(g)
                retrieve_s.append(r["seconds"])
                per_cat[CATEGORIES[q.category]].append(g["judge"])
                recall_rows.append(evidence_scores([m.get("dia_ids") or [] for m in r["memories"]], q.evidence))
        ingest = [v for k, v in checkpoint.done.items() if k.startswith(f"ingest/{lib}/")]
        memories = checkpoint.done.get(f"memories/{lib}") or {}
        cited = {d for mems in memories.values() for m in mems for d in m.get("dia_ids") or []}
        wanted = [set(q.evidence) for _, qs in picked for q in qs]
        mine = [c for c in calls if c["lib"] == lib]

        def phase(*names: str) -> dict[str, Any]:
            rows = [c for c in mine if c["phase"] in names]
            return {"calls": len(rows), "prompt_tokens": sum(c.get("prompt_tokens", 0) for c in rows),
                    "completion_tokens": sum(c.get("completion_tokens", 0) for c in rows),
                    "seconds": round(sum(c.get("seconds", 0) for c in rows), 1),
                    "structured": sum(1 for c in rows if c.get("tools") or c.get("json")),
                    "malformed": sum(1 for c in rows if c.get("malformed")),
                    "errors": sum(1 for c in rows if c.get("status") != 200),
                    "truncated": sum(1 for c in rows if c.get("finish") == "length")}

        # ReMe's memories cite the turns they came from (when the model names them); the peers' keep no link.
        has_sources = lib == "reme" or any(m.get("dia_ids") for mems in memories.values() for m in mems)
        out["libs"][lib] = {
            "questions": len(grades),
            "J": _mean([g["judge"] for g in grades]), "F1": _mean([g["f1"] for g in grades]),
            "J (answering model as judge)": _mean([g["self_judge"] for g in grades]),
            "BLEU-1": _mean([g["bleu1"] for g in grades]),
            "J by category": {k: _mean(v) for k, v in per_cat.items() if v},
            "judge invalid": sum(1 for g in grades if g["label"].startswith("INVALID")),
            "sessions": len(ingest), "sessions failed": sum(1 for v in ingest if "error" in v),
            "errors": sorted({v["error"][:200] for v in ingest if "error" in v}),
            "memories": sum(len(m) for m in memories.values()),
            "memory": phase("ingest", "retrieve"), "ingest": phase("ingest"), "retrieve": phase("retrieve"),
            "answer": phase("answer"), "judge": phase("judge"), "rejudge": phase("rejudge"),
            "per conversation": {k: round(v / n_convs, 1) for k, v in phase("ingest", "retrieve").items()
                                 if k in ("calls", "prompt_tokens", "completion_tokens")},
            "wall s": {"ingest": round(sum(v["seconds"] for v in ingest), 1), "retrieve": round(sum(retrieve_s), 1),
                       "answer+judge": round(sum(g["seconds"] for g in grades), 1)},
            "evidence recall": ({f"R@{k}": _mean([r[f"recall@{k}"] for r in recall_rows]) for k in KS}
                                | {"cited by some memory": round(100.0 * sum(len(w & cited) for w in wanted)
                                                                 / max(1, sum(len(w) for w in wanted)), 1),
                                   "memories citing a turn": sum(1 for mems in memories.values() for m in mems
                                                                 if m.get("dia_ids"))}
                                if has_sources else None),
        }
    out["table"] = table(out)
    return out


def table(rep: dict[str, Any]) -> str:
    s = rep["settings"]
    head = ["library", "J", "J (answering model judging)", "F1", "memories", "LLM calls / conv (ingest+retrieve)", "tokens in / out per conv",
            "malformed (of structured)", "sessions failed", "wall min (ingest / retrieve / answer+judge)",
            "evidence R@5 / R@10 (cited)"]
    graded, asked = (sum(len(v) for v in s[k].values()) for k in ("graded", "questions"))
    judged = s.get("judge_model")
    lines = [f"LoCoMo full mode, {', '.join(s['conversations'])}, first {s['sessions']} "
             f"session{'s' if s['sessions'] != 1 else ''}, "
             f"{graded} questions (categories 1-4, up to {s['per_category']} each"
             f"{f'; {graded} of {asked} graded for every library' if graded < asked else ''}), "
             f"top {s['top_k']}, model {s['model']}"
             f"{f', judge {judged}' if judged else ''}", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for lib, r in rep["libs"].items():
        ev = r["evidence recall"]
        w = r["wall s"]
        mem = r["memory"]
        lines.append("| " + " | ".join(str(x) for x in [
            lib, r["J"], r["J (answering model as judge)"], r["F1"], r["memories"], r["per conversation"]["calls"],
            f"{r['per conversation']['prompt_tokens']:,.0f} / {r['per conversation']['completion_tokens']:,.0f}",
            f"{mem['malformed']} ({mem['structured']})", f"{r['sessions failed']}/{r['sessions']}",
            f"{w['ingest'] / 60:.1f} / {w['retrieve'] / 60:.1f} / {w['answer+judge'] / 60:.1f}",
            f"{ev['R@5']} / {ev['R@10']} ({ev['cited by some memory']})" if ev else "n/a (no source turns)"]) + " |")
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    full = p.add_argument_group("full workload (LoCoMo with an LLM; `--workloads full`)")
    full.add_argument("--llm-url", help="the model's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    full.add_argument("--model", help="the model name at that endpoint")
    full.add_argument("--conversations", default="conv-26", help="sample ids, comma-separated (default conv-26)")
    full.add_argument("--sessions", type=int, default=2, help="the first N sessions of each (default 2)")
    full.add_argument("--per-category", type=int, default=10,
                      help="questions per category 1-4 whose evidence lies in those sessions (default 10)")
    full.add_argument("--top-k", type=int, default=10, help="memories retrieved per question (default 10)")
    full.add_argument("--max-tokens", type=int, default=1024, help="cap on every reply's tokens (default 1024)")
    full.add_argument("--full-out", default="benchmark/results/peers-full.json",
                      help="report JSON; its checkpoint, stores and call log go beside it")
    full.add_argument("--resume", action="store_true", help="continue an interrupted full run")
    full.add_argument("--judge-model", help="grade every answer again with this model (J); the answering "
                                            "model's own verdicts stay beside it")
    full.add_argument("--judge-url", help="the judge model's endpoint (default: --llm-url)")
    full.add_argument("--report-only", action="store_true",
                      help="no summarize / retrieve / answer work (only --judge-model's grading): the report from "
                           "the checkpoint, over the questions every library finished")


def main_full(args: argparse.Namespace, embed_url: str, python_for: Callable[[str], tuple[str, dict[str, str]]],
              worker: Path, libs: Sequence[str]) -> dict[str, Any]:
    if not args.llm_url or not args.model:
        raise SystemExit("--workloads full needs --llm-url and --model")
    rep = run_full(args, embed_url, python_for, worker, libs)
    out = Path(args.full_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rep, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(rep["table"] + "\n", encoding="utf-8")
    print(rep["table"], flush=True)
    print(f"\nwrote {out} and {out.with_suffix('.md')}", file=sys.stderr)
    return rep
