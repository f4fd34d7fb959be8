"""The executor (the flow's Executor stage, on our stores): runs a validated plan and fills the
context store, each step's result under its own key. ``final_result`` holds at most 15 items
(``FINAL_LIMIT``) and ``final_result_total`` the full count. The edges each step followed are
kept apart, as the evidence that answers cite; so are the property values a filter compared
(``facts``: node, property, value)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .filters import compare
from .plan import Plan
from .store import Edge, TypedStore, node_key

FINAL_LIMIT = 15


def item(node: dict) -> dict:
    """A node as the context store keeps it."""
    return {"id": node["id"], "name": node["name"], "type": node["type"]}


@dataclass
class Execution:
    context_store: dict = field(default_factory=dict)
    edges: dict[str, list[Edge]] = field(default_factory=dict)     # step key → edges followed
    counts: dict[str, int] = field(default_factory=dict)
    facts: dict[str, list[dict]] = field(default_factory=dict)     # step key → property values compared


def execute(plan: Plan, store: TypedStore, nodes: dict[str, dict], history: dict | None = None) -> Execution:
    """Run ``plan`` on ``store``; ``nodes`` maps ids to nodes (for named nodes and for every
    node of a type, which need no query)."""
    run = Execution()
    results: dict[str, list[dict]] = {}
    for step in plan.steps:
        key, op = step["key"], step["op"]
        if op == "expand":
            src = step["from"]
            ids = [src["entity"]] if "entity" in src else [n["id"] for n in results[src["step"]]]
            found, edges = store.expand(ids, step["relation"], step["direction"], step["target_type"])
            results[key] = [item(n) for n in found]
            run.edges[key] = edges
        elif op == "intersection":
            keep = set.intersection(*({n["id"] for n in results[k]} for k in step["inputs"]))
            results[key] = [n for n in results[step["inputs"][0]] if n["id"] in keep]
        elif op == "union":
            merged = {n["id"]: n for k in step["inputs"] for n in results[k]}
            results[key] = sorted(merged.values(), key=node_key)
        elif op == "difference":
            drop = {n["id"] for k in step["inputs"][1:] for n in results[k]}
            results[key] = [n for n in results[step["inputs"][0]] if n["id"] not in drop]
        elif op == "nodes":
            results[key] = sorted((item(nodes[i]) for i in step["ids"]), key=node_key)
        elif op == "all":
            results[key] = sorted((item(n) for n in nodes.values() if n["type"] == step["type"]), key=node_key)
        elif op == "given":
            results[key] = list((history or {})[step["history"]]["items"])
        elif op == "filter":
            results[key] = _filtered(step, results[step["input"]], store, nodes, run)
        run.counts[key] = len(results[key])
    for key, value in results.items():
        run.context_store[key] = value
    final = results[plan.final]
    run.context_store["final_result"] = final[:FINAL_LIMIT]
    run.context_store["final_result_total"] = len(final)
    return run


def _filtered(step: dict, items: list[dict], store: TypedStore, nodes: dict[str, dict], run: Execution) -> list[dict]:
    """The items whose property (or number of edges of a kind) compares as the step says;
    the values and edges behind the kept ones are its evidence."""
    op, bound = step["compare"], step["value"]
    if "property" in step:
        kept = [i for i in items if compare(nodes.get(i["id"], {}).get(step["property"]), op, bound)]
        run.facts[step["key"]] = [{"node": i["id"], "property": step["property"],
                                   "value": nodes[i["id"]][step["property"]]} for i in kept]
        return kept
    _, edges = store.expand([i["id"] for i in items], step["relation"], step["direction"], step["target_type"])
    near = (lambda e: e.source) if step["direction"] == "out" else (lambda e: e.target)
    per: dict[str, list[Edge]] = {}
    for e in edges:
        per.setdefault(near(e), []).append(e)
    kept = [i for i in items if compare(len(per.get(i["id"], ())), op, bound)]
    run.edges[step["key"]] = [e for i in kept for e in per.get(i["id"], ())]
    return kept
