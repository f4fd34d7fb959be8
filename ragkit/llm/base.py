"""The LLM interface every backend implements: llama-cpp in process (``gguf.GGUFModel``) and
any OpenAI-compatible server (``remote.ServerLLM``). Pipelines only see this."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Protocol, Sequence, runtime_checkable

from ..errors import GenerationError


@dataclass(frozen=True)
class Generation:
    """One completion: its text, why it stopped and how many tokens it took."""

    text: str
    finish_reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extra: dict = field(default_factory=dict)


@runtime_checkable
class LLM(Protocol):
    """A chat model that can also count tokens with its own tokenizer."""

    n_ctx: int

    @property
    def name(self) -> str:
        """The model's name (a file's, or the one a server serves), as the trace records it."""

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in this model's vocabulary (no BOS)."""

    def chat(self, messages: Sequence[dict], *, max_tokens: int, stop: Sequence[str] = (),
             temperature: float = 0.0, seed: int = 42, on_token: Callable[[str], None] | None = None,
             grammar: str | None = None, json_schema: dict | None = None) -> Generation:
        """Generate the assistant's reply to ``messages`` (OpenAI-style role/content dicts);
        with ``on_token``, stream each piece of text to it as it is written; with ``grammar``
        (GBNF text, see ``llm.grammars``), write only text that the grammar accepts; with
        ``json_schema``, write only JSON that the schema accepts (OpenAI's structured
        outputs; one or the other, not both). A grammar that does not compile is a
        ``ModelError``."""


# What the generation running in this thread writes: "answer" (the answer the reader reads),
# "reask" (the answer asked again, in the question's language) or "step" (anything else: a
# plan, an entity list). Set by the stage that asks; read by whoever streams the tokens.
PURPOSES = ("answer", "reask", "step")
_PURPOSE: ContextVar[str] = ContextVar("ragkit_generation_purpose", default="step")


@contextlib.contextmanager
def generating(purpose: str) -> Iterator[None]:
    """Mark the generations made inside as ``purpose`` (one of ``PURPOSES``), for the token
    callbacks they call (``generation_purpose``): a server streams only the answer's tokens
    as the answer's text. A context variable, so each thread (each question) has its own."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose: must be one of {', '.join(PURPOSES)}, got {purpose!r}")
    token = _PURPOSE.set(purpose)
    try:
        yield
    finally:
        _PURPOSE.reset(token)


def generation_purpose() -> str:
    """What the generation now running in this thread writes (``generating``; "step" when
    nothing said). A token callback runs inside its generation, so it may ask."""
    return _PURPOSE.get()


def collect_stream(chunks: Iterable[dict], on_token: Callable[[str], None]) -> Generation:
    """Join OpenAI-style ``chat.completion.chunk`` dicts into one Generation, passing each
    piece of content to ``on_token`` on the way (both backends stream this shape). The
    stream is closed however it ends, including when ``on_token`` raises to stop it."""
    parts: list[str] = []
    finish = ""
    try:
        for chunk in chunks:
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece:
                    parts.append(piece)
                    on_token(piece)
                finish = choice.get("finish_reason") or finish
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    if not finish:
        raise GenerationError(f"model stream: ended without a finish reason after {len(parts)} pieces "
                         "(the server cut it short)")
    return Generation(text="".join(parts), finish_reason=finish, completion_tokens=len(parts),
                      extra={"streamed": True})


class TokenTap:
    """An LLM that passes every piece of text any of its generations writes to
    ``on_token(text, call)``, where ``call`` numbers the generations (1, 2, ...: a pipeline
    may ask the model more than once, e.g. to plan and then to answer)."""

    def __init__(self, inner: LLM, on_token: Callable[[str, int], None]):
        self.inner = inner
        self.on_token = on_token
        self.calls = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def n_ctx(self) -> int:
        return self.inner.n_ctx

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def __getattr__(self, name: str):   # chat_format, config, ...: the inner model's
        return getattr(self.inner, name)

    def chat(self, messages: Sequence[dict], *, max_tokens: int, stop: Sequence[str] = (),
             temperature: float = 0.0, seed: int = 42, on_token: Callable[[str], None] | None = None,
             grammar: str | None = None, json_schema: dict | None = None) -> Generation:
        self.calls += 1
        call = self.calls

        def both(piece: str) -> None:
            self.on_token(piece, call)
            if on_token is not None:
                on_token(piece)

        # A model written before json_schema existed is sent it only when there is one.
        constraint = {"json_schema": json_schema} if json_schema is not None else {}
        return self.inner.chat(messages, max_tokens=max_tokens, stop=stop, temperature=temperature,
                               seed=seed, on_token=both, grammar=grammar, **constraint)
