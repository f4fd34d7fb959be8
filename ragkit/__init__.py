"""ragkit: an offline research workbench for retrieval-augmented and knowledge-graph QA.

The objects a notebook needs, importable from here (``from ragkit import BM25Index, ask``);
each is imported on first use, so ``import ragkit`` is quick and an optional extra is needed
only by the names that use it. ``docs/api.md`` shows them at work.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# public name -> the module (under ragkit) that defines it
_EXPORTS: dict[str, str] = {
    # documents
    "Doc": "corpus", "load_corpus": "corpus", "load_document_folder": "corpus", "chunk_markdown": "corpus",
    "load_beir_corpus": "corpus", "load_beir_queries": "corpus", "load_qrels": "corpus",
    "Tokenizer": "text", "tokenizer_for": "text",
    # lexical retrieval
    "BM25Index": "retrieval.bm25", "BM25Params": "retrieval.bm25", "Hit": "retrieval.bm25",
    "load_index": "retrieval.search", "load_dense": "retrieval.search", "retrieve": "retrieval.search",
    "DenseIndex": "retrieval.dense", "build_index": "retrieval.build", "IndexSpec": "retrieval.build",
    "BuildReport": "retrieval.build",
    # configs
    "LexicalConfig": "config", "GraphConfig": "config", "LLMConfig": "config", "Settings": "config",
    "SpecConfig": "pipelines.spec",
    # the pipelines and their answers
    "Answer": "pipelines.base", "Citation": "pipelines.base", "Trace": "pipelines.base",
    "Sources": "pipelines.base", "Pipeline": "pipelines", "PIPELINES": "pipelines", "get_pipeline": "pipelines",
    "ask_lexical": "pipelines.lexical", "ask_spec": "pipelines.spec", "explain": "pipelines.causal",
    "ask_graph": "pipelines.graph_rag", "ask_kg": "pipelines.kg",
    # knowledge graphs
    "build_kg": "specs.build", "open_store": "specs", "import_kg": "kgqa.importer",
    "open_typed_store": "kgqa.store", "GraphRAG": "multihop.graph",
    # the service
    "Service": "service", "AskRequest": "service", "ask": "service", "build_demo_sources": "service",
    "demo_data_dir": "service",
    # errors
    "RagkitError": "errors", "InputError": "errors", "MissingExtraError": "errors",
    "StoreUnavailableError": "errors", "ModelError": "errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragkit' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value      # imported once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
