"""Ranking metrics over one query's ranked doc ids and its graded judgements (qrels).

Conventions follow BEIR / trec_eval: a document is relevant when its grade is > 0;
nDCG uses the grade itself as gain and log2(rank + 1) as discount.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence


def ndcg_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """Normalized discounted cumulative gain of the first ``k`` results.

    >>> round(ndcg_at_k(["b", "a"], {"a": 1}), 4)
    0.6309
    """
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the first ``k`` results."""
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant result within ``k`` (0 if none)."""
    for i, d in enumerate(ranked[:k]):
        if judged.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def hit_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """1 if any relevant document is in the first ``k`` results."""
    return float(any(judged.get(d, 0) > 0 for d in ranked[:k]))


# name: (per-query function, its cutoff), in the order every report lists them
METRICS = {"ndcg@10": (ndcg_at_k, 10), "recall@2": (recall_at_k, 2), "recall@5": (recall_at_k, 5),
           "recall@10": (recall_at_k, 10), "recall@100": (recall_at_k, 100), "mrr@10": (mrr_at_k, 10),
           "hit@1": (hit_at_k, 1), "hit@10": (hit_at_k, 10)}


def per_query_metrics(run: Mapping[str, Sequence[str]],
                      qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """{query id: {metric: value}} for the judged queries of ``run`` ({query_id: ranked doc
    ids}), in the qrels' order: what ``evaluate_run`` averages and significance tests pair.

    >>> per_query_metrics({"q": ["b", "a"]}, {"q": {"a": 1}})["q"]["mrr@10"]
    0.5
    """
    return {q: {name: fn(run[q], qrels[q], k) for name, (fn, k) in METRICS.items()}
            for q in qrels if q in run}


def mean_metrics(rows: Mapping[str, Mapping[str, float]]) -> dict:
    """The mean of every metric over ``per_query_metrics`` rows, rounded to 5 places."""
    if not rows:
        return {}
    return {name: round(sum(r[name] for r in rows.values()) / len(rows), 5) for name in METRICS}


def evaluate_run(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]) -> dict:
    """Mean metrics over the judged queries of ``run`` ({query_id: ranked doc ids})."""
    return mean_metrics(per_query_metrics(run, qrels))
