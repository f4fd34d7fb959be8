"""Each hot path quiet and beside two CPU-bound processes: how much of its quiet speed ragkit
keeps on a busy machine (the ratio busy / quiet).

Hot paths, each run as a fresh process (what a CLI call or a new notebook kernel pays):
- ``bm25 eval``: ``ragkit eval retrieval`` on SciFact (BM25, 300 queries): its queries/s;
- ``embeddings``: MiniLM on ONNX Runtime (the default backend) embedding 96 SciFact abstracts,
  the model loaded before the clock: documents/s;
- ``model answer``: a GGUF (``--model``, Qwen2.5-Coder-1.5B by default: the model that
  answers once ``make model`` installed it) writing 48 tokens for a fixed prompt, loaded
  before the clock: tokens/s.

The busy processes are two ``while True: pass`` loops (one per core of this 2-core machine),
started before and stopped after each busy run. Quiet and busy runs alternate, ``--runs``
each; medians.

    PYTHONPATH=. .venv/bin/python bench/busy.py --label after
    PYTHONPATH=/tmp/before .venv/bin/python bench/busy.py --label before

Each run adds its label to ``outputs/bench/busy.json`` and keeps the others.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _common import SHARED, write_labelled

SCIFACT = SHARED / "scifact"

EMBED = """
import json, time
from ragkit.embeddings import local_embedder
texts = [json.loads(line)["text"] for line in open({corpus!r})][:960:10]
embedder = local_embedder("minilm")
embedder.encode(["warm-up"])
started = time.perf_counter()
embedder.encode(texts)
print(len(texts) / (time.perf_counter() - started))
"""
ANSWER = """
import time
from ragkit.config import LLMConfig
from ragkit.llm.gguf import GGUFModel
model = GGUFModel(LLMConfig(model_path={model!r}))
messages = [{{"role": "user", "content": "Explain in a few sentences how a milling machine is operated safely."}}]
model.chat(messages, max_tokens=4, temperature=0.0)
started = time.perf_counter()
out = model.chat(messages, max_tokens=48, temperature=0.0)
print(out.completion_tokens / (time.perf_counter() - started))
"""


def eval_qps() -> float:
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "eval", "retrieval", "--corpus",
                          str(SCIFACT / "corpus.jsonl"), "--queries", str(SCIFACT / "queries.jsonl"),
                          "--qrels", str(SCIFACT / "qrels" / "test.tsv"), "--lang", "en", "--json"],
                         capture_output=True, text=True, check=True)
    text = out.stdout
    return float(json.JSONDecoder().raw_decode(text[text.index("{"):])[0]["qps"])


def script(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def paths(model: str) -> dict:
    return {"bm25 eval (queries/s)": eval_qps,
            "embeddings (documents/s)": lambda: script(EMBED.format(corpus=str(SCIFACT / "corpus.jsonl"))),
            f"model answer, {model} (tokens/s)": lambda: script(ANSWER.format(model=model))}


def busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes beside the busy runs")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = parser.parse_args()
    import ragkit

    result: dict = {"code": os.path.dirname(ragkit.__file__), "threads": os.environ.get("RAGKIT_THREADS", "")}
    for name, run in paths(args.model).items():
        quiet, loaded = [], []
        for _ in range(args.runs):
            quiet.append(run())
            hogs = busy(args.busy)
            time.sleep(0.5)
            try:
                loaded.append(run())
            finally:
                for hog in hogs:
                    hog.kill()
                    hog.wait()
        q, b = statistics.median(quiet), statistics.median(loaded)
        result[name] = {"quiet": round(q, 1), "busy": round(b, 1), "ratio": round(b / q, 3),
                        "quiet_runs": [round(x, 1) for x in quiet], "busy_runs": [round(x, 1) for x in loaded]}
        print(f"{name:>26}: quiet {q:9.1f}  busy {b:9.1f}  ratio {b / q:.2f}")
    write_labelled("busy", args.label, result, busy_processes=args.busy, runs=args.runs,
                   command=f"PYTHONPATH=. .venv/bin/python bench/busy.py --label {args.label}")


if __name__ == "__main__":
    main()
