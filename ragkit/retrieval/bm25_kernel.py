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
    """A query with few postings on a corpus whose slots fit in cache: add them into their
    documents' slots, keeping the list of the documents touched, and read only those. The
    size of the best-first list. ``rank_blocked`` with the corpus's slots as one block gives
    the same, but its bound check per posting made it 0.8 times as fast on 100,000 documents
    (SciFact: the same), so this way keeps a loop of its own."""
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


@njit(cache=True, nogil=True)
def rank_blocked(indptr, indices, data, terms, times, n_terms, k, n_docs, local, local_seen, local_touched, heads,
                 top_s, top_i):
    """A query with few postings, a block of documents at a time (``local.size``): each term's
    postings are in document order, so each block takes the next run of every term's postings
    in term order (a document's sum is added in the same order as without blocks) into slots
    of the block's own, reused for every block and query, so they stay in a core's cache
    however large the corpus: on a million documents each touched slot of one per document
    missed the cache once per query. The size of the best-first list."""
    block = local.size
    for j in range(n_terms):
        heads[j] = indptr[terms[j]]
    size = 0
    for start in range(0, n_docs, block):
        end = start + block
        n_touched = 0
        for j in range(n_terms):
            times_j = times[j]
            p, hi = heads[j], indptr[terms[j] + 1]
            while p < hi and indices[p] < end:
                u = indices[p] - start
                if not local_seen[u]:
                    local_seen[u] = True
                    local_touched[n_touched] = u
                    n_touched += 1
                local[u] += data[p] * times_j if times_j > 1 else data[p]
                p += 1
            heads[j] = p
        for i in range(n_touched):
            u = local_touched[i]
            if size < k or worse(top_s[k - 1], top_i[k - 1], local[u], start + u):
                size = insert(top_s, top_i, size, k, local[u], start + u)
            local[u] = 0.0
            local_seen[u] = False
    return size


@njit(cache=True, nogil=True)
def kernel(indptr, indices, data, positive, block, tokens, offsets, k, scores, seen, touched,
           out_idx, out_score, out_n):
    """Rank each query q (its term ids: tokens[offsets[q]:offsets[q + 1]], -1 for a term
    not in the vocabulary) into row q of the outputs. ``positive``: every weight is above
    zero, so a document shares a query term exactly when its score is above zero.
    ``block``: above zero, a query with few postings adds them this many documents at a time
    into slots of the block's own (``bm25_batch.block_docs``), else into ``scores``.
    ``scores`` (zeros), ``seen`` (False) and ``touched``, one slot per document, are the
    caller's and are left as they came."""
    n_docs = scores.size
    terms = np.empty(tokens.size, np.int64)
    times = np.empty(tokens.size, np.float64)
    heads = np.empty(tokens.size, np.int64)
    top_s = np.empty(k, np.float64)
    top_i = np.empty(k, np.int64)
    local = np.zeros(max(1, min(block, n_docs)), np.float64)
    local_seen = np.zeros(local.size, np.bool_)
    local_touched = np.empty(local.size, np.int32)
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
        elif block:
            size = rank_blocked(indptr, indices, data, terms, times, n_terms, k, n_docs, local, local_seen,
                                local_touched, heads, top_s, top_i)
        else:
            size = rank_few(indptr, indices, data, terms, times, n_terms, k, scores, seen, touched, top_s, top_i)
        out_n[q] = size
        out_score[q, :size] = top_s[:size]
        out_idx[q, :size] = top_i[:size]
