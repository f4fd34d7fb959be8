"""KG questions in the phrasings people use, asked through ``ask --pipeline kg --no-llm`` on the
demo biomedical KG (data/biomed) in the embedded store.

The questions are ``data/kgqa_dev.jsonl`` (written by hand, gold answers computed from the
CSV files alone by ``tools/kgqa_dev.py``). A question is right when:

- list shapes: the plan's final step holds exactly the gold nodes (set equality, by id);
- ``count``: the final count equals the gold count and the answer states it;
- ``unmapped`` (the graph cannot answer it): no plan ran, and the answer says so.

Reported per shape and per split: ``dev`` (read while building the planner) and
``held_out`` (measured only at the end).

    .venv/bin/python bench/kgqa_questions.py [--label after]
        -> outputs/bench/kgqa_questions.json (the label's figures replace that label's)

Run it with ``PYTHONPATH=<an earlier checkout>`` and ``--label before`` for the figures of
earlier code; ``--show-wrong`` prints the dev questions a label gets wrong; the held-out
figures are printed only with ``--held-out`` (they are in the JSON either way).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import ROOT, write_labelled

QUESTIONS = ROOT / "data" / "kgqa_dev.jsonl"
UNMAPPED = "I could not map this question to the graph"


def final_ids(trace: dict) -> list[str] | None:
    """Every node of the plan's final step (not only the first 15 the answer shows)."""
    plan = trace.get("plan")
    if not plan:
        return None
    return [i["id"] for i in trace["context_store"].get(plan["final"], [])]


def judge(record: dict, answer) -> bool:
    trace = answer.trace
    found = final_ids(trace)
    if record["shape"] == "unmapped":
        return found is None and answer.answer.startswith(UNMAPPED)
    if found is None:
        return False
    if "count" in record:
        total = trace["context_store"].get("final_result_total")
        return total == record["count"] and str(record["count"]) in answer.answer
    return set(found) == set(record["answer_ids"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--show-wrong", action="store_true")
    parser.add_argument("--held-out", action="store_true", help="print the held-out figures too")
    args = parser.parse_args()
    import ragkit
    from ragkit.kgqa.flow import KGQA
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore
    from ragkit.pipelines.kg import ask_kg

    records = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        store = NxTypedStore(Path(tmp) / "biomed.json.gz")
        import_kg(ROOT / "data" / "biomed" / "nodes.csv", ROOT / "data" / "biomed" / "edges.csv", store)
        qa = KGQA(store)
        right: dict[tuple[str, str], list[bool]] = defaultdict(list)
        wrong, seconds = [], []
        for record in records:
            started = time.perf_counter()
            answer = ask_kg(record["question"], qa, use_llm=False)
            seconds.append(time.perf_counter() - started)
            ok = judge(record, answer)
            right[(record["split"], record["shape"])].append(ok)
            if not ok:
                wrong.append({"id": record["id"], "split": record["split"], "question": record["question"],
                              "answer": answer.answer[:200]})
    result: dict = {"code": str(Path(ragkit.__file__).parent),
                    "ms_per_question_median": round(1000 * statistics.median(seconds), 2)}
    for split in ("dev", "held_out", "all"):
        merged: dict[str, list[bool]] = defaultdict(list)
        for (s, shape), oks in right.items():
            if split in (s, "all"):
                merged[shape].extend(oks)
        every = [ok for oks in merged.values() for ok in oks]
        result[split] = {"n": len(every), "exact_match": round(sum(every) / len(every), 3),
                         "by_shape": {shape: {"n": len(oks), "exact_match": round(sum(oks) / len(oks), 3)}
                                      for shape, oks in sorted(merged.items())}}
    result["wrong_dev"] = [w["id"] for w in wrong if w["split"] == "dev"]
    write_labelled("kgqa_questions", args.label, result, questions=str(QUESTIONS.relative_to(ROOT)),
                   n=len(records), command=f".venv/bin/python bench/kgqa_questions.py --label {args.label}")
    for split in ("dev", "held_out") if args.held_out else ("dev",):
        print(split, result[split]["exact_match"],
              {k: v["exact_match"] for k, v in result[split]["by_shape"].items()})
    if args.show_wrong:
        for w in wrong:
            if w["split"] == "dev":
                print(f"  {w['id']} {w['question']}\n      -> {w['answer']}")


if __name__ == "__main__":
    main()
