"""Maximal Marginal Relevance with Jaccard similarity, or cosine
similarity when the candidates have dense vectors.

    MMR = argmax over candidates i of  λ · rel(i) − (1 − λ) · max over selected j of sim(i, j)

Carbonell & Goldstein, "The Use of MMR, Diversity-Based Reranking" (SIGIR 1998). Similarity
is Jaccard over token sets, ``|A ∩ B| / |A ∪ B|``. BM25 scores are min-max scaled to [0, 1]
over the candidate pool first, so that λ weighs two quantities on the same scale.

The pairwise similarity matrix is computed once from a sparse incidence matrix (one
product), and the greedy loop keeps a running "max similarity to the selection" vector, so
selecting k of c candidates costs O(c²) for the matrix plus O(k·c) for the loop.

    >>> import numpy as np
    >>> sim = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
    >>> mmr_select(np.array([1.0, 0.95, 0.5]), sim, k=2, lam=0.65)
    [0, 2]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..config import LexicalConfig

DEFAULT_LAMBDA = LexicalConfig.mmr_lambda
DEFAULT_CANDIDATES = LexicalConfig.candidates


def jaccard_matrix(incidence: sp.spmatrix | np.ndarray) -> np.ndarray:
    """Pairwise Jaccard similarity of the rows of a binary (documents × terms) matrix.

    Two empty rows have similarity 0 (they share nothing to be redundant about).
    """
    m = sp.csr_matrix(incidence, dtype=np.float64)
    m.data = np.ones_like(m.data)
    inter = (m @ m.T).toarray()
    sizes = np.asarray(m.sum(axis=1)).ravel()
    union = sizes[:, None] + sizes[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def jaccard_sets(token_lists: Sequence[Sequence[str]]) -> np.ndarray:
    """Jaccard matrix for token lists (built through a small incidence matrix)."""
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, toks in enumerate(token_lists):
        for t in set(toks):
            rows.append(i)
            cols.append(vocab.setdefault(t, len(vocab)))
    m = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(token_lists), max(len(vocab), 1)))
    return jaccard_matrix(m)


def scale_relevance(scores: np.ndarray) -> np.ndarray:
    """Min-max scale to [0, 1]; equal scores all become 1."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    lo, hi = scores.min(), scores.max()
    if hi - lo <= 0:
        return np.ones_like(scores)
    return (scores - lo) / (hi - lo)


def mmr_select(relevance: np.ndarray, similarity: np.ndarray, k: int,
               lam: float = DEFAULT_LAMBDA) -> list[int]:
    """Greedy MMR: positions (into ``relevance``) of up to ``k`` picks, in pick order.

    relevance: scores in [0, 1] (see ``scale_relevance``), best first or in any order.
    similarity: the candidates' pairwise similarity, shape (c, c).
    Ties go to the earlier candidate.
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda: must be in [0, 1], got {lam}")
    relevance = np.asarray(relevance, dtype=np.float64)
    c = relevance.size
    if c == 0 or k <= 0:
        return []
    selected: list[int] = []
    available = np.ones(c, dtype=bool)
    max_sim = np.zeros(c)
    for _ in range(min(k, c)):
        gain = lam * relevance - (1.0 - lam) * max_sim
        gain[~available] = -np.inf
        best = int(np.argmax(gain))  # first maximum: ties to the earlier candidate
        selected.append(best)
        available[best] = False
        np.maximum(max_sim, similarity[best], out=max_sim)
    return selected


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarity of the rows of ``vectors`` (a zero row is similar to none)."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1)
    v = v / np.where(norms > 0, norms, 1.0)[:, None]
    return v @ v.T


def mmr_rerank(index, hits: Sequence, k: int, lam: float = DEFAULT_LAMBDA,
               vectors: np.ndarray | None = None) -> list:
    """Pick ``k`` of a ``BM25Index``'s ``hits`` by MMR: over their dense ``vectors`` (one row
    per hit) by cosine when given, else over their indexed term sets by Jaccard."""
    if len(hits) <= 1:
        return list(hits)[:k]
    similarity = (cosine_matrix(vectors) if vectors is not None
                  else jaccard_matrix(index.term_sets([h.index for h in hits])))
    relevance = scale_relevance(np.array([h.score for h in hits]))
    return [hits[i] for i in mmr_select(relevance, similarity, k, lam)]
