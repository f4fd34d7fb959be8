"""Commands on indexes: ``index build``, ``search`` (one query, or a batch with
``--queries``) and ``graph build`` (an edge-list graph, or a corpus's concept graph)."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager, redirect_stdout
from dataclasses import asdict
from typing import TYPE_CHECKING, Iterator

from ..config import CONCEPT_METHODS, DEFAULT_LANG, GRAPH_METHODS
from ..errors import InputError
from ..retrieval.bm25 import BM25Params
from ..retrieval.boosting import takes_boost
from .output import _emit, _progress

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from ..concepts.neo4j_store import Neo4jConceptStore
    from ..runtime.ray_engine import RayEngine


def build_index(args: argparse.Namespace, concept_store=None) -> dict:
    """``index build``'s (and ``graph build --corpus``'s) index, from the flags: what
    ``retrieval.build.build_index`` built, as printed. The files of a corpus folder that were
    not read are named in a warning line on stderr and listed under ``skipped`` (a key
    present only when some were)."""
    from ..corpus import read_corpus, skipped_line
    from ..retrieval.build import IndexSpec, build_index as build

    spec = IndexSpec(corpus=args.corpus, out=args.out, lang=args.lang, keep_accents=args.keep_accents,
                     bigrams=args.bigrams, params=BM25Params(k1=args.k1, b=args.b, idf=args.idf),
                     dense=args.dense, concepts=args.concepts,
                     concept_vectors=getattr(args, "concept_vectors", False), dedupe=getattr(args, "dedupe", None))
    from ..stores.writers import output_lock

    with _engine(args) as engine:
        corpus = read_corpus(spec.corpus, spec.dedupe, engine=engine)
        if corpus.skipped:
            print(f"ragkit: warning: {skipped_line(args.corpus, corpus.skipped)}", file=sys.stderr)
        with output_lock(args.out):     # one writer: the live index's unchanged chunks are reused
            info = build(spec, docs=corpus.docs, concept_store=concept_store, progress=_progress(args),
                         engine=engine).to_dict()
    if corpus.skipped:
        info["skipped"] = [s.to_dict() for s in corpus.skipped]
    return info


@contextmanager
def _engine(args: argparse.Namespace) -> Iterator[RayEngine | None]:
    """``--engine``: None for this process, or a connected ``RayEngine`` (``--address``)."""
    if getattr(args, "engine", "local") != "ray":
        if getattr(args, "address", None):
            raise InputError("--address: names a Ray cluster, for --engine ray only")
        yield None
        return
    from ..runtime.ray_engine import RayEngine

    # Ray prints what its workers report (one died and was retried) on stdout: on stderr
    # here, where --json's stdout holds the one JSON object.
    with redirect_stdout(sys.stderr), RayEngine(args.address, progress=_progress(args)) as engine:
        yield engine


def _index_line(info: dict) -> str:
    dense_info = info["dense"]
    return (f"indexed {info['docs']} chunks ({info['vocab']} terms) into {info['index']} "
            f"in {info['build_s']} s; language {info['lang']}: {info['lang_reason']}"
            + (f"; vectors ({dense_info['embedder']}): {dense_info['embedded']} embedded, "
               f"{dense_info['reused']} reused in {dense_info['seconds']} s" if dense_info else ""))


def _concepts_line(concepts: dict) -> str:
    labels = concepts.get("label_vectors")
    return (f"concept graph: {concepts['concepts']} concepts, {concepts['mentions']} mentions, "
            f"{concepts['cooccurrences']} co-occurrences ({concepts['extracted']} chunks extracted, "
            f"{concepts['reused']} reused, {concepts['removed']} removed) in {concepts['seconds']} s"
            + (f"; {labels['labels']} label vectors ({labels['embedded']} embedded)" if labels else "")
            + (f"; {_communities_line(concepts['communities'])}" if concepts.get("communities") else ""))


def cmd_index_build(args: argparse.Namespace) -> int:
    info = build_index(args)
    concepts = f"; {_concepts_line(info['concepts'])}" if info["concepts"] else ""
    _emit(info, args.json, _index_line(info) + concepts)
    return 0


def _communities_line(info: dict) -> str:
    if info["unavailable"]:
        return f"{info['communities']} communities, none a theme: {info['unavailable']}"
    largest = ", ".join(str(c["chunks"]) for c in info["largest"])
    return (f"{info['communities']} communities, {info['themes']} of them themes "
            f"(home to {info['min_chunks']} chunks or more; "
            f"the largest to {largest} chunks) in {info['seconds']} s")


def read_queries(path: str) -> dict[str, str]:
    """Queries by id: a BEIR queries.jsonl, or a text file of one query per line (ids 1, 2 ...)."""
    from ..corpus import load_beir_queries
    from ..inputs import read_text

    if path.endswith(".jsonl"):
        return load_beir_queries(path)
    lines = [line.strip() for line in read_text(path, "queries").splitlines()]
    queries = {str(n): line for n, line in enumerate(lines, 1) if line}
    if not queries:
        raise InputError(f"--queries {path}: holds no query")
    return queries


def search_batch(args: argparse.Namespace) -> int:
    """``search --queries``: every query ranked by BM25 in one batch (``search_many``)."""
    from ..retrieval.search import load_index

    if args.method != "bm25" or args.mmr or args.rerank != "none":
        raise InputError("--queries: a batch is ranked by BM25 alone (give --method bm25, without --mmr or --rerank)")
    if args.threads < 1:
        raise InputError(f"--threads: must be at least 1, got {args.threads}")
    if args.shards is not None and args.engine != "ray":
        raise InputError("--shards: the index is split across a Ray cluster's actors: give --engine ray")
    if args.engine == "ray" and args.shards is None:
        raise InputError("--engine ray: a batch is scored on the cluster in shards: give --shards N")
    queries = read_queries(args.queries)
    index = load_index(args.index)
    boosted = [takes_boost(q) for q in queries.values()]      # the lexical default: procedural questions
    if args.shards is not None:
        from ..retrieval.bm25_shards import ShardedBM25

        with _engine(args):
            ranked = ShardedBM25(index, args.shards).search_many(list(queries.values()), k=args.k, boost=boosted)
    else:
        ranked = index.search_many(list(queries.values()), k=args.k, boost=boosted, threads=args.threads)
    results = {qid: [{"doc_id": h.doc_id, "score": round(h.score, 6), "title": h.title, "source": h.source}
                     for h in hits] for qid, hits in zip(queries, ranked)}
    human = "\n".join(f"{qid}\t{i + 1}\t{r['score']:.3f}\t{r['doc_id']}"
                      for qid, rows in results.items() for i, r in enumerate(rows))
    _emit({"results": results, "method": "bm25", "queries": len(queries)}, args.json, human)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from ..config import LexicalConfig
    from ..pipelines.base import check_question
    from ..retrieval.community_search import load_communities, rank_communities, route
    from ..retrieval.search import RetrievalNotes, load_concepts, load_dense, load_index, retrieve

    if args.queries:
        return search_batch(args)
    if args.shards is not None or args.engine != "local":
        raise InputError("--engine, --shards: for a batch of queries (--queries) ranked by BM25")
    query = check_question(args.query)
    index = load_index(args.index)
    config = LexicalConfig(k=args.k, mmr=args.mmr,
                           mmr_lambda=args.mmr_lambda, method=args.method, fusion=args.fusion,
                           alpha=args.alpha, rerank=args.rerank, rerank_depth=args.rerank_depth)
    communities = load_communities(args.index) if args.method in CONCEPT_METHODS else None
    routing = load_concepts(args.index) if communities else None
    routed = route(args.method, query, communities, routing, index)
    if routed.communities:
        assert communities is not None, "route answers from communities only when the index has them"
        results = [h.to_dict() for h in rank_communities(communities, routed.broad, args.k)]
        human = "\n".join(f"{i + 1:>2}. {r['score']:8.3f}  {r['doc_id']}  {r['title']} ({r['chunks']} chunks)"
                          for i, r in enumerate(results))
        _emit({"results": results, "method": "communities", "method_reason": routed.reason}, args.json, human)
        return 0
    dense = load_dense(index, args.index) if args.method != "bm25" else None
    concepts = load_concepts(args.index, dense, made=routing) if args.method in (*GRAPH_METHODS, "auto") else None
    reranker = None
    if config.rerank != "none":
        from ..config import LLMConfig
        from ..retrieval.rerank import make_reranker
        from ..llm.backends import default_llm

        reranker = make_reranker(config.rerank, default_llm(LLMConfig.from_env(model_path=args.model)),
                                 config.rerank_depth)
    steps = RetrievalNotes()
    _, hits = retrieve(index, query, config, dense=dense, reranker=reranker, trace=steps, concepts=concepts)
    results = [{"doc_id": h.doc_id, "score": round(h.score, 6), "text": h.text,
                "title": h.title, "source": h.source} for h in hits]
    if "bridges" in steps:
        for r in results:
            r["bridge"] = steps["bridges"].get(r["doc_id"], [])
    if "rerank" in steps:
        judged = {row["doc_id"]: row for row in steps["rerank"]}
        for r in results:
            r["rerank"] = judged[r["doc_id"]]
    human = "\n".join(f"{i + 1:>2}. {r['score']:8.3f}  {r['doc_id']}  {r['title']}"
                      for i, r in enumerate(results)) or "no document matches"
    _emit({"results": results}, args.json, human)
    return 0


def cmd_graph_build(args: argparse.Namespace) -> int:
    if (args.edges is None) == (args.corpus is None):
        raise InputError("graph build: --edges and --corpus do not go together (--edges CSV builds a graph "
                         "of named nodes, --corpus PATH a concept graph from text)" if args.edges else
                         "graph build: needs --edges CSV (a graph of named nodes) or --corpus PATH (a concept "
                         "graph built from text)")
    if args.corpus is not None:
        return _graph_build_concepts(args)
    for flag, value in (("--store", args.store), ("--lang", args.lang), ("--dense", args.dense),
                        ("--dedupe", args.dedupe)):
        if value is not None:
            raise InputError(f"{flag}: goes with --corpus (a concept graph), not --edges")
    from ..multihop.graph import GraphRAG
    from ..stores.writers import output_lock

    with output_lock(args.out):     # one writer: the live graph's node vectors are reused
        report = GraphRAG.build(args.edges, args.out, progress=_progress(args), embedder=args.embedder or "minilm")
    info = {"graph": str(args.out), **asdict(report)}
    _emit(info, args.json, f"built {report.nodes} nodes, {report.edges} edges into {args.out} "
                           f"({report.embedded} embedded, {report.reused} reused) in {report.seconds} s")
    return 0


def _graph_build_concepts(args: argparse.Namespace) -> int:
    """``graph build --corpus``: what ``index build --concepts`` builds (so ``search --method
    graph`` reads it), and with ``--store`` the concept graph in Neo4j too. The store is
    reached before anything is built, so an unreachable one leaves nothing behind."""
    import contextlib

    from ..stores.neo4j import is_neo4j_uri

    if args.embedder is not None:
        raise InputError("--embedder: names the node embedder of --edges; with --corpus, "
                         "--dense EMBEDDER embeds the chunks")
    if args.store is not None and not is_neo4j_uri(args.store):
        raise InputError(f"--store {args.store}: the concept graph goes to Neo4j, a bolt:// or "
                         "neo4j:// URI (the index folder --out keeps it as files)")
    args.concepts, args.lang = True, args.lang or DEFAULT_LANG
    opened: AbstractContextManager[Neo4jConceptStore | None] = contextlib.nullcontext()
    if args.store is not None:
        from ..concepts.neo4j_store import Neo4jConceptStore

        opened = Neo4jConceptStore(args.store)
    with opened as store:
        built = build_index(args, concept_store=store)
    concepts = built.pop("concepts")
    stored = concepts.pop("store", None)
    skipped = built.pop("skipped", None)
    info = {"graph": str(args.out), **concepts, "store": stored, "index": built}
    if skipped:
        info["skipped"] = skipped
    human = f"built into {args.out}: {_concepts_line(concepts)}; {_index_line(built)}"
    if stored:
        w, d = stored["written"], stored["deleted"]
        human += (f"; store {stored['uri']}: wrote {w['chunks']} chunks, {w['concepts']} concepts, "
                  f"{w['mentions']} mentions, {w['cooccurrences']} co-occurrences; deleted {d['chunks']} "
                  f"chunks, {d['concepts']} concepts, {d['mentions']} mentions, {d['cooccurrences']} "
                  f"co-occurrences in {stored['seconds']} s")
    _emit(info, args.json, human)
    return 0
