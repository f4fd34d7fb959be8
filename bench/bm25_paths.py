"""The compiled BM25 batch loop's two ways for a query with few postings, by corpus size and
query length: adding the postings into a slot per document, and adding them a block of
documents at a time into slots of the block's own; and ragkit's choice between them
(``bm25_batch.block_docs``). This is what sets ``BLOCKS_ABOVE_DOCS``; the block's size,
``BLOCK_DOCS``, is fixed here, not swept.

    .venv/bin/python bench/bm25_paths.py [--sizes 100000 200000 400000 1000000]   -> outputs/bench/bm25_paths.json

The corpora and queries are ``bench/scale.py``'s (generated, seeded, Zipfian): its 1,000
queries of 2 to 6 words ("short"), the same run together four at a time ("long", 8 to 24
words) and twelve at a time ("longer"); ``terms_median`` counts a query's distinct terms.
Only queries with few postings (under a quarter of the documents) are timed: the others take the dense way whatever the choice. The loop runs
alone (no tokenizing, no Python per query), one thread, every way on the same queries and
scratch; the ways take turns for 15 rounds and each figure is the median. Every way's
rankings are checked equal to the others', bit for bit.
"""

from __future__ import annotations

import argparse
import statistics
import time
from itertools import chain

import numpy as np

from _common import write
from scale import generate, long_queries

K = 10
ROUNDS = 15


def ways_timed(index, queries: list[list[str]]) -> dict:
    """Queries/s of each way on ``queries`` (those with few postings), and the checks."""
    from ragkit.retrieval import bm25_batch
    from ragkit.retrieval.bm25_kernel import kernel

    weights = index.weights
    n_docs = weights.shape[0]
    ids = [[index.vocab.get(t, -1) for t in q] for q in queries]
    few = [q for q in ids if sum(int(weights.indptr[t + 1] - weights.indptr[t]) for t in set(q) if t >= 0) * 4 < n_docs]
    tokens = np.array(list(chain.from_iterable(few)), dtype=np.int64)
    offsets = np.zeros(len(few) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in few], out=offsets[1:])
    scores, seen, touched = np.zeros(n_docs), np.zeros(n_docs, dtype=bool), np.empty(n_docs, dtype=np.int32)
    out = {}
    ways = {"slots": 0, "blocks": bm25_batch.BLOCK_DOCS, "ragkit": bm25_batch.block_docs(n_docs)}

    def run(block: int) -> tuple:
        out_idx = np.empty((len(few), K), dtype=np.int64)
        out_score = np.empty((len(few), K))
        out_n = np.zeros(len(few), dtype=np.int64)
        kernel(weights.indptr, weights.indices, weights.data, index.positive_weights, block, tokens, offsets, K,
               scores, seen, touched, out_idx, out_score, out_n)
        return out_idx, out_score, out_n

    results = {name: run(block) for name, block in ways.items()}
    def rows(result: tuple) -> list:
        out_idx, out_score, out_n = result
        return [(out_idx[q, :n].tolist(), out_score[q, :n].tolist()) for q, n in enumerate(out_n)]

    same = all(rows(results[name]) == rows(results["slots"]) for name in ways)
    times: dict = {name: [] for name in ways}
    for round_ in range(ROUNDS):
        for name in (list(ways) if round_ % 2 else list(ways)[::-1]):
            started = time.perf_counter()
            run(ways[name])
            times[name].append(time.perf_counter() - started)
    for name in ways:
        out[f"{name}_qps"] = round(len(few) / statistics.median(times[name]))
    out.update({"queries": len(few), "terms_median": statistics.median(len(set(q)) for q in few),
                "block_docs": ways["ragkit"], "blocks_over_slots": round(out["blocks_qps"] / out["slots_qps"], 2),
                "ragkit_over_slots": round(out["ragkit_qps"] / out["slots_qps"], 2), "same_rankings": same})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 200_000, 400_000, 1_000_000])
    args = parser.parse_args()
    from ragkit.retrieval import bm25_batch
    from ragkit.retrieval.bm25 import BM25Index

    rows = []
    for n_docs in args.sizes:
        docs, queries = generate(n_docs, 1000)
        index = BM25Index.from_tokens(docs)
        del docs
        for name, qs in (("short", queries), ("long", long_queries(queries)), ("longer", long_queries(queries, 12))):
            row = {"docs": n_docs, "queries_kind": name, **ways_timed(index, qs)}
            print(row, flush=True)
            rows.append(row)
        del index
    write("bm25_paths", {"k": K, "rounds": ROUNDS, "blocks_above_docs": bm25_batch.BLOCKS_ABOVE_DOCS,
                         "block_docs": bm25_batch.BLOCK_DOCS, "rows": rows})


if __name__ == "__main__":
    main()
