"""A BM25 index split by documents into shards held by Ray actors, for queries.

Each shard holds its documents' rows of the index's weights. A weight already carries the
whole corpus's statistics (the term's IDF over every document, the average length), so a
document's score in its shard is the score the whole index gives it, to the last bit: its
contributions are added in the query's term order in both. Each shard returns its own top k
ranked by (score, document); the driver merges them the same way, so the merged top k is the
single index's, ties included.

    with RayEngine("127.0.0.1:6379") as engine:
        shards = ShardedBM25(load_index("outputs/index/manuals"), shards=4)
        shards.search_many(["..."], k=10)       # the hits BM25Index.search_many gives

The driver reads the index to split it and keeps the documents; the shards hold the
postings and do the scoring.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..runtime.extras import requires_extra
from .bm25 import BM25Index, Hit, per_query
from .scoring import matched_scores, top_k


Ranked = tuple[np.ndarray, np.ndarray, np.ndarray]     # documents, scores, BM25 scores (best first)


class BM25Shard:
    """Documents ``start`` .. ``start + rows`` of an index: their weights (documents by terms,
    the term's postings in a column) and their structural boosts."""

    def __init__(self, vocab: dict[str, int], weights: sp.csc_matrix, boost: np.ndarray, start: int) -> None:
        self.vocab, self.weights, self.boost, self.start = vocab, weights, boost, start

    def _scores(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        counts = Counter(self.vocab[t] for t in tokens if t in self.vocab)
        indptr, indices, data = self.weights.indptr, self.weights.indices, self.weights.data
        idx_parts, w_parts = [np.empty(0, dtype=np.int32)], [np.empty(0)]
        for term, times in counts.items():
            lo, hi = indptr[term], indptr[term + 1]
            idx_parts.append(indices[lo:hi])
            w_parts.append(data[lo:hi] * times if times > 1 else data[lo:hi])
        return matched_scores(np.concatenate(idx_parts), np.concatenate(w_parts), self.weights.shape[0])

    def top_k(self, queries: Sequence[tuple[Sequence[str], bool]], k: int) -> list[Ranked]:
        """For each (tokens, boosted) query: the shard's best ``k`` documents (numbered in the
        whole index), their scores (with the boost when asked) and their BM25 scores."""
        out: list[Ranked] = []
        for tokens, boosted in queries:
            matched, bm25 = self._scores(tokens)
            extra = self.boost[matched] if boosted else np.zeros(matched.size)
            at, scores = top_k(np.arange(matched.size), bm25 + extra, k)
            out.append((matched[at] + self.start, scores, bm25[at]))
        return out


def split(index: BM25Index, shards: int) -> list[BM25Shard]:
    """``index`` as ``shards`` shards of consecutive documents (fewer for a smaller index)."""
    if shards < 1:
        raise InputError(f"--shards: must be at least 1, got {shards}")
    bounds = np.linspace(0, len(index), min(shards, len(index)) + 1).astype(int)
    weights = index.weights.tocsr()
    return [BM25Shard(index.vocab, weights[lo:hi].tocsc(), index.boost[lo:hi], int(lo))
            for lo, hi in zip(bounds[:-1], bounds[1:])]


def merged_top_k(per_shard: Sequence[Ranked], k: int) -> Ranked:
    """The shards' top ``k`` of one query as the whole index's: by score, ties by document."""
    docs = np.concatenate([part[0] for part in per_shard])
    order, best = top_k(np.arange(docs.size), np.concatenate([part[1] for part in per_shard]), k)
    return docs[order], best, np.concatenate([part[2] for part in per_shard])[order]


class ShardedBM25:
    """``index`` split into ``shards`` parts of consecutive documents, each a ``BM25Shard``
    on an actor of the Ray cluster this process is connected to (a ``RayEngine``)."""

    def __init__(self, index: BM25Index, shards: int) -> None:
        with requires_extra("ray"):
            import ray
        self.index = index
        parts = split(index, shards)
        vocab = ray.put(index.vocab)             # one copy in the object store for every shard
        actor = ray.remote(num_cpus=0)(BM25Shard)
        self.actors: list[Any] = [actor.remote(vocab, part.weights, part.boost, part.start) for part in parts]

    def top_k_many(self, queries: Sequence[tuple[Sequence[str], bool]], k: int) -> list[Ranked]:
        """Every shard's top ``k`` of each query, merged: (documents, scores, BM25 scores)."""
        import ray

        parts = ray.get([shard.top_k.remote(list(queries), k) for shard in self.actors])
        return [merged_top_k(per_shard, k) for per_shard in zip(*parts)]

    def search_many(self, queries: Sequence[str], k: int = 10, *,
                    boost: bool | Sequence[bool] = False) -> list[list[Hit]]:
        """``BM25Index.search_many`` of every query (``boost``: one for all or one each),
        scored on the shards."""
        if k < 1:
            raise InputError(f"k: must be at least 1, got {k}")
        boosted = per_query(boost, len(queries))
        ranked = self.top_k_many([(self.index.tokenizer(q), b) for q, b in zip(queries, boosted)], k)
        out = []
        for (docs, scores, bm25), b in zip(ranked, boosted):
            hits = []
            for i, score, plain in zip(docs.tolist(), scores.tolist(), bm25.tolist()):
                d = self.index.docs[i]
                hits.append(Hit(index=i, doc_id=d.doc_id, score=float(score), bm25=float(plain),
                                boost=float(self.index.boost[i]) if b else 0.0, text=d.text, title=d.title,
                                source=d.source))
            out.append(hits)
        return out
