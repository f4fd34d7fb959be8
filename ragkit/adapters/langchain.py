"""ragkit as a LangChain retriever: ``RagkitRetriever(index="outputs/index/manuals")`` in
any chain; each ``Document`` carries ragkit's citation in its metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import LexicalConfig
from ..runtime.extras import requires_extra
from . import RagkitSearch

with requires_extra("langchain"):
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever


class RagkitRetriever(BaseRetriever):
    """A LangChain ``BaseRetriever`` over a ragkit index (a folder, or a ``BM25Index``)."""

    index: Any
    config: LexicalConfig = LexicalConfig()
    k: int | None = None            # documents per query (default: the config's k)

    model_config = {"arbitrary_types_allowed": True}

    def model_post_init(self, context: Any) -> None:
        index = str(self.index) if isinstance(self.index, Path) else self.index
        self._search = RagkitSearch(index, self.config)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=hit.text, metadata=cite, id=hit.doc_id)
                for hit, cite in self._search.hits(query, self.k)]
