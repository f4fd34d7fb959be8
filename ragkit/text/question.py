"""What a question's own grammar says, read from closed word classes: the alternatives it
offers to choose between, and the items a yes/no question asks about together.

A question that closes on two items joined by "or" ("Which opened first, the Velm Theatre
or Marlow Bridge?", "Cái nào nặng hơn, máy tiện hay máy phay?") asks the reader to choose
one of them; its answer is one of the items as the question writes them. English joins
them with "or", Vietnamese with "hay" or "hoặc"; the first item opens after the last comma
before the joiner, else where the name run before it opens. A pair set off by a comma at
either end of the question, "between A and B" ("giữa A và B"), is offered the same way.

A yes/no question that joins two items with "and"/"và" and asks about them together ("Are
A and B both ...?", "... in the same city?", "A và B đều ... không?", "A và B có cùng ...
không?") asks whether what follows holds of each, or whether they share one value
(``joined``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .descriptions import Description, question_descriptions
from .shape import Shape, answer_shape, question_focus
from .cues import PROCEDURE_QUESTION_CUES
from .tokens import normalize, question_language
from .words import negated, terms, words

# The words that join the items a question offers to choose between (English, Vietnamese).
CHOICE_JOINERS = ("or", "hay", "hoặc")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_JOIN = re.compile(r"\s+(?:" + "|".join(CHOICE_JOINERS) + r")\s+", re.IGNORECASE)


# "Between A and B, which ...?", "Which ..., between A and B?" (and Vietnamese "giữa A và B"):
# the pair set off by a comma at either end of the question is what it chooses between (a
# "between" inside the clause, "the distance between A and B", offers no choice).
_BETWEEN_FIRST = re.compile(r"^(?:between|giữa)\s+(.+?)\s+(?:and|và)\s+([^,]+?)\s*,", re.IGNORECASE)
_BETWEEN_LAST = re.compile(r",\s*(?:between|giữa)\s+(.+?)\s+(?:and|và)\s+([^,]+?)$", re.IGNORECASE)


def alternatives(question: str) -> tuple[str, ...]:
    """The two items ``question`` closes on, to choose between (``()`` when it offers
    none). Each as the question writes it, without a leading article or quotes."""
    text = question.strip().rstrip("?.! ").strip()
    between = _BETWEEN_FIRST.match(text) or _BETWEEN_LAST.search(text)
    if between:
        return _items(between.group(1), between.group(2))
    joins = list(_JOIN.finditer(text))
    if not joins:
        return ()
    join = joins[-1]
    right = text[join.end():].strip()
    before = text[:join.start()]
    comma = before.rfind(",")
    if comma >= 0:
        left = before[comma + 1:].strip()
    else:
        # no comma: the capitalised run (or quoted title) that ends right before the joiner
        m = re.search(r"((?:[\"“][^\"”]+[\"”])|(?:[A-Z0-9][\w'’.&-]*(?:\s+(?:of|the|and|de|du|la|von|van)?\s*"
                      r"[A-Z0-9][\w'’.&-]*)*))\s*$", before)
        if not m:
            return ()
        left = m.group(1)
    return _items(left, right)


def _items(left: str, right: str) -> tuple[str, ...]:
    items = tuple(_ARTICLE.sub("", item).strip(" \"“”'") for item in (left, right))
    if not all(items) or any(len(item.split()) > 8 for item in items) or items[0].lower() == items[1].lower():
        return ()
    return items


def chosen(answer: str, offered: tuple[str, ...]) -> str | None:
    """The item of ``offered`` that ``answer`` names (the item as the question writes it),
    or None when it names none of them or more than one."""
    plain = _plain(answer)
    named = [item for item in offered if _plain(item) and f" {_plain(item)} " in f" {plain} "]
    if len(named) == 1:
        return named[0]
    if not named:       # the answer gives the item's name in part ("Quill" for "Mara Quill")
        partial = [item for item in offered if plain and f" {plain} " in f" {_plain(item)} "]
        return partial[0] if len(partial) == 1 else None
    return None


def _plain(text: str) -> str:
    return " ".join(re.findall(r"\w+", _ARTICLE.sub("", text.strip()).lower()))


# Words that ask whether what follows holds of each joined item ("Are A and B both ...?",
# "A và B đều là ... không?") or whether the items share one thing ("... the same city?",
# "A và B có cùng quốc tịch không?"): closed classes of English and Vietnamese.
_EVERY = re.compile(r"\s+(?:both|đều(?:\s+là)?|cả\s+hai(?:\s+đều)?(?:\s+là)?)\s+", re.IGNORECASE)
_SAME = re.compile(r"\b(?:the\s+same|cùng(?:\s+một)?)\s+", re.IGNORECASE)
_AND = re.compile(r"\s+(?:and|và)\s+", re.IGNORECASE)
_OPENING_AUXILIARY = re.compile(r"^(?:are|were|is|was|do|does|did|have|has|had|can|could|will|would)\s+",
                                re.IGNORECASE)
_CLOSING_PARTICLE = re.compile(r"\s+(?:(?:phải|đúng)\s+)?(?:không|chưa)$", re.IGNORECASE)
# A name's run: capitalised words and the lower-case words that may join them.
_NAME_RUN = re.compile(r"[\"“]?[A-Z0-9À-ỸĐ][\w'’.&-]*(?:\s+(?:(?:of|the|de|du|la|le|von|van|der|da|di|y)\s+)*"
                       r"[A-Z0-9À-ỸĐ][\w'’.&-]*)*[\"”]?")


@dataclass(frozen=True)
class Joined:
    """A yes/no question about two items joined by "and": what it says of each of them
    (``predicate``: "animated features" of "Are A and B both animated features?"), or the
    noun they are asked to share (``shared``: "province" of "... in the same province?")."""

    items: tuple[str, str]
    predicate: str = ""
    shared: str = ""


def joined(question: str) -> Joined | None:
    """The two items a yes/no question joins with "and"/"và" and asks about together
    ("both", "the same", "đều", "cùng"), or None when it joins none."""
    text = _CLOSING_PARTICLE.sub("", question.strip().rstrip("?.! ").strip())
    text = _OPENING_AUXILIARY.sub("", text)
    every, same = _EVERY.search(text), _SAME.search(text)
    if every is None and same is None:
        return None
    opening = every if every is not None else same
    assert opening is not None
    head = text[:opening.start()]
    joins = list(_AND.finditer(head))
    if not joins:
        return None
    join = joins[0]
    left = head[:join.start()].strip()
    right = head[join.end():].strip()
    if every is None:       # "A and B members of the same band": B is the name run after "and"
        run = _NAME_RUN.match(right)
        verb = re.search(r"\s+(?:có|ở|thuộc|là|được|sinh|đến)\s*", right)
        if run is not None:
            right = run.group()
        elif verb is not None:      # "máy tiện và máy phay có cùng ...": the item ends at the verb
            right = right[:verb.start()]
        else:
            return None
    items = tuple(_ARTICLE.sub("", item).strip(" \"“”'") for item in (left, right))
    if not all(items) or any(len(item.split()) > 8 for item in items):
        return None
    if every is not None:
        predicate = _ARTICLE.sub("", text[every.end():].strip())
        return Joined((items[0], items[1]), predicate=predicate) if predicate else None
    assert same is not None
    shared = re.match(r"[^\W\d_]+(?:\s+[^\W\d_]+)?", text[same.end():])
    if shared is None:
        return None
    noun = shared.group().split()
    # Vietnamese nouns are often two syllables ("quốc tịch"); an English noun is one word.
    return Joined((items[0], items[1]), shared=" ".join(noun if re.search(r"[^\x00-\x7f]", shared.group())
                                                     else noun[:1]))


def asks_for_steps(question: str) -> bool:
    """Whether ``question`` asks for steps or a procedure ("các bước", "quy trình", "how to"),
    read accent-stripped ("quy trinh" typed without accents counts too)."""
    plain = normalize(question)
    return any(cue in plain for cue in PROCEDURE_QUESTION_CUES)


# ----------------------------------------------------------------------- a question, read once
_NUMBER_IN_QUESTION = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
_YEAR = re.compile(r"\b(?:1[0-9]|20)\d\d\b")


@dataclass(frozen=True)
class QuestionReading:
    """Everything ragkit reads from a question's own words, read once per ask and carried to
    every stage that needs it (retrieval's method, the reader, the check, the steps):

    text:          the question as asked;
    language:      "en", "vi" or "unknown" (``question_language``);
    shape:         the kind of answer it wants (``ragkit.text.shape.Shape``);
    focus:         what an English question asks about before a nested description;
    descriptions:  the descriptions nested in it, outermost first (at most two);
    alternatives:  the two items it offers to choose between (``()``: none);
    joined:        the two items a yes/no question asks about together (None: none);
    numbers:       the numbers it writes ("1952", "3.5"), as written;
    years:         those of them that read as years;
    negated:       whether it asks in the negative ("which office does not ...";
                   ``ragkit.text.words.negated``, a closing "không" aside);
    procedural:    whether it asks for steps or a procedure (``asks_for_steps``);
    terms:         its words as a graph's names and schema are linked to (``ragkit.text.words.terms``);
    compares:      whether it compares items it names (a choice or a joined pair).
    """

    text: str
    language: str
    shape: Shape
    focus: tuple[str, ...]
    descriptions: tuple[Description, ...]
    alternatives: tuple[str, ...]
    joined: Joined | None
    numbers: tuple[str, ...]
    years: tuple[str, ...]
    negated: bool
    procedural: bool = False
    terms: tuple[str, ...] = ()

    @property
    def compares(self) -> bool:
        return bool(self.compared)

    @property
    def written_terms(self) -> tuple[str, ...]:
        """``terms`` as the question writes them (accents kept: "đạo diễn", not "dao dien"),
        where the two tokenizations agree word for word; else ``terms``. What an embedder
        reads, where ``terms`` is what names and the schema are matched on."""
        written = tuple(words(self.text))
        return written if len(written) == len(self.terms) else self.terms

    @property
    def compared(self) -> tuple[str, ...]:
        """The items it compares: those it offers to choose between, or the two a yes/no
        question asks about together ("Are A and B both ...?")."""
        if self.shape.kind == "yesno":
            return self.joined.items if self.joined else ()
        return self.alternatives if self.shape.factoid else ()

    def to_dict(self) -> dict:
        return {"language": self.language, "shape": self.shape.to_dict(), "focus": list(self.focus),
                "descriptions": [d.text for d in self.descriptions], "alternatives": list(self.alternatives),
                "joined": list(self.joined.items) if self.joined else None, "numbers": list(self.numbers),
                "years": list(self.years), "negated": self.negated, "procedural": self.procedural}


def read_question(question: str) -> QuestionReading:
    """The ``QuestionReading`` of ``question``."""
    shape = answer_shape(question)
    numbers = tuple(_NUMBER_IN_QUESTION.findall(question))
    return QuestionReading(
        text=question, language=question_language(question), shape=shape, focus=question_focus(question),
        descriptions=tuple(question_descriptions(question, 2)), alternatives=alternatives(question),
        joined=joined(question) if shape.kind == "yesno" else None, numbers=numbers,
        years=tuple(n for n in numbers if _YEAR.fullmatch(n)),
        # a closing "không"/"chưa" makes a Vietnamese question a yes/no one: it negates nothing
        negated=negated(_CLOSING_PARTICLE.sub("", question.strip().rstrip("?.! ").strip())),
        procedural=asks_for_steps(question), terms=tuple(terms(question)))
