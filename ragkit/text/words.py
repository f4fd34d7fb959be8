"""The words of a text, one way for every part of ragkit that compares them: the reader, the
check, the pipelines and the evaluation count a word the same way.

- ``words``: the lower-cased runs of letters and digits (``\\w+``), accents kept; with
  ``accents=False``, accent-stripped ASCII runs (``[a-z0-9]+``: "Máy" and "may" meet);
- ``plain``: those words joined by single spaces, the form texts are compared in
  ("Velm  Theatre," and "velm theatre" are one);
- ``terms``: accent-stripped lower-case words with a hyphen or apostrophe inside kept whole
  ("covid-19", "don't"), the words a question is linked to a graph's names and schema by;
- ``stem``: an English word's Snowball stem ("opened" and "opens" meet at "open");
- ``name_key``: a name as titles and names are compared (its ``\\w+`` words, case and
  accents aside: "Velm Théâtre" and "velm theatre" meet), and ``POSSESSIVE``, the "'s" a
  name may end in;
- ``negated``: whether a text holds a negation (``ragkit.text.cues.NEGATIONS``), a
  compound that negates nothing aside ("không khí", "not only").

    >>> words("Máy phay: 3000 vòng/phút")
    ['máy', 'phay', '3000', 'vòng', 'phút']
    >>> plain("Máy  Phay!", accents=False)
    'may phay'
    >>> stem("opened")
    'open'
"""

from __future__ import annotations

import re

from .cues import NEGATIONS, NOT_NEGATING
from .tokens import _english_stemmer, strip_accents

_WORD = re.compile(r"\w+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_TERM = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
POSSESSIVE = re.compile(r"['’]s$")
_NEGATION = re.compile(r"\b(" + "|".join(sorted(NEGATIONS, key=len, reverse=True)) + r")\b(?:\W+(\w+))?|n['’]t\b",
                       re.IGNORECASE)


def words(text: str, *, accents: bool = True) -> list[str]:
    """The lower-cased words of ``text``: ``\\w+`` runs, or with ``accents=False`` the
    ``[a-z0-9]+`` runs of its accent-stripped form."""
    if accents:
        return _WORD.findall(text.lower())
    return _ASCII_WORD.findall(strip_accents(text.lower()))


def terms(text: str) -> list[str]:
    """The accent-stripped lower-case words of ``text``, a hyphen or apostrophe inside a word
    kept ("COVID-19" → "covid-19")."""
    return _TERM.findall(strip_accents(text.lower()))


def plain(text: str, *, accents: bool = True) -> str:
    """``words(text)`` joined by single spaces."""
    return " ".join(words(text, accents=accents))


def stem(word: str) -> str:
    """The English Snowball stem of one lower-cased word."""
    return _english_stemmer().stemWord(word)


def name_key(text: str) -> str:
    """``text``'s ``\\w+`` words, case-folded and accent-stripped, joined by spaces."""
    return " ".join(_WORD.findall(strip_accents(text.casefold())))


def negated(text: str) -> bool:
    """Whether ``text`` holds a negation (``ragkit.text.cues.NEGATIONS``, "n't"), a compound
    that negates nothing aside ("không khí", "not only")."""
    for m in _NEGATION.finditer(text):
        word = (m.group(1) or "").lower()
        if not word or (m.group(2) or "").lower() not in NOT_NEGATING.get(word, ()):
            return True
    return False
