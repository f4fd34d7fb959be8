"""Notebook ``05_latency_profiling``: per-stage timings of every pipeline and how they grow."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from ..errors import InputError
from ..pipelines import DEFAULT_PIPELINE, PIPELINES, get_pipeline, pipelines
from ..runtime.extras import requires_extra
from .checks import check_type


# --------------------------------------------------------------------------- 05 latency profiling
@dataclass(frozen=True)
class ProfilingParams:
    """Parameters of ``05_latency_profiling``. ``sizes`` gives some pipelines other sizes for
    the scaling study, as ``"lexical=250,1000,4000; kg=1000,10000"`` (at least three sizes
    each); the others, and every pipeline when it is empty, keep the sizes they declare."""

    demo_dir: str = "../outputs/serve-demo"
    data_dir: str = "../data"
    repeats: int = 5
    use_llm: bool = False
    llm_pipelines: str = DEFAULT_PIPELINE
    sizes: str = ""
    out_dir: str = "../outputs/profiling"

    def __post_init__(self) -> None:
        for name in ("demo_dir", "data_dir", "llm_pipelines", "sizes", "out_dir"):
            check_type(name, getattr(self, name), str)
        check_type("repeats", self.repeats, int)
        check_type("use_llm", self.use_llm, bool)
        if self.repeats < 1:
            raise InputError(f"parameter repeats: must be at least 1, got {self.repeats}")
        unknown = [p for p in self.llm_pipeline_list if p not in PIPELINES]
        if unknown:
            raise InputError(f"parameter llm_pipelines: {unknown[0]!r} is not a pipeline ({', '.join(PIPELINES)})")
        _ = self.sizes_by_pipeline  # parsed and checked now, not halfway through a run

    @property
    def llm_pipeline_list(self) -> list[str]:
        return [p.strip() for p in self.llm_pipelines.split(",") if p.strip()]

    @property
    def sizes_by_pipeline(self) -> dict[str, list[int]]:
        """Each pipeline's sizes: those given in ``sizes`` (``lexical: 250,1000,4000; kg: 1000,10000``;
        ``lexical=250,...`` reads the same), else those it declares."""
        out = {p.name: list(p.sizes) for p in pipelines() if p.size_unit and p.sizes}
        for part in filter(None, (part.strip() for part in self.sizes.split(";"))):
            name, raw = (re.split(r"[=:]", part, maxsplit=1) + [""])[:2]
            name = name.strip()
            timed = ", ".join(out) or "none"
            if name not in PIPELINES or not get_pipeline(name).size_unit:
                raise InputError(f"parameter sizes: {name!r} is not a pipeline that can be timed at sizes ({timed})")
            try:
                values = sorted({int(v) for v in raw.split(",") if v.strip()})
            except ValueError:
                raise InputError(f"parameter sizes: {name}: comma-separated integers, got {raw.strip()!r}") from None
            if len(values) < 3 or values[0] < 1:
                raise InputError(f"parameter sizes: {name}: at least three sizes of 1 or more, got {raw.strip()!r}")
            out[name] = values
        return out


def profile_all(p: ProfilingParams):
    """Every pipeline's questions on the demo sources, ``p.repeats`` times each (after a
    warm-up): the raw runs and the per-stage summary."""
    from .latency_study import pipeline_questions, profile_pipelines, stage_summary
    from ..service import Service, build_demo_sources

    service = Service(build_demo_sources(p.demo_dir, p.data_dir))
    try:
        runs = profile_pipelines(service, pipeline_questions(service.available()), repeats=p.repeats, use_llm=p.use_llm,
                                 llm_pipelines=p.llm_pipeline_list)
    finally:
        service.close()
    return runs, stage_summary(runs)


def profile_shape(runs: pd.DataFrame) -> pd.DataFrame:
    """What was measured (stable from run to run): per pipeline, its questions, runs and stages."""
    rows = []
    for pipeline, group in runs.groupby("pipeline", sort=False):
        rows.append({"pipeline": pipeline, "questions": group.question.nunique(),
                     "runs_per_question": group.run.nunique(),
                     "stages": ", ".join(s for s in dict.fromkeys(group.stage) if s != "total")})
    return pd.DataFrame(rows)


def stage_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The per-stage table: median and p95 milliseconds and share of the total."""
    table = summary.copy()
    table["share"] = table["share"].map(lambda v: "" if pd.isna(v) else f"{v:.0%}")
    return table.set_index(["pipeline", "stage"])[["median_ms", "p95_ms", "share", "samples"]]


def scaling_table(p: ProfilingParams) -> pd.DataFrame:
    """Each stage's median and p95 at every size of generated corpus and graph."""
    from .latency_study import scaling

    return scaling(p.sizes_by_pipeline, p.data_dir, repeats=max(1, min(p.repeats, 3)))


def scaling_view(table: pd.DataFrame) -> pd.DataFrame:
    """Per pipeline and size: build seconds, the total's median and p95, and the slowest stage."""
    rows = []
    for (pipeline, size), group in table.groupby(["pipeline", "size"], sort=False):
        total = group[group.stage == "total"].iloc[0]
        stages = group[group.stage != "total"]
        slowest = stages.loc[stages.median_ms.idxmax()]
        rows.append({"pipeline": pipeline, "size": size, "build_s": total.build_s,
                     "median_ms": total.median_ms, "p95_ms": total.p95_ms,
                     "slowest_stage": f"{slowest.stage} ({slowest.median_ms:.2f} ms)"})
    return pd.DataFrame(rows)


def plot_stages(summary: pd.DataFrame):
    from .latency_study import plot_stages as plot

    return plot(summary)


def plot_scaling(table: pd.DataFrame):
    from .latency_study import plot_scaling as plot

    return plot(table)


def stage_explorer(summary: pd.DataFrame):
    """A dropdown over the pipelines showing one pipeline's stage table (JupyterLab)."""
    with requires_extra("notebooks"):
        import ipywidgets as widgets
        from IPython.display import display

    pipelines = list(dict.fromkeys(summary.pipeline))
    choice = widgets.Dropdown(options=pipelines, value=pipelines[0], description="pipeline")
    out = widgets.Output()

    def show(change=None):
        out.clear_output()
        with out:
            display(stage_table(summary[summary.pipeline == choice.value]))

    choice.observe(show, names="value")
    show()
    return widgets.VBox([choice, out])


def save_profiling(p: ProfilingParams, summary: pd.DataFrame, table: pd.DataFrame, figures: dict) -> list[str]:
    """Tables and figures into ``p.out_dir``; the file names written."""
    from .latency_study import save_profile

    return [path.name for path in save_profile(p.out_dir, summary, table, figures)]
