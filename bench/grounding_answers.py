"""Collect real model answers for the grounding-check benchmark (run once; slow on CPU).

Each question is asked through the real pipeline with a real GGUF model; the evidence the
answer stage checked against is recorded with the answer, so a person can label each answer
by reading both. The labels are written by hand into ``bench/grounding_answers.jsonl``; this
script only writes the unlabelled rows (``label: null``) to the path given.

    PYTHONPATH=. python bench/grounding_answers.py /tmp/answers.jsonl [--model qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _common import ROOT

sys.path.insert(0, str(ROOT))

from ragkit.pipelines import lexical as lexical_module  # noqa: E402
from ragkit.pipelines import spec as spec_module  # noqa: E402

# Our own questions, phrased for this collection (Vietnamese for the manuals, English for the spec primer).
QUESTIONS = [
    ("lexical", "Áp suất làm việc của máy nén khí piston là bao nhiêu?"),
    ("lexical", "Bao lâu thì phải thay dầu máy nén khí?"),
    ("lexical", "Trước khi khởi động máy nén khí cần kiểm tra những gì?"),
    ("lexical", "Khi khoan lỗ trên máy khoan đứng phải kẹp phôi thế nào?"),
    ("spec", "Which network function selects an SMF for a PDU Session?"),
    ("spec", "What does the SMF do with the UE IP address?"),
    ("spec", "What is the role of the UPF?"),
    ("spec", "What does NF Set mean?"),
]


def _recording(seen: list, check_factory):
    """A grounding_check that remembers the evidence each check was built from."""

    def make(evidence, question=""):
        seen.append(list(evidence))
        return check_factory(evidence, question)

    return make


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--model", default="smollm2-135m", help="a catalog name or GGUF path (default %(default)s)")
    args = parser.parse_args(argv)
    from ragkit.answer.stage import grounding_check
    from ragkit.config import LLMConfig
    from ragkit.service import AskRequest, Service, build_demo_sources

    seen: list = []
    lexical_module.grounding_check = _recording(seen, grounding_check)
    spec_module.grounding_check = _recording(seen, grounding_check)
    sources = build_demo_sources(Path(tempfile.gettempdir()) / "ragkit-grounding-demo")
    service = Service(sources, LLMConfig.from_env(model_path=args.model))
    with open(args.out, "a", encoding="utf-8") as out:
        for pipeline, question in QUESTIONS:
            seen.clear()
            data = service.ask(AskRequest(question, pipeline))
            trace = data["trace"]
            row = {"pipeline": pipeline, "question": question, "model": args.model,
                   "answer": trace.get("model_answer"), "evidence": seen[-1] if seen else [],
                   "old_check": trace["check"], "label": None}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
            print(pipeline, question, "->", (row["answer"] or "")[:120], flush=True)
    service.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
