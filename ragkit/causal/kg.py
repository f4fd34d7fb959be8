"""The evidence KG: loading with JSON-Schema validation, synonym normalization, merging.

Merged KGs come as they are: an optional field that is missing or null is absent (it earns
no score bonus), and a field the schema does not name is kept and shown with the step's
evidence. A required field that is missing or null, or a value outside an enumeration, is
refused with one line that names the file, the edge (its index and source → target) and
the field. Merging
several files maps node ids through the synonym dictionary (pm2.5 → pm25, RH →
relative_humidity, Vietnamese and English names) and folds duplicate edges (same source,
relation, target) into one that keeps every piece of evidence.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable

import networkx as nx

from ..errors import InputError
from ..inputs import read_text
from ..text import normalize

CONFIDENCE_POINTS = {"HIGH": 2, "MEDIUM": 1, "LOW": 0}
STRENGTH_POINTS = {"STRONG": 2, "MODERATE": 1, "WEAK": 0}

# The synonym dictionary, beyond each node's own aliases.
SYNONYMS = {
    "pm2.5": "pm25", "pm 2.5": "pm25", "pm2,5": "pm25", "bui min": "pm25",
    "rh": "relative_humidity", "do am": "relative_humidity", "humidity": "relative_humidity",
    "pbl": "pblh", "boundary layer height": "pblh",
    "inversion": "temperature_inversion", "nghich nhiet": "temperature_inversion",
    "wind": "wind_speed", "gio": "wind_speed", "rain": "precipitation", "luong mua": "precipitation",
    "temp": "temperature", "nhiet do": "temperature",
}


@lru_cache(maxsize=1)
def _schema() -> dict:
    return json.loads(resources.files("ragkit.causal").joinpath("schema.json").read_text())


def _where(data: dict, path: list) -> str:
    """"edge 3 (relative_humidity → pm25), field confidence" from a jsonschema error path."""
    if len(path) >= 2 and path[0] == "edges" and isinstance(path[1], int):
        edges = data.get("edges") or []
        edge = edges[path[1]] if path[1] < len(edges) and isinstance(edges[path[1]], dict) else {}
        name = f"edge {path[1]} ({edge.get('source', '?')} → {edge.get('target', '?')})"
        rest = ".".join(str(p) for p in path[2:])
        return f"{name}, field {rest}" if rest else name
    if len(path) >= 2 and path[0] == "nodes" and isinstance(path[1], int):
        rest = ".".join(str(p) for p in path[2:])
        return f"node {path[1]}" + (f", field {rest}" if rest else "")
    return ".".join(str(p) for p in path) or "top level"


def _without_nulls(value, schema: dict, path: list, data: dict, source: str):
    """A copy of ``value`` with every null optional field left out, following the schema's
    ``properties`` and ``items``; a null required field is refused here, where its name is
    known (jsonschema would only say "None is not of type 'string'")."""
    if isinstance(value, dict):
        required = set(schema.get("required", ()))
        props = schema.get("properties", {})
        out = {}
        for key, item in value.items():
            if item is None:
                if key in required:
                    raise InputError(f"{source}: {_where(data, path + [key])}: is null (a required field)")
                continue
            out[key] = _without_nulls(item, props.get(key, {}), path + [key], data, source)
        return out
    if isinstance(value, list):
        items = schema.get("items", {})
        return [_without_nulls(item, items, path + [i], data, source) for i, item in enumerate(value)]
    return value


@lru_cache(maxsize=8)
def known_fields(*path: str) -> frozenset[str]:
    """The fields the schema names for an edge (``known_fields("edges")``) or its evidence
    (``known_fields("edges", "evidence")``); anything else in a record is an extra field."""
    schema = _schema()
    for key in path:
        schema = schema["properties"][key]["items"]
    return frozenset(schema["properties"])


def validate_kg(data, source: str = "kg") -> dict:
    """Check a KG document against the schema and return it with null optional fields left
    out. Raise a one-line InputError naming the edge and field of the first problem."""
    import jsonschema

    if isinstance(data, dict):
        data = _without_nulls(data, _schema(), [], data, source)
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        error = errors[0]
        path = list(error.absolute_path)
        message = error.message
        if error.validator == "required":
            missing = re.findall(r"'([^']+)' is a required property", message)
            if missing:
                path, message = path + [missing[0]], "is missing"
        elif error.validator == "enum":
            message = f"{error.instance!r} is not one of {error.validator_value}"
        raise InputError(f"{source}: {_where(data, path)}: {message}")
    ids = [n["id"] for n in data["nodes"]]
    for i, edge in enumerate(data["edges"]):
        for end in ("source", "target"):
            if canonical_id(edge[end], {}) not in ids and edge[end] not in ids:
                raise InputError(f"{source}: {_where(data, ['edges', i])}, field {end}: "
                                 f"node {edge[end]!r} is not in nodes")
    return data


def canonical_id(name: str, aliases: dict[str, str]) -> str:
    """A node id for a name: node aliases first, then the synonym dictionary."""
    key = normalize(name).strip()
    return aliases.get(key) or SYNONYMS.get(key) or re.sub(r"[^a-z0-9]+", "_", key).strip("_")


@dataclass
class EvidenceKG:
    """The validated KG as a networkx DiGraph: node attributes are the node records, edge
    attributes the edge records (one edge per source → target; relations merge)."""

    graph: nx.DiGraph
    aliases: dict[str, str] = field(default_factory=dict)   # normalized alias → node id
    sources: list[str] = field(default_factory=list)

    def label(self, node: str) -> str:
        return self.graph.nodes[node].get("label", node) if node in self.graph else node


def _alias_map(nodes: Iterable[dict]) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in nodes:
        for name in [node["id"], node.get("label") or "", *(node.get("aliases") or [])]:
            if name:
                out.setdefault(normalize(name).strip(), node["id"])
    return out


def build_kg(datasets: list[tuple[str, dict]]) -> EvidenceKG:
    """Merge validated KG documents: ids through aliases and synonyms, duplicate edges
    folded with all their evidence (first-seen attributes win otherwise)."""
    nodes: dict[str, dict] = {}
    aliases: dict[str, str] = {}
    for _, data in datasets:
        for node in data["nodes"]:
            nid = canonical_id(node["id"], aliases)
            if nid not in nodes:
                nodes[nid] = {**node, "id": nid, "aliases": list(node.get("aliases") or [])}
            else:
                for alias in node.get("aliases") or []:
                    if alias not in nodes[nid]["aliases"]:
                        nodes[nid]["aliases"].append(alias)
            aliases.update({k: nid for k, v in _alias_map([node]).items()})
    graph = nx.DiGraph()
    for nid, node in nodes.items():
        graph.add_node(nid, **node)
    for _, data in datasets:
        for edge in data["edges"]:
            s, t = canonical_id(edge["source"], aliases), canonical_id(edge["target"], aliases)
            record = {**edge, "source": s, "target": t, "conditions": list(edge.get("conditions") or []),
                      "evidence": list(edge["evidence"])}
            if graph.has_edge(s, t):
                merged = graph.edges[s, t]
                for ev in record["evidence"]:
                    if ev not in merged["evidence"]:
                        merged["evidence"].append(ev)
                for cond in record["conditions"]:
                    if cond not in merged["conditions"]:
                        merged["conditions"].append(cond)
            else:
                graph.add_edge(s, t, **record)
    return EvidenceKG(graph=graph, aliases=aliases, sources=[name for name, _ in datasets])


def load_kg(paths: str | Path | Iterable[str | Path]) -> EvidenceKG:
    """Read, validate and merge one or more KG files."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    datasets = []
    for path in paths:
        path = Path(path)
        try:
            data = json.loads(read_text(path, "kg"))
        except json.JSONDecodeError as exc:
            raise InputError(f"kg {path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        datasets.append((str(path), validate_kg(data, f"kg {path}")))
    return build_kg(datasets)
