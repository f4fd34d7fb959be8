"""``ragkit serve``: every pipeline over HTTP and WebSocket (FastAPI + uvicorn).

- ``POST /ask`` takes a JSON request (``service.AskRequest``'s fields, plus an optional
  ``session``; its OpenAPI schema is ``service.ask_request_model``) and returns what
  ``ragkit ask --json`` prints.
- ``/ws`` takes the same requests as text frames, one after another on one connection, and
  answers each with events: ``start``, ``token`` (model text as it is written, with the
  ``call`` and the ``purpose`` of its generation; without a model, the answer in pieces),
  then ``result`` (the ``/ask`` JSON, whose ``answer`` is the checked one, with
  ``replaced``: whether it differs from the text the model streamed, and
  ``replaced_because``), or ``error``. A connection is a session: kg follow-ups see earlier turns.
- ``GET /v1/models`` and ``POST /v1/chat/completions``: OpenAI's chat API over the same
  answers (``openai_chat``), for OpenAI clients; streamed, the answer's tokens as the model
  writes them, then the check's verdict in the last chunk.
- ``POST /v1/embeddings``: OpenAI's embeddings API over the in-process embedders
  (``openai_embeddings``); with ``embeddings_only`` (``ragkit serve
  --embeddings-only``) the server has no pipelines and is an embedding server alone.
- ``GET /health`` (the process is up) and ``GET /ready`` (every source loaded).

Access (``access``): an API key on every endpoint but ``/health`` (and ``/ready``'s
bare status), required beyond loopback; conversations are opened by the server
(``"session": "new"``), belong to the key that opened them, and each key has its own limits
on open conversations and questions in flight (429).

Requests are bounded: the body size (413), the time to send headers and body (408), the
question length (400), the time to answer (504: ``--timeout``, else a deadline derived from
the model's speed measured at start-up, which a model still writing may pass; ``deadlines``),
and at most ``workers`` questions at once (the rest wait their turn).
"""

from __future__ import annotations

from .app import create_app, serve
from .protocol import HTTPProblem, replacement
from .serving import ServeLimits, Sessions

__all__ = ["HTTPProblem", "ServeLimits", "Sessions", "create_app", "replacement", "serve"]
