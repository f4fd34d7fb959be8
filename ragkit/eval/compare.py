"""``ragkit eval compare``: two TREC runs scored on the same judged queries, and for every
metric whether run B's difference from run A is significant (``significance.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ..corpus import load_qrels
from ..errors import InputError
from .metrics import METRICS, per_query_metrics
from .retrieval import judged_rankings
from .significance import LEVEL, PERMUTATIONS, compare_metric, is_exact
from .trec import read_trec_run


def compare_rankings(a: Mapping[str, Sequence[tuple[str, float]]], b: Mapping[str, Sequence[tuple[str, float]]],
                     judged: Mapping[str, dict], *, metrics: Sequence[str] | None = None,
                     permutations: int = PERMUTATIONS, seed: int = 0, ignore_identical_ids: bool = False) -> dict:
    """Run B against run A ({query id: [(doc id, score), ...]} in rank order) on every judged
    query (a query a run lacks scores 0 there), per metric: mean A, mean B, delta (B − A),
    the randomization test's and the paired t-test's p-values, and whether p < 0.05
    (randomization). metrics: names from ``METRICS`` (default all)."""
    names = list(metrics or METRICS)
    unknown = [m for m in names if m not in METRICS]
    if unknown:
        raise InputError(f"--metric: {unknown[0]!r} is not one of {', '.join(METRICS)}")
    if permutations < 1:
        raise InputError(f"--permutations: must be at least 1, got {permutations}")
    rows = [per_query_metrics(judged_rankings(run, judged, ignore_identical_ids), judged) for run in (a, b)]
    queries = list(judged)
    out = {"queries": len(queries), "test": "Fisher's randomization test (paired, two-sided)",
           **({"permutations": 2 ** len(queries), "exact": True} if is_exact(len(queries), permutations)
              else {"permutations": permutations, "exact": False, "seed": seed}),
           "level": LEVEL, "metrics": {}}
    for name in names:
        result = compare_metric(name, [rows[0][q][name] for q in queries], [rows[1][q][name] for q in queries],
                                permutations, seed)
        out["metrics"][name] = {k: v for k, v in result.to_dict().items() if k not in ("metric", "queries")}
    if ignore_identical_ids:
        out["ignore_identical_ids"] = True
    return out


def compare_runs(run_a: str | Path, run_b: str | Path, qrels: str | Path, *, metrics: Sequence[str] | None = None,
                 permutations: int = PERMUTATIONS, seed: int = 0, ignore_identical_ids: bool = False,
                 limit: int | None = None) -> dict:
    """``eval compare``: two TREC run files compared by ``compare_rankings`` on the judged
    queries of ``qrels`` (the first ``limit`` of them), each scored as ``eval retrieval
    --run`` scores it, so the means are the figures that prints."""
    if limit is not None and limit < 1:
        raise InputError(f"--limit: must be at least 1, got {limit}")
    judged = load_qrels(qrels)
    if limit is not None:
        judged = dict(list(judged.items())[:limit])
    runs = [read_trec_run(path) for path in (run_a, run_b)]
    result = compare_rankings(runs[0].rankings, runs[1].rankings, judged, metrics=metrics,
                              permutations=permutations, seed=seed, ignore_identical_ids=ignore_identical_ids)
    return {"a": str(run_a), "b": str(run_b), "tag_a": runs[0].tag, "tag_b": runs[1].tag,
            "queries_not_in_run": {"a": sum(1 for q in judged if q not in runs[0].rankings),
                                   "b": sum(1 for q in judged if q not in runs[1].rankings)},
            **result}


def compare_table(result: dict) -> str:
    """``compare_runs``' result as the table ``eval compare`` prints."""
    lines = [f"A: {result['a']} ({result['tag_a']})", f"B: {result['b']} ({result['tag_b']})",
             f"{'metric':<11}{'mean A':>9}{'mean B':>9}{'delta':>10}{'p':>8}{'p (t)':>8}  significant"]
    for name, m in result["metrics"].items():
        t = "-" if m["p_ttest"] is None else f"{m['p_ttest']:.4f}"
        lines.append(f"{name:<11}{m['mean_a']:>9.4f}{m['mean_b']:>9.4f}{m['delta']:>+10.4f}"
                     f"{m['p_randomization']:>8.4f}{t:>8}  {'yes' if m['significant'] else 'no'}")
    flips = (f"all {result['permutations']:,} sign flips" if result["exact"] else
             f"{result['permutations']:,} random sign flips, seed {result['seed']}")
    lines.append(f"{result['queries']} queries; p: {result['test']}, {flips}; "
                 f"significant: p < {result['level']}; p (t): paired t-test")
    return "\n".join(lines)
