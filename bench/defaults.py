"""Defaults chosen from the data, measured through the command line as a user types it
(``python -m ragkit.cli eval retrieval ... --json``, one process per run):

- SciFact (English, 5,183 abstracts, 300 test queries): ``eval retrieval`` with no flags
  (``--lang auto`` reads the corpus as English) against ``--lang en`` and the old default
  ``--lang vi``. qps: the median of five runs.
- ALQAC 2023 (Vietnamese laws, 2,256 articles, 76 statements): ``--method hybrid`` with no
  other flags (``--lang auto`` -> vi, ``--embedder auto`` -> multilingual E5, the config's
  fusion) against BM25 with no flags.
- Fusion: ``--method hybrid --fusion rrf`` and ``--fusion weighted --alpha 0.3/0.5/0.7`` on both
  sets (embedders as auto chooses them: MiniLM for SciFact, E5 for ALQAC). The config's default
  (ragkit/config.py, LexicalConfig.fusion/alpha) is the best mean nDCG@10 over the two sets.
- Speed of the path eval now takes: ``retrieve`` (what search and ask call) against the bare
  ``BM25Index.search`` the old eval called, in process, best of five passes over the SciFact
  queries (one CLI pass takes 0.1 s, so its qps varies by a third from run to run).
- ``--before DIR``: the same commands run by an earlier checkout of ragkit in DIR (whose own
  defaults then apply: --lang vi, --embedder minilm, --fusion rrf), for before/after figures.
  Its vectors are cached under DIR/outputs/dense.

ALQAC is converted to BEIR files once, into outputs/datasets/alqac (a fixed place, so its
chunk vectors are cached under outputs/dense between runs).

    .venv/bin/python bench/defaults.py [--before DIR]   -> outputs/bench/defaults.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _common import ROOT, SHARED, median_time, write
from ragkit.config import LexicalConfig
from ragkit.eval.datasets import alqac_to_beir

KEYS = ("ndcg@10", "recall@2", "recall@5", "recall@10", "recall@100", "mrr@10", "hit@1", "qps", "index_s",
        "lang", "lang_detected", "lang_reason", "embedder", "fusion", "alpha", "rrf_k", "dense_embedded")
ALPHAS = (0.3, 0.5, 0.7)


def collections() -> dict[str, dict[str, Path]]:
    sci = SHARED / "scifact"
    alqac = ROOT / "outputs" / "datasets" / "alqac"
    if not (alqac / "corpus.jsonl").exists():
        vi = SHARED / "vi_legal"
        alqac_to_beir(vi / "alqac_102023_legal_passages.json", vi / "alqac_102023_train.json", alqac)
    return {"scifact": {"corpus": sci / "corpus.jsonl", "queries": sci / "queries.jsonl",
                        "qrels": sci / "qrels" / "test.tsv"},
            "alqac": {"corpus": alqac / "corpus.jsonl", "queries": alqac / "queries.jsonl",
                      "qrels": alqac / "qrels" / "test.tsv"}}


def shown(path: Path) -> str:
    """A path as the README's commands write it (relative to the checkout)."""
    return os.path.relpath(path, ROOT)


class Runner:
    """``ragkit eval retrieval`` in a fresh process, with the code of ``checkout``."""

    def __init__(self, checkout: Path):
        self.checkout = checkout

    def __call__(self, files: dict[str, Path], *flags: str, repeat: int = 1) -> dict:
        argv = ["eval", "retrieval", "--corpus", str(files["corpus"]), "--queries", str(files["queries"]),
                "--qrels", str(files["qrels"]), *flags, "--json"]
        results = []
        for _ in range(repeat):
            proc = subprocess.run([sys.executable, "-m", "ragkit.cli", *argv], cwd=self.checkout,
                                  capture_output=True, text=True, timeout=3600,
                                  env={**os.environ, "PYTHONPATH": str(self.checkout)})
            if proc.returncode != 0:
                raise SystemExit(f"ragkit {' '.join(argv)}: {proc.stderr.strip()}")
            results.append(json.loads(proc.stdout))
        out = {k: results[0][k] for k in KEYS if k in results[0]}
        if repeat > 1:
            out["qps_runs"] = [r["qps"] for r in results]
            out["qps"] = statistics.median(out["qps_runs"])
        command = ["ragkit", "eval", "retrieval", "--corpus", shown(files["corpus"]), "--queries",
                   shown(files["queries"]), "--qrels", shown(files["qrels"]), *flags, "--json"]
        out["command"] = " ".join(command)
        print(f"{' '.join(flags) or '(no flags)':>44}  {files['corpus'].parent.name:>8}: "
              f"nDCG@10 {out['ndcg@10']:.4f}  MRR@10 {out['mrr@10']:.4f}  {out['qps']} q/s", flush=True)
        return out


def headline(run: Runner, sets: dict) -> dict:
    sci, alqac = sets["scifact"], sets["alqac"]
    return {"scifact": {"no flags": run(sci, repeat=5), "--lang en": run(sci, "--lang", "en", repeat=5),
                        "--lang vi": run(sci, "--lang", "vi", repeat=5)},
            "alqac": {"bm25 (no flags)": run(alqac, repeat=5),
                      "--method hybrid": run(alqac, "--method", "hybrid")}}


def fusion_comparison(run: Runner, sets: dict) -> dict:
    table = {}
    for name, files in sets.items():
        table[name] = {"rrf": run(files, "--method", "hybrid", "--fusion", "rrf")}
        for alpha in ALPHAS:
            table[name][f"weighted {alpha}"] = run(files, "--method", "hybrid", "--fusion", "weighted",
                                                   "--alpha", str(alpha))
    labels = list(table["scifact"])
    mean = {label: round(statistics.mean(table[s][label]["ndcg@10"] for s in table), 5) for label in labels}
    best = max(labels, key=lambda label: mean[label])
    return {"by_set": table, "mean_ndcg@10": mean, "best": best}


def speed(files: dict[str, Path]) -> dict:
    """Queries per second of ``retrieve`` (eval's path now) and of ``BM25Index.search`` (the
    old eval's), best of five passes over the judged queries, in this process."""
    from ragkit.corpus import load_beir_queries, load_corpus, load_qrels
    from ragkit.eval.retrieval import eval_config
    from ragkit.retrieval.bm25 import BM25Index
    from ragkit.retrieval.search import retrieve

    index = BM25Index.for_corpus(load_corpus(files["corpus"]), progress=False)
    all_queries = load_beir_queries(files["queries"])
    queries = [all_queries[q] for q in load_qrels(files["qrels"])]
    config = eval_config()

    def qps(search) -> float:
        best = min(median_time(lambda: [search(q) for q in queries], repeat=5)[1])
        return round(len(queries) / best, 1)

    out = {"BM25Index.search(k=100, boost=False)": qps(lambda q: index.search(q, k=100, boost=False)),
           "retrieve(eval_config())": qps(lambda q: retrieve(index, q, config, trace={}))}
    print(f"speed: {out}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="an earlier ragkit checkout to measure the same commands with")
    args = parser.parse_args()
    sets = collections()
    after = Runner(ROOT)
    print("this checkout:")
    result = {"after": headline(after, sets)}
    fusion = fusion_comparison(after, sets)
    config = LexicalConfig()
    default = "rrf" if config.fusion == "rrf" else f"weighted {config.alpha}"
    fusion["config_default"] = default
    if fusion["best"] != default:
        print(f"note: the config's fusion default is {default!r}, the measured best {fusion['best']!r}")
    result["fusion"] = fusion
    result["speed_scifact_bm25"] = speed(sets["scifact"])
    if args.before:
        print(f"before ({args.before}):")
        before = Runner(args.before.resolve())
        result["before"] = headline(before, sets)
        result["before"]["checkout"] = subprocess.run(["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"],
                                                      capture_output=True, text=True).stdout.strip() or str(args.before)
    sci, alqac = result["after"]["scifact"], result["after"]["alqac"]
    result["checks"] = {
        "scifact no flags == --lang en (nDCG@10)": sci["no flags"]["ndcg@10"] == sci["--lang en"]["ndcg@10"],
        "alqac hybrid MRR@10 >= bm25 MRR@10": alqac["--method hybrid"]["mrr@10"] >= alqac["bm25 (no flags)"]["mrr@10"],
    }
    result["alqac_to_beir"] = ("python -c \"from ragkit.eval.datasets import alqac_to_beir; alqac_to_beir("
                               "'../shared/datasets/vi_legal/alqac_102023_legal_passages.json', "
                               "'../shared/datasets/vi_legal/alqac_102023_train.json', 'outputs/datasets/alqac')\"")
    write("defaults", result)


if __name__ == "__main__":
    main()
