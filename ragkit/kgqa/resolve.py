"""SmartSearch: the entities a question names, resolved to nodes of the typed
KG by the shared linker: exact name first, then an alias, then a fuzzy match (a misspelling
such as "Asprin")."""

from __future__ import annotations

from dataclasses import dataclass

from ..text.linking import Linker, Surface
from ..text.words import terms


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
    """Node names and aliases as linkable surfaces (``ragkit.text.linking``): the question's
    spans that name a node, longest first, exact before alias before a misspelling."""

    def __init__(self, nodes: list[dict], fuzzy_cutoff: float = 0.85):
        self.nodes = {n["id"]: n for n in nodes}
        surfaces = []
        for n in nodes:
            surfaces.append(Surface(n["name"], n["id"], "node", n["name"]))
            surfaces.extend(Surface(a, n["id"], "alias", n["name"]) for a in n.get("aliases") or [] if a)
        self.linker = Linker(surfaces, fuzzy_cutoff=fuzzy_cutoff, kinds_order=("node", "alias"))

    def resolve(self, question: str) -> list[Resolved]:
        """Longest matches first, never overlapping; returned in question order. Names of
        fewer than three letters are not matched (they are mostly ambiguous)."""
        found: list[Resolved] = []
        for link in self.linker.link(question):
            mention = " ".join(terms(link.text))
            position = len(terms(question[:link.start]))
            if len(mention) < 3 or any(r.start == position for r in found):
                continue     # one node per span: the first (exact names before aliases)
            node = self.nodes[link.target]
            how = "fuzzy" if link.how == "fuzzy" else ("alias" if link.kind == "alias" else "exact")
            found.append(Resolved(mention, link.target, node["name"], node["type"], how, link.score, position))
        return sorted(found, key=lambda r: r.start)
