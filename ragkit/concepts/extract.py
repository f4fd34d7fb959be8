"""Concepts of a chunk, found without a model: named entities and noun phrases by rule.

Three sources, all read off the text itself:

- **capitalised spans** ("Journal of Psychotherapy Integration", "Bubye River"): runs of
  capitalised words, joined across a short connector ("of", "de", "the") when a
  capitalised word follows; a sentence's first word counts only when the next is capitalised
  too or when it is not an English function word;
- **noun-phrase runs**: maximal runs of two to four content words between function words and
  punctuation ("spindle speed", "dầu bôi trơn"); single lower-case words are left out: with
  no part-of-speech tags they are as often verbs and adjectives as nouns;
- **dictionary terms**, when a term list is given (``terms=``), wherever they occur.

Vietnamese text (``ragkit.text.document_language``) has no reliable capitals and writes words
as syllables: its runs are syllable bigrams and trigrams between Vietnamese function words.

Each surface is reduced to a key (``concept_key``): lower case, accents stripped, possessives
dropped, every English word singular, a leading article dropped. Surfaces with one key are one
concept, across chunks. An abbreviation defined in parentheses ("Service Communication Proxy
(SCP)") becomes an alias of the long form, for the whole corpus.

    >>> [c.label for c in extract_concepts("The Bubye River flows through Zimbabwe.")]
    ['Bubye River', 'Zimbabwe']
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..text.linking import singular
from ..text import (ENGLISH_STOPWORDS, LIST_MARKER, VIETNAMESE_FUNCTION_WORDS, document_language, sentence_spans,
                    strip_accents)

# Words that join two capitalised words into one name ("Bank of England", "Leonardo da Vinci");
# never "and" or "in", which join two names ("Zimbabwe and Zambia", "Paris in France").
CONNECTORS = frozenset("of de da di del der van von la le the for y".split())
# Beyond the stopword list: words that start sentences or questions, and words that are
# capitalised by English convention without naming anything (months and weekdays stay: they
# are dates, and the hub cut removes the common ones).
_EXTRA_FUNCTION = frozenset(
    """also although however many much one two three first second may might must shall
    since though thus yet still whose whom which what who where when why how its it's
    including include includes included according along among around became become becomes
    called known located often later part several well new used use uses""".split())
FUNCTION_WORDS = ENGLISH_STOPWORDS | _EXTRA_FUNCTION
_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*\.?", re.UNICODE)
# A break ends every run: sentence and clause punctuation, brackets, quotes.
_BREAK = re.compile(r"[.!?;:,()\[\]{}\"“”«»—–|/]")
_ABBREVIATION = re.compile(r"((?:[A-Z][\w\-]*\s+){1,7}[A-Z][\w\-]*)\s*\(([A-Z][A-Za-z0-9\-]{1,9})\)")
_VIETNAMESE_STOP = VIETNAMESE_FUNCTION_WORDS | FUNCTION_WORDS
_POSSESSIVE = re.compile(r"'s?$")
# A clause number: dotted ("4.2", "6.2.19a", "A.1") or closed by a dot ("1."); a bare number
# may be a name's own ("50 Cent", "1964 Summer Olympics").
_CLAUSE_NUMBER = re.compile(r"^(?:\d{1,2}(?:\.\d{1,3})+[a-z]?\.?|\d{1,2}\.|[A-Z](?:\.\d{1,3})+\.?)\s+(?=\S)")
MAX_WORDS = 6          # longest concept, in words
RUN_WORDS = (2, 4)     # lower-case noun-phrase runs: from two to four content words


@dataclass(frozen=True)
class ConceptMention:
    """One concept found in a text: its key, how the text writes it, and which rule found it."""

    key: str
    label: str
    how: str           # title | name | initial (one capitalised word opening a sentence) | phrase | syllables | term
    sentences: tuple = ()   # the sentences (numbered from 0) it occurs in


def concept_key(surface: str) -> str:
    """The form two surfaces are merged in.

    >>> concept_key("The Beatles' albums")
    'beatle album'
    >>> concept_key("Máy Phay")
    'may phay'
    """
    text = unicodedata.normalize("NFC", surface).replace("’", "'")
    words = [_POSSESSIVE.sub("", w) if "'" in w else w
             for w in strip_accents(text).lower().replace("-", " ").split()]
    words = [w.strip(".'") for w in words if w.strip(".'")]
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(singular(w) for w in words)


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper() and not word.isupper() or (word.isupper() and len(word) >= 2)


def _is_number(word: str) -> bool:
    return not word[:1].isalpha() and not any(ch.isalpha() for ch in word)


def _segments(text: str) -> Iterable[tuple[int, list[tuple[str, bool]]]]:
    """Runs of words between breaks, with the number of their sentence (``sentence_spans``:
    a wrapped line goes on with its sentence, a list marker is left out), each word with
    whether it begins its sentence."""
    for sentence, (a, b) in enumerate(sentence_spans(text)):
        start_of_sentence = True
        for piece in re.split(f"({_BREAK.pattern})", LIST_MARKER.sub("", text[a:b].replace("\n", " "), count=1)):
            if not piece:
                continue
            if _BREAK.fullmatch(piece):
                start_of_sentence = start_of_sentence and piece in "\"“«("
                continue
            words = [w if w[:-1].isupper() else w.rstrip(".") for w in _WORD.findall(piece)]
            words = [w for w in words if w]
            if words:
                yield sentence, [(w, start_of_sentence and i == 0) for i, w in enumerate(words)]
                start_of_sentence = False


def _names(segment: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Capitalised spans of one segment, each with whether it is one word opening a sentence
    (capitalised by position only, perhaps: ``ConceptGraph`` keeps those that the corpus also
    writes capitalised elsewhere)."""
    names: list[list[str]] = []
    current: list[str] = []
    pending: list[str] = []
    for word, first in segment:
        lower = word.lower()
        capital = _is_capitalised(word) and not _is_number(word)
        if capital and first and lower in FUNCTION_WORDS:
            capital = False                    # "The", "In", "However" starting a sentence
        if capital:
            current.extend(pending)
            pending = []
            current.append(word)
        elif current and lower in CONNECTORS and len(pending) < 1:
            pending.append(word)
        else:
            if current:
                names.append(current)
            current, pending = [], []
    if current:
        names.append(current)
    out = []
    opening = segment[0][0] if segment and segment[0][1] else None
    for words in names:
        initial = len(words) == 1 and words[0] is opening
        while words and words[0].lower() in FUNCTION_WORDS:
            words = words[1:]
        if not words or len(words) > MAX_WORDS:
            continue
        if len(words) == 1 and (words[0].lower() in FUNCTION_WORDS or len(words[0]) < 2):
            continue
        out.append((" ".join(words), initial))
    return out


def _looks_verbal(word: str) -> bool:
    """English words that are most often verbs or adverbs by their ending ("published",
    "beginning", "monthly"): they end a noun-phrase run."""
    w = word.lower()
    return len(w) > 4 and w.isascii() and w.endswith(("ed", "ing", "ly"))


def _runs(segment: list[tuple[str, bool]], stop: frozenset, lengths: Sequence[int],
          every_ngram: bool) -> list[str]:
    """Runs of content words (not in ``stop``, not numbers): the whole run when its length is
    in range, or (``every_ngram``, Vietnamese syllables) each of its n-grams of those lengths.
    Outside Vietnamese, a verb-like word (``_looks_verbal``) ends a run too."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if every_ngram:
            for n in lengths:
                out.extend(" ".join(run[i:i + n]) for i in range(len(run) - n + 1))
        elif lengths[0] <= len(run) <= lengths[-1]:
            out.append(" ".join(run))
        run.clear()

    for word, _ in segment:
        plain = strip_accents(word.lower())
        if plain in stop or _is_number(word) or len(plain) < 2 or not every_ngram and _looks_verbal(word):
            if run:
                flush()
        else:
            run.append(word)
    flush()
    return out


def extract_concepts(text: str, *, language: str | None = None,
                     terms: Sequence[str] = (), title: str = "") -> list[ConceptMention]:
    """The concepts of one text, each once, in the order first met.

    language: "vi", "en" or None (read from the text). terms: dictionary surfaces to find
    as they are written (case-insensitive, whole words). title: the chunk's title (the last
    part of a "Chapter > Section" path); a title of up to ``MAX_WORDS`` words is what the
    chunk is about, so it is a concept of every sentence of it, however it is written (a
    one-word title opening the text is a name, not a capitalised first word).
    """
    language = language or document_language(text)
    found: dict[str, ConceptMention] = {}
    where: dict[str, set] = {}
    # A heading's clause number ("4.2 SMF", "1. Scope") is where it stands, not its name.
    subject = _CLAUSE_NUMBER.sub("", title.split(" > ")[-1].strip())
    if subject and len(subject.split()) <= MAX_WORDS:
        key = concept_key(subject)
        if key and not all(w in FUNCTION_WORDS for w in key.split()):
            found[key] = ConceptMention(key, subject, "title")

    def add(surface: str, how: str, sentence: int | None = None) -> None:
        key = concept_key(surface)
        if not key or all(w in FUNCTION_WORDS for w in key.split()):
            return
        if key not in found or found[key].how == "initial" and how != "initial":
            found[key] = ConceptMention(key, surface, how)
        if sentence is not None:
            where.setdefault(key, set()).add(sentence)

    for sentence, segment in _segments(text):
        for name, initial in _names(segment):
            # Vietnamese capitalises a sentence's first syllable: a name there needs two
            # words, or capitals throughout (an abbreviation).
            if language != "vi" or " " in name or name.isupper():
                add(name, "initial" if initial else "name", sentence)
        if language == "vi":
            for run in _runs(segment, _VIETNAMESE_STOP, (2, 3), True):
                add(run, "syllables", sentence)
        else:
            for run in _runs(segment, FUNCTION_WORDS, range(RUN_WORDS[0], RUN_WORDS[1] + 1), False):
                if not any(_is_capitalised(w) for w in run.split()):    # names cover those
                    add(run, "phrase", sentence)
    if terms:
        lowered = text.lower()
        for term in terms:
            if term and re.search(rf"(?<!\w){re.escape(term.lower())}(?!\w)", lowered):
                add(term, "term")
    if subject and found.get(concept_key(subject), ConceptMention("", "", "")).how == "title":
        where[concept_key(subject)] = {s for seen in where.values() for s in seen} | {0}
    return [ConceptMention(m.key, m.label, m.how, tuple(sorted(where.get(m.key, ())))) for m in found.values()]


def abbreviations(text: str) -> dict[str, str]:
    """Abbreviations a text defines in parentheses, as {abbreviation key: long form key}; the
    long form is the last words whose initials spell it.

    >>> abbreviations("the Service Communication Proxy (SCP) routes")
    {'scp': 'service communication proxy'}
    """
    out = {}
    for long_form, short in _ABBREVIATION.findall(text):
        words = long_form.split()
        letters = [c for c in short if c.isupper()]
        if len(letters) <= len(words):
            tail = words[-len(letters):]
            if [w[0] for w in tail] == letters:
                out[concept_key(short)] = concept_key(" ".join(tail))
    return out
