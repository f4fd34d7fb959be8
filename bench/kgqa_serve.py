"""KG question answering and serving, without the LLM.

1. Plan + execute latency on both graph stores: every templated question over the demo
   biomedical KG (treats / symptoms of / genes of / common symptoms of both / what treats),
   asked of the embedded networkx store and of a real Neo4j over Bolt (the tools/neo4j
   launcher on a loopback port). Same plans and final results on both, checked.
2. Server throughput: ``ragkit serve --demo`` in its own process; this process sends a
   bounded load (a fixed number of requests, at most ``--budget-s`` seconds per level) at
   several concurrency levels and reports requests/s, p50 and p95. The peer is the same
   question through ``ragkit ask --json`` as a fresh process each time.

    .venv/bin/python bench/kgqa_serve.py   -> outputs/bench/kgqa_serve.json
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from _common import ROOT, median_time, write
from ragkit.kgqa.flow import KGQA
from ragkit.kgqa.importer import import_kg
from ragkit.kgqa.store import Neo4jTypedStore, NxTypedStore
from ragkit.testing.launch import free_port, running_http, serve_command
from ragkit.workbench.latency_study import percentile
from ragkit.service import build_demo_sources

NODES = ROOT / "data" / "biomed" / "nodes.csv"
EDGES = ROOT / "data" / "biomed" / "edges.csv"
PASSWORD = "ragkit-bench"


def summary(samples_ms: list[float]) -> dict:
    return {"n": len(samples_ms), "p50_ms": round(percentile(samples_ms, 0.5), 3),
            "p95_ms": round(percentile(samples_ms, 0.95), 3), "mean_ms": round(statistics.fmean(samples_ms), 3)}


def questions() -> list[str]:
    with NODES.open(encoding="utf-8") as handle:
        nodes = list(csv.DictReader(handle))
    with EDGES.open(encoding="utf-8") as handle:
        treats = [e for e in csv.DictReader(handle) if e["relation"] == "TREATS"]
    name = {n["id"]: n["name"] for n in nodes}
    drugs = sorted({name[e["source"]] for e in treats})
    diseases = sorted({name[e["target"]] for e in treats})
    out = []
    for drug in drugs:
        out += [f"What diseases does {drug} treat?", f"What symptoms do diseases treated by {drug} have?",
                f"Which genes are associated with diseases treated by {drug}?"]
    out += [f"What are the common symptoms of diseases treated by both {a} and {b}?"
            for a, b in itertools.islice(itertools.combinations(drugs, 2), 15)]
    out += [f"What treats {d}?" for d in diseases]
    return out


def time_store(qa: KGQA, qs: list[str], repeat: int) -> tuple[dict, list[dict]]:
    plan_execute, whole, results = [], [], []
    for q in qs:
        for i in range(repeat):
            started = time.perf_counter()
            result = qa.ask(q)
            whole.append((time.perf_counter() - started) * 1000)
            t = result["timings_ms"]
            plan_execute.append(t["smart_search"] + t["plan"] + t.get("execute", 0.0))
        results.append({"plan": result["plan"], "final": [i["name"] for i in result["context_store"].get("final_result", [])],
                        "total": result["context_store"].get("final_result_total")})
    return {"plan_execute": summary(plan_execute), "ask_no_llm": summary(whole)}, results


def bench_stores(repeat: int) -> dict:
    from ragkit.stores.neo4j_launcher import running_neo4j

    qs = questions()
    out: dict = {"questions": len(qs), "repeat": repeat}
    with tempfile.TemporaryDirectory() as tmp:
        nx_store = NxTypedStore(Path(tmp) / "biomed.json.gz")
        import_kg(NODES, EDGES, nx_store)
        nx_qa = KGQA(nx_store)
        time_store(nx_qa, qs[:10], 1)          # warm-up
        out["networkx"], nx_results = time_store(nx_qa, qs, repeat)
        with running_neo4j(Path(tmp) / "neo4j", password=PASSWORD) as uri:
            store = Neo4jTypedStore(uri, password=PASSWORD)
            store.clear()
            import_kg(NODES, EDGES, store)
            neo_qa = KGQA(store)
            time_store(neo_qa, qs[:10], 1)
            out["neo4j"], neo_results = time_store(neo_qa, qs, repeat)
            store.close()
    out["same_plans_and_results"] = nx_results == neo_results
    out["answered"] = sum(1 for r in nx_results if r["final"])
    out["neo4j_over_networkx_p50"] = round(out["neo4j"]["plan_execute"]["p50_ms"] /
                                           out["networkx"]["plan_execute"]["p50_ms"], 2)
    return out


async def load(url: str, body: dict, requests: int, concurrency: int, budget_s: float) -> dict:
    latencies: list[float] = []
    failures = 0
    todo = iter(range(requests))
    deadline = time.monotonic() + budget_s

    async def worker(client: httpx.AsyncClient):
        nonlocal failures
        for _ in todo:
            if time.monotonic() > deadline:
                return
            started = time.perf_counter()
            response = await client.post(url, json=body)
            latencies.append((time.perf_counter() - started) * 1000)
            failures += response.status_code != 200

    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - started
    return {"concurrency": concurrency, "requests": len(latencies), "failures": failures,
            "req_per_s": round(len(latencies) / wall, 1), **summary(latencies)}


def bench_server(requests: int, levels: list[int], budget_s: float, workers: int) -> dict:
    bodies = {"kg": {"question": "What are the common symptoms of diseases treated by both Aspirin and Ibuprofen?",
                     "pipeline": "kg", "no_llm": True},
              "graph": {"question": "Aage Bohr có những giải thưởng gì?", "pipeline": "graph", "no_llm": True},
              "lexical": {"question": "Quy trình thay mũi khoan gồm các bước nào?", "pipeline": "lexical",
                          "no_llm": True}}
    out: dict = {"requests_per_level": requests, "budget_s_per_level": budget_s, "server_workers": workers}
    with tempfile.TemporaryDirectory() as tmp:
        demo = Path(tmp) / "demo"
        build_demo_sources(demo)
        port = free_port()
        with running_http(serve_command(port, "--demo", str(demo), "--workers", str(workers)),
                          f"http://127.0.0.1:{port}/ready", timeout=300):
            url = f"http://127.0.0.1:{port}/ask"
            for name, body in bodies.items():
                asyncio.run(load(url, body, 20, 2, budget_s))      # warm-up
                out[name] = [asyncio.run(load(url, body, requests, c, budget_s)) for c in levels]
        # The peer: the same question as a fresh `ragkit ask` process each time.
        cli = {}
        for name, body in bodies.items():
            source = {"kg": ["--store", str(demo / "biomed.json.gz")], "graph": ["--graph", str(demo / "graph")],
                      "lexical": ["--index", str(demo / "index")]}[name]
            command = [sys.executable, "-m", "ragkit.cli", "ask", body["question"], "--pipeline", name,
                       *source, "--no-llm", "--json"]
            seconds, _ = median_time(lambda: subprocess.run(command, check=True, capture_output=True))
            cli[name] = round(seconds * 1000, 1)
        out["cli_process_per_question_ms"] = cli
        out["server_p50_vs_cli"] = {name: round(cli[name] / out[name][0]["p50_ms"], 1) for name in bodies}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--levels", default="1,4,16")
    parser.add_argument("--budget-s", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    stores = bench_stores(args.repeat)
    print("stores:", {k: v for k, v in stores.items() if k in ("networkx", "neo4j", "same_plans_and_results")})
    server = bench_server(args.requests, [int(x) for x in args.levels.split(",")], args.budget_s, args.workers)
    print("server:", server)
    write("kgqa_serve", {"command": "python bench/kgqa_serve.py", "stores": stores, "server": server})


if __name__ == "__main__":
    main()
