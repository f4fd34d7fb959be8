"""Answer-level figures: ``ragkit eval answers`` on MuSiQue (English, multi-hop, hybrid
retrieval, top 5) and on the Vietnamese manual questions (``data/manual_questions.jsonl``,
written for ragkit), with no model, the default SmolLM2-135M and Qwen2.5-Coder-1.5B (when
installed: ``make model``). Each run is the CLI as a user types it.

    .venv/bin/python bench/answers.py [--musique-limit 100] [--qwen-musique-limit 30] [--models ...]
        -> outputs/bench/answers.json

The 1.5B model takes some 40 s per answer on this 2-core machine, so it answers the first
``--qwen-musique-limit`` MuSiQue questions only (the others run all 100).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _common import ROOT, SHARED, write
from ragkit.eval.datasets import musique_to_questions
from ragkit.models import installed_path

MUSIQUE = SHARED / "multihop_passages"


def cli(*argv: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "ragkit.cli", *argv], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"ragkit {' '.join(argv)}: {proc.stderr.strip()}")
    return json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--musique-limit", type=int, default=100)
    parser.add_argument("--qwen-musique-limit", type=int, default=30)
    parser.add_argument("--models", nargs="+", choices=["none", "smollm2-135m", "qwen2.5-coder-1.5b"],
                        help="measure these only; the others' figures are kept from the last run")
    args = parser.parse_args()
    questions = musique_to_questions(MUSIQUE / "musique_beir", MUSIQUE / "musique_questions.json",
                                     ROOT / "outputs" / "datasets" / "musique" / "questions.jsonl")
    index = ROOT / "outputs" / "index" / "musique"
    if not (index / "meta.json").exists():
        cli("index", "build", "--corpus", str(MUSIQUE / "musique_beir" / "corpus.jsonl"), "--out", str(index),
            "--dense", "--json")
    manuals = ROOT / "outputs" / "index" / "manuals-bench"
    cli("index", "build", "--corpus", str(ROOT / "data" / "manuals"), "--out", str(manuals), "--json")
    models = {"none": None, "smollm2-135m": ""}
    if installed_path("qwen2.5-coder-1.5b"):
        models["qwen2.5-coder-1.5b"] = "qwen2.5-coder-1.5b"
    if args.models:
        models = {m: v for m, v in models.items() if m in args.models}
    sets = {"musique": (questions, index, ["--method", "hybrid", "--k", "5"]),
            "manuals_vi": (ROOT / "data" / "manual_questions.jsonl", manuals, [])}
    last = ROOT / "outputs" / "bench" / "answers.json"
    results: dict = json.loads(last.read_text())["results"] if args.models and last.exists() else {}
    for set_name, (path, idx, flags) in sets.items():
        for model, name in models.items():
            limit = args.musique_limit if set_name == "musique" else 1000
            if set_name == "musique" and model == "qwen2.5-coder-1.5b":
                limit = args.qwen_musique_limit
            argv = ["eval", "answers", "--questions", str(path), "--index", str(idx), *flags,
                    "--limit", str(limit), "--json"]
            argv += ["--no-llm"] if name is None else (["--model", name] if name else [])
            print(f"{set_name} / {model} ...", flush=True)
            result = cli(*argv)
            result["command"] = "ragkit " + " ".join(a if not a.startswith(str(ROOT)) else a[len(str(ROOT)) + 1:]
                                                     for a in argv)
            results.setdefault(set_name, {})[model] = result
    write("answers", {"results": results})


if __name__ == "__main__":
    main()
