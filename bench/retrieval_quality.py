"""Retrieval quality through ``ragkit eval retrieval`` (the same code path as the CLI):

- SciFact (English, BEIR): nDCG@10, Recall@10/100, MRR@10 for each IDF variant, with and
  without MMR. BEIR's published BM25 (Elasticsearch) is 0.665 nDCG@10.
- ALQAC 2023 (Vietnamese laws: 2,256 articles, 76 statements as queries): hit@1, hit@10,
  MRR@10 with and without accent stripping and syllable bigrams.

    .venv/bin/python bench/retrieval_quality.py   -> outputs/bench/retrieval_quality.json
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _common import SHARED, write
from ragkit.eval.datasets import alqac_to_beir
from ragkit.eval.retrieval import evaluate_retrieval
from ragkit.retrieval.bm25 import BM25Params
from ragkit.text import Tokenizer

KEYS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "hit@1", "hit@10", "qps", "index_s")


def pick(result: dict) -> dict:
    return {k: result[k] for k in KEYS}


def main() -> None:
    sci = SHARED / "scifact"
    scifact = {}
    for idf in ("robertson", "okapi", "lucene"):
        for mmr in (False, True):
            name = "bm25" if idf == "robertson" and not mmr else f"bm25[{idf}]" + ("+mmr" if mmr else "")
            r = evaluate_retrieval(sci / "corpus.jsonl", sci / "queries.jsonl", sci / "qrels" / "test.tsv",
                                   lang="en", params=BM25Params(idf=idf), mmr=mmr, progress=False)
            scifact[name] = pick(r)
            print(f"scifact {name:>20}: nDCG@10 {r['ndcg@10']:.4f}  R@100 {r['recall@100']:.4f}")

    vi = SHARED / "vi_legal"
    vi_legal = {}
    with tempfile.TemporaryDirectory() as tmp:
        beir = alqac_to_beir(vi / "alqac_102023_legal_passages.json", vi / "alqac_102023_train.json",
                             Path(tmp) / "alqac")
        for accents in (True, False):
            for bigrams in (False, True):
                tok = Tokenizer(lang="vi", accents=accents, bigrams=bigrams)
                r = evaluate_retrieval(beir / "corpus.jsonl", beir / "queries.jsonl",
                                       beir / "qrels" / "test.tsv", tokenizer=tok, progress=False)
                name = ("keep accents" if accents else "strip accents") + (" + bigrams" if bigrams else "")
                vi_legal[name] = pick(r)
                vi_legal[name]["docs"] = r["docs"]
                print(f"vi_legal {name:>24}: hit@1 {r['hit@1']:.3f}  hit@10 {r['hit@10']:.3f}  MRR@10 {r['mrr@10']:.3f}")
    write("retrieval_quality", {
        "scifact": scifact, "vi_legal": vi_legal,
        "reference": {"beir_bm25_scifact_ndcg@10": 0.665},
        "command": "ragkit eval retrieval --corpus ../shared/datasets/scifact/corpus.jsonl "
                   "--queries ../shared/datasets/scifact/queries.jsonl "
                   "--qrels ../shared/datasets/scifact/qrels/test.tsv --lang en --json"})


if __name__ == "__main__":
    main()
