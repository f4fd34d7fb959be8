"""Structural boosting for procedural questions, the lexical pipeline's option.

A question about "các bước" / "quy trình" / "trình tự" is best answered by a chunk that
lists its steps ("Bước 1:", "Bước 2:" ...). Such chunks get +0.3, and chunks that speak of a
procedure ("quy trình", "trình tự", "bao gồm") +0.15, added to their BM25 score. Matching
is done on accent-stripped lowercase text, so "cac buoc" typed without accents counts too.

The scores are computed when the lexical index is built (``structural_boost_scores``, given
to ``BM25Index.build`` as its ``boost_scores``) and kept in the index: a corpus without
steps or procedures has none, and the boost changes nothing there. Which questions take it
is decided here (``takes_boost``), not by the index, which knows no language.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..text import normalize
from ..text.cues import PROCEDURE_TEXT_CUES
from ..text.question import asks_for_steps

STEP_BOOST = 0.3
KEYWORD_BOOST = 0.15
# A line that starts a numbered step, optionally after a list marker: "Bước 1:", "- Bước 2".
_STEP_LINE = re.compile(r"^\s*(?:[-*+]\s*)?buoc\s+\d+", re.MULTILINE)


def structural_boost(text: str) -> float:
    """One chunk's boost: +0.3 for a numbered step line, +0.15 for a procedure keyword."""
    t = normalize(text)
    score = STEP_BOOST if _STEP_LINE.search(t) else 0.0
    if any(kw in t for kw in PROCEDURE_TEXT_CUES):
        score += KEYWORD_BOOST
    return score


def structural_boost_scores(texts: Sequence[str]) -> np.ndarray:
    """``structural_boost`` for every chunk, computed once at index time."""
    return np.fromiter((structural_boost(t) for t in texts), dtype=np.float64, count=len(texts))


def takes_boost(question: str, asked: bool | None = None) -> bool:
    """Whether ``question`` is ranked with the structural boost: ``asked`` when given (the
    lexical option ``boost``), else when the question asks for steps or a procedure."""
    return asks_for_steps(question) if asked is None else asked
