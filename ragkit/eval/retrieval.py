"""``ragkit eval retrieval``: build an index over a BEIR corpus, run its judged queries,
and report quality and speed in one JSON object."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

from tqdm.auto import tqdm

from ..corpus import load_beir_queries, load_corpus, load_qrels
from ..errors import InputError
from ..lexical.bm25 import BM25Index, BM25Params
from ..lexical.mmr import mmr_rerank
from ..text import Tokenizer, tokenizer_for
from .metrics import evaluate_run

METHODS = ("bm25",)


def evaluate_retrieval(corpus: str | Path, queries: str | Path, qrels: str | Path, *,
                       method: str = "bm25", lang: str = "en", tokenizer: Tokenizer | None = None,
                       params: BM25Params | None = None, mmr: bool = False, k: int = 100,
                       progress: bool = True) -> dict:
    """Quality (nDCG@10, Recall@10/100, MRR@10, hit@1/10) and speed (queries/s, index
    seconds) of ``method`` on a BEIR-format collection."""
    if method not in METHODS:
        raise InputError(f"--method: {method!r} is not available yet (available: {', '.join(METHODS)})")
    judged = load_qrels(qrels)
    all_queries = load_beir_queries(queries)
    missing = [q for q in judged if q not in all_queries]
    if missing:
        raise InputError(f"qrels {qrels}: query id {missing[0]!r} is not in {queries}")
    docs = load_corpus(corpus)
    tokenizer = tokenizer or tokenizer_for(lang)
    started = time.perf_counter()
    index = BM25Index.build(docs, tokenizer, params, progress=progress)
    index_s = time.perf_counter() - started

    run: dict[str, list[str]] = {}
    started = time.perf_counter()
    for qid in tqdm(judged, desc="queries", unit="q", disable=not progress):
        hits = index.search(all_queries[qid], k=k, boost=False)
        if mmr:
            hits = mmr_rerank(index, hits[:50], 50) + hits[50:]
        run[qid] = [h.doc_id for h in hits]
    search_s = time.perf_counter() - started
    return {"method": method, "queries": len(judged), **evaluate_run(run, judged),
            "qps": round(len(judged) / search_s, 2) if search_s > 0 else None,
            "index_s": round(index_s, 4), "docs": len(docs), "lang": tokenizer.lang,
            "tokenizer": tokenizer.to_dict(), "params": asdict(index.params), "mmr": mmr}
