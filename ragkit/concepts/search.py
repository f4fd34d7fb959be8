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
4. **Fusion** (``hybrid+graph``): ``retrieval.fusion.weighted`` with the graph as the
   second list: ``(1 − weight) · base + weight · graph``, each min-max normalised (the weight chosen on a dev split:
   docs/benchmarks.md, "Concept graph").

Every chunk the graph ranks carries its **bridge**: the concepts that gave it the most mass,
each with how the walk reached it (a question concept, or a seed passage mentioning it, or a
question concept it co-occurs with).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from .extract import concept_key
from .graph import ConceptGraph
from .ppr import personalized_pagerank, transition_matrix

_WORD_SPLIT = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


@dataclass(frozen=True)
class GraphParams:
    """The walk's settings (defaults chosen on the MuSiQue dev split, see docs/benchmarks.md)."""

    damping: float = 0.7           # dev split, Recall@5: 0.5 -> 0.633, 0.7 -> 0.673, 0.8 -> 0.663
    max_iter: int = 30
    seed_passages: int = 5
    question_share: float = 0.5
    cooccur_weight: float = 1.0
    weight: float = 0.9            # hybrid+graph: the graph's share (dev: 0.7 -> 0.612, 0.9 -> 0.663)
    bridge_concepts: int = 3       # concepts named in each chunk's trace


@dataclass
class SeedConcept:
    concept: int
    span: str
    weight: float


@dataclass
class Walk:
    """One query's PageRank mass and its seeds."""

    mass: np.ndarray
    seed_concepts: set
    seed_rows: set


class ConceptSearcher:
    """A concept graph ready for queries: the walk matrix is made once."""

    def __init__(self, graph: ConceptGraph, params: GraphParams | None = None):
        self.graph = graph
        self.params = params or GraphParams()
        m, n = len(graph.keys), len(graph.chunk_ids)
        self.m, self.n = m, n
        mentions = graph.mentions
        adjacency = sp.bmat([[self.params.cooccur_weight * graph.cooccurs, mentions.T],
                             [mentions, None]], format="csr")
        self.adjacency = adjacency
        self.walk = transition_matrix(adjacency)
        self.degree = np.asarray(adjacency.sum(axis=0)).ravel()
        counts = np.diff(mentions.indptr).astype(np.float64)
        self.chunk_norm = np.sqrt(np.maximum(counts, 1.0))
        self.idf = np.log(n / np.maximum(graph.df, 1.0)) + 1e-3

    # ------------------------------------------------------------------ seeds
    def link_question(self, question: str) -> list[SeedConcept]:
        """The question's concepts: every word n-gram whose key is a concept (or an alias of
        one), longest first, never overlapping."""
        words = [m.group(0) for m in _WORD_SPLIT.finditer(question)]
        keys = [concept_key(w) for w in words]
        taken = [False] * len(words)
        found: dict[int, SeedConcept] = {}
        for size in range(min(6, len(words)), 0, -1):
            for i in range(len(words) - size + 1):
                if any(taken[i:i + size]):
                    continue
                key = " ".join(k for k in keys[i:i + size] if k)
                concept = self.graph.concept_of(key) if key else None
                if concept is None:
                    continue
                span = words[i:i + size]
                if all(w.islower() for w in span) and self.graph.labels[concept][:1].isupper():
                    continue        # "state" in a question is not the name "State"
                for j in range(i, i + size):
                    taken[j] = True
                if concept not in found:
                    found[concept] = SeedConcept(concept, " ".join(words[i:i + size]),
                                                 float(self.idf[concept]))
        return list(found.values())

    # ------------------------------------------------------------------ ranking
    def rank(self, question: str, base: Sequence[tuple[str, float]],
             k: int = 100) -> tuple[list[tuple[str, float]], dict, "Walk | None"]:
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
        info = {"seed_concepts": [{"concept": self.graph.labels[s.concept], "span": s.span,
                                   "weight": round(s.weight, 4)} for s in seeds_q],
                "seed_passages": [self.graph.chunk_ids[r] for r in seed_rows]}
        if not restart:
            return [], info, None
        mass = personalized_pagerank(self.adjacency, restart, damping=p.damping, max_iter=p.max_iter,
                                     transition=self.walk)
        walk = Walk(mass, {s.concept for s in seeds_q}, set(seed_rows))
        concept_mass = mass[: self.m] / np.maximum(self.degree[: self.m], 1e-12)
        scores = (self.graph.mentions @ concept_mass) / self.chunk_norm
        order = np.argsort(-scores, kind="stable")[:k]
        ranked = [(self.graph.chunk_ids[i], float(scores[i])) for i in order if scores[i] > 0]
        return ranked, info, walk

    def bridge(self, walk: "Walk | None", doc_id: str) -> list[dict]:
        """Why ``walk`` brought ``doc_id`` in: its top concepts by the mass they handed it,
        each with the edges that reached it (a question link, a seed passage mentioning it, a
        question concept it co-occurs with), ending with its MENTIONS edge to the chunk."""
        if walk is None or doc_id not in self.graph.chunk_position:
            return []
        mass, seed_concepts, seed_rows = walk.mass, walk.seed_concepts, walk.seed_rows
        row = self.graph.chunk_position[doc_id]
        concepts = self.graph.concepts_of_chunk(row)
        given = mass[concepts] / np.maximum(self.degree[concepts], 1e-12)
        out = []
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

