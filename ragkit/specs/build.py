"""``ragkit kg build``: specs → documents, chunks and terms → a graph store."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..runtime.progress import progress_bar

from ..errors import InputError
from .store import GraphStore
from .chunking import chunk_document
from .ingest import load_spec
from .model import Chunk, SpecDocument, Term
from .terms import extract_terms, merge_terms


@dataclass
class ParsedSpecs:
    docs: list[SpecDocument]
    chunks: list[Chunk]
    terms: list[Term]
    abbreviations: int
    definitions: int
    seconds: dict = field(default_factory=dict)


def parse_specs(paths: Sequence[str | Path], progress: bool | None = None) -> ParsedSpecs:
    """Read every spec, cut it into chunks and extract its terms; all-or-nothing: a bad spec
    stops the build before anything is written."""
    if not paths:
        raise InputError("--specs: give at least one .docx, .pdf or .md file, or a folder of .md clause files")
    docs, chunks, abbreviations, definitions = [], [], [], []
    seconds: dict[str, float] = {}
    seen = set()
    for path in progress_bar(list(paths), desc="specs", unit="spec", progress=progress):
        started = time.perf_counter()
        doc = load_spec(path)
        if doc.spec_id in seen:
            raise InputError(f"spec {path}: {doc.spec_id} is given twice")
        seen.add(doc.spec_id)
        a, d = extract_terms(doc)
        docs.append(doc)
        chunks.extend(chunk_document(doc))
        abbreviations.extend(a)
        definitions.extend(d)
        seconds[doc.spec_id] = round(time.perf_counter() - started, 3)
    return ParsedSpecs(docs, chunks, merge_terms(abbreviations, definitions), len(abbreviations),
                       len(definitions), seconds)


def terms_per_spec(docs: Sequence[SpecDocument]) -> list[Term]:
    """Each spec's terms as that spec alone gives them, one list after another: the store
    keeps every spec's own wording, so that rebuilding one spec later leaves what the
    others say."""
    return [term for doc in docs for term in merge_terms(*extract_terms(doc))]


def build_kg(paths: Sequence[str | Path], store: GraphStore, progress: bool | None = None) -> dict:
    """Parse the specs and write them into ``store``, replacing any version of them already
    there; a summary of what was written."""
    parsed = parse_specs(paths, progress)
    stats = store.replace_documents(parsed.docs, parsed.chunks, terms_per_spec(parsed.docs))
    return {"store": store.uri, "specs": [d.spec_id for d in parsed.docs], "replaced": list(stats.replaced),
            "terms_removed": stats.terms_removed, "documents": stats.documents, "chunks": stats.chunks,
            "terms": stats.terms, "abbreviations": parsed.abbreviations, "definitions": parsed.definitions,
            "parse_s": parsed.seconds, "write_s": round(stats.seconds, 3), "counts": store.counts()}
