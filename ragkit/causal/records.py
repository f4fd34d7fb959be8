"""The records of the causal explanation, typed as the evidence KG and the command-line
contract write them: a condition on a weather variable, a source's evidence, a factor
acting on PM2.5 directly, and what the weather series says of a chain's conditions."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class Condition(TypedDict):
    """When an edge holds: a weather variable compared with a value ("relative_humidity >
    60 %"; a season compared with its name)."""

    variable: str
    op: str
    value: float | str
    unit: NotRequired[str]


class SourceEvidence(TypedDict):
    """A source behind an edge, as the contract shows it; fields the schema does not name
    under ``extra``."""

    source_url: str
    source_doi: str
    source_quote: str
    extra: NotRequired[dict[str, object]]


class Factor(TypedDict):
    """A direct influence on PM2.5 beside the chains: the node, its label, the edge's
    relation, confidence and strength, its net direction, conditions and evidence."""

    factor: str
    label: str
    relation: str
    confidence: str
    strength: str
    direction: int
    conditions: list[Condition]
    evidence: list[SourceEvidence]


class EmpiricalSupport(TypedDict, total=False):
    """Median PM2.5 while a chain's conditions hold against while they do not, and the
    verdict (``supports``, ``contradicts``, ``no_clear_difference``, or why it could not be
    told); every result has a verdict, written last."""

    verdict: str
    conditions: list[str]
    hours_holding: int
    hours_not: int
    median_pm25_when_holding: float
    median_pm25_otherwise: float
    ratio: float


class ChainMeasured(TypedDict):
    """What the series says of each checkable condition of one chain (its index)."""

    chain: int
    checks: list[EmpiricalSupport]


__all__ = ["ChainMeasured", "Condition", "EmpiricalSupport", "Factor", "SourceEvidence"]
