"""What kind of answer a question wants, read from its own words: a name, a date, a number,
yes/no (the factoid shapes, which get a short answer), a definition, a list, steps or an
explanation (``answer_shape``), and what it asks about before any description nested in it
(``question_focus``).

The question's interrogative words are read from a closed dictionary per language (English
and Vietnamese), with the head noun they ask about ("which *county*", "what *year*", "bao
nhiêu *mm*"); a head noun that names a quantity or a time asks for a number or a date, one
the units lexicon knows asks for that quantity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .lexicons import quantity_of
from .tokens import ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS, question_language, strip_accents
from .words import plain

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
