"""Entity linking: spans of a question matched to what a store knows.

A ``Linker`` holds surfaces (term-dictionary abbreviations and names, KG node names and
aliases, schema words), each pointing at a target in its store. ``link(question)`` returns
the spans it finds, longest and best match first, never overlapping, each with how it
matched and why. Phrasing patterns play no part here: the question's words link to a name
the store holds, or they do not.

Matching is tolerant of what users type:

- case ("operating band" for "Operating Band"), quotes and parentheses ("Elementary File
  (EF)"), hyphens and slashes ("non-3GPP" and "non 3GPP");
- plurals ("Operating Bands"; every word is compared in its singular form);
- diacritics only where the question writes none: "nang" may link to "nắng", "nặng" never
  does (an accent-free match is tried only for spans written without any);
- small typos ("Asprin"): an Indel similarity of at least ``fuzzy_cutoff`` on spans of five
  or more letters, never on abbreviations or single common words.

Abbreviations that are also common words ("IN", "AS", "NO") link only when the question
writes them in capitals and is not itself written in capitals.

    >>> linker = Linker([Surface("Service Communication Proxy", "term:scp", "term"),
    ...                  Surface("SCP", "abbr:scp", "abbreviation")])
    >>> [(l.text, l.target, l.how) for l in linker.link("What does the SCP do in 5G?")]
    [('SCP', 'abbr:scp', 'exact')]
    >>> [(l.text, l.how) for l in linker.link("what are service communication proxies?")]
    [('service communication proxies', 'normalized')]
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Callable, Iterable, NamedTuple, Sequence

from rapidfuzz import fuzz, process

from ..runtime.collector import collector_paused
from . import ENGLISH_STOPWORDS, strip_accents

# Capitalised words that are also English words: an abbreviation spelt like one of them
# links only when written in capitals.
COMMON_CAPITALS = frozenset(
    """A AN AND ARE AS AT BE BETWEEN BY CAN DO DOES FOR FROM HOW IF IN INTO IS IT ITS NO NOT OF
    ON OR OUT SO THAT THE THEN THIS TO UP US VS WE WHAT WHEN WHERE WHICH WHO WHY WITH ME MY
    2G 3G 4G 5G 6G 3GPP""".split())
# Names of mobile generations and of 3GPP itself: context in a question ("in 5G"), rarely its subject.
GENERATION_NAMES = frozenset("2G 3G 4G 5G 6G 3GPP".split())
HOW_RANK = {"exact": 0, "normalized": 1, "accent-free": 2, "fuzzy": 3}
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


@lru_cache(maxsize=1 << 16)
def singular(word: str) -> str:
    """An English plural's singular, by spelling only ("bands" → "band", "proxies" → "proxy",
    "addresses" → "address"); words that do not look plural are returned as they are."""
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "os")):
        return word[:-1]
    return word


def tokens(text: str) -> list[tuple[str, int, int]]:
    """Words of ``text`` with their character offsets (hyphens, slashes, quotes and
    parentheses separate words)."""
    text = unicodedata.normalize("NFC", text)
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def words(text: str) -> list[str]:
    """The words of ``tokens(text)``, without their offsets."""
    return _TOKEN.findall(unicodedata.normalize("NFC", text))


_POSSESSIVE_END = re.compile(r"'s$")


def key_of(words: Sequence[str]) -> str:
    """The normalized form two surfaces are compared in: lower case, singular words, no
    possessive ("Curie's" → "curie")."""
    out = []
    for word in words:
        word = word.lower()
        if "'" in word or "’" in word:
            word = _POSSESSIVE_END.sub("", word.replace("’", "'"))
        out.append(singular(word))
    return " ".join(out)


# The version of what ``key_of(words(text))`` returns. Keys saved beside a store (a concept
# graph's ``names.json``) carry it, and keys of another version are computed again: bump it
# whenever ``key_of``, ``words`` or ``singular`` change any output (tests/test_linking.py holds
# a digest of their outputs on sample words, which fails until this is bumped with it).
KEY_VERSION = 1


def surface_key(text: str) -> str:
    """``key_of(words(text))`` ("" for a text without words): the key a ``Linker`` files a
    surface under."""
    found = words(text)
    return key_of(found) if found else ""


def surface_keys(texts: Iterable[str]) -> list[str]:
    """``surface_key`` of each text, for a store to save beside its names (with
    ``KEY_VERSION``)."""
    return [surface_key(text) for text in texts]


def has_diacritics(text: str) -> bool:
    return strip_accents(text) != text


class Surface(NamedTuple):
    """One way a store names something: ``text`` points at ``target`` (an id in the store).
    A named tuple: a concept graph makes one per label, 179,000 at 100,000 chunks, and a
    tuple is made in half a frozen dataclass's time."""

    text: str
    target: str
    kind: str                 # abbreviation, term, node, alias, type, relation ...
    label: str = ""           # what the target is called (default: the text)


@dataclass(frozen=True)
class Link:
    """A span of the question linked to a store's target."""

    text: str                 # the span as the question writes it
    start: int                # character offsets in the question
    end: int
    target: str
    label: str
    kind: str
    how: str                  # exact | normalized | accent-free | fuzzy
    score: float
    why: str

    def to_dict(self) -> dict:
        return asdict(self)


class Linker:
    """Surfaces indexed by their normalized words, for linking spans of questions."""

    def __init__(self, surfaces: Iterable[Surface], *, fuzzy_cutoff: float | None = 0.88,
                 kinds_order: Sequence[str] = (), fuzzy_spans: Callable[[str], bool] | None = None,
                 keys: Sequence[str] | None = None):
        """``keys``: ``surface_keys`` of the surfaces' texts, in their order, as a store saved
        them (of this ``KEY_VERSION``): they are not computed again."""
        self.fuzzy_cutoff = fuzzy_cutoff
        # Which spans (as written) may link misspelt; None: any. A caller that keeps only some
        # fuzzy links says which here, and the others are never compared. Such a caller's
        # spans (names) are compared only with the keys that share their first letter
        # (blocking, as record linkage does: a name is rarely misspelt at its first letter),
        # so a store of hundreds of thousands of labels answers in milliseconds.
        self.fuzzy_spans = fuzzy_spans
        self.kinds_order = {k: i for i, k in enumerate(kinds_order)}
        self.by_key: dict[str, list[Surface]] = {}
        self.by_plain: dict[str, list[Surface]] = {}
        self.size = 0
        keyed: Iterable[tuple[Surface, str]]
        if keys is None:
            keyed = ((s, surface_key(s.text)) for s in surfaces)
        else:
            surfaces = list(surfaces)
            if len(keys) != len(surfaces):
                raise ValueError(f"keys: {len(keys)} for {len(surfaces)} surfaces")
            keyed = zip(surfaces, keys)
        with collector_paused():
            self._file(keyed)

    def _file(self, keyed: Iterable[tuple[Surface, str]]) -> None:
        """File each surface under its key, and its key without diacritics."""
        by_key, by_plain = self.by_key, self.by_plain
        misspellable = set()        # keys of five letters or more that name more than an abbreviation
        for s, key in keyed:
            if not key:
                continue
            filed = by_key.get(key)
            if filed is None:
                by_key[key] = [s]
            else:
                filed.append(s)
            plain = key if key.isascii() else strip_accents(key)
            filed = by_plain.get(plain)
            if filed is None:
                by_plain[plain] = [s]
            else:
                filed.append(s)
            if s.kind != "abbreviation" and len(key) >= 5:
                misspellable.add(key)
            self.size += 1
        self.longest = max((k.count(" ") + 1 for k in by_key), default=0)
        # Fuzzy candidates by length (``fuzzy_cutoff=None``: no misspellings at all): a ratio of
        # at least c needs lengths within a factor (2 - c) / c of each other, so most keys are
        # never compared. Filed by first letter too where spans are compared only with keys
        # sharing theirs, so that making a window's list reads only the keys it holds, not
        # every key of its lengths (docs/benchmarks/concepts.md, "Misspelling windows by first letter").
        self._blocked = self.fuzzy_spans is not None
        self._fuzzy_keys: dict[tuple[int, str], list[str]] = {}      # (length, first letter or "") -> keys
        self._fuzzy_window: dict[tuple[int, int, str], list[str]] = {}     # (low, high, first letter) -> keys
        for key in by_key:
            if key in misspellable:
                self._fuzzy_keys.setdefault((len(key), key[0] if self._blocked else ""), []).append(key)

    def __len__(self) -> int:
        return self.size

    # ----------------------------------------------------------------- linking
    def candidates(self, question: str) -> list[Link]:
        """Every span that links, with every target it links to (overlapping)."""
        toks = tokens(question)
        shouting = sum(c.isupper() for c in question) > 0.6 * max(1, sum(c.isalpha() for c in question))
        out: list[Link] = []
        for n in range(min(self.longest, len(toks)), 0, -1):
            for i in range(len(toks) - n + 1):
                span = toks[i:i + n]
                written = question[span[0][1]:span[-1][2]]
                words = [w for w, _, _ in span]
                out.extend(self._match(words, written, span[0][1], span[-1][2], shouting))
        return out

    def link(self, question: str, kinds: Sequence[str] | None = None,
             keep: Callable[[Link], bool] | None = None,
             prefer: Callable[[Link], int] | None = None) -> list[Link]:
        """The best non-overlapping links, in question order: spans the store spells out
        (exactly, up to case and plural, or without diacritics) longest first, then
        misspelt ones in the words left. ``keep`` drops candidates before they claim words;
        ``prefer`` (lower first) decides between spans of one length."""
        found = [c for c in self.candidates(question) if (kinds is None or c.kind in kinds)
                 and (keep is None or keep(c))]
        # Spans the store spells out first (longest first), then misspellings in the gaps.
        found.sort(key=lambda c: (c.how == "fuzzy", -(c.end - c.start), prefer(c) if prefer else 0, HOW_RANK[c.how],
                                  self.kinds_order.get(c.kind, 99), -c.score, c.start, c.target))
        taken: list[Link] = []
        for c in found:
            if any(c.start < t.end and t.start < c.end for t in taken):
                continue
            # The same span may name several targets (an abbreviation with two expansions).
            taken.append(c)
        for c in found:
            if c not in taken and any(c.start == t.start and c.end == t.end and c.how == t.how for t in taken):
                taken.append(c)
        return sorted(taken, key=lambda c: (c.start, HOW_RANK[c.how], self.kinds_order.get(c.kind, 99)))

    def _match(self, words: list[str], written: str, start: int, end: int, shouting: bool) -> list[Link]:
        key = key_of(words)
        exact_text = " ".join(words)
        out = []
        for s in self.by_key.get(key, ()):
            if s.kind == "abbreviation" and not self._abbreviation_ok(s, words, shouting):
                continue
            if s.kind != "abbreviation" and len(words) == 1 and words[0].lower() in ENGLISH_STOPWORDS:
                continue
            same = exact_text == " ".join(w for w, _, _ in tokens(s.text))
            how = "exact" if same else "normalized"
            why = f"{s.kind} {s.text!r}" + ("" if same else " (case, plural or punctuation differ)")
            out.append(Link(written, start, end, s.target, s.label or s.text, s.kind, how, 1.0, why))
        if out:
            return out
        if not has_diacritics(written):
            for s in self.by_plain.get(strip_accents(key), ()):
                if s.kind == "abbreviation" or (len(words) == 1 and words[0].lower() in ENGLISH_STOPWORDS):
                    continue
                out.append(Link(written, start, end, s.target, s.label or s.text, s.kind, "accent-free", 0.95,
                                f"{s.kind} {s.text!r} written without its diacritics"))
            if out:
                return out
        return self._fuzzy(key, words, written, start, end)

    def _abbreviation_ok(self, s: Surface, words: list[str], shouting: bool) -> bool:
        written = " ".join(words)
        if written.upper() in COMMON_CAPITALS or written.lower() in ENGLISH_STOPWORDS:
            return written == s.text and not shouting
        return True

    def _fuzzy(self, key: str, words: list[str], written: str, start: int, end: int) -> list[Link]:
        if self.fuzzy_cutoff is None or len(key) < 5 or words[0].lower() in ENGLISH_STOPWORDS \
                or words[-1].lower() in ENGLISH_STOPWORDS:
            return []
        if any(w.isupper() and len(w) <= 6 for w in words) and len(words) == 1:
            return []       # a short word in capitals is an abbreviation: it matches exactly or not at all
        if self.fuzzy_spans is not None and not self.fuzzy_spans(written):
            return []
        c = self.fuzzy_cutoff
        low, high = math.ceil(len(key) * c / (2 - c)), math.floor(len(key) * (2 - c) / c)
        first = key[0] if self._blocked else ""
        keys = self._fuzzy_window.get((low, high, first))
        if keys is None:        # made once per window: a large store has hundreds of thousands of keys
            keys = self._fuzzy_window[(low, high, first)] = [k for n in range(low, high + 1)
                                                             for k in self._fuzzy_keys.get((n, first), ())]
        best = process.extractOne(key, keys, scorer=fuzz.ratio, score_cutoff=c * 100) if keys else None
        if not best or best[0].startswith(key) or key.startswith(best[0]):
            return []       # "released" for "release" is an inflection, not a misspelling
        score = round(best[1] / 100, 3)
        return [Link(written, start, end, s.target, s.label or s.text, s.kind, "fuzzy", score,
                     f"{s.kind} {s.text!r}, spelt differently (similarity {score})")
                for s in self.by_key[best[0]] if s.kind != "abbreviation"]
