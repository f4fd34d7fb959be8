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

The default check judges each claim (sentence, list item) of an answer against the evidence
it cites (``answer.grounding.check_claims``; ``check.claims`` holds each verdict and its span).
A claim that cites an item which does not support it, while another item does
(``miscited``), is given citing that item (``recited_claims`` lists each correction) and the
answer is checked again. A model answer whose core claim (its first) is supported but some
later claims are not is
given without them (``dropped_claims`` lists them and why); one whose core claim fails is
replaced by the evidence answer, and ``fallback_reason`` says so. With
``LLMConfig.judge_claims`` the model may confirm borderline claims (its own "claim_judge"
stage) before that.

A model that runs out of tokens (``finish_reason`` "length") is marked ``truncated``; its
unfinished last claim is trimmed off (``cut_claim``) and the whole claims before it are
checked as any answer. ``generation`` in the trace holds the prompt and completion tokens
and, where the backend measures them, prompt and generation tokens per second.

Model failures follow one policy. A model that cannot be loaded (a missing or broken GGUF, a
bad server URL) raises ``ModelError`` before anything is answered. A model that fails while
writing the answer (a server that is down or too slow, an HTTP error, a cut stream: a
``GenerationError``) does not fail the question: the evidence answer is given, with
``check.passed`` false and the reason ``"model failed: ..."``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol, Sequence

from ..config import LLMConfig
from ..errors import GenerationError
from .claims import remove_claims, renumber_citations, split_claims, trim_to_whole_claims
from .grounding import check_claims, judge_borderline
from .verdicts import ClaimReport, Verdict
from ..llm.base import generating
from ..llm.postprocess import filter_think_tags, looks_english
from ..llm.prompts import REASK_VI
from ..runtime.profiler import Profiler
from ..text.words import plain

ANSWER_SOURCES = ("model", "fallback", "evidence")

# What an answer without the model says when the evidence is not enough (Vietnamese).
NOT_ENOUGH_VI = "Không đủ thông tin trong tài liệu để trả lời câu hỏi này."


@dataclass(frozen=True)
class Check:
    """Whether an answer says only what its evidence holds, and why not."""

    passed: bool
    reason: str = ""
    details: dict = field(default_factory=dict)   # the check's own figures (names, a refusal ...)
    claims: ClaimReport | None = None             # the claim check's verdicts, when one ran

    def to_dict(self) -> dict:
        figures = self.claims.figures() if self.claims is not None else {}
        return {"passed": self.passed, "reason": self.reason, **figures, **self.details}

    @property
    def verdicts(self) -> list[Verdict]:
        """Each claim's verdict ([] where no claim check ran)."""
        return list(self.claims.claims) if self.claims is not None else []


def grounding_check(evidence: Sequence[str], question: str = "") -> Callable[[str], Check]:
    """The default check: every claim of the answer must be supported by the evidence it
    cites: its words, numbers and units, negations and the roles of its names
    (``answer.grounding.check_claims``). ``[n]`` in an answer is ``evidence[n - 1]``."""
    evidence = list(evidence)

    def check(answer: str) -> Check:
        report = check_claims(answer, evidence, question)
        return Check(report.passed, report.reason, claims=report)

    return check


class ShortReader(Protocol):
    """How the answer stage reads a model's answer for the draft's short answer:
    ``complete`` puts the answer in the shape the check reads, ``read`` gives its short answer
    (None: it gives none), ``resupport`` stands a failing answer's short answer on the
    evidence's own sentence (None: it cannot). ``answer.factoid.Factoid`` reads a factoid
    question's answer; ``NamedShort`` takes the draft's own short answer when the model names it."""

    def complete(self, text: str) -> str: ...

    def read(self, text: str) -> str | None: ...

    def resupport(self, text: str) -> str | None: ...


@dataclass(frozen=True)
class NamedShort:
    """The short answer the evidence gave (a graph's node, a KG's one result), when a model's
    answer names it."""

    short: str

    def complete(self, text: str) -> str:
        return text

    def read(self, text: str) -> str | None:
        return self.short if self.short.lower() in text.lower() else None

    def resupport(self, text: str) -> str | None:
        return None


@dataclass
class Draft:
    """What a pipeline gives the answer stage.

    ``prompt`` builds the messages for the model (it may use the model's tokenizer to fit
    a budget) and returns them with how many evidence items the prompt kept; ``None``: there
    is nothing to ask (no evidence). ``check`` judges a text against the evidence.
    ``refusals`` are the pipeline's own "not enough evidence" sentences: an answer that is
    one of them passes the check, since it claims nothing. ``evidence`` is the text the
    answer may draw on (what an evaluation looks for the gold answer in)."""

    evidence_answer: str
    check: Callable[[str], Check]
    prompt: Callable[[Any], tuple[list[dict], int | None]] | None = None
    language: str = "en"              # "vi": an English answer is re-asked in Vietnamese
    refusals: Sequence[str] = ()
    fallback_note: str = ""           # appended to the evidence answer when it replaces the model's
    # What replaces a model's answer that fails the check (None: the evidence answer): a refusal
    # where the evidence answer only quotes sentences, holding no answer of the asked kind.
    fallback_answer: str | None = None
    # The model's answer's lines are its claims: blank lines and spaces before a line end go.
    close_lines: bool = False
    max_tokens: int | None = None     # None: the LLM config's
    cites: Sequence[int] | None = None  # the citation id of each evidence item the check reads (None: n is n)
    evidence: Sequence[str] = ()       # the evidence texts, for judging abstentions (ragkit eval answers)
    # The whole texts retrieval found, before any cut or budget (empty: the same as ``evidence``):
    # an evaluation compares what retrieval found with what the reader was shown.
    retrieved: Sequence[str] = ()
    short_answer: str | None = None    # the evidence answer's short answer (a name, date, number, yes/no)
    # How a model's answer is read for its short answer (None: a model's answer has none).
    short_reader: ShortReader | None = None

    def judge(self, text: str) -> Check:
        said = plain(text)
        if said and any(said == plain(r) for r in self.refusals):
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
    dropped_claims: list[dict] = field(default_factory=list)   # {text, why} of claims left out
    claim_judge: list[dict] = field(default_factory=list)      # {claim, logodds} the model judged
    truncated: bool = False               # the model hit max_tokens (finish_reason "length")
    cut_claim: str = ""                   # the unfinished last claim that was trimmed off
    generation: dict = field(default_factory=dict)  # prompt/completion tokens and tokens per second
    recited_claims: list[dict] = field(default_factory=list)   # {text, cited, now}: citations corrected
    short_answer: str | None = None       # the answer's short answer, when the question asks for one
    resupported: bool = False             # the model's short answer stands on the evidence's sentence

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"answer_source": self.answer_source, "check": self.check.to_dict(),
                               "short_answer": self.short_answer}
        if self.answer_source != "evidence":
            out.update({"model_answer": self.model_answer, "raw_answer": self.raw_answer,
                        "reasked": self.reasked, "completion_tokens": self.completion_tokens,
                        "finish_reason": self.finish_reason, "truncated": self.truncated,
                        "generation": self.generation})
            if self.cut_claim:
                out["cut_claim"] = self.cut_claim
        if self.fallback_reason:
            out["fallback_reason"] = self.fallback_reason
        if self.dropped_claims:
            out["dropped_claims"] = self.dropped_claims
        if self.recited_claims:
            out["recited_claims"] = self.recited_claims
        if self.claim_judge:
            out["claim_judge"] = self.claim_judge
        if self.resupported:
            out["resupported"] = True
        return out


@dataclass
class _Written:
    """What the model wrote, as far as it got: the tidied text, the raw reply, whether it was
    re-asked, the generation and how many evidence items the prompt kept."""

    text: str = ""
    raw: str = ""
    reasked: bool = False
    kept: int | None = None
    gen: Any = None
    cut_claim: str = ""

    @property
    def truncated(self) -> bool:
        return self.gen is not None and self.gen.finish_reason == "length"


@dataclass(frozen=True)
class Settled:
    """How the stage settled a model's answer, once checked: kept as ``written`` (its
    citations corrected where a claim cited the wrong item), ``trimmed`` of the claims the
    evidence does not support, ``resupported`` (its short answer on the evidence's own
    sentence), or ``replaced`` by the evidence answer (or the draft's fallback)."""

    how: Literal["written", "trimmed", "resupported", "replaced"]
    text: str
    check: Check
    dropped: tuple[dict, ...] = ()


def answer(draft: Draft, model, llm_config: LLMConfig, profiler: Profiler | None = None,
           use_llm: bool = True) -> Outcome:
    """Run the answer stage on ``draft`` (timed as "prompt", "generation" and
    "postprocessing"). Three outcomes: no model is asked (the evidence answer, checked); the
    model fails while answering (the fallback); or the model answers, and its answer is
    checked and settled (``Settled``)."""
    profiler = profiler or Profiler()
    if not use_llm or model is None or draft.prompt is None:
        return Outcome(draft.evidence_answer, "evidence", draft.judge(draft.evidence_answer),
                       short_answer=draft.short_answer)
    with profiler.stage("prompt"):
        messages, kept = draft.prompt(model)
    written = _Written(kept=kept)
    try:
        _write(messages, draft, model, llm_config, profiler, written)
    except GenerationError as exc:
        reason = f"model failed: {exc}"
        return Outcome(_with_note(draft), "fallback", Check(False, reason), model_answer=written.text or None,
                       raw_answer=written.raw or None, fallback_reason=reason, reasked=written.reasked,
                       kept_evidence=written.kept, short_answer=_fallback_short(draft))
    text = written.text
    with profiler.stage("check"):
        nothing = "the model was cut off before it finished a claim" if written.truncated else "the model wrote nothing"
        check = draft.judge(text) if text.strip() else Check(False, nothing)
    judged: list[dict] = []
    if not check.passed and llm_config.judge_claims and hasattr(model, "choice_logprobs") \
            and check.claims is not None and any(c.borderline for c in check.verdicts):
        with profiler.stage("claim_judge"):
            report, judged = judge_borderline(check.claims, model)
        check = Check(report.passed, report.reason, check.details, report)
    recited_claims: list[dict] = []
    if not check.passed:
        with profiler.stage("check"):
            recited = recite(text, check, draft)
        if recited is not None:
            text, check, recited_claims = recited
    settled = settle(text, check, draft, profiler)
    replaced = settled.how == "replaced"
    gen = written.gen
    return Outcome(settled.text, "fallback" if replaced else "model", settled.check,
                   model_answer=written.text, raw_answer=written.raw, reasked=written.reasked,
                   completion_tokens=gen.completion_tokens, finish_reason=gen.finish_reason,
                   kept_evidence=written.kept, claim_judge=judged, truncated=written.truncated,
                   cut_claim=written.cut_claim, generation=generation_figures(gen), recited_claims=recited_claims,
                   dropped_claims=list(settled.dropped), resupported=settled.how == "resupported",
                   fallback_reason=_fallback_reason(settled.check) if replaced else "",
                   short_answer=_fallback_short(draft) if replaced else _short_of(settled.text, draft, settled.check))


def _write(messages: list[dict], draft: Draft, model, llm_config: LLMConfig, profiler: Profiler,
           written: _Written) -> None:
    """The model's answer to ``messages`` into ``written`` (re-asked in Vietnamese where it
    answered a Vietnamese question in English; cut to its whole claims where it hit
    ``max_tokens``)."""
    max_tokens = draft.max_tokens or llm_config.max_tokens
    with profiler.stage("generation"), generating("answer"):
        written.gen = model.chat(messages, max_tokens=max_tokens, temperature=llm_config.temperature,
                                 seed=llm_config.seed)
    written.raw = written.gen.text
    with profiler.stage("postprocessing"):
        written.text = _tidy(written.raw, draft)
        if draft.language == "vi" and llm_config.reask_vietnamese and looks_english(written.text):
            written.reasked = True
            follow_up = [*messages, {"role": "assistant", "content": written.text},
                         {"role": "user", "content": REASK_VI}]
            with generating("reask"):
                written.gen = model.chat(follow_up, max_tokens=max_tokens, temperature=llm_config.temperature,
                                         seed=llm_config.seed)
            written.text = _tidy(written.gen.text, draft)
    if written.truncated:   # cut off by max_tokens: keep the whole claims only
        written.text, written.cut_claim = trim_to_whole_claims(written.text)


def settle(text: str, check: Check, draft: Draft, profiler: Profiler | None = None) -> Settled:
    """A checked model answer settled: as written when it passes; else without its unsupported
    claims, where its core claim holds and the rest passes again; else its short answer on the
    evidence's own sentence, where that passes; else replaced."""
    profiler = profiler or Profiler()
    if check.passed:
        return Settled("written", text, check)
    with profiler.stage("check"):
        trimmed = drop_unsupported(text, check, draft)
    if trimmed is not None:
        kept_text, kept_check, dropped = trimmed
        return Settled("trimmed", kept_text, kept_check, tuple(dropped))
    resupported = draft.short_reader.resupport(text) \
        if draft.short_reader is not None and not check.details.get("refusal") else None
    if resupported is not None:
        with profiler.stage("check"):
            again = draft.judge(resupported)
        if again.passed:
            dropped = [{"text": c.text, "why": c.why} for c in check.verdicts
                       if c.verdict not in ("short_answer", "supported")]
            return Settled("resupported", resupported, again, tuple(dropped))
    return Settled("replaced", _with_note(draft), check)


def _short_of(text: str, draft: Draft, check: Check) -> str | None:
    """The short answer of an accepted model answer (none for a refusal)."""
    if draft.short_reader is None or check.details.get("refusal"):
        return None
    return draft.short_reader.read(text)


def generation_figures(gen) -> dict:
    """Tokens in and out of one generation, and its prompt and generation speed in tokens
    per second when the backend measured them (llama.cpp's own counters)."""
    out = {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens}
    extra = gen.extra or {}
    for what, tokens, ms in (("prompt", "prompt_tokens", "prompt_ms"), ("generation", "eval_tokens", "eval_ms")):
        if extra.get(ms):
            out[f"{what}_ms"] = round(extra[ms], 1)
            out[f"{what}_tokens_per_s"] = round(1000 * extra[tokens] / extra[ms], 1)
    return out


def recite(text: str, check: Check, draft: Draft) -> tuple[str, Check, list[dict]] | None:
    """The answer with each miscited claim citing the item that supports it, checked again
    (a small model often cites [2] for what [1] says); None when no claim is miscited."""
    claims = check.verdicts
    parts = split_claims(text)
    if not claims or len(parts) != len(claims):
        return None
    fixes = [(parts[i], c.support.evidence) for i, c in enumerate(claims)
             if c.verdict == "miscited" and c.support is not None]
    if not fixes:
        return None
    for part, right in sorted(fixes, key=lambda f: -f[0].start):
        fixed = renumber_citations(text[part.start:part.end], {n: right for n in part.cited})
        text = text[:part.start] + fixed + text[part.end:]
    return text, draft.judge(text), [{"text": part.text, "cited": list(part.cited), "now": right}
                                    for part, right in fixes]


def drop_unsupported(text: str, check: Check, draft: Draft) -> tuple[str, Check, list[dict]] | None:
    """The answer without its unsupported claims, when its core claim holds and what is left
    passes the check again; ``None`` when the answer must be replaced instead (its core claim
    fails, the check is not claim-level, or the answer loops)."""
    claims = check.verdicts
    core = check.claims.core if check.claims is not None else None
    if not claims or core is None or claims[core].verdict not in ("supported", "refusal"):
        return None
    parts = split_claims(text)
    dropped = [i for i, c in enumerate(claims) if c.verdict == "unsupported"]
    if len(parts) != len(claims) or not dropped:
        return None
    kept_text = remove_claims(text, [parts[i] for i in dropped])
    kept_check = draft.judge(kept_text)
    if not kept_check.passed:
        return None
    return kept_text, kept_check, [{"text": claims[i].text, "why": claims[i].why} for i in dropped]


def _fallback_reason(check: Check) -> str:
    """Why the model's answer was replaced: its core claim, when the check is claim-level."""
    claims, core = check.verdicts, check.claims.core if check.claims is not None else None
    if claims and core is not None and claims[core].verdict == "unsupported":
        return f"the core claim (claim {core + 1}) is not supported: {claims[core].why}"
    if claims and core is not None and claims[core].verdict == "contradicted":
        return f"the core claim (claim {core + 1}) is contradicted by the evidence: {claims[core].why}"
    return f"the check failed: {check.reason}"


def _tidy(text: str, draft: Draft) -> str:
    text = filter_think_tags(text)
    if draft.close_lines:
        text = re.sub(r"\s+\n", "\n", text).strip()
    return draft.short_reader.complete(text) if draft.short_reader is not None else text


def _with_note(draft: Draft) -> str:
    text = draft.evidence_answer if draft.fallback_answer is None else draft.fallback_answer
    return f"{text}\n\n{draft.fallback_note}" if draft.fallback_note else text


def _fallback_short(draft: Draft) -> str | None:
    return draft.short_answer if draft.fallback_answer is None else None


__all__ = ["ANSWER_SOURCES", "Check", "Draft", "NamedShort", "Outcome", "Settled", "ShortReader", "answer",
           "drop_unsupported", "generation_figures", "grounding_check", "recite", "settle"]
