"""An index's communities, found in the concept graph just saved in ``<index>/concepts/`` and
saved beside it (``retrieval.build.build_index`` builds the graph, then calls
``save_communities``), and what a build says about them."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..corpus import Doc
from .communities import Communities, detect_communities
from .graph import ConceptGraph


def save_communities(graph: ConceptGraph, docs: Sequence[Doc], folder: str | Path) -> tuple[Communities, dict]:
    """Find the communities of a graph just saved in ``folder``, save them beside it, and say
    what was found (``communities_report``)."""
    communities = detect_communities(graph, {d.doc_id: d.text for d in docs})
    communities.save(folder)
    return communities, communities_report(communities)


def communities_report(communities: Communities) -> dict:
    """What a build says about its communities."""
    themes = communities.themes
    return {"communities": len(communities.communities), "themes": len(themes),
            "min_chunks": communities.meta.get("min_chunks"),
            "largest": [{"id": c.id, "chunks": c.chunks, "concepts": c.size} for c in themes[:5]],
            "modularity": communities.meta.get("modularity"), "seconds": communities.meta.get("seconds"),
            "unavailable": communities.unavailable}
