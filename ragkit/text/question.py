"""What a question's own grammar says, read from closed word classes: the alternatives it
offers to choose between.

A question that closes on two items joined by "or" ("Which opened first, the Velm Theatre
or Marlow Bridge?", "Cái nào nặng hơn, máy tiện hay máy phay?") asks the reader to choose
one of them; its answer is one of the items as the question writes them. English joins
them with "or", Vietnamese with "hay" or "hoặc"; the first item opens after the last comma
before the joiner, else where the name run before it opens.
"""

from __future__ import annotations

import re

# The words that join the items a question offers to choose between (English, Vietnamese).
CHOICE_JOINERS = ("or", "hay", "hoặc")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_JOIN = re.compile(r"\s+(?:" + "|".join(CHOICE_JOINERS) + r")\s+", re.IGNORECASE)


def alternatives(question: str) -> tuple[str, ...]:
    """The two items ``question`` closes on, to choose between (``()`` when it offers
    none). Each as the question writes it, without a leading article or quotes."""
    text = question.strip().rstrip("?.! ").strip()
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
