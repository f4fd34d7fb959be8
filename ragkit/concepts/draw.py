"""The part of the concept graph a question's walk used, and a drawing of it.

``walk_subgraph`` chooses the nodes (pure networkx, no drawing): the question's concepts,
the top chunks the walk ranked, the concepts that brought each of them in (their
``bridge``), and any seed passage leading to one of them; with the MENTIONS and CO_OCCURS
edges among them.
A bridge concept that is not one of the question's own is what the walk added: the
second hop ("Zimbabwe" between the Bubye River and Victoria Falls).

``draw_walk`` draws it with matplotlib and returns the figure, in three columns
(``walk_layout``): the question's concepts (orange), the concepts the walk reached (bridge
concepts in red), the chunks (blue, labelled with their rank).
"""

from __future__ import annotations

from typing import Sequence

from ..runtime.extras import requires_extra

ROLE_COLOURS = {"question": "#DD8452", "bridge": "#C44E52", "concept": "#CCCCCC",
                "ranked": "#4C72B0", "seed passage": "#8FAADC"}


def walk_subgraph(searcher, question: str, base: Sequence[tuple[str, float]] = (), *, chunks: int = 3):
    """The subgraph of ``question``'s walk (``ConceptSearcher.rank`` seeded from ``base``):
    a networkx Graph whose nodes ``concept:<key>`` and ``chunk:<id>`` carry ``kind``,
    ``label``, ``role`` (question, bridge, concept; ranked, seed passage), ``mass`` (the
    PageRank mass) and, for ranked chunks, ``rank``; ``graph["question"]`` holds the
    question and ``graph["bridges"]`` the bridge of each ranked chunk. Empty when nothing of
    the question links to the graph and ``base`` is empty."""
    import networkx as nx

    graph = searcher.graph
    ranked, seeds, walk = searcher.rank(question, base, k=chunks)
    g = nx.Graph(question=question, bridges={})
    if walk is None:
        return g
    mass = walk.mass
    m = len(graph.keys)

    def add_concept(c: int, role: str) -> None:
        node = f"concept:{graph.keys[c]}"
        if node in g and g.nodes[node]["role"] in ("question", "bridge"):
            return
        g.add_node(node, kind="concept", label=graph.labels[c], role=role, mass=float(mass[c]))

    for c in sorted(walk.seed_concepts):
        add_concept(c, "question")
    for rank, (doc_id, _) in enumerate(ranked, 1):
        row = graph.chunk_position[doc_id]
        g.add_node(f"chunk:{doc_id}", kind="chunk", label=f"{rank}. {doc_id}", role="ranked", rank=rank,
                   mass=float(mass[m + row]))
        bridge = searcher.bridge(walk, doc_id)
        g.graph["bridges"][doc_id] = bridge
        for b in bridge:
            c = graph.concept_of(_key_of(graph, b["concept"]))
            if c is not None:
                add_concept(c, "question" if c in walk.seed_concepts else "bridge")
    for row in sorted(walk.seed_rows):
        doc_id = graph.chunk_ids[row]
        held = set(graph.concepts_of_chunk(row).tolist())
        # A seed passage is shown when it leads to a concept shown (else it only adds clutter).
        if f"chunk:{doc_id}" not in g and any(graph.concept_of(n.split(":", 1)[1]) in held
                                              for n in g if n.startswith("concept:")):
            g.add_node(f"chunk:{doc_id}", kind="chunk", label=doc_id, role="seed passage",
                       mass=float(mass[m + row]))
    concepts = {n: graph.position[n.split(":", 1)[1]] for n, d in g.nodes(data=True) if d["kind"] == "concept"}
    for node, data in list(g.nodes(data=True)):
        if data["kind"] != "chunk":
            continue
        row = graph.chunk_position[node.split(":", 1)[1]]
        held = set(graph.concepts_of_chunk(row).tolist())
        g.add_edges_from((node, c, {"relation": "MENTIONS"}) for c, i in concepts.items() if i in held)
    for a, i in concepts.items():
        for b, j in concepts.items():
            w = graph.cooccurs[i, j]
            if a < b and w > 0:
                g.add_edge(a, b, relation="CO_OCCURS", weight=round(float(w), 6))
    return g


def _key_of(graph, label: str) -> str:
    """A concept's key from its label (the bridge names concepts by label)."""
    from .extract import concept_key

    key = concept_key(label)
    if key in graph.position:
        return key
    return next((k for k, text in zip(graph.keys, graph.labels) if text == label), key)


def walk_layout(g) -> dict:
    """Positions in three columns, read left to right as the walk goes: the question's
    concepts, the concepts it reached, the chunks (ranked ones first, in rank order). In
    each column a node sits near the chunks it leads to, so few edges cross."""
    chunks = sorted((n for n, d in g.nodes(data=True) if d["kind"] == "chunk"),
                    key=lambda n: (g.nodes[n].get("rank", 10**6), n))
    place = {n: i for i, n in enumerate(chunks)}

    def order(n: str) -> tuple:
        reached = sorted(place[m] for m in g.neighbors(n) if m in place)
        return (sum(reached) / len(reached) if reached else len(place), n)

    columns = [sorted((n for n, d in g.nodes(data=True) if d["kind"] == "concept" and d["role"] == "question"),
                      key=order),
               sorted((n for n, d in g.nodes(data=True) if d["kind"] == "concept" and d["role"] != "question"),
                      key=order),
               chunks]
    pos = {}
    for x, column in enumerate(columns):
        for i, n in enumerate(column):
            pos[n] = (float(x), 1.0 - (i + 1) / (len(column) + 1))
    return pos


def draw_walk(g, *, ax=None, title: str | None = None, width: float = 9, height: float = 5):
    """A drawing of ``walk_subgraph``'s graph in ``walk_layout``'s columns: each node a box
    with its label, coloured by its role; MENTIONS edges solid, CO_OCCURS dashed. Returns the
    matplotlib figure."""
    import networkx as nx

    with requires_extra("notebooks"):
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch

    if ax is None:
        fig, ax = plt.subplots(figsize=(width, height))
    else:
        fig = ax.figure
    ax.axis("off")
    ax.set_title(title if title is not None else g.graph.get("question", ""), fontsize=10)
    if not g.number_of_nodes():
        ax.text(0.5, 0.5, "nothing of the question links to the graph", ha="center", va="center")
        plt.close(fig)
        return fig
    pos = walk_layout(g)
    edges = sorted((min(a, b), max(a, b), d["relation"]) for a, b, d in g.edges(data=True))
    for relation, style, colour in (("MENTIONS", "solid", "#7F9CC9"), ("CO_OCCURS", "dashed", "#888888")):
        chosen = [(a, b) for a, b, r in edges if r == relation]
        nx.draw_networkx_edges(g, pos, edgelist=chosen, ax=ax, style=style, edge_color=colour, width=1.1,
                               node_size=0, arrows=False)
    for node in sorted(g.nodes):
        data = g.nodes[node]
        x, y = pos[node]
        ax.text(x, y, _short(data["label"]), ha="center", va="center", fontsize=7.5, zorder=3,
                bbox={"boxstyle": "round,pad=0.35" if data["kind"] == "concept" else "square,pad=0.35",
                      "facecolor": ROLE_COLOURS[data["role"]], "edgecolor": "#333333", "linewidth": 0.6})
    for x, head in enumerate(("question's concepts", "concepts reached", "chunks")):
        ax.text(x, 1.0, head, ha="center", va="bottom", fontsize=8, color="#555555")
    roles = [r for r in ROLE_COLOURS if any(d["role"] == r for _, d in g.nodes(data=True))]
    names = {"question": "question concept", "bridge": "bridge concept", "concept": "concept",
             "ranked": "ranked chunk", "seed passage": "seed passage"}
    handles = [Patch(facecolor=ROLE_COLOURS[r], edgecolor="#333333", label=names[r]) for r in roles]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=len(handles),
              fontsize=7.5, frameon=False)
    ax.set_xlim(-0.5, 2.5)
    ax.set_ylim(-0.05, 1.08)
    fig.tight_layout()
    plt.close(fig)
    return fig


def _short(label: str, width: int = 18) -> str:
    """A label wrapped onto three lines at most, so that nodes stay readable."""
    if len(label) <= width:
        return label
    words, lines, line = label.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    return "\n".join(lines[:3]) + ("…" if len(lines) > 3 else "")


__all__ = ["walk_subgraph", "walk_layout", "draw_walk", "ROLE_COLOURS"]
