"""ragkit as a LlamaIndex retriever: ``RagkitLlamaRetriever("outputs/index/manuals")`` in a
query engine; each node carries ragkit's citation in its metadata."""

from __future__ import annotations

from pathlib import Path

from ..config import LexicalConfig
from ..runtime.extras import requires_extra
from ..retrieval.bm25 import BM25Index
from . import RagkitSearch

with requires_extra("llamaindex"):
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode


class RagkitLlamaRetriever(BaseRetriever):
    """A LlamaIndex ``BaseRetriever`` over a ragkit index (a folder, or a ``BM25Index``)."""

    def __init__(self, index: str | Path | BM25Index, config: LexicalConfig | None = None,
                 k: int | None = None) -> None:
        super().__init__()
        self._search = RagkitSearch(str(index) if isinstance(index, Path) else index, config or LexicalConfig())
        self._k = k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text=hit.text, id_=hit.doc_id, metadata=cite), score=cite["score"])
                for hit, cite in self._search.hits(query_bundle.query_str, self._k)]
