"""Lexical RAG (the lexical RAG design): question → retrieval (BM25 + structural boost,
dense, fused; ``ragkit.retrieval.search``) → MMR → step outline → token-budgeted context →
the shared answer stage (model answer, Vietnamese re-ask, grounding check, or the
extractive answer).

Each stage runs inside the shared profiler, so ``timings_ms`` is the design's latency table
(retrieval, MMR, token counting, generation, post-processing, check).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..answering import Check, Draft, grounding_check
from ..config import CONCEPT_METHODS, GRAPH_METHODS, LexicalConfig, LLMConfig
from ..errors import ContextTooLongError
from ..llm.base import LLM
from ..llm.budget import fit_context
from ..llm.prompts import (REFUSAL, answer_language, answer_messages, extract_outline, format_chunk,
                           lexical_messages, numbered_evidence)
from ..retrieval.bm25 import BM25Index, Hit
from ..retrieval.boosting import is_procedural_query
from ..retrieval.rerank import make_reranker
from ..retrieval.communities import CommunityHit, Route, load_communities, rank_communities, route
from ..retrieval.search import load_concepts, load_dense, load_index, retrieve
from ..text import VIETNAMESE_FUNCTION_WORDS, normalize, tokenize
from .base import NOT_ENOUGH_VI, Answer, AskContext, Citation, Gathered, Pipeline, Sources, Trace

# Template tokens around each chat message (role markers, newlines) that a plain count of
# the message text does not see.
_TEMPLATE_OVERHEAD = 16
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


class LexicalPipeline(Pipeline):
    """Lexical RAG over a BM25 index (with dense vectors when it has them)."""

    name = "lexical"
    source = "index"
    source_what = "an index folder"
    source_how = "ragkit index build"
    flag = "--index"

    def load(self, where: str, sources: Sources) -> tuple[BM25Index, Any, Any, Any]:
        index = load_index(where)
        dense = load_dense(index, where)
        return index, dense, load_concepts(where, dense), load_communities(where)

    def config_from(self, request) -> LexicalConfig:
        return LexicalConfig(k=request.k, method=request.method, rerank=request.rerank,
                             rerank_depth=request.rerank_depth)

    def gather(self, question: str, source, config: LexicalConfig | None, ctx: AskContext) -> Gathered:
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
        candidates, selected = retrieve(index, question, config, profiler, dense, reranker, steps, concepts)
        procedural = is_procedural_query(question)
        language = answer_language(question, "vi")
        with profiler.stage("token_counting"):
            empty_prompt = lexical_messages(question, "", [], language)
            prompt_tokens = sum(model.count_tokens(m["content"]) for m in empty_prompt) \
                + _TEMPLATE_OVERHEAD * len(empty_prompt)
            room = llm_config.n_ctx - llm_config.max_tokens - prompt_tokens
            if room <= 0:
                raise ContextTooLongError(
                    f"question: too long for the model's context ({prompt_tokens} prompt tokens + "
                    f"{llm_config.max_tokens} for the answer > n_ctx {llm_config.n_ctx})")
            # The design reserves 150 tokens for the instructions; a longer question takes more.
            budget = llm_config.n_ctx - llm_config.max_tokens - max(prompt_tokens, llm_config.prompt_tokens)
            chunks = [format_chunk(i + 1, h.title, h.text) for i, h in enumerate(selected)]
            # The outline is cut from the same chunks, so it shares their budget.
            context = fit_context(chunks, model.count_tokens, budget,
                                  extra=lambda kept: "\n".join(extract_outline(kept))) if chunks else None
            outline = extract_outline(chunks[: context.kept]) if context else []
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
            broad={**routed.broad.to_dict(), "route": routed.reason} if routed.broad else None)
        # Each outline step ends with the number of the chunk it was cut from, as the answer's
        # lines should.
        step_sources = outline_sources(outline, [h.text for h in used])
        cited_outline = [f"{step} [{n}]" for step, n in zip(outline, step_sources)]
        prompt = (lambda _model: (lexical_messages(question, context.text, cited_outline, language), None)
                  ) if used else None
        draft = Draft(evidence_answer=extractive_answer(question, used, procedural),
                      check=grounding_check(evidence + outline, question), prompt=prompt,
                      language=language, refusals=(NOT_ENOUGH_VI, REFUSAL["vi"], REFUSAL["en"]),
                      fallback_note=_REPLACED_NOTE[language],
                      cites=[*range(1, len(used) + 1), *step_sources], evidence=evidence + outline)
        return Gathered(draft, citations, trace)

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
            prompt_tokens = sum(model.count_tokens(m["content"]) for m in empty) + _TEMPLATE_OVERHEAD * len(empty)
            if llm_config.n_ctx - llm_config.max_tokens - prompt_tokens <= 0:
                raise ContextTooLongError(
                    f"question: too long for the model's context ({prompt_tokens} prompt tokens + "
                    f"{llm_config.max_tokens} for the answer > n_ctx {llm_config.n_ctx})")

        def prompt(model: LLM):
            kept = hits
            while True:       # the last themes leave until the prompt fits the context
                items = len({cid for h in kept for cid in h.community.cited_chunks()})
                messages = answer_messages(THEMES_TASK[language], question, numbered_evidence(evidence[:items]),
                                           language, None)
                tokens = sum(model.count_tokens(m["content"]) for m in messages) + _TEMPLATE_OVERHEAD * len(messages)
                if tokens <= llm_config.n_ctx - llm_config.max_tokens or len(kept) == 1:
                    return messages, items
                kept = kept[:-1]

        trace = LexicalTrace(
            query_tokens=index.tokenizer(question), method="communities", method_reason=routed.reason,
            selected=order, prompt_tokens=prompt_tokens, model=getattr(model, "name", type(model).__name__),
            chat_format=getattr(model, "chat_format", None), answer_language=language,
            broad={**routed.broad.to_dict(), "route": routed.reason} if routed.broad else None,
            communities=[_community_summary(h, communities.chunks) for h in hits])
        draft = Draft(evidence_answer=themes_answer(hits, number, language),
                      check=themes_check(evidence, question), prompt=prompt if evidence else None,
                      language=language, refusals=(NOT_ENOUGH_VI, REFUSAL["vi"], REFUSAL["en"]),
                      fallback_note=_REPLACED_NOTE[language], evidence=evidence)
        return Gathered(draft, citations, trace)


# A question about the whole corpus: the model writes the themes from their summaries.
THEMES_TASK = {
    "en": ("You describe the main themes of a document collection. The evidence is sentences taken from "
           "its documents, grouped by theme, the largest theme first. Write one sentence for each theme, "
           "in the evidence's own words."),
    "vi": ("Bạn mô tả các chủ đề chính của một bộ tài liệu. Bằng chứng là các câu trích từ tài liệu, "
           "xếp theo chủ đề, chủ đề lớn nhất trước. Viết một câu cho mỗi chủ đề, dùng chính từ ngữ của bằng chứng."),
}
_THEMES_HEAD = {"en": "Main themes:", "vi": "Các chủ đề chính:"}
_LEAD_IN_WORDS = 4      # a theme's lead-in ("Kentucky, West Virginia, Ohio:") names, claims nothing


def themes_check(evidence: list[str], question: str):
    """The grounding check, and one thing more: some claim must be supported by an evidence
    item it cites. Theme names the model makes up ("Geographical features and borders") are
    claims no sentence supports; what is left once they are dropped must still say
    something from the documents, not only repeat the question ("The main themes are:")."""
    check = grounding_check(evidence, question)

    def judge(text: str) -> Check:
        verdict = check(text)
        if verdict.passed and not any(c.get("verdict") == "supported" and c.get("cited")
                                      for c in verdict.details.get("claims", ())):
            return Check(False, "no claim cites the evidence that supports it", verdict.details)
        return verdict

    return judge


def theme_lead_in(community) -> str:
    """A theme's name in an answer: its top concepts, as many as fit in ``_LEAD_IN_WORDS``
    words (at least one)."""
    names: list[str] = []
    for c in community.top_concepts:
        if names and len(" ".join([*names, c["concept"]]).split()) > _LEAD_IN_WORDS:
            break
        names.append(c["concept"])
    return ", ".join(names)


def themes_answer(hits: list[CommunityHit], number: dict[str, int], language: str) -> str:
    """The evidence answer to a question about the whole corpus: each theme's lead-in, then
    its summary's sentences, each with the [n] of its chunk."""
    if not hits:
        return NOT_ENOUGH_VI if language == "vi" else REFUSAL["en"]
    lines = [_THEMES_HEAD[language]]
    for i, h in enumerate(hits, 1):
        lines.append(f"{i}. {theme_lead_in(h.community)}:")
        lines.append(" ".join(f"{s['text']} [{number[s['chunk_id']]}]" for s in h.community.summary))
    return "\n".join(line for line in lines if line)


def _community_summary(hit: CommunityHit, chunks: int) -> dict:
    c = hit.community
    return {"id": c.id, "label": c.label, "size": c.size, "chunks": c.chunks, "of_chunks": chunks,
            "score": round(hit.score, 6), "concepts": [t["concept"] for t in c.top_concepts],
            "representatives": [r["chunk_id"] for r in c.representatives], "linked": hit.linked,
            "summary": c.summary}


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
            config.method in GRAPH_METHODS or communities is not None) else None
    return LexicalPipeline().ask(question, (index, dense, concepts, communities), config, ctx)


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


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LIST_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)]|bước\s+\d+|buoc\s+\d+)", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    """Sentences of a chunk: hard-wrapped lines are joined, list lines stand alone."""
    sentences = []
    for para in re.split(r"\n\s*\n", text):
        lines = [ln.strip() for ln in para.splitlines() if ln.strip()]
        if any(_LIST_LINE.match(ln) for ln in lines):
            sentences.extend(lines)
        else:
            sentences.extend(s for s in _SENTENCE_END.split(" ".join(lines)) if s)
    return sentences


def extractive_answer(question: str, hits: list[Hit], procedural: bool,
                      max_sentences: int = 3) -> str:
    """An answer made only of the evidence's own sentences, each with its [n] citation.

    Procedural questions get the numbered steps of the best chunk that has steps (and of the
    chunks of the same section); other questions get the sentences that share the most
    words with the question, in reading order.
    """
    if not hits:
        return NOT_ENOUGH_VI
    if procedural:
        for rank, hit in enumerate(hits):
            steps = extract_outline([hit.text])
            if not steps:
                continue
            lines = [f"{i}) {s.split(':', 1)[1].strip()} [{rank + 1}]" for i, s in enumerate(steps, 1)]
            for later, other in enumerate(hits[rank + 1:], rank + 2):
                if other.title == hit.title and other.source == hit.source:
                    for s in extract_outline([other.text]):
                        lines.append(f"{len(lines) + 1}) {s.split(':', 1)[1].strip()} [{later}]")
            head = hit.title.split(" > ")[-1] if hit.title else "Các bước"
            return f"{head}:\n" + "\n".join(lines)
    q = set(tokenize(question)) - VIETNAMESE_FUNCTION_WORDS
    scored = []
    for rank, hit in enumerate(hits):
        for pos, sentence in enumerate(split_sentences(hit.text)):
            words = set(tokenize(sentence))
            overlap = len(q & words)
            if overlap:
                scored.append((-overlap, rank, pos, sentence.strip(), rank + 1))
    if not scored:
        return NOT_ENOUGH_VI
    best = sorted(scored)[:max_sentences]
    best.sort(key=lambda x: (x[1], x[2]))
    return " ".join(f"{s.rstrip()} [{n}]" for *_, s, n in best)
