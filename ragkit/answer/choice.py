"""Questions that offer a choice ("Which opened first, the Velm Theatre or Marlow Bridge?"):
the answer is one of the offered items (``ragkit.text.question.alternatives``), chosen by
comparing what the evidence states of each.

Each item's value is read from the evidence about it: the sentences that name it (in a text
it titles, every sentence, since they speak of it), the date (for a question about time) or
number stated in the one that shares most words with the question, the first on a tie. The
question's comparative says which end wins: a closed class of English and Vietnamese
comparatives (``EARLIER``, ``LATER``, ``MORE``, ``LESS``). No value for one of the items, or
no comparative: no choice (the reader, or a refusal, answers instead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..text import ENGLISH_STOPWORDS, split_sentences, strip_accents
from .claim_rules import number_key
from .candidates import MONTHS, date_candidates, number_candidates

# Comparatives, accent-stripped, matched as whole words in the lower-cased question.
# Which end of time wins:
EARLIER = ("first", "earlier", "earliest", "older", "oldest", "before", "sooner", "longer ago",
           "truoc", "som hon", "cu hon", "lau doi hon", "gia hon")
LATER = ("later", "latest", "last", "newer", "newest", "younger", "youngest", "more recent", "most recent",
         "sau", "muon hon", "moi hon", "tre hon")
# Which end of a quantity wins:
MORE = ("more", "most", "larger", "largest", "bigger", "biggest", "greater", "taller", "tallest", "longer",
        "longest", "higher", "highest", "heavier", "wider", "deeper", "farther", "further",
        "lon hon", "nhieu hon", "cao hon", "dai hon", "nang hon", "rong hon", "sau hon", "xa hon")
LESS = ("fewer", "fewest", "less", "least", "smaller", "smallest", "shorter", "shortest", "lower", "lowest",
        "lighter", "narrower", "nho hon", "it hon", "thap hon", "ngan hon", "nhe hon", "hep hon")
_TIME_WORDS = ("born", "founded", "established", "formed", "opened", "released", "published", "built", "created",
               "started", "launched", "year", "date", "when", "nam", "sinh", "thanh lap", "ra doi")


@dataclass(frozen=True)
class Choice:
    """The item chosen, the value read for each item, and the evidence sentence (and its
    1-based text number) that gave the chosen item's value."""

    text: str
    values: dict
    sentence: str
    item: int


def _has(plain: str, phrases: Sequence[str]) -> bool:
    return any(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", plain) for p in phrases)


def _year(date: str) -> tuple[int, int, int] | None:
    """A date's (year, month, day) as far as it states them (unknown parts 0)."""
    years = re.findall(r"\b(\d{3,4})\b", date)
    if not years:
        return None
    lowered = date.lower()
    month = next((i % 12 + 1 for i, m in enumerate(MONTHS[:12]) if m[:3] in lowered), 0)
    days = [int(d) for d in re.findall(r"\b(\d{1,2})\b", date) if 1 <= int(d) <= 31]
    return int(years[0]), month, days[0] if days else 0


def _number(text: str) -> float | None:
    m = re.search(r"\d+(?:[.,]\d+)*", text)
    if not m:
        return None
    try:
        return float(number_key(m.group()))     # the claim check's reading of a number as a value
    except ValueError:
        return None


def _shared(asked: Sequence[str], sentence: str) -> int:
    """How many of the question's ``asked`` words ``sentence`` writes, a word matching one that
    begins with the same five letters (or is the same shorter word)."""
    written = {w[:5] for w in re.findall(r"[^\W\d_]+", strip_accents(sentence.lower()))}
    return sum(1 for w in set(asked) if w[:5] in written)


def choose(question: str, offered: Sequence[str], texts: Sequence[str], titles: Sequence[str] = ()) -> Choice | None:
    """The item of ``offered`` the evidence ``texts`` (with their ``titles``) make the answer
    to ``question``, or None when the question has no comparative or an item has no value."""
    plain = " ".join(re.findall(r"\w+", strip_accents(question.lower())))
    time = _has(plain, EARLIER + LATER) and (not _has(plain, MORE + LESS) or _has(plain, _TIME_WORDS))
    if time:
        lowest_wins = _has(plain, EARLIER)
    elif _has(plain, MORE + LESS):
        lowest_wins = _has(plain, LESS)
    else:
        return None
    values: dict = {}
    found: dict = {}
    item_words = {w for item in offered for w in re.findall(r"\w+", strip_accents(item.lower()))}
    asked = [w for w in plain.split() if len(w) > 2 and w not in ENGLISH_STOPWORDS and w not in item_words]
    for item in offered:
        key = " ".join(re.findall(r"\w+", item.lower()))
        # every sentence about the item that states a value, in order; the one that shares
        # most words with the question (compared by their first five letters: "employs" and
        # "Employees") gives it, the first one on a tie ("Employees: 42" before the address)
        stated: list[tuple[int, int, object, str, int]] = []
        for n, text in enumerate(texts, 1):
            title = titles[n - 1] if n - 1 < len(titles) else ""
            titled = key and key in " ".join(re.findall(r"\w+", title.lower()))
            for sentence in split_sentences(text):
                value: tuple[int, int, int] | float | None
                if not titled and key not in " ".join(re.findall(r"\w+", sentence.lower())):
                    continue
                if time:
                    dates = [d for d in (_year(c.text) for c in date_candidates(sentence)) if d]
                    value = dates[0] if dates else None
                else:
                    # the number whose unit the question names ("seats 900 people": people), else the first
                    candidates = sorted(number_candidates(sentence), key=lambda c: not (
                        set(re.findall(r"[^\W\d_]+", strip_accents(c.text.lower()))) & set(plain.split())))
                    numbers = [v for v in (_number(c.text) for c in candidates) if v is not None]
                    value = numbers[0] if numbers else None
                if value is not None:
                    stated.append((-_shared(asked, sentence), len(stated), value, sentence, n))
        if stated:
            _, _, values[item], sentence, n = min(stated, key=lambda x: (x[0], x[1]))
            found[item] = (sentence, n)
    if len(values) < len(offered) or len(set(map(str, values.values()))) < len(values):
        return None
    pick = (min if lowest_wins else max)(offered, key=lambda item: values[item])
    sentence, n = found[pick]
    return Choice(pick, {k: str(v) for k, v in values.items()}, sentence, n)
