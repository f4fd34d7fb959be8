"""KG question answering (seed 004) as an ``ask`` pipeline: the plan, the context store and
the answer, with the graph edges behind the final results as citations."""

from __future__ import annotations

from ..config import LLMConfig
from ..kgqa.flow import KGQA, Turn, turn_from_dict
from ..kgqa.store import TypedStore, open_typed_store
from ..llm.base import LLM
from ..profiler import Profiler
from .base import Answer, Citation, check_question

MAX_CITATIONS = 20


def citations_for(result: dict, nodes: dict[str, dict]) -> list[Citation]:
    """The edges that touch a final result first, then the other edges the plan followed,
    each with its source note."""
    finals = {i["id"] for i in result["context_store"].get("final_result", [])}
    edges = result.get("edges", [])
    last = [e for e in edges if {e["source"], e["target"]} & finals]
    rest = [e for e in edges if e not in last]
    out = []
    for e in (last + rest)[:MAX_CITATIONS]:
        text = f"{nodes[e['source']]['name']} -[{e['relation']}]-> {nodes[e['target']]['name']}"
        out.append(Citation(id=len(out) + 1, doc_id=f"{e['source']} -[{e['relation']}]-> {e['target']}",
                            title=text, source=e.get("source_note", ""), stage=e["step"]))
    return out


def ask_kg(question: str, store: str | TypedStore | KGQA, *, history: list[Turn | dict] | None = None,
           use_llm: bool = False, llm: LLM | None = None, llm_config: LLMConfig | None = None,
           llm_planner: bool = False) -> Answer:
    question = check_question(question)
    profiler = Profiler()
    with profiler.stage("load_graph"):
        if isinstance(store, KGQA):
            qa = store
        else:
            qa = KGQA(open_typed_store(store) if isinstance(store, str) else store)
    llm_config = llm_config or LLMConfig.from_env()
    model = None
    if use_llm:
        from ..llm.backends import default_llm

        model = llm or default_llm(llm_config)
    turns = [t if isinstance(t, Turn) else turn_from_dict(t) for t in history or []]
    with profiler.stage("kgqa"):
        result = qa.ask(question, turns, model=model, use_llm_planner=llm_planner and use_llm,
                        max_tokens=llm_config.max_tokens)
    timings = {**result.pop("timings_ms"), **profiler.as_dict()}
    answer = result.pop("answer")
    result["history"] = [t.to_dict() for t in turns]    # with "turn", what a follow-up passes back
    return Answer(question=question, pipeline="kg", answer=answer, citations=citations_for(result, qa.nodes),
                  trace=result, timings_ms=timings)
