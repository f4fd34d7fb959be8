"""Explicit query plans (the steps the executor runs), and their validation against the graph's
own schema; the rule-based planner that writes them is ``kgqa.rule_planner``.

A plan is JSON: ``{"steps": [...], "final": KEY}`` (and ``"count": true`` when the question
asks how many). Each step has a ``key`` and is one of these, each a frozen type of
``kgqa.steps`` (named in brackets):
- ``{"op": "expand", "from": {"entity": ID} | {"step": KEY}, "relation": REL,
  "direction": "out" | "in", "target_type": TYPE}``: the nodes one edge away (``Expand``);
- ``{"op": "intersection" | "union" | "difference", "inputs": [KEY, KEY, ...]}``
  (difference: the first list without the others; ``Join``);
- ``{"op": "nodes", "ids": [ID, ...], "type": TYPE}``: named nodes ("other than gout"; ``Named``);
- ``{"op": "all", "type": TYPE}``: every node of a type ("which genes are not ..."; ``Every``);
- ``{"op": "given", "history": KEY}``: a list from the previous turn's context store (``Given``);
- ``{"op": "filter", "input": KEY, "compare": ">" | ">=" | "<" | "<=" | "=", "value": NUMBER,
  "property": NAME}``: the nodes whose property compares so ("approved after 2000"), or with
  ``"relation", "direction", "target_type"`` instead of ``"property"``: the nodes whose number
  of such edges compares so ("more than 3 symptoms"; ``Filter``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .steps import (RESERVED, EdgeFilter, Every, Expand, Given, Join, Named, PlanError, PropertyFilter, Step,
                    step_from_dict)
from .records import History
from .store import SchemaEdge

MAX_HOPS = 3
ANAPHORS = {"them", "they", "those", "these", "it", "ones"}
WHO = frozenset({"who", "whom", "ai"})     # a question that asks for a person (Vietnamese "ai")


@dataclass
class Plan:
    """Steps, the key of the answer's step, and whether the question asks how many
    (``count``). ``linked`` is what the planner read in the question (for the trace)."""

    steps: list[Step] = field(default_factory=list)
    final: str = ""
    count: bool = False
    linked: dict = field(default_factory=dict, compare=False)

    def step(self, key: str) -> Step:
        return next(s for s in self.steps if s.key == key)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"steps": [s.to_dict() for s in self.steps], "final": self.final}
        if self.count:
            out["count"] = True
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Plan":
        """A plan from its JSON form; PlanError unless each step has its kind's fields."""
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data.get("final"):
            raise PlanError("plan: needs a list 'steps' and a 'final' key")
        return cls(steps=[step_from_dict(s, f"plan step {i}") for i, s in enumerate(data["steps"], 1)],
                   final=str(data["final"]), count=bool(data.get("count")))


def validate(plan: Plan, schema: list[SchemaEdge], node_ids: set[str], history: History | None = None) -> Plan:
    """Raise PlanError unless every step fits the schema and refers to what exists (the
    steps' own shapes are checked as they are read, by ``steps.step_from_dict``)."""
    kinds = {(s.source_type, s.relation, s.target_type) for s in schema}
    node_types = {s.source_type for s in schema} | {s.target_type for s in schema}
    types: dict[str, str | None] = {}
    for i, step in enumerate(plan.steps):
        where = f"plan step {i + 1}"
        if step.key in types or step.key in RESERVED:
            raise PlanError(f"{where}: needs a new, unreserved 'key' (got {step.key!r})")
        unknown = [k for k in step.reads if k not in types]
        if unknown:
            raise PlanError(f"{where}: {unknown[0]!r} is not an earlier step")
        types[step.key] = _checked(step, where, kinds, node_types, node_ids, types, history)
    if plan.final not in types:
        raise PlanError(f"plan: final {plan.final!r} is not one of its steps")
    return plan


def _checked(step: Step, where: str, kinds: set[tuple[str, str, str]], node_types: set[str], node_ids: set[str],
             types: dict[str, str | None], history: History | None) -> str | None:
    """The type of the nodes ``step`` lists; PlanError if it does not fit the graph."""
    match step:
        case Expand():
            if step.entity is not None and step.entity not in node_ids:
                raise PlanError(f"{where}: entity {step.entity!r} is not a node of the graph")
            start = step.from_type if step.step is None else types[step.step]
            if not _edges(kinds, step.relation, step.direction, start, step.target_type):
                raise PlanError(f"{where}: the graph has no {start or '?'} "
                                f"{'-' if step.direction == 'out' else '<-'}[{step.relation}]"
                                f"{'->' if step.direction == 'out' else '-'} {step.target_type} edges")
        case Named():
            if any(i not in node_ids for i in step.ids):
                raise PlanError(f"{where}: nodes needs a list of node ids of the graph (got {list(step.ids)!r})")
        case Every():
            if step.type not in node_types:
                raise PlanError(f"{where}: {step.type!r} is not a node type of the graph")
        case EdgeFilter():
            listed = types[step.input]
            if not _edges(kinds, step.relation, step.direction, listed, step.target_type):
                raise PlanError(f"{where}: filter needs a 'property', or a 'relation', 'direction' and "
                                f"'target_type' that {listed or 'its input'} nodes have edges of")
        case Given():
            if not history or step.history not in history:
                raise PlanError(f"{where}: {step.history!r} is not in the previous turn's context")
            earlier = history[step.history]
            return earlier["type"] if isinstance(earlier, dict) else None
    return _listed_type(step, types)


def _listed_type(step: Step, types: dict[str, str | None]) -> str | None:
    """The type of the nodes ``step`` lists, given the earlier steps' ``types`` (None for a
    previous turn's list, whose type its own turn knew)."""
    match step:
        case Expand():
            return step.target_type
        case Join():
            return types.get(step.inputs[0])
        case PropertyFilter() | EdgeFilter():
            return types.get(step.input)
        case Named() | Every():
            return step.type
    return None


def _edges(kinds: set[tuple[str, str, str]], relation: str, direction: str, start: str | None,
           end: str) -> list[tuple[str, str, str]]:
    """The schema's edge kinds that go ``direction`` from ``start`` (any, if None) by
    ``relation`` to ``end``."""
    return [k for k in kinds if k[1] == relation and
            (k[2] == end if direction == "out" else k[0] == end) and
            (start is None or (k[0] if direction == "out" else k[2]) == start)]


def parse_plan_json(text: str) -> Plan:
    """The first JSON object in a model's reply, as a Plan."""
    start = text.find("{")
    if start < 0:
        raise PlanError("plan: the reply holds no JSON object")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise PlanError(f"plan: invalid JSON ({exc.msg})") from None
    return Plan.from_dict(data)


def step_types(steps: list[Step]) -> dict[str, str | None]:
    """Each step's key → the type of the nodes it lists (None for a previous turn's list)."""
    types: dict[str, str | None] = {}
    for s in steps:
        types[s.key] = _listed_type(s, types)
    return types


def history_lists(context_store: dict, plan: Plan) -> History:
    """A finished turn's lists, typed, for the next turn's anaphors."""
    types = step_types(plan.steps)
    out: History = {}
    for key, value in context_store.items():
        kind = types.get(key)
        if isinstance(value, list) and kind:
            out[key] = {"type": kind, "items": value}
    return out


__all__ = ["ANAPHORS", "MAX_HOPS", "Plan", "PlanError", "history_lists", "parse_plan_json", "step_types", "validate"]
