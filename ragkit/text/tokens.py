"""Text normalization and tokenization.

Vietnamese text is matched without its diacritics: NFKD splits "á" into "a" plus a
combining accent, the combining marks are dropped, and "đ" (which NFKD leaves alone,
it is a letter of its own) becomes "d". Tokens are the runs of ``[a-z0-9]+`` that remain.

    >>> tokenize("Bước 1: Làm sạch bàn máy")
    ['buoc', '1', 'lam', 'sach', 'ban', 'may']

Vietnamese words are often two syllables ("máy phay", "bàn máy"); ``bigrams=True`` adds
each pair of neighbouring syllables as one more token ("may_phay"), which lets BM25 prefer a
chunk where the syllables stand together. English gets a stopword list and Snowball stems.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

_TOKEN = re.compile(r"[a-z0-9]+")

# Common English function words. Removing them changes BM25 very little (their IDF is
# low) but makes indexes smaller and queries faster.
ENGLISH_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()
)

# Vietnamese function words, accent-stripped: they carry no claim of their own.
VIETNAMESE_FUNCTION_WORDS = frozenset(
    """a ai anh bang bi boi cac cai can cho chi chua co con cua da dang de den deu do duoc
    gi hay hon khi khong la lai len luc ma moi mot neu nen nguoi nhung nhu nao nay no o ra
    rang roi sau se tai the theo thi thuoc tren trong tu va vao van ve vi voi xong""".split()
)

# Synonyms are applied after normalization, token by token (e.g. RH -> relative_humidity;
# ``causal.kg`` maps pm2.5 -> pm25 the same way). Keys and values are normalized forms.
DEFAULT_SYNONYMS: dict[str, str] = {
    "rh": "relative_humidity",
    "do_am": "relative_humidity",
}


def strip_accents(text: str) -> str:
    """Remove Vietnamese (and any other) diacritics; map đ/Đ to d/D.

    >>> strip_accents("Các bước vận hành Đường")
    'Cac buoc van hanh Duong'
    """
    if text.isascii():   # nothing to strip (most English text): skip the per-character pass
        return text
    text = text.replace("đ", "d").replace("Đ", "D")
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def normalize(text: str, *, accents: bool = False) -> str:
    """Lowercase, and strip accents unless ``accents`` is true."""
    text = text.lower()
    return text if accents else strip_accents(text)


@lru_cache(maxsize=1)
def _english_stemmer():
    import Stemmer  # PyStemmer: Snowball stemmers compiled in C

    return Stemmer.Stemmer("english")


@dataclass(frozen=True)
class Tokenizer:
    """A configured tokenizer; the same settings are saved with every index.

    lang:      "vi" (accent stripping, optional syllable bigrams) or "en" (stopwords, stems).
    accents:   keep diacritics (only to measure what stripping them is worth).
    bigrams:   add neighbouring-syllable pairs as extra tokens.
    synonyms:  token -> canonical token, applied after normalization.
    """

    lang: str = "vi"
    accents: bool = False
    bigrams: bool = False
    synonyms: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.lang not in ("vi", "en"):
            raise ValueError(f"lang: expected 'vi' or 'en', got {self.lang!r}")

    def __call__(self, text: str) -> list[str]:
        return self.tokenize(text)

    def tokenize(self, text: str) -> list[str]:
        normalized = normalize(text, accents=self.accents)
        if self.accents:
            words = re.findall(r"\w+", normalized)
        else:
            words = _TOKEN.findall(normalized)
        if self.synonyms:
            words = [self.synonyms.get(w, w) for w in words]
        if self.lang == "en":
            words = [w for w in words if w not in ENGLISH_STOPWORDS]
            return _english_stemmer().stemWords(words)
        if self.bigrams and len(words) > 1:
            return words + [f"{a}_{b}" for a, b in zip(words, words[1:])]
        return words

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        return [self.tokenize(t) for t in texts]

    def to_dict(self) -> dict:
        return {"lang": self.lang, "accents": self.accents, "bigrams": self.bigrams,
                "synonyms": dict(self.synonyms)}

    @classmethod
    def from_dict(cls, data: Mapping) -> "Tokenizer":
        return cls(lang=data.get("lang", "vi"), accents=bool(data.get("accents", False)),
                   bigrams=bool(data.get("bigrams", False)),
                   synonyms=dict(data.get("synonyms", {})))


def tokenizer_for(lang: str, *, accents: bool = False, bigrams: bool | None = None) -> Tokenizer:
    """The tokenizer ``--lang`` selects: Vietnamese gets syllable bigrams by default
    (they lift ALQAC hit@1 from 0.68 to 0.84: see README, Benchmarks)."""
    if lang not in ("vi", "en"):
        raise ValueError(f"--lang: expected 'vi' or 'en', got {lang!r}")
    if bigrams is None:
        bigrams = lang == "vi"
    return Tokenizer(lang=lang, accents=accents, bigrams=bigrams and lang == "vi")


def tokenize(text: str) -> list[str]:
    """The simple Vietnamese tokenizer: lowercase, strip accents, ``[a-z0-9]+``."""
    return _TOKEN.findall(normalize(text))


def apply_synonyms(tokens: Iterable[str], synonyms: Mapping[str, str]) -> list[str]:
    """Map each token through ``synonyms`` (missing tokens pass unchanged)."""
    return [synonyms.get(t, t) for t in tokens]


_VI_LETTERS = re.compile(
    "[àáảãạăằắẳẵặâầấẩẫậèéẻẽẹêềếểễệìíỉĩịòóỏõọôồốổỗộơờớởỡợùúủũụưừứửữựỳýỷỹỵđ]"
)
_ASCII_WORD = re.compile(r"\b[a-z]{3,}\b")


def vietnamese_char_count(text: str) -> int:
    """Number of letters that only Vietnamese spelling uses (diacritics and đ)."""
    return len(_VI_LETTERS.findall(text.lower()))


def english_word_count(text: str) -> int:
    """Number of plain ASCII words of three letters or more."""
    return len(_ASCII_WORD.findall(text.lower()))


# ----------------------------------------------------------------------- a corpus's language

_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[a-z']+")
# A document is Vietnamese when at least this share of its letters only Vietnamese spelling
# uses (Vietnamese prose: 0.19 to 0.40; English with French or Spanish names: at most 0.09),
# English when at least this share of its words are English function words (English prose:
# 0.25 to 0.50; Vietnamese, accented or not: mostly below 0.15).
VIETNAMESE_LETTER_SHARE = 0.10
ENGLISH_WORD_SHARE = 0.20
# A corpus holds a language when at least this share of its sampled documents are in it.
LANGUAGE_PRESENT = 0.05
SAMPLE_DOCS = 1000        # documents looked at, spread evenly over the corpus
SAMPLE_CHARS = 2000       # characters looked at in each


@dataclass(frozen=True)
class LanguageChoice:
    """The tokenizer language chosen for a corpus and why.

    lang:      "vi" or "en", the tokenizer's language.
    detected:  chosen from the documents (``--lang auto``), not given.
    languages: the languages the documents are written in ("vi" and "en" for a mixed corpus):
               a question in another one is cross-lingual.
    reason:    how, in words.
    """

    lang: str
    detected: bool
    languages: tuple[str, ...]
    reason: str

    def to_dict(self) -> dict:
        return {"lang": self.lang, "detected": self.detected, "languages": list(self.languages),
                "reason": self.reason}


def document_language(text: str) -> str:
    """"vi", "en" or "unknown" for one document (its first ``SAMPLE_CHARS`` characters)."""
    text = text[:SAMPLE_CHARS].lower()
    letters = len(_LETTER.findall(text))
    if letters and vietnamese_char_count(text) >= VIETNAMESE_LETTER_SHARE * letters:
        return "vi"
    words = _WORD.findall(text)
    if words and sum(1 for w in words if w in ENGLISH_STOPWORDS) >= ENGLISH_WORD_SHARE * len(words):
        return "en"
    return "unknown"


def detect_language(texts: Sequence[str]) -> LanguageChoice:
    """The language of a corpus from an even sample of its documents: Vietnamese when a
    noticeable share is Vietnamese (a mixed corpus too: the Vietnamese tokenizer reads English
    words as well, the English one mangles Vietnamese), English when most are English and
    none Vietnamese, else Vietnamese (unaccented Vietnamese, codes, numbers)."""
    texts = [t for t in texts if t and t.strip()]
    step = max(1, len(texts) // SAMPLE_DOCS)
    sample = texts[::step][:SAMPLE_DOCS]
    counts = Counter(document_language(t) for t in sample)
    n = len(sample)
    vi, en = counts["vi"], counts["en"]
    found = f"{vi} Vietnamese, {en} English of {n} documents sampled"
    vi_present = n > 0 and vi >= LANGUAGE_PRESENT * n
    en_present = n > 0 and en >= LANGUAGE_PRESENT * n
    if vi_present and en_present:
        return LanguageChoice("vi", True, ("vi", "en"), f"mixed ({found}): vi, whose tokenizer reads both")
    if vi_present:
        return LanguageChoice("vi", True, ("vi",), f"Vietnamese ({found})")
    if n and en >= 0.5 * n:
        return LanguageChoice("en", True, ("en",), f"English ({found})")
    return LanguageChoice("vi", True, ("vi",), f"undetermined ({found}): vi, whose tokenizer "
                                              "reads unaccented text too")


def choose_language(lang: str, texts: Sequence[str]) -> LanguageChoice:
    """``--lang``: "auto" detects the documents' language; "vi" or "en" is taken as given
    (the documents' own languages are still recorded, for cross-lingual questions)."""
    if lang not in ("auto", "vi", "en"):
        raise ValueError(f"--lang: expected auto, vi or en, got {lang!r}")
    found = detect_language(texts)
    if lang == "auto":
        return found
    return LanguageChoice(lang, False, found.languages, f"asked for; the documents: {found.reason}")


def question_language(question: str) -> str:
    """"vi" when a tenth of the question's letters are ones only Vietnamese spelling uses
    (an English question that names "Géza" or "Nguyễn" has fewer, unless it is mostly names)
    and it has fewer than two English function words; "en" when at least two of its words
    (or a third) are English function words; else "unknown" (unaccented Vietnamese, names)."""
    letters = sum(ch.isalpha() for ch in question)
    words = [w for w in re.findall(r"[\w']+", question.lower()) if w.isascii()]
    common = sum(1 for w in words if w in ENGLISH_STOPWORDS)
    vietnamese = vietnamese_char_count(question)
    if vietnamese and (common < 2 or vietnamese >= 0.2 * letters) and vietnamese >= VIETNAMESE_LETTER_SHARE * letters:
        return "vi"
    return "en" if words and (common >= 2 or common * 3 >= len(words)) else "unknown"
