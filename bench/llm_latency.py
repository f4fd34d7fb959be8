"""End-to-end ``ask`` latency by stage with SmolLM2-135M Q4_1 (catalog name smollm2-135m), and our
generation speed against llama.cpp's own counters for the same model and prompt.

    .venv/bin/python bench/llm_latency.py   -> outputs/bench/llm_latency.json

Stage medians and p95 come from every (question, repeat) run. For tokens/s, llama.cpp's
perf counters (prompt eval + eval time, measured inside the C++ library) are the "raw"
speed; the ratio of our wall time to theirs is the overhead ragkit and the Python binding add.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from _common import ROOT, write
from ragkit.config import LexicalConfig, LLMConfig
from ragkit.corpus import load_document_folder
from ragkit.retrieval.bm25 import BM25Index
from ragkit.llm.gguf import GGUFModel
from ragkit.llm.prompts import format_chunk, lexical_messages
from ragkit.pipelines.lexical import ask_lexical
from ragkit.retrieval.search import retrieve
from ragkit.text import Tokenizer

QUESTIONS = ["Các bước vận hành máy phay như thế nào?",
             "Quy trình khóa nguồn và gắn thẻ gồm những bước nào?",
             "Phải làm gì khi mũi khoan bị kẹt?"]
REPEATS = 3


def main() -> None:
    config = LLMConfig(model_path="smollm2-135m", n_threads=2)
    model = GGUFModel(config)
    index = BM25Index.build(load_document_folder(ROOT / "data" / "manuals"), Tokenizer(bigrams=True),
                            progress=False)
    index_dir = ROOT / "outputs" / "index" / "bench_manuals"
    index.save(index_dir)
    model.count_tokens("warm up")
    model.chat([{"role": "user", "content": "hi"}], max_tokens=4)

    runs = []
    for question in QUESTIONS:
        for _ in range(REPEATS):
            answer = ask_lexical(question, index_dir, llm=model, llm_config=config)
            runs.append(answer.timings_ms | {"answer_source": answer.trace.answer_source,
                                             "completion_tokens": answer.trace.outcome.completion_tokens})
    stages = ["load_index", "retrieval", "mmr", "token_counting", "prompt", "generation", "postprocessing",
              "check", "total"]
    table = {}
    for stage in stages:
        values = [r.get(stage, 0.0) for r in runs]
        table[stage] = {"median_ms": round(statistics.median(values), 3),
                        "p95_ms": round(float(np.percentile(values, 95)), 3)}
    total = table["total"]["median_ms"]
    for stage in stages[:-1]:
        table[stage]["share"] = round(table[stage]["median_ms"] / total, 4)

    # Generation speed: the pipeline's own prompt for the first question, fixed length.
    _, hits = retrieve(index, QUESTIONS[0], LexicalConfig())
    context = "\n\n---\n\n".join(format_chunk(i + 1, h.title, h.text) for i, h in enumerate(hits[:2]))
    messages = lexical_messages(QUESTIONS[0], context, [])
    speed = []
    for _ in range(5):
        model.native_timings(reset=True)
        started = time.perf_counter()
        gen = model.chat(messages, max_tokens=128)
        wall_ms = (time.perf_counter() - started) * 1000
        native = model.native_timings()
        speed.append({"wall_ms": wall_ms, "native_ms": native["prompt_ms"] + native["eval_ms"],
                      "eval_ms": native["eval_ms"], "eval_tokens": native["eval_tokens"],
                      "prompt_tokens": native["prompt_tokens"], "completion_tokens": gen.completion_tokens})
    med = lambda key: statistics.median(s[key] for s in speed)  # noqa: E731
    generation = {
        "prompt_tokens": int(med("prompt_tokens")), "completion_tokens": int(med("completion_tokens")),
        "wall_ms": round(med("wall_ms"), 1), "llama_cpp_ms": round(med("native_ms"), 1),
        "ours_tokens_per_s": round(med("completion_tokens") / (med("wall_ms") - (med("native_ms") - med("eval_ms"))) * 1000, 1),
        "llama_cpp_eval_tokens_per_s": round(med("eval_tokens") / med("eval_ms") * 1000, 1),
        "overhead_ratio": round(med("wall_ms") / med("native_ms"), 4),
    }
    write("llm_latency", {"model": model.name, "n_ctx": config.n_ctx, "threads": 2,
                          "questions": QUESTIONS, "repeats": REPEATS, "stages": table,
                          "runs": runs, "generation": generation})
    for stage, row in table.items():
        print(f"{stage:>15}: median {row['median_ms']:>9.2f} ms  p95 {row['p95_ms']:>9.2f} ms")
    print(generation)


if __name__ == "__main__":
    main()
