"""``ragkit eval retrieval``: build an index over a BEIR corpus, run its judged queries,
and report quality and speed in one JSON object."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..config import FUSIONS, METHODS, LLMConfig
from ..corpus import load_beir_queries, load_corpus, load_qrels
from ..errors import InputError
from ..retrieval.bm25 import BM25Index, BM25Params
from ..retrieval.mmr import cosine_matrix, mmr_rerank, mmr_select, scale_relevance
from ..text import Tokenizer, tokenizer_for
from .metrics import evaluate_run


def default_dense_dir(corpus: str | Path, embedder: str) -> Path:
    """Where a corpus's chunk vectors are kept between runs: outputs/dense/<name>-<hash>."""
    import hashlib

    path = Path(corpus).resolve()
    tag = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return Path("outputs") / "dense" / f"{path.stem}-{embedder}-{tag}"


def evaluate_retrieval(corpus: str | Path, queries: str | Path, qrels: str | Path, *,
                       method: str = "bm25", lang: str = "en", tokenizer: Tokenizer | None = None,
                       params: BM25Params | None = None, mmr: bool = False, k: int = 100,
                       progress: bool = True, embedder: str = "minilm", fusion: str = "rrf",
                       alpha: float = 0.5, dense_dir: str | Path | None = None,
                       rerank: str = "none", rerank_depth: int = 20, llm=None,
                       limit: int | None = None) -> dict:
    """Quality (nDCG@10, Recall@10/100, MRR@10, hit@1/10) and speed (queries/s, index
    seconds) of ``method`` (bm25, dense or hybrid) on a BEIR-format collection.

    mmr: diversify the top 50 (cosine over the chunk vectors for dense and hybrid, Jaccard
    over terms for bm25). rerank="llm": the model (``llm``, default the GGUF) judges the top
    ``rerank_depth``. limit: only the first ``limit`` judged queries (a rerank is slow)."""
    from ..retrieval.fusion import fuse
    from ..retrieval.rerank import make_reranker
    from ..retrieval.search import resolve_method

    if method not in METHODS:
        raise InputError(f"--method: must be one of {', '.join(METHODS)}, got {method!r}")
    if fusion not in FUSIONS:
        raise InputError(f"--fusion: must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    if limit is not None and limit < 1:
        raise InputError(f"--limit: must be at least 1, got {limit}")
    if rerank != "none" and llm is None:
        from ..llm.backends import default_llm

        llm = default_llm(LLMConfig.from_env())
    reranker = make_reranker(rerank, llm, rerank_depth)
    if reranker is not None:
        reranker.judge.choice_logprobs("warm-up", ["Yes"])   # load the model before timing
    judged = load_qrels(qrels)
    if limit is not None:
        judged = dict(list(judged.items())[:limit])
    all_queries = load_beir_queries(queries)
    missing = [q for q in judged if q not in all_queries]
    if missing:
        raise InputError(f"qrels {qrels}: query id {missing[0]!r} is not in {queries}")
    docs = load_corpus(corpus)
    tokenizer = tokenizer or tokenizer_for(lang)
    index = dense = build = None
    index_s = dense_s = 0.0
    if method in ("bm25", "hybrid", "auto"):
        started = time.perf_counter()
        index = BM25Index.build(docs, tokenizer, params, progress=progress)
        index_s = time.perf_counter() - started
    if method in ("dense", "hybrid", "auto"):
        from ..retrieval.dense import DenseIndex

        dense = DenseIndex(dense_dir or default_dense_dir(corpus, embedder), embedder)
        build = dense.build(docs, progress=progress)
        dense_s = build.seconds
        dense.embedder.encode(["warm-up"])      # load the model before the queries are timed
    pool = max(50, reranker.depth if reranker else 0)

    by_id = {d.doc_id: d for d in docs}
    run: dict[str, list[str]] = {}
    started = time.perf_counter()
    chosen: dict[str, int] = {}
    for qid in tqdm(judged, desc="queries", unit="q", disable=not progress):
        query = all_queries[qid]
        used = resolve_method(method, index, query, True)[0] if method == "auto" else method
        chosen[used] = chosen.get(used, 0) + 1
        hits = index.search(query, k=k, boost=False) if used != "dense" else []
        if used == "bm25" and mmr:
            hits = mmr_rerank(index, hits[:50], 50) + hits[50:]
        lexical = [(h.doc_id, h.score) for h in hits]
        vectors = dense.search(query, k=k) if used != "bm25" else []
        ranked = lexical if used == "bm25" else vectors if used == "dense" else \
            fuse(lexical, vectors, fusion, alpha)
        ranked = ranked[:k]
        if reranker is not None:
            top = [by_id[d] for d, _ in ranked[: reranker.depth]]
            order, _ = reranker.order(query, [(doc.title, doc.text) for doc in top])
            ranked = [ranked[i] for i, _ in order] + ranked[reranker.depth:]
        if used != "bm25" and mmr:
            head = ranked[:pool]
            picked = mmr_select(scale_relevance(np.array([sc for _, sc in head])),
                                cosine_matrix(dense.vectors_of([d for d, _ in head])), len(head))
            ranked = [head[i] for i in picked] + ranked[pool:]
        run[qid] = [d for d, _ in ranked]
    search_s = time.perf_counter() - started
    out = {"method": method, "queries": len(judged), **evaluate_run(run, judged),
           "qps": round(len(judged) / search_s, 2) if search_s > 0 else None,
           "index_s": round(index_s, 4), "docs": len(docs), "lang": tokenizer.lang,
           "tokenizer": tokenizer.to_dict(), "mmr": mmr}
    if index is not None:
        out["params"] = asdict(index.params)
    if dense is not None:
        out.update({"embedder": dense.embedder.name, "dense_index_s": dense_s, "dense_embedded": build.embedded,
                    "dense_reused": build.reused, "dense_dir": str(dense.directory),
                    "dense_bytes": dense.size_bytes()})
    if reranker is not None:
        out.update({"rerank": rerank, "rerank_depth": reranker.depth,
                    "rerank_model": getattr(reranker.judge, "name", "")})
    if method == "auto":
        out["auto_chose"] = chosen
    if method in ("hybrid", "auto"):
        out.update({"fusion": fusion, **({"alpha": alpha} if fusion == "weighted" else {"rrf_k": 60})})
    return out
