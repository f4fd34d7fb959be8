"""Records of the spec knowledge graph: documents, their sections and chunks,
and the terms their clause 3 (or TR 21.905's clauses 3 and 4) defines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


VERSION_MARK = "@"


def versioned_spec_id(spec: str, version: str) -> str:
    """"ts_23.501@16.4.0": the spec and its version, or the spec alone when the version is
    unknown. The mark is neither ":" (chunk ids and "spec:clause" references split on it)
    nor "." (it is in the spec number)."""
    return f"{spec}{VERSION_MARK}{version}" if version else spec


def spec_number(spec_id: str) -> str:
    """"ts_23.501" from "ts_23.501@16.4.0": which specification, whatever its version."""
    return spec_id.split(VERSION_MARK, 1)[0]


def spec_version(spec_id: str) -> str:
    """"16.4.0" from "ts_23.501@16.4.0"; "" for an id without a version."""
    return spec_id.split(VERSION_MARK, 1)[1] if VERSION_MARK in spec_id else ""


@dataclass
class Section:
    """A numbered clause: "6.2.19 SCP" → section_id "6.2.19", title "SCP"."""

    section_id: str
    title: str
    level: int
    lines: list[str] = field(default_factory=list)   # paragraphs, list items, table rows
    pages: list[int] = field(default_factory=list)   # PDF pages the section spans (0-based)
    line_pages: list[int] = field(default_factory=list)  # PDF: the page each line starts on (0-based)

    def add_line(self, text: str, page: int | None = None) -> None:
        """Append a line, with the PDF page it starts on when the source has pages."""
        self.lines.append(text)
        if page is not None:
            self.line_pages.append(page)


@dataclass
class SpecDocument:
    """One version of one specification. ``spec_id`` names the spec and, when it is known,
    the version: "ts_23.501@16.4.0" (``spec_number`` gives "ts_23.501"), so two versions of
    a spec are two documents in one store."""

    spec_id: str          # "ts_23.501@16.4.0", "tr_21.905@17.2.0"; "demo_5gc" with no version
    title: str
    version: str          # "16.4.0" ("" when unknown)
    source: str           # file name (a folder of clause files: the folder's name)
    sections: list[Section] = field(default_factory=list)
    release: str = ""     # "16" ("" when unknown)

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.section_id == section_id), None)

    def to_dict(self) -> dict:
        return {"spec_id": self.spec_id, "title": self.title, "version": self.version,
                "release": self.release, "source": self.source}


@dataclass
class Chunk:
    chunk_id: str         # "ts_23.501@16.4.0:6.2.19:1"
    spec_id: str
    section_id: str
    section_title: str
    content: str
    chunk_type: str       # abbreviation, definition, overview, function, procedure, other
    complexity_score: float
    key_terms: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)   # PDF pages the chunk's text is on (1-based)

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
