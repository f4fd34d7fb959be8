"""The compiled BM25 batch loop (numba), in a module of its own so that numba's on-disk cache
finds it again in the next process: a kernel defined inside a function is a closure, whose
cache key changes with every process, so it was compiled on every run (3 s on this machine,
12 s of a 19 s SciFact evaluation). Imported only when numba is installed; the cache is
numba's, in ``__pycache__`` beside this file (or numba's own user folder when that one is not
writable). ``bm25_batch.top_k_many`` calls it."""

from __future__ import annotations

import numpy as np

from ..runtime.extras import requires_extra

with requires_extra("fast"):
    from numba import njit


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
def rank_dense(indptr, indices, data, positive, terms, times, n_terms, k, scores, seen, top_s, top_i):
    """A query with many postings: add them all into a slot per document, then read every
    document's score in index order; a tie with the list's last never enters (the earlier
    document wins it). The size of the best-first list."""
    for j in range(n_terms):
        term, times_j = terms[j], times[j]
        lo, hi = indptr[term], indptr[term + 1]
        if times_j > 1:
            for p in range(lo, hi):
                scores[indices[p]] += data[p] * times_j
        else:
            for p in range(lo, hi):
                scores[indices[p]] += data[p]
        if not positive:
            for p in range(lo, hi):
                seen[indices[p]] = True
    size = 0
    last = 0.0 if positive else -np.inf
    for d in range(scores.size):
        s = scores[d]
        if s > last and (positive or seen[d]):
            size = insert(top_s, top_i, size, k, s, d)
            if size == k:
                last = top_s[k - 1]
    scores[:] = 0.0
    if not positive:
        seen[:] = False
    return size


@njit(cache=True, nogil=True)
def rank_few(indptr, indices, data, terms, times, n_terms, k, scores, seen, touched, top_s, top_i):
    """A query with few postings: add them into their documents' slots, keeping the list of
    the documents touched, and read only those. The size of the best-first list."""
    n_touched = 0
    for j in range(n_terms):
        term, times_j = terms[j], times[j]
        for p in range(indptr[term], indptr[term + 1]):
            d = indices[p]
            if not seen[d]:
                seen[d] = True
                touched[n_touched] = d
                n_touched += 1
            scores[d] += data[p] * times_j if times_j > 1 else data[p]
    size = 0
    for u in range(n_touched):
        d = touched[u]
        if size < k or worse(top_s[k - 1], top_i[k - 1], scores[d], d):
            size = insert(top_s, top_i, size, k, scores[d], d)
        scores[d] = 0.0
        seen[d] = False
    return size


@njit(cache=True, nogil=True, inline="always")
def sift_down(heap_doc, heap_term, i, m):
    """Move entry i of the heap of m (document, term place) pairs down to its place: the
    smallest document first, and of one document the earliest term."""
    doc, term = heap_doc[i], heap_term[i]
    while True:
        c = 2 * i + 1
        if c >= m:
            break
        if c + 1 < m and (heap_doc[c + 1] < heap_doc[c]
                          or (heap_doc[c + 1] == heap_doc[c] and heap_term[c + 1] < heap_term[c])):
            c += 1
        if heap_doc[c] > doc or (heap_doc[c] == doc and heap_term[c] > term):
            break
        heap_doc[i], heap_term[i] = heap_doc[c], heap_term[c]
        i = c
    heap_doc[i], heap_term[i] = doc, term


@njit(cache=True, nogil=True)
def rank_merged(indptr, indices, data, terms, times, n_terms, k, heads, heap_doc, heap_term, top_s, top_i):
    """A query with few postings and few terms on a large corpus: each term's postings are in
    document order, so merge them through a heap of the terms keyed by (next document,
    term's place), a document at a time; its weights come out, and are added, in term order.
    No slot per document (whose first touch misses the cache on a large corpus), only
    sequential reads, log(terms) per posting. The size of the best-first list."""
    m = 0
    for j in range(n_terms):
        lo = indptr[terms[j]]
        if lo < indptr[terms[j] + 1]:
            heads[j] = lo
            heap_doc[m], heap_term[m] = indices[lo], j
            m += 1
    for i in range(m // 2 - 1, -1, -1):
        sift_down(heap_doc, heap_term, i, m)
    size = 0
    while m > 0:
        d = heap_doc[0]
        s = 0.0
        while m > 0 and heap_doc[0] == d:
            j = heap_term[0]
            p = heads[j]
            s += data[p] * times[j] if times[j] > 1 else data[p]
            p += 1
            heads[j] = p
            if p < indptr[terms[j] + 1]:
                heap_doc[0] = indices[p]
            else:
                m -= 1
                heap_doc[0], heap_term[0] = heap_doc[m], heap_term[m]
            sift_down(heap_doc, heap_term, 0, m)
        if size < k or worse(top_s[k - 1], top_i[k - 1], s, d):
            size = insert(top_s, top_i, size, k, s, d)
    return size


@njit(cache=True, nogil=True)
def kernel(indptr, indices, data, positive, merge_terms, tokens, offsets, k, scores, seen, touched,
           out_idx, out_score, out_n):
    """Rank each query q (its term ids: tokens[offsets[q]:offsets[q + 1]], -1 for a term
    not in the vocabulary) into row q of the outputs. ``positive``: every weight is above
    zero, so a document shares a query term exactly when its score is above zero.
    ``merge_terms``: a query with few postings and at most this many distinct terms merges
    them rather than adding them into its slots (``bm25_batch.merge_terms``). ``scores``
    (zeros), ``seen`` (False) and ``touched``, one slot per document, are the caller's and
    are left as they came."""
    n_docs = scores.size
    terms = np.empty(tokens.size, np.int64)
    times = np.empty(tokens.size, np.float64)
    heads = np.empty(tokens.size, np.int64)
    heap_doc = np.empty(tokens.size, indices.dtype)
    heap_term = np.empty(tokens.size, np.int64)
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
        if postings * 4 >= n_docs:
            size = rank_dense(indptr, indices, data, positive, terms, times, n_terms, k, scores, seen,
                              top_s, top_i)
        elif n_terms <= merge_terms:
            size = rank_merged(indptr, indices, data, terms, times, n_terms, k, heads, heap_doc, heap_term,
                               top_s, top_i)
        else:
            size = rank_few(indptr, indices, data, terms, times, n_terms, k, scores, seen, touched, top_s, top_i)
        out_n[q] = size
        out_score[q, :size] = top_s[:size]
        out_idx[q, :size] = top_i[:size]
