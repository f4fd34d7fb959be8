"""Reading 3GPP specifications into sections: .docx as 3GPP ships them, .pdf, and .md.

- .docx: paragraphs in body order, with headings from the "Heading N" styles ("6.2.19<TAB>SCP");
  unnumbered sub-headings (21.905's "A", "B" ...) fold into their clause; tables become
  "cell | cell" lines.
- .pdf: pypdf text, page headers and footers removed (lines repeated on many pages), headings
  recognised as numbered lines that continue the clause numbering (so table rows and the
  table of contents are not taken for headings), wrapped lines joined into paragraphs. The
  abbreviation clause is re-read in pypdf's layout mode, where the column gap between an
  abbreviation and its expansion survives as spaces.
- .md: "#" headings whose text starts with the clause number.

The spec id comes from 3GPP's file naming ("23501-g40.pdf" → ts_23.501, version 16.4.0;
series numbers x.8xx and x.9xx are technical reports: "21905-h20" → tr_21.905), or from a
``spec_id:`` line at the top of a .md file.
"""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from pathlib import Path

from ..errors import InputError
from .model import Section, SpecDocument

SUFFIXES = (".docx", ".pdf", ".md")
_NAME = re.compile(r"^(\d{2})(\d{3})(?:-([0-9a-z])([0-9a-z])([0-9a-z]))?", re.IGNORECASE)
# "6", "6.2.19", "6.2.5a" (a letter only after a dot), annex clauses "A.1".
_NUMBER = re.compile(r"^(\d{1,2}(?:\.\d{1,3}){1,6}[A-Za-z]?|\d{1,2}|[A-Z](?:\.\d{1,3}){1,6})$")
_ANNEX = re.compile(r"^Annex\s+([A-Z])\b\s*(?:\([a-z]+\))?\s*:?\s*(.*)$")


def _version_digit(char: str) -> int:
    return int(char) if char.isdigit() else ord(char.lower()) - ord("a") + 10


def spec_id_from_name(name: str) -> tuple[str, str]:
    """("ts_23.501", "16.4.0") from "23501-g40.pdf"; ("", "") when the name is not 3GPP's."""
    match = _NAME.match(Path(name).name)
    if not match:
        return "", ""
    series, number = match.group(1), match.group(2)
    kind = "tr" if number[0] in "89" else "ts"
    version = ""
    if match.group(3):
        version = ".".join(str(_version_digit(c)) for c in match.group(3, 4, 5))
    return f"{kind}_{series}.{number}", version


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
    if _NUMBER.match(head) and rest:
        return head, rest.strip()
    return "", text


# --------------------------------------------------------------------------- .docx
def _read_docx(path: Path) -> tuple[str, list[Section]]:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(path))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise InputError(f"spec {path}: not a readable .docx ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # python-docx raises PackageNotFoundError for non-OOXML files
        raise InputError(f"spec {path}: not a readable .docx ({type(exc).__name__})") from None
    sections: list[Section] = []
    title = ""
    for element in document.element.body.iterchildren():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "p":
            para = Paragraph(element, document)
            text = para.text.strip()
            style = para.style.name if para.style is not None else ""
            if not text:
                continue
            if style.startswith("Heading"):
                level = int(style.split()[-1]) if style.split()[-1].isdigit() else 1
                section_id, heading = split_heading(text)
                if not section_id and level > 1 and sections:
                    continue  # an unnumbered sub-heading ("A", "B" in 21.905) stays in its clause
                sections.append(Section(section_id or heading.lower(), heading,
                                        1 if level == 9 else level))
            elif style in ("ZA", "ZT") and not title:
                title = text
            elif sections:
                sections[-1].lines.append(text)
        elif tag == "tbl" and sections:
            table = Table(element, document)
            for row in table.rows:
                cells = []
                for cell in row.cells:
                    value = " ".join(cell.text.split())
                    if value and (not cells or cells[-1] != value):  # merged cells repeat
                        cells.append(value)
                if cells:
                    sections[-1].lines.append(" | ".join(cells))
    return title, sections


# --------------------------------------------------------------------------- .pdf
_TOC_LINE = re.compile(r"\.{5,}\s*\d*\s*$")
# 3GPP's running page header: "3GPP TS 23.501 V16.4.0 (2020-03)", in any column order.
_RUNNING_HEADER = re.compile(r"3GPP\s+T[SR]\s+\d{2}\.\d{3}\s+V\d+\.\d+\.\d+")
_LIST_START = re.compile(r"^(?:[-•]\s|NOTE\b|EXAMPLE\b|\d+[.)]\s|[a-z][.)]\s|\[\d+\])")


def _page_furniture(pages: list[list[str]]) -> set[str]:
    """Lines (digits masked) that recur on at least 30 % of the pages: headers and footers."""
    counts = Counter()
    for lines in pages:
        counts.update({re.sub(r"\d+", "#", ln.strip()) for ln in lines if ln.strip()})
    threshold = max(3, int(0.3 * len(pages)))
    return {line for line, n in counts.items() if n >= threshold}


def _read_pdf(path: Path) -> tuple[str, list[Section]]:
    import pypdf

    try:
        reader = pypdf.PdfReader(str(path))
        pages = [(page.extract_text() or "").splitlines() for page in reader.pages]
    except Exception as exc:  # pypdf raises many types for damaged files
        raise InputError(f"spec {path}: not a readable PDF ({type(exc).__name__}: {exc})") from None
    if not any(ln.strip() for lines in pages for ln in lines):
        raise InputError(f"spec {path}: the PDF has no extractable text (a scan?)")
    furniture = _page_furniture(pages)
    title = next((ln.strip() for ln in pages[0] if "3GPP T" in ln), "") if pages else ""

    sections: list[Section] = []
    prev: tuple[float, ...] = ()
    for page_no, lines in enumerate(pages):
        for raw in lines:
            line = raw.strip()
            if not line or re.sub(r"\d+", "#", line) in furniture or _TOC_LINE.search(line):
                continue
            section_id, heading = split_heading(line)
            key = section_key(section_id) if section_id else ()
            if key and len(heading) <= 150 and heading[:1].isupper() and continues(prev, key) \
                    and ": " not in heading and not heading.rstrip().endswith((".", ",", ";")):
                sections.append(Section(section_id, heading, len(key), pages=[page_no]))
                prev = key
                continue
            if not sections:
                continue  # cover page, foreword and the table of contents
            current = sections[-1]
            if current.pages[-1] != page_no:
                current.pages.append(page_no)
            # Join a wrapped line to its paragraph, unless it starts a list item or a note, or
            # the previous line closed a sentence and this one opens a new one.
            ends_sentence = current.lines[-1].endswith((".", ":", ";")) if current.lines else True
            if current.lines and not _LIST_START.match(line) and not (ends_sentence and line[:1].isupper()):
                current.lines[-1] = f"{current.lines[-1]} {line}"
            else:
                current.lines.append(line)
    for section in sections:
        if "abbreviation" in section.title.lower():
            section.lines = _layout_lines(reader, section, furniture)
    return title, sections


def _layout_lines(reader, section: Section, furniture: set[str]) -> list[str]:
    """A section's lines in layout mode, where a run of 2+ spaces (a column gap) becomes a
    tab: "5G-AN PDB      5G Access Network Packet Delay Budget" keeps its two columns."""
    out: list[str] = []
    inside = False
    for page_no in section.pages:
        text = reader.pages[page_no].extract_text(extraction_mode="layout") or ""
        for raw in text.splitlines():
            line = raw.strip()
            if not line or _RUNNING_HEADER.search(line) or \
                    re.sub(r"\d+", "#", " ".join(line.split())) in furniture:
                continue
            section_id, heading = split_heading(line)
            if section_id == section.section_id:
                inside = True
                continue
            if inside and section_id and continues(section_key(section.section_id), section_key(section_id)):
                return out
            if inside or page_no != section.pages[0]:
                inside = True
                out.append(re.sub(r"\s{2,}", "\t", line))
    return out


# --------------------------------------------------------------------------- .md
def _read_markdown(path: Path) -> tuple[str, list[Section], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"spec {path}: cannot be read as UTF-8 text ({exc})") from None
    declared = ""
    sections: list[Section] = []
    title = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        match = re.match(r"^(#{1,6})\s+(.*)$", line)
        if match:
            section_id, heading = split_heading(match.group(2))
            if not section_id and not title:
                title = heading
                continue
            sections.append(Section(section_id or heading.lower(), heading, len(match.group(1))))
        elif not sections and line.lower().startswith("spec_id:"):
            declared = line.split(":", 1)[1].strip()
        elif sections and line.strip():
            sections[-1].lines.append(line.strip())
    return title, sections, declared


def load_spec(path: str | Path) -> SpecDocument:
    """Read one specification file into a ``SpecDocument`` (sections in document order)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"spec {path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(f"spec {path}: unsupported type {suffix!r} (expected {', '.join(SUFFIXES)})")
    declared = ""
    if suffix == ".docx":
        title, sections = _read_docx(path)
    elif suffix == ".pdf":
        title, sections = _read_pdf(path)
    else:
        title, sections, declared = _read_markdown(path)
    spec_id, version = spec_id_from_name(path.name)
    spec_id = declared or spec_id or re.sub(r"[^a-z0-9_.]+", "_", path.stem.lower())
    if not sections:
        raise InputError(f"spec {path}: no numbered clauses found")
    return SpecDocument(spec_id=spec_id, title=title or path.stem, version=version,
                        source=path.name, sections=sections)


def definition_clauses(doc: SpecDocument) -> list[Section]:
    """Clause 3 and its sub-clauses (and clause 4 of TR 21.905); a spec without clause 3
    is refused, since the term dictionary is built from it."""
    wanted = ("3",) + (("4",) if doc.spec_id == "tr_21.905" else ())
    found = [s for s in doc.sections if s.section_id.split(".")[0] in wanted and s.section_id[:1].isdigit()]
    if not any(s.section_id == "3" or s.section_id.startswith("3.") for s in found):
        raise InputError(f"spec {doc.source}: has no clause 3 (definitions and abbreviations)")
    return found
