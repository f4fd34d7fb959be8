"""The Neo4j graph store, through the official driver over Bolt.

Writes are batched ``UNWIND $rows`` statements with idempotent ``MERGE`` (rather than one
MERGE per row; ``bench/kg_build.py`` measures both), all in one transaction per build: the
replaced documents' old rows are deleted and the new ones written, or nothing happens.
Uniqueness constraints are created once per store object. Every query takes its values as
parameters: user text is data, never Cypher, so a term such as ``SCP' OR 1=1 //`` is simply
looked up and not found.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from ..stores.neo4j import Neo4jConnection
from .model import Chunk, SpecDocument, Term
from .store import SPEC_DEFINITIONS, GraphStore, WriteStats, chunk_rows, lowered, plan_replacement

_SCHEMA = (
    "CREATE CONSTRAINT ragkit_document IF NOT EXISTS FOR (d:Document) REQUIRE d.spec_id IS UNIQUE",
    "CREATE CONSTRAINT ragkit_chunk IF NOT EXISTS FOR (c:Chunk) REQUIRE c.chunk_id IS UNIQUE",
    "CREATE CONSTRAINT ragkit_term IF NOT EXISTS FOR (t:Term) REQUIRE t.term_id IS UNIQUE",
    # Lookups are case-insensitive: a lowercased copy of the abbreviation is indexed.
    "CREATE INDEX ragkit_term_abbreviation IF NOT EXISTS FOR (t:Term) ON (t.abbreviation_key)",
    # Replacing a document finds its chunks by spec_id.
    "CREATE INDEX ragkit_chunk_spec IF NOT EXISTS FOR (c:Chunk) ON (c.spec_id)",
)

_WRITE_DOCUMENTS = """
UNWIND $rows AS row
MERGE (d:Document {spec_id: row.spec_id})
SET d = row
"""
_WRITE_CHUNKS = """
UNWIND $rows AS row
MERGE (c:Chunk {chunk_id: row.chunk_id})
SET c = row
WITH c, row
MATCH (d:Document {spec_id: row.spec_id})
MERGE (c)-[:PART_OF]->(d)
"""
_WRITE_TERMS = """
UNWIND $rows AS row
MERGE (t:Term {term_id: row.term_id})
SET t = row
WITH t, row
UNWIND row.source_specs AS spec
MATCH (d:Document {spec_id: spec})
MERGE (t)-[:DEFINED_IN]->(d)
"""
# What replacing documents removes first (the replaced documents' old version).
_STORED_TERMS = """
MATCH (t:Term)
WHERE t.term_id IN $ids OR any(spec IN t.source_specs WHERE spec IN $specs)
RETURN properties(t) AS t
"""
_DELETE_CHUNKS = "MATCH (c:Chunk) WHERE c.spec_id IN $specs DETACH DELETE c"
_DELETE_DOCUMENTS = (
    "MATCH (d:Document) WHERE d.spec_id IN $specs WITH d, d.spec_id AS spec_id DETACH DELETE d RETURN spec_id")
_DELETE_TERMS = "UNWIND $rows AS id MATCH (t:Term {term_id: id}) DETACH DELETE t"
_UNLINK_TERMS = """
UNWIND $rows AS row
MATCH (:Term {term_id: row.id})-[r:DEFINED_IN]->(d:Document)
WHERE d.spec_id IN row.specs
DELETE r
"""
_TERM_FIELDS = ("term_id", "term_type", "abbreviation", "full_name", "definition", "source_specs",
                "primary_spec", "sections")
_CHUNK_FIELDS = ("chunk_id", "spec_id", "section_id", "section_title", "content", "chunk_type",
                 "complexity_score", "key_terms", "pages")


def _term(props) -> Term:
    values: dict[str, Any] = {k: (list(props[k]) if isinstance(props.get(k), (list, tuple)) else props.get(k, ""))
                              for k in _TERM_FIELDS}
    return Term(**values)


def _term_row(term: Term, wordings: Sequence[str] | None = None) -> dict:
    row = {**term.to_dict(), "abbreviation_key": term.abbreviation.lower()}
    return {**row, SPEC_DEFINITIONS: list(wordings)} if wordings is not None else row


def _dropped_links(plan, stored: dict, specs: Sequence[str]) -> list[dict]:
    """DEFINED_IN links to cut besides those of the replaced documents (which went with
    them): a term that no longer lists another document. Rare, since replacing changes only
    the replaced documents' parts; it needs terms naming documents not being written."""
    out = []
    for term, _ in plan.terms:
        before = stored[term.term_id][0].source_specs if term.term_id in stored else []
        dropped = [x for x in before if x not in term.source_specs and x not in specs]
        if dropped:
            out.append({"id": term.term_id, "specs": dropped})
    return out


def _chunk(props) -> Chunk:
    values: dict[str, Any] = {k: (list(props.get(k) or []) if k in ("key_terms", "pages") else props[k])
                              for k in _CHUNK_FIELDS}
    return Chunk(**values)


class Neo4jStore(GraphStore):
    """A Neo4j database behind the ``GraphStore`` interface."""

    def __init__(self, uri: str, user: str | None = None, password: str | None = None,
                 database: str | None = None):
        self.uri = uri
        self.connection = Neo4jConnection(uri, user, password, database)
        self._run = self.connection.run
        self._schema_ready = False

    def ensure_schema(self) -> None:
        """Create the constraints and index once per store object (IF NOT EXISTS)."""
        if not self._schema_ready:
            for statement in _SCHEMA:
                self._run(statement)
            self._schema_ready = True

    def _batched(self, query: str, rows: list[dict]) -> None:
        self.connection.batched(query, rows)

    # ----------------------------------------------------------------- writes
    def replace_documents(self, docs: Sequence[SpecDocument], chunks: Sequence[Chunk],
                          terms: Sequence[Term]) -> WriteStats:
        """One write transaction: read the terms involved, delete the replaced documents'
        chunks and Document nodes and the terms only they gave, then write the new version.
        Neo4j commits all of it or, on any error, none of it."""
        started = time.perf_counter()
        self.ensure_schema()
        specs = [d.spec_id for d in docs]
        ids = sorted({t.term_id for t in terms})

        def work(tx):
            stored = {}
            for record in tx.run(_STORED_TERMS, ids=ids, specs=specs):
                props = record["t"]
                wordings = props.get(SPEC_DEFINITIONS)
                stored[props["term_id"]] = (_term(props), list(wordings) if wordings is not None else None)
            plan = plan_replacement(specs, terms, stored)
            tx.run(_DELETE_CHUNKS, specs=specs).consume()
            replaced = tuple(r["spec_id"] for r in tx.run(_DELETE_DOCUMENTS, specs=specs))
            batched = self.connection.batched_in
            batched(tx, _DELETE_TERMS, plan.removed)
            batched(tx, _UNLINK_TERMS, _dropped_links(plan, stored, specs))
            batched(tx, _WRITE_DOCUMENTS, [d.to_dict() for d in docs])
            batched(tx, _WRITE_CHUNKS, chunk_rows(chunks))
            batched(tx, _WRITE_TERMS, [_term_row(t, w) for t, w in plan.terms])
            return plan, replaced

        plan, replaced = self.connection.write_transaction(work)
        return WriteStats(len(docs), len(chunks), len(plan.terms), time.perf_counter() - started,
                          tuple(s for s in specs if s in replaced), len(plan.removed))

    def write_terms_one_by_one(self, terms: Sequence[Term]) -> float:
        """The unbatched way: one MERGE statement (and its DEFINED_IN links) per term. Kept so
        the benchmark can compare it with the batched ``UNWIND`` write; seconds taken."""
        self.ensure_schema()
        started = time.perf_counter()
        with self.connection.driver.session(database=self.connection.database) as session:
            for term in terms:
                session.run(
                    "MERGE (t:Term {term_id: $row.term_id}) SET t += $row WITH t "
                    "UNWIND $row.source_specs AS spec MATCH (d:Document {spec_id: spec}) "
                    "MERGE (t)-[:DEFINED_IN]->(d)", row=_term_row(term)).consume()
        return time.perf_counter() - started

    def write_terms_batched(self, terms: Sequence[Term]) -> float:
        """The same rows as ``write_terms_one_by_one``, in UNWIND batches; seconds taken."""
        self.ensure_schema()
        started = time.perf_counter()
        self._batched(_WRITE_TERMS, [_term_row(t) for t in terms])
        return time.perf_counter() - started

    def clear(self) -> None:
        self._run("MATCH (n) WHERE n:Chunk OR n:Term OR n:Document DETACH DELETE n")

    def terms_by_ids(self, term_ids: Sequence[str]) -> dict[str, Term]:
        records = self._run("MATCH (t:Term) WHERE t.term_id IN $ids RETURN properties(t) AS t",
                            ids=list(term_ids))
        return {r["t"]["term_id"]: _term(r["t"]) for r in records}

    # ----------------------------------------------------------------- reads
    def counts(self) -> dict[str, int]:
        out = {}
        for r in self._run("MATCH (n) WHERE n:Document OR n:Chunk OR n:Term "
                           "RETURN labels(n)[0] AS label, count(*) AS n"):
            out[r["label"]] = r["n"]
        for r in self._run("MATCH ()-[r:PART_OF|DEFINED_IN]->() RETURN type(r) AS type, count(*) AS n"):
            out[r["type"]] = r["n"]
        return dict(sorted(out.items()))

    def documents(self) -> list[dict]:
        records = self._run("MATCH (d:Document) RETURN properties(d) AS d ORDER BY d.spec_id")
        return [dict(r["d"]) for r in records]

    def terms_by_abbreviation(self, abbreviation: str) -> list[Term]:
        records = self._run(
            "MATCH (t:Term {abbreviation_key: $abbr}) WHERE t.term_type = 'abbreviation' "
            "RETURN properties(t) AS t ORDER BY t.term_id", abbr=abbreviation.lower())
        return [_term(r["t"]) for r in records]

    def terms_by_name(self, name: str, term_type: str | None = None) -> list[Term]:
        records = self._run(
            "MATCH (t:Term) WHERE toLower(t.full_name) = $name "
            "AND ($type IS NULL OR t.term_type = $type) "
            "RETURN properties(t) AS t ORDER BY t.term_id", name=name.lower(), type=term_type)
        return [_term(r["t"]) for r in records]

    def terms_containing(self, text: str, term_type: str | None = None, limit: int = 50) -> list[Term]:
        records = self._run(
            "MATCH (t:Term) WHERE (toLower(t.full_name) CONTAINS $text "
            "OR toLower(t.abbreviation) CONTAINS $text) AND ($type IS NULL OR t.term_type = $type) "
            "RETURN properties(t) AS t ORDER BY t.term_id LIMIT $limit",
            text=text.lower(), type=term_type, limit=limit)
        return [_term(r["t"]) for r in records]

    def find_chunks(self, *, spec_ids=None, title_any=None, content_any=None, content_all=None,
                    chunk_types=None, limit=None) -> list[Chunk]:
        records = self._run(
            """
            MATCH (c:Chunk)
            WHERE ($specs IS NULL OR c.spec_id IN $specs)
              AND ($types IS NULL OR c.chunk_type IN $types)
              AND ($title_any IS NULL OR any(x IN $title_any WHERE toLower(c.section_title) CONTAINS x))
              AND ($content_any IS NULL OR any(x IN $content_any WHERE toLower(c.content) CONTAINS x))
              AND ($content_all IS NULL OR all(x IN $content_all WHERE toLower(c.content) CONTAINS x))
            RETURN properties(c) AS c
            ORDER BY c.spec_id, c.ordinal
            LIMIT $limit
            """,
            specs=list(spec_ids) if spec_ids else None, types=list(chunk_types) if chunk_types else None,
            title_any=lowered(title_any), content_any=lowered(content_any),
            content_all=lowered(content_all), limit=limit if limit else 1_000_000)
        return [_chunk(r["c"]) for r in records]

    def term_neighbourhood(self, term_id: str) -> dict:
        records = self._run(
            """
            MATCH (t:Term {term_id: $id})
            OPTIONAL MATCH (t)-[:DEFINED_IN]->(d:Document)
            OPTIONAL MATCH (c:Chunk)-[:PART_OF]->(d)
            WITH t, d, count(c) AS chunks
            RETURN properties(t) AS t, d.spec_id AS spec_id, d.title AS title, chunks
            ORDER BY spec_id
            """, id=term_id)
        if not records:
            return {}
        docs = [{"spec_id": r["spec_id"], "title": r["title"], "chunks": r["chunks"]}
                for r in records if r["spec_id"] is not None]
        return {"term": _term(records[0]["t"]).to_dict(), "defined_in": docs}

    def ping(self) -> None:
        self.connection.ping()

    def close(self) -> None:
        self.connection.close()
