"""An answer cut into claims: the sentences and list items that each say one thing, with the
evidence numbers each cites.

A claim is checked on its own (``grounding.check_claims``), so the cut decides what can be
kept or dropped. A claim is a sentence as ``ragkit.text.sentences`` cuts them (the one
splitter evidence and answers share: a line is a boundary unless it was wrapped mid-sentence,
a sentence ends at ".", "!" or "?" before a capital letter, a digit or a citation, not after
an abbreviation and never inside a number; citation markers ("[2]", "[1, 3]", "[1-2]")
belong to the sentence they close, also when they stand after its full stop or alone on the
next line). A list marker ("-", "*", "1.", "2)") opens an item and says nothing itself, so it
is removed from the claim's words.

A bracketed number is the answer's own citation only where an answer cites: in citation
position, closing a clause (a marker, or a run of them, followed by the end of the text or
line, by punctuation, or by another marker). Quoted source text keeps its own reference
brackets ("as specified in TS 23.502 [3]"), and those are not citations:

- a bracket followed by more words ("TS 23.502 [3] and ...", "[3] 3GPP TS 23.502") is not in
  citation position;
- a run of markers before a sentence's closing punctuation, when another run closes the
  sentence after it ("... TS 23.502 [3]. [2]"), is the quoted sentence's own;
- given the evidence: a bracket that stands in an evidence text after the same words
  ("23.502 [3]" in the evidence) is quoted, and a bracket whose numbers are all outside the
  evidence is source text when its sentence also cites evidence it has (a claim whose only
  marker is out of range keeps it: it cites what does not exist).

``citations``, ``strip_citations``, ``renumber_citations`` and ``split_claims`` all read the
markers this way (``answer_markers``), with the evidence when they are given it.

>>> [c.body for c in split_claims("The AMF selects an SMF [1]. The SMF allocates the IP. [2]")]
['The AMF selects an SMF.', 'The SMF allocates the IP.']
>>> [c.cited for c in split_claims("- Xả nước ngưng [1]\\n- Thay dầu [2, 3]")]
[(1,), (2, 3)]
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence, Union

from ..text.sentences import CITATION as _CITATION
from ..text.sentences import LIST_MARKER as _LIST_MARKER
from ..text.sentences import sentence_spans

_MARKUP = re.compile(r"\*\*|__|`")
# What may follow a citation (after spaces): the end of the text or line, clause or sentence
# punctuation, a closing quote or bracket, a dash or arrow, markup; anything else (a word, a
# number, an opening bracket) means the bracket belongs to the text.
_CITATION_FOLLOWER = re.compile(r"[ \t]*(?:$|\n|\r|[.,;:!?…()\]}\"'”’»*_—–→←]|-(?:\s|$))")
_CLOSING = re.compile(r"[.!?…][\"'”’»)]*[ \t]*")
Evidence = Union[Sequence[str], int, None]


@dataclass(frozen=True)
class Marker:
    """One citation marker the answer writes: its place and the numbers it cites."""

    start: int
    end: int
    numbers: tuple[int, ...]


def _numbers(group: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", group):
        ends = [int(n) for n in re.split(r"\s*[–-]\s*", part) if n]
        numbers = range(ends[0], ends[-1] + 1) if len(ends) == 2 and ends[0] <= ends[1] <= ends[0] + 20 else ends
        out.extend(n for n in numbers if n not in out)
    return out


def _runs(matches: list[re.Match], text: str) -> list[list[re.Match]]:
    """Bracket matches grouped into runs: brackets with only spaces between them."""
    runs: list[list[re.Match]] = []
    for m in matches:
        if runs and not text[runs[-1][-1].end():m.start()].strip(" \t"):
            runs[-1].append(m)
        else:
            runs.append([m])
    return runs


def _normal(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower()


def _quoted(text: str, m: re.Match, evidence_texts: list[str]) -> bool:
    """Whether the bracket ``m`` stands in an evidence text after the same words as in
    ``text`` (the fewest words before it that hold six letters or digits, at most five)."""
    before = re.findall(r"\w+", text[max(0, m.start() - 100):m.start()])[-5:]
    words: list[str] = []
    while before and sum(len(w) for w in words) < 6:
        words.insert(0, before.pop())
    if sum(len(w) for w in words) < 6:
        return False
    inner = re.sub(r"\s+", "", m.group(1))
    pattern = (r"(?<!\w)" + r"\W+".join(re.escape(_normal(w)) for w in words) + r"\W*\[\s*"
               + r"\s*".join(re.escape(c) for c in inner) + r"\s*\]")
    return any(re.search(pattern, e) for e in evidence_texts)


def answer_markers(text: str, evidence: Evidence = None) -> list[Marker]:
    """The citation markers of ``text`` that are the answer's own, in order (see the module
    docstring): brackets in citation position, less those that belong to quoted source text.
    ``evidence`` (the evidence texts, or only how many there are) lets quoted brackets and
    numbers outside the evidence be told apart too.

    >>> [m.numbers for m in answer_markers("As specified in TS 23.502 [3]. The NRF answers [1].")]
    [(3,), (1,)]
    >>> [m.numbers for m in answer_markers("As specified in TS 23.502 [3]. The NRF answers [1].",
    ...                                    ["The consumer asks the NRF, as specified in TS 23.502 [3]."])]
    [(1,)]
    >>> [m.numbers for m in answer_markers("See TS 23.502 [3] for the procedure [2].")]
    [(2,)]
    """
    matches = list(_CITATION.finditer(text))
    if not matches:
        return []
    runs = _runs(matches, text)
    own: list[list[re.Match]] = []
    for i, run in enumerate(runs):
        after = run[-1].end()
        closes = bool(re.search(r"[.!?…][\"'”’»)]*[ \t]*$", text[: run[0].start()]))
        if not _CITATION_FOLLOWER.match(text, after) and not closes:
            continue            # words follow: the bracket is part of the text (not "... end. [3] Next")
        closing = _CLOSING.match(text, after)
        if closing and closing.end() > after and i + 1 < len(runs) and runs[i + 1][0].start() == closing.end() \
                and _CITATION_FOLLOWER.match(text, runs[i + 1][-1].end()):
            continue            # "... [3]. [2]": the quoted sentence's bracket, then the answer's
        own.append(run)
    if evidence is None:
        return [Marker(m.start(), m.end(), tuple(_numbers(m.group(1)))) for run in own for m in run]
    count = evidence if isinstance(evidence, int) else len(evidence)
    texts = [] if isinstance(evidence, int) else [_normal(e) for e in evidence]
    kept = [m for run in own for m in run if not (texts and _quoted(text, m, texts))]
    markers = [Marker(m.start(), m.end(), tuple(_numbers(m.group(1)))) for m in kept]

    def inside(marker: Marker) -> bool:
        return any(1 <= n <= count for n in marker.numbers)

    out = []
    for a, b in sentence_spans(text):
        here = [mk for mk in markers if a <= mk.start < b]
        if any(inside(mk) for mk in here):
            here = [mk for mk in here if inside(mk)]     # out of range beside real citations: source text
        out.extend(here)
    return out


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


def citations(text: str, evidence: Evidence = None) -> tuple[int, ...]:
    """Evidence numbers cited in ``text``: "[1]", "[1, 3]", "[2-4]" (a range is expanded),
    by the answer's own markers only (``answer_markers``).

    >>> citations("X [2]. Y [1, 3]; and Z [4-5]")
    (2, 1, 3, 4, 5)
    """
    out: list[int] = []
    for marker in answer_markers(text, evidence):
        out.extend(n for n in marker.numbers if n not in out)
    return tuple(out)


def without_brackets(text: str) -> str:
    """``text`` with every bracketed number removed, the answer's markers and quoted source
    references alike (what a claim says, not where it comes from)."""
    return _CITATION.sub(" ", text)


def _without(text: str, markers: list[Marker], offset: int = 0) -> str:
    for marker in sorted(markers, key=lambda m: -m.start):
        text = text[: marker.start - offset] + text[marker.end - offset:]
    return text


def _tidy(text: str, across_lines: bool = False) -> str:
    """The space a removed marker leaves tidied: none before punctuation, single spaces."""
    text = re.sub(r"\s+([.,;:!?])" if across_lines else r"[ \t]+([.,;:!?])", r"\1", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def strip_citations(text: str, evidence: Evidence = None) -> str:
    """``text`` without its citation markers, with the space they leave tidied (brackets of
    quoted source text stay: they are text)."""
    return _tidy(_without(text, answer_markers(text, evidence)), across_lines=True)


def split_claims(answer: str, evidence: Evidence = None) -> list[Claim]:
    """The claims of ``answer`` in order (see the module docstring for the rules); with
    ``evidence``, brackets quoted from it are text, not citations."""
    markers = answer_markers(answer, evidence)
    claims: list[Claim] = []
    for start, end in sentence_spans(answer):
        raw = answer[start:end]
        own = [m for m in markers if start <= m.start < end]
        cited = tuple(dict.fromkeys(n for m in own for n in m.numbers))
        lead = len(raw) - len(raw.lstrip())
        bare = _without(raw, own, start)
        body = _tidy(_LIST_MARKER.sub("", _MARKUP.sub("", bare), count=1), across_lines=True)
        claims.append(Claim(raw.strip(), body, cited, start + lead, start + len(raw.rstrip())))
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


def renumber_citations(text: str, numbers: dict[int, int], evidence: Evidence = None) -> str:
    """``text`` with each cited number ``n`` written as ``numbers[n]`` (numbers not in the
    map are left out; a marker left with none is removed). A range is written as a list.
    Brackets of quoted source text are left as they are.

    >>> renumber_citations("A [3]. B [1-2]. C [9].", {3: 1, 1: 2, 2: 3})
    'A [1]. B [2, 3]. C.'
    >>> renumber_citations("Per TS 23.502 [3] the NRF answers [2].", {2: 1})
    'Per TS 23.502 [3] the NRF answers [1].'
    """
    for marker in sorted(answer_markers(text, evidence), key=lambda m: -m.start):
        kept = [numbers[n] for n in marker.numbers if n in numbers]
        written = f"[{', '.join(str(n) for n in dict.fromkeys(kept))}]" if kept else ""
        text = text[: marker.start] + written + text[marker.end:]
    return _tidy(text)


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


__all__ = ["Claim", "Marker", "add_citations", "answer_markers", "citations", "remove_claims", "renumber_citations",
           "split_claims", "strip_citations", "trim_to_whole_claims", "without_brackets"]
