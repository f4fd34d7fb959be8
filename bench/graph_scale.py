"""Graph RAG latency on a generated graph of 1,000,000 edges with hub nodes, and on
PathQuestion's KB, without the LLM: build time, Chroma size, and query latency p50/p95
(whole query and per stage).

The generated graph: 100,000 people with spouses, children/parents, nationality, place of
birth, institution, profession and awards; "knows" edges whose targets follow a Zipf law,
so a few people have tens of thousands of edges; every country, city and prize is a hub.
Questions: one- and two-hop ("What is the nationality of X's spouse?"), a fifth of them
about hub people, with gold answers found by following the relations.

    .venv/bin/python bench/graph_scale.py       -> outputs/bench/graph_scale.json
"""

from __future__ import annotations

import csv
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from _common import ROOT, write
from ragkit.multihop.graph import GraphRAG, Hop, display
from ragkit.runtime.profiler import Profiler

EDGES = 1_000_000
PEOPLE = 100_000
SYLLABLES = ("ka len mo ro vi an dre sa li to ne mar el ia gu sta fe rin do bo "
             "lu chi ha ve nor tam isa ber quin zol").split()


def person_name(rng: random.Random, i: int) -> str:
    first = "".join(rng.choice(SYLLABLES) for _ in range(2)).capitalize()
    last = "".join(rng.choice(SYLLABLES) for _ in range(3)).capitalize()
    return f"{first}_{last}_{i}"


def generate(path: Path, seed: int = 7) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    people = [person_name(rng, i) for i in range(PEOPLE)]
    countries = [f"Country_{c}" for c in range(200)]
    cities = [f"City_{c}" for c in range(5000)]
    institutions = [f"University_of_{c}" for c in range(2000)]
    professions = [f"Profession_{c}" for c in range(300)]
    prizes = [f"Prize_in_Field_{c}" for c in range(50)]
    zipf = lambda n: min(int(rng.paretovariate(1.1)) - 1, n - 1)   # noqa: E731 - hubs at low indices
    rows: list[tuple[str, str, str]] = []
    for i, p in enumerate(people):
        rows.append((p, "nationality", countries[zipf(len(countries))]))
        rows.append((p, "place_of_birth", cities[zipf(len(cities))]))
        rows.append((p, "institution", institutions[zipf(len(institutions))]))
        rows.append((p, "profession", professions[zipf(len(professions))]))
        if rng.random() < 0.1:
            rows.append((p, "award", prizes[zipf(len(prizes))]))
        if i % 2 == 0 and i + 1 < PEOPLE:
            rows += [(p, "spouse", people[i + 1]), (people[i + 1], "spouse", p)]
        for _ in range(rng.randint(0, 2)):
            child = people[rng.randrange(PEOPLE)]
            if child != p:
                rows += [(p, "children", child), (child, "parents", p)]
    rows = list(dict.fromkeys(rows))    # one edge per (source, relation, target), as the graph keeps them
    knows = set()
    while len(rows) + len(knows) < EDGES:    # "knows": Zipf targets, so people 0..9 are hubs
        a, b = people[rng.randrange(PEOPLE)], people[zipf(PEOPLE)]
        if a != b:
            knows.add((a, "knows", b))
    rows += sorted(knows)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source", "relation", "target"])
        writer.writerows(rows)
    return people, people[:10]


def questions(rag: GraphRAG, people: list[str], hubs: list[str], n: int = 300, seed: int = 11) -> list[dict]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        anchor = rng.choice(hubs) if len(out) % 5 == 0 else rng.choice(people)
        first = sorted({r for _, _, r in rag.graph.out_edges(anchor, keys=True)} - {"knows"})
        if not first:
            continue
        r1 = rng.choice(first)
        mids = [t for _, t, r in rag.graph.out_edges(anchor, keys=True) if r == r1]
        if len(out) % 2 == 0 or r1 not in ("spouse", "children", "parents"):
            q, seq = f"What is the {display(r1)} of {display(anchor)}?", (r1,)
        else:
            second = sorted({r for m in mids for _, _, r in rag.graph.out_edges(m, keys=True)} - {"knows"})
            if not second:
                continue
            r2 = rng.choice(second)
            q, seq = f"What is the {display(r2)} of {display(anchor)}'s {display(r1)}?", (r1, r2)
        gold = set(rag._follow(anchor, tuple(Hop(r) for r in seq), 10**9))
        out.append({"question": q, "answers": sorted(gold), "hub": anchor in hubs, "hops": len(seq)})
    return out


def latency(rag: GraphRAG, items: list[dict]) -> dict:
    rag.query(items[0]["question"])     # warm the model
    totals, stages, hits = [], {}, 0
    for item in items:
        profiler = Profiler()
        t = time.perf_counter()
        result = rag.query(item["question"], profiler=profiler)
        totals.append((time.perf_counter() - t) * 1000)
        for k, v in profiler.as_dict().items():
            stages.setdefault(k, []).append(v)
        hits += result["answer"] in item["answers"]

    def pct(xs):
        p50, p95 = np.percentile(xs, [50, 95])
        return {"p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2)}

    return {"n": len(items), "hits@1": round(hits / len(items), 4), **pct(totals),
            "stages": {k: pct(v) for k, v in stages.items()}}


def folder_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 1)


def main() -> None:
    work = ROOT / "outputs" / "graph_scale"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t = time.perf_counter()
    people, hubs = generate(work / "edges.csv")
    generated_s = time.perf_counter() - t
    report = GraphRAG.build(work / "edges.csv", work / "graph", progress=sys.stderr.isatty())
    t = time.perf_counter()
    rag = GraphRAG.load(work / "graph")
    load_s = time.perf_counter() - t
    degrees = sorted((d for _, d in rag.graph.degree()), reverse=True)
    items = questions(rag, people, hubs)
    scale = latency(rag, items)
    scale["hub_questions"] = latency(rag, [x for x in items if x["hub"]])
    pq = ROOT / "outputs" / "pathquestion"
    result = {"generated": {"edges": report.edges, "nodes": report.nodes, "max_degree": degrees[0],
                            "nodes_with_degree_over_1000": sum(d > 1000 for d in degrees),
                            "generate_s": round(generated_s, 1), "build_s": report.seconds,
                            "load_s": round(load_s, 1), "chroma_mb": folder_mb(work / "graph" / "chroma"),
                            "graph_json_mb": round(folder_mb(work / "graph") - folder_mb(work / "graph" / "chroma"), 1),
                            "queries": scale}}
    if (pq / "graph").is_dir():
        from ragkit.eval.graphqa import load_questions

        pq_rag = GraphRAG.load(pq / "graph")
        result["pathquestion"] = latency(pq_rag, load_questions(pq / "questions.jsonl"))
    result["command"] = ".venv/bin/python bench/pathquestion.py && .venv/bin/python bench/graph_scale.py"
    write("graph_scale", result)
    print(result)


if __name__ == "__main__":
    main()
