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

METHODS = ("bm25", "dense", "hybrid")


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
                       alpha: float = 0.5, dense_dir: str | Path | None = None) -> dict:
    """Quality (nDCG@10, Recall@10/100, MRR@10, hit@1/10) and speed (queries/s, index
    seconds) of ``method`` (bm25, dense or hybrid) on a BEIR-format collection."""
    from ..lexical.fusion import FUSIONS, fuse

    if method not in METHODS:
        raise InputError(f"--method: must be one of {', '.join(METHODS)}, got {method!r}")
    if fusion not in FUSIONS:
        raise InputError(f"--fusion: must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    judged = load_qrels(qrels)
    all_queries = load_beir_queries(queries)
    missing = [q for q in judged if q not in all_queries]
    if missing:
        raise InputError(f"qrels {qrels}: query id {missing[0]!r} is not in {queries}")
    docs = load_corpus(corpus)
    tokenizer = tokenizer or tokenizer_for(lang)
    index = dense = build = None
    index_s = dense_s = 0.0
    if method in ("bm25", "hybrid"):
        started = time.perf_counter()
        index = BM25Index.build(docs, tokenizer, params, progress=progress)
        index_s = time.perf_counter() - started
    if method in ("dense", "hybrid"):
        from ..dense.retrieval import DenseIndex

        dense = DenseIndex(dense_dir or default_dense_dir(corpus, embedder), embedder)
        build = dense.build(docs, progress=progress)
        dense_s = build.seconds
        dense.embedder.encode(["warm-up"])      # load the model before the queries are timed

    run: dict[str, list[str]] = {}
    started = time.perf_counter()
    for qid in tqdm(judged, desc="queries", unit="q", disable=not progress):
        query = all_queries[qid]
        hits = index.search(query, k=k, boost=False) if index else []
        if method == "bm25" and mmr:
            hits = mmr_rerank(index, hits[:50], 50) + hits[50:]
        lexical = [(h.doc_id, h.score) for h in hits]
        vectors = dense.search(query, k=k) if dense else []
        ranked = lexical if method == "bm25" else vectors if method == "dense" else \
            fuse(lexical, vectors, fusion, alpha)
        run[qid] = [d for d, _ in ranked[:k]]
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
    if method == "hybrid":
        out.update({"fusion": fusion, **({"alpha": alpha} if fusion == "weighted" else {"rrf_k": 60})})
    return out
