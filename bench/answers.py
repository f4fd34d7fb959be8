"""Answer-level figures, in the shape of the field's tables: ``ragkit eval answers`` on
MuSiQue (English, 2–4 hops, concept-graph retrieval, top 5; the first 50 questions are the half the
defaults were chosen on, the last 50 the half held out), on the HotpotQA dev questions
(English, bridge and comparison, each question's own ten paragraphs pooled into one corpus,
the same retrieval; the first 25 and the last 25 reported apart), on the hand-written handbook
questions (English, ``data/handbook_questions.jsonl``) and on the Vietnamese factoid
questions over the manuals (``data/manual_factoid_questions.jsonl``), questions that compare
two items over each (``data/handbook_compared_questions.jsonl``,
``data/manual_compared_questions.jsonl``), and the unanswerable
questions of the kg pipeline over the biomedical graph (``data/kg_unanswerable_questions.jsonl``,
English and Vietnamese), each with no model,
with Qwen2.5-Coder-1.5B in one pass (``--steps 1``) and in up to two steps (when installed:
``make model``). Each run is the CLI as a user types it.

    .venv/bin/python bench/answers.py [--sets musique handbook manuals_vi] [--methods ...] [--limit N]
        -> outputs/bench/answers.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _common import ROOT, SHARED, write
from ragkit.eval.datasets import musique_to_questions
from ragkit.llm.catalog import installed_path

MUSIQUE = SHARED / "multihop_passages"
# Multi-hop questions are asked over the concept graph (chosen on the tune half: the reader's
# chunks held a gold answer for 0.50 of its questions with `graph`, 0.40 with `hybrid+graph`
# and 0.30 with `hybrid`, top 5, no model).
MUSIQUE_METHOD = "graph"
QWEN = "qwen2.5-coder-1.5b"
# method name -> the flags it adds to `ragkit eval answers`
METHODS = {"none": ["--no-llm", "--steps", "1"], "none-2steps": ["--no-llm", "--steps", "2"],
           "qwen-1step": ["--model", QWEN, "--steps", "1"], "qwen-2steps": ["--model", QWEN, "--steps", "2"]}


def cli(*argv: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "ragkit.cli", *argv], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"ragkit {' '.join(argv)}: {proc.stderr.strip()}")
    return json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}


def halves(result: dict, cut: int) -> dict:
    """Short-answer EM and F1 over the questions before ``cut`` and from it on."""
    rows = result.get("details") or []
    out = {}
    for name, part in (("tune", rows[:cut]), ("held_out", rows[cut:])):
        if part:
            out[name] = {"n": len(part), "short_em": round(sum(r["short_em"] for r in part) / len(part), 4),
                         "short_f1": round(sum(r["short_f1"] for r in part) / len(part), 4)}
    return out


def by_shape(result: dict, path) -> dict:
    """Short-answer EM and F1 over the answerable factoid questions (name, date, number,
    yes/no) of a question file that marks each question's ``shape``, and over each shape."""
    items = {str(q.get("id")): q for q in map(json.loads, open(path, encoding="utf-8").read().splitlines()) if q}
    rows = [r for r in result.get("details") or [] if r["id"] in items and items[r["id"]].get("answerable", True)]
    out = {}
    groups = {"factoid": [r for r in rows if items[r["id"]].get("shape") in ("name", "date", "number", "yesno")]}
    for r in rows:
        groups.setdefault(items[r["id"]].get("shape", "other"), []).append(r)
    for name, part in groups.items():
        if part:
            out[name] = {"n": len(part), "short_em": round(sum(r["short_em"] for r in part) / len(part), 4),
                         "short_f1": round(sum(r["short_f1"] for r in part) / len(part), 4)}
    unanswerable = [r for r in result.get("details") or [] if r["id"] in items
                    and items[r["id"]].get("answerable") is False]
    if unanswerable:
        out["unanswerable"] = {"n": len(unanswerable), "abstained": sum(1 for r in unanswerable if r["abstained"])}
    return out


LABELS = {"musique": "MuSiQue", "hotpotqa": "HotpotQA dev", "handbook": "handbook, en", "manuals_vi": "manuals, vi",
          "compared_en": "compared, en", "compared_vi": "compared, vi", "kg_unanswerable": "kg unanswerable, en+vi"}
# Sets reported in two halves: the first ``n`` questions and the rest.
HALVES = {"musique": 50, "hotpotqa": 25}
METHOD_LABELS = {"none": "no LLM, one pass", "none-2steps": "no LLM, up to two steps",
                 "qwen-1step": "1.5B, one pass", "qwen-2steps": "1.5B, up to two steps"}


def table(results: dict) -> str:
    """The docs' table rows (docs/benchmarks/answers.md) from the results."""
    lines = ["| set | method | short EM | short F1 | factoid EM (n) | EM / F1 whole | accepted / fallback "
             "| abstained (right) | gold retrieved / read | context tokens | steps 1/2/3 | s per answer |", "|" + "---|" * 12]
    for set_name, methods in results.items():
        for method, r in methods.items():
            if set_name in HALVES:
                h = r.get("halves", {})
                part = " / ".join(f"{k.replace('_', '-')} {v['short_em']:.2f}" for k, v in h.items())
            else:
                f = (r.get("by_shape") or {}).get("factoid") or {}
                part = f"{f.get('short_em', 0):.2f} ({f.get('n', 0)})"
            steps = "/".join(str(r.get("steps", {}).get(str(i), 0)) for i in (1, 2, 3))
            lines.append(f"| {LABELS.get(set_name, set_name)} ({r['n']}) | {METHOD_LABELS.get(method, method)} "
                         f"| {r['short_em']:.3f} | {r['short_f1']:.3f} | {part} | {r['em']:.2f} / {r['f1']:.3f} "
                         f"| {r['accepted']:.2f} / {r['fallback']:.2f} | {r['abstained']} ({r['abstention_right']}) "
                         f"| {r.get('gold_in_retrieved', float('nan')):.2f} / {r['gold_in_evidence']:.2f} "
                         f"| {r.get('median_context_tokens', '')} | {steps} | {r['seconds_per_answer']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+",
                        default=["musique", "hotpotqa", "handbook", "manuals_vi", "compared_en", "compared_vi",
                                 "kg_unanswerable"])
    parser.add_argument("--method", default=MUSIQUE_METHOD, help="the multi-hop sets' retrieval method")
    parser.add_argument("--k", type=int, default=5, help="the multi-hop sets' chunks of evidence")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--table", action="store_true", help="print the docs' table from the last results")
    parser.add_argument("--out", default="answers", help="the results' name under outputs/bench/")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads((ROOT / "outputs" / "bench" / "answers.json").read_text())["results"]))
        return
    indexes = ROOT / "outputs" / "index"
    sets = {}
    # multi-hop sets: name -> (their files' prefix, the index folder)
    for name, prefix, folder in (("musique", "musique", "musique"), ("hotpotqa", "hotpotqa_dev", "hotpotqa_dev")):
        if name not in args.sets:
            continue
        questions = musique_to_questions(MUSIQUE / f"{prefix}_beir", MUSIQUE / f"{prefix}_questions.json",
                                         ROOT / "outputs" / "datasets" / folder / "questions.jsonl")
        if not (indexes / folder / "concepts").exists():
            cli("index", "build", "--corpus", str(MUSIQUE / f"{prefix}_beir" / "corpus.jsonl"),
                "--out", str(indexes / folder), "--dense", "--concepts", "--json")
        sets[name] = (questions, indexes / folder, ["--method", args.method, "--k", str(args.k)])
    if "kg_unanswerable" in args.sets:      # the kg pipeline over the biomedical graph
        store = ROOT / "outputs" / "kg" / "biomed-bench.json.gz"
        cli("kg", "import", "--nodes", str(ROOT / "data" / "biomed" / "nodes.csv"),
            "--edges", str(ROOT / "data" / "biomed" / "edges.csv"), "--store", str(store))
        sets["kg_unanswerable"] = (ROOT / "data" / "kg_unanswerable_questions.jsonl", store, ["--pipeline", "kg"])
    for name, corpus, questions in (("handbook", "handbook", "handbook_questions.jsonl"),
                                    ("manuals_vi", "manuals", "manual_factoid_questions.jsonl"),
                                    ("compared_en", "handbook", "handbook_compared_questions.jsonl"),
                                    ("compared_vi", "manuals", "manual_compared_questions.jsonl")):
        if name in args.sets:
            cli("index", "build", "--corpus", str(ROOT / "data" / corpus), "--out", str(indexes / f"{corpus}-bench"),
                "--json")
            sets[name] = (ROOT / "data" / questions, indexes / f"{corpus}-bench", [])
    methods = [m for m in args.methods if not m.startswith("qwen") or installed_path(QWEN)]
    last = ROOT / "outputs" / "bench" / f"{args.out}.json"
    results: dict = json.loads(last.read_text()).get("results", {}) if last.exists() else {}
    for set_name, (path, index, flags) in sets.items():
        for method in methods:
            where = ["--store", str(index)] if "--pipeline" in flags else ["--index", str(index)]
            model = [f for f in METHODS[method] if "--pipeline" not in flags or f not in ("--steps", "1", "2")]
            if "--pipeline" in flags and method.endswith("2steps"):
                continue        # steps are the lexical pipeline's
            argv = ["eval", "answers", "--questions", str(path), *where, *flags,
                    "--limit", str(args.limit), "--json", "--details", *model]
            print(f"{set_name} / {method} ...", flush=True)
            result = cli(*argv)
            result["command"] = "ragkit " + " ".join(a if not a.startswith(str(ROOT)) else a[len(str(ROOT)) + 1:]
                                                     for a in argv)
            if set_name in HALVES:
                result["halves"] = halves(result, HALVES[set_name])
            else:
                result["by_shape"] = by_shape(result, path)
            print({k: result.get(k) for k in ("n", "short_em", "short_f1", "em", "f1", "accepted", "fallback",
                                              "gold_in_retrieved", "gold_in_evidence", "median_context_tokens",
                                              "seconds_per_answer", "steps", "halves")},
                  (result.get("by_shape") or {}).get("factoid"), flush=True)
            results.setdefault(set_name, {})[method] = result
            write(args.out, {"results": results})


if __name__ == "__main__":
    main()
