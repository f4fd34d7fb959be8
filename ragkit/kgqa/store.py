"""Typed knowledge graphs (on our own stores): nodes with an id, a name, a type,
aliases and any properties; edges with whatever relation names the user's graph uses.

Two stores behind one interface, with the same results:
- ``NxTypedStore``: a networkx MultiDiGraph in one gzip'd JSON file (embedded default);
- ``Neo4jTypedStore``: Neo4j over Bolt. Nodes are ``(:KGNode:<Type> {id, name, ...})`` and
  edges use the graph's own relation names as relationship types. Labels and types are
  passed as parameters too (Neo4j 5.26's dynamic ``$(...)`` labels), so no user text is
  ever spliced into Cypher.

Reads return nodes as plain dicts (``id``, ``name``, ``type`` and properties), sorted by
(name, id), so both stores give the same lists in the same order.
"""

from __future__ import annotations

import os
import re
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import networkx as nx

from ..errors import InputError
from ..stores.files import read_graph, require_file, write_graph
from ..stores.neo4j import Neo4jConnection, is_neo4j_uri

FORMAT = "ragkit-typed-kg"
FORMAT_VERSION = 1
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")   # node types and relation names


@dataclass(frozen=True, order=True)
class SchemaEdge:
    """One kind of edge the graph holds: (source type)-[relation]->(target type), and how many."""

    source_type: str
    relation: str
    target_type: str
    count: int


@dataclass(frozen=True)
class Edge:
    source: str
    relation: str
    target: str
    properties: dict


def node_key(node: Mapping[str, object]) -> tuple[str, str]:
    """A node's place in a listing: by name, then id (a stored node or a listed item)."""
    return (str(node.get("name", "")).lower(), str(node["id"]))


class TypedStore(ABC):
    """What the KG question-answering flow needs from a graph store."""

    uri: str

    @abstractmethod
    def replace_graph(self, nodes: Sequence[dict], edges: Sequence[Edge]) -> dict:
        """Make the store hold exactly these nodes and edges, all or nothing: nodes, edges
        and properties of an earlier import that the new files lack are gone (a typed store
        holds one graph; ``ragkit kg import`` checks the files before calling this).
        Returns counts, the nodes and edges it removed, and seconds."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every typed-KG node and edge."""

    @abstractmethod
    def schema(self) -> list[SchemaEdge]:
        """Every (source type, relation, target type) with its count, sorted."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """Nodes per type and edges per relation."""

    @abstractmethod
    def all_nodes(self) -> list[dict]:
        """Every node (for name matching), sorted by (name, id)."""

    @abstractmethod
    def expand(self, ids: Sequence[str], relation: str, direction: str,
               target_type: str | None = None) -> tuple[list[dict], list[Edge]]:
        """The nodes one ``relation`` edge away from ``ids`` (``out``: ids → node, ``in``:
        node → ids), of ``target_type`` if given, sorted; and the edges that reached them."""

    def ping(self) -> None:
        """Check the store still answers (``StoreUnavailableError`` if not); an embedded
        store, loaded in memory, always does."""

    def close(self) -> None:
        """Release connections (nothing to do for an embedded store)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _sorted_nodes(nodes: Iterable[dict]) -> list[dict]:
    return sorted(nodes, key=node_key)


def _edge_sort(edges: Iterable[Edge]) -> list[Edge]:
    return sorted(edges, key=lambda e: (e.source, e.relation, e.target))


class NxTypedStore(TypedStore):
    """The embedded store: one MultiDiGraph, saved atomically to a gzip'd JSON file."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.uri = str(self.path)
        self.graph = nx.MultiDiGraph()
        if self.path.exists():
            header, self.graph = read_graph(self.path, "ragkit typed KG file")
            if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
                raise InputError(f"store {self.path}: not a typed KG file of this ragkit "
                                 f"(format {header.get('format')!r} v{header.get('format_version')!r}); "
                                 f"'ragkit kg import' writes one")
            for node, attrs in self.graph.nodes(data=True):   # node-link JSON keeps "id" as the key only
                attrs["id"] = node

    def _save(self) -> None:
        write_graph(self.path, self.graph, {"format": FORMAT, "format_version": FORMAT_VERSION})

    def replace_graph(self, nodes: Sequence[dict], edges: Sequence[Edge]) -> dict:
        """A new graph, saved in one atomic file write before this object switches to it."""
        started = time.perf_counter()
        graph = nx.MultiDiGraph()
        for node in nodes:
            graph.add_node(node["id"], **node)
        for e in edges:
            graph.add_edge(e.source, e.target, key=e.relation, relation=e.relation, **e.properties)
        write_graph(self.path, graph, {"format": FORMAT, "format_version": FORMAT_VERSION})
        removed = {"nodes_removed": sum(1 for n in self.graph if n not in graph),
                   "edges_removed": sum(1 for s, t, k in self.graph.edges(keys=True) if not graph.has_edge(s, t, k))}
        self.graph = graph
        return {"nodes": len(nodes), "edges": len(edges), **removed,
                "seconds": round(time.perf_counter() - started, 3)}

    def clear(self) -> None:
        self.graph = nx.MultiDiGraph()
        self._save()

    def schema(self) -> list[SchemaEdge]:
        counts: dict[tuple[str, str, str], int] = {}
        types = nx.get_node_attributes(self.graph, "type")
        for s, t, rel in self.graph.edges(keys=True):
            key = (types[s], rel, types[t])
            counts[key] = counts.get(key, 0) + 1
        return [SchemaEdge(*k, n) for k, n in sorted(counts.items())]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for _, node_type in self.graph.nodes(data="type"):
            out[node_type] = out.get(node_type, 0) + 1
        for _, _, rel in self.graph.edges(keys=True):
            out[rel] = out.get(rel, 0) + 1
        return dict(sorted(out.items()))

    def all_nodes(self) -> list[dict]:
        return _sorted_nodes(dict(data) for _, data in self.graph.nodes(data=True))

    def expand(self, ids, relation, direction, target_type=None):
        found: dict[str, dict] = {}
        edges = []
        for node in ids:
            if node not in self.graph:
                continue
            pairs = (self.graph.out_edges(node, keys=True, data=True) if direction == "out"
                     else self.graph.in_edges(node, keys=True, data=True))
            for s, t, rel, data in pairs:
                other = t if direction == "out" else s
                if rel != relation or (target_type and self.graph.nodes[other]["type"] != target_type):
                    continue
                found[other] = dict(self.graph.nodes[other])
                edges.append(Edge(s, rel, t, {k: v for k, v in data.items() if k != "relation"}))
        return _sorted_nodes(found.values()), _edge_sort(edges)


class Neo4jTypedStore(TypedStore):
    """Neo4j over Bolt; every value, label and relationship type is a query parameter."""

    def __init__(self, uri: str, user: str | None = None, password: str | None = None):
        self._conn = Neo4jConnection(uri, user=user, password=password)
        self._run = self._conn.run
        self.uri = uri
        self._run("CREATE CONSTRAINT ragkit_kgnode IF NOT EXISTS FOR (n:KGNode) REQUIRE n.id IS UNIQUE")

    def replace_graph(self, nodes: Sequence[dict], edges: Sequence[Edge]) -> dict:
        """One write transaction: the old graph's nodes and edges are deleted and the new
        ones created (so no label, property or edge of the old version survives); Neo4j
        commits all of it or none. The KG files are small enough for one transaction (the
        demo graph's 200 rows take milliseconds)."""
        started = time.perf_counter()
        by_type: dict[str, list[dict]] = {}
        for node in nodes:
            by_type.setdefault(node["type"], []).append(node)
        by_rel: dict[str, list[dict]] = {}
        for e in edges:
            by_rel.setdefault(e.relation, []).append({"s": e.source, "t": e.target, "props": e.properties})
        new_edges = {(e.source, e.relation, e.target) for e in edges}
        new_ids = {n["id"] for n in nodes}

        def work(tx) -> dict:
            old_ids = [r["id"] for r in tx.run("MATCH (n:KGNode) RETURN n.id AS id")]
            old_edges = [tuple(r.values()) for r in tx.run(
                "MATCH (s:KGNode)-[r]->(t:KGNode) RETURN s.id AS s, type(r) AS rel, t.id AS t")]
            tx.run("MATCH (n:KGNode) DETACH DELETE n").consume()
            for node_type, rows in sorted(by_type.items()):
                for start in range(0, len(rows), 1000):
                    tx.run("UNWIND $rows AS row CREATE (n:KGNode) SET n = row SET n:$($type)",
                           rows=rows[start:start + 1000], type=node_type).consume()
            for relation, rows in sorted(by_rel.items()):
                for start in range(0, len(rows), 1000):
                    tx.run("UNWIND $rows AS row MATCH (s:KGNode {id: row.s}) MATCH (t:KGNode {id: row.t}) "
                           "CREATE (s)-[r:$($rel)]->(t) SET r = row.props",
                           rows=rows[start:start + 1000], rel=relation).consume()
            return {"nodes_removed": sum(1 for i in old_ids if i not in new_ids),
                    "edges_removed": sum(1 for e in old_edges if e not in new_edges)}

        removed = self._conn.write_transaction(work)
        return {"nodes": len(nodes), "edges": len(edges), **removed,
                "seconds": round(time.perf_counter() - started, 3)}

    def clear(self) -> None:
        self._run("MATCH (n:KGNode) DETACH DELETE n")

    def schema(self) -> list[SchemaEdge]:
        records = self._run("MATCH (s:KGNode)-[r]->(t:KGNode) RETURN s.type AS s, type(r) AS rel, "
                            "t.type AS t, count(*) AS n")
        return sorted(SchemaEdge(r["s"], r["rel"], r["t"], r["n"]) for r in records)

    def counts(self) -> dict[str, int]:
        out = {r["type"]: r["n"] for r in self._run("MATCH (n:KGNode) RETURN n.type AS type, count(*) AS n")}
        for r in self._run("MATCH (:KGNode)-[r]->(:KGNode) RETURN type(r) AS rel, count(*) AS n"):
            out[r["rel"]] = out.get(r["rel"], 0) + r["n"]
        return dict(sorted(out.items()))

    def all_nodes(self) -> list[dict]:
        return _sorted_nodes(_plain(r["n"]) for r in self._run("MATCH (n:KGNode) RETURN properties(n) AS n"))

    def expand(self, ids, relation, direction, target_type=None):
        pattern = ("MATCH (a:KGNode)-[r:$($rel)]->(b:KGNode)" if direction == "out"
                   else "MATCH (a:KGNode)<-[r:$($rel)]-(b:KGNode)")
        records = self._run(f"{pattern} WHERE a.id IN $ids AND ($type IS NULL OR b.type = $type) "
                            "RETURN properties(b) AS b, startNode(r).id AS s, endNode(r).id AS t, "
                            "properties(r) AS props",
                            ids=list(ids), rel=relation, type=target_type)
        found = {r["b"]["id"]: _plain(r["b"]) for r in records}
        edges = [Edge(r["s"], relation, r["t"], dict(r["props"])) for r in records]
        return _sorted_nodes(found.values()), _edge_sort(edges)

    def ping(self) -> None:
        self._conn.ping()

    def close(self) -> None:
        self._conn.close()


def _plain(props) -> dict:
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in dict(props).items()}


def open_typed_store(store: str, must_exist: bool = False) -> TypedStore:
    """A file path opens the embedded store; ``bolt://`` / ``neo4j://`` URIs open Neo4j
    (user and password from NEO4J_USER / NEO4J_PASSWORD). Readers pass ``must_exist``, so a
    mistyped path is an error rather than an empty graph; imports create the file."""
    if is_neo4j_uri(store):
        return Neo4jTypedStore(store)
    if must_exist:
        require_file(store, "import one with 'ragkit kg import'")
    return NxTypedStore(store)
