"""An index's documents, read from disk only when asked for.

An index keeps its documents compressed in blocks (``docs.z``): each block is the JSON lines
of up to 64 documents (about 16 KB of text), zlib-compressed on its own, and ``docs.blocks.npy``
says where each block starts (its first document and its byte offset). Loading maps both
files and parses nothing, so a million documents load in a fraction of a second; a search
inflates only the blocks of the hits it returns (tens of microseconds each), and the texts
take a third or less of their size.

``DocsFile`` reads the plain ``docs.jsonl`` an index of an earlier ragkit holds (one JSON
object per line, found by one numpy pass over the mapped file).

A block or line that is damaged, not UTF-8 or not a document is a one-line
``IndexFormatError`` naming the file and the document, raised when it is read.
"""

from __future__ import annotations

import json
import mmap
import zlib
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Iterator, overload

import numpy as np

from ..corpus import Doc
from ..errors import IndexFormatError

BLOCKS_FILE = "docs.z"
BLOCK_TABLE = "docs.blocks.npy"
# Beside the blocks: every document's id in order (a JSON array), and each title with its
# first document ([[title, index], ...]): what finding a document by id or by title reads,
# instead of inflating every block.
DOC_IDS = "docs.ids.json"
DOC_TITLES = "docs.titles.json"
BLOCK_DOCS = 64              # documents in a block at most
BLOCK_BYTES = 16 * 1024      # a block closes once its JSON lines reach this size
LEVEL = 3                    # zlib's level: within 10% of its best size here, twice as fast as 6


class _LazyDocs(Sequence):
    """A read-only sequence of documents parsed one at a time, when asked for."""

    shown: Path

    def __init__(self) -> None:
        self._doc = lru_cache(maxsize=4096)(self._read)

    def __len__(self) -> int:
        raise NotImplementedError

    def _read(self, i: int) -> Doc:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> Doc: ...

    @overload
    def __getitem__(self, i: slice) -> list[Doc]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"document {i} of {n}")
        return self._doc(int(i))

    def __eq__(self, other) -> bool:
        """Equal to a list (or another sequence) of the same documents."""
        return isinstance(other, Sequence) and not isinstance(other, (str, bytes)) and \
            len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = None     # type: ignore[assignment]

    def __iter__(self) -> Iterator[Doc]:
        for i in range(len(self)):
            yield self[i]

    def check(self) -> None:
        """Parse the first and last documents (a foreign or damaged file fails at load, not
        at the first search that reaches it)."""
        for i in {0, len(self) - 1} if len(self) else ():
            self[i]

    def _parse(self, raw: bytes, where: str) -> Doc:
        try:
            return Doc(**json.loads(raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise IndexFormatError(f"index {self.shown}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                                   f"{where})") from None
        except json.JSONDecodeError as exc:
            raise IndexFormatError(f"index {self.shown}: not JSON ({exc.msg} {where})") from None
        except TypeError as exc:
            raise IndexFormatError(f"index {self.shown}: not a ragkit index file "
                                   f"({where.split(' ', 1)[1]}: {exc})") from None


def _mapped(path: Path, shown: Path) -> mmap.mmap | None:
    try:
        with path.open("rb") as handle:
            size = path.stat().st_size
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else None
    except OSError as exc:
        raise IndexFormatError(f"index {shown}: cannot be read ({exc.strerror or exc})") from None


class DocBlocks(_LazyDocs):
    """The documents of a folder's ``docs.z`` and ``docs.blocks.npy``."""

    def __init__(self, folder: str | Path, shown: str | Path | None = None):
        super().__init__()
        self.folder = Path(folder)
        self.shown = Path(shown) / BLOCKS_FILE if shown is not None else self.folder / BLOCKS_FILE
        self._map = _mapped(self.folder / BLOCKS_FILE, self.shown)
        try:
            table = np.load(self.folder / BLOCK_TABLE, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"index {self.shown.with_name(BLOCK_TABLE)}: cannot be read "
                                   f"({getattr(exc, 'strerror', None) or exc})") from None
        size = len(self._map) if self._map is not None else 0
        if table.ndim != 2 or table.shape[1:] != (2,) or table.shape[0] < 1 or tuple(table[0]) != (0, 0) \
                or int(table[-1, 1]) != size or np.any(np.diff(table, axis=0) <= 0):
            raise IndexFormatError(f"index {self.shown.with_name(BLOCK_TABLE)}: does not describe "
                                   f"{self.shown.name} ({size} bytes); rebuild it with 'ragkit index build'")
        self._first = np.ascontiguousarray(table[:, 0])
        self._offset = np.ascontiguousarray(table[:, 1])
        self._block = lru_cache(maxsize=64)(self._inflate)

    def __len__(self) -> int:
        return int(self._first[-1])

    def _inflate(self, j: int) -> list[bytes]:
        assert self._map is not None
        try:
            lines = zlib.decompress(self._map[self._offset[j]:self._offset[j + 1]]).split(b"\n")[:-1]
        except zlib.error as exc:
            raise IndexFormatError(f"index {self.shown}: block {j + 1} is damaged ({exc})") from None
        if len(lines) != self._first[j + 1] - self._first[j]:
            raise IndexFormatError(f"index {self.shown}: block {j + 1} holds {len(lines)} documents, "
                                   f"its table {self._first[j + 1] - self._first[j]}")
        return lines

    def _read(self, i: int) -> Doc:
        j = int(np.searchsorted(self._first, i, side="right")) - 1
        return self._parse(self._block(j)[i - int(self._first[j])], f"in document {i + 1}")

    def files(self) -> tuple[Path, ...]:
        names = [self.folder / n for n in (DOC_IDS, DOC_TITLES) if (self.folder / n).is_file()]
        return (self.folder / BLOCKS_FILE, self.folder / BLOCK_TABLE, *names)

    def ids(self) -> list[str] | None:
        """Every document's id, in order, from ``docs.ids.json`` (None: an index written
        before it was kept)."""
        return self._side_file(DOC_IDS)

    def titles(self) -> list[tuple[str, int]] | None:
        """Each distinct title and its first document, in order, from ``docs.titles.json``
        (None: an index written before it was kept)."""
        found = self._side_file(DOC_TITLES)
        if found is None:
            return None
        try:
            return [(str(title), int(i)) for title, i in found]
        except (TypeError, ValueError):
            raise IndexFormatError(f"index {self.shown.with_name(DOC_TITLES)}: not a list of [title, document] "
                                   "pairs; rebuild it with 'ragkit index build'") from None

    def _side_file(self, name: str):
        path = self.folder / name
        if not path.is_file():
            return None
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"index {self.shown.with_name(name)}: cannot be read ({exc})") from None
        if not isinstance(found, list) or name == DOC_IDS and len(found) != len(self):
            raise IndexFormatError(f"index {self.shown.with_name(name)}: does not describe {self.shown.name}; "
                                   "rebuild it with 'ragkit index build'")
        return found


class DocBlockWriter:
    """Writes documents, one at a time, as a folder's ``docs.z`` and ``docs.blocks.npy``."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._out: BinaryIO = (self.folder / BLOCKS_FILE).open("wb")
        self._table: list[tuple[int, int]] = [(0, 0)]
        self._lines: list[bytes] = []
        self._pending = 0
        self.count = 0
        self._size = 0
        self._ids = (self.folder / DOC_IDS).open("w", encoding="utf-8")      # a JSON array, written as it goes
        self._ids.write("[")
        self._titles: dict[str, int] = {}

    def add(self, doc: Doc) -> None:
        line = json.dumps(doc.to_dict(), ensure_ascii=False).encode("utf-8") + b"\n"
        self._ids.write(("," if self.count else "") + json.dumps(doc.doc_id, ensure_ascii=False))
        if doc.title:
            self._titles.setdefault(doc.title, self.count)
        self._lines.append(line)
        self._pending += len(line)
        self.count += 1
        if len(self._lines) >= BLOCK_DOCS or self._pending >= BLOCK_BYTES:
            self._flush()

    def add_all(self, docs: Iterable[Doc]) -> None:
        for doc in docs:
            self.add(doc)

    def _flush(self) -> None:
        if self._lines:
            block = zlib.compress(b"".join(self._lines), LEVEL)
            self._out.write(block)
            self._size += len(block)
            self._table.append((self.count, self._size))
            self._lines, self._pending = [], 0

    def close(self) -> None:
        """Write the last block, the block table, the ids and the titles."""
        self._flush()
        self._out.close()
        self._ids.write("]")
        self._ids.close()
        (self.folder / DOC_TITLES).write_text(json.dumps([[t, i] for t, i in self._titles.items()],
                                                         ensure_ascii=False), encoding="utf-8")
        np.save(self.folder / BLOCK_TABLE, np.asarray(self._table, dtype=np.int64).reshape(-1, 2))


def write_doc_blocks(docs: Iterable[Doc], folder: str | Path) -> int:
    """``docs`` written into ``folder`` as blocks; how many."""
    writer = DocBlockWriter(folder)
    try:
        writer.add_all(docs)
    finally:
        writer.close()
    return writer.count


class DocsFile(_LazyDocs):
    """The documents of a ``docs.jsonl`` (one JSON object per line), as a read-only sequence."""

    def __init__(self, path: str | Path, shown: str | Path | None = None):
        super().__init__()
        self.path = Path(path)
        self.shown = Path(shown) if shown is not None else self.path
        self._map = _mapped(self.path, self.shown)
        if self._map is None:
            self._starts = self._ends = np.zeros(0, dtype=np.int64)
            return
        size = len(self._map)
        ends = np.flatnonzero(np.frombuffer(self._map, dtype=np.uint8) == 10).astype(np.int64)
        if not ends.size or ends[-1] != size - 1:
            ends = np.append(ends, size)                     # a last line without its newline
        starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
        keep = ends > starts                                 # blank lines are no documents
        self._starts, self._ends = starts[keep], ends[keep]

    def __len__(self) -> int:
        return int(self._starts.size)

    def _read(self, i: int) -> Doc:
        raw = self._map[self._starts[i]:self._ends[i]] if self._map is not None else b""
        return self._parse(raw, f"on line {i + 1}")


__all__ = ["BLOCKS_FILE", "BLOCK_TABLE", "DOC_IDS", "DOC_TITLES", "DocBlockWriter", "DocBlocks", "DocsFile",
           "write_doc_blocks"]
