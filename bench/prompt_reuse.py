"""Prompt time of a first and of later questions when the system turn's KV cache is kept
(``LLMConfig.reuse_prefix``, on by default) and when every chat starts from a cleared cache,
with a GGUF in process. Same questions in the same order both ways; the answers must be
the same text (answers are cut at 48 tokens: the prompt is what is measured).

    .venv/bin/python bench/prompt_reuse.py [--model qwen2.5-coder-1.5b]   -> outputs/bench/prompt_reuse.json

Questions go to the lexical pipeline (demo manuals) and to the spec pipeline (demo specs),
alternating, each asked twice in a row: the second time the system turn is still in the
cache; after the other pipeline's question, its kept cache is put back. Prompt figures are
llama.cpp's own counters (tokens evaluated and milliseconds), so they exclude retrieval and
generation. Answers are compared: a question asked again (reused) must get the same text;
against the cleared runs, where the whole prompt is one evaluation, a different split of the
same tokens may change a last digit of the logits and so a word.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from _common import ROOT, write
from ragkit.config import LLMConfig
from ragkit.corpus import load_document_folder
from ragkit.llm.gguf import GGUFModel
from ragkit.llm.catalog import resolve_model
from ragkit.pipelines.lexical import ask_lexical
from ragkit.pipelines.spec import ask_spec
from ragkit.retrieval.bm25 import BM25Index
from ragkit.specs.build import build_kg
from ragkit.specs import open_store
from ragkit.text import tokenizer_for

LEXICAL = ["Các bước khởi động máy nén khí?", "Khi nào cần thay dầu máy tiện?",
           "Phải làm gì khi mũi khoan bị kẹt?"]
SPEC = ["What is the AMF?", "What does SMF stand for?", "What is the role of the NRF?"]
MAX_TOKENS = 48     # the prompt is what is measured; a short answer keeps the run short


def run(model_path: str, reuse: bool, index, store) -> list[dict]:
    config = LLMConfig.from_env(model_path=model_path, reuse_prefix=reuse, max_tokens=MAX_TOKENS)
    model = GGUFModel(config)
    rows = []
    try:
        for round_ in range(len(LEXICAL)):
            for pipeline, question in (("lexical", LEXICAL[round_]), ("spec", SPEC[round_])):
                for repeat in ("first", "again"):
                    if pipeline == "lexical":
                        answer = ask_lexical(question, index, llm=model, llm_config=config)
                    else:
                        answer = ask_spec(question, store, llm=model, llm_config=config)
                    generation = answer.trace.to_dict().get("generation") or {}
                    rows.append({"pipeline": pipeline, "question": question, "repeat": repeat,
                                 "answer": answer.answer, "source": answer.trace.answer_source,
                                 "prompt_tokens": generation.get("prompt_tokens"),
                                 "evaluated_tokens": round(generation["prompt_ms"] * generation["prompt_tokens_per_s"] / 1000)
                                 if generation.get("prompt_ms") else None,
                                 "prompt_ms": generation.get("prompt_ms")})
        rows[-1]["prefix_hits"] = model.prefix_hits
    finally:
        model.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = parser.parse_args()
    model_path = str(resolve_model(args.model))
    index = BM25Index.build(load_document_folder(ROOT / "data" / "manuals"), tokenizer_for("vi"), progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        store_path = str(Path(tmp) / "specs.json.gz")
        with open_store(store_path) as store:
            build_kg(sorted((ROOT / "data" / "specs").glob("*.md")), store, progress=False)
        with open_store(store_path, must_exist=True) as store:
            cold = run(model_path, False, index, store)
            warm = run(model_path, True, index, store)
    same = [a["answer"] == b["answer"] for a, b in zip(cold, warm)]
    repeat_same = [a["answer"] == b["answer"] for a, b in zip(warm[0::2], warm[1::2])]

    def median(rows, key, pipeline):
        values = [r[key] for r in rows[1:] if r["pipeline"] == pipeline and r[key] is not None]
        return round(statistics.median(values), 1) if values else None

    # per pipeline, every question but the run's very first (which meets a cold cache)
    summary = {pipeline: {f"{name}_{key}": median(rows, key, pipeline)
                          for name, rows in (("cleared", cold), ("reused", warm))
                          for key in ("prompt_tokens", "evaluated_tokens", "prompt_ms")}
               for pipeline in ("lexical", "spec")}
    summary["first_question"] = {"cleared_evaluated_tokens": cold[0]["evaluated_tokens"],
                                 "reused_evaluated_tokens": warm[0]["evaluated_tokens"]}
    summary["reused"] = {}
    summary["reused"]["prefix_hits"] = warm[-1].get("prefix_hits")
    summary["same_answers_reused_vs_cleared"] = f"{sum(same)}/{len(same)}"
    summary["same_answer_first_and_again_reused"] = f"{sum(repeat_same)}/{len(repeat_same)}"
    write("prompt_reuse", {"model": Path(model_path).name, "questions": len(cold), "summary": summary,
                           "cleared": cold, "reused": warm})
    for name in ("lexical", "spec", "first_question", "reused"):
        print(name, summary[name])
    print("same answers", summary["same_answers_reused_vs_cleared"], summary["same_answer_first_and_again_reused"])


if __name__ == "__main__":
    main()
