"""Whether a change to the concept search moved its answers: the `graph` method's top 5 (BM25
base, the rules graph, k 100) on MuSiQue's 100 questions and the 24 rephrased by hand in
``bench/multihop_rephrased.jsonl`` (other words, lower-case or misspelt names), with
Recall@5, for the ragkit on PYTHONPATH (an older checkout) or this one. Each run is kept
under its label, and the file says on how many questions this run's top 5 agrees with each
other label's.

    mkdir -p /tmp/before && git archive bf862c9^ ragkit | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before .venv/bin/python bench/concept_linking.py --label before
    .venv/bin/python bench/concept_linking.py --label after
                                                    -> outputs/bench/concept_linking.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def top_fives() -> dict:
    from ragkit.concepts.graph import ConceptGraph
    from ragkit.concepts.search import ConceptSearcher
    from ragkit.corpus import load_beir_queries, load_corpus, load_qrels
    from ragkit.eval.metrics import recall_at_k
    from ragkit.eval.retrieval import eval_config
    from ragkit.retrieval.bm25 import BM25Index
    from ragkit.retrieval.search import retrieve
    from ragkit.runtime.profiler import Profiler

    from bench._common import SHARED

    base = SHARED / "multihop_passages" / "musique_beir"
    docs = load_corpus(base / "corpus.jsonl")
    queries, judged = load_beir_queries(base / "queries.jsonl"), load_qrels(base / "qrels.tsv")
    rephrased = [json.loads(line) for line in (ROOT / "bench" / "multihop_rephrased.jsonl").open()]
    asked = {**{q: queries[q] for q in judged}, **{r["_id"]: r["text"] for r in rephrased}}
    relevant = {**judged, **{r["_id"]: judged[r["query"]] for r in rephrased}}
    graph = ConceptGraph.build(docs, progress=False)[0]
    searcher, index = ConceptSearcher(graph), BM25Index.for_corpus(docs, progress=False)
    config = eval_config(method="graph", k=100)
    top = {q: [h.doc_id for h in retrieve(index, text, config, Profiler(), concepts=searcher)[1]][:5]
           for q, text in asked.items()}

    def recall(ids) -> float:
        return round(sum(recall_at_k(top[q], relevant[q], 5) for q in ids) / len(ids), 4)

    return {"recall@5": recall(list(judged)), "rephrased_recall@5": recall([r["_id"] for r in rephrased]),
            "questions": len(top), "top5": top}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="after", help="name of the code measured; other labels are kept")
    args = parser.parse_args()
    ragkit = Path(os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or ROOT).resolve()
    sys.path.append(str(ROOT))          # after PYTHONPATH: the ragkit measured comes first
    from bench._common import OUT, write

    run = top_fives()
    previous = OUT / "concept_linking.json"
    runs = json.loads(previous.read_text()).get("runs", {}) if previous.exists() else {}
    runs[args.label] = {"ragkit": str(ragkit.relative_to(ROOT)) if ragkit.is_relative_to(ROOT) else str(ragkit), **run}
    mine = run["top5"]
    agree = {"label": args.label, "questions": len(mine),
             "same_top5_as": {other: sum(mine[q] == kept["top5"].get(q) for q in mine)
                              for other, kept in runs.items() if other != args.label}}
    write("concept_linking", {"runs": runs, "agreement": agree})
    print(json.dumps({label: {k: v for k, v in r.items() if k != "top5"} for label, r in runs.items()}), agree)


if __name__ == "__main__":
    main()
