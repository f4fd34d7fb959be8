"""KG questions in the phrasings people use, asked through ``ask --pipeline kg --no-llm`` in the
embedded store, on one of two KBs (``--kb``):

- ``biomed``: the demo biomedical KG (data/biomed), questions ``data/kgqa_dev.jsonl`` (written
  by hand, gold answers computed from the CSV files alone by ``tools/kgqa_dev.py``);
- ``studio``: an invented film-industry KG (data/studio: people, films, companies, cities,
  awards), questions ``data/studio_kg_questions.jsonl`` that name its relations in words
  unlike their names ("helmed", "the boss of", "home to"), in English and Vietnamese, and ask
  for relations it does not have; gold answers by name, ``null`` where it cannot answer.

A question is right when:

- list shapes: the plan's final step holds exactly the gold nodes (set equality, by id);
- ``count``: the final count equals the gold count and the answer states it;
- ``unmapped`` (the graph cannot answer it): no plan ran, and the answer says so.

Reported per shape and per split: ``dev`` (read while building the planner) and
``held_out`` (measured only at the end).

    .venv/bin/python bench/kgqa_questions.py [--kb biomed|studio] [--label after]
        -> outputs/bench/kgqa_questions.json (biomed), kgqa_studio.json (studio); the
           label's figures replace that label's

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

KBS = {"biomed": ("kgqa_questions", ROOT / "data" / "kgqa_dev.jsonl", ROOT / "data" / "biomed"),
       "studio": ("kgqa_studio", ROOT / "data" / "studio_kg_questions.jsonl", ROOT / "data" / "studio")}
UNMAPPED = "I could not map this question to the graph"


def final_ids(trace: dict) -> list[str] | None:
    """Every node of the plan's final step (not only the first 15 the answer shows)."""
    plan = trace.get("plan")
    if not plan:
        return None
    return [i["id"] for i in trace["context_store"].get(plan["final"], [])]


def shape_of(record: dict) -> str:
    """The question's shape: given (biomed), or ``unmapped`` for a ``null`` answer and
    ``list`` otherwise (studio)."""
    return record.get("shape") or ("unmapped" if record["answers"] is None else "list")


def judge(record: dict, answer) -> bool:
    trace = answer.trace
    found = final_ids(trace)
    if shape_of(record) == "unmapped":
        return found is None and answer.answer.startswith(UNMAPPED)
    if found is None:
        return False
    if "count" in record:
        total = trace["context_store"].get("final_result_total")
        return total == record["count"] and str(record["count"]) in answer.answer
    if "answer_ids" not in record:     # gold answers by name
        names = {i["name"] for i in trace["context_store"][trace["plan"]["final"]]}
        return names == set(record["answers"])
    return set(found) == set(record["answer_ids"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", choices=sorted(KBS), default="biomed")
    parser.add_argument("--label", default="after")
    parser.add_argument("--show-wrong", action="store_true")
    parser.add_argument("--held-out", action="store_true", help="print the held-out figures too")
    args = parser.parse_args()
    import ragkit
    from ragkit.kgqa.flow import KGQA
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore
    from ragkit.pipelines.kg import ask_kg

    name, questions, kb = KBS[args.kb]
    records = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        store = NxTypedStore(Path(tmp) / f"{args.kb}.json.gz")
        import_kg(kb / "nodes.csv", kb / "edges.csv", store)
        qa = KGQA(store)
        right: dict[tuple[str, str], list[bool]] = defaultdict(list)
        wrong, seconds = [], []
        for record in records:
            started = time.perf_counter()
            answer = ask_kg(record["question"], qa, use_llm=False)
            seconds.append(time.perf_counter() - started)
            ok = judge(record, answer)
            right[(record["split"], shape_of(record))].append(ok)
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
        if not every:
            continue
        result[split] = {"n": len(every), "exact_match": round(sum(every) / len(every), 3),
                         "by_shape": {shape: {"n": len(oks), "exact_match": round(sum(oks) / len(oks), 3)}
                                      for shape, oks in sorted(merged.items())}}
    result["wrong_dev"] = [w["id"] for w in wrong if w["split"] == "dev"]
    write_labelled(name, args.label, result, questions=str(questions.relative_to(ROOT)), n=len(records),
                   command=f".venv/bin/python bench/kgqa_questions.py --kb {args.kb} --label {args.label}")
    for split in [s for s in (("dev", "held_out") if args.held_out else ("dev",)) if s in result]:
        print(split, result[split]["exact_match"],
              {k: v["exact_match"] for k, v in result[split]["by_shape"].items()})
    if args.show_wrong:
        for w in wrong:
            if w["split"] == "dev":
                print(f"  {w['id']} {w['question']}\n      -> {w['answer']}")


if __name__ == "__main__":
    main()
