"""Question words that no schema name (or listed word) reads, linked to the graph through what
the graph itself knows: the types at each end of its relations, and the embedding of each
relation read as a typed sentence.

A question that says "Who is the boss of Ostrava Films?" names no relation: "boss" is in no
relation name and no word list. Its entity is a Company and "who" asks for the Person type,
so the relations that could answer it are those that join a Company and a Person
(``CEO_OF``, ``FOUNDED``, ...). Each is read as the sentence its types and name make
("person ceo of company"), and the question is read with its entities written as their types
("who is the boss of company"). The **gain** of a relation is the question's similarity to
its sentence minus that of the question without the words. The words link to the relation
whose similarity plus gain is highest, when it leads the next by ``MARGIN`` and its gain is
at least ``MIN_GAIN``. A word that means the relation raises
it ("boss" for ``CEO_OF``: +0.11); a word for something the graph does not hold lowers it
("sings", "reviewed" for the nearest film relation: -0.14 to -0.23), since the question then
speaks of something else. Otherwise the words stay unread, and the planner says the question
names something the graph does not hold.

Without an embedder (the ``dense`` extra not installed), the types decide alone: the words
link only where a single relation joins the types. A type word the schema does not know
("which *prizes*") links to the type whose name's embedding is nearest, when that is at
least ``MIN_TYPE_SIMILARITY`` and leads the next by ``MARGIN``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import MissingExtraError, ModelError
from ..text.words import terms
from .store import SchemaEdge

# Chosen on the film-industry dev questions (data/studio_kg_questions.jsonl, English and
# Vietnamese) and the biomedical ones (data/kgqa_dev.jsonl), with MiniLM and multilingual-e5:
# words for a relation gain -0.01 to +0.38, words for what the graph does not hold -0.06
# ("manufactures" for the nearest drug relation) to -0.31.
MIN_GAIN = -0.04
MARGIN = 0.03
MIN_TYPE_SIMILARITY = 0.5

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class GraphLink:
    """Words of the question linked to a relation or a type through the graph (not by name)."""

    words: str
    kind: str               # "relation" | "type"
    name: str
    score: float            # the gain (relation) or the rescaled similarity (type)
    runner_up: str | None   # the next best, and how far behind
    margin: float | None

    def to_dict(self) -> dict:
        return {"words": self.words, "kind": self.kind, "name": self.name, "score": round(self.score, 3),
                "runner_up": self.runner_up, "margin": None if self.margin is None else round(self.margin, 3)}


def name_text(name: str) -> str:
    """A schema name as words ("HEADQUARTERED_IN" -> "headquartered in", "BornIn" -> "born in")."""
    spaced = "".join(f" {c}" if c.isupper() and i and name[i - 1].islower() else c for i, c in enumerate(name))
    return " ".join(terms(spaced.replace("_", " ")))


def typed_reading(edge: SchemaEdge) -> str:
    """What an edge says, as a sentence of its types and its name: "person directed film"."""
    return f"{name_text(edge.source_type)} {name_text(edge.relation)} {name_text(edge.target_type)}"


class GraphLinker:
    """Links a question's unread words to relations and types; ``embed`` encodes texts into
    normalised vectors (None: types alone decide), ``unrelated`` is the embedder's cosine of
    unrelated texts (similarities are rescaled above it)."""

    def __init__(self, embed: Embed | None, unrelated: float = 0.0):
        self.embed, self.unrelated = embed, unrelated

    def _similarity(self, texts: list[str], others: list[str]) -> np.ndarray | None:
        """texts x others, rescaled cosines; None when the embedder cannot load (its model
        not installed): from then on the types decide alone."""
        if self.embed is None:
            return None
        try:
            vectors = np.asarray(self.embed([*texts, *others]), dtype=np.float32)
        except (MissingExtraError, ModelError):
            self.embed = None
            return None
        return (vectors[:len(texts)] @ vectors[len(texts):].T - self.unrelated) / (1.0 - self.unrelated)

    def relation(self, words: str, with_words: str, without_words: str,
                 candidates: list[SchemaEdge]) -> GraphLink | None:
        """The relation among ``candidates`` (schema edges whose types fit the question) that
        ``words`` name: the one whose typed reading the question (its entities written as
        their types, ``with_words``) is nearest, counting what the words bring (the gain
        from ``without_words``) twice, if that leads the next by ``MARGIN`` and the gain is at
        least ``MIN_GAIN``."""
        by_relation: dict[str, SchemaEdge] = {}
        for edge in candidates:
            by_relation.setdefault(edge.relation, edge)
        if not by_relation:
            return None
        names = sorted(by_relation)
        sims = self._similarity([with_words, without_words], [typed_reading(by_relation[n]) for n in names])
        if sims is None:
            return GraphLink(words, "relation", names[0], 0.0, None, None) if len(names) == 1 else None
        gains = sims[0] - sims[1]
        ranked = sorted(zip((sims[0] + gains).tolist(), gains.tolist(), names), reverse=True)
        _, gain, name = ranked[0]
        margin = ranked[0][0] - ranked[1][0] if len(ranked) > 1 else None
        if gain < MIN_GAIN or (margin is not None and margin < MARGIN):
            return None
        return GraphLink(words, "relation", name, gain, ranked[1][2] if len(ranked) > 1 else None, margin)

    def type(self, word: str, types: list[str]) -> GraphLink | None:
        """The node type a word the schema does not know names ("prizes" -> Award), if one
        is near enough and clearly nearest."""
        sims = self._similarity([word], [name_text(t) for t in types]) if types else None
        if sims is None:
            return None
        ranked = sorted(zip(sims[0].tolist(), types), reverse=True)
        best, name = ranked[0]
        margin = best - ranked[1][0] if len(ranked) > 1 else None
        if best < MIN_TYPE_SIMILARITY or (margin is not None and margin < MARGIN):
            return None
        return GraphLink(word, "type", name, best, ranked[1][1] if len(ranked) > 1 else None, margin)


def embedder_linker(language: str) -> GraphLinker:
    """A linker on the embedder for ``language`` (MiniLM for English, multilingual-e5 for
    Vietnamese; loaded when first used), or on types alone when the ``dense`` extra that
    holds them is not installed."""
    from ..embeddings import EMBEDDER_FOR_LANGUAGE, default_embedder

    kind = EMBEDDER_FOR_LANGUAGE.get(language, "minilm")
    if not _embedder_installed(kind):
        return GraphLinker(None)
    embedder = default_embedder(kind)
    return GraphLinker(embedder.encode, embedder.unrelated_cosine)


def _embedder_installed(kind: str) -> bool:
    """Whether the runtime of the ``kind`` embedder is importable (a remote embedder,
    ``RAGKIT_EMBED_URL``, needs only the HTTP client)."""
    from importlib.util import find_spec

    from ..config import Settings

    if Settings.from_env().embed_urls:
        return find_spec("httpx") is not None
    return all(find_spec(m) is not None for m in ("onnxruntime", "tokenizers"))
