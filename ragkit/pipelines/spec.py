"""3GPP spec question answering: question analysis → term resolution →
multi-stage retrieval → evidence → answer → grounding check.

Definition questions ("What is SCP in 5G Core?") run these stages in order:
1. term resolution: the Term nodes for the abbreviation (5G specs first);
2. the dedicated section: chunks whose clause title holds the full name or the abbreviation
   (e.g. TS 23.501 6.2.19 "SCP"), in the term's own specs first;
3. function/role chunks: the entity with "is responsible for", "provides", "functionality" ...
Comparison questions ("Compare UPF and SMF") run stages 1–3 for each entity, label every
chunk with its entity, keep the same number per entity, and add chunks relating the two.
Other questions use BM25 over every chunk of the store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..answer.stage import Check, Draft, grounding_check
from ..config import LLMConfig, SpecConfig
from ..specs import open_store
from ..specs.store import GraphStore
from ..llm.base import LLM
from ..llm.budget import fit_context
from ..llm.prompts import answer_language, answer_messages
from ..specs.evidence import (QuestionAnalysis, Evidence, retrieve_spec_evidence)
from ..specs.model import spec_version
from ..text import first_sentences
from .base import Answer, AskContext, Citation, Gathered, Pipeline, Source, Sources, Trace

NOT_ENOUGH_EN = "The loaded specifications do not contain enough information to answer this question."
MODEL_REFUSAL_EN = "The evidence is not enough to answer."
SPEC_TASK = {"en": "You answer questions about 3GPP specifications.",
             "vi": "Bạn trả lời câu hỏi về các đặc tả 3GPP."}
MODEL_REFUSAL_VI = "Bằng chứng không đủ để trả lời."

# --------------------------------------------------------------------------- answers
def cite(evidence: Evidence, number: int) -> Citation:
    """``evidence`` as citation ``number``: its chunk's spec, clause and page, or the term
    dictionary's entry."""
    if evidence.chunk is None:
        where = evidence.term.sections[0] if evidence.term and evidence.term.sections else ":"
        spec, _, section = where.partition(":")
        return Citation(id=number, doc_id=evidence.term.term_id if evidence.term else "", title="term dictionary",
                        source=f"{spec} §{section}", score=round(evidence.score, 4), spec_id=spec,
                        section_id=section, entity=evidence.entity, stage=evidence.stage,
                        version=spec_version(spec))
    c = evidence.chunk
    page = c.pages[0] if c.pages else 0
    return Citation(id=number, doc_id=c.chunk_id, title=c.section_title,
                    source=f"{c.spec_id} §{c.section_id}" + (f", p. {page}" if page else ""),
                    score=round(evidence.score, 4), spec_id=c.spec_id, section_id=c.section_id,
                    entity=evidence.entity, stage=evidence.stage, version=spec_version(c.spec_id), page=page)


def _dictionary_lines(entity: str, term_ev: list[Evidence], numbered: dict) -> list[str]:
    """What the dictionary says of an entity: its expansions in one line, each definition
    in its own."""
    lines = []
    expansions = [e for e in term_ev if e.entry.term_type == "abbreviation"]
    if expansions:
        first = expansions[0].entry
        line = (f"{first.abbreviation} stands for {first.full_name}, as defined in {first.primary_spec} "
                f"[{numbered[id(expansions[0])]}]")
        if len(expansions) > 1:
            line += " (other expansions: " + "; ".join(
                f"{e.entry.full_name} [{numbered[id(e)]}]" for e in expansions[1:]) + ")"
        lines.append(line + ".")
    for e in term_ev:
        if e.entry.term_type == "definition":
            lines.append(f"{e.entry.full_name}: {first_sentences(e.entry.definition, 2)} [{numbered[id(e)]}]")
    return lines


def extractive_spec_answer(analysis: QuestionAnalysis, resolved: dict, evidence: list[Evidence]) -> str:
    """An answer assembled from the evidence only, each statement with its [n]."""
    numbered = {id(e): i + 1 for i, e in enumerate(evidence)}
    lines = []
    if analysis.qtype == "reverse":
        found = [e for e in evidence if e.stage == "term"]
        if found:
            best, others = found[0], found[1:]
            lines.append(f"The term is {best.entry.full_name} ({best.entry.primary_spec}) [{numbered[id(best)]}]: "
                         f"{first_sentences(best.entry.definition, 1)}")
            if others:
                lines.append("Close entries: " + "; ".join(
                    f"{e.entry.full_name} [{numbered[id(e)]}]" for e in others) + ".")
    for entity in analysis.entities:
        term_ev = [e for e in evidence if e.stage == "term" and e.entity == entity]
        if term_ev:
            lines.extend(_dictionary_lines(entity, term_ev, numbered))
        elif analysis.qtype in ("definition", "expansion", "role", "comparison"):
            lines.append(f"{entity} is not defined in the term dictionary of the loaded specifications.")
            hints = [e.entry for e in evidence if e.stage == "related" and e.entity == entity]
            if hints:
                lines.append("Related entries (not an answer): " + "; ".join(
                    f"{t.abbreviation} = {t.full_name} ({t.primary_spec})" for t in hints) + ".")
        for stage in ("section", "function"):
            chunk_ev = [e for e in evidence if e.stage == stage and e.entity == entity]
            if chunk_ev:
                e = chunk_ev[0]
                lines.append(f"{e.passage.spec_id} clause {e.passage.section_id} ({e.passage.section_title}): "
                             f"{first_sentences(e.text, 2)} [{numbered[id(e)]}]")
    for e in evidence:
        if e.stage == "relation":
            lines.append(f"Both: {first_sentences(e.text, 1)} [{numbered[id(e)]}]")
            break
    if not lines:
        bm25 = [e for e in evidence if e.stage == "bm25"]
        if not bm25:
            return NOT_ENOUGH_EN
        e = bm25[0]
        lines.append(f"{e.passage.spec_id} clause {e.passage.section_id} ({e.passage.section_title}): "
                     f"{first_sentences(e.text, 2)} [{numbered[id(e)]}]")
    return "\n".join(lines)


def _located(e: Evidence) -> str:
    """An evidence text prefixed by its place, in the words the answers use."""
    if e.chunk is None:
        return e.text
    c = e.chunk
    return f"{c.spec_id} clause {c.section_id} ({c.section_title}): {e.text}"


def _evidence_block(number: int, e: Evidence) -> str:
    label = f"({e.entity}) " if e.entity else ""
    where = f"{e.chunk.spec_id} §{e.chunk.section_id} {e.chunk.section_title}" if e.chunk else "term dictionary"
    return f"[{number}] {label}{where}\n{e.text}"


@dataclass
class SpecTrace(Trace):
    """How a spec answer was made: the question's analysis, the terms each entity resolved
    to, and every evidence item with the retrieval stage that found it."""

    analysis: dict = field(default_factory=dict)
    resolved: dict = field(default_factory=dict)
    evidence: list = field(default_factory=list)


def _build_store(paths, store: Path, progress: bool | None) -> None:
    from ..specs.build import build_kg

    with open_store(str(store)) as opened:
        build_kg(paths, opened, progress=progress)


class SpecPipeline(Pipeline):
    """3GPP spec questions over a spec KG store (term dictionary + clause chunks)."""

    name = "spec"
    sources = (Source("spec_store", "--store", "a spec KG store (a file or bolt://)", "ragkit kg build",
                      serve_flag="--spec-store", store=True),)
    sample_questions = ("What is SCP in 5G Core?", "Compare UPF and SMF", "What is TSCTSF?")
    size_unit, sizes = "generated specs", (5, 25, 100)

    def build_demo(self, data: Path, out: Path, progress: bool | None = None) -> dict[str, str]:
        """The demo specs' KG, in a file store."""
        store = out / "specs.json.gz"
        if not store.exists():
            _build_store(sorted((data / "specs").glob("*.md")), store, progress)
        return {"spec_store": str(store)}

    def build_sized(self, size: int, data: Path, workdir: Path) -> tuple[dict[str, str], tuple[str, ...]]:
        """The demo specs and ``size`` generated ones in their layout."""
        from ..testing.generated import generated_specs

        store = workdir / f"specs-{size}.json.gz"
        _build_store(generated_specs(size, data / "specs", workdir / f"specs-{size}"), store, False)
        return {"spec_store": str(store)}, self.sample_questions

    def load(self, where: str, sources: Sources) -> GraphStore:
        return open_store(where, must_exist=True)

    def config_from(self, request) -> SpecConfig:
        return SpecConfig()

    def gather(self, question: str, store: GraphStore, config: SpecConfig | None, ctx: AskContext) -> Gathered:
        analysis, resolved, evidence = retrieve_spec_evidence(store, question, config, ctx.profiler)
        trace = SpecTrace(analysis=asdict(analysis),
                          resolved={e: [t.to_dict() for t in ts] for e, ts in resolved.items()},
                          evidence=[{"stage": e.stage, "entity": e.entity, "score": round(e.score, 4),
                                     "chunk_id": e.chunk.chunk_id if e.chunk else None} for e in evidence])
        kept = {"n": len(evidence)}     # how many evidence items the prompt kept

        language = answer_language(question, "en")
        refusal = MODEL_REFUSAL_EN if language == "en" else MODEL_REFUSAL_VI

        def prompt(model) -> tuple[list[dict], int]:
            llm_config = ctx.llm_config
            blocks = [_evidence_block(i + 1, e) for i, e in enumerate(evidence)]
            bare = answer_messages(SPEC_TASK[language], question, "", language, refusal)
            prompt_tokens = sum(model.count_tokens(m["content"]) for m in bare) + 32
            budget = llm_config.n_ctx - llm_config.max_tokens - max(prompt_tokens, llm_config.prompt_tokens)
            context = fit_context(blocks, model.count_tokens, max(budget, 64))
            kept["n"] = context.kept
            return answer_messages(SPEC_TASK[language], question, context.text, language, refusal), context.kept

        def check(text: str) -> Check:
            # Each item with where it comes from, as the prompt shows it: an answer may say
            # "TS 23.501 clause 6.2.19 (SCP): ..." without inventing the clause number.
            return grounding_check([_located(e) for e in evidence[: kept["n"]]], question)(text)

        draft = Draft(evidence_answer=analysis.unmet or extractive_spec_answer(analysis, resolved, evidence),
                      check=check, prompt=prompt if evidence else None, language=language,
                      refusals=(NOT_ENOUGH_EN, MODEL_REFUSAL_EN, MODEL_REFUSAL_VI, *filter(None, [analysis.unmet])),
                      fallback_note="(The model's answer was not supported by the evidence, "
                                    "so the evidence is quoted instead.)",
                      evidence=[_located(e) for e in evidence])
        return Gathered(draft, [cite(e, i + 1) for i, e in enumerate(evidence)], trace, cite_kept=True)


def ask_spec(question: str, store: GraphStore | str | Path, *, config: SpecConfig | None = None,
             llm: LLM | None = None, llm_config: LLMConfig | None = None, use_llm: bool = True) -> Answer:
    """Answer a question about the specs in ``store`` with cited evidence."""
    ctx = AskContext(llm_config, use_llm, llm)
    own_store = isinstance(store, (str, Path))
    with ctx.profiler.stage("load_store"):
        opened = open_store(str(store), must_exist=True) if isinstance(store, (str, Path)) else store
    try:
        return SpecPipeline().ask(question, opened, config, ctx)
    finally:
        if own_store:
            opened.close()
