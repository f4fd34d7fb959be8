"""The optional rerank stage and MMR's cosine, on SciFact.

The GGUF (SmolLM2-135M by default, or --model, a path or a catalog name) judges the top 20 candidates
of hybrid retrieval (MiniLM, weighted α=0.5, the best setting of bench/hybrid.py) for the
first ``--queries`` test queries. Each candidate is judged once; from those judgements come
the runs at depth 5, 10 and 20, with the judge's order alone and fused with the retrieval
order (RRF, what ``--rerank llm`` does). All runs are scored on the same queries as the
unreranked baseline. Costs: seconds per query, prompt tokens per second.

MMR: nDCG@10 of hybrid over all 300 queries with MMR over the top 50, by cosine over the
chunk vectors (what dense and hybrid use) and by Jaccard over terms (what BM25 uses).

    .venv/bin/python bench/rerank.py [--queries 10]   -> outputs/bench/rerank.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from types import SimpleNamespace

import numpy as np
from _common import OUT, SHARED, write
from ragkit.config import LLMConfig
from ragkit.corpus import load_beir_queries, load_corpus, load_qrels
from ragkit.retrieval.dense import DenseIndex
from ragkit.eval.metrics import evaluate_run
from ragkit.retrieval.bm25 import BM25Index
from ragkit.retrieval.fusion import fuse
from ragkit.retrieval.mmr import cosine_matrix, jaccard_matrix, mmr_select, scale_relevance
from ragkit.retrieval.rerank import LLMReranker, rerank_order
from ragkit.llm.gguf import GGUFModel
from ragkit.text import tokenizer_for

DEPTHS = (5, 10, 20)


def hybrid_rankings() -> SimpleNamespace:
    """SciFact, its BM25 index and MiniLM vectors, and every test query's hybrid ranking
    (weighted, α = 0.5) with its fused scores."""
    sci = SHARED / "scifact"
    docs = load_corpus(sci / "corpus.jsonl")
    qrels = load_qrels(sci / "qrels" / "test.tsv")
    queries = load_beir_queries(sci / "queries.jsonl")
    bm25 = BM25Index.build(docs, tokenizer_for("en"), progress=False)
    dense = DenseIndex(OUT.parent / "dense-bench" / "scifact-minilm", "minilm")
    dense.build(docs, progress=True)
    ranked: dict[str, list[str]] = {}
    fused_scores: dict[str, list[float]] = {}
    for qid in qrels:
        lexical = [(h.doc_id, h.score) for h in bm25.search(queries[qid], k=100, boost=False)]
        fused = fuse(lexical, dense.search(queries[qid], k=100), "weighted", 0.5)[:100]
        ranked[qid] = [d for d, _ in fused]
        fused_scores[qid] = [s for _, s in fused]
    return SimpleNamespace(docs=docs, by_id={d.doc_id: d for d in docs}, qrels=qrels, queries=queries, bm25=bm25,
                           dense=dense, ranked=ranked, fused_scores=fused_scores,
                           qrels_path=sci / "qrels" / "test.tsv")


def rerank_runs(data: SimpleNamespace | None = None, n_queries: int = 10, model_path: str = "smollm2-135m") -> dict:
    """The first ``n_queries`` test queries, their top 20 judged once by the GGUF; from those
    judgements, the rankings at depth 5, 10 and 20, the judge's order alone and fused
    with the retrieval order (what ``--rerank llm`` does), and hybrid without rerank.
    Returns {"rankings": {run: {query id: ranked doc ids}}, "subset", "qrels_path",
    "logodds", "seconds", "native", "model", "data"}."""
    data = data or hybrid_rankings()
    ranked = data.ranked
    model = GGUFModel(LLMConfig.from_env(model_path=model_path))
    judge = LLMReranker(model, depth=max(DEPTHS))
    subset = list(data.qrels)[:n_queries]
    judge.scores("warm-up", [("", "warm-up")])
    model.native_timings(reset=True)
    logodds, seconds = {}, []
    for n, qid in enumerate(subset, 1):
        started = time.perf_counter()
        logodds[qid] = judge.scores(data.queries[qid], [(data.by_id[d].title, data.by_id[d].text)
                                                        for d in ranked[qid][:max(DEPTHS)]])
        seconds.append(time.perf_counter() - started)
        print(f"rerank {n}/{len(subset)}: {seconds[-1]:.1f} s")
    rankings = {"hybrid (no rerank)": {q: ranked[q] for q in subset}}
    for depth in DEPTHS:
        pure, fused = {}, {}
        for qid in subset:
            head, scores = ranked[qid][:depth], logodds[qid][:depth]
            pure[qid] = [head[i] for i, _ in rerank_order(scores, fuse=False)] + ranked[qid][depth:]
            fused[qid] = [head[i] for i, _ in rerank_order(scores)] + ranked[qid][depth:]
        rankings[f"rerank depth {depth}, judge alone"] = pure
        rankings[f"rerank depth {depth}, fused (--rerank llm)"] = fused
    return {"rankings": rankings, "subset": subset, "qrels_path": data.qrels_path, "logodds": logodds,
            "seconds": seconds, "native": model.native_timings(), "model": model.name, "data": data}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--model", default="smollm2-135m", help="a GGUF file or a catalog name (default: %(default)s)")
    args = parser.parse_args()

    data = hybrid_rankings()
    qrels, ranked, fused_scores, bm25, dense = data.qrels, data.ranked, data.fused_scores, data.bm25, data.dense

    # ---- MMR over the top 50: cosine over vectors against Jaccard over terms (all queries)
    mmr = {"none": evaluate_run(ranked, qrels)}
    positions = {d.doc_id: i for i, d in enumerate(bm25.docs)}
    for similarity in ("cosine", "jaccard"):
        run = {}
        for qid, ids in ranked.items():
            head = ids[:50]
            relevance = scale_relevance(np.array(fused_scores[qid][:50]))   # as eval retrieval --mmr does
            sim = cosine_matrix(dense.vectors_of(head)) if similarity == "cosine" else \
                jaccard_matrix(bm25.term_sets([positions[d] for d in head]))
            run[qid] = [head[i] for i in mmr_select(relevance, sim, len(head))] + ids[50:]
        mmr[similarity] = evaluate_run(run, qrels)
        print(f"MMR {similarity}: nDCG@10 {mmr[similarity]['ndcg@10']:.4f} (none {mmr['none']['ndcg@10']:.4f})")

    # ---- the LLM rerank, first N queries, each candidate judged once
    result = rerank_runs(data, args.queries, args.model)
    subset, logodds, seconds, native = result["subset"], result["logodds"], result["seconds"], result["native"]
    judged_qrels = {q: qrels[q] for q in subset}
    runs = {label: evaluate_run(ranking, judged_qrels) for label, ranking in result["rankings"].items()}
    for label, r in runs.items():
        print(f"{label:>38}: nDCG@10 {r['ndcg@10']:.4f}  MRR@10 {r['mrr@10']:.4f}  hit@1 {r['hit@1']:.3f}")
    relevant = [s for q in subset for d, s in zip(ranked[q], logodds[q]) if qrels[q].get(d, 0) > 0]
    other = [s for q in subset for d, s in zip(ranked[q], logodds[q]) if qrels[q].get(d, 0) <= 0]
    write("rerank", {
        "model": result["model"], "queries": len(subset), "retrieval": "hybrid weighted alpha=0.5, MiniLM",
        "runs": runs,
        "logodds_median": {"relevant": round(statistics.median(relevant), 4) if relevant else None,
                           "other": round(statistics.median(other), 4) if other else None},
        "cost": {"seconds_per_query_depth20_median": round(statistics.median(seconds), 2),
                 "prompt_tokens_per_s": round(native["prompt_tokens"] / native["prompt_ms"] * 1000, 1)
                 if native["prompt_ms"] else None,
                 "prompt_tokens": native["prompt_tokens"]},
        "mmr_top50_all_queries": mmr,
        "command": "ragkit eval retrieval --corpus ../shared/datasets/scifact/corpus.jsonl "
                   "--queries ../shared/datasets/scifact/queries.jsonl --qrels ../shared/datasets/scifact/qrels/test.tsv "
                   "--lang en --method hybrid --fusion weighted --alpha 0.5 --rerank llm --limit 10 --json",
    })


if __name__ == "__main__":
    main()
