"""Two index folders compared artifact by artifact: how a build on a Ray cluster is shown to
be the local build (``ragkit index build --engine ray``), in the tests and the benchmark.

    index_differences("outputs/index/local", "outputs/index/ray")    # [] when they are the same

Every file of either folder is compared: arrays (``.npy``, ``.npz``) value for value and
dtype for dtype, JSON (plain or gzipped) with its timings left out (``build_s``,
``seconds``: how long a stage took is not what it made), every other file byte for byte.
Chroma's own files (its SQLite database and segment folders hold ids and times of their
own) are compared through their records instead: the same ids, vectors, metadata and
documents, in the same order.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

TIMINGS = ("build_s", "seconds")       # JSON keys that say how long, not what


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _chroma_files(folder: Path) -> set[str]:
    """The files Chroma keeps in ``folder``: each database and its segments' folders."""
    found: set[Path] = set()
    for db in folder.rglob("chroma.sqlite3"):
        found.add(db)
        for segment in (p for p in db.parent.iterdir() if p.is_dir()):
            found.update(segment.rglob("*"))
    return {p.relative_to(folder).as_posix() for p in found if p.is_file()}


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _same_file(a: Path, b: Path) -> bool:
    name = a.name
    if name.endswith(".npy"):
        x, y = np.load(a, allow_pickle=False), np.load(b, allow_pickle=False)
        return x.dtype == y.dtype and x.shape == y.shape and bool(np.array_equal(x, y))
    if name.endswith(".npz"):
        with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
            return sorted(x.files) == sorted(y.files) and all(
                x[k].dtype == y[k].dtype and x[k].shape == y[k].shape and np.array_equal(x[k], y[k]) for k in x.files)
    if name.endswith(".json"):
        return _without_timings(json.loads(a.read_text(encoding="utf-8"))) == \
            _without_timings(json.loads(b.read_text(encoding="utf-8")))
    if name.endswith(".json.gz"):
        return _without_timings(json.loads(gzip.decompress(a.read_bytes()))) == \
            _without_timings(json.loads(gzip.decompress(b.read_bytes())))
    return a.read_bytes() == b.read_bytes()


def _chroma_records(folder: Path) -> list[tuple[str, tuple]]:
    """Each collection's records in ``folder``'s Chroma databases, in id order."""
    from ..stores.chroma import ChromaVectors

    out = []
    for db in sorted(folder.rglob("chroma.sqlite3")):
        for name in _collection_names(db.parent):
            store = ChromaVectors(str(db.parent), name, create=False)
            ids, vectors, metadatas, documents = store.records(sorted(store.fingerprints()))
            out.append((f"{db.parent.relative_to(folder).as_posix()}/{name}",
                        (ids, vectors.tobytes(), str(vectors.dtype), metadatas, documents)))
    return out


def _collection_names(folder: Path) -> list[str]:
    from ..runtime.extras import requires_extra

    with requires_extra("dense"):
        import chromadb

    client = chromadb.PersistentClient(path=str(folder), settings=chromadb.Settings(anonymized_telemetry=False))
    return sorted(c.name for c in client.list_collections())


def index_differences(a: str | Path, b: str | Path) -> list[str]:
    """What differs between index folders ``a`` and ``b`` (one line per file or collection);
    empty when every artifact is the same."""
    a, b = Path(a).resolve(), Path(b).resolve()
    chroma = _chroma_files(a) | _chroma_files(b)
    files_a, files_b = _files(a) - chroma, _files(b) - chroma
    problems = [f"only in {a}: {name}" for name in sorted(files_a - files_b)]
    problems += [f"only in {b}: {name}" for name in sorted(files_b - files_a)]
    problems += [f"differs: {name}" for name in sorted(files_a & files_b) if not _same_file(a / name, b / name)]
    records_a, records_b = _chroma_records(a), _chroma_records(b)
    if [name for name, _ in records_a] != [name for name, _ in records_b]:
        problems.append(f"Chroma collections differ: {[n for n, _ in records_a]} against {[n for n, _ in records_b]}")
    else:
        problems += [f"differs: Chroma records of {name}" for (name, x), (_, y) in zip(records_a, records_b) if x != y]
    return problems
