"""The LLM layer: one interface (``base.LLM``) with the GGUF in process (``gguf``) and any
OpenAI-compatible server (``remote``) behind it, chosen by ``backends.default_llm``; the
prompts, the token budget and post-processing. The checks of an answer against its evidence
need no model and live in ``ragkit.answer``."""
