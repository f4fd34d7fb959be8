"""The answer stage every pipeline shares: generate → post-process → check → accept the
model's answer or fall back to the deterministic one written from the evidence.

A pipeline hands this stage a ``Draft``: its evidence answer (written without a model), the
prompt to ask the model, and how to check what the model wrote. The stage returns an
``Outcome`` in one vocabulary for every pipeline:

- ``answer_source``: ``"model"`` (the model's answer passed the check and is the answer),
  ``"fallback"`` (the model answered, or failed to, and the evidence answer replaced it;
  ``fallback_reason`` says why) or ``"evidence"`` (no model was asked: ``--no-llm``, or no
  evidence to ask about);
- ``check``: ``{"passed", "reason", ...}``: the check of the model's answer whenever a model
  answered, else of the evidence answer itself.

Model failures follow one policy. A model that cannot be loaded (a missing or broken GGUF, a
bad server URL) raises ``ModelError`` before anything is answered. A model that fails while
writing the answer (a server that is down or too slow, an HTTP error, a cut stream: a
``GenerationError``) does not fail the question: the evidence answer is given, with
``check.passed`` false and the reason ``"model failed: ..."``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .config import LLMConfig
from .errors import GenerationError
from .llm.grounding import check_grounding
from .llm.postprocess import filter_think_tags, looks_english
from .llm.prompts import REASK_VI
from .profiler import Profiler

ANSWER_SOURCES = ("model", "fallback", "evidence")


@dataclass(frozen=True)
class Check:
    """Whether an answer says only what its evidence holds, and why not."""

    passed: bool
    reason: str = ""
    details: dict = field(default_factory=dict)   # the check's own figures (support, names ...)

    def to_dict(self) -> dict:
        return {"passed": self.passed, "reason": self.reason, **self.details}


def grounding_check(evidence: Sequence[str], question: str = "") -> Callable[[str], Check]:
    """The default check: the answer's content words and numbers must be in the evidence
    (``llm.grounding.check_grounding``)."""

    def check(answer: str) -> Check:
        report = check_grounding(answer, evidence, question)
        details = report.to_dict()
        details.pop("grounded")
        reason = details.pop("reason")
        return Check(report.grounded, reason, details)

    return check


def _plain(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


@dataclass
class Draft:
    """What a pipeline gives the answer stage.

    ``prompt`` builds the messages for the model (it may use the model's tokenizer to fit
    a budget) and returns them with how many evidence items the prompt kept; ``None``: there
    is nothing to ask (no evidence). ``check`` judges a text against the evidence.
    ``refusals`` are the pipeline's own "not enough evidence" sentences: an answer that is
    one of them passes the check, since it claims nothing."""

    evidence_answer: str
    check: Callable[[str], Check]
    prompt: Callable[[Any], tuple[list[dict], int | None]] | None = None
    language: str = "en"              # "vi": an English answer is re-asked in Vietnamese
    refusals: Sequence[str] = ()
    fallback_note: str = ""           # appended to the evidence answer when it replaces the model's
    clean: Callable[[str], str] | None = None   # pipeline-specific tidying after <think> removal
    max_tokens: int | None = None     # None: the LLM config's

    def judge(self, text: str) -> Check:
        plain = _plain(text)
        if plain and any(plain == _plain(r) for r in self.refusals):
            return Check(True, "says the evidence is not enough to answer", {"refusal": True})
        return self.check(text)


@dataclass
class Outcome:
    """The answer the stage settled on and how (the answer part of every trace)."""

    text: str
    answer_source: str
    check: Check
    model_answer: str | None = None       # what the model wrote (after <think> removal)
    raw_answer: str | None = None         # what the model wrote, as it came
    fallback_reason: str = ""
    reasked: bool = False
    completion_tokens: int = 0
    finish_reason: str = ""
    kept_evidence: int | None = None      # evidence items the prompt kept (None: all)

    def to_dict(self) -> dict:
        out = {"answer_source": self.answer_source, "check": self.check.to_dict()}
        if self.answer_source != "evidence":
            out.update({"model_answer": self.model_answer, "raw_answer": self.raw_answer,
                        "reasked": self.reasked, "completion_tokens": self.completion_tokens,
                        "finish_reason": self.finish_reason})
        if self.fallback_reason:
            out["fallback_reason"] = self.fallback_reason
        return out


def answer(draft: Draft, model, llm_config: LLMConfig, profiler: Profiler | None = None,
           use_llm: bool = True) -> Outcome:
    """Run the answer stage on ``draft`` (timed as "prompt", "generation" and
    "postprocessing")."""
    profiler = profiler or Profiler()
    if not use_llm or model is None or draft.prompt is None:
        return Outcome(draft.evidence_answer, "evidence", draft.judge(draft.evidence_answer))
    max_tokens = draft.max_tokens or llm_config.max_tokens
    with profiler.stage("prompt"):
        messages, kept = draft.prompt(model)
    raw = text = ""
    reasked = False
    gen = None
    try:
        with profiler.stage("generation"):
            gen = model.chat(messages, max_tokens=max_tokens, temperature=llm_config.temperature,
                             seed=llm_config.seed)
        raw = gen.text
        with profiler.stage("postprocessing"):
            text = _tidy(raw, draft)
            if draft.language == "vi" and llm_config.reask_vietnamese and looks_english(text):
                reasked = True
                follow_up = [*messages, {"role": "assistant", "content": text},
                             {"role": "user", "content": REASK_VI}]
                gen = model.chat(follow_up, max_tokens=max_tokens,
                                 temperature=llm_config.temperature, seed=llm_config.seed)
                text = _tidy(gen.text, draft)
    except GenerationError as exc:
        reason = f"model failed: {exc}"
        return Outcome(_with_note(draft), "fallback", Check(False, reason), model_answer=text or None,
                       raw_answer=raw or None, fallback_reason=reason, reasked=reasked,
                       kept_evidence=kept)
    with profiler.stage("check"):
        check = draft.judge(text) if text.strip() else Check(False, "the model wrote nothing")
    common = dict(model_answer=text, raw_answer=raw, reasked=reasked,
                  completion_tokens=gen.completion_tokens, finish_reason=gen.finish_reason,
                  kept_evidence=kept)
    if check.passed:
        return Outcome(text, "model", check, **common)
    return Outcome(_with_note(draft), "fallback", check,
                   fallback_reason=f"the check failed: {check.reason}", **common)


def _tidy(text: str, draft: Draft) -> str:
    text = filter_think_tags(text)
    return draft.clean(text) if draft.clean else text


def _with_note(draft: Draft) -> str:
    return f"{draft.evidence_answer}\n\n{draft.fallback_note}" if draft.fallback_note else draft.evidence_answer


__all__ = ["ANSWER_SOURCES", "Check", "Draft", "Outcome", "answer", "grounding_check"]
