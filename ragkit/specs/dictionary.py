"""The term dictionary of a spec store, as the spec pipeline and ``eval mcq`` read it.

Three lookups over the store's Term nodes, built once per store content:

- ``linker``: abbreviations and term names as linkable surfaces (``ragkit.text.linking``), so a
  question's entity is the span that names a dictionary entry, however it is phrased;
- ``entries(entity)``: every entry for a linked entity: all expansions of an abbreviation
  (with their specs), the definitions of the term or of those expansions;
- ``describe(text)``: the defined terms whose definitions best match a description (BM25
  over name + definition), for "Which term describes ...?" questions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from ..corpus import Doc
from ..text.linking import Linker, Surface
from ..retrieval.bm25 import BM25Index
from ..text import Tokenizer
from .model import Term
from .store import GraphStore, rank_terms

_TOKENIZER = Tokenizer(lang="en")


@dataclass
class TermDictionary:
    terms: list[Term]
    linker: Linker
    by_abbreviation: dict[str, list[Term]]
    by_name: dict[str, list[Term]]
    definitions: list[Term]
    index: BM25Index | None

    @classmethod
    def from_terms(cls, terms: list[Term]) -> "TermDictionary":
        surfaces: list[Surface] = []
        by_abbreviation: dict[str, list[Term]] = {}
        by_name: dict[str, list[Term]] = {}
        for t in terms:
            if t.term_type == "abbreviation" and t.abbreviation:
                by_abbreviation.setdefault(t.abbreviation.upper(), []).append(t)
                surfaces.append(Surface(t.abbreviation, t.abbreviation.upper(), "abbreviation", t.abbreviation))
            if t.full_name:
                by_name.setdefault(t.full_name.lower(), []).append(t)
                surfaces.append(Surface(t.full_name, t.full_name.lower(), "term", t.full_name))
        definitions = [t for t in terms if t.term_type == "definition" and t.definition]
        index = None
        if definitions:
            docs = [Doc(t.term_id, f"{t.full_name}. {t.definition}", t.full_name) for t in definitions]
            index = BM25Index.build(docs, _TOKENIZER, progress=False)
        # An abbreviation and a term spelt alike ("AS"): the longer reading first.
        linker = Linker(surfaces, kinds_order=("term", "abbreviation"))
        return cls(terms, linker, by_abbreviation, by_name, definitions, index)

    def entries(self, target: str, kind: str) -> list[Term]:
        """Every dictionary entry for a linked target: an abbreviation's expansions, best
        first, then the definitions of those expansions; a name's definition and the
        abbreviations it expands."""
        if kind == "abbreviation":
            expansions = rank_terms(self.by_abbreviation.get(target.upper(), []))
            defined = [d for e in expansions for d in self.by_name.get(e.full_name.lower(), [])
                       if d.term_type == "definition"]
            return expansions + defined
        named = self.by_name.get(target.lower(), [])
        return rank_terms([t for t in named if t.term_type == "definition"]) + \
            rank_terms([t for t in named if t.term_type == "abbreviation"])

    def describe(self, text: str, k: int = 3) -> list[tuple[Term, float]]:
        """Defined terms whose name and definition best match ``text``, with BM25 scores."""
        if self.index is None or not text.strip():
            return []
        by_id = {t.term_id: t for t in self.definitions}
        return [(by_id[h.doc_id], h.score) for h in self.index.search(text, k=k) if h.score > 0]

    def weights(self, words: set[str]) -> dict[str, float]:
        """Lucene IDF of each word over the definitions (words the dictionary never uses
        weigh the most)."""
        n = len(self.definitions) or 1
        out = {}
        index = self.index
        for w in words:
            j = index.vocab.get(w) if index is not None else None
            df = 0
            if index is not None and j is not None:
                df = int(index.weights.indptr[j + 1] - index.weights.indptr[j])
            out[w] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return out


@lru_cache(maxsize=4)
def _dictionary(uri: str, signature: tuple) -> TermDictionary:
    from . import open_store

    with open_store(uri) as store:
        return TermDictionary.from_terms(store.terms_containing("", limit=10 ** 9))


def store_signature(store: GraphStore) -> tuple:
    """What tells one content of a store from another: its counts and, for a store file,
    when it was last written (a rebuild that edits one definition keeps the counts)."""
    from pathlib import Path

    path = Path(store.uri)
    written = path.stat().st_mtime_ns if "://" not in store.uri and path.exists() else None
    return (*sorted(store.counts().items()), ("written", written))


def term_dictionary(store: GraphStore, signature: tuple | None = None) -> TermDictionary:
    """The store's dictionary, built once per store content (``signature``: the store's
    ``store_signature`` when the caller has it already: each one is a query on Neo4j)."""
    return _dictionary(store.uri, signature or store_signature(store))


def words_of(text: str) -> set[str]:
    return set(_TOKENIZER(text))
