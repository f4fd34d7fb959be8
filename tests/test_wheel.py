"""The package as a user installs it: a wheel built from this checkout, installed with its
core dependencies only into a fresh venv outside the repository, run from a folder outside
the repository. One command of each core pipeline works; a command that needs an extra
fails with one line naming it, and that line, run as written against the wheel's folder,
installs the extra (a fresh venv, the core by its name; the light extras installed, every
extra resolved with ``--dry-run``). pip fetches the dependencies from PyPI (or its cache) at
the versions of constraints.txt."""

from __future__ import annotations

import email
import importlib.util
import json
import shlex
import subprocess
import sys
import tomllib
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ragkit.runtime.extras import DISTRIBUTION, EXTRAS, install_hint, missing_extra

from .conftest import ROOT

# bench/install_size.py builds, installs and measures; loaded by path, bench/ stays off sys.path.
_spec = importlib.util.spec_from_file_location("install_size", ROOT / "bench" / "install_size.py")
install_size = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install_size)
clean_environment, site_packages, tree_mb = install_size.clean_environment, install_size.site_packages, install_size.tree_mb
checkout_version = install_size.checkout_version

pytestmark = pytest.mark.slow

CORPUS = {
    "compressor.md": "# Air compressor\n\n## Starting the compressor\n\nCheck the oil level, drain the tank, "
                     "then switch the compressor on without load.\n",
    "lathe.md": "# Lathe\n\n## Changing the chuck\n\nStop the spindle, lock it, and loosen the chuck with its key.\n",
}


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    """(wheel, the venv's bin folder, a working folder outside the repository)."""
    root = tmp_path_factory.mktemp("wheel")
    assert not root.resolve().is_relative_to(ROOT.resolve())
    wheel = install_size.build_wheel(root)
    python = install_size.install_core(wheel, root / "venv")
    work = root / "work"
    (work / "corpus").mkdir(parents=True)
    for name, text in CORPUS.items():
        (work / "corpus" / name).write_text(text, encoding="utf-8")
    return wheel, python.parent, work


def ragkit(core, *args: str) -> subprocess.CompletedProcess:
    _, bin_dir, work = core
    return subprocess.run([str(bin_dir / "ragkit"), *args], cwd=work, capture_output=True, text=True,
                          env=clean_environment(), timeout=300)


def test_the_wheel_ships_its_data_files_license_and_one_version(core):
    wheel, bin_dir, _ = core
    names = set(zipfile.ZipFile(wheel).namelist())
    stem = f"ragkit_workbench-{checkout_version()}"     # the distribution's name; the package is ragkit
    assert wheel.name == f"{stem}-py3-none-any.whl"
    for name in ("ragkit/py.typed", "ragkit/causal/schema.json", "ragkit/demo_data/manuals/may_nen_khi.md",
                 "ragkit/demo_data/specs/demo_5gc.md", "ragkit/demo_data/merged_knowledge_graph.json",
                 "ragkit/demo_data/nobel_edges.csv", "ragkit/demo_data/biomed/edges.csv",
                 f"{stem}.dist-info/licenses/LICENSE"):
        assert name in names, name
    assert not [n for n in names if n.startswith(("tests/", "bench/", "data/", "notebooks/"))]
    meta = email.message_from_bytes(zipfile.ZipFile(wheel).read(f"{stem}.dist-info/METADATA"))
    assert meta["Name"] == DISTRIBUTION and set(meta.get_all("Provides-Extra")) == set(EXTRAS)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["Requires-Python"] == project["requires-python"] == ">=3.11"
    assert set(meta.get_all("Classifier")) == set(project["classifiers"])
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]
    urls = dict(line.split(", ", 1) for line in meta.get_all("Project-URL"))
    assert set(urls) >= {"Homepage", "Documentation", "Source", "Changelog"} and urls == project["urls"]
    assert meta["License-Expression"] == "MIT"
    code = ("import importlib.metadata as m, ragkit; from ragkit.service import demo_data_dir\n"
            f"print(m.version({DISTRIBUTION!r}) == ragkit.__version__, demo_data_dir())")
    out = subprocess.run([str(bin_dir / "python"), "-c", code], capture_output=True, text=True,
                         env=clean_environment(), cwd=core[2], check=True).stdout.split()
    assert out[0] == "True" and "site-packages/ragkit/demo_data" in out[1]


def test_the_installed_wheel_says_the_version_its_git_tag_gives(core):
    version = checkout_version()
    shown = subprocess.run([str(core[1] / "ragkit"), "--version"], capture_output=True, text=True,
                           env=clean_environment(), cwd=core[2], check=True).stdout.split()
    assert shown == ["ragkit", version]
    tag = subprocess.run(["git", "describe", "--tags", "--abbrev=0", "--match", "v[0-9]*"], cwd=ROOT,
                         capture_output=True, text=True)
    if tag.returncode == 0:   # a checkout with its tags: the version is the tag's, or a development one after it
        exact = subprocess.run(["git", "describe", "--tags", "--exact-match", "--match", "v[0-9]*"], cwd=ROOT,
                               capture_output=True, text=True).returncode == 0
        released = tag.stdout.strip().removeprefix("v")
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        if exact and not dirty:
            assert version == released
        else:
            from packaging.version import Version

            assert Version(version) > Version(released) and Version(version).is_devrelease, (version, released)
    else:   # a clone without tags: setuptools-scm counts the commits from 0.1
        assert version.startswith("0.1.dev"), version


def test_the_public_api_in_the_core(core):
    """``from ragkit import ...`` works without extras: BM25 built and searched in batch
    (numpy, no numba), the spec question asked from Python."""
    code = ("import ragkit\n"
            "from ragkit import BM25Index, demo_data_dir, load_document_folder, tokenizer_for\n"
            "index = BM25Index.build(load_document_folder(demo_data_dir() / 'manuals'), tokenizer_for('vi'))\n"
            "hits = index.search_many(['kiểm tra mức dầu máy nén khí'], k=1)\n"
            "print(hits[0][0].doc_id, ragkit.__version__)")
    out = subprocess.run([str(core[1] / "python"), "-c", code], capture_output=True, text=True,
                         env=clean_environment(), cwd=core[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "may_nen_khi.md#3"


def test_bm25_index_and_search(core):
    built = ragkit(core, "index", "build", "--corpus", "corpus", "--out", "index", "--json")
    assert built.returncode == 0, built.stderr
    found = ragkit(core, "search", "--index", "index", "--query", "start the air compressor", "--k", "1", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["doc_id"].startswith("compressor.md")


def test_spec_kg_and_its_question(core):
    spec = core[2] / "demo_5gc.md"
    spec.write_bytes((ROOT / "data" / "specs" / "demo_5gc.md").read_bytes())
    built = ragkit(core, "kg", "build", "--specs", spec.name, "--store", "kg.json.gz")
    assert built.returncode == 0, built.stderr
    asked = ragkit(core, "ask", "What is SCP in 5G Core?", "--pipeline", "spec", "--store", "kg.json.gz",
                   "--no-llm", "--json")
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert "Service Communication Proxy" in answer["answer"] and answer["trace"]["answer_source"] == "evidence"


def test_causal_explain(core):
    kg = core[2] / "evidence.json"
    kg.write_bytes((ROOT / "data" / "merged_knowledge_graph.json").read_bytes())
    explained = ragkit(core, "explain", "Vì sao độ ẩm cao làm PM2.5 tăng?", "--kg", kg.name, "--json")
    assert explained.returncode == 0, explained.stderr
    chains = json.loads(explained.stdout)["selected_chains"]
    assert chains and all(step["evidence"] for chain in chains for step in chain["steps"])


@pytest.mark.parametrize("args, extra, package", [
    (["index", "build", "--corpus", "corpus", "--out", "dense", "--dense", "minilm"], "dense", "chromadb"),
    (["serve", "--demo", "demo"], "server", "fastapi"),
    (["run", "notebook.ipynb"], "notebooks", "papermill"),
    (["kg", "build", "--specs", "corpus/lathe.md", "--store", "bolt://127.0.0.1:7687"], "neo4j", "neo4j"),
], ids=["dense", "server", "notebooks", "neo4j"])
def test_a_missing_extra_is_one_line_naming_it(core, args, extra, package):
    done = ragkit(core, *args)
    assert done.returncode == 4       # a dependency missing
    assert done.stderr == f"ragkit: error: {package} is not installed: pip install 'ragkit-workbench[{extra}]'\n"
    assert done.stderr == f"ragkit: error: {missing_extra(package, extra)}\n"
    assert not (core[2] / "dense").exists()


def test_the_neo4j_launcher_says_it_comes_with_a_source_checkout(core):
    code = ("from ragkit.stores.neo4j_launcher import running_neo4j\n"
            "try:\n    running_neo4j('db').__enter__()\nexcept Exception as exc:\n    print(exc)\n")
    out = subprocess.run([str(core[1] / "python"), "-c", code], capture_output=True, text=True,
                         env=clean_environment(), cwd=core[2], check=True).stdout
    assert out.startswith("neo4j launcher: available from a source checkout") and "make neo4j" in out


def test_core_install_size(core):
    """The core's site-packages, next to the committed figure (bench/install_size.py): a
    heavy package slipping into the core fails here."""
    size = tree_mb(site_packages(core[1] / "python"))
    committed = json.loads((ROOT / "outputs" / "bench" / "install_size.json").read_text())["core"]
    print(f"core install: {size} MB in site-packages (committed: {committed['site_packages_mb']} MB)")
    assert size <= committed["site_packages_mb"] * 1.2


# ------------------------------------------------------------------ the hints, followed
def pip(python, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """This venv's pip working on the venv of ``python`` (which has no pip of its own)."""
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args], capture_output=True,
                          text=True, env=clean_environment(), timeout=timeout)


def follow(hint: str, python, wheel, *options: str) -> subprocess.CompletedProcess:
    """``hint`` (``pip install 'ragkit-workbench[X]'``) run as written, with pip also looking in
    the wheel's folder (``--find-links``: ragkit-workbench from this checkout, the rest from PyPI)
    and keeping to constraints.txt."""
    words = shlex.split(hint)
    assert words[:2] == ["pip", "install"] and words[2:], hint
    return pip(python, "install", "--find-links", str(wheel.parent), "-c", str(ROOT / "constraints.txt"),
               *options, *words[2:])


def hint_in(stderr: str) -> str:
    """The install command at the end of ``ragkit: error: X is not installed: pip install ...``."""
    assert stderr.startswith("ragkit: error: ") and " is not installed: " in stderr, stderr
    return stderr.strip().split(" is not installed: ", 1)[1]


def test_the_hints_install_the_light_extras_by_name(core, tmp_path):
    """A user's path: the core by its name, then each command that lacks an extra, its hint run
    as printed, the command again."""
    wheel = core[0]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    python, work = tmp_path / "venv" / "bin" / "python", tmp_path / "work"
    work.mkdir()
    done = follow(f"pip install {DISTRIBUTION}", python, wheel)
    assert done.returncode == 0, done.stderr
    where = subprocess.run([str(python), "-c", "import importlib.metadata as m, ragkit; "
                            f"print(m.version({DISTRIBUTION!r}), ragkit.__file__)"],
                           capture_output=True, text=True, env=clean_environment(), cwd=work, check=True).stdout.split()
    # the checkout's version (this process's ragkit.__version__ is its editable install's,
    # fixed when it was installed, commits ago on a working copy)
    assert where[0] == checkout_version() and str(tmp_path / "venv") in where[1]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(python.parent / "ragkit"), *args], cwd=work, capture_output=True, text=True,
                              env=clean_environment(), timeout=300)

    # neo4j: port 9 (discard) so that no Neo4j a test left running is written to
    store = ["kg", "build", "--specs", str(ROOT / "data" / "specs" / "demo_5gc.md"), "--store", "bolt://127.0.0.1:9"]
    # serve --demo needs [server], then [dense] for the graph's node vectors
    serve = ["serve", "--demo", "demo"]
    for args, extra, after in ((store, "neo4j", "Neo4j is not reachable"),
                               (serve, "server", missing_extra("chromadb", "dense").args[0])):
        before = run(*args)
        assert before.returncode == 4 and hint_in(before.stderr) == install_hint(extra), before.stderr
        done = follow(hint_in(before.stderr), python, wheel)
        assert done.returncode == 0 and "does not provide the extra" not in done.stderr, done.stderr
        again = run(*args)
        assert again.returncode == 4 and after in again.stderr and f"[{extra}]" not in again.stderr, again.stderr


def test_every_hint_resolves_to_this_wheel_and_its_extra(core, tmp_path):
    """Every extra's hint, run as written with ``--dry-run`` (the heavy extras download
    gigabytes and compile llama.cpp): pip takes ragkit-workbench from this wheel, not any other
    distribution, knows each extra, and resolves what each brings."""
    wheel = core[0]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    requirements = [shlex.split(install_hint(extra))[2:] for extra in EXTRAS]
    hints = " ".join(shlex.join(words) for words in requirements)
    report = tmp_path / "report.json"
    done = follow(f"pip install {hints}", tmp_path / "venv" / "bin" / "python", wheel,
                  "--dry-run", "--quiet", "--report", str(report))
    assert done.returncode == 0, done.stderr
    assert "does not provide the extra" not in done.stderr, done.stderr
    items = {canonicalize_name(item["metadata"]["name"]): item for item in json.loads(report.read_text())["install"]}
    ours = items[DISTRIBUTION]
    assert "ragkit" not in items and ours["download_info"]["url"] == wheel.resolve().as_uri()
    assert set(ours["requested_extras"]) == set(EXTRAS)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    missing = {extra: names for extra in EXTRAS
               if (names := {canonicalize_name(Requirement(r).name) for r in declared[extra]} - set(items))}
    assert not missing, f"resolved without what the extra names: {missing}"
