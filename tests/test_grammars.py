"""Grammars built from data (``ragkit.llm.grammars``): they compile with llama.cpp's own
parser, they carry what the schema says, and the real SmolLM2 decoded under them writes
replies that parse."""

import re

import pytest
from llama_cpp import LlamaGrammar

from ragkit.config import LLMConfig
from ragkit.errors import ModelError
from ragkit.kgqa.plan import parse_plan_json
from ragkit.kgqa.store import SchemaEdge
from ragkit.llm.base import TokenTap
from ragkit.llm.gguf import check_grammar
from ragkit.llm.grammars import entity_list_grammar, json_schema_grammar, json_string, literal, plan_grammar
from ragkit.pipelines.graph_rag import NO_ENTITY, llm_entities

SCHEMA = [SchemaEdge("Compound", "TREATS", "Disease", 3), SchemaEdge("Disease", "HAS_SYMPTOM", "Symptom", 5),
          SchemaEdge("Compound", "INHIBITS", "Gene", 2)]


def compiles(grammar: str, gguf) -> bool:
    """llama.cpp's parser accepts ``grammar`` (LlamaGrammar.from_string only stores the text)."""
    LlamaGrammar.from_string(grammar, verbose=False)
    check_grammar(grammar, gguf._tokenizer()._model.vocab)
    return True


def test_literals_escape_what_gbnf_would_read():
    assert literal('say "hi"\\n') == '"say \\"hi\\"\\\\n"'
    assert json_string("Hồ Chí Minh") == '"\\"Hồ Chí Minh\\""'


def test_plan_grammar_is_built_from_the_schema(gguf):
    grammar = plan_grammar(SCHEMA, ["compound:aspirin", "disease:gout"])
    assert compiles(grammar, gguf)
    for name in ("TREATS", "HAS_SYMPTOM", "INHIBITS", "Compound", "Disease", "Symptom", "Gene",
                 "compound:aspirin", "disease:gout", "intersection", "difference"):
        assert f'\\"{name}\\"' in grammar
    # Each relation goes out to its target type and in to its source type, nothing else.
    assert '"\\"TREATS\\"" ws "," ws "\\"direction\\"" ws ":" ws "\\"in\\"" ws "," ws ' \
           '"\\"target_type\\"" ws ":" ws "\\"Compound\\""' in grammar
    assert '"\\"given\\""' not in grammar
    other = plan_grammar([SchemaEdge("Gene", "PART_OF", "Pathway", 1)], [], history_keys=["common_diseases"])
    assert compiles(other, gguf)
    assert "TREATS" not in other and "entity" not in other and '"\\"common_diseases\\""' in other
    assert compiles(plan_grammar(SCHEMA), gguf)     # node ids free
    with pytest.raises(ValueError, match="no edge kinds"):
        plan_grammar([])


def test_entity_list_and_json_schema_grammars_compile(gguf):
    assert compiles(entity_list_grammar(NO_ENTITY), gguf)
    assert literal(NO_ENTITY) in entity_list_grammar(NO_ENTITY)
    schema = {"type": "object", "properties": {"answer": {"type": "string"}, "sure": {"type": "boolean"}},
              "required": ["answer", "sure"]}
    assert compiles(json_schema_grammar(schema), gguf)


def test_a_grammar_that_does_not_compile_is_one_line(gguf):
    with pytest.raises(ModelError, match=r"^grammar: does not compile \(.*'foo'.*\)$"):
        gguf.chat([{"role": "user", "content": "Say hello."}], max_tokens=4, grammar="root ::= foo")
    with pytest.raises(ModelError, match=r"^grammar: does not compile \([^\n]+\)$"):
        gguf.grammar('answer ::= "yes"')     # no root rule


@pytest.mark.slow
def test_constrained_decoding_writes_only_what_the_grammar_accepts(gguf):
    out = gguf.chat([{"role": "user", "content": "Is Paris in France?"}], max_tokens=8,
                    grammar='root ::= "yes" | "no"')
    assert out.text in ("yes", "no")


@pytest.mark.slow
def test_the_real_model_writes_plans_that_parse(nx_kg, gguf):
    """Under the plan grammar, SmolLM2-135M's reply to the planner prompt always parses as a
    plan of the schema's relations and the linked entities, whatever validation then says
    of it (it copies the prompt's example keys, which validation refuses)."""
    qa = nx_kg
    for question in ("What does Aspirin inhibit?", "What symptoms do diseases treated by Aspirin have?",
                     "Which genes are associated with gout?"):
        written: list[str] = []
        model = TokenTap(gguf, lambda piece, call: written.append(piece))
        entities = qa.names.resolve(question)
        _, info = qa.plan(question, entities, None, model, use_llm_planner=True)
        assert info["llm_plan_constrained"] is True
        plan = parse_plan_json("".join(written))
        relations = {s.relation for s in qa.schema}
        linked = {e.id for e in entities} | {a.id for alts in qa.alternatives(entities).values() for a in alts}
        for step in plan.steps:
            assert step["op"] in ("expand", "intersection", "union", "difference", "nodes", "all")
            if step["op"] == "expand":
                assert step["relation"] in relations
                assert "step" in step["from"] or step["from"]["entity"] in linked
        assert "invalid JSON" not in (info.get("llm_plan_rejected") or "")


@pytest.mark.slow
def test_the_real_model_lists_entities_on_one_line(gguf):
    for question in ("Aage Bohr sinh ra ở đâu?", "What is the nationality of Marie Curie's spouse?",
                     "Hôm nay trời có mưa không?"):
        names, raw = llm_entities(question, gguf, LLMConfig())
        assert "\n" not in raw and raw.strip()
        assert raw == NO_ENTITY or re.fullmatch(r"[^,;\n]+(, ?[^,;\n]+)*,? ?", raw), raw
        assert all(len(n.split()) <= 6 for n in names)
        if raw == NO_ENTITY:
            assert names == []
