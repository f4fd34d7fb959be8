"""The lexical pipeline's evidence for one question, gathered in stages, each timed by the
ask's profiler (``LexicalEvidence``, what ``LexicalPipeline.gather`` runs):

1. ``retrieved``: the candidates and the top k (BM25, dense, fused or graph; ``retrieve``),
   with a later step's follow-up and added queries;
2. ``led_to``: the documents the evidence leads to, bridges and the compared items' own;
3. ``read``: the question's names the corpus does not write, the texts cut to the
   sentences that bear on the question, the words the corpus writes in lower case;
4. ``fitted``: the chunks and step outline fitted to the model's window;
5. ``short_answer``: the short answer the evidence gives (a choice between the question's
   items, two items judged together);
6. ``drafted``: the draft for the shared answer stage (its evidence answer, prompt and check).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from ..answer.both import JoinedVerdict, judge_joined
from ..answer.bridges import interleave, with_bridges, with_items
from ..answer.candidates import lower_case_words, name_candidates, question_names, unnamed, writes
from ..answer.choice import choose
from ..answer.factoid import Factoid
from ..answer.extractive import (NOT_FOUND_SHARE, WRONG_REFUSAL_SHARE, extractive_answer, rare_name, reading_check,
                                 unknown_names, written_lower)
from ..answer.reading import ShortAnswer, short_answer
from ..answer.stage import NOT_ENOUGH_VI, Draft, grounding_check
from ..answer.weighing import Sentence, Weigher, relevant_sentences, score_sentences
from ..config import LexicalConfig
from ..errors import ContextTooLongError
from ..llm.budget import fit_context, messages_tokens, token_prefix
from ..llm.prompts import (REFUSAL, answer_language, extract_outline, format_chunk, lexical_messages,
                           short_answer_messages)
from ..retrieval.bm25 import BM25Index, Hit
from ..retrieval.community_search import Route
from ..retrieval.rerank import make_reranker
from ..retrieval.search import GraphNotes, RetrievalNotes, retrieve
from ..text import normalize
from ..text.words import name_key
from .base import AskContext, Citation, Gathered, Trace
from .steps import StepTrace

REPLACED_NOTE = {"vi": "(Câu trả lời của mô hình không bám sát tài liệu nên đã được thay bằng "
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
    graph: GraphNotes | None = None     # graph methods: the base ranking and the walk's seeds
    bridges: dict | None = None         # graph methods: per cited chunk, the concepts and edges that brought it
    broad: dict | None = None           # communities, auto: whether the question is about the whole corpus, and why
    communities: list | None = None     # communities: the communities retrieved (id, label, size, chunks, score ...)
    shape: dict | None = None           # the kind of answer the question wants (text.shape.answer_shape)
    question: dict | None = None        # what the question's own words say (text.question.QuestionReading)
    evidence_short_answer: dict | None = None   # the short answer read from the evidence, with its sentence
    question_coverage: float = 0.0      # the share of the question's words the best evidence sentence holds
    unnamed: list[str] | None = None    # the question's names that no retrieved text writes
    steps: list[StepTrace] = field(default_factory=list)   # each retrieval step (pipelines.steps)
    bridge_documents: list | None = None   # documents added through a name the evidence gives (answer.bridges)
    item_documents: list | None = None  # each compared item's own document, added where retrieval missed it
    choice: dict | None = None          # a question offering a choice: its items and the value read for each
    joined: dict | None = None          # a yes/no question about two joined items: what was read of each


@dataclass
class _Found:
    """What the evidence's sentences give: their scores, the best one's share of the
    question, the short answer, the choice offered and two items judged together."""

    sentences: list[Sentence]
    best_share: float
    extracted: ShortAnswer | None
    choices: tuple[str, ...]
    together: JoinedVerdict | None


class LexicalEvidence:
    """One question's evidence (``gather``). A later step of a multi-step ask brings the
    ``follow_ups`` queries the earlier steps wrote (their hits join the question's own),
    the earlier steps' answers (``bridges``: not this step's short answer), ``asked`` (the
    question asked again of the bridge, which the sentences are read for and the model is
    asked) and ``added`` queries (each brings its best document the question's own lack)."""

    def __init__(self, question: str, index: BM25Index, dense, concepts, config: LexicalConfig, ctx: AskContext,
                 routed: Route, *, follow_ups: Sequence[str] = (), bridges: Sequence[str] = (),
                 asked: str | None = None, added: Sequence[str] = ()):
        self.question, self.index, self.dense, self.concepts = question, index, dense, concepts
        self.config, self.ctx, self.routed = config, ctx, routed
        self.follow_ups, self.bridges, self.asked, self.added = follow_ups, bridges, asked, added
        self.profiler = ctx.profiler
        # The model's tokenizer measures the question even without generation: a question
        # that cannot fit the context is refused the same way in both modes.
        self.model = ctx.model
        self.steps = RetrievalNotes()
        # what the sentences are read for, and what the model is asked
        self.reading = asked or (follow_ups[-1] if follow_ups else added[-1] if added else question)
        self.prompted = asked or question
        self.procedural = ctx.reading(question).procedural
        self.language = answer_language(question, "vi")
        self.read_question = ctx.reading(self.prompted)     # what its own words say, read once per ask
        self.shape = self.read_question.shape
        self.weigher = Weigher.for_index(index)
        # Factoid and other short questions read the sentences that bear on them (and their
        # neighbours); steps, lists and explanations read whole chunks.
        self.reads = not self.procedural and self.shape.kind not in ("steps", "list", "explanation")

    def gather(self) -> Gathered:
        candidates, selected = self.retrieved()
        retrieved = [f"{h.title}\n{h.text}" for h in selected]      # the top k, whole, before any cut
        selected, linked, items = self.led_to(selected)
        selected, unknown, common = self.read(selected, items)
        selected, prompt_tokens, budget, context = self.fitted(selected)
        outline = extract_outline([h.text for h in selected[: context.kept]]) if context else []
        used = selected[: context.kept] if context else []
        citations = [Citation(id=i + 1, doc_id=h.doc_id, title=h.title, source=h.source,
                              score=round(h.score, 6)) for i, h in enumerate(used)]
        trace = self.traced(candidates, selected, used, outline, context, prompt_tokens, budget, linked, items)
        found = self.short_answer(used, common, trace)
        trace.shape, trace.question_coverage = self.shape.to_dict(), round(found.best_share, 4)
        trace.question = self.read_question.to_dict()
        trace.evidence_short_answer = found.extracted.to_dict() if found.extracted else None
        trace.unnamed = unknown or None
        return Gathered(self.drafted(used, outline, context, found, retrieved, unknown, common), citations, trace)

    # ----------------------------------------------------------------- the stages
    def retrieved(self) -> tuple[list[Hit], list[Hit]]:
        """The candidates and the top k for the question, then for a later step's queries."""
        index, config, profiler, dense, concepts = self.index, self.config, self.profiler, self.dense, self.concepts
        reranker = make_reranker(config.rerank, self.model, config.rerank_depth)
        # the question's language, as its reading gave it, chooses the method for every query of the ask
        asked_in = self.ctx.reading(self.question).language
        candidates, selected = retrieve(index, self.question, config, profiler, dense, reranker, self.steps, concepts,
                                        asked_in)
        for query in self.follow_ups:   # a later step: the follow-up's hits first, then the question's
            more = RetrievalNotes()
            _, found = retrieve(index, query, config, profiler, dense, None, more, concepts, asked_in)
            selected = interleave(found, selected, config.k + 1)
        for query in self.added:        # the question's documents all stay; the query's best new one joins
            wider = replace(config, k=config.k + len(selected), rerank="none")     # past the documents held
            _, found = retrieve(index, query, wider, profiler, dense, None, RetrievalNotes(), concepts, asked_in)
            new = [h for h in found if all(h.doc_id != s.doc_id for s in selected)][:1]
            selected = [*selected[:1], *new, *selected[1:]]
        return candidates, selected

    def led_to(self, selected: list[Hit]) -> tuple[list[Hit], list, list]:
        """``selected`` with the bridge documents its sentences name, and with the own
        document of each item the question compares."""
        linked: list = []
        if self.reads and selected and self.config.bridges:
            with self.profiler.stage("bridges"):
                selected, linked = with_bridges(self.index, self.question, selected, self.weigher,
                                                self.config.bridges)
        # A question that compares two items it names reads each item's own document.
        compared = self.read_question.compared if self.reads else ()
        items: list = []
        if compared and selected:
            with self.profiler.stage("items"):
                selected, items = with_items(self.index, compared, selected)
        return selected, linked, items

    def read(self, selected: list[Hit], items: list) -> tuple[list[Hit], list[str], set[str]]:
        """``selected`` cut to the sentences that bear on the question; the question's names
        that nothing retrieval found writes, nor the corpus (it does not know them); the
        words the texts, or the corpus, write in lower case (the capitalised first word of a
        kept sentence is no name for that)."""
        if not (self.reads and selected):
            return selected, [], set()
        whole = [f"{h.title}\n{h.text}" for h in selected]
        with self.profiler.stage("names"):
            unknown = unknown_names(self.index, unnamed(self.prompted, whole))
        with self.profiler.stage("reading"):
            extra = [*self.follow_ups, *self.added, *([self.asked] if self.asked else [])]
            cut = relevant_sentences(self.question, [h.text for h in selected], self.weigher, neighbours=0,
                                     extra_questions=extra, titles=[h.title for h in selected])
            # the own documents of the items a question chooses between are read whole: the
            # value compared may be stated in words the question does not use ("staff"
            # asked, "Employees: 42" said). (Two items asked about together keep the cut:
            # their verdict reads the predicate's own sentences.)
            between = self.read_question.alternatives if self.read_question.shape.kind != "yesno" else ()
            whole_items = {doc_id for item, doc_id in items if item in between} | {
                h.doc_id for h in selected if any(f" {name_key(item)} " in f" {name_key(h.title)} "
                                                  for item in between)}
            selected = [h if h.doc_id in whole_items else replace(h, text=t) for h, t in zip(selected, cut)]
        with self.profiler.stage("names"):
            common = lower_case_words(whole) | written_lower(self.index, [*(h.title for h in selected),
                                                                          *(h.text for h in selected)])
        return selected, unknown, common

    def fitted(self, selected: list[Hit]):
        """``selected`` cut to the budget each, the prompt's own tokens, the chunks' budget,
        and the context that fits the model's window (None without chunks)."""
        llm_config, model = self.ctx.llm_config, self.model
        with self.profiler.stage("token_counting"):
            # The prompt without documents, their fences included (" " stands for them).
            empty_prompt = lexical_messages(self.question, " ", [], self.language)
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
            context = fit_lexical_prompt(self.question, chunks, self.language, model, budget, limit) \
                if chunks else None
        return selected, prompt_tokens, budget, context

    def traced(self, candidates: list[Hit], selected: list[Hit], used: list[Hit], outline: list[str], context,
               prompt_tokens: int, budget: int, linked: list, items: list) -> LexicalTrace:
        config, steps, model, routed = self.config, self.steps, self.model, self.routed
        return LexicalTrace(
            query_tokens=self.index.tokenizer(self.question), procedural=self.procedural,
            boosted=bool(config.boost) if config.boost is not None else self.procedural,
            method=steps["method"], method_reason=steps["method_reason"],
            candidates=[hit_summary(h) for h in candidates[:10]], n_candidates=len(candidates),
            selected=[h.doc_id for h in selected], outline=outline, prompt_tokens=prompt_tokens,
            context_tokens=context.tokens if context else 0, context_budget=budget,
            dropped_chunks=context.dropped if context else 0,
            model=getattr(model, "name", type(model).__name__),
            chat_format=getattr(model, "chat_format", None), answer_language=self.language,
            rerank=steps.get("rerank"), mmr_similarity=steps.get("mmr_similarity"),
            graph=steps.get("graph"),
            bridges={h.doc_id: steps["bridges"].get(h.doc_id, []) for h in used} if "bridges" in steps else None,
            broad={**routed.broad.to_dict(), "route": routed.reason} if routed.broad else None,
            bridge_documents=[b.to_dict() for b in linked] or None,
            item_documents=[{"item": item, "doc_id": doc_id} for item, doc_id in items] or None)

    def short_answer(self, used: list[Hit], common: set[str], trace: LexicalTrace) -> _Found:
        """The short answer the evidence gives: from the sentences that cover the question
        best, or the item a choice picks, or the verdict on two items asked about together
        (``trace.choice``, ``trace.joined``)."""
        weigher, prompted, shape, reads = self.weigher, self.prompted, self.shape, self.reads
        texts, titles = [h.text for h in used], [h.title for h in used]
        sentences = score_sentences(self.reading, texts, weigher, titles)
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
        given = [re.sub(r"['’]s$", "", c.text) for c in name_candidates(self.question)] \
            if self.reading != self.question else []
        extracted = short_answer(self.reading, shape, texts, weigher, sentences=sentences,
                                 exclude=[*self.bridges, *given], common=common) if reads else None
        choices = self.read_question.alternatives if reads and shape.factoid and shape.kind != "yesno" else ()
        if choices:         # a choice between the question's own items: compare what the evidence states
            picked = choose(prompted, choices, texts, titles)
            extracted = ShortAnswer(picked.text, picked.item, picked.sentence, 1.0, best_share) if picked else None
            trace.choice = {"offered": list(choices), "values": picked.values if picked else None}
        asked_together = self.read_question.joined if reads else None
        together = judge_joined(asked_together, texts, titles, weigher.tokenize) if asked_together else None
        if asked_together:  # "Are A and B both ...?", "... the same city?": what the evidence states of each
            trace.joined = {"items": list(asked_together.items), "predicate": asked_together.predicate,
                            "shared": asked_together.shared, **(together.to_dict() if together else {"verdict": None})}
            if together is not None:
                extracted = ShortAnswer(together.text, together.item, together.sentence, 1.0, best_share)
        return _Found(sentences, best_share, extracted, tuple(choices), together)

    def drafted(self, used: list[Hit], outline: list[str], context, found: _Found, retrieved: list[str],
                unknown: list[str], common: set[str]) -> Draft:
        """The draft for the answer stage: the evidence's own answer (a refusal where the
        evidence does not bear on the question), the prompt, the check and what a factoid
        answer is cleaned, read and re-supported with."""
        question, prompted, shape, language, reads = self.question, self.prompted, self.shape, self.language, \
            self.reads
        weigher, extracted, best_share, choices = self.weigher, found.extracted, found.best_share, found.choices
        evidence = [f"{h.title}\n{h.text}" for h in used]
        refusal = REFUSAL[language] if language == "en" else NOT_ENOUGH_VI
        if used and reads and (best_share < NOT_FOUND_SHARE or unknown or (shape.strict and extracted is None)):
            # The evidence does not bear on the question, never names what it asks about, or
            # holds nothing of the kind its own words ask for (a unit, a name).
            evidence_answer = refusal
        elif extracted is not None:
            evidence_answer = f"{extracted.text}\n{extracted.sentence} [{extracted.item}]"
        else:
            evidence_answer = extractive_answer(question, used, self.procedural, weigher=weigher)
        check = grounding_check(evidence + outline, prompted)
        if reads:
            check = reading_check(check, prompted, shape, evidence, extracted, best_share, weigher, choices, unknown,
                                  common, found.together)
        factoid = reads and shape.factoid
        return Draft(evidence_answer=evidence_answer,
                     check=check, prompt=self.prompt(used, context, best_share, refusal),
                     language=language, refusals=(NOT_ENOUGH_VI, REFUSAL["vi"], REFUSAL["en"]),
                     fallback_note=REPLACED_NOTE[language],
                     # A model's short answer that fails, where the evidence holds none of the
                     # asked kind either: nobody read an answer, and the answer says so.
                     fallback_answer=refusal if factoid and shape.kind != "yesno" and extracted is None and used
                     else None,
                     # Each outline step ends with the number of the chunk it was cut from, as
                     # the answer's lines should.
                     cites=[*range(1, len(used) + 1), *outline_sources(outline, [h.text for h in used])],
                     evidence=evidence + outline, retrieved=retrieved,
                     short_answer=extracted.text if extracted and evidence_answer != refusal else None,
                     short_reader=Factoid(prompted, shape, tuple(evidence), weigher, tuple(choices))
                     if factoid else None)

    def prompt(self, used: list[Hit], context, best_share: float,
               refusal: str) -> Callable[[Any], tuple[list[dict], None]] | None:
        """The model's prompt: a factoid question asks for a short answer from the chunks;
        any other, the answer from the chunks and outline fitted to the context."""
        if self.reads and self.shape.factoid and used:
            # Evidence that bears on the question well (a sentence holds half of its weighted
            # words) is not offered a refusal: a small model refuses too readily, and the check
            # still replaces a short answer the evidence does not hold.
            offered = refusal if best_share < WRONG_REFUSAL_SHARE else None
            texts = [f"{h.title}: {h.text}" if h.title else h.text for h in used]

            def short_prompt(_model):
                return short_answer_messages(self.prompted, texts, self.shape.kind, self.language, offered), None

            return short_prompt
        if not (used and context):
            return None
        # The prompt holds what was fitted to the context: the chunks and outline as cut.
        fitted_outline = context.extra.splitlines()
        return lambda _model: (lexical_messages(self.question, context.text, fitted_outline, self.language), None)


def cited_outline(texts: list[str]) -> str:
    """The step outline of ``texts``, each step ending with the number of its text."""
    outline = extract_outline(texts)
    return "\n".join(f"{step} [{n}]" for step, n in zip(outline, outline_sources(outline, texts)))


def fit_lexical_prompt(question: str, chunks: list[str], language: str, model, budget: int, limit: int):
    """The chunks (and the outline cut from them, which shares their budget) that fit
    ``budget``; should the whole prompt, measured as it will be sent, still be over
    ``limit`` tokens, the budget shrinks by the excess and they are fitted again."""
    for _ in range(4):
        context = fit_context(chunks, model.count_tokens, budget, extra=lambda kept: cited_outline(kept))
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


def hit_summary(hit: Hit) -> dict:
    return {"doc_id": hit.doc_id, "score": round(hit.score, 6), "bm25": round(hit.bm25, 6),
            "boost": hit.boost}
