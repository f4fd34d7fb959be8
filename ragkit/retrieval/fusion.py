"""Fusing ranked lists from BM25 and dense retrieval: reciprocal rank fusion, or a
weighted sum of min-max normalized scores."""

from __future__ import annotations

from typing import Hashable, Sequence, TypeVar

from ..config import FUSIONS
from ..errors import InputError

K = TypeVar("K", bound=Hashable)     # what is ranked: a doc id, a position


def rrf(rankings: Sequence[Sequence[K]], k: int = 60) -> list[tuple[K, float]]:
    """Reciprocal rank fusion (Cormack et al., 2009): score(d) = Σ 1 / (k + rank of d),
    ranks from 1; ties broken by first appearance."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, 1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
    order = {d: i for i, d in enumerate(dict.fromkeys(d for r in rankings for d in r))}
    return sorted(scores.items(), key=lambda x: (-x[1], order[x[0]]))


def _minmax(scored: Sequence[tuple[str, float]]) -> dict[str, float]:
    if not scored:
        return {}
    values = [s for _, s in scored]
    low, high = min(values), max(values)
    if high == low:
        return {d: 1.0 for d, _ in scored}
    return {d: (s - low) / (high - low) for d, s in scored}


def weighted(lexical: Sequence[tuple[str, float]], dense: Sequence[tuple[str, float]],
             alpha: float = 0.5) -> list[tuple[str, float]]:
    """alpha · dense + (1 − alpha) · BM25, each min-max normalized over its own list; a
    document missing from one list gets 0 from it."""
    if not 0.0 <= alpha <= 1.0:
        raise InputError(f"alpha: must be in [0, 1], got {alpha}")
    lex, den = _minmax(lexical), _minmax(dense)
    order = {d: i for i, d in enumerate(dict.fromkeys([d for d, _ in lexical] + [d for d, _ in dense]))}
    fused = {d: alpha * den.get(d, 0.0) + (1 - alpha) * lex.get(d, 0.0) for d in order}
    return sorted(fused.items(), key=lambda x: (-x[1], order[x[0]]))


def fuse(lexical: Sequence[tuple[str, float]], dense: Sequence[tuple[str, float]], method: str = "rrf",
         alpha: float = 0.5, rrf_k: int = 60) -> list[tuple[str, float]]:
    if method == "rrf":
        return rrf([[d for d, _ in lexical], [d for d, _ in dense]], rrf_k)
    if method == "weighted":
        return weighted(lexical, dense, alpha)
    raise InputError(f"--fusion: must be one of {', '.join(FUSIONS)}, got {method!r}")
