"""The pipelines, named once. Each is a ``Pipeline`` (``base.py``) in its own module; the
service, CLI, server, workbench, profiler and eval find them here.

Adding a pipeline: write ``ragkit/pipelines/<name>.py`` with a ``Pipeline`` subclass, and
add one line to ``REGISTRY``. Modules are imported when a pipeline is first asked for, so
``ragkit --help`` stays fast.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import import_module

from ..errors import InputError
from .base import Pipeline

# name -> (module in ragkit.pipelines, class)
REGISTRY: dict[str, tuple[str, str]] = {
    "lexical": ("lexical", "LexicalPipeline"),
    "spec": ("spec", "SpecPipeline"),
    "causal": ("causal", "CausalPipeline"),
    "graph": ("graph_rag", "GraphPipeline"),
    "kg": ("kg", "KGPipeline"),
}
PIPELINES: tuple[str, ...] = tuple(REGISTRY)


@lru_cache(maxsize=None)
def get_pipeline(name: str) -> Pipeline:
    """The pipeline called ``name`` (one shared instance: pipelines hold no state)."""
    if name not in REGISTRY:
        raise InputError(f"pipeline: must be one of {', '.join(PIPELINES)}, got {name!r}")
    module, cls = REGISTRY[name]
    return getattr(import_module(f"{__name__}.{module}"), cls)()


__all__ = ["PIPELINES", "REGISTRY", "Pipeline", "get_pipeline"]
