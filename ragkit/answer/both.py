"""Yes/no questions about two joined items ("Are A and B both ...?", "... the same city?",
"A và B có cùng ... không?"): answered from what the evidence states of each item
(``ragkit.text.question.joined`` reads the question).

- **Both**: each item's sentences (every sentence of a text it titles, else the sentences
  that name it) are searched for the predicate's words. Every item holds them: yes. One
  item's sentences lack them while another's hold them (so the evidence can say it): no,
  citing the sentence that speaks of the item. Neither holds them: no verdict.
- **The same**: the name written beside the shared noun in each item's sentences ("Jiangsu
  province", "province of Jiangsu", "tỉnh Giang Tô") is that item's value; equal values:
  yes, different: no. A value missing: no verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from ..text import split_sentences
from ..text.question import Joined
from .reading import _plain
from .candidates import writes


@dataclass(frozen=True)
class JoinedVerdict:
    """"yes" or "no", the sentence that decided it and its 1-based evidence number, and
    what was read of each item (the predicate held or not; the shared value)."""

    text: str
    sentence: str
    item: int
    read: dict

    def to_dict(self) -> dict:
        return {"verdict": self.text, "evidence": self.item, "sentence": self.sentence, "read": self.read}


def sentences_about(item: str, texts: Sequence[str], titles: Sequence[str] = ()) -> list[tuple[str, int]]:
    """The sentences of ``texts`` that speak of ``item``: every sentence of a text whose
    title names it, else those that name it; with their 1-based text number."""
    out = []
    for n, text in enumerate(texts, 1):
        title = titles[n - 1] if n - 1 < len(titles) else ""
        titled = bool(_plain(item)) and writes([title], item)
        out += [(s, n) for s in split_sentences(text) if titled or writes([s], item)]
    return out


def _value(sentence: str, noun: str) -> str | None:
    """The name written beside ``noun`` in ``sentence`` ("Jiangsu province", "province of
    Jiangsu", "tỉnh Giang Tô"), accent-stripped and lower-cased; None without one."""
    name = r"([A-ZÀ-ỸĐ][\w'’-]*(?:\s+[A-ZÀ-ỸĐ][\w'’-]*)*)"
    noun_re = re.escape(noun)
    for pattern in (rf"{name}\s+{noun_re}\b", rf"\b{noun_re}\s+(?:of\s+|là\s+)?{name}"):
        m = re.search(pattern, sentence, flags=0 if noun[:1].islower() else re.IGNORECASE)
        if m:
            return _plain(m.group(1))
    return None


def judge_joined(asked: Joined, texts: Sequence[str], titles: Sequence[str],
                 tokenize: Callable[[str], list[str]]) -> JoinedVerdict | None:
    """Yes or no for ``asked`` from the evidence ``texts`` (with their ``titles``), or None
    when the evidence does not decide it (see the module docstring)."""
    about = {item: sentences_about(item, texts, titles) for item in asked.items}
    if not all(about.values()):
        return None
    if asked.predicate:
        words = set(tokenize(asked.predicate))
        if not words:
            return None
        held = {item: next(((s, n) for s, n in found if words <= set(tokenize(s))), None)
                for item, found in about.items()}
        read = {item: held[item] is not None for item in asked.items}
        if all(read.values()):
            s, n = held[asked.items[-1]]        # type: ignore[misc]
            return JoinedVerdict("yes", s, n, read)
        if any(read.values()):
            lacking = next(item for item in asked.items if not read[item])
            s, n = about[lacking][0]
            return JoinedVerdict("no", s, n, read)
        return None
    values = {item: next(((v, s, n) for s, n in found for v in [_value(s, asked.shared)] if v), None)
              for item, found in about.items()}
    if any(v is None for v in values.values()):
        return None
    first, second = (values[item] for item in asked.items)
    assert first is not None and second is not None
    same = first[0] == second[0]
    return JoinedVerdict("yes" if same else "no", second[1], second[2], {item: v[0] for item, v in values.items()
                                                                         if v is not None})
