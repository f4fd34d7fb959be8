"""The parser of the whole command line (``build_parser``), built from the commands'
declarations (``commands.COMMANDS``), in the order ``ragkit --help`` lists them, and the help
text shared by options of the same name (``SHARED_HELP``)."""

from __future__ import annotations

import argparse

from .. import __version__
from ..errors import UsageError
from .commands import COMMANDS, GROUPS, PIPELINE_FLAGS, Command, Flag, OneOf

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


def build_parser(with_pipelines: bool = True) -> argparse.ArgumentParser:
    """The command line. ``with_pipelines=False`` leaves out the flags that each pipeline
    declares (``ask`` and ``eval answers``), so that other commands need not import the
    pipelines."""
    parser = Parser(prog="ragkit", description="ragkit: retrieval-augmented and knowledge-graph question "
                                               "answering with cited evidence, offline.")
    parser.add_argument("--version", action="version", version=f"ragkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    groups: dict[str, argparse._SubParsersAction] = {}
    for command in COMMANDS:
        under = sub
        if len(command.path) > 1:
            group = command.path[0]
            if group not in groups:
                groups[group] = sub.add_parser(group, help=GROUPS[group]).add_subparsers(dest="action", required=True)
            under = groups[group]
        _add_command(under, command, with_pipelines)
    _fill_help(parser)
    return parser


def _add_command(under: argparse._SubParsersAction, command: Command, with_pipelines: bool) -> None:
    # an epilog is printed as written (its lines are a list)
    formatter = argparse.RawDescriptionHelpFormatter if command.epilog is not None else argparse.HelpFormatter
    p = under.add_parser(command.path[-1], help=command.help, description=command.description,
                         epilog=command.epilog, formatter_class=formatter)
    for item in command.flags:
        if isinstance(item, Flag):
            item.add_to(p)
        elif isinstance(item, OneOf):
            group = p.add_mutually_exclusive_group(required=item.required)
            for one in item.flags:
                one.add_to(group)
        elif item is not PIPELINE_FLAGS or with_pipelines:
            item(p)
    p.set_defaults(func=command.run, **command.defaults)
