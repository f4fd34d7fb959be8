"""``ragkit kg import``: nodes.csv (id, name, type, extra properties) and edges.csv (source,
relation, target as node ids, extra properties) into a typed store. Everything is checked
before anything is written, so a bad file leaves the store as it was; a good pair replaces
what the store held, so re-importing an edited file leaves nothing of the old version."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..inputs import csv_rows, first_of_each
from .store import NAME_RE, Edge, TypedStore


def _rows(path: Path, required: tuple[str, ...], what: str, progress: bool | None = None) -> list[tuple[int, dict]]:
    rows = csv_rows(path, what, required, progress)
    if not rows:
        raise InputError(f"{what} {path}: holds no rows")
    return rows


def read_nodes(path: str | Path, dedupe: str | None = None, progress: bool | None = None) -> list[dict]:
    """Nodes with ``aliases`` split on ``|`` into a list; other columns kept as properties.
    Two rows with the same id are an error naming it and both lines, unless ``dedupe`` says
    which to keep (``first`` or ``last``)."""
    path = Path(path)
    nodes = []
    for lineno, row in _rows(path, ("id", "name", "type"), "nodes", progress):
        where = f"nodes {path}:{lineno}"
        if not row["id"] or not row["name"]:
            raise InputError(f"{where}: a node needs an id and a name")
        if not NAME_RE.match(row["type"]):
            raise InputError(f"{where}: type {row['type']!r} must be a word (letters, digits, _)")
        node = {k: v for k, v in row.items() if v != "" or k in ("id", "name", "type")}
        node["aliases"] = [a.strip() for a in row.get("aliases", "").split("|") if a.strip()]
        nodes.append((lineno, node))
    kept = first_of_each(nodes, lambda n: n[1]["id"], lambda n: f"line {n[0]}", f"nodes {path}", dedupe, "node id")
    return [node for _, node in kept]


def read_edges(path: str | Path, node_ids: set[str], progress: bool | None = None) -> list[Edge]:
    path = Path(path)
    edges, seen = [], set()
    for lineno, row in _rows(path, ("source", "relation", "target"), "edges", progress):
        where = f"edges {path}:{lineno}"
        for end in ("source", "target"):
            if row[end] not in node_ids:
                raise InputError(f"{where}: {end} {row[end]!r} is not a node id in the nodes file")
        if not NAME_RE.match(row["relation"]):
            raise InputError(f"{where}: relation {row['relation']!r} must be a word (letters, digits, _)")
        key = (row["source"], row["relation"], row["target"])
        if key in seen:
            continue
        seen.add(key)
        props = {k: v for k, v in row.items() if k not in ("source", "relation", "target") and v}
        edges.append(Edge(row["source"], row["relation"], row["target"], props))
    return edges


def import_kg(nodes_csv: str | Path, edges_csv: str | Path, store: TypedStore,
              dedupe: str | None = None, progress: bool | None = None) -> dict:
    """Replace ``store``'s graph by the CSV files' (both read and checked first); with
    ``progress``, large files show a bar as they are read."""
    nodes = read_nodes(nodes_csv, dedupe, progress)
    edges = read_edges(edges_csv, {n["id"] for n in nodes}, progress)
    report = store.replace_graph(nodes, edges)
    return {"store": store.uri, **report, "schema": [s.__dict__ for s in store.schema()]}
