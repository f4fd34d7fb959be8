"""Answers that arrive: time to the first piece of the answer against time to the whole
answer on the OpenAI-compatible stream (``POST /v1/chat/completions`` with ``"stream":
true``) of a real ``ragkit serve``, with the default GGUF (SmolLM2-135M Q4_1), and the
answer deadline the server derived from the model's speed measured at start-up.

    .venv/bin/python bench/stream_latency.py   -> outputs/bench/stream_latency.json

The server serves the kg demo store (English questions from ``data/kgqa_dev.jsonl``) and
the lexical demo index (Vietnamese questions from ``data/manual_questions.jsonl``), without
``--timeout``. For each question, asked once through the ``openai`` client: seconds from
the request to the first chunk (the role), to the first content (the model's first token;
for an answer without the model, its first word), and to the last chunk (the check's
verdict); medians per pipeline. Before the stream carried tokens, the first content came
with the verdict: ``full_answer_s`` is also what the first content took then. The machine's
load average is recorded beside the figures, since a busy machine slows every one of them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import openai

from _common import ROOT, write
from ragkit.pipelines import get_pipeline
from ragkit.service import demo_data_dir
from ragkit.testing.launch import free_port, running_http, serve_command

QUESTION_FILES = {"kg": ROOT / "data" / "kgqa_dev.jsonl", "lexical": ROOT / "data" / "manual_questions.jsonl"}


def questions(pipeline: str, n: int) -> list[str]:
    lines = QUESTION_FILES[pipeline].read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines[:n]]


def timed_stream(client: openai.OpenAI, model: str, question: str) -> dict:
    """One streamed answer's arrival times (seconds from the request) and what it was."""
    started = time.perf_counter()
    first_chunk = first_content = None
    pieces = 0
    final = None
    for chunk in client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}],
                                                stream=True):
        now = time.perf_counter() - started
        first_chunk = now if first_chunk is None else first_chunk
        if chunk.choices and chunk.choices[0].delta.content:
            first_content = now if first_content is None else first_content
            pieces += 1
        if chunk.choices and chunk.choices[0].finish_reason:
            final = (now, chunk.ragkit)
    assert final is not None and first_content is not None, "the stream ended without its verdict"
    full_s, verdict = final
    trace = verdict["trace"]
    generation = trace.get("generation") or {}
    return {"question": question, "first_chunk_s": round(first_chunk, 3), "first_content_s": round(first_content, 3),
            "full_answer_s": round(full_s, 3), "content_chunks": pieces,
            "completion_tokens": generation.get("completion_tokens"), "answer_source": trace["answer_source"],
            "check_passed": trace["check"]["passed"], "replaced": verdict["replaced"],
            "reasked": bool(trace.get("reasked"))}


def median(rows: list[dict], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=3, help="questions per pipeline")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ragkit-stream-") as scratch:
        sources: dict[str, str] = {}
        for pipeline in QUESTION_FILES:
            sources.update(get_pipeline(pipeline).build_demo(demo_data_dir(), Path(scratch), progress=False))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        command = serve_command(port, "--store", sources["typed_kg"], "--index", sources["index"],
                                "--log-level", "info")
        log = Path(scratch) / "server.log"
        with running_http(command, url + "/health", timeout=300, log=log):
            for _ in range(2400):            # the warm-up measures the model in the background
                start_deadline = httpx.get(url + "/").json()["answer_deadline"]
                if start_deadline["model_speed"]:
                    break
                time.sleep(0.25)
            client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=1800)
            results = {}
            for pipeline in QUESTION_FILES:
                rows = [timed_stream(client, f"ragkit-{pipeline}", q) for q in questions(pipeline, args.questions)]
                results[pipeline] = {"median_first_chunk_s": median(rows, "first_chunk_s"),
                                     "median_first_content_s": median(rows, "first_content_s"),
                                     "median_full_answer_s": median(rows, "full_answer_s"), "answers": rows}
            end_deadline = httpx.get(url + "/").json()["answer_deadline"]
        start_line = next((line.split("INFO:", 1)[-1].strip() for line in log.read_text().splitlines()
                           if "answer deadline:" in line), None)
    load_after = os.getloadavg()
    busy = max(load_before[0], load_after[0]) > 0.5
    write("stream_latency", {
        "command": ".venv/bin/python bench/stream_latency.py", "model": start_deadline["model_speed"]["model"],
        "route": "POST /v1/chat/completions, stream: true (openai client)",
        "load_average_1_5_15": {"before": [round(v, 2) for v in load_before],
                                "after": [round(v, 2) for v in load_after]},
        "note": ("other processes were using this 2-core machine during the run (see the load averages): "
                 "the absolute times are a busy machine's" if busy else "the machine was otherwise idle"),
        "start_up_log_line": start_line,
        "deadline_at_start": start_deadline, "deadline_after_the_answers": end_deadline,
        **results})


if __name__ == "__main__":
    main()
