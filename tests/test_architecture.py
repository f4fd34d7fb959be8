"""The package layout shows the architecture: no import cycles between ragkit's modules at
import time, stores apart from what they store, and one home for the environment."""

import ast
from pathlib import Path

from .conftest import ROOT

PACKAGE = ROOT / "ragkit"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top_level_imports(path: Path) -> set[str]:
    """ragkit modules imported when ``path`` is imported (module level, not inside functions)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("ragkit"):
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("ragkit"))
    return found


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {t for t in top_level_imports(path) if t in modules and t != name}
            for name, path in modules.items()}


def test_no_import_cycles():
    graph = import_graph()
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_stores_know_nothing_of_what_they_store():
    graph = import_graph()
    for name, targets in graph.items():
        if name.startswith("ragkit.stores"):
            assert not {t for t in targets if t.startswith(("ragkit.specs", "ragkit.kgqa", "ragkit.pipelines"))}, name


def test_the_specs_and_the_typed_kg_do_not_reach_into_each_other():
    graph = import_graph()
    for name, targets in graph.items():
        if name.startswith("ragkit.kgqa"):
            assert not any(t.startswith("ragkit.specs") for t in targets), name
        if name.startswith("ragkit.specs"):
            assert not any(t.startswith("ragkit.kgqa") for t in targets), name
