"""Lexical retrieval: BM25 with a precomputed sparse index, structural boosting, MMR."""

from .bm25 import BM25Index, BM25Params, Hit
from .mmr import jaccard_matrix, mmr_select, scale_relevance

__all__ = ["BM25Index", "BM25Params", "Hit", "jaccard_matrix", "mmr_select", "scale_relevance"]
