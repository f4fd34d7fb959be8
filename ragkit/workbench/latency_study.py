"""Latency profiling (notebook 05): where each pipeline spends its time, and how that grows
with the size of the corpus or graph.

``profile_pipelines`` asks every pipeline its questions several times through the same
``Service`` the CLI and server use, and keeps every stage's wall time (``timings_ms``).
``scaling`` has each pipeline build its source at three or more sizes from generated data
(``Pipeline.build_sized``, from ``testing.generated``) and times the same stages on each.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..errors import InputError
from ..runtime.extras import requires_extra
from ..service import Service, Sources, request_type

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
                      use_llm: bool = False, llm_pipelines: Iterable[str] | None = None,
                      progress: bool | None = None) -> pd.DataFrame:
    """One row per (pipeline, question, run, stage) with its milliseconds. The first run of
    each question is a warm-up and is not kept (it loads models and caches). With
    ``use_llm``, the model writes the answers of ``llm_pipelines`` (default: the default
    pipeline)."""
    if repeats < 1:
        raise InputError(f"repeats: must be at least 1, got {repeats}")
    from ..pipelines import DEFAULT_PIPELINE

    llm_pipelines = set(llm_pipelines if llm_pipelines is not None else [DEFAULT_PIPELINE])
    work = [(p, q) for p, qs in questions.items() for q in qs]
    from ..runtime.progress import progress_bar

    rows = []
    for pipeline, question in progress_bar(work, desc="profiling", progress=progress):
        request = request_type()(question, pipeline, no_llm=not (use_llm and pipeline in llm_pipelines))
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


# --------------------------------------------------------------------------- scaling
def scaling(sizes: dict[str, list[int]], data: str | Path, repeats: int = 3,
            workdir: str | Path | None = None, progress: bool | None = None) -> pd.DataFrame:
    """Median and p95 per stage at each size: ``sizes`` maps pipelines to at least three
    sizes each (in their ``size_unit``: chunks, generated specs, edges); each pipeline builds
    a source of each size from generated data (``build_sized``) and is asked its questions."""
    from ..pipelines import get_pipeline

    for pipeline, values in sizes.items():
        if get_pipeline(pipeline).size_unit == "":
            raise InputError(f"sizes: pipeline {pipeline!r} has no generated source to time")
        if len(values) < 3 or any(v < 1 for v in values):
            raise InputError(f"sizes[{pipeline}]: give at least three sizes of 1 or more, got {values}")
    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as scratch:
        tmp = Path(scratch)
        for pipeline, values in sizes.items():
            for size in values:
                started = time.perf_counter()
                where, questions = get_pipeline(pipeline).build_sized(size, Path(data), tmp)
                service = Service(Sources(**where))
                build_s = time.perf_counter() - started
                summary = stage_summary(profile_pipelines(service, {pipeline: list(questions)}, repeats=repeats))
                service.close()
                for row in summary.to_dict("records"):
                    rows.append({"pipeline": pipeline, "size": size, "build_s": round(build_s, 3), **row})
    return pd.DataFrame(rows)


def size_units() -> dict[str, str]:
    """What each pipeline's sizes count, for the pipelines that can be timed at sizes."""
    from ..pipelines import pipelines

    return {p.name: p.size_unit for p in pipelines() if p.size_unit}


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
    units = size_units()
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
