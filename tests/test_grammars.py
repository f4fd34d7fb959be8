"""Constraints built from data (``ragkit.llm.grammars``): the JSON schemas become grammars that
llama.cpp's own parser compiles, they carry what the graph's schema says, and the real
SmolLM2 decoded under them writes replies that parse."""

import json

import jsonschema
import pytest
from llama_cpp import LlamaGrammar

from ragkit.config import LLMConfig
from ragkit.errors import ModelError
from ragkit.kgqa.plan import parse_plan_json, validate
from ragkit.kgqa.store import SchemaEdge
from ragkit.kgqa.steps import Expand
from ragkit.llm.base import TokenTap
from ragkit.llm.gguf import check_grammar
from ragkit.llm.grammars import entity_list_schema, json_schema_grammar, plan_schema
from ragkit.pipelines.graph_rag import llm_entities

SCHEMA = [SchemaEdge("Compound", "TREATS", "Disease", 3), SchemaEdge("Disease", "HAS_SYMPTOM", "Symptom", 5),
          SchemaEdge("Compound", "INHIBITS", "Gene", 2)]


def compiles(grammar: str, gguf) -> bool:
    """llama.cpp's parser accepts ``grammar`` (LlamaGrammar.from_string only stores the text)."""
    LlamaGrammar.from_string(grammar, verbose=False)
    check_grammar(grammar, gguf._tokenizer()._model.vocab)
    return True


def step(key, relation, direction, target, **origin):
    return {"key": key, "op": "expand", "from": origin, "relation": relation, "direction": direction,
            "target_type": target}


def test_plan_schema_is_built_from_the_graph_schema(gguf):
    schema = plan_schema(SCHEMA, ["compound:aspirin", "disease:gout"],
                         entity_types={"compound:aspirin": "Compound", "disease:gout": "Disease"})
    assert compiles(json_schema_grammar(schema), gguf)
    accepts = lambda plan: jsonschema.Draft202012Validator(schema).is_valid(plan)     # noqa: E731
    good = {"steps": [step("s1", "TREATS", "out", "Disease", entity="compound:aspirin"),
                      step("s2", "HAS_SYMPTOM", "out", "Symptom", step="s1")], "final": "s2", "count": False}
    assert accepts(good)
    validate(parse_plan_json(json.dumps(good)), SCHEMA, {"compound:aspirin", "disease:gout"})
    both = {"steps": [step("s1", "TREATS", "out", "Disease", entity="compound:aspirin"),
                      step("s2", "TREATS", "out", "Disease", entity="compound:aspirin"),
                      {"key": "s3", "op": "intersection", "inputs": ["s1", "s2"]}], "final": "s3", "count": True}
    assert accepts(both)
    # Each relation goes out to its target type and in to its source type, nothing else;
    # an entity starts only the steps its type can start; keys are s1, s2 ... and refer back;
    # final is the last step; nothing else is allowed in.
    for bad in [dict(good, steps=[step("s1", "TREATS", "out", "Gene", entity="compound:aspirin")], final="s1"),
                dict(good, steps=[step("s1", "TREATS", "out", "Disease", entity="disease:gout")], final="s1"),
                dict(good, steps=[step("s1", "CURES", "out", "Disease", entity="compound:aspirin")], final="s1"),
                dict(good, steps=[step("s1", "TREATS", "out", "Disease", entity="compound:ibuprofen")], final="s1"),
                dict(good, steps=[good["steps"][0], dict(good["steps"][1], key="s1")]),
                dict(good, steps=[good["steps"][0], dict(good["steps"][1], **{"from": {"step": "s2"}})]),
                dict(good, final="s1"), dict(good, cypher="MATCH (n) DETACH DELETE n"),
                {"steps": good["steps"], "final": "s2"}]:
        assert not accepts(bad), bad
    assert "given" not in json.dumps(schema)
    other = plan_schema([SchemaEdge("Gene", "PART_OF", "Pathway", 1)], [], history_keys=["common_diseases"])
    assert compiles(json_schema_grammar(other), gguf)
    text = json.dumps(other)
    assert "TREATS" not in text and '"entity"' not in text and "common_diseases" in text
    free = plan_schema(SCHEMA)     # node ids free
    assert compiles(json_schema_grammar(free), gguf)
    assert jsonschema.Draft202012Validator(free).is_valid(
        dict(good, steps=[step("s1", "TREATS", "out", "Disease", entity="compound:anything")], final="s1"))
    with pytest.raises(ValueError, match="no edge kinds"):
        plan_schema([])


def test_entity_list_schema_compiles(gguf):
    schema = entity_list_schema()
    assert compiles(json_schema_grammar(schema), gguf)
    assert jsonschema.Draft202012Validator(schema).is_valid({"entities": ["Aage Bohr", "Hồ Chí Minh"]})
    assert jsonschema.Draft202012Validator(schema).is_valid({"entities": []})
    assert not jsonschema.Draft202012Validator(schema).is_valid({"entities": ["x"] * 9})


def test_a_grammar_or_schema_that_does_not_compile_is_one_line(gguf):
    with pytest.raises(ModelError, match=r"^grammar: does not compile \(.*'foo'.*\)$"):
        gguf.chat([{"role": "user", "content": "Say hello."}], max_tokens=4, grammar="root ::= foo")
    with pytest.raises(ModelError, match=r"^grammar: does not compile \([^\n]+\)$"):
        gguf.grammar('answer ::= "yes"')     # no root rule
    with pytest.raises(ModelError, match=r"^json schema: cannot be made a grammar \([^\n]+\)$"):
        json_schema_grammar({"$ref": "#/$defs/missing"})
    with pytest.raises(ValueError, match="not both"):
        gguf.chat([{"role": "user", "content": "Say hello."}], max_tokens=4, grammar='root ::= "a"',
                  json_schema={"type": "boolean"})


@pytest.mark.slow
def test_constrained_decoding_writes_only_what_the_constraint_accepts(gguf):
    out = gguf.chat([{"role": "user", "content": "Is Paris in France?"}], max_tokens=8,
                    grammar='root ::= "yes" | "no"')
    assert out.text in ("yes", "no")
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 20},
                                               "sure": {"type": "boolean"}},
              "required": ["answer", "sure"], "additionalProperties": False}
    out = gguf.chat([{"role": "user", "content": "Is Paris in France? Reply in JSON."}], max_tokens=40,
                    json_schema=schema)
    jsonschema.validate(json.loads(out.text), schema)


@pytest.mark.slow
def test_the_real_model_writes_plans_that_parse(nx_kg, gguf):
    """Under the plan schema, SmolLM2-135M's reply to the planner prompt always parses as a
    plan of the schema's relations and the linked entities whose keys refer back, whatever
    validation then says of it (it often chains a relation onto a type that has none)."""
    qa = nx_kg
    for question in ("What does Aspirin inhibit?", "What symptoms do diseases treated by Aspirin have?",
                     "Which genes are associated with gout?"):
        written: list[str] = []
        model = TokenTap(gguf, lambda piece, call: written.append(piece))
        entities = qa.names.resolve(question)
        _, info = qa.plan(question, entities, None, model, use_llm_planner=True)
        assert info.llm_plan_constrained is True
        plan = parse_plan_json("".join(written))
        relations = {s.relation for s in qa.schema}
        linked = {e.id for e in entities} | {a.id for alts in qa.alternatives(entities).values() for a in alts}
        for i, one in enumerate(plan.steps, 1):
            assert one.key == f"s{i}"
            assert one.op in ("expand", "intersection", "union", "difference", "nodes", "all")
            if isinstance(one, Expand):
                assert one.relation in relations
                assert one.entity in linked or int((one.step or "")[1:]) < i
        assert plan.final == f"s{len(plan.steps)}"
        assert "JSON" not in (info.llm_plan_rejected or "")


@pytest.mark.slow
def test_the_real_model_lists_entities_as_json(gguf):
    for question in ("Aage Bohr sinh ra ở đâu?", "What is the nationality of Marie Curie's spouse?",
                     "Hôm nay trời có mưa không?"):
        names, raw = llm_entities(question, gguf, LLMConfig())
        data = json.loads(raw)
        jsonschema.validate(data, entity_list_schema())
        assert names == [n.strip(" .:\"'`*-") for n in data["entities"] if n.strip(" .:\"'`*-")]
