"""Reading 3GPP specifications into sections: .docx as 3GPP ships them, .pdf, and .md.

- .docx: paragraphs in body order, with headings from the "Heading N" styles ("6.2.19<TAB>SCP");
  unnumbered sub-headings (21.905's "A", "B" ...) fold into their clause; tables become
  "cell | cell" lines.
- .pdf: pypdf text, page headers and footers removed (lines repeated on many pages), headings
  recognised as numbered lines that continue the clause numbering (so table rows and the
  table of contents are not taken for headings), wrapped lines joined into paragraphs. The
  abbreviation clause is re-read in pypdf's layout mode, where the column gap between an
  abbreviation and its expansion survives as spaces.
- .md, as people write it and as pandoc and docling write it from the .docx: "#" headings
  whose text starts with the clause number (the clause number, not the number of "#",
  gives the level); soft-wrapped lines joined into paragraphs; a line with a tab kept as
  its own entry; bold, italics, links, images, superscripts and backslash escapes ("\\[1\\]")
  reduced to their text; grid and pipe tables as "cell | cell" rows.
- a folder of .md files: one spec split into one file per clause, read in clause order.

In every form a paragraph is cut where a bold "Term:" label follows the end of a sentence
(TR 21.905 runs "Operating band: ... requirements. **Operations System:** ..." into one
paragraph), so a definition ends where the next entry begins.

The spec id is the spec and its version, "ts_23.501@16.4.0" (see ``model.versioned_spec_id``).
The spec comes from a ``spec_id:`` line at the top of a .md file, else 3GPP's file naming
("23501-g40.pdf" → ts_23.501, version 16.4.0; series numbers x.8xx and x.9xx are technical
reports: "21905-h20" → tr_21.905), else the document's own header ("3GPP TS 23.501
V16.4.0"). The version is the header's where the document states one, else the file name's;
the release is the document's "(Release 16)", else the version's major number.
"""

from __future__ import annotations

import html
import re
import zipfile
from pathlib import Path

from ..errors import InputError
from ..documents import (CLAUSE_NUMBER, continues, docx_segments, docx_text, is_body_line, is_clause_heading,
                         joins_paragraph, open_pdf, page_furniture, section_key, split_heading)
from .model import Section, SpecDocument, spec_number, versioned_spec_id

SUFFIXES = (".docx", ".pdf", ".md")
MARKDOWN_SUFFIXES = (".md", ".markdown")
_NAME = re.compile(r"^(\d{2})(\d{3})(?:-([0-9a-z])([0-9a-z])([0-9a-z]))?", re.IGNORECASE)


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


# The document's own header: "3GPP TS 23.501 V16.4.0 (2020-03)" and "(Release 16)".
_HEADER = re.compile(r"3GPP\s+(T[SR])\s+(\d{2})\.(\d{3})\s+V(\d+\.\d+\.\d+)", re.IGNORECASE)
_RELEASE = re.compile(r"\(\s*Release\s+(\d+)\s*\)", re.IGNORECASE)


def header_info(text: str) -> tuple[str, str, str]:
    """("ts_23.501", "16.4.0", "16") from a cover page that says "3GPP TS 23.501 V16.4.0 ...
    (Release 16)"; empty strings for what it does not say."""
    spec = version = release = ""
    match = _HEADER.search(text)
    if match:
        spec = f"{match.group(1).lower()}_{match.group(2)}.{match.group(3)}"
        version = match.group(4)
    match = _RELEASE.search(text)
    if match:
        release = match.group(1)
    return spec, version, release


def release_of(version: str) -> str:
    """The release a version belongs to: from Release 4 on, 3GPP's major version number is
    the release ("16.4.0" → "16"); "3.x.y" is Release 1999; "" when unknown."""
    major = version.split(".", 1)[0]
    if not major.isdigit():
        return ""
    if int(major) >= 4:
        return major
    return "1999" if int(major) == 3 else ""


# --------------------------------------------------------------------------- entries
_SENTENCE_END = re.compile(r"[.;!?]\s*$")


def split_entries(segments: list[tuple[str, bool]]) -> list[str]:
    """A paragraph's text, given as (text, bold) runs, cut where a bold label ending in a
    colon ("Operations System:", or docling's "**Term**: ...") follows the end of a
    sentence: the label starts the next entry of a definitions list, not more of this one.

    >>> split_entries([("A: one. ", False), ("B:", True), (" two.", False)])
    ['A: one.', 'B: two.']
    """
    lines, current = [], ""
    for i, (text, bold) in enumerate(segments):
        if bold and text.strip() and _SENTENCE_END.search(current) and _starts_label(segments, i):
            lines.append(current.strip())
            current = ""
        current += text
    lines.append(current.strip())
    return [line for line in lines if line]


def _starts_label(segments: list[tuple[str, bool]], start: int) -> bool:
    """Whether the bold runs from ``start`` (blank runs between them allowed) form a short
    label that ends with a colon, inside the bold or just after it."""
    label, j = "", start
    while j < len(segments) and (segments[j][1] or not segments[j][0].strip()):
        label += segments[j][0]
        j += 1
    after = segments[j][0] if j < len(segments) else ""
    return (label.rstrip().endswith(":") or after.lstrip().startswith(":")) and \
        0 < len(label.split()) <= 12


# --------------------------------------------------------------------------- .docx
def _read_docx(path: Path) -> tuple[str, list[Section], str]:
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
    front: list[str] = []    # the cover page, where the version and release are stated
    for element in document.element.body.iterchildren():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "p":
            para = Paragraph(element, document)
            segments = docx_segments(element)
            text = "".join(t for t, _ in segments).strip()
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
            elif not sections:
                front.append(text)
                if style in ("ZA", "ZT") and not title:
                    title = text
            elif any(bold for _, bold in segments):
                sections[-1].lines.extend(split_entries(segments))
            else:
                sections[-1].lines.append(text)
        elif tag == "tbl" and sections:
            table = Table(element, document)
            for row in table.rows:
                cells: list[str] = []
                for cell in row.cells:
                    value = " ".join(docx_text(cell._tc).split())
                    if value and (not cells or cells[-1] != value):  # merged cells repeat
                        cells.append(value)
                if cells:
                    sections[-1].lines.append(" | ".join(cells))
    return title, sections, "\n".join(front)


# --------------------------------------------------------------------------- .pdf
# 3GPP's running page header: "3GPP TS 23.501 V16.4.0 (2020-03)", in any column order.
_RUNNING_HEADER = re.compile(r"3GPP\s+T[SR]\s+\d{2}\.\d{3}\s+V\d+\.\d+\.\d+")
def _read_pdf(path: Path) -> tuple[str, list[Section], str]:
    reader, pages = open_pdf(path, "spec")
    if not any(ln.strip() for lines in pages for ln in lines):
        raise InputError(f"spec {path}: the PDF has no extractable text (a scan?)")
    furniture = page_furniture(pages)
    title = next((ln.strip() for ln in pages[0] if "3GPP T" in ln), "") if pages else ""

    sections: list[Section] = []
    prev: tuple[float, ...] = ()
    for page_no, lines in enumerate(pages):
        for raw in lines:
            line = raw.strip()
            if not is_body_line(line, furniture):
                continue
            section_id, heading = split_heading(line)
            key = section_key(section_id) if section_id else ()
            if is_clause_heading(key, heading, prev):
                sections.append(Section(section_id, heading, len(key), pages=[page_no]))
                prev = key
                continue
            if not sections:
                continue  # cover page, foreword and the table of contents
            current = sections[-1]
            if current.pages[-1] != page_no:
                current.pages.append(page_no)
            if joins_paragraph(current.lines[-1] if current.lines else None, line):
                current.lines[-1] = f"{current.lines[-1]} {line}"
            else:
                current.add_line(line, page_no)
    for section in sections:
        if "abbreviation" in section.title.lower():
            laid_out = _layout_lines(reader, section, furniture)
            section.lines = [line for line, _ in laid_out]
            section.line_pages = [page for _, page in laid_out]
    return title, sections, "\n".join(pages[0]) if pages else ""


def _layout_lines(reader, section: Section, furniture: set[str]) -> list[tuple[str, int]]:
    """A section's lines in layout mode, where a run of 2+ spaces (a column gap) becomes a
    tab: "5G-AN PDB      5G Access Network Packet Delay Budget" keeps its two columns;
    each with its page."""
    out: list[tuple[str, int]] = []
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
                out.append((re.sub(r"\s{2,}", "\t", line), page_no))
    return out


# --------------------------------------------------------------------------- .md
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_META = re.compile(r"^(spec_id|version|release)\s*:\s*(.*)$", re.IGNORECASE)
_TOC_TITLES = ("contents", "table of contents")
# Escaped ASCII punctuation ("\[1\]", "\'", "\*"): kept out of the markup rules as private-use
# characters, restored as the plain character at the end.
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_INLINE_RULES = (
    (re.compile(r"!\[[^\]]*\]\([^)]*\)(?:\{[^}]*\})?"), ""),           # images
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),                       # links
    (re.compile(r"\[([^\]]*)\]\{[^}]*\}"), r"\1"),                       # pandoc spans, anchors
    (re.compile(r"\{[#.][^}]*\}"), ""),                                  # pandoc attributes
    (re.compile(r"<br\s*/?>", re.IGNORECASE), " "),
    (re.compile(r"</?(?:sup|sub|span|u|i|em|b|strong|a)\b[^>]*>", re.IGNORECASE), ""),
    (re.compile(r"~~(.+?)~~"), r"\1"),                                    # strikeout
    (re.compile(r"\^([^^\s]+)\^"), r"\1"),                                # superscript 2^nd^
    (re.compile(r"~([^~\s]+)~"), r"\1"),                                   # subscript
    (re.compile(r"`([^`]*)`"), r"\1"),                                     # code
    (re.compile(r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])"), r"\1"),  # *italic*
    (re.compile(r"(?<![\w_])_(?![\s_])(.+?)(?<![\s_])_(?![\w_])"), r"\1"),      # _italic_
)
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")


def markdown_segments(text: str) -> list[tuple[str, bool]]:
    """Inline markdown as (text, bold) runs of plain text: "**SCP:** a \\[1\\]" →
    [("SCP:", True), (" a [1]", False)]."""
    text = _ESCAPED.sub(lambda m: chr(0xE000 + ord(m.group(1))), text.replace("\xa0", " ").replace("\u2011", "-"))
    # pandoc's "smart" dashes: "--" is an en dash, "---" an em dash.
    text = re.sub(r"(?<![-|+])---(?![-|+])", "—", re.sub(r"(?<![-|+])--(?![-|+])", "–", text))
    for pattern, replacement in _INLINE_RULES:
        text = pattern.sub(replacement, text)
    segments, at = [], 0
    for match in _BOLD.finditer(text):
        segments.append((text[at:match.start()], False))
        segments.append((match.group(1) or match.group(2), True))
        at = match.end()
    segments.append((text[at:], False))
    restore = re.compile("[\ue000-\ue07f]")     # then HTML entities, as docling writes "&amp;"
    return [(html.unescape(restore.sub(lambda m: chr(ord(m.group(0)) - 0xE000), t)), bold)
            for t, bold in segments if t]


def markdown_text(text: str) -> str:
    """Inline markdown reduced to its plain text."""
    return "".join(t for t, _ in markdown_segments(text))


def _table_rows(block: list[str]) -> list[str]:
    """Grid ("+---+" borders, cells wrapped over several lines) or pipe tables as
    "cell | cell" rows; merged cells that repeat are kept once."""
    rows: list[list[str]] = []
    current: list[list[str]] = []
    for line in block + ["+"]:
        stripped = line.strip()
        if stripped.startswith("+") or re.fullmatch(r"\|?[\s:|-]+\|?", stripped):
            if current:
                rows.append([" ".join(" ".join(part).split()) for part in zip(*current)])
                current = []
            continue
        cells = [c.strip() for c in stripped.strip("|").split("|")]
        if current and len(cells) != len(current[0]):
            rows.append([" ".join(" ".join(part).split()) for part in zip(*current)])
            current = []
        current.append(cells)
        if not block[0].strip().startswith("+"):      # a pipe table: one line, one row
            rows.append(cells)
            current = []
    out = []
    for row in rows:
        cells = []
        for cell in (markdown_text(c).strip() for c in row):
            if cell and (not cells or cells[-1] != cell):
                cells.append(cell)
        if cells:
            out.append(" | ".join(cells))
    return out


def markdown_blocks(text: str) -> list[tuple[int, str]]:
    """Markdown as (heading level, text) for headings and (0, text) for the lines of the
    body: a paragraph's soft-wrapped lines joined, split into entries (``split_entries``);
    a line with a tab, a list item, a hard break or a table row ends a line of its own."""
    out: list[tuple[int, str]] = []
    buffer: list[str] = []
    table: list[str] = []
    fenced = False

    def flush() -> None:
        if buffer:
            joined = " ".join(buffer).replace("\n ", "\n").strip()
            out.extend((0, line) for line in split_entries(markdown_segments(joined)))
            buffer.clear()
        if table:
            out.extend((0, row) for row in _table_rows(table))
            table.clear()

    for raw in text.splitlines():
        if _FENCE.match(raw):
            flush()
            fenced = not fenced
            continue
        if fenced:
            if raw.strip():
                out.append((0, raw.rstrip()))
            continue
        line = re.sub(r"^(?:\s{0,3}>\s?)+", "", raw)       # block quotes
        stripped = line.strip()
        heading = _ATX.match(stripped)
        if not stripped:
            flush()
        elif heading:
            flush()
            out.append((len(heading.group(1)), markdown_text(heading.group(2)).strip()))
        elif stripped[0] in "+|" and (table or stripped.startswith(("+-", "+=", "|"))):
            if buffer:
                flush()
            table.append(stripped)
        elif "\t" in stripped or _LIST_ITEM.match(line):
            flush()
            buffer.append(" ".join(stripped.split(" ")) if "\t" in stripped else " ".join(stripped.split()))
            if "\t" in stripped:
                flush()
        else:
            if table:
                flush()
            # A hard break ("\\" or two spaces at the end) stays inside its paragraph, as a
            # line break does inside a .docx paragraph.
            if stripped.endswith("\\") and not stripped.endswith("\\\\"):
                stripped = stripped[:-1].rstrip() + "\n"
            elif raw.endswith("  "):
                stripped += "\n"
            buffer.append(stripped)
    flush()
    return out


def _read_markdown(path: Path) -> tuple[str, list[Section], str, dict]:
    """Title, numbered sections, the text before the first clause (the cover page) and the
    ``spec_id:`` / ``version:`` / ``release:`` lines declared above it."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"spec {path}: cannot be read as UTF-8 text ({exc})") from None
    declared: dict[str, str] = {}
    sections: list[Section] = []
    title = ""
    front: list[str] = []
    skipping = False            # inside a table of contents
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":      # YAML front matter
        end = next((i for i, ln in enumerate(lines[1:], 1) if ln.strip() in ("---", "...")), 0)
        for ln in lines[1:end]:
            match = _META.match(ln.strip())
            if match:
                declared[match.group(1).lower()] = match.group(2).strip().strip("\"'")
        lines = lines[end + 1:]
    while lines and (not lines[0].strip() or _META.match(lines[0].strip())):   # "spec_id: ..." lines
        match = _META.match(lines.pop(0).strip())
        if match:
            declared[match.group(1).lower()] = match.group(2).strip()
    for level, line in markdown_blocks("\n".join(lines)):
        if level:
            section_id, heading = split_heading(line)
            numbered = any(CLAUSE_NUMBER.match(s.section_id) for s in sections)
            if section_id:
                key = section_key(section_id)
                sections.append(Section(section_id, heading, len(key) if key and key[0] < 1000 else 1))
                skipping = False
            elif heading.lower() in _TOC_TITLES:
                skipping = True
            elif not title and not sections and heading.lower() != "foreword":
                title = heading
            elif numbered:
                continue  # an unnumbered sub-heading ("A", "B" in 21.905) stays in its clause
            else:
                sections.append(Section(heading.lower(), heading, level))
                skipping = False
        elif skipping:
            continue
        elif not sections:
            front.append(line)
        else:
            sections[-1].lines.append(line)
    return title, sections, "\n".join(front), declared


def _markdown_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in MARKDOWN_SUFFIXES)
    if not files:
        raise InputError(f"spec {folder}: a folder of clause files, but it holds no .md files")
    return files


def _read_markdown_folder(folder: Path) -> tuple[str, list[Section], str, dict]:
    """One spec split into one .md file per clause (any file names): each file read on its
    own, then the files put in the order of their first clause number; files without a
    numbered clause (cover page, foreword) go first."""
    parts = []
    for path in _markdown_files(folder):
        title, sections, front, names = _read_markdown(path)
        first = next((section_key(s.section_id) for s in sections if CLAUSE_NUMBER.match(s.section_id)), ())
        parts.append((bool(first), first, path.name, title, sections, front, names))
    parts.sort(key=lambda p: p[:3])
    title = next((p[3] for p in parts if p[3]), "")
    declared: dict[str, str] = {}
    for part in reversed(parts):
        declared.update(part[6])
    return (title, [s for p in parts for s in p[4]],
            "\n".join(p[3] + "\n" + p[5] for p in parts), declared)


def load_spec(path: str | Path) -> SpecDocument:
    """Read one specification (a file, or a folder of one spec's clause files) into a
    ``SpecDocument`` (sections in document order)."""
    path = Path(path)
    if path.is_dir():
        kind = "folder"
    elif not path.is_file():
        raise InputError(f"spec {path}: no such file")
    else:
        kind = path.suffix.lower()
        if kind == ".markdown":
            kind = ".md"
        if kind not in SUFFIXES:
            raise InputError(f"spec {path}: unsupported type {kind!r} (expected {', '.join(SUFFIXES)} "
                             "or a folder of .md clause files)")
    declared: dict[str, str] = {}
    if kind == ".docx":
        title, sections, front = _read_docx(path)
    elif kind == ".pdf":
        title, sections, front = _read_pdf(path)
    elif kind == ".md":
        title, sections, front, declared = _read_markdown(path)
    else:
        title, sections, front, declared = _read_markdown_folder(path)
    if not any(CLAUSE_NUMBER.match(s.section_id) for s in sections):
        raise InputError(f"spec {path}: no numbered clauses found (is it a 3GPP specification?)")
    named, named_version = spec_id_from_name(path.name)
    if not named and kind == "folder":
        for file in _markdown_files(path):
            named, named_version = spec_id_from_name(file.name)
            if named:
                break
    stated, stated_version, stated_release = header_info(f"{title}\n{front}")
    spec, _, declared_version = declared.get("spec_id", "").partition("@")  # "ts_23.501@16.4.0" too
    spec = spec or named or stated or re.sub(r"[^a-z0-9_.]+", "_", path.stem.lower())
    own_header = stated == spec             # the cover page is this spec's, not one it cites
    version = declared.get("version") or declared_version or \
        (stated_version if own_header else "") or named_version
    release = declared.get("release") or (stated_release if own_header else "") or release_of(version)
    header_line = next((ln.strip() for ln in front.splitlines() if _HEADER.search(ln)), "")
    return SpecDocument(spec_id=versioned_spec_id(spec, version), title=title or header_line or path.stem,
                        version=version, release=release, source=path.name, sections=sections)


def definition_clauses(doc: SpecDocument) -> list[Section]:
    """Clause 3 and its sub-clauses (and clause 4 of TR 21.905); a spec without clause 3
    is refused, since the term dictionary is built from it."""
    wanted = ("3",) + (("4",) if spec_number(doc.spec_id) == "tr_21.905" else ())
    found = [s for s in doc.sections if s.section_id.split(".")[0] in wanted and s.section_id[:1].isdigit()]
    if not any(s.section_id == "3" or s.section_id.startswith("3.") for s in found):
        raise InputError(f"spec {doc.source}: has no clause 3 (definitions and abbreviations)")
    return found
