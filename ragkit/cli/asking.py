"""Commands that answer or check: ``ask`` (a question, with citations), ``check`` (an
answer's claims against evidence) and ``explain`` (causal chains)."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import InputError
from .output import _emit
from .pipeline_options import _pipeline_arguments


def cmd_ask(args: argparse.Namespace) -> int:
    from ..config import LLMConfig
    from ..service import Service, request_type

    llm_config = LLMConfig.from_env(model_path=args.model, n_ctx=args.n_ctx,
                                    max_tokens=args.max_tokens)
    sources, options = _pipeline_arguments(args)
    request = request_type()(question=args.question, pipeline=args.pipeline, no_llm=args.no_llm, **options)
    service = Service(sources, llm_config)
    try:
        data = service.ask(request)
    finally:
        service.close()
    cites = "\n".join(f"[{c['id']}] {c['source']} · {c['title']}" for c in data["citations"])
    _emit(data, args.json, f"{data['answer']}\n\n{cites}\n\ntimings (ms): {data['timings_ms']}")
    _note_fallback(data["trace"])
    return 0


def read_evidence(path: str) -> tuple[list[str], list]:
    """Evidence texts and their ids from ``--evidence``: a JSON list of strings or of
    {"id", "text"} objects, or JSON lines of either (ids default to 1, 2, ...)."""
    from ..inputs import read_text

    raw = read_text(path, "--evidence").strip()
    try:
        items = (json.loads(raw) if raw.startswith("[")
                 else [json.loads(line) for line in raw.splitlines() if line.strip()])
    except json.JSONDecodeError as exc:
        raise InputError(f"--evidence {path}: not JSON or JSON lines ({exc.msg}, line {exc.lineno})") from None
    texts, ids = [], []
    for n, item in enumerate(items, 1):
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            texts.append(item["text"])
            ids.append(item["id"] if item.get("id") is not None else n)
        elif isinstance(item, str):
            texts.append(item)
            ids.append(n)
        else:
            raise InputError(f"--evidence {path}: item {n} is neither a string nor an object with a text")
    if not any(t.strip() for t in texts):
        raise InputError(f"--evidence {path}: holds no evidence text")
    return texts, ids


def cmd_check(args: argparse.Namespace) -> int:
    from ..answer.grounding import check_claims

    if not args.answer.strip():
        raise InputError("--answer: is empty")
    texts, ids = read_evidence(args.evidence)
    data = check_claims(args.answer, texts, args.question or "").to_dict()
    for claim in data["claims"]:          # the evidence's own ids, where the file gave them
        if claim["support"]:
            claim["evidence"] = claim["support"]["evidence"] = ids[claim["support"]["evidence"] - 1]
    lines = [f"{'ok ' if c['supported'] else 'NO '} {c['verdict']:<11} {c['text']}"
             + (f"\n      {c['why']}" if c["why"] and not c["supported"] else "") for c in data["claims"]]
    _emit(data, args.json, f"passed: {data['passed']}  {data['reason']}\n" + "\n".join(lines))
    return 0


def _note_fallback(trace: dict) -> None:
    """A model that failed while answering does not fail the command (the evidence answer
    is given), but it is said on stderr as well as in the trace."""
    reason = trace.get("fallback_reason", "")
    if reason.startswith("model failed"):
        print(f"ragkit: note: {reason}; answered from the evidence", file=sys.stderr)


def cmd_explain(args: argparse.Namespace) -> int:
    from ..config import LLMConfig
    from ..pipelines.causal import explain, explain_json

    answer = explain(args.question, args.kg, weather=args.weather, at=args.at,
                     use_llm=args.llm, llm_config=LLMConfig.from_env(model_path=args.model))
    data = explain_json(answer)
    _emit(data, args.json, f"{data['answer']}\n\ntimings (ms): {data['timings_ms']}")
    return 0
