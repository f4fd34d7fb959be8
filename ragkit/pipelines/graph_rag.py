"""Graph RAG multi-hop (seed 003) as an ``ask`` pipeline: the graph's anchors, reranked
neighbours and paths are the evidence; ``--no-llm`` answers with the end of the best path
and shows the path; with the LLM, the model first lists the question's entities (the seed's
prompt; names the question does not contain are dropped, and the rule matcher's names come
first), then writes the answer from the reranked context, which must name only entities of
that context."""

from __future__ import annotations

import re
from pathlib import Path

from ..config import LLMConfig
from ..graph.multihop import NOT_ENOUGH, GraphQueryParams, GraphRAG, display
from ..llm.base import LLM
from ..llm.grounding import check_grounding
from ..llm.postprocess import filter_think_tags
from ..profiler import Profiler
from .base import Answer, Citation, check_question

# The seed's entity prompt: proper nouns of the question only, comma-separated, no talk.
ENTITY_SYSTEM = ("Bạn là bộ trích xuất thực thể. Chỉ liệt kê các danh từ riêng (người, tổ chức, địa danh) "
                 "xuất hiện nguyên văn trong câu hỏi. Không hội thoại, không giải thích, không đoán thêm. "
                 "Nếu có nhiều thực thể, cách nhau bằng dấu phẩy. Nếu không có, trả lời: KHÔNG")


def llm_entities(question: str, model: LLM, llm_config: LLMConfig) -> tuple[list[str], str]:
    """The model's entity list for ``question`` (raw text too, for the trace)."""
    gen = model.chat([{"role": "system", "content": ENTITY_SYSTEM},
                      {"role": "user", "content": f"Câu hỏi: {question}\nThực thể:"}],
                     max_tokens=48, temperature=0.0, seed=llm_config.seed)
    text = filter_think_tags(gen.text).strip()
    first = text.splitlines()[0] if text else ""
    return [p.strip(" .:\"'`*-") for p in re.split(r"[,;]", first) if p.strip(" .:\"'`*-")], gen.text


SYSTEM = ("Bạn trả lời câu hỏi CHỈ dựa trên các cạnh và đường đi của đồ thị tri thức bên dưới. "
          "Nếu thiếu dữ kiện, trả lời: 'Không đủ dữ kiện trong đồ thị để trả lời câu hỏi này.' Không bịa.")


def ask_graph(question: str, graph: GraphRAG | str | Path, *, params: GraphQueryParams | None = None,
              use_llm: bool = False, llm: LLM | None = None, llm_config: LLMConfig | None = None) -> Answer:
    question = check_question(question)
    profiler = Profiler()
    with profiler.stage("load_graph"):
        rag = graph if isinstance(graph, GraphRAG) else GraphRAG.load(graph)
    proposed, raw_entities = None, None
    if use_llm:
        from ..llm.backends import default_llm

        llm_config = llm_config or LLMConfig.from_env()
        model = llm or default_llm(llm_config)
        with profiler.stage("entity_extraction"):
            proposed, raw_entities = llm_entities(question, model, llm_config)
    with profiler.stage("retrieval"):
        result = rag.query(question, params, more_entities=proposed)
    if use_llm:
        result["llm_entities"] = {"raw": raw_entities, "proposed": proposed}
    result["stage_ms"] = result.pop("timings_ms")  # entities, anchors, neighbours, paths
    paths, neighbours = result["paths"], result["neighbours"]
    # A citation is a path or an edge of the graph; its source is what edges.csv says of it
    # (extra columns such as a source note), else the graph folder.
    where = str(rag.directory)
    citations = [Citation(id=i + 1, doc_id=p["text"], title=p["text"], source="; ".join(p["evidence"]) or where,
                          score=p.get("score", 0.0), stage="path") for i, p in enumerate(paths)]
    citations += [Citation(id=len(citations) + i + 1, doc_id=n["text"], title=n["text"],
                           source="; ".join(n["evidence"]) or where, score=n["score"], stage="neighbour")
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
