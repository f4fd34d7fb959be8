"""Plan steps are typed: each kind is read from its JSON form, checked for shape, and written
back with the same keys."""

import json

import pytest

from ragkit.kgqa.plan import Plan, step_types
from ragkit.kgqa.steps import (EdgeFilter, Every, Expand, Given, Join, Named, PlanError, PropertyFilter,
                               reading_instead, step_from_dict)

EXAMPLES = [
    (Expand, {"key": "a", "op": "expand", "from": {"entity": "compound:aspirin"}, "relation": "TREATS",
              "direction": "out", "target_type": "Disease", "from_type": "Compound"}),
    (Expand, {"key": "b", "op": "expand", "from": {"step": "a"}, "relation": "HAS_SYMPTOM",
              "direction": "in", "target_type": "Symptom"}),
    (Join, {"key": "c", "op": "intersection", "inputs": ["a", "b"]}),
    (Join, {"key": "d", "op": "union", "inputs": ["a", "b", "c"]}),
    (Join, {"key": "e", "op": "difference", "inputs": ["a", "b"]}),
    (Named, {"key": "f", "op": "nodes", "ids": ["disease:gout"], "type": "Disease"}),
    (Named, {"key": "g", "op": "nodes", "ids": ["disease:gout", "disease:flu"]}),
    (Every, {"key": "h", "op": "all", "type": "Gene"}),
    (Given, {"key": "i", "op": "given", "history": "all_diseases"}),
    (PropertyFilter, {"key": "j", "op": "filter", "input": "h", "compare": ">", "value": 2000, "property": "year"}),
    (EdgeFilter, {"key": "k", "op": "filter", "input": "h", "compare": ">=", "value": 3.5, "relation": "HAS_SYMPTOM",
                  "direction": "out", "target_type": "Symptom"}),
]


@pytest.mark.parametrize("kind, data", EXAMPLES, ids=[d["key"] for _, d in EXAMPLES])
def test_each_kind_of_step_round_trips_through_its_json_form(kind, data):
    step = step_from_dict(json.loads(json.dumps(data)), "step")
    assert type(step) is kind and step.key == data["key"] and step.op == data["op"]
    assert step.to_dict() == data
    assert list(step.to_dict()) == list(data)          # the keys in the order plans have always had
    with pytest.raises(AttributeError):
        step.key = "other"                              # frozen


def test_a_plan_round_trips_and_knows_each_steps_type():
    data = {"steps": [d for _, d in EXAMPLES[:3]], "final": "c", "count": True}
    plan = Plan.from_dict(data)
    assert plan.to_dict() == data and Plan.from_dict(plan.to_dict()) == plan
    assert step_types(plan.steps) == {"a": "Disease", "b": "Symptom", "c": "Disease"}
    assert plan.step("b").reads == ("a",) and plan.step("c").reads == ("a", "b")


@pytest.mark.parametrize("data, why", [
    ({"op": "all", "type": "Gene"}, "needs a new, unreserved 'key'"),
    ({"key": "final_result", "op": "all", "type": "Gene"}, "unreserved"),
    ({"key": "a", "op": "jump"}, "unknown op 'jump'"),
    ({"key": "a", "op": "expand", "from": {"entity": "x"}, "relation": "R", "direction": "up",
      "target_type": "T"}, "direction must be 'out' or 'in'"),
    ({"key": "a", "op": "expand", "from": "x", "relation": "R", "direction": "out", "target_type": "T"},
     "'from' must name an entity or an earlier step"),
    ({"key": "a", "op": "expand", "from": {"step": "s"}, "direction": "out", "target_type": "T"}, "'relation'"),
    ({"key": "a", "op": "union", "inputs": ["b"]}, "two or more"),
    ({"key": "a", "op": "nodes", "ids": []}, "list of node ids"),
    ({"key": "a", "op": "all"}, "not a node type"),
    ({"key": "a", "op": "given"}, "'history'"),
    ({"key": "a", "op": "filter", "input": "b", "compare": ">", "value": True, "property": "year"}, "number"),
    ({"key": "a", "op": "filter", "input": "b", "compare": ">", "value": 1}, "'property', or a 'relation'"),
    ("expand", "a step must be a JSON object"),
])
def test_a_step_of_the_wrong_shape_is_refused_naming_the_field(data, why):
    with pytest.raises(PlanError, match="plan step 2") as caught:
        Plan.from_dict({"steps": [{"key": "z", "op": "all", "type": "Gene"}, data], "final": "z"})
    assert why in str(caught.value)


def test_a_step_reads_a_new_list_in_place_of_an_old_one():
    expand = step_from_dict(EXAMPLES[1][1], "s")
    assert reading_instead(expand, "a", "a2").reads == ("a2",)
    join = step_from_dict(EXAMPLES[3][1], "s")
    assert reading_instead(join, "b", "b2").reads == ("a", "b2", "c")
    every = step_from_dict(EXAMPLES[7][1], "s")
    assert reading_instead(every, "a", "b") is every
    assert reading_instead(step_from_dict(EXAMPLES[9][1], "s"), "h", "h2").reads == ("h2",)
