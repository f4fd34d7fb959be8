"""``ragkit eval answers``: answers judged against gold answers, whatever pipeline writes them.

Input: JSON lines (or a JSON list), one question per item::

    {"id": "q1", "question": "...", "answers": ["gold", "an alias"], "evidence": ["p6", "p10"]}

(``answer`` and ``answer_aliases`` are read too; ``evidence`` is optional: the ids of the
documents that hold the answer.) Each question goes through the same ``Service`` that
``ragkit ask`` uses, so the figures describe what users get.

Per question and overall:

- exact match and token F1 against the best gold answer, after SQuAD's normalisation
  (lower case, no punctuation, no articles "a", "an", "the", single spaces), as HotpotQA and
  MuSiQue score: ``short_em``/``short_f1`` of the short answer (``trace.short_answer``; the
  whole answer when there is none), ``em``/``f1`` of the whole answer as written;
- ``accepted`` and ``fallback``: the shares of questions the model answered (its answer
  passed the check) and whose model answer was replaced; ``seconds_per_answer`` (median);
  ``steps``: how many questions took 1, 2 or 3 retrieval steps; ``gold_in_evidence``: the
  share whose evidence (what the reader saw) held a gold answer, beside
  ``gold_in_retrieved``: the share whose retrieved chunks, whole, held one (the gap between
  the two is what the sentence cut and the token budget lost; ``median_context_tokens``:
  what the evidence cost in the prompt), both over the ``gold_checked`` questions whose gold
  answer is a span (a bare yes or no is read off facts, never quoted: those questions are
  left out of both shares), and with gold evidence ids,
  ``evidence_recall``: the share of gold documents among those the reader saw;
- citation precision and recall against the gold evidence ids: the cited documents are those
  whose ``[n]`` the answer writes (all the answer's citations when it writes none);
- where the answer came from (``model``, ``fallback``, ``evidence``) and its median time;
  with a model, the median prompt and completion tokens, prompt and generation tokens per
  second (llama.cpp's counters), and how many answers were cut off by ``max_tokens``;
- answers are scored without their ``[n]`` markers (where a claim comes from is not what it
  says);
- abstentions: an answer that says the evidence is not enough (one of the pipelines' own
  refusal sentences, a claim the answer stage's check found to be a refusal, or a short
  sentence with a common refusal phrase: ``answer.grounding.is_refusal``) is an abstention,
  not a wrong answer. It is ``abstention_right`` when the evidence the answer stage had
  (``Answer.evidence``) lacks every gold answer (no normalised gold answer occurs, as whole
  words, in its normalised text), wrong when the evidence held one (for a yes-or-no gold
  answer with gold evidence ids: right when the reader missed a gold document). Overall: how many
  abstained, how many of them rightly, and exact match and F1 over the answered questions
  (``answered_*``) beside the figures over all of them.

    ragkit eval answers --questions FILE --pipeline lexical --index DIR [--no-llm] [--limit N]
"""

from __future__ import annotations

import re
import statistics
import string
import time
from collections import Counter
from pathlib import Path

from ..runtime.progress import progress_bar

from ..errors import InputError
from ..answer.claims import strip_citations
from ..text.words import plain
from ..answer.grounding import is_refusal
from ..answer.reading import BARE_YES_NO
from .datasets import read_json_or_lines

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CITE = re.compile(r"\[(\d+)\]")


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, punctuation and articles removed, spaces collapsed."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall over the normalised answers."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_of(metric, prediction: str, golds: list[str]) -> float:
    return max((metric(prediction, g) for g in golds), default=0.0)


def refusal_sentences() -> tuple[str, ...]:
    """The pipelines' own sentences for "the evidence does not answer this" (an answer that
    opens with one abstains, whatever it adds: the kg pipeline says why it could not map the
    question, a fallback adds a note)."""
    from ..multihop.graph import NOT_ENOUGH
    from ..kgqa.answer import EMPTY_FINAL, EMPTY_STORE, NOT_MAPPED
    from ..pipelines.base import NOT_ENOUGH_VI
    from ..pipelines.spec import MODEL_REFUSAL_EN, NOT_ENOUGH_EN

    return NOT_ENOUGH, NOT_ENOUGH_VI, NOT_ENOUGH_EN, MODEL_REFUSAL_EN, NOT_MAPPED, EMPTY_STORE, EMPTY_FINAL


def abstained(answer: str, check: dict | None = None) -> bool:
    """Whether ``answer`` says the evidence is not enough instead of answering: it opens with
    a pipeline's refusal sentence, the answer stage's ``check`` of it (its ``trace.check``)
    found the answer or its core claim to be a refusal, or it is a short sentence with a
    common refusal phrase."""
    said = plain(answer)
    if any(said.startswith(plain(r)) for r in refusal_sentences()):
        return True
    check = check or {}
    claims, core = check.get("claims"), check.get("core")
    if check.get("refusal") or (claims and core is not None and claims[core].get("verdict") == "refusal"):
        return True
    return is_refusal(answer)


def holds_gold(evidence: list[str], golds: list[str]) -> bool:
    """Whether a normalised gold answer occurs, as whole words, in the normalised evidence."""
    text = f" {normalize_answer(' '.join(evidence))} "
    return any(f" {normalize_answer(g)} " in text for g in golds if normalize_answer(g))


def quotable(golds: list[str]) -> bool:
    """Whether a gold answer is something evidence can hold word for word: not a bare yes or
    no (those are read off two facts, so gold in the evidence cannot be judged by text)."""
    return any(normalize_answer(g) not in BARE_YES_NO for g in golds if normalize_answer(g))


def cited_documents(answer: str, citations: list[dict]) -> list[str]:
    """The documents the answer cites by ``[n]``; all its citations when it cites none."""
    by_id = {c["id"]: c["doc_id"] for c in citations}
    cited = [by_id[int(n)] for n in _CITE.findall(answer) if int(n) in by_id]
    return list(dict.fromkeys(cited or [c["doc_id"] for c in citations]))


def base_document(doc_id: str) -> str:
    """A chunk's document: ``p10#2`` and ``p10`` are the same document."""
    return doc_id.split("#", 1)[0]


def load_questions(path: str | Path) -> list[dict]:
    """Questions with their gold answers (one-line errors naming the file and item)."""
    path = Path(path)
    data = read_json_or_lines(path, "questions")
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise InputError(f"questions {path}: holds no questions")
    items = []
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict) or not str(item.get("question") or "").strip():
            raise InputError(f"questions {path}: item {i} has no 'question'")
        golds = item.get("answers")
        golds = golds if isinstance(golds, list) else [golds]
        if not any(g is not None and str(g).strip() for g in golds):
            golds = [item.get("answer")] + _aliases(item.get("answer_aliases"))
        if any(isinstance(g, (dict, list)) for g in golds):
            raise InputError(f"questions {path}: item {i}: an answer must be text or a number, not a list or object")
        golds = [str(g) for g in golds if g is not None and str(g).strip()]
        if not golds:
            raise InputError(f"questions {path}: item {i} has no 'answers' (or 'answer')")
        evidence = item.get("evidence")
        if evidence is not None and not isinstance(evidence, list):
            raise InputError(f"questions {path}: item {i}: 'evidence' must be a list of document ids")
        items.append({"id": str(item.get("id", i)), "question": str(item["question"]).strip(),
                      "answers": golds, "evidence": [str(e) for e in evidence] if evidence else None})
    return items


def _aliases(value) -> list:
    """An item's answer aliases: a list, or a list written as a string ("['Stanley Hall']",
    as some exports keep them), or one alias."""
    if isinstance(value, str):
        import ast

        try:
            value = ast.literal_eval(value) if value.strip().startswith("[") else [value]
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            value = [value]
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def evaluate_answers(items: list[dict], service, request_options: dict, progress: bool | None = None) -> dict:
    """Ask every question through ``service`` and score the answers."""
    from ..service import request_type

    rows = []
    for item in progress_bar(items, desc="answers", unit="q", progress=progress):
        started = time.perf_counter()
        typed = service.answer(request_type()(question=item["question"], **request_options))
        seconds = time.perf_counter() - started
        data = typed.to_dict()
        answer = data["answer"]
        said = strip_citations(answer)      # "[2]" is where a claim comes from, not what it says
        short = data["trace"].get("short_answer")
        scored = short if short else said      # no short answer: the whole answer is scored
        steps = data["trace"].get("steps") or []
        spans = quotable(item["answers"])
        row = {"id": item["id"], "question": item["question"], "answer": answer, "gold": item["answers"],
               "short_answer": short,
               "em": best_of(exact_match, said, item["answers"]),
               "f1": round(best_of(token_f1, said, item["answers"]), 4),
               "short_em": best_of(exact_match, scored, item["answers"]),
               "short_f1": round(best_of(token_f1, scored, item["answers"]), 4),
               "steps": len(steps) or 1,
               "gold_in_evidence": holds_gold(typed.evidence, item["answers"]) if spans else None,
               "gold_in_retrieved": holds_gold(typed.retrieved or typed.evidence, item["answers"]) if spans else None,
               "context_tokens": data["trace"].get("context_tokens"),
               "contains_gold": any(normalize_answer(g) in normalize_answer(said) for g in item["answers"]),
               "answer_source": data["trace"].get("answer_source", ""),
               "check_passed": (data["trace"].get("check") or {}).get("passed"),
               "check_reason": (data["trace"].get("check") or {}).get("reason", ""),
               "seconds": round(seconds, 3)}
        generation = data["trace"].get("generation") or {}
        for key in ("prompt_tokens", "completion_tokens", "prompt_tokens_per_s", "generation_tokens_per_s"):
            if key in generation:
                row[key] = generation[key]
        if "truncated" in data["trace"]:
            row["truncated"] = data["trace"]["truncated"]
        # A fallback's check judged the model's text, not the answer given.
        check = data["trace"].get("check") if row["answer_source"] != "fallback" else None
        row["abstained"] = abstained(answer, check)
        if row["abstained"]:
            row["abstention_right"] = not holds_gold(typed.evidence, item["answers"])
        if item["evidence"] is not None:
            cited = {base_document(d) for d in cited_documents(answer, data["citations"])}
            gold = {base_document(d) for d in item["evidence"]}
            row["citation_precision"] = round(len(cited & gold) / len(cited), 4) if cited else 0.0
            row["citation_recall"] = round(len(cited & gold) / len(gold), 4) if gold else None
            seen = {base_document(d) for step in steps for d in step.get("hits", ())} or \
                {base_document(d) for d in data["trace"].get("selected") or ()} or cited
            row["evidence_recall"] = round(len(seen & gold) / len(gold), 4) if gold else None
            if row["abstained"] and not spans and gold:     # yes or no: right only if a gold document was unseen
                row["abstention_right"] = not gold <= seen
        rows.append(row)
    return summarize(rows)


def _mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(sum(values) / len(values), 4) if values else None


def summarize(rows: list[dict]) -> dict:
    """The figures over all questions, over the answered ones (``answered_*``), the
    abstentions, and per answer source."""
    n = len(rows)
    mean = lambda key: _mean(rows, key) or 0.0    # noqa: E731
    sources = Counter(r["answer_source"] for r in rows)
    answered = [r for r in rows if not r["abstained"]]
    abstentions = [r for r in rows if r["abstained"]]
    right = sum(1 for r in abstentions if r["abstention_right"])
    out = {"n": n, "em": mean("em"), "f1": mean("f1"), "short_em": mean("short_em"), "short_f1": mean("short_f1"),
           "accepted": round(sources.get("model", 0) / n, 4) if n else 0.0,
           "fallback": round(sources.get("fallback", 0) / n, 4) if n else 0.0,
           "seconds_per_answer": round(statistics.median(r["seconds"] for r in rows), 3) if rows else None,
           "short_answers": sum(1 for r in rows if r.get("short_answer")),
           "gold_in_evidence": mean("gold_in_evidence"),
           "gold_in_retrieved": mean("gold_in_retrieved"),
           "gold_checked": sum(1 for r in rows if r.get("gold_in_evidence") is not None),
           "steps": {str(k): v for k, v in sorted(Counter(r["steps"] for r in rows).items())},
           "exact_match": mean("em"), "contains_gold": mean("contains_gold"),
           "answered": len(answered), "answered_exact_match": _mean(answered, "em"),
           "answered_f1": _mean(answered, "f1"),
           "abstained": len(abstentions), "abstention_right": right, "abstention_wrong": len(abstentions) - right,
           "answer_source": dict(sorted(sources.items())),
           "median_seconds": round(statistics.median(r["seconds"] for r in rows), 3) if rows else None}
    for key in ("prompt_tokens", "completion_tokens", "prompt_tokens_per_s", "generation_tokens_per_s",
                "context_tokens"):
        values = [r[key] for r in rows if r.get(key)]
        if values:
            out[f"median_{key}"] = round(statistics.median(values), 1)
    if any("truncated" in r for r in rows):
        out["truncated"] = sum(1 for r in rows if r.get("truncated"))
    if any("citation_precision" in r for r in rows):
        out["citation_precision"] = mean("citation_precision")
        out["citation_recall"] = mean("citation_recall")
        out["evidence_recall"] = mean("evidence_recall")
    by_source = {}
    for source in sources:
        part = [r for r in rows if r["answer_source"] == source]
        by_source[source] = {"n": len(part), "exact_match": round(sum(r["em"] for r in part) / len(part), 4),
                             "f1": round(sum(r["f1"] for r in part) / len(part), 4),
                             "short_em": round(sum(r["short_em"] for r in part) / len(part), 4),
                             "short_f1": round(sum(r["short_f1"] for r in part) / len(part), 4)}
    out["by_answer_source"] = by_source
    out["details"] = rows
    return out
