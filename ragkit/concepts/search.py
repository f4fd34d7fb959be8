"""Multi-hop passage retrieval over a concept graph, without a model (HippoRAG's ranking, with
rule-based concepts in place of an LLM's triples).

1. **Seeds**: the question's words linked to graph concepts (every n-gram's key, exactly or
   through an alias; the longest match wins where matches overlap), each weighted by its
   inverse chunk frequency ``log(N / df)``; and the top ``seed_passages`` chunks of the base
   ranking (hybrid, or BM25), weighted by their rank (1 / rank). Question concepts hold
   ``question_share`` of the restart mass, passages the rest.
2. **Personalized PageRank** (``ppr``) over concepts and chunks: MENTIONS edges of weight 1,
   CO_OCCURS edges scaled by ``cooccur_weight``; damping 0.7, at most ``max_iter`` iterations.
3. **Chunk score**: the mass of its concepts, each divided by its degree (the share it hands
   each neighbour), summed, and divided by ``sqrt`` of the chunk's concept count so that
   long chunks do not win by size alone.
4. **Fusion** (``hybrid+graph``, ``fuse``): the base ranking's first ``keep_base`` chunks
   stay first, and the rest is ``retrieval.fusion.weighted`` with the graph as the second
   list, ``(1 − w) · base + w · graph`` (each min-max normalised), where the walk's weight
   ``w = weight · name_share`` grows with the share of the question's linked concepts (by
   idf) that the corpus writes as names. A second hop goes through a named thing one passage
   mentions and another describes; a question of common noun phrases ("inductive
   properties") walks to passages on the same topic, which the hybrid ranking already
   orders better. The settings were chosen on dev splits of a multi-hop and a single-hop
   set (docs/benchmarks/concepts.md, "Concept graph").

Every chunk the graph ranks carries its **bridge**: the concepts that gave it the most mass,
each with how the walk reached it (a question concept, or a seed passage mentioning it, or a
question concept it co-occurs with).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence, TypedDict

import numpy as np
import scipy.sparse as sp

from ..text.linking import Linker
from .vectors import LabelVectors
from .graph import ConceptGraph
from .ppr import LocalPageRank, personalized_pagerank, transition_matrix

# A graph with at least this many edge entries is walked by forward push (``LocalPageRank``,
# numba) instead of the power iteration: 30 rounds over 2 million entries take about as long
# (~0.1 s) as loading numba does, and the push's time does not grow with the graph.
PUSH_FROM_EDGES = 2_000_000


class SeedShown(TypedDict):
    """A concept the walk started from, as the trace shows it: its label, the question's span that linked it, how
    (name, word, vector) and its share of the restart."""

    concept: str
    span: str
    how: str
    weight: float


class Seeds(TypedDict):
    """What a walk started from: the question's concepts, the top passages, and the share
    of the question's links that came from names."""

    seed_concepts: list[SeedShown]
    seed_passages: list[str]
    name_share: float


class Bridge(TypedDict):
    """A concept that brought a chunk in, the mass it handed it, and the edges that reached it."""

    concept: str
    mass: float
    via: list[str]

@dataclass(frozen=True)
class WalkParams:
    """The walk's settings (defaults chosen on the MuSiQue dev split, see docs/benchmarks/concepts.md)."""

    damping: float = 0.7           # dev split, Recall@5: 0.5 -> 0.633, 0.7 -> 0.673, 0.8 -> 0.663
    max_iter: int = 30
    seed_passages: int = 5
    question_share: float = 0.5
    cooccur_weight: float = 1.0
    weight: float = 0.9            # hybrid+graph: the graph's share at most (dev: 0.7 -> 0.612, 0.9 -> 0.663)
    keep_base: int = 2             # hybrid+graph: the base ranking's first chunks stay first
    names_weigh: bool = True       # hybrid+graph: the walk's weight scales with the name share
    bridge_concepts: int = 3       # concepts named in each chunk's trace
    vector_floor: float = 0.8      # vector linking: the least cosine of a phrase and a label


@dataclass
class SeedConcept:
    concept: int
    span: str
    weight: float
    how: str = "exact"             # how the span linked: exact, normalized, accent-free, fuzzy, vector


@dataclass
class Walk:
    """One query's PageRank mass and its seeds."""

    mass: np.ndarray
    seed_concepts: set
    seed_rows: set


class ConceptSearcher:
    """A concept graph ready for queries: the walk matrix is made once."""

    def __init__(self, graph: ConceptGraph, params: WalkParams | None = None,
                 vectors: "LabelVectors | None" = None, embedder=None):
        self.graph = graph
        self.params = params or WalkParams()
        # Vector linking (``link_by_vector``): the labels' vectors and the model that made them.
        self.vectors = vectors if embedder is not None else None
        self.embedder = embedder
        m, n = len(graph.keys), len(graph.chunk_ids)
        self.m, self.n = m, n
        mentions = graph.mentions
        adjacency = sp.bmat([[self.params.cooccur_weight * graph.cooccurs, mentions.T],
                             [mentions, None]], format="csr")
        self.adjacency = adjacency
        self.local = _local_pagerank(adjacency)
        self.walk = transition_matrix(adjacency) if self.local is None else None
        self.degree = np.asarray(adjacency.sum(axis=0)).ravel()
        counts = np.diff(mentions.indptr).astype(np.float64)
        self.chunk_norm = np.sqrt(np.maximum(counts, 1.0))
        self.idf = np.log(n / np.maximum(graph.df, 1.0)) + 1e-3

    # ------------------------------------------------------------------ seeds
    @cached_property
    def linker(self) -> Linker:
        """The concepts' labels and aliases as surfaces (target: the concept's number)."""
        # Only a name may link misspelt (``link_question``): spans that open in lower case are
        # not compared with the labels at all. A saved graph brings its surfaces' keys.
        return Linker(self.graph.link_surfaces(), fuzzy_spans=lambda written: written[:1].isupper(),
                      keys=self.graph.link_keys)

    def link_question(self, question: str) -> list[SeedConcept]:
        """The question's concepts: spans linked to a concept's label or alias by
        ``linking.Linker`` (up to case, plural, diacritics where the question writes none,
        or a small misspelling), longest first, never overlapping. A span written all in
        lower case links to a name only when it is several words ("journal of coastal
        ecology"; one word, "state", is not the name "State"); only a name may link
        misspelt ("Velmora" to "Velmorra"): a common phrase's spelling varies by
        inflection ("physical laboratory", "physics laboratory"), not by mistake. Between
        spans of one length, a name wins ("Velm river" over "river flows")."""
        def is_name(link) -> bool:
            return self.graph.labels[int(link.target)][:1].isupper()

        def keep(link) -> bool:
            if link.how == "fuzzy" and not link.text[:1].isupper():
                return False
            return not (link.text.islower() and " " not in link.text.strip() and is_name(link))

        found: dict[int, SeedConcept] = {}
        for link in self.linker.link(question, keep=keep, prefer=lambda link: 0 if is_name(link) else 1):
            concept = int(link.target)
            if concept not in found:
                found[concept] = SeedConcept(concept, link.text, float(self.idf[concept]) * link.score,
                                             link.how)
        for seed in self.link_by_vector(question, [s.span for s in found.values()]):
            found.setdefault(seed.concept, seed)
        return list(found.values())

    def link_by_vector(self, question: str, linked: Sequence[str] = ()) -> list[SeedConcept]:
        """The question's own concepts (``extract_concepts`` on it) that no span in
        ``linked`` covers, each linked to the concept whose label vector is nearest, when the
        cosine reaches ``params.vector_floor`` (weighted by idf × cosine). Nothing without
        label vectors."""
        if self.vectors is None:
            return []
        from .extract import extract_concepts

        spans = [s.lower() for s in linked]
        phrases = [m.label for m in extract_concepts(question)
                   if not any(m.label.lower() in s or s in m.label.lower() for s in spans)]
        if not phrases:
            return []
        out = []
        for phrase, vector in zip(phrases, self.embedder.encode(phrases)):
            concept, cosine = self.vectors.nearest(vector)
            if cosine >= self.params.vector_floor:
                out.append(SeedConcept(concept, phrase, float(self.idf[concept]) * cosine, "vector"))
        return out

    def name_share(self, seeds: Sequence[SeedConcept]) -> float:
        """Of the question's seed concepts, the share of weight on those the corpus writes as names (their most
        frequent spelling starts with a capital); 0 without seeds."""
        total = sum(s.weight for s in seeds)
        if total <= 0:
            return 0.0
        return sum(s.weight for s in seeds if self.graph.labels[s.concept][:1].isupper()) / total

    # ------------------------------------------------------------------ ranking
    def rank(self, question: str, base: Sequence[tuple[str, float]],
             k: int = 100) -> tuple[list[tuple[str, float]], Seeds, "Walk | None"]:
        """Chunks by graph score, best first (at most ``k``, only those with mass), what the
        walk started from ({"seed_concepts": [...], "seed_passages": [...]}), and the walk
        itself (for ``bridge``; None when nothing seeded it)."""
        p = self.params
        seeds_q = self.link_question(question)
        seed_rows = [self.graph.chunk_position[d] for d, _ in base[: p.seed_passages]
                     if d in self.graph.chunk_position]
        restart: dict[int, float] = {}
        q_total = sum(s.weight for s in seeds_q)
        q_share = p.question_share if seed_rows else 1.0
        for s in seeds_q:
            restart[s.concept] = restart.get(s.concept, 0.0) + q_share * s.weight / q_total
        if seed_rows:
            share = 1.0 - q_share if seeds_q else 1.0
            ranks = np.array([1.0 / r for r in range(1, len(seed_rows) + 1)])
            for row, w in zip(seed_rows, ranks / ranks.sum()):
                restart[self.m + row] = restart.get(self.m + row, 0.0) + share * w
        info: Seeds = {"seed_concepts": [{"concept": self.graph.labels[s.concept], "span": s.span,
                                   "how": s.how, "weight": round(s.weight, 4)} for s in seeds_q],
                "seed_passages": [self.graph.chunk_ids[r] for r in seed_rows],
                "name_share": round(self.name_share(seeds_q), 4)}
        if not restart:
            return [], info, None
        if self.local is not None:
            mass, reached = self.local(restart, damping=p.damping)
            walk = Walk(mass, {s.concept for s in seeds_q}, set(seed_rows))
            concepts = reached[reached < self.m]
            scores = np.zeros(self.n)
            self._spread(concepts, mass[concepts] / np.maximum(self.degree[concepts], 1e-12), scores)
            rows = np.flatnonzero(scores)
            scores_at = scores[rows] / self.chunk_norm[rows]
            order = rows[np.lexsort((rows, -scores_at))][:k]
            scores[rows] = scores_at
        else:
            mass = personalized_pagerank(self.adjacency, restart, damping=p.damping, max_iter=p.max_iter,
                                         transition=self.walk)
            walk = Walk(mass, {s.concept for s in seeds_q}, set(seed_rows))
            concept_mass = mass[: self.m] / np.maximum(self.degree[: self.m], 1e-12)
            scores = (self.graph.mentions @ concept_mass) / self.chunk_norm
            order = np.argsort(-scores, kind="stable")[:k]
        ranked = [(self.graph.chunk_ids[i], float(scores[i])) for i in order if scores[i] > 0]
        return ranked, info, walk

    def _spread(self, concepts: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
        """``out += mentions @ v`` for ``v`` zero but at ``concepts``: only their columns."""
        from .ppr_kernel import spread

        by = self.graph.by_concept
        spread(by.indptr, by.indices, by.data, concepts, values, out)

    def bridge(self, walk: "Walk | None", doc_id: str) -> list[Bridge]:
        """Why ``walk`` brought ``doc_id`` in: its top concepts by the mass they handed it,
        each with the edges that reached it (a question link, a seed passage mentioning it, a
        question concept it co-occurs with), ending with its MENTIONS edge to the chunk."""
        if walk is None or doc_id not in self.graph.chunk_position:
            return []
        mass, seed_concepts, seed_rows = walk.mass, walk.seed_concepts, walk.seed_rows
        row = self.graph.chunk_position[doc_id]
        concepts = self.graph.concepts_of_chunk(row)
        given = mass[concepts] / np.maximum(self.degree[concepts], 1e-12)
        out: list[Bridge] = []
        for idx in np.argsort(-given)[: self.params.bridge_concepts]:
            c = int(concepts[idx])
            if given[idx] <= 0:
                break
            label = self.graph.labels[c]
            if c in seed_concepts:
                via = [f"question --LINKS--> {label}"]
            else:
                chunks = self.graph.chunks_mentioning(c, among=seed_rows)
                via = [f"{self.graph.chunk_ids[r]} --MENTIONS--> {label}" for r in chunks
                       if r in seed_rows and r != row][:3]
                neighbours = self.graph.cooccurs[c].indices
                via += [f"{self.graph.labels[o]} --CO_OCCURS--> {label}" for o in neighbours
                        if o in seed_concepts][:3]
                if not via and row in seed_rows:        # its own seed passage gave it the mass
                    via = [f"seed passage {doc_id} --MENTIONS--> {label}"]
            out.append({"concept": label, "mass": round(float(given[idx]), 8),
                        "via": via + [f"{label} --MENTIONS--> {doc_id}"]})
        return out


def _local_pagerank(adjacency: sp.csr_matrix) -> LocalPageRank | None:
    """The forward push for a graph of ``PUSH_FROM_EDGES`` entries or more, when numba is
    installed; None otherwise (the power iteration walks it)."""
    from ..runtime.extras import has_extra

    if adjacency.nnz < PUSH_FROM_EDGES or not has_extra("fast", "numba"):
        return None
    return LocalPageRank(adjacency)
