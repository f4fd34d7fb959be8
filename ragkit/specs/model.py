"""Records of the spec knowledge graph (3GPP spec design): documents, their sections and chunks,
and the terms their clause 3 (or TR 21.905's clauses 3 and 4) defines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Section:
    """A numbered clause: "6.2.19 SCP" → section_id "6.2.19", title "SCP"."""

    section_id: str
    title: str
    level: int
    lines: list[str] = field(default_factory=list)   # paragraphs, list items, table rows
    pages: list[int] = field(default_factory=list)   # PDF pages the section spans (0-based)


@dataclass
class SpecDocument:
    spec_id: str          # "ts_23.501", "tr_21.905"
    title: str
    version: str          # "16.4.0" ("" when unknown)
    source: str           # file name
    sections: list[Section] = field(default_factory=list)

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.section_id == section_id), None)

    def to_dict(self) -> dict:
        return {"spec_id": self.spec_id, "title": self.title, "version": self.version,
                "source": self.source}


@dataclass
class Chunk:
    chunk_id: str         # "ts_23.501:6.2.19:1"
    spec_id: str
    section_id: str
    section_title: str
    content: str
    chunk_type: str       # abbreviation, definition, overview, function, procedure, other
    complexity_score: float
    key_terms: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Abbreviation:
    """One "ABBR<TAB>Expansion" line as found in one spec."""

    abbreviation: str
    full_name: str
    spec_id: str
    section_id: str


@dataclass
class Definition:
    """One "term: definition" paragraph as found in one spec."""

    term: str
    definition: str
    spec_id: str
    section_id: str


@dataclass
class Term:
    """A Term node: one expansion of an abbreviation (or one defined term) with every spec
    that gives it. An abbreviation with several expansions is several Terms."""

    term_id: str
    term_type: str                  # "abbreviation" or "definition"
    abbreviation: str = ""          # abbreviation terms
    full_name: str = ""             # abbreviation terms: the expansion; definitions: the term
    definition: str = ""            # definition terms
    source_specs: list[str] = field(default_factory=list)
    primary_spec: str = ""
    sections: list[str] = field(default_factory=list)   # "ts_23.501:3.2" where it is given

    def to_dict(self) -> dict:
        return asdict(self)
