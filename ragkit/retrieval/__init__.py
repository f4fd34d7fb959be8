"""Retrieval in one place: BM25 over a precomputed sparse index (``bm25``, ``scoring``,
structural ``boosting``), dense vectors over the same chunks (``dense``), fusion of the two
(``fusion``), the optional LLM rerank (``rerank``), MMR (``mmr``), and ``search.retrieve``,
which composes them for search, ask and eval alike."""

from .bm25 import BM25Index, BM25Params, Hit
from .mmr import jaccard_matrix, mmr_select, scale_relevance

__all__ = ["BM25Index", "BM25Params", "Hit", "jaccard_matrix", "mmr_select", "scale_relevance"]
