"""Scores: turn-level evidence recall@k and MRR (retrieval), token F1 and BLEU-1 (answers), and the
per-category aggregation both modes report."""

from __future__ import annotations

import math
import re
import statistics
import string
from collections import Counter
from typing import Any, Iterable, Sequence

from benchmark.locomo.data import CATEGORIES, SCORED

KS = (5, 10, 20)


def evidence_scores(ranked: Sequence[Sequence[str]], evidence: Sequence[str]) -> dict[str, float]:
    """`ranked[i]` holds the dia_ids the i-th result stands for. recall@k is the share of the
    evidence turns among the top k results (the LoCoMo paper's definition); MRR is 1 / the rank of
    the first result holding any evidence turn (0 when none of the retrieved does)."""
    wanted = set(evidence)
    out: dict[str, float] = {}
    for k in KS:
        found = {d for ids in ranked[:k] for d in ids} & wanted
        out[f"recall@{k}"] = 100.0 * len(found) / len(wanted)
    first = next((i for i, ids in enumerate(ranked) if wanted & set(ids)), None)
    out["mrr"] = 100.0 * (1.0 / (first + 1) if first is not None else 0.0)
    return out


def _normalize(text: str) -> list[str]:
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return text.split()


def token_f1(prediction: str, answer: str) -> float:
    pred, gold = _normalize(prediction), _normalize(answer)
    common = sum((Counter(pred) & Counter(gold)).values())
    if not pred or not gold or common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 100.0 * 2 * precision * recall / (precision + recall)


def bleu1(prediction: str, answer: str) -> float:
    """Unigram BLEU with the brevity penalty (no smoothing), as mem0's and MemOS's scripts report it."""
    pred, gold = _normalize(prediction), _normalize(answer)
    if not pred or not gold:
        return 0.0
    clipped = sum((Counter(pred) & Counter(gold)).values())
    precision = clipped / len(pred)
    penalty = 1.0 if len(pred) > len(gold) else math.exp(1 - len(gold) / len(pred))
    return 100.0 * penalty * precision


def aggregate(rows: Iterable[dict[str, Any]], keys: Sequence[str]) -> dict[str, Any]:
    """Means of `keys` overall (categories 1-4), per category, and for adversarial questions alone."""
    rows = list(rows)

    def mean(group: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {k: round(statistics.fmean(r[k] for r in group), 2) if group else None for k in keys}
        out["n"] = len(group)
        return out

    return {
        "overall": mean([r for r in rows if r["category"] in SCORED]),
        "by_category": {CATEGORIES[c]: mean([r for r in rows if r["category"] == c]) for c in SCORED},
        "adversarial": mean([r for r in rows if r["category"] == 5]),
    }


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
