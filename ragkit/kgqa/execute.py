"""The executor (the flow's Executor stage, on our stores): runs a validated plan and fills the
context store, each step's result under its own key. ``final_result`` holds at most 15 items
(``FINAL_LIMIT``) and ``final_result_total`` the full count. The edges each step followed are
kept apart, as the evidence that answers cite; so are the property values a filter compared
(``facts``: node, property, value)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .filters import compare
from .plan import Plan
from .records import History, Item
from .steps import EdgeFilter, Every, Expand, Given, Join, Named, PropertyFilter, Step
from .store import Edge, TypedStore, node_key

FINAL_LIMIT = 15


def item(node: dict) -> Item:
    """A node as the context store keeps it."""
    return {"id": node["id"], "name": node["name"], "type": node["type"]}


@dataclass
class Execution:
    context_store: dict = field(default_factory=dict)
    edges: dict[str, list[Edge]] = field(default_factory=dict)     # step key → edges followed
    counts: dict[str, int] = field(default_factory=dict)
    facts: dict[str, list[dict]] = field(default_factory=dict)     # step key → property values compared


def execute(plan: Plan, store: TypedStore, nodes: dict[str, dict], history: History | None = None) -> Execution:
    """Run ``plan`` on ``store``; ``nodes`` maps ids to nodes (for named nodes and for every
    node of a type, which need no query)."""
    run = Execution()
    results: dict[str, list[Item]] = {}
    for step in plan.steps:
        results[step.key] = _listed(step, results, store, nodes, history, run)
        run.counts[step.key] = len(results[step.key])
    for key, value in results.items():
        run.context_store[key] = value
    final = results[plan.final]
    run.context_store["final_result"] = final[:FINAL_LIMIT]
    run.context_store["final_result_total"] = len(final)
    return run


def _listed(step: Step, results: dict[str, list[Item]], store: TypedStore, nodes: dict[str, dict],
            history: History | None, run: Execution) -> list[Item]:
    """The nodes ``step`` lists, given the earlier steps' ``results``."""
    match step:
        case Expand():
            ids = [step.entity] if step.entity is not None else [n["id"] for n in results[step.step or ""]]
            found, edges = store.expand(ids, step.relation, step.direction, step.target_type)
            run.edges[step.key] = edges
            return [item(n) for n in found]
        case Join(op="intersection"):
            keep = set.intersection(*({n["id"] for n in results[k]} for k in step.inputs))
            return [n for n in results[step.inputs[0]] if n["id"] in keep]
        case Join(op="union"):
            merged = {n["id"]: n for k in step.inputs for n in results[k]}
            return sorted(merged.values(), key=node_key)
        case Join():    # difference
            drop = {n["id"] for k in step.inputs[1:] for n in results[k]}
            return [n for n in results[step.inputs[0]] if n["id"] not in drop]
        case Named():
            return sorted((item(nodes[i]) for i in step.ids), key=node_key)
        case Every():
            return sorted((item(n) for n in nodes.values() if n["type"] == step.type), key=node_key)
        case Given():
            return list((history or {})[step.history]["items"])
        case PropertyFilter():
            kept = [i for i in results[step.input] if compare(nodes.get(i["id"], {}).get(step.property), step.compare,
                                                              step.value)]
            run.facts[step.key] = [{"node": i["id"], "property": step.property, "value": nodes[i["id"]][step.property]}
                                   for i in kept]
            return kept
        case EdgeFilter():
            return _counted(step, results[step.input], store, run)


def _counted(step: EdgeFilter, items: list[Item], store: TypedStore, run: Execution) -> list[Item]:
    """The items whose number of edges of the step's kind compares as it says; the edges
    behind the kept ones are its evidence."""
    _, edges = store.expand([i["id"] for i in items], step.relation, step.direction, step.target_type)
    near = (lambda e: e.source) if step.direction == "out" else (lambda e: e.target)
    per: dict[str, list[Edge]] = {}
    for e in edges:
        per.setdefault(near(e), []).append(e)
    kept = [i for i in items if compare(len(per.get(i["id"], ())), step.compare, step.value)]
    run.edges[step.key] = [e for i in kept for e in per.get(i["id"], ())]
    return kept
