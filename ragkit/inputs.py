"""Reading the user's text files as they come: a UTF-8 byte-order mark is accepted, a byte
that is not UTF-8 is a one-line error naming the file, the line and the byte, and a file
that cannot be opened (missing, a folder, permission denied) is a one-line error naming it.

JSON lines, CSV (through the ``csv`` module, so quoted commas and newlines stay in their
field) and whole documents all go through ``lines`` here, decoded one line at a time."""

from __future__ import annotations

import codecs
import csv
import os
from pathlib import Path
from typing import Iterator

from .errors import InputError

DEDUPE_CHOICES = ("first", "last")
PROGRESS_MIN_BYTES = 8 << 20     # files smaller than this are read without a progress bar


def _open(path: Path, what: str):
    if path.is_dir():
        raise InputError(f"{what} {path}: a folder, not a file")
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None


def lines(path: str | os.PathLike, what: str, progress: bool | None = None) -> Iterator[tuple[int, str]]:
    """(line number, text with its line ending) for every line of a UTF-8 file; a leading
    byte-order mark is dropped. With ``progress``, a file of ``PROGRESS_MIN_BYTES`` or more
    shows a progress bar (bytes read) on stderr."""
    from .runtime.progress import progress_bar

    path = Path(path)
    with _open(path, what) as handle, progress_bar(
            total=os.fstat(handle.fileno()).st_size, unit="B", unit_scale=True, desc=f"read {path.name}",
            progress=progress, disable=os.fstat(handle.fileno()).st_size < PROGRESS_MIN_BYTES,
            mininterval=0.5) as bar:
        try:
            for lineno, raw in enumerate(handle, 1):
                bar.update(len(raw))
                if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8):]
                try:
                    yield lineno, raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(f"{what} {path}:{lineno}: not UTF-8 text (byte 0x{raw[exc.start]:02x} "
                                     f"at byte {exc.start + 1} of the line)") from None
        except OSError as exc:
            raise InputError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None


def read_text(path: str | os.PathLike, what: str) -> str:
    """The whole of a UTF-8 text file (byte-order mark dropped); one-line errors as ``lines``."""
    return "".join(text for _, text in lines(path, what))


def csv_rows(path: str | os.PathLike, what: str, required: tuple[str, ...],
             progress: bool | None = None) -> list[tuple[int, dict]]:
    """(line number where the row starts, {column: stripped value}) for every row of a CSV
    with a header that has the ``required`` columns (other columns kept); ``progress`` as
    ``lines``."""
    path = Path(path)
    reader = csv.reader(text for _, text in lines(path, what, progress))
    try:
        header = [c.strip() for c in next(reader, [])]
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"{what} {path}: missing column(s) {', '.join(missing)} "
                             f"(needs {', '.join(required)})")
        rows, start = [], reader.line_num + 1
        for row in reader:
            if row:
                rows.append((start, {h: (row[i] if i < len(row) else "").strip()
                                     for i, h in enumerate(header)}))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"{what} {path}:{reader.line_num}: not CSV ({exc})") from None
    return rows


def first_of_each(items: list, key, where, what: str, dedupe: str | None, thing: str) -> list:
    """``items`` with one item per ``key``: a repeated key is a one-line error naming it and
    the lines of both (``where(item)``), unless ``dedupe`` is ``first`` or ``last`` (which
    of the copies is kept, at the place of the first)."""
    if dedupe not in (None, *DEDUPE_CHOICES):
        raise InputError(f"--dedupe {dedupe}: one of {', '.join(DEDUPE_CHOICES)}")
    kept: dict = {}
    for item in items:
        k = key(item)
        if k in kept:
            if dedupe is None:
                raise InputError(f"{what}: duplicate {thing} {k!r} at {where(kept[k])} and {where(item)} "
                                 f"(pass --dedupe first|last to keep one)")
            if dedupe == "last":
                kept[k] = item
        else:
            kept[k] = item
    return list(kept.values())
