"""3GPP specifications: ingestion, chunking, the term dictionary, and ``open_store``, which
opens a spec store on the backend its address names (``store.GraphStore`` is what every
backend implements)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .store import GraphStore


def open_store(store: str, must_exist: bool = False) -> GraphStore:
    """A file path opens the embedded networkx store; ``bolt://`` / ``neo4j://`` URIs open
    Neo4j (user and password from NEO4J_USER / NEO4J_PASSWORD). Readers pass ``must_exist``:
    a path with no store behind it is a mistyped path, not an empty dictionary to answer from;
    builds leave it off, since they create the file."""
    from ..stores.neo4j import is_neo4j_uri

    if is_neo4j_uri(store):
        from .neo4j_store import Neo4jStore

        return Neo4jStore(store)
    from .nx_store import NetworkXStore

    if must_exist:
        from ..stores.files import require_file

        require_file(store, "build one with 'ragkit kg build'")
    return NetworkXStore(store)


__all__ = ["open_store"]
