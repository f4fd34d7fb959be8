"""BM25 on SciFact (5,183 abstracts, 300 test queries): ragkit against rank-bm25 and bm25s
in one run, fed the very same tokens. Index time, queries/s (top-10), nDCG@10, and the
largest score difference from rank-bm25. Medians of repeated runs; single-threaded unless
the name says threads.

Batch search, the figure the peers are built for, is timed in interleaved rounds (each
round runs every contender once, so a noisy moment hits all alike): ragkit's
``top_k_many`` (numba) against bm25s's numba backend (its fastest) and its numpy backend,
with one and two threads. Each contender returns index arrays; mapping them to ids is left
out for all.

    .venv/bin/python bench/bm25.py [--rounds 7]   -> outputs/bench/bm25.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from _common import SHARED, median_time, write
from ragkit.corpus import load_beir_corpus, load_beir_queries, load_qrels
from ragkit.eval.metrics import evaluate_run
from ragkit.retrieval.bm25 import BM25Index, BM25Params
from ragkit.text import Tokenizer

K = 10


def batch_rounds(contenders: dict, rounds: int) -> dict[str, list[float]]:
    """Seconds per call of each contender, ``rounds`` times, interleaved (after one warm-up)."""
    for fn in contenders.values():
        fn()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            started = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - started)
    return samples


def main() -> None:
    import bm25s
    import rank_bm25

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--fresh", type=int, default=3, help="fresh processes per contender for the first batch")
    args = parser.parse_args()

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

    # --- batch search: every contender ranks all queries at once (Lucene IDF, top 10)
    numba_retriever = bm25s.BM25(k1=1.5, b=0.75, backend="numba")
    numba_retriever.index(corpus_tokens, show_progress=False)
    contenders = {}
    for threads in (1, 2):
        contenders[f"ragkit top_k_many, {threads} thread{'s' * (threads > 1)}"] = \
            lambda t=threads: lucene.top_k_many(query_tokens, K, threads=t, compiled=True)
        contenders[f"bm25s numba, {threads} thread{'s' * (threads > 1)}"] = \
            lambda t=threads: numba_retriever.retrieve(query_tokens, k=K, show_progress=False, n_threads=t,
                                                       backend_selection="numba")
        contenders[f"bm25s numpy, {threads} thread{'s' * (threads > 1)}"] = \
            lambda t=threads: retriever.retrieve(query_tokens, k=K, show_progress=False, n_threads=t)
    samples = batch_rounds(contenders, args.rounds)
    batch = {name: {"qps_median": round(len(qids) / statistics.median(times), 1),
                    "qps_min": round(len(qids) / max(times), 1), "qps_max": round(len(qids) / min(times), 1),
                    "rounds": len(times)} for name, times in samples.items()}
    # the batch answers are the per-query ones, exactly; bm25s numba ranks like bm25s numpy
    exact = all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in
                zip(lucene.top_k_many(query_tokens, K, compiled=True),
                    (lucene.top_k_tokens(q, K) for q in query_tokens)))
    found_numba, _ = numba_retriever.retrieve(query_tokens, k=K, show_progress=False, n_threads=1,
                                              backend_selection="numba")
    run = {qid: [doc_ids[i] for i in row] for qid, row in zip(qids, found_numba)}
    batch_ndcg = {"ragkit[lucene]": results["ragkit[lucene]"]["ndcg@10"],
                  "bm25s numba": evaluate_run(run, qrels)["ndcg@10"]}

    fresh = first_batch_in_fresh_processes(corpus_tokens, query_tokens, args.fresh)

    fastest_peer = results["bm25s[lucene]"]["qps"]
    summary = {
        "batch_qps_ratio_vs_bm25s_numba_1_thread": round(
            batch["ragkit top_k_many, 1 thread"]["qps_median"] / batch["bm25s numba, 1 thread"]["qps_median"], 2),
        "batch_qps_ratio_vs_bm25s_numba_2_threads": round(
            batch["ragkit top_k_many, 2 threads"]["qps_median"] / batch["bm25s numba, 2 threads"]["qps_median"], 2),
        "batch_equals_per_query_exactly": exact,
        "per_query_qps_ratio_vs_bm25s_numpy": round(results["ragkit[lucene]"]["qps"] / fastest_peer, 2),
        "qps_ratio_vs_rank_bm25": round(results["ragkit[okapi]"]["qps"] / results["rank-bm25"]["qps"], 1),
        "max_abs_score_diff_vs_rank_bm25": max_diff,
        "max_abs_top10_score_diff_vs_bm25s_float32_over_k1_plus_1": bm25s_diff,
    }
    write("bm25", {"dataset": "scifact", "docs": len(docs), "queries": len(qids), "k": K,
                   "tokenizer": tok.to_dict(), "tokenize_corpus_s": round(tokenize_s, 3),
                   "note": "same token lists fed to every library; qps = scoring + top-k from tokens, "
                           "single thread, median of repeats",
                   "results": results, "batch": batch, "batch_ndcg@10": batch_ndcg,
                   "first_batch_in_a_fresh_process": fresh, "summary": summary})
    for name, r in results.items():
        print(f"{name:>16}: index {r['index_s']:.3f} s  {r['qps']:>9.1f} q/s  nDCG@10 {r['ndcg@10']:.4f}")
    for name, r in batch.items():
        print(f"{name:>30}: {r['qps_median']:>9.1f} q/s (min {r['qps_min']:.1f}, max {r['qps_max']:.1f})")
    for name, r in fresh.items():
        print(f"{'first batch, fresh process: ' + name:>30}: {r['qps_median']:>9.1f} q/s (runs {r['runs']})")
    print(summary)


FRESH = {
    # what a CLI call or a new notebook kernel gets: the default path (numpy for a batch this
    # small until the compiled loop is loaded), then the compiled loop from numba's disk cache
    "ragkit top_k_many (default)": "from ragkit.retrieval.bm25 import BM25Index, BM25Params\n"
                                   "index = BM25Index.from_tokens(corpus, BM25Params(idf='lucene'))\n"
                                   "run = lambda: index.top_k_many(queries, 10)\n",
    "ragkit top_k_many (compiled)": "from ragkit.retrieval.bm25 import BM25Index, BM25Params\n"
                                    "index = BM25Index.from_tokens(corpus, BM25Params(idf='lucene'))\n"
                                    "run = lambda: index.top_k_many(queries, 10, compiled=True)\n",
    "bm25s numba": "import bm25s\n"
                   "r = bm25s.BM25(k1=1.5, b=0.75, backend='numba')\n"
                   "r.index(corpus, show_progress=False)\n"
                   "run = lambda: r.retrieve(queries, k=10, show_progress=False, n_threads=1, "
                   "backend_selection='numba')\n",
}


def first_batch_in_fresh_processes(corpus_tokens, query_tokens, runs: int) -> dict:
    """Queries/s of the first batch (every query, top 10) in a new Python process, ``runs``
    times per contender: the index is built first and not timed; imports and compilation
    (or loading a compiled cache) inside the first call are."""
    import pickle
    import subprocess
    import sys
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as handle:
        pickle.dump((corpus_tokens, query_tokens), handle)
    out = {}
    for name, setup in FRESH.items():
        qps = []
        for _ in range(runs):
            code = (f"import pickle, time\ncorpus, queries = pickle.load(open({handle.name!r}, 'rb'))\n{setup}"
                    "started = time.perf_counter()\nrun()\nprint(len(queries) / (time.perf_counter() - started))\n")
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            qps.append(float(done.stdout.split()[-1]))
        out[name] = {"qps_median": round(statistics.median(qps), 1), "qps_min": round(min(qps), 1),
                     "qps_max": round(max(qps), 1), "runs": runs}
    Path(handle.name).unlink()
    return out


if __name__ == "__main__":
    main()
