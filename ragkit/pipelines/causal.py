"""Causal explanations (seed 000): question → entities → candidate subgraph → chains →
condition checks → answer (template or GGUF) → anti-hallucination check."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..causal.chains import ChainConfig, extract_entities, question_categories, select_chains, supporting_factors
from ..causal.chains import Chain
from ..causal.conditions import (CHECKABLE, NOT_CHECKABLE_VI, check_condition, empirical_support,
                                 expected_direction, load_weather)
from ..causal.explain import direction, hallucinations, prompt_messages, template_answer
from ..causal.kg import EvidenceKG, load_kg
from ..config import LLMConfig
from ..llm.base import LLM
from ..llm.postprocess import filter_think_tags
from ..profiler import Profiler
from .base import Answer, Citation, check_question


def _cond(c: dict) -> str:
    return f"{c['variable']} {c['op']} {c['value']}{(' ' + c['unit']) if c.get('unit') else ''}"


def explain(question: str, kg: EvidenceKG | str | Path, *, weather=None, at=None,
            config: ChainConfig | None = None, use_llm: bool = False, llm: LLM | None = None,
            llm_config: LLMConfig | None = None) -> Answer:
    """Explain why PM2.5 behaves as the question asks, from the evidence KG only."""
    question = check_question(question)
    profiler = Profiler()
    with profiler.stage("load_kg"):
        kg = kg if isinstance(kg, EvidenceKG) else load_kg(kg)
        if weather is not None and not hasattr(weather, "columns"):
            weather = load_weather(weather)
    with profiler.stage("entities"):
        entities = extract_entities(kg, question)
        config = config or ChainConfig()
        categories = question_categories(question)
    with profiler.stage("chains"):
        chains, focus, sub = select_chains(kg, entities, replace(config, categories=categories)
                                           if categories else config)
        if not chains and categories:  # a category word must not empty the answer
            chains, focus, sub = select_chains(kg, entities, config)
        factors = supporting_factors(kg, sub, chains, focus, config)
    with profiler.stage("conditions"):
        checks, uncertainties, seen = [], [], set()
        for chain in chains:
            for edge in chain.edges:
                for cond in edge.get("conditions", []):
                    key = _cond(cond)
                    if key in seen:
                        continue
                    seen.add(key)
                    check = check_condition(cond, weather, at)
                    checks.append({**check.to_dict(), "edge": f"{edge['source']}->{edge['target']}"})
                    mech = f"{kg.label(edge['source'])} → {kg.label(edge['target'])}"
                    if check.status == "not_checkable":
                        what = NOT_CHECKABLE_VI.get(cond["variable"], cond["variable"])
                        uncertainties.append(f"Hiện chưa kiểm tra được {what}; cơ chế '{mech}' thường mạnh khi {key}.")
                    elif check.status == "no_data":
                        uncertainties.append(f"Hiện chưa có dữ liệu theo giờ để kiểm tra {key}; "
                                             f"cơ chế '{mech}' thường mạnh khi điều kiện này thỏa.")
                    elif check.status == "fails":
                        uncertainties.append(f"Điều kiện {key} hiện không thỏa (đo được {check.to_dict()['observed']} "
                                             f"lúc {check.at}); cơ chế '{mech}' có thể yếu lúc này.")
        empirical = []
        if weather is not None:
            for i, chain in enumerate(chains, 1):
                empirical.append({"chain": i, "checks": chain_empirical(chain, weather)})
    template = template_answer(kg, chains, factors, uncertainties)
    trace = {"entities": entities, "focus": focus, "categories": list(categories),
             "selected_chains": [c.to_dict() for c in chains], "supporting_factors": factors,
             "uncertainties": uncertainties, "condition_checks": checks, "empirical": empirical,
             "subgraph": {"nodes": sub.number_of_nodes(), "edges": sub.number_of_edges()}}
    answer = template
    if use_llm and chains:
        from ..llm.backends import default_llm

        llm_config = llm_config or LLMConfig.from_env()
        model = llm or default_llm(llm_config)
        with profiler.stage("generation"):
            gen = model.chat(prompt_messages(question, kg, chains, uncertainties),
                             max_tokens=llm_config.max_tokens, temperature=llm_config.temperature,
                             seed=llm_config.seed)
        with profiler.stage("postprocessing"):
            text = filter_think_tags(gen.text)
            problems = hallucinations(text, kg, chains, factors, uncertainties, question)
        trace.update({"llm_answer": text, "hallucinations": problems})
        if problems or not text.strip():
            trace["answer_source"] = "template_fallback"
        else:
            answer, trace["answer_source"] = text, "llm"
    else:
        trace["answer_source"] = "template"
    trace.setdefault("hallucinations", hallucinations(answer, kg, chains, factors, uncertainties, question))
    citations, seen_refs = [], set()
    for chain in chains:
        for edge in chain.edges:
            for ev in edge["evidence"]:
                ref = ev.get("source_doi") or ev.get("source_url")
                if ref not in seen_refs:
                    seen_refs.add(ref)
                    citations.append(Citation(id=len(citations) + 1, doc_id=ref, title=ev.get("source_quote", "")[:120],
                                              source=ev.get("source_url", ""),
                                              entity=f"{edge['source']}->{edge['target']}", stage="chain"))
    return Answer(question=question, pipeline="causal", answer=answer, citations=citations,
                  trace=trace, timings_ms=profiler.as_dict())


def chain_empirical(chain, weather) -> list[dict]:
    """Each distinct checkable condition of the chain, tested on the series in the
    direction the chain implies for it."""
    out, seen = [], set()
    for i, edge in enumerate(chain.edges):
        for cond in edge.get("conditions", []):
            key = _cond(cond)
            if key in seen or cond["variable"] not in CHECKABLE:
                continue
            seen.add(key)
            # The variable's effect on PM2.5: from its own node when it is in the chain,
            # else from the edge that carries the condition.
            start = chain.nodes.index(cond["variable"]) if cond["variable"] in chain.nodes[:-1] else i
            effect = direction(Chain(chain.nodes[start:], chain.edges[start:], 0.0))
            out.append(empirical_support([cond], expected_direction(cond, effect), weather))
    return out


def explain_json(answer: Answer) -> dict:
    """The contract of ``ragkit explain --json``."""
    t = answer.trace
    return {"question": answer.question, "selected_chains": t["selected_chains"],
            "supporting_factors": t["supporting_factors"], "uncertainties": t["uncertainties"],
            "condition_checks": t["condition_checks"], "empirical": t["empirical"],
            "entities": t["entities"], "answer": answer.answer, "timings_ms": answer.timings_ms}
