"""Text cut into sentences: the one cut that evidence, answers, claims and summaries share.

The rules are typographic and work the same in English and Vietnamese:

- a blank line ends a paragraph; a list item ("-", "*", "1.", "2)"), a numbered step
  ("Bước 1:", "Step 2:"), a heading ("#"), a table row ("|"), a tab-separated line and a code
  fence each start a line of their own, and headings, table rows, tab-separated lines and
  fences stand alone;
- any other line continues the one before it when that one was broken in the middle of a
  sentence: it ends without closing punctuation (".", "!", "?") or a citation, and without a
  ":" or ";" before a capital letter, and the new line starts in lower case, is indented, or
  follows a line at least ``WRAPPED_LINE`` characters long (text wrapped by its writer); a
  line that ends with an abbreviation ("e.g.", "Dr.") is continued too;
- within a line, a sentence ends at ".", "!" or "?" (and any closing quotes or brackets)
  followed by a space and a capital letter, a digit, an opening quote or bracket; not after a
  common abbreviation or an initial ("e.g.", "Dr.", "J. Smith", "U.S.") or a list marker
  ("1. "), and never inside a number ("23.501");
- citation markers ("[2]", "[1, 3]", "[1-2]") belong to the sentence they close, also when
  they stand after its full stop or alone on the next line.

>>> split_sentences("The AMF selects an SMF [1]. Dr. Smith agrees, e.g. in TS 23.501. [2]")
['The AMF selects an SMF [1].', 'Dr. Smith agrees, e.g. in TS 23.501. [2]']
>>> split_sentences("Kiểm tra mức dầu. Xả nước ngưng\\ntrong bình.\\n\\nBước 1: Tắt máy\\nBước 2: Khóa nguồn")
['Kiểm tra mức dầu.', 'Xả nước ngưng trong bình.', 'Bước 1: Tắt máy', 'Bước 2: Khóa nguồn']
"""

from __future__ import annotations

import re
from typing import Iterator

# A bracketed citation: "[2]", "[1, 3]", "[1-2]", "[4; 7]".
CITATION = re.compile(r"\[\s*(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\s*\]")
# A list item's marker: "- ", "* ", "• ", "1. ", "2) ", "(3) ".
LIST_MARKER = re.compile(r"^\s*(?:[-*•+–]\s+|\(?\d{1,2}[.)]\s+)")
# A numbered step's label: "Bước 1", "Buoc 2", "Step 3".
STEP_LABEL = re.compile(r"^\s*(?:[-*•+]\s*)?(?:bước|buoc|step)\s+\d+\b", re.IGNORECASE)
# Words after which a full stop ends no sentence (lower case, without their final stop).
ABBREVIATIONS = frozenset("""e.g i.e etc vs dr mr mrs ms st no fig cf approx al prof col lt capt sgt mt vol
    tp ths ts""".split())
# A line at least this long that ends mid-sentence was wrapped by its writer: the next line goes on.
WRAPPED_LINE = 60

# A sentence end: punctuation, closing quotes or brackets, citations, then space.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*((?:\s*\[\s*\d[\d\s,;–-]*\])*)\s+")
_OPENING = "[\"“‘'("
_LINE_CLOSED = re.compile(r"(?:[.!?:;…]|" + CITATION.pattern + r")\W*$")
_MARKUP = re.compile(r"\*\*|__|`")


def _after_abbreviation(text: str) -> bool:
    """Whether ``text`` ends with a full stop that closes an abbreviation or an initial."""
    before = re.search(r"(\w+)\W*$", text[-40:])
    word = before.group(1).lower() if before else ""
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def _stands_alone(line: str) -> bool:
    """A heading, a table row, a tab-separated line or a code fence: never joined to another."""
    stripped = line.strip()
    return stripped.startswith(("#", "|", "```")) or "\t" in stripped


def _starts_unit(line: str) -> bool:
    """A line that opens something of its own: a list item, a numbered step, or a line that
    stands alone."""
    return bool(LIST_MARKER.match(line) or STEP_LABEL.match(line)) or _stands_alone(line)


def _continues(last: str, line: str) -> bool:
    """Whether ``line`` goes on with the line before it, ``last``: that one was broken in the
    middle of a sentence."""
    if not last.strip() or not line.strip() or _starts_unit(line) or _stands_alone(last):
        return False
    tail, first = last.rstrip()[-60:], line.lstrip()[:1]
    if tail.endswith(".") and _after_abbreviation(tail):
        return True
    if _LINE_CLOSED.search(tail):
        # A sentence's end closes the line; a lead-in (":") or a clause (";") only before a
        # capital letter or a quote ("Trả lời:" / "Áp suất ..."), not before "€40 per day".
        if not re.search(r"[:;]\W*$", tail) or first.isupper() or first in _OPENING:
            return False
    return first.islower() or line[:1] in " \t" or len(last.rstrip()) >= WRAPPED_LINE


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(start, line) of the logical lines of ``text``, each line break inside one written as
    a space (so offsets into the line are offsets into ``text``)."""
    offset, pending, last, start = 0, "", "", 0
    for line in text.split("\n"):
        if _continues(last, line):
            pending += " " + line
        else:
            if pending or offset:
                yield start, pending
            pending, start = line, offset
        last = line
        offset += len(line) + 1
    yield start, pending


def _sentence_cuts(line: str) -> list[int]:
    """Offsets in ``line`` where a new sentence starts."""
    cuts: list[int] = []
    for match in _SENTENCE_END.finditer(line):
        after = match.end()
        if after >= len(line) or LIST_MARKER.fullmatch(line[(cuts[-1] if cuts else 0):after]):
            continue
        following = line[after]
        if not (following.isupper() or following.isdigit() or following in _OPENING):
            continue
        if _after_abbreviation(line[: match.start() + 1]):
            continue        # "e.g. The", an initial ("J. Smith")
        cuts.append(after)
    return cuts


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every sentence of every logical line of ``text``."""
    for offset, line in _lines(text):
        starts = [0, *_sentence_cuts(line)]
        for a, b in zip(starts, [*starts[1:], len(line)]):
            if line[a:b].strip():
                yield offset + a, offset + b


def citations_only(piece: str) -> bool:
    """Whether ``piece`` holds nothing but citation markers (and markup or punctuation)."""
    return not CITATION.sub("", _MARKUP.sub("", piece)).strip(" \t\n.:;,")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) in ``text`` of each of its sentences, in order (see the module docstring);
    a piece of citation markers alone is joined to the sentence before it. A span may hold
    line breaks (a wrapped sentence) and the spaces around the sentence."""
    out: list[tuple[int, int]] = []
    for a, b in _pieces(text):
        if out and citations_only(text[a:b]):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (``sentence_spans``), each with its runs of spaces and line
    breaks written as one space; pieces that hold no word (a rule "---") are left out. List
    markers and citations stay where they are written."""
    out = []
    for a, b in sentence_spans(text):
        sentence = " ".join(text[a:b].split())
        if re.search(r"\w", sentence):
            out.append(sentence)
    return out


def first_sentences(text: str, n: int) -> str:
    """The first ``n`` sentences of ``text``, as one line."""
    return " ".join(split_sentences(text)[:n])


def cut_to_length(text: str, max_chars: int) -> list[str]:
    """``text`` in pieces of at most ``max_chars`` characters, each cut after the last
    sentence or clause end (". ", "; ") in its second half, else at the last space, else at
    the limit: how a paragraph too long for one chunk is divided."""
    pieces = []
    while len(text) > max_chars:
        cut = max(text.rfind(". ", 0, max_chars), text.rfind("; ", 0, max_chars))
        if cut < max_chars // 2:
            cut = text.rfind(" ", 0, max_chars)
        if cut <= 0:
            cut = max_chars - 1
        pieces.append(text[:cut + 1].strip())
        text = text[cut + 1:].strip()
    return pieces + ([text] if text else [])


__all__ = ["ABBREVIATIONS", "CITATION", "LIST_MARKER", "STEP_LABEL", "WRAPPED_LINE", "citations_only",
           "cut_to_length", "first_sentences", "sentence_spans", "split_sentences"]
