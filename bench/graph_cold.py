"""What a user pays first: a built graph loaded in a fresh process and its first question
(the embedder's start, and the walk's one-off reads of the graph: which relations are
stated both ways, which words name kinds), then the same question again.

    PYTHONPATH=. .venv/bin/python bench/graph_cold.py --label after GRAPH_DIR "QUESTION"
    PYTHONPATH=/tmp/before .venv/bin/python bench/graph_cold.py --label before GRAPH_DIR "QUESTION"

Each run is its own process (run it once per figure); results are added to
``outputs/bench/graph_cold.json`` under the label and the graph's folder name.
"""

from __future__ import annotations

import argparse
import json
import time

from _common import OUT, write


def main() -> None:
    started = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("graph")
    parser.add_argument("question")
    args = parser.parse_args()
    from ragkit.multihop.graph import GraphRAG

    imported = time.perf_counter()
    rag = GraphRAG.load(args.graph)
    loaded = time.perf_counter()
    rag.query(args.question)
    first = time.perf_counter()
    rag.query(args.question)
    second = time.perf_counter()
    result = {"nodes": rag.graph.number_of_nodes(), "edges": rag.graph.number_of_edges(),
              "import_s": round(imported - started, 2), "load_s": round(loaded - imported, 2),
              "first_query_ms": round((first - loaded) * 1000, 1), "second_query_ms": round((second - first) * 1000, 1)}
    print(json.dumps(result))
    path = OUT / "graph_cold.json"
    runs = json.loads(path.read_text())["runs"] if path.is_file() else {}
    runs.setdefault(args.label, {})[args.graph.rstrip("/").split("/")[-2]] = result
    write("graph_cold", {"runs": runs, "command": "PYTHONPATH=. .venv/bin/python bench/graph_cold.py --label LABEL GRAPH Q"})


if __name__ == "__main__":
    main()
