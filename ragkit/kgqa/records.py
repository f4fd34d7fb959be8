"""The records the KG flow hands from stage to stage, typed: a node as a step lists it, a
finished turn's list that a follow-up's anaphor takes, how the plan was made, and one
question's run through the flow (``KGRun``), which the pipeline turns into its trace.

The listed nodes and lists stay JSON-shaped (``TypedDict``): they are what the trace, the
``--json`` output and a follow-up's ``--history`` carry, key for key."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NotRequired, TypedDict

if TYPE_CHECKING:
    from .flow import Turn
    from .plan import Plan
    from .resolve import Resolved


class Item(TypedDict):
    """A node as the context store lists it."""

    id: str
    name: str
    type: str


class Listed(TypedDict):
    """A finished turn's list of one node type, for the next turn's "them"."""

    type: str
    items: list[Item]


History = dict[str, Listed]          # a turn's lists by step key


class TurnRecord(TypedDict):
    """A finished turn as JSON: an earlier answer's ``trace.turn``, which a follow-up passes
    back (``--history``, the server's session, ``ask_kg(history=...)``)."""

    question: str
    standalone: str
    plan: dict[str, object]
    context_store: dict[str, object]
    lists: NotRequired[History]


@dataclass(frozen=True)
class Planning:
    """Who wrote the plan (``rules`` or ``llm``), what the model wrote and why it was not
    taken, and what the rules read in the question (``linked``: entities, types,
    relations, the asked type)."""

    planner: str = "rules"
    llm_plan: str | None = None
    llm_plan_rejected: str | None = None
    llm_plan_constrained: bool | None = None
    linked: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class KGRun:
    """One question through the flow: the standalone question, the entities found, the plan
    and how it was made (or why there is none: ``plan_error``), the context store each step
    filled, the steps' counts, the edges followed and the property values compared (each
    with its step's key), and the turn a follow-up passes back."""

    standalone: str
    entities: list[Resolved]
    planning: Planning
    plan: Plan | None = None
    plan_error: str | None = None
    context_store: dict = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    edges: list[dict] = field(default_factory=list)
    facts: list[dict] = field(default_factory=list)
    turn: Turn | None = None


__all__ = ["History", "Item", "KGRun", "Listed", "Planning", "TurnRecord"]
