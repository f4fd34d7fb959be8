"""``ragkit kg import``: nodes.csv (id, name, type, extra properties) and edges.csv (source,
relation, target as node ids, extra properties) into a typed store. Everything is checked
before anything is written, so a bad file leaves the store as it was; a good pair replaces
what the store held, so re-importing an edited file leaves nothing of the old version."""

from __future__ import annotations

import csv
from pathlib import Path

from ..errors import InputError
from .store import NAME_RE, Edge, TypedStore


def _rows(path: Path, required: tuple[str, ...], what: str) -> list[tuple[int, dict]]:
    if not path.is_file():
        raise InputError(f"{what} {path}: no such file")
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{what} {path}: missing column(s) {', '.join(missing)} "
                             f"(needs {', '.join(required)})")
        rows = [(lineno, {k: (v or "").strip() for k, v in row.items() if k is not None})
                for lineno, row in enumerate(reader, 2)]
    if not rows:
        raise InputError(f"{what} {path}: holds no rows")
    return rows


def read_nodes(path: str | Path) -> list[dict]:
    """Nodes with ``aliases`` split on ``|`` into a list; other columns kept as properties."""
    path = Path(path)
    nodes, seen = [], set()
    for lineno, row in _rows(path, ("id", "name", "type"), "nodes"):
        where = f"nodes {path}:{lineno}"
        if not row["id"] or not row["name"]:
            raise InputError(f"{where}: a node needs an id and a name")
        if row["id"] in seen:
            raise InputError(f"{where}: duplicate node id {row['id']!r}")
        if not NAME_RE.match(row["type"]):
            raise InputError(f"{where}: type {row['type']!r} must be a word (letters, digits, _)")
        seen.add(row["id"])
        node = {k: v for k, v in row.items() if v != "" or k in ("id", "name", "type")}
        node["aliases"] = [a.strip() for a in row.get("aliases", "").split("|") if a.strip()]
        nodes.append(node)
    return nodes


def read_edges(path: str | Path, node_ids: set[str]) -> list[Edge]:
    path = Path(path)
    edges, seen = [], set()
    for lineno, row in _rows(path, ("source", "relation", "target"), "edges"):
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


def import_kg(nodes_csv: str | Path, edges_csv: str | Path, store: TypedStore) -> dict:
    nodes = read_nodes(nodes_csv)
    edges = read_edges(edges_csv, {n["id"] for n in nodes})
    report = store.replace_graph(nodes, edges)
    return {"store": store.uri, **report, "schema": [s.__dict__ for s in store.schema()]}
