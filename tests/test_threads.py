"""Thread counts: the cores this process may use (affinity and a cgroup quota), the one knob
that overrides them, and ONNX Runtime's pool sized by them without spinning."""

from __future__ import annotations

import os

import pytest

from ragkit.errors import InputError
from ragkit.runtime import threads


def test_a_cgroup_quota_bounds_the_cores(tmp_path, monkeypatch):
    v2 = tmp_path / "cpu.max"
    v2.write_text("150000 100000\n")
    assert threads.cgroup_quota(v2, (tmp_path / "x", tmp_path / "y")) == 1.5
    v2.write_text("max 100000\n")
    assert threads.cgroup_quota(v2, (tmp_path / "x", tmp_path / "y")) is None
    quota, period = tmp_path / "quota", tmp_path / "period"
    quota.write_text("50000\n")
    period.write_text("100000\n")
    assert threads.cgroup_quota(tmp_path / "absent", (quota, period)) == 0.5
    quota.write_text("-1\n")
    assert threads.cgroup_quota(tmp_path / "absent", (quota, period)) is None

    monkeypatch.setattr(threads, "cgroup_quota", lambda: 0.5)
    assert threads.usable_cores() == 1
    monkeypatch.setattr(threads, "cgroup_quota", lambda: None)
    assert threads.usable_cores() == len(os.sched_getaffinity(0))


def test_ragkit_threads_overrides_and_is_checked(monkeypatch):
    monkeypatch.delenv("RAGKIT_THREADS", raising=False)
    assert threads.thread_count() == threads.usable_cores()
    monkeypatch.setenv("RAGKIT_THREADS", "1")
    assert threads.thread_count() == 1
    for bad, why in (("two", "expected an integer"), ("0", "must be at least 1")):
        monkeypatch.setenv("RAGKIT_THREADS", bad)
        with pytest.raises(InputError, match=f"RAGKIT_THREADS: {why}"):
            threads.thread_count()


def test_onnx_runtime_sessions_use_the_count_and_do_not_spin(monkeypatch):
    import onnxruntime

    monkeypatch.setenv("RAGKIT_THREADS", "1")
    options = threads.onnx_options(onnxruntime)
    assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_the_bm25_batch_never_runs_more_threads_than_cores(monkeypatch):
    from ragkit.retrieval import bm25_batch
    from ragkit.retrieval.bm25 import BM25Index, BM25Params

    index = BM25Index.from_tokens([["a", "b"], ["b"], ["a"]] * 10, BM25Params())
    monkeypatch.setattr(bm25_batch, "usable_cores", lambda: 1)
    used = []
    monkeypatch.setattr(bm25_batch, "_pool", lambda workers: used.append(workers))
    queries = [["a"], ["b"]] * 10
    ranked = bm25_batch.top_k_many(index, queries, 3, threads=4, compiled=True)
    assert used == [] and len(ranked) == len(queries)     # one core: no pool at all


def test_a_generation_takes_the_cores_idle_when_it_starts(monkeypatch):
    measured = threads.free_cores(0.02)
    assert measured is not None and 0.0 <= measured <= threads.usable_cores()
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    for free, expected in ((0.1, 1), (1.0, 1), (1.3, 2), (1.9, 2), (None, 2)):
        monkeypatch.setattr(threads, "free_cores", lambda sample_s=0.05, f=free: f)
        assert threads.generation_threads() == expected


@pytest.mark.slow
def test_the_gguf_runs_on_the_threads_chosen_unless_they_are_set(monkeypatch):
    """A real GGUF: llama.cpp's thread count follows ``generation_threads`` per answer, and a
    count set in the config stays."""
    from ragkit.config import LLMConfig
    from ragkit.llm import gguf

    messages = [{"role": "user", "content": "Say hello."}]
    model = gguf.GGUFModel(LLMConfig(model_path="smollm2-135m"))
    monkeypatch.setattr(gguf, "generation_threads", lambda: 1)
    assert model.chat(messages, max_tokens=4).text is not None and model.threads == 1
    monkeypatch.setattr(gguf, "generation_threads", lambda: 2)
    model.chat(messages, max_tokens=4)
    assert model.threads == 2
    fixed = gguf.GGUFModel(LLMConfig(model_path="smollm2-135m", n_threads=1))
    fixed.chat(messages, max_tokens=4)
    assert fixed.threads == 1
