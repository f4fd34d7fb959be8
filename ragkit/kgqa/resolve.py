"""SmartSearch (KG QA design): the entities a question names, resolved to nodes of the typed
KG: exact name first, then an alias, then a fuzzy match (a misspelling such as "Asprin")."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from ..text import ENGLISH_STOPWORDS, strip_accents


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*", strip_accents(text.lower()))


@dataclass(frozen=True)
class Resolved:
    mention: str
    id: str
    name: str
    type: str
    how: str          # exact | alias | fuzzy
    score: float
    start: int        # word position in the question


class NameIndex:
    """Node names and aliases as word sequences, for matching in questions."""

    def __init__(self, nodes: list[dict], fuzzy_cutoff: float = 0.85):
        self.nodes = {n["id"]: n for n in nodes}
        self.fuzzy_cutoff = fuzzy_cutoff
        self.exact: dict[str, list[str]] = {}
        self.alias: dict[str, list[str]] = {}
        for n in nodes:
            self.exact.setdefault(" ".join(words(n["name"])), []).append(n["id"])
            for a in n.get("aliases") or []:
                self.alias.setdefault(" ".join(words(a)), []).append(n["id"])
        self.exact.pop("", None)
        self.alias.pop("", None)
        self.longest = max((len(k.split()) for k in [*self.exact, *self.alias]), default=1)
        # Fuzzy candidates by length: a ratio of at least c needs the lengths within a
        # factor (2 - c) / c of each other, so most keys are never compared.
        self._fuzzy_by_len: dict[int, list[str]] = {}
        for key in sorted({k for k in [*self.exact, *self.alias] if len(k) >= 5}):
            self._fuzzy_by_len.setdefault(len(key), []).append(key)

    def resolve(self, question: str) -> list[Resolved]:
        """Longest matches first, never overlapping; returned in question order."""
        toks = words(question)
        used: set[int] = set()
        found: list[Resolved] = []
        for how in ("exact", "alias", "fuzzy"):
            for n in range(min(self.longest, len(toks)), 0, -1):
                for i in range(len(toks) - n + 1):
                    span = range(i, i + n)
                    if any(j in used for j in span):
                        continue
                    if how == "fuzzy" and (toks[i] in ENGLISH_STOPWORDS or toks[i + n - 1] in ENGLISH_STOPWORDS):
                        continue   # a misspelt name does not start or end with "the", "of", "by"...
                    text = " ".join(toks[i:i + n])
                    hit = self._lookup(text, how)
                    if hit:
                        node_id, score = hit
                        node = self.nodes[node_id]
                        found.append(Resolved(text, node_id, node["name"], node["type"], how, score, i))
                        used.update(span)
        return sorted(found, key=lambda r: r.start)

    def _lookup(self, text: str, how: str) -> tuple[str, float] | None:
        if len(text) < 3:
            return None
        if how == "exact" and text in self.exact:
            return sorted(self.exact[text])[0], 1.0
        if how == "alias" and text in self.alias:
            return sorted(self.alias[text])[0], 1.0
        if how == "fuzzy" and len(text) >= 5:
            c = self.fuzzy_cutoff
            low, high = math.ceil(len(text) * c / (2 - c)), math.floor(len(text) * (2 - c) / c)
            keys = [k for n in range(low, high + 1) for k in self._fuzzy_by_len.get(n, ())]
            # Indel similarity (2·matches / total length, as difflib's ratio) in C++.
            best = process.extractOne(text, keys, scorer=fuzz.ratio, score_cutoff=c * 100) if keys else None
            if best:
                key = best[0]
                ids = self.exact.get(key) or self.alias[key]
                return sorted(ids)[0], round(best[1] / 100, 3)
        return None
