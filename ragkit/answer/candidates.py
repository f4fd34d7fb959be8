"""Candidate short answers in a sentence: dates, numbers with their units and ranges,
names (runs of capitalised words, with their connectors), and phrases of the question's
own words; and the names a question gives that the evidence does or does not write."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..text import (ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS, normalize)
from ..text.lexicons import quantity_of
from ..text.cues import MAXIMUM_CUES, MINIMUM_CUES
from ..text.words import plain


from .weighing import Weigher


# ----------------------------------------------------------------------------- candidates

MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec").split()
_MONTH = r"(?:" + "|".join(m.capitalize() for m in MONTHS) + r")\.?"
_DATE_PATTERNS = [
    re.compile(rf"\b\d{{1,2}}\s+{_MONTH}\s+\d{{3,4}}\b"),
    re.compile(rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{3,4}}\b"),
    re.compile(rf"\b{_MONTH}\s+\d{{3,4}}\b"),
    re.compile(rf"\b\d{{1,2}}\s+{_MONTH}(?!\w)"),
    re.compile(rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b"),
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b"),
    re.compile(r"\bngày\s+\d{1,2}(?:\s+tháng\s+\d{1,2})?(?:\s+năm\s+\d{4})?", re.IGNORECASE),
    re.compile(r"\btháng\s+\d{1,2}(?:\s+năm\s+\d{4})?", re.IGNORECASE),
    re.compile(r"\b(?:năm\s+)?(?:1[0-9]|20)\d{2}s?\b", re.IGNORECASE),
    re.compile(r"\b\d{1,2}(?:st|nd|rd|th)\s+century\b", re.IGNORECASE),
]
_NUMBER = re.compile(r"(?<![\w.])(?:[€$£¥]\s?)?\d+(?:[.,]\d+)*(?:\s?%)?")
_NUMBER_WORD = re.compile(r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                          r"fifteen|twenty|thirty|forty|fifty|hundred|thousand|million|billion|"
                          r"một|hai|ba|bốn|năm|sáu|bảy|tám|chín|mười)\b", re.IGNORECASE)
_UNIT = re.compile(r"\s*((?:[a-zA-Zµ°%/²³\u00C0-\u1EF9]+(?:/[a-zA-Z\u00C0-\u1EF9]+)?)(?:\s+[a-zA-Z\u00C0-\u1EF9]+)?)")
_NOT_UNITS = frozenset("den toi va hoac or to and than".split())
CONNECTORS = frozenset("of the de da del della di von van der du la le y for on upon & al bin".split())
_CAP_WORD = re.compile(r"[^\W\d_][\w'’.\-]*|\d+[\w]*", re.UNICODE)


@dataclass(frozen=True)
class Candidate:
    text: str
    start: int
    end: int


# A line's label: "Bước 5:", "Day 2:", "Teams:", "Site lead:" (at most three words before a colon).
_LABEL = re.compile(r"^\W*(?:[^\W\d_]+\s+\d+[a-z]?|[^\W\d_]+(?:\s+[^\W\d_]+){0,2})\s*:(?!\d)")


def date_candidates(sentence: str) -> list[Candidate]:
    found: list[Candidate] = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(sentence):
            if any(c.start <= m.start() and m.end() <= c.end for c in found):
                continue
            text = m.group().strip().rstrip(".,")
            found.append(Candidate(text, m.start(), m.start() + len(text)))
    return found


def _with_unit(sentence: str, text: str, start: int, end: int) -> Candidate:
    """A number found at ``start:end`` with the unit written after it ("12 mm", "ba trục")."""
    unit = _UNIT.match(sentence, end)
    if unit and not text.endswith("%"):
        words = unit.group(1).split()
        keep: list[str] = []
        for i, w in enumerate(words):
            plain = normalize(w)
            if plain in ENGLISH_STOPWORDS or plain in VIETNAMESE_FUNCTION_WORDS or w[:1].isupper() \
                    or plain in _NOT_UNITS or (i and keep[-1].lower() not in ("per", "a", "mỗi")):
                break
            keep.append(w)
        while keep and keep[-1].lower() in ("per", "a", "mỗi"):
            keep.pop()
        if keep:
            text = f"{text} {' '.join(keep)}"
            end = end + len(unit.group(0)) - len(unit.group(1)) + len(" ".join(keep))
    return Candidate(text, start, end)


# What joins the two ends of a range: "6 đến 8 bar", "10 to 20 days", "3–5", "between 2 and 4".
_RANGE_JOIN = re.compile(r"\s*(?:-|–|—|to|đến|tới|and)\s*$", re.IGNORECASE)


def number_candidates(sentence: str) -> list[Candidate]:
    """Numbers (digits or number words) with the unit written after them; a range ("6 đến 8
    bar", "between 10 and 20 days") is one candidate from its first number to its last."""
    label = _LABEL.match(sentence)       # "Bước 2:" numbers a step; it is no quantity
    found = [_with_unit(sentence, m.group(), m.start(), m.end())
             for m in _NUMBER.finditer(sentence, label.end() if label else 0)]
    found += [_with_unit(sentence, m.group(), m.start(), m.end()) for m in _NUMBER_WORD.finditer(sentence)
              if not label or m.start() >= label.end()]
    found.sort(key=lambda c: c.start)
    out: list[Candidate] = []
    for c in found:
        if _in_code(sentence, c):
            continue
        last = out[-1] if out else None
        if last is not None and _RANGE_JOIN.match(sentence[last.end:c.start]) \
                and (" " not in last.text or last.text.split()[-1] == c.text.split()[-1]) \
                and (not sentence[last.end:c.start].strip().lower() == "and"
                     or sentence[:last.start].rstrip().lower().endswith(("between", "giữa"))):
            out[-1] = Candidate(sentence[last.start:c.end], last.start, c.end)
            continue
        out.append(c)
    return out


def _in_code(sentence: str, c: Candidate) -> bool:
    """Whether a number is part of a code or a designation ("OSHA 29 CFR 1910", "ISO 16090"):
    it stands beside a word in capitals that is no unit."""
    before = re.search(r"\b([A-Z][A-Z0-9-]+)\s*$", sentence[:c.start])
    number = re.match(r"[\w.,]+", c.text)
    after = re.match(r"\s*([A-Z][A-Z0-9-]+)\b", sentence[c.start + len(number.group()):]) if number else None
    return any(m is not None and quantity_of(m.group(1)) is None for m in (before, after))


def states_quantity(sentence: str, quantity: str) -> bool:
    """Whether ``sentence`` names a unit, or the noun, of ``quantity`` ("công suất", "kW")."""
    words = re.findall(r"[^\W\d_]+(?:/[^\W\d_]+)?|[€$£¥%]", sentence)
    return any(quantity_of(w) == quantity or quantity_of(f"{w} {n}") == quantity
               for w, n in zip(words, [*words[1:], ""]))


def bound_asked(question: str) -> str | None:
    """"max" or "min" when ``question`` asks for one end of a range ("at most", "tối đa")."""
    lowered = f" {question.lower()} "
    if any(f" {w}" in lowered for w in MAXIMUM_CUES):
        return "max"
    if any(f" {w}" in lowered for w in MINIMUM_CUES):
        return "min"
    return None


def range_end(span: str, which: str) -> str:
    """The end of a range ``span`` that ``which`` ("max"/"min") asks for, with the range's unit
    ("6 đến 8 bar", "max" -> "8 bar"); the span itself when it is no range."""
    ends = list(re.finditer(_NUMBER.pattern + "|" + _NUMBER_WORD.pattern, span, re.IGNORECASE))
    if len(ends) != 2 or ends[0].start() != 0 or not _RANGE_JOIN.match(span[ends[0].end():ends[1].start()]):
        return span
    last = ends[-1]
    if which == "max":
        return span[last.start():]
    unit = span[last.end():].strip()
    return f"{ends[0].group()} {unit}".strip()


def name_candidates(sentence: str, common: frozenset[str] | set[str] = frozenset()) -> list[Candidate]:
    """Runs of capitalised words (a lower-case connector such as "of" may join two). A word
    capitalised only because it opens a sentence, a list item or a label's value counts
    when it is not a function word and the evidence never writes it in lower case
    (``common``: the lower-case words of the evidence); a list label ("Step 3:") is not a name."""
    label = _LABEL.match(sentence)
    skip = label.end() if label else 0
    words = [(m.group(), m.start(), m.end()) for m in _CAP_WORD.finditer(sentence) if m.start() >= skip]
    out: list[Candidate] = []
    run: list[tuple[str, int, int]] = []

    def close():
        while run and run[-1][0].lower() in CONNECTORS:
            run.pop()
        if len(run) == 1 and normalize(run[0][0]) in ENGLISH_STOPWORDS | VIETNAMESE_FUNCTION_WORDS:
            run.clear()
        if run:
            text = sentence[run[0][1]:run[-1][2]].rstrip(".,;:")
            out.append(Candidate(text, run[0][1], run[0][1] + len(text)))
        run.clear()

    for i, (w, a, b) in enumerate(words):
        capital = w[:1].isupper() or (w[:1].isdigit() and run)
        opens = not sentence[skip:a].strip() or bool(re.search(r"(?:[:;•*\-–\"“(]|\.)\s*$", sentence[:a]))
        if capital and opens and not run and (normalize(w) in ENGLISH_STOPWORDS | VIETNAMESE_FUNCTION_WORDS
                                              or w.lower().rstrip(".") in common):
            capital = False
        if run and sentence[run[-1][2]:a].strip():      # punctuation between: "Officer (DPO)"
            close()
        if capital and w.endswith(".") and len(w) > 2 and not w[:-1].isupper():
            run.append((w[:-1], a, b - 1))      # "... and Zimbabwe. It": the sentence ends there
            close()
            continue
        if capital:
            run.append((w, a, b))
        elif run and w.lower() in CONNECTORS and i + 1 < len(words) and words[i + 1][0][:1].isupper():
            run.append((w, a, b))
        else:
            close()
        if run and (sentence[b:b + 1] in ",;:()" or sentence[b:b + 2] in (". ", ".")):
            close()
    close()
    return out


def _name_parts(question: str, acronyms: bool = False) -> list[str]:
    """The names a question gives, cut at possessives and "of" ("Larkspur's Chief Financial
    Officer" -> "Larkspur", "Chief Financial Officer"). The question's first word is a
    name only when it is capitalised inside too ("OSHA", "iPhone"): a question opens with a
    capital. Acronyms are left out: the corpus may spell them out in other words."""
    words = question.split()
    first = words[0] if words else ""
    out = []
    for c in name_candidates(question):
        text = c.text
        if c.start == 0 and text.split()[0] == first and not any(ch.isupper() for ch in first[1:]):
            text = text[len(first):].strip()
        for part in re.split(r"['’]s\b|\s+of\s+(?:the\s+)?", text):
            part = part.strip(" ,;:-")
            if len(part) > 1 and (acronyms or not part.isupper()) and any(ch.isalpha() for ch in part):
                out.append(part)
    return out


def question_names(question: str) -> list[str]:
    """The names ``question`` gives, acronyms and codes too ("ISO 23125"; see ``unnamed``)."""
    return _name_parts(question, acronyms=True)


def unnamed(question: str, texts: Sequence[str]) -> list[str]:
    """The names ``question`` gives that none of ``texts`` writes (compared word by word,
    accents and case aside): a question about the Madrid office, or about the Chief
    Financial Officer, that evidence naming neither cannot answer, however many of its other
    words it holds."""
    return [p for p in _name_parts(question) if not writes(texts, p)]


def writes(texts: Sequence[str], name: str) -> bool:
    """Whether one of ``texts`` writes ``name`` (word by word, accents and case aside)."""
    return f" {plain(name, accents=False)} " in " " + " ".join(plain(t, accents=False) for t in texts) + " "


def lower_case_words(texts: Sequence[str]) -> set[str]:
    """The words ``texts`` write in lower case somewhere (common words, not names)."""
    return {w for t in texts for w in re.findall(r"\b[^\W\d_A-ZÀ-ỸĐ][\w'’\-]*", t) if w.islower()}


def phrase_candidates(sentence: str, question_words: set[str], weigher: Weigher) -> list[Candidate]:
    """For answers that are not names (lower-case noun phrases): the words after the
    question's last word in the sentence, up to the clause's end (at most six words)."""
    words = [(m.group(), m.start(), m.end()) for m in re.finditer(r"[\w'’\-./]+", sentence)]
    last = max((i for i, (w, _, _) in enumerate(words) if set(weigher.tokenize(w)) & question_words), default=None)
    if last is None:
        return []
    out: list[Candidate] = []
    span: list[tuple[str, int, int]] = []
    for w, a, b in words[last + 1:]:
        if span and sentence[span[-1][2]:a].strip(" ") and sentence[span[-1][2]:a].strip() in ",;:()":
            break
        span.append((w, a, b))
        if len(span) >= 6 or sentence[b:b + 1] in ",;:":
            break
    while span and (normalize(span[0][0]) in ENGLISH_STOPWORDS | VIETNAMESE_FUNCTION_WORDS | {"la", "is", "are"}):
        span.pop(0)
    if span:
        text = sentence[span[0][1]:span[-1][2]].rstrip(".,;:")
        out.append(Candidate(text, span[0][1], span[0][1] + len(text)))
    return out


# A negation word (or "n't") and the word after it: "không khí" (air) negates nothing.
