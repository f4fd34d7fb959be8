"""One-line errors for what goes wrong around the input: a folder ragkit cannot write to,
a full disk, a store path with nothing behind it, a file that is not what its name says,
a model that fails under the kg pipeline, a store that stops under a running server."""

import contextlib
import subprocess
import sys
import uuid

import pytest

from .conftest import DEMO_SPEC, MANUALS, ROOT
from .test_cli import ENV, ragkit, refused

RAGKIT = [sys.executable, "-m", "ragkit.cli"]


@contextlib.contextmanager
def _tmpfs(tmp_path, options):
    """A real tmpfs mounted with ``options`` (a 16 KiB one fills up; ``ro`` refuses writes);
    skipped where this process may not mount."""
    where = tmp_path / f"mnt-{uuid.uuid4().hex[:6]}"
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


@pytest.fixture
def full_disk(tmp_path):
    with _tmpfs(tmp_path, "size=16k") as where:
        yield where


@pytest.fixture
def read_only(tmp_path):
    with _tmpfs(tmp_path, "ro,size=16k") as where:
        yield where


def test_index_build_into_a_full_disk_is_one_line(full_disk):
    refused("index", "build", "--corpus", MANUALS, "--out", full_disk / "ix",
            match=f"{full_disk / 'ix'}: cannot write (no space left on the device)", code=1)
    assert not [p for p in full_disk.iterdir()]        # nothing half-written left behind


@pytest.mark.parametrize("command", [
    ["index", "build", "--corpus", MANUALS, "--out", "{out}/ix"],
    ["kg", "build", "--specs", DEMO_SPEC, "--store", "{out}/s.json.gz"],
    ["kg", "import", "--nodes", ROOT / "data/biomed/nodes.csv", "--edges", ROOT / "data/biomed/edges.csv",
     "--store", "{out}/kg.json.gz"],
])
def test_writing_into_a_read_only_folder_is_one_line(read_only, command):
    args = [str(a).replace("{out}", str(read_only)) for a in command]
    refused(*args, match=f"{args[-1]}: cannot write (a read-only file system)", code=1)


def test_a_text_file_named_pdf_is_one_line(tmp_path):
    fake = tmp_path / "notes.pdf"
    fake.write_text("These are notes, not a PDF.\n")
    line = refused("kg", "build", "--specs", fake, "--store", tmp_path / "s.json.gz",
                   match=f"spec {fake}: not a PDF")
    assert "EOF marker" not in line and not (tmp_path / "s.json.gz").exists()


def test_a_damaged_pdf_prints_no_pypdf_warnings(tmp_path):
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n")
    refused("kg", "build", "--specs", broken, "--store", tmp_path / "s.json.gz",
            match=f"spec {broken}: not a readable PDF")


@pytest.mark.parametrize("flag", ["--store", "--spec-store"])
def test_serve_refuses_a_store_path_with_nothing_behind_it(tmp_path, flag):
    typo = tmp_path / "tyop.json.gz"
    proc = subprocess.run([*RAGKIT, "serve", flag, str(typo), "--port", "0"], capture_output=True,
                          text=True, cwd=ROOT, env=ENV, timeout=30)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip() == f"ragkit: error: {flag}: store {typo}: no such store " + \
        ("(import one with 'ragkit kg import')" if flag == "--store" else "(build one with 'ragkit kg build')")


@pytest.mark.parametrize("pipeline", ["spec", "kg"])
def test_ask_refuses_a_store_path_with_nothing_behind_it(tmp_path, pipeline):
    refused("ask", "What is AMF?", "--pipeline", pipeline, "--store", tmp_path / "typo.json.gz", "--no-llm",
            match=f"store {tmp_path / 'typo.json.gz'}: no such store")


@pytest.fixture(scope="module")
def kg_store_file(tmp_path_factory):
    store = tmp_path_factory.mktemp("kg") / "biomed.json.gz"
    ragkit("kg", "import", "--nodes", ROOT / "data/biomed/nodes.csv", "--edges", ROOT / "data/biomed/edges.csv",
           "--store", store)
    return store


def test_kg_refuses_an_over_long_question_like_the_other_pipelines(kg_store_file):
    question = "What does Aspirin treat? " + "and also aspirin for pain " * 1500
    proc = subprocess.run([*RAGKIT, "ask", question, "--pipeline", "kg", "--store", str(kg_store_file)],
                          capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=120)
    assert proc.returncode == 3 and proc.stdout == "", proc.stdout[:300]
    assert proc.stderr.startswith("ragkit: error: question: 39024 characters, over the 2000-character limit")
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_kg_with_a_truncated_gguf_is_the_model_error(kg_store_file, tmp_path):
    from ragkit.llm.gguf import default_model_path

    model = default_model_path()       # the default GGUF: cut short, llama.cpp refuses it
    truncated = tmp_path / "cut.gguf"
    with open(model, "rb") as src:
        truncated.write_bytes(src.read(4_000_000))
    for extra in ([], ["--llm-planner"]):
        refused("ask", "What does Aspirin treat?", "--pipeline", "kg", "--store", kg_store_file,
                "--model", truncated, *extra, match=f"model {truncated}: llama.cpp could not")
