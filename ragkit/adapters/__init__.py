"""ragkit's retrieval inside other frameworks: a LangChain retriever
(``ragkit.adapters.langchain``, extra ``[langchain]``), a LlamaIndex retriever
(``ragkit.adapters.llama_index``, extra ``[llamaindex]``) and a neo4j-graphrag retriever
(``ragkit.adapters.neo4j_graphrag``, extra ``[neo4j-graphrag]``). Each converts what one shared
searcher returns: ragkit's ranking of an index (BM25, dense, hybrid ... as
``ragkit search`` ranks), every document with its citation as metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import LexicalConfig
from ..errors import InputError
from ..retrieval.bm25 import BM25Index, Hit


@dataclass
class RagkitSearch:
    """Ranks an index as ``ragkit search`` does: ``index`` is an index folder (its dense
    vectors are loaded when the method needs them) or a loaded ``BM25Index``; ``config``
    the lexical pipeline's retrieval settings (method, k, fusion, MMR ...)."""

    index: str | Path | BM25Index
    config: LexicalConfig = field(default_factory=LexicalConfig)
    _loaded: Any = field(default=None, init=False, repr=False)

    def _sources(self) -> tuple[BM25Index, Any]:
        if self._loaded is None:
            from ..retrieval.search import load_dense, load_index

            if isinstance(self.index, BM25Index):       # no vectors: auto ranks with BM25
                if self.config.method not in ("bm25", "auto"):
                    raise InputError(f"method {self.config.method!r}: needs the index folder (its vectors), "
                                     "not a BM25Index in memory")
                self._loaded = (self.index, None)
            else:
                index = load_index(self.index)
                dense = load_dense(index, self.index) if self.config.method != "bm25" else None
                self._loaded = (index, dense)
        return self._loaded

    def hits(self, query: str, k: int | None = None) -> list[tuple[Hit, dict]]:
        """The top ``k`` (default: the config's) for ``query``, each with its citation:
        rank (from 1), doc_id, title, source, score and the method that ranked it."""
        from dataclasses import replace

        from ..pipelines.base import check_question
        from ..retrieval.search import RetrievalNotes, retrieve

        index, dense = self._sources()
        config = replace(self.config, k=k) if k is not None else self.config
        trace = RetrievalNotes()
        _, selected = retrieve(index, check_question(query), config, dense=dense, trace=trace)
        return [(hit, citation(hit, rank, trace.get("method", config.method)))
                for rank, hit in enumerate(selected, 1)]


def citation(hit: Hit, rank: int, method: str) -> dict:
    """A hit's citation, the metadata every adapter attaches to its documents."""
    return {"rank": rank, "doc_id": hit.doc_id, "title": hit.title, "source": hit.source,
            "score": float(hit.score), "method": method}


__all__ = ["RagkitSearch", "citation"]
