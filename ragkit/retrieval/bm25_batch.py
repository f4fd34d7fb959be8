"""Many BM25 queries at once: ``top_k_many`` ranks a batch of tokenized queries against an
index's weight matrix and returns, per query, the same documents and scores as
``BM25Index.top_k_tokens`` (bit for bit: each document's contributions are added in the same
order).

Per query the work is its terms' postings and a best-first list of k: a query with many
postings (a quarter of the corpus or more) adds them all and then reads every document's
score in index order, as bm25s does; one with few adds them and reads only the documents it
touched, on a large corpus (``block_docs``) a block of documents at a time into slots that
stay in cache: a rare-term query on a million documents costs what its postings cost. The
loop runs compiled
by numba (``pip install 'ragkit-workbench[fast]'``) without the GIL, so ``threads`` > 1
splits a batch across cores; without numba each query runs through
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

from ..errors import InputError
from ..runtime.extras import has_extra, requires_extra
from ..runtime.threads import usable_cores

if TYPE_CHECKING:
    from .bm25 import BM25Index

Ranked = tuple[np.ndarray, np.ndarray]   # document indices and scores, best first


def _compile() -> Callable | None:
    """The compiled kernel, or None without numba (compiled once, cached on disk: see
    ``bm25_kernel``)."""
    if not has_extra("fast", "numba"):
        return None
    from .bm25_kernel import kernel as compiled

    return compiled


_KERNEL: list = []      # [kernel or None], made on first use
# Below this many (queries × documents), a process that has not loaded the compiled loop yet
# ranks with numpy: loading it (numba's import and its cache, ~0.5 s) costs more than numpy
# takes for such a batch (~16 ns per query and document: SciFact's 300 queries × 5,183
# documents rank at 12,000 queries/s with numpy, 900 with the first compiled call). The work
# numpy has done adds up: once it reaches this, the next batch loads the compiled loop (a
# notebook that ranks many small batches pays the load once, when numpy has cost as much).
NUMPY_WORK = 30_000_000
_NUMPY_DONE = [0]


# On a corpus of more than BLOCKS_ABOVE_DOCS documents, a query with few postings adds them
# BLOCK_DOCS documents at a time into slots of the block's own (reused for every block and
# query, 208 KB with their list of those touched: they stay in a core's L2 cache) instead
# of into a slot per document (9 bytes a document), whose slots, once they outgrow the
# cache, each miss it when first touched.
# Measured with the compiled loop (bench/bm25_paths.py: outputs/bench/bm25_paths.json,
# docs/benchmarks/speed.md), blocks against a slot per document for queries of 2 to 72 words: at a
# million generated documents 2.7 to 2.9 times as fast, at 400,000 1.3 to 1.6 times, at
# 100,000 and 200,000 0.94 to 1.06 times (0.89 to 1.24 over two earlier runs: the same
# either way), on 20,000 (two blocks) about 0.8 times in a scratch run. Both ways give the
# same results to the last bit.
BLOCKS_ABOVE_DOCS = 1 << 18
BLOCK_DOCS = 1 << 14


def block_docs(n_docs: int) -> int:
    """How many documents a block holds for a query with few postings on a corpus of
    ``n_docs`` documents (0: no blocks, a slot per document)."""
    return BLOCK_DOCS if n_docs > BLOCKS_ABOVE_DOCS else 0


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

    ``threads``: split the batch across this many threads (compiled loop only; at most the
    cores this process may use).
    ``compiled``: False forces the numpy path, True requires numba; None uses numba when it
    is installed, unless the compiled loop is not loaded yet in this process and the batch,
    with the numpy work done so far, is small (``NUMPY_WORK``)."""
    if k < 1:
        raise InputError(f"k: must be at least 1, got {k}")
    if threads < 1:
        raise InputError(f"threads: must be at least 1, got {threads}")
    threads = min(threads, usable_cores())      # never more threads than cores
    work = len(queries) * index.weights.shape[0]
    small = compiled is None and not _KERNEL and _NUMPY_DONE[0] + work < NUMPY_WORK
    if small:
        _NUMPY_DONE[0] += work
    run = kernel() if compiled is not False and not small else None
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
    known = tokens[tokens >= 0]
    for term in np.unique(known[~index.checked_terms[known]]).tolist():   # the loop reads postings unchecked
        index.check_postings(term)
    offsets = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in queries], out=offsets[1:])
    out_idx = np.empty((len(queries), k_eff), dtype=np.int64)
    out_score = np.empty((len(queries), k_eff), dtype=np.float64)
    out_n = np.zeros(len(queries), dtype=np.int64)

    def rank(lo: int, hi: int) -> None:
        """Queries lo..hi-1 (their offsets keep pointing into the whole batch's tokens)."""
        with _workspace(index, n_docs) as (scores, seen, touched):
            run(weights.indptr, weights.indices, weights.data, positive, block_docs(n_docs), tokens,
                offsets[lo:hi + 1], k_eff,
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
