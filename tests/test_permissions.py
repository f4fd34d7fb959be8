"""Artifacts written through private temporary names (mkstemp 0600, mkdtemp 0700) end with
the modes the umask gives any new file or folder: a store rebuilt by one user's cron job is
readable by the users the umask lets in, and stays private under umask 077."""

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ragkit.stores.files import atomic_dir, atomic_write_json, swap_into_place

from .conftest import MANUALS, ROOT

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
SPECS = [ROOT / "data" / "specs" / "demo_5gc.md", ROOT / "data" / "specs" / "demo_vocab.md"]
EDGES = ROOT / "data" / "nobel_edges.csv"


def ragkit(*args, umask):
    proc = subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, args)], capture_output=True,
                          text=True, env=ENV, cwd=ROOT, timeout=900, umask=umask)
    assert proc.returncode == 0, proc.stderr
    return proc


def modes(path: Path) -> dict[str, int]:
    """Every entry under ``path`` (and ``path`` itself) with its permission bits."""
    out = {".": stat.S_IMODE(path.stat().st_mode)}
    if path.is_dir():
        for entry in path.rglob("*"):
            out[entry.relative_to(path).as_posix()] = stat.S_IMODE(entry.lstat().st_mode)
    return out


def expect(path: Path, umask: int) -> None:
    wrong = {name: oct(mode) for name, mode in modes(path).items()
             if mode != ((0o777 if (path / name).is_dir() else 0o666) & ~umask)}
    assert not wrong, f"{path}: {wrong}"


@pytest.fixture(scope="module")
def built_022(tmp_path_factory):
    out = tmp_path_factory.mktemp("perm022")
    ragkit("index", "build", "--corpus", MANUALS, "--out", out / "index", "--dense", "minilm", "--concepts",
           umask=0o022)
    ragkit("kg", "build", "--specs", *SPECS, "--store", out / "kg.json.gz", umask=0o022)
    ragkit("graph", "build", "--edges", EDGES, "--out", out / "graph", umask=0o022)
    return out


@pytest.mark.slow
def test_an_index_folder_with_vectors_and_concepts_is_0644_and_0755(built_022):
    index = built_022 / "index"
    assert (index / "dense").is_dir() and (index / "concepts").is_dir()
    expect(index, 0o022)
    assert modes(index)["."] == 0o755 and modes(index)["meta.json"] == 0o644


@pytest.mark.slow     # built_022 builds every artifact kind (about 20 s)
def test_a_spec_store_file_is_0644(built_022):
    assert modes(built_022 / "kg.json.gz") == {".": 0o644}


@pytest.mark.slow     # built_022 builds every artifact kind (about 20 s)
def test_a_graph_folder_is_0644_and_0755(built_022):
    graph = built_022 / "graph"
    assert (graph / "chroma").is_dir()
    expect(graph, 0o022)


@pytest.mark.slow
def test_umask_077_keeps_artifacts_private(tmp_path):
    ragkit("index", "build", "--corpus", MANUALS, "--out", tmp_path / "index", "--concepts", umask=0o077)
    ragkit("kg", "build", "--specs", *SPECS, "--store", tmp_path / "kg.json.gz", umask=0o077)
    expect(tmp_path / "index", 0o077)
    assert modes(tmp_path / "index")["."] == 0o700
    assert modes(tmp_path / "kg.json.gz") == {".": 0o600}


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_current_umask_reads_without_changing_it(umask_022):
    from ragkit.stores.files import current_umask

    assert current_umask() == 0o022
    assert current_umask() == 0o022


def test_a_staged_run_artifact_and_manifest_are_published(tmp_path, umask_022):
    # What runs.run_notebook does: a manifest through atomic_write_json, and a staged folder
    # (copied from the last artifact, so possibly private) swapped into place.
    run_dir = tmp_path / "runs" / "03_index_build" / "20250101T000000Z"
    run_dir.mkdir(parents=True)
    atomic_write_json(run_dir / "manifest.json", {"status": "ok"})
    staged = Path(tempfile.mkdtemp(dir=tmp_path))
    (staged / "sub").mkdir(mode=0o700)
    fd, name = tempfile.mkstemp(dir=staged / "sub")
    os.close(fd)
    swap_into_place(staged, tmp_path / "index")
    expect(tmp_path / "runs", 0o022)
    expect(tmp_path / "index", 0o022)


def test_an_executable_file_keeps_its_executable_bits(tmp_path, umask_022):
    with atomic_dir(tmp_path / "tool") as tmp:
        (tmp / "run.sh").write_text("#!/bin/sh\n")
        os.chmod(tmp / "run.sh", 0o700)
    assert modes(tmp_path / "tool") == {".": 0o755, "run.sh": 0o755}


@pytest.mark.slow
def test_a_notebook_run_folder_is_0644_and_0755(tmp_path, umask_022):
    from ragkit.workbench.runs import run_notebook

    manifest = run_notebook(ROOT / "notebooks" / "03_index_build.ipynb", {"index_dir": str(tmp_path / "index")},
                            out_root=tmp_path / "runs", progress=False)
    assert manifest["status"] == "ok"
    expect(tmp_path / "runs", 0o022)
    expect(tmp_path / "index", 0o022)
