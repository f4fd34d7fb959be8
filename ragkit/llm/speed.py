"""How fast the loaded model reads a prompt and writes tokens on this machine, measured
rather than assumed: ``measure_speed`` times a short warm-up generation, and a
``SpeedMeter`` keeps the figures later answers report (``trace.generation``), so the
estimate follows a machine that gets busier. The server derives its answer deadline from
them (``ragkit.server.deadlines``).

The figures are llama.cpp's own counters where the backend reports them (the GGUF in
process, llama.cpp's server: prompt and generation milliseconds and tokens), else the wall
clock around two generations of the same prompt: ``WARMUP_TOKENS`` tokens and one token
(the difference is writing; the second, less one token's writing, is reading the prompt).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

from .base import LLM

# About 120 tokens of prompt: long enough that the prompt rate is not all per-call overhead,
# short enough that measuring a 1.5B model on two slow cores takes seconds.
WARMUP_PROMPT = ("Read the notes and answer in one sentence.\n" + " ".join(
    f"Note {i}: the pump in room {i} was checked on day {i + 3} and found in working order." for i in range(1, 8))
    + "\nWhich room's pump was checked first?")
WARMUP_TOKENS = 16
MIN_PROMPT_TOKENS = 32        # an answer's figures count when it read at least this many prompt tokens
MIN_WRITTEN_TOKENS = 8        # ... and wrote at least this many


@dataclass(frozen=True)
class ModelSpeed:
    """Tokens per second of prompt read (``prompt_tps``) and of text written
    (``generation_tps``), and how they were measured."""

    prompt_tps: float
    generation_tps: float
    model: str = ""
    how: str = "llama.cpp counters"     # or "wall clock"

    def to_dict(self) -> dict:
        return {"model": self.model, "prompt_tokens_per_s": round(self.prompt_tps, 1),
                "generation_tokens_per_s": round(self.generation_tps, 1), "measured_by": self.how}


class MeasurementStopped(Exception):
    """``measure_speed`` was told to stop (a server shutting down) before it finished."""


def measure_speed(llm: LLM, stop: threading.Event | None = None) -> ModelSpeed:
    """``llm``'s speed here from a warm-up: one generation first (it loads the model and pages
    its weights in, which the figures must not count), then the measured one (and, for a
    backend without counters, one more that only reads the prompt). Raises what the model
    raises (a model that cannot load, a server that is down), and ``MeasurementStopped``
    when ``stop`` is set before a generation starts (a generation under way runs to its end:
    a few seconds at most)."""

    def chat(max_tokens: int):
        if stop is not None and stop.is_set():
            raise MeasurementStopped("the model's speed was not measured: stopped")
        return llm.chat(messages, max_tokens=max_tokens)

    messages = [{"role": "user", "content": WARMUP_PROMPT}]
    chat(1)
    started = time.perf_counter()
    written = chat(WARMUP_TOKENS)
    written_s = time.perf_counter() - started
    counters = written.extra or {}
    if counters.get("prompt_ms") and counters.get("eval_ms") and counters.get("eval_tokens"):
        return ModelSpeed(prompt_tps=1000 * counters["prompt_tokens"] / counters["prompt_ms"],
                          generation_tps=1000 * counters["eval_tokens"] / counters["eval_ms"], model=llm.name)
    started = time.perf_counter()
    read = chat(1)
    read_s = time.perf_counter() - started
    prompt_tokens = read.prompt_tokens or llm.count_tokens(WARMUP_PROMPT)
    more_tokens = max(written.completion_tokens - read.completion_tokens, 1)
    per_token_s = max(written_s - read_s, 1e-3) / more_tokens
    return ModelSpeed(prompt_tps=prompt_tokens / max(read_s - per_token_s, 1e-3),
                      generation_tps=1 / per_token_s, model=llm.name, how="wall clock")


def speed_of(generation: dict, model: str = "") -> ModelSpeed | None:
    """The speed one answer's ``trace.generation`` reports (``answer.stage.generation_figures``),
    when it read and wrote enough tokens for the rates to mean something; else None."""
    prompt, written = generation.get("prompt_tokens_per_s"), generation.get("generation_tokens_per_s")
    if not prompt or not written or (generation.get("prompt_tokens") or 0) < MIN_PROMPT_TOKENS \
            or (generation.get("completion_tokens") or 0) < MIN_WRITTEN_TOKENS:
        return None
    return ModelSpeed(prompt_tps=float(prompt), generation_tps=float(written), model=model)


class SpeedMeter:
    """The model's speed as the server plans with it: the slowest prompt rate and the
    slowest writing rate among the last ``window`` measurements (the warm-up's, then each
    answer's), so one quick answer on a busy machine does not shorten every deadline, and a
    machine that has calmed down is believed after ``window`` answers. Thread-safe."""

    def __init__(self, window: int = 8):
        self._seen: deque[ModelSpeed] = deque(maxlen=window)
        self._lock = threading.Lock()

    def record(self, speed: ModelSpeed | None) -> None:
        if speed is not None and speed.prompt_tps > 0 and speed.generation_tps > 0:
            with self._lock:
                self._seen.append(speed)

    def current(self) -> ModelSpeed | None:
        """The planning speed; None before any measurement."""
        with self._lock:
            seen = list(self._seen)
        if not seen:
            return None
        return ModelSpeed(prompt_tps=min(s.prompt_tps for s in seen),
                          generation_tps=min(s.generation_tps for s in seen),
                          model=seen[-1].model, how=seen[0].how if len(seen) == 1 else
                          f"the slowest of the last {len(seen)} measurements")

    def __len__(self) -> int:
        return len(self._seen)


__all__ = ["MeasurementStopped", "ModelSpeed", "SpeedMeter", "measure_speed", "speed_of"]
