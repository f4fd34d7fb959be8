"""Text, headings and paragraphs of .docx and .pdf files: what the corpus reader
(``ragkit.corpus``) and the specification reader (``ragkit.specs.ingest``) share.

- .docx: a paragraph's runs with their bold, every run included (python-docx's
  ``Paragraph.text`` skips runs inside smart tags); deleted and moved-away revisions left
  out; Word's Symbol-font Greek read as Greek.
- .pdf: pypdf's page lines; the lines that recur on many pages (headers, footers) and table
  of contents lines told from the text; numbered headings that continue the numbering told
  from numbered table rows; wrapped lines joined into paragraphs.
- clause numbers: "6.2.5a" and annex "A.1" as sortable keys, and whether one can follow
  another.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from .errors import InputError

# "6", "6.2.19", "6.2.5a" (a letter only after a dot), annex clauses "A.1".
CLAUSE_NUMBER = re.compile(r"^(\d{1,2}(?:\.\d{1,3}){1,6}[A-Za-z]?|\d{1,2}|[A-Z](?:\.\d{1,3}){1,6})$")
_ANNEX = re.compile(r"^Annex\s+([A-Z])\b\s*(?:\([a-z]+\))?\s*:?\s*(.*)$")


def section_key(section_id: str) -> tuple[float, ...]:
    """Sortable form of a clause number: "6.2.5a" → (6, 2, 5.01); annex "A.1" → (1001, 1)."""
    parts = []
    for i, part in enumerate(section_id.split(".")):
        if i == 0 and part.isalpha():
            parts.append(1000.0 + ord(part) - ord("A") + 1)
            continue
        match = re.match(r"^(\d+)([A-Za-z]?)$", part)
        if not match:
            return ()
        value = float(match.group(1))
        if match.group(2):
            value += (ord(match.group(2).lower()) - ord("a") + 1) / 100.0
        parts.append(value)
    return tuple(parts)


def continues(prev: tuple[float, ...], cand: tuple[float, ...]) -> bool:
    """Whether clause ``cand`` can follow clause ``prev`` (a child, a next sibling of it or
    of an ancestor, or a new annex), allowing up to two skipped numbers."""
    if not cand:
        return False
    if len(cand) == 1 and cand[0] >= 1000:
        return not prev or cand[0] > prev[0] or prev[0] < 1000
    if len(cand) == len(prev) + 1 and cand[:-1] == prev and cand[-1] <= 1:
        return True
    for depth in range(len(prev)):
        if len(cand) == depth + 1 and cand[:depth] == prev[:depth] and \
                prev[depth] < cand[depth] <= prev[depth] + 3:
            return True
    return False


def split_heading(text: str) -> tuple[str, str]:
    """("6.2.19", "SCP") from "6.2.19<TAB>SCP"; ("", text) when it has no clause number."""
    text = " ".join(text.replace("\t", " ").split())
    annex = _ANNEX.match(text)
    if annex:
        return annex.group(1), annex.group(2).strip() or f"Annex {annex.group(1)}"
    head, _, rest = text.partition(" ")
    if CLAUSE_NUMBER.match(head) and rest:
        return head, rest.strip()
    return "", text


# --------------------------------------------------------------------------- .docx
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
# Runs in these containers are not part of the text: deleted or moved-away revisions.
_NOT_TEXT = {f"{_W}del", f"{_W}moveFrom"}
# Word's Symbol font stores Greek letters as private-use characters (U+F061 is alpha).
_SYMBOL_FONT = dict(zip(range(0xF041, 0xF05B), "ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ")) | \
    dict(zip(range(0xF061, 0xF07B), "αβχδεφγηιϕκλμνοπθρστυϖωξψζ")) | \
    {0xF020: " ", 0xF0B1: "±", 0xF0A3: "≤", 0xF0B3: "≥", 0xF0B4: "×", 0xF0B0: "°", 0xF02D: "−",
     0x2011: "-"}     # a non-breaking hyphen is a hyphen


def _run_text(run) -> str:
    """A run's characters: text, tabs, line breaks and non-breaking hyphens."""
    out = []
    for child in run:
        tag = child.tag
        if tag == f"{_W}t":
            out.append(child.text or "")
        elif tag == f"{_W}tab":
            out.append("\t")
        elif tag in (f"{_W}br", f"{_W}cr"):
            out.append("\n")
        elif tag == f"{_W}noBreakHyphen":
            out.append("-")
    return "".join(out).translate(_SYMBOL_FONT)


def _is_bold(run) -> bool:
    props = run.find(f"{_W}rPr")
    bold = props.find(f"{_W}b") if props is not None else None
    return bold is not None and bold.get(f"{_W}val", "true") not in ("0", "false", "off")


def docx_segments(paragraph) -> list[tuple[str, bool]]:
    """A paragraph's (text, bold) runs, every run in it: python-docx's ``Paragraph.text``
    skips runs inside smart tags, which 3GPP's documents use for words such as "ITU-T",
    "SAP" and "ATR", and so loses them from definitions and abbreviations."""
    out = []
    for run in paragraph.iter(f"{_W}r"):
        if any(a.tag in _NOT_TEXT for a in run.iterancestors()):
            continue
        text = _run_text(run)
        if text:
            out.append((text, _is_bold(run)))
    return out


def docx_text(element) -> str:
    """The text of a paragraph, or of every paragraph in a table cell (joined by spaces)."""
    if element.tag == f"{_W}p":
        return "".join(t for t, _ in docx_segments(element))
    return " ".join(docx_text(p) for p in element.iter(f"{_W}p"))


# --------------------------------------------------------------------------- .pdf
_TOC_LINE = re.compile(r"\.{5,}\s*\d*\s*$")
_LIST_START = re.compile(r"^(?:[-•]\s|NOTE\b|EXAMPLE\b|\d+[.)]\s|[a-z][.)]\s|\[\d+\])")


def is_body_line(line: str, furniture: set[str]) -> bool:
    """A PDF line that is text: not empty, not a page header or footer (``page_furniture``),
    not a table of contents entry."""
    return bool(line) and re.sub(r"\d+", "#", line) not in furniture and not _TOC_LINE.search(line)


def is_clause_heading(key: tuple[float, ...], heading: str, prev: tuple[float, ...]) -> bool:
    """A numbered PDF line (``key``: its number, ``section_key``) is a heading when it
    continues the clause numbering after ``prev`` and reads as a title (short, capitalised,
    no "label: text", no sentence or list punctuation at its end): table rows and the table of
    contents are not taken for headings."""
    return bool(key) and len(heading) <= 150 and heading[:1].isupper() and continues(prev, key) \
        and ": " not in heading and not heading.rstrip().endswith((".", ",", ";"))


def joins_paragraph(last: str | None, line: str) -> bool:
    """Whether a wrapped PDF line goes on the paragraph whose last line is ``last``: not when
    it starts a list item or a note, nor when ``last`` closed a sentence and it opens one."""
    return last is not None and not _LIST_START.match(line) and \
        not (last.endswith((".", ":", ";")) and line[:1].isupper())


def page_furniture(pages: list[list[str]]) -> set[str]:
    """Lines (digits masked) that recur on at least 30 % of the pages: headers and footers."""
    counts: Counter[str] = Counter()
    for lines in pages:
        counts.update({re.sub(r"\d+", "#", ln.strip()) for ln in lines if ln.strip()})
    threshold = max(3, int(0.3 * len(pages)))
    return {line for line, n in counts.items() if n >= threshold}


def open_pdf(path: Path, what: str):
    """The PDF's reader (pypdf) and each page's text lines; a file that is not a PDF, an
    encrypted one or a damaged one is a one-line error naming it as ``what``."""
    import logging

    import pypdf

    try:
        with open(path, "rb") as handle:
            head = handle.read(1024)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be read ({exc.strerror})") from None
    if b"%PDF-" not in head:       # what PDF readers accept: the marker in the first 1024 bytes
        raise InputError(f"{what} {path}: not a PDF (no %PDF- header; it starts {head[:16]!r})")
    # pypdf logs its repairs of a damaged file as warnings; the error below says it in one line.
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        reader = pypdf.PdfReader(str(path))
        return reader, [(page.extract_text() or "").splitlines() for page in reader.pages]
    except pypdf.errors.FileNotDecryptedError:
        raise InputError(f"{what} {path}: the PDF is encrypted (ragkit cannot read it without its "
                         "password)") from None
    except Exception as exc:  # pypdf raises many types for damaged files
        raise InputError(f"{what} {path}: not a readable PDF ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())})") from None
    finally:
        logger.setLevel(level)
