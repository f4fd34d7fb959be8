"""One place that picks the LLM backend: an OpenAI-compatible server when ``RAGKIT_LLM_URL``
(``LLMConfig.server_url``) is set, else the GGUF in process."""

from __future__ import annotations

from functools import lru_cache

from ..config import LLMConfig
from .base import LLM


@lru_cache(maxsize=2)
def default_llm(config: LLMConfig) -> LLM:
    """One model object per configuration, shared by every question in the process."""
    if config.server_url:
        from .remote import ServerLLM

        return ServerLLM(config)
    from .gguf import GGUFModel

    return GGUFModel(config)
