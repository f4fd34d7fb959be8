"""A million documents end to end: BM25 index time, peak memory, size on disk, load time,
queries/s one at a time and batched, p95 latency, for ragkit and bm25s (numba backend) in the
same run; and the dense path: embedding throughput and Chroma insert and query times at
100,000 vectors.

    .venv/bin/python bench/scale.py [--docs 1000000] [--vectors 100000]   -> outputs/bench/scale.json

With ``--before DIR`` (a checkout of an earlier ragkit, e.g. ``git worktree add DIR COMMIT``),
that ragkit's BM25 runs too, in its own process on the same documents, right after this
one's: its build time and query speeds beside today's, on the same machine in the same run.
With ``--turns N`` the two take turns N times (fresh processes each), and the query figures
compared (with bm25s's too) are the medians of the turns: two processes of the same code
differ by up to 2x in query speed on a shared machine.

The corpus is generated (seeded): short documents (8 to 40 words, 20 on average) drawn from
a 200,000-word vocabulary with Zipfian frequencies (exponent 1.07, as word counts in English
text roughly follow), and 1,000 queries of 2 to 6 words drawn from the same law without its
300 most common words (queries name content words); and 250 long queries, each four of
those run together (8 to 24 words, as a question's content words: many terms' postings in
one query, for the batch loop's way with queries of few postings). Each library runs in its
own process, so its peak memory (the child's max RSS) is its own; both get the same token lists, written
once to a file. Memory is the process's peak including the token lists it read.

The dense figures: MiniLM's throughput on 2,000 of the generated documents (in process,
CPU), and a Chroma collection (embedded, in a folder) filled with 100,000 random unit
vectors of MiniLM's 384 dimensions, in batches of 5,000, then queried 200 times for the top
10 (embedding 100,000 documents on 2 cores would take over an hour, and Chroma's timings do
not depend on where the vectors came from).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import commit_of, write

K = 10
VOCAB = 200_000
ZIPF_S = 1.07


def generate(n_docs: int, n_queries: int, seed: int = 7) -> tuple[list[list[str]], list[list[str]]]:
    """Token lists of the documents and queries (words are "w<rank>")."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
    p = ranks ** -ZIPF_S
    p /= p.sum()
    words = np.array([f"w{r}" for r in range(VOCAB)], dtype=object)
    lengths = np.clip(rng.poisson(20, n_docs), 8, 40)
    flat = rng.choice(VOCAB, size=int(lengths.sum()), p=p)
    cuts = np.cumsum(lengths)[:-1]
    docs = [list(words[part]) for part in np.split(flat, cuts)]
    q = p.copy()
    q[:300] = 0
    q /= q.sum()
    qlen = rng.integers(2, 7, n_queries)
    qflat = rng.choice(VOCAB, size=int(qlen.sum()), p=q)
    queries = [list(words[part]) for part in np.split(qflat, np.cumsum(qlen)[:-1])]
    return docs, queries


def long_queries(queries: list[list[str]], join: int = 4) -> list[list[str]]:
    """Every ``join`` consecutive queries run together as one."""
    return [sum(queries[i:i + join], []) for i in range(0, len(queries) - join + 1, join)]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def latencies(search_one, queries) -> dict:
    times = []
    for q in queries:
        started = time.perf_counter()
        search_one(q)
        times.append(time.perf_counter() - started)
    return {"qps": round(len(queries) / sum(times), 1), "p50_ms": round(1000 * statistics.median(times), 3),
            "p95_ms": round(1000 * float(np.percentile(times, 95)), 3)}


def batch_qps(search_all, queries, rounds: int = 5) -> dict:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        search_all(queries)
        times.append(time.perf_counter() - started)
    return {"qps_median": round(len(queries) / statistics.median(times), 1),
            "qps_min": round(len(queries) / max(times), 1), "qps_max": round(len(queries) / min(times), 1)}


def run_ragkit(tokens_file: Path, work: Path, before: bool = False) -> dict:
    """``before``: an earlier ragkit (on PYTHONPATH), which may want its documents in a list
    and know nothing of ``compiled``."""
    import inspect

    from ragkit.corpus import Doc
    from ragkit.retrieval.bm25 import BM25Index

    with tokens_file.open("rb") as f:
        docs_tokens, queries = pickle.load(f)
    base_mb = peak_rss_mb()
    # The texts as a corpus reader gives them, one at a time: the build writes them to disk
    # as it goes (the index keeps them; bm25s gets no texts).
    docs = (Doc(doc_id=f"d{i}", text=" ".join(t)) for i, t in enumerate(docs_tokens))
    if before:
        docs = list(docs)
    work = work / ("before" if before else "today")
    work.mkdir(exist_ok=True)
    started = time.perf_counter()
    index = BM25Index.from_tokens(docs_tokens, docs=docs)
    index_s = time.perf_counter() - started
    built_mb = peak_rss_mb()
    started = time.perf_counter()
    index.save(work / "ragkit-index")
    save_s = time.perf_counter() - started
    del index
    started = time.perf_counter()
    index = BM25Index.load(work / "ragkit-index")
    load_s = time.perf_counter() - started
    compiled = {"compiled": True} if "compiled" in inspect.signature(index.top_k_many).parameters else {}
    index.top_k_many(queries[:10], K, **compiled)    # compile (or load the cached compiled loop)
    single = latencies(lambda q: index.top_k_tokens(q, K), queries)
    batched = {f"{t}_thread{'s' * (t > 1)}": batch_qps(lambda qs, t=t: index.top_k_many(qs, K, threads=t, **compiled),
                                                       queries)
               for t in (1, 2)}
    batched["long_1_thread"] = batch_qps(lambda qs: index.top_k_many(qs, K, threads=1, **compiled),
                                         long_queries(queries))
    return {"index_s": round(index_s, 2), "save_s": round(save_s, 2), "load_s": round(load_s, 2),
            "disk_mb": round(folder_mb(work / "ragkit-index"), 1), "postings": int(index.weights.nnz),
            "texts_disk_mb": round(sum(f.stat().st_size for f in (work / "ragkit-index").glob("docs.*")) / 2**20, 1),
            "peak_rss_mb": round(peak_rss_mb(), 1), "rss_after_tokens_mb": round(base_mb, 1),
            "rss_after_build_mb": round(built_mb, 1), "single": single, "batch": batched}


def run_bm25s(tokens_file: Path, work: Path) -> dict:
    import bm25s

    with tokens_file.open("rb") as f:
        docs_tokens, queries = pickle.load(f)
    base_mb = peak_rss_mb()
    started = time.perf_counter()
    retriever = bm25s.BM25(backend="numba")
    retriever.index(docs_tokens, show_progress=False)
    index_s = time.perf_counter() - started
    built_mb = peak_rss_mb()
    started = time.perf_counter()
    retriever.save(str(work / "bm25s-index"))
    save_s = time.perf_counter() - started
    del retriever
    started = time.perf_counter()
    retriever = bm25s.BM25.load(str(work / "bm25s-index"))
    retriever.backend = "numba"
    load_s = time.perf_counter() - started

    def many(qs, threads=1):
        return retriever.retrieve(qs, k=K, show_progress=False, n_threads=threads, backend_selection="numba")

    many(queries[:10])
    single = latencies(lambda q: many([q]), queries)
    batched = {f"{t}_thread{'s' * (t > 1)}": batch_qps(lambda qs, t=t: many(qs, t), queries) for t in (1, 2)}
    batched["long_1_thread"] = batch_qps(many, long_queries(queries))
    return {"index_s": round(index_s, 2), "save_s": round(save_s, 2), "load_s": round(load_s, 2),
            "disk_mb": round(folder_mb(work / "bm25s-index"), 1), "peak_rss_mb": round(peak_rss_mb(), 1),
            "rss_after_tokens_mb": round(base_mb, 1), "rss_after_build_mb": round(built_mb, 1),
            "single": single, "batch": batched}


def run_dense(tokens_file: Path, work: Path, n_vectors: int) -> dict:
    from ragkit.embeddings import default_embedder
    from ragkit.stores.chroma import ChromaVectors

    with tokens_file.open("rb") as f:
        docs_tokens, _ = pickle.load(f)
    texts = [" ".join(t) for t in docs_tokens[:2000]]
    embedder = default_embedder("minilm")
    embedder.encode_passages(texts[:64], progress=False)          # load the model
    started = time.perf_counter()
    embedder.encode_passages(texts, progress=False)
    embed_s = time.perf_counter() - started
    rng = np.random.default_rng(11)
    vectors = ChromaVectors(str(work / "chroma"), "scale")
    insert = []
    for start in range(0, n_vectors, 5000):
        part = rng.standard_normal((min(5000, n_vectors - start), 384)).astype(np.float32)
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        ids = [f"d{i}" for i in range(start, start + len(part))]
        began = time.perf_counter()
        vectors.upsert(ids, part, [{"fingerprint": "x"}] * len(part), ids)
        insert.append(time.perf_counter() - began)
    probes = rng.standard_normal((200, 384)).astype(np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    times = []
    for v in probes:
        began = time.perf_counter()
        vectors.query(v, K)
        times.append(time.perf_counter() - began)
    return {"embedder": embedder.name, "embed_backend": embedder.backend, "embedded_docs": len(texts), "embed_docs_per_s": round(len(texts) / embed_s, 1),
            "chroma_vectors": vectors.count(), "chroma_insert_s": round(sum(insert), 1),
            "chroma_insert_vectors_per_s": round(n_vectors / sum(insert), 1),
            "chroma_query_p50_ms": round(1000 * statistics.median(times), 2),
            "chroma_query_p95_ms": round(1000 * float(np.percentile(times, 95)), 2),
            "chroma_disk_mb": round(folder_mb(work / "chroma"), 1), "peak_rss_mb": round(peak_rss_mb(), 1)}


def child(which: str, tokens_file: str, work: str, n_vectors: int, before: Path | None = None) -> dict:
    """Run one part in a fresh process and return its JSON (its own peak memory); ``before``:
    with that checkout's ragkit first on the path."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if before is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(before.resolve()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run([sys.executable, __file__, "--child", which, "--tokens", tokens_file, "--work", work,
                           "--vectors", str(n_vectors)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{which} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def turns_median(result: dict, figure: str) -> float:
    """The median over a ragkit's turns of ``figure`` (single_qps, batch_1_thread_qps or
    long_batch_1_thread_qps)."""
    return statistics.median(t[figure] for t in result["turns"])


def summarize(results: dict, texts_mb: float) -> dict:
    """The ratios: ragkit's query speeds are the medians of its turns (one turn: its run)."""
    ragkit, bm25s = results["ragkit"], results["bm25s"]
    summary = {
        "batch_qps_ratio_vs_bm25s_numba_1_thread": round(
            turns_median(ragkit, "batch_1_thread_qps") / bm25s["batch"]["1_thread"]["qps_median"], 2),
        "single_qps_ratio_vs_bm25s_numba": round(turns_median(ragkit, "single_qps") / bm25s["single"]["qps"], 2),
        "long_batch_qps_ratio_vs_bm25s_numba_1_thread": round(
            turns_median(ragkit, "long_batch_1_thread_qps") / bm25s["batch"]["long_1_thread"]["qps_median"], 2),
        "index_time_ratio_vs_bm25s": round(ragkit["index_s"] / bm25s["index_s"], 2),
        "peak_rss_under_8_gb": max(results[w]["peak_rss_mb"] for w in results) < 8192,
        "load_ratio_vs_bm25s": round(ragkit["load_s"] / max(bm25s["load_s"], 1e-3), 2),
        "peak_build_rss_ratio_vs_bm25s": round(ragkit["rss_after_build_mb"] / bm25s["rss_after_build_mb"], 2),
        "texts_mb": round(texts_mb, 1),
        "disk_allowance_mb": round(1.5 * bm25s["disk_mb"] + texts_mb, 1),   # 1.5 x bm25s's plus the texts
        # the index without its texts against bm25s's (which keeps none)
        "disk_less_texts_ratio_vs_bm25s": round((ragkit["disk_mb"] - ragkit["texts_disk_mb"]) / bm25s["disk_mb"], 2),
        "turns": len(ragkit["turns"]),
    }
    if "ragkit_before" in results:
        before = results["ragkit_before"]
        for figure, name in (("batch_1_thread_qps", "batch_qps_ratio_vs_before_1_thread"),
                             ("single_qps", "single_qps_ratio_vs_before"),
                             ("long_batch_1_thread_qps", "long_batch_qps_ratio_vs_before_1_thread")):
            summary[name] = round(turns_median(ragkit, figure) / turns_median(before, figure), 2)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="a checkout of an earlier ragkit whose BM25 runs too, for the same-run comparison")
    parser.add_argument("--turns", type=int, default=1,
                        help="with --before: run the two this many times each, alternately (query ratios: medians)")
    parser.add_argument("--child", choices=("ragkit", "ragkit_before", "bm25s", "dense"))
    parser.add_argument("--tokens")
    parser.add_argument("--work")
    args = parser.parse_args()
    if args.turns < 1:
        parser.error(f"--turns: must be at least 1, got {args.turns}")
    if args.child:
        part = {"ragkit": run_ragkit, "bm25s": run_bm25s,
                "ragkit_before": lambda tokens, work: run_ragkit(tokens, work, before=True)}.get(args.child)
        result = part(Path(args.tokens), Path(args.work)) if part else \
            run_dense(Path(args.tokens), Path(args.work), args.vectors)
        print(json.dumps(result))
        return
    started = time.perf_counter()
    docs, queries = generate(args.docs, args.queries)
    generate_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        tokens_file = Path(tmp) / "tokens.pickle"
        with tokens_file.open("wb") as f:
            pickle.dump((docs, queries), f, protocol=pickle.HIGHEST_PROTOCOL)
        postings_words = sum(len(d) for d in docs)
        texts_mb = sum(len(" ".join(d)) for d in docs) / 2**20      # the documents' texts, as UTF-8
        del docs
        results: dict = {}
        order = [*(("ragkit", "ragkit_before") * args.turns if args.before else ("ragkit",)), "bm25s", "dense"]
        for which in order:
            print(f"{which} ...", flush=True)
            result = child(which, str(tokens_file), tmp, args.vectors,
                           args.before if which == "ragkit_before" else None)
            print(json.dumps(result), flush=True)
            results.setdefault(which, result)
            if which.startswith("ragkit"):
                results[which].setdefault("turns", []).append(
                    {"single_qps": result["single"]["qps"], "index_s": result["index_s"],
                     "batch_1_thread_qps": result["batch"]["1_thread"]["qps_median"],
                     "long_batch_1_thread_qps": result["batch"]["long_1_thread"]["qps_median"]})
    if args.before:
        results["ragkit_before"]["commit"] = commit_of(args.before)
    summary = summarize(results, texts_mb)
    write("scale", {"docs": args.docs, "queries": args.queries, "words": postings_words, "vocabulary": VOCAB,
                    "zipf_exponent": ZIPF_S, "generate_s": round(generate_s, 1), "k": K,
                    "results": results, "summary": summary})
    print(summary)


if __name__ == "__main__":
    main()
