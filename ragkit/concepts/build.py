"""An index's concepts folder, built in one step: the concept graph (``graph``), then its
communities (``communities``), both saved in ``<index>/concepts/``. ``ragkit index build
--concepts`` (and ``graph build --corpus``) builds the graph its own way (a Neo4j store, label
vectors) and then calls ``save_communities``; the notebooks call ``build_concepts``."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from ..corpus import Doc
from .communities import Communities, detect_communities
from .graph import ConceptGraph, read_extractions


def build_concepts(docs: Sequence[Doc], folder: str | Path, *, progress: bool | None = None,
                   what: str = "corpus") -> tuple[ConceptGraph, Communities, dict]:
    """Build (re-extracting only the chunks whose text changed since the folder's last
    build) and save the graph and its communities; returns them and the build report
    (``ConceptGraphReport``'s fields, and ``communities``: ``save_communities``'s report)."""
    graph, rows, report = ConceptGraph.build(docs, previous=read_extractions(folder), progress=progress,
                                             what=what)
    graph.save(folder, rows)
    communities, info = save_communities(graph, docs, folder)
    return graph, communities, {**asdict(report), "communities": info}


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
