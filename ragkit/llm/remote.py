"""Any OpenAI-compatible chat server behind the ``LLM`` interface (``RAGKIT_LLM_URL``), for
example ``python -m llama_cpp.server --model model.gguf --host 127.0.0.1``.

Generation goes to ``/v1/chat/completions`` (streamed as server-sent events when a caller
wants tokens as they come). Every request names its ``model``: ``RAGKIT_LLM_MODEL``, or the
first model the server lists at ``/v1/models`` (asked once). Token counts come from the
server's own tokenizer when it has one (llama-cpp-python's ``/extras/tokenize/count``); a
server without that endpoint gets the local GGUF's vocabulary, which is exact only when the
server runs the same model.

A request the server refuses for now (429, 500, 502, 503, 504) or whose connection it
resets is tried again after an exponential backoff with jitter (0.5 s, 1 s, 2 s ... at most
8 s, each between half and all of that), or after the server's ``Retry-After``; no new try
starts later than ``RAGKIT_LLM_RETRY_S`` (30 s) after the first (``runtime.http.send_retrying``, which the
remote embedder, ``ragkit.embeddings.remote``, sends its requests through too). Other refusals (400, 401,
404 ...) and a server that refuses connections are not tried again.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import threading
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..config import LLMConfig
from ..runtime.cancel import checkpoint
from ..errors import GenerationError, ModelError, RagkitError
from ..runtime.extras import requires_extra
from ..runtime.http import refusal, send_retrying, transport_errors
from .base import Generation, collect_stream
from .prompts import broken_at
from .gguf import CHATML_STOP

if TYPE_CHECKING:
    from .gguf import GGUFModel

with requires_extra("llm"):
    import httpx

def response_format(schema: dict, form: str) -> dict:
    """``schema`` as a request's ``response_format``: OpenAI's ``json_schema`` form, or the
    ``json_object`` form with a ``schema`` that llama-cpp-python's server reads instead."""
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "reply"))[:64]
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class ServerLLM:
    """A chat model served over HTTP with the OpenAI API."""

    def __init__(self, config: LLMConfig):
        if not config.server_url:
            raise ModelError("RAGKIT_LLM_URL: no server URL given")
        self.config = config
        self.url = config.server_url.rstrip("/")
        self.n_ctx = config.n_ctx
        headers = {}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        loopback = httpx.URL(self.url).host in ("127.0.0.1", "localhost", "::1")
        self._http = httpx.Client(base_url=self.url, headers=headers, trust_env=not loopback,
                                  timeout=httpx.Timeout(config.server_timeout, connect=5.0))
        self._model: str | None = config.server_model   # asked of the server once when not set
        self._schema_form = "json_schema"   # json_object: the server reads only llama-cpp-python's form
        self._bos: int | None = None        # tokens the server adds to any text (a BOS)
        self._local: GGUFModel | None = None   # the fallback tokenizer (a local GGUF)
        self._no_endpoint = False           # the server has no tokenizer endpoint
        self._lock = threading.Lock()
        self._rng = random.Random()

    # ----------------------------------------------------------------- HTTP
    @contextlib.contextmanager
    def _transport_errors(self, error: type[ModelError] = ModelError) -> Iterator[None]:
        """httpx's timeouts and connection errors as one-line ``error``s (a GenerationError
        while writing an answer, so the answer stage can fall back)."""
        with transport_errors(f"llm server {self.url}", self.config.server_timeout, error):
            yield

    def _send(self, path: str, body: dict | None = None, error: type[ModelError] = ModelError, *,
              method: str = "POST", stream: bool = False,
              final: Callable[[httpx.Response], bool] | None = None) -> httpx.Response:
        """The server's response to one request, with ``send_retrying``'s tries."""
        return send_retrying(self._http, lambda: self._http.build_request(method, path, json=body),
                             what=f"llm server {self.url}", timeout=self.config.server_timeout,
                             deadline=self.config.retry_deadline, rng=self._rng, error=error, stream=stream,
                             final=final)

    def _post(self, path: str, body: dict, error: type[ModelError] = ModelError) -> httpx.Response:
        return self._send(path, body, error)

    def _fail(self, response: httpx.Response, error: type[ModelError] = ModelError) -> RagkitError:
        return refusal(response, f"llm server {self.url}", error)

    # ----------------------------------------------------------------- the model
    def model(self, error: type[ModelError] = ModelError) -> str:
        """The model every request names: ``RAGKIT_LLM_MODEL``, else the first one the server
        lists at ``/v1/models`` (asked once, then kept). A server that lists none, or has no
        such endpoint, is a ModelError that says to set ``RAGKIT_LLM_MODEL``; one that cannot
        be reached is ``error``."""
        if self._model is None:
            response = self._send("/v1/models", None, error, method="GET")
            try:
                listed = response.json().get("data") if response.is_success else None
                ids = [str(m["id"]) for m in listed or [] if isinstance(m, dict) and m.get("id")]
            except (ValueError, AttributeError, TypeError):
                ids = []
            if not ids:
                said = "lists no models" if response.is_success else f"answered HTTP {response.status_code}"
                raise ModelError(f"llm server {self.url}: {said} at /v1/models; set RAGKIT_LLM_MODEL "
                                 "to the model to ask for")
            self._model = ids[0]
        return self._model

    @property
    def name(self) -> str:
        """The model's name (a path's file name): what the server runs, for traces."""
        try:
            return os.path.basename(self.model(GenerationError)) or "server"
        except ModelError:      # not reachable now, or lists nothing: asked again next time
            return "server"

    # ----------------------------------------------------------------- tokens
    def _server_count(self, text: str, model: str) -> int | None:
        response = self._post("/extras/tokenize/count", {"input": text, "model": model}, GenerationError)
        if response.status_code in (404, 405):
            return None
        if not response.is_success:
            raise self._fail(response)
        with self._malformed("a token count"):
            return int(response.json()["count"])

    def _local_tokenizer(self):
        from .gguf import GGUFModel

        with self._lock:
            if self._local is None:
                self._local = GGUFModel(self.config)
        return self._local

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in the served model's vocabulary (no BOS). A server with no
        tokenizer endpoint, or one that is down or lists no model, is counted for with the
        local GGUF's tokenizer (an estimate: the generation that follows reports the server's
        failure)."""
        if not text:
            return 0
        try:
            model = self.model(GenerationError)
            with self._lock:
                if self._bos is None and not self._no_endpoint:
                    self._bos = self._server_count("", model)
                    self._no_endpoint = self._bos is None
            if self._no_endpoint:
                return self._local_tokenizer().count_tokens(text)
            return max(0, (self._server_count(text, model) or 0) - (self._bos or 0))
        except GenerationError:     # down or too slow: estimate now, ask the server next time
            return self._local_tokenizer().count_tokens(text)
        except ModelError as exc:   # no model listed: the generation will say so
            if "/v1/models" not in str(exc):
                raise
            return self._local_tokenizer().count_tokens(text)

    # ----------------------------------------------------------------- scoring
    def choice_logprobs(self, prompt: str, choices: Sequence[str], top: int = 20) -> list[float]:
        """Log-probabilities that the token after ``prompt`` is each choice, from the
        server's top ``top`` next tokens (``/v1/completions`` with ``logprobs``). A choice
        outside that list gets the lowest listed value, an upper bound."""
        checkpoint()        # between a reranker's candidates and a judge's claims
        response = self._post("/v1/completions", {"model": self.model(), "prompt": prompt, "max_tokens": 1,
                                                   "temperature": 0.0, "logprobs": top, "seed": 42})
        if not response.is_success:
            raise self._fail(response)
        try:
            listed = response.json()["choices"][0]["logprobs"]["top_logprobs"][0]
        except (KeyError, IndexError, TypeError, ValueError):
            listed = None
        if not listed:
            raise ModelError(f"llm server {self.url}: gave no logprobs for the next token "
                             "(llama_cpp.server needs --logits_all True)")
        floor = min(listed.values())
        return [float(listed.get(c, floor)) for c in choices]

    @staticmethod
    def defang(text: str) -> str:
        """``text`` with every special token of the common chat templates (``SPECIAL_SHAPES``)
        broken by a WORD JOINER (U+2060) after its first character, as the GGUF in process
        does with its own vocabulary's: a server's vocabulary is not known here, and its
        template's tokenizer would read them as control wherever they stand."""
        return broken_at(SPECIAL_SHAPES, text)

    # ----------------------------------------------------------------- generation
    def chat(self, messages: Sequence[dict], *, max_tokens: int, stop: Sequence[str] = (),
             temperature: float = 0.0, seed: int = 42, on_token: Callable[[str], None] | None = None,
             grammar: str | None = None, json_schema: dict | None = None) -> Generation:
        """The reply to ``messages``.

        - A ``grammar`` (GBNF) goes in the request's ``grammar`` field, which llama.cpp's
          server and llama-cpp-python's server apply (others ignore it). It is parsed here
          first with the local GGUF's llama.cpp (llama-cpp-python's server would crash on one
          that does not parse).
        - A ``json_schema`` goes as ``response_format`` in OpenAI's form (``{"type":
          "json_schema", "json_schema": {"name", "schema", "strict": true}}``), which any
          server with structured outputs applies. llama-cpp-python's server (0.3) refuses
          that form with an error naming ``response_format``: it is then sent again in the
          form that server reads (``{"type": "json_object", "schema": ...}``), and that form
          is kept for the server.
        """
        checkpoint()        # a request out of time asks the model nothing more
        if grammar is not None and json_schema is not None:
            raise ValueError("chat: give a grammar or a json_schema, not both")
        # the messages' text (questions, evidence, history) cannot close a turn or open one
        messages = [{**m, "content": self.defang(m["content"])} if isinstance(m.get("content"), str) else m
                    for m in messages]
        body = {"model": self.model(GenerationError), "messages": list(messages), "max_tokens": max_tokens,
                "temperature": temperature, "seed": seed, "stop": list(dict.fromkeys([*stop, CHATML_STOP])),
                "stream": on_token is not None}
        if grammar is not None:
            self._local_tokenizer().grammar(grammar)
            body["grammar"] = grammar
        if json_schema is not None:
            body["response_format"] = response_format(json_schema, self._schema_form)
        response = self._completion(body, json_schema)
        if on_token is not None:
            return collect_stream(self._events(response), on_token)
        with self._malformed("a chat completion"):
            out = response.json()
            choice = out["choices"][0]
            usage = out.get("usage") or {}
            return Generation(text=(choice.get("message") or {}).get("content") or "",
                              finish_reason=choice.get("finish_reason") or "",
                              prompt_tokens=int(usage.get("prompt_tokens") or 0),
                              completion_tokens=int(usage.get("completion_tokens") or 0),
                              extra=server_timings(out))

    @contextlib.contextmanager
    def _malformed(self, what: str) -> Iterator[None]:
        """A reply that does not parse, or lacks what OpenAI's API puts in it, as a one-line
        GenerationError naming the server and what was wrong (not a traceback, nor a 500 in
        ``ragkit serve``)."""
        try:
            yield
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            why = "not JSON" if isinstance(exc, ValueError) else f"no {exc}" if isinstance(exc, KeyError) else \
                "not of OpenAI's shape"
            raise GenerationError(f"llm server {self.url}: {what} it sent is malformed ({why})") from None

    def _completion(self, body: dict, json_schema: dict | None) -> httpx.Response:
        """The server's successful response to a chat completion request (open, when
        streamed); a refusal of the schema's form makes one more request in the other form."""
        stream = bool(body["stream"])

        def form_refused(response: httpx.Response) -> bool:
            if json_schema is None or self._schema_form != "json_schema" or \
                    response.status_code not in (400, 422, 500):
                return False
            with self._transport_errors(GenerationError):
                response.read()
            return "response_format" in response.text

        response = self._send("/v1/chat/completions", body, GenerationError, stream=stream, final=form_refused)
        if json_schema is not None and form_refused(response):
            response.close()
            self._schema_form = "json_object"
            body = {**body, "response_format": response_format(json_schema, self._schema_form)}
            response = self._send("/v1/chat/completions", body, GenerationError, stream=stream)
        if not response.is_success:
            if stream:
                with self._transport_errors(GenerationError):
                    response.read()
                response.close()
            raise self._fail(response, GenerationError)
        return response

    def _events(self, response: httpx.Response) -> Iterator[dict]:
        """The server-sent events of a streamed completion, as chunk dicts (the response is
        closed however the iteration ends)."""
        try:
            with self._transport_errors(GenerationError):
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    with self._malformed("a stream event"):
                        event = json.loads(data)
                        if not _is_chunk(event):
                            raise TypeError("an event is not a chunk object")
                    yield event
        finally:
            response.close()

    def close(self) -> None:
        self._http.close()
        if self._local is not None:
            self._local.close()


# The special tokens of the chat templates in common use, by shape: ChatML, Llama 3, Phi and
# Qwen (``<|im_end|>``, ``<|eot_id|>``, ``<|end|>``), DeepSeek's full-width bars
# (``<｜end▁of▁sentence｜>``), Llama 2 and Mistral (``<s>``, ``[INST]``, ``<<SYS>>``,
# ``[TOOL_CALLS]``), SentencePiece's own (``<unk>``), and any lower-case word in angle brackets
# (Gemma's ``<start_of_turn>``, ``<tool_call>``, ``<think>``, StarCoder's ``<filename>``; an
# HTML tag in a document only gains an invisible character).
SPECIAL_SHAPES = re.compile(
    r"<\|[^|<>\s]{1,48}\|>|<｜[^｜<>]{1,48}｜>|</?s>|<(?:unk|pad|bos|eos|mask|sep|cls)>"
    r"|\[/?(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|TOOL_CONTENT|IMG|IMG_BREAK|IMG_END"
    r"|PREFIX|MIDDLE|SUFFIX)\]|<</?SYS>>|</?[a-z][a-z_]{2,23}>")


def _is_chunk(event) -> bool:
    """Whether a stream event has the shape of OpenAI's ``chat.completion.chunk`` as far as
    ragkit reads it: choices, each with a delta whose content is text (or none)."""
    if not isinstance(event, dict) or not isinstance(event.get("choices") or [], list):
        return False
    for choice in event.get("choices") or []:
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not isinstance(delta or {}, dict) or \
                not isinstance((delta or {}).get("content") or "", str) or \
                not isinstance(choice.get("finish_reason") or "", str):
            return False
    return True


def server_timings(out: dict) -> dict:
    """llama.cpp's server reports its own prompt and generation counters (``timings``);
    other servers report none."""
    t = out.get("timings") or {}
    if not t.get("prompt_ms") and not t.get("predicted_ms"):
        return {}
    return {"prompt_ms": float(t.get("prompt_ms") or 0), "prompt_tokens": int(t.get("prompt_n") or 0),
            "eval_ms": float(t.get("predicted_ms") or 0), "eval_tokens": int(t.get("predicted_n") or 0)}
