"""How a question words a chain of relations around a name it gives: the words that ask for
relations, in the order hops should meet them, and the grammar that says which way a relation
is read. The graph walk (``ragkit.multihop.graph``) matches these words to relation names; it
reads a question through this module and the question's language through its
:class:`~ragkit.text.question.QuestionReading`.

    >>> AskedWords.read("What is the nationality of Ada Lee's spouse?", ["Ada Lee"]).outward()
    ['spouse', 'nationality']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .cues import REQUEST
from .tokens import ENGLISH_STOPWORDS, question_language, strip_accents


def display(name: str) -> str:
    """A node id as words: "frederica_of_mecklenburg-strelitz" → "frederica of mecklenburg-strelitz"."""
    return name.replace("_", " ")


# Prepositions a relation name may end with ("directed_by", "born_in", "subsidiary_of").
PREPOSITIONS = frozenset("of by in at to from with for on into under".split())


# Words that ask rather than name a relation: English function words and Vietnamese
# question words (accent-free). Vietnamese kinship words such as "con" are kept.
QUESTION_STOPWORDS = ENGLISH_STOPWORDS | frozenset(REQUEST) | frozenset(
    "name named called ai gi nao dau bao nhieu la cua co nhung cac mot va khong duoc o tai ten".split())
# Words that join two names for one thing ("father or mother"), accent-free.
COORDINATORS = frozenset({"or", "hoac"})


def _words(text: str) -> list[str]:
    """The words of a question as written (lowercase, possessive "'s" dropped)."""
    return re.findall(r"[^\W_]+", re.sub(r"['’]s\b", " ", display(text).lower()))


def _splits(n: int, longest: int = 2, limit: int = 256) -> list[list[tuple[int, int]]]:
    """The ways to cut ``n`` tokens into consecutive words of 1..``longest`` tokens (at most
    ``limit`` of them, fewest words first)."""
    out: list[list[tuple[int, int]]] = []

    def walk(i: int, acc: list[tuple[int, int]]) -> None:
        if len(out) >= limit:
            return
        if i == n:
            out.append(list(acc))
            return
        for size in range(longest, 0, -1):
            if i + size <= n:
                walk(i + size, acc + [(i, i + size)])

    walk(0, [])
    return sorted(out, key=len)


def question_units(asked: str) -> list[str]:
    """The question's content words, each a thing a relation may answer to: lowercase,
    possessive "'s" dropped, question and function words left out. Words joined by a
    coordinator ("father or mother", "cha hoặc mẹ") name one thing asked in two ways, so they
    are one unit: read apart, they would ask for two hops.

    >>> question_units("Who is the wife of the father or mother?")
    ['wife', 'father or mother']
    """
    text = re.sub(r"['’]s\b", " ", display(asked).lower())
    units: list[str] = []
    joining, follows_unit = "", False
    for word in re.findall(r"[^\W_]+", text):
        key = strip_accents(word)
        if key in COORDINATORS and follows_unit:
            joining, follows_unit = word, False
            continue
        if len(word) < 2 or key in QUESTION_STOPWORDS:
            joining, follows_unit = "", False
            continue
        if joining:
            units[-1] = f"{units[-1]} {joining} {word}"
        else:
            units.append(word)
        joining, follows_unit = "", True
    return units


@dataclass(frozen=True)
class AskedWords:
    """The question's content words (:func:`question_units`) around the anchor's name, in
    the order a chain of relations from that name is written. A chain reads outward from
    its name: forward through possessives ("X's son's wife"), backward through "of" ("the
    wife of the son of X"), or both ("the nationality of X's son's wife"); words after the
    name that no possessive joins to it ("... of X born?", "... of X married to?") say what
    is asked last. So the hops should meet, in order (``outward``): the possessive chain
    after the name, the words before the name from the name back, the other words after it.
    Only the first word after the last possessive is taken into the chain ("X's son's wife
    die": wife is, die is not)."""

    chain: tuple[str, ...]
    before: tuple[str, ...]
    rest: tuple[str, ...]
    ordered: bool           # False: the name was not found, word order says nothing
    vietnamese: bool
    cued: frozenset[tuple[str, str]] = frozenset()    # see cued_words
    heads: frozenset[str] = frozenset()               # see head_nouns
    lead: tuple[str, ...] = ()      # the verb right after a name that is a clause's subject
    wh_noun: bool = False           # the question opens with "which"/"what" and a noun


    @classmethod
    def read(cls, question: str, names: list[str], phrases: frozenset[tuple[str, ...]] = frozenset(),
             language: str | None = None) -> "AskedWords":
        """``phrases``: the words of relation names of more than one word ("place of birth":
        place, birth); where the question writes them side by side they are one unit, matched
        by one hop. ``language``: the question's, as its reading says (read here when not
        given, by the same rule: an English question that names "José Ramírez" is English)."""
        text = display(question)
        vietnamese = (language or question_language(text)) == "vi"
        cued = frozenset() if vietnamese else cued_words(text)
        for name in names:
            found = re.search(re.escape(name), text, flags=re.IGNORECASE)
            if found and vietnamese:
                # Vietnamese syllables are read into words across the whole question, the
                # name taken out; the outward order is measured on English phrasings only.
                return cls((), tuple(question_units(text[:found.start()] + " " + text[found.end():])), (),
                           False, True)
            if found:
                heads = head_nouns(text, cued, name)
                chain, rest = _possessive_chain(text[found.end():])
                rest = _joined(rest, phrases)
                lead: tuple[str, ...] = ()
                before_name = _words(text[:found.start()])
                opening = _words(text)[:2]
                wh_noun = (len(opening) == 2 and opening[0] in ("which", "what")
                           and strip_accents(opening[1]) not in QUESTION_STOPWORDS)
                if not chain and rest and before_name and strip_accents(before_name[-1]) in heads:
                    # "the company X runs", "the films X acted in": the name is the subject of
                    # a clause that hangs from the noun before it, so the verb after the name
                    # is the first hop, not the last
                    lead, rest = rest[:1], rest[1:]
                return cls(_joined(chain, phrases), _joined(tuple(question_units(text[:found.start()])), phrases),
                           rest, True, vietnamese, cued, heads, lead, wh_noun)
        heads = frozenset() if vietnamese else head_nouns(text, cued)
        return cls((), _joined(tuple(question_units(text)), phrases), (), False, vietnamese, cued, heads)

    def parts(self) -> list[tuple[str, ...]]:
        """The word groups in hop order (``before`` reversed when the name was found; a verb
        whose subject is the name first)."""
        if not self.ordered:
            return [self.before]
        return [self.lead, self.chain, self.before[::-1], self.rest]

    def readings(self) -> list[list[str]]:
        """The words in the order hops should take them; for Vietnamese, every way of
        reading each group's syllables as one- and two-syllable words."""
        readings: list[list[str]] = [[]]
        for part in self.parts():
            if self.vietnamese and len(part) > 1:
                ways = [[" ".join(part[a:b]) for a, b in split] for split in _splits(len(part), limit=16)]
            else:
                ways = [list(part)]
            readings = [r + w for r in readings for w in ways][:256]
        return readings

    def outward(self) -> list[str]:
        return [w for part in self.parts() for w in part]

    @property
    def after_name(self) -> frozenset[str]:
        """Words of the clause after the name (not its possessive chain): verbs whose subject
        the name is ("the films X directed", "did X direct")."""
        return frozenset(self.lead) | frozenset(self.rest)

    def asked_kind(self) -> str | None:
        """The word that says what kind of thing is asked for: the first content word before
        the name when it heads the phrase asked about: a relative clause hangs from it ("the
        *city* where X was born"), nothing but the name's own words follow ("the *capital* of
        X"), or a question word asks for it ("*which country* is X a citizen of").
        None otherwise: in "what did the mother of X do for a living" the first noun is the
        subject, not the kind; and when the name comes first or word order is unknown."""
        if not self.ordered or not self.before:
            return None
        first = self.before[0].split()[-1]
        if first in self.heads or not self.rest or self.wh_noun:
            return first
        return None


def _joined(units: tuple[str, ...], phrases: frozenset[tuple[str, ...]]) -> tuple[str, ...]:
    """``units`` with each run of words that spells a relation's name (word beginnings
    compared) joined into one unit: ("place", "birth", "mom") → ("place birth", "mom")."""
    if not phrases:
        return units
    out: list[str] = []
    i = 0
    while i < len(units):
        for phrase in sorted(phrases, key=len, reverse=True):
            run = units[i:i + len(phrase)]
            if len(run) == len(phrase) and all(stem_shared(u, w) for u, w in zip(run, phrase)):
                out.append(" ".join(run))
                i += len(phrase)
                break
        else:
            out.append(units[i])
            i += 1
    return tuple(out)


_POSSESSIVE = re.compile(r"\s*['’]\s*s\b")


def _possessive_chain(after: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split the words after a name into the possessive chain that hangs from it ("'s son's
    wife") and the rest (the first word after the last "'s" joins the chain)."""
    chain: list[str] = []
    while (mark := _POSSESSIVE.match(after)):
        after = after[mark.end():]
        following = re.search(r"['’]\s*s\b", after)
        if following:
            chain.extend(question_units(after[:following.start()]))
            after = after[following.start():]
            continue
        words = question_units(after)
        return tuple(chain + words[:1]), tuple(words[1:])
    return tuple(chain), tuple(question_units(after))


def stem_shared(a: str, b: str) -> bool:
    """True when two words begin alike ("subsidiaries"/"subsidiary", "directed"/"director")."""
    n = min(len(a), len(b), 5)
    return n >= 3 and a[:n] == b[:n]


def cued_words(question: str) -> frozenset[tuple[str, str]]:
    """(word, preposition) pairs of the question where the preposition has words after it:
    "the films directed by X" gives ("directed", "by"); "the city X was born in?" gives none."""
    words = _words(question)
    return frozenset((strip_accents(words[i]), words[i + 1]) for i in range(len(words) - 2)
                     if words[i + 1] in PREPOSITIONS)


# Words that open a relative clause, and those that open a noun phrase: a noun right before
# either names the kind of thing asked for ("the city where ...", "the province the town lies in").
RELATIVES = frozenset("where who whom whose that which when".split())
DETERMINERS = frozenset("the a an this that these those his her its their our my your".split())


def head_nouns(question: str, cued: frozenset[tuple[str, str]], name: str = "") -> frozenset[str]:
    """Words that name the kind of thing a phrase asks for rather than a relation: the noun a
    relative clause hangs from, with or without its relative word ("the city where X was
    born", "the films X acted in", "the province the town lies in"), or a participle ("the
    studios based in X"). A relation may still match one, but a path need not use it, so a
    path is not lengthened by a hop that matches only such a word. ``name``: the anchor's
    name, where the question writes it."""
    words = [strip_accents(w) for w in _words(question)]
    first = strip_accents((_words(name) or [""])[0])
    heads = set()
    for i in range(len(words) - 1):
        following = words[i + 1]
        if words[i] in QUESTION_STOPWORDS:
            continue
        after_determiner = i > 0 and words[i - 1] in DETERMINERS      # a noun, not a verb ("what made the ...")
        if (following in RELATIVES or (after_determiner and (following in DETERMINERS or following == first))
                or (following not in QUESTION_STOPWORDS and i + 2 < len(words) and (following, words[i + 2]) in cued)):
            heads.add(words[i])
    return frozenset(heads)
