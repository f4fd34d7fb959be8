"""The LLM interface every backend implements (llama-cpp in process; an OpenAI-compatible
server comes beside it). Pipelines only see this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable


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

    name: str
    n_ctx: int

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in this model's vocabulary (no BOS)."""

    def chat(self, messages: Sequence[dict], *, max_tokens: int, stop: Sequence[str] = (),
             temperature: float = 0.0, seed: int = 42) -> Generation:
        """Generate the assistant's reply to ``messages`` (OpenAI-style role/content dicts)."""
