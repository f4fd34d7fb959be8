"""A copy of a small embedded Chroma collection's vectors in one ``.npy`` file (and its ids in
a JSON list beside it), searched exactly by cosine.

Importing chromadb alone takes seconds (5 to 15 on this project's machine), longer than a
question takes on a graph of a few thousand nodes or an index of a few thousand chunks. A
build that fills an embedded collection of up to ``COPY_UP_TO`` vectors writes this copy
too, and a command that only reads them answers from it without starting Chroma; a larger
collection, or one on a Chroma server, is read from Chroma.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError
from .chroma import VectorHits

COPY_UP_TO = 200_000       # vectors: 300 MB of float32 at MiniLM's 384 dimensions


class VectorFile:
    """Vectors read from ``<stem>.npy`` and ``<stem>.ids.json`` (rows in the ids' order)."""

    def __init__(self, stem: Path):
        self.stem = stem
        try:
            matrix = np.load(stem.with_suffix(".npy"), mmap_mode="r")
            ids = json.loads(stem.with_suffix(".ids.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"vectors {stem.with_suffix('.npy')}: cannot be read ({exc}); "
                             "build the index or graph again") from None
        if matrix.ndim != 2 or not isinstance(ids, list) or matrix.shape[0] != len(ids):
            raise InputError(f"vectors {stem.with_suffix('.npy')}: {matrix.shape[0]} vectors for {len(ids)} "
                             "ids; build the index or graph again")
        self.ids = ids
        self.matrix = np.asarray(matrix, dtype=np.float32)
        self._row = {i: r for r, i in enumerate(ids)}

    @staticmethod
    def exists(stem: Path) -> bool:
        return stem.with_suffix(".npy").is_file() and stem.with_suffix(".ids.json").is_file()

    @staticmethod
    def write(stem: Path, ids: Sequence[str], matrix: np.ndarray) -> None:
        """The copy of ``matrix`` (one row per id, made unit length) at ``stem``."""
        matrix = np.asarray(matrix, dtype=np.float32)
        norms = np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12) if matrix.size else 1.0
        np.save(stem.with_suffix(".npy"), matrix / norms)
        stem.with_suffix(".ids.json").write_text(json.dumps(list(ids), ensure_ascii=False), encoding="utf-8")

    def count(self) -> int:
        return len(self.ids)

    def query(self, vector: np.ndarray, k: int) -> VectorHits:
        """The ``k`` nearest vectors by cosine, nearest first (ties: the earlier row)."""
        if not self.ids or k <= 0:
            return VectorHits([], [])
        vector = np.asarray(vector, dtype=np.float32)
        scores = self.matrix @ (vector / max(float(np.linalg.norm(vector)), 1e-12))
        top = np.argpartition(-scores, min(k, scores.size) - 1)[:k] if scores.size > k else np.arange(scores.size)
        order = top[np.lexsort((top, -scores[top]))]
        return VectorHits([self.ids[i] for i in order], [float(scores[i]) for i in order])

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The vectors of ``ids``, one row each in that order."""
        missing = [i for i in ids if i not in self._row]
        if missing:
            raise InputError(f"vectors {self.stem.with_suffix('.npy')}: no vector for {missing[0]!r} "
                             "(the index changed since its vectors were built; build it again)")
        return self.matrix[[self._row[i] for i in ids]] if ids else np.zeros((0, 0))


def copy_collection(vectors, ids: Sequence[str], stem: Path, batch: int = 4000) -> bool:
    """Write the copy of ``vectors``' (a ``ChromaVectors``) records of ``ids`` at ``stem`` when
    the collection is embedded and holds at most ``COPY_UP_TO`` of them; whether it did."""
    if vectors.location.startswith(("http://", "https://")) or len(ids) > COPY_UP_TO:
        return False
    rows: list[np.ndarray] = []
    for start in range(0, len(ids), batch):
        got_ids, matrix, _, _ = vectors.records(list(ids[start:start + batch]))
        by_id = dict(zip(got_ids, matrix))
        rows.extend(by_id[i] for i in ids[start:start + batch] if i in by_id)
    if len(rows) != len(ids):
        return False
    VectorFile.write(stem, ids, np.asarray(rows) if rows else np.zeros((0, 0), np.float32))
    return True


__all__ = ["COPY_UP_TO", "VectorFile", "copy_collection"]
