"""The ``ragkit`` command line. Every notebook step is also a command; ``--json`` prints one
JSON object on stdout, whose command names and keys stay stable: evaluations outside the
project drive them.

An error prints one line, ``ragkit: error: <input>: <problem>``, on stderr, and with
``--json`` also ``{"error": {"type", "message", "exit_code"}}`` on stdout; the exit status
says what went wrong (``ragkit.errors``): 2 usage, 3 bad input, 4 a dependency down or
missing, 1 anything else. A question (``ask``, ``explain``, ``search --query``, ``check
--answer``) given as ``-`` is read from stdin.

The commands live in modules by what they work on (``indexing``, ``knowledge``, ``asking``,
``evaluation``, ``models``, ``notebooks``, ``serving``), their declarations in ``commands``
and the parser built from those in ``parser``; this module holds ``main``, which parses,
runs the command and turns an error into its line and exit status. Heavy modules are
imported inside the command functions, so ``ragkit --help`` stays quick.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from ..errors import BAD_INPUT, OTHER, ClusterLost, InputError, RagkitError, UsageError
from .asking import cmd_ask, cmd_check, cmd_explain, read_evidence
from .commands import BM25, CONCEPT_VECTORS_HELP, LEXICAL, MODEL_EPILOG, MODEL_HELP
from .evaluation import (RANKING_OPTIONS, cmd_eval_answers, cmd_eval_compare, cmd_eval_graphqa, cmd_eval_mcq,
                         cmd_eval_retrieval)
from .indexing import build_index, cmd_graph_build, cmd_index_build, cmd_search, read_queries, search_batch
from .knowledge import cmd_kg_build, cmd_kg_import, cmd_terms_define, cmd_terms_resolve
from .models import cmd_model
from .notebooks import cmd_rebuild, cmd_run
from .parser import SHARED_HELP, Parser, build_parser
from .serving import cmd_serve

__all__ = [
    "main", "build_parser", "Parser", "SHARED_HELP", "MODEL_HELP", "MODEL_EPILOG", "CONCEPT_VECTORS_HELP",
    "LEXICAL", "BM25", "STDIN_ARGUMENTS",
    "build_index", "read_queries", "search_batch", "read_evidence", "RANKING_OPTIONS",
    "cmd_index_build", "cmd_search", "cmd_graph_build", "cmd_kg_build", "cmd_kg_import", "cmd_terms_resolve",
    "cmd_terms_define", "cmd_ask", "cmd_check", "cmd_explain", "cmd_eval_retrieval", "cmd_eval_compare",
    "cmd_eval_graphqa", "cmd_eval_answers", "cmd_eval_mcq", "cmd_model", "cmd_run", "cmd_rebuild", "cmd_serve",
]

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
        code = _fail(str(exc), type(exc).__name__, exc.exit_code, as_json)
        if isinstance(exc, ClusterLost):
            # The lost cluster's Ray threads would print tracebacks on the way down; the
            # build's staging is already removed, so nothing is left to finish.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    except ValueError as exc:  # a parameter our dataclasses refused
        return _fail(str(exc), "InputError", BAD_INPUT, as_json)
    except OSError as exc:     # a file the commands did not name themselves: still one line
        return _fail(f"{exc.filename or 'a file'}: {(exc.strerror or str(exc)).lower()}", "OSError", OTHER, as_json)
    except KeyboardInterrupt:
        print("ragkit: interrupted", file=sys.stderr)
        return 130

