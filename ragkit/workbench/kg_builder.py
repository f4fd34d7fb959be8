"""Notebook ``01_kg_builder``: build the spec knowledge graph and look at a term's neighbourhood."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..errors import InputError
from ..runtime.extras import requires_extra
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
    from ..specs import open_store
    from ..specs.build import build_kg as _build

    with open_store(p.store_uri) as store:
        return _build(p.spec_paths, store)


def kg_summary(summary: dict) -> pd.DataFrame:
    """Nodes and relationships in the store after the build."""
    return pd.DataFrame({"count": summary["counts"]}).rename_axis("label / type")


def term_neighbourhood(p: KGParams) -> pd.DataFrame:
    """The documents each expansion of ``p.term`` is DEFINED_IN."""
    from ..specs import open_store
    from ..specs.evidence import resolve_term

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
    import networkx as nx

    with requires_extra("notebooks"):
        import matplotlib.pyplot as plt

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


# ----------------------------------------------------------------------- 01 graph from text
@dataclass(frozen=True)
class TextGraphParams:
    """Parameters of ``01_kg_builder``'s graph from text: a concept graph and its communities
    built from documents without a model (``ragkit index build --concepts``)."""

    corpus: str = "../data/specs"                       # documents folder or BEIR corpus.jsonl
    index_dir: str = "../outputs/index/specs-concepts"  # the index with its concepts folder
    question: str = "Through which function does the SCP discover a suitable producer?"
    broad_question: str = "What are the main topics of these documents?"

    def __post_init__(self) -> None:
        for name in ("corpus", "index_dir", "question", "broad_question"):
            check_type(name, getattr(self, name), str)
        for name in ("question", "broad_question"):
            if not getattr(self, name).strip():
                raise InputError(f"parameter {name}: must not be empty")


def build_text_graph(p: TextGraphParams) -> dict:
    """Index the documents (BM25) with their concept graph and communities, as ``ragkit
    index build --corpus CORPUS --out INDEX_DIR --concepts`` does; what was built."""
    from ..retrieval.build import IndexSpec, build_index

    concepts = build_index(IndexSpec(corpus=p.corpus, out=p.index_dir, concepts=True)).concepts or {}
    return {"chunks": concepts["chunks"], "concepts": concepts["concepts"], "hubs": concepts["hubs"],
            "mentions": concepts["mentions"], "co-occurrences": concepts["cooccurrences"],
            "communities": concepts["communities"]["communities"], "themes": concepts["communities"]["themes"]}


def concept_counts(summary: dict) -> pd.DataFrame:
    """What the graph from text holds, one count a row."""
    return pd.DataFrame({"count": summary}).rename_axis("graph from text")


def communities_table(p: TextGraphParams, n: int = 6) -> pd.DataFrame:
    """The ``n`` largest communities: how many chunks they are home to, their concepts, top
    concepts, representative chunks and the first sentence of their summary."""
    from ..retrieval.community_search import load_communities

    communities = load_communities(p.index_dir)
    if communities is None:
        raise InputError(f"index {p.index_dir}: no concept communities (build it with --concepts)")
    rows = [{"community": c.id, "chunks": c.chunks, "concepts": c.size,
             "top concepts": ", ".join(t["concept"] for t in c.top_concepts[:4]),
             "representative chunks": ", ".join(r["chunk_id"] for r in c.representatives),
             "summary (first sentence)": c.summary[0]["text"] if c.summary else ""}
            for c in communities.communities[:n]]
    return pd.DataFrame(rows).set_index("community")


def ask_about_everything(p: TextGraphParams):
    """``p.broad_question`` asked with ``--method auto`` and no model: a question about the
    whole corpus, answered from the community summaries."""
    from ..config import LexicalConfig
    from ..pipelines.lexical import ask_lexical

    return ask_lexical(p.broad_question, p.index_dir, config=LexicalConfig(method="auto", k=3), use_llm=False)


def walk_table(p: TextGraphParams, chunks: int = 3) -> pd.DataFrame:
    """The chunks ``p.question``'s walk ranks first, each with the concepts that brought it in
    and the edges the walk took to them."""
    g = _walk(p, chunks)
    rows = [{"rank": rank, "chunk": doc_id, "concept": b["concept"], "via": " ; ".join(b["via"])}
            for rank, (doc_id, bridge) in enumerate(g.graph["bridges"].items(), 1) for b in bridge]
    return pd.DataFrame(rows).set_index(["rank", "chunk"])


def plot_walk(p: TextGraphParams, chunks: int = 3):
    """A drawing of the part of the graph ``p.question``'s walk used, bridge concepts in red."""
    from ..concepts.draw import draw_walk

    return draw_walk(_walk(p, chunks))


def _walk(p: TextGraphParams, chunks: int):
    """``p.question``'s walk subgraph, seeded like ``--method graph`` on an index without
    vectors (the question's concepts and the top five BM25 chunks)."""
    from ..concepts.draw import walk_subgraph
    from ..retrieval.search import load_concepts, load_index

    index = load_index(p.index_dir)
    searcher = load_concepts(p.index_dir)
    base = [(h.doc_id, h.score) for h in index.search(p.question, k=searcher.params.seed_passages)]
    return walk_subgraph(searcher, p.question, base, chunks=chunks)
