"""Many BM25 queries at once: ``top_k_many`` ranks a batch of tokenized queries against an
index's weight matrix and returns, per query, the same documents and scores as
``BM25Index.top_k_tokens`` (bit for bit: each document's contributions are added in the same
order).

Per query the work is the query terms' postings plus a k-sized heap over the documents they
touch; nothing is proportional to the corpus, so a batch over a million documents costs what
its postings cost. The loop runs compiled by numba (``pip install 'ragkit[fast]'``) without
the GIL, so ``threads`` > 1 splits a batch across cores; without numba the same loop runs as
``top_k_tokens`` per query (numpy), with the same results.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..errors import InputError, MissingExtraError
from ..extras import requires_extra

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
    def offer(heap_s, heap_i, size, k, s, d):
        """Keep (s, d) in the min-heap of the k best if it belongs there; the new size. The
        root is the worst kept."""
        if size < k:
            pos = size
            size += 1
            while pos > 0:
                parent = (pos - 1) // 2
                if worse(heap_s[parent], heap_i[parent], s, d):
                    break
                heap_s[pos], heap_i[pos] = heap_s[parent], heap_i[parent]
                pos = parent
            heap_s[pos], heap_i[pos] = s, d
        elif worse(heap_s[0], heap_i[0], s, d):
            sift_down(heap_s, heap_i, size, s, d)
        return size

    @njit(cache=True, nogil=True, inline="always")
    def sift_down(heap_s, heap_i, size, s, d):
        """Put (s, d) at the root and sift it down to its place."""
        pos = 0
        while True:
            child = 2 * pos + 1
            if child >= size:
                break
            right = child + 1
            if right < size and worse(heap_s[right], heap_i[right], heap_s[child], heap_i[child]):
                child = right
            if worse(s, d, heap_s[child], heap_i[child]):
                break
            heap_s[pos], heap_i[pos] = heap_s[child], heap_i[child]
            pos = child
        heap_s[pos], heap_i[pos] = s, d

    @njit(cache=True, nogil=True, inline="always")
    def insert(top_s, top_i, size, k, s, d):
        """Put (s, d) into the best-first list ``top`` (a later document after an equal
        score); the new size."""
        pos = size if size < k else k - 1
        while pos > 0 and top_s[pos - 1] < s:
            top_s[pos], top_i[pos] = top_s[pos - 1], top_i[pos - 1]
            pos -= 1
        top_s[pos], top_i[pos] = s, d
        return size + 1 if size < k else k

    @njit(cache=True, nogil=True)
    def kernel(indptr, indices, data, positive, tokens, offsets, n_docs, k, out_idx, out_score, out_n):
        # tokens: each query's term ids (-1: not in the vocabulary), repeats kept;
        # positive: every weight > 0, so a document was touched exactly when its score is > 0
        terms = np.empty(tokens.size, np.int64)
        times = np.empty(tokens.size, np.float64)
        scores = np.zeros(n_docs, np.float64)
        seen = np.zeros(n_docs, np.bool_)
        touched = np.empty(n_docs, np.int64)
        heap_s = np.empty(k, np.float64)
        heap_i = np.empty(k, np.int64)
        buffer = np.empty(64, np.int64)
        for q in range(offsets.size - 1):
            # the query's distinct terms in first-seen order, each with its count (the order
            # top_k_tokens adds them in, so the sums are the same to the last bit)
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
                    terms[n_terms] = t
                    times[n_terms] = 1.0
                    n_terms += 1
                    postings += indptr[t + 1] - indptr[t]
            # many postings: add without branching, then scan every document in order; few:
            # keep the list of the documents touched and offer only those
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
            if dense and positive:
                # documents in index order, the best kept in a best-first list: a document
                # enters the buffer when it beats the list's last (without a branch), and
                # the buffer is merged in when full. A tie with the last never enters: the
                # earlier document wins it.
                root = 0.0
                n_buffered = 0
                for d in range(n_docs + 1):
                    if d < n_docs:
                        buffer[n_buffered] = d
                        n_buffered += scores[d] > root
                        if n_buffered < buffer.size:
                            continue
                    for u in range(n_buffered):
                        c = buffer[u]
                        if size < k or scores[c] > heap_s[k - 1]:
                            size = insert(heap_s, heap_i, size, k, scores[c], c)
                    n_buffered = 0
                    root = heap_s[k - 1] if size == k else 0.0
                scores[:] = 0.0
                out_n[q] = size
                out_score[q, :size] = heap_s[:size]
                out_idx[q, :size] = heap_i[:size]
                continue
            if dense:
                # documents come in index order, so a tie with the root never displaces it
                for d in range(n_docs):
                    if size < k:
                        if seen[d]:
                            size = offer(heap_s, heap_i, size, k, scores[d], d)
                    elif scores[d] > heap_s[0] and seen[d]:
                        sift_down(heap_s, heap_i, size, scores[d], d)
                scores[:] = 0.0
                seen[:] = False
            else:
                for u in range(n_touched):
                    d = touched[u]
                    size = offer(heap_s, heap_i, size, k, scores[d], d)
                for u in range(n_touched):
                    d = touched[u]
                    scores[d] = 0.0
                    seen[d] = False
            # pop worst first into the back of the output row: best first
            out_n[q] = size
            for slot in range(size - 1, -1, -1):
                out_score[q, slot], out_idx[q, slot] = heap_s[0], heap_i[0]
                size -= 1
                if size > 0:
                    sift_down(heap_s, heap_i, size, heap_s[size], heap_i[size])

    return kernel


_KERNEL: list = []      # [kernel or None], made on first use


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

    vocab = index.vocab

    def rank(part: Sequence[Sequence[str]]) -> list[Ranked]:
        tokens = np.fromiter((vocab.get(t, -1) for q in part for t in q), dtype=np.int64)
        offsets = np.zeros(len(part) + 1, dtype=np.int64)
        np.cumsum([len(q) for q in part], out=offsets[1:])
        out_idx = np.empty((len(part), k_eff), dtype=np.int64)
        out_score = np.empty((len(part), k_eff), dtype=np.float64)
        out_n = np.zeros(len(part), dtype=np.int64)
        run(weights.indptr, weights.indices, weights.data, positive, tokens, offsets, n_docs, k_eff,
            out_idx, out_score, out_n)
        return [(out_idx[q, :n], out_score[q, :n]) for q, n in enumerate(out_n.tolist())]

    if threads == 1 or len(queries) < 2 * threads:
        return rank(queries)
    size = -(-len(queries) // threads)
    parts = [queries[i:i + size] for i in range(0, len(queries), size)]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return [ranked for part in pool.map(rank, parts) for ranked in part]
