"""Reading evidence for an answer: what kind of answer a question wants, which sentences of
the retrieved text bear on it, and the short answer those sentences give.

- ``answer_shape`` (``ragkit.text.shape``): a name, a date, a number, yes/no (the factoid
  shapes, which get a short answer), a definition, a list, steps or an explanation.
- ``relevant_sentences`` (``ragkit.answer.weighing``): each evidence text cut to the
  sentences that share the most weighted question words (IDF from the index when there is
  one), with their neighbours, so a small model reads what matters.
- ``short_answer``: candidate spans (``ragkit.answer.candidates``) of the wanted shape in
  those sentences (names: runs of capitalised words; dates: years and written dates;
  numbers with their units; yes/no from the polarity of the sentence that covers the
  question) scored by how much of the question
  their sentence covers and how close they stand to the question's words. None when no
  candidate stands out (the sentence it stands in covers too little of the question).
- ``question_focus`` (``ragkit.text.shape``), ``nested_descriptions`` and ``sub_question``
  (``ragkit.text.descriptions``): what an English question asks about before any nested
  description, those descriptions, and the question asked again of the entity a first step
  found for one.
- ``coverage`` (``ragkit.answer.weighing``): how much of the question (by word weight) a
  text covers, and which words it leaves open: what decides "not found in the sources"
  and whether another retrieval step is needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..text import (normalize, split_sentences,
                    strip_accents)
from ..text.lexicons import is_weekday, quantity_of
from ..text.words import POSSESSIVE as _POSSESSIVE, negated, plain
from ..text.question import chosen
from ..text.shape import FACTOID_SHAPES, SHAPES, Shape, answer_shape, question_focus  # noqa: F401
from ..text.descriptions import Description, nested_descriptions, question_descriptions, sub_question  # noqa: F401
from ..text.cues import RENAMING_WORDS
from .candidates import (CONNECTORS, MONTHS, Candidate, bound_asked, date_candidates, lower_case_words, name_candidates,
                         number_candidates, phrase_candidates, range_end, states_quantity)
from .weighing import Sentence, Weigher, score_sentences

def _plain(text: str) -> str:
    return plain(text, accents=False)


def of_asked_kind(short: str, shape: Shape) -> bool:
    """Whether a short answer is of the kind the question asks for: for a question that names
    a time noun ("which year", "what month") a date states one (a year, a month or a day at
    least; a bare "when" may be answered by an event), a number states one (in digits or words), a person or a place is
    neither a bare date nor a bare number. Other shapes take any answer."""
    text = short.strip()
    if shape.kind == "date" and not shape.target:
        return True         # "when" may be answered by an event or a condition ("when the pressure is reached")
    if shape.kind == "date":        # a date, a year, or a month ("January", "tháng 3"), as "which month" asks
        words = set(re.findall(r"[a-z]+", strip_accents(text.lower())))
        return bool(date_candidates(text) or re.search(r"\b\d{1,4}\b", text) or words & set(MONTHS))
    if shape.kind == "number":
        if not number_candidates(text):
            return False
        asked, said = quantity_of(shape.counted), number_unit(text)
        # "bao nhiêu kW" is not answered in bar; "how many holes" is not answered in hours.
        return said is None or said == "share" or (asked is not None and asked == said) or \
            (asked is None and not shape.counted)
    if shape.proper and not any(c.isupper() or c.isdigit() for c in text):
        return False            # a name is written with a capital ("tên là gì": not "sửa chữa")
    if shape.kind == "name" and shape.target in ("person", "place"):
        bare = re.sub(r"[\s,.;:()\-–]", "", text)
        return not (bare.isdigit() or is_weekday(text.rstrip("."))
                    or any(c.text == text.rstrip(".") for c in date_candidates(text)))
    return True


_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")


def number_unit(text: str) -> str | None:
    """The quantity the number of a short answer measures, read from its unit: the word
    after its last number ("6 đến 8 bar" -> pressure, "500 giờ" -> time) or a symbol before
    its first ("€20" -> money); None when it has no unit the units lexicon knows."""
    numbers = list(_DIGITS.finditer(text))
    if not numbers:
        return None
    after = text[numbers[-1].end():].split()
    if after and quantity_of(after[0].strip(".,;:()")):
        return quantity_of(after[0].strip(".,;:()"))
    glued = re.match(r"\s*([^\W\d_]+)", text[numbers[-1].end():])      # "20km", "5kW"
    if glued and quantity_of(glued.group(1)):
        return quantity_of(glued.group(1))
    before = text[:numbers[0].start()].strip()
    return quantity_of(before[-1]) if before else None


# ----------------------------------------------------------------------------- the short answer

@dataclass
class ShortAnswer:
    """A short answer found in the evidence: the span, the evidence item and sentence it
    stands in, its score, and the share of the question that sentence covers."""

    text: str
    item: int
    sentence: str
    score: float
    share: float
    runner_up: float = 0.0

    def to_dict(self) -> dict:
        return {"text": self.text, "evidence": self.item, "sentence": self.sentence,
                "score": round(self.score, 4), "share": round(self.share, 4),
                "runner_up": round(self.runner_up, 4)}


# Nouns that ask for a place (a closed dictionary), and the prepositions a place name follows.
_PLACE_NOUNS = frozenset("""place city town village country state county region province district
    continent island capital birthplace location area municipality nation territory""".split())
_LOCATIVE = re.compile(r"\b(?:in|at|from|near|of|to)\s+(?:the\s+)?$", re.IGNORECASE)


# A candidate stands out when its sentence covers at least this share of the question's
# weight (chosen on the hand-written dev sets: below it the sentence is about something else).
MIN_SHARE = 0.3


def _yes_or_no(question: str, sentences: list[Sentence], min_share: float) -> ShortAnswer | None:
    """Yes, or no where the sentence that covers the question best negates what the
    question does not (or the other way round); None when none covers half of it."""
    best = max(sentences, key=lambda s: (s.share, -s.item, -s.position), default=None)
    if best is None or best.share < max(min_share, 0.5):
        return None
    asked = re.sub(r"\s*(?:(?:phải|đúng|được)\s+)?(?:không|chưa)\s*\??\s*$", "", question.strip(),
                   flags=re.IGNORECASE)          # the Vietnamese question's closing particle
    flipped = negated(best.text) != negated(asked)
    return ShortAnswer("no" if flipped else "yes", best.item, best.text, best.share, best.share)


def short_answer(question: str, shape: Shape, texts: Sequence[str], weigher: Weigher,
                 min_share: float = MIN_SHARE, sentences: list[Sentence] | None = None,
                 exclude: Sequence[str] = (), titles: Sequence[str] = (),
                 common: frozenset[str] | set[str] = frozenset()) -> ShortAnswer | None:
    """The span of the wanted ``shape`` that the evidence ``texts`` give for ``question``
    (see the module docstring); None when the shape is not a factoid one or nothing stands
    out. ``common``: more words known to be common (written in lower case in the whole
    texts the evidence was cut from)."""
    if not shape.factoid:
        return None
    sentences = sentences if sentences is not None else score_sentences(question, texts, weigher, titles)
    q_weights = weigher.weights(question)
    q_words = set(q_weights)
    q_plain = f" {_plain(question)} "
    excluded = {_plain(e) for e in exclude}
    # The question's own terms, abbreviated: "Data Protection Officer" -> "dpo".
    q_tokens = re.findall(r"[^\W\d_]+", question)
    excluded |= {"".join(w[0] for w in q_tokens[i:j]).lower() for i in range(len(q_tokens))
                 for j in range(i + 2, min(i + 7, len(q_tokens) + 1))}
    if shape.kind == "yesno":
        return _yes_or_no(question, sentences, min_share)
    scores: dict[str, list] = {}
    common = lower_case_words(texts) | set(common)
    leads: dict[str, str | None] = {}       # each candidate's page, looked up once per question
    for s in sentences:
        if s.share <= 0:
            continue
        found = _candidates(shape, s.text, q_words, weigher, common)
        positions = [m.start() for w in s.covered for m in re.finditer(re.escape(w), strip_accents(s.text.lower()))]
        for c in found:
            if not of_asked_kind(c.text, shape):
                continue        # not of the asked kind: a weekday for "who", an answer in bar for "how many kW"
            words = [w for w in weigher.tokenize(c.text) if len(w) > 1 or w.isdigit()]
            plain = _plain(c.text)
            if not plain or f" {plain} " in q_plain or (words and all(w in q_words for w in words)) \
                    or plain in excluded or _another_name(s.text, c, q_words, weigher):
                continue        # the question's own words (or another name for them) are not its answer
            distance = min((abs(p - c.start) for p in positions), default=60) / 30.0
            score = s.share * s.share / (1.0 + distance) / (1.0 + 0.15 * (s.item - 1))
            if words:       # a span that repeats some of the question's words is less of an answer
                score *= 1.0 - 0.5 * sum(w in q_words for w in words) / len(words)
            if shape.target in _PLACE_NOUNS and _LOCATIVE.search(s.text[:c.start]):
                score *= 1.5         # "born in Stockholm": a place is what stands after "in"
            if shape.target and shape.target not in ("person", "place") and shape.target not in plain.split() \
                    and re.match(rf"\s+(?:[a-z-]+\s+){{0,2}}{re.escape(shape.target)}\b", s.text[c.end:]):
                score *= 0.25        # "an *American* author": a word that qualifies the asked noun is not its answer
            if shape.target and shape.target not in ("person", "place") and weigher.lead:
                if c.text not in leads:
                    leads[c.text] = weigher.lead(c.text)
                said = leads[c.text]            # what the corpus's own page on it says it is
                if said and re.search(rf"\b{re.escape(shape.target)}", strip_accents(said.lower())):
                    score *= 2.0
            if shape.target and shape.target not in ("person", "place"):
                lowered = strip_accents(s.text.lower())
                near = [m.start() for m in re.finditer(rf"\b{re.escape(shape.target)}", lowered)]
                if shape.target in plain.split() or any(abs(p - c.start) <= 40 for p in near):
                    score *= 1.5     # "Avery County", "X is a waterfall": the asked kind of thing
            key = plain
            if key in scores:
                scores[key][0] += 0.2 * score
                if score > scores[key][1]:
                    scores[key][1:] = [score, c.text, s]
            else:
                scores[key] = [score, score, c.text, s]
    if not scores:
        return None
    ranked = sorted(scores.values(), key=lambda v: -(v[0]))
    total, _, text, s = ranked[0]
    if s.share < min_share:
        return None
    if shape.kind == "number":
        text = bounded(text, question, texts)
    elif shape.kind == "name":
        text = full_name(text, texts)
    return ShortAnswer(text, s.item, s.text, total, s.share, ranked[1][0] if len(ranked) > 1 else 0.0)


def _another_name(sentence: str, c: Candidate, q_words: set[str], weigher: Weigher) -> bool:
    """Whether candidate ``c`` is written as another name for words of the question: only
    renaming words or brackets stand between it and a question word before or after it."""
    before = re.findall(r"[\w'’-]+|[(,]", sentence[:c.start])[-5:]
    after = re.findall(r"[\w'’-]+|[()]", sentence[c.end:])[:5]
    i = len(before)
    while i and (before[i - 1] in "(," or normalize(before[i - 1]) in RENAMING_WORDS):
        i -= 1
    renamed = i < len(before) and any(normalize(w) in RENAMING_WORDS or w == "(" for w in before[i:])
    if renamed and i and set(weigher.tokenize(before[i - 1])) & q_words:
        return True
    j = 0
    while j < len(after) and (after[j] in "()" or normalize(after[j]) in RENAMING_WORDS):
        j += 1
    renamed = any(normalize(w) in RENAMING_WORDS or w == "(" for w in after[:j])
    return renamed and j < len(after) and bool(set(weigher.tokenize(after[j])) & q_words)


def full_name(name: str, texts: Sequence[str]) -> str:
    """A name the evidence shortens ("Hall, who was ...") as the evidence writes it in full
    elsewhere ("G. Stanley Hall"): the longest capitalised run in ``texts`` that ends with
    the one-word ``name``; ``name`` itself when there is none."""
    if len(name.split()) != 1 or not name[:1].isupper():
        return name
    longer = [_POSSESSIVE.sub("", c.text) for text in texts for sentence in split_sentences(text)
              for c in name_candidates(sentence)]
    longer = [n for n in longer if len(n.split()) > 1 and n.split()[-1] == name]
    return max(longer, key=len, default=name)


def _candidates(shape: Shape, sentence: str, q_words: set[str], weigher: Weigher,
                common: frozenset[str] | set[str] = frozenset()) -> list[Candidate]:
    if shape.kind == "date":
        found = date_candidates(sentence)
        if shape.target == "year":      # "what year": the year of a full date
            found = [Candidate(m.group(), c.start + m.start(), c.start + m.end()) for c in found
                     for m in [re.search(r"\b\d{4}\b", c.text)] if m]
        return found
    if shape.kind == "number":
        asked = quantity_of(shape.counted)
        return [c for c in number_candidates(sentence) if asked is None
                or (unit := number_unit(c.text)) == asked or unit is None and states_quantity(sentence, asked)]
    names = name_candidates(sentence, common)
    # a date is no name ("March 1834"), though a name may hold one ("the 1998 Winter Olympics")
    names = [c for c in names if not any(d.text == c.text for d in date_candidates(c.text))
             and (not date_candidates(c.text) or len(c.text.split()) > 1)]
    return names or phrase_candidates(sentence, q_words, weigher)


def bounded(span: str, question: str, texts: Sequence[str]) -> str:
    """The end of a range ``span`` that ``question`` asks for ("tối đa", "at least"), as the
    evidence writes it ("8 bar"; "6" when the evidence writes no "6 bar"); ``span`` itself
    when the question asks for no bound or the span is no range."""
    which = bound_asked(question)
    end = range_end(span, which) if which else span
    if end == span or in_evidence(end, texts):
        return end
    bare = end.split()[0]
    return bare if in_evidence(bare, texts) else span


def trim_short_answer(short: str, shape: Shape, texts: Sequence[str], question: str = "",
                      offered: tuple[str, ...] = ()) -> str:
    """A model's short answer cut to the span of the asked shape when it says more ("14
    characters long" -> "14 characters", "Beatriz Nogueira, Head of Data Science" ->
    "Beatriz Nogueira"), provided the evidence holds the cut span; written as the evidence
    writes it ("3 axes" where the evidence says "three axes"); a name without the
    question's own words it opens with ("Tên người sửa chữa" asked "ghi tên ai" ->
    "người sửa chữa"), unless it is a proper name, every word capitalised ("Harbor
    Lights" asked about a harbor keeps "Harbor"); one of the items a question offers to
    choose between (``offered``: the question reading's ``alternatives``), as the question writes
    it; the asked end of a range ("6 to 8 bar", asked the maximum -> "8 bar")."""
    offered = offered if shape.kind != "yesno" else ()
    picked = chosen(short, offered) if offered else None
    if picked is not None:
        return picked           # one of the items the question offers, as the question writes it
    if not in_evidence(short, texts):
        short = as_evidence_writes(short, texts) or short
    if shape.kind == "number" and question:
        short = bounded(short, question, texts)
    words = short.split()
    proper = len(words) > 1 and all(w[:1].isupper() or w.lower() in CONNECTORS for w in words)
    if shape.kind == "name" and question and not proper:      # a proper name keeps every word ("Pizza Hut")
        asked = set(_plain(question).split())
        at = 0
        while at < len(words) - 1 and _plain(words[at]) in asked:
            at += 1
        if at and in_evidence(" ".join(words[at:]), texts):
            short = " ".join(words[at:])
    if shape.kind == "number":
        found = number_candidates(short)
    elif shape.kind == "date":
        found = date_candidates(short)
    elif shape.kind == "name" and "," in short:
        found = [Candidate(short.split(",")[0].strip(), 0, 0)]
    else:
        found = []
    for c in found:
        if c.text and c.text != short and in_evidence(c.text, texts):
            return c.text
    return short


# Number words and the digits they stand for, so "3 trục" reads as the evidence's "ba trục".
_NUMBER_VALUES = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER_VALUES.update({w: str(i) for i, w in enumerate("một hai ba bốn năm sáu bảy tám chín mười".split(), 1)})


def _numeral(word: str) -> str:
    return _NUMBER_VALUES.get(word.lower(), _plain(word))


def as_evidence_writes(span: str, texts: Sequence[str]) -> str | None:
    """``span`` as the evidence writes it when the two differ only in writing a number in
    digits or in words ("3 trục" / "ba trục", "three days" / "3 days"); None when no text
    holds it so, or when ``span`` is a bare number (its word could be a pronoun: "the one")."""
    wanted = [_numeral(w) for w in re.findall(r"\w+", span)]
    if not any(w.isdigit() for w in wanted) or all(w.isdigit() for w in wanted):
        return None     # a bare number: "one" and "ba" are also words of other kinds
    for text in texts:
        words = list(re.finditer(r"\w+", text))
        values = [_numeral(m.group()) for m in words]
        for i in range(len(values) - len(wanted) + 1):
            if values[i:i + len(wanted)] == wanted:
                return text[words[i].start():words[i + len(wanted) - 1].end()]
    return None


# A bare yes or no (English, Vietnamese, lower case): it answers a question and quotes nothing.
BARE_YES_NO = frozenset({"yes", "no", "có", "không"})
_BARE_YES_NO_PLAIN = frozenset(map(_plain, BARE_YES_NO))       # as typed without accents too


def in_evidence(span: str, texts: Sequence[str]) -> bool:
    """Whether ``span`` occurs in ``texts``, compared word for word after lower-casing and
    accent stripping (yes and no always do: they answer, they quote nothing)."""
    plain = _plain(span)
    if not plain or plain in _BARE_YES_NO_PLAIN:
        return bool(plain)
    return any(f" {plain} " in f" {_plain(t)} " for t in texts)


def parse_short_answer(text: str) -> tuple[str, str]:
    """A model's factoid answer split into its first line (the short answer, without a
    leading "Answer:" label, citations or a final full stop) and the rest."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return "", ""
    first = re.sub(r"^\s*(?:\*\*)?(?:short answer|answer|câu trả lời|trả lời|đáp án)\s*:\s*(?:\*\*)?", "",
                   lines[0], flags=re.IGNORECASE)
    first = re.sub(r"\[\s*\d[\d\s,;–-]*\]?|^\s*\d+\]", "", first).strip(" *.\t")
    if not re.search(r"\w", first):        # a bare "[1]": the answer starts on the next line
        return parse_short_answer("\n".join(lines[1:])) if len(lines) > 1 else ("", "")
    return first, "\n".join(lines[1:]).strip()


def yes_no(text: str) -> str | None:
    """"yes" or "no" when a short answer says one (English or Vietnamese), else None."""
    plain = _plain(text)
    head = plain.split()[:2]
    if not head:
        return None
    if head[0] in ("yes", "co", "dung", "phai", "duoc") and len(plain.split()) <= 6:
        return "yes"
    if head[0] in ("no", "khong", "chua") and len(plain.split()) <= 6:
        return "no"
    return None


__all__ = ["BARE_YES_NO", "FACTOID_SHAPES", "MIN_SHARE", "SHAPES", "Sentence", "Shape", "ShortAnswer",
           "Weigher", "answer_shape", "as_evidence_writes", "bound_asked", "bounded", "date_candidates",
           "in_evidence", "name_candidates", "number_candidates", "parse_short_answer", "range_end",
           "score_sentences", "short_answer", "yes_no"]
