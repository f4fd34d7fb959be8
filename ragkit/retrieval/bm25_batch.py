"""Many BM25 queries at once: ``top_k_many`` ranks a batch of tokenized queries against an
index's weight matrix and returns, per query, the same documents and scores as
``BM25Index.top_k_tokens`` (bit for bit: each document's contributions are added in the same
order).

Per query the work is its terms' postings and a best-first list of k: a query with many
postings (a quarter of the corpus or more) adds them all and then reads every document's
score in index order, as bm25s does; one with few keeps the list of the documents it touched
and reads only those, so a rare-term query on a million documents costs what its postings
cost. The loop runs compiled by numba (``pip install 'ragkit-workbench[fast]'``) without the GIL, so
``threads`` > 1 splits a batch across cores; without numba each query runs through
``top_k_tokens`` (numpy), with the same results. ``bench/bm25.py`` times it against bm25s.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from itertools import chain
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import numpy as np

from ..errors import InputError, MissingExtraError
from ..runtime.extras import requires_extra

if TYPE_CHECKING:
    from .bm25 import BM25Index

Ranked = tuple[np.ndarray, np.ndarray]   # document indices and scores, best first


def _compile() -> Callable | None:
    """The compiled kernel, or None without numba (compiled once, cached on disk)."""
    try:
        with requires_extra("fast"):
            from numba import njit
    except MissingExtraError:
        return None

    @njit(cache=True, nogil=True, inline="always")
    def worse(s1, d1, s2, d2):
        """(s1, d1) ranks below (s2, d2): a lower score, or the same score and a later document."""
        return s1 < s2 or (s1 == s2 and d1 > d2)

    @njit(cache=True, nogil=True, inline="always")
    def insert(top_s, top_i, size, k, s, d):
        """Put (s, d) into the best-first list ``top`` of at most k, dropping the last when
        full; the new size."""
        pos = size if size < k else k - 1
        while pos > 0 and worse(top_s[pos - 1], top_i[pos - 1], s, d):
            top_s[pos], top_i[pos] = top_s[pos - 1], top_i[pos - 1]
            pos -= 1
        top_s[pos], top_i[pos] = s, d
        return size + 1 if size < k else k

    @njit(cache=True, nogil=True)
    def kernel(indptr, indices, data, positive, tokens, offsets, k, scores, seen, touched,
               out_idx, out_score, out_n):
        """Rank each query q (its term ids: tokens[offsets[q]:offsets[q + 1]], -1 for a term
        not in the vocabulary) into row q of the outputs. ``positive``: every weight is above
        zero, so a document shares a query term exactly when its score is above zero.
        ``scores`` (zeros), ``seen`` (False) and ``touched``, one slot per document, are the
        caller's and are left as they came."""
        n_docs = scores.size
        terms = np.empty(tokens.size, np.int64)
        times = np.empty(tokens.size, np.float64)
        top_s = np.empty(k, np.float64)
        top_i = np.empty(k, np.int64)
        for q in range(offsets.size - 1):
            # the distinct terms in first-seen order, each with its count: the order
            # top_k_tokens adds them in, so every sum is the same to the last bit
            n_terms = 0
            postings = 0
            for j in range(offsets[q], offsets[q + 1]):
                t = tokens[j]
                if t < 0:
                    continue
                first = True
                for i in range(n_terms):
                    if terms[i] == t:
                        times[i] += 1.0
                        first = False
                        break
                if first:
                    terms[n_terms], times[n_terms] = t, 1.0
                    n_terms += 1
                    postings += indptr[t + 1] - indptr[t]
            # Many postings: add them, then scan every document in index order. Few: keep a
            # list of the documents touched and look only at those.
            dense = postings * 4 >= n_docs
            n_touched = 0
            for j in range(n_terms):
                term, times_j = terms[j], times[j]
                lo, hi = indptr[term], indptr[term + 1]
                if dense:
                    if times_j > 1:
                        for p in range(lo, hi):
                            scores[indices[p]] += data[p] * times_j
                    else:
                        for p in range(lo, hi):
                            scores[indices[p]] += data[p]
                    if not positive:
                        for p in range(lo, hi):
                            seen[indices[p]] = True
                    continue
                for p in range(lo, hi):
                    d = indices[p]
                    if not seen[d]:
                        seen[d] = True
                        touched[n_touched] = d
                        n_touched += 1
                    scores[d] += data[p] * times_j if times_j > 1 else data[p]
            size = 0
            if dense:
                # in index order, a tie with the list's last never enters: the earlier
                # document wins it
                last = 0.0 if positive else -np.inf
                for d in range(n_docs):
                    s = scores[d]
                    if s > last and (positive or seen[d]):
                        size = insert(top_s, top_i, size, k, s, d)
                        if size == k:
                            last = top_s[k - 1]
                scores[:] = 0.0
                if not positive:
                    seen[:] = False
            else:
                for u in range(n_touched):
                    d = touched[u]
                    if size < k or worse(top_s[k - 1], top_i[k - 1], scores[d], d):
                        size = insert(top_s, top_i, size, k, scores[d], d)
                    scores[d] = 0.0
                    seen[d] = False
            out_n[q] = size
            out_score[q, :size] = top_s[:size]
            out_idx[q, :size] = top_i[:size]

    return kernel


_KERNEL: list = []      # [kernel or None], made on first use


_POOL_LOCK = threading.Lock()


@contextmanager
def _workspace(index: "BM25Index", n_docs: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per-document scratch arrays for one run of the loop (which leaves them as it found
    them), kept with the index: a batch over a million documents does not allocate and
    clear 13 MB each time. One per thread at a time."""
    with _POOL_LOCK:
        space = index._scratch.pop() if index._scratch else None
    if space is None:
        space = (np.zeros(n_docs, np.float64), np.zeros(n_docs, np.bool_), np.empty(n_docs, np.int32))
    try:
        yield space
    finally:
        with _POOL_LOCK:
            index._scratch.append(space)


_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}


def _pool(workers: int) -> ThreadPoolExecutor:
    """A pool of ``workers`` threads, made once per process (a forked child has none of its
    parent's threads): starting threads for each batch costs more than a batch of a few
    hundred queries takes on one."""
    key = (os.getpid(), workers)
    with _POOL_LOCK:
        if key not in _POOLS:
            _POOLS[key] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragkit-bm25")
        return _POOLS[key]


def kernel() -> Callable | None:
    """numba's compiled loop, or None when numba is not installed."""
    if not _KERNEL:
        _KERNEL.append(_compile())
    return _KERNEL[0]


def top_k_many(index: "BM25Index", queries: Sequence[Sequence[str]], k: int, *,
               threads: int = 1, compiled: bool | None = None) -> list[Ranked]:
    """For each tokenized query, the indices and scores of its ``k`` best documents (only
    documents sharing a term), best first, ties to the earlier document: what
    ``index.top_k_tokens(query, k)`` returns, for the whole batch.

    ``threads``: split the batch across this many threads (compiled loop only).
    ``compiled``: False forces the numpy path, True requires numba; None uses numba when it
    is installed."""
    if k < 1:
        raise InputError(f"k: must be at least 1, got {k}")
    if threads < 1:
        raise InputError(f"threads: must be at least 1, got {threads}")
    run = kernel() if compiled is not False else None
    if compiled and run is None:
        with requires_extra("fast"):
            import numba  # noqa: F401  (raises the one-line missing-extra error)
    if run is None or not queries:
        return [index.top_k_tokens(tokens, k) for tokens in queries]
    weights = index.weights
    n_docs = weights.shape[0]
    k_eff = min(k, n_docs)
    positive = index.positive_weights

    get = index.vocab.get
    tokens = np.array([get(t, -1) for t in chain.from_iterable(queries)], dtype=np.int64)
    offsets = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in queries], out=offsets[1:])
    out_idx = np.empty((len(queries), k_eff), dtype=np.int64)
    out_score = np.empty((len(queries), k_eff), dtype=np.float64)
    out_n = np.zeros(len(queries), dtype=np.int64)

    def rank(lo: int, hi: int) -> None:
        """Queries lo..hi-1 (their offsets keep pointing into the whole batch's tokens)."""
        with _workspace(index, n_docs) as (scores, seen, touched):
            run(weights.indptr, weights.indices, weights.data, positive, tokens, offsets[lo:hi + 1], k_eff,
                scores, seen, touched, out_idx[lo:hi], out_score[lo:hi], out_n[lo:hi])

    if threads == 1 or len(queries) < 2 * threads:
        rank(0, len(queries))
    else:       # the first part in this thread, the others on a pool kept for the next batch
        size = -(-len(queries) // threads)
        others = [_pool(threads - 1).submit(rank, lo, min(lo + size, len(queries)))
                  for lo in range(size, len(queries), size)]
        rank(0, size)
        for part in others:
            part.result()
    if (out_n == k_eff).all():
        return list(zip(out_idx, out_score))
    return [(out_idx[q, :n], out_score[q, :n]) for q, n in enumerate(out_n.tolist())]
