"""BM25 split into shards of consecutive documents (``retrieval.bm25_shards``), without a
cluster: every shard's top k merged is the whole index's top k, scores to the last bit and
ties by document. On a Ray cluster: tests/test_ray_build.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragkit.corpus import read_corpus
from ragkit.errors import InputError
from ragkit.retrieval.bm25 import BM25Index
from ragkit.retrieval.bm25_shards import merged_top_k, split
from ragkit.text import tokenizer_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def index() -> BM25Index:
    docs = read_corpus(ROOT / "data" / "handbook").docs
    # Copies at the end score as their originals do: ties across shards.
    copies = [replace(d, doc_id=f"copy-{d.doc_id}") for d in docs[:12]]
    return BM25Index.build(docs + copies, tokenizer_for("en"))


def _queries(index: BM25Index) -> list[list[str]]:
    """Token lists drawn from the index's own vocabulary (one to five terms, some repeated)."""
    rng = np.random.default_rng(7)
    vocab = sorted(index.vocab)
    return [list(rng.choice(vocab, size=int(rng.integers(1, 6)))) for _ in range(200)]


@pytest.mark.parametrize("shards", [1, 2, 3, 7, 500])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_the_shards_top_k_merged_is_the_index_top_k(index, shards, k):
    parts = split(index, shards)
    assert sum(p.weights.shape[0] for p in parts) == len(index) and len(parts) == min(shards, len(index))
    ties = 0
    for tokens in _queries(index):
        docs, scores, bm25 = merged_top_k([p.top_k([(tokens, False)], k)[0] for p in parts], k)
        want_docs, want_scores = index.top_k_tokens(tokens, k)
        assert docs.tolist() == want_docs.tolist()
        assert scores.tobytes() == want_scores.tobytes() and bm25.tobytes() == want_scores.tobytes()
        ranked = index.top_k_tokens(tokens, k + 1)[1]     # one more: a tie at the cut counts
        ties += int(np.any(ranked[1:] == ranked[:-1]))
    assert ties > 10          # the copies made ties, and they broke as the index breaks them


def test_a_boosted_query_ranks_on_the_shards_as_search_ranks_it(index):
    parts = split(index, 4)
    for query in ("steps to request leave", "how to report a lost laptop, step by step", "travel expenses"):
        tokens = index.tokenizer(query)
        docs, scores, bm25 = merged_top_k([p.top_k([(tokens, True)], 5)[0] for p in parts], 5)
        hits = index.search(query, 5, boost=True)
        assert docs.tolist() == [h.index for h in hits]
        assert scores.tolist() == [h.score for h in hits] and bm25.tolist() == [h.bm25 for h in hits]


def test_no_shards_is_refused(index):
    with pytest.raises(InputError, match=r"^--shards: must be at least 1, got 0$"):
        split(index, 0)
