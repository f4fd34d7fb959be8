"""Grounding checks: does an answer say only what its evidence holds?

A lexical check, cheap and explainable:
- the answer's content words (minus function words and list numbering) must mostly appear in
  the evidence or the question. Words are compared with their diacritics ("bạn" is not
  "bàn"); a word written without any diacritics matches its accent-stripped form;
- every number the answer states must appear in the evidence (a model that invents a
  spindle speed fails on the number alone);
- the answer must not be degenerate: a small model that loops ("bạn có bạn có ...") repeats
  the same word trigrams, which is caught by the share of distinct trigrams.
The report names the words and numbers the evidence does not hold, so a reader sees why.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Iterable

from ..text import ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS, strip_accents
from .claims import Claim, split_claims, split_sentences
from .injection import suspicious_evidence

DEFAULT_MIN_SUPPORT = 0.6
MIN_DISTINCT_TRIGRAMS = 0.5
_ENUMERATION_MAX = 20  # small integers are list numbering ("1)", "Bước 2"), not claims
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class GroundingReport:
    grounded: bool
    support: float                      # share of content words found in evidence/question
    content_words: int
    distinct_trigrams: float = 1.0      # 1.0: no repetition; near 0: the answer loops
    unsupported_words: list[str] = field(default_factory=list)
    unsupported_numbers: list[str] = field(default_factory=list)
    reason: str = ""
    min_support: float = DEFAULT_MIN_SUPPORT

    def to_dict(self) -> dict:
        return asdict(self)


def _words(text: str) -> list[str]:
    """Lowercase words with their diacritics (NFC), "_" split off."""
    return [w for w in _WORD.findall(unicodedata.normalize("NFC", text.lower()).replace("_", " "))]


def _is_content(word: str) -> bool:
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


def distinct_trigram_ratio(words: list[str]) -> float:
    """Distinct word trigrams over all trigrams (1.0 for fewer than 6 words)."""
    if len(words) < 6:
        return 1.0
    grams = list(zip(words, words[1:], words[2:]))
    return len(set(grams)) / len(grams)


def check_grounding(answer: str, evidence: Iterable[str], question: str = "",
                    *, min_support: float = DEFAULT_MIN_SUPPORT) -> GroundingReport:
    """Compare an answer's content words and numbers with the evidence texts.

    Grounded means: support >= ``min_support``, no number absent from the evidence, and
    distinct trigrams >= 0.5. An answer with no content words is not grounded.

    >>> check_grounding("Tốc độ 1200 vòng/phút", ["Đặt tốc độ 1200 vòng/phút"]).grounded
    True
    >>> check_grounding("Tốc độ 9000 vòng/phút", ["Đặt tốc độ 1200 vòng/phút"]).unsupported_numbers
    ['9000']
    """
    known: set[str] = set()
    for text in [*evidence, question]:
        known.update(_words(text))
    known_plain = {strip_accents(w) for w in known}
    words = _words(answer)
    content = [w for w in words if _is_content(w)]
    trigrams = distinct_trigram_ratio(words)
    if not content:
        return GroundingReport(grounded=False, support=0.0, content_words=0,
                               distinct_trigrams=round(trigrams, 4),
                               reason="the answer has no content words", min_support=min_support)

    def supported(w: str) -> bool:
        return w in known or (strip_accents(w) == w and w in known_plain)

    missing = [w for w in content if not supported(w)]
    numbers = sorted({w for w in missing if w.isdigit()}, key=int)
    support = 1.0 - len(missing) / len(content)
    reasons = []
    if support < min_support:
        reasons.append(f"only {support:.0%} of its content words are in the evidence")
    if numbers:
        reasons.append(f"numbers not in the evidence: {', '.join(numbers)}")
    if trigrams < MIN_DISTINCT_TRIGRAMS:
        reasons.append(f"it repeats itself ({trigrams:.0%} distinct trigrams)")
    return GroundingReport(grounded=not reasons, support=round(support, 4),
                           content_words=len(content), distinct_trigrams=round(trigrams, 4),
                           unsupported_words=sorted(set(missing) - set(numbers))[:50],
                           unsupported_numbers=numbers, reason="; ".join(reasons),
                           min_support=min_support)


# --------------------------------------------------------------------------- claim level
#
# The check above cannot tell which evidence supports which sentence: an answer that
# recombines evidence words into a false claim passes it. ``check_claims`` judges each claim
# (``claims.split_claims``) against the sentences of the evidence it cites (any evidence when
# it cites none). A claim is supported by a span (one evidence sentence, or two adjacent ones)
# when all of these hold, each a rule a reader can verify:
#
# - coverage: at least ``MIN_CLAIM_SUPPORT`` of its content words are in the span (or in the
#   question, which an answer may restate); English words are compared by their stems;
# - numbers: every number it states is in the span, with the unit it gives that number;
# - negation: a word the claim negates ("not", "never", "không", "chưa" before it) is negated
#   in the span too, and a word the span negates is negated in the claim;
# - names and roles: every name it uses (a capitalised, all-capitals or letter-and-digit word
#   such as "AMF", "Marie Curie", "N4") is in the span, and two names that are not merely
#   listed ("A, B and C") stand in the same order there ("the NRF selects the SMF" is not
#   "the SMF selects the NRF"); a passive "by"/"bởi"/"được" between them reverses the order.
#
# The trace names, for every claim, the span that supports it or why none does.

MIN_CLAIM_SUPPORT = 0.75
BORDERLINE_SUPPORT = 0.5     # a claim short only on coverage, above this, may go to a model judge
_NEGATIONS = frozenset("not no never none nor neither without cannot không chưa chẳng chả đừng chớ".split())
# "không" begins compounds that negate nothing: air, space, no-load, air force, midair.
_NOT_NEGATING = {"không": frozenset("khí gian tải quân trung".split())}
_NEGATION_SCOPE = 3          # content words after a negation that it negates
# Verbs that drop what follows ("skip the check", "bỏ qua bước 2"): a step said to be skipped
# has the opposite polarity of the step stated as done.
_DROPPING = frozenset("skip skipping skipped omit omitting omitted bypass unnecessary needless".split())
_DROPPING_PAIRS = {"bỏ": frozenset({"qua"})}
_PASSIVE = frozenset({"by", "bởi", "được"})
_COORDINATION = frozenset({",", ";", "(", ")", "and", "or", "nor", "và", "hoặc", "hay", "cùng", "với"})
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_][\w'’]*|\d+\w*|[,;:.!?()—–→←]")
_BOUNDARY = frozenset(",;:.!?()—–→←")
_REFUSAL_CUES = (
    "not enough", "does not say", "do not say", "doesn't say", "no information", "cannot answer",
    "can't answer", "not mentioned", "not stated", "enough information", "insufficient", "không đủ", "không có thông tin",
    "không nêu", "không đề cập", "chưa đủ", "không tìm thấy",
)


def _tokens(text: str) -> list[str]:
    """Words (case kept), numbers and clause punctuation of ``text``; "n't" becomes "not"."""
    text = unicodedata.normalize("NFC", text).replace("_", " ")
    text = re.sub(r"(?i)\bcannot\b", "can not", text)
    text = re.sub(r"(?i)n[’']t\b", " not", text)
    return _TOKEN.findall(text)


def _is_number(token: str) -> bool:
    return token[0].isdigit() and bool(re.fullmatch(r"\d+(?:[.,]\d+)*", token))


def _number_key(token: str) -> str:
    return token.replace(",", ".")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """An English word's Snowball stem; other words as they are."""
    if not word.isascii():
        return word
    from ..text import _english_stemmer

    return _english_stemmer().stemWord(word)


def _claim_word(word: str) -> bool:
    """A word that carries content: not a function word, a negation or punctuation."""
    return word not in _BOUNDARY and word not in _NEGATIONS and not _is_number(word) and _is_content(word)


@dataclass(frozen=True)
class _Text:
    """A claim or evidence span analysed once: its tokens and what the rules compare."""

    tokens: tuple[str, ...]           # original case
    lower: tuple[str, ...]
    keys: frozenset                   # stems of its words, and accent-stripped forms
    negated: frozenset                # stems negated at one occurrence at least
    only_negated: frozenset           # stems negated at every occurrence
    names: tuple[tuple[int, tuple[str, ...]], ...]   # (position, lowercased words) of each name

    @classmethod
    def of(cls, text: str, lowercase_vocabulary: frozenset = frozenset()) -> "_Text":
        tokens = tuple(_tokens(text))
        lower = tuple(t.lower() for t in tokens)
        keys = set()
        for w in lower:
            keys.add(_stem(w))
            keys.add("~" + strip_accents(w))
        return cls(tokens, lower, frozenset(keys), *_negated(lower), _names(tokens, lowercase_vocabulary))

    def has(self, word: str) -> bool:
        """Whether a (lowercase) word is in this text: by stem, or accent-free for a word
        written without diacritics."""
        return _stem(word) in self.keys or (strip_accents(word) == word and "~" + word in self.keys)


def _negated(lower: tuple[str, ...]) -> tuple[frozenset, frozenset]:
    """Stems of the content words and numbers that follow a negation (up to
    ``_NEGATION_SCOPE`` of them, within its clause): those negated somewhere, and those
    negated everywhere they occur."""
    inside, outside = set(), set()
    scope = 0
    for i, w in enumerate(lower):
        if w in _BOUNDARY:
            scope = 0
            continue
        if w in _NEGATIONS and not (i + 1 < len(lower) and lower[i + 1] in _NOT_NEGATING.get(w, ())) \
                or w in _DROPPING:
            scope = _NEGATION_SCOPE
            continue
        if w in _DROPPING_PAIRS and i + 1 < len(lower) and lower[i + 1] in _DROPPING_PAIRS[w]:
            scope = _NEGATION_SCOPE + 1      # the pair's second word is not a content word
            continue
        if _claim_word(w) or _is_number(w):
            (inside if scope else outside).add(_stem(w))
            scope = max(scope - 1, 0)
    return frozenset(inside), frozenset(inside - outside)


def _is_name_word(token: str, first: bool, lowercase_vocabulary: frozenset) -> bool:
    """A word that names something: all capitals ("AMF"), letters and digits ("N4", "5GC"),
    or capitalised: mid-sentence always, first in a sentence only if the evidence never
    writes it in lower case (so "Máy", "The" are not names, "Aspirin" is)."""
    if not token[0].isalnum() or _is_number(token) or len(token) < 2:
        return False
    letters = [c for c in token if c.isalpha()]
    if not letters:
        return False
    if sum(c.isupper() for c in letters) >= 2 or (any(c.isdigit() for c in token) and letters):
        return True
    if not token[0].isupper():
        return False
    word = token.lower()
    if word in ENGLISH_STOPWORDS or word in _ACCENTED_FUNCTION or word in _NEGATIONS:
        return False
    return not first or word not in lowercase_vocabulary


def _names(tokens: tuple[str, ...], lowercase_vocabulary: frozenset) -> tuple:
    """The names in ``tokens``: runs of name words, with the position of the first."""
    out, run, start = [], [], 0
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


def _name_positions(name: tuple[str, ...], span: _Text) -> list[int]:
    """Where a name is in a span: the places where its words stand in order with at most two
    other words among them (a name may be written longer in the evidence: "Marie Curie" /
    "Marie Skłodowska Curie"), not scattered over the span."""
    out = []
    for i, w in enumerate(span.lower):
        if w != name[0]:
            continue
        j, rest = i + 1, list(name[1:])
        while rest and j < min(len(span.lower), i + len(name) + 2):
            if span.lower[j] == rest[0]:
                rest.pop(0)
            j += 1
        if not rest:
            out.append(i)
    return out


# Words that place what follows as the setting of a claim ("in the 5G Core"), not an actor.
_SETTING = frozenset({"in", "within", "inside", "across", "throughout", "trong", "tại", "ở"})
_ARTICLES = frozenset({"the", "a", "an"})


def _setting_start(claim: _Text, pos: int) -> int | None:
    """Where the setting phrase of the name at ``pos`` starts ("in the 5G Core": at "in"):
    a setting word before it, with articles, numbers and one-letter tokens between; None
    when the name does not follow one."""
    i = pos - 1
    while i >= 0 and pos - i <= 4 and (claim.lower[i] in _ARTICLES or _is_number(claim.lower[i])
                                       or len(claim.lower[i]) == 1 and claim.lower[i].isalpha()):
        i -= 1
    return i if i >= 0 and claim.lower[i] in _SETTING else None


def question_settings(claim: _Text, question: _Text | None) -> set[int]:
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
                       if not _is_number(claim.lower[i]) or claim.lower[i] in question.lower)
    return out


def _order_problem(claim: _Text, span: _Text, question: _Text | None = None) -> str:
    """Why the claim's names do not stand as in the span ('' when they do). A name the span
    lacks is allowed only as the setting the question gave ("... in the 5G Core" when the
    question asks about the 5G Core); it takes no part in the roles."""
    found = []
    setting = question_settings(claim, question)
    for pos, name in claim.names:
        where = _name_positions(name, span)
        if not where and pos in setting:
            continue
        if not where:
            return f"names {' '.join(claim.tokens[pos:pos + len(name)])!r}, which the span does not"
        found.append((pos, name, where))
    for (pa, a, wa), (pb, b, wb) in zip(found, found[1:]):
        between = claim.lower[pa + len(a):pb]
        if a == b or all(w in _COORDINATION for w in between):
            continue       # a list ("AMF, SMF and UPF") orders nothing
        passive = any(w in _PASSIVE for w in between)

        def same_roles(i: int, j: int) -> bool:
            lo, hi = min(i, j), max(i, j)
            span_passive = any(w in _PASSIVE for w in span.lower[lo:hi])
            return (i < j) == (span_passive == passive)

        if not any(same_roles(i, j) for i in wa for j in wb if i != j):
            return f"{' '.join(a)!r} and {' '.join(b)!r} swap their roles relative to the span"
    return ""


def _number_problem(claim: _Text, span: _Text, question: _Text | None = None) -> str:
    """The first number the claim states that the span lacks, or states with another unit
    (a number in the question's setting, "in the 5G Core", is not stated by the claim)."""
    span_numbers = [(_number_key(t), i) for i, t in enumerate(span.lower) if _is_number(t)]
    setting = question_settings(claim, question)
    for i, token in enumerate(claim.lower):
        if not _is_number(token) or i in setting:
            continue
        places = [j for key, j in span_numbers if key == _number_key(token)]
        if not places:
            return f"the number {token} is not in the span"
        unit = claim.lower[i + 1] if i + 1 < len(claim.lower) else ""
        if unit and (unit == "%" or (unit.isalpha() and _claim_word(unit))):
            if not any(unit in span.lower[j + 1:j + 3] for j in places) and \
                    any(j + 1 < len(span.lower) and span.lower[j + 1].isalpha() and _claim_word(span.lower[j + 1])
                        for j in places):
                return f"the span gives {token} another unit than {unit!r}"
    return ""


def _negation_problem(claim: _Text, span: _Text, shared: set[str]) -> str:
    """A word the claim negates that the span never negates, or one the span only ever
    negates that the claim states plainly."""
    added = sorted((claim.negated - span.negated) & shared)
    if added:
        return f"it negates {added[0]!r}, which the span does not"
    dropped = sorted((span.only_negated - claim.only_negated) & shared)
    if dropped:
        return f"the span negates {dropped[0]!r}, which the claim does not"
    return ""


FAILED_VERDICTS = ("unsupported", "miscited", "contradicted")


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim's verdict: ``supported`` (with its span), ``unsupported`` (with why),
    ``miscited`` (the items it cites do not support it, another item does: ``support`` names
    that one; it fails the check, and the answer stage may correct the citation),
    ``contradicted`` (a span supports it, but another retrieved item says the same thing with
    the opposite polarity, "no need to check the oil" against "check the oil": ``contradicts``
    names that item; it fails the check), ``refusal`` (says the evidence is not enough;
    claims nothing) or ``no claim`` (a heading, a bare list marker: nothing to check)."""

    text: str
    verdict: str
    cited: list[int]
    support: dict | None            # {"evidence": n (1-based), "span": the sentence(s)}
    why: str
    coverage: float = 0.0
    borderline: bool = False        # unsupported only for coverage, by a little: a judge may confirm it
    contradicts: dict | None = None  # contradicted: {"evidence": m, "span": ...} of the other item

    def to_dict(self) -> dict:
        out = {"text": self.text, "verdict": self.verdict, "supported": self.verdict not in FAILED_VERDICTS,
               "cited": self.cited, "support": self.support,
               "evidence": self.support["evidence"] if self.support else None,
               "why": self.why, "coverage": self.coverage}
        if self.borderline:
            out["borderline"] = True
        if self.contradicts:
            out["contradicts"] = self.contradicts
        return out


@dataclass(frozen=True)
class ClaimReport:
    """The claim-level check of an answer. ``core`` is the position of its core claim: the
    first claim that says something (``None``: no claim says anything)."""

    passed: bool
    reason: str
    claims: list[ClaimVerdict]
    core: int | None
    distinct_trigrams: float = 1.0
    suspicious_evidence: list = field(default_factory=list)   # items addressed to the model

    @property
    def core_holds(self) -> bool:
        return self.core is not None and self.claims[self.core].verdict in ("supported", "refusal")

    def to_dict(self) -> dict:
        out = {"passed": self.passed, "reason": self.reason, "core": self.core,
               "distinct_trigrams": self.distinct_trigrams, "claims": [c.to_dict() for c in self.claims]}
        if self.suspicious_evidence:
            out["suspicious_evidence"] = self.suspicious_evidence
        return out


def is_refusal(text: str, refusals: Iterable[str] = ()) -> bool:
    """Whether a claim says the evidence is not enough: one of the pipeline's own refusal
    sentences, or a sentence with a common refusal phrase (English or Vietnamese)."""
    plain = " ".join(_WORD.findall(text.lower()))
    if any(plain == " ".join(_WORD.findall(r.lower())) for r in refusals):
        return True
    return any(cue in plain for cue in _REFUSAL_CUES) and len(plain.split()) <= 25


def _spans(evidence: list[str], numbers: Iterable[int], words: tuple[str, ...], vocabulary: frozenset):
    """(evidence number, span text, analysed span) for every sentence of the chosen evidence
    items, and every pair of adjacent sentences that each hold a claim word (not a name) the
    other lacks (a claim may join two sentences; one sentence must not borrow a number or a
    name from the next)."""
    numbers = tuple(numbers)
    if len(numbers) > 1 and len(numbers) < len(evidence):
        # A claim that cites several items may join them ("X [1] (also: Y [2])").
        joined = " ".join(evidence[n - 1] for n in numbers)
        yield numbers[0], joined, _Text.of(joined, vocabulary)
    for n in numbers:
        sentences = split_sentences(evidence[n - 1])
        analysed = [_Text.of(sentence, vocabulary) for sentence in sentences]
        found = [{w for w in words if a.has(w)} for a in analysed]
        for i, sentence in enumerate(sentences):
            yield n, sentence, analysed[i]
            if i + 1 < len(sentences) and found[i] - found[i + 1] and found[i + 1] - found[i]:
                pair = f"{sentence} {sentences[i + 1]}"
                yield n, pair, _Text.of(pair, vocabulary)


def _judge_claim(claim: Claim, evidence: list[str], spans_of, question_words: _Text,
                 vocabulary: frozenset, refusals, min_support: float) -> ClaimVerdict:
    cited = list(claim.cited)
    if is_refusal(claim.body, refusals):
        return ClaimVerdict(claim.text, "refusal", cited, None, "says the evidence is not enough")
    text = _Text.of(claim.body, vocabulary)
    words = sorted({w for w in text.lower if _claim_word(w)})
    if not words and not any(_is_number(t) for t in text.lower):
        return ClaimVerdict(claim.text, "no claim", cited, None, "no content words")
    if claim.body.rstrip().endswith(":") and len(claim.body.split()) <= 4 and not cited:
        return ClaimVerdict(claim.text, "no claim", cited, None, "a lead-in (ends with ':')")
    if claim.body.rstrip().endswith("?"):
        return ClaimVerdict(claim.text, "no claim", cited, None, "a question (ends with '?')")
    outside = [n for n in cited if not 1 <= n <= len(evidence)]
    if cited and len(outside) == len(cited):
        return ClaimVerdict(claim.text, "unsupported", cited, None,
                            f"cites [{outside[0]}], but the evidence has {len(evidence)} items")
    numbers = [n for n in cited if n not in outside] or range(1, len(evidence) + 1)
    judge = _SpanJudge(claim, text, words, question_words, spans_of, evidence, min_support)
    best = judge.best(numbers)
    if best is None:
        return ClaimVerdict(claim.text, "unsupported", cited, None, "there is no evidence")
    _, n, span_text, problem, coverage, short = best
    where = f"[{n}]" if cited else "any evidence"
    support = {"evidence": n, "span": span_text}
    if problem and cited:
        # Supported, but by an item it does not cite: the answer stage may correct the citation.
        other = judge.best([m for m in range(1, len(evidence) + 1) if m not in numbers])
        if other is not None and not other[3]:
            return ClaimVerdict(claim.text, "miscited", cited, {"evidence": other[1], "span": other[2]},
                                f"cites [{n}], but [{other[1]}] supports it", round(other[4], 4))
    if problem:
        return ClaimVerdict(claim.text, "unsupported", cited, support,
                            f"no span of {where} supports it; the closest: {problem}", round(coverage, 4),
                            borderline=short and coverage >= BORDERLINE_SUPPORT)
    return ClaimVerdict(claim.text, "supported", cited, support, "", round(coverage, 4))


class _SpanJudge:
    """The best span of some evidence items for one claim: a verbatim quote, else the span
    whose words cover the claim best with no rule broken (numbers, negations, roles)."""

    def __init__(self, claim: Claim, text: _Text, words: list[str], question_words: _Text, spans_of,
                 evidence: list[str], min_support: float):
        self.claim, self.text, self.words, self.question_words = claim, text, words, question_words
        self.spans_of, self.evidence, self.min_support = spans_of, evidence, min_support

    def best(self, numbers) -> tuple | None:
        """(rank, evidence number, span, problem, coverage, short) of the best span of the
        items ``numbers`` (problem '' when the span supports the claim), or None."""
        text, words, question_words = self.text, self.words, self.question_words
        quoted = " ".join(self.claim.body.split()).rstrip(" .;:")
        for n in numbers:           # a quote says exactly what its evidence says
            if len(quoted) >= 20 and quoted in " ".join(self.evidence[n - 1].split()):
                return ((True, 1.0, -len(quoted)), n, quoted, "", 1.0, False)
        numbers_in = {t for t in text.lower if _is_number(t)}
        best: tuple | None = None
        in_names = {w for _, name in text.names for w in name}
        for n, span_text, span in self.spans_of(tuple(numbers), tuple(w for w in words if w not in in_names)):
            found = [w for w in words if span.has(w) or question_words.has(w)]
            coverage = len(found) / len(words) if words else 1.0
            rules = ""
            if coverage >= BORDERLINE_SUPPORT:    # the other rules, only on spans that may support it
                rules = _number_problem(text, span, question_words) or \
                    _negation_problem(text, span, {_stem(w) for w in words if span.has(w)} | numbers_in) or \
                    _order_problem(text, span, question_words)
            short = coverage < self.min_support and not rules
            problem = rules
            if coverage < self.min_support and not rules:
                missing = [w for w in words if w not in found]
                problem = f"only {coverage:.0%} of its words are in the span (not: {', '.join(missing[:5])})"
            rank = (not problem, coverage, -len(span_text))
            if best is None or rank > best[0]:
                best = (rank, n, span_text, problem, coverage, short)
            if not problem and coverage == 1.0:
                break
        return best


def check_claims(answer: str, evidence: Iterable[str], question: str = "", *,
                 refusals: Iterable[str] = (), min_support: float = MIN_CLAIM_SUPPORT) -> ClaimReport:
    """Judge each claim of ``answer`` against the evidence it cites (``[n]`` is the n-th
    evidence text; a claim citing nothing may be supported by any). The answer passes when
    every claim is supported, a refusal or no claim, at least one says something, and it does
    not loop (distinct trigrams >= 0.5).

    >>> evidence = ["The AMF selects an SMF for the PDU Session.", "The SMF controls the UPF."]
    >>> check_claims("The AMF selects an SMF [1].", evidence).passed
    True
    >>> check_claims("The UPF selects an SMF [1].", evidence).claims[0].verdict
    'unsupported'
    >>> check_claims("The SMF controls the UPF [1].", evidence).claims[0].why
    'cites [1], but [2] supports it'
    >>> check_claims("The SMF controls the NRF [2].", evidence).claims[0].why
    "no span of [2] supports it; the closest: names 'NRF', which the span does not"
    """
    evidence = [e for e in evidence]
    refusals = tuple(refusals)
    vocabulary = frozenset(w for text in evidence for w in _WORD.findall(unicodedata.normalize("NFC", text))
                           if w.islower())
    question_words = _Text.of(question)
    cache: dict[tuple, list] = {}

    def spans_of(numbers: tuple, words: tuple) -> list:
        if (numbers, words) not in cache:
            cache[numbers, words] = list(_spans(evidence, numbers, words, vocabulary))
        return cache[numbers, words]

    claims = split_claims(answer)
    verdicts = [_judge_claim(c, evidence, spans_of, question_words, vocabulary, refusals, min_support)
                for c in claims]
    suspicious = suspicious_evidence(evidence)
    trusted = [n for n in range(1, len(evidence) + 1) if n not in {s["evidence"] for s in suspicious}]
    verdicts = [_contradicted(v, c, trusted, spans_of, vocabulary, min_support) if v.verdict == "supported" else v
                for v, c in zip(verdicts, claims)]
    core = next((i for i, v in enumerate(verdicts) if v.verdict != "no claim"), None)
    trigrams = round(distinct_trigram_ratio(_words(answer)), 4)
    reason = claims_reason([v.to_dict() for v in verdicts], core, trigrams)
    return ClaimReport(not reason, reason, verdicts, core, trigrams, suspicious)


def _contradicted(verdict: ClaimVerdict, claim: Claim, items: list[int], spans_of, vocabulary: frozenset,
                  min_support: float) -> ClaimVerdict:
    """``verdict`` made ``contradicted`` when a span of one of ``items`` (the evidence that
    does not address the model) shares most of the claim's content words but not its
    polarity: the claim negates or drops what that span states, or states what it negates."""
    text = _Text.of(claim.body, vocabulary)
    words = sorted({w for w in text.lower if _claim_word(w)})
    if len(words) < 2:
        return verdict
    for m in items:
        for _, span_text, span in spans_of((m,), tuple(words)):
            shared = [w for w in words if span.has(w)]
            if len(shared) < 2 or len(shared) / len(words) < min_support:
                continue
            problem = _negation_problem(text, span, {_stem(w) for w in shared})
            if problem:
                n = verdict.support["evidence"] if verdict.support else None
                return replace(verdict, verdict="contradicted", contradicts={"evidence": m, "span": span_text},
                               why=f"[{n}] supports it, but [{m}] contradicts it: {problem}")
    return verdict


def claims_reason(claims: list[dict], core: int | None, trigrams: float) -> str:
    """Why a claim-checked answer fails ('' when it passes): no claim says anything, the
    first unsupported claim and why, or the answer loops."""
    failed = [i for i, c in enumerate(claims) if c["verdict"] in FAILED_VERDICTS]
    reasons = []
    if core is None:
        reasons.append("the answer has no content words")
    if failed:
        i = failed[0]
        reasons.append(f"{len(failed)} of {len(claims)} claims unsupported; claim {i + 1} "
                       f"({_short(claims[i]['text'])}): {claims[i]['why']}")
    if trigrams < MIN_DISTINCT_TRIGRAMS:
        reasons.append(f"it repeats itself ({trigrams:.0%} distinct trigrams)")
    return "; ".join(reasons)


def _short(text: str, words: int = 8) -> str:
    parts = text.split()
    return repr(" ".join(parts[:words]) + (" …" if len(parts) > words else ""))


# An optional model judge for borderline claims (off by default: ``LLMConfig.judge_claims``).
_JUDGE_SYSTEM = ("You judge whether a passage supports a statement. "
                 "Reply with one word: Yes or No.")


def judge_prompt(claim: str, span: str) -> str:
    """The ChatML prompt asking whether ``span`` supports ``claim``, ending where the
    assistant's one-word reply starts (the reranker's format, ``retrieval.rerank``)."""
    user = f"Passage: {span}\n\nStatement: {claim}\n\nDoes the passage support the statement? Reply Yes or No."
    return (f"<|im_start|>system\n{_JUDGE_SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


def judge_borderline(details: dict, judge) -> tuple[dict, list[dict]]:
    """Ask ``judge`` (a model with ``choice_logprobs``) about each borderline claim of a
    claim-check ``details``: a claim short only on coverage whose closest span the model says
    supports it (Yes/No log-odds > 0) becomes supported. Returns the new details (``passed``
    and ``reason`` recomputed) and one row per judged claim."""
    from ..retrieval.rerank import NO, YES, yes_no_logodds

    claims = [dict(c) for c in details["claims"]]
    judged = []
    for i, claim in enumerate(claims):
        if not claim.get("borderline"):
            continue
        logodds = yes_no_logodds(judge.choice_logprobs(judge_prompt(claim["text"], claim["support"]["span"]),
                                                       YES + NO))
        judged.append({"claim": i + 1, "logodds": round(logodds, 4)})
        if logodds > 0:
            claims[i] = {**claim, "verdict": "supported", "supported": True, "borderline": False,
                         "why": f"the model judge says the span supports it (log-odds {logodds:.2f})"}
    reason = claims_reason(claims, details.get("core"), details.get("distinct_trigrams", 1.0))
    return {**details, "claims": claims, "passed": not reason, "reason": reason}, judged
