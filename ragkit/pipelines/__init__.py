"""The pipelines, named once. Each is a ``Pipeline`` (``base.py``) in its own module that
declares what it reads (``Source``), the options it takes (``Option``) and a few questions
its demo source answers; the service's ``AskRequest``, ``Service``'s sources, the command
line's flags, the server's request schema and the profiler are made from these declarations.

Adding a pipeline: write ``ragkit/pipelines/<name>.py`` with a ``Pipeline`` subclass, and
add one line to ``REGISTRY`` (or call ``register`` before ``ragkit.service`` is imported, for
a pipeline kept elsewhere). Modules are imported when a pipeline is first asked for, so
``ragkit --help`` stays fast.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import import_module

from ..errors import InputError
from .base import Option, Pipeline, Source, Sources

# name -> (module in ragkit.pipelines, or a dotted module path; class)
REGISTRY: dict[str, tuple[str, str]] = {
    "lexical": ("lexical", "LexicalPipeline"),
    "spec": ("spec", "SpecPipeline"),
    "causal": ("causal", "CausalPipeline"),
    "graph": ("graph_rag", "GraphPipeline"),
    "kg": ("kg", "KGPipeline"),
}
PIPELINES: tuple[str, ...] = tuple(REGISTRY)
DEFAULT_PIPELINE = PIPELINES[0]


def register(name: str, module: str, cls: str) -> None:
    """Add pipeline ``name`` (class ``cls`` of ``module``, a dotted path) to the registry."""
    global PIPELINES
    REGISTRY[name] = (module, cls)
    PIPELINES = tuple(REGISTRY)
    get_pipeline.cache_clear()


@lru_cache(maxsize=None)
def get_pipeline(name: str) -> Pipeline:
    """The pipeline called ``name`` (one shared instance: pipelines hold no state)."""
    if name not in REGISTRY:
        raise InputError(f"pipeline: must be one of {', '.join(PIPELINES)}, got {name!r}")
    module, cls = REGISTRY[name]
    return getattr(import_module(module if "." in module else f"{__name__}.{module}"), cls)()


def pipelines() -> list[Pipeline]:
    """Every registered pipeline, in the registry's order."""
    return [get_pipeline(name) for name in REGISTRY]


def options() -> dict[str, Option]:
    """Every pipeline's options by name, in the registry's order. Two pipelines may share an
    option only when they declare it alike."""
    found: dict[str, Option] = {}
    for pipeline in pipelines():
        for option in pipeline.options:
            same = found.setdefault(option.name, option)
            if (same.kind, same.default, same.choices) != (option.kind, option.default, option.choices):
                raise InputError(f"option {option.name}: {pipeline.name} declares it unlike another pipeline")
    return found


def option_users(name: str) -> list[str]:
    """The pipelines that take option ``name``."""
    return [p.name for p in pipelines() if any(o.name == name for o in p.options)]


def sources() -> dict[str, Source]:
    """Every ``Sources`` field a pipeline declares, with its flag, in the registry's order."""
    found: dict[str, Source] = {}
    for pipeline in pipelines():
        for source in pipeline.sources:
            found.setdefault(source.field, source)
    return found


def source_aliases() -> dict[str, str]:
    """Each earlier name of a ``Sources`` field, with the field it names now."""
    return {alias: source.field for source in sources().values() for alias in source.aliases}


# The registry fills in Sources' hooks: what ``Sources`` may be asked for, and the earlier names.
Sources.declared = staticmethod(lambda: sources())  # type: ignore[method-assign]  # a hook, meant to be set
Sources.renamed = staticmethod(source_aliases)  # type: ignore[method-assign]  # a hook, meant to be set


def source_flags() -> dict[str, list[tuple[str, Source]]]:
    """Each command-line flag that names a source, with the pipelines (and their source)
    it names one for: ``--store`` is the spec store or the typed KG store."""
    flags: dict[str, list[tuple[str, Source]]] = {}
    for pipeline in pipelines():
        for source in pipeline.sources:
            flags.setdefault(source.flag, []).append((pipeline.name, source))
    return flags


def sources_from_flags(given: dict[str, str | None], pipeline: str) -> dict[str, str]:
    """``Sources`` fields from command-line flag values (``{"--index": "idx"}``): a flag shared
    by several pipelines names the asked ``pipeline``'s source."""
    fields: dict[str, str] = {}
    for flag, users in source_flags().items():
        value = given.get(flag)
        if not value:
            continue
        mine = [s for name, s in users if name == pipeline]
        for source in (mine or ([users[0][1]] if len(users) == 1 else [])):
            fields[source.field] = value
    return fields


__all__ = ["DEFAULT_PIPELINE", "PIPELINES", "REGISTRY", "Option", "Pipeline", "Source", "get_pipeline", "option_users",
           "options", "pipelines", "register", "source_flags", "sources", "sources_from_flags"]
