"""Constraints built from data, for constrained decoding where a model's reply must parse.

A JSON schema (``LLM.chat(json_schema=...)``) limits a reply to the JSON it accepts, so a
small model cannot answer a JSON request with prose or a list request with a paragraph.
Every OpenAI-compatible server with structured outputs reads it (``response_format``); in
process it becomes a GBNF grammar (llama.cpp's ``rule ::= "literal" | other-rule``), which
limits each token the model may write to those that keep the reply inside the language.
``LLM.chat`` also takes GBNF text itself as ``grammar=`` (the GGUF in process and llama.cpp
servers only).

- ``json_schema_grammar``: any JSON schema as GBNF, through llama-cpp-python's converter;
- ``entity_list_schema``: ``{"entities": [NAME, ...]}``;
- ``plan_schema``: a KG query plan (``kgqa.plan``), whose relations, directions, node types
  and ops are the graph schema's own and whose steps can only refer back, so the reply
  parses as a plan.

Every repetition is bounded, so a model cannot loop on names or steps until it runs out of
tokens. The schemas keep to strict mode's rules (every property required, no others).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

from ..errors import ModelError
from ..runtime.extras import requires_extra


def json_schema_grammar(schema: dict) -> str:
    """A grammar for the JSON values ``schema`` accepts (types, required properties, enums,
    lists, ``$defs`` ...), from llama-cpp-python's converter (``llama_cpp.llama_grammar``),
    which writes properties in the schema's order and a space at most between tokens."""
    return _converted(json.dumps(schema, ensure_ascii=False))


@lru_cache(maxsize=64)
def _converted(schema_text: str) -> str:
    with requires_extra("llm"):
        from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        return json_schema_to_gbnf(schema_text)
    except Exception as exc:    # the converter raises whatever its walk meets
        raise ModelError(f"json schema: cannot be made a grammar ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:200]})") from None


def enum(values: Iterable[str]) -> dict:
    """A string that is one of ``values``."""
    return {"type": "string", "enum": list(dict.fromkeys(values))}


def closed(properties: dict, title: str | None = None) -> dict:
    """An object with exactly these properties, all required, written in this order."""
    out = {"title": title} if title else {}
    return {**out, "type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def entity_list_schema(most_names: int = 8, most_chars: int = 64) -> dict:
    """``{"entities": [NAME, ...]}``: up to ``most_names`` names of 1 to ``most_chars``
    characters; an empty list says the question names none."""
    name = {"type": "string", "minLength": 1, "maxLength": most_chars}
    return closed({"entities": {"type": "array", "items": name, "maxItems": most_names}}, "entities")


def step_key(i: int) -> str:
    """The key of a plan's ``i``-th step (1-based) under ``plan_schema``: ``s1``, ``s2`` ..."""
    return f"s{i}"


def plan_schema(schema: Iterable, entity_ids: Sequence[str] | None = None,
                history_keys: Sequence[str] = (), most_steps: int = 6,
                entity_types: Mapping[str, str] | None = None) -> dict:
    """The JSON schema of a KG query plan (``{"steps": [...], "final": KEY, "count": BOOL}``,
    see ``ragkit.kgqa.plan``) over a graph whose ``schema`` lists its edge kinds (objects
    with ``source_type``, ``relation`` and ``target_type``).

    - Step ``i`` has the key ``s<i>`` and may refer only to the steps before it (an
      ``expand`` from one, a set operation on two to four of them); ``final`` is the last
      step. A plan of 1 to ``most_steps`` steps is one alternative per length, each a
      tuple (``prefixItems``), so keys are never reused nor refer forward.
    - An ``expand`` step takes an edge kind the schema has, in either direction, with the
      type at its far end (``"relation": "TREATS", "direction": "out", "target_type":
      "Disease"``); ``nodes`` and ``all`` name the schema's node types.
    - Node ids are the ``entity_ids`` given (free strings when ``None``; with none at all,
      no step starts from an entity); with ``entity_types`` (id → node type), an ``expand``
      from an entity takes only the entities of the type at its near end. ``given`` steps
      exist only with ``history_keys`` (the previous turn's lists).

    What a schema cannot see (the type a step starts from against the relation's) is left
    to ``kgqa.plan.validate``."""
    edges = list(schema)
    if not edges:
        raise ValueError("plan schema: the schema has no edge kinds")
    if most_steps < 1:
        raise ValueError(f"plan schema: most_steps must be at least 1, got {most_steps}")
    types = sorted({e.source_type for e in edges} | {e.target_type for e in edges})
    starts = entity_ids is None or bool(entity_ids)      # may a step start from an entity?
    defs: dict = {"node_type": enum(types)}
    if starts:
        defs["entity"] = {"type": "string", "minLength": 1, "maxLength": 64} if entity_ids is None \
            else enum(entity_ids)
    if history_keys:
        defs["history"] = enum(history_keys)
    entity, node_type = {"$ref": "#/$defs/entity"}, {"$ref": "#/$defs/node_type"}
    hops = [(e.relation, direction, near, far) for e in edges
            for direction, near, far in (("out", e.source_type, e.target_type), ("in", e.target_type, e.source_type))]
    typed = {}          # node type -> the entities of that type (with entity_types)
    if starts and entity_types is not None:
        for t in types:
            ids = [i for i in entity_ids or () if entity_types.get(i) == t]
            if ids:
                typed[t] = defs[f"entity_{t}"] = enum(ids)
    for i in range(1, most_steps + 1):
        key, earlier = enum([step_key(i)]), [step_key(j) for j in range(1, i)]
        from_step = [closed({"step": enum(earlier)})] if earlier else []
        kinds = []
        for relation, direction, near, far in hops:
            if entity_types is None:
                origins = ([closed({"entity": entity})] if starts else []) + from_step
            else:
                typed_origin = [closed({"entity": {"$ref": f"#/$defs/entity_{near}"}})] if near in typed else []
                origins = typed_origin + from_step
            if origins:
                kinds.append(closed({"key": key, "op": enum(["expand"]),
                                     "from": origins[0] if len(origins) == 1 else {"anyOf": origins},
                                     "relation": enum([relation]), "direction": enum([direction]),
                                     "target_type": enum([far])}))
        if len(earlier) >= 2:
            kinds.append(closed({"key": key, "op": enum(["intersection", "union", "difference"]),
                                 "inputs": {"type": "array", "items": enum(earlier), "minItems": 2,
                                            "maxItems": min(4, len(earlier))}}))
        kinds.append(closed({"key": key, "op": enum(["all"]), "type": node_type}))
        if starts:
            kinds.append(closed({"key": key, "op": enum(["nodes"]),
                                 "ids": {"type": "array", "items": entity, "minItems": 1, "maxItems": 4},
                                 "type": node_type}))
        if history_keys:
            kinds.append(closed({"key": key, "op": enum(["given"]), "history": {"$ref": "#/$defs/history"}}))
        defs[f"step{i}"] = {"anyOf": kinds}
    plans = [closed({"steps": {"type": "array", "prefixItems": [{"$ref": f"#/$defs/step{i}"} for i in range(1, n + 1)],
                               "items": False, "minItems": n, "maxItems": n},
                     "final": enum([step_key(n)]), "count": {"type": "boolean"}})
             for n in range(1, most_steps + 1)]
    return {"title": "kg_plan", "anyOf": plans, "$defs": defs}


__all__ = ["closed", "entity_list_schema", "enum", "json_schema_grammar", "plan_schema", "step_key"]
