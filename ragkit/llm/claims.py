"""An answer cut into claims: the sentences and list items that each say one thing, with the
evidence numbers each cites.

A claim is checked on its own (``grounding.check_claims``), so the cut decides what can be
kept or dropped. The rules are typographic and work the same in English and Vietnamese:

- a line is a claim boundary (list items, steps, paragraphs); a list marker ("-", "*", "1.",
  "2)") opens an item and says nothing itself, so it is removed from the claim's words;
- within a line, a sentence ends at ".", "!" or "?" followed by a space and a capital letter,
  a digit or a citation; not after a common abbreviation ("e.g.", "Dr.") and never inside a
  number ("23.501");
- citation markers ("[2]", "[1, 3]", "[1-2]") belong to the sentence they close, also when
  they stand after its full stop or alone on the next line.

>>> [c.body for c in split_claims("The AMF selects an SMF [1]. The SMF allocates the IP. [2]")]
['The AMF selects an SMF.', 'The SMF allocates the IP.']
>>> [c.cited for c in split_claims("- Xả nước ngưng [1]\\n- Thay dầu [2, 3]")]
[(1,), (2, 3)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CITATION = re.compile(r"\[\s*(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\s*\]")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•+–]\s+|\(?\d{1,2}[.)]\s+)")
_MARKUP = re.compile(r"\*\*|__|`")
# A sentence end: punctuation, closing quotes or brackets, citations, then space.
_SENTENCE_END = re.compile(r"[.!?][\"'”)\]]*((?:\s*\[\s*\d[\d\s,;–-]*\])*)\s+")
_ABBREVIATIONS = frozenset("e.g i.e etc vs dr mr mrs ms st no fig cf approx al tp ths ts".split())


@dataclass(frozen=True)
class Claim:
    """One sentence or list item of an answer.

    ``text`` is the claim as written (citations included), ``body`` the same without its
    citations and list marker, ``cited`` the evidence numbers it cites (1-based, in order),
    ``start``/``end`` its place in the answer, so a claim can be removed from it."""

    text: str
    body: str
    cited: tuple[int, ...]
    start: int
    end: int


def citations(text: str) -> tuple[int, ...]:
    """Evidence numbers cited in ``text``: "[1]", "[1, 3]", "[2-4]" (a range is expanded).

    >>> citations("X [2]. Y [1, 3] and [4-5]")
    (2, 1, 3, 4, 5)
    """
    out: list[int] = []
    for group in _CITATION.findall(text):
        for part in re.split(r"\s*[,;]\s*", group):
            ends = [int(n) for n in re.split(r"\s*[–-]\s*", part) if n]
            numbers = range(ends[0], ends[-1] + 1) if len(ends) == 2 and ends[0] <= ends[1] <= ends[0] + 20 else ends
            out.extend(n for n in numbers if n not in out)
    return tuple(out)


def strip_citations(text: str) -> str:
    """``text`` without its citation markers, with the space they leave tidied."""
    text = _CITATION.sub("", text)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def _sentence_cuts(line: str) -> list[int]:
    """Offsets in ``line`` where a new sentence starts."""
    cuts = []
    for match in _SENTENCE_END.finditer(line):
        after = match.end()
        if after >= len(line) or _LIST_MARKER.fullmatch(line[(cuts[-1] if cuts else 0):after]):
            continue
        following = line[after]
        if not (following.isupper() or following.isdigit() or following in "[\"“'("):
            continue
        before = re.search(r"(\w+)\W*$", line[: match.start() + 1])
        word = before.group(1).lower() if before else ""
        if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            continue        # "e.g. The", an initial ("J. Smith")
        cuts.append(after)
    return cuts


def _lines(text: str):
    """(start, line) of the logical lines of ``text``: a line wrapped in the middle of a
    sentence (it ends without punctuation and the next starts in lower case) is joined with
    the next, with a space for the line break. A line that ends with a citation is whole."""
    offset, pending, start = 0, "", 0
    for line in text.split("\n"):
        if pending and line[:1].islower() and not re.search(r"[.!?:;]\W*$|\[\d+\]\W*$", pending):
            pending += " " + line
        else:
            if pending or offset:
                yield start, pending
            pending, start = line, offset
        offset += len(line) + 1
    yield start, pending


def _pieces(answer: str):
    """(start, end) of every sentence of every logical line of ``answer``."""
    for offset, line in _lines(answer):
        starts = [0, *_sentence_cuts(line)]
        for a, b in zip(starts, [*starts[1:], len(line)]):
            if line[a:b].strip():
                yield offset + a, offset + b


def split_claims(answer: str) -> list[Claim]:
    """The claims of ``answer`` in order (see the module docstring for the rules)."""
    claims: list[Claim] = []
    for start, end in _pieces(answer):
        raw = answer[start:end]
        if not strip_citations(_MARKUP.sub("", raw)).strip(" \t.:;,") and claims:
            # Citations alone (on the next line, or after the full stop): they close the claim before.
            prev = claims.pop()
            text = answer[prev.start:end].strip()
            claims.append(Claim(text, prev.body, prev.cited + tuple(n for n in citations(raw) if n not in prev.cited),
                                prev.start, end))
            continue
        body = strip_citations(_LIST_MARKER.sub("", _MARKUP.sub("", raw), count=1))
        lead = len(raw) - len(raw.lstrip())
        claims.append(Claim(raw.strip(), body, citations(raw), start + lead, start + len(raw.rstrip())))
    return claims


def remove_claims(answer: str, dropped: list[Claim]) -> str:
    """``answer`` without the ``dropped`` claims, its other text (line breaks, list layout)
    kept as it was; lines left empty are removed."""
    text = answer
    for claim in sorted(dropped, key=lambda c: -c.start):
        text = text[: claim.start] + text[claim.end:]
    lines = [re.sub(r"[ \t]{2,}", " ", line).rstrip() for line in text.split("\n")]
    lines = [line for line in lines if line.strip() and not _LIST_MARKER.fullmatch(line + " ")]
    return "\n".join(lines).strip()


def renumber_citations(text: str, numbers: dict[int, int]) -> str:
    """``text`` with each cited number ``n`` written as ``numbers[n]`` (numbers not in the
    map are left out; a marker left with none is removed). A range is written as a list.

    >>> renumber_citations("A [3]. B [1-2]. C [9].", {3: 1, 1: 2, 2: 3})
    'A [1]. B [2, 3]. C.'
    """
    def write(match: re.Match) -> str:
        kept = [numbers[n] for n in citations(match.group(0)) if n in numbers]
        return f"[{', '.join(str(n) for n in dict.fromkeys(kept))}]" if kept else ""

    text = _CITATION.sub(write, text)
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()


def add_citations(text: str, additions: dict[int, int]) -> str:
    """``text`` with ``[n]`` added at the end of claim ``i`` (its index in ``split_claims``)
    for each ``i: n`` of ``additions``, before the claim's closing full stop.

    >>> add_citations("The AMF selects an SMF. It is on the N11 interface.", {1: 2})
    'The AMF selects an SMF. It is on the N11 interface [2].'
    """
    claims = split_claims(text)
    for i in sorted(additions, reverse=True):
        if 0 <= i < len(claims):
            end = claims[i].end
            while end > claims[i].start and text[end - 1] in ".!?;:":
                end -= 1
            text = f"{text[:end]} [{additions[i]}]{text[end:]}"
    return text


def trim_to_whole_claims(text: str) -> tuple[str, str]:
    """A text cut off mid-claim (the model ran out of tokens) without its unfinished last
    claim, and that claim ("" when the last claim is whole: it ends with ".", "!", "?", a
    citation, or is a list item or heading line followed by nothing cut).

    >>> trim_to_whole_claims("The AMF selects an SMF [1]. The SMF then allocates an IP addr")
    ('The AMF selects an SMF [1].', 'The SMF then allocates an IP addr')
    >>> trim_to_whole_claims("1) Bật nguồn [1]\\n2) Kiểm tra dầu [2]")
    ('1) Bật nguồn [1]\\n2) Kiểm tra dầu [2]', '')
    """
    claims = split_claims(text)
    if not claims:
        return text, ""
    last = claims[-1]
    tail = text[last.start:].rstrip()
    if re.search(r"[.!?…][\"'”)\]]*$", tail) or _CITATION.search(tail[-12:] or "") and tail.endswith("]"):
        return text, ""
    return remove_claims(text, [last]), last.text


def split_sentences(text: str) -> list[str]:
    """The sentences of an evidence text (the same cut as for claims, citations kept)."""
    return [text[a:b].replace("\n", " ").strip() for a, b in _pieces(text)]


__all__ = ["Claim", "add_citations", "citations", "remove_claims", "renumber_citations", "split_claims", "split_sentences", "strip_citations",
           "trim_to_whole_claims"]
