"""ragkit: an offline research workbench for retrieval-augmented and knowledge-graph QA.

The objects a notebook needs, importable from here (``from ragkit import BM25Index, ask``);
each is imported on first use, so ``import ragkit`` is quick and an optional extra is needed
only by the names that use it. ``docs/api.md`` shows them at work.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any


def _version() -> str:
    """The installed distribution's version, which the build took from the git tag. Read on
    first use of ``ragkit.__version__``: importlib.metadata takes longer to import than the
    rest of ``import ragkit``."""
    from importlib import metadata

    try:
        return metadata.version("ragkit-workbench")
    except metadata.PackageNotFoundError:   # imported from a source tree that was never installed
        return "0+unknown"


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
    "SpecConfig": "config", "ChainConfig": "config", "CausalConfig": "config", "KGConfig": "config",
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

if TYPE_CHECKING:      # what a type checker sees ("x as x": exported); at run time each name is
    # imported on first use
    __version__: str
    from .config import (
        CausalConfig as CausalConfig, ChainConfig as ChainConfig, GraphConfig as GraphConfig, KGConfig as KGConfig,
        LexicalConfig as LexicalConfig, LLMConfig as LLMConfig, Settings as Settings, SpecConfig as SpecConfig)
    from .corpus import (
        chunk_markdown as chunk_markdown, Doc as Doc, load_beir_corpus as load_beir_corpus,
        load_beir_queries as load_beir_queries, load_corpus as load_corpus,
        load_document_folder as load_document_folder, load_qrels as load_qrels)
    from .errors import (
        InputError as InputError, MissingExtraError as MissingExtraError, ModelError as ModelError,
        RagkitError as RagkitError, StoreUnavailableError as StoreUnavailableError)
    from .kgqa.importer import import_kg as import_kg
    from .kgqa.store import open_typed_store as open_typed_store
    from .multihop.graph import GraphRAG as GraphRAG
    from .pipelines import get_pipeline as get_pipeline, Pipeline as Pipeline, PIPELINES as PIPELINES
    from .pipelines.base import Answer as Answer, Citation as Citation, Sources as Sources, Trace as Trace
    from .pipelines.causal import explain as explain
    from .pipelines.graph_rag import ask_graph as ask_graph
    from .pipelines.kg import ask_kg as ask_kg
    from .pipelines.lexical import ask_lexical as ask_lexical
    from .pipelines.spec import ask_spec as ask_spec
    from .retrieval.bm25 import BM25Index as BM25Index, BM25Params as BM25Params, Hit as Hit
    from .retrieval.build import build_index as build_index, BuildReport as BuildReport, IndexSpec as IndexSpec
    from .retrieval.dense import DenseIndex as DenseIndex
    from .retrieval.search import load_dense as load_dense, load_index as load_index, retrieve as retrieve
    from .service import (
        ask as ask, AskRequest as AskRequest, build_demo_sources as build_demo_sources,
        demo_data_dir as demo_data_dir, Service as Service)
    from .specs import open_store as open_store
    from .specs.build import build_kg as build_kg
    from .text import Tokenizer as Tokenizer, tokenizer_for as tokenizer_for

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = version = _version()
        return version
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragkit' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value      # imported once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
