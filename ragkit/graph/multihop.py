"""Graph RAG multi-hop (seed 003): an edge list as a networkx MultiDiGraph, node-name
vectors in Chroma, and question answering by anchors, reranked ego-graph neighbours and
reranked paths.

Query flow, with the seed's parameters:
1. entities: node names found in the question (underscores, case and accents ignored);
2. anchors: each entity's exact node first, then its nearest node names in Chroma, at most
   ``anchor_per_entity`` per entity and ``max_anchors`` in all, order kept;
3. neighbours: edges of the radius-``depth`` ego graph of the anchors, formatted
   ``Cạnh: A --rel--> B``; ``neighbor_candidate_multiplier × neighbor_top_k`` candidates are
   reranked by cosine to the question and ``neighbor_top_k`` kept;
4. paths: with two or more anchors, simple paths between them in the undirected view
   (``cutoff = max_hops``, ``path_candidate_multiplier × top_k_paths`` candidates),
   formatted ``A -[rel]-> B ; B -[rel2]-> C`` and reranked. Beyond the seed: with one anchor,
   the paths that start at it (up to ``max_hops`` edges, bounded per node) are ranked by
   how close their relation sequence ("spouse ; nationality") is to the question with the
   anchor's name removed, so "what is the nationality of X's spouse" finds
   X → spouse → Y → nationality → Z;
5. answer: the end of the best path (the most frequent end when several paths share the best
   relation sequence), or a clear "not enough data".
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
from tqdm.auto import tqdm

from ..dense.embeddings import default_embedder
from ..dense.vector_store import ChromaVectors
from ..errors import InputError
from ..fsutil import atomic_write_text
from ..text import normalize

NOT_ENOUGH = "Không đủ dữ kiện trong đồ thị để trả lời câu hỏi này."
GRAPH_FILE = "graph.json"


@dataclass(frozen=True)
class GraphQueryParams:
    """The seed's ``query`` parameters and defaults."""

    depth: int = 1
    anchor_per_entity: int = 3
    max_anchors: int = 10
    neighbor_top_k: int = 4
    neighbor_candidate_multiplier: int = 3
    max_hops: int = 3
    top_k_paths: int = 2
    path_candidate_multiplier: int = 3
    single_anchor_paths: int = 400      # beyond the seed: paths from one anchor to rank
    hop_penalty: float = 0.0            # subtracted per extra hop when ranking those paths
    branch_limit: int = 50              # edges followed per node when enumerating paths
    min_anchor_score: float = 0.5       # vector anchors below this cosine are ignored

    def __post_init__(self) -> None:
        for name in ("depth", "anchor_per_entity", "max_anchors", "neighbor_top_k",
                     "neighbor_candidate_multiplier", "max_hops", "top_k_paths", "path_candidate_multiplier"):
            if getattr(self, name) < 1:
                raise InputError(f"{name}: must be at least 1, got {getattr(self, name)}")


def display(name: str) -> str:
    """A node id as words: "frederica_of_mecklenburg-strelitz" → "frederica of mecklenburg-strelitz"."""
    return name.replace("_", " ")


def _key(text: str) -> str:
    """Lowercase, accent-free words; "Marie_Curie's" → "marie curie"."""
    text = re.sub(r"['’]s\b", " ", normalize(text.replace("_", " ")))
    return " ".join(re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", text))


_PROPER = re.compile(r"\b[A-ZÀ-Ỵ][\w.-]*(?:\s+[A-ZÀ-Ỵ][\w.-]*)*")


def read_edges(path: str | Path) -> list[dict]:
    """Rows of an edges.csv with source, relation, target (extra columns kept)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"edges {path}: no such file")
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = {"source", "relation", "target"} - set(reader.fieldnames or [])
        if missing:
            raise InputError(f"edges {path}: missing column(s) {', '.join(sorted(missing))} "
                             f"(needs source, relation, target)")
        rows = []
        for lineno, row in enumerate(reader, 2):
            if not (row["source"] or "").strip() or not (row["target"] or "").strip():
                raise InputError(f"edges {path}:{lineno}: an edge without source or target")
            rows.append({k: (v or "").strip() for k, v in row.items() if k is not None})
    if not rows:
        raise InputError(f"edges {path}: the graph is empty (no edges)")
    return rows


@dataclass
class BuildReport:
    nodes: int
    edges: int
    embedded: int
    reused: int
    seconds: float
    chroma: str


class GraphRAG:
    """A built graph folder: ``graph.json`` plus node-name vectors in Chroma."""

    def __init__(self, graph: nx.MultiDiGraph, vectors: ChromaVectors, directory: Path):
        self.graph = graph
        self.vectors = vectors
        self.directory = directory
        self.embedder = default_embedder()
        self._names: dict[str, list[str]] = {}
        for node in graph.nodes:
            self._names.setdefault(_key(node), []).append(node)
        self._max_words = max((len(k.split()) for k in self._names), default=1)
        self._simple_undirected: nx.Graph | None = None

    # ----------------------------------------------------------------- building
    @classmethod
    def build(cls, edges_csv: str | Path, out_dir: str | Path, progress: bool = True) -> BuildReport:
        started = time.perf_counter()
        rows = read_edges(edges_csv)
        graph = nx.MultiDiGraph()
        for row in rows:
            extra = {k: v for k, v in row.items() if k not in ("source", "relation", "target")}
            graph.add_edge(row["source"], row["target"], key=row["relation"], relation=row["relation"], **extra)
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        vectors = ChromaVectors.for_dir(out_dir / "chroma", "nodes")
        embedder = default_embedder()
        stored = vectors.fingerprints()
        nodes = sorted(graph.nodes)
        fingerprint = {n: hashlib.sha1(f"{embedder.name}|{display(n)}".encode()).hexdigest()[:16] for n in nodes}
        todo = [n for n in nodes if stored.get(n) != fingerprint[n]]
        for start in tqdm(range(0, len(todo), 2048), desc="embed nodes", unit="batch", disable=not progress):
            batch = todo[start:start + 2048]
            vecs = embedder.encode([display(n) for n in batch])
            vectors.upsert(batch, vecs, [{"fingerprint": fingerprint[n]} for n in batch], [display(n) for n in batch])
        vectors.delete([n for n in stored if n not in graph])
        data = nx.node_link_data(graph, edges="edges")
        atomic_write_text(out_dir / GRAPH_FILE, json.dumps({"format_version": 1, "graph": data}, ensure_ascii=False))
        return BuildReport(graph.number_of_nodes(), graph.number_of_edges(), len(todo), len(nodes) - len(todo),
                           round(time.perf_counter() - started, 3), vectors.location)

    @classmethod
    def load(cls, directory: str | Path) -> "GraphRAG":
        directory = Path(directory)
        path = directory / GRAPH_FILE
        if not path.is_file():
            raise InputError(f"graph {directory}: not a built graph (run 'ragkit graph build')")
        data = json.loads(path.read_text(encoding="utf-8"))
        graph = nx.node_link_graph(data["graph"], directed=True, multigraph=True, edges="edges")
        if graph.number_of_nodes() == 0:
            raise InputError(f"graph {directory}: the graph is empty")
        return cls(graph, ChromaVectors.for_dir(directory / "chroma", "nodes"), directory)

    # ----------------------------------------------------------------- query stages
    def extract_entities(self, question: str) -> list[str]:
        """Node names that occur in the question as word sequences, longest first; when
        none does, its proper nouns (capitalised words), to be anchored by vector search."""
        found = self._exact_entities(question)
        if found:
            return found
        skip = {"what", "who", "which", "where", "when", "why", "how", "is", "the", "does", "did"}
        return [m.group() for m in _PROPER.finditer(question)
                if m.group().lower() not in skip and len(m.group()) > 2]

    def _exact_entities(self, question: str) -> list[str]:
        words = _key(question).split()
        found, used = [], set()
        for n in range(min(self._max_words, len(words)), 0, -1):
            for i in range(len(words) - n + 1):
                if any(j in used for j in range(i, i + n)):
                    continue
                key = " ".join(words[i:i + n])
                if key in self._names and (n > 1 or len(key) > 2):
                    found.append((i, key))
                    used.update(range(i, i + n))
        return [key for _, key in sorted(found)]

    def anchors(self, entities: list[str], params: GraphQueryParams) -> list[dict]:
        out: list[dict] = []
        for entity in entities:
            picked = [{"node": n, "entity": entity, "score": 1.0, "how": "exact"}
                      for n in sorted(self._names.get(_key(entity), []))]
            if len(picked) < params.anchor_per_entity:
                hits = self.vectors.query(self.embedder.encode([display(entity)])[0], params.anchor_per_entity)
                for node, score in zip(hits.ids, hits.scores):
                    if score >= params.min_anchor_score and node not in [p["node"] for p in picked]:
                        picked.append({"node": node, "entity": entity, "score": round(score, 4), "how": "vector"})
            for p in picked[: params.anchor_per_entity]:
                if p["node"] not in [a["node"] for a in out]:
                    out.append(p)
        return out[: params.max_anchors]

    def neighbours(self, question_vec: np.ndarray, anchors: list[str], params: GraphQueryParams) -> list[dict]:
        cap = params.neighbor_candidate_multiplier * params.neighbor_top_k
        undirected = self.graph.to_undirected(as_view=True)
        edges = []
        for anchor in anchors:
            ego = set(nx.single_source_shortest_path_length(undirected, anchor, cutoff=params.depth))
            for s, t, rel in sorted(self.graph.subgraph(ego).edges(keys=True)):
                text = f"Cạnh: {display(s)} --{rel}--> {display(t)}"
                if text not in [e["text"] for e in edges]:
                    edges.append({"source": s, "relation": rel, "target": t, "text": text})
                if len(edges) >= cap:
                    break
            if len(edges) >= cap:
                break
        return self._rerank(edges, question_vec, params.neighbor_top_k)

    def paths_between(self, question_vec: np.ndarray, anchors: list[str], params: GraphQueryParams) -> list[dict]:
        """Simple paths between anchor pairs in the undirected view (the seed's stage)."""
        cap = params.path_candidate_multiplier * params.top_k_paths
        undirected = self.simple_undirected
        found = []
        for i, a in enumerate(anchors):
            for b in anchors[i + 1:]:
                for nodes in nx.all_simple_paths(undirected, a, b, cutoff=params.max_hops):
                    found.append(self._describe(nodes))
                    if len(found) >= cap:
                        break
                if len(found) >= cap:
                    break
        return self._rerank(found, question_vec, params.top_k_paths)

    def _rerank(self, items: list[dict], question_vec: np.ndarray, keep: int) -> list[dict]:
        """The ``keep`` items whose ``text`` is closest to the question (cosine; ties by text)."""
        if not items:
            return []
        scores = self.embedder.encode([x["text"] for x in items]) @ question_vec
        for x, score in zip(items, scores):
            x["score"] = round(float(score), 4)
        return sorted(items, key=lambda x: (-x["score"], x["text"]))[:keep]

    @property
    def simple_undirected(self) -> nx.Graph:
        """The undirected simple view used for paths between anchors, built once."""
        if self._simple_undirected is None:
            self._simple_undirected = nx.Graph(self.graph.to_undirected(as_view=True))
        return self._simple_undirected

    def _describe(self, nodes: list[str]) -> dict:
        steps = []
        for s, t in zip(nodes, nodes[1:]):
            if self.graph.has_edge(s, t):
                rel = sorted(self.graph[s][t])[0]
                steps.append((s, rel, t))
            else:
                rel = sorted(self.graph[t][s])[0]
                steps.append((t, rel, s))
        return {"nodes": nodes, "steps": [list(x) for x in steps], "end": nodes[-1],
                "relations": [r for _, r, _ in steps],
                "text": " ; ".join(f"{display(s)} -[{r}]-> {display(t)}" for s, r, t in steps)}

    def paths_from(self, question: str, anchor: str, params: GraphQueryParams) -> list[dict]:
        """Beyond the seed: directed paths that start at the one anchor, ranked by their
        relation sequence against the question without the anchor's name."""
        paths: list[tuple[tuple[str, ...], list[str]]] = []
        stack = [(anchor, (), [anchor])]
        while stack and len(paths) < params.single_anchor_paths:
            node, rels, nodes = stack.pop()
            # Walks may come back to a node ("the child of X's parent" can be X) but never
            # take the same edge twice.
            used = set(zip(nodes, rels, nodes[1:]))
            out = sorted((rel, t) for _, t, rel in self.graph.out_edges(node, keys=True)
                         if (node, rel, t) not in used)
            for rel, t in reversed(out[: params.branch_limit]):
                path = (rels + (rel,), nodes + [t])
                paths.append(path)
                if len(path[0]) < params.max_hops:
                    stack.append((t, path[0], path[1]))
        if not paths:
            return []
        asked = re.sub(re.escape(display(anchor)), " ", display(question), flags=re.IGNORECASE)
        asked = re.sub(re.escape(anchor), " ", asked, flags=re.IGNORECASE)
        sequences = sorted({rels for rels, _ in paths})
        texts = [" ; ".join(display(r) for r in seq) for seq in sequences]
        scores = dict(zip(sequences, (self.embedder.encode(texts) @ self.embedder.encode([asked])[0]).tolist()))
        penalty = params.hop_penalty
        ranked = sorted(paths, key=lambda p: (-(scores[p[0]] - penalty * (len(p[0]) - 1)), len(p[0]), p[1]))
        best_seq = ranked[0][0]
        ends = Counter(p[1][-1] for p in ranked if p[0] == best_seq)
        out = []
        for rels, nodes in ranked[: max(params.top_k_paths, 1)]:
            described = self._describe(nodes)
            described["score"] = round(scores[rels], 4)
            out.append(described)
        out[0]["votes"] = dict(ends.most_common(5))
        return out

    # ----------------------------------------------------------------- answer
    def query(self, question: str, params: GraphQueryParams | None = None) -> dict:
        params = params or GraphQueryParams()
        timings = {}
        t = time.perf_counter()
        entities = self.extract_entities(question)
        timings["entities"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        anchors = self.anchors(entities, params) if entities else []
        timings["anchors"] = (time.perf_counter() - t) * 1000
        if not anchors:
            return {"entities": entities, "anchors": [], "neighbours": [], "paths": [], "answer": None,
                    "timings_ms": timings}
        t = time.perf_counter()
        qvec = self.embedder.encode([display(question)])[0]
        names = [a["node"] for a in anchors]
        neighbours = self.neighbours(qvec, names, params)
        timings["neighbours"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        # Paths join anchors of different entities; one entity (however many anchors the
        # vector search gave it) means ranking the paths that leave its best anchor.
        firsts = list(dict.fromkeys(a["entity"] for a in anchors))
        ends = [next(a["node"] for a in anchors if a["entity"] == e) for e in firsts]
        paths = self.paths_between(qvec, ends, params) if len(ends) >= 2 else []
        if not paths:
            paths = self.paths_from(question, ends[0], params)
        timings["paths"] = (time.perf_counter() - t) * 1000
        answer = None
        if paths:
            votes = paths[0].get("votes")
            if votes:
                answer = sorted(votes.items(), key=lambda x: (-x[1], x[0]))[0][0]
            elif len(paths[0]["nodes"]) > 2:   # between two anchors: what connects them
                answer = ", ".join(paths[0]["nodes"][1:-1])
            else:
                answer = paths[0]["end"]
        return {"entities": entities, "anchors": anchors, "neighbours": neighbours, "paths": paths,
                "answer": answer, "timings_ms": {k: round(v, 3) for k, v in timings.items()}}


__all__ = ["GraphQueryParams", "GraphRAG", "NOT_ENOUGH", "read_edges"]
