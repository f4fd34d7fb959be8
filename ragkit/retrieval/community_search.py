"""Retrieval of community summaries for questions about the whole corpus.

``--method communities`` answers from the communities of the index's concept graph
(``ragkit.concepts.communities``, built by ``ragkit index build --concepts``) instead of
from passages: the largest themes, or, when the question names concepts, the communities
that hold them first. ``--method auto`` goes there only when the index has themes and the
question is broad (``ragkit.concepts.broad``); otherwise it chooses as before
(``search.resolve_method``). ``ragkit search`` and ``ragkit ask --pipeline lexical`` call
``route`` before ``retrieve``; ``ragkit eval retrieval`` ranks chunks, so it refuses the
method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..concepts.broad import BroadVerdict, broad_question
from ..concepts.communities import FILE, Communities, Community, coverage
from ..errors import InputError
from .search import concepts_dir_for

COMMUNITIES = "communities"


@lru_cache(maxsize=4)
def _load(path: str, mtime: float) -> Communities | None:
    return Communities.load(path)


def load_communities(index_dir: str | Path) -> Communities | None:
    """The index's communities (reused while the file is unchanged), or None when the index
    has no concept graph or a graph built without them."""
    folder = concepts_dir_for(index_dir)
    path = folder / FILE
    if not path.is_file():
        return None
    return _load(str(folder.resolve()), path.stat().st_mtime)


@dataclass
class Route:
    """Whether a question is answered from community summaries, and why."""

    communities: bool
    reason: str = ""
    broad: BroadVerdict | None = None


def route(method: str, question: str, communities: Communities | None, concepts=None,
          index=None) -> Route:
    """Where ``question`` goes: community summaries for ``--method communities`` (refused,
    in one line, when the index has none) and for ``--method auto`` when the index has
    themes and the question is broad; passages otherwise (``search.retrieve`` decides how).
    ``concepts``: the index's ``ConceptSearcher`` (its graph links the question);
    ``index``: the BM25 index (its syllable bigrams, for Vietnamese)."""
    if method not in (COMMUNITIES, "auto"):
        return Route(False)
    graph = getattr(concepts, "graph", None)
    if method == COMMUNITIES:
        if communities is None or graph is None:
            raise InputError(f"--method {COMMUNITIES}: this index has no concept communities "
                             "(build it with 'ragkit index build --concepts')")
        if communities.unavailable:
            raise InputError(f"--method {COMMUNITIES}: this index has no communities to answer from: "
                             f"{communities.unavailable}")
        return Route(True, "asked for", broad_question(question, graph, index))
    if communities is None or graph is None:
        return Route(False, "auto: the index has no concept communities")
    verdict = broad_question(question, graph, index)
    if not verdict.broad:
        return Route(False, f"auto: not a whole-corpus question: {verdict.reason}", verdict)
    if communities.unavailable:
        return Route(False, f"auto: a whole-corpus question, but the index has no communities to answer "
                            f"from: {communities.unavailable}", verdict)
    return Route(True, f"auto: a whole-corpus question: {verdict.reason}; the index has "
                       f"{len(communities.themes)} themes", verdict)


@dataclass
class CommunityHit:
    """One community retrieved: its score (its share of the chunks, plus the share of the
    question's linked concepts it holds) and the question's concepts it holds."""

    community: Community
    score: float
    linked: list = field(default_factory=list)

    def to_dict(self) -> dict:
        c = self.community
        return {"doc_id": f"community:{c.id}", "score": round(self.score, 6), "text": c.summary_text,
                "title": c.label, "community": c.id, "size": c.size, "chunks": c.chunks,
                "concepts": [t["concept"] for t in c.top_concepts],
                "representatives": [r["chunk_id"] for r in c.representatives],
                "summary": c.summary, "linked": self.linked}


def rank_communities(communities: Communities, verdict: BroadVerdict | None, k: int) -> list[CommunityHit]:
    """The ``k`` communities a question gets: ranked by ``linked + coverage``, where
    ``coverage`` is a community's share of the corpus's chunks (the largest themes first) and
    ``linked`` the share of the question's linked concepts (weighted by idf, ``log(N / df)``)
    it holds. A broad question links none, so it gets the largest themes; a community that
    holds a linked concept is retrieved even when it is not a theme."""
    n = max(communities.chunks, 1)
    weights: dict[int, float] = {}
    names: dict[int, list] = {}
    for s in (verdict.specific if verdict else []):
        cid = communities.community_of(s["key"]) if "key" in s else None
        if cid is None:
            continue
        weights[cid] = weights.get(cid, 0.0) + max(1e-6, math.log(n / max(s["df"], 1)))
        names.setdefault(cid, []).append(s["concept"])
    total = sum(weights.values()) or 1.0
    pool = {c.id: c for c in communities.themes}
    pool.update({cid: communities.communities[cid] for cid in weights})
    hits = [CommunityHit(c, weights.get(c.id, 0.0) / total + coverage(c, communities.chunks), names.get(c.id, []))
            for c in pool.values()]
    hits.sort(key=lambda h: (-h.score, h.community.id))
    return hits[:k]


__all__ = ["COMMUNITIES", "CommunityHit", "Route", "load_communities", "rank_communities", "route"]
