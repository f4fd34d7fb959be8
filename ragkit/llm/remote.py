"""Any OpenAI-compatible chat server behind the ``LLM`` interface (``RAGKIT_LLM_URL``), for
example ``python -m llama_cpp.server --model model.gguf --host 127.0.0.1``.

Generation goes to ``/v1/chat/completions`` (streamed as server-sent events when a caller
wants tokens as they come). Token counts come from the server's own tokenizer when it has
one (llama-cpp-python's ``/extras/tokenize/count``); a server without that endpoint gets the
local GGUF's vocabulary, which is exact only when the server runs the same model.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import Callable, Iterator, Sequence

from ..config import LLMConfig
from ..errors import GenerationError, ModelError
from ..extras import requires_extra
from .base import Generation, collect_stream
from .gguf import CHATML_STOP

with requires_extra("llm"):
    import httpx


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
        self._name: str | None = None
        self._bos: int | None = None        # tokens the server adds to any text (a BOS)
        self._local = None                  # the fallback tokenizer (a local GGUF)
        self._no_endpoint = False           # the server has no tokenizer endpoint
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- HTTP
    @contextlib.contextmanager
    def _transport_errors(self, error: type[ModelError] = ModelError) -> Iterator[None]:
        """httpx's timeouts and connection errors as one-line ``error``s (a GenerationError
        while writing an answer, so the answer stage can fall back)."""
        try:
            yield
        except httpx.TimeoutException:
            raise error(f"llm server {self.url}: no reply within {self.config.server_timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise error(f"llm server {self.url}: not reachable ({type(exc).__name__}: {exc})") from None

    def _post(self, path: str, body: dict, error: type[ModelError] = ModelError) -> httpx.Response:
        with self._transport_errors(error):
            return self._http.post(path, json=body)

    def _fail(self, response: httpx.Response, error: type[ModelError] = ModelError) -> ModelError:
        try:
            detail = response.json()
            detail = detail.get("error", detail) if isinstance(detail, dict) else detail
            detail = detail.get("message", detail) if isinstance(detail, dict) else detail
        except ValueError:
            detail = response.text
        detail = " ".join(str(detail).split())[:300]
        return error(f"llm server {self.url}: HTTP {response.status_code} ({detail})")

    @property
    def name(self) -> str:
        """The model the server reports at ``/v1/models`` (its first one)."""
        if self._name is None:
            try:
                response = self._http.get("/v1/models")
                models = response.json().get("data") or [] if response.is_success else []
            except (httpx.HTTPError, ValueError):
                models = []
            self._name = os.path.basename(str(models[0].get("id", ""))) if models else "server"
        return self._name

    # ----------------------------------------------------------------- tokens
    def _server_count(self, text: str) -> int | None:
        response = self._post("/extras/tokenize/count", {"input": text}, GenerationError)
        if response.status_code in (404, 405):
            return None
        if not response.is_success:
            raise self._fail(response)
        return int(response.json()["count"])

    def _local_tokenizer(self):
        from .gguf import GGUFModel

        with self._lock:
            if self._local is None:
                self._local = GGUFModel(self.config)
        return self._local

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in the served model's vocabulary (no BOS). A server with no
        tokenizer endpoint, or one that is down, is counted for with the local GGUF's
        tokenizer (an estimate: the generation that follows reports the server's failure)."""
        if not text:
            return 0
        try:
            with self._lock:
                if self._bos is None and not self._no_endpoint:
                    self._bos = self._server_count("")
                    self._no_endpoint = self._bos is None
            if self._no_endpoint:
                return self._local_tokenizer().count_tokens(text)
            return max(0, (self._server_count(text) or 0) - self._bos)
        except GenerationError:     # down or too slow: estimate now, ask the server next time
            return self._local_tokenizer().count_tokens(text)

    # ----------------------------------------------------------------- scoring
    def choice_logprobs(self, prompt: str, choices: Sequence[str], top: int = 20) -> list[float]:
        """Log-probabilities that the token after ``prompt`` is each choice, from the
        server's top ``top`` next tokens (``/v1/completions`` with ``logprobs``). A choice
        outside that list gets the lowest listed value, an upper bound."""
        response = self._post("/v1/completions", {"prompt": prompt, "max_tokens": 1, "temperature": 0.0,
                                                   "logprobs": top, "seed": 42})
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

    # ----------------------------------------------------------------- generation
    def chat(self, messages: Sequence[dict], *, max_tokens: int, stop: Sequence[str] = (),
             temperature: float = 0.0, seed: int = 42,
             on_token: Callable[[str], None] | None = None, grammar: str | None = None) -> Generation:
        """The reply to ``messages``; a ``grammar`` (GBNF) goes in the request's ``grammar``
        field, which llama.cpp's server and llama-cpp-python's server apply. It is parsed
        here first with the local GGUF's llama.cpp (llama-cpp-python's server would crash on
        one that does not parse)."""
        body = {"messages": list(messages), "max_tokens": max_tokens, "temperature": temperature,
                "seed": seed, "stop": list(dict.fromkeys([*stop, CHATML_STOP])),
                "stream": on_token is not None}
        if grammar is not None:
            self._local_tokenizer().grammar(grammar)
            body["grammar"] = grammar
        if on_token is not None:
            return collect_stream(self._stream(body), on_token)
        response = self._post("/v1/chat/completions", body, GenerationError)
        if not response.is_success:
            raise self._fail(response, GenerationError)
        out = response.json()
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Generation(text=(choice.get("message") or {}).get("content") or "",
                          finish_reason=choice.get("finish_reason") or "",
                          prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", 0)),
                          extra=server_timings(out))

    def _stream(self, body: dict) -> Iterator[dict]:
        """The server-sent events of a streamed completion, as chunk dicts."""
        with self._transport_errors(GenerationError), \
                self._http.stream("POST", "/v1/chat/completions", json=body) as response:
            if not response.is_success:
                response.read()
                raise self._fail(response, GenerationError)
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                yield json.loads(data)

    def close(self) -> None:
        self._http.close()
        if self._local is not None:
            self._local.close()


def server_timings(out: dict) -> dict:
    """llama.cpp's server reports its own prompt and generation counters (``timings``);
    other servers report none."""
    t = out.get("timings") or {}
    if not t.get("prompt_ms") and not t.get("predicted_ms"):
        return {}
    return {"prompt_ms": float(t.get("prompt_ms") or 0), "prompt_tokens": int(t.get("prompt_n") or 0),
            "eval_ms": float(t.get("predicted_ms") or 0), "eval_tokens": int(t.get("predicted_n") or 0)}
