"""Latency profiling (notebook 05): where each pipeline spends its time, and how that grows
with the size of the corpus or graph.

``profile_pipelines`` asks every pipeline its questions several times through the same
``Service`` the CLI and server use, and keeps every stage's wall time (``timings_ms``).
``scaling`` builds the lexical index, the multi-hop graph and the typed KG at three or more
sizes from generated data and times the same stages on each. Generated data is for timing
only: the lexical chunks are sentences of the bundled manuals recombined, the graphs are
random with a few hubs (Zipf-like degrees), as real graphs have.
"""

from __future__ import annotations

import csv
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..corpus import Doc, load_document_folder
from ..errors import InputError
from ..runtime.extras import requires_extra
from ..service import AskRequest, Service, Sources

# The sum of the stages, not a stage of its own.
NOT_A_STAGE = {"total"}


def pipeline_questions(names: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Each pipeline's sample questions (``Pipeline.sample_questions``), which its demo
    source answers: every registered pipeline's, or those of ``names``."""
    from ..pipelines import PIPELINES, get_pipeline

    return {name: list(get_pipeline(name).sample_questions) for name in (names or PIPELINES)
            if get_pipeline(name).sample_questions}




def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank percentile (q in [0, 1]) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --------------------------------------------------------------------------- per-stage times
def profile_pipelines(service: Service, questions: dict[str, list[str]], repeats: int = 5,
                      use_llm: bool = False, llm_pipelines: Iterable[str] = ("lexical",),
                      progress: bool | None = None) -> pd.DataFrame:
    """One row per (pipeline, question, run, stage) with its milliseconds. The first run of
    each question is a warm-up and is not kept (it loads models and caches)."""
    if repeats < 1:
        raise InputError(f"repeats: must be at least 1, got {repeats}")
    llm_pipelines = set(llm_pipelines)
    work = [(p, q) for p, qs in questions.items() for q in qs]
    from ..runtime.progress import progress_bar

    rows = []
    for pipeline, question in progress_bar(work, desc="profiling", progress=progress):
        request = AskRequest(question, pipeline, no_llm=not (use_llm and pipeline in llm_pipelines))
        for run in range(repeats + 1):
            data = service.ask(request)
            if run == 0:
                continue
            for stage, ms in data["timings_ms"].items():
                if stage not in NOT_A_STAGE:
                    rows.append({"pipeline": pipeline, "question": question, "run": run,
                                 "stage": stage, "ms": float(ms)})
            rows.append({"pipeline": pipeline, "question": question, "run": run, "stage": "total",
                         "ms": float(data["timings_ms"]["total"])})
    return pd.DataFrame(rows, columns=["pipeline", "question", "run", "stage", "ms"])


def stage_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Median and p95 per (pipeline, stage) over every question and run, in the order the
    stages ran, with each stage's share of the pipeline's median total."""
    out = []
    for pipeline, group in runs.groupby("pipeline", sort=False):
        total = statistics.median(group.loc[group.stage == "total", "ms"])
        for stage, values in group.groupby("stage", sort=False)["ms"]:
            median = statistics.median(values)
            out.append({"pipeline": pipeline, "stage": stage, "median_ms": round(median, 3),
                        "p95_ms": round(percentile(values, 0.95), 3), "samples": len(values),
                        "share": round(median / total, 3) if stage != "total" and total else None})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- generated data
def generated_corpus(n_chunks: int, manuals: str | Path, seed: int = 0) -> list[Doc]:
    """``n_chunks`` chunks of 4 to 8 sentences drawn from the manuals (timing data only)."""
    rng = random.Random(seed)
    source = load_document_folder(manuals)
    sentences = [s.strip() for d in source for s in d.text.replace("\n", " ").split(". ") if len(s.strip()) > 20]
    titles = [d.title for d in source]
    return [Doc(doc_id=f"gen#{i}", title=rng.choice(titles), source="generated",
                text=". ".join(rng.choices(sentences, k=rng.randint(4, 8))))
            for i in range(n_chunks)]


def _zipf(rng: random.Random, n: int) -> int:
    """An index in [0, n) where low indices are far more likely (hubs)."""
    return min(int(rng.paretovariate(1.2)) - 1, n - 1)


def generated_edges(n_edges: int, path: Path, seed: int = 0) -> Path:
    """An edges.csv of people, places, prizes and employers with ``n_edges`` edges."""
    rng = random.Random(seed)
    people = max(10, n_edges // 4)
    kinds = {"born_in": [f"City {i}" for i in range(max(5, people // 20))],
             "works_at": [f"Institute {i}" for i in range(max(5, people // 30))],
             "award": [f"Prize {i}" for i in range(max(3, people // 100))],
             "advisor": [f"Person {i}" for i in range(people)]}
    edges: set[tuple[str, str, str]] = set()
    while len(edges) < n_edges:
        relation = rng.choice(list(kinds))
        targets = kinds[relation]
        source = f"Person {rng.randrange(people)}"
        target = targets[_zipf(rng, len(targets))]
        if source != target:
            edges.add((source, relation, target))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source", "relation", "target"])
        writer.writerows(sorted(edges))
    return path


KG_SCHEMA = [("Compound", "TREATS", "Disease"), ("Disease", "HAS_SYMPTOM", "Symptom"),
             ("Disease", "ASSOCIATED_WITH", "Gene"), ("Compound", "INHIBITS", "Gene"),
             ("Disease", "AFFECTS", "Anatomy")]


def generated_typed_kg(n_edges: int, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """nodes.csv and edges.csv with the demo KG's schema and ``n_edges`` edges."""
    rng = random.Random(seed)
    counts = {"Compound": max(5, n_edges // 40), "Disease": max(5, n_edges // 20),
              "Symptom": max(5, n_edges // 30), "Gene": max(5, n_edges // 25),
              "Anatomy": max(3, n_edges // 400)}
    folder.mkdir(parents=True, exist_ok=True)
    nodes, edges = folder / "nodes.csv", folder / "edges.csv"
    with nodes.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "name", "type"])
        for kind, n in counts.items():
            writer.writerows((f"{kind.lower()}:{i}", f"{kind} {i}", kind) for i in range(n))
    seen: set[tuple[str, str, str]] = set()
    while len(seen) < n_edges:
        source_type, relation, target_type = rng.choice(KG_SCHEMA)
        seen.add((f"{source_type.lower()}:{rng.randrange(counts[source_type])}", relation,
                  f"{target_type.lower()}:{_zipf(rng, counts[target_type])}"))
    with edges.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source", "relation", "target"])
        writer.writerows(sorted(seen))
    return nodes, edges


def generated_specs(n_docs: int, demo_specs: str | Path, folder: Path, seed: int = 0) -> list[Path]:
    """The demo specs plus ``n_docs`` generated ones in the same Markdown layout: clause 3
    with ten invented abbreviations, clause 4 with ten sections of demo sentences."""
    rng = random.Random(seed)
    demo = sorted(Path(demo_specs).glob("*.md"))
    sentences = [s.strip() + "." for f in demo for line in f.read_text(encoding="utf-8").splitlines()
                 if len(line) > 80 and not line.startswith(("#", "[")) for s in line.split(". ") if len(s) > 30]
    letters = "ABCDEFGHJKLMNPQRSTUVWXZ"
    words = ["Adaptive", "Binding", "Control", "Data", "Edge", "Function", "Gateway", "Handling", "Identity",
             "Load", "Mobility", "Network", "Policy", "Quality", "Routing", "Session", "Traffic", "Unified"]
    folder.mkdir(parents=True, exist_ok=True)
    paths = list(demo)
    for i in range(n_docs):
        abbreviations = {"".join(rng.choices(letters, k=rng.randint(3, 5))): " ".join(rng.sample(words, 3))
                         for _ in range(10)}
        lines = [f"spec_id: gen_{i}", "", f"# Generated specification {i}", "",
                 "# 3 Definitions and abbreviations", "", "## 3.2 Abbreviations", "",
                 "For the purposes of the present document, the following abbreviations apply.", ""]
        lines += [f"{a}\t{full}" for a, full in abbreviations.items()]
        lines += ["", "# 4 Functions", ""]
        for j, (a, full) in enumerate(abbreviations.items(), 1):
            lines += [f"## 4.{j} {a}", "", f"The {full} ({a}) " + " ".join(rng.sample(sentences, 3)), ""]
        path = folder / f"gen_{i}.md"
        path.write_text("\n".join(lines), encoding="utf-8")
        paths.append(path)
    return paths


def generated_evidence_kg(n_edges: int, demo_kg: str | Path, path: Path, seed: int = 0) -> Path:
    """The demo evidence KG grown to about ``n_edges`` edges: generated factors wired to each
    other and to the demo's nodes, with the demo edges' fields and levels."""
    import json

    rng = random.Random(seed)
    kg = json.loads(Path(demo_kg).read_text(encoding="utf-8"))
    templates = kg["edges"]
    demo_ids = [n["id"] for n in kg["nodes"]]
    n_new = max(10, (n_edges - len(templates)) // 3)
    categories = sorted({n.get("category", "chemical") for n in kg["nodes"]})
    kg["nodes"] += [{"id": f"factor_{i}", "label": f"Factor {i}", "category": rng.choice(categories)}
                    for i in range(n_new)]
    ids = demo_ids + [f"factor_{i}" for i in range(n_new)]
    seen = {(e["source"], e["target"]) for e in templates}
    while len(kg["edges"]) < n_edges:
        source, target = rng.choice(ids[len(demo_ids):]), rng.choice(ids)
        if source == target or (source, target) in seen:
            continue
        seen.add((source, target))
        edge = dict(rng.choice(templates), source=source, target=target,
                    confidence=rng.choice(["HIGH", "MEDIUM", "LOW"]), strength=rng.choice(["STRONG", "MODERATE", "WEAK"]))
        kg["edges"].append(edge)
    path.write_text(json.dumps(kg, ensure_ascii=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- scaling
SIZE_UNITS = {"lexical": "chunks", "spec": "generated specs", "causal": "edges", "graph": "edges", "kg": "edges"}


def scaling(sizes: dict[str, list[int]], data: str | Path, repeats: int = 3,
            workdir: str | Path | None = None, progress: bool | None = None) -> pd.DataFrame:
    """Median and p95 per stage at each size: ``sizes`` maps ``lexical`` (chunks), ``spec``
    (generated documents beside the demo specs), ``causal``, ``graph`` and ``kg`` (edges) to
    at least three sizes each."""
    from ..graphrag.multihop import GraphRAG
    from ..kgqa.importer import import_kg
    from ..kgqa.store import NxTypedStore
    from ..retrieval.bm25 import BM25Index
    from ..text import tokenizer_for

    unknown = sorted(set(sizes) - set(SIZE_UNITS))
    if unknown:
        raise InputError(f"sizes: no scaling for pipeline {unknown[0]!r} ({', '.join(SIZE_UNITS)})")
    for pipeline, values in sizes.items():
        if len(values) < 3 or any(v < 1 for v in values):
            raise InputError(f"sizes[{pipeline}]: give at least three sizes of 1 or more, got {values}")
    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        tmp = Path(tmp)
        for pipeline, values in sizes.items():
            for size in values:
                started = time.perf_counter()
                if pipeline == "lexical":
                    index = BM25Index.build(generated_corpus(size, Path(data) / "manuals"), tokenizer_for("vi"),
                                            progress=False)
                    index.save(tmp / f"index-{size}")
                    service = Service(Sources(index=str(tmp / f"index-{size}")))
                    questions = pipeline_questions(["lexical"])["lexical"]
                elif pipeline == "spec":
                    from ..specs.nx_store import NetworkXStore
                    from ..specs.build import build_kg

                    store = NetworkXStore(tmp / f"specs-{size}.json.gz")
                    build_kg(generated_specs(size, Path(data) / "specs", tmp / f"specs-{size}"), store, progress=False)
                    service = Service(Sources(spec_store=str(tmp / f"specs-{size}.json.gz")))
                    questions = pipeline_questions(["spec"])["spec"]
                elif pipeline == "causal":
                    kg = generated_evidence_kg(size, Path(data) / "merged_knowledge_graph.json",
                                               tmp / f"evidence-{size}.json")
                    service = Service(Sources(kg=str(kg)))
                    questions = pipeline_questions(["causal"])["causal"]
                elif pipeline == "graph":
                    edges = generated_edges(size, tmp / f"edges-{size}.csv")
                    GraphRAG.build(edges, tmp / f"graph-{size}", progress=progress)
                    service = Service(Sources(graph=str(tmp / f"graph-{size}")))
                    questions = ["Where was Person 3 born?", "Who was the advisor of Person 7?",
                                 "Which prize did the advisor of Person 5 get?"]
                else:
                    nodes, edges = generated_typed_kg(size, tmp / f"kg-{size}")
                    store = NxTypedStore(tmp / f"kg-{size}.json.gz")
                    import_kg(nodes, edges, store)
                    service = Service(Sources(kg_store=str(tmp / f"kg-{size}.json.gz")))
                    questions = ["What symptoms do diseases treated by Compound 1 have?",
                                 "What are the common symptoms of diseases treated by both Compound 2 and Compound 3?",
                                 "Which genes are associated with diseases treated by Compound 4?"]
                build_s = time.perf_counter() - started
                summary = stage_summary(profile_pipelines(service, {pipeline: questions}, repeats=repeats))
                service.close()
                for row in summary.to_dict("records"):
                    rows.append({"pipeline": pipeline, "size": size, "build_s": round(build_s, 3), **row})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures
def plot_stages(summary: pd.DataFrame):
    """One bar per pipeline split into its stages' shares of the median total, with the
    total in milliseconds at the end of the bar."""
    with requires_extra("notebooks"):
        import matplotlib.pyplot as plt

    stages = summary[summary.stage != "total"]
    totals = summary[summary.stage == "total"].set_index("pipeline").median_ms
    pipelines = list(dict.fromkeys(stages.pipeline))
    names = list(dict.fromkeys(stages.stage))
    colours = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(pipelines) + 2.2))
    for y, pipeline in enumerate(pipelines):
        part = stages[stages.pipeline == pipeline]
        whole = part.median_ms.sum() or 1.0
        left = 0.0
        for _, row in part.iterrows():
            width = 100 * row.median_ms / whole
            ax.barh(y, width, left=left, color=colours(names.index(row.stage) % 20), label=row.stage,
                    edgecolor="white", linewidth=0.5)
            if width >= 12:
                ax.text(left + width / 2, y, row.stage, ha="center", va="center", fontsize=7)
            left += width
        ax.text(101, y, f"{totals[pipeline]:.2f} ms", va="center", fontsize=8)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, ncol=5, loc="upper center",
              bbox_to_anchor=(0.5, -0.2), frameon=False)
    ax.set_yticks(range(len(pipelines)), pipelines)
    ax.set_xlim(0, 115)
    ax.set_xlabel("share of the median time per question (%), by stage; median total at the right")
    ax.set_title("Where each pipeline spends its time")
    fig.tight_layout()
    return fig


def plot_scaling(table: pd.DataFrame):
    """One panel per pipeline: each stage's median time against the corpus or graph size."""
    with requires_extra("notebooks"):
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    pipelines = list(dict.fromkeys(table.pipeline))
    columns = min(3, len(pipelines))
    rows_n = -(-len(pipelines) // columns)
    fig, axes = plt.subplots(rows_n, columns, figsize=(4.4 * columns, 3.6 * rows_n), squeeze=False)
    for ax in axes.flat[len(pipelines):]:
        ax.set_visible(False)
    units = SIZE_UNITS
    for ax, pipeline in zip(axes.flat, pipelines):
        part = table[(table.pipeline == pipeline) & (table.stage != "total")]
        for stage, rows in part.groupby("stage", sort=False):
            if rows.median_ms.max() >= 0.05:
                ax.plot(rows["size"], rows.median_ms, marker="o", label=stage)
        total = table[(table.pipeline == pipeline) & (table.stage == "total")]
        ax.plot(total["size"], total.median_ms, color="black", linestyle="--", marker="s", label="total")
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted(set(total["size"]))
        ax.set_xticks(sizes, [f"{v:,}" for v in sizes])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(units.get(pipeline, "size"))
        ax.set_ylabel("median ms per question")
        ax.set_title(pipeline)
        ax.legend(fontsize=7)
    fig.suptitle("Stage time against corpus or graph size")
    fig.tight_layout()
    return fig


def save_profile(out_dir: str | Path, summary: pd.DataFrame, scaling_table: pd.DataFrame | None,
                 figures: dict) -> list[Path]:
    """The tables (CSV) and figures (PNG) into ``out_dir``; the paths written."""
    from ..stores.files import atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    atomic_write_text(out / "stage_summary.csv", summary.to_csv(index=False))
    written.append(out / "stage_summary.csv")
    if scaling_table is not None:
        atomic_write_text(out / "scaling.csv", scaling_table.to_csv(index=False))
        written.append(out / "scaling.csv")
    for name, fig in figures.items():
        fig.savefig(out / f"{name}.png", dpi=110, bbox_inches="tight")
        written.append(out / f"{name}.png")
    return written
