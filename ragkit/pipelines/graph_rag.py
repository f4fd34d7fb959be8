"""Graph RAG multi-hop (seed 003) as an ``ask`` pipeline: the graph's anchors, reranked
neighbours and paths are the evidence; ``--no-llm`` answers with the end of the best path
and shows the path; with the LLM, the reranked context goes to the GGUF model and its answer
must name only entities of that context."""

from __future__ import annotations

from pathlib import Path

from ..config import LLMConfig
from ..graph.multihop import NOT_ENOUGH, GraphQueryParams, GraphRAG, display
from ..llm.base import LLM
from ..llm.grounding import check_grounding
from ..llm.postprocess import filter_think_tags
from ..profiler import Profiler
from .base import Answer, Citation, check_question

SYSTEM = ("Bạn trả lời câu hỏi CHỈ dựa trên các cạnh và đường đi của đồ thị tri thức bên dưới. "
          "Nếu thiếu dữ kiện, trả lời: 'Không đủ dữ kiện trong đồ thị để trả lời câu hỏi này.' Không bịa.")


def ask_graph(question: str, graph: GraphRAG | str | Path, *, params: GraphQueryParams | None = None,
              use_llm: bool = False, llm: LLM | None = None, llm_config: LLMConfig | None = None) -> Answer:
    question = check_question(question)
    profiler = Profiler()
    with profiler.stage("load_graph"):
        rag = graph if isinstance(graph, GraphRAG) else GraphRAG.load(graph)
    with profiler.stage("retrieval"):
        result = rag.query(question, params)
    result["stage_ms"] = result.pop("timings_ms")  # entities, anchors, neighbours, paths
    paths, neighbours = result["paths"], result["neighbours"]
    citations = [Citation(id=i + 1, doc_id=p["text"], title="path", score=p.get("score", 0.0), stage="path")
                 for i, p in enumerate(paths)]
    citations += [Citation(id=len(citations) + i + 1, doc_id=n["text"], title="edge", score=n["score"], stage="neighbour")
                  for i, n in enumerate(neighbours)]
    if result["answer"] is None:
        text = NOT_ENOUGH if result["anchors"] else \
            f"{NOT_ENOUGH} (Không tìm thấy thực thể nào của câu hỏi trong đồ thị.)"
        source = "none"
    else:
        best = paths[0]
        text = f"{display(result['answer'])} — {best['text']} [1]"
        source = "path"
        if use_llm:
            from .lexical import default_llm

            llm_config = llm_config or LLMConfig.from_env()
            model = llm or default_llm(llm_config)
            context = "\n".join([p["text"] for p in paths] + [n["text"] for n in neighbours])
            with profiler.stage("generation"):
                gen = model.chat([{"role": "system", "content": SYSTEM},
                                  {"role": "user", "content": f"ĐỒ THỊ:\n{context}\n\nCÂU HỎI: {question}"}],
                                 max_tokens=llm_config.max_tokens, temperature=0.0, seed=llm_config.seed)
            report = check_grounding(filter_think_tags(gen.text), [context], question)
            result["llm_answer"], result["grounding"] = gen.text, report.to_dict()
            if report.grounded:
                text, source = filter_think_tags(gen.text), "llm"
            else:
                source = "path_fallback"
    result["answer_source"] = source
    return Answer(question=question, pipeline="graph", answer=text, citations=citations,
                  trace=result, timings_ms=profiler.as_dict())
