"""The LLM layer: one interface (``base.LLM``) with the GGUF in process (``gguf``) and any
OpenAI-compatible server (``remote``) behind it, chosen by ``backends.default_llm``; the
prompts, the token budget, post-processing and the lexical grounding check."""
