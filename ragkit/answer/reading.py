"""Reading evidence for an answer: what kind of answer a question wants, which sentences of
the retrieved text bear on it, and the short answer those sentences give.

- ``answer_shape``: a name, a date, a number, yes/no (the factoid shapes, which get a short
  answer), a definition, a list, steps or an explanation. It reads the question's
  interrogative words (a closed dictionary per language, English and Vietnamese) and the
  head noun they ask about ("which *county*", "what *year*", "bao nhiêu *mm*"); a head noun
  that names a quantity or a time asks for a number or a date.
- ``relevant_sentences``: each evidence text cut to the sentences that share the most
  weighted question words (IDF from the index when there is one), with their neighbours,
  so a small model reads what matters.
- ``short_answer``: candidate spans of the wanted shape in those sentences (names: runs of
  capitalised words; dates: years and written dates; numbers with their units; yes/no from
  the polarity of the sentence that covers the question) scored by how much of the question
  their sentence covers and how close they stand to the question's words. None when no
  candidate stands out (the sentence it stands in covers too little of the question).
- ``question_focus``, ``nested_descriptions`` and ``sub_question``: what an English question
  asks about before any nested description ("the first editor" of "the gazette which
  printed X"), those descriptions, and the question asked again of the entity a first
  step found for one.
- ``coverage``: how much of the question (by word weight) a text covers, and which words it
  leaves open: what decides "not found in the sources" and whether another retrieval step
  is needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..text import (ENGLISH_STOPWORDS, LIST_MARKER, VIETNAMESE_FUNCTION_WORDS, normalize, split_sentences,
                    strip_accents)
from ..text.lexicons import is_weekday, quantity_of
from ..text.words import plain
from ..text.question import alternatives, chosen, question_language
from ..text.cues import ANAPHORS, MAXIMUM_CUES, MINIMUM_CUES, NEGATIONS, NOT_NEGATING, RENAMING_WORDS

FACTOID_SHAPES = ("name", "date", "number", "yesno")
SHAPES = (*FACTOID_SHAPES, "definition", "list", "steps", "explanation", "other")

# Interrogative and auxiliary words (closed classes), accent-stripped and lower-cased.
_AUXILIARIES = frozenset("""is are was were do does did can could should shall may might must has have had
    will would am""".split())
_NUMBER_WORDS_EN = ("how many", "how much", "how long", "how far", "how old", "how big", "how large",
                    "how high", "how tall", "how often", "how fast", "how heavy", "how deep", "how wide",
                    "how quickly", "how soon")
_DATE_WORDS_EN = ("when",)
_EXPLAIN_EN = ("why", "how come", "explain", "what causes", "what happens")
_STEPS_EN = ("how to", "how do i", "how should i", "how can i", "steps", "procedure", "process for")
_LIST_EN = ("list", "which are", "what are the", "name all", "enumerate")
_DEFINE_EN = ("define", "definition of", "what does", "meaning of", "what is meant by", "stand for")
# Head nouns: what a "what/which/how much NOUN" question asks for.
_QUANTITY_NOUNS = frozenset("""number amount count total population size length width height depth weight
    price cost fee limit rate percentage percent share age distance duration speed temperature pressure
    capacity volume value sum salary budget score frequency ratio minimum maximum threshold deadline
    so luong muc gia chi phi toi da toi thieu""".split())
_TIME_NOUNS = frozenset("""year date day month century decade time era season week
    nam ngay thang thoi diem""".split())
_PERSON_HINT_EN = ("who", "whom", "whose")
_PLACE_HINT_EN = ("where",)
# Vietnamese question words, with their accents ("mấy" asks how many, "máy" is a machine).
_VI_NUMBER = ("bao nhiêu", "mấy ", "bao lâu", "bao xa")
_VI_DATE = ("khi nào", "bao giờ", "năm nào", "ngày nào", "lúc nào", "tháng nào", "thời điểm nào",
            "năm bao nhiêu")
_VI_YESNO_END = (" không", " phải không", " đúng không", " chưa", " được không")
_VI_EXPLAIN = ("tại sao", "vì sao", "nguyên nhân", "do đâu", "giải thích")
_VI_STEPS = ("các bước", "quy trình", "làm thế nào", "như thế nào", "cách nào", "cách ")
_VI_LIST = ("liệt kê", "những gì", "những ", "các loại")
_VI_DEFINE = ("là gì", "nghĩa là", "định nghĩa")


@dataclass(frozen=True)
class Shape:
    """What a question asks for: ``kind`` (one of ``SHAPES``), the head noun it names
    (``target``, "" when none) and why, in a few words. ``counted``: the noun that stands
    right after "how many" or "bao nhiêu/mấy" (the thing counted or the unit asked: "kW",
    "holes"); ``proper``: the question asks for a name ("what is it called", "tên là gì")."""

    kind: str
    target: str = ""
    why: str = ""
    counted: str = ""
    proper: bool = False

    @property
    def factoid(self) -> bool:
        return self.kind in FACTOID_SHAPES

    @property
    def strict(self) -> bool:
        """Whether the answer's kind is fixed by the question's own words (a unit or a
        quantity asked, a name asked): evidence with no span of that kind holds no answer."""
        return self.proper or (self.kind == "number" and quantity_of(self.counted) is not None)

    def to_dict(self) -> dict:
        out: dict = {"kind": self.kind, "target": self.target, "why": self.why}
        if self.counted:
            out["counted"] = self.counted
        if self.proper:
            out["proper"] = True
        return out


# Words that qualify what "how many" counts without being it (a closed class of English
# quantity modifiers; the function words are ENGLISH_STOPWORDS).
_COUNT_MODIFIERS = frozenset("fewer additional extra total full separate different whole entire".split())
# A question that asks what something is called ("what is X called", "what is the name of X").
_ASKS_NAME_EN = re.compile(r"\b(?:called|named)$|\bthe name of\b|\bs name\b|\bwhat name\b")


def _plain(text: str) -> str:
    return plain(text, accents=False)


_LEAD_INS = re.compile(r"^(?:please\s+|can you\s+|could you\s+)?(?:tell me|tell us|give me|say|show me|find|state|"
                       r"i want to know|i'd like to know|do you know|cho (?:toi|biet)|hay cho biet)\s+")


def answer_shape(question: str) -> Shape:
    """The kind of answer ``question`` wants (English or Vietnamese)."""
    import unicodedata

    accented = " " + " ".join(re.findall(r"\w+", unicodedata.normalize("NFC", question.lower()))) + " "
    if question_language(question) == "vi":       # a Vietnamese question ("cần", "máy" are no English verbs)
        return _vietnamese_shape(accented)
    plain = _LEAD_INS.sub("", _plain(question))
    words = plain.split()
    if not words:
        return Shape("other")
    padded = f" {plain} "
    first = words[0]
    if any(plain.startswith(c) for c in _EXPLAIN_EN):
        return Shape("explanation", why="asks why")
    opening = " ".join(words[:5])
    if any(opening.startswith(c) or f" {c} " in f" {opening} " for c in _NUMBER_WORDS_EN):
        at = words.index("how")
        # what "how many" counts: its first word that is no function word or quantity modifier
        # ("how many more days": days)
        counted = next((w for w in words[at + 2:] if w not in ENGLISH_STOPWORDS and w not in _COUNT_MODIFIERS),
                       "") if words[at + 1] == "many" else ""
        return Shape("number", _head_noun(words[at + 2:]), "asks how many or how much", counted)
    if any(f" {c} " in padded or plain.startswith(c) for c in _STEPS_EN):
        return Shape("steps", why="asks how to")
    if first in _PERSON_HINT_EN or " by whom" in padded:
        return Shape("name", "person", "asks who")
    if first in _PLACE_HINT_EN:
        return Shape("name", "place", "asks where")
    if first in _DATE_WORDS_EN or (words[:2] in (["since", "when"], ["until", "when"], ["by", "when"])):
        return Shape("date", "", "asks when")
    if first in _AUXILIARIES and len(words) > 2:
        if " or " in padded:
            return Shape("name", "", "asks which of two")
        return Shape("yesno", "", "opens with an auxiliary verb")
    if any(plain.startswith(c) or f" {c} " in padded for c in _DEFINE_EN):
        return Shape("definition", why="asks what a term means")
    # "what/which NOUN ...", "in what year ...", "the X of Y was what?"
    wh = next((i for i, w in enumerate(words) if w in ("what", "which")), None)
    if wh is not None:
        rest = words[wh + 1:]
        if rest and rest[0] in ("is", "are", "was", "were") and len(rest) <= 3:
            return Shape("definition", why="asks what something is")
        head = _head_noun(rest)
        if head in _TIME_NOUNS:
            return Shape("date", head, f"asks which {head}")
        if head in _QUANTITY_NOUNS:
            return Shape("number", head, f"asks for a {head}")
        if plain.startswith(("list", "name all", "what are the", "which are")):
            return Shape("list", head, "asks for several")
        return Shape("name", head, f"asks which {head}" if head else "asks what",
                     proper=bool(_ASKS_NAME_EN.search(plain)))
    if plain.startswith(_LIST_EN):
        return Shape("list", _head_noun(words[1:]), "asks for several")
    if plain.startswith("name "):
        return Shape("name", _head_noun(words[1:]), "asks to name")
    if first in _AUXILIARIES:
        return Shape("yesno", "", "opens with an auxiliary verb")
    return Shape("other")


def _vietnamese_shape(padded: str) -> Shape:
    words = padded.split()
    if any(c in padded for c in _VI_EXPLAIN):
        return Shape("explanation", why="hỏi vì sao")
    if any(c in padded for c in _VI_DATE):
        return Shape("date", "", "hỏi khi nào")
    if any(c in padded for c in _VI_NUMBER):
        at = next((i for i, w in enumerate(words) if w in ("bao", "mấy")), len(words))
        after = words[at + (2 if words[at:at + 1] == ["bao"] else 1):]
        before = [w for w in words[:at] if strip_accents(w) not in VIETNAMESE_FUNCTION_WORDS]
        head = after[0] if after else (before[-1] if before else "")
        counts = words[at:at + 1] == ["mấy"] or words[at:at + 2] == ["bao", "nhiêu"]    # not "bao lâu", "bao xa"
        counted = (" ".join(after[:2]) if quantity_of(" ".join(after[:2])) else (after[0] if after else "")) \
            if counts else ""
        return Shape("number", strip_accents(head), "hỏi bao nhiêu", strip_accents(counted))
    if " tên là gì " in padded or " tên gì " in padded:
        return Shape("name", "", "hỏi tên", proper=True)
    if " gì " in padded:
        # "dụng cụ gì", "bằng gì": which thing, as English "what/which NOUN" (a name); "là gì"
        # defines, "làm gì" asks what to do, "những/các ... gì" asks for several.
        at = words.index("gì")
        before = words[max(0, at - 3):at]
        if before and before[-1] not in ("là", "làm") and not {"những", "các"} & set(before):
            head = before[-1] if strip_accents(before[-1]) not in VIETNAMESE_FUNCTION_WORDS else ""
            return Shape("name", strip_accents(head), "hỏi cái gì")
    if any(c in padded for c in _VI_STEPS):
        return Shape("steps", why="hỏi các bước")
    if any(c in padded for c in _VI_DEFINE):
        return Shape("definition", why="hỏi là gì")
    if padded.rstrip().endswith(_VI_YESNO_END) or " có phải " in padded:
        return Shape("yesno", "", "hỏi có hay không")
    if any(c in padded for c in _VI_LIST):
        return Shape("list", "", "hỏi những gì")
    if " ai " in padded:
        return Shape("name", "person", "hỏi ai")
    if any(c in padded for c in (" ở đâu", "nơi nào", "chỗ nào")):
        return Shape("name", "place", "hỏi ở đâu")
    if any(c in padded for c in (" tối đa ", " tối thiểu ")):
        return Shape("number", "", "hỏi mức tối đa hay tối thiểu")
    if " làm gì " in padded:
        return Shape("steps", why="hỏi phải làm gì")
    if " nào " in padded:
        at = words.index("nào")
        return Shape("name", strip_accents(words[at - 1]) if at else "", "hỏi cái nào")
    return Shape("other")


def _head_noun(words: Sequence[str]) -> str:
    """The first content word of ``words`` (what "what/which ..." asks about)."""
    for w in words:
        if w in ENGLISH_STOPWORDS or w in _AUXILIARIES or w in ("kind", "type", "sort", "name"):
            continue
        return w
    return ""


# ----------------------------------------------------------------------------- focus

# Words that open a description nested in an English question ("the first editor *of*
# the gazette *which* printed ..."): prepositions and relative pronouns (closed classes).
_PREPOSITIONS = frozenset("""of in on at from by for with into to about near under over within across
    behind beside between during after before through along around toward towards against among
    beyond inside outside upon""".split())
_RELATIVES = frozenset("which that who whom whose where when".split())
_WH_WORDS = frozenset("what which who whom whose when where how".split())
_DETERMINERS = frozenset("the a an this that these those its his her their".split())


def question_focus(question: str) -> tuple[str, ...]:
    """What an English question asks about before any nested description: the content words
    right after its question word ("first editor" in "Who was the first editor of the
    gazette which printed ...?"); empty for a Vietnamese question (its question word
    closes the sentence) and for one without a question word."""
    if question_language(question) == "vi":
        return ()
    lowered = [w for w, _ in _words(question)]
    at = next((i for i, w in enumerate(lowered) if w in _WH_WORDS), None)
    if at is None:
        return ()
    i = at + 1
    if lowered[at] == "how" and i < len(lowered):
        i += 1          # "how many", "how long": the measure word is the question word's
    words: list[str] = []
    while i < len(lowered):
        w = lowered[i]
        if w in ("kind", "type", "sort", "name", "part") and lowered[i + 1:i + 2] == ["of"]:
            i += 2      # "what kind of X": X is what is asked about
            continue
        if words and (w in _PREPOSITIONS or w in _RELATIVES or w in _AUXILIARIES):
            break
        if w not in ENGLISH_STOPWORDS and w not in _AUXILIARIES and w not in _PREPOSITIONS:
            words.append(w)
        i += 1
    return tuple(words)


def _words(text: str) -> list[tuple[str, int]]:
    """The words of ``text``, lower-cased, with where each starts."""
    return [(m.group().lower(), m.start()) for m in re.finditer(r"[\w'’-]+", text)]


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
_POSSESSIVE = re.compile(r"['’]s$")


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


def _description_at(text: str, after: int = 0) -> Description | None:
    """The first description in ``text`` from character ``after`` on, of three kinds, read
    from English's closed word classes and capitalisation, never from a dataset's templates:

    - a determiner after a preposition or an auxiliary verb, up to four words and a
      relative pronoun ("in *the city where X was born*", "is *the gazette which
      printed Y*"), to the next comma or the end of the sentence;
    - a noun phrase after a preposition (or, with a predicate after it, an auxiliary verb)
      and "of" a name or another description ("of *the composer of Harbor Lights*", "in
      *birth place of the editor of X*", "did *the sister of Ada Marlowe* write");
    - a name's possessive and the lower-case noun it owns ("*Velmora's capital*").

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
        # a relative clause
        if opener and word in _DETERMINERS and word != "that":
            for j in range(i + 1, min(i + 6, len(tokens))):
                w = tokens[j][0]
                # a clause with its relative pronoun left out: "the country *Signmark is from*"
                contact = j > i + 1 and w[:1].isupper() and _name_end(tokens, j) < len(tokens) \
                    and lowered[_name_end(tokens, j)] in _AUXILIARIES
                if (w in _RELATIVES or contact) and j > i + 1:    # lower case: "Who" in a title is no pronoun
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
                            break   # "does the officer who ... work?": nothing marks where it ends
                    # "the valley where X lies *did* the first mill open": an
                    # inverted "do" after the clause's own words resumes the question
                    resumed = next((t[1] for t in tokens[j + 2:] if t[0] in ("do", "does", "did")
                                    and t[1] < stop), None)
                    stop = resumed if resumed is not None else stop
                    # a preposition the clause leaves stranded closes it ("is part *of* dissolve")
                    stranded = next((tokens[n][2] for n in range(j + 1, len(tokens) - 1)
                                     if tokens[n][1] < stop and lowered[n] in _PREPOSITIONS
                                     and tokens[n + 1][0].islower() and not _closed(lowered[n + 1])), None)
                    stop = stranded if stranded is not None else stop
                    found = text[at:stop].strip().rstrip("?.!").strip()
                    if len(found.split()) > j - i + 1:
                        return Description(found, f"What is {found}?", tokens[j][2] - at)
                    break
                if lowered[j] in _PREPOSITIONS or lowered[j] in _AUXILIARIES or lowered[j] in _DETERMINERS:
                    break
        # a noun phrase "of" a name or of another description
        if (opener or listed) and (word in _DETERMINERS and word != "that" or (word.islower() and not _closed(word))):
            j = i + 1 if word in _DETERMINERS else i
            nouns = j
            while j < len(tokens) and j - nouns < 3 and tokens[j][0].islower() and not _closed(lowered[j]):
                j += 1
            if j > nouns and j + 1 < len(tokens) and tokens[j][0] == "of":
                k = j + 1
                if tokens[k][0] in ("the", "a", "an") and _name_end(tokens, k + 1) > k + 1:
                    k += 1      # "of the Upper Velm"
                end = _name_end(tokens, k)
                if end > k and _POSSESSIVE.search(tokens[end - 1][0]):
                    owned = end
                    while owned < len(tokens) and owned - end < 3 and tokens[owned][0].islower() \
                            and not _closed(lowered[owned]):
                        owned += 1
                    end = owned if owned > end else 0
                elif end == k:
                    inner = _description_at(text, tokens[k][1])     # "of *the director of X*"
                    end = 0
                    if inner and text.startswith(inner.text, tokens[k][1]):
                        stop = tokens[k][1] + len(inner.text)
                        end = next((n for n, t in enumerate(tokens) if t[1] >= stop), len(tokens))
                if end:
                    stop = tokens[end - 1][2]
                    predicate = any(not _closed(w) for w in lowered[end:])
                    if before in _PREPOSITIONS or listed or predicate:
                        found = text[at:stop]
                        return Description(found, f"What is {found}?", tokens[j][2] - at)
        # a possessive
        if _POSSESSIVE.search(word) and (word[:1].isupper() or tokens[i - 1][0][:1].isupper()):
            k = i + 1
            while k < len(tokens) and k - i <= 3 and tokens[k][0].islower() and not _closed(lowered[k]):
                k += 1
            if k > i + 1:
                first = i
                while first > 0 and (tokens[first - 1][0][:1].isupper()
                                     or (lowered[first - 1] in _NAME_JOINS and first > 1
                                         and tokens[first - 2][0][:1].isupper())):
                    first -= 1
                if first > 0 and lowered[first] not in _WH_WORDS and tokens[first][1] >= after:
                    owner = text[tokens[first][1]:tokens[i][2]]
                    owner = _POSSESSIVE.sub("", owner)
                    thing = text[tokens[i + 1][1]:tokens[k - 1][2]]
                    found = text[tokens[first][1]:tokens[k - 1][2]]
                    return Description(found, f"What is the {thing} of {owner}?", -1)
    return None


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


# ----------------------------------------------------------------------------- sentences
# Evidence is cut into sentences by ``ragkit.text.split_sentences``, the splitter answers and
# their claims are cut by too.

Tokenize = Callable[[str], list]


def default_tokenize(text: str) -> list[str]:
    """Content words of a text, accent-stripped and lower-cased, function words out."""
    words = re.findall(r"[a-z0-9]+", strip_accents(text.lower()))
    return [w for w in words if w not in ENGLISH_STOPWORDS and w not in VIETNAMESE_FUNCTION_WORDS
            and w not in QUESTION_ONLY]


# Words that only make a question a question.
QUESTION_ONLY = frozenset("""what which who whom whose when where why how many much tell name please
    bao nhieu khi nao dau ai gi""".split())


@dataclass
class Weigher:
    """Word weights for coverage: the index's IDF where it knows the word (at least a
    floor, so very common words still count a little), else the highest IDF (a word the
    corpus lacks is as telling as its rarest)."""

    tokenize: Tokenize = default_tokenize
    idf: Callable[[str], float | None] | None = None
    # The opening sentence of the document a name titles ("Djibouti" -> "Djibouti ... is a
    # country in the Horn of Africa"): what the corpus says a candidate is; None: unknown.
    lead: Callable[[str], str | None] | None = None
    highest: float = 4.0        # the highest IDF of the corpus (what a word it lacks weighs)

    def weights(self, text: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for w in self.tokenize(text):
            if w in QUESTION_ONLY:
                continue
            weight = self.idf(w) if self.idf else None
            out[w] = max(weight if weight is not None else 4.0, 0.3)
        return out

    @classmethod
    def for_index(cls, index) -> "Weigher":
        """Weights from a ``BM25Index``: its tokenizer and IDF."""
        vocab, idf = index.vocab, index.idf
        top = float(idf.max()) if len(idf) else 4.0

        def lookup(word: str) -> float:
            at = vocab.get(word)
            return float(idf[at]) if at is not None else top

        def tokenize(text: str) -> list[str]:
            return [w for w in index.tokenizer(text) if w not in QUESTION_ONLY and "_" not in w]

        def lead(name: str) -> str | None:
            doc = index.titled(name) if hasattr(index, "titled") else None
            return split_sentences(doc.text)[0] if doc is not None and doc.text.strip() else None

        return cls(tokenize, lookup, lead, top)


@dataclass
class Coverage:
    """How much of a question (by word weight) a text covers, and the words it leaves open."""

    share: float
    covered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def coverage(question_weights: dict[str, float], text: str, weigher: Weigher) -> Coverage:
    total = sum(question_weights.values())
    if not total:
        return Coverage(0.0)
    words = set(weigher.tokenize(text))
    covered = [w for w in question_weights if w in words]
    return Coverage(sum(question_weights[w] for w in covered) / total, covered,
                    [w for w in question_weights if w not in words])


@dataclass
class Sentence:
    item: int          # 1-based evidence number
    position: int      # its place in the item
    text: str
    share: float       # of the question's weight it covers
    covered: list[str] = field(default_factory=list)


def score_sentences(question: str, texts: Sequence[str], weigher: Weigher,
                    titles: Sequence[str] = ()) -> list[Sentence]:
    """Every sentence of ``texts`` with the share of the question it covers, read with its
    text's title (``titles[n]``: a chunk's title is the context of each of its sentences). A
    list item's marker ("1.", "-") says nothing: it is left out."""
    weights = weigher.weights(question)
    out = []
    for n, text in enumerate(texts, 1):
        title = titles[n - 1] if n - 1 < len(titles) else ""
        for pos, sentence in enumerate(split_sentences(text)):
            sentence = LIST_MARKER.sub("", sentence, count=1)
            cov = coverage(weights, f"{title} {sentence}", weigher)
            out.append(Sentence(n, pos, sentence, cov.share, cov.covered))
    return out


def relevant_sentences(question: str, texts: Sequence[str], weigher: Weigher, per_item: int = 2,
                       neighbours: int = 1, extra_questions: Sequence[str] = (),
                       titles: Sequence[str] = ()) -> list[str]:
    """Each text cut to its ``per_item`` best sentences for ``question`` (and for any
    ``extra_questions``: a later step's query) with ``neighbours`` sentences either side,
    in reading order, "…" where text was left out; a text none of whose sentences shares a
    question word keeps its first sentence (it was retrieved for a reason). A kept sentence
    that leans on an earlier one for its subject (``refers_back``) brings the text's first
    sentence too: that is where the text names what it is about."""
    out = []
    for n, text in enumerate(texts):
        title = titles[n] if n < len(titles) else ""
        sentences = split_sentences(text)
        if len(sentences) <= per_item + 2 * neighbours:
            out.append(text.strip())
            continue
        best: set[int] = set()
        for q in (question, *extra_questions):
            weights = weigher.weights(q)
            scored = sorted(((coverage(weights, f"{title} {s}", weigher).share, -i, i)
                             for i, s in enumerate(sentences)), reverse=True)
            best.update(i for share, _, i in scored[:per_item] if share > 0)
        if not best:
            best = {0}
        if 0 not in best and any(refers_back(sentences[i], title) for i in best):
            best.add(0)
        keep = sorted({j for i in best for j in range(i - neighbours, i + neighbours + 1)
                       if 0 <= j < len(sentences)})
        parts, last = [], -1
        for j in keep:
            if last >= 0 and j != last + 1:
                parts.append("…")
            parts.append(sentences[j])
            last = j
        out.append("\n\n".join(parts))
    return out


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
        return bool(date_candidates(text) or re.search(r"\b\d{1,4}\b", text) or words & set(_MONTHS))
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


def refers_back(sentence: str, title: str = "") -> bool:
    """Whether ``sentence`` takes its subject from an earlier sentence of its text: it opens
    with a pronoun or a demonstrative (``ANAPHORS``), or names its text's subject (the
    ``title``'s capitalised words, without a bracketed qualifier; of a section path, its
    last part) only in part ("Quill was
    ..." in the text titled "Mara Quill")."""
    words = re.findall(r"[\w'’-]+", sentence)
    if not words:
        return False
    if words[0].lower() in ANAPHORS:
        return True
    subject = re.sub(r"\s*\([^()]*\)\s*$", "", title.rsplit(" > ", 1)[-1])    # a section path's last part
    name = [w.lower() for w in re.findall(r"[\w'’-]+", subject) if w[:1].isupper()]
    said = {w.lower() for w in words}
    return len(name) > 1 and any(w in said for w in name) and not all(w in said for w in name)


# ----------------------------------------------------------------------------- candidates

_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec").split()
_MONTH = r"(?:" + "|".join(m.capitalize() for m in _MONTHS) + r")\.?"
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
_CONNECTORS = frozenset("of the de da del della di von van der du la le y for on upon & al bin".split())
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
        while run and run[-1][0].lower() in _CONNECTORS:
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
        elif run and w.lower() in _CONNECTORS and i + 1 < len(words) and words[i + 1][0][:1].isupper():
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
    return f" {_plain(name)} " in " " + " ".join(_plain(t) for t in texts) + " "


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
_NEGATION = re.compile(r"\b(" + "|".join(sorted(NEGATIONS, key=len, reverse=True)) + r")\b(?:\W+(\w+))?|n['’]t\b",
                       re.IGNORECASE)


def _negated(text: str) -> bool:
    """Whether ``text`` holds a negation (``ragkit.text.cues.NEGATIONS``, "n't"), a compound
    that negates nothing aside ("không khí", "not only")."""
    for m in _NEGATION.finditer(text):
        word = (m.group(1) or "").lower()
        if not word or (m.group(2) or "").lower() not in NOT_NEGATING.get(word, ()):
            return True
    return False


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
        best = max(sentences, key=lambda s: (s.share, -s.item, -s.position), default=None)
        if best is None or best.share < max(min_share, 0.5):
            return None
        asked = re.sub(r"\s*(?:(?:phải|đúng|được)\s+)?(?:không|chưa)\s*\??\s*$", "", question.strip(),
                       flags=re.IGNORECASE)          # the Vietnamese question's closing particle
        flipped = _negated(best.text) != _negated(asked)
        return ShortAnswer("no" if flipped else "yes", best.item, best.text, best.share, best.share)
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


def trim_short_answer(short: str, shape: Shape, texts: Sequence[str], question: str = "") -> str:
    """A model's short answer cut to the span of the asked shape when it says more ("14
    characters long" -> "14 characters", "Beatriz Nogueira, Head of Data Science" ->
    "Beatriz Nogueira"), provided the evidence holds the cut span; written as the evidence
    writes it ("3 axes" where the evidence says "three axes"); a name without the
    question's own words it opens with ("Tên người sửa chữa" asked "ghi tên ai" ->
    "người sửa chữa"), unless it is a proper name, every word capitalised ("Harbor
    Lights" asked about a harbor keeps "Harbor"); one of the items a question offers to
    choose between, as the question writes it; the asked end of a range ("6 to 8 bar", asked the maximum -> "8 bar")."""
    offered = alternatives(question) if question and shape.kind != "yesno" else ()
    picked = chosen(short, offered) if offered else None
    if picked is not None:
        return picked           # one of the items the question offers, as the question writes it
    if not in_evidence(short, texts):
        short = as_evidence_writes(short, texts) or short
    if shape.kind == "number" and question:
        short = bounded(short, question, texts)
    words = short.split()
    proper = len(words) > 1 and all(w[:1].isupper() or w.lower() in _CONNECTORS for w in words)
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


def in_evidence(span: str, texts: Sequence[str]) -> bool:
    """Whether ``span`` occurs in ``texts``, compared word for word after lower-casing and
    accent stripping (yes and no always do: they answer, they quote nothing)."""
    plain = _plain(span)
    if not plain or plain in ("yes", "no", "co", "khong"):
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


__all__ = ["Coverage", "FACTOID_SHAPES", "MIN_SHARE", "SHAPES", "Sentence", "Shape", "ShortAnswer", "Weigher",
           "answer_shape", "as_evidence_writes", "bound_asked", "bounded", "coverage", "date_candidates",
           "in_evidence", "name_candidates", "number_candidates", "parse_short_answer", "range_end",
           "relevant_sentences", "score_sentences", "short_answer", "yes_no"]
