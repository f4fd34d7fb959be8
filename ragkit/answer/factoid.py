"""How the answer stage reads a model's answer to a factoid question (a name, a date, a
number, yes or no), as data a pipeline's draft carries: the question, the shape of answer it
wants, the evidence and the corpus weights the short answer is read against."""

from __future__ import annotations

from dataclasses import dataclass

from .extractive import complete_short_answer, resupport
from .reading import Shape, parse_short_answer
from .weighing import Weigher


@dataclass(frozen=True)
class Factoid:
    """A factoid question and its evidence. ``offered``: the items the question offers to
    choose between (its reading's ``alternatives``)."""

    question: str
    shape: Shape
    evidence: tuple[str, ...]
    weigher: Weigher
    offered: tuple[str, ...] = ()

    def complete(self, text: str) -> str:
        """The model's answer in the shape the check reads: the short answer on its first line,
        then its support (``extractive.complete_short_answer``)."""
        return complete_short_answer(text, self.question, self.shape, list(self.evidence), self.weigher,
                                     self.offered)

    def read(self, text: str) -> str | None:
        """The short answer the model's answer gives (its first line)."""
        return parse_short_answer(text)[0] or None

    def resupport(self, text: str) -> str | None:
        """An answer whose support fails: its short answer with the evidence's own sentence that
        holds it (``extractive.resupport``; None: no such sentence)."""
        return resupport(text, self.question, self.shape, list(self.evidence), self.weigher, self.offered)


__all__ = ["Factoid"]
