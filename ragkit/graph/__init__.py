"""Graph stores (networkx embedded, Neo4j over Bolt) behind one interface."""

from __future__ import annotations

from .base import GraphStore, WriteStats


def open_store(store: str) -> GraphStore:
    """A file path opens the embedded networkx store; ``bolt://`` / ``neo4j://`` URIs open
    Neo4j (user and password from NEO4J_USER / NEO4J_PASSWORD)."""
    if store.startswith(("bolt://", "bolt+s://", "neo4j://", "neo4j+s://")):
        from .neo4j_store import Neo4jStore

        return Neo4jStore(store)
    from .nx_store import NetworkXStore

    return NetworkXStore(store)


__all__ = ["GraphStore", "WriteStats", "open_store"]
