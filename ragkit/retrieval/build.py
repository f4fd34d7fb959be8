"""One way to build an index folder: the BM25 index of a corpus with, when asked, its chunk
vectors, its concept graph and the graph's communities (and the concept graph in Neo4j too).
``ragkit index build``, ``ragkit graph build --corpus``, the notebooks, the demo sources and
the profiler all call ``build_index``, so an index is the same whoever built it.

    report = build_index(IndexSpec(corpus="data/manuals", out="outputs/index/manuals", dense="auto"))
    report.to_dict()   # what ``ragkit index build --json`` prints

Everything is written into the folder's next version (vectors and concept graph included,
reusing what the live version has by reading it); the live version is only read, and
replaced by one switch of the folder symlink when all of it is written, so a build that fails
leaves the folder as it was.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..config import DEFAULT_LANG
from ..corpus import Doc
from ..errors import InputError
from .bm25 import BM25Index, BM25Params
from .boosting import structural_boost_scores

if TYPE_CHECKING:
    from ..runtime.ray_engine import RayEngine


@dataclass(frozen=True)
class IndexSpec:
    """What to build: the corpus (a BEIR ``corpus.jsonl`` or a folder of documents), the
    index folder, the tokenizer (``lang``: auto, vi or en; accents kept or not; Vietnamese
    syllable bigrams, None for the language's default), BM25's parameters, and what is built
    beside the index: chunk vectors (``dense``: an embedder choice, auto or a name; None for
    none), the concept graph and its communities (``concepts``), the concepts' label vectors
    (``concept_vectors``, with both)."""

    corpus: str | Path
    out: str | Path
    lang: str = DEFAULT_LANG
    keep_accents: bool = False
    bigrams: bool | None = None
    params: BM25Params = field(default_factory=BM25Params)
    dense: str | None = None
    concepts: bool = False
    concept_vectors: bool = False
    dedupe: str | None = None

    def __post_init__(self) -> None:
        if self.concept_vectors and not (self.concepts and self.dense):
            raise InputError("--concept-vectors: needs the concept graph and --dense (the concepts' "
                             "labels are embedded with the chunks' embedder)")


@dataclass
class BuildReport:
    """What a build made; ``to_dict`` is ``ragkit index build --json``'s object. ``dense`` and
    ``concepts`` are None when not built; ``engine`` is where the per-chunk work ran (a Ray
    cluster's address, nodes and per-stage timings, ``RayEngine.report``); ``index`` is the
    BM25 index itself (not printed)."""

    index_dir: str
    docs: int
    vocab: int
    postings: int
    build_s: float | None
    lang: str
    lang_detected: bool
    lang_reason: str
    languages: list[str]
    tokenizer: dict
    params: dict
    dense: dict | None = None
    concepts: dict | None = None
    engine: dict = field(default_factory=lambda: {"name": "local"})
    index: BM25Index | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index_dir, "docs": self.docs, "vocab": self.vocab, "postings": self.postings,
                "build_s": self.build_s, "lang": self.lang, "lang_detected": self.lang_detected,
                "lang_reason": self.lang_reason, "languages": self.languages, "tokenizer": self.tokenizer,
                "params": self.params, "dense": self.dense, "concepts": self.concepts, "engine": self.engine}


def build_index(spec: IndexSpec, *, docs: Sequence[Doc] | None = None, concept_store=None,
                progress: bool | None = None, engine: RayEngine | None = None) -> BuildReport:
    """Build ``spec``'s index into ``spec.out``. ``docs``, when given, are the corpus's
    documents already in memory (generated ones; ``spec.corpus`` then only names them).
    ``concept_store`` (a ``Neo4jConceptStore``) also gets the concept graph, before any local
    file is written: a store that fails leaves the folder as it was. ``engine``: a
    ``runtime.ray_engine.RayEngine`` that runs the per-chunk stages (reading, tokenizing,
    vectors, concepts) on a Ray cluster; this process assembles the same files."""
    from ..corpus import load_corpus, read_corpus
    from ..stores.files import atomic_dir
    from .search import dense_dir_for

    if docs is not None:
        docs = list(docs)
    else:
        docs = load_corpus(spec.corpus, spec.dedupe) if engine is None else \
            read_corpus(spec.corpus, spec.dedupe, engine=engine).docs
    index = BM25Index.for_corpus(docs, spec.lang, accents=spec.keep_accents, bigrams=spec.bigrams,
                                 params=spec.params, progress=progress, engine=engine,
                                 boost_scores=structural_boost_scores)
    index.meta["corpus"] = str(Path(spec.corpus).resolve())
    language = index.language
    dense_info = concepts_info = None
    live = Path(spec.out)
    with atomic_dir(live) as staging:
        embedder = None
        if spec.dense:
            from ..embeddings import choose_embedder
            from .dense import DenseIndex

            name, reason = choose_embedder(spec.dense, language.lang)
            dense_index = DenseIndex(dense_dir_for(staging), name)
            report = dense_index.build(docs, progress=progress, previous=dense_dir_for(live.resolve()),
                                       engine=engine)
            embedder = dense_index.embedder
            index.meta["dense"] = {"embedder": name}
            dense_info = {"embedder": name, "embedder_reason": reason, "dir": str(dense_dir_for(live)),
                          **asdict(report)}
        if spec.concepts:
            concepts_info = _build_concepts(spec, docs, index, staging, live, embedder, concept_store, progress,
                                            engine)
        index.write_files(staging, keep_from=live)
    return BuildReport(index_dir=str(spec.out), docs=len(index), vocab=len(index.vocab),
                       postings=int(index.weights.nnz), build_s=index.meta.get("build_s"), lang=language.lang,
                       lang_detected=language.detected, lang_reason=language.reason,
                       languages=list(language.languages), tokenizer=index.tokenizer.to_dict(),
                       params=asdict(spec.params), dense=dense_info, concepts=concepts_info,
                       engine=engine.report() if engine is not None else {"name": "local"}, index=index)


def _build_concepts(spec: IndexSpec, docs: list[Doc], index: BM25Index, staging: Path, live: Path,
                    embedder, concept_store, progress: bool | None, engine: RayEngine | None) -> dict:
    """The concept graph, its communities and (``spec.concept_vectors``) its label vectors,
    written into the staging version; only the chunks whose text changed since the live
    folder (or else the store) last kept them are extracted again."""
    from ..concepts.build import save_communities
    from ..concepts.graph import ConceptGraph, read_extractions
    from .search import concepts_dir_for

    folder = concepts_dir_for(staging)
    previous = read_extractions(concepts_dir_for(live))
    if previous is None and concept_store is not None:
        previous = concept_store.extractions()
    graph, rows, report = ConceptGraph.build(docs, previous=previous, progress=progress,
                                             what=f"corpus {spec.corpus}", engine=engine)
    info: dict[str, Any] = {"dir": str(concepts_dir_for(live)), **asdict(report)}
    labels = None
    if spec.concept_vectors:
        from ..concepts.vectors import LabelVectors, vectors_path

        # Embedded with the model the chunks were embedded with, loaded once.
        labels = LabelVectors.build(graph, embedder, progress=progress,
                                    previous=LabelVectors.read(vectors_path(concepts_dir_for(live), embedder),
                                                              embedder.vectors_id))
        info["label_vectors"] = {"embedder": embedder.name, "labels": len(labels.concepts),
                                 "embedded": labels.embedded}
    if concept_store is not None:
        info["store"] = concept_store.write(graph, rows).to_dict()
    graph.write_files(folder, rows)
    # The communities are recomputed on every build (retrieval/community_search.py reads them).
    _, info["communities"] = save_communities(graph, docs, folder)
    if labels is not None:
        labels.save(vectors_path(folder, embedder), graph)
    index.meta["concepts"] = {"extractor": graph.meta["extractor"]}
    return info
