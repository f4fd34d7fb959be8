"""One build per index: the command line, the notebooks' helpers, the demo sources and the
profiler all build an index folder through ``retrieval.build.build_index``, so the same
corpus gives the same files whoever builds it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from ragkit import workbench as wb
from ragkit.testing.generated import generated_corpus
from ragkit.pipelines import get_pipeline
from ragkit.retrieval.build import BuildReport, IndexSpec, build_index

from .conftest import ROOT
from .test_cli import ragkit

SPECS = ROOT / "data" / "specs"
MANUALS = ROOT / "data" / "manuals"
# What differs from one build to the next: how long it took, and where it was asked from.
VARIABLE = {"build_s", "seconds", "corpus"}


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in VARIABLE}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def artifacts(folder: Path) -> dict[str, object]:
    """Every file of an index folder (its concepts folder too), read as what it holds, with
    timings left out."""
    found: dict[str, object] = {}
    for path in sorted(Path(folder).resolve().rglob("*")):
        name = str(path.relative_to(Path(folder).resolve()))
        if path.is_dir():
            continue
        if path.suffix == ".npy":
            found[name] = np.load(path).tolist()
        elif path.suffix == ".npz":
            with np.load(path) as arrays:
                found[name] = {k: arrays[k].tolist() for k in sorted(arrays.files)}
        elif path.name.endswith(".json.gz"):
            found[name] = _plain(json.loads(gzip.decompress(path.read_bytes())))
        elif path.suffix == ".json":
            found[name] = _plain(json.loads(path.read_text(encoding="utf-8")))
        elif path.suffix == ".z":
            found[name] = path.read_bytes()
        else:
            found[name] = path.read_text(encoding="utf-8")
    return found


@pytest.mark.slow
def test_the_command_line_and_the_notebooks_build_the_same_index(tmp_path):
    ragkit("index", "build", "--corpus", str(SPECS), "--out", str(tmp_path / "cli"), "--concepts", "--json")
    wb.build_text_graph(wb.TextGraphParams(corpus=str(SPECS), index_dir=str(tmp_path / "text-graph")))
    ragkit("index", "build", "--corpus", str(SPECS), "--out", str(tmp_path / "cli-plain"), "--json")
    wb.build_index(wb.IndexBuildParams(corpus=str(SPECS), index_dir=str(tmp_path / "notebook"), dense=""))

    with_concepts = artifacts(tmp_path / "cli")
    assert "concepts/communities.json.gz" in with_concepts and "weights.data.npy" in with_concepts
    assert artifacts(tmp_path / "text-graph") == with_concepts
    assert artifacts(tmp_path / "notebook") == artifacts(tmp_path / "cli-plain")


def test_the_demo_source_and_the_profiler_build_as_the_command_line_does(tmp_path):
    ragkit("index", "build", "--corpus", str(MANUALS), "--out", str(tmp_path / "cli"), "--lang", "vi", "--json")
    lexical = get_pipeline("lexical")
    where = lexical.build_demo(ROOT / "data", tmp_path, progress=False)
    assert where == {"index": str(tmp_path / "index")}
    assert artifacts(tmp_path / "index") == artifacts(tmp_path / "cli")

    sized, questions = lexical.build_sized(40, ROOT / "data", tmp_path)
    report = build_index(IndexSpec(corpus=MANUALS, out=tmp_path / "again", lang="vi"),
                         docs=generated_corpus(40, MANUALS))
    assert isinstance(report, BuildReport) and report.docs == 40 and questions == lexical.sample_questions
    assert artifacts(sized["index"]) == artifacts(tmp_path / "again")


def test_the_report_is_what_the_command_line_prints(tmp_path):
    printed = json.loads(ragkit("index", "build", "--corpus", str(SPECS), "--out", str(tmp_path / "cli"),
                                "--json").stdout)
    report = build_index(IndexSpec(corpus=SPECS, out=tmp_path / "lib"), progress=False).to_dict()
    assert set(report) == set(printed)
    assert _plain({**report, "index": None}) == _plain({**printed, "index": None})
