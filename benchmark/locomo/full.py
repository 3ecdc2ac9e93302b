"""Full mode: summarize every session into memories with an LLM, answer each question from
retrieved memories, grade the answers with an LLM judge, and score evidence recall of the
retrieved memories through their source turns.

Each conversation gets its own ReMe working directory (its own store), and each speaker is a
user there, so the prompts see real names and conversations never see each other.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path
from typing import Any, Literal

import jinja2
from pydantic import BaseModel, SecretStr

from benchmark.locomo.data import Conversation, Question
from benchmark.locomo.metrics import KS, aggregate, bleu1, evidence_scores, percentile, token_f1
from benchmark.locomo.run import dia_ids_of, embedding_config, start_run
from benchmark.runs import Checkpoint, progress
from reme import ConfigError, ReMe
from reme.config import EmbeddingConfig, LLMConfig
from reme.embedding import create_embedder
from reme.llm import ChatModel
from reme.schema import Usage

PROMPTS = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "prompts")),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
FULL_KEYS = ["judge", "f1", "bleu1", *(f"recall@{k}" for k in KS), "mrr"]


class Verdict(BaseModel):
    reasoning: str = ""
    label: Literal["CORRECT", "WRONG"]


def llm_config(args: argparse.Namespace, model: str | None) -> LLMConfig:
    if not model:
        raise ConfigError("full mode needs --model (and --base-url / --api-key, or OPENAI_BASE_URL / OPENAI_API_KEY)")
    key = args.api_key or os.environ.get("OPENAI_API_KEY")
    return LLMConfig(model=model, base_url=args.base_url or os.environ.get("OPENAI_BASE_URL"),
                     api_key=SecretStr(key) if key else None, max_concurrency=8)


def batches(conv: Conversation, size: int) -> list[list[dict[str, Any]]]:
    """Sessions, `size` at a time, as messages: each turn spoken by its speaker, at the session's time."""
    out = []
    for start in range(0, len(conv.sessions), size):
        out.append([{"role": "user", "name": t.speaker, "content": t.content.split(": ", 1)[1], "time": t.time,
                     "id": t.dia_id} for _, turns in conv.sessions[start:start + size] for t in turns])
    return out


async def full_mode(args: argparse.Namespace, convs: list[Conversation], data: Path) -> dict[str, Any]:
    answer_llm = ChatModel(llm_config(args, args.model))
    embedder = create_embedder(EmbeddingConfig(**embedding_config(args)))
    judge_llm = ChatModel(llm_config(args, args.judge_model or args.model))
    settings, checkpoint, root = start_run(args, convs, data, mode="full", model=args.model,
                                           judge_model=args.judge_model or args.model, top_k=args.top_k,
                                           batch_size=args.batch_size)
    limit = asyncio.Semaphore(args.concurrency)
    bar_total = sum(len(c.questions[:args.questions]) for c in convs)

    async def one(conv: Conversation) -> None:
        async with limit:
            # One embedder and one LLM client (one concurrency bound) shared by every conversation.
            async with ReMe(working_dir=root / conv.sample_id, embedder=embedder, chat_model=answer_llm) as reme:
                for i, messages in enumerate(batches(conv, args.batch_size)):
                    key = f"ingest/{conv.sample_id}/{i}"
                    if key not in checkpoint.done:
                        result = await reme.summarize_memory(messages, user_name=list(conv.speakers))
                        checkpoint.add(key, result.usage.model_dump())


                async def ask(q: Question) -> None:
                    key = f"q/{conv.sample_id}/{q.index}"
                    if key not in checkpoint.done:  # questions run at once; the LLM client bounds the calls
                        checkpoint.add(key, await answer(reme, conv, q, args.top_k, answer_llm, judge_llm))

                await asyncio.gather(*(ask(q) for q in conv.questions[:args.questions]))

    tasks = [asyncio.create_task(one(c)) for c in convs]
    for task in progress(asyncio.as_completed(tasks), len(tasks), f"conversations ({bar_total} questions)"):
        await task
    for closable in (answer_llm, judge_llm, embedder):
        await closable.close()
    return report(args, convs, data, settings, checkpoint)


async def answer(reme: ReMe, conv: Conversation, q: Question, top_k: int, answer_llm: ChatModel,
                 judge_llm: ChatModel) -> dict[str, Any]:
    retrieve_usage, answer_usage, judge_usage = Usage(), Usage(), Usage()
    started = time.perf_counter()
    # Both speakers' memories in one ranking (each says whose it is).
    ctx = await reme.retrieve_memory(q.question, user_name=list(conv.speakers), top_k=top_k)
    retrieve_ms = 1000 * (time.perf_counter() - started)
    retrieve_usage.add(ctx.usage)
    speakers = [{"name": s, "memories": [{"time": m.node.message_time.strftime("%d %B %Y, %H:%M"),
                                          "content": m.node.content} for m in ctx.memories
                                         if m.node.memory_target == s]}
                for s in conv.speakers]
    started = time.perf_counter()
    prediction = (await answer_llm.chat([{"role": "user", "content": PROMPTS.get_template("answer.jinja").render(
        question=q.question, speakers=speakers)}], usage=answer_usage)).strip()
    answer_ms = 1000 * (time.perf_counter() - started)
    verdict = await judge_llm.structured([{"role": "user", "content": PROMPTS.get_template("judge.jinja").render(
        question=q.question, gold=q.answer, answer=prediction)}], Verdict, usage=judge_usage)
    ids = sorted({r for m in ctx.memories for r in m.node.ref_ids[:1]})
    found = await reme.store.get(reme.collection, ids) if ids else None
    histories = {r.node.memory_id: r.node for r in found.found} if found else {}
    ranked = [dia_ids_of(m.node, histories) for m in ctx.memories]
    scores: dict[str, float] = {"judge": 100.0 if verdict.label == "CORRECT" else 0.0,
                                "f1": token_f1(prediction, q.answer), "bleu1": bleu1(prediction, q.answer)}
    if q.evidence:
        scores.update(evidence_scores(ranked, q.evidence))
    return {"prediction": prediction, "label": verdict.label, "scores": scores,
            "retrieve_ms": round(retrieve_ms, 2), "answer_ms": round(answer_ms, 2),
            "usage": {"retrieve": retrieve_usage.model_dump(), "answer": answer_usage.model_dump(),
                      "judge": judge_usage.model_dump()}}


def report(args: argparse.Namespace, convs: list[Conversation], data: Path, settings: dict[str, Any],
           checkpoint: Checkpoint) -> dict[str, Any]:
    rows, recall_rows, results = [], [], []
    for conv in convs:
        for q in conv.questions[:args.questions]:
            result = checkpoint.done[f"q/{conv.sample_id}/{q.index}"]
            results.append(result)
            rows.append({"category": q.category, **{k: result["scores"][k] for k in ("judge", "f1", "bleu1")}})
            if q.evidence:
                recall_rows.append({"category": q.category, **result["scores"]})
    summary = aggregate(rows, ["judge", "f1", "bleu1"])
    recall = aggregate(recall_rows, FULL_KEYS[3:])
    for group in ("overall", "adversarial"):
        summary[group].update({k: v for k, v in recall[group].items() if k != "n"})
    for name in summary["by_category"]:
        summary["by_category"][name].update({k: v for k, v in recall["by_category"][name].items() if k != "n"})

    def tokens(part: str) -> dict[str, int]:
        keys = ("calls", "prompt_tokens", "completion_tokens", "total_tokens")
        return {k: sum(r["usage"][part][k] for r in results) for k in keys}

    ingest = [v for k, v in checkpoint.done.items() if k.startswith("ingest/")]
    per_question = [sum(r["usage"][p]["total_tokens"] for p in ("retrieve", "answer")) for r in results]
    retrieve_ms = [r["retrieve_ms"] for r in results]
    answer_ms = [r["answer_ms"] for r in results]
    return {
        "mode": "full", "data": str(data), "settings": settings, "keys": FULL_KEYS,
        "retrievers": {"default": summary},
        "tokens": {"ingest": {k: sum(u[k] for u in ingest) for k in ("calls", "prompt_tokens", "completion_tokens",
                                                                     "total_tokens")},
                   "retrieve": tokens("retrieve"), "answer": tokens("answer"), "judge": tokens("judge"),
                   "per_question_p50": percentile(per_question, 0.5),
                   "per_question_p95": percentile(per_question, 0.95)},
        "latency_ms": {"retrieve_p50": percentile(retrieve_ms, 0.5), "retrieve_p95": percentile(retrieve_ms, 0.95),
                       "answer_p50": percentile(answer_ms, 0.5), "answer_p95": percentile(answer_ms, 0.95)},
    }
