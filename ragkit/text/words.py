"""The words of a text, one way for every part of ragkit that compares them: the reader, the
check, the pipelines and the evaluation count a word the same way.

- ``words``: the lower-cased runs of letters and digits (``\\w+``), accents kept; with
  ``accents=False``, accent-stripped ASCII runs (``[a-z0-9]+``: "Máy" and "may" meet);
- ``plain``: those words joined by single spaces, the form texts are compared in
  ("Velm  Theatre," and "velm theatre" are one);
- ``stem``: an English word's Snowball stem ("opened" and "opens" meet at "open").

    >>> words("Máy phay: 3000 vòng/phút")
    ['máy', 'phay', '3000', 'vòng', 'phút']
    >>> plain("Máy  Phay!", accents=False)
    'may phay'
    >>> stem("opened")
    'open'
"""

from __future__ import annotations

import re

from .tokens import _english_stemmer, strip_accents

_WORD = re.compile(r"\w+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")


def words(text: str, *, accents: bool = True) -> list[str]:
    """The lower-cased words of ``text``: ``\\w+`` runs, or with ``accents=False`` the
    ``[a-z0-9]+`` runs of its accent-stripped form."""
    if accents:
        return _WORD.findall(text.lower())
    return _ASCII_WORD.findall(strip_accents(text.lower()))


def plain(text: str, *, accents: bool = True) -> str:
    """``words(text)`` joined by single spaces."""
    return " ".join(words(text, accents=accents))


def stem(word: str) -> str:
    """The English Snowball stem of one lower-cased word."""
    return _english_stemmer().stemWord(word)
