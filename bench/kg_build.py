"""Spec knowledge-graph build on the three real 3GPP documents (TR 21.905, TS 29.500 .docx,
TS 23.501 .pdf): parse time per spec, write time on each store (networkx file, real Neo4j
over Bolt), Neo4j write rate for batched UNWIND against one MERGE per row,
and term-resolution latency on each store. Medians of repeats.

    .venv/bin/python bench/kg_build.py   -> outputs/bench/kg_build.json
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _common import SHARED, median_time, write
from ragkit.stores.neo4j_launcher import running_neo4j
from ragkit.specs.neo4j_store import Neo4jStore
from ragkit.specs.nx_store import NetworkXStore
from ragkit.specs.evidence import resolve_term
from ragkit.specs.build import parse_specs

SPECS = ["21905-h20.docx", "29500-ia0.docx", "23501-g40.pdf"]


def resolution_latency(store, abbreviations: list[str]) -> dict:
    samples = []
    for abbr in abbreviations:
        started = time.perf_counter()
        resolve_term(store, abbr)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {"lookups": len(samples), "median_ms": round(statistics.median(samples), 3),
            "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 3)}


def main() -> None:
    started = time.perf_counter()
    parsed = parse_specs([SHARED / "3gpp" / name for name in SPECS], progress=False)
    parse_total = time.perf_counter() - started
    rows = len(parsed.docs) + len(parsed.chunks) + len(parsed.terms)
    sample = sorted({t.abbreviation for t in parsed.terms if t.term_type == "abbreviation"})[::6][:200]
    result = {"specs": parsed.seconds, "parse_total_s": round(parse_total, 2),
              "documents": len(parsed.docs), "chunks": len(parsed.chunks), "terms": len(parsed.terms),
              "rows": rows}

    with tempfile.TemporaryDirectory() as tmp:
        def nx_build():
            path = Path(tmp) / "kg.json.gz"
            path.unlink(missing_ok=True)
            NetworkXStore(path).write(parsed.docs, parsed.chunks, parsed.terms)
        nx_s, _ = median_time(nx_build, repeat=3)
        nx_store = NetworkXStore(Path(tmp) / "kg.json.gz")
        result["networkx"] = {"write_s": round(nx_s, 3), "rows_per_s": round(rows / nx_s),
                              "resolution": resolution_latency(nx_store, sample)}

        with running_neo4j(Path(tmp) / "neo4j") as uri:
            store = Neo4jStore(uri)
            def neo_build():
                store.clear()
                store.write(parsed.docs, parsed.chunks, parsed.terms)
            neo_s, _ = median_time(neo_build, repeat=3)
            resolution = resolution_latency(store, sample)
            # Terms only: batched UNWIND vs one MERGE per row (the same rows and links).
            batched, single = [], []
            for _ in range(3):
                store._run("MATCH (t:Term) DETACH DELETE t")
                batched.append(store.write_terms_batched(parsed.terms))
                store._run("MATCH (t:Term) DETACH DELETE t")
                single.append(store.write_terms_one_by_one(parsed.terms))
            counts = store.counts()
            store.close()
        n = len(parsed.terms)
        result["neo4j"] = {
            "write_s": round(neo_s, 3), "rows_per_s": round(rows / neo_s), "resolution": resolution,
            "terms_batched_rows_per_s": round(n / statistics.median(batched)),
            "terms_one_merge_per_row_rows_per_s": round(n / statistics.median(single)),
            "batched_speedup": round(statistics.median(single) / statistics.median(batched), 1),
            "counts_after": counts}
    write("kg_build", result)
    print({k: v for k, v in result.items() if k not in ("networkx", "neo4j")})
    print("networkx", result["networkx"])
    print("neo4j", result["neo4j"])


if __name__ == "__main__":
    main()
