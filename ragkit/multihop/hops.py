"""Hops and how a relation path reads against a question: a hop is a relation taken
forward or backward (``Hop``), each hop is weighed against the question's words by how the
question reads that relation and which way it asks (``relation_reading``, ``hop_weights``),
and a path scores by the best in-order matching of its hops to the words
(``monotone_alignment``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from ..text import normalize, strip_accents
from ..text.chains import PREPOSITIONS, stem_shared


def name_key(text: str) -> str:
    """Lowercase, accent-free words; "Marie_Curie's" → "marie curie"."""
    text = re.sub(r"['’]s\b", " ", normalize(text.replace("_", " ")))
    return " ".join(re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", text))


@lru_cache(maxsize=65536)
def name_words(name: str) -> tuple[str, ...]:
    """A node or relation name as lowercase, accent-free words: "directed_by" → (directed, by)."""
    return tuple(name_key(name).replace("-", " ").split())


def monotone_alignment(sims: np.ndarray) -> float:
    """The largest total similarity of matching hops to words in order: hop i to word j and
    hop i' > i to word j' > j, each used once, some left out (a weighted longest common
    subsequence, O(hops × words)). ``sims`` is hops × words.

    >>> monotone_alignment(np.array([[0.0, 1.0], [1.0, 0.0]]))
    1.0
    """
    row = np.zeros(sims.shape[1] + 1)
    for hop in sims:
        row = extend_alignment(row, hop)
    return float(row[-1])


def extend_alignment(row: np.ndarray, hop: np.ndarray) -> np.ndarray:
    """The alignment row after one more hop: ``new[j]`` is the best total with the words
    before ``j``, from ``row`` (the same without this hop) and this hop's similarities."""
    new = np.zeros_like(row)
    for j in range(1, len(row)):
        new[j] = max(new[j - 1], row[j], row[j - 1] + hop[j - 1])
    return new


INVERSE = "^-1"
# How much of a word's similarity a hop keeps when the way the question uses that word reads the
# relation the other way round, and what a backward hop keeps where the question asks for one
# without saying its direction (see hop_weights).
AGAINST_READING, UNMARKED_BACKWARD, UNASKED_BACKWARD = 0.5, 0.9, 0.0
# The share of a relation's sampled subjects (or objects) a kind word must describe to be the
# kind of that end, and how many of its edges are sampled.
END_KIND_SHARE, END_SAMPLE = 0.5, 40
# How close (rescaled cosine) a kind word must be to the asked one to count as the same kind.
KIND_SIMILARITY = 0.62


@dataclass(frozen=True, order=True)
class Hop:
    """One step of a relation path: along an edge (``forward``) or against it. Written as the
    relation's name, with ``^-1`` when read backwards ("starring^-1": the films someone
    starred in)."""

    relation: str
    forward: bool = True

    def __str__(self) -> str:
        return self.relation if self.forward else f"{self.relation}{INVERSE}"


def relation_reading(relation: str, unit: str, cued: frozenset[tuple[str, str]],
                     after_name: bool = False) -> bool | None:
    """Which way the question reads ``relation`` where it uses the word ``unit``: a relation
    named for what its subject is or does, ending in a preposition ("directed_by", "born_in",
    "subsidiary_of"), is read backwards when the question writes its word followed by that
    preposition and a phrase ("the films directed by X": X is the object, the films the
    subjects) and forwards when it writes the word without it ("the director of X", "the city X
    was born in"). A passive name ("directed_by") used as an active verb after the name ("the
    films X directed", "which films did X direct": ``after_name``) has the name as its agent,
    the object: backwards. None: nothing to say (the relation ends in no preposition, or the
    word is not the relation's). ``cued`` holds the question's (word, preposition) pairs that
    a phrase follows."""
    words = name_words(relation)
    if len(words) < 2 or words[-1] not in PREPOSITIONS:
        return None
    last = unit.split()[-1]
    if not any(stem_shared(last, w) for w in words[:-1]):
        return None
    if (last, words[-1]) in cued:
        return False
    return not (words[-1] == "by" and after_name)


def hop_weights(hops: list[Hop], units: list[str], cued: frozenset[tuple[str, str]],
                after_name: frozenset[str] = frozenset(),
                subject_kind: Callable[[str, str], bool] | None = None) -> np.ndarray:
    """hops × units: the share of each word's similarity a hop keeps, by direction (see
    :func:`relation_reading`; ``after_name``: the words a clause puts after the name).

    A hop along its edge is always read. A hop against it is read only where the question
    asks for one: its word and preposition name the relation and a phrase follows ("the films
    directed by X", :func:`relation_reading`), the question writes the relation's own
    preposition after its word with a phrase after it ("the studios located in X" for
    ``based_in``), the name is the subject of a clause that uses the word ("the company X
    runs": the clause relates the name to the noun before it either way round), or the word
    names the kind of thing the relation's subjects are (``subject_kind(relation, word)``:
    "the rivers of X" for ``flows_through``, whose subjects are rivers). Elsewhere ("X's
    son", "the nationality of X") the question reads a relation from the name forwards, and
    a hop against an edge keeps nothing."""
    weights = np.ones((len(hops), len(units)))
    for i, hop in enumerate(hops):
        name = name_words(hop.relation)
        for j, unit in enumerate(units):
            word = strip_accents(unit.lower())
            reads_forward = relation_reading(hop.relation, word, cued, unit in after_name)
            if reads_forward is None:
                if hop.forward:
                    continue
                if name and name[-1] in PREPOSITIONS and (word.split()[-1], name[-1]) in cued:
                    continue                                # asked by the preposition: kept whole
                asked = unit in after_name or (subject_kind is not None and subject_kind(hop.relation, word))
                weights[i, j] *= UNMARKED_BACKWARD if asked else UNASKED_BACKWARD
            elif reads_forward != hop.forward:
                weights[i, j] *= AGAINST_READING
    return weights
