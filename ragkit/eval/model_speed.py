"""How fast a catalog model answers here: ``ragkit model bench`` times a few answers of the
lexical pipeline on the bundled demo manuals and records the medians where ``ragkit model
list`` reads them (``ragkit.llm.catalog.record_benchmark``)."""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from ..config import LLMConfig, Settings
from ..errors import InputError
from ..llm.gguf import GGUFModel, available_cores
from ..llm.catalog import BENCH_QUESTIONS, here, model_spec, record_benchmark, resolve_model
from ..runtime.progress import progress_bar
from ..pipelines import DEFAULT_PIPELINE, get_pipeline
from ..service import AskRequest, Service, Sources, demo_data_dir


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def bench(name: str, answers: int = 2, settings: Settings | None = None, progress: bool | None = None) -> dict:
    """Time catalog model ``name`` answering ``answers`` of ``BENCH_QUESTIONS`` through the
    lexical pipeline on the bundled demo manuals (an index built in a scratch folder), after
    loading it once; record the median seconds per answer and the prompt and generation
    tokens per second (llama.cpp's own counters) in ``benchmarks.json``, and return them."""
    if not 1 <= answers <= len(BENCH_QUESTIONS):
        raise InputError(f"--answers: must be between 1 and {len(BENCH_QUESTIONS)}, got {answers}")
    settings = settings or Settings.from_env()
    resolved = resolve_model(model_spec(name).name, settings)
    assert resolved is not None             # a catalog name resolves to its installed file
    path = Path(resolved)
    config = LLMConfig.from_env(model_path=str(path))
    model = GGUFModel(config)
    rows = []
    try:
        started = time.perf_counter()
        _ = model.llama                                # the load, timed apart from the answers
        load_s = time.perf_counter() - started
        with tempfile.TemporaryDirectory(prefix="ragkit-bench-") as scratch:
            # The catalog's questions are asked of the default pipeline's demo source.
            where = get_pipeline(DEFAULT_PIPELINE).build_demo(demo_data_dir(), Path(scratch), progress=False)
            service = Service(Sources(**where), config, llm=model)
            try:
                for question in progress_bar(BENCH_QUESTIONS[:answers], desc=f"bench {name}", unit="answer",
                                             progress=progress):
                    started = time.perf_counter()
                    data = service.ask(AskRequest(question=question, pipeline=DEFAULT_PIPELINE))
                    seconds = time.perf_counter() - started
                    generation = data["trace"].get("generation") or {}
                    rows.append({"seconds": seconds, "source": data["trace"].get("answer_source"),
                                 "prompt": generation.get("prompt_tokens_per_s"),
                                 "generation": generation.get("generation_tokens_per_s")})
            finally:
                service.close()
    finally:
        model.close()
    figures = {"seconds_per_answer": _median([r["seconds"] for r in rows]),
               "prompt_tokens_per_s": _median([r["prompt"] for r in rows]),
               "generation_tokens_per_s": _median([r["generation"] for r in rows]),
               "answers": len(rows), "accepted": sum(r["source"] == "model" for r in rows),
               "load_s": round(load_s, 2), "threads": config.n_threads or available_cores(),
               "file": path.name, "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    written = record_benchmark(name, figures, settings)
    return {"name": name, "machine": here(), **figures, "benchmarks": str(written)}


__all__ = ["bench"]
