"""Notebook ``01_kg_builder``: build the spec knowledge graph and look at a term's neighbourhood."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..errors import InputError
from .checks import check_type


# ----------------------------------------------------------------------- 01 KG builder / 02 terms
@dataclass(frozen=True)
class KGParams:
    """Parameters of ``01_kg_builder`` and ``02_term_extraction``."""

    specs: str = "../data/specs/demo_5gc.md,../data/specs/demo_vocab.md"  # comma-separated paths
    store: str = "../outputs/kg/demo.json.gz"  # a file (networkx) or bolt://host:port
    neo4j_uri: str = ""                        # when set, used instead of ``store``
    term: str = "AMF"

    def __post_init__(self) -> None:
        for name in ("specs", "store", "neo4j_uri", "term"):
            check_type(name, getattr(self, name), str)
        if not self.spec_paths:
            raise InputError("parameter specs: give at least one spec path")

    @property
    def spec_paths(self) -> list[str]:
        return [p.strip() for p in self.specs.split(",") if p.strip()]

    @property
    def store_uri(self) -> str:
        return self.neo4j_uri or self.store


def build_kg(p: KGParams) -> dict:
    """Parse the specs and write them into the store; the build summary."""
    from ..specs.store import open_store
    from ..specs.build import build_kg as _build

    with open_store(p.store_uri) as store:
        return _build(p.spec_paths, store, progress=False)


def kg_summary(summary: dict) -> pd.DataFrame:
    """Nodes and relationships in the store after the build."""
    return pd.DataFrame({"count": summary["counts"]}).rename_axis("label / type")


def term_neighbourhood(p: KGParams) -> pd.DataFrame:
    """The documents each expansion of ``p.term`` is DEFINED_IN."""
    from ..specs.store import open_store
    from ..pipelines.spec import resolve_term

    rows = []
    with open_store(p.store_uri) as store:
        for term in resolve_term(store, p.term):
            hood = store.term_neighbourhood(term.term_id)
            for doc in hood.get("defined_in", []):
                rows.append({"abbreviation": term.abbreviation, "full_name": term.full_name,
                             "primary_spec": term.primary_spec, "defined_in": doc["spec_id"],
                             "chunks_in_doc": doc["chunks"]})
    return pd.DataFrame(rows)


def plot_term_neighbourhood(p: KGParams):
    """The term, its expansions and their documents as a small graph drawing."""
    import matplotlib.pyplot as plt
    import networkx as nx

    table = term_neighbourhood(p)
    g = nx.DiGraph()
    for row in table.itertuples():
        g.add_edge(f"{row.abbreviation}\n{row.full_name}", row.defined_in)
    fig, ax = plt.subplots(figsize=(6, 3))
    if g.number_of_nodes():
        pos = nx.spring_layout(g, seed=1)
        nx.draw_networkx(g, pos, ax=ax, node_color="#DD8452", node_size=900, font_size=7, arrows=True)
    ax.set_title(f"{p.term}: DEFINED_IN")
    ax.axis("off")
    fig.tight_layout()
    plt.close(fig)
    return fig
