"""What a command-line user waits for: from starting ``ragkit`` to the first byte of its
answer, in a fresh process each time, for each kind of source at two sizes.

- ``bm25``: a BM25 index of generated documents (``bench/scale.py``'s corpus: 20 words each
  on average, Zipfian words) at 10,000 and 1,000,000 documents; ``ragkit search --json`` and
  ``ragkit ask --no-llm --json`` with a query of four content words;
- ``hybrid``: the 10,000-document index with MiniLM chunk vectors (embedded Chroma), ``ragkit
  search --method hybrid`` (embedding a million documents takes hours on two cores);
- ``graph``: the demo edge list's graph (``data/nobel_edges.csv``), ``ragkit ask --pipeline
  graph --no-llm``;
- ``concepts``: a concept graph with its BM25 index over ``bench/concept_scale.py``'s generated
  chunks (real English sentences from ``../shared/datasets``) at 10,000 and 100,000 chunks,
  ``ragkit search --method graph`` and ``ragkit ask --method graph --no-llm`` with one of its
  questions (a million chunks takes 25 minutes to build here: ``bench/concept_scale.py``);
- and ``python -c "import ragkit.cli"``, the floor every command stands on.

Each command runs ``--runs`` times (median, min, max of the time to the first byte on stdout
and to the process's exit); the indexes are built once, outside the clock.

    .venv/bin/python bench/cold_start.py   -> outputs/bench/cold_start.json
    .venv/bin/python bench/cold_start.py --busy --sizes 10000 -> outputs/bench/cold_start_busy.json
      (the same beside two CPU-bound processes, one per core here: the indexes are built
      beside them too)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, SHARED, write

RAGKIT = [sys.executable, "-m", "ragkit.cli"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}


def first_byte(command: list[str]) -> tuple[float, float]:
    """Seconds to the first byte ``command`` writes on stdout, and to its exit."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, cwd=ROOT)
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    at = time.perf_counter() - started
    rest = proc.stdout.read()
    if proc.wait() != 0 or not first:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {(first + rest)[:300]!r}")
    return at, time.perf_counter() - started


def timed(command: list[str], runs: int) -> dict:
    samples = [first_byte(command) for _ in range(runs)]
    firsts, totals = [s[0] for s in samples], [s[1] for s in samples]
    return {"first_byte_s": round(statistics.median(firsts), 2), "min_s": round(min(firsts), 2),
            "max_s": round(max(firsts), 2), "exit_s": round(statistics.median(totals), 2)}


def bm25_index(n_docs: int, folder: Path, dense: bool = False) -> tuple[Path, str]:
    """A BM25 index of ``n_docs`` generated documents (with chunk vectors when ``dense``), and
    a query of four of its content words."""
    sys.path.insert(0, str(ROOT))
    from scale import generate

    from ragkit.corpus import Doc
    from ragkit.retrieval.bm25 import BM25Index
    from ragkit.retrieval.build import IndexSpec, build_index

    tokens, queries = generate(n_docs, 4)
    query = " ".join(queries[0][:4])
    out = folder / f"bm25-{n_docs}{'-dense' if dense else ''}"
    docs = (Doc(doc_id=f"d{i}", text=" ".join(t)) for i, t in enumerate(tokens))
    if dense:
        build_index(IndexSpec(corpus=f"generated-{n_docs}", out=out, lang="en", dense="minilm"),
                    docs=list(docs), progress=False)
    else:
        BM25Index.from_tokens(tokens, docs=docs).save(out)
    return out, query


def concept_index(n_chunks: int, folder: Path) -> tuple[Path, str]:
    """A BM25 index with its concept graph over ``n_chunks`` of ``concept_scale``'s generated
    chunks, and one of its questions."""
    from concept_scale import Generator       # beside this script

    from ragkit.retrieval.build import IndexSpec, build_index

    gen = Generator(SHARED)
    docs, worlds = gen.generate(n_chunks)
    question = gen.questions(SHARED / "multihop_passages" / "musique_beir" / "queries.jsonl", worlds)[0]
    out = folder / f"concepts-{n_chunks}"
    build_index(IndexSpec(corpus=f"generated-{n_chunks}", out=out, lang="en", concepts=True), docs=docs,
                progress=False)
    return out, question


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--concept-sizes", type=int, nargs="*", default=[10_000, 100_000],
                        help="chunks of the concept-graph indexes (none: leave them out)")
    parser.add_argument("--busy", action="store_true",
                        help="time every command beside two CPU-bound processes (writes cold_start_busy.json)")
    args = parser.parse_args()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)] if args.busy else []
    try:
        measure(args)
    finally:
        for hog in hogs:
            hog.kill()


def measure(args: argparse.Namespace) -> None:
    results: dict = {"import ragkit.cli": timed([sys.executable, "-c", "import ragkit.cli; print(1)"], args.runs)}
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        work = Path(tmp)
        for size in args.sizes:
            index, query = bm25_index(size, work)
            results[f"bm25 {size}: search"] = timed(
                RAGKIT + ["search", "--index", str(index), "--query", query, "--json"], args.runs)
            results[f"bm25 {size}: ask --no-llm"] = timed(
                RAGKIT + ["ask", query, "--index", str(index), "--no-llm", "--json"], args.runs)
            print(size, {k: v for k, v in results.items() if str(size) in k}, flush=True)
        small = min(args.sizes)
        index, query = bm25_index(small, work, dense=True)
        results[f"hybrid {small}: search"] = timed(
            RAGKIT + ["search", "--index", str(index), "--query", query, "--method", "hybrid", "--json"], args.runs)
        graph = work / "nobel"
        subprocess.run(RAGKIT + ["graph", "build", "--edges", str(ROOT / "data" / "nobel_edges.csv"),
                                 "--out", str(graph)], check=True, env=ENV, cwd=ROOT, capture_output=True)
        results["graph 40 nodes: ask --no-llm"] = timed(
            RAGKIT + ["ask", "Where was the parent of Aage Bohr born?", "--pipeline", "graph", "--graph", str(graph),
                      "--no-llm", "--json"], args.runs)
        for size in args.concept_sizes:
            index, question = concept_index(size, work)
            results[f"concepts {size}: search --method graph"] = timed(
                RAGKIT + ["search", "--index", str(index), "--query", question, "--method", "graph", "--json"],
                args.runs)
            results[f"concepts {size}: ask --method graph --no-llm"] = timed(
                RAGKIT + ["ask", question, "--index", str(index), "--method", "graph", "--no-llm", "--json"],
                args.runs)
            print(size, {k: v for k, v in results.items() if k.startswith(f"concepts {size}")}, flush=True)
    write("cold_start_busy" if args.busy else "cold_start", {"runs": args.runs, "busy": args.busy, "results": results})
    for name, row in results.items():
        print(f"{name:32} first byte {row['first_byte_s']:6.2f} s (min {row['min_s']}, max {row['max_s']})")


if __name__ == "__main__":
    main()
