"""``ragkit eval graphqa``: Hits@1 of the graph pipeline's answer (``--no-llm``: the end of
the best path), how often an anchor was found, and milliseconds per question (mean, p50, p95).

Questions: JSON lines ``{"question": ..., "answers": [...]}``."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from ..runtime.progress import progress_bar

from ..corpus import read_jsonl
from ..errors import InputError
from ..config import GraphConfig
from ..multihop.graph import GraphRAG


def load_questions(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"questions {path}: no such file")
    items = []
    for lineno, obj in read_jsonl(path, "questions"):
        if "question" not in obj or not isinstance(obj.get("answers"), list):
            raise InputError(f"questions {path}:{lineno}: needs 'question' and a list 'answers'")
        items.append(obj)
    if not items:
        raise InputError(f"questions {path}: holds no questions")
    return items


def evaluate_graphqa(graph_dir: str | Path, questions: str | Path, params: GraphConfig | None = None,
                     progress: bool | None = None, limit: int | None = None) -> dict:
    rag = GraphRAG.load(graph_dir)
    items = load_questions(questions)[:limit]
    hits = anchored = 0
    latencies = []
    started = time.perf_counter()
    for item in progress_bar(items, desc="questions", unit="q", progress=progress):
        t = time.perf_counter()
        result = rag.query(item["question"], params)
        latencies.append((time.perf_counter() - t) * 1000)
        anchored += bool(result.anchors)
        hits += result.answer is not None and result.answer in item["answers"]
    seconds = time.perf_counter() - started
    n = len(items)
    p50, p95 = np.percentile(latencies, [50, 95])
    return {"n": n, "hits@1": round(hits / n, 4), "found_anchor": round(anchored / n, 4),
            "ms_per_question": round(seconds * 1000 / n, 3), "p50_ms": round(float(p50), 3),
            "p95_ms": round(float(p95), 3)}
