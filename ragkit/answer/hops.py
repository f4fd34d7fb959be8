"""A second step read from what the first step's evidence lacks, not from the question's
grammar.

The first step retrieves for the whole question. Where its evidence holds a candidate of the
asked kind (a person for "who", a date for "when"), nothing more is needed: a second step
taken whenever the best sentence left part of the question unread lowered the short F1 of
every set measured, single-hop sets most (their answers stand in sentences that share few of
the question's words). Where it holds none, the sentence that bears on the question most
often names the entity the question reaches its answer through
(the bridge: "the single" of "who produced the single that X recorded" is a title the
question never writes). The second step retrieves for that name together with the
question's words none of its best sentences holds ("produced"): what is still missing, asked
of what the evidence found. The first step's documents all stay and the second step's best
new document joins them; the model is asked the question itself over both.

Nothing here reads the question's clause structure: the signals are the evidence's coverage
of the question, the names it writes that the question does not, and the words it leaves
open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..text.words import POSSESSIVE, name_key
from .weighing import QUESTION_ONLY, Weigher, score_sentences
from .candidates import date_candidates, lower_case_words, name_candidates

# Sentences of the first step's evidence read for a bridge name (the best for the question).
BRIDGE_SENTENCES = 2
# A bridge name's rarest word has at least this share of the corpus's highest IDF: a name
# written in many of its documents ("American" across a corpus of biographies) finds nothing new.
TELLING_IDF = 0.5


@dataclass(frozen=True)
class FollowUp:
    """A second step's query: the bridge name the first step's evidence gave, the question's
    words its best sentences left open, and the query they make; the share of the question
    the best sentence held."""

    bridge: str
    missing: tuple[str, ...]
    share: float

    @property
    def query(self) -> str:
        return " ".join((self.bridge, *self.missing))

    def to_dict(self) -> dict:
        return {"bridge": self.bridge, "missing": list(self.missing), "query": self.query,
                "share": round(self.share, 4)}


def follow_up(question: str, texts: Sequence[str], titles: Sequence[str], weigher: Weigher,
              answered: bool, bears: float = 0.0) -> FollowUp | None:
    """What a second step should retrieve for, from the first step's evidence ``texts``
    (with their ``titles``), or None when it needs none: the evidence ``answered`` (it holds
    a candidate of the asked kind), no sentence holds ``bears`` of the question (the share below which the
    evidence is taken not to bear on it), or no sentence names anything the question does
    not."""
    if answered:
        return None
    sentences = sorted(score_sentences(question, texts, weigher, titles), key=lambda s: (-s.share, s.item))
    if not sentences or sentences[0].share <= 0 or sentences[0].share < bears:
        return None         # the evidence does not bear on the question: its names lead nowhere
    question_key = f" {name_key(question)} "
    question_words = set(weigher.tokenize(question))
    weights = weigher.weights(question)
    read = {w for sentence in sentences[:BRIDGE_SENTENCES] for w in sentence.covered}
    # A capitalised word the evidence also writes in lower case opens a sentence, it names nothing.
    common = lower_case_words(texts)
    for sentence in sentences[:BRIDGE_SENTENCES]:
        title = titles[sentence.item - 1] if sentence.item - 1 < len(titles) else ""
        for candidate in name_candidates(sentence.text, common):
            name = POSSESSIVE.sub("", candidate.text).strip()
            words = weigher.tokenize(name)
            if not words or f" {name_key(name)} " in question_key or all(w in question_words for w in words) \
                    or name_key(name) == name_key(title.split(">")[-1]):
                continue        # the question's own name, or what the text is about: retrieval had it
            if date_candidates(name) or not _telling(words, weigher):
                continue        # a date, or a name most of the corpus writes ("American"): it leads nowhere
            open_words = [w for w in weights if w not in read and w not in words]
            missing = tuple(_question_words(question, open_words, weigher))
            if not missing:
                continue
            return FollowUp(name, missing, sentence.share)
    return None


def _telling(words: Sequence[str], weigher: Weigher) -> bool:
    """Whether a name's rarest word is rare in the corpus: an IDF of at least ``TELLING_IDF``
    of the corpus's highest (a name without the corpus's IDF counts)."""
    if weigher.idf is None:
        return True
    return max((weigher.idf(w) or 0.0) for w in words) >= TELLING_IDF * weigher.highest


def _question_words(question: str, tokens: Sequence[str], weigher: Weigher) -> list[str]:
    """The words of ``question``, as it writes them, whose tokens are among ``tokens``."""
    wanted = set(tokens)
    out: list[str] = []
    for word in re.findall(r"[\w'’-]+", question):
        if word.lower() in QUESTION_ONLY:
            continue            # "how many": what makes it a question, not what it asks about
        if set(weigher.tokenize(word)) & wanted and word not in out:
            out.append(word)
    return out
