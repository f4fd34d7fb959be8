"""Reading corpora: BEIR files (corpus.jsonl, queries.jsonl, qrels/*.tsv; TREC qrels too) and folders of
documents (.md, .txt) that are cut into chunks along their headings."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from .errors import InputError
from .inputs import first_of_each, lines, read_text

DOCUMENT_SUFFIXES = (".md", ".txt")


@dataclass(frozen=True)
class Doc:
    """One retrievable unit: a BEIR document or a chunk of a document file."""

    doc_id: str
    text: str
    title: str = ""
    source: str = ""

    @property
    def full_text(self) -> str:
        """Title and body, as indexed (BEIR convention: title then text)."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def to_dict(self) -> dict:
        return asdict(self)


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
    sections: list[tuple[str, list[str]]] = []
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


def load_document_folder(path: str | Path, *, max_chars: int = 1200) -> list[Doc]:
    """Read every .md/.txt file below ``path`` (sorted, so ids are stable) into chunks."""
    root = _require_file(Path(path), "corpus")
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in DOCUMENT_SUFFIXES)
    if not files:
        raise InputError(f"corpus {root}: no {'/'.join(DOCUMENT_SUFFIXES)} documents in this folder")
    docs: list[Doc] = []
    for file in files:
        docs.extend(chunk_markdown(read_text(file, "corpus"), source=file.relative_to(root).as_posix(),
                                   max_chars=max_chars))
    # Chunk ids are "<path>#<n>", distinct by construction; checked all the same.
    first_of_each(docs, lambda d: d.doc_id, lambda d: d.source, f"corpus {root}", None, "chunk id")
    return docs


def load_corpus(path: str | Path, dedupe: str | None = None) -> list[Doc]:
    """A BEIR ``corpus.jsonl`` or a folder of documents, whichever ``path`` is; ``dedupe``
    as in ``load_beir_corpus``."""
    path = Path(path)
    if path.is_dir():
        return load_document_folder(path)
    return load_beir_corpus(path, dedupe)
