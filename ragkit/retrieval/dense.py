"""Dense retrieval over the same chunks as BM25: chunk embeddings in Chroma,
built once with a progress bar and reused (a chunk is embedded again only when its text or
the model changed), searched by cosine. A vector is fingerprinted with the model's name and
the revision of its vectors (``Embedder.vectors_id``), not with where it was computed:
vectors a ``RemoteEmbedder`` (``RAGKIT_EMBED_URL``) made are reused by the model in process,
and the other way round."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..corpus import Doc
from ..errors import InputError
from ..embeddings import default_embedder
from ..runtime.faults import fault_point
from ..config import Settings
from ..stores.chroma import ChromaVectors
from ..stores.vector_file import VectorFile, copy_collection

if TYPE_CHECKING:
    from ..runtime.ray_engine import RayEngine

COPY = "vectors"        # the chunk vectors' copy in the folder (stores.vector_file), small indexes


def _passage_encoder(kind: str) -> Callable[[list[str]], list[np.ndarray]]:
    """The passage encoder of embedder ``kind`` (loaded once, on a Ray actor): texts to vectors."""
    embedder = default_embedder(kind)

    def encode(texts: list[str]) -> list[np.ndarray]:
        return list(embedder.encode_passages(texts, progress=False))
    return encode


@dataclass
class DenseBuild:
    docs: int
    embedded: int
    reused: int
    removed: int
    seconds: float


class DenseIndex:
    """Chunk vectors of one corpus in one Chroma collection; an embedded collection of up to
    ``vector_file.COPY_UP_TO`` chunks also keeps a copy in ``vectors.npy``, which searches
    read instead of starting Chroma (opened only to build, or without the copy)."""

    def __init__(self, directory: str | Path, embedder: str = "minilm"):
        self.directory = Path(directory)
        self.embedder_kind = embedder
        self.embedder = default_embedder(embedder)
        self._chroma: ChromaVectors | None = None
        self._copy: VectorFile | None = None

    @property
    def vectors(self) -> ChromaVectors:
        """The Chroma collection (opened on first use)."""
        if self._chroma is None:
            self._chroma = ChromaVectors.for_dir(self.directory, f"chunks-{self.embedder_kind}")
        return self._chroma

    @property
    def readable(self) -> "ChromaVectors | VectorFile":
        """Where searches read the vectors: the copy when there is one (and no server)."""
        if self._copy is None and VectorFile.exists(self.directory / COPY) and not Settings.from_env().chroma_url:
            self._copy = VectorFile(self.directory / COPY)
        return self._copy if self._copy is not None else self.vectors

    def _fingerprint(self, doc: Doc) -> str:
        return hashlib.sha1(f"{self.embedder.vectors_id}|{doc.full_text}".encode("utf-8")).hexdigest()[:16]

    def build(self, docs: Sequence[Doc], progress: bool | None = None, batch: int = 512,
              previous: str | Path | None = None, engine: RayEngine | None = None) -> DenseBuild:
        """Embed the chunks whose text (or model) changed since the last build; drop the rest.

        With ``previous`` (the live index's ``dense`` folder) this folder is a new one: the
        unchanged vectors are copied from ``previous``, which is only read, so a build that
        fails or is killed leaves the live vectors as they were. Without it the vectors here
        are updated in place. ``engine``: a ``RayEngine`` whose actors embed the changed
        chunks (each loads the model once; the vectors are the ones this process makes)."""
        started = time.perf_counter()
        if not docs:
            raise InputError("corpus: has no documents to embed")
        source = ChromaVectors.existing(previous, f"chunks-{self.embedder_kind}") if previous else None
        stored = (source or self.vectors).fingerprints() if source is not None or previous is None else {}
        wanted = {d.doc_id: self._fingerprint(d) for d in docs}
        todo = [d for d in docs if stored.get(d.doc_id) != wanted[d.doc_id]]
        stale = [i for i in stored if i not in wanted]
        if source is not None:
            kept = {d.doc_id for d in docs} - {d.doc_id for d in todo}
            self.vectors.copy_from(source, [d.doc_id for d in docs if d.doc_id in kept])
        else:
            self.vectors.delete(stale)
        from ..runtime.progress import progress_bar

        computed = iter(engine.map_with(partial(_passage_encoder, self.embedder_kind), [d.full_text for d in todo],
                                        stage="dense", batch=32)) if engine is not None and todo else None
        with progress_bar(total=len(todo), desc=f"embedding ({self.embedder.name})", unit="chunk",
                          progress=progress, disable=not todo) as bar:
            for start in range(0, len(todo), batch):
                part = todo[start:start + batch]
                # progress=False: this bar counts the chunks, the embedder draws none of its own
                vectors = self.embedder.encode_passages([d.full_text for d in part], progress=False) \
                    if computed is None else np.stack([next(computed) for _ in part])
                self.vectors.upsert([d.doc_id for d in part], vectors,
                                    [{"fingerprint": wanted[d.doc_id]} for d in part], [d.title for d in part])
                fault_point("dense.batch")
                bar.update(len(part))
        self._copy = None
        if not self.vectors.location.startswith(("http://", "https://")):    # the copy is the folder's store's
            for stale_copy in (self.directory / f"{COPY}.npy", self.directory / f"{COPY}.ids.json"):
                stale_copy.unlink(missing_ok=True)
            copy_collection(self.vectors, [d.doc_id for d in docs], self.directory / COPY)
        return DenseBuild(len(docs), len(todo), len(docs) - len(todo), len(stale),
                          round(time.perf_counter() - started, 3))

    def search(self, query: str, k: int = 100) -> list[tuple[str, float]]:
        """The ``k`` nearest chunks by cosine: [(doc_id, cosine)], best first."""
        if not query.strip():
            raise InputError("query: is empty")
        vector = self.embedder.encode([query])[0]
        hits = self.readable.query(vector, k)
        return list(zip(hits.ids, hits.scores))

    def vectors_of(self, doc_ids: Sequence[str]):
        """The stored chunk vectors of ``doc_ids`` (unit length), one row each."""
        return self.readable.vectors(doc_ids)

    def size_bytes(self) -> int:
        """The embedded store's size on disk (0 on a server)."""
        if not self.directory.exists():
            return 0
        return sum(p.stat().st_size for p in self.directory.rglob("*") if p.is_file())
