"""BM25 on SciFact (5,183 abstracts, 300 test queries): ragkit against rank-bm25 and bm25s
in one run, fed the very same tokens. Index time, queries/s (top-10), nDCG@10, and the
largest score difference from rank-bm25. Medians of repeated runs; single-threaded.

    .venv/bin/python bench/bm25.py        -> outputs/bench/bm25.json
"""

from __future__ import annotations

import numpy as np

from _common import SHARED, median_time, write
from ragkit.corpus import load_beir_corpus, load_beir_queries, load_qrels
from ragkit.eval.metrics import evaluate_run
from ragkit.retrieval.bm25 import BM25Index, BM25Params
from ragkit.text import Tokenizer

K = 10


def main() -> None:
    import bm25s
    import rank_bm25

    root = SHARED / "scifact"
    docs = load_beir_corpus(root / "corpus.jsonl")
    queries = load_beir_queries(root / "queries.jsonl")
    qrels = load_qrels(root / "qrels" / "test.tsv")
    qids = sorted(qrels)
    tok = Tokenizer(lang="en")
    tokenize_s, _ = median_time(lambda: [tok(d.full_text) for d in docs], repeat=3)
    corpus_tokens = [tok(d.full_text) for d in docs]
    query_tokens = [tok(queries[q]) for q in qids]
    doc_ids = [d.doc_id for d in docs]
    results: dict[str, dict] = {}

    # --- ragkit (okapi IDF: the same formula as rank-bm25, so scores can be compared exactly)
    for idf in ("okapi", "robertson", "lucene"):
        params = BM25Params(idf=idf)
        index_s, _ = median_time(lambda: BM25Index.from_tokens(corpus_tokens, params), repeat=3)
        index = BM25Index.from_tokens(corpus_tokens, params)
        run = {}
        def search_all():
            for qid, q in zip(qids, query_tokens):
                order, _ = index.top_k_tokens(q, K)
                run[qid] = [doc_ids[i] for i in order]
        search_s, samples = median_time(search_all, repeat=7)
        results[f"ragkit[{idf}]"] = {"index_s": round(index_s, 4), "qps": round(len(qids) / search_s, 1),
                                     "ndcg@10": evaluate_run(run, qrels)["ndcg@10"]}

    # --- rank-bm25
    index_s, _ = median_time(lambda: rank_bm25.BM25Okapi(corpus_tokens), repeat=3)
    ref = rank_bm25.BM25Okapi(corpus_tokens)
    run = {}
    def ref_search():
        for qid, q in zip(qids, query_tokens):
            scores = ref.get_scores(q)
            top = np.argsort(-scores, kind="stable")[:K]
            run[qid] = [doc_ids[i] for i in top]
    search_s, _ = median_time(ref_search, repeat=3)
    results["rank-bm25"] = {"index_s": round(index_s, 4), "qps": round(len(qids) / search_s, 1),
                            "ndcg@10": evaluate_run(run, qrels)["ndcg@10"]}

    # --- bm25s (its default Lucene IDF; numpy backend, one thread)
    def bm25s_index():
        r = bm25s.BM25(k1=1.5, b=0.75)
        r.index(corpus_tokens, show_progress=False)
        return r
    index_s, _ = median_time(bm25s_index, repeat=3)
    retriever = bm25s_index()
    run = {}
    def bm25s_search():
        found, _ = retriever.retrieve(query_tokens, k=K, show_progress=False, n_threads=1)
        for qid, row in zip(qids, found):
            run[qid] = [doc_ids[i] for i in row]
    search_s, _ = median_time(bm25s_search, repeat=7)
    results["bm25s[lucene]"] = {"index_s": round(index_s, 4), "qps": round(len(qids) / search_s, 1),
                                "ndcg@10": evaluate_run(run, qrels)["ndcg@10"]}

    # --- exactness: ragkit[okapi] vs rank-bm25 over every test query and every document
    ours = BM25Index.from_tokens(corpus_tokens, BM25Params(idf="okapi"))
    max_diff = max(float(np.abs(ours.score_tokens(q) - ref.get_scores(q)).max()) for q in query_tokens)
    # and ragkit[lucene] vs bm25s (float32) on the top-10 scores. bm25s follows Lucene >= 8,
    # which drops BM25's constant (k1 + 1) factor: same ranking, scores / (k1 + 1).
    lucene = BM25Index.from_tokens(corpus_tokens, BM25Params(idf="lucene"))
    found, scores = retriever.retrieve(query_tokens, k=K, show_progress=False, n_threads=1)
    bm25s_diff = max(float(np.abs(lucene.score_tokens(q)[row] / (1.5 + 1) - s).max())
                     for q, row, s in zip(query_tokens, found, scores))

    fastest_peer = results["bm25s[lucene]"]["qps"]
    summary = {
        "qps_ratio_vs_bm25s": round(results["ragkit[lucene]"]["qps"] / fastest_peer, 2),
        "qps_ratio_vs_rank_bm25": round(results["ragkit[okapi]"]["qps"] / results["rank-bm25"]["qps"], 1),
        "max_abs_score_diff_vs_rank_bm25": max_diff,
        "max_abs_top10_score_diff_vs_bm25s_float32_over_k1_plus_1": bm25s_diff,
    }
    write("bm25", {"dataset": "scifact", "docs": len(docs), "queries": len(qids), "k": K,
                   "tokenizer": tok.to_dict(), "tokenize_corpus_s": round(tokenize_s, 3),
                   "note": "same token lists fed to every library; qps = scoring + top-k from tokens, "
                           "single thread, median of repeats",
                   "results": results, "summary": summary})
    for name, r in results.items():
        print(f"{name:>16}: index {r['index_s']:.3f} s  {r['qps']:>9.1f} q/s  nDCG@10 {r['ndcg@10']:.4f}")
    print(summary)


if __name__ == "__main__":
    main()
