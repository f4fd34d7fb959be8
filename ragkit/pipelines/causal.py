"""Causal explanations: question → entities → candidate subgraph → chains →
condition checks → answer (template or GGUF) → anti-hallucination check."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..answer.stage import Check, Draft
from ..config import CausalConfig, ChainConfig, LLMConfig
from ..errors import InputError
from ..llm.base import LLM
from .base import Answer, AskContext, Citation, Gathered, Option, Pipeline, Source, Sources, Trace

if TYPE_CHECKING:
    from ..causal.chains import Chain
    from ..causal.kg import EvidenceKG
    from ..causal.records import ChainMeasured, EmpiricalSupport, Factor

# The evidence KG and its chains (networkx) and the condition checks (pandas) are imported
# when a question is asked, not when the pipeline is declared: ``ragkit ask`` with another
# pipeline pays nothing for them.


def _cond(c: dict) -> str:
    return f"{c['variable']} {c['op']} {c['value']}{(' ' + c['unit']) if c.get('unit') else ''}"


@dataclass
class CausalTrace(Trace):
    """How a causal answer was made: the question's entities, focus and asked direction, the
    selected chains with their evidence, supporting and opposing factors, condition checks
    and what stays uncertain."""

    entities: list = field(default_factory=list)
    asked_direction: dict = field(default_factory=dict)
    focus: Any = None
    categories: list = field(default_factory=list)
    selected_chains: list = field(default_factory=list)
    supporting_factors: list[Factor] = field(default_factory=list)
    opposing_factors: list = field(default_factory=list)
    uncertainties: list = field(default_factory=list)
    condition_checks: list = field(default_factory=list)
    empirical: list[ChainMeasured] = field(default_factory=list)
    subgraph: dict = field(default_factory=dict)


class CausalPipeline(Pipeline):
    """Causal chains behind PM2.5 from an evidence KG, with condition checks."""

    name = "causal"
    sources = (Source("evidence_kg", "--kg", "an evidence KG file", "data/merged_knowledge_graph.json",
                      aliases=("kg",)),
               Source("weather", "--weather", "a weather CSV for condition checks", "hourly rows with a time column"))
    options = (Option("at", str, None, "the time to check conditions for, a local date and time "
                                       "(default: the last row)"),)
    sample_questions = ("Vì sao PM2.5 tăng khi độ ẩm cao?", "Why does PM2.5 rise when the wind is weak?")
    size_unit, sizes = "edges", (100, 1000, 5000)

    def build_demo(self, data: Path, out: Path, progress: bool | None = None) -> dict[str, str]:
        """The demo evidence KG, read where it is."""
        return {"evidence_kg": str(data / "merged_knowledge_graph.json")}

    def build_sized(self, size: int, data: Path, workdir: Path) -> tuple[dict[str, str], tuple[str, ...]]:
        """The demo evidence KG grown to about ``size`` edges with invented factors."""
        from ..testing.generated import generated_evidence_kg

        kg = generated_evidence_kg(size, data / "merged_knowledge_graph.json", workdir / f"evidence-{size}.json")
        return {"evidence_kg": str(kg)}, self.sample_questions

    def validate(self, request) -> None:
        if request.at is None:
            return
        import pandas as pd

        try:
            at = pd.Timestamp(request.at)
        except (ValueError, TypeError):
            raise InputError(f"at: not a date and time, got {request.at!r}") from None
        if at is pd.NaT or at.tzinfo is not None:
            raise InputError(f"at: must be a local date and time without a time zone, got {request.at!r}")

    def load(self, where: str, sources: Sources):
        from ..causal.conditions import load_weather
        from ..causal.kg import load_kg

        return load_kg(where), (load_weather(sources.weather) if sources.weather else None)

    def close(self, loaded) -> None:
        pass

    def config_from(self, request) -> CausalConfig:
        return CausalConfig(at=request.at)

    def gather(self, question: str, source, query: "CausalConfig | None", ctx: AskContext) -> Gathered:
        from ..causal.chains import (analyse_question, opposing_factors, pick_chains,
                                     question_categories, rank_chains, split_by_direction, supporting_factors)
        from ..causal.explain import hallucinations, prompt_messages, sources, template_answer
        from ..llm.budget import first_fitting

        kg, weather = source
        query = query or CausalConfig()
        profiler = ctx.profiler
        with profiler.stage("entities"):
            entities, asked = analyse_question(kg, question)
            config = query.chains or ChainConfig()
            categories = question_categories(question)
        with profiler.stage("chains"):
            ranked, focus, sub = rank_chains(kg, entities, replace(config, categories=categories)
                                             if categories else config)
            if not ranked and categories:  # a category word must not empty the answer
                ranked, focus, sub = rank_chains(kg, entities, config)
            agree, against = split_by_direction(ranked, asked)
            chains = pick_chains(agree, config.max_chains)
            factors = supporting_factors(kg, sub, chains, focus, config, asked)
            opposing = opposing_factors(sub, against, chains, focus, config, asked)
        with profiler.stage("conditions"):
            checks, uncertainties = condition_checks(kg, chains, weather, query.at)
            empirical: list[ChainMeasured] = [{"chain": i, "checks": chain_empirical(chain, weather)}
                         for i, chain in enumerate(chains, 1)] if weather is not None else []
        trace = CausalTrace(entities=entities, asked_direction=asked.to_dict(), focus=focus,
                            categories=list(categories), selected_chains=[c.to_dict() for c in chains],
                            supporting_factors=factors, opposing_factors=[c.to_dict() for c in opposing],
                            uncertainties=uncertainties, condition_checks=checks, empirical=empirical,
                            subgraph={"nodes": sub.number_of_nodes(), "edges": sub.number_of_edges()})

        def check(text: str) -> Check:
            problems = hallucinations(text, kg, chains, factors, uncertainties, question, opposing)
            return Check(not problems, "; ".join(problems), {"problems": problems})

        window = ctx.llm_config.n_ctx - ctx.llm_config.max_tokens

        def prompt(model) -> tuple[list[dict], None]:
            """The chains, factors and measurements, fitted to the model's window: while the
            prompt is too long, the opposing chains go, then the last chain (with its
            measurements), down to the strongest one. The check still reads them all."""
            numbered = sources(chains, factors, opposing=opposing)     # the citations' numbers

            def fewer():
                shown = [(len(chains), opposing)] * bool(opposing) + [(n, ()) for n in range(len(chains), 0, -1)]
                for n, against in shown:        # empirical: one measurement per chain, in order
                    yield prompt_messages(question, kg, chains[:n], uncertainties, against, factors,
                                          empirical[:n], numbered), None

            return first_fitting(fewer(), model.count_tokens, window)

        draft = Draft(evidence_answer=template_answer(kg, chains, factors, uncertainties, opposing, asked),
                      check=check, prompt=prompt if chains else None, language="vi",
                      evidence=[json.dumps([trace.selected_chains, factors, trace.opposing_factors, uncertainties],
                                           ensure_ascii=False)])
        return Gathered(draft, source_citations(chains, factors, opposing), trace)


def condition_checks(kg: EvidenceKG, chains: list[Chain], weather, at) -> tuple[list[dict], list[str]]:
    """Every distinct condition on the chains' edges checked against the weather (or marked
    not checkable / no data), and the uncertainty sentence each open condition adds."""
    from ..causal.conditions import NOT_CHECKABLE_VI, check_condition

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
    return checks, uncertainties


def source_citations(chains: list[Chain], factors: list[Factor], opposing: list[Chain]) -> list[Citation]:
    """One citation per distinct source (DOI, else URL), numbered as the answer numbers its
    sources (``explain.sources``): chains, then supporting factors, then opposing chains."""
    from ..causal.explain import source_evidence

    citations: list[Citation] = []
    seen: set[str] = set()
    for ref, ev, backs, stage in source_evidence(chains, factors, opposing):
        if ref and ref not in seen:
            seen.add(ref)
            citations.append(Citation(id=len(citations) + 1, doc_id=ev.get("source_doi") or ref,
                                      title=ev.get("source_quote", "")[:120], source=ev.get("source_url", ""),
                                      entity=backs, stage=stage))
    return citations


def explain(question: str, kg: EvidenceKG | str | Path, *, weather=None, at=None,
            config: ChainConfig | None = None, use_llm: bool = True, llm: LLM | None = None,
            llm_config: LLMConfig | None = None) -> Answer:
    """Explain why PM2.5 behaves as the question asks, from the evidence KG only."""
    from ..causal.conditions import load_weather
    from ..causal.kg import EvidenceKG, load_kg

    ctx = AskContext(llm_config, use_llm, llm)
    with ctx.profiler.stage("load_kg"):
        kg = kg if isinstance(kg, EvidenceKG) else load_kg(kg)
        if weather is not None and not hasattr(weather, "columns"):
            weather = load_weather(weather)
    return CausalPipeline().ask(question, (kg, weather), CausalConfig(at=at, chains=config), ctx)


def chain_empirical(chain, weather) -> list[EmpiricalSupport]:
    """Each distinct checkable condition of the chain, tested on the series in the
    direction the chain implies for it."""
    from ..causal.chains import Chain
    from ..causal.conditions import CHECKABLE, empirical_support, expected_direction
    from ..causal.explain import direction

    out: list[EmpiricalSupport] = []
    seen: set[str] = set()
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
            if not effect:   # an unsigned relation on the way: no direction to test
                out.append({"conditions": [key], "verdict": "no_direction"})
                continue
            out.append(empirical_support([cond], expected_direction(cond, effect), weather))
    return out


def explain_json(answer: Answer) -> dict:
    """The contract of ``ragkit explain --json``."""
    t = answer.trace
    if not isinstance(t, CausalTrace):
        raise TypeError(f"not a causal pipeline's answer: its trace is a {type(t).__name__}")
    return {"question": answer.question, "selected_chains": t.selected_chains,
            "supporting_factors": t.supporting_factors, "opposing_factors": t.opposing_factors,
            "asked_direction": t.asked_direction, "uncertainties": t.uncertainties,
            "condition_checks": t.condition_checks, "empirical": t.empirical,
            "entities": t.entities, "answer": answer.answer, "answer_source": t.answer_source,
            "check": t.check.to_dict() if t.check else None, "timings_ms": answer.timings_ms}
