"""Notebooks: thin, parameterized, and runnable headless with papermill (``ragkit run``).
nbval itself runs from ``make test`` over notebooks/ (compared outputs)."""

import json
import re

import nbformat
import pytest

from ragkit.errors import InputError
from ragkit.workbench.runs import check_parameters, coerce, run_notebook

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LOGIC = re.compile(r"^\s*(def |class |for |while |async def )", re.MULTILINE)


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"03_index_build.ipynb", "04_query_and_explain.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_thin_and_parameterized(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    for cell in code:
        assert not LOGIC.search(cell.source), f"logic belongs in ragkit/: {cell.source[:80]}"
    for cell in code:
        if "nbval-ignore-output" in cell.metadata.get("tags", []):
            assert "nbval-ignore-output:" in cell.source, "say why the output is not compared"


def test_parameters_are_checked_against_the_notebook():
    nb = ROOT / "notebooks" / "04_query_and_explain.ipynb"
    assert check_parameters(nb, {"k": "3", "use_llm": "false"}) == {"k": 3, "use_llm": False}
    assert check_parameters(nb, {"question": "2024"}) == {"question": "2024"}
    with pytest.raises(InputError, match="parameter colour: notebook 04_query_and_explain.ipynb does not declare it"):
        check_parameters(nb, {"colour": "red"})
    with pytest.raises(InputError, match="parameter k: expected int"):
        check_parameters(nb, {"k": "many"})
    assert coerce("0.5") == 0.5 and coerce("None") is None


@pytest.mark.slow
def test_papermill_runs_both_notebooks(tmp_path):
    index_dir = tmp_path / "index"
    first = run_notebook(ROOT / "notebooks" / "03_index_build.ipynb", {"index_dir": str(index_dir)},
                         out_root=tmp_path / "runs", progress=False)
    assert first["status"] == "ok", first.get("error")
    assert (index_dir / "meta.json").exists()
    second = run_notebook(ROOT / "notebooks" / "04_query_and_explain.ipynb",
                          {"index_dir": str(index_dir), "question": "Quy trình khóa nguồn và gắn thẻ?"},
                          out_root=tmp_path / "runs", progress=False)
    assert second["status"] == "ok", second.get("error")
    manifest = json.loads((tmp_path / "runs" / "04_query_and_explain").glob("*/manifest.json").__next__().read_text())
    assert manifest["parameters"]["question"] == "Quy trình khóa nguồn và gắn thẻ?"
    assert manifest["versions"]["papermill"] and manifest["duration_s"] > 0
    executed = nbformat.read(second["output_notebook"], as_version=4)
    text = json.dumps([c.get("outputs", []) for c in executed.cells], ensure_ascii=False)
    assert "Khóa cầu dao" in text or "khóa cầu dao" in text.lower()


@pytest.mark.slow
def test_failed_run_is_marked_failed(tmp_path):
    manifest = run_notebook(ROOT / "notebooks" / "04_query_and_explain.ipynb", {"k": 0},
                            out_root=tmp_path / "runs", progress=False)
    assert manifest["status"] == "failed" and "k" in manifest["error"]


def notebook_defaults(path) -> tuple[dict, dict]:
    """A notebook's parameters (name -> literal default) and, from the cells that build the
    parameter classes (``wb.QueryParams(k=k, ...)``), which class field each one feeds."""
    import ast

    nb = nbformat.read(path, as_version=4)
    values, feeds = {}, {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        if "parameters" in cell.metadata.get("tags", []):
            for node in tree.body:
                if isinstance(node, ast.AnnAssign):
                    values[node.target.id] = ast.literal_eval(node.value)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr.endswith("Params"):
                for kw in node.keywords:
                    if isinstance(kw.value, ast.Name):
                        feeds[kw.value.id] = (node.func.attr, kw.arg)
    return values, feeds


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_defaults_are_the_parameter_classes_defaults(path):
    """One home per default: a notebook's parameters cell says what its parameter class says
    (and the class takes what ragkit.config says, where the config has it)."""
    import dataclasses

    from ragkit import workbench as wb

    values, feeds = notebook_defaults(path)
    assert values, "a parameters cell with annotated defaults"
    for name, value in values.items():
        assert name in feeds, f"parameter {name} feeds no parameter class"
        cls, field = feeds[name]
        default = {f.name: f.default for f in dataclasses.fields(getattr(wb, cls))}[field]
        assert value == default, f"{path.name}: {name} = {value!r}, but {cls}.{field} defaults to {default!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_papermill_reads_every_parameter_with_its_type(path, caplog):
    """papermill's own reading of the parameters cell (``papermill --help-notebook``) finds
    each parameter, and says nothing: a line it cannot parse is logged as a warning."""
    from papermill.translators import PythonTranslator

    nb = nbformat.read(path, as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    with caplog.at_level("WARNING"):
        found = PythonTranslator.inspect(cell)
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    declared = [line.split(":", 1)[0] for line in cell.source.splitlines() if line and not line.startswith("#")]
    assert [p.name for p in found] == declared
    assert all(p.inferred_type_name in ("str", "int", "float", "bool") for p in found), found


def test_sizes_read_with_an_equals_sign_or_a_colon():
    from ragkit.workbench.latency_profiling import ProfilingParams

    colon = ProfilingParams(sizes="lexical: 250,1000,4000; kg: 1000,10000,100000").sizes_by_pipeline
    equals = ProfilingParams(sizes="lexical=250,1000,4000;kg=1000,10000,100000").sizes_by_pipeline
    assert colon == equals and colon["lexical"] == [250, 1000, 4000] and colon["kg"] == [1000, 10000, 100000]
    with pytest.raises(InputError, match="parameter sizes: 'lexical 250,1000,4000' is not a pipeline"):
        ProfilingParams(sizes="lexical 250,1000,4000").sizes_by_pipeline
