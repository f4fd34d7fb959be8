"""How long the server waits for an answer: a deadline that follows the model's measured
speed on this machine (``ragkit.llm.speed``), unless ``--timeout`` fixes one.

A model answer reads at most ``n_ctx - max_tokens`` prompt tokens and writes at most
``max_tokens``; at the measured rates that takes ``prompt / prompt_tps + max_tokens /
generation_tps`` seconds. The deadline is that time, times the answers ahead of it on the
model (one generation at a time) plus one, times a safety factor (a busier machine, a
second generation: the Vietnamese re-ask, a kg plan), and never under the floor of the
fixed default it replaces (60 s). An answer without the model gets the floor.

A derived deadline does not cut off a model that is still writing: past it, the answer
goes on while tokens keep coming, and ends with a 504 only when the model has written
nothing for the stall timeout, the time to read a whole prompt (the longest silence of a
generation that works: the next call reading its prompt), and never under 30 s. A fixed
``--timeout`` is a hard limit on the whole answer, as it always was.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from dataclasses import dataclass
from typing import Callable

from ..llm.speed import MeasurementStopped, ModelSpeed, SpeedMeter, measure_speed, speed_of

log = logging.getLogger("ragkit.server")

FLOOR_S = 60.0          # the shortest derived deadline (the fixed default it replaces)
STALL_FLOOR_S = 30.0    # the shortest stall timeout
SAFETY = 3.0            # times the time the measured rates give


@dataclass(frozen=True)
class Deadline:
    """How long one answer may take. ``stall_s`` None: ``seconds`` is a hard limit; else
    an answer past ``seconds`` goes on while the model writes a token at least every
    ``stall_s`` seconds. ``basis`` says where the figure comes from (the 504 message)."""

    seconds: float
    stall_s: float | None = None
    basis: str = ""

    def to_dict(self) -> dict:
        return {"seconds": self.seconds, "stall_s": self.stall_s, "basis": self.basis}


def _known(speed: ModelSpeed | None) -> bool:
    return speed is not None and all(math.isfinite(r) and r > 0 for r in (speed.prompt_tps, speed.generation_tps))


def answer_seconds(speed: ModelSpeed, prompt_tokens: int, max_tokens: int) -> float:
    """Seconds to read ``prompt_tokens`` and write ``max_tokens`` at ``speed``'s rates.

    >>> answer_seconds(ModelSpeed(prompt_tps=100.0, generation_tps=10.0), 1000, 50)
    15.0
    """
    return max(prompt_tokens, 0) / speed.prompt_tps + max(max_tokens, 0) / speed.generation_tps


def answer_deadline(speed: ModelSpeed | None, prompt_tokens: int, max_tokens: int, *, ahead: int = 0,
                    safety: float = SAFETY, floor_s: float = FLOOR_S) -> float:
    """Whole seconds one model answer may take: ``safety × (ahead + 1) ×
    answer_seconds(speed, prompt_tokens, max_tokens)``, rounded up, at least ``floor_s``;
    ``floor_s`` when the speed is not known (not measured yet, or a zero or non-finite rate).
    ``ahead``: model answers already in flight, which the model writes first.

    >>> answer_deadline(ModelSpeed(prompt_tps=30.0, generation_tps=4.0), 1728, 320)
    413.0
    >>> answer_deadline(ModelSpeed(prompt_tps=600.0, generation_tps=60.0), 1728, 320)
    60.0
    >>> answer_deadline(None, 1728, 320)
    60.0
    """
    if not _known(speed):
        return floor_s
    assert speed is not None
    needed = safety * (max(ahead, 0) + 1) * answer_seconds(speed, prompt_tokens, max_tokens)
    return max(floor_s, float(math.ceil(needed)))


def stall_timeout(speed: ModelSpeed | None, prompt_tokens: int, *, safety: float = SAFETY,
                  floor_s: float = STALL_FLOOR_S) -> float:
    """Whole seconds without a token after which a model that is past its deadline is taken
    to have stalled: ``safety ×`` the time to read ``prompt_tokens``, at least ``floor_s``.

    >>> stall_timeout(ModelSpeed(prompt_tps=30.0, generation_tps=4.0), 1728)
    173.0
    >>> stall_timeout(None, 1728)
    30.0
    """
    if not _known(speed):
        return floor_s
    assert speed is not None
    return max(floor_s, float(math.ceil(safety * max(prompt_tokens, 0) / speed.prompt_tps)))


def time_left(now: float, started: float, deadline: Deadline, last_token: float | None) -> float:
    """Seconds before an answer started at ``started`` is overdue at ``now`` (0 or less:
    it is), its model's last token written at ``last_token`` (None: none yet).

    >>> soft = Deadline(60.0, stall_s=30.0)
    >>> time_left(100.0, 0.0, soft, last_token=90.0)   # past the deadline, tokens flowing
    20.0
    >>> time_left(100.0, 0.0, soft, last_token=None)   # past it, nothing written
    -40.0
    >>> time_left(100.0, 0.0, Deadline(60.0), last_token=99.0)   # a fixed --timeout
    -40.0
    """
    left = started + deadline.seconds - now
    if left > 0 or deadline.stall_s is None or last_token is None:
        return left
    return last_token + deadline.stall_s - now


def model_deadline(speed: ModelSpeed | None, *, n_ctx: int, max_tokens: int, ahead: int = 0,
                   floor_s: float = FLOOR_S, stall_s: float | None = None, rerank_tokens: int = 0) -> Deadline:
    """The deadline of one model answer of at most ``max_tokens`` in a context of ``n_ctx``
    (its prompt at most the rest), ``ahead`` model answers before it, and ``rerank_tokens``
    of prompts the model reads first to rerank the candidates; ``stall_s`` None: the derived
    stall timeout."""
    prompt = max(n_ctx - max_tokens, 0) + rerank_tokens
    seconds = answer_deadline(speed, prompt, max_tokens, ahead=ahead, floor_s=floor_s)
    stall = stall_s if stall_s is not None else stall_timeout(speed, prompt)
    if speed is None or not _known(speed):
        basis = f"the model's speed is not measured: the {floor_s:g} s floor"
    else:
        basis = (f"{speed.model or 'the model'} measured here at {speed.prompt_tps:.0f} prompt and "
                 f"{speed.generation_tps:.0f} written tokens/s, for up to {prompt} prompt and {max_tokens} "
                 f"written tokens" + (f" after {ahead} answers ahead" if ahead else "") +
                 f", x{SAFETY:g}, at least {floor_s:g} s")
    return Deadline(seconds, stall, f"{basis}; past it, only {stall:g} s without a token ends it; "
                                    "--timeout sets a fixed one")


def overdue(deadline: Deadline, stalled: bool) -> str:
    """The one-line 504 message of an answer past ``deadline`` (``stalled``: its model had
    been writing past it, then stopped for the stall timeout)."""
    message = f"request: no answer within {deadline.seconds:g} s"
    if stalled:
        message += f", and the model wrote nothing for {deadline.stall_s:g} s"
    return message + (f" (deadline: {deadline.basis})" if deadline.basis else "")


class Deadlines:
    """A server's deadlines: ``timeout_s`` (``--timeout``) for every answer when given;
    else, for a model answer, what the model's speed gives (``model_deadline``), measured
    once at start-up (``start``) and then from each answer's own figures (``observe``), and
    ``floor_s`` for an answer without the model. ``n_ctx`` and ``max_tokens`` are the LLM
    configuration's (a request may ask for another ``max_tokens``)."""

    def __init__(self, timeout_s: float | None, floor_s: float = FLOOR_S, stall_s: float | None = None,
                 n_ctx: int = 2048, max_tokens: int = 320):
        self.timeout_s, self.floor_s, self.stall_s = timeout_s, floor_s, stall_s
        self.n_ctx, self.max_tokens = n_ctx, max_tokens
        self.meter = SpeedMeter()
        self.in_flight = 0                      # model answers being answered or waiting
        self._measured: asyncio.Event | None = None
        self._stop = threading.Event()

    @property
    def fixed(self) -> bool:
        return self.timeout_s is not None

    def start(self, loop: asyncio.AbstractEventLoop, run: Callable, model: Callable) -> None:
        """Log the deadline; unless fixed, measure ``model()``'s speed first, in the
        background (``run(fn)``: a future of ``fn()`` in a worker). A model answer asked
        meanwhile waits for the measurement, as it would wait for the model anyway; ``stop``
        ends it early."""
        if self.fixed:
            log.info(f"answer deadline: {self.timeout_s:g} s (--timeout)")
            return
        measured = self._measured = asyncio.Event()

        def done(future) -> None:
            failed = future.cancelled() or future.exception()
            if isinstance(failed, MeasurementStopped):
                log.info("answer deadline: not measured (the server stopped first)")
            elif not failed:
                self.meter.record(future.result())
                typical = self.typical()
                log.info(f"answer deadline: {typical.seconds:g} s for a model answer ({typical.basis})")
            elif not future.cancelled():
                log.warning(f"answer deadline: {self.floor_s:g} s for a model answer (the model's speed could not "
                            f"be measured: {' '.join(str(failed).split())[:200]}); --timeout sets a fixed one")
            measured.set()

        run(lambda: measure_speed(model(), self._stop)).add_done_callback(done)

    def stop(self) -> None:
        """The server is stopping: a speed measurement under way starts no further generation,
        so the process is not kept alive by it for long."""
        self._stop.set()

    def typical(self) -> Deadline:
        """The deadline of a model answer of the configured length, none ahead of it."""
        if self.timeout_s is not None:
            return Deadline(self.timeout_s, None, "--timeout")
        return model_deadline(self.meter.current(), n_ctx=self.n_ctx, max_tokens=self.max_tokens,
                              floor_s=self.floor_s, stall_s=self.stall_s)

    async def for_answer(self, uses_model: bool, max_tokens: int | None = None, rerank_tokens: int = 0) -> Deadline:
        """The deadline of one answer (``max_tokens``: the request's, None: the configured;
        ``rerank_tokens``: the prompts of an LLM rerank before it)."""
        if self.timeout_s is not None:
            return Deadline(self.timeout_s)
        if not uses_model:
            return Deadline(self.floor_s, None, "an answer without the model; --timeout sets a fixed one")
        if self._measured is not None:
            await self._measured.wait()
        return model_deadline(self.meter.current(), n_ctx=self.n_ctx, max_tokens=max_tokens or self.max_tokens,
                              ahead=self.in_flight, floor_s=self.floor_s, stall_s=self.stall_s,
                              rerank_tokens=rerank_tokens)

    def observe(self, generation: dict) -> None:
        """One model answer's ``trace.generation``: its rates join the measurements."""
        current = self.meter.current()
        self.meter.record(speed_of(generation, model=current.model if current else ""))

    def to_dict(self) -> dict:
        """The typical deadline and the speed it comes from (``GET /``)."""
        speed = self.meter.current()
        return {**self.typical().to_dict(), "model_speed": speed.to_dict() if speed else None}


__all__ = ["Deadline", "Deadlines", "FLOOR_S", "SAFETY", "STALL_FLOOR_S", "answer_deadline", "answer_seconds",
           "model_deadline", "overdue", "stall_timeout", "time_left"]
