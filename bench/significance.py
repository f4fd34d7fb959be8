"""Which differences in the retrieval tables are more than noise: every run of a table is
made by ``ragkit eval retrieval``'s code (``evaluate_retrieval``, keeping the run), and
compared with the table's reference run, on every metric, by what ``ragkit eval compare``
runs once it has read two run files (``compare_rankings``: Fisher's paired randomization
test, 10,000 sign flips, seed 0; and the paired t-test). The runs stay in memory: ALQAC's
document ids hold spaces, which a TREC run file cannot.

- SciFact (300 test queries), MiniLM: bm25, dense and hybrid (RRF; weighted α = 0.3, the
  default, 0.5 and 0.7), each against bm25 and against the default hybrid; MMR over the
  top 50 on hybrid α = 0.5 (the rerank page's MMR line); BM25's IDF variants and MMR
  against BM25's defaults (the retrieval quality table).
- ALQAC 2023 (76 Vietnamese statements): tokenizations against the ``--lang vi`` default
  (BM25 only; the hybrid rows need an E5 embedding of the corpus, 8 minutes on 2 cores).
- ``--rerank``: the 10-query rerank table of ``bench/rerank.py`` against hybrid without
  rerank, from the same judgements (SmolLM2-135M judges each candidate once; about
  4 minutes). ``--no-rerank`` skips it.

    .venv/bin/python bench/significance.py [--no-rerank | --only-rerank]   -> outputs/bench/significance.json

``--only-rerank`` computes the rerank comparisons alone and adds them to the JSON already
there (the other tables' runs take 8 minutes and do not change with it).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import OUT, SHARED, write
from ragkit.corpus import load_qrels
from ragkit.eval.compare import compare_rankings
from ragkit.eval.datasets import alqac_to_beir
from ragkit.eval.retrieval import evaluate_retrieval
from ragkit.retrieval.bm25 import BM25Params
from ragkit.text import Tokenizer

SCIFACT_DENSE = OUT.parent / "dense-bench" / "scifact-minilm"      # bench/hybrid.py's vectors
Run = dict[str, list[tuple[str, float]]]


def compare_with(reference: str, runs: dict[str, Run], judged: dict) -> dict:
    """Every run against ``reference``: {"reference", "queries", "against": {run: metrics}}."""
    out = {}
    for label, run in runs.items():
        if label != reference:
            result = compare_rankings(runs[reference], run, judged)
            out[label] = result["metrics"]
            nd = result["metrics"]["ndcg@10"]
            print(f"  {label:>28} vs {reference}: nDCG@10 {nd['mean_a']:.4f} -> {nd['mean_b']:.4f} "
                  f"({nd['delta']:+.4f}), p = {nd['p_randomization']:.4f} (t: {nd['p_ttest']})")
    return {"reference": reference, "queries": len(judged), "against": out}


def scifact() -> dict:
    sci = SHARED / "scifact"
    corpus, queries, qrels = sci / "corpus.jsonl", sci / "queries.jsonl", sci / "qrels" / "test.tsv"
    runs: dict[str, Run] = {}
    for label, options in (("bm25", {}), ("dense", {"method": "dense"}),
                           ("hybrid rrf", {"method": "hybrid", "fusion": "rrf"}),
                           *((f"hybrid weighted {a}", {"method": "hybrid", "fusion": "weighted", "alpha": a})
                             for a in (0.3, 0.5, 0.7)),
                           ("hybrid weighted 0.5 + mmr", {"method": "hybrid", "fusion": "weighted", "alpha": 0.5,
                                                          "mmr": True}),
                           ("bm25 idf=okapi", {"params": BM25Params(idf="okapi")}),
                           ("bm25 idf=lucene", {"params": BM25Params(idf="lucene")}),
                           ("bm25 + mmr", {"mmr": True}),
                           ("bm25 idf=lucene + mmr", {"params": BM25Params(idf="lucene"), "mmr": True})):
        r = evaluate_retrieval(corpus, queries, qrels, lang="en", embedder="minilm", dense_dir=SCIFACT_DENSE,
                               progress=False, keep_run=True, **options)
        runs[label] = r["run"]
        print(f"scifact {label:>28}: nDCG@10 {r['ndcg@10']:.4f}")
    judged = load_qrels(qrels)
    hybrid = {k: v for k, v in runs.items() if k in ("bm25", "dense") or k.startswith("hybrid") and "mmr" not in k}
    return {"hybrid_vs_bm25": compare_with("bm25", hybrid, judged),
            "hybrid_vs_default": compare_with("hybrid weighted 0.3",
                                              {k: v for k, v in hybrid.items() if k.startswith("hybrid")}, judged),
            "mmr_on_hybrid": compare_with("hybrid weighted 0.5", {k: v for k, v in runs.items()
                                                                   if k.startswith("hybrid weighted 0.5")}, judged),
            "bm25_variants": compare_with("bm25", {k: v for k, v in runs.items() if k.startswith("bm25")}, judged)}


def alqac(folder: Path) -> dict:
    vi = SHARED / "vi_legal"
    beir = alqac_to_beir(vi / "alqac_102023_legal_passages.json", vi / "alqac_102023_train.json", folder / "alqac")
    qrels = beir / "qrels" / "test.tsv"
    runs: dict[str, Run] = {}
    for accents in (True, False):
        for bigrams in (False, True):
            label = ("keep accents" if accents else "strip accents") + (" + bigrams" if bigrams else "")
            r = evaluate_retrieval(beir / "corpus.jsonl", beir / "queries.jsonl", qrels, progress=False,
                                   tokenizer=Tokenizer(lang="vi", accents=accents, bigrams=bigrams), keep_run=True)
            runs[label] = r["run"]
            print(f"alqac {label:>28}: MRR@10 {r['mrr@10']:.4f}")
    return {"tokenization": compare_with("strip accents + bigrams", runs, load_qrels(qrels))}


def rerank() -> dict:
    """bench/rerank.py's 10-query runs (``rerank_runs``) against hybrid without rerank."""
    from rerank import rerank_runs

    result = rerank_runs()
    qrels = result["data"].qrels
    judged = {q: qrels[q] for q in result["subset"]}
    runs = {label: {q: [(d, float(len(ids) - i)) for i, d in enumerate(ids)] for q, ids in ranking.items()}
            for label, ranking in result["rankings"].items()}
    return compare_with("hybrid (no rerank)", runs, judged)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-rerank", action="store_true", help="skip the 10-query rerank comparisons")
    parser.add_argument("--only-rerank", action="store_true",
                        help="only the rerank comparisons, added to the JSON already written")
    args = parser.parse_args()
    if args.only_rerank:
        import json

        previous = json.loads((OUT / "significance.json").read_text())
        previous.pop("machine", None)
        write("significance", {**previous, "rerank_10_queries": rerank()})
        return
    with tempfile.TemporaryDirectory() as tmp:
        figures = {"scifact_minilm": scifact(), "alqac": alqac(Path(tmp))}
    if not args.no_rerank:
        figures["rerank_10_queries"] = rerank()
    write("significance", {
        **figures,
        "test": "Fisher's paired randomization test, two-sided, 10,000 sign flips (every flip for 13 "
                "queries or fewer), seed 0; p_ttest: paired t-test; significant: p_randomization < 0.05",
        "command": "ragkit eval compare A.trec B.trec --qrels ../shared/datasets/scifact/qrels/test.tsv",
    })


if __name__ == "__main__":
    main()
