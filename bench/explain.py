"""``explain`` latency without an LLM: on the demo PM2.5 KG (46 edges) and on a generated KG
of 100,000 edges with hubs, where the k-hop subgraph and the chain search must stay bounded.
Medians over questions and repeats.

    .venv/bin/python bench/explain.py   -> outputs/bench/explain.json
"""

from __future__ import annotations

import random
import statistics
import time

from _common import ROOT, median_time, write
from ragkit.causal.kg import build_kg, load_kg, validate_kg
from ragkit.pipelines.causal import explain

QUESTIONS = ["Tại sao độ ẩm cao làm PM2.5 tăng?", "Why is PM2.5 high in winter?", "Vì sao PM2.5 tăng?",
             "How does rain affect PM2.5?", "Vì sao gió yếu làm PM2.5 tăng?"]


def generated_kg(n_edges: int = 100_000, n_nodes: int = 20_000, seed: int = 7) -> dict:
    """A random evidence KG: preferential attachment makes hubs, pm25 has ~2,000 causes."""
    rng = random.Random(seed)
    nodes = [{"id": "pm25", "label": "PM2.5", "aliases": [], "category": "pollutant"}]
    nodes += [{"id": f"v{i}", "label": f"variable {i}", "aliases": [], "category": "meteorological"}
              for i in range(n_nodes)]
    levels = ["HIGH", "MEDIUM", "LOW"]
    strengths = ["STRONG", "MODERATE", "WEAK"]
    targets = ["pm25"] * 50 + [f"v{i}" for i in range(200)]  # hubs
    edges, seen = [], set()
    while len(edges) < n_edges:
        s = f"v{rng.randrange(n_nodes)}"
        t = rng.choice(targets) if rng.random() < 0.3 else f"v{rng.randrange(n_nodes)}"
        if s == t or (s, t) in seen:
            continue
        seen.add((s, t))
        edges.append({"source": s, "target": t, "relation": "increases", "mechanism": "",
                      "confidence": rng.choice(levels), "strength": rng.choice(strengths),
                      "temporal_lag": rng.choice(["", "hours"]), "conditions": [],
                      "category": "meteorological",
                      "evidence": [{"source_url": "https://example.org/generated", "source_quote": "generated",
                                    "tier": "tier_1"}]})
    return {"nodes": nodes, "edges": edges}


def main() -> None:
    demo_path = ROOT / "data" / "merged_knowledge_graph.json"
    load_s, _ = median_time(lambda: load_kg(demo_path), repeat=5)
    demo = load_kg(demo_path)
    samples = []
    for q in QUESTIONS:
        for _ in range(5):
            started = time.perf_counter()
            explain(q, demo, use_llm=False)
            samples.append((time.perf_counter() - started) * 1000)
    result = {"demo": {"edges": demo.graph.number_of_edges(), "load_validate_ms": round(load_s * 1000, 2),
                       "explain_median_ms": round(statistics.median(samples), 3),
                       "explain_max_ms": round(max(samples), 3)}}

    data = generated_kg()
    started = time.perf_counter()
    validate_kg(data, "generated")
    validate_s = time.perf_counter() - started
    started = time.perf_counter()
    big = build_kg([("generated", data)])
    build_s = time.perf_counter() - started
    questions = ["Why does variable 5 raise PM2.5?", "variable 17 and PM2.5?", "Vì sao PM2.5 tăng?",
                 "variable 123 effect on pm2.5", "variable 4242?"]
    samples, sizes = [], []
    for q in questions:
        for _ in range(3):
            started = time.perf_counter()
            answer = explain(q, big, use_llm=False)
            samples.append((time.perf_counter() - started) * 1000)
        sizes.append(answer.trace.subgraph)
    result["generated_100k"] = {"nodes": big.graph.number_of_nodes(), "edges": big.graph.number_of_edges(),
                                "validate_s": round(validate_s, 2), "build_s": round(build_s, 2),
                                "explain_median_ms": round(statistics.median(samples), 1),
                                "explain_max_ms": round(max(samples), 1), "subgraphs": sizes}
    write("explain", result)
    print(result)


if __name__ == "__main__":
    main()
