"""The graph-store interface for the spec knowledge graph (3GPP spec design), and the logic both
stores share. Implementations: ``nx_store.NetworkXStore`` (embedded default, one file) and
``neo4j_store.Neo4jStore`` (Bolt). The same conformance tests run against both.

Schema:
    (:Document {spec_id, title, version, release, source})    spec_id: "ts_23.501@16.4.0"
    (:Chunk {chunk_id, spec_id, section_id, section_title, content, chunk_type,
             complexity_score, key_terms, pages, ordinal}) -[:PART_OF]-> (:Document)
    (:Term {term_id, term_type, abbreviation, full_name, definition, source_specs,
            primary_spec, sections}) -[:DEFINED_IN]-> (:Document)

Store queries are plain filters (exact or case-insensitive substring) with a fixed order,
so both stores return the same rows; ranking happens above them, in Python, once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterable, Sequence

from .model import Chunk, SpecDocument, Term
from .terms import is_five_g_spec, primary_spec


@dataclass(frozen=True)
class WriteStats:
    documents: int
    chunks: int
    terms: int
    seconds: float

    @property
    def rows(self) -> int:
        return self.documents + self.chunks + self.terms


def rank_terms(terms: Iterable[Term]) -> list[Term]:
    """Best expansion first: a 5G primary spec, then more source specs, then the id."""
    return sorted(terms, key=lambda t: (not is_five_g_spec(t.primary_spec), -len(t.source_specs),
                                        t.term_id))


def merge_existing(new: Sequence[Term], existing: dict[str, Term]) -> list[Term]:
    """Fold terms already in the store into the new ones: source specs and sections are
    united, so building one spec at a time gives the same graph as building all at once."""
    merged = []
    for term in new:
        old = existing.get(term.term_id)
        if old is not None:
            # The store saw these specs first: they keep their place in the order.
            term.source_specs = old.source_specs + [x for x in term.source_specs if x not in old.source_specs]
            term.sections = old.sections + [x for x in term.sections if x not in old.sections]
            if old.definition and not (is_five_g_spec(term.primary_spec) and not is_five_g_spec(old.primary_spec)):
                term.definition = old.definition
            term.primary_spec = primary_spec(term.source_specs)
        merged.append(term)
    return merged


def chunk_rows(chunks: Sequence[Chunk]) -> list[dict]:
    """Chunk properties with their document order (``ordinal``), which every query sorts by."""
    return [{**c.to_dict(), "ordinal": i} for i, c in enumerate(chunks)]


class GraphStore(ABC):
    """What the spec pipeline needs from a graph store."""

    uri: str

    # ----------------------------------------------------------------- writes
    @abstractmethod
    def write(self, docs: Sequence[SpecDocument], chunks: Sequence[Chunk],
              terms: Sequence[Term]) -> WriteStats:
        """Merge documents, chunks and terms (idempotent: writing twice changes nothing)."""

    @abstractmethod
    def terms_by_ids(self, term_ids: Sequence[str]) -> dict[str, Term]:
        """The stored terms with these ids."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every node and relationship this schema owns."""

    # ----------------------------------------------------------------- reads
    @abstractmethod
    def counts(self) -> dict[str, int]:
        """Nodes per label and relationships per type."""

    @abstractmethod
    def documents(self) -> list[dict]:
        """Document properties, by spec_id."""

    @abstractmethod
    def terms_by_abbreviation(self, abbreviation: str) -> list[Term]:
        """Abbreviation terms whose abbreviation equals the text (case-insensitive), by id."""

    @abstractmethod
    def terms_by_name(self, name: str, term_type: str | None = None) -> list[Term]:
        """Terms whose full name (or defined term) equals the text, case-insensitive, by id."""

    @abstractmethod
    def terms_containing(self, text: str, term_type: str | None = None, limit: int = 50) -> list[Term]:
        """Terms whose abbreviation or full name contains the text (case-insensitive), by id."""

    @abstractmethod
    def find_chunks(self, *, spec_ids: Sequence[str] | None = None,
                    title_any: Sequence[str] | None = None,
                    content_any: Sequence[str] | None = None,
                    content_all: Sequence[str] | None = None,
                    chunk_types: Sequence[str] | None = None,
                    limit: int | None = None) -> list[Chunk]:
        """Chunks passing every given filter (substring tests are case-insensitive), in
        (spec_id, document order)."""

    @abstractmethod
    def term_neighbourhood(self, term_id: str) -> dict:
        """A term, the documents it is DEFINED_IN, and how many chunks each has."""

    def close(self) -> None:
        """Release connections (nothing to do for an embedded store)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def lowered(values: Sequence[str] | None) -> list[str] | None:
    return [v.lower() for v in values] if values else None


def open_store(store: str) -> GraphStore:
    """A file path opens the embedded networkx store; ``bolt://`` / ``neo4j://`` URIs open
    Neo4j (user and password from NEO4J_USER / NEO4J_PASSWORD)."""
    from ..stores.neo4j import is_neo4j_uri

    if is_neo4j_uri(store):
        from .neo4j_store import Neo4jStore

        return Neo4jStore(store)
    from .nx_store import NetworkXStore

    return NetworkXStore(store)
