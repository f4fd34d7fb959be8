"""The concept graph at scale: build and query times and memory on a generated corpus of
10,000, 30,000 and 100,000 chunks.

The corpus is made at run time from real English text in ``../shared/datasets`` (nothing of
it is written to the repository): MuSiQue's 1,890 Wikipedia paragraphs and SciFact's 5,183
abstracts, cut into sentences. Each generated chunk (seeded, so every run makes the same
corpus) is

- half the time a Wikipedia chunk, half the time a scientific one; it takes a source
  paragraph's title and a window of 2 to 5 of its sentences, with 1 to 3 sentences of other
  paragraphs of the same set put in at random places (so concepts meet in new sentences and
  chunks: the co-occurrence graph grows with the corpus instead of repeating itself);
- written in a "world" drawn from a power law (half the chunks in world 0, the text as it
  is; P(world >= w) = 1 / (w + 1)). In world w > 0, two thirds of the proper names (a
  capitalised word the sources never write in lower case: "Copenhagen", not "University")
  get a variant of their own (their first half and one or two syllables: "Copenlika"), the
  same wherever that world is used. New worlds keep coming as the corpus grows (about the
  square root of the chunk count), so the name vocabulary grows as a real corpus's does, and
  a variant name co-occurs with the same neighbours across the chunks of its world.

The questions are MuSiQue's 100, every other one with its names put in a world the corpus
uses. Per size, in a child process of its own (so that memory is the build's alone):

- the build (``ConceptGraph.build``): extraction and graph assembly (``from_extractions``,
  timed again on its own; extraction is the rest), and an incremental rebuild with 1% of the
  chunks changed (a sentence appended);
- memory: the growth of the process's resident set (RSS, sampled every 5 ms) over the build,
  above what the process held with the corpus generated, and the process's peak RSS;
- the graph's size, the saved folder (size, save and load times), the BM25 index build;
- query latency p50/p95 of ``retrieve`` with ``--method graph`` on a BM25 base (no dense
  vectors: embedding 100,000 chunks with MiniLM takes hours on two cores) and of the walk
  alone (``ConceptSearcher.rank`` on a BM25 top 100 computed beforehand).

    .venv/bin/python bench/concept_scale.py --label after      # -> outputs/bench/concept_scale.json
    PYTHONPATH=/tmp/before .venv/bin/python bench/concept_scale.py --label before

The second measures the ragkit of an older checkout (``mkdir -p /tmp/before && git archive
<commit> ragkit | tar -x -C /tmp/before``); each run adds its label to the JSON and keeps the
other labels there. ``--sizes 1000000`` adds a size to a label's figures (above 100,000
chunks, or with ``--lean`` at any size: the build, the graph and the queries only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = (10_000, 30_000, 100_000)
FULL_UP_TO = 100_000       # larger sizes: build, graph and queries only (``measure``)
QUESTIONS = 100
COMMAND = ("mkdir -p /tmp/before && git archive bd863d6 ragkit | tar -x -C /tmp/before; "
           "PYTHONPATH=/tmp/before .venv/bin/python bench/concept_scale.py --label before; "
           ".venv/bin/python bench/concept_scale.py --label after")
CHANGED = 0.01
SYLLABLES = ("ka len mo ro vi an dre sa li to ne mar el ia gu sta fe rin do bo "
             "lu chi ha ve nor tam isa ber quin zol").split()
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])|(?<=[a-z)]\.)(?=[A-Z][a-z])")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
_WORD = re.compile(r"[A-Za-z]+")


# ------------------------------------------------------------------ the generated corpus
def sentences_of(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) >= 20]


class Generator:
    """Chunks recombined from real paragraphs' sentences, with names varied by world."""

    def __init__(self, shared: Path, seed: int = 13):
        self.pools = {"wikipedia": self._read(shared / "multihop_passages" / "musique_beir" / "corpus.jsonl"),
                      "science": self._read(shared / "scifact" / "corpus.jsonl")}
        lower = set()
        for pool in self.pools.values():
            for title, sentences in pool:
                for s in [title, *sentences]:
                    lower.update(w for w in _WORD.findall(s) if w.islower())
        self.lower = lower
        self.seed = seed
        self._variants: dict[tuple[int, str], str] = {}

    @staticmethod
    def _read(path: Path) -> list[tuple[str, list[str]]]:
        out = []
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                sentences = sentences_of(row.get("text", ""))
                if sentences:
                    out.append((row.get("title", ""), sentences))
        return out

    def variant(self, world: int, name: str) -> str:
        """``name`` as world ``world`` writes it (itself in world 0, and for a third of names)."""
        if world == 0 or name.lower() in self.lower:
            return name
        got = self._variants.get((world, name))
        if got is None:
            h = int.from_bytes(hashlib.blake2b(f"{world}|{name}".encode(), digest_size=8).digest(), "big")
            if h % 3 == 0:
                got = name
            else:
                got = name[:max(3, (len(name) + 1) // 2)] + SYLLABLES[(h >> 8) % len(SYLLABLES)]
                if (h >> 24) & 1:
                    got += SYLLABLES[(h >> 32) % len(SYLLABLES)]
            self._variants[(world, name)] = got
        return got

    def in_world(self, text: str, world: int) -> str:
        return text if world == 0 else _NAME.sub(lambda m: self.variant(world, m.group(0)), text)

    def generate(self, n: int):
        """``n`` chunks (``Doc``), and the world each is written in."""
        from ragkit.corpus import Doc

        rng = random.Random(self.seed)
        docs, worlds = [], []
        for i in range(n):
            pool = self.pools["wikipedia" if rng.random() < 0.5 else "science"]
            title, sentences = pool[rng.randrange(len(pool))]
            size = rng.randint(2, 5)
            start = rng.randrange(max(1, len(sentences) - size + 1))
            chosen = list(sentences[start:start + size])
            for _ in range(rng.randint(1, 3)):
                other = pool[rng.randrange(len(pool))][1]
                chosen.insert(rng.randint(1, len(chosen)), other[rng.randrange(len(other))])
            world = int(rng.paretovariate(1.0)) - 1
            docs.append(Doc(f"g{i:06d}", self.in_world(" ".join(chosen), world), self.in_world(title, world)))
            worlds.append(world)
        return docs, worlds

    def changed(self, docs, worlds, share: float = CHANGED):
        """``docs`` with ``share`` of them (chosen at random) given one more sentence."""
        from ragkit.corpus import Doc

        rng = random.Random(self.seed + 1)
        out = list(docs)
        picked = rng.sample(range(len(docs)), max(1, int(share * len(docs))))
        for i in picked:
            pool = self.pools["wikipedia" if rng.random() < 0.5 else "science"]
            other = pool[rng.randrange(len(pool))][1]
            extra = self.in_world(other[rng.randrange(len(other))], worlds[i])
            out[i] = Doc(docs[i].doc_id, f"{docs[i].text} {extra}", docs[i].title)
        return out, len(picked)

    def questions(self, path: Path, worlds: list[int], n: int = QUESTIONS) -> list[str]:
        """MuSiQue's questions; every other one in the world of a chunk outside world 0."""
        rng = random.Random(self.seed + 2)
        others = sorted({w for w in worlds if w > 0})
        out = []
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()[:n]):
            text = json.loads(line)["text"]
            out.append(self.in_world(text, rng.choice(others)) if i % 2 and others else text)
        return out


# ------------------------------------------------------------------ measuring
def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRss:
    """The highest RSS seen (sampled every ``every`` seconds) while the block runs."""

    def __init__(self, every: float = 0.005):
        self.every, self.peak, self._stop = every, 0.0, threading.Event()

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb())
            time.sleep(self.every)

    def __enter__(self) -> "PeakRss":
        self.start = rss_mb()
        self.peak = self.start
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())

    @property
    def growth(self) -> float:
        return round(self.peak - self.start, 1)


def percentiles(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2)}


def timed(fn, *args, **kwargs):
    """``fn``'s result and (wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - wall, time.process_time() - cpu)


def folder_mb(path: Path) -> dict:
    files = {p.name: round(p.stat().st_size / 2**20, 2) for p in sorted(path.iterdir()) if p.is_file()}
    return {"total": round(sum(files.values()), 2), **files}


def measure(size: int, shared: Path, work: Path, lean: bool = False) -> dict:
    """Every figure for one corpus size (run in a child process of its own); above
    ``FULL_UP_TO`` chunks, the build, the graph and the queries only (no second assembly,
    rebuild, save or load: at a million chunks each would take as long as the build)."""
    import gc

    from ragkit.concepts.graph import ConceptGraph

    started = time.perf_counter()
    gen = Generator(shared)
    docs, worlds = gen.generate(size)
    questions = gen.questions(shared / "multihop_passages" / "musique_beir" / "queries.jsonl", worlds)
    corpus = {"chunks": size, "generate_s": round(time.perf_counter() - started, 1),
              "chars": sum(len(d.full_text) for d in docs), "worlds": len(set(worlds)),
              "questions": len(questions)}
    gc.collect()

    with PeakRss() as memory:
        (graph, rows, report), build = timed(ConceptGraph.build, docs, progress=False)
    if lean or size > FULL_UP_TO:
        del rows
        gc.collect()
        return {"corpus": corpus,
                "build": {"seconds": round(build[0], 2), "cpu_s": round(build[1], 2),
                          "rss_growth_mb": memory.growth, "rss_before_mb": round(memory.start, 1)},
                "graph": {"concepts": report.concepts, "hubs": report.hubs, "mentions": report.mentions,
                          "cooccurrences": report.cooccurrences, "edges": graph.n_edges},
                **query_figures(graph, docs, questions)}
    again, assembly = timed(ConceptGraph.from_extractions, [d.doc_id for d in docs], rows)
    assert again.keys == graph.keys and (again.cooccurs != graph.cooccurs).nnz == 0
    del again
    changed, n_changed = gen.changed(docs, worlds)
    (_, _, rebuilt), rebuild = timed(ConceptGraph.build, changed, previous=rows, progress=False)
    del changed

    folder = work / f"concepts-{size}"
    shutil.rmtree(folder, ignore_errors=True)
    with PeakRss() as save_memory:
        _, save = timed(graph.save, folder, rows)
    del rows
    gc.collect()
    with PeakRss() as load_memory:
        loaded, load = timed(ConceptGraph.load, folder)
    assert loaded.keys == graph.keys and (loaded.mentions != graph.mentions).nnz == 0
    saved = folder_mb(folder)
    shutil.rmtree(folder, ignore_errors=True)
    del loaded
    gc.collect()

    return {"corpus": corpus,
            "build": {"seconds": round(build[0], 2), "cpu_s": round(build[1], 2),
                      "assembly_s": round(assembly[0], 2), "assembly_cpu_s": round(assembly[1], 2),
                      "extraction_cpu_s": round(build[1] - assembly[1], 2),
                      "rss_growth_mb": memory.growth, "rss_before_mb": round(memory.start, 1)},
            "rebuild": {"changed": n_changed, "extracted": rebuilt.extracted, "reused": rebuilt.reused,
                        "seconds": round(rebuild[0], 2), "cpu_s": round(rebuild[1], 2)},
            "graph": {"concepts": report.concepts, "hubs": report.hubs, "mentions": report.mentions,
                      "cooccurrences": report.cooccurrences, "edges": graph.n_edges},
            "saved": {"mb": saved, "save_s": round(save[0], 2), "save_cpu_s": round(save[1], 2),
                      "save_rss_growth_mb": save_memory.growth,
                      "load_s": round(load[0], 2), "load_cpu_s": round(load[1], 2),
                      "load_rss_growth_mb": load_memory.growth},
            **query_figures(graph, docs, questions)}


def query_figures(graph, docs, questions) -> dict:
    """The BM25 build, the searcher's set-up and the query latencies (whole ``graph``
    retrievals, their stages, and the walk alone), and the process's peak RSS."""
    from ragkit.concepts.search import ConceptSearcher
    from ragkit.eval.retrieval import eval_config
    from ragkit.runtime.profiler import Profiler
    from ragkit.retrieval.bm25 import BM25Index
    from ragkit.retrieval.search import retrieve

    index, bm25 = timed(BM25Index.for_corpus, docs, progress=False)
    searcher, init = timed(ConceptSearcher, graph)
    config = eval_config(method="graph", k=100)
    retrieve(index, questions[0], config, Profiler(), concepts=searcher)       # warm up
    total, cpu, stages, walk_ms, walk_cpu, reached = [], [], {}, [], [], []
    for q in questions:
        profiler = Profiler()
        _, (wall_s, cpu_s) = timed(retrieve, index, q, config, profiler, concepts=searcher)
        total.append(wall_s * 1000)
        cpu.append(cpu_s * 1000)
        for name, ms in profiler.as_dict().items():
            if name != "total":
                stages.setdefault(name, []).append(ms)
    bases = [[(h.doc_id, h.score) for h in index.search(q, k=100)] for q in questions]
    for q, base in zip(questions, bases):
        (ranked, _, _), (wall_s, cpu_s) = timed(searcher.rank, q, base, k=100)
        walk_ms.append(wall_s * 1000)
        walk_cpu.append(cpu_s * 1000)
        reached.append(len(ranked))

    return {"bm25_build_s": round(bm25[0], 2), "searcher_init_s": round(init[0], 2),
            "walk": "forward push" if getattr(searcher, "local", None) is not None else "power iteration",
            "query": {"graph": percentiles(total), "graph_cpu": percentiles(cpu),
                      "stages": {name: percentiles(ms) for name, ms in stages.items()},
                      "walk": percentiles(walk_ms), "walk_cpu": percentiles(walk_cpu),
                      "walk_ranked_mean": round(statistics.mean(reached), 1)},
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def run_sizes(sizes, ragkit: Path, shared: Path, work: Path, lean: bool = False) -> dict:
    """Each size in a child process importing ragkit from ``ragkit``."""
    out = {}
    for size in sizes:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(size),
                               "--ragkit", str(ragkit), "--shared", str(shared), "--work", str(work)]
                              + ["--lean"] * lean,
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"size {size} (ragkit from {ragkit}) failed:\n{done.stderr[-4000:]}")
        out[str(size)] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{size}: {json.dumps(out[str(size)])}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="after",
                        help="name of the code measured (before, after); the other labels in the JSON are kept")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--lean", action="store_true", help="every size: the build, the graph and the queries only")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ragkit", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--shared", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(args.ragkit))
        import ragkit

        assert Path(ragkit.__file__).resolve().is_relative_to(args.ragkit.resolve()), ragkit.__file__
        print(json.dumps(measure(args.child, args.shared, args.work, args.lean)))
        return

    # The ragkit measured: the first PYTHONPATH entry (an older checkout), else this one.
    ragkit = Path(os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or ROOT).resolve()
    sys.path.insert(0, str(ROOT))
    from bench._common import OUT, SHARED, write

    work = ROOT / "outputs" / "concept_scale"
    work.mkdir(parents=True, exist_ok=True)
    sizes = run_sizes(args.sizes, ragkit, SHARED, work, args.lean)
    shutil.rmtree(work, ignore_errors=True)
    previous = OUT / "concept_scale.json"
    runs = json.loads(previous.read_text()).get("runs", {}) if previous.exists() else {}
    kept = runs.get(args.label, {}).get("sizes", {})      # sizes of this label measured before
    runs[args.label] = {"ragkit": str(ragkit.relative_to(ROOT)) if ragkit.is_relative_to(ROOT) else str(ragkit),
                        "sizes": dict(sorted({**kept, **sizes}.items(), key=lambda kv: int(kv[0])))}
    write("concept_scale", {"runs": runs, "command": COMMAND})


if __name__ == "__main__":
    main()
