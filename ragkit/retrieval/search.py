"""Retrieval in one place: the candidates a question gets from an index (BM25, dense vectors,
or both fused), the optional rerank of the top ones, and the MMR selection. ``ragkit search``,
``ragkit ask --pipeline lexical`` and ``ragkit eval retrieval`` all call ``retrieve``, so the
figures eval publishes describe what ask serves."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, Sequence, TypedDict

from ..config import GRAPH_METHODS, LexicalConfig
from ..errors import InputError
from ..runtime.profiler import Profiler
from ..text.question import question_language
from .bm25 import BM25Index, Hit
from .boosting import takes_boost
from .mmr import mmr_rerank

if TYPE_CHECKING:
    from ..concepts.search import Bridge, SeedShown, WalkParams


@lru_cache(maxsize=4)
def _load_index(path: str, version: str, mtime: float) -> BM25Index:
    return BM25Index.load(path)


def load_index(path: str | Path) -> BM25Index:
    """Load an index, reusing the loaded copy while the folder is unchanged (the same
    version, as a rebuild switches the folder to a new one). Errors name ``path``."""
    path = Path(path)
    meta = path / "meta.json"
    return _load_index(str(path), str(path.resolve()), meta.stat().st_mtime if meta.exists() else 0.0)


def dense_dir_for(index_dir: str | Path) -> Path:
    """Where an index's chunk vectors live: ``<index>/dense``. A rebuild writes new ones in
    the index's next version, copying the unchanged vectors from these, so it re-embeds
    only the chunks that changed."""
    return Path(index_dir) / "dense"


def load_dense(index: BM25Index, index_dir: str | Path):
    """The index's dense vectors (``index build --dense``), or None when it has none."""
    info = index.meta.get("dense")
    if not info:
        return None
    from .dense import DenseIndex

    # The version the index was read from (a symlinked folder's target): its vectors match
    # its chunks even when a save switches the folder meanwhile.
    folder = getattr(index, "loaded_from", None) or Path(index_dir).resolve()
    return DenseIndex(dense_dir_for(folder), info["embedder"])


def concepts_dir_for(index_dir: str | Path) -> Path:
    """Where an index's concept graph lives: ``<index>/concepts`` (``index build --concepts``)."""
    return Path(index_dir) / "concepts"


def load_concepts(index_dir: str | Path, dense=None, made=None):
    """The index's concept graph, ready for queries (a ``ConceptSearcher``), or None when it
    has none. With ``dense`` (the index's vectors) and label vectors made by its embedder
    (``index build --concept-vectors``), question phrases also link by vector. ``made``: a
    searcher of this index already made without vectors, returned as it is when no vectors
    link, else its graph is used (loaded once)."""
    folder = concepts_dir_for(index_dir)
    if not (folder / "extractions.jsonl").is_file():
        return None
    from ..concepts.graph import ConceptGraph
    from ..concepts.search import ConceptSearcher
    from ..concepts.vectors import LabelVectors, vectors_path

    graph = made.graph if made is not None else ConceptGraph.load(folder)
    if dense is not None:
        vectors = LabelVectors.load(vectors_path(folder, dense.embedder), graph)
        if vectors is not None:
            return ConceptSearcher(graph, vectors=vectors, embedder=dense.embedder)
    return made if made is not None else ConceptSearcher(graph)


def resolve_method(method: str, index: BM25Index, question: str, has_vectors: bool,
                   has_concepts: bool = False, language: str | None = None) -> tuple[str, str]:
    """The method to use and why. ``auto``: dense alone when the question's language is none
    of the documents' and the index has vectors (cross-lingual: BM25 matches no words and
    its noise would push the right chunk down, see docs/benchmarks/retrieval.md); else the concept
    graph's walk when the index has one (it kept the gold answer in front of the reader for
    0.54 of MuSiQue's questions against 0.38 for hybrid and 0.39 for BM25, and 0.76 of
    HotpotQA's against 0.76 and 0.68); hybrid with vectors; BM25 otherwise. The question's
    language only chooses the method: the index's tokenizer reads it. ``language``: the
    question's as its reading gave it (``QuestionReading.language``), else read here."""
    if method != "auto":
        return method, "asked for"
    asked = language or question_language(question)
    indexed = index.language.languages
    if has_vectors and asked in ("vi", "en") and asked not in indexed:
        names = {"en": "English", "vi": "Vietnamese"}
        return "dense", f"auto: cross-lingual ({names[asked]} question, {names[indexed[0]]} index)"
    if has_concepts:
        return "graph", "auto: the index has a concept graph"
    if not has_vectors:
        return "bm25", "auto: the index has no dense vectors"
    return "hybrid", "auto: the question is in the index's language"


class GraphNotes(TypedDict):
    """Where a concept walk restarted: the ranking that seeded it (``base``), its seed
    concepts and passages, the share of names among them, and (``hybrid+graph``) the walk's
    weight in the fusion."""

    base: str
    seed_concepts: list[SeedShown]
    seed_passages: list[str]
    name_share: float
    weight: NotRequired[float]


class RetrievalNotes(TypedDict, total=False):
    """What ``retrieve`` writes of how it ranked: the method and why, the whole ranking
    before the rerank and MMR, the rerank's judgements, MMR's similarity, and for the graph
    methods the walk (``graph``) and the concepts that bridged each selected chunk."""

    method: str
    method_reason: str
    ranked: list[Hit]
    rerank: list[dict[str, object]]
    mmr_similarity: str
    graph: GraphNotes
    bridges: dict[str, list[Bridge]]


def retrieve(index: BM25Index, question: str, config: LexicalConfig,
             profiler: Profiler | None = None, dense=None, reranker=None,
             trace: RetrievalNotes | None = None, concepts=None,
             language: str | None = None) -> tuple[list[Hit], list[Hit]]:
    """The candidates and the ``config.k`` selected from them: what search shows, ask reads
    and eval scores.

    1. Each list, BM25 (timed "retrieval") and dense ("dense_retrieval"), is ranked
       ``max(config.depth, k)`` deep and, for hybrid, fused ("fusion"): the ranking of the
       top k is then the same whatever k is.
    2. The optional rerank ("rerank") reorders the top ``reranker.depth``; they are the
       candidates.
    3. MMR ("mmr": cosine over the chunk vectors when the method used them, else Jaccard over
       terms) picks k from the top ``config.candidates`` (or the reranked ones); without MMR
       the top k are taken. When k is larger than the candidates (eval ranks 100), the
       ranks past them follow in their retrieved order.

    ``graph`` and ``hybrid+graph`` rank the chunks by personalized PageRank over the
    concept graph (``concepts``, a ``ConceptSearcher``), seeded with the question's concepts
    and the top chunks of hybrid (BM25 without vectors), timed "graph_walk";
    ``hybrid+graph`` fuses that with the hybrid ranking ("graph_fusion": the hybrid's first
    two stay first; the walk weighs more the more the question names things).

    Returns (candidates, selected). ``trace``, when given, receives the method and why, the
    whole ranking before the rerank and MMR ("ranked"), the rerank's judgements and MMR's
    similarity, and for the graph methods where the walk restarts ("graph") and each ranked chunk's bridge
    ("bridges": {doc id: concepts and the edges that reached them}). ``language``: the
    question's, from its reading (``--method auto`` reads it; None: read from ``question``).
    """
    profiler = profiler or Profiler()
    trace = trace if trace is not None else RetrievalNotes()
    if config.method == "communities":      # retrieval/community_search.py: summaries, not a ranking of chunks
        raise InputError("--method communities: answers from community summaries and ranks no chunks "
                         "(use it with 'ragkit search' or 'ragkit ask --pipeline lexical')")
    if config.method in GRAPH_METHODS:
        return _retrieve_by_graph(index, question, config, profiler, dense, reranker, trace, concepts)
    method, trace["method_reason"] = resolve_method(config.method, index, question, dense is not None,
                                                    concepts is not None, language)
    if method in GRAPH_METHODS:
        why = trace["method_reason"]
        selected = _retrieve_by_graph(index, question, replace(config, method=method), profiler, dense, reranker,
                                      trace, concepts)
        trace["method_reason"] = trace["method_reason"].replace("asked for", why, 1)
        return selected
    trace["method"] = method
    depth = max(config.depth, config.k, config.candidates if config.mmr else 0,
                reranker.depth if reranker is not None else 0)
    ranked: list[Hit] = []
    if method != "dense":
        with profiler.stage("retrieval"):
            ranked = index.search(question, k=depth, boost=takes_boost(question, config.boost))
    if method != "bm25":
        if dense is None:
            raise InputError(f"--method {method}: this index has no dense vectors "
                             "(build it with 'ragkit index build --dense')")
        from .fusion import fuse

        with profiler.stage("dense_retrieval"):
            vectors = dense.search(question, k=depth)
        with profiler.stage("fusion"):
            fused = vectors if method == "dense" else \
                fuse([(h.doc_id, h.score) for h in ranked], vectors, config.fusion, config.alpha, config.rrf_k)
            ranked = [index.hit(doc_id, score) for doc_id, score in fused[:depth]]
    trace["ranked"] = ranked
    # The candidates came with chunk vectors unless BM25 ranked them alone.
    return _select(index, question, ranked, config, profiler, reranker, trace,
                   dense if method != "bm25" else None)


def fuse_with_walk(params: WalkParams, base: Sequence[tuple[str, float]],
                   walked: Sequence[tuple[str, float]], name_share: float) -> tuple[list[tuple[str, float]], float]:
    """``hybrid+graph``'s ranking and the walk's weight: the first ``params.keep_base`` chunks
    of ``base`` stay first (their scores lifted above the rest), then the weighted fusion of
    ``base`` and the walk, the walk weighing ``params.weight`` (times the question's share of
    names, with ``names_weigh``)."""
    from .fusion import weighted

    weight = round(params.weight * (name_share if params.names_weigh else 1.0), 4)
    fused = weighted(base, walked, weight)
    kept = [d for d, _ in base[: params.keep_base]]
    top = 1.0 + len(kept)
    head = [(d, top - i) for i, d in enumerate(kept)]
    kept_set = set(kept)
    return head + [(d, s) for d, s in fused if d not in kept_set], weight


def _select(index: BM25Index, question: str, ranked: list[Hit], config: LexicalConfig, profiler: Profiler,
            reranker, trace: RetrievalNotes, dense=None) -> tuple[list[Hit], list[Hit]]:
    """The candidates and the ``config.k`` selected from a ranking: the rerank, then MMR
    (cosine over ``dense``'s chunk vectors when given, else Jaccard over terms); when k is
    larger than the candidates, the ranks past them follow in their retrieved order."""
    pool = ranked[: config.candidates] if config.mmr else ranked
    if reranker is not None:
        with profiler.stage("rerank"):
            pool, trace["rerank"] = reranker.rerank(question, ranked)
    with profiler.stage("mmr"):
        if not config.mmr or len(pool) <= 1:
            selected = pool[: config.k]
        else:
            trace["mmr_similarity"] = "cosine" if dense is not None else "jaccard"
            vectors = dense.vectors_of([h.doc_id for h in pool]) if dense is not None else None
            selected = mmr_rerank(index, pool, min(config.k, len(pool)), config.mmr_lambda, vectors)
    if len(selected) < config.k:
        selected = selected + ranked[len(pool): len(pool) + config.k - len(selected)]
    return pool, selected


def _retrieve_by_graph(index: BM25Index, question: str, config: LexicalConfig, profiler: Profiler,
                       dense, reranker, trace: RetrievalNotes, concepts) -> tuple[list[Hit], list[Hit]]:
    """``retrieve`` for ``graph`` and ``hybrid+graph``: the base ranking (hybrid, or BM25 for
    an index without vectors) seeds the walk; MMR and the rerank apply as for the others."""
    if concepts is None:
        raise InputError(f"--method {config.method}: this index has no concept graph "
                         "(build it with 'ragkit index build --concepts')")
    base_method = "hybrid" if dense is not None else "bm25"
    base_trace = RetrievalNotes()
    base_config = replace(config, method=base_method, mmr=False, rerank="none")
    retrieve(index, question, base_config, profiler, dense, None, base_trace)
    base = [(h.doc_id, h.score) for h in base_trace["ranked"]]
    depth = len(base) or max(config.depth, config.k)
    with profiler.stage("graph_walk"):
        walked, seeds, walk = concepts.rank(question, base, k=depth)
    graph: GraphNotes = {"base": base_method, "seed_concepts": seeds["seed_concepts"],
                         "seed_passages": seeds["seed_passages"], "name_share": seeds["name_share"]}
    if config.method == "graph":
        with profiler.stage("graph_fusion"):
            # Chunks the walk never reached follow in their base order.
            reached = {d for d, _ in walked}
            ranking = walked + [(d, 0.0) for d, _ in base if d not in reached]
    else:
        with profiler.stage("graph_fusion"):
            ranking, graph["weight"] = fuse_with_walk(concepts.params, base, walked, seeds["name_share"])
    ranked = [index.hit(doc_id, score) for doc_id, score in ranking[:depth]]
    trace.update({"method": config.method, "method_reason": f"asked for; the walk seeded from {base_method}",
                  "ranked": ranked, "graph": graph})
    pool, selected = _select(index, question, ranked, config, profiler, reranker, trace)
    with profiler.stage("graph_trace"):
        trace["bridges"] = {h.doc_id: concepts.bridge(walk, h.doc_id) for h in selected[:10]}
    return pool, selected
