"""Sections into Chunk records (the schema in ``store.py``): chunking follows the clauses, and a
long clause is split on paragraph boundaries under a size limit."""

from __future__ import annotations

import re
from collections import Counter

from ..text import cut_to_length, split_sentences
from ..text.cues import FUNCTION_CUES, OVERVIEW_TITLE_CUES, PROCEDURE_TITLE_CUES
from .model import Chunk, Section, SpecDocument
from .terms import COMMON_WORDS

MAX_CHARS = 1500
_ACRONYM = re.compile(r"(?<![\w-])[A-Z][A-Z0-9\-]*[A-Z0-9](?![\w-])")


def chunk_type(section: Section, content: str) -> str:
    """abbreviation, definition, overview, function, procedure or other: by the clause title
    first, then by cues in the text."""
    title = section.title.lower()
    text = content.lower()
    if "abbreviation" in title:
        return "abbreviation"
    if "definition" in title:
        return "definition"
    if any(cue in title for cue in PROCEDURE_TITLE_CUES) or re.search(r"^\s*\d+[.)]\s", content, re.M):
        return "procedure"
    if any(cue in text for cue in FUNCTION_CUES):
        return "function"
    if any(cue in title for cue in OVERVIEW_TITLE_CUES):
        return "overview"
    return "other"


def key_terms(content: str, limit: int = 8) -> list[str]:
    """The acronyms a chunk uses most (ties in order of appearance)."""
    counts = Counter(w for w in _ACRONYM.findall(content) if w not in COMMON_WORDS and len(w) <= 12)
    return [w for w, _ in counts.most_common(limit)]


def complexity_score(content: str) -> float:
    """0..1: longer sentences and denser acronyms read harder. Half from the mean sentence
    length (40 words = 1), half from the share of acronym words (25 % = 1)."""
    words = content.split()
    if not words:
        return 0.0
    sentences = max(1, len(split_sentences(content)))
    length = min(1.0, len(words) / sentences / 40.0)
    density = min(1.0, len(_ACRONYM.findall(content)) / len(words) / 0.25)
    return round(0.5 * length + 0.5 * density, 4)


# Clauses that are about the document, not the system: left out of the graph.
SKIPPED_TITLES = ("change history", "foreword")


def _parts(section: Section, max_chars: int) -> list[tuple[str, list[int]]]:
    """A section's lines packed into chunks under the size limit, each with the PDF pages
    (1-based) its lines start on; no pages for sources without them."""
    pieces = [(piece, section.line_pages[i] + 1 if i < len(section.line_pages) else 0)
              for i, raw in enumerate(section.lines) for piece in cut_to_length(raw, max_chars)]
    parts: list[tuple[str, list[int]]] = []
    current, pages = "", set[int]()
    for piece, page in pieces:     # as corpus.pack: whole pieces while under the limit
        if current and len(current) + 1 + len(piece) > max_chars:
            parts.append((current, sorted(pages)))
            current, pages = "", set()
        current = f"{current}\n{piece}" if current else piece
        pages |= {page} if page else set()
    if current:
        parts.append((current, sorted(pages)))
    return parts


def chunk_document(doc: SpecDocument, max_chars: int = MAX_CHARS) -> list[Chunk]:
    """Every non-empty clause as one or more chunks, ids ``<spec>:<clause>:<n>``."""
    chunks = []
    for section in doc.sections:
        head = f"{section.title} {section.lines[0] if section.lines else ''}".lower()
        if any(skip in head for skip in SKIPPED_TITLES):
            continue
        for n, (content, pages) in enumerate(_parts(section, max_chars), 1):
            chunks.append(Chunk(chunk_id=f"{doc.spec_id}:{section.section_id}:{n}",
                                spec_id=doc.spec_id, section_id=section.section_id,
                                section_title=section.title, content=content,
                                chunk_type=chunk_type(section, content),
                                complexity_score=complexity_score(content),
                                key_terms=key_terms(content), pages=pages))
    return chunks
