"""Community detection on ragkit's concept graphs: graspologic-native's Leiden (what
``ragkit.concepts.communities`` runs) against the Louvain ragkit wrote for itself before
(networkx 3.6's looped forever on MuSiQue's graph; kept here, unchanged, as the baseline).

The graphs are built as ``bench/concept_graph.py`` builds them (``ConceptGraph.build`` over
the whole corpus): MuSiQue's 1,890 paragraphs, SciFact's 5,183 abstracts, and the bundled
demo corpora (the Vietnamese manuals, the 5G specs of notebook 01). Both methods run on the
same weighted adjacency (CO_OCCURS, no self-loops) at resolution 1, with seed 42 and four
more seeds for the spread. Per method and graph:

- **modularity**: networkx's ``community.modularity`` on the weighted graph (every concept a
  node), checked against ragkit's numpy ``modularity``;
- **communities**: how many, singletons (concepts with no CO_OCCURS edge are always one), the
  largest, the median and 90th percentile size of the others, and themes (communities home
  to 2 chunks or more: ``detect_communities`` with the method swapped in);
- **gold-pair co-membership** (MuSiQue, and SciFact's queries with two judged abstracts or
  more): of the pairs of gold supporting paragraphs of one question, the share whose concepts
  fall in a common community (some concept of one and some concept of the other in the same
  community), and the stricter share whose chunks have the same home community (the
  community holding most of their concepts, ``home_communities``); the share of pairs that
  share a concept outright is given beside them, the same for every partition;
- **communities retrieval** (MuSiQue): what ``--method communities --k 5`` cites for each
  question: its top five communities (``rank_communities``: the communities of the question's
  linked concepts first), their summary sentences' chunks in order; Recall@5 of that list and
  recall of all of it (up to 15 chunks). ``graph`` and ``hybrid+graph`` (bench/concept_graph.py)
  walk the concept graph and read no communities, so the method does not change them;
- **time**: median wall seconds of 5 partitions (seed 42, adjacency to labels), and of 3 whole
  ``detect_communities`` calls (the partition, homes, top concepts, summaries), the two
  methods' runs taken in turn so that both meet the same load; CPU seconds beside them (the
  machine's load average at the start and end is recorded too).

    .venv/bin/python bench/communities.py        # -> outputs/bench/communities.json
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

import networkx as nx
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import ROOT, SHARED, write  # noqa: E402

from ragkit.concepts import communities as communities_module  # noqa: E402
from ragkit.concepts.broad import broad_question  # noqa: E402
from ragkit.concepts.graph import ConceptGraph  # noqa: E402
from ragkit.corpus import load_beir_queries, load_corpus, load_qrels  # noqa: E402
from ragkit.eval.metrics import recall_at_k  # noqa: E402
from ragkit.retrieval.community_search import rank_communities  # noqa: E402

SEEDS = (42, 0, 1, 2, 3)
RESOLUTION = 1.0
REPEAT = 5
DETECT_REPEAT = 3
COMMUNITIES_K = 5


# ---------------------------------------------------------------------- the baseline
def louvain(adjacency: sp.spmatrix, *, resolution: float = RESOLUTION, seed: int = 42,
            max_passes: int = 100, threshold: float = 1e-7) -> np.ndarray:
    """ragkit's own Louvain (Blondel et al., 2008), as ``ragkit.concepts.communities`` ran it
    before Leiden: each level moves nodes, in a seeded random order, to the neighbouring
    community with the best gain beyond round-off (``1e-12 · k_i``), until a pass moves none;
    the communities become the next level's nodes; levels stop when modularity gains less
    than ``threshold``."""
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    n = a.shape[0]
    label = np.arange(n)
    two_m = a.sum()
    if two_m <= 0:
        return label
    rng = np.random.default_rng(seed)
    edges = sp.triu(a).tocoo()
    quality = communities_module.modularity(edges, label, resolution)
    while True:
        community = _one_level(a, two_m, resolution, rng, max_passes)
        _, community = np.unique(community, return_inverse=True)
        if community.max() + 1 == a.shape[0]:
            break
        label = community[label]
        better = communities_module.modularity(edges, label, resolution)
        members = sp.csr_matrix((np.ones(len(community)), (np.arange(len(community)), community)))
        a = sp.csr_matrix(members.T @ a @ members)
        if better - quality <= threshold:
            break
        quality = better
    _, label = np.unique(label, return_inverse=True)
    return label


def _one_level(a: sp.csr_matrix, two_m: float, resolution: float, rng, max_passes: int) -> np.ndarray:
    """One level of Louvain's local moving: each node's community (of this level's nodes)."""
    n = a.shape[0]
    degree = np.asarray(a.sum(axis=1)).ravel().tolist()
    total = list(degree)
    community = list(range(n))
    indptr, indices, data = a.indptr.tolist(), a.indices.tolist(), a.data.tolist()
    for _ in range(max_passes):
        moved = 0
        for i in rng.permutation(n).tolist():
            k_i, own = degree[i], community[i]
            links: dict[int, float] = {}
            for j, w in zip(indices[indptr[i]:indptr[i + 1]], data[indptr[i]:indptr[i + 1]]):
                if j != i:
                    c = community[j]
                    links[c] = links.get(c, 0.0) + w
            total[own] -= k_i
            share = resolution * k_i / two_m
            best, best_gain = own, links.get(own, 0.0) - share * total[own]
            margin = 1e-12 * max(k_i, 1e-300)
            for c, w in links.items():
                gain = w - share * total[c]
                if gain > best_gain + margin:
                    best, best_gain = c, gain
            total[best] += k_i
            if best != own:
                community[i] = best
                moved += 1
        if not moved:
            break
    return np.asarray(community)


METHODS = {
    "louvain (ragkit's own)": louvain,
    "leiden (graspologic-native)": communities_module.leiden,
}


# ---------------------------------------------------------------------- the graphs
def adjacency_of(graph: ConceptGraph) -> sp.csr_matrix:
    """The CO_OCCURS weights without self-loops: what ``leiden_partition`` partitions."""
    a = sp.csr_matrix(graph.cooccurs, dtype=np.float64)
    a.setdiag(0)
    a.eliminate_zeros()
    return a


def networkx_graph(a: sp.csr_matrix) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(a.shape[0]))
    coo = sp.triu(a, k=1).tocoo()
    g.add_weighted_edges_from(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()))
    return g


def nx_modularity(g: nx.Graph, label: np.ndarray) -> float:
    parts: dict[int, set] = {}
    for node, c in enumerate(label.tolist()):
        parts.setdefault(c, set()).add(node)
    return nx.community.modularity(g, list(parts.values()), weight="weight", resolution=RESOLUTION)


def sizes_of(label: np.ndarray) -> dict:
    sizes = np.bincount(label)
    grouped = np.sort(sizes[sizes > 1])
    return {"communities": int(len(sizes)), "singletons": int((sizes == 1).sum()),
            "largest": int(sizes.max()) if len(sizes) else 0,
            "median_non_singleton": float(np.median(grouped)) if len(grouped) else 0.0,
            "p90_non_singleton": float(np.percentile(grouped, 90)) if len(grouped) else 0.0}


def gold_pairs(graph: ConceptGraph, judged: dict) -> list[tuple[int, int]]:
    """Every pair of one question's judged chunks, as chunk positions."""
    position = {c: i for i, c in enumerate(graph.chunk_ids)}
    pairs = []
    for rel in judged.values():
        chunks = sorted(position[d] for d, g in rel.items() if g > 0 and d in position)
        pairs.extend(itertools.combinations(chunks, 2))
    return pairs


def co_membership(graph: ConceptGraph, label: np.ndarray, pairs: list[tuple[int, int]]) -> dict:
    """Of the gold pairs: the share whose concepts fall in a common community, and the share
    whose chunks have the same home community."""
    mentions = graph.mentions.tocsr()
    concepts = [mentions.indices[mentions.indptr[r]:mentions.indptr[r + 1]] for r in range(mentions.shape[0])]
    home = communities_module.home_communities(graph, label)
    common = sum(bool(set(label[concepts[a]].tolist()) & set(label[concepts[b]].tolist())) for a, b in pairs)
    same_home = sum(home[a] == home[b] != -1 for a, b in pairs)
    n = max(len(pairs), 1)
    return {"co_membership": round(common / n, 4), "same_home": round(same_home / n, 4)}


def shared_concept(graph: ConceptGraph, pairs: list[tuple[int, int]]) -> float:
    mentions = graph.mentions.tocsr()
    concepts = [set(mentions.indices[mentions.indptr[r]:mentions.indptr[r + 1]].tolist())
                for r in range(mentions.shape[0])]
    return round(sum(bool(concepts[a] & concepts[b]) for a, b in pairs) / max(len(pairs), 1), 4)


def detect_with(method, graph: ConceptGraph, texts: dict, seed: int):
    """``detect_communities`` with ``method`` as its partition."""
    with mock.patch.object(communities_module, "leiden", method):
        return communities_module.detect_communities(graph, texts, seed=seed, resolution=RESOLUTION)


def communities_recall(graph: ConceptGraph, found, queries: dict, judged: dict) -> dict:
    """Recall of the chunks ``--method communities --k 5`` cites, in its order."""
    at5, cited = [], []
    for qid, rel in judged.items():
        hits = rank_communities(found, broad_question(queries[qid], graph), COMMUNITIES_K)
        order = list(dict.fromkeys(c for h in hits for c in h.community.cited_chunks()))
        at5.append(recall_at_k(order, rel, 5))
        cited.append(recall_at_k(order, rel, len(order)))
    return {"recall@5": round(statistics.mean(at5), 4), "recall_all_cited": round(statistics.mean(cited), 4)}


def timed(fn) -> tuple[float, float]:
    """Wall and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def alternating(calls: dict, repeat: int) -> dict:
    """{name: (wall samples, cpu samples)}: ``repeat`` rounds, each calling every one in turn."""
    samples = {name: ([], []) for name in calls}
    for _ in range(repeat):
        for name, fn in calls.items():
            wall, cpu = timed(fn)
            samples[name][0].append(wall)
            samples[name][1].append(cpu)
    return samples


def spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4),
            "max": round(max(values), 4)}


def measure(name: str, docs, queries: dict | None = None, judged: dict | None = None) -> dict:
    started = time.perf_counter()
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    build_s = round(time.perf_counter() - started, 3)
    texts = {d.doc_id: d.text for d in docs}
    a = adjacency_of(graph)
    g = networkx_graph(a)
    edges = sp.triu(a, k=1).tocoo()
    pairs = gold_pairs(graph, judged) if judged else []
    out = {"chunks": len(graph.chunk_ids), "concepts": len(graph.keys), "edges": int(edges.nnz),
           "graph_build_s": build_s, "gold_pairs": len(pairs),
           "pairs_sharing_a_concept": shared_concept(graph, pairs) if pairs else None, "methods": {}}
    for method_name, method in METHODS.items():
        runs = {}
        for seed in SEEDS:
            label = method(a, resolution=RESOLUTION, seed=seed)
            quality = nx_modularity(g, label)
            own = communities_module.modularity(edges, label, RESOLUTION)
            assert abs(quality - own) < 1e-9, (name, method_name, seed, quality, own)
            run = {"modularity": round(quality, 6), **sizes_of(label)}
            if pairs:
                run.update(co_membership(graph, label, pairs))
            if seed == SEEDS[0] or (queries and name == "musique"):
                found = detect_with(method, graph, texts, seed)
                run["themes"] = len(found.themes)
                if queries and name == "musique":
                    run["communities_retrieval"] = communities_recall(graph, found, queries, judged)
            runs[seed] = run
        out["methods"][method_name] = {"seed": SEEDS[0], **runs[SEEDS[0]], "seeds": list(SEEDS), "runs": runs}
    partition = alternating({m: (lambda f=f: f(a, resolution=RESOLUTION, seed=SEEDS[0])) for m, f in METHODS.items()},
                            REPEAT)
    detect = alternating({m: (lambda f=f: detect_with(f, graph, texts, SEEDS[0])) for m, f in METHODS.items()},
                         DETECT_REPEAT)
    for method_name in METHODS:
        summary = out["methods"][method_name]
        runs = summary.pop("runs")
        for what, samples in (("partition", partition[method_name]), ("detect", detect[method_name])):
            summary[f"{what}_s_median"] = round(statistics.median(samples[0]), 4)
            summary[f"{what}_cpu_s_median"] = round(statistics.median(samples[1]), 4)
            summary[f"{what}_s_samples"] = [round(x, 4) for x in samples[0]]
        summary["modularity_over_seeds"] = spread([r["modularity"] for r in runs.values()])
        summary["communities_over_seeds"] = spread([r["communities"] for r in runs.values()])
        if pairs:
            summary["co_membership_over_seeds"] = spread([r["co_membership"] for r in runs.values()])
            summary["same_home_over_seeds"] = spread([r["same_home"] for r in runs.values()])
        if "communities_retrieval" in summary:
            summary["communities_recall@5_over_seeds"] = spread(
                [r["communities_retrieval"]["recall@5"] for r in runs.values()])
        summary["per_seed"] = {str(s): r for s, r in runs.items()}
        print(f"{name:8} {method_name:28} Q={summary['modularity']:.4f} communities={summary['communities']} "
              f"partition={summary['partition_s_median']:.3f}s (cpu {summary['partition_cpu_s_median']:.3f}s) "
              f"detect={summary['detect_s_median']:.3f}s", flush=True)
    return out


def main() -> None:
    load_before = [round(x, 2) for x in os.getloadavg()]
    base = SHARED / "multihop_passages" / "musique_beir"
    musique = measure("musique", load_corpus(base / "corpus.jsonl"), load_beir_queries(base / "queries.jsonl"),
                      load_qrels(base / "qrels.tsv"))
    scifact_base = SHARED / "scifact"
    scifact_judged = {q: rel for q, rel in load_qrels(scifact_base / "qrels" / "test.tsv").items() if len(rel) > 1}
    scifact = measure("scifact", load_corpus(scifact_base / "corpus.jsonl"), judged=scifact_judged)
    manuals = measure("manuals", load_corpus(ROOT / "data" / "manuals"))
    specs = measure("specs", load_corpus(ROOT / "data" / "specs"))
    result = {"resolution": RESOLUTION, "seeds": list(SEEDS), "repeat": REPEAT, "detect_repeat": DETECT_REPEAT,
              "load_average_1_5_15": {"start": load_before, "end": [round(x, 2) for x in os.getloadavg()]},
              "graphs": {"musique": musique, "scifact": scifact, "manuals": manuals, "specs": specs}}
    write("communities", result)
    print(json.dumps({g: {m: {k: v for k, v in r.items() if k != "per_seed"} for m, r in d["methods"].items()}
                      for g, d in result["graphs"].items()}, indent=1)[:6000])


if __name__ == "__main__":
    main()
