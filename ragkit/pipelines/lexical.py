"""Lexical RAG: question → retrieval (BM25 + structural boost,
dense, fused; ``ragkit.retrieval.search``) → MMR → step outline → token-budgeted context →
the shared answer stage (model answer, Vietnamese re-ask, grounding check, or the
extractive answer).

Each stage runs inside the shared profiler, so ``timings_ms`` is the latency table
(retrieval, MMR, token counting, generation, post-processing, check).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..answer.stage import Draft, Outcome
from ..config import CONCEPT_METHODS, GRAPH_METHODS, METHODS, RERANKS, LexicalConfig, LLMConfig
from ..errors import ContextTooLongError, InputError
from ..llm.base import LLM
from ..llm.budget import first_fitting, messages_tokens
from ..answer.extractive import NOT_FOUND_SHARE
from ..answer.hops import follow_up
from ..answer.themes import THEMES_TASK, community_summary, themes_answer, themes_check
from ..answer.claims import citations as claim_citations
from ..answer.claims import strip_citations
from ..llm.prompts import REFUSAL, answer_language, answer_messages, numbered_evidence
from ..answer.reading import sub_question
from ..answer.weighing import Weigher, coverage
from ..retrieval.bm25 import BM25Index
from ..retrieval.community_search import Route, load_communities, rank_communities, route
from ..retrieval.search import load_concepts, load_dense, load_index
from .base import NOT_ENOUGH_VI, Answer, AskContext, Citation, Gathered, Option, Pipeline, Source, Sources
from .lexical_evidence import REPLACED_NOTE, LexicalEvidence, LexicalTrace
from .steps import StepTrace


def _lexical_trace(gathered: Gathered) -> LexicalTrace:
    """The trace of evidence this pipeline gathered."""
    if not isinstance(gathered.trace, LexicalTrace):
        raise TypeError(f"not a lexical pipeline's trace: {type(gathered.trace).__name__}")
    return gathered.trace


class LexicalPipeline(Pipeline):
    """Lexical RAG over a BM25 index (with dense vectors when it has them)."""

    name = "lexical"
    sources = (Source("index", "--index", "an index folder", "ragkit index build"),)
    options = (
        Option("k", int, LexicalConfig.k, "chunks of evidence"),
        Option("method", str, LexicalConfig.method, "how candidates are found (dense/hybrid need 'index build "
               "--dense'; auto: dense for a question in another language than the index, else graph with "
               "a concept graph, hybrid with vectors, bm25 without)",
               choices=METHODS),
        Option("rerank", str, LexicalConfig.rerank, "llm: the model judges the top candidates (Yes/No log-odds), "
               "off by default", choices=RERANKS),
        Option("rerank_depth", int, LexicalConfig.rerank_depth, "--rerank: candidates judged"),
        Option("bridges", int, LexicalConfig.bridges, "documents added after the top ones: those the corpus "
               "titles with a name their sentences give and the question does not (0: none)"),
        Option("steps", int, LexicalConfig.steps, "retrieval steps for a factoid question that nests a "
               "description ('the city where X was born'), read inside out, or whose first step's evidence "
               "holds no answer of the asked kind (1: one pass)"),
    )
    sample_questions = ("Các bước khởi động máy nén khí?", "Quy trình thay mũi khoan gồm các bước nào?",
                        "Quy trình khóa nguồn và gắn thẻ?")
    size_unit, sizes = "chunks", (250, 1000, 4000)

    def build_demo(self, data: Path, out: Path, progress: bool | None = None) -> dict[str, str]:
        """The manuals' index (Vietnamese)."""
        from ..retrieval.build import IndexSpec, build_index

        if not BM25Index.is_current(out / "index"):
            build_index(IndexSpec(corpus=data / "manuals", out=out / "index", lang="vi"), progress=progress)
        return {"index": str(out / "index")}

    def build_sized(self, size: int, data: Path, workdir: Path) -> tuple[dict[str, str], tuple[str, ...]]:
        """An index of ``size`` chunks recombined from the manuals' sentences."""
        from ..testing.generated import generated_corpus
        from ..retrieval.build import IndexSpec, build_index

        out = workdir / f"index-{size}"
        build_index(IndexSpec(corpus=data / "manuals", out=out, lang="vi"),
                    docs=generated_corpus(size, data / "manuals"), progress=False)
        return {"index": str(out)}, self.sample_questions

    def validate(self, request) -> None:
        if request.rerank == "llm" and request.rerank_depth < request.k:
            raise InputError(f"rerank_depth: must be at least k ({request.k}), got {request.rerank_depth}")

    def load(self, where: str, sources: Sources) -> tuple[BM25Index, Any, Any, Any]:
        index = load_index(where)
        dense = load_dense(index, where)
        return index, dense, load_concepts(where, dense), load_communities(where)

    def config_from(self, request) -> LexicalConfig:
        return LexicalConfig(k=request.k, method=request.method, rerank=request.rerank,
                             rerank_depth=request.rerank_depth, steps=request.steps, bridges=request.bridges)

    def gather(self, question: str, source, config: LexicalConfig | None, ctx: AskContext,
               follow_ups: Sequence[str] = (), bridges: Sequence[str] = (), asked: str | None = None,
               added: Sequence[str] = ()) -> Gathered:
        """The evidence for ``question`` (``lexical_evidence.LexicalEvidence``: a later
        step's ``follow_ups``, ``bridges``, ``asked`` and ``added`` are described there), or,
        for a question about the whole corpus, its communities' summaries."""
        index, dense, *rest = source
        concepts = rest[0] if rest else None
        communities = rest[1] if len(rest) > 1 else None
        config = config or LexicalConfig()
        routed = route(config.method, question, communities, concepts, index)
        if routed.communities:
            return self.gather_communities(question, index, communities, routed, config, ctx)
        return LexicalEvidence(question, index, dense, concepts, config, ctx, routed, follow_ups=follow_ups,
                               bridges=bridges, asked=asked, added=added).gather()

    def read(self, question: str, source: Any, config: LexicalConfig | None,
             ctx: AskContext) -> tuple[Gathered, Outcome]:
        """The answer in up to ``config.steps`` retrieval steps. A factoid question that nests
        a description ("the first editor of *the gazette which printed X*") is
        answered inside out: a step asks what the innermost description names, and the next
        asks with the description replaced by that answer, the bridge, retrieving with the
        rewritten question beside the original one; a description no step can name leaves
        the question to be read whole. A factoid question that nests none is read on its
        evidence (``read_on_evidence``). Any other question takes one step, so ``steps``
        costs nothing on it. Each step is in ``trace.steps`` (``StepTrace``)."""
        config = config or LexicalConfig()
        weigher = Weigher.for_index(source[0])
        # Inside out: the innermost description first, the question itself last.
        # A question that compares items it names reads each item's document in one step.
        reading = ctx.reading(question)
        shape = reading.shape
        described = list(reading.descriptions[:config.steps - 1])[::-1] \
            if config.steps > 1 and shape.factoid and not reading.compares else []
        if not described and config.steps > 1 and shape.factoid and shape.kind != "yesno" \
                and not reading.compares:
            return self.read_on_evidence(question, source, config, ctx, weigher)
        inner = [d.text for d in described]
        plan = [d.ask for d in described] + [question]
        follow_ups: list[str] = []
        record: list[StepTrace] = []
        bridges: list[str] = []
        read = ""           # what the steps' answers have read so far
        step = 0
        while True:
            started = time.perf_counter()
            asked = plan[step]
            if asked != question and asked not in follow_ups:
                follow_ups.append(asked)
            gathered = self.gather(question, source, config, ctx, follow_ups, bridges,
                                   asked if asked != question else None)
            outcome = self.answer(gathered, ctx)
            short, support = _answer_read(gathered, outcome)
            reach = coverage(weigher.weights(question), f"{read} {short or ''} {support}", weigher).share
            record.append(StepTrace(len(record) + 1, asked, tuple(_lexical_trace(gathered).selected), short,
                                    outcome.answer_source, _ms_since(started), reach=round(reach, 4)))
            if step == len(plan) - 1:
                break           # the last step asks the question itself
            if short and short.lower() not in ("yes", "no"):
                for later in range(step + 1, len(plan)):      # the description is the bridge now
                    plan[later] = sub_question(plan[later], inner[step], short)
                    if later < len(inner):                    # and so in the descriptions around it
                        inner[later] = sub_question(inner[later], inner[step], short)
                read = f"{read} {short} {support}"
                bridges.append(short)
                step += 1
                continue
            record[-1] = replace(record[-1], kept=False)     # nothing names the description: read it whole
            plan = [*plan[:step + 1], question]
            step += 1
        _lexical_trace(gathered).steps = record
        return gathered, outcome

    def read_on_evidence(self, question: str, source: Any, config: LexicalConfig, ctx: AskContext,
                         weigher: Weigher) -> tuple[Gathered, Outcome]:
        """A factoid question no description nests in, in one or two steps: the first
        retrieves for the question; where its evidence lacks the answer, the second retrieves
        for the name the evidence gives and the words it leaves open (``answer.hops``), and
        the question is read, and the model asked, once, over both steps' documents."""
        started = time.perf_counter()
        first = self.gather(question, source, config, ctx)
        trace = _lexical_trace(first)
        held = len(first.citations)
        # No second step where the question names what the corpus does not know.
        found = follow_up(question, [e.split("\n", 1)[-1] for e in first.draft.evidence[:held]],
                          [c.title for c in first.citations], weigher, trace.evidence_short_answer is not None,
                          bears=NOT_FOUND_SHARE) if not trace.unnamed else None
        spent = [time.perf_counter() - started]
        # the first step's own reading, no model: what the evidence answered before any follow-up
        read = trace.evidence_short_answer
        record = [StepTrace(1, question, tuple(trace.selected), read["text"] if read else None,
                            looked_further=True, follow_up=found)]
        gathered = first
        if found is not None:
            started = time.perf_counter()
            gathered = self.gather(question, source, config, ctx, added=[found.query])
            record.append(StepTrace(2, found.query, tuple(_lexical_trace(gathered).selected)))
            spent.append(time.perf_counter() - started)
        started = time.perf_counter()
        outcome = self.answer(gathered, ctx)
        spent[-1] += time.perf_counter() - started
        short, _ = _answer_read(gathered, outcome)
        record[-1] = replace(record[-1], short_answer=short, answer_source=outcome.answer_source)
        _lexical_trace(gathered).steps = [replace(step, ms=round(seconds * 1000.0, 3))
                                          for step, seconds in zip(record, spent)]
        return gathered, outcome

    def gather_communities(self, question: str, index: BM25Index, communities, routed: Route,
                           config: LexicalConfig, ctx: AskContext) -> Gathered:
        """Evidence for a question about the whole corpus: the summaries of the ``config.k``
        communities ``rank_communities`` gives, each sentence cited to the chunk it was cut
        from. The evidence answer lists the themes with their sentences; a model may write
        the answer from them instead, checked against them like any answer."""
        with ctx.profiler.stage("communities"):
            hits = rank_communities(communities, routed.broad, config.k)
        language = answer_language(question, "vi")
        order = list(dict.fromkeys(cid for h in hits for cid in h.community.cited_chunks()))
        number = {cid: n for n, cid in enumerate(order, 1)}
        said: dict[str, list[str]] = {cid: [] for cid in order}
        for h in hits:
            for s in h.community.summary:
                if s["text"] not in said[s["chunk_id"]]:
                    said[s["chunk_id"]].append(s["text"])
        evidence = [" ".join(said[cid]) for cid in order]
        score = {cid: h.score for h in reversed(hits) for cid in h.community.cited_chunks()}
        citations = []
        for cid in order:
            hit = index.hit(cid, score[cid])
            citations.append(Citation(id=number[cid], doc_id=cid, title=hit.title, source=hit.source,
                                      score=round(score[cid], 6), evidence=number[cid]))
        model, llm_config = ctx.model, ctx.llm_config
        with ctx.profiler.stage("token_counting"):
            empty = answer_messages(THEMES_TASK[language], question, "", language, None)
            prompt_tokens = messages_tokens(empty, model.count_tokens)
            if llm_config.n_ctx - llm_config.max_tokens - prompt_tokens <= 0:
                raise ContextTooLongError(
                    f"question: too long for the model's context ({prompt_tokens} prompt tokens + "
                    f"{llm_config.max_tokens} for the answer > n_ctx {llm_config.n_ctx})")

        def prompt(model: LLM):
            def fewer():        # the last themes leave until the prompt fits the context
                for n in range(len(hits), 0, -1):
                    items = len({cid for h in hits[:n] for cid in h.community.cited_chunks()})
                    yield answer_messages(THEMES_TASK[language], question, numbered_evidence(evidence[:items]),
                                          language, None), items

            return first_fitting(fewer(), model.count_tokens, llm_config.n_ctx - llm_config.max_tokens)

        trace = LexicalTrace(
            query_tokens=index.tokenizer(question), method="communities", method_reason=routed.reason,
            selected=order, prompt_tokens=prompt_tokens, model=getattr(model, "name", type(model).__name__),
            chat_format=getattr(model, "chat_format", None), answer_language=language,
            broad={**routed.broad.to_dict(), "route": routed.reason} if routed.broad else None,
            communities=[community_summary(h, communities.chunks) for h in hits])
        draft = Draft(evidence_answer=themes_answer(hits, number, language),
                      check=themes_check(evidence, question), prompt=prompt if evidence else None,
                      language=language, refusals=(NOT_ENOUGH_VI, REFUSAL["vi"], REFUSAL["en"]),
                      fallback_note=REPLACED_NOTE[language], evidence=evidence)
        return Gathered(draft, citations, trace)


# A question about the whole corpus: the model writes the themes from their summaries.
def ask_lexical(question: str, index: BM25Index | str | Path, *,
                config: LexicalConfig | None = None, llm: LLM | None = None,
                llm_config: LLMConfig | None = None, use_llm: bool = True, dense=None) -> Answer:
    """Answer ``question`` from the documents of a BM25 index, with citations.

    use_llm=False answers extractively from the evidence (the deterministic mode tests and
    benchmarks use); the model's tokenizer is still used to check the question's length.
    ``config.rerank="llm"`` has the model judge the top candidates even then: the rerank is
    part of retrieval, not of writing the answer.
    """
    config = config or LexicalConfig()
    ctx = AskContext(llm_config, use_llm, llm)
    with ctx.profiler.stage("load_index"):
        folder = None
        if not isinstance(index, BM25Index):
            folder = index
            index = load_index(index)
        if dense is None and config.method != "bm25" and folder is not None:
            dense = load_dense(index, folder)
        communities = load_communities(folder) if folder is not None and config.method in CONCEPT_METHODS else None
        concepts = load_concepts(folder, dense) if folder is not None and (
            config.method in GRAPH_METHODS or config.method == "auto" or communities is not None) else None
    return LexicalPipeline().ask(question, (index, dense, concepts, communities), config, ctx)


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


def _answer_read(gathered: Gathered, outcome: Outcome) -> tuple[str | None, str]:
    """A step's short answer (the model's, else the evidence's) and the text it stands on:
    its sentences and the titles of the chunks they come from (a chunk's title is the
    context its sentences are read in)."""
    trace = _lexical_trace(gathered)
    if not trace.shape or trace.shape["kind"] not in ("name", "date", "number", "yesno"):
        return None, ""
    titles = {c.id: c.title for c in gathered.citations}
    if outcome.short_answer and outcome.answer_source == "model":
        cited = " ".join(titles.get(n, "") for n in claim_citations(outcome.text))
        return outcome.short_answer, f"{cited} {strip_citations(outcome.text)}"
    found = trace.evidence_short_answer
    if outcome.short_answer and found:
        return found["text"], f"{titles.get(found['evidence'], '')} {found['sentence']}"
    return None, ""
