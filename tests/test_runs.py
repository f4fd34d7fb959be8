"""Runs and scheduled rebuilds: manifests, staged artifacts, skipping unchanged inputs, the
lock, and a rebuild killed with SIGTERM. Real papermill runs of the real notebooks."""

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragkit.errors import InputError
from ragkit.retrieval.bm25 import BM25Index
from ragkit.workbench.rebuild import RebuildBusy, rebuild, rebuild_lock
from ragkit.workbench.runs import run_notebook

from .conftest import MANUALS, ROOT, shared

INDEX_NB = ROOT / "notebooks" / "03_index_build.ipynb"
KG_NB = ROOT / "notebooks" / "01_kg_builder.ipynb"
pytestmark = pytest.mark.slow


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".staging-" in p.name or ".old-" in p.name)


def test_a_run_leaves_a_full_manifest_and_its_artifact(tmp_path):
    index_dir = tmp_path / "index"
    manifest = run_notebook(INDEX_NB, {"index_dir": str(index_dir)}, out_root=tmp_path / "runs", progress=False)
    assert manifest["status"] == "ok"
    assert len(BM25Index.load(index_dir)) > 0
    saved = json.loads(next((tmp_path / "runs" / "03_index_build").glob("*/manifest.json")).read_text())
    assert saved == manifest
    assert manifest["artifacts"] == {"index_dir": str(index_dir)}
    assert set(manifest["inputs"]) == {"corpus"} and len(manifest["inputs"]["corpus"]) == 64
    assert manifest["model"]["path"].endswith(".gguf") and len(manifest["model"]["sha256"]) == 64
    assert len(manifest["notebook_sha256"]) == len(manifest["code_sha256"]) == 64
    assert manifest["effective_parameters"]["lang"] == "auto"            # the notebook's default
    assert BM25Index.load(index_dir).language.lang == "vi"               # detected: the manuals are Vietnamese
    cells = manifest["cells"]
    assert cells and all(c["seconds"] >= 0 for c in cells)
    assert any(c["source"].startswith("from ragkit import workbench") for c in cells)
    assert leftovers(tmp_path) == []


def test_a_failed_run_keeps_the_previous_artifact(tmp_path):
    index_dir = tmp_path / "index"
    assert run_notebook(INDEX_NB, {"index_dir": str(index_dir)}, out_root=tmp_path / "runs",
                        progress=False)["status"] == "ok"
    before = (index_dir / "meta.json").read_bytes()
    empty = tmp_path / "empty"
    empty.mkdir()
    failed = run_notebook(INDEX_NB, {"index_dir": str(index_dir), "corpus": str(empty)},
                          out_root=tmp_path / "runs", progress=False)
    assert failed["status"] == "failed" and failed["error"]
    assert Path(failed["output_notebook"]).exists()       # the partial notebook is kept
    assert (index_dir / "meta.json").read_bytes() == before
    assert len(BM25Index.load(index_dir)) > 0
    assert leftovers(tmp_path) == []


def test_rebuild_runs_only_when_something_changed(tmp_path):
    corpus = tmp_path / "manuals"
    shutil.copytree(MANUALS, corpus)
    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "data" / "specs", specs)
    params = {"index_dir": str(tmp_path / "index"), "corpus": str(corpus), "store": str(tmp_path / "kg.json.gz"),
              "specs": f"{specs / 'demo_5gc.md'},{specs / 'demo_vocab.md'}",
              "text_index": str(tmp_path / "text-index")}
    runs = tmp_path / "runs"
    first = rebuild([KG_NB, INDEX_NB], params, out_root=runs)
    assert [r["status"] for r in first] == ["ok", "ok"]
    assert {r["reason"] for r in first} == {"no good run yet"}
    again = rebuild([KG_NB, INDEX_NB], params, out_root=runs)
    assert [r["status"] for r in again] == ["up to date", "up to date"]
    loaded = BM25Index.load(tmp_path / "index")        # a reader holding the old index
    with (corpus / "may_khoan.md").open("a", encoding="utf-8") as handle:
        handle.write("\n\n## Ghi chú mới\n\nKiểm tra dây curoa mỗi tuần một lần trước ca làm việc.\n")
    changed = rebuild([KG_NB, INDEX_NB], params, out_root=runs)
    assert [r["status"] for r in changed] == ["up to date", "ok"]
    assert changed[1]["reason"] == "inputs changed"
    fresh = BM25Index.load(tmp_path / "index")
    assert len(fresh) == len(loaded) + 1
    assert "dây curoa" in fresh.search("dây curoa mỗi tuần", k=1)[0].text
    assert all("dây curoa" not in hit.text for hit in loaded.search("dây curoa mỗi tuần", k=5))  # the old copy answers as before
    forced = rebuild([INDEX_NB], {"index_dir": params["index_dir"], "corpus": str(corpus)},
                     out_root=runs, force=True)
    assert forced[0]["reason"] == "forced" and forced[0]["status"] == "ok"
    with (specs / "demo_vocab.md").open("a", encoding="utf-8") as handle:   # one of 01's listed specs
        handle.write("\n- **XYZF**: Example Test Function, added to trigger a rebuild.\n")
    assert rebuild([KG_NB, INDEX_NB], params, out_root=runs)[0]["reason"] == "inputs changed"
    (tmp_path / "kg.json.gz").unlink()
    kg_params = {"store": params["store"], "specs": params["specs"], "text_index": params["text_index"]}
    assert rebuild([KG_NB], kg_params, out_root=runs)[0]["reason"].startswith("artifact store")


def test_rebuild_refuses_unknown_parameters_and_a_second_rebuild(tmp_path):
    with pytest.raises(InputError, match="parameter colour: none of 01_kg_builder.ipynb, 03_index_build.ipynb declares it"):
        rebuild([KG_NB, INDEX_NB], {"colour": "red"}, out_root=tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from ragkit.workbench.rebuild import rebuild_lock\n"
                               f"with rebuild_lock({str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RebuildBusy, match=r"rebuild: another rebuild is running \(pid \d+ since "):
            rebuild([INDEX_NB], {}, out_root=tmp_path)
        out = subprocess.run([sys.executable, "-m", "ragkit.cli", "rebuild", str(INDEX_NB), "--out", str(tmp_path)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 1 and out.stderr.startswith("ragkit: error: rebuild: another rebuild is running")
    finally:
        holder.kill()
        holder.wait()
    with rebuild_lock(tmp_path):     # released when its holder died
        pass


def test_a_rebuild_killed_with_sigterm_leaves_the_previous_index(tmp_path):
    """SIGTERM mid-run: the old index stays usable, the manifest says failed, nothing staged remains."""
    index_dir, runs = tmp_path / "index", tmp_path / "runs"
    assert run_notebook(INDEX_NB, {"index_dir": str(index_dir)}, out_root=runs, progress=False)["status"] == "ok"
    before = len(BM25Index.load(index_dir))
    proc = subprocess.Popen([sys.executable, "-m", "ragkit.cli", "rebuild", str(INDEX_NB), "--force", "--out", str(runs),
                             "-p", "index_dir", str(index_dir), "-p", "corpus", str(shared("scifact", "corpus.jsonl")),
                             "-p", "lang", "en"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    running = None
    while running is None and time.monotonic() < deadline and proc.poll() is None:
        for manifest in (runs / "03_index_build").glob("*/manifest.json"):
            data = json.loads(manifest.read_text())
            if data["status"] == "running":
                running = manifest
        time.sleep(0.1)
    assert running is not None, "the rebuild never started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "terminated by SIGTERM; the previous artifacts are unchanged" in stderr
    data = json.loads(running.read_text())
    assert data["status"] == "failed" and data["error"] == "terminated by SIGTERM"
    assert len(BM25Index.load(index_dir)) == before
    assert leftovers(tmp_path) == []


def test_a_run_s_kernel_talks_over_private_unix_sockets_and_says_nothing_about_tcp(tmp_path):
    """``ragkit run`` starts the kernel over IPC in a private folder, removed afterwards: the
    kernel has no TCP port, and ipykernel's warning about unencrypted TCP never appears."""
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_markdown_cell("# Where the kernel listens"),
                nbformat.v4.new_code_cell('out: str = "transport.txt"  # where to write', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("import json, pathlib, stat\n"
                                          "from ipykernel.kernelapp import IPKernelApp\n"
                                          "app = IPKernelApp.instance()\n"
                                          "folder = pathlib.Path(app.ip).parent\n"
                                          "pathlib.Path(out).write_text(json.dumps([app.transport, str(folder), "
                                          "stat.S_IMODE(folder.stat().st_mode)]))")]
    nbformat.write(nb, tmp_path / "where.ipynb")
    done = subprocess.run([sys.executable, "-m", "ragkit.cli", "run", str(tmp_path / "where.ipynb"),
                           "--out", str(tmp_path / "runs")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "without encryption" not in done.stdout + done.stderr
    transport, folder, mode = json.loads((tmp_path / "transport.txt").read_text())
    assert transport == "ipc" and mode == 0o700 and Path(folder).name.startswith("ragkit-kernel-")
    assert not Path(folder).exists()


def test_a_cell_past_the_cell_timeout_fails_the_run_and_keeps_the_artifact(tmp_path):
    """``--cell-timeout``: a scheduled rebuild whose cell hangs stops, says which cell, and
    leaves the previous artifact; without it a cell may run as long as it needs."""
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell('out: str = "result.txt"  # [artifact] where to write\nwait: float = 0.0',
                                          metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("import pathlib, time\ntime.sleep(wait)\npathlib.Path(out).write_text('new')")]
    notebook = tmp_path / "slow.ipynb"
    nbformat.write(nb, notebook)
    artifact = tmp_path / "result.txt"
    artifact.write_text("old")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ragkit.cli", "run", str(notebook), "--out", str(tmp_path / "runs"),
                           "-p", "out", str(artifact), "-p", "wait", "120", "--cell-timeout", "3", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert time.monotonic() - started < 100
    manifest = json.loads(done.stdout)
    assert done.returncode == 1 and manifest["status"] == "failed", done.stderr
    assert manifest["error"] == "a cell ran longer than --cell-timeout 3 s (cell 2: import pathlib, time)"
    assert artifact.read_text() == "old" and leftovers(tmp_path) == []
    assert run_notebook(notebook, {"out": str(artifact), "wait": "4"}, out_root=tmp_path / "runs",
                        progress=False)["status"] == "ok"
    assert artifact.read_text() == "new"
    with pytest.raises(InputError, match="^--cell-timeout: must be more than 0 seconds, got 0$"):
        run_notebook(notebook, {}, out_root=tmp_path / "runs", cell_timeout=0)
