"""Explicit query plans (the KG QA design's executor steps), their validation against the graph's
own schema, and the rule-based planner.

A plan is JSON: ``{"steps": [...], "final": KEY}``. Each step has a ``key`` and is one of
- ``{"op": "expand", "from": {"entity": ID} | {"step": KEY}, "relation": REL,
  "direction": "out" | "in", "target_type": TYPE}``: the nodes one edge away;
- ``{"op": "intersection" | "union", "inputs": [KEY, KEY, ...]}``;
- ``{"op": "given", "history": KEY}``: a list from the previous turn's context store.

The rule planner reads the question's words against the schema: which node types it names
("symptoms", "diseases"), which relations its verbs name ("treated" → TREATS), where its
entities are. It finds, for each entity, the schema path from the entity's type to the
asked type that covers the most of those words in the fewest hops; with two entities and
"both"/"common" (or "either"/"or") the two paths meet by intersection (or union) as early as
they can. An anaphor ("which of them affect the liver?") is bound to the previous turn's
list whose type the relation needs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..errors import InputError
from ..text import ENGLISH_STOPWORDS, _english_stemmer
from .resolve import Resolved, words
from .store import SchemaEdge

MAX_HOPS = 3
INTERSECT_WORDS = {"both", "common", "shared", "share", "also", "all"}
UNION_WORDS = {"either", "or", "any"}
ANAPHORS = {"them", "they", "those", "these", "it", "ones"}


class PlanError(InputError):
    """A plan that does not fit the graph's schema or refers to unknown steps."""


@dataclass
class Plan:
    steps: list[dict] = field(default_factory=list)
    final: str = ""

    def to_dict(self) -> dict:
        return {"steps": self.steps, "final": self.final}

    @classmethod
    def from_dict(cls, data) -> "Plan":
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data.get("final"):
            raise PlanError("plan: needs a list 'steps' and a 'final' key")
        return cls(steps=[dict(s) for s in data["steps"]], final=str(data["final"]))


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
        elif op in ("intersection", "union"):
            inputs = step.get("inputs")
            if not isinstance(inputs, list) or len(inputs) < 2 or any(k not in types for k in inputs):
                raise PlanError(f"{where}: {op} needs two or more earlier step keys")
            types[key] = types[inputs[0]]
        elif op == "given":
            if not history or step.get("history") not in history:
                raise PlanError(f"{where}: {step.get('history')!r} is not in the previous turn's context")
            types[key] = history[step["history"]]["type"] if isinstance(history[step["history"]], dict) else None
        else:
            raise PlanError(f"{where}: unknown op {op!r} (expand, intersection, union, given)")
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


# --------------------------------------------------------------------------- the rule planner
def _stem(word: str) -> str:
    return _english_stemmer().stemWord(word)


def _stems(text: str) -> list[str]:
    return [_stem(w) for w in words(text.replace("_", " ")) if w not in ENGLISH_STOPWORDS]


def plural(type_name: str) -> str:
    low = re.sub(r"(?<!^)(?=[A-Z])", "_", type_name).lower()
    if low.endswith("y") and not low.endswith(("ay", "ey", "oy", "uy")):
        return low[:-1] + "ies"
    return low + ("es" if low.endswith(("s", "x", "ch", "sh")) else "s")


def slug(text: str) -> str:
    return "_".join(words(text))[:40] or "node"


@dataclass(frozen=True)
class Hop:
    relation: str
    direction: str      # out: along the edge; in: against it
    from_type: str
    to_type: str


class RulePlanner:
    """Plans from the schema and the question's words (no model)."""

    def __init__(self, schema: list[SchemaEdge]):
        self.schema = schema
        self.types = sorted({s.source_type for s in schema} | {s.target_type for s in schema})
        self.type_stems = {t: set(_stems(t)) | {_stem(w) for w in words(plural(t).replace("_", " "))}
                           for t in self.types}
        self.rel_stems = {s.relation: set(_stems(s.relation)) - {"has", "have"} for s in schema}

    def hops_from(self, node_type: str) -> list[Hop]:
        out = [Hop(s.relation, "out", s.source_type, s.target_type) for s in self.schema if s.source_type == node_type]
        out += [Hop(s.relation, "in", s.target_type, s.source_type) for s in self.schema if s.target_type == node_type]
        return sorted(set(out), key=lambda h: (h.relation, h.direction, h.to_type))

    def mentioned_types(self, stems: list[str]) -> list[str]:
        """Node types the question names, in order of first mention."""
        order = []
        for s in stems:
            for t in self.types:
                if s in self.type_stems[t] and t not in order:
                    order.append(t)
        return order

    def mentioned_relations(self, stems: set[str]) -> set[str]:
        return {r for r, rs in self.rel_stems.items() if rs and rs & stems}

    def paths(self, start: str, goal: str | None, stems: set[str], named_types: list[str],
              relations: set[str]) -> list[tuple[float, list[Hop]]]:
        """Schema paths from ``start`` (to ``goal`` if given), best first."""
        found = []
        frontier: list[list[Hop]] = [[]]
        for _ in range(MAX_HOPS):
            following = []
            for path in frontier:
                here = path[-1].to_type if path else start
                for hop in self.hops_from(here):
                    if any(h.relation == hop.relation and h.direction != hop.direction for h in path[-1:]):
                        continue    # straight back along the same relation
                    following.append(path + [hop])
            for path in following:
                if goal is None or path[-1].to_type == goal:
                    found.append((self._score(path, named_types, relations, goal), path))
            frontier = following
        return sorted(found, key=lambda x: (-x[0], len(x[1]), [(h.relation, h.direction) for h in x[1]]))

    @staticmethod
    def _score(path: list[Hop], named_types: list[str], relations: set[str], goal: str | None) -> float:
        rels = [h.relation for h in path]
        score = sum(1.0 for r in dict.fromkeys(rels) if r in relations)
        score += sum(1.0 for h in path[:-1] if h.to_type in named_types)     # named intermediate types
        score -= 0.5 * len(path)
        if goal is None:    # the asked type was not named: the path must at least use named verbs
            score += 0.5 * (path[-1].relation in relations)
        return score

    def plan(self, question: str, entities: list[Resolved], history: dict | None = None) -> Plan:
        toks = words(question)
        stems = [_stem(w) for w in toks if w not in ENGLISH_STOPWORDS]
        entity_words = {_stem(w) for e in entities for w in e.mention.split()}
        stems = [s for s in stems if s not in entity_words]
        named = self.mentioned_types(stems)
        relations = self.mentioned_relations(set(stems))
        anaphor = history is not None and bool(ANAPHORS & set(toks))
        if anaphor:
            return self._follow_up(entities, named, relations, set(stems), history)
        if not entities:
            raise PlanError("plan: the question names nothing found in the graph")
        entity_types = {e.type for e in entities}
        goal = next((t for t in named if t not in entity_types), None)
        chains = []
        for e in entities:
            options = self.paths(e.type, goal, set(stems), named, relations)
            if not options:
                raise PlanError(f"plan: no path in the graph's schema from {e.type} ({e.name}) to "
                                f"{goal or 'anything the question asks'}")
            chains.append((e, options[0][1]))
            goal = goal or options[0][1][-1].to_type    # the first entity's answer type binds the rest
        op = "union" if UNION_WORDS & set(toks) and not INTERSECT_WORDS & set(toks) else "intersection"
        return self._join(chains, op)

    def _join(self, chains: list[tuple[Resolved, list[Hop]]], op: str) -> Plan:
        plan = Plan()
        if len(chains) == 1:
            entity, hops = chains[0]
            last = self._walk(plan, {"entity": entity.id}, entity, hops)
            plan.final = last
            return plan
        same = len({tuple(h for h in hops) for _, hops in chains}) == 1
        # Identical chains meet after their first step, as in the design (diseases_A ∩ diseases_B);
        # different ones at their common end type.
        meet = 1 if same else None
        ends = []
        for entity, hops in chains:
            ends.append(self._walk(plan, {"entity": entity.id}, entity, hops[:meet] if meet else hops))
        joined_type = (chains[0][1][0].to_type if meet else chains[0][1][-1].to_type)
        key = f"{'common' if op == 'intersection' else 'all'}_{plural(joined_type)}"
        plan.steps.append({"key": key, "op": op, "inputs": ends})
        last = key
        if meet:
            last = self._walk(plan, {"step": key}, None, chains[0][1][1:], start_key=key)
        plan.final = last
        return plan

    def _walk(self, plan: Plan, source: dict, entity: Resolved | None, hops: list[Hop],
              start_key: str | None = None) -> str:
        key = start_key
        for i, hop in enumerate(hops):
            origin = slug(entity.name) if (entity and i == 0) else key
            new_key = f"{plural(hop.to_type)}_{hop.relation.lower()}{'' if hop.direction == 'out' else '_by'}_{origin}"
            new_key = new_key[:80]
            while any(s["key"] == new_key for s in plan.steps):
                new_key += "_"
            step = {"key": new_key, "op": "expand", "from": source if i == 0 else {"step": key},
                    "relation": hop.relation, "direction": hop.direction, "target_type": hop.to_type}
            if i == 0 and "entity" in source:
                step["from_type"] = hop.from_type
            plan.steps.append(step)
            key = new_key
        return key

    def _follow_up(self, entities: list[Resolved], named: list[str], relations: set[str],
                   stems: set[str], history: dict) -> Plan:
        """"Which of them affect the liver?": the previous turn's list of the type that the
        named relation joins to the new entity, filtered by that relation."""
        lists = {k: v for k, v in history.items() if isinstance(v, dict) and v.get("type")}
        if not lists:
            raise PlanError("plan: 'them' refers to nothing (no earlier answer in this conversation)")
        plan = Plan()
        if not entities:
            raise PlanError("plan: the follow-up names nothing found in the graph to filter by")
        entity = entities[0]
        best = None
        for key, value in lists.items():     # in plan order: on a tie, the later (narrower) list
            for score, path in self.paths(entity.type, value["type"], stems, named, relations):
                if len(path) == 1 and (best is None or score >= best[0]):
                    best = (score, key, path)
                break
        if best is None:
            raise PlanError(f"plan: no relation joins {entity.name} to an earlier list")
        _, key, path = best
        plan.steps.append({"key": f"previous_{key}", "op": "given", "history": key})
        found = self._walk(plan, {"entity": entity.id}, entity, path)
        plan.steps.append({"key": f"{key}_filtered", "op": "intersection", "inputs": [f"previous_{key}", found]})
        plan.final = f"{key}_filtered"
        return plan


def history_lists(context_store: dict, plan: dict) -> dict:
    """A finished turn's lists, typed, for the next turn's anaphors."""
    types: dict[str, str | None] = {}
    for s in plan.get("steps", []):
        if s["op"] == "expand":
            types[s["key"]] = s["target_type"]
        elif s["op"] in ("intersection", "union"):
            types[s["key"]] = types.get(s["inputs"][0])
        else:   # given: the type it had in its own turn
            types[s["key"]] = None
    out = {}
    for key, value in context_store.items():
        if isinstance(value, list) and key in types and types[key]:
            out[key] = {"type": types[key], "items": value}
    return out


__all__ = ["Plan", "PlanError", "RulePlanner", "history_lists", "parse_plan_json", "plural", "validate"]
