"""How many threads ragkit's own pools use: never more than the cores this process may run
on, so that beside JupyterLab kernels, a Neo4j and other jobs it degrades no worse than the
machine does.

- ``usable_cores()``: the CPUs in this process's affinity mask (``os.sched_getaffinity``),
  bounded by a cgroup CPU quota when one is set (a container given 1.5 CPUs of 16 gets 2);
- ``thread_count()``: ``RAGKIT_THREADS`` when set (one knob for llama.cpp, ONNX Runtime and
  the BM25 batch), else ``usable_cores()``.

A model answer takes the cores idle when it starts (``generation_threads``), unless a
thread count is set. ONNX Runtime's pool is told not to spin (``session.intra_op.allow_spinning`` 0): a spinning
worker burns a core waiting for the next operator, which on a busy machine takes that core
from the thread that has work.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1 = (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def cgroup_quota(v2: Path = CGROUP_V2, v1: tuple[Path, Path] = CGROUP_V1) -> float | None:
    """The CPUs a cgroup quota allows (quota / period), or None when there is none."""
    try:
        quota, period = v2.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us, period_us = int(v1[0].read_text()), int(v1[1].read_text())
        return quota_us / period_us if quota_us > 0 and period_us > 0 else None
    except (OSError, ValueError):
        return None


def usable_cores() -> int:
    """The cores this process may use: its affinity mask, bounded by a cgroup CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        cores = os.cpu_count() or 1
    quota = cgroup_quota()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def thread_count() -> int:
    """``RAGKIT_THREADS`` when set (read by ``ragkit.config.Settings``), else every usable core."""
    from ..config import Settings

    threads = Settings.from_env().threads
    return threads if threads is not None else usable_cores()


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) jiffies of all CPUs from /proc/stat, or None where there is none."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[3] + (fields[4] if len(fields) > 4 else 0), sum(fields[:8])


def free_cores(sample_s: float = 0.05) -> float | None:
    """How many cores were idle over the last ``sample_s`` seconds (the machine's idle share
    times its CPUs, at most ``usable_cores()``), or None where /proc/stat is not there."""
    first = _cpu_times()
    if first is None:
        return None
    time.sleep(sample_s)
    second = _cpu_times()
    if second is None or second[1] <= first[1]:
        return None
    idle = (second[0] - first[0]) / (second[1] - first[1])
    return min(float(usable_cores()), idle * (os.cpu_count() or 1))


def generation_threads() -> int:
    """Threads for the next model generation when nothing fixes them (``RAGKIT_THREADS``,
    ``LLMConfig.n_threads``): the cores idle right now, at least one. llama.cpp's threads
    wait for each other at every layer, so one that other work keeps off its core stalls the
    rest: beside two CPU-bound processes on 2 cores, Qwen2.5-Coder-1.5B wrote 3.0–5.2
    tokens/s on two threads and 7.3–7.6 on one (quiet: 21.6 on two, 12.9 on one)."""
    free = free_cores(0.1)
    if free is None:
        return usable_cores()
    # a core three quarters idle counts: a quiet machine's daemons do not take a thread away
    return max(1, min(usable_cores(), int(free + 0.75)))


def onnx_options(onnxruntime, threads: int | None = None):
    """ONNX Runtime session options: ``threads`` intra-op threads (default and at most
    ``thread_count()``) that do not spin, one inter-op thread (the graphs run operator after
    operator)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = thread_count() if threads is None else max(1, min(threads, thread_count()))
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


__all__ = ["cgroup_quota", "free_cores", "generation_threads", "onnx_options", "thread_count", "usable_cores"]
