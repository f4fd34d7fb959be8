"""The claim check's verdicts, typed: each claim's verdict with the span that supports it,
a factoid answer's short answer as a claim of its own, and the report of a whole answer
(``answer.grounding.check_claims`` writes them; the answer stage reads them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Sequence, TypeAlias

MIN_DISTINCT_TRIGRAMS = 0.5

FAILED_VERDICTS = ("unsupported", "miscited", "contradicted", "inconsistent")


@dataclass(frozen=True)
class Support:
    """The evidence item (1-based) and the span of it that supports a claim; a claim that
    compares or joins items has one part per item (``parts``)."""

    evidence: int
    span: str
    parts: tuple["Support", ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"evidence": self.evidence, "span": self.span}
        if self.parts:
            out["parts"] = [p.to_dict() for p in self.parts]
        return out


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim's verdict: ``supported`` (with its span), ``unsupported`` (with why),
    ``miscited`` (the items it cites do not support it, another item does: ``support`` names
    that one; it fails the check, and the answer stage may correct the citation),
    ``contradicted`` (a span supports it, but another retrieved item says the same thing with
    the opposite polarity, "no need to check the oil" against "check the oil": ``contradicts``
    names that item; it fails the check), ``refusal`` (says the evidence is not enough;
    claims nothing), ``inconsistent`` (a refusal beside claims that answer what it says the
    evidence lacks: the answer contradicts itself; it fails the check) or ``no claim`` (a
    heading, a bare list marker: nothing to check)."""

    text: str
    verdict: str
    cited: list[int]
    support: Support | None
    why: str
    coverage: float = 0.0
    borderline: bool = False        # unsupported only for coverage, by a little: a judge may confirm it
    contradicts: Support | None = None  # contradicted: the other item's span

    def to_dict(self) -> dict:
        out = {"text": self.text, "verdict": self.verdict, "supported": self.verdict not in FAILED_VERDICTS,
               "cited": self.cited, "support": self.support.to_dict() if self.support else None,
               "evidence": self.support.evidence if self.support else None,
               "why": self.why, "coverage": self.coverage}
        if self.borderline:
            out["borderline"] = True
        if self.contradicts:
            out["contradicts"] = self.contradicts.to_dict()
        return out


@dataclass(frozen=True)
class ShortAnswerClaim:
    """A factoid answer's first line, its short answer, which the reading check found in the
    evidence: a claim of its own, before the lines that support it."""

    text: str
    verdict: ClassVar[str] = "short_answer"
    why: ClassVar[str] = "occurs in the evidence"
    cited: ClassVar[tuple[int, ...]] = ()
    support: ClassVar[None] = None
    borderline: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "body": self.text, "cited": [], "verdict": self.verdict, "why": self.why}


Verdict: TypeAlias = ClaimVerdict | ShortAnswerClaim


@dataclass(frozen=True)
class ClaimReport:
    """The claim-level check of an answer. ``core`` is the position of its core claim: the
    first claim that says something (``None``: no claim says anything)."""

    passed: bool
    reason: str
    claims: Sequence[Verdict]
    core: int | None
    distinct_trigrams: float = 1.0
    suspicious_evidence: list = field(default_factory=list)   # items addressed to the model

    @property
    def core_holds(self) -> bool:
        return self.core is not None and self.claims[self.core].verdict in ("supported", "refusal")

    def to_dict(self) -> dict:
        return {"passed": self.passed, "reason": self.reason, **self.figures()}

    def figures(self) -> dict[str, Any]:
        """What the check found, without its verdict: the core claim, the distinct trigrams,
        each claim's verdict and any evidence addressed to the model (a check's JSON)."""
        out: dict[str, Any] = {"core": self.core, "distinct_trigrams": self.distinct_trigrams,
                               "claims": [c.to_dict() for c in self.claims]}
        if self.suspicious_evidence:
            out["suspicious_evidence"] = self.suspicious_evidence
        return out

    def with_short_answer(self, short: str) -> "ClaimReport":
        """The report of a factoid answer's support lines with its short answer as the first
        claim (the core claim moves one on)."""
        return replace(self, claims=[ShortAnswerClaim(short), *self.claims],
                       core=None if self.core is None else self.core + 1)



def claims_reason(claims: Sequence[Verdict], core: int | None, trigrams: float) -> str:
    """Why a claim-checked answer fails ('' when it passes): no claim says anything, the
    first unsupported claim and why, or the answer loops."""
    failed = [i for i, c in enumerate(claims) if c.verdict in FAILED_VERDICTS]
    reasons = []
    if core is None:
        reasons.append("the answer has no content words")
    refused = [i for i in failed if claims[i].verdict == "inconsistent"]
    if refused:
        i = refused[0]
        reasons.append(f"the answer contradicts itself: claim {i + 1} ({_short(claims[i].text)}) {claims[i].why}")
        failed = [j for j in failed if j not in refused]
    if failed:
        i = failed[0]
        reasons.append(f"{len(failed)} of {len(claims)} claims unsupported; claim {i + 1} "
                       f"({_short(claims[i].text)}): {claims[i].why}")
    if trigrams < MIN_DISTINCT_TRIGRAMS:
        reasons.append(f"it repeats itself ({trigrams:.0%} distinct trigrams)")
    return "; ".join(reasons)


def _short(text: str, words: int = 8) -> str:
    parts = text.split()
    return repr(" ".join(parts[:words]) + (" …" if len(parts) > words else ""))


__all__ = ["ClaimReport", "ClaimVerdict", "FAILED_VERDICTS", "MIN_DISTINCT_TRIGRAMS", "ShortAnswerClaim", "Support",
           "Verdict", "claims_reason"]
