"""Notebook ``03_index_build``: build a lexical index (and its chunk vectors) and look at it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..config import DEFAULT_LANG, LANGS
from ..embeddings import EMBEDDER_CHOICES
from ..errors import InputError
from ..runtime.extras import requires_extra
from ..retrieval.bm25 import BM25Index, BM25Params
from ..retrieval.search import load_index
from .checks import check_type


ENGINES = ("local", "ray")


@dataclass(frozen=True)
class IndexBuildParams:
    """Parameters of ``03_index_build``."""

    corpus: str = "../data/manuals"
    index_dir: str = "../outputs/index/manuals"
    lang: str = DEFAULT_LANG             # auto: the documents' language (vi for mixed), vi or en
    bigrams: bool = True
    idf: str = BM25Params.idf
    dense: str = "auto"                  # chunk vectors for dense/hybrid search: auto (multilingual
                                         # E5 for vi, MiniLM for en), an embedder, or "" for none
    engine: str = "local"                # local (this kernel), or ray: the per-chunk work on a Ray cluster
    ray_address: str = ""                # engine ray: host:port ("": RAY_ADDRESS, else a cluster started here)

    def __post_init__(self) -> None:
        for name, kind in (("corpus", str), ("index_dir", str), ("lang", str),
                           ("bigrams", bool), ("idf", str), ("dense", str), ("engine", str), ("ray_address", str)):
            check_type(name, getattr(self, name), kind)
        if self.engine not in ENGINES:
            raise InputError(f"parameter engine: expected one of {', '.join(map(repr, ENGINES))}, got {self.engine!r}")
        if self.ray_address and self.engine != "ray":
            raise InputError("parameter ray_address: names a Ray cluster, for engine 'ray' only")
        if self.dense not in ("", *EMBEDDER_CHOICES):
            choices = ", ".join(repr(c) for c in ("", *EMBEDDER_CHOICES))
            raise InputError(f"parameter dense: expected one of {choices}, got {self.dense!r}")
        if self.lang not in LANGS:
            raise InputError(f"parameter lang: expected one of {', '.join(map(repr, LANGS))}, got {self.lang!r}")
        BM25Params(idf=self.idf)


# ----------------------------------------------------------------------- 03 index build
def build_index(p: IndexBuildParams, progress: bool | None = None) -> BM25Index:
    """Build the lexical index of ``p.corpus`` (and its chunk vectors) and save it
    (atomically) to ``p.index_dir``, as ``ragkit index build`` does."""
    from ..retrieval.build import IndexSpec, build_index as build

    spec = IndexSpec(corpus=p.corpus, out=p.index_dir, lang=p.lang, bigrams=p.bigrams,
                     params=BM25Params(idf=p.idf), dense=p.dense or None)
    if p.engine == "ray":
        from ..runtime.ray_engine import RayEngine

        with RayEngine(p.ray_address or None, progress=progress) as engine:
            index = build(spec, progress=progress, engine=engine).index
    else:
        index = build(spec, progress=progress).index
    assert index is not None            # build_index returns the index it wrote
    return index


def open_index(index_dir: str, corpus: str | None = None) -> BM25Index:
    """Load ``index_dir``; build it from ``corpus`` first if it does not exist yet."""
    if not Path(index_dir, "meta.json").exists() and corpus:
        build_index(IndexBuildParams(corpus=corpus, index_dir=index_dir, dense=""))
    return load_index(index_dir)


def index_overview(index: BM25Index) -> pd.Series:
    """Size of the index: chunks, vocabulary, postings, average chunk length in tokens."""
    return pd.Series({"chunks": len(index), "sources": len({d.source for d in index.docs}),
                      "vocabulary": len(index.vocab), "postings": int(index.weights.nnz),
                      "avg_tokens_per_chunk": round(float(index.doc_len.mean()), 1),
                      "tokenizer": index.tokenizer.lang + (" +bigrams" if index.tokenizer.bigrams else ""),
                      "idf": index.params.idf}, name="index")


def chunks_by_source(index: BM25Index) -> pd.DataFrame:
    """Chunks, tokens and step-list chunks per source document."""
    df = pd.DataFrame({"source": [d.source for d in index.docs], "tokens": index.doc_len.astype(int),
                       "has_steps": index.boost >= 0.3})
    return df.groupby("source").agg(chunks=("tokens", "size"), tokens=("tokens", "sum"),
                                    step_chunks=("has_steps", "sum"))


def top_terms(index: BM25Index, n: int = 10) -> pd.DataFrame:
    """The ``n`` commonest terms (lowest IDF, ties by term): what BM25 weighs least."""
    terms = pd.DataFrame({"term": list(index.vocab), "idf": index.idf[list(index.vocab.values())]})
    terms["idf"] = terms["idf"].round(4)
    return terms.sort_values(["idf", "term"]).head(n).reset_index(drop=True)


def plot_chunk_lengths(index: BM25Index):
    """Histogram of chunk lengths in tokens.

    The figure is closed before it is returned, so a notebook shows it once (as the cell's
    value) whether or not the inline backend would also flush open figures.
    """
    with requires_extra("notebooks"):
        import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.hist(index.doc_len, bins=min(20, max(5, len(index) // 2)), color="#4C72B0")
    ax.set_xlabel("tokens per chunk")
    ax.set_ylabel("chunks")
    ax.set_title("Chunk lengths")
    fig.tight_layout()
    plt.close(fig)
    return fig
