"""The concept graph in Neo4j, through the official driver over Bolt (``ragkit graph build
--corpus PATH --store bolt://...``)::

    (:ConceptChunk {id, position, hash, extraction})-[:MENTIONS]->(:ConceptNode {key, label, df, aliases})
    (:ConceptNode)-[:CO_OCCURS {weight}]->(:ConceptNode)      once per pair, from the smaller key
    (:ConceptGraph {format, version, extractor, hubs, hub_limit})   the graph's header, one node

The labels are the concept graph's own: the spec term graph's ``Document``, ``Chunk`` and
``Term`` nodes and the typed KG's ``KGNode`` nodes can share the database, and neither
store's writes or clears touch the other's nodes. A database holds one concept graph:
writing another corpus's graph replaces it.

A chunk node keeps its extraction row (``hash``, and the concepts found as JSON in
``extraction``), so a rebuild against the store re-extracts only the chunks whose text
changed, with no local file (``extractions``).

**Writes change only what changed.** ``write`` reads the stored graph and diffs it with the
new one by chunk id, concept key, mention pair and co-occurring pair, in one write
transaction: removed chunks and concepts go with their edges (``DETACH DELETE``), mentions
and co-occurrences that are gone are deleted, new or changed nodes are merged, new edges
created and changed weights set, all in batched ``UNWIND $rows`` statements. A chunk whose
text did not change can still lose or gain a mention (a concept that became a hub, an
abbreviation defined in another chunk), so the diff is over edges, not chunk hashes. A
rebuild that changed nothing writes nothing. Neo4j commits all of it or, on any error,
none. Every query takes its values as parameters: text is data, never Cypher.

``read`` gives back the ``ConceptGraph`` (chunks in their order, concepts by key, the same
matrices), so ``ConceptSearcher`` ranks the same from the store as from the index folder.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from ..stores.neo4j import Neo4jConnection
from .graph import EXTRACTOR, FORMAT, VERSION, ConceptGraph, edge_matrices

_SCHEMA = (
    "CREATE CONSTRAINT ragkit_concept_chunk IF NOT EXISTS FOR (c:ConceptChunk) REQUIRE c.id IS UNIQUE",
    "CREATE CONSTRAINT ragkit_concept_node IF NOT EXISTS FOR (n:ConceptNode) REQUIRE n.key IS UNIQUE",
)

_READ_HEADER = "MATCH (g:ConceptGraph) RETURN properties(g) AS g"
_READ_CHUNKS = ("MATCH (c:ConceptChunk) RETURN c.id AS id, c.position AS position, c.hash AS hash, "
                "c.extraction AS extraction ORDER BY c.position")
# One record each, the rows in a list: a record per row costs the driver more than the query.
_READ_CONCEPTS = "MATCH (n:ConceptNode) RETURN collect([n.key, n.label, n.df, n.aliases]) AS rows"
_READ_MENTIONS = "MATCH (c:ConceptChunk)-[:MENTIONS]->(n:ConceptNode) RETURN collect([c.id, n.key]) AS rows"
_READ_COOCCURS = ("MATCH (a:ConceptNode)-[r:CO_OCCURS]->(b:ConceptNode) "
                  "RETURN collect([a.key, b.key, r.weight]) AS rows")

_DELETE_CHUNKS = "UNWIND $rows AS id MATCH (c:ConceptChunk {id: id}) DETACH DELETE c"
_DELETE_CONCEPTS = "UNWIND $rows AS key MATCH (n:ConceptNode {key: key}) DETACH DELETE n"
_DELETE_MENTIONS = """
UNWIND $rows AS row
MATCH (:ConceptChunk {id: row.chunk})-[m:MENTIONS]->(:ConceptNode {key: row.key})
DELETE m
"""
_DELETE_COOCCURS = """
UNWIND $rows AS row
MATCH (:ConceptNode {key: row.a})-[r:CO_OCCURS]->(:ConceptNode {key: row.b})
DELETE r
"""
_WRITE_CHUNKS = "UNWIND $rows AS row MERGE (c:ConceptChunk {id: row.id}) SET c = row"
# A chunk that only moved (one inserted or removed before it) gets its new position alone.
_MOVE_CHUNKS = "UNWIND $rows AS row MATCH (c:ConceptChunk {id: row.id}) SET c.position = row.position"
_WRITE_CONCEPTS = "UNWIND $rows AS row MERGE (n:ConceptNode {key: row.key}) SET n = row"
# New edges are created, grouped by their first node: the diff, read in the same
# transaction, says they are not there yet.
_CREATE_MENTIONS = """
UNWIND $rows AS row
MATCH (c:ConceptChunk {id: row.chunk})
UNWIND row.keys AS key
MATCH (n:ConceptNode {key: key})
CREATE (c)-[:MENTIONS]->(n)
"""
_CREATE_COOCCURS = """
UNWIND $rows AS row
MATCH (a:ConceptNode {key: row.a})
UNWIND row.pairs AS pair
MATCH (b:ConceptNode {key: pair.b})
CREATE (a)-[:CO_OCCURS {weight: pair.weight}]->(b)
"""
_UPDATE_COOCCURS = """
UNWIND $rows AS row
MATCH (:ConceptNode {key: row.a})-[r:CO_OCCURS]->(:ConceptNode {key: row.b})
SET r.weight = row.weight
"""
_WRITE_HEADER = "MERGE (g:ConceptGraph) SET g = $header"
_CLEAR = "MATCH (n) WHERE n:ConceptChunk OR n:ConceptNode OR n:ConceptGraph DETACH DELETE n"
_COUNTS = """
MATCH (n) WHERE n:ConceptChunk OR n:ConceptNode
WITH labels(n)[0] AS label, count(*) AS n
RETURN label, n
"""


@dataclass
class Counts:
    """Nodes and edges of each kind."""

    chunks: int = 0
    concepts: int = 0
    mentions: int = 0
    cooccurrences: int = 0


@dataclass
class ConceptWriteStats:
    """What ``write`` changed: nodes and edges created or updated, and deleted (a deleted
    node's edges counted with the edges), and the seconds taken, reading the stored graph
    included."""

    uri: str
    written: Counts = field(default_factory=Counts)
    deleted: Counts = field(default_factory=Counts)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Snapshot:
    """A graph as rows and sets, the shape the diff compares."""

    header: dict
    chunks: dict           # id -> chunk node properties
    concepts: dict         # key -> concept node properties
    mentions: set          # (chunk id, concept key)
    cooccurs: dict         # (key a, key b), a < b -> weight


def _extraction(row: dict) -> str:
    return json.dumps({k: v for k, v in row.items() if k != "hash"}, ensure_ascii=False, sort_keys=True)


def _snapshot(graph: ConceptGraph, rows: dict[str, dict]) -> _Snapshot:
    aliases: dict[str, list[str]] = {}
    for alias, key in sorted(graph.aliases.items()):
        aliases.setdefault(key, []).append(alias)
    chunks = {cid: {"id": cid, "position": i, "hash": rows[cid]["hash"], "extraction": _extraction(rows[cid])}
              for i, cid in enumerate(graph.chunk_ids)}
    concepts = {k: {"key": k, "label": label, "df": int(df), "aliases": aliases.get(k, [])}
                for k, label, df in zip(graph.keys, graph.labels, graph.df)}
    coo = graph.mentions.tocoo()
    mentions = {(graph.chunk_ids[r], graph.keys[c]) for r, c in zip(coo.row, coo.col)}
    upper = graph.cooccurs.tocoo()
    cooccurs = {}
    for a, b, w in zip(upper.row, upper.col, upper.data):
        ka, kb = graph.keys[a], graph.keys[b]
        if ka < kb:
            cooccurs[(ka, kb)] = float(w)
    header = {"format": FORMAT, "version": VERSION, "extractor": graph.meta.get("extractor", EXTRACTOR),
              "hubs": list(graph.hubs), "hub_limit": float(graph.meta.get("hub_limit", 0.0))}
    return _Snapshot(header, chunks, concepts, mentions, cooccurs)


def _read_snapshot(run) -> _Snapshot | None:
    """The stored graph (``run(query)`` gives records), or None when the store has none."""
    headers = run(_READ_HEADER)
    if not headers:
        return None
    chunks = {r["id"]: {"id": r["id"], "position": r["position"], "hash": r["hash"],
                        "extraction": r["extraction"]} for r in run(_READ_CHUNKS)}
    concepts = {key: {"key": key, "label": label, "df": df, "aliases": list(aliases or [])}
                for key, label, df, aliases in run(_READ_CONCEPTS)[0]["rows"]}
    mentions = {(chunk, key) for chunk, key in run(_READ_MENTIONS)[0]["rows"]}
    cooccurs = {tuple(sorted((a, b))): weight for a, b, weight in run(_READ_COOCCURS)[0]["rows"]}
    header = dict(headers[0]["g"])
    header["hubs"] = list(header.get("hubs") or [])
    return _Snapshot(header, chunks, concepts, mentions, cooccurs)


@dataclass
class _Plan:
    """The statements (and their rows) that turn the stored graph into the new one."""

    statements: list
    header: dict | None
    written: Counts
    deleted: Counts


def _plan(old: _Snapshot, new: _Snapshot) -> _Plan:
    """Deletes first (a deleted node takes its edges: only the edges between surviving
    nodes are deleted one by one), then the new and changed nodes, then the new edges and
    the changed weights."""
    gone_chunks = sorted(set(old.chunks) - set(new.chunks))
    gone_concepts = sorted(set(old.concepts) - set(new.concepts))
    gone_mentions = old.mentions - new.mentions
    gone_pairs = set(old.cooccurs) - set(new.cooccurs)
    dropped_chunks, dropped_concepts = set(gone_chunks), set(gone_concepts)
    chunks = [row for cid, row in new.chunks.items() if old.chunks.get(cid) != row]
    moved = [{"id": row["id"], "position": row["position"]} for row in chunks if row["id"] in old.chunks
             and {**old.chunks[row["id"]], "position": row["position"]} == row]
    moved_ids = {row["id"] for row in moved}
    concepts = [row for key, row in new.concepts.items() if old.concepts.get(key) != row]
    added = sorted(new.mentions - old.mentions)
    weighed = {pair: w for pair, w in sorted(new.cooccurs.items()) if old.cooccurs.get(pair) != w}
    statements = [
        (_DELETE_CHUNKS, gone_chunks),
        (_DELETE_MENTIONS, [{"chunk": c, "key": k} for c, k in sorted(gone_mentions)
                            if c not in dropped_chunks and k not in dropped_concepts]),
        (_DELETE_COOCCURS, [{"a": a, "b": b} for a, b in sorted(gone_pairs)
                            if a not in dropped_concepts and b not in dropped_concepts]),
        (_DELETE_CONCEPTS, gone_concepts),
        (_WRITE_CHUNKS, [row for row in chunks if row["id"] not in moved_ids]),
        (_MOVE_CHUNKS, moved),
        (_WRITE_CONCEPTS, concepts),
        (_CREATE_MENTIONS, [{"chunk": c, "keys": keys} for c, keys in _grouped(added)]),
        (_CREATE_COOCCURS, [{"a": a, "pairs": rest} for a, rest in _grouped(
            (a, {"b": b, "weight": w}) for (a, b), w in weighed.items() if (a, b) not in old.cooccurs)]),
        (_UPDATE_COOCCURS, [{"a": a, "b": b, "weight": w} for (a, b), w in weighed.items()
                            if (a, b) in old.cooccurs]),
    ]
    return _Plan([(q, rows) for q, rows in statements if rows],
                 new.header if old.header != new.header else None,
                 written=Counts(len(chunks), len(concepts), len(added), len(weighed)),
                 deleted=Counts(len(gone_chunks), len(gone_concepts), len(gone_mentions), len(gone_pairs)))


def _grouped(pairs) -> list[tuple]:
    """(first, second) pairs, sorted by first, as [(first, [second, ...]), ...]: one row per
    node for the edges it starts, so each node is looked up once."""
    out: list[tuple] = []
    for first, second in pairs:
        if not out or out[-1][0] != first:
            out.append((first, []))
        out[-1][1].append(second)
    return out


class Neo4jConceptStore:
    """A concept graph kept in Neo4j: ``write`` (incremental), ``read``, ``extractions``."""

    def __init__(self, uri: str, user: str | None = None, password: str | None = None,
                 database: str | None = None):
        self.uri = uri
        self.connection = Neo4jConnection(uri, user, password, database)
        self._schema_ready = False

    def ensure_schema(self) -> None:
        """The uniqueness constraints the writes look nodes up by (once per store object)."""
        if not self._schema_ready:
            for statement in _SCHEMA:
                self.connection.run(statement)
            self._schema_ready = True

    # ----------------------------------------------------------------- writes
    def write(self, graph: ConceptGraph, rows: dict[str, dict]) -> ConceptWriteStats:
        """Make the store hold ``graph`` (and its extraction ``rows``), changing only what
        differs from what it holds now; one transaction."""
        started = time.perf_counter()
        self.ensure_schema()
        new = _snapshot(graph, rows)

        def work(tx) -> ConceptWriteStats:
            old = _read_snapshot(lambda q: list(tx.run(q)))
            plan = _plan(old or _Snapshot({}, {}, {}, set(), {}), new)
            for statement, rows in plan.statements:
                self.connection.batched_in(tx, statement, rows)
            if plan.header is not None:
                tx.run(_WRITE_HEADER, header=plan.header).consume()
            return ConceptWriteStats(self.uri, plan.written, plan.deleted)

        stats = self.connection.write_transaction(work)
        stats.seconds = round(time.perf_counter() - started, 4)
        return stats

    def clear(self) -> None:
        """Delete the concept graph (and nothing else the database holds)."""
        self.connection.run(_CLEAR)

    # ----------------------------------------------------------------- reads
    def read(self) -> ConceptGraph | None:
        """The stored graph as a ``ConceptGraph`` (None when the store holds none): chunks in
        their stored order, concepts sorted by key, as a build makes them."""
        stored = _read_snapshot(self.connection.run)
        if stored is None:
            return None
        chunk_ids = sorted(stored.chunks, key=lambda c: stored.chunks[c]["position"])
        keys = sorted(stored.concepts)
        chunk_at = {c: i for i, c in enumerate(chunk_ids)}
        key_at = {k: i for i, k in enumerate(keys)}
        pairs = sorted((chunk_at[c], key_at[k]) for c, k in stored.mentions)
        cooccurs = sorted((key_at[a], key_at[b], w) for (a, b), w in stored.cooccurs.items())
        mentions, co = edge_matrices(
            len(chunk_ids), len(keys), [r for r, _ in pairs], [c for _, c in pairs],
            np.array([a for a, _, _ in cooccurs], dtype=np.int64),
            np.array([b for _, b, _ in cooccurs], dtype=np.int64),
            np.array([w for _, _, w in cooccurs], dtype=np.float64))
        header = stored.header
        return ConceptGraph(
            chunk_ids=chunk_ids, keys=keys, labels=[stored.concepts[k]["label"] for k in keys],
            df=np.array([stored.concepts[k]["df"] for k in keys], dtype=np.float64),
            mentions=mentions, cooccurs=co,
            aliases={a: k for k in keys for a in stored.concepts[k]["aliases"]},
            hubs=header["hubs"],
            meta={"chunks": len(chunk_ids), "concepts": len(keys), "hub_limit": header.get("hub_limit"),
                  "extractor": header.get("extractor"), "store": self.uri})

    def extractions(self) -> dict[str, dict] | None:
        """{chunk id: extraction row} of the stored graph (the ``previous`` of a rebuild), or
        None when the store holds none."""
        if not self.connection.run(_READ_HEADER):
            return None
        out = {}
        for r in self.connection.run(_READ_CHUNKS):
            out[r["id"]] = {"hash": r["hash"], **json.loads(r["extraction"])}
        return out

    def counts(self) -> dict[str, int]:
        """Nodes and edges of the concept graph, by kind."""
        out = {r["label"]: r["n"] for r in self.connection.run(_COUNTS)}
        for r in self.connection.run("MATCH (:ConceptChunk)-[m:MENTIONS]->(:ConceptNode) RETURN count(m) AS n"):
            out["MENTIONS"] = r["n"]
        for r in self.connection.run("MATCH (:ConceptNode)-[c:CO_OCCURS]->(:ConceptNode) RETURN count(c) AS n"):
            out["CO_OCCURS"] = r["n"]
        return dict(sorted(out.items()))

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> "Neo4jConceptStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
