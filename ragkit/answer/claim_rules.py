"""The rules a claim is held to against one span of its evidence, each one a reader can
verify (``answer.grounding.check_claims`` applies them): the claim's tokens and names, the
order two names stand in (a passive "by" reverses it), the numbers it states with their
units, and what it negates. Each ``*_problem`` returns why the span does not hold the claim,
or "" when it does."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from ..text import ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS, strip_accents
from ..text.words import stem
from ..text.cues import (ANSWER_WORDS, DROPPING_PAIRS, DROPPING_VERBS, NEGATIONS, NOT_NEGATING, REFUSAL_WORDS)

_ENUMERATION_MAX = 20  # small integers are list numbering ("1)", "Bước 2"), not claims


def is_content(word: str) -> bool:
    """Numbers above list numbering, and words that are not function words."""
    if word.isdigit():
        return int(word) > _ENUMERATION_MAX
    if len(word) < 2 or word in ENGLISH_STOPWORDS or word in _ACCENTED_FUNCTION:
        return False
    return not (strip_accents(word) == word and word in VIETNAMESE_FUNCTION_WORDS)


# The accented spellings of the function words most often written ("của", "và", "là" ...).
_ACCENTED_FUNCTION = frozenset(
    """ai bằng bị bởi các cái cần cho chỉ chưa có còn của đã đang để đến đều đó được gì hay
    hơn khi không là lại lên lúc mà mỗi một nếu nên người những như nào này nó ở ra rằng rồi
    sau sẽ tại thì theo thuộc trên trong từ và vào vẫn về vì với xong""".split()
)


_COORDINATORS = frozenset({"and", "or", "nor", "và", "hoặc", "hay"})
_NEGATION_SCOPE = 3          # content words after a negation (ragkit.text.cues.NEGATIONS) that it negates
_PASSIVE = frozenset({"by", "bởi", "được"})
_COORDINATION = frozenset({",", ";", "(", ")", "and", "or", "nor", "và", "hoặc", "hay", "cùng", "với"})
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_][\w'’]*|\d+\w*|[,;:.!?()—–→←]")
BOUNDARY = frozenset(",;:.!?()—–→←")


@lru_cache(maxsize=1)
def refusal_stems() -> frozenset:
    return frozenset(word_stem(w) for w in REFUSAL_WORDS)


def claim_tokens(text: str) -> list[str]:
    """Words (case kept), numbers and clause punctuation of ``text``; "n't" becomes "not"."""
    text = unicodedata.normalize("NFC", text).replace("_", " ")
    text = re.sub(r"(?i)\bcannot\b", "can not", text)
    text = re.sub(r"(?i)n[’']t\b", " not", text)
    return _TOKEN.findall(text)


def is_number(token: str) -> bool:
    return token[0].isdigit() and bool(re.fullmatch(r"\d+(?:[.,]\d+)*", token))


_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+")


def number_key(token: str) -> str:
    """A number as a value: English thousands groups ("8,200") as the plain digits ("8200");
    otherwise a decimal comma as a point ("1,5" is "1.5")."""
    if _GROUPED.fullmatch(token):
        return token.replace(",", "")
    return token.replace(",", ".")


@lru_cache(maxsize=65536)
def word_stem(word: str) -> str:
    """An English word's Snowball stem; other words as they are."""
    return stem(word) if word.isascii() else word


def claim_word(word: str) -> bool:
    """A word that carries content: not a function word, a negation, an answer word ("yes")
    or punctuation."""
    return word not in BOUNDARY and word not in NEGATIONS and word not in ANSWER_WORDS and not is_number(word) \
        and is_content(word)


@dataclass(frozen=True)
class ClaimText:
    """A claim or evidence span analysed once: its tokens and what the rules compare."""

    tokens: tuple[str, ...]           # original case
    lower: tuple[str, ...]
    keys: frozenset                   # stems of its words, and accent-stripped forms
    negated: frozenset                # stems negated at one occurrence at least
    only_negated: frozenset           # stems negated at every occurrence
    names: tuple[tuple[int, tuple[str, ...]], ...]   # (position, lowercased words) of each name
    scopes: tuple = ()                # each negation's scope: segments (split at and/or) of stems, in order

    @classmethod
    def of(cls, text: str, lowercase_vocabulary: frozenset = frozenset()) -> "ClaimText":
        tokens = tuple(claim_tokens(text))
        lower = tuple(t.lower() for t in tokens)
        keys = set()
        for w in lower:
            keys.add(word_stem(w))
            keys.add("~" + strip_accents(w))
        negated, only, scopes = _negated(lower)
        return cls(tokens, lower, frozenset(keys), negated, only, _names(tokens, lowercase_vocabulary), scopes)

    def has(self, word: str) -> bool:
        """Whether a (lowercase) word is in this text: by stem, or accent-free for a word
        written without diacritics."""
        return word_stem(word) in self.keys or (strip_accents(word) == word and "~" + word in self.keys)


def _negated(lower: tuple[str, ...]) -> tuple[frozenset, frozenset, tuple]:
    """Stems of the content words and numbers that follow a negation (up to
    ``_NEGATION_SCOPE`` of them, within its clause): those negated somewhere, those negated
    everywhere they occur, and each negation's scope (its stems in order, in segments split
    at "and"/"or")."""
    inside: set[str] = set()
    outside: set[str] = set()
    scopes: list[list[list[str]]] = []
    scope = skip = 0
    for i, w in enumerate(lower):
        if skip:
            skip -= 1
            continue
        if w in BOUNDARY:
            scope = 0
            continue
        if w in NEGATIONS and not (i + 1 < len(lower) and lower[i + 1] in NOT_NEGATING.get(w, ())) \
                or w in DROPPING_VERBS:
            if not scope or scopes[-1] != [[]]:
                scopes.append([[]])
            scope = _NEGATION_SCOPE
            skip = 2 if lower[i + 1:i + 3] == ("bao", "giờ") else 0     # "chẳng bao giờ": never
            continue
        if w in DROPPING_PAIRS and i + 1 < len(lower) and lower[i + 1] in DROPPING_PAIRS[w]:
            scopes.append([[]])
            scope = _NEGATION_SCOPE + 1      # the pair's second word is not a content word
            continue
        if scope and w in _COORDINATORS and scopes[-1][-1]:
            scopes[-1].append([])
            continue
        if claim_word(w) or is_number(w):
            if scope:
                scopes[-1][-1].append(word_stem(w))
            (inside if scope else outside).add(word_stem(w))
            scope = max(scope - 1, 0)
    out = tuple(tuple(tuple(seg) for seg in sc if seg) for sc in scopes)
    return frozenset(inside), frozenset(inside - outside), tuple(sc for sc in out if sc)


def _is_name_word(token: str, first: bool, lowercase_vocabulary: frozenset) -> bool:
    """A word that names something: all capitals ("AMF"), letters and digits ("N4", "5GC"),
    or capitalised: mid-sentence always, first in a sentence only if the evidence never
    writes it (or a word of its stem) in lower case (so "Máy", "The", "Visitors" are not
    names, "Aspirin" is)."""
    if not token[0].isalnum() or is_number(token) or len(token) < 2:
        return False
    letters = [c for c in token if c.isalpha()]
    if not letters:
        return False
    if sum(c.isupper() for c in letters) >= 2 or (any(c.isdigit() for c in token) and letters):
        return True
    if not token[0].isupper():
        return False
    word = token.lower()
    if word in ENGLISH_STOPWORDS or word in _ACCENTED_FUNCTION or word in NEGATIONS or word in ANSWER_WORDS:
        return False
    return not first or (word not in lowercase_vocabulary and word_stem(word) not in lowercase_vocabulary)


def _names(tokens: tuple[str, ...], lowercase_vocabulary: frozenset) -> tuple:
    """The names in ``tokens``: runs of name words, with the position of the first."""
    out: list[tuple[int, tuple[str, ...]]] = []
    run: list[str] = []
    start = 0
    first = True
    for i, token in enumerate(tokens):
        if _is_name_word(token, first, lowercase_vocabulary):
            if not run:
                start = i
            run.append(token.lower())
        else:
            if run:
                out.append((start, tuple(run)))
            run = []
        first = token in ".!?:" or (first and not token[0].isalnum())
    if run:
        out.append((start, tuple(run)))
    return tuple(out)


def _name_positions(name: tuple[str, ...], span: ClaimText, distinct: Iterable[tuple[str, ...]] = ()) -> list[int]:
    """Where a name is in a span: the places where its words stand in order with at most two
    other words among them (a name may be written longer in the evidence: "Marie Curie" /
    "Marie Skłodowska Curie"), not scattered over the span; and not where the longer form is
    one of the ``distinct`` names (another name the claim uses: "NF Set" is not "NF Service
    Set" in a claim that names both)."""
    out = []
    distinct = {d for d in distinct if d != name}
    for i, w in enumerate(span.lower):
        if w != name[0]:
            continue
        j, rest = i + 1, list(name[1:])
        while rest and j < min(len(span.lower), i + len(name) + 2):
            if span.lower[j] == rest[0]:
                rest.pop(0)
            j += 1
        if not rest and not (j - i > len(name) and tuple(span.lower[i:j]) in distinct):
            out.append(i)
    return out


# Words that place what follows as the setting of a claim ("in the 5G Core"), not an actor.
_SETTING = frozenset({"in", "within", "inside", "across", "throughout", "trong", "tại", "ở"})
_ARTICLES = frozenset({"the", "a", "an"})


def _setting_start(claim: ClaimText, pos: int) -> int | None:
    """Where the setting phrase of the name at ``pos`` starts ("in the 5G Core": at "in"):
    a setting word before it, with articles, numbers and one-letter tokens between; None
    when the name does not follow one."""
    i = pos - 1
    while i >= 0 and pos - i <= 4 and (claim.lower[i] in _ARTICLES or is_number(claim.lower[i])
                                       or len(claim.lower[i]) == 1 and claim.lower[i].isalpha()):
        i -= 1
    return i if i >= 0 and claim.lower[i] in _SETTING else None


def question_settings(claim: ClaimText, question: ClaimText | None) -> set[int]:
    """Token positions of the claim that only restate the question's setting: a name the
    question uses, after a setting word ("in the 5G Core" when the question asks about the
    5G Core), and the numbers in that phrase which the question holds too."""
    if question is None:
        return set()
    out: set[int] = set()
    for pos, name in claim.names:
        start = _setting_start(claim, pos)
        if start is not None and _name_positions(name, question):
            out.update(i for i in range(start, pos + len(name))
                       if not is_number(claim.lower[i]) or claim.lower[i] in question.lower)
    return out


def _anchored(claim: ClaimText, span: ClaimText, question: ClaimText | None) -> bool:
    """Whether the claim says something of the span's own: a content word the span holds
    and the question does not."""
    return any(claim_word(w) and span.has(w) and not (question and question.has(w)) for w in claim.lower)


def _given_names(claim: ClaimText, span: ClaimText, question: ClaimText | None, distinct) -> set[int]:
    """Positions of the claim's names that only the question states, where they may stand:
    the claim is anchored in the span, and the span names nothing (a name of the span is
    what the question's name could be standing in for: "the NRF selects an SMF" against "the
    AMF selects an SMF"; a rule that names no one may be applied to whoever the question
    names)."""
    if question is None or span.names:
        return set()
    asked = {pos for pos, name in claim.names
             if _name_positions(name, question) and not _name_positions(name, span, distinct)}
    return asked if asked and _anchored(claim, span, question) else set()


# Words that open a framing phrase at the start of a sentence ("Theo QCVN 05, ...", "In TS
# 23.501, ..."): the names in it say where the claim comes from or holds, not who acts.
_FRAMING = frozenset({"theo", "according", "per", "as", "in", "within", "under", "trong", "tại", "ở", "for"})


def _framed(claim: ClaimText) -> range:
    """Token positions of a framing phrase that opens the claim and ends at its first comma."""
    if not claim.lower or claim.lower[0] not in _FRAMING or "," not in claim.lower:
        return range(0)
    return range(0, claim.lower.index(","))


def _framed_in(span: ClaimText, where: list[int]) -> bool:
    """Whether a name stands in a framing phrase of the span too (a framing word before it,
    perhaps with an article between): "... theo QCVN 05", "as defined in TS 23.501"."""
    return any(j >= 1 and (span.lower[j - 1] in _FRAMING or j >= 2 and span.lower[j - 1] in _ARTICLES
                           and span.lower[j - 2] in _FRAMING) for j in where)


def order_problem(claim: ClaimText, span: ClaimText, question: ClaimText | None = None, distinct=None) -> str:
    """Why the claim's names do not stand as in the span ('' when they do). A name the span
    lacks is allowed only as the setting the question gave ("... in the 5G Core" when the
    question asks about the 5G Core), or as a name the question states (``_given_names``);
    it takes no part in the roles; nor do the names of a framing phrase that opens the claim
    ("Theo QCVN 05:2023/BTNMT, ...") when the span frames its first name too ("... theo
    QCVN 05:2023/BTNMT"). ``distinct``: the names of the whole claim (default: of
    ``claim``), none of which a name may be matched by."""
    found: list[tuple[int, tuple[str, ...], list[int]]] = []
    distinct = [name for _, name in claim.names] if distinct is None else distinct
    setting = question_settings(claim, question) | _given_names(claim, span, question, distinct)
    framed = _framed(claim)
    frame: list[tuple[int, tuple[str, ...], list[int]]] = []
    for pos, name in claim.names:
        where = _name_positions(name, span, distinct)
        if not where and pos in setting:
            continue
        if not where:
            return f"names {' '.join(claim.tokens[pos:pos + len(name)])!r}, which the span does not"
        (frame if pos in framed else found).append((pos, name, where))
    if frame and not _framed_in(span, frame[0][2]):
        found = sorted(found + frame)     # the phrase is not a frame in the span: its names take roles
    for (pa, a, wa), (pb, b, wb) in zip(found, found[1:]):
        between = claim.lower[pa + len(a):pb]
        if a == b or all(w in _COORDINATION for w in between):
            continue       # a list ("AMF, SMF and UPF") orders nothing
        passive = any(w in _PASSIVE for w in between)

        def same_roles(i: int, j: int, passive: bool = passive) -> bool:
            lo, hi = min(i, j), max(i, j)
            span_passive = any(w in _PASSIVE for w in span.lower[lo:hi])
            return (i < j) == (span_passive == passive)

        if not any(same_roles(i, j) for i in wa for j in wb if i != j):
            return f"{' '.join(a)!r} and {' '.join(b)!r} swap their roles relative to the span"
    return ""


def _given_numbers(claim: ClaimText, span: ClaimText, question: ClaimText | None) -> set[int]:
    """Positions of the claim's numbers that the question states and the span does not,
    when the claim also states a number of the span's own (one the question does not give):
    the question's number set against the evidence's ("120 euros is above the 50 allowed");
    not one that stands where the span has a number with its unit that the claim leaves out."""
    if question is None:
        return set()
    asked = {number_key(t) for t in question.lower if is_number(t)}
    given = {number_key(t) for t in span.lower if is_number(t)}
    numbers = [(i, number_key(t)) for i, t in enumerate(claim.lower) if is_number(t)]
    if not any(key in given and key not in asked for _, key in numbers):
        return set()
    stated = {key for _, key in numbers}
    # A number of the span the claim leaves out, with the same unit, is what the question's
    # number would be standing in for ("at least 7 years" where the span says "at least 5 years").
    left_out = {_unit(span, j) for j, t in enumerate(span.lower) if is_number(t) and number_key(t) not in stated}
    return {i for i, key in numbers
            if key in asked and key not in given and not (_unit(claim, i) and _unit(claim, i) in left_out)}


def _unit(text: ClaimText, i: int) -> str:
    """The stem of the word after the number at ``i`` ('' when none)."""
    after = text.lower[i + 1] if i + 1 < len(text.lower) else ""
    return word_stem(after) if after.isalpha() else ""


def number_problem(claim: ClaimText, span: ClaimText, question: ClaimText | None = None) -> str:
    """The first number the claim states that the span lacks, or states with another unit
    (a number in the question's setting, "in the 5G Core", is not stated by the claim; nor is
    one the question gives that the claim sets against the span's, ``_given_numbers``)."""
    span_numbers = [(number_key(t), i) for i, t in enumerate(span.lower) if is_number(t)]
    setting = question_settings(claim, question) | _given_numbers(claim, span, question)
    for i, token in enumerate(claim.lower):
        if not is_number(token) or i in setting:
            continue
        places = [j for key, j in span_numbers if key == number_key(token)]
        if not places:
            return f"the number {token} is not in the span"
        unit = claim.lower[i + 1] if i + 1 < len(claim.lower) else ""
        if unit and (unit == "%" or (unit.isalpha() and claim_word(unit))):
            if not any(unit in span.lower[j + 1:j + 3] for j in places) and \
                    any(j + 1 < len(span.lower) and span.lower[j + 1].isalpha() and claim_word(span.lower[j + 1])
                        for j in places):
                return f"the span gives {token} another unit than {unit!r}"
    return ""


# Modal words a negation passes through to what it negates ("do not need to check": check).
_MODALS = frozenset("need needs needed must should ought have has required necessary allowed permitted able".split())


@lru_cache(maxsize=1)
def _modal_stems() -> frozenset:
    return frozenset(word_stem(w) for w in _MODALS)


def _head(segment: tuple) -> str:
    """The word a segment of a negation's scope bears on: its first word past modals."""
    return next((w for w in segment if w not in _modal_stems()), segment[0])


def _negation_matched(head: str, scope: tuple, others: tuple) -> bool:
    """Whether one of the negations ``others`` bears on ``head`` (the first word of a segment
    of the negation ``scope``): it is one of its heads, or it is in its scope and that
    negation's own head is in ``scope`` (the two negations cover the same words)."""
    words = {w for segment in scope for w in segment}
    for other in others:
        heads = [_head(segment) for segment in other]
        if head in heads or head in {w for segment in other for w in segment} and heads[0] in words:
            return True
    return False


def negation_problem(claim: ClaimText, span: ClaimText, shared: set[str]) -> str:
    """A negation of the claim whose head (the first content word after it, and after each
    "and"/"or" inside it) the span holds but no negation of the span bears on; or a negation
    of the span of which the claim negates none of the words the span only ever negates and
    the claim uses. Each negation is compared as a whole: word order and word length differ
    between a text and its restatement, so the other words of its scope may differ."""
    for scope in claim.scopes:
        for head in (_head(segment) for segment in scope):
            if head in shared and not _negation_matched(head, scope, span.scopes):
                return f"it negates {head!r}, which the span does not"
    for scope in span.scopes:
        bears = [w for segment in scope for w in segment if w in shared and w in span.only_negated]
        if bears and not any(w in claim.negated for w in bears):
            return f"the span negates {bears[0]!r}, which the claim does not"
    return ""
