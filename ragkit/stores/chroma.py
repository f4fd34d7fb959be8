"""Vectors in Chroma, embedded (``PersistentClient`` in a folder) or a server
(``HttpClient``, when a ``http://host:port`` URL or ``CHROMA_URL`` is given), behind one
small interface. Vectors are always ours: Chroma's default embedding function (which would
download a model) is never used."""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ParamSpec, Sequence, TypeVar
from urllib.parse import urlparse

import numpy as np

from ..config import Settings
from ..errors import InputError, StoreUnavailableError
from ..runtime.extras import requires_extra
from .files import final_path


def readable_copy(location: str) -> str:
    """``location``, or a private copy of it when this process cannot write there.

    Embedded Chroma opens its SQLite file for writing even to read it, so an index on a
    read-only mount, or one another user built (its files 0644 under umask 022), would not
    open at all. Such a folder is copied once per process into a temporary folder (removed
    at exit) and read from there; what is there is never changed."""
    folder = Path(location)
    database = folder / "chroma.sqlite3"
    if not database.is_file() or (os.access(folder, os.W_OK) and os.access(database, os.W_OK)):
        return location
    key = str(folder.resolve())
    if key not in _COPIES:
        copy = Path(tempfile.mkdtemp(prefix="ragkit-chroma-read-")) / "chroma"
        shutil.copytree(folder, copy)
        atexit.register(shutil.rmtree, copy.parent, True)
        _COPIES[key] = str(copy)
    return _COPIES[key]


_COPIES: dict[str, str] = {}

# A Chroma server's requests are bounded (chromadb's own client waits without limit): 5 s to
# connect, then CHROMA_TIMEOUT_S for each reply, ample for a batch of 4,000 vectors.
CHROMA_CONNECT_S = 5.0
CHROMA_TIMEOUT_S = 120.0

P = ParamSpec("P")
T = TypeVar("T")


def _answering(location: str) -> None:
    """Nothing when the server at ``location`` answers its heartbeat within the timeouts
    (any HTTP status: an older server serves another path); else a one-line error. chromadb's
    client asks the server for its tenant while it is made, unbounded, so this asks first."""
    with requires_extra("dense"):       # chromadb's own HTTP client
        import httpx

    with _served(location, hint="; start one with 'chroma run --host 127.0.0.1' or unset CHROMA_URL"):
        httpx.get(f"{location.rstrip('/')}/api/v2/heartbeat", trust_env=False,
                  timeout=httpx.Timeout(CHROMA_TIMEOUT_S, connect=CHROMA_CONNECT_S))


def _bounded(client) -> None:
    """Give the HTTP session under chromadb's ``HttpClient`` the timeouts above."""
    with requires_extra("dense"):
        import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(CHROMA_TIMEOUT_S, connect=CHROMA_CONNECT_S)


def _served(location: str, hint: str = "") -> contextlib.AbstractContextManager[None]:
    """A Chroma server that does not answer, or stops mid-request, as one line naming it."""
    from ..runtime.http import transport_errors

    return transport_errors(f"chroma {location}", CHROMA_TIMEOUT_S, StoreUnavailableError, hint)


def _remote(method: Callable[P, T]) -> Callable[P, T]:
    """``method`` of ``ChromaVectors`` with a server's transport errors as one line."""
    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        self = args[0]
        if not isinstance(self, ChromaVectors) or not self.remote:
            return method(*args, **kwargs)
        with _served(self.location):
            return method(*args, **kwargs)
    return call


@dataclass
class VectorHits:
    ids: list[str]
    scores: list[float]          # cosine similarity (1 − cosine distance)


class ChromaVectors:
    """One Chroma collection of (id, vector, metadata) with cosine distance."""

    def __init__(self, location: str, collection: str = "nodes", create: bool = True):
        with requires_extra("dense"):
            import chromadb

        settings = chromadb.Settings(anonymized_telemetry=False)
        self.location = location
        self.remote = location.startswith(("http://", "https://"))
        if self.remote:
            url = urlparse(location)
            _answering(location)
            try:
                self.client = chromadb.HttpClient(host=url.hostname or "", port=url.port or 8000,
                                                  ssl=url.scheme == "https", settings=settings)
                _bounded(self.client)
                self.client.heartbeat()
            except Exception as exc:  # chromadb raises several connection error types
                raise StoreUnavailableError(f"chroma {location}: server not reachable ({type(exc).__name__}); "
                                 f"start one with 'chroma run --host 127.0.0.1' or unset CHROMA_URL") from None
        else:
            Path(location).mkdir(parents=True, exist_ok=True)
            self.client = chromadb.PersistentClient(path=readable_copy(location), settings=settings)
        with _served(location) if self.remote else contextlib.nullcontext():
            if create:
                self.collection = self.client.get_or_create_collection(
                    collection, embedding_function=None, metadata={"hnsw:space": "cosine"})
            else:
                self.collection = self.client.get_collection(collection, embedding_function=None)

    @classmethod
    def existing(cls, directory: str | Path, collection: str) -> "ChromaVectors | None":
        """The collection ``for_dir`` would open, when there is one to read (a build reads the
        live vectors it can reuse from here and writes its own elsewhere); else None."""
        url = Settings.from_env().chroma_url
        if not url and not (Path(directory) / "chroma.sqlite3").is_file():
            return None
        try:
            if not url:
                return cls(str(Path(directory).resolve()), collection, create=False)
            tag = hashlib.sha1(final_path(directory).encode()).hexdigest()[:12]
            return cls(url, f"{collection}-{tag}", create=False)
        except (InputError, StoreUnavailableError):
            raise
        except Exception:        # chromadb: no such collection (its error type varies by version)
            return None

    @_remote
    def records(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray, list[dict], list[str]]:
        """(ids, vectors, metadatas, documents) of the stored ``ids`` (those present)."""
        if not ids:
            return [], np.zeros((0, 0), dtype=np.float32), [], []
        got = self.collection.get(ids=list(ids), include=["embeddings", "metadatas", "documents"])
        metadatas, documents = got["metadatas"] or [], got["documents"] or []     # both included
        return (list(got["ids"]), np.asarray(got["embeddings"], dtype=np.float32),
                [dict(m) if m else {} for m in metadatas], [d or "" for d in documents])

    def copy_from(self, source: "ChromaVectors", ids: Sequence[str], batch: int = 4000) -> int:
        """Copy the vectors of ``ids`` from ``source`` unchanged; how many were there."""
        copied = 0
        for start in range(0, len(ids), batch):
            got_ids, vectors, metadatas, documents = source.records(ids[start:start + batch])
            if got_ids:
                self.upsert(got_ids, vectors, metadatas, documents)
                copied += len(got_ids)
        return copied

    @classmethod
    def for_dir(cls, directory: str | Path, collection: str) -> "ChromaVectors":
        """The server in CHROMA_URL when set, else an embedded store in ``directory``. On a
        server, the collection name carries a hash of ``directory`` so that two graphs built
        against one server do not share (and overwrite) one collection."""
        url = Settings.from_env().chroma_url
        if not url:
            # One path per folder (links resolved): two paths to one database would open it
            # twice in this process, and the two copies of its HNSW index can rank the last
            # near-ties differently.
            return cls(str(Path(directory).resolve()), collection)
        tag = hashlib.sha1(final_path(directory).encode()).hexdigest()[:12]
        return cls(url, f"{collection}-{tag}")

    @_remote
    def count(self) -> int:
        return self.collection.count()

    @_remote
    def fingerprints(self) -> dict[str, str]:
        """id → the ``fingerprint`` metadata of every stored vector (for incremental builds)."""
        out: dict[str, str] = {}
        total = self.count()
        for offset in range(0, total, 5000):
            got = self.collection.get(include=["metadatas"], limit=5000, offset=offset)
            metadatas = got["metadatas"] or []
            out.update({i: str((m or {}).get("fingerprint", "")) for i, m in zip(got["ids"], metadatas)})
        return out

    @_remote
    def upsert(self, ids: Sequence[str], vectors: np.ndarray, metadatas: Sequence[dict],
               documents: Sequence[str], batch: int = 4000) -> None:
        for start in range(0, len(ids), batch):
            end = start + batch
            self.collection.upsert(ids=list(ids[start:end]), embeddings=vectors[start:end].tolist(),
                                   metadatas=list(metadatas[start:end]), documents=list(documents[start:end]))

    @_remote
    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self.collection.delete(ids=list(ids))

    @_remote
    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``ids``, one row each in that order (MMR's cosine)."""
        if not ids:
            return np.zeros((0, 0))
        got = self.collection.get(ids=list(ids), include=["embeddings"])
        embeddings = got["embeddings"] if got["embeddings"] is not None else []     # an array: no ``or``
        by_id = dict(zip(got["ids"], embeddings))
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise InputError(f"chroma {self.location}: no vector for {missing[0]!r} "
                             "(the index changed since its vectors were built; build it again)")
        return np.asarray([by_id[i] for i in ids], dtype=np.float32)

    @_remote
    def query(self, vector: np.ndarray, k: int) -> VectorHits:
        k = min(k, self.count())
        if k <= 0:
            return VectorHits([], [])
        got = self.collection.query(query_embeddings=[vector.tolist()], n_results=k)
        distances = got["distances"] if got["distances"] is not None else [[]]
        return VectorHits(got["ids"][0], [1.0 - d for d in distances[0]])
