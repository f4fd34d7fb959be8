"""Concept labels as vectors, for linking a question's phrase to a concept the corpus names
differently ("Novair Intl Airways" → "Novair International Airways").

Every concept gets a vector (``min_df`` can leave out the rarer ones, but a question's
first hop is often a concept of one chunk). Embedding the labels costs more than the graph
(66 s for MuSiQue's 16,898 labels with MiniLM on 2 cores, against 1 s for the graph), and
on the sets measured it moved Recall@5 little (docs/benchmarks/concepts.md, "Concept graph"), so
it is asked for (``index build --concepts --dense --concept-vectors``). The vectors are
kept beside the graph (``labels-<embedder>.npz``: keys and float16 vectors) and a rebuild
embeds only the keys it has not seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..stores.files import atomic_write_bytes
from .graph import ConceptGraph

MIN_DF = 1


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()


def vectors_path(directory: str | Path, embedder) -> Path:
    return Path(directory) / f"labels-{_slug(embedder.name)}.npz"


@dataclass
class LabelVectors:
    """Vectors of some concepts' labels: ``concepts[i]`` (a concept number of the graph) has
    the L2-normalised row ``matrix[i]``."""

    concepts: np.ndarray
    matrix: np.ndarray
    embedded: int = 0          # how many labels this build embedded (the rest were kept)
    vectors_id: str = ""       # the embedder's ``vectors_id``: what made them

    @classmethod
    def build(cls, graph: ConceptGraph, embedder, *, previous: dict[str, np.ndarray] | None = None,
              min_df: int = MIN_DF, progress: bool | None = None) -> "LabelVectors":
        """Vectors for the concepts ``min_df`` or more chunks mention; ``previous`` ({key:
        vector}) saves embedding again the labels of keys seen before."""
        previous = previous or {}
        wanted = np.flatnonzero(graph.df >= min_df)
        missing = [int(c) for c in wanted if graph.keys[c] not in previous]
        fresh = embedder.encode_passages([graph.labels[c] for c in missing], progress=progress) \
            if missing else np.zeros((0, embedder.dim), dtype=np.float32)
        found = dict(zip(missing, fresh))
        rows = [found[int(c)] if int(c) in found else previous[graph.keys[c]] for c in wanted]
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(wanted), embedder.dim)
        return cls(concepts=wanted, matrix=matrix, embedded=len(missing),
                   vectors_id=getattr(embedder, "vectors_id", embedder.name))

    def save(self, path: str | Path, graph: ConceptGraph) -> Path:
        import io

        buffer = io.BytesIO()
        np.savez_compressed(buffer, keys=np.array([graph.keys[c] for c in self.concepts], dtype=str),
                            vectors=self.matrix.astype(np.float16), vectors_id=np.array(self.vectors_id))
        atomic_write_bytes(Path(path), buffer.getvalue())
        return Path(path)

    @staticmethod
    def read(path: str | Path, vectors_id: str | None = None) -> dict[str, np.ndarray]:
        """{key: vector} of a saved file ({} when there is none, or when ``vectors_id`` is given
        and the file's vectors were made by another model or revision: nothing to reuse)."""
        path = Path(path)
        if not path.is_file():
            return {}
        with np.load(path) as data:           # keys as a string array: nothing unpickled
            made_by = str(data["vectors_id"]) if "vectors_id" in data.files else None
            if vectors_id is not None and made_by != vectors_id:
                return {}
            return dict(zip(data["keys"].tolist(), data["vectors"].astype(np.float32)))

    @classmethod
    def load(cls, path: str | Path, graph: ConceptGraph) -> "LabelVectors | None":
        """The saved vectors of the graph's concepts, or None when there are none."""
        saved = cls.read(path)
        pairs = [(graph.position[k], v) for k, v in saved.items() if k in graph.position]
        if not pairs:
            return None
        concepts, rows = zip(*pairs)
        return cls(concepts=np.asarray(concepts), matrix=np.asarray(rows, dtype=np.float32))

    def nearest(self, vector: np.ndarray) -> tuple[int, float]:
        """The concept whose label is nearest ``vector`` and the cosine."""
        scores = self.matrix @ vector
        best = int(np.argmax(scores))
        return int(self.concepts[best]), float(scores[best])
