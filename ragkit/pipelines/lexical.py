"""Lexical RAG: question → retrieval (BM25 + structural boost,
dense, fused; ``ragkit.retrieval.search``) → MMR → step outline → token-budgeted context →
the shared answer stage (model answer, Vietnamese re-ask, grounding check, or the
extractive answer).

Each stage runs inside the shared profiler, so ``timings_ms`` is the latency table
(retrieval, MMR, token counting, generation, post-processing, check).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from ..answer.stage import Draft, Outcome, answer, grounding_check
from ..config import CONCEPT_METHODS, GRAPH_METHODS, METHODS, RERANKS, LexicalConfig, LLMConfig
from ..errors import ContextTooLongError, InputError
from ..llm.base import LLM
from ..llm.budget import first_fitting, fit_context, messages_tokens, token_prefix
from ..answer.bridges import interleave, with_bridges, with_items
from ..answer.extractive import (NOT_FOUND_SHARE, WRONG_REFUSAL_SHARE, complete_short_answer, extractive_answer,
                                 rare_name, reading_check, resupport, unknown_names, written_lower)
from ..answer.hops import follow_up
from ..answer.themes import THEMES_TASK, community_summary, themes_answer, themes_check
from ..answer.both import judge_joined
from ..answer.choice import choose
from ..answer.claims import citations as claim_citations
from ..answer.claims import strip_citations
from ..llm.prompts import (REFUSAL, answer_language, answer_messages, extract_outline, format_chunk,
                           lexical_messages, numbered_evidence, short_answer_messages)
from ..answer.reading import ShortAnswer, parse_short_answer, short_answer, sub_question
from ..answer.weighing import Weigher, coverage, relevant_sentences, score_sentences
from ..answer.candidates import lower_case_words, name_candidates, question_names, unnamed, writes
from ..retrieval.bm25 import BM25Index, Hit
from ..retrieval.rerank import make_reranker
from ..retrieval.community_search import Route, load_communities, rank_communities, route
from ..retrieval.search import load_concepts, load_dense, load_index, retrieve
from ..text import normalize
from ..text.words import name_key
from .base import (NOT_ENOUGH_VI, Answer, AskContext, Citation, Gathered, Option, Pipeline, Source, Sources, Trace,
                   check_question)

_REPLACED_NOTE = {"vi": "(Câu trả lời của mô hình không bám sát tài liệu nên đã được thay bằng "
                        "trích dẫn trực tiếp.)",
                  "en": "(The model's answer did not keep to the documents, so they are quoted instead.)"}


@dataclass
class LexicalTrace(Trace):
    """How a lexical answer was made: the query's tokens, the candidates and the chunks
    selected, the step outline, the token budget and the retrieval method."""

    query_tokens: list = field(default_factory=list)
    procedural: bool = False
    boosted: bool = False
    method: str = "bm25"
    method_reason: str = ""
    candidates: list = field(default_factory=list)      # the top 10, with their scores
    n_candidates: int = 0
    selected: list = field(default_factory=list)
    outline: list = field(default_factory=list)
    prompt_tokens: int = 0
    context_tokens: int = 0
    context_budget: int = 0
    dropped_chunks: int = 0
    model: str = ""
    chat_format: str | None = None
    answer_language: str = "vi"         # the question's language, which the answer is asked in
    rerank: list | None = None          # the judge's log-odds per candidate (--rerank llm)
    mmr_similarity: str | None = None   # cosine (over chunk vectors) or jaccard (over terms)
    graph: dict | None = None           # graph methods: the base ranking and the walk's seeds
    bridges: dict | None = None         # graph methods: per cited chunk, the concepts and edges that brought it
    broad: dict | None = None           # communities, auto: whether the question is about the whole corpus, and why
    communities: list | None = None     # communities: the communities retrieved (id, label, size, chunks, score ...)
    shape: dict | None = None           # the kind of answer the question wants (text.shape.answer_shape)
    question: dict | None = None        # what the question's own words say (text.question.QuestionReading)
    evidence_short_answer: dict | None = None   # the short answer read from the evidence, with its sentence
    question_coverage: float = 0.0      # the share of the question's words the best evidence sentence holds
    unnamed: list[str] | None = None    # the question's names that no retrieved text writes
    steps: list = field(default_factory=list)   # each retrieval step: its query, hits, short answer, time
    bridge_documents: list | None = None   # documents added through a name the evidence gives (answer.bridges)
    item_documents: list | None = None  # each compared item's own document, added where retrieval missed it
    choice: dict | None = None          # a question offering a choice: its items and the value read for each
    joined: dict | None = None          # a yes/no question about two joined items: what was read of each


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
        """The evidence for ``question`` (and, from the second step on, for the ``follow_ups``
        queries the earlier steps wrote: their hits join the question's own; the earlier
        steps' answers, ``bridges``, are not this step's short answer). A later step reads
        ``asked``, the question asked again of the bridge, when one could be written, else
        the last follow-up query; the model is asked ``asked`` or the question. Each ``added``
        query (a second step read from what the first lacked) brings its best document that
        the question's own do not hold, right after the first of them; the sentences are then
        read for it."""
        index, dense, *rest = source
        concepts = rest[0] if rest else None
        communities = rest[1] if len(rest) > 1 else None
        config = config or LexicalConfig()
        profiler, llm_config = ctx.profiler, ctx.llm_config
        routed = route(config.method, question, communities, concepts, index)
        if routed.communities:
            return self.gather_communities(question, index, communities, routed, config, ctx)
        # The model's tokenizer measures the question even without generation: a question
        # that cannot fit the context is refused the same way in both modes.
        model = ctx.model
        reranker = make_reranker(config.rerank, model, config.rerank_depth)
        steps: dict = {}
        # the question's language, as its reading gave it, chooses the method for every query of the ask
        asked_in = ctx.reading(question).language
        candidates, selected = retrieve(index, question, config, profiler, dense, reranker, steps, concepts, asked_in)
        for query in follow_ups:        # a later step: the follow-up's hits first, then the question's
            more: dict = {}
            _, found = retrieve(index, query, config, profiler, dense, None, more, concepts, asked_in)
            selected = interleave(found, selected, config.k + 1)
        for query in added:             # the question's documents all stay; the query's best new one joins
            wider = replace(config, k=config.k + len(selected), rerank="none")     # past the documents held
            _, found = retrieve(index, query, wider, profiler, dense, None, {}, concepts, asked_in)
            new = [h for h in found if all(h.doc_id != s.doc_id for s in selected)][:1]
            selected = [*selected[:1], *new, *selected[1:]]
        # what the sentences are read for
        reading = asked or (follow_ups[-1] if follow_ups else added[-1] if added else question)
        prompted = asked or question
        procedural = ctx.reading(question).procedural
        language = answer_language(question, "vi")
        read = ctx.reading(prompted)        # what the question's own words say, read once per ask
        shape = read.shape
        weigher = Weigher.for_index(index)
        # Factoid and other short questions read the sentences that bear on them (and their
        # neighbours); steps, lists and explanations read whole chunks.
        reads = not procedural and shape.kind not in ("steps", "list", "explanation")
        retrieved = [f"{h.title}\n{h.text}" for h in selected]      # the top k, whole, before any cut
        linked: list = []
        if reads and selected and config.bridges:
            with profiler.stage("bridges"):
                selected, linked = with_bridges(index, question, selected, weigher, config.bridges)
        # A question that compares two items it names reads each item's own document.
        compared = read.compared if reads else ()
        items: list = []
        if compared and selected:
            with profiler.stage("items"):
                selected, items = with_items(index, compared, selected)
        # The question's names that nothing retrieval found writes, nor the corpus: it does not know them.
        whole = [f"{h.title}\n{h.text}" for h in selected]
        unknown: list[str] = []
        common: set[str] = set()
        if reads and selected:
            with profiler.stage("names"):
                unknown = unknown_names(index, unnamed(prompted, whole))
        if reads and selected:
            with profiler.stage("reading"):
                cut = relevant_sentences(question, [h.text for h in selected], weigher, neighbours=0,
                                         extra_questions=[*follow_ups, *added, *([asked] if asked else [])],
                                         titles=[h.title for h in selected])
                # the own documents of the items a question chooses between are read whole: the
                # value compared may be stated in words the question does not use ("staff"
                # asked, "Employees: 42" said). (Two items asked about together keep the cut:
                # their verdict reads the predicate's own sentences.)
                between = read.alternatives if read.shape.kind != "yesno" else ()
                whole_items = {doc_id for item, doc_id in items if item in between} | {
                    h.doc_id for h in selected if any(f" {name_key(item)} " in f" {name_key(h.title)} "
                                                      for item in between)}
                selected = [h if h.doc_id in whole_items else replace(h, text=t) for h, t in zip(selected, cut)]
        # The words the texts, or the corpus, write in lower case: the capitalised first word of
        # a kept sentence is no name for that.
        if reads and selected:
            with profiler.stage("names"):
                common = lower_case_words(whole) | written_lower(index, [*(h.title for h in selected),
                                                                         *(h.text for h in selected)])
        with profiler.stage("token_counting"):
            # The prompt without documents, their fences included (" " stands for them).
            empty_prompt = lexical_messages(question, " ", [], language)
            prompt_tokens = messages_tokens(empty_prompt, model.count_tokens)
            limit = llm_config.n_ctx - llm_config.max_tokens
            if limit - prompt_tokens <= 0:
                raise ContextTooLongError(
                    f"question: too long for the model's context ({prompt_tokens} prompt tokens + "
                    f"{llm_config.max_tokens} for the answer > n_ctx {llm_config.n_ctx})")
            # ``prompt_tokens`` (150) is reserved for the instructions; a longer question takes more.
            budget = limit - max(prompt_tokens, llm_config.prompt_tokens)
            # A huge document gives at most the whole budget's worth of its text, to the
            # prompt, the evidence answer, the check and the answer's evidence alike.
            selected = [replace(h, text=token_prefix(h.text, model.count_tokens, budget)) for h in selected]
            chunks = [format_chunk(i + 1, h.title, h.text) for i, h in enumerate(selected)]
            context = _fit_lexical_prompt(question, chunks, language, model, budget, limit) if chunks else None
        outline = extract_outline([h.text for h in selected[: context.kept]]) if context else []
        used = selected[: context.kept] if context else []
        citations = [Citation(id=i + 1, doc_id=h.doc_id, title=h.title, source=h.source,
                              score=round(h.score, 6)) for i, h in enumerate(used)]
        evidence = [f"{h.title}\n{h.text}" for h in used]
        trace = LexicalTrace(
            query_tokens=index.tokenizer(question), procedural=procedural,
            boosted=bool(config.boost) if config.boost is not None else procedural,
            method=steps["method"], method_reason=steps["method_reason"],
            candidates=[_hit_summary(h) for h in candidates[:10]], n_candidates=len(candidates),
            selected=[h.doc_id for h in selected], outline=outline, prompt_tokens=prompt_tokens,
            context_tokens=context.tokens if context else 0, context_budget=budget,
            dropped_chunks=context.dropped if context else 0,
            model=getattr(model, "name", type(model).__name__),
            chat_format=getattr(model, "chat_format", None), answer_language=language,
            rerank=steps.get("rerank"), mmr_similarity=steps.get("mmr_similarity"),
            graph=steps.get("graph"),
            bridges={h.doc_id: steps["bridges"].get(h.doc_id, []) for h in used} if "bridges" in steps else None,
            broad={**routed.broad.to_dict(), "route": routed.reason} if routed.broad else None,
            bridge_documents=[b.to_dict() for b in linked] or None,
            item_documents=[{"item": item, "doc_id": doc_id} for item, doc_id in items] or None)
        # Each outline step ends with the number of the chunk it was cut from, as the answer's
        # lines should.
        step_sources = outline_sources(outline, [h.text for h in used])
        # The prompt holds what was fitted to the context: the chunks and outline as cut.
        fitted_outline = context.extra.splitlines() if context else []
        texts = [f"{h.title}: {h.text}" if h.title else h.text for h in used]
        sentences = score_sentences(reading, [h.text for h in used], weigher, [h.title for h in used])
        best_share = max((x.share for x in sentences), default=0.0)
        if best_share < NOT_FOUND_SHARE and sentences:
            # A long question may be answered by a short sentence: one that writes the
            # question's rarest name ("ISO 23125") bears on it, whatever share it holds.
            best = max(sentences, key=lambda x: x.share)
            title = used[best.item - 1].title if best.item - 1 < len(used) else ""
            if any(rare_name(name, weigher) and writes([f"{title} {best.text}"], name)
                   for name in question_names(prompted)):
                best_share = NOT_FOUND_SHARE
        # A later step asks of a bridge; the names the question itself gives are still no answer.
        given = [re.sub(r"['’]s$", "", c.text) for c in name_candidates(question)] if reading != question else []
        extracted = short_answer(reading, shape, [h.text for h in used], weigher, sentences=sentences,
                                 exclude=[*bridges, *given], common=common) if reads else None
        choices = read.alternatives if reads and shape.factoid and shape.kind != "yesno" else ()
        if choices:         # a choice between the question's own items: compare what the evidence states
            picked = choose(prompted, choices, [h.text for h in used], [h.title for h in used])
            extracted = ShortAnswer(picked.text, picked.item, picked.sentence, 1.0, best_share) if picked else None
            trace.choice = {"offered": list(choices), "values": picked.values if picked else None}
        asked_together = read.joined if reads else None
        together = judge_joined(asked_together, [h.text for h in used], [h.title for h in used], weigher.tokenize) \
            if asked_together else None
        if asked_together:  # "Are A and B both ...?", "... the same city?": what the evidence states of each
            trace.joined = {"items": list(asked_together.items), "predicate": asked_together.predicate,
                            "shared": asked_together.shared, **(together.to_dict() if together else {"verdict": None})}
            if together is not None:
                extracted = ShortAnswer(together.text, together.item, together.sentence, 1.0, best_share)
        refusal = REFUSAL[language] if language == "en" else NOT_ENOUGH_VI
        trace.shape, trace.question_coverage = shape.to_dict(), round(best_share, 4)
        trace.question = read.to_dict()
        trace.evidence_short_answer = extracted.to_dict() if extracted else None
        trace.unnamed = unknown or None
        if used and reads and (best_share < NOT_FOUND_SHARE or unknown or (shape.strict and extracted is None)):
            # The evidence does not bear on the question, never names what it asks about, or
            # holds nothing of the kind its own words ask for (a unit, a name).
            evidence_answer = refusal
        elif extracted is not None:
            evidence_answer = f"{extracted.text}\n{extracted.sentence} [{extracted.item}]"
        else:
            evidence_answer = extractive_answer(question, used, procedural, weigher=weigher)
        prompt: Callable[[Any], tuple[list[dict], None]] | None
        if reads and shape.factoid and used:
            # Evidence that bears on the question well (a sentence holds half of its weighted
            # words) is not offered a refusal: a small model refuses too readily, and the check
            # still replaces a short answer the evidence does not hold.
            offered = refusal if best_share < WRONG_REFUSAL_SHARE else None

            def short_prompt(_model):
                return short_answer_messages(prompted, texts, shape.kind, language, offered), None

            prompt = short_prompt
        else:
            prompt = (lambda _model: (lexical_messages(question, context.text, fitted_outline, language), None)
                      ) if used and context else None
        check = grounding_check(evidence + outline, prompted)
        if reads:
            check = reading_check(check, prompted, shape, evidence, extracted, best_share, weigher, choices, unknown,
                                  common, together)
        draft = Draft(evidence_answer=evidence_answer,
                      check=check, prompt=prompt,
                      language=language, refusals=(NOT_ENOUGH_VI, REFUSAL["vi"], REFUSAL["en"]),
                      fallback_note=_REPLACED_NOTE[language],
                      # A model's short answer that fails, where the evidence holds none of the
                      # asked kind either: nobody read an answer, and the answer says so.
                      fallback_answer=refusal if reads and shape.factoid and shape.kind != "yesno"
                      and extracted is None and used else None,
                      cites=[*range(1, len(used) + 1), *step_sources], evidence=evidence + outline,
                      retrieved=retrieved,
                      short_answer=extracted.text if extracted and evidence_answer != refusal else None,
                      clean=(lambda text: complete_short_answer(text, prompted, shape, evidence, weigher, choices))
                      if reads and shape.factoid else None,
                      read_short=(lambda text: parse_short_answer(text)[0] or None)
                      if reads and shape.factoid else None,
                      resupport=(lambda text: resupport(text, prompted, shape, evidence, weigher, choices))
                      if reads and shape.factoid else None)
        return Gathered(draft, citations, trace)

    def ask(self, question: str, source: Any, config: LexicalConfig | None = None,
            ctx: AskContext | None = None) -> Answer:
        """The answer in up to ``config.steps`` retrieval steps. A factoid question that nests
        a description ("the first editor of *the gazette which printed X*") is
        answered inside out: a step asks what the innermost description names, and the next
        asks with the description replaced by that answer, the bridge, retrieving with the
        rewritten question beside the original one; a description no step can name leaves
        the question to be read whole. A question that nests nothing takes one step, so
        ``steps`` costs nothing on it. Each step is in ``trace.steps`` with its query, hits,
        short answer and time."""
        question = check_question(question)
        ctx = ctx or AskContext()
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
            return self.ask_on_evidence(question, source, config, ctx, weigher)
        inner = [d.text for d in described]
        plan = [d.ask for d in described] + [question]
        follow_ups: list[str] = []
        record: list[dict] = []
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
            asks = ctx.use_llm and gathered.draft.prompt is not None
            outcome = answer(gathered.draft, ctx.model if asks else None, ctx.llm_config, ctx.profiler, ctx.use_llm)
            short, support = _answer_read(gathered, outcome)
            reach = coverage(weigher.weights(question), f"{read} {short or ''} {support}", weigher).share
            record.append({"step": len(record) + 1, "query": asked, "hits": list(_lexical_trace(gathered).selected),
                           "short_answer": short, "answer_source": outcome.answer_source, "reach": round(reach, 4),
                           "ms": round((time.perf_counter() - started) * 1000.0, 3)})
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
            record[-1]["kept"] = False      # nothing names the description: read the question whole
            plan = [*plan[:step + 1], question]
            step += 1
        _lexical_trace(gathered).steps = record
        return self.finish(question, gathered, outcome, ctx)

    def ask_on_evidence(self, question: str, source: Any, config: LexicalConfig, ctx: AskContext,
                        weigher: Weigher) -> Answer:
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
        record: list[dict] = [{"step": 1, "query": question, "hits": list(trace.selected),
                               "short_answer": read["text"] if read else None, "answer_source": "evidence",
                               "follow_up": found.to_dict() if found else None}]
        gathered = first
        if found is not None:
            started = time.perf_counter()
            gathered = self.gather(question, source, config, ctx, added=[found.query])
            record.append({"step": 2, "query": found.query, "hits": list(_lexical_trace(gathered).selected)})
            spent.append(time.perf_counter() - started)
        started = time.perf_counter()
        asks = ctx.use_llm and gathered.draft.prompt is not None
        outcome = answer(gathered.draft, ctx.model if asks else None, ctx.llm_config, ctx.profiler, ctx.use_llm)
        spent[-1] += time.perf_counter() - started
        short, _ = _answer_read(gathered, outcome)
        record[-1].update(short_answer=short, answer_source=outcome.answer_source)
        for step, seconds in zip(record, spent):
            step["ms"] = round(seconds * 1000.0, 3)
        _lexical_trace(gathered).steps = record
        return self.finish(question, gathered, outcome, ctx)

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
                      fallback_note=_REPLACED_NOTE[language], evidence=evidence)
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


def _cited_outline(texts: list[str]) -> str:
    """The step outline of ``texts``, each step ending with the number of its text."""
    outline = extract_outline(texts)
    return "\n".join(f"{step} [{n}]" for step, n in zip(outline, outline_sources(outline, texts)))


def _fit_lexical_prompt(question: str, chunks: list[str], language: str, model, budget: int, limit: int):
    """The chunks (and the outline cut from them, which shares their budget) that fit
    ``budget``; should the whole prompt, measured as it will be sent, still be over
    ``limit`` tokens, the budget shrinks by the excess and they are fitted again."""
    for _ in range(4):
        context = fit_context(chunks, model.count_tokens, budget, extra=lambda kept: _cited_outline(kept))
        messages = lexical_messages(question, context.text, context.extra.splitlines(), language)
        tokens = messages_tokens(messages, model.count_tokens)
        if tokens <= limit or budget <= 64:
            return context
        budget -= tokens - limit
    return context


def outline_sources(outline: list[str], texts: list[str]) -> list[int]:
    """For each outline step, the number (1-based) of the first text it was cut from."""
    first: dict[str, int] = {}
    for n, text in enumerate(texts, 1):
        for step in extract_outline([text]):
            first.setdefault(normalize(step), n)
    return [first.get(normalize(step), 1) for step in outline]


def _hit_summary(hit: Hit) -> dict:
    return {"doc_id": hit.doc_id, "score": round(hit.score, 6), "bm25": round(hit.bm25, 6),
            "boost": hit.boost}


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
