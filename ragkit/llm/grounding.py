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
from dataclasses import asdict, dataclass, field
from typing import Iterable

from ..text import ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS, strip_accents

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
