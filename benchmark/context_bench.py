"""Working memory on long trajectories: tokens sent to the model per turn with and without
context management, the LLM calls it costs, and (LoCoMo) whether the evidence of each question is
still in reach.

Two trajectories are replayed as sessions, one model call per turn:

- LoCoMo conversations (`--data`, default `../shared/data/locomo/locomo10_dev.json`): every turn is
  added to a session and `prepare_context(user_name=...)` runs before the (imagined) reply. Without
  compaction the model gets every turn so far. At the end each question (categories 1-4 with
  evidence turns) is answered from the compacted context plus the memories `retrieve_memory` finds
  (top `--top-k`); its evidence recall is the share of its evidence turns that context holds: the
  turns kept, and the turns the retrieved memories were written from. The full context holds them
  all (recall 1.0) at the price of sending everything.
- A BFCL-like agent trajectory: user requests, tool calls and their results (file listings,
  search results, logs; some of them tens of kilobytes), replayed with tool-result offloading on.
  BFCL's own tasks need `bfcl-eval` and its executable environments; this trajectory is generated
  (seeded) in their shape, so only tokens and calls are measured on it.

The LLM is the scripted loopback server from the tests unless `--base-url` names a real
OpenAI-compatible endpoint (e.g. the local model of `scripts/llm.sh`). The scripted server answers
extractively: a compaction keeps the lines it is shown, cut short, and the memory extraction turns
each turn into one memory citing it. So with it, recall measures what the pipeline keeps in
reach (kept turns, stored memories, retrieval), not a model's summarizing; a summary's own
mentions of evidence are not counted in either case.

    python -m benchmark.context_bench --conversations 1 --threshold 4000 --reserve 1500

`--overhead` measures instead what a turn costs ReMe itself in a long session: a session of 1k,
10k and 100k messages (`--sizes`) is built in batches of 5,000, the older ones compacted (marked
`compressed`, a summary set), then each of `--overhead-turns` turns adds one message and calls
`prepare_context` (threshold and reserve as given); every few dozen turns the window fills and
`prepare_context` compacts it, with one call to the scripted server, whose time (the model's, a
loopback round trip here) is left out: what is measured is ReMe's own. Printed per size: the
milliseconds of `add_messages`, of `prepare_context` and of both (p50 / p99), of the turns that
compacted, and of reading the last 20 messages (`get_messages(last=20)`) and what followed a
known message (`after=`); and the CPU time of a turn without compaction (this process's, so
what other processes take of a shared machine is not in it).

    python -m benchmark.context_bench --overhead --sizes 1000 10000 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from openai_server import OpenAITestServer, prompt_of  # noqa: E402

from benchmark.locomo.data import SCORED, Conversation, load  # noqa: E402
from reme import ReMe  # noqa: E402
from reme.memory.session import COMPRESSED  # noqa: E402
from reme.working import message_tokens  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10_dev.json"
COMPACT = "working memory of an AI agent"
EXTRACT = "Read the conversation below"
RECONCILE = "long-term memory consistent"


# -- the scripted model ----------------------------------------------------------------------------
def compact_reply(body: dict[str, Any]) -> dict[str, Any]:
    """An extractive summary: the previous summary's lines and each new line, cut to 100 characters,
    the oldest dropped past 40 lines (a summary does not grow without bound)."""
    prompt = prompt_of(body)
    previous = prompt.split("Previous summary:")[1].split("Messages to summarize")[0]
    kept = re.findall(r"^- (.*)$", previous, re.MULTILINE)
    new = [line[:100] for line in re.findall(r"^\[\d+\] (.*)$", prompt.split("Messages to summarize")[1],
                                              re.MULTILINE)]
    return {"goal": "continue the conversation", "critical_context": (kept + new)[-40:]}


def extract_reply(body: dict[str, Any]) -> dict[str, Any]:
    said = re.findall(r"^\[(\d+)\] \[[^\]]+\] ([^:\n]+): (.*)$", prompt_of(body), re.MULTILINE)
    return {"memories": [{"content": f"{who}: {text}", "kind": "fact", "time": None, "sources": [int(i)],
                          "importance": 0.5} for i, who, text in said if text.strip()]}


def reconcile_reply(body: dict[str, Any]) -> dict[str, Any]:
    n = len(re.findall(r"^\d+\. \[", prompt_of(body).split("Candidates:")[1], re.MULTILINE))
    return {"decisions": [{"candidate": i, "action": "ADD"} for i in range(n)]}


def llm_settings(args: argparse.Namespace, server: OpenAITestServer | None) -> dict[str, Any]:
    if server is not None:
        return {"base_url": server.base_url, "api_key": "k", "model": "scripted", "max_retries": 0}
    return {"base_url": args.base_url, "api_key": args.api_key or "EMPTY", "model": args.model, "timeout": 600}


def embedding(args: argparse.Namespace) -> dict[str, Any]:
    return {"backend": "hash", "dimensions": 256} if args.embedding == "hash" else {"backend": "local"}


# -- LoCoMo --------------------------------------------------------------------------------------
def tokens(messages: list[dict[str, Any]]) -> int:
    return sum(message_tokens(m) for m in messages)


async def cited_turns(reme: ReMe, memories: list[Any]) -> set[str]:
    """The dia_ids the retrieved memories were written from (their history node's message ids)."""
    refs = sorted({m.node.ref_ids[0] for m in memories if m.node.ref_ids})
    history: dict[str, Any] = {}
    for ref in refs:
        try:
            history[ref] = await reme.get_memory(ref)
        except Exception:  # noqa: BLE001 - a memory without its source cites nothing
            continue
    out: set[str] = set()
    for m in memories:
        node = history.get(m.node.ref_ids[0]) if m.node.ref_ids else None
        spans = node.metadata.get("messages", []) if node is not None else []
        for i in m.node.metadata.get("source_turns") or []:
            if isinstance(i, int) and 0 <= i < len(spans) and spans[i].get("id"):
                out.add(spans[i]["id"])
    return out


async def locomo(args: argparse.Namespace, conv: Conversation, llm: dict[str, Any], wd: Path) -> dict[str, Any]:
    user, session = "speakers", conv.sample_id
    full: list[dict[str, Any]] = []
    sent: list[int] = []
    unsent: list[int] = []
    compact_calls = 0
    started = time.perf_counter()
    async with ReMe(working_dir=wd, embedding=embedding(args), llm=llm,
                    context={"max_tool_chars": 100_000}) as reme:
        for turn in conv.turns[:args.turns or None]:
            message = {"role": "user", "name": turn.speaker, "content": turn.text + (
                f" [shares {turn.caption}]" if turn.caption else ""), "time": turn.time.isoformat(), "id": turn.dia_id}
            full.append(message)
            await reme.add_messages([message], session_name=session)
            ready = await reme.prepare_context(session_name=session, threshold=args.threshold, reserve=args.reserve,
                                               user_name=user)
            compact_calls += ready.usage.calls
            sent.append(ready.tokens_after)
            unsent.append(tokens(full))
            if args.summaries and ready.compacted:
                with open(args.summaries, "a", encoding="utf-8") as out:
                    out.write(json.dumps({"conversation": conv.sample_id, "turn": len(full), "compacted": ready.compacted,
                                          "calls": ready.usage.calls, "summary": ready.summary},
                                         ensure_ascii=False) + "\n")
        await reme.wait_background()
        kept = {m.message.get("id") for m in await reme.get_messages(session_name=session, exclude_mark=COMPRESSED)}
        context = ready.messages
        rows = []
        known = {m["id"] for m in full}
        for q in conv.questions:
            evidence = [e for e in q.evidence if e in known]
            if q.category not in SCORED or not evidence:
                continue
            found = await reme.retrieve_memory(q.question, user_name=user, top_k=args.top_k, rewrite=False)
            reach = kept | await cited_turns(reme, found.memories)
            rows.append({"recall": sum(e in reach for e in evidence) / len(evidence),
                         "kept_recall": sum(e in kept for e in evidence) / len(evidence),
                         "tokens": tokens(context) + message_tokens({"content": found.text}),
                         "full_tokens": tokens(full)})
        memories = await reme.count_memory(user_name=user, memory_type="personal")
    return {"name": f"LoCoMo {conv.sample_id}", "turns": len(sent), "sent": sent, "unsent": unsent,
            "compact_calls": compact_calls, "questions": rows, "memories": memories,
            "seconds": time.perf_counter() - started}


# -- a BFCL-like agent trajectory ------------------------------------------------------------------
def bfcl_like(turns: int, seed: int) -> list[list[dict[str, Any]]]:
    """`turns` user requests, each answered by 1-3 tool calls and a reply; tool results are short
    (a status), medium (a record) or long (a listing or log of 5-40 kB)."""
    rng = random.Random(seed)
    tools = ["ls", "cat", "grep", "get_stock_info", "search_flights", "send_message", "view_tweets", "du"]
    words = "alpha beta gamma delta report budget q3 invoice draft final notes travel tokyo order ticket".split()
    out = []
    n = 0
    for t in range(turns):
        request = f"Turn {t}: please {rng.choice(['find', 'update', 'check', 'summarize', 'book'])} the " \
                  f"{' '.join(rng.sample(words, 3))} and tell me what changed since last time."
        step: list[dict[str, Any]] = [{"role": "user", "content": request}]
        for _ in range(rng.randint(1, 3)):
            n += 1
            tool = rng.choice(tools)
            args = {"path": f"/workspace/{rng.choice(words)}/{rng.choice(words)}.txt", "limit": rng.randint(1, 50)}
            step.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{n}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
            size = rng.choice(["short", "short", "medium", "long"])
            if size == "short":
                body = json.dumps({"status": "ok", "changed": rng.randint(0, 9)})
            elif size == "medium":
                body = json.dumps({w: rng.randint(0, 10_000) for w in rng.sample(words, 10)})
            else:
                body = "\n".join(f"{rng.choice(words)}_{i:05d}.txt  {rng.randint(1, 99_999):>6} bytes  "
                                 f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}" for i in
                                 range(rng.randint(120, 900)))
            step.append({"role": "tool", "tool_call_id": f"call_{n}", "name": tool, "content": body})
        step.append({"role": "assistant", "content": f"Done with turn {t}: " + " ".join(rng.sample(words, 8))})
        out.append(step)
    return out


async def bfcl(args: argparse.Namespace, llm: dict[str, Any], wd: Path) -> dict[str, Any]:
    full: list[dict[str, Any]] = []
    sent: list[int] = []
    unsent: list[int] = []
    compact_calls = offloaded = 0
    started = time.perf_counter()
    async with ReMe(working_dir=wd, embedding=embedding(args), llm=llm,
                    context={"max_tool_chars": args.max_tool_chars, "preview_chars": 500}) as reme:
        for step in bfcl_like(args.bfcl_turns, args.seed):
            # the model is called after the request and after each tool result
            for i, message in enumerate(step):
                full.append(message)
                await reme.add_messages([message], session_name="bfcl")
                if message["role"] in ("user", "tool"):
                    ready = await reme.prepare_context(session_name="bfcl", threshold=args.threshold,
                                                       reserve=args.reserve)
                    compact_calls += ready.usage.calls
                    offloaded += len(ready.offloaded)
                    sent.append(ready.tokens_after)
                    unsent.append(tokens(full))
    return {"name": "BFCL-like (generated)", "turns": len(sent), "sent": sent, "unsent": unsent,
            "compact_calls": compact_calls, "offloaded": offloaded, "seconds": time.perf_counter() - started}


# -- own overhead per turn in long sessions ---------------------------------------------------------
BUILD_BATCH = 5_000
WORDS = "alpha beta gamma delta report budget q3 invoice draft final notes travel tokyo order ticket".split()


def chat_turn(i: int, rng: random.Random) -> dict[str, Any]:
    """A message of about 40 tokens (estimated)."""
    return {"role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i}: " + " ".join(rng.choice(WORDS) for _ in range(24))}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def timed(calls: int, make: Any) -> list[float]:
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        await make()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def overhead(args: argparse.Namespace, size: int, llm: dict[str, Any], wd: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    session = "long"
    async with ReMe(working_dir=wd, embedding={"backend": "hash", "dimensions": 64}, llm=llm) as reme:
        started = time.perf_counter()
        for start in range(0, size, BUILD_BATCH):  # the older part, as compactions left it
            await reme.add_messages([chat_turn(i, rng) for i in range(start, min(size, start + BUILD_BATCH))],
                                    session_name=session, marks=[COMPRESSED])
        await reme.update_compressed_summary("## Goal\ncontinue the conversation", session_name=session)
        built = time.perf_counter() - started
        model = [0.0]  # milliseconds spent in the model's calls, left out of ReMe's own time
        assert reme.llm is not None
        structured = reme.llm.structured

        async def timed_structured(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await structured(*args, **kwargs)
            finally:
                model[0] += (time.perf_counter() - started) * 1000

        reme.llm.structured = timed_structured  # type: ignore[method-assign]
        add: list[float] = []
        prepare: list[float] = []
        compacting: list[bool] = []
        cpu: list[float] = []
        for t in range(args.warmup + args.overhead_turns):
            model[0] = 0.0
            c0 = time.process_time()
            t0 = time.perf_counter()
            await reme.add_messages([chat_turn(size + t, rng)], session_name=session)
            t1 = time.perf_counter()
            ready = await reme.prepare_context(session_name=session, threshold=args.threshold, reserve=args.reserve)
            t2 = time.perf_counter()
            c2 = time.process_time()
            if t >= args.warmup:
                cpu.append((c2 - c0) * 1000)
                add.append((t1 - t0) * 1000)
                prepare.append((t2 - t1) * 1000 - model[0])
                compacting.append(ready.compacted > 0)
        last = await reme.get_messages(session_name=session, last=20)
        tail = await timed(20, lambda: reme.get_messages(session_name=session, last=20))
        after = await timed(20, lambda: reme.get_messages(session_name=session, after=last[0].id))
    turns = [a + p for a, p in zip(add, prepare)]
    return {"size": size, "built": built, "add": add, "prepare": prepare, "turns": turns,
            "compactions": [x for x, c in zip(turns, compacting) if c],
            "plain": [x for x, c in zip(turns, compacting) if not c], "tail": tail, "after": after,
            "cpu": [x for x, c in zip(cpu, compacting) if not c]}


def overhead_table(runs: list[dict[str, Any]]) -> str:
    def both(values: list[float]) -> str:
        return f"{pct(values, 0.5):.2f} / {pct(values, 0.99):.2f}" if values else "-"

    head = ["messages in the session", "turns", "add_messages", "prepare_context", "turn (both)",
            "turns without compaction", "compaction turns: n, p50", "get_messages(last=20)", "get_messages(after=)",
            "CPU, turns without compaction", "build s"]
    rows = [[f"{r['size']:,}", str(len(r["turns"])), both(r["add"]), both(r["prepare"]), both(r["turns"]),
             both(r["plain"]),
             f"{len(r['compactions'])}, {pct(r['compactions'], 0.5):.2f}" if r["compactions"] else "0",
             both(r["tail"]), both(r["after"]), both(r["cpu"]), f"{r['built']:.1f}"] for r in runs]
    lines = ["| " + " | ".join(row) + " |" for row in [head, *rows]]
    lines.insert(1, "|" + "---|" * len(head))
    return "\n".join(lines)


# -- the table -------------------------------------------------------------------------------------
def row(run: dict[str, Any], memory_calls: int | None) -> list[str]:
    sent, unsent = run["sent"], run["unsent"]
    q = run.get("questions") or []
    recall = f"{statistics.mean(r['recall'] for r in q):.3f}" if q else "-"
    kept = f"{statistics.mean(r['kept_recall'] for r in q):.3f}" if q else "-"
    answer = f"{statistics.mean(r['tokens'] for r in q):,.0f} / {statistics.mean(r['full_tokens'] for r in q):,.0f}" \
        if q else "-"
    return [run["name"], str(run["turns"]), f"{statistics.mean(unsent):,.0f}", f"{max(unsent):,}",
            f"{statistics.mean(sent):,.0f}", f"{max(sent):,}", f"{1 - sum(sent) / sum(unsent):.0%}",
            str(run["compact_calls"]), "-" if memory_calls is None else str(memory_calls),
            str(run.get("offloaded", "-")), answer, recall, kept, f"{run['seconds']:.0f}"]


def table(rows: list[list[str]]) -> str:
    head = ["trajectory", "calls", "full: mean tok", "full: max", "managed: mean tok", "managed: max", "saved",
            "compaction LLM calls", "memory LLM calls", "offloaded", "answer tok (managed / full)",
            "evidence recall (full = 1)", "of it in kept turns", "s"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in [head, *rows]]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    server = None
    if not args.base_url:
        server = OpenAITestServer().__enter__()
        server.script(COMPACT, compact_reply)
        server.script(EXTRACT, extract_reply)
        server.script(RECONCILE, reconcile_reply)
    llm = llm_settings(args, server)
    if args.overhead:
        with tempfile.TemporaryDirectory() as tmp:
            runs = [await overhead(args, size, llm, Path(tmp) / f"n{size}") for size in args.sizes]
        if server is not None:
            server.__exit__(None, None, None)
        print(f"own overhead per turn (model calls left out), ms p50 / p99: threshold {args.threshold} tokens, "
              f"reserve {args.reserve}, messages of ~40 tokens, {args.warmup} warm-up turns not counted")
        print(overhead_table(runs))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        convs = load(Path(args.data), args.conversations)
        for i, conv in enumerate(convs):
            before = len(server.requests) if server else 0
            run = await locomo(args, conv, llm, Path(tmp) / f"locomo-{i}")
            memory_calls = None if server is None else sum(
                1 for r in server.requests[before:] if r["path"].endswith("/chat/completions")
                and COMPACT not in prompt_of(r["body"]))
            rows.append(row(run, memory_calls))
        if args.bfcl_turns:
            rows.append(row(await bfcl(args, llm, Path(tmp) / "bfcl"), 0))
    if server is not None:
        server.__exit__(None, None, None)
    print(f"threshold {args.threshold} tokens, reserve {args.reserve}, top_k {args.top_k}, {args.embedding} "
          "embeddings, "
          f"max_tool_chars {args.max_tool_chars}, LLM {'scripted (extractive)' if server else args.model}; "
          "tokens estimated (4 characters or 1 CJK character a token, +4 a message)")
    print(table(rows))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(DEFAULT_DATA), help="LoCoMo JSON file")
    p.add_argument("--conversations", type=int, default=1, help="LoCoMo conversations to replay")
    p.add_argument("--turns", type=int, default=0, help="replay only the first N turns of each (0: all)")
    p.add_argument("--bfcl-turns", type=int, default=40, help="user requests in the BFCL-like trajectory (0: skip)")
    p.add_argument("--threshold", type=int, default=4000)
    p.add_argument("--reserve", type=int, default=1500)
    p.add_argument("--max-tool-chars", type=int, default=4000)
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--embedding", choices=["hash", "local"], default="hash",
                   help="hash (no model) or local (sentence-transformers all-MiniLM-L6-v2, the `local` extra)")
    p.add_argument("--base-url", help="a real OpenAI-compatible endpoint instead of the scripted server")
    p.add_argument("--model", default="local")
    p.add_argument("--api-key")
    p.add_argument("--summaries", help="append each compaction's summary (LoCoMo) to this JSON-lines file")
    p.add_argument("--overhead", action="store_true",
                   help="measure ReMe's own cost per turn (add_messages + prepare_context) in long sessions")
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000],
                   help="--overhead: messages in the session before the measured turns")
    p.add_argument("--overhead-turns", type=int, default=300, help="--overhead: turns measured per size")
    p.add_argument("--warmup", type=int, default=5, help="--overhead: turns run first and not counted")
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
