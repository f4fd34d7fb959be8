"""The optional rerank stage: the language model judges each of the top candidates.

No cross-encoder ships inside a PyPI wheel, so the judge is the GGUF we already have (or the
LLM server in ``RAGKIT_LLM_URL``). For each candidate the model reads the question and the
passage and is asked for one word, Yes or No; the candidate's rerank score is the log-odds of
the next token being Yes rather than No:

    score = log Σ P(yes variants) − log Σ P(no variants)

A pointwise relevance judgement read from the next-token distribution, as in
Nogueira et al., "Document Ranking with a Pretrained Sequence-to-Sequence Model" (2020).
Nothing is generated, so one candidate costs one prompt evaluation; the prompts share their
start (instructions and question), which the in-process model evaluates once per question.

The reranked order is fused with the retrieval order by reciprocal rank (k = 60): a small
judge then refines the ranking instead of overruling it (``bench/rerank.py`` measures both).
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Callable, Protocol, Sequence

from ..config import RERANKS
from ..errors import InputError
from ..llm.prompts import inert, inert_for
from .fusion import rrf

DEFAULT_DEPTH = 20
PASSAGE_WORDS = 160          # each passage is cut to its first 160 words (about 220 tokens)

YES = ("Yes", "yes", " Yes", " yes", "YES")
NO = ("No", "no", " No", " no", "NO")

_SYSTEM = ("You judge whether a passage is relevant to a question. "
           "Reply with one word: Yes or No.")


class Judge(Protocol):
    """What the reranker needs from a model: next-token log-probabilities of a few choices."""

    def choice_logprobs(self, prompt: str, choices: Sequence[str]) -> list[float]: ...


def rerank_prompt(question: str, title: str, text: str, words: int = PASSAGE_WORDS,
                  clean: Callable[[str], str] = inert) -> str:
    """The ChatML prompt for one candidate, ending where the assistant's one-word reply
    starts; ``clean`` makes the question and the passage plain text (``llm.prompts.inert_for``
    the model asked: no marker of its template in them)."""
    body = " ".join(text.split()[:words])
    passage = clean(f"{title}\n{body}" if title and not body.startswith(title) else body)
    user = (f"Question: {clean(question)}\n\nPassage: {passage}\n\n"
            "Is the passage relevant to the question? Reply Yes or No.")
    return (f"<|im_start|>system\n{_SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def yes_no_logodds(logprobs: Sequence[float]) -> float:
    """log P(yes) − log P(no) from the log-probabilities of ``YES + NO`` in that order."""
    return _logsumexp(logprobs[: len(YES)]) - _logsumexp(logprobs[len(YES):])


def rerank_order(logodds: Sequence[float], fuse: bool = True) -> list[tuple[int, float]]:
    """Positions of judged passages (in retrieval order) in their new order, with their new
    score: the RRF of the retrieval order and the judge's order, or the log-odds alone."""
    by_judge = sorted(range(len(logodds)), key=lambda i: (-logodds[i], i))
    if not fuse:
        return [(i, logodds[i]) for i in by_judge]
    return rrf([list(range(len(logodds))), by_judge])


class LLMReranker:
    """Reorders the top ``depth`` candidates by the model's Yes/No log-odds, fused with their
    retrieval order."""

    def __init__(self, judge: Judge, depth: int = DEFAULT_DEPTH, fuse: bool = True):
        if depth < 1:
            raise InputError(f"rerank_depth: must be at least 1, got {depth}")
        self.judge = judge
        self.depth = depth
        self.fuse = fuse

    def scores(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """The Yes/No log-odds of each (title, text) passage for ``question``."""
        clean = partial(inert_for, self.judge)
        return [yes_no_logodds(self.judge.choice_logprobs(rerank_prompt(question, title, text, clean=clean), YES + NO))
                for title, text in passages]

    def order(self, question: str, passages: Sequence[tuple[str, str]]) -> tuple[list[tuple[int, float]], list[float]]:
        """The top ``depth`` passages' positions in their new order with their new scores (the
        RRF of both orders, or the log-odds when not fusing), and each judged passage's
        log-odds by original position. Passages past ``depth`` are not judged."""
        logodds = self.scores(question, passages[: self.depth])
        return rerank_order(logodds, self.fuse), logodds

    def rerank(self, question: str, hits: Sequence) -> tuple[list, list[dict]]:
        """The top ``depth`` hits reordered (their score the new one), and a trace row per
        judged hit: doc_id, log-odds, rank before and after (from 1)."""
        order, logodds = self.order(question, [(h.title, h.text) for h in hits])
        after = {i: rank for rank, (i, _) in enumerate(order, 1)}
        trace = [{"doc_id": hits[i].doc_id, "logodds": round(logodds[i], 4), "before": i + 1,
                  "after": after[i]} for i in range(len(logodds))]
        return [replace(hits[i], score=float(score)) for i, score in order], trace


def make_reranker(kind: str, llm, depth: int = DEFAULT_DEPTH) -> LLMReranker | None:
    """The reranker for ``--rerank`` ("none": no rerank stage)."""
    if kind not in RERANKS:
        raise InputError(f"--rerank: must be one of {', '.join(RERANKS)}, got {kind!r}")
    if kind == "none":
        return None
    if not hasattr(llm, "choice_logprobs"):
        raise InputError(f"--rerank {kind}: the model {getattr(llm, 'name', llm)!r} cannot score choices")
    return LLMReranker(llm, depth)
