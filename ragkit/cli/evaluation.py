"""The ``eval`` commands: ``retrieval`` (or a run file scored), ``compare`` (two runs),
``graphqa``, ``answers`` (against gold answers) and ``mcq``."""

from __future__ import annotations

import argparse

from ..errors import InputError
from .output import _emit, _progress
from .pipeline_options import _pipeline_arguments


# Options of eval retrieval that shape a ranking ragkit makes: a run read with --run has none.
RANKING_OPTIONS = ("corpus", "queries", "method", "embedder", "fusion", "alpha", "dense_dir", "mmr", "rerank",
                   "rerank_depth", "run_out", "answers", "lang", "keep_accents", "bigrams", "k1", "b", "idf",
                   "dedupe")


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from ..eval.retrieval import evaluate_retrieval, evaluate_run_file
    from ..retrieval.bm25 import BM25Params

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
    from ..eval.compare import compare_runs, compare_table

    result = compare_runs(args.run_a, args.run_b, args.qrels, metrics=args.metric, permutations=args.permutations,
                          seed=args.seed, ignore_identical_ids=args.ignore_identical_ids, limit=args.limit)
    _emit(result, args.json, compare_table(result))
    return 0


def cmd_eval_graphqa(args: argparse.Namespace) -> int:
    from ..eval.graphqa import evaluate_graphqa

    result = evaluate_graphqa(args.graph, args.questions, progress=_progress(args), limit=args.limit)
    _emit(result, args.json, "\n".join(f"{k:>16}: {v}" for k, v in result.items()))
    return 0


def cmd_eval_answers(args: argparse.Namespace) -> int:
    from ..config import LLMConfig
    from ..eval.answers import evaluate_answers, load_questions
    from ..service import Service

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


def cmd_eval_mcq(args: argparse.Namespace) -> int:
    from ..eval.mcq import evaluate_mcq
    from ..specs import open_store

    llm = None
    if args.llm:
        from ..config import LLMConfig
        from ..llm.backends import default_llm

        llm = default_llm(LLMConfig.from_env(model_path=args.model))
    with open_store(args.store, must_exist=True) as store:
        result = evaluate_mcq(args.questions, store, progress=_progress(args), llm=llm)
    if not args.details:
        result.pop("details")
    _emit(result, args.json, f"{result['n']} questions, {result['answered']} answered, "
                             f"accuracy {result['accuracy']}")
    return 0
