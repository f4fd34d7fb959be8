"""Rebuilding specs into a store that already holds them, on both stores (networkx file,
real Neo4j over Bolt):

- stale values: build the demo specs, edit one expansion (SCP) and one definition (NF Set)
  in a copy of data/specs/demo_5gc.md, build that copy again into the same store, and
  record what ``terms resolve``/``terms define`` would serve, and whether the store equals
  a fresh build of the edited specs;
- time: a fresh build against a rebuild of the same specs into the populated store
  (medians of repeats), for the demo specs and for the three real 3GPP documents;
- the Neo4j transaction a rebuild runs: rows it deletes and writes.

    .venv/bin/python bench/reingest.py [--before DIR] [--repeat 5]   -> outputs/bench/reingest.json

``--before DIR`` measures the same with the ragkit of an earlier checkout in DIR (its
package first on the path), beside this checkout's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, SHARED, write

SPECS = ROOT / "data" / "specs"
REAL = ["21905-h20.docx", "29500-ia0.docx", "23501-g40.pdf"]
EDITS = [("SCP\tService Communication Proxy", "SCP\tSignalling Control Point"),
         ("NF Set: a group of interchangeable instances", "NF Set: a pool of network function instances")]


def open_store(kind: str, where: Path, uri: str):
    """An empty store of ``kind``."""
    if kind == "networkx":
        from ragkit.specs.nx_store import NetworkXStore

        where.unlink(missing_ok=True)
        return NetworkXStore(where)
    from ragkit.specs.neo4j_store import Neo4jStore

    store = Neo4jStore(uri)
    store.clear()
    return store


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def served(store) -> dict:
    """What ``terms resolve SCP`` and ``terms define "NF Set"`` would answer from."""
    return {"SCP": [t.full_name for t in store.terms_by_abbreviation("SCP")],
            "NF Set": [t.definition[:40] for t in store.terms_by_name("NF Set", "definition")]}


def demo(kind: str, tmp: Path, uri: str, repeat: int) -> dict:
    from ragkit.specs.build import build_kg

    spec = tmp / "demo_5gc.md"
    shutil.copy(SPECS / "demo_5gc.md", spec)
    paths = [spec, SPECS / "demo_vocab.md"]
    fresh_s, rebuild_s = [], []
    for _ in range(repeat):
        store = open_store(kind, tmp / "kg.json.gz", uri)
        fresh_s.append(timed(lambda: build_kg(paths, store, progress=False)))
        rebuild_s.append(timed(lambda: build_kg(paths, store, progress=False)))
        if _ != repeat - 1:
            store.close()
    counts_before = store.counts()
    text = spec.read_text(encoding="utf-8")
    for old, new in EDITS:
        text = text.replace(old, new)
    spec.write_text(text, encoding="utf-8")
    chunks_replaced = len(store.find_chunks(spec_ids=["demo_5gc"]))
    info = build_kg([spec], store, progress=False)
    after = served(store)
    reference = open_store("networkx", tmp / "reference.json.gz", uri)
    build_kg(paths, reference, progress=False)
    out = {
        "fresh_build_s": round(statistics.median(fresh_s), 4),
        "rebuild_s": round(statistics.median(rebuild_s), 4),
        "counts_after_first_build": counts_before,
        "edited_rebuild": {
            "served": after,
            "stale_expansion_served": "Service Communication Proxy" in after["SCP"],
            "stale_definition_served": any(d.startswith("a group of interchangeable") for d in after["NF Set"]),
            "equals_a_fresh_build": store.counts() == reference.counts() and served(store) == served(reference),
            "counts": store.counts()},
        # One transaction (Neo4j) or one file write (networkx) since replacing exists;
        # before, the rebuild only merged (nothing deleted) in one statement per batch.
        "rebuild_writes": {"replaced": info.get("replaced"), "chunks_deleted": chunks_replaced if "replaced" in info else 0,
                           "terms_removed": info.get("terms_removed", 0),
                           "documents_written": info["documents"], "chunks_written": info["chunks"],
                           "terms_written": info["terms"], "write_s": info["write_s"]},
    }
    store.close()
    return out


def real(kind: str, tmp: Path, uri: str, repeat: int, parsed) -> dict:
    """The three 3GPP documents: a fresh write against a rewrite into the populated store."""
    fresh_s, rebuild_s = [], []
    for _ in range(repeat):
        store = open_store(kind, tmp / "real.json.gz", uri)
        fresh_s.append(timed(lambda: store.write(parsed.docs, parsed.chunks, parsed.terms)))
        rebuild_s.append(timed(lambda: store.write(parsed.docs, parsed.chunks, parsed.terms)))
        counts = store.counts()
        store.close()
    return {"fresh_write_s": round(statistics.median(fresh_s), 3),
            "rewrite_s": round(statistics.median(rebuild_s), 3),
            "rows": len(parsed.docs) + len(parsed.chunks) + len(parsed.terms), "counts_after_rewrite": counts}


def measure(uri: str, repeat: int) -> dict:
    """Every figure, with whichever ragkit is first on the path."""
    import ragkit
    from ragkit.specs.build import parse_specs

    started = time.perf_counter()
    parsed = parse_specs([SHARED / "3gpp" / name for name in REAL], progress=False)
    result = {"ragkit": str(Path(ragkit.__file__).parent.parent), "parse_real_s": round(time.perf_counter() - started, 1)}
    for kind in ("networkx", "neo4j"):
        with tempfile.TemporaryDirectory() as tmp:
            result[kind] = {"demo": demo(kind, Path(tmp), uri, repeat),
                            "real": real(kind, Path(tmp), uri, max(1, repeat // 2), parsed)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="an earlier ragkit checkout to measure too")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--measure-with", help=argparse.SUPPRESS)   # internal: one run, JSON on stdout
    args = parser.parse_args()
    if args.measure_with:
        print(json.dumps(measure(args.measure_with, args.repeat)))
        return
    from ragkit.stores.neo4j_launcher import running_neo4j

    result = {"command": "bench/reingest.py" + (f" --before {args.before}" if args.before else "")}
    with tempfile.TemporaryDirectory() as tmp, running_neo4j(Path(tmp) / "neo4j") as uri:
        runs = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
        for label, code in runs:
            env = {**os.environ, "PYTHONPATH": str(code), "NEO4J_PASSWORD": os.environ.get("NEO4J_PASSWORD", "ragkit-neo4j")}
            out = subprocess.run([sys.executable, __file__, "--measure-with", uri, "--repeat", str(args.repeat)],
                                 capture_output=True, text=True, env=env, cwd=ROOT)
            if out.returncode != 0:
                sys.exit(f"{label}: {out.stderr.strip().splitlines()[-1]}")
            result[label] = json.loads(out.stdout.strip().splitlines()[-1])
    write("reingest", result)
    for label in ("before", "after"):
        if label in result:
            for kind in ("networkx", "neo4j"):
                d, r = result[label][kind]["demo"], result[label][kind]["real"]
                print(label, kind, d["edited_rebuild"]["served"], "stale:",
                      d["edited_rebuild"]["stale_expansion_served"], d["edited_rebuild"]["stale_definition_served"],
                      "demo fresh/rebuild s:", d["fresh_build_s"], d["rebuild_s"],
                      "real fresh/rewrite s:", r["fresh_write_s"], r["rewrite_s"])


if __name__ == "__main__":
    main()
