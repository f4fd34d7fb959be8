"""SmartSearch (seed 004): the entities a question names, resolved to nodes of the typed
KG: exact name first, then an alias, then a fuzzy match (a misspelling such as "Asprin")."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..text import strip_accents


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
        self._fuzzy_keys = sorted(k for k in [*self.exact, *self.alias] if len(k) >= 5)

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
            close = difflib.get_close_matches(text, self._fuzzy_keys, n=1, cutoff=self.fuzzy_cutoff)
            if close:
                key = close[0]
                ids = self.exact.get(key) or self.alias[key]
                return sorted(ids)[0], round(difflib.SequenceMatcher(None, text, key).ratio(), 3)
        return None
