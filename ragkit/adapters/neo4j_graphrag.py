"""ragkit as a neo4j-graphrag retriever: ``RagkitNeo4jRetriever(driver, "outputs/index/manuals")``
in neo4j-graphrag's ``GraphRAG`` pipeline next to its own retrievers; each item carries
ragkit's citation in its metadata. The driver is neo4j-graphrag's (it checks the server's
version); the documents come from ragkit's index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import LexicalConfig
from ..runtime.extras import requires_extra
from ..retrieval.bm25 import BM25Index
from . import RagkitSearch

with requires_extra("neo4j-graphrag"):
    import neo4j
    from neo4j_graphrag.retrievers.base import Retriever
    from neo4j_graphrag.types import RawSearchResult, RetrieverResultItem


class RagkitNeo4jRetriever(Retriever):
    """A neo4j-graphrag ``Retriever`` over a ragkit index (a folder, or a ``BM25Index``)."""

    def __init__(self, driver: "neo4j.Driver", index: str | Path | BM25Index,
                 config: LexicalConfig | None = None, neo4j_database: str | None = None) -> None:
        super().__init__(driver, neo4j_database)
        self._search = RagkitSearch(str(index) if isinstance(index, Path) else index, config or LexicalConfig())

    def get_search_results(self, query_text: str, top_k: int = 5) -> RawSearchResult:
        found = self._search.hits(query_text, top_k)
        records = [neo4j.Record({"content": hit.text, "metadata": cite}) for hit, cite in found]
        return RawSearchResult(records=records, metadata={"method": found[0][1]["method"] if found else None})

    def default_record_formatter(self, record: "neo4j.Record") -> RetrieverResultItem:
        return RetrieverResultItem(content=record["content"], metadata=record["metadata"])

    def search(self, query_text: str, top_k: int = 5) -> Any:       # the signature neo4j-graphrag reads
        return super().search(query_text=query_text, top_k=top_k)
