"""Descriptions nested in an English question ("the first editor of *the gazette which
printed the Velm Almanac*"), found from English's closed word classes (prepositions,
auxiliaries, determiners, relative pronouns) and capitalisation, and the question asked
again of the entity a first step found for one (``sub_question``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .shape import _AUXILIARIES, _DETERMINERS, _PREPOSITIONS, _RELATIVES, _WH_WORDS, _words
from .tokens import ENGLISH_STOPWORDS, question_language
from .words import POSSESSIVE as _POSSESSIVE

@dataclass(frozen=True)
class Description:
    """A description nested in a question: its ``text`` as the question writes it, the
    question that asks what it names (``ask``), and where a description nested in it may
    open (``inner_from``, a character offset into ``text``; -1: none can)."""

    text: str
    ask: str
    inner_from: int


# Lower-case words that may join the capitalised words of one name ("Bridge of Spies",
# "The Man Who Planted Trees", "What a Wonderful World"): a closed class.
_NAME_JOINS = frozenset("of the for and a an de da del della di von van der du la le y on upon & al bin".split())


def _closed(word: str) -> bool:
    """A function word: no content of its own in a description's noun phrase."""
    return word in ENGLISH_STOPWORDS or word in _AUXILIARIES or word in _PREPOSITIONS \
        or word in _RELATIVES or word in _WH_WORDS or word in _DETERMINERS


def _name_end(tokens: list[tuple[str, int, int]], k: int) -> int:
    """The index past the name that opens at ``tokens[k]``: its capitalised words and the
    lower-case joining words between two of them; ``k`` when no name opens there."""
    end = k
    i = k
    while i < len(tokens):
        word = tokens[i][0]
        if word[:1].isupper() or (word[:1].isdigit() and i > k):
            i += 1
            end = i
            if _POSSESSIVE.search(word):
                break           # "Quiet Harbor's composer": the name ends at its possessive
            continue
        if i > k and word in _NAME_JOINS:
            i += 1
            continue
        break
    return end


Tokens = list[tuple[str, int, int]]       # each word, where it opens and where it closes


def _description_at(text: str, after: int = 0) -> Description | None:
    """The first description in ``text`` from character ``after`` on, of three kinds, read
    from English's closed word classes and capitalisation, never from a dataset's templates:

    - a determiner after a preposition or an auxiliary verb, up to four words and a
      relative pronoun ("in *the city where X was born*", "is *the gazette which
      printed Y*"), to the next comma or the end of the sentence (``_relative_clause``);
    - a noun phrase after a preposition (or, with a predicate after it, an auxiliary verb)
      and "of" a name or another description ("of *the composer of Harbor Lights*", "in
      *birth place of the editor of X*", "did *the sister of Ada Marlowe* write")
      (``_noun_of``);
    - a name's possessive and the lower-case noun it owns ("*Velmora's capital*")
      (``_possessive``).

    A capitalised "The" or "Who" inside a title ("The Man Who Planted Trees")
    opens nothing."""
    tokens = [(m.group(), m.start(), m.end()) for m in re.finditer(r"[\w'’-]+", text)]
    lowered = [w.lower() for w, _, _ in tokens]
    for i in range(1, len(tokens)):
        word, at, _ = tokens[i]
        if at < after:
            continue
        before = lowered[i - 1]
        opener = before in _PREPOSITIONS or before in _AUXILIARIES
        listed = before in ("and", "or")     # "stars X, Y and *the producer of Z*"
        found = None
        if opener and word in _DETERMINERS and word != "that":
            found = _relative_clause(text, tokens, lowered, i)
        if found is None and (opener or listed) and \
                (word in _DETERMINERS and word != "that" or (word.islower() and not _closed(word))):
            found = _noun_of(text, tokens, lowered, i, listed)
        if found is None and _POSSESSIVE.search(word) and (word[:1].isupper() or tokens[i - 1][0][:1].isupper()):
            found = _possessive(text, tokens, lowered, i, after)
        if found is not None:
            return found
    return None


def _relative_clause(text: str, tokens: Tokens, lowered: list[str], i: int) -> Description | None:
    """The determiner at ``tokens[i]`` opening up to four words and a relative pronoun (or a
    name and its verb, the pronoun left out), to where the clause ends."""
    at = tokens[i][1]
    for j in range(i + 1, min(i + 6, len(tokens))):
        w = tokens[j][0]
        # a clause with its relative pronoun left out: "the country *Signmark is from*"
        contact = j > i + 1 and w[:1].isupper() and _name_end(tokens, j) < len(tokens) \
            and lowered[_name_end(tokens, j)] in _AUXILIARIES
        if (w in _RELATIVES or contact) and j > i + 1:    # lower case: "Who" in a title is no pronoun
            stop = _clause_end(text, tokens, lowered, i, j, contact)
            if stop is None:
                return None
            found = text[at:stop].strip().rstrip("?.!").strip()
            if len(found.split()) > j - i + 1:
                return Description(found, f"What is {found}?", tokens[j][2] - at)
            return None
        if lowered[j] in _PREPOSITIONS or lowered[j] in _AUXILIARIES or lowered[j] in _DETERMINERS:
            return None
    return None


def _clause_end(text: str, tokens: Tokens, lowered: list[str], i: int, j: int, contact: bool) -> int | None:
    """Where the relative clause whose pronoun (or name) is ``tokens[j]`` ends: the next
    comma, else the sentence's end, cut short where the question's own words resume; None
    when nothing marks its end."""
    before = lowered[i - 1]
    comma = text.find(",", tokens[j][1])
    stop = comma if comma >= 0 else len(text)
    if comma < 0 and before in _AUXILIARIES:
        # "was *the studio that released Quiet Harbor* bought by ...": after an
        # auxiliary the question's own verb follows the clause, unmarked; the
        # clause's first name closes it, when lower-case words follow that name
        name = next((n for n in range(j + 1, len(tokens)) if tokens[n][0][:1].isupper()), None)
        end = _name_end(tokens, name) if name is not None else len(tokens)
        if end < len(tokens) and tokens[end][0].islower() and not _closed(lowered[end]):
            stop = tokens[end - 1][2]
        elif before in ("do", "does", "did") and not contact:
            return None     # "does the officer who ... work?": nothing marks where it ends
    # "the valley where X lies *did* the first mill open": an
    # inverted "do" after the clause's own words resumes the question
    resumed = next((t[1] for t in tokens[j + 2:] if t[0] in ("do", "does", "did") and t[1] < stop), None)
    stop = resumed if resumed is not None else stop
    # a preposition the clause leaves stranded closes it ("is part *of* dissolve")
    stranded = next((tokens[n][2] for n in range(j + 1, len(tokens) - 1)
                     if tokens[n][1] < stop and lowered[n] in _PREPOSITIONS
                     and tokens[n + 1][0].islower() and not _closed(lowered[n + 1])), None)
    return stranded if stranded is not None else stop


def _noun_of(text: str, tokens: Tokens, lowered: list[str], i: int, listed: bool) -> Description | None:
    """Up to three lower-case nouns from ``tokens[i]`` (after a determiner there) and "of"
    a name, a name's possessive noun, or another description."""
    before, at = lowered[i - 1], tokens[i][1]
    j = i + 1 if tokens[i][0] in _DETERMINERS else i
    nouns = j
    while j < len(tokens) and j - nouns < 3 and tokens[j][0].islower() and not _closed(lowered[j]):
        j += 1
    if not (j > nouns and j + 1 < len(tokens) and tokens[j][0] == "of"):
        return None
    k = j + 1
    if tokens[k][0] in ("the", "a", "an") and _name_end(tokens, k + 1) > k + 1:
        k += 1      # "of the Upper Velm"
    end = _name_end(tokens, k)
    if end > k and _POSSESSIVE.search(tokens[end - 1][0]):
        owned = end
        while owned < len(tokens) and owned - end < 3 and tokens[owned][0].islower() and not _closed(lowered[owned]):
            owned += 1
        end = owned if owned > end else 0
    elif end == k:
        inner = _description_at(text, tokens[k][1])     # "of *the director of X*"
        end = 0
        if inner and text.startswith(inner.text, tokens[k][1]):
            stop = tokens[k][1] + len(inner.text)
            end = next((n for n, t in enumerate(tokens) if t[1] >= stop), len(tokens))
    if not end:
        return None
    predicate = any(not _closed(w) for w in lowered[end:])
    if before in _PREPOSITIONS or listed or predicate:
        found = text[at:tokens[end - 1][2]]
        return Description(found, f"What is {found}?", tokens[j][2] - at)
    return None


def _possessive(text: str, tokens: Tokens, lowered: list[str], i: int, after: int) -> Description | None:
    """The name whose possessive is ``tokens[i]`` and the lower-case noun it owns, asked
    again as "What is the <noun> of <name>?"."""
    k = i + 1
    while k < len(tokens) and k - i <= 3 and tokens[k][0].islower() and not _closed(lowered[k]):
        k += 1
    if k == i + 1:
        return None
    first = i
    while first > 0 and (tokens[first - 1][0][:1].isupper()
                         or (lowered[first - 1] in _NAME_JOINS and first > 1 and tokens[first - 2][0][:1].isupper())):
        first -= 1
    if first == 0 or lowered[first] in _WH_WORDS or tokens[first][1] < after:
        return None
    owner = _POSSESSIVE.sub("", text[tokens[first][1]:tokens[i][2]])
    thing = text[tokens[i + 1][1]:tokens[k - 1][2]]
    found = text[tokens[first][1]:tokens[k - 1][2]]
    return Description(found, f"What is the {thing} of {owner}?", -1)


def _leaves_a_question(question: str, description: str) -> bool:
    """Whether ``question`` still asks something of its own with ``description`` taken out
    ("What is Velmora's capital?" without "Velmora's capital" asks nothing)."""
    rest = question.replace(description, " ", 1)
    return any(not _closed(w) for w, _ in _words(rest))


def question_descriptions(question: str, limit: int = 2) -> list[Description]:
    """The descriptions nested in an English ``question``, outermost first (see
    ``_description_at``): "the county that lies north of the town where X grew up"
    and, inside it, "the town where X grew up". At most ``limit``; none for a Vietnamese
    question."""
    if question_language(question) == "vi" or limit < 1:
        return []
    wh = next((at for w, at in _words(question) if w in _WH_WORDS), 0)
    out: list[Description] = []
    found = _description_at(question, wh)
    while found and not _leaves_a_question(question, found.text):
        found = _description_at(question, question.find(found.text) + 1)
    while found and len(out) < limit:
        out.append(found)
        found = _description_at(found.text, found.inner_from) if found.inner_from >= 0 else None
    return out


def nested_descriptions(question: str, limit: int = 2) -> list[str]:
    """The texts of ``question_descriptions``."""
    return [d.text for d in question_descriptions(question, limit)]


def sub_question(question: str, description: str, bridge: str) -> str:
    """``question`` with a ``description`` nested in it replaced by ``bridge``, the entity an
    earlier step found for it: "Who was the first editor of the gazette which
    printed X?" -> "Who was the first editor of Harbor Gazette?"."""
    return question.replace(description, bridge.strip(), 1)
