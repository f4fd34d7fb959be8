"""The answer deadline the server derives from the model's measured speed
(``ragkit.server.deadlines``) and the measurement itself (``ragkit.llm.speed``): pure
functions and a stand-in model on a stand-in clock, so nothing here depends on how fast
this machine is."""

import doctest
import math

import pytest

from ragkit.llm.base import Generation
from ragkit.llm import speed as speed_module
from ragkit.llm.speed import ModelSpeed, SpeedMeter, measure_speed, speed_of
from ragkit.server import deadlines
from ragkit.server.deadlines import (FLOOR_S, Deadline, answer_deadline, model_deadline, overdue, stall_timeout,
                                     time_left)

SLOW = ModelSpeed(prompt_tps=30.0, generation_tps=4.0, model="qwen.gguf")     # a 1.5B on two busy cores
QUICK = ModelSpeed(prompt_tps=1500.0, generation_tps=90.0, model="smol.gguf")


def test_the_docstring_examples_hold():
    failed, tried = doctest.testmod(deadlines)
    assert tried and not failed


def test_a_slow_model_gets_the_time_its_speed_needs_and_a_quick_one_the_floor():
    # 1728 / 30 + 320 / 4 = 137.6 s, times 3, rounded up.
    assert answer_deadline(SLOW, 1728, 320) == 413.0
    assert answer_deadline(QUICK, 1728, 320) == FLOOR_S == 60.0
    assert answer_deadline(QUICK, 1728, 320, floor_s=5.0) == math.ceil(3 * (1728 / 1500 + 320 / 90))


@pytest.mark.parametrize("speed", [None, ModelSpeed(0.0, 4.0), ModelSpeed(30.0, 0.0), ModelSpeed(-1.0, 4.0),
                                   ModelSpeed(float("nan"), 4.0), ModelSpeed(30.0, float("inf"))])
def test_an_unknown_or_broken_speed_gives_the_floor(speed):
    assert answer_deadline(speed, 1728, 320) == FLOOR_S
    assert answer_deadline(speed, 1728, 320, floor_s=7.5) == 7.5
    assert stall_timeout(speed, 1728) == deadlines.STALL_FLOOR_S


def test_answers_ahead_multiply_the_time_and_odd_counts_are_clamped():
    one = answer_deadline(SLOW, 1728, 320, floor_s=0.0)
    assert answer_deadline(SLOW, 1728, 320, ahead=2, floor_s=0.0) == math.ceil(3 * 3 * (1728 / 30 + 320 / 4))
    assert answer_deadline(SLOW, 1728, 320, ahead=-4, floor_s=0.0) == one
    assert answer_deadline(SLOW, -10, 0, floor_s=0.0) == 0.0           # nothing to read or write
    assert answer_deadline(SLOW, 0, 1, floor_s=0.0) == 1.0             # 0.75 s rounds up to a whole second
    assert answer_deadline(SLOW, 1728, 320, safety=1.0, floor_s=0.0) == 138.0


def test_the_stall_timeout_is_the_time_to_read_a_whole_prompt():
    assert stall_timeout(SLOW, 1728) == 173.0            # 3 x 1728 / 30
    assert stall_timeout(QUICK, 1728) == 30.0            # the floor
    assert stall_timeout(SLOW, 0) == 30.0 and stall_timeout(SLOW, -5) == 30.0


def test_a_model_deadline_reads_its_prompt_from_the_context_left_and_says_how_it_was_made():
    made = model_deadline(SLOW, n_ctx=2048, max_tokens=320)
    assert made.seconds == 413.0 and made.stall_s == 173.0
    assert made.basis.startswith("qwen.gguf measured here at 30 prompt and 4 written tokens/s, for up to "
                                 "1728 prompt and 320 written tokens, x3, at least 60 s")
    assert made.basis.endswith("past it, only 173 s without a token ends it; --timeout sets a fixed one")
    longer = model_deadline(SLOW, n_ctx=2048, max_tokens=1024, ahead=1)
    assert longer.seconds == math.ceil(3 * 2 * (1024 / 30 + 1024 / 4)) and "after 1 answers ahead" in longer.basis
    assert model_deadline(SLOW, n_ctx=256, max_tokens=4096).seconds == math.ceil(3 * 4096 / 4)   # no prompt left
    unknown = model_deadline(None, n_ctx=2048, max_tokens=320, floor_s=90.0, stall_s=12.0)
    assert (unknown.seconds, unknown.stall_s) == (90.0, 12.0)
    assert unknown.basis.startswith("the model's speed is not measured: the 90 s floor")


def test_past_a_soft_deadline_only_a_silent_model_is_overdue():
    soft, hard = Deadline(60.0, stall_s=30.0), Deadline(60.0)
    assert time_left(10.0, 0.0, soft, None) == 50.0                  # before it, tokens or not
    assert time_left(10.0, 0.0, soft, 9.0) == 50.0
    assert time_left(100.0, 0.0, soft, 95.0) == 25.0                 # past it, the model writing
    assert time_left(100.0, 0.0, soft, 70.0) == 0.0                  # silent for exactly the stall: overdue
    assert time_left(100.0, 0.0, soft, 20.0) < 0                     # silent since well before the deadline
    assert time_left(100.0, 0.0, soft, None) == -40.0                # no token at all
    assert time_left(100.0, 0.0, hard, 99.9) == -40.0                # --timeout: a hard limit
    assert time_left(60.0, 0.0, soft, 59.0) == 29.0                  # at the deadline itself


def test_the_504_message_is_one_line_and_a_fixed_timeout_keeps_its_old_words():
    assert overdue(Deadline(0.2), stalled=False) == "request: no answer within 0.2 s"
    made = model_deadline(SLOW, n_ctx=2048, max_tokens=320)
    stalled = overdue(made, stalled=True)
    assert stalled.startswith("request: no answer within 413 s, and the model wrote nothing for 173 s "
                              "(deadline: qwen.gguf measured here at 30 prompt")
    assert "\n" not in stalled and "\n" not in overdue(made, stalled=False)


def test_the_meter_plans_with_the_slowest_of_its_last_measurements():
    meter = SpeedMeter(window=3)
    assert meter.current() is None
    meter.record(None)
    meter.record(ModelSpeed(0.0, 10.0))                  # a broken figure is not kept
    assert len(meter) == 0
    for prompt, written in ((100.0, 20.0), (50.0, 40.0), (200.0, 30.0)):
        meter.record(ModelSpeed(prompt, written, model="m.gguf"))
    now = meter.current()
    assert (now.prompt_tps, now.generation_tps, now.model) == (50.0, 20.0, "m.gguf")
    assert now.how == "the slowest of the last 3 measurements"
    meter.record(ModelSpeed(300.0, 50.0, model="m.gguf"))     # the slow first one leaves the window
    assert (meter.current().prompt_tps, meter.current().generation_tps) == (50.0, 30.0)


def test_an_answers_figures_count_only_when_it_read_and_wrote_enough():
    figures = {"prompt_tokens": 825, "completion_tokens": 319, "prompt_tokens_per_s": 87.2,
               "generation_tokens_per_s": 38.6}
    assert speed_of(figures, model="m") == ModelSpeed(87.2, 38.6, model="m")
    assert speed_of({**figures, "prompt_tokens": 10}) is None          # a cached prefix, a few new tokens
    assert speed_of({**figures, "completion_tokens": 2}) is None
    assert speed_of({"prompt_tokens": 825, "completion_tokens": 319}) is None   # a backend without counters
    assert speed_of({}) is None


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class TimedModel:
    """A model on a stand-in clock: reading a prompt token costs ``read_s``, writing one
    ``write_s``; with ``counters`` it reports them as llama.cpp does."""

    name = "stand-in.gguf"
    n_ctx = 2048

    def __init__(self, clock, read_s, write_s, counters):
        self.clock, self.read_s, self.write_s, self.counters = clock, read_s, write_s, counters
        self.calls = []

    def count_tokens(self, text):
        return len(text.split())

    def chat(self, messages, *, max_tokens, **_):
        prompt = self.count_tokens(messages[-1]["content"])
        self.calls.append(max_tokens)
        self.clock.now += prompt * self.read_s + max_tokens * self.write_s
        extra = {"prompt_ms": 1000 * prompt * self.read_s, "prompt_tokens": prompt,
                 "eval_ms": 1000 * max_tokens * self.write_s, "eval_tokens": max_tokens} if self.counters else {}
        return Generation("x " * max_tokens, "length", prompt_tokens=prompt if self.counters else 0,
                          completion_tokens=max_tokens, extra=extra)


@pytest.mark.parametrize("counters, how", [(True, "llama.cpp counters"), (False, "wall clock")])
def test_the_warm_up_measures_reading_and_writing_apart(monkeypatch, counters, how):
    clock = Clock()
    monkeypatch.setattr(speed_module.time, "perf_counter", clock)
    model = TimedModel(clock, read_s=0.01, write_s=0.25, counters=counters)
    measured = measure_speed(model)
    assert measured.how == how and measured.model == "stand-in.gguf"
    assert measured.prompt_tps == pytest.approx(100.0) and measured.generation_tps == pytest.approx(4.0)
    # A first generation loads the model and is not timed; without counters, one more reads the prompt alone.
    assert model.calls == ([1, speed_module.WARMUP_TOKENS] if counters else [1, speed_module.WARMUP_TOKENS, 1])


def test_a_stopped_measurement_starts_no_further_generation(monkeypatch):
    """A server stopping while it measures the model: the generation under way ends, no other
    starts, and the measurement says it stopped instead of giving a speed."""
    import threading

    clock = Clock()
    monkeypatch.setattr(speed_module.time, "perf_counter", clock)
    stop = threading.Event()
    model = TimedModel(clock, read_s=0.01, write_s=0.25, counters=True)
    chat = model.chat
    monkeypatch.setattr(model, "chat", lambda *a, **k: (stop.set(), chat(*a, **k))[1])
    with pytest.raises(speed_module.MeasurementStopped):
        measure_speed(model, stop)
    assert model.calls == [1]


def test_the_servers_deadlines_measure_once_then_follow_the_answers(monkeypatch, caplog):
    import asyncio
    import concurrent.futures

    from ragkit.server.deadlines import Deadlines

    clock = Clock()
    monkeypatch.setattr(speed_module.time, "perf_counter", clock)
    model = TimedModel(clock, read_s=1 / 30, write_s=1 / 4, counters=True)     # 30 and 4 tokens/s

    async def main():
        deadlines = Deadlines(None)
        loop = asyncio.get_running_loop()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            deadlines.start(loop, lambda fn: loop.run_in_executor(pool, fn), lambda: model)
            first = await deadlines.for_answer(True)         # waits for the measurement
        deadlines.in_flight = 2
        busy = await deadlines.for_answer(True, max_tokens=100)
        without = await deadlines.for_answer(False)
        deadlines.observe({"prompt_tokens": 900, "completion_tokens": 300, "prompt_tokens_per_s": 15.0,
                           "generation_tokens_per_s": 2.0})
        return deadlines, first, busy, without

    with caplog.at_level("INFO", logger="ragkit.server"):
        deadlines, first, busy, without = asyncio.run(main())
    assert first.seconds == 413.0 and first.stall_s == 173.0
    assert busy.seconds == math.ceil(3 * 3 * (1948 / 30 + 100 / 4)) and "after 2 answers ahead" in busy.basis
    assert without.seconds == 60.0 and without.stall_s is None
    assert deadlines.to_dict()["seconds"] == math.ceil(3 * (1728 / 15 + 320 / 2))     # a slower answer since
    assert deadlines.to_dict()["model_speed"]["measured_by"] == "the slowest of the last 2 measurements"
    assert [r.getMessage() for r in caplog.records] == [
        "answer deadline: 413 s for a model answer (stand-in.gguf measured here at 30 prompt and 4 written "
        "tokens/s, for up to 1728 prompt and 320 written tokens, x3, at least 60 s; past it, only 173 s without "
        "a token ends it; --timeout sets a fixed one)"]


def test_a_fixed_timeout_measures_nothing_and_a_model_that_fails_gets_the_floor(caplog):
    import asyncio
    import concurrent.futures

    from ragkit.errors import ModelError
    from ragkit.server.deadlines import Deadlines

    def broken():
        raise ModelError("model x.gguf: no such file")

    async def main():
        fixed, failing = Deadlines(120.0), Deadlines(None, floor_s=45.0)
        loop = asyncio.get_running_loop()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            run = lambda fn: loop.run_in_executor(pool, fn)   # noqa: E731
            fixed.start(loop, run, broken)
            failing.start(loop, run, broken)
            return await fixed.for_answer(True), await failing.for_answer(True), fixed.to_dict()

    with caplog.at_level("INFO", logger="ragkit.server"):
        fixed, failing, shown = asyncio.run(main())
    assert fixed == Deadline(120.0) and shown["basis"] == "--timeout" and shown["model_speed"] is None
    assert failing.seconds == 45.0 and failing.basis.startswith("the model's speed is not measured")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "answer deadline: 120 s (--timeout)"),
        ("WARNING", "answer deadline: 45 s for a model answer (the model's speed could not be measured: "
                    "model x.gguf: no such file); --timeout sets a fixed one")]


def test_a_server_stopped_while_measuring_logs_it_and_answers_with_the_floor(monkeypatch, caplog):
    """``Deadlines.stop`` during the start-up measurement: the measurement ends after the
    generation under way, the log says the deadline was not measured (no warning: nothing
    failed), and an answer still waiting gets the floor instead of waiting on."""
    import asyncio
    import concurrent.futures

    from ragkit.server.deadlines import Deadlines

    clock = Clock()
    monkeypatch.setattr(speed_module.time, "perf_counter", clock)
    model = TimedModel(clock, read_s=0.01, write_s=0.25, counters=True)

    async def main():
        deadlines = Deadlines(None, floor_s=50.0)
        chat = model.chat
        monkeypatch.setattr(model, "chat", lambda *a, **k: (deadlines.stop(), chat(*a, **k))[1])
        loop = asyncio.get_running_loop()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            deadlines.start(loop, lambda fn: loop.run_in_executor(pool, fn), lambda: model)
            return await deadlines.for_answer(True)

    with caplog.at_level("INFO", logger="ragkit.server"):
        waited = asyncio.run(main())
    assert model.calls == [1]
    assert waited.seconds == 50.0 and waited.basis.startswith("the model's speed is not measured")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "answer deadline: not measured (the server stopped first)")]
