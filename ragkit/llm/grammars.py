"""GBNF grammars built from data, for constrained decoding where a model's reply must parse.

A grammar (llama.cpp's GBNF: ``rule ::= "literal" | other-rule | [a-z]{1,8}``) limits each
token the model may write to those that keep the reply inside the language, so a small model
cannot answer a JSON request with prose or a list request with a paragraph. ``LLM.chat``
takes one as ``grammar=``; the in-process model and llama.cpp-compatible servers apply it.

- ``json_schema_grammar``: any JSON schema, through llama-cpp-python's own converter;
- ``entity_list_grammar``: one line of comma-separated short names, or the word that
  means "none";
- ``plan_grammar``: a KG query plan (``kgqa.plan``), whose relations, directions, node types
  and ops are the graph schema's own, so the reply parses as a plan.

Every repetition is bounded, so a model cannot loop on whitespace or names until it runs
out of tokens.
"""

from __future__ import annotations

import json
from typing import Iterable, Sequence

from ..extras import requires_extra

# JSON whitespace, bounded: nothing, a space, or a newline and a little indentation.
WS_RULE = 'ws ::= ( " " | "\\n" [ ]{0,8} )?'


def literal(text: str) -> str:
    """``text`` as a GBNF string literal: ``literal('say "hi"')`` → ``"say \\"hi\\""``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def json_string(value: str) -> str:
    """A GBNF literal matching ``value`` written as a JSON string (quotes included)."""
    return literal(json.dumps(value, ensure_ascii=False))


def one_of(rules: Iterable[str]) -> str:
    """The alternatives ``rules`` as one GBNF group (duplicates dropped, order kept)."""
    return "( " + " | ".join(dict.fromkeys(rules)) + " )"


def json_object(fields: Sequence[tuple[str | None, str]]) -> str:
    """A GBNF sequence for a JSON object with these keys in this order, each key's value
    matching its rule: ``json_object([("op", json_string("all"))])`` matches ``{"op": "all"}``.
    A field whose key is ``None`` is a rule that writes its own members (``members``)."""
    body = ' ws "," ws '.join(rule if key is None else members([(key, rule)]) for key, rule in fields)
    return f'"{{" ws {body} ws "}}"'


def members(fields: Sequence[tuple[str, str]]) -> str:
    """Key-value members of a JSON object, without its braces (one group of several that
    may fill the same place)."""
    return " ws \",\" ws ".join(f'{json_string(key)} ws ":" ws {rule}' for key, rule in fields)


def json_list(rule: str, least: int = 1, most: int = 8) -> str:
    """A JSON list of ``least`` to ``most`` items matching ``rule``."""
    rest = f'( ws "," ws {rule} ){{{max(0, least - 1)},{most - 1}}}'
    return f'"[" ws {rule} {rest} ws "]"'


def json_schema_grammar(schema: dict) -> str:
    """A grammar for the JSON values ``schema`` accepts (types, required properties, enums,
    lists ...), from llama-cpp-python's converter (``llama_cpp.llama_grammar``)."""
    with requires_extra("llm"):
        from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(json.dumps(schema))


def entity_list_grammar(none: str = "NONE", most_names: int = 8, most_words: int = 6) -> str:
    """One line: up to ``most_names`` names of up to ``most_words`` words each, separated by
    commas, or ``none`` alone. A word is any run of characters but spaces, commas,
    semicolons and line breaks (names keep their diacritics and dots: "Pierre Curie",
    "Hồ Chí Minh", "St. Louis")."""
    return "\n".join([
        f"root ::= {literal(none)} | names",
        f'names ::= name ( "," " "? name ){{0,{most_names - 1}}}',
        f'name ::= word ( " " word ){{0,{most_words - 1}}}',
        'word ::= [^ ,;\\n\\r\\t]{1,32}',
    ])


def plan_grammar(schema: Iterable, entity_ids: Sequence[str] | None = None,
                 history_keys: Sequence[str] = (), most_steps: int = 6) -> str:
    """A grammar for a KG query plan (``{"steps": [...], "final": KEY, "count": true}``, see
    ``ragkit.kgqa.plan``) over a graph whose ``schema`` lists its edge kinds (objects with
    ``source_type``, ``relation`` and ``target_type``).

    An ``expand`` step may only take an edge kind the schema has, in either direction with
    the type at its far end (``"relation": "TREATS", "direction": "out", "target_type":
    "Disease"``); ``nodes`` and ``all`` name the schema's node types. Node ids are the
    ``entity_ids`` given (free strings when ``None``; with none at all, no step may start
    from an entity), ``given`` steps exist only with ``history_keys`` (the previous turn's
    lists). Keys are lower-case words. The order of keys in a step is the one the planner
    prompt shows. What a grammar cannot see (a key defined twice, a step that refers to a
    later one, the type a step starts from) is left to ``kgqa.plan.validate``."""
    edges = list(schema)
    if not edges:
        raise ValueError("plan grammar: the schema has no edge kinds")
    hops = []
    for e in edges:
        for direction, far in (("out", e.target_type), ("in", e.source_type)):
            hops.append(members([("relation", json_string(e.relation)), ("direction", json_string(direction)),
                                 ("target_type", json_string(far))]))
    types = sorted({e.source_type for e in edges} | {e.target_type for e in edges})

    def step(op: str, *fields: tuple[str | None, str]) -> str:
        return json_object([("key", "key"), ("op", op), *fields])

    # An expand step's relation, direction and target type are one choice: a hop.
    steps = [step(json_string("expand"), ("from", "origin"), (None, "hop")), step(one_of(json_string(op) for op in ("intersection", "union", "difference")),
                          ("inputs", json_list("key", least=2, most=4))),
             step(json_string("all"), ("type", "type"))]
    origins = [json_object([("step", "key")])]
    if entity_ids is None or entity_ids:
        origins.insert(0, json_object([("entity", "entity")]))
        steps.append(step(json_string("nodes"), ("ids", json_list("entity", most=4)), ("type", "type")))
    if history_keys:
        steps.append(step(json_string("given"), ("history", "history")))
    rules = {
        "root": '"{" ws ' + f'{json_string("steps")} ws ":" ws {json_list("step", most=most_steps)} ws "," ws '
                + f'{json_string("final")} ws ":" ws key '
                + f'( ws "," ws {json_string("count")} ws ":" ws ( "true" | "false" ) )? ws "}}"',
        "step": one_of(steps),
        "origin": one_of(origins),
        "hop": one_of(hops),
        "type": one_of(json_string(t) for t in types),
        "key": '"\\"" [a-z] [a-z0-9_]{0,39} "\\""',
    }
    if entity_ids is None:
        rules["entity"] = '"\\"" [^"\\\\\\n]{1,64} "\\""'
    elif entity_ids:
        rules["entity"] = one_of(json_string(i) for i in entity_ids)
    if history_keys:
        rules["history"] = one_of(json_string(k) for k in history_keys)
    return "\n".join([*(f"{name} ::= {rule}" for name, rule in rules.items()), WS_RULE])


__all__ = ["entity_list_grammar", "json_list", "json_object", "json_schema_grammar", "json_string", "literal",
           "members", "one_of", "plan_grammar"]
