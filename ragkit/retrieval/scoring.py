"""BM25 term weights as small pure functions, and the array work of building and ranking
with them: the weight matrix from a build's postings (``weight_matrix``), a query's summed
scores over the postings it reaches (``matched_scores``) and the k best (``top_k``), which
the whole index and its shards share.

    BM25(D, Q) = sum over q in Q of IDF(q) * f(q, D) * (k1 + 1) / (f(q, D) + k1 * norm(D))
    norm(D)    = 1 - b + b * |D| / avgdl

Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond" (2009).
The IDF variants differ only for very common terms; pick one by name with ``select_idf``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from .bm25 import BM25Params

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


def matched_scores(idx: np.ndarray, w: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """The documents among ``n_docs`` that postings ``idx`` (weights ``w``) reach, ascending,
    and their summed scores (``BM25Index._scores``; a shard of the index sums the same way)."""
    if idx.size * 8 >= n_docs:
        scores = np.bincount(idx, weights=w, minlength=n_docs)
        mask = np.zeros(n_docs, dtype=bool)
        mask[idx] = True
        matched = np.flatnonzero(mask)
        return matched, scores[matched]
    if idx.size == 0:
        return np.empty(0, dtype=np.intp), np.empty(0)
    order = np.argsort(idx, kind="stable")      # the terms' runs are sorted already: merge sort is fastest
    by_doc = idx[order]
    first = np.empty(by_doc.size, dtype=bool)
    first[0] = True
    np.not_equal(by_doc[1:], by_doc[:-1], out=first[1:])
    slot = np.empty(idx.size, dtype=np.intp)
    slot[order] = np.cumsum(first) - 1
    return by_doc[first].astype(np.intp, copy=False), np.bincount(slot, weights=w)


def weight_matrix(docs_part: list, terms_part: list, counts_part: list, doc_len: np.ndarray,
                   avgdl: float, n_terms: int, params: BM25Params) -> tuple[sp.csc_matrix, np.ndarray]:
    """The documents × terms matrix of BM25 weights (CSC, rows sorted) from the postings'
    (document, term, count) arrays of each block, and the terms' IDF. The postings are put
    in column order by one stable sort of their terms (documents stay ascending within a
    term); the weights are computed a slice at a time into the final array."""
    n_docs = doc_len.size
    rows = np.concatenate(docs_part)
    docs_part.clear()
    cols = np.concatenate(terms_part)
    terms_part.clear()
    tfs = np.concatenate(counts_part)
    counts_part.clear()
    df = np.bincount(cols, minlength=n_terms)
    idf = select_idf(params.idf)(df, n_docs)
    order = np.argsort(cols, kind="stable")
    indices = rows[order]
    del rows
    data = np.empty(order.size, dtype=np.float64)
    step = 1 << 20
    for s in range(0, order.size, step):
        part = order[s:s + step]
        data[s:s + step] = idf[cols[part]] * tf_saturation(tfs[part], doc_len[indices[s:s + step]], avgdl,
                                                           params.k1, params.b)
    del order, cols, tfs
    indptr = np.zeros(n_terms + 1, dtype=np.int64 if indices.size > np.iinfo(np.int32).max else np.int32)
    np.cumsum(df, out=indptr[1:])
    weights = sp.csc_matrix((data, indices, indptr), shape=(n_docs, n_terms), copy=False)
    weights.has_sorted_indices = True
    return weights, idf


def top_k(indices: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` highest ``scores`` (and their ``indices``), best first, ties by index."""
    if scores.size > k:
        # argpartition finds a k-th best cut-off in O(n); keep every tie at the cut so the
        # final ordering by (score, index) is the same as a full sort would give.
        cut = np.partition(scores, scores.size - k)[scores.size - k]
        keep = scores >= cut
        indices, scores = indices[keep], scores[keep]
    order = np.lexsort((indices, -scores))[:k]
    return indices[order], scores[order]
