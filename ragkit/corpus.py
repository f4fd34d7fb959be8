"""Reading corpora: BEIR files (corpus.jsonl, queries.jsonl, qrels/*.tsv; TREC qrels too) and
documents (.md, .markdown, .txt, .docx, .pdf), one file or a folder of them, cut into chunks
along their headings.

A chunk's id is ``<path relative to the folder>#<n>`` and its title the heading path
("Report > 2 Methods"); a chunk of a PDF also says on which pages it stands (``Doc.pages``,
and "(p. 3)" at the end of its title, which answers cite). A folder's files of other types are
passed over and reported (``read_corpus(...).skipped``; ``load_corpus`` logs one warning line).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from .errors import InputError
from .inputs import first_of_each, lines, read_text
from .text import cut_to_length

if TYPE_CHECKING:
    from .runtime.ray_engine import RayEngine

DOCUMENT_SUFFIXES = (".md", ".txt")                          # cut along "#" headings
DOCUMENT_TYPES = (".md", ".markdown", ".txt", ".docx", ".pdf")  # every document type read
BEIR_SUFFIXES = (".jsonl", ".json")
SKIPPED_SHOWN = 5          # skipped files named in the warning line (the rest counted)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Doc:
    """One retrievable unit: a BEIR document or a chunk of a document file. ``pages``: the
    PDF pages (1-based) a chunk of a PDF stands on; empty for every other kind."""

    doc_id: str
    text: str
    title: str = ""
    source: str = ""
    pages: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.pages, tuple):         # read back from JSON as a list
            object.__setattr__(self, "pages", tuple(self.pages))

    @property
    def full_text(self) -> str:
        """Title and body, as indexed (BEIR convention: title then text)."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def to_dict(self) -> dict:
        """The fields as JSON; ``pages`` only when there are some, so that the documents of
        a corpus without PDFs are written as before. (Written out: ``dataclasses.asdict``
        deep-copies every field, a third of the time a million-document index took to save.)"""
        data: dict = {"doc_id": self.doc_id, "text": self.text, "title": self.title, "source": self.source}
        if self.pages:
            data["pages"] = list(self.pages)
        return data


@dataclass(frozen=True)
class Skipped:
    """A file of a corpus folder that was not read, and why."""

    path: str          # relative to the folder
    reason: str

    def to_dict(self) -> dict:
        return {"path": self.path, "reason": self.reason}


@dataclass
class Corpus:
    """What ``read_corpus`` read: the documents (chunks), and the files passed over."""

    docs: list[Doc]
    skipped: list[Skipped] = field(default_factory=list)


def _require_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise InputError(f"{what} {path}: no such file or folder")
    if path.is_file():
        try:
            with path.open("rb") as handle:
                handle.read(1)
        except OSError as exc:
            raise InputError(f"{what} {path}: cannot be read ({exc.strerror})") from exc
    return path


def read_jsonl(path: Path, what: str) -> Iterable[tuple[int, dict]]:
    """(line number, object) for every non-blank line (a byte-order mark accepted); a line
    that is not a JSON object, or not UTF-8, is a one-line InputError naming the file and line."""
    for lineno, line in lines(path, what):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{what} {path}:{lineno}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{what} {path}:{lineno}: expected a JSON object")
        yield lineno, obj


def load_beir_corpus(path: str | Path, dedupe: str | None = None) -> list[Doc]:
    """Read a BEIR ``corpus.jsonl``: one ``{"_id", "title", "text"}`` object per line.

    Two documents with the same ``_id`` are an error naming it and both lines, unless
    ``dedupe`` says which to keep (``first`` or ``last``, at the place of the first)."""
    path = _require_file(Path(path), "corpus")
    docs = []
    for lineno, obj in read_jsonl(path, "corpus"):
        if "_id" not in obj or "text" not in obj:
            raise InputError(f"corpus {path}:{lineno}: needs the fields '_id' and 'text'")
        docs.append((lineno, Doc(doc_id=str(obj["_id"]), text=str(obj["text"]),
                                 title=str(obj.get("title") or ""), source=path.name)))
    if not docs:
        raise InputError(f"corpus {path}: holds no documents")
    kept = first_of_each(docs, lambda d: d[1].doc_id, lambda d: f"line {d[0]}",
                         f"corpus {path}", dedupe, "_id")
    return [doc for _, doc in kept]


def load_beir_queries(path: str | Path) -> dict[str, str]:
    """Read a BEIR ``queries.jsonl`` into ``{query_id: text}``."""
    path = _require_file(Path(path), "queries")
    queries = {}
    for lineno, obj in read_jsonl(path, "queries"):
        if "_id" not in obj or "text" not in obj:
            raise InputError(f"queries {path}:{lineno}: needs the fields '_id' and 'text'")
        queries[str(obj["_id"])] = str(obj["text"])
    return queries


def load_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read relevance judgements: a BEIR qrels TSV (query-id, corpus-id, score; header
    optional) or a TREC qrels file (query-id, iteration, doc-id, relevance, separated by
    spaces or tabs; the iteration column is ignored). Each line's column count says which."""
    path = _require_file(Path(path), "qrels")
    qrels: dict[str, dict[str, int]] = {}
    for lineno, text in lines(path, "qrels"):
        row = text.split("\t") if "\t" in text else text.split()
        row = [cell.strip() for cell in row]
        if not any(row) or (lineno == 1 and row[0] == "query-id"):
            continue
        if len(row) == 4:                      # TREC: qid, iteration, docid, relevance
            query, doc, score_text = row[0], row[2], row[3]
        elif len(row) == 3:                    # BEIR: query-id, corpus-id, score
            query, doc, score_text = row
        else:
            raise InputError(f"qrels {path}:{lineno}: expected query-id, corpus-id, score (BEIR) "
                             "or query-id, iteration, doc-id, relevance (TREC)")
        try:
            score = int(score_text)
        except ValueError:
            raise InputError(f"qrels {path}:{lineno}: score {score_text!r} is not an integer") from None
        qrels.setdefault(query, {})[doc] = score
    if not qrels:
        raise InputError(f"qrels {path}: holds no judgements")
    return qrels


_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")


def chunk_markdown(text: str, *, source: str, max_chars: int = 1200) -> list[Doc]:
    """Cut a document along its headings; a long section is split on blank lines.

    Each chunk's title is its heading path ("Máy phay > Vận hành"), so a chunk read alone
    still says where it comes from. Chunk ids are ``<source>#<n>``.
    """
    sections: list[tuple[str, str]] = []
    path: list[str] = []
    lines: list[str] = []

    def flush() -> None:
        body = "\n".join(lines).strip()
        if body:
            sections.append((" > ".join(path), body))
        lines.clear()

    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            path[:] = path[: level - 1] + [match.group(2)]
        else:
            lines.append(line)
    flush()

    chunks: list[Doc] = []
    for title, body in sections:
        for part in _split_paragraphs(body, max_chars):
            chunks.append(Doc(doc_id=f"{source}#{len(chunks) + 1}", text=part,
                              title=title, source=source))
    return chunks


def pack(pieces: Iterable[str], max_chars: int, joiner: str = "\n\n") -> list[str]:
    """Join consecutive pieces while the result stays within ``max_chars`` (a piece that is
    longer on its own stands alone)."""
    parts, current = [], ""
    for piece in pieces:
        if current and len(current) + len(joiner) + len(piece) > max_chars:
            parts.append(current)
            current = piece
        else:
            current = f"{current}{joiner}{piece}" if current else piece
    if current:
        parts.append(current)
    return parts


def _split_paragraphs(body: str, max_chars: int) -> list[str]:
    return [body] if len(body) <= max_chars else pack(re.split(r"\n\s*\n", body), max_chars)


# --------------------------------------------------------------------------- .docx and .pdf
class NoText(InputError):
    """A document that was read but holds no text (a scanned PDF): skipped in a folder, an
    error on its own."""


@dataclass
class _Section:
    """A heading path and its paragraphs, each a list of lines with the PDF page (1-based;
    0 for a .docx) that each line stands on."""

    title: str
    paragraphs: list[list[tuple[str, int]]] = field(default_factory=list)


def _heading_path(stack: list[tuple[int, str]], level: int, text: str) -> list[tuple[int, str]]:
    """The headings above a new one of ``level``, then it."""
    return [entry for entry in stack if entry[0] < level] + [(level, text)]


def _docx_level(style: str) -> int | None:
    """0 for Word's "Title", N for "Heading N"; None for a paragraph that is not a heading."""
    if style == "Title":
        return 0
    if style.startswith("Heading"):
        last = style.split()[-1]
        return int(last) if last.isdigit() else 1
    return None


def _docx_sections(path: Path) -> list[_Section]:
    """A .docx as sections: a heading from Word's "Title" and "Heading N" styles starts one
    (its title the path of headings above it); paragraphs in body order, table rows as
    "cell | cell" lines."""
    import zipfile

    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    from .documents import docx_segments, docx_text

    try:
        document = docx.Document(str(path))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise InputError(f"corpus {path}: not a readable .docx ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())})") from None
    except Exception as exc:  # python-docx raises PackageNotFoundError for non-OOXML files
        raise InputError(f"corpus {path}: not a readable .docx ({type(exc).__name__})") from None
    stack: list[tuple[int, str]] = []
    sections = [_Section("")]
    for element in document.element.body.iterchildren():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "p":
            text = " ".join("".join(t for t, _ in docx_segments(element)).split())
            if not text:
                continue
            para = Paragraph(element, document)
            style = para.style.name if para.style is not None else ""
            level = _docx_level(style)
            if style.lower().startswith("toc "):
                continue                       # a table of contents' entries ("toc 1" ...)
            if level is None:
                sections[-1].paragraphs.append([(text, 0)])
            else:
                stack = _heading_path(stack, level, text)
                sections.append(_Section(" > ".join(t for _, t in stack)))
        elif tag == "tbl":
            for row in Table(element, document).rows:
                cells: list[str] = []
                for cell in row.cells:
                    value = " ".join(docx_text(cell._tc).split())
                    if value and (not cells or cells[-1] != value):  # merged cells repeat
                        cells.append(value)
                if cells:
                    sections[-1].paragraphs.append([(" | ".join(cells), 0)])
    if not any(s.paragraphs for s in sections):
        raise NoText(f"corpus {path}: the .docx holds no text")
    return sections


def _pdf_sections(path: Path) -> list[_Section]:
    """A PDF as sections. Page headers and footers (lines repeated on many pages) and table
    of contents lines are left out, and wrapped lines are joined into paragraphs, as for 3GPP
    specifications. Numbered headings ("1 Introduction", "2.1 Data") that continue the
    numbering from 1 start sections; text before the first one, and a PDF without them, is
    cut page by page."""
    from .documents import (is_body_line, is_clause_heading, joins_paragraph, open_pdf, page_furniture,
                               section_key, split_heading)

    _, pages = open_pdf(path, "corpus")
    if not any(line.strip() for lines in pages for line in lines):
        raise NoText(f"corpus {path}: the PDF has no extractable text (a scan?)")
    furniture = page_furniture(pages)
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    prev: tuple[float, ...] = ()
    for page_no, page_lines in enumerate(pages, 1):
        if not stack:
            sections.append(_Section(""))          # no heading yet: a section per page
        for raw in page_lines:
            line = raw.strip()
            if not is_body_line(line, furniture):
                continue
            line = " ".join(line.split())
            number, heading = split_heading(line)
            key = section_key(number) if number else ()
            if is_clause_heading(key, heading, prev):
                annex = len(key) == 1 and key[0] >= 1000          # "Annex B (normative): Title"
                named = (f"Annex {number}" + ("" if heading == f"Annex {number}" else f" {heading}")) if annex \
                    else f"{number} {heading}"
                stack = _heading_path(stack, len(key), named)
                sections.append(_Section(" > ".join(t for _, t in stack)))
                prev = key
                continue
            paragraphs = sections[-1].paragraphs
            if joins_paragraph(paragraphs[-1][-1][0] if paragraphs else None, line):
                paragraphs[-1].append((line, page_no))
            else:
                paragraphs.append([(line, page_no)])
    return sections


def _pieces(paragraph: list[tuple[str, int]], max_chars: int) -> list[tuple[str, set[int]]]:
    """A paragraph's lines joined, cut under ``max_chars`` (``text.cut_to_length``), each piece with the
    pages of the lines it holds part of."""
    text = " ".join(line for line, _ in paragraph)
    spans, at = [], 0
    for line, page in paragraph:
        spans.append((at, at + len(line), page))
        at += len(line) + 1
    pieces, at = [], 0
    for piece in cut_to_length(text, max_chars):
        begin = text.index(piece, at)
        at = begin + len(piece)
        pieces.append((piece, {page for start, end, page in spans if page and start < at and end > begin}))
    return pieces


def page_label(pages: Iterable[int]) -> str:
    """ "p. 3" or "pp. 3-4" (first to last); "" without pages."""
    pages = sorted(pages)
    if not pages:
        return ""
    return f"p. {pages[0]}" if pages[0] == pages[-1] else f"pp. {pages[0]}-{pages[-1]}"


def _chunk_sections(sections: Iterable[_Section], *, source: str, max_chars: int = 1200) -> list[Doc]:
    """Sections into chunks as ``chunk_markdown`` cuts a Markdown document: a section's
    paragraphs packed while under ``max_chars`` (a longer paragraph cut at sentence ends),
    ids ``<source>#<n>``, titles the heading path; a chunk of a PDF also gets its pages, in
    ``pages`` and at the end of its title ("2 Methods (p. 3)"; "p. 3" alone before any
    heading)."""
    chunks: list[Doc] = []
    for section in sections:
        part, pages = "", set[int]()
        parts: list[tuple[str, set[int]]] = []
        for paragraph in section.paragraphs:
            for piece, on in _pieces(paragraph, max_chars):
                if part and len(part) + 1 + len(piece) > max_chars:
                    parts.append((part, pages))
                    part, pages = "", set()
                part = f"{part}\n{piece}" if part else piece
                pages = pages | on
        if part:
            parts.append((part, pages))
        for text, on in parts:
            label = page_label(on)
            title = f"{section.title} ({label})" if section.title and label else section.title or label
            chunks.append(Doc(doc_id=f"{source}#{len(chunks) + 1}", text=text, title=title, source=source,
                              pages=tuple(sorted(on))))
    return chunks


# --------------------------------------------------------------------------- files and folders
def _type_of(path: Path) -> str:
    suffix = path.suffix.lower()
    return ".md" if suffix == ".markdown" else suffix


def load_document(path: str | Path, *, source: str | None = None, max_chars: int = 1200) -> list[Doc]:
    """One document file (.md, .markdown, .txt, .docx, .pdf) into chunks; ``source`` (the
    chunk ids' prefix) defaults to the file's name. A document with no text gives no chunk
    (a .docx or a PDF without text raises ``NoText``)."""
    path = Path(path)
    source = path.name if source is None else source
    kind = _type_of(path)
    if kind in DOCUMENT_SUFFIXES:
        return chunk_markdown(read_text(path, "corpus"), source=source, max_chars=max_chars)
    if kind == ".docx":
        return _chunk_sections(_docx_sections(path), source=source, max_chars=max_chars)
    if kind == ".pdf":
        return _chunk_sections(_pdf_sections(path), source=source, max_chars=max_chars)
    raise InputError(f"corpus {path}: not a document type ragkit reads ({', '.join(DOCUMENT_TYPES)})")


def _skip_reason(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in BEIR_SUFFIXES:
        return f"{suffix}: a BEIR corpus file is read on its own, not inside a folder"
    if suffix == ".doc":
        return "unsupported type .doc (the Word 97-2003 format; save it as .docx)"
    return f"unsupported type {suffix}" if suffix else "unsupported type (no extension)"


def _hidden(relative: Path) -> bool:
    """A dot file or a file in a dot folder (.DS_Store, .git/...), passed over unreported."""
    return any(part.startswith(".") for part in relative.parts)


def _skipped_names(skipped: list[Skipped]) -> str:
    """The first ``SKIPPED_SHOWN`` skipped files with their reasons, then a count."""
    shown = ", ".join(f"{s.path} ({s.reason})" for s in skipped[:SKIPPED_SHOWN])
    return shown + (f", and {len(skipped) - SKIPPED_SHOWN} more" if len(skipped) > SKIPPED_SHOWN else "")


def skipped_line(where: str | Path, skipped: list[Skipped]) -> str:
    """One line naming the skipped files (the first ``SKIPPED_SHOWN``, then a count) and why."""
    files = "file" if len(skipped) == 1 else "files"
    return (f"corpus {where}: skipped {len(skipped)} {files} (ragkit reads {', '.join(DOCUMENT_TYPES)}): "
            f"{_skipped_names(skipped)}")


def _read_files(jobs: list[tuple[str, str, int]]) -> list[list[Doc] | None]:
    """Each (file, its path in the corpus, chunk size) job's chunks; None for a file with no text."""
    out: list[list[Doc] | None] = []
    for file, relative, max_chars in jobs:
        try:
            out.append(load_document(file, source=relative, max_chars=max_chars))
        except NoText:
            out.append(None)
    return out


def read_document_folder(path: str | Path, *, max_chars: int = 1200, engine: RayEngine | None = None) -> Corpus:
    """Every document below ``path`` (.md, .markdown, .txt, .docx, .pdf; sorted, so ids are
    stable) into chunks, and the files passed over: other types, and a .docx or PDF with no
    text (a scan). Dot files and dot folders are passed over without a word. A folder with
    no document is an error naming it. ``engine``: a ``RayEngine`` whose workers read and
    chunk the files (the chunks are the same, in the same order)."""
    root = _require_file(Path(path), "corpus")
    found = sorted(root.rglob("*"))
    files = [p for p in found if p.suffix.lower() in DOCUMENT_TYPES]
    skipped = [Skipped(p.relative_to(root).as_posix(), _skip_reason(p)) for p in found
               if p.suffix.lower() not in DOCUMENT_TYPES and p.is_file() and not _hidden(p.relative_to(root))]
    docs: list[Doc] = []
    read = 0
    jobs = [(str(file), file.relative_to(root).as_posix(), max_chars) for file in files]
    if engine is None:
        chunked = _read_files(jobs)
    else:        # the workers' working folder is not this process's
        chunked = engine.map(_read_files, [(str(Path(file).resolve()), relative, size)
                                           for file, relative, size in jobs], stage="read", unit="file", batch=8)
    for (file, relative, _), chunks in zip(jobs, chunked):
        if chunks is None:
            skipped.append(Skipped(relative, "no extractable text (a scan?)" if _type_of(Path(file)) == ".pdf"
                                   else "no text"))
        else:
            docs.extend(chunks)
            read += 1
    skipped.sort(key=lambda s: s.path)
    if not read:
        what = "no document with text" if files else f"no {'/'.join(DOCUMENT_TYPES)} documents"
        also = f"; skipped {_skipped_names(skipped)}" if skipped else ""
        raise InputError(f"corpus {root}: {what} in this folder{also}")
    # Chunk ids are "<path>#<n>", distinct by construction; checked all the same.
    first_of_each(docs, lambda d: d.doc_id, lambda d: d.source, f"corpus {root}", None, "chunk id")
    return Corpus(docs, skipped)


def _warn(where: str | Path, corpus: Corpus) -> list[Doc]:
    if corpus.skipped:
        log.warning(skipped_line(where, corpus.skipped))
    return corpus.docs


def load_document_folder(path: str | Path, *, max_chars: int = 1200) -> list[Doc]:
    """``read_document_folder``'s chunks; the files it passed over are logged as one
    warning line (logger ``ragkit.corpus``, on stderr unless logging is set up otherwise)."""
    return _warn(path, read_document_folder(path, max_chars=max_chars))


def _looks_like_json_lines(path: Path) -> bool:
    """Whether a file of no known type starts as JSON lines do (or is empty): read as BEIR."""
    try:
        with path.open("rb") as handle:
            head = handle.read(1024)
    except OSError:
        return True                  # the BEIR reader says why it cannot be read
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] in (b"", b"{")


def read_corpus(path: str | Path, dedupe: str | None = None, *, engine: RayEngine | None = None) -> Corpus:
    """The corpus at ``path``: a folder of documents (``read_document_folder``, its files
    read by ``engine``'s workers when given), one document file (.md, .markdown, .txt,
    .docx, .pdf), or a BEIR ``corpus.jsonl`` (a .jsonl or .json file, or any other file that
    starts with a JSON object); ``dedupe`` as in ``load_beir_corpus``."""
    path = Path(path)
    if path.is_dir():
        return read_document_folder(path, engine=engine)
    if path.is_file() and path.suffix.lower() in DOCUMENT_TYPES:
        docs = load_document(path)
        if not docs:
            raise InputError(f"corpus {path}: holds no text")
        return Corpus(docs)
    if path.is_file() and path.suffix.lower() not in BEIR_SUFFIXES and not _looks_like_json_lines(path):
        raise InputError(f"corpus {path}: not a type ragkit reads (documents: {', '.join(DOCUMENT_TYPES)}, "
                         "or a folder of them; a BEIR corpus.jsonl)")
    return Corpus(load_beir_corpus(path, dedupe))


def load_corpus(path: str | Path, dedupe: str | None = None) -> list[Doc]:
    """``read_corpus``'s documents; the files a folder's reading passed over are logged as
    one warning line (as ``load_document_folder``)."""
    return _warn(path, read_corpus(path, dedupe))
