"""The graph-store interface for the spec knowledge graph, and the logic both
stores share. Implementations: ``nx_store.NetworkXStore`` (embedded default, one file) and
``neo4j_store.Neo4jStore`` (Bolt). The same conformance tests run against both.

Schema:
    (:Document {spec_id, title, version, release, source})    spec_id: "ts_23.501@16.4.0"
    (:Chunk {chunk_id, spec_id, section_id, section_title, content, chunk_type,
             complexity_score, key_terms, pages, ordinal}) -[:PART_OF]-> (:Document)
    (:Term {term_id, term_type, abbreviation, full_name, definition, source_specs,
            primary_spec, sections, spec_definitions}) -[:DEFINED_IN]-> (:Document)

Building a spec that is already in a store replaces it (``replace_documents``): the store
keeps, per term, each source spec's own wording (``spec_definitions``) so that dropping one
spec's contribution leaves exactly what the other specs say.

Store queries are plain filters (exact or case-insensitive substring) with a fixed order,
so both stores return the same rows; ranking happens above them, in Python, once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from .model import Chunk, SpecDocument, Term
from .terms import is_five_g_spec, primary_spec


@dataclass(frozen=True)
class WriteStats:
    documents: int
    chunks: int
    terms: int
    seconds: float
    replaced: tuple[str, ...] = ()     # documents that were in the store and were replaced
    terms_removed: int = 0             # terms only the replaced documents gave, now gone

    @property
    def rows(self) -> int:
        return self.documents + self.chunks + self.terms


def rank_terms(terms: Iterable[Term]) -> list[Term]:
    """Best expansion first: a 5G primary spec, then more source specs, then the id."""
    return sorted(terms, key=lambda t: (not is_five_g_spec(t.primary_spec), -len(t.source_specs),
                                        t.term_id))


# Each source spec's own wording of a term, kept on the Term beside ``source_specs`` (same
# order), so that replacing one spec can fall back to what the others say.
SPEC_DEFINITIONS = "spec_definitions"


def spec_parts(term: Term, definitions: Sequence[str] | None = None) -> dict[str, Term]:
    """The term as each of its source specs gives it: one single-spec Term per spec, with
    that spec's sections and wording. ``definitions`` lists the wordings in ``source_specs``
    order; without it (terms merged by one build, a store written before wordings were
    kept) every spec is credited with the term's definition."""
    parts = {}
    for i, spec in enumerate(term.source_specs):
        wording = definitions[i] if definitions is not None and i < len(definitions) else term.definition
        parts[spec] = replace(term, source_specs=[spec], primary_spec=spec, definition=wording,
                              sections=[x for x in term.sections if x.startswith(f"{spec}:")])
    return parts


def combine(parts: Sequence[Term]) -> tuple[Term, list[str]]:
    """One Term from its per-spec parts, in source order, and the wordings in that order.
    The primary spec follows ``primary_spec`` and its wording is the definition: the first
    5G spec's, else the first spec's, the same choice ``merge_terms`` makes within a build."""
    sources = [p.source_specs[0] for p in parts]
    wordings = [p.definition for p in parts]
    primary = primary_spec(sources)
    term = replace(parts[0], source_specs=sources, primary_spec=primary,
                   sections=[x for p in parts for x in p.sections],
                   definition=wordings[sources.index(primary)] or next((w for w in wordings if w), ""))
    return term, wordings


@dataclass
class Replacement:
    """What replacing some documents does to the terms: rows to write (each with its
    per-spec wordings) and the ids of terms no document gives any more."""

    terms: list[tuple[Term, list[str]]]
    removed: list[str]


def plan_replacement(specs: Iterable[str], new: Sequence[Term],
                     stored: dict[str, tuple[Term, list[str] | None]]) -> Replacement:
    """The terms after the documents ``specs`` are replaced by a version that gives ``new``.

    ``stored`` holds every stored term that one of ``specs`` gives or that ``new`` names,
    with its wordings. What the replaced specs said is dropped; what other specs say is
    kept; a spec already listed keeps its place among the sources, a new one goes last (so
    building specs one at a time gives the graph a single build of them all gives).
    ``new`` may hold one Term per spec or terms merged across the specs of one build."""
    specs = set(specs)
    fresh: dict[str, dict[str, Term]] = {}
    for term in new:
        for spec, part in spec_parts(term).items():
            have = fresh.setdefault(term.term_id, {}).setdefault(spec, part)
            have.sections += [x for x in part.sections if x not in have.sections]
    rows, removed = [], []
    for tid in list(stored) + [t for t in fresh if t not in stored]:
        old = spec_parts(*stored[tid]) if tid in stored else {}
        now = fresh.get(tid, {})
        order = list(old) + [s for s in now if s not in old]
        parts = [now[s] if s in now else old[s] for s in order if s in now or s not in specs]
        if parts:
            rows.append(combine(parts))
        else:
            removed.append(tid)
    return Replacement(rows, removed)


def chunk_rows(chunks: Sequence[Chunk]) -> list[dict]:
    """Chunk properties with their document order (``ordinal``), which every query sorts by."""
    return [{**c.to_dict(), "ordinal": i} for i, c in enumerate(chunks)]


class GraphStore(ABC):
    """What the spec pipeline needs from a graph store."""

    uri: str

    # ----------------------------------------------------------------- writes
    @abstractmethod
    def replace_documents(self, docs: Sequence[SpecDocument], chunks: Sequence[Chunk],
                          terms: Sequence[Term]) -> WriteStats:
        """Write ``docs`` with their chunks and terms, replacing any stored version of them,
        all or nothing (one transaction, one atomic file write).

        What only a replaced document gave goes: its Document node, chunks, DEFINED_IN
        links, and terms, expansions and definitions no other document gives. Terms other
        documents give too keep those sources and their wording. Writing the same
        documents twice changes nothing. ``terms``: one list per document, concatenated
        (exact), or terms merged across ``docs`` (a definition two of them give is then
        credited to both in the merged wording)."""

    def write(self, docs: Sequence[SpecDocument], chunks: Sequence[Chunk],
              terms: Sequence[Term]) -> WriteStats:
        """``replace_documents``, by its short name."""
        return self.replace_documents(docs, chunks, terms)

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

    def ping(self) -> None:
        """Check the store still answers (``StoreUnavailableError`` if not); an embedded
        store, loaded in memory, always does."""

    def close(self) -> None:
        """Release connections (nothing to do for an embedded store)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def lowered(values: Sequence[str] | None) -> list[str] | None:
    return [v.lower() for v in values] if values else None
