"""BM25 term weights as small pure functions.

    BM25(D, Q) = sum over q in Q of IDF(q) * f(q, D) * (k1 + 1) / (f(q, D) + k1 * norm(D))
    norm(D)    = 1 - b + b * |D| / avgdl

Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond" (2009).
The IDF variants differ only for very common terms; pick one by name with ``select_idf``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

ROBERTSON_EPSILON = 1e-12
OKAPI_EPSILON = 0.25


def idf_robertson(df: np.ndarray, n_docs: int, epsilon: float = ROBERTSON_EPSILON) -> np.ndarray:
    """The default IDF: ``log((N - df + 0.5) / (df + 0.5) + ε)`` with ε = 1e-12.

    Negative for terms in more than half of the documents, as in Robertson's original.
    """
    df = np.asarray(df, dtype=np.float64)
    return np.log((n_docs - df + 0.5) / (df + 0.5) + epsilon)


def idf_okapi(df: np.ndarray, n_docs: int, epsilon: float = OKAPI_EPSILON) -> np.ndarray:
    """rank-bm25's ``BM25Okapi`` IDF: ``log((N - df + 0.5) / (df + 0.5))``, where negative
    values are replaced by ``ε × mean(IDF)`` (ε = 0.25) so common terms still count a little.
    """
    df = np.asarray(df, dtype=np.float64)
    idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    floor = epsilon * idf.mean() if idf.size else 0.0
    return np.where(idf < 0, floor, idf)


def idf_lucene(df: np.ndarray, n_docs: int) -> np.ndarray:
    """Lucene's IDF (bm25s' default): ``log(1 + (N - df + 0.5) / (df + 0.5))``, never negative."""
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


IDF_VARIANTS: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "robertson": idf_robertson,
    "okapi": idf_okapi,
    "lucene": idf_lucene,
}


def select_idf(name: str) -> Callable[[np.ndarray, int], np.ndarray]:
    """The IDF function called ``name`` (robertson, okapi or lucene)."""
    try:
        return IDF_VARIANTS[name]
    except KeyError:
        raise ValueError(f"idf: unknown variant {name!r}; choose one of {sorted(IDF_VARIANTS)}") from None


def tf_saturation(tf: np.ndarray, doc_len: np.ndarray, avgdl: float,
                  k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """The saturated, length-normalized term frequency ``tf (k1+1) / (tf + k1 norm)``."""
    tf = np.asarray(tf, dtype=np.float64)
    norm = 1.0 - b + b * np.asarray(doc_len, dtype=np.float64) / avgdl
    return tf * (k1 + 1.0) / (tf + k1 * norm)
