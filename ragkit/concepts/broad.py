"""Whether a question asks about the whole corpus ("what are the main themes of these
documents?", "các chủ đề chính của tài liệu là gì?") rather than about something in it.

Two things must hold, and the verdict says which did not:

1. **A whole-corpus word**: the question carries a word or phrase of ``CORPUS_ASPECT_CUES``
   (themes, topics, overview, summary; chủ đề, tổng quan, tóm tắt, nội dung chính) or
   ``CORPUS_SCOPE_CUES`` (the collection itself: corpus, these documents; các tài liệu, toàn
   bộ), bilingual lexicons of ``ragkit.text.cues``, matched on normalised tokens (lower case,
   accents stripped).
2. **Nothing specific**: the question's word n-grams link to no concept of the graph
   (longest first, case-insensitive, through aliases), except the graph's hubs, which
   describe the whole corpus rather than a part (``common``; in a 5G corpus "5G" is one),
   and spans made only of the lexicon's and function words ("main themes" may itself be a
   concept); it writes no capitalised name the graph does not hold ("Harare", "Máy Phay": a
   name is specific whether or not the corpus knows it); and, for an index of syllable
   bigrams (Vietnamese), none of its bigrams outside the lexicon is a phrase of the
   documents ("máy nén" in "các chủ đề chính về máy nén khí": Vietnamese syllables that
   read as function words once accents are stripped, "nén" as "nên", can keep a phrase out
   of the graph, not out of the index).

Patterns decide only the cue; whether the question names something is read off the graph.

    >>> from ragkit.corpus import Doc
    >>> from ragkit.concepts.graph import ConceptGraph
    >>> graph, _, _ = ConceptGraph.build([Doc("a", "The Bubye River flows in Zimbabwe."),
    ...                                   Doc("b", "Victoria Falls is in Zimbabwe.")], progress=False)
    >>> broad_question("What are the main themes of these documents?", graph).broad
    True
    >>> verdict = broad_question("What are the main topics about the Bubye River?", graph)
    >>> verdict.broad, verdict.specific[0]["concept"]
    (False, 'Bubye River')
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from ..text import VIETNAMESE_FUNCTION_WORDS, tokenize
from ..text.cues import CORPUS_ASPECT_CUES, CORPUS_SCOPE_CUES
from .extract import FUNCTION_WORDS, _is_capitalised, concept_key
from .graph import ConceptGraph

_CUE_TOKENS = frozenset(w for phrase in (*CORPUS_ASPECT_CUES, *CORPUS_SCOPE_CUES) for w in phrase.split())
_QUIET = _CUE_TOKENS | FUNCTION_WORDS | VIETNAMESE_FUNCTION_WORDS
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


@dataclass
class BroadVerdict:
    """Whether a question is about the whole corpus, and why (for the trace)."""

    broad: bool
    reason: str
    cues: list = field(default_factory=list)        # the lexicon's phrases the question carries
    specific: list = field(default_factory=list)    # {"span", "concept", "key", "df"}, {"span", "name"}
                                                    # or {"span", "phrase"}
    common: list = field(default_factory=list)      # linked to hubs, which describe the whole corpus

    def to_dict(self) -> dict:
        return asdict(self)


def corpus_cues(question: str) -> list[str]:
    """The lexicon's phrases a question carries, as the question writes them, in lexicon order.

    >>> corpus_cues("Các chủ đề chính của tài liệu này là gì?")
    ['chủ đề', 'tài liệu này']
    """
    words = [m.group(0) for m in _WORD.finditer(question)]
    plain = [" ".join(tokenize(w)) for w in words]
    found = []
    for phrase in (*CORPUS_ASPECT_CUES, *CORPUS_SCOPE_CUES):
        size = len(phrase.split())
        for i in range(len(words) - size + 1):
            if " ".join(plain[i:i + size]) == phrase:
                found.append(" ".join(words[i:i + size]))
                break
    return found


def broad_question(question: str, graph: ConceptGraph, index=None) -> BroadVerdict:
    """The verdict on ``question`` against ``graph`` (and ``index``, a ``BM25Index``, for its
    syllable bigrams): broad only with a whole-corpus cue and nothing specific named."""
    cues = corpus_cues(question)
    words = [m.group(0) for m in _WORD.finditer(question)]
    keys = [concept_key(w) for w in words]
    plain = [" ".join(tokenize(w)) for w in words]
    taken = [False] * len(words)
    hubs = set(graph.hubs)
    specific, common = [], []
    for size in range(min(6, len(words)), 0, -1):
        for i in range(len(words) - size + 1):
            if any(taken[i:i + size]) or all(p in _QUIET or not p for p in plain[i:i + size]):
                continue
            key = " ".join(k for k in keys[i:i + size] if k)
            concept = graph.concept_of(key) if key else None
            if concept is None and key not in hubs:
                continue
            for j in range(i, i + size):
                taken[j] = True
            span = " ".join(words[i:i + size])
            if concept is None:
                common.append({"span": span, "hub": key})
            else:
                specific.append({"span": span, "concept": graph.labels[concept], "key": graph.keys[concept],
                                 "df": int(graph.df[concept])})
    for i, word in enumerate(words):
        if i and not taken[i] and _is_capitalised(word) and plain[i] not in _QUIET:
            specific.append({"span": word, "name": "a name the graph does not hold"})
    specific += _index_phrases(words, plain, taken, index)
    if not cues:
        reason = "no whole-corpus word (themes, topics, overview, summary, chủ đề, tổng quan, tóm tắt ...)"
    elif specific:
        named = ", ".join(f"'{s['span']}'" for s in specific[:3])
        reason = f"asks for {', '.join(repr(c) for c in cues)} but names {named}: a question about a part of the corpus"
    else:
        reason = (f"asks for {', '.join(repr(c) for c in cues)} and names nothing specific"
                  + (f" (only {', '.join(repr(c['span']) for c in common)}, common to the corpus)" if common else ""))
    return BroadVerdict(bool(cues) and not specific, reason, cues, specific, common)


def _index_phrases(words: list[str], plain: list[str], taken: list[bool], index) -> list[dict]:
    """The question's syllable bigrams that a bigram index holds (in fewer than half of its
    chunks), leaving out those with a lexicon word and those of two function words."""
    tokenizer = getattr(index, "tokenizer", None)
    if tokenizer is None or not getattr(tokenizer, "bigrams", False):
        return []
    out = []
    for i in range(len(words) - 1):
        a, b = plain[i], plain[i + 1]
        if taken[i] and taken[i + 1] or not a or not b or " " in a + b or a in _CUE_TOKENS or b in _CUE_TOKENS \
                or a in VIETNAMESE_FUNCTION_WORDS and b in VIETNAMESE_FUNCTION_WORDS:
            continue
        term = index.vocab.get(f"{a}_{b}")
        df = 0 if term is None else int(index.weights.indptr[term + 1] - index.weights.indptr[term])
        if 0 < df < len(index) / 2:
            out.append({"span": f"{words[i]} {words[i + 1]}", "phrase": f"in {df} of {len(index)} chunks"})
    return out


__all__ = ["BroadVerdict", "broad_question", "corpus_cues"]
