"""The KG question-answering flow on our own stores:
``QueryWriting → SmartSearch → Planner → Executor → AnswerGenerator``.

- QueryWriting: a follow-up ("and which of them affect the liver?") becomes a standalone
  question that says what "them" refers to, from the previous turn;
- SmartSearch: the named entities, resolved to nodes (exact, alias, fuzzy);
- Planner: an explicit plan from the graph's own schema (rules), or from the model, decoded
  under a JSON schema built from the graph's schema (``llm.grammars.plan_schema``, OpenAI's
  structured outputs) so that its reply parses as a plan, and which must pass the same
  validation before it runs (else the rules plan, with the reason);
- Executor: the plan on the store, filling the context store;
- AnswerGenerator (``answer.answer_draft``): the prompt and the fixed messages, with the
  entity check, run by the shared answer stage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..errors import GenerationError, ModelError
from ..llm.base import LLM
from ..llm.grammars import plan_schema
from ..runtime.profiler import Profiler
from .execute import execute
from .filters import numeric_properties
from .plan import ANAPHORS, Plan, PlanError, history_lists, parse_plan_json, step_types, validate
from .records import History, KGRun, Planning, TurnRecord
from .steps import Given
from .question_reading import plural
from .rule_planner import RulePlanner
from ..text.question import QuestionReading
from ..text.words import terms
from .resolve import NameIndex, Resolved
from .store import TypedStore

PLAN_TOKENS = 400      # the longest plan the schema admits (6 steps of about 50 tokens) fits
PLANNER_PROMPT = """You plan queries over a knowledge graph. Reply with one JSON object only.
Graph schema (source type -[RELATION]-> target type):
{schema}
Entities in the question (id, name, type):
{entities}
Question: {question}
Plan format (step keys s1, s2, ... in order; "final" is the last step): {{"steps": [{{"key": "s1",
"op": "expand", "from": {{"entity": "ID"}}, "relation": "RELATION", "direction": "out", "target_type": "Type"}},
{{"key": "s2", "op": "expand", "from": {{"step": "s1"}}, "relation": "...", "direction": "out" or "in",
"target_type": "..."}}, {{"key": "s3", "op": "intersection", "inputs": ["s1", "s2"]}}], "final": "s3",
"count": false}}"""


@dataclass
class Turn:
    """One answered question, as the next turn needs it."""

    question: str
    standalone: str
    plan: dict
    context_store: dict
    lists: History = field(default_factory=dict)

    def to_dict(self) -> TurnRecord:
        return {"question": self.question, "standalone": self.standalone, "plan": self.plan,
                "context_store": self.context_store, "lists": self.lists}

    @classmethod
    def from_dict(cls, data: TurnRecord) -> Turn:
        """A turn from its JSON (an earlier answer's ``trace.turn``)."""
        return cls(data["question"], data["standalone"], data["plan"], data["context_store"], data.get("lists", {}))


class KGQA:
    """The flow over one typed store; the schema and name index are read once."""

    def __init__(self, store: TypedStore):
        self.store = store
        self.schema = store.schema()
        self.nodes = {n["id"]: n for n in store.all_nodes()}
        self.names = NameIndex(list(self.nodes.values()))
        self.same_name = same_name_index(self.nodes.values())
        self.reaches = lru_cache(maxsize=4096)(self._reaches)
        self.rules = RulePlanner(self.schema, numeric_properties(self.nodes.values()), self.reaches)

    def _reaches(self, node_id: str, relation: str, direction: str) -> bool:
        """Whether the node has an edge of ``relation`` in ``direction`` (``reaches``: asked
        once per node and relation, the latest few thousand kept; the planner asks it for
        each chain it weighs)."""
        return bool(self.store.expand([node_id], relation, direction)[0])

    def alternatives(self, entities: list[Resolved]) -> dict[str, list[Resolved]]:
        """For each entity, the nodes of other types its words also name ("fever": the
        symptom Fever and the disease "Fever (Pyrexia)"), so the planner can take the one
        the question's relations fit."""
        out = {}
        for e in entities:
            others = [self.nodes[i] for i in self.same_name.get(e.mention, ()) if self.nodes[i]["type"] != e.type]
            if others:
                out[e.id] = [Resolved(e.mention, n["id"], n["name"], n["type"], "same name", e.score, e.start)
                             for n in others]
        return out

    # ----------------------------------------------------------------- stages
    def standalone(self, question: str, history: list[Turn], plan: Plan | None) -> str:
        """QueryWriting: say what an anaphor refers to (the previous turn's list the plan
        took), so the question stands on its own."""
        toks = set(terms(question))
        given = [s for s in (plan.steps if plan else []) if isinstance(s, Given)]
        if not history or not ANAPHORS & toks or not given:
            return question
        previous = history[-1]
        bound = previous.lists[given[0].history]
        names = ", ".join(i["name"] for i in bound["items"][:5]) + (", ..." if len(bound["items"]) > 5 else "")
        return (f"{question.strip()} (\"{sorted(ANAPHORS & toks)[0]}\": the {len(bound['items'])} "
                f"{plural(bound['type']).replace('_', ' ')} found for \"{previous.standalone}\": {names})")

    def plan(self, question: str, entities: list[Resolved], history_map: History | None, model: LLM | None,
             use_llm_planner: bool, reading: QuestionReading | None = None) -> tuple[Plan, Planning]:
        """The plan for ``question``: the model's (``use_llm_planner``) when it passes
        validation, else the rules' (with why the model's was not taken)."""
        node_ids = set(self.nodes)
        rejected: str | None = None
        reply: str | None = None
        constrained: bool | None = None    # the model was asked, under the plan's schema
        if use_llm_planner and model is not None:
            constrained = True
            try:
                return self.llm_plan(question, entities, history_map, model, reading)
            except PlanError as exc:
                rejected, reply = str(exc), getattr(exc, "reply", None)
            except ModelError as exc:
                if not isinstance(exc, GenerationError):   # a model that cannot load is an error
                    raise
                rejected = f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # a model failure falls back to the rules, and says so
                rejected = f"{type(exc).__name__}: {exc}"
        plan = self.rules.plan(question, entities, history_map, self.alternatives(entities), reading)
        planning = Planning("rules", reply, rejected, constrained, plan.linked)
        return validate(plan, self.schema, node_ids, history_map), planning

    def llm_plan(self, question: str, entities: list[Resolved], history_map: History | None, model: LLM,
                 reading: QuestionReading | None = None) -> tuple[Plan, Planning]:
        """The model's plan, validated (PlanError, with the reply as ``reply``, if it does not
        parse or fit). The reply is decoded under the plan's JSON schema
        (``llm.grammars.plan_schema``): any OpenAI-compatible server with structured outputs
        applies it, and so does the GGUF in process. It holds the schema's relations and
        types, the linked entities' ids, and step keys that refer back only."""
        prompt = PLANNER_PROMPT.format(
            schema="\n".join(f"{s.source_type} -[{s.relation}]-> {s.target_type}" for s in self.schema),
            entities="\n".join(f"{e.id}, {e.name}, {e.type}" for e in entities) or "(none)",
            question=question)
        linked = [e.id for e in entities] + [a.id for alts in self.alternatives(entities).values() for a in alts]
        constraint = plan_schema(self.schema, linked, list(history_map or ()),
                                 entity_types={i: self.nodes[i]["type"] for i in linked})
        gen = model.chat([{"role": "user", "content": prompt}], max_tokens=PLAN_TOKENS, temperature=0.0,
                         json_schema=constraint)
        try:
            plan = validate(parse_plan_json(gen.text), self.schema, set(self.nodes), history_map)
            self.fits_question(plan, question, entities, reading)
        except PlanError as exc:
            exc.reply = gen.text        # for the trace: what the model wrote
            raise
        return plan, Planning("llm", gen.text, None, True, plan.linked)

    def fits_question(self, plan: Plan, question: str, entities: list[Resolved],
                      reading: QuestionReading | None = None) -> None:
        """PlanError unless a plan answers with the type the question asks for and makes the
        comparisons it makes (as the rules read them): a model's plan may be valid on the
        schema and still answer another question."""
        linked = self.rules.read(question, entities, reading)
        final = step_types(plan.steps).get(plan.final)
        if linked.asked and final and final != linked.asked:
            raise PlanError(f"plan: its answer lists {plural(final)}, but the question asks for "
                            f"{plural(linked.asked)}")
        if (linked.filters or linked.unlinked) and not any(s.op == "filter" for s in plan.steps):
            said = [f["text"] for f in linked.filters] + linked.unlinked
            raise PlanError(f"plan: the question compares {', '.join(map(repr, said))}, the plan filters nothing")

    # ----------------------------------------------------------------- the flow
    def ask(self, question: str, history: list[Turn] | None = None, model: LLM | None = None,
            use_llm_planner: bool = False, profiler: Profiler | None = None,
            reading: QuestionReading | None = None) -> KGRun:
        """Entities, plan, the context store it fills and the edges behind it (each stage
        timed in ``profiler``); the answer is written by the answer stage. ``reading``: the
        ask's reading of the question (``ragkit.text.question``), which the planner links."""
        history = history or []
        profiler = profiler or Profiler()
        with profiler.stage("smart_search"):
            entities = self.names.resolve(question)
        history_map = history[-1].lists if history else None
        try:
            with profiler.stage("plan"):
                plan, planning = self.plan(question, entities, history_map, model, use_llm_planner, reading)
        except PlanError as exc:
            return KGRun(question, entities, Planning(linked=getattr(exc, "linked", {})), plan_error=str(exc))
        with profiler.stage("query_writing"):
            standalone = self.standalone(question, history, plan)
        with profiler.stage("execute"):
            run = execute(plan, self.store, self.nodes, history_map)
        turn = Turn(question, standalone, plan.to_dict(), run.context_store,
                    history_lists(run.context_store, plan))
        edges = [{"step": key, "source": e.source, "relation": e.relation, "target": e.target, **e.properties}
                 for key, es in run.edges.items() for e in es]
        facts = [{"step": key, **f} for key, fs in run.facts.items() for f in fs]
        return KGRun(standalone, entities, planning, plan, None, run.context_store, run.counts, edges, facts, turn)


def same_name_index(nodes) -> dict[str, list[str]]:
    """Each way a node is written (its name, the name without a bracketed part and that
    part, "Fever (Pyrexia)" → fever, pyrexia; its aliases), as words, → the node ids."""
    index: dict[str, list[str]] = {}
    for n in nodes:
        name = str(n.get("name", ""))
        forms = {name, re.sub(r"\s*\([^)]*\)", "", name), *re.findall(r"\(([^)]*)\)", name)}
        forms |= {a for a in n.get("aliases") or [] if a}
        for form in forms:
            key = " ".join(terms(form))
            if key and n["id"] not in index.setdefault(key, []):
                index[key].append(n["id"])
    return index


__all__ = ["KGQA", "Turn"]
