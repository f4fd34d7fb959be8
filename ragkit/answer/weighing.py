"""Weighing the evidence's sentences against a question: the question's words weighted by
their IDF in the index when there is one (``Weigher``), how much of the question a text
covers and what it leaves open (``coverage``), each sentence scored (``score_sentences``),
and each text cut to the sentences that bear on the question, with their neighbours
(``relevant_sentences``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..text import (ENGLISH_STOPWORDS, LIST_MARKER, VIETNAMESE_FUNCTION_WORDS, split_sentences,
                    strip_accents)
from ..text.cues import ANAPHORS



# ----------------------------------------------------------------------------- sentences
# Evidence is cut into sentences by ``ragkit.text.split_sentences``, the splitter answers and
# their claims are cut by too.

Tokenize = Callable[[str], list]


def default_tokenize(text: str) -> list[str]:
    """Content words of a text, accent-stripped and lower-cased, function words out."""
    words = re.findall(r"[a-z0-9]+", strip_accents(text.lower()))
    return [w for w in words if w not in ENGLISH_STOPWORDS and w not in VIETNAMESE_FUNCTION_WORDS
            and w not in QUESTION_ONLY]


# Words that only make a question a question.
QUESTION_ONLY = frozenset("""what which who whom whose when where why how many much tell name please
    bao nhieu khi nao dau ai gi""".split())


@dataclass
class Weigher:
    """Word weights for coverage: the index's IDF where it knows the word (at least a
    floor, so very common words still count a little), else the highest IDF (a word the
    corpus lacks is as telling as its rarest)."""

    tokenize: Tokenize = default_tokenize
    idf: Callable[[str], float | None] | None = None
    # The opening sentence of the document a name titles ("Djibouti" -> "Djibouti ... is a
    # country in the Horn of Africa"): what the corpus says a candidate is; None: unknown.
    lead: Callable[[str], str | None] | None = None
    highest: float = 4.0        # the highest IDF of the corpus (what a word it lacks weighs)

    def weights(self, text: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for w in self.tokenize(text):
            if w in QUESTION_ONLY:
                continue
            weight = self.idf(w) if self.idf else None
            out[w] = max(weight if weight is not None else 4.0, 0.3)
        return out

    @classmethod
    def for_index(cls, index) -> "Weigher":
        """Weights from a ``BM25Index``: its tokenizer and IDF."""
        vocab, idf = index.vocab, index.idf
        top = float(idf.max()) if len(idf) else 4.0

        def lookup(word: str) -> float:
            at = vocab.get(word)
            return float(idf[at]) if at is not None else top

        def tokenize(text: str) -> list[str]:
            return [w for w in index.tokenizer(text) if w not in QUESTION_ONLY and "_" not in w]

        def lead(name: str) -> str | None:
            doc = index.titled(name) if hasattr(index, "titled") else None
            return split_sentences(doc.text)[0] if doc is not None and doc.text.strip() else None

        return cls(tokenize, lookup, lead, top)


@dataclass
class Coverage:
    """How much of a question (by word weight) a text covers, and the words it leaves open."""

    share: float
    covered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def coverage(question_weights: dict[str, float], text: str, weigher: Weigher) -> Coverage:
    total = sum(question_weights.values())
    if not total:
        return Coverage(0.0)
    words = set(weigher.tokenize(text))
    covered = [w for w in question_weights if w in words]
    return Coverage(sum(question_weights[w] for w in covered) / total, covered,
                    [w for w in question_weights if w not in words])


@dataclass
class Sentence:
    item: int          # 1-based evidence number
    position: int      # its place in the item
    text: str
    share: float       # of the question's weight it covers
    covered: list[str] = field(default_factory=list)


def score_sentences(question: str, texts: Sequence[str], weigher: Weigher,
                    titles: Sequence[str] = ()) -> list[Sentence]:
    """Every sentence of ``texts`` with the share of the question it covers, read with its
    text's title (``titles[n]``: a chunk's title is the context of each of its sentences). A
    list item's marker ("1.", "-") says nothing: it is left out."""
    weights = weigher.weights(question)
    out = []
    for n, text in enumerate(texts, 1):
        title = titles[n - 1] if n - 1 < len(titles) else ""
        for pos, sentence in enumerate(split_sentences(text)):
            sentence = LIST_MARKER.sub("", sentence, count=1)
            cov = coverage(weights, f"{title} {sentence}", weigher)
            out.append(Sentence(n, pos, sentence, cov.share, cov.covered))
    return out


def relevant_sentences(question: str, texts: Sequence[str], weigher: Weigher, per_item: int = 2,
                       neighbours: int = 1, extra_questions: Sequence[str] = (),
                       titles: Sequence[str] = ()) -> list[str]:
    """Each text cut to its ``per_item`` best sentences for ``question`` (and for any
    ``extra_questions``: a later step's query) with ``neighbours`` sentences either side,
    in reading order, "…" where text was left out; a text none of whose sentences shares a
    question word keeps its first sentence (it was retrieved for a reason). A kept sentence
    that leans on an earlier one for its subject (``refers_back``) brings the text's first
    sentence too: that is where the text names what it is about."""
    out = []
    for n, text in enumerate(texts):
        title = titles[n] if n < len(titles) else ""
        sentences = split_sentences(text)
        if len(sentences) <= per_item + 2 * neighbours:
            out.append(text.strip())
            continue
        best: set[int] = set()
        for q in (question, *extra_questions):
            weights = weigher.weights(q)
            scored = sorted(((coverage(weights, f"{title} {s}", weigher).share, -i, i)
                             for i, s in enumerate(sentences)), reverse=True)
            best.update(i for share, _, i in scored[:per_item] if share > 0)
        if not best:
            best = {0}
        if 0 not in best and any(refers_back(sentences[i], title) for i in best):
            best.add(0)
        keep = sorted({j for i in best for j in range(i - neighbours, i + neighbours + 1)
                       if 0 <= j < len(sentences)})
        parts, last = [], -1
        for j in keep:
            if last >= 0 and j != last + 1:
                parts.append("…")
            parts.append(sentences[j])
            last = j
        out.append("\n\n".join(parts))
    return out


def refers_back(sentence: str, title: str = "") -> bool:
    """Whether ``sentence`` takes its subject from an earlier sentence of its text: it opens
    with a pronoun or a demonstrative (``ANAPHORS``), or names its text's subject (the
    ``title``'s capitalised words, without a bracketed qualifier; of a section path, its
    last part) only in part ("Quill was
    ..." in the text titled "Mara Quill")."""
    words = re.findall(r"[\w'’-]+", sentence)
    if not words:
        return False
    if words[0].lower() in ANAPHORS:
        return True
    subject = re.sub(r"\s*\([^()]*\)\s*$", "", title.rsplit(" > ", 1)[-1])    # a section path's last part
    name = [w.lower() for w in re.findall(r"[\w'’-]+", subject) if w[:1].isupper()]
    said = {w.lower() for w in words}
    return len(name) > 1 and any(w in said for w in name) and not all(w in said for w in name)
