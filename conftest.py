"""The test session's layout on the cores: loaded before any test folder, for tests/ and for the
notebooks nbval runs alike."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Both cores run the suite (pytest-xdist): each test file goes to one worker as a whole, so
# its module fixtures are made once. Three kinds of test share more than a file and go to one
# worker each: the notebooks (nbval runs them in ../outputs, and the tests that execute them
# with their defaults write there too), the Neo4j ones (one server per session) and those of
# the 1.5B model (loaded once). The shared groups are handed out first, as the heaviest.
#
# A group is known where the tests are collected, in the workers; the controller, which
# hands the groups out, does not collect. So each worker writes its test -> group map into a
# folder made for this run, and the controller's scheduler reads it.
SHARED_GROUPS = ("notebooks", "neo4j", "instruct-model")
NOTEBOOK_TESTS = {"test_notebooks.py", "test_lab.py"}
GROUPS_DIR = "RAGKIT_TEST_GROUPS_DIR"


def _group(item: pytest.Item) -> str:
    path = Path(str(item.path))
    params = getattr(getattr(item, "callspec", None), "params", {})
    if path.suffix == ".ipynb" or path.name in NOTEBOOK_TESTS:
        return "notebooks"
    if {"neo4j_uri", "neo4j_kg"} & set(item.fixturenames) or "neo4j" in params.values():
        return "neo4j"
    if "instruct_model" in item.fixturenames:
        return "instruct-model"
    return str(path)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None) \
            and not hasattr(config, "workerinput"):
        folder = tempfile.mkdtemp(prefix="ragkit-test-groups-")
        os.environ[GROUPS_DIR] = folder            # the workers, started after this, inherit it
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {item.nodeid: _group(item) for item in items}
    rank = {name: i for i, name in enumerate(SHARED_GROUPS)}
    items.sort(key=lambda item: rank.get(groups[item.nodeid], len(rank)))   # stable: file order kept
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker and os.environ.get(GROUPS_DIR):
        part = Path(os.environ[GROUPS_DIR]) / f"{worker}.part"
        part.write_text(json.dumps(groups))
        part.replace(part.with_suffix(".json"))


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Work units are the groups above (``--dist loadscope`` over them), in collection order."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.groups: dict[str, str] = {}

        def _split_scope(self, nodeid: str) -> str:
            if not self.groups and os.environ.get(GROUPS_DIR):
                for written in sorted(Path(os.environ[GROUPS_DIR]).glob("*.json")):
                    self.groups.update(json.loads(written.read_text()))
            return self.groups.get(nodeid) or nodeid.split("::", 1)[0]

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)
