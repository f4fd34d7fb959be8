"""How often the graph pipeline's "several answers" note fires on PathQuestion PQ-2H: for a
range of ``ambiguity_margin`` values, the right answers that get alternatives (a needless
note), the wrong ones that do, and the wrong ones whose alternatives hold the right answer.
Every ``--every``-th question, ``--no-llm``, default parameters otherwise.

    PYTHONPATH=. .venv/bin/python bench/ambiguity.py   -> outputs/bench/ambiguity.json
"""

from __future__ import annotations

import argparse
import json

from _common import ROOT, SHARED, write
from pathquestion import convert
from ragkit.config import GraphConfig
from ragkit.multihop.graph import GraphRAG

MARGINS = (0.01, 0.02, 0.03, 0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=3, help="take every N-th question")
    args = parser.parse_args()
    work = ROOT / "outputs" / "ambiguity"
    edges, questions = convert(SHARED / "pathquestion" / "2H-kb.txt", SHARED / "pathquestion" / "PQ-2H.txt", work)
    GraphRAG.build(edges, work / "graph", progress=False)
    rag = GraphRAG.load(work / "graph")
    widest = GraphConfig(ambiguity_margin=max(MARGINS))
    rows = []
    for line in questions.read_text(encoding="utf-8").splitlines()[::args.every]:
        item = json.loads(line)
        result = rag.query(item["question"], widest)
        gaps = [(result["paths"][0]["score"] - a["score"], a["answer"] in item["answers"])
                for a in result["alternatives"]]
        rows.append((result["answer"] in item["answers"], gaps))
    table = {}
    for margin in MARGINS:
        noted = [(right, [g for g in gaps if g[0] <= margin]) for right, gaps in rows]
        table[str(margin)] = {"right_noted": sum(1 for right, g in noted if right and g),
                              "wrong_noted": sum(1 for right, g in noted if not right and g),
                              "wrong_with_right_among_alternatives": sum(
                                  1 for right, g in noted if not right and any(ok for _, ok in g))}
    result = {"questions": len(rows), "right": sum(1 for right, _ in rows if right),
              "wrong": sum(1 for right, _ in rows if not right), "by_margin": table,
              "default_margin": GraphConfig().ambiguity_margin}
    print(json.dumps(result, indent=1))
    write("ambiguity", result)


if __name__ == "__main__":
    main()
