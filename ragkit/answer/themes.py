"""Answers to questions about a whole corpus from its communities' summaries: the prompt's
task, the extractive themes answer (a lead-in and a summary per community, each cited) and
its check (every theme line must hold words of the summary it cites)."""

from __future__ import annotations

from typing import TypedDict

from ..llm.prompts import (REFUSAL)
from ..retrieval.community_search import CommunityHit
from .stage import NOT_ENOUGH_VI, Check, grounding_check


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
        if verdict.passed and not any(c.verdict == "supported" and c.cited for c in verdict.verdicts):
            return Check(False, "no claim cites the evidence that supports it", verdict.details, verdict.claims)
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


class CommunitySummary(TypedDict):
    """A retrieved community as the trace shows it: its id, label and size, the chunks whose
    home it is (of ``of_chunks``), its score, top concepts, representative chunks, the
    question's concepts it holds and its extractive summary."""

    id: int
    label: str
    size: int
    chunks: int
    of_chunks: int
    score: float
    concepts: list[str]
    representatives: list[str]
    linked: list[str]
    summary: list[dict[str, str]]


def community_summary(hit: CommunityHit, chunks: int) -> CommunitySummary:
    c = hit.community
    return {"id": c.id, "label": c.label, "size": c.size, "chunks": c.chunks, "of_chunks": chunks,
            "score": round(hit.score, 6), "concepts": [t["concept"] for t in c.top_concepts],
            "representatives": [r["chunk_id"] for r in c.representatives], "linked": hit.linked,
            "summary": c.summary}
