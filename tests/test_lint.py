"""The shipped package is clean under ruff (``ruff.toml``: pyflakes, pycodestyle's errors and
long lines, bugbear) and mypy (``mypy.ini``: the bodies of unannotated functions too), so
what ``py.typed`` promises holds. Each tool runs as it would by hand, from the repository
root with its configuration there; a finding fails the test with the tool's own lines."""

import subprocess
import sys

import pytest

from .conftest import ROOT


def tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_finds_nothing_in_the_package():
    proc = tool("ruff", "check", "--no-fix", "--output-format", "concise", "ragkit")
    assert proc.returncode == 0, f"ruff check ragkit:\n{proc.stdout}{proc.stderr}"


@pytest.mark.slow
def test_mypy_finds_nothing_in_the_package():
    proc = tool("mypy", "--config-file", "mypy.ini")      # files = ragkit, cache in .mypy_cache
    assert proc.returncode == 0, f"mypy ragkit:\n{proc.stdout}{proc.stderr}"
