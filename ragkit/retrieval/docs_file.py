"""An index's documents read from its ``docs.jsonl`` by offset, only when asked for: loading an
index finds where each line starts (one pass over the memory-mapped file with numpy) and
parses none of them, so a million documents load in a fraction of a second and a search
parses only the hits it returns.

A line that is not UTF-8 or not a document is a one-line ``IndexFormatError`` naming the
file and the line, raised when that line is read.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Iterator, overload

import numpy as np

from ..corpus import Doc
from ..errors import IndexFormatError


class DocsFile(Sequence):
    """The documents of a ``docs.jsonl`` (one JSON object per line), as a read-only sequence."""

    def __init__(self, path: str | Path, shown: str | Path | None = None):
        self.path = Path(path)
        self.shown = Path(shown) if shown is not None else self.path
        try:
            with self.path.open("rb") as handle:
                size = self.path.stat().st_size
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        except OSError as exc:
            raise IndexFormatError(f"index {self.shown}: cannot be read ({exc.strerror or exc})") from None
        self._doc = lru_cache(maxsize=4096)(self._read)
        if self._map is None:
            self._starts = self._ends = np.zeros(0, dtype=np.int64)
            return
        ends = np.flatnonzero(np.frombuffer(self._map, dtype=np.uint8) == 10).astype(np.int64)
        if size and (not ends.size or ends[-1] != size - 1):
            ends = np.append(ends, size)                     # a last line without its newline
        starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
        keep = ends > starts                                 # blank lines are no documents
        self._starts, self._ends = starts[keep], ends[keep]

    def __len__(self) -> int:
        return int(self._starts.size)

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

    def _read(self, i: int) -> Doc:
        raw = self._map[self._starts[i]:self._ends[i]] if self._map is not None else b""
        try:
            return Doc(**json.loads(raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise IndexFormatError(f"index {self.shown}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                                   f"on line {i + 1})") from None
        except json.JSONDecodeError as exc:
            raise IndexFormatError(f"index {self.shown}: not JSON ({exc.msg} on line {i + 1})") from None
        except TypeError as exc:
            raise IndexFormatError(f"index {self.shown}: not a ragkit index file (line {i + 1}: {exc})") from None

    def check(self) -> None:
        """Parse the first and last lines (a foreign or damaged file fails at load, not at
        the first search that reaches it)."""
        for i in {0, len(self) - 1} if len(self) else ():
            self[i]


__all__ = ["DocsFile"]
