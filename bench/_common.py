"""Shared by the benchmark scripts: medians of repeated timings and JSON results."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RAGKIT_SHARED", ROOT.parent / "shared")) / "datasets"
OUT = ROOT / "outputs" / "bench"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The figures are SmolLM2-135M's unless a script or its --model names another: an installed
# 1.5B, which ragkit would otherwise pick (and whose tokenizer sizes the lexical context even
# with --no-llm), does not change them. The tests do the same.
os.environ.setdefault("RAGKIT_GGUF", "smollm2-135m")


def median_time(fn, repeat: int = 5) -> tuple[float, list[float]]:
    """Median wall seconds of ``repeat`` calls of ``fn`` (and every sample)."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), samples


def machine() -> dict:
    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "cpus": os.cpu_count(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%d")}


def commit_of(folder: str | Path) -> str:
    """The short commit checked out in ``folder`` (a ``git worktree`` of an earlier ragkit)."""
    import subprocess

    return subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def write(name: str, data: dict) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")
    return path


def write_labelled(name: str, label: str, result: dict, **fields) -> Path:
    """``outputs/bench/<name>.json`` with ``result`` under ``label``, the other labels an
    earlier run wrote kept, and ``fields`` (the run's setup, its command) updated."""
    previous = OUT / f"{name}.json"
    data = json.loads(previous.read_text()) if previous.exists() else {}
    data.pop("machine", None)
    data.update({**fields, label: result})
    return write(name, data)
