"""Numeric constraints in KG questions: the comparisons a question makes ("approved after
2000", "more than three symptoms", "between 1990 and 2000"), the node properties a graph holds
that such a comparison can use, and the comparison itself.

A comparison is a cue and a number (:func:`comparisons`); what it compares is decided by
the planner from the graph (``RulePlanner``): a type or relation named right after the number
is counted ("more than 3 symptoms": the node's HAS_SYMPTOM edges), else a property whose
name the question uses ("approved", "population"), else, for a date cue with a year, the
one year-like property of the type. The words are data (``vocabulary``), not code.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from ..text.words import terms
from .vocabulary import (COMPARE_ADJECTIVES, COMPARE_AFTER, COMPARE_BEFORE, NUMBER_FILLERS, NUMBER_WORDS,
                         SCALE_WORDS, TEMPORAL)

OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "=": operator.eq, "!=": operator.ne}
SAID = {">": "more than", ">=": "at least", "<": "less than", "<=": "at most", "=": "equal to", "!=": "other than"}
NUMBER_RE = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
DECADE_RE = re.compile(r"^1\d{2}0s$|^20\d0s$")
DATE_RE = re.compile(r"^\s*(\d{4})(?:-\d{1,2}(?:-\d{1,2})?)?\s*$")
# Cues that are often no comparison ("in 1998" may be part of a title): used only when the
# graph has a property to compare.
WEAK = ("in", "from", "tu", "vao")
NOT_PROPERTIES = {"id", "name", "type", "aliases", "source", "url", "description", "note"}


@dataclass(frozen=True)
class Comparison:
    """``compare`` (``>``, ``>=``, ``<``, ``<=``, ``=``) ``value``, read from the question's
    tokens ``start``..``end`` (cue, fillers and number); ``after`` is the token after the number
    (where a counted type or a property's words start: "3 *symptoms*"); ``hint`` a property
    word the cue itself names ("older than": age); ``year``: a date cue with a year."""

    start: int
    end: int
    after: int
    compare: str
    value: float
    text: str
    hint: str | None = None
    year: bool = False
    weak: bool = False      # "in 1998", "from 3": a comparison only when the graph has something to compare


def number_value(value) -> float | None:
    """A property value as a number: numbers, numeric text ("1,200", "3.5") and the year of a
    date ("2001-05-03" → 2001); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        date = DATE_RE.match(text)
        return float(date.group(1)) if date else None


def numeric_properties(nodes) -> dict[str, dict[str, str]]:
    """Per node type, the properties whose values are numbers (at least 80% of the nodes that
    have them) → ``"year"`` when every value is a year (1000–2100 or a date), else
    ``"number"``."""
    values: dict[tuple[str, str], list] = {}
    for node in nodes:
        for key, value in node.items():
            if key not in NOT_PROPERTIES and value not in (None, "", []):
                values.setdefault((node["type"], key), []).append(value)
    out: dict[str, dict[str, str]] = {}
    for (node_type, key), seen in sorted(values.items()):
        numbers = [number_value(v) for v in seen]
        known = [n for n in numbers if n is not None]
        if not known or len(known) < 0.8 * len(seen):
            continue
        dated = all(isinstance(v, str) and DATE_RE.match(v) for v in seen)
        years = dated or all(n == int(n) and 1000 <= n <= 2100 for n in known)
        out.setdefault(node_type, {})[key] = "year" if years else "number"
    return out


def compare(value, op: str, bound: float) -> bool:
    number = number_value(value)
    return number is not None and OPS[op](number, bound)


def _phrases(table) -> list[tuple[tuple[str, ...], object]]:
    return sorted(((tuple(k.split()), v) for k, v in table.items()), key=lambda kv: -len(kv[0]))


def _numbers(question: str, tokens: list[str]) -> list[tuple[int, int, float]]:
    """(first token, end token, value) of each number: digits ("1,200", "3.5"), number words
    ("three"), each with a scale word after it ("2 million")."""
    found = []
    for m in NUMBER_RE.finditer(question):
        start = len(terms(question[:m.start()]))
        found.append((start, start + len(terms(m.group())), float(m.group().replace(",", ""))))
    found += [(i, i + 1, float(NUMBER_WORDS[t])) for i, t in enumerate(tokens) if t in NUMBER_WORDS]
    out = []
    for start, end, value in sorted(found):
        if end < len(tokens) and tokens[end] in SCALE_WORDS:
            value, end = value * SCALE_WORDS[tokens[end]], end + 1
        out.append((start, end, value))
    return out


def comparisons(question: str, tokens: list[str], taken: set[int] | frozenset[int] = frozenset()) -> list[Comparison]:
    """The comparisons in a question whose ``tokens`` are ``terms(question)``; numbers inside
    ``taken`` (an entity's words: "Type 2 Diabetes") are not compared."""
    numbers = [n for n in _numbers(question, tokens) if not taken & set(range(n[0], n[1]))]
    out: list[Comparison] = []
    skip: set[int] = set()
    for k, (start, end, value) in enumerate(numbers):
        if k in skip:
            continue
        cue_end = start
        while cue_end > 0 and tokens[cue_end - 1] in NUMBER_FILLERS:
            cue_end -= 1
        if pair := _between(tokens, numbers, k, cue_end):
            out.extend(pair)
            skip.add(k + 1)
        elif found := _cue_before(tokens, cue_end, start, end, value) or _cue_after(tokens, start, end, value):
            out.append(found)
    for i, token in enumerate(tokens):    # "in the 1990s": the decade's years
        if DECADE_RE.match(token) and i not in taken:
            low = float(token[:4])
            cue = i - 1 if i and tokens[i - 1] == "the" else i
            cue = cue - 1 if cue and tokens[cue - 1] in ("in", "during", "from", "of") else cue
            out += [Comparison(cue, i + 1, i + 1, ">=", low, " ".join(tokens[cue:i + 1]), None, True),
                    Comparison(cue, i + 1, i + 1, "<=", low + 9, " ".join(tokens[cue:i + 1]), None, True)]
    return out


_BEFORE = _phrases({**COMPARE_BEFORE, **COMPARE_ADJECTIVES})
_AFTER = _phrases(COMPARE_AFTER)


def _cue_before(tokens: list[str], cue_end: int, start: int, end: int, value: float) -> Comparison | None:
    for phrase, meaning in _BEFORE:
        at = cue_end - len(phrase)
        if at >= 0 and tuple(tokens[at:cue_end]) == phrase:
            op, hint = meaning if isinstance(meaning, tuple) else (meaning, None)
            said = " ".join(phrase)
            year = said in TEMPORAL and value == int(value) and 1000 <= value <= 2100
            return Comparison(at, end, end, str(op), value, " ".join(tokens[at:end]), hint, year,
                              weak=said in WEAK)
    return None


def _cue_after(tokens: list[str], start: int, end: int, value: float) -> Comparison | None:
    """"3 or more", "3 symptoms or more" (up to three words between)."""
    for phrase, op in _AFTER:
        for at in range(end, min(end + 4, len(tokens))):
            if tuple(tokens[at:at + len(phrase)]) == phrase:
                stop = at + len(phrase)
                return Comparison(start, stop, end, str(op), value, " ".join(tokens[start:stop]))
    return None


def _between(tokens: list[str], numbers: list, k: int, cue_end: int) -> list[Comparison]:
    """"between 1990 and 2000", "from 1990 to 2000": two comparisons (at least, at most)."""
    if k + 1 >= len(numbers) or cue_end == 0 or tokens[cue_end - 1] not in ("between", "from", "giua", "tu"):
        return []
    start, end, low = numbers[k]
    nxt, last, high = numbers[k + 1]
    if tokens[end:nxt] not in (["and"], ["to"], ["until"], ["through"], ["till"], ["va"], ["den"]):
        return []
    text = " ".join(tokens[cue_end - 1:last])
    year = all(v == int(v) and 1000 <= v <= 2100 for v in (low, high))
    return [Comparison(cue_end - 1, last, last, ">=", low, text, None, year),
            Comparison(cue_end - 1, last, last, "<=", high, text, None, year)]


__all__ = ["Comparison", "NUMBER_RE", "OPS", "SAID", "compare", "comparisons", "number_value", "numeric_properties"]
