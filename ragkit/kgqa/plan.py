"""Explicit query plans (the steps the executor runs), and their validation against the graph's
own schema; the rule-based planner that writes them is ``kgqa.rule_planner``.

A plan is JSON: ``{"steps": [...], "final": KEY}`` (and ``"count": true`` when the question
asks how many). Each step has a ``key`` and is one of
- ``{"op": "expand", "from": {"entity": ID} | {"step": KEY}, "relation": REL,
  "direction": "out" | "in", "target_type": TYPE}``: the nodes one edge away;
- ``{"op": "intersection" | "union" | "difference", "inputs": [KEY, KEY, ...]}``
  (difference: the first list without the others);
- ``{"op": "nodes", "ids": [ID, ...], "type": TYPE}``: named nodes ("other than gout");
- ``{"op": "all", "type": TYPE}``: every node of a type ("which genes are not ...");
- ``{"op": "given", "history": KEY}``: a list from the previous turn's context store;
- ``{"op": "filter", "input": KEY, "compare": ">" | ">=" | "<" | "<=" | "=", "value": NUMBER,
  "property": NAME}``: the nodes whose property compares so ("approved after 2000"), or with
  ``"relation", "direction", "target_type"`` instead of ``"property"``: the nodes whose number
  of such edges compares so ("more than 3 symptoms").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .filters import SAID
from .store import SchemaEdge

MAX_HOPS = 3
ANAPHORS = {"them", "they", "those", "these", "it", "ones"}
WHO = frozenset({"who", "whom", "ai"})     # a question that asks for a person (Vietnamese "ai")


class PlanError(InputError):
    """A plan that does not fit the graph's schema or refers to unknown steps."""

    reply: str | None = None        # a model's plan: what it wrote


@dataclass
class Plan:
    """Steps, the key of the answer's step, and whether the question asks how many
    (``count``). ``linked`` is what the planner read in the question (for the trace)."""

    steps: list[dict] = field(default_factory=list)
    final: str = ""
    count: bool = False
    linked: dict = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"steps": self.steps, "final": self.final}
        if self.count:
            out["count"] = True
        return out

    @classmethod
    def from_dict(cls, data) -> "Plan":
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data.get("final"):
            raise PlanError("plan: needs a list 'steps' and a 'final' key")
        return cls(steps=[dict(s) for s in data["steps"]], final=str(data["final"]), count=bool(data.get("count")))


def validate(plan: Plan, schema: list[SchemaEdge], node_ids: set[str], history: dict | None = None) -> Plan:
    """Raise PlanError unless every step fits the schema and refers to what exists."""
    kinds = {(s.source_type, s.relation, s.target_type) for s in schema}
    types: dict[str, str | None] = {}
    for i, step in enumerate(plan.steps):
        where = f"plan step {i + 1}"
        key = step.get("key")
        if not isinstance(key, str) or not key or key in types or key in ("final_result", "final_result_total"):
            raise PlanError(f"{where}: needs a new, unreserved 'key' (got {key!r})")
        op = step.get("op")
        if op == "expand":
            relation, direction, target = step.get("relation"), step.get("direction"), step.get("target_type")
            if direction not in ("out", "in"):
                raise PlanError(f"{where}: direction must be 'out' or 'in' (got {direction!r})")
            src = step.get("from") or {}
            if "entity" in src:
                if src["entity"] not in node_ids:
                    raise PlanError(f"{where}: entity {src['entity']!r} is not a node of the graph")
                from_type = step.get("from_type")
            elif "step" in src:
                if src["step"] not in types:
                    raise PlanError(f"{where}: step {src['step']!r} is not an earlier step")
                from_type = types[src["step"]]
            else:
                raise PlanError(f"{where}: 'from' must name an entity or an earlier step")
            fits = [k for k in kinds if k[1] == relation and
                    (k[2] == target if direction == "out" else k[0] == target) and
                    (from_type is None or (k[0] if direction == "out" else k[2]) == from_type)]
            if not fits:
                raise PlanError(f"{where}: the graph has no {from_type or '?'} "
                                f"{'-' if direction == 'out' else '<-'}[{relation}]"
                                f"{'->' if direction == 'out' else '-'} {target} edges")
            types[key] = target
        elif op in ("intersection", "union", "difference"):
            inputs = step.get("inputs")
            if not isinstance(inputs, list) or len(inputs) < 2 or any(k not in types for k in inputs):
                raise PlanError(f"{where}: {op} needs two or more earlier step keys")
            types[key] = types[inputs[0]]
        elif op == "nodes":
            ids = step.get("ids")
            if not isinstance(ids, list) or not ids or any(i not in node_ids for i in ids):
                raise PlanError(f"{where}: nodes needs a list of node ids of the graph (got {ids!r})")
            types[key] = step.get("type")
        elif op == "all":
            if step.get("type") not in {s.source_type for s in schema} | {s.target_type for s in schema}:
                raise PlanError(f"{where}: {step.get('type')!r} is not a node type of the graph")
            types[key] = step["type"]
        elif op == "filter":
            source = step.get("input")
            if source not in types:
                raise PlanError(f"{where}: filter needs an earlier step as 'input' (got {source!r})")
            if step.get("compare") not in SAID or isinstance(step.get("value"), bool) \
                    or not isinstance(step.get("value"), (int, float)):
                raise PlanError(f"{where}: filter needs 'compare' (one of {', '.join(SAID)}) and a number 'value'")
            if "property" in step:
                if not isinstance(step["property"], str) or not step["property"]:
                    raise PlanError(f"{where}: filter's 'property' must be a property name")
            elif not [k for k in kinds if k[1] == step.get("relation") and
                      (k[0], k[2]) == ((types[source], step.get("target_type")) if step.get("direction") == "out"
                                       else (step.get("target_type"), types[source]))]:
                raise PlanError(f"{where}: filter needs a 'property', or a 'relation', 'direction' and "
                                f"'target_type' that {types[source] or 'its input'} nodes have edges of")
            types[key] = types[source]
        elif op == "given":
            if not history or step.get("history") not in history:
                raise PlanError(f"{where}: {step.get('history')!r} is not in the previous turn's context")
            types[key] = history[step["history"]]["type"] if isinstance(history[step["history"]], dict) else None
        else:
            raise PlanError(f"{where}: unknown op {op!r} (expand, intersection, union, difference, "
                            f"nodes, all, given, filter)")
    if plan.final not in types:
        raise PlanError(f"plan: final {plan.final!r} is not one of its steps")
    return plan


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


def step_types(steps: list[dict]) -> dict[str, str | None]:
    """Each step's key → the type of the nodes it lists (None for a previous turn's list)."""
    types: dict[str, str | None] = {}
    for s in steps:
        if s["op"] == "expand":
            types[s["key"]] = s["target_type"]
        elif s["op"] in ("intersection", "union", "difference"):
            types[s["key"]] = types.get(s["inputs"][0])
        elif s["op"] == "filter":
            types[s["key"]] = types.get(s["input"])
        elif s["op"] in ("nodes", "all"):
            types[s["key"]] = s.get("type")
        else:   # given: the type it had in its own turn
            types[s["key"]] = None
    return types


def history_lists(context_store: dict, plan: dict) -> dict:
    """A finished turn's lists, typed, for the next turn's anaphors."""
    types = step_types(plan.get("steps", []))
    out = {}
    for key, value in context_store.items():
        if isinstance(value, list) and key in types and types[key]:
            out[key] = {"type": types[key], "items": value}
    return out


__all__ = ["ANAPHORS", "MAX_HOPS", "Plan", "PlanError", "history_lists", "parse_plan_json", "step_types", "validate"]
