"""Explicit query plans (the steps the executor runs), their validation against the graph's
own schema, and the rule-based planner.

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

The rule planner reads the question's words against the schema: which node types it names
("drugs", "illnesses"), which relations its verbs name ("treated", "linked to"), which type
it asks for ("which organs ...", "... affect which organs?"), where its entities are and
which of them are excluded ("not treated by B", "other than gout"). Each entity starts a
chain of relation steps (one to three) to the asked type; the chains chosen use the most of
the question's words at the least cost, kept chains meet by intersection (or union, for
"either ... or") as early as they can, and excluded chains are taken away at the end. A
question whose type or relation words no chain can use, or that names nothing in the graph,
is not planned (``NotMapped``): a shorter plan would answer another question. A comparison
with a number filters the list of the type it qualifies (``filters``), wherever that list is
in the plan; one the graph has nothing to compare with is not planned either. An anaphor
("which of them affect the liver?") is bound to the previous turn's list whose type the
relation needs.
"""

from __future__ import annotations

import itertools
import json
import re
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import InputError
from ..text import ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS
from ..text.question import QuestionReading
from ..text.words import stem, terms
from .filters import SAID, Comparison, comparisons
from .linking import GraphLink, GraphLinker, embedder_linker, name_text
from .resolve import Resolved
from .store import SchemaEdge
from .vocabulary import (ASK_AFTER, ASK_BEFORE, CLAUSE, COORDINATION, COUNT, ENUMERATE, EXCLUDE, NAME_FILLERS,
                         PERSON_TYPE_WORDS, REQUEST, TYPE_WORDS, UNION, other_property_words, other_relation_words,
                         stems)

MAX_HOPS = 3
ANAPHORS = {"them", "they", "those", "these", "it", "ones"}
WHO = frozenset({"who", "whom", "ai"})     # a question that asks for a person (Vietnamese "ai")


@lru_cache(maxsize=4)
def _linker(language: str) -> GraphLinker:
    return embedder_linker(language)


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


# --------------------------------------------------------------------------- the rule planner
_stem = stem


def name_words(name: str) -> list[str]:
    """A type or relation name as words: "CAUSES_SIDE_EFFECT" → causes side effect,
    "BiologicalProcess" → biological process."""
    return terms(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " "))




GENERIC_PROPERTY_WORDS = frozenset(stems("year date number num count total amount value"))


@lru_cache(maxsize=1024)
def property_words(prop: str) -> frozenset[tuple[str, ...]]:
    """Stem phrases that name a property: its name's words (not "year", "number") and the
    other words the vocabulary gives for them ("birth_year": birth, born)."""
    own = [w for w in name_words(prop) if w not in NAME_FILLERS]
    out: set[tuple[str, ...]] = {(_stem(w),) for w in own if _stem(w) not in GENERIC_PROPERTY_WORDS}
    out |= {stems(o) for w in own for o in other_property_words(w)}
    return frozenset(out)


def agent_nouns(word: str) -> tuple[str, ...]:
    """The agent nouns English makes of a verb in a relation name ("directed" -> director,
    directer; "owns" -> owner): its base, without -ed, -ing or -s, with -or and -er."""
    base = re.sub(r"(ed|ing|s)$", "", word)
    if len(base) < 3:
        return ()
    return (base + "or", base + "er") if not base.endswith("e") else (base[:-1] + "or", base + "r")


def plural(type_name: str) -> str:
    low = re.sub(r"(?<!^)(?=[A-Z])", "_", type_name).lower()
    if low.endswith("y") and not low.endswith(("ay", "ey", "oy", "uy")):
        return low[:-1] + "ies"
    return low + ("es" if low.endswith(("s", "x", "ch", "sh")) else "s")


def slug(text: str) -> str:
    return "_".join(terms(text))[:40] or "node"


@dataclass(frozen=True)
class Hop:
    relation: str
    direction: str      # out: along the edge; in: against it
    from_type: str
    to_type: str


@dataclass(frozen=True)
class QuestionMention:
    """Words of the question that name node types or relations of the schema."""

    start: int
    end: int
    text: str
    types: frozenset
    relations: frozenset


class NotMapped(PlanError):
    """The question cannot be planned on this graph; ``linked`` says what of it was found."""

    def __init__(self, message: str, linked: dict):
        super().__init__(message)
        self.linked = linked


@dataclass
class Reading:
    """What the planner read in a question: the entities (and which are excluded), the
    type and relation words, the asked type, and the shape."""

    tokens: list[str]
    entities: list[Resolved]
    mentions: list[QuestionMention]
    negated: set[int]                   # indexes into entities
    asked: str | None = None
    asked_unknown: str | None = None    # "which hospitals": a word the schema does not know
    count: bool = False
    join: str = "intersection"
    coordinated: list[tuple[int, int]] = field(default_factory=list)    # "A and B", "A, B or C"
    filters: list[dict] = field(default_factory=list)   # comparisons, each with what it compares
    unlinked: list[str] = field(default_factory=list)   # comparisons the graph has nothing for
    optional: list[str] = field(default_factory=list)   # words a property filter reads, a chain need not
    graph_links: list[GraphLink] = field(default_factory=list)   # words linked through the graph, not by name
    unlinked_words: list[str] = field(default_factory=list)   # content words nothing in the graph reads

    @property
    def shape(self) -> str:
        if self.count:
            return "count"
        return "exclusion" if self.negated else "list"

    def linked(self) -> dict:
        return {"shape": self.shape, "asked_type": self.asked,
                "entities": [{"mention": e.mention, "id": e.id, "name": e.name, "type": e.type,
                              "excluded": i in self.negated} for i, e in enumerate(self.entities)],
                "types": sorted({t for m in self.mentions for t in m.types}),
                "relations": sorted({r for m in self.mentions for r in m.relations}),
                "words": [m.text for m in self.mentions],
                **({"filters": self.filters} if self.filters else {}),
                **({"linked_through_graph": [g.to_dict() for g in self.graph_links]} if self.graph_links else {})}


def _noun(mention: QuestionMention) -> bool:
    """A type word, or a relation word that is not a past participle ("actors", not "acted"):
    what a number can count or measure."""
    return bool(mention.types) or not mention.text.endswith("ed")


def _cues(tokens: list[str], phrases: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each cue phrase in the tokens, longest first, not overlapping."""
    cues = sorted((tuple(p.split()) for p in phrases), key=len, reverse=True)
    found: list[tuple[int, int]] = []
    taken: set[int] = set()
    for cue in cues:
        for i in range(len(tokens) - len(cue) + 1):
            span = range(i, i + len(cue))
            if tuple(tokens[i:i + len(cue)]) == cue and not taken & set(span):
                found.append((i, i + len(cue)))
                taken |= set(span)
    return sorted(found)


class RulePlanner:
    """Plans from the schema and the question's words (no model).

    The schema gives the words: each type's and relation's name split into words, with the
    other words people use for them (``vocabulary``). A question's entities are the start
    of chains of relation steps that all end at the asked type; the chains chosen are the
    ones that use the most of the question's type and relation words, then the shortest.
    Words that name a type or relation that no chain uses make the question unmappable:
    a shorter plan would answer another question."""

    MAX_OPTIONS = 8      # chains kept per entity before they are combined

    EMPTY_START = 4     # an entity with no edge of a chain's first relation: as four other readings

    def __init__(self, schema: list[SchemaEdge], properties: dict[str, dict[str, str]] | None = None,
                 reaches=None, linker_for: Callable[[str], GraphLinker] | None = None):
        self.schema = schema
        # language -> what links the words no name reads through the graph (``linking``)
        self.linker_for = linker_for or _linker
        # (node id, relation, direction) → whether the node has such an edge: when no word
        # decides between relations ("Which Nolan movies ..."), the one the entity has wins
        self.reaches = reaches
        self.types = sorted({s.source_type for s in schema} | {s.target_type for s in schema})
        self.properties = properties or {}      # type → numeric property → "year" | "number"
        self.lexicon = self._lexicon()

    def _lexicon(self) -> dict[tuple[str, ...], tuple[frozenset, frozenset]]:
        """Stemmed phrase → (types, relations) it names."""
        type_words = {stems(k): v for k, v in TYPE_WORDS.items()}
        names: dict[tuple[str, ...], tuple[set, set]] = {}

        def add(phrase: tuple[str, ...], kind: int, name: str) -> None:
            if phrase and not all(p in ENGLISH_STOPWORDS for p in phrase):
                names.setdefault(phrase, (set(), set()))[kind].add(name)

        for t in self.types:
            own = stems(" ".join(name_words(t)))
            add(own, 0, t)
            for synonym in type_words.get(own, ()):
                add(stems(synonym), 0, t)
        for s in self.schema:
            content = [w for w in name_words(s.relation) if w not in NAME_FILLERS]
            parts = {tuple(content[i:j]) for i in range(len(content)) for j in range(i + 1, len(content) + 1)}
            for part in parts:
                add(tuple(_stem(w) for w in part), 1, s.relation)
                for synonym in other_relation_words(part):
                    add(stems(synonym), 1, s.relation)
            for word in content:     # its agent nouns: "directed" -> director, "owns" -> owner
                for agent in agent_nouns(word):
                    add((_stem(agent),), 1, s.relation)
        return {k: (frozenset(a), frozenset(b)) for k, (a, b) in names.items()}

    # ----------------------------------------------------------------- reading the question
    def read(self, question: str, entities: list[Resolved], question_reading: QuestionReading | None = None) -> Reading:
        """What the question says in the graph's schema: ``question_reading``'s words (the
        ask's reading of the question, ``ragkit.text.question``) linked to types, relations
        and properties, with the entities, the asked type, the shape and the comparisons."""
        tokens = list(question_reading.terms) if question_reading else terms(question)
        stemmed = [_stem(t) for t in tokens]
        spans = {i for e in entities for i in range(e.start, e.start + len(e.mention.split()))}
        mentions, i = [], 0
        longest = max((len(k) for k in self.lexicon), default=1)
        while i < len(tokens):
            for n in range(min(longest, len(tokens) - i), 0, -1):
                if spans & set(range(i, i + n)):
                    continue
                meaning = self.lexicon.get(tuple(stemmed[i:i + n]))
                if meaning:
                    mentions.append(QuestionMention(i, i + n, " ".join(tokens[i:i + n]), *meaning))
                    i += n
                    break
            else:
                i += 1
        plain = [("not" if t.endswith("n't") else t) for t in tokens]
        reading = Reading(tokens, entities, mentions, set())
        reading.count = bool(_cues(plain, COUNT))
        reading.join = "union" if _cues(plain, UNION) else "intersection"
        reading.negated = self._negated(question, plain, entities, mentions)
        reading.coordinated = [(k, k + 1) for k, (a, b) in enumerate(zip(entities, entities[1:]))
                               if all(t in COORDINATION for t in plain[a.start + len(a.mention.split()):b.start])]
        reading.asked, reading.asked_unknown = self._asked(plain, entities, mentions, spans)
        found = comparisons(question, plain, spans)
        if found:
            self._constrain(reading, found)
            if len(reading.mentions) < len(mentions):     # a counted type no longer asks
                asked = self._asked(plain, entities, reading.mentions, spans)
                if asked[0]:        # (a counted relation word may still: "which actors appeared in ...")
                    reading.asked, reading.asked_unknown = asked
        if entities:
            language = question_reading.language if question_reading else "en"    # (the ask always gives one)
            written = list(question_reading.written_terms) if question_reading else tokens
            kind = question_reading.shape.kind if question_reading else None
            # a yes/no question asks for no node; one for a date or a number with no type asked
            # asks for a value, which no relation to a node gives
            # or "who" in a graph with no type of person
            no_node = kind == "yesno" or (kind in ("date", "number") and not reading.asked and not reading.count) \
                or (not reading.asked and bool(tokens) and (tokens[0] in WHO or tokens[-1] == "ai"))
            self._link_through_graph(reading, written, language, spans, no_node)
        return reading

    # ----------------------------------------------------------------- words no name reads
    def _link_through_graph(self, reading: Reading, shown: list[str], language: str, spans: set[int],
                            no_node: bool) -> None:
        """Links what the schema's names left unread through the graph (``ragkit.kgqa.linking``):
        an asked word no type is named by ("which prizes") to the type nearest it; then, in a
        question that names no relation, no type between its entities and the asked one
        (those carry the path) and no comparison, the runs of unread content words to the relation, among those
        whose types fit, that the words bring the question nearest. Runs left unlinked are
        kept: such a question names something the graph does not hold. A question that
        asks for no node of the graph (``no_node``: yes or no, a date or a number of no type,
        a person where no type is one) has none of its words linked."""
        linker = self.linker_for(language)
        tokens = reading.tokens
        if reading.asked_unknown and reading.asked is None and reading.asked_unknown in tokens:
            # the types the question's relations lead to, past its entities' own; else any
            ends = {t for s in self.schema if any(s.relation in m.relations for m in reading.mentions)
                    for t in (s.source_type, s.target_type)} - {e.type for e in reading.entities}
            link = linker.type(reading.asked_unknown, sorted(ends) or self.types)
            if link is not None:
                at = tokens.index(reading.asked_unknown)
                reading.mentions.append(QuestionMention(at, at + 1, link.words, frozenset({link.name}), frozenset()))
                reading.mentions.sort(key=lambda m: m.start)
                reading.asked, reading.asked_unknown = link.name, None
                reading.graph_links.append(link)
        if any(m.relations for m in reading.mentions) or self._between_types(reading) or reading.filters \
                or reading.unlinked:
            return      # the path is named, or a comparison's words (read by its filter) stand around it
        runs = self._unread_runs(reading, spans, language)
        if no_node:
            reading.unlinked_words += [" ".join(shown[a:b]) for a, b in runs]
            return
        candidates = self._fitting_edges(reading)
        typed = self._typed_words(reading, shown)
        for start, end in runs:
            with_words = " ".join(w for w in typed if w)
            without = " ".join(w for i, w in enumerate(typed) if w and not start <= i < end)
            link = linker.relation(" ".join(shown[start:end]), with_words, without, candidates)
            if link is None:
                reading.unlinked_words.append(" ".join(shown[start:end]))
                continue
            reading.mentions.append(QuestionMention(start, end, " ".join(tokens[start:end]), frozenset(),
                                                    frozenset({link.name})))
            reading.graph_links.append(link)
            candidates = [s for s in candidates if s.relation != link.name]
        reading.mentions.sort(key=lambda m: m.start)

    @staticmethod
    def _between_types(reading: Reading) -> set[str]:
        """The types the question names other than the asked one and its entities' own."""
        own = {reading.asked} | {e.type for e in reading.entities}
        return {t for m in reading.mentions for t in m.types} - own

    def _fitting_edges(self, reading: Reading) -> list[SchemaEdge]:
        """The schema's edges whose types fit the question: those that join an entity's type
        to the asked type in one step; if none does, those on a schema path between them
        (no type asked: those one step from an entity's type)."""
        ends = {(e.type, reading.asked) for e in reading.entities}
        direct = [s for s in self.schema
                  if (s.source_type, s.target_type) in ends or (s.target_type, s.source_type) in ends]
        if direct or not reading.asked:
            own = {e.type for e in reading.entities}
            return direct or [s for s in self.schema if own & {s.source_type, s.target_type}]
        on_paths = {h.relation for e in reading.entities for p in self.paths(e.type, reading.asked) for h in p}
        return [s for s in self.schema if s.relation in on_paths]

    @staticmethod
    def _unread_runs(reading: Reading, spans: set[int], language: str) -> list[tuple[int, int]]:
        """(start, end) of each run of content words that no mention, entity, asking word or
        filter read: consecutive ones, or with only function words between them."""
        read = {i for m in reading.mentions for i in range(m.start, m.end)} | spans
        optional = {w for text in reading.optional for w in text.split()}
        asking = {w for phrase in (*ASK_BEFORE, *ASK_AFTER, *REQUEST, *COUNT, *ENUMERATE, *EXCLUDE, *UNION)
                  for w in phrase.split()} | WHO
        function = ENGLISH_STOPWORDS | (VIETNAMESE_FUNCTION_WORDS if language == "vi" else frozenset())
        content = [i for i, t in enumerate(reading.tokens)
                   if i not in read and t not in function and t not in asking and t not in optional
                   and t != reading.asked_unknown
                   and not t.isdigit() and len(t) > 1]
        runs: list[tuple[int, int]] = []
        for i in content:
            if runs and all(j not in read and reading.tokens[j] in function for j in range(runs[-1][1], i)):
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
        return runs

    @staticmethod
    def _typed_words(reading: Reading, shown: list[str]) -> list[str]:
        """The question's words with each entity written as its type ("who is the boss of
        company"); the entity's other words are blanked."""
        typed = list(shown)
        for e in reading.entities:
            n = len(e.mention.split())
            typed[e.start:e.start + n] = [name_text(e.type)] + [""] * (n - 1)
        return typed

    # ----------------------------------------------------------------- comparisons

    def _constrain(self, reading: Reading, found: list[Comparison]) -> None:
        """What each comparison compares, from the graph: the edges to a type or relation
        named right after the number are counted ("more than 3 *symptoms*"); else a numeric
        property of the type it qualifies whose name the question uses around it ("*approved*
        after 2000", "over 2 million *inhabitants*", "older than": age); else, for a date cue
        with a year, that type's one year property. The type qualified is the nearest one
        named before the comparison, else the asked type, else any that fits. Mentions a count
        uses are taken from those the chains must use."""
        tokens = [_stem(t) for t in reading.tokens]
        taken: set[int] = set()
        for c in found:
            before = [self._type_of(m) for m in reversed(reading.mentions) if m.end <= c.start and m.types]
            subjects = list(dict.fromkeys([t for t in before[:1] + [reading.asked] if t] + self.types))
            # counted: a noun right after the number ("3 symptoms", "2 actors"), never a verb
            # ("after 1975 acted in") nor after a year ("after 1975 ...")
            nouns = [] if c.year else [m for m in reading.mentions if m.start in (c.after, c.after + 1) and _noun(m)]
            counted = nouns[0] if nouns else None
            near = [m for m in reading.mentions if m.relations and not m.types and m is not counted and
                    (c.start - 3 <= m.start < c.start or counted and counted.end <= m.start <= counted.end + 1)]
            chosen = None
            for subject in subjects:
                # in this order: a property named right after the number ("over 2 million
                # people": a population, not the people born there), a noun counted right after
                # it, a property named before the comparison ("a population under 5 million
                # have studios"), a noun one word after it ("3 different symptoms")
                chosen = self._property_filter(subject, c, tokens, reading, after_only=True)
                if not chosen and counted is not None and counted.start == c.after:
                    chosen = self._count_filter(subject, c, counted, near)
                chosen = chosen or self._property_filter(subject, c, tokens, reading)
                if not chosen and counted is not None:
                    chosen = self._count_filter(subject, c, counted, near)
                if chosen:
                    break
            if chosen is None:
                if not c.weak:
                    reading.unlinked.append(c.text)
                continue
            spec, used, optional = chosen
            reading.filters.append(spec)
            taken |= {id(m) for m in used}
            reading.optional += [m.text for m in optional]
        reading.mentions = [m for m in reading.mentions if id(m) not in taken]

    def _count_filter(self, subject: str, c: Comparison, counted: QuestionMention,
                      near: list[QuestionMention]):
        hops = [h for h in self.hops_from(subject) if h.to_type in counted.types or
                (not counted.types and h.relation in counted.relations)]
        named = [h for h in hops if any(h.relation in m.relations for m in near)]
        if not hops:
            return None
        hop = (named or hops)[0]
        used = [counted] + [m for m in near if hop.relation in m.relations]
        return ({"type": subject, "compare": c.compare, "value": c.value, "text": c.text,
                 "relation": hop.relation, "direction": hop.direction, "target_type": hop.to_type},
                used, [])

    def _property_filter(self, subject: str, c: Comparison, tokens: list[str], reading: Reading,
                         after_only: bool = False):
        props = self.properties.get(subject, {})
        if not props:
            return None
        low = max([m.end for m in reading.mentions if m.end <= c.start and m.types] +
                  [e.start + len(e.mention.split()) for e in reading.entities
                   if e.start + len(e.mention.split()) <= c.start] + [c.start - 5, 0])
        around = (tokens[low:c.start] if not after_only else []) + tokens[c.after:c.after + 3]
        hint = stems(c.hint) if c.hint and not after_only else ()
        named = [p for p in sorted(props) if any(
            phrase == hint or any(tuple(around[i:i + len(phrase)]) == phrase for i in range(len(around)))
            for phrase in property_words(p))]
        if not named and c.year and not after_only:
            named = [p for p in sorted(props) if props[p] == "year"]
        if len(named) != 1:
            return None
        # a relation word that names the property too is its verb right before the comparison
        # ("actors born before 1990": not the BORN_IN edges), else it need not be walked
        # ("companies founded by X after 1990" may walk FOUNDED_BY from X)
        naming = [m for m in reading.mentions if not m.types
                  and property_words(named[0]) & {tuple(tokens[m.start:m.end])}]
        unit = [m for m in reading.mentions if m.start == c.after and _noun(m)]   # "over 100 *people*"
        return ({"type": subject, "compare": c.compare, "value": c.value, "text": c.text,
                 "property": named[0]}, [m for m in naming if m.end == c.start] + unit,
                [m for m in naming if m.end != c.start])

    @staticmethod
    def _negated(question: str, tokens: list[str], entities: list[Resolved],
                 mentions: list[QuestionMention]) -> set[int]:
        """The entities an exclusion cue ("not", "except", "other than") applies to: those
        after it in its clause, up to the next relation word after one of them ("diseases not
        treated by A are treated by B": A), else the nearest before it in its clause and those
        coordinated with it ("that B does not", "that A and B do not")."""
        bounds = {s for s, _ in _cues(tokens, CLAUSE)}
        bounds |= {len(terms(question[:m.start()])) for m in re.finditer(r"[,;:]", question)}
        out: set[int] = set()
        for start, end in _cues(tokens, EXCLUDE):
            low = max((b for b in bounds if b <= start), default=0)
            high = min((b for b in bounds if b > start), default=len(tokens))
            chosen: list[int] = []
            for k, e in enumerate(entities):
                if not end <= e.start < high:
                    continue
                if chosen and any(m.relations and entities[chosen[-1]].start < m.start < e.start for m in mentions):
                    break
                chosen.append(k)
            if not chosen:
                # the subject of the negated verb: the nearest entity before the cue in its
                # clause, with those coordinated with it ("that A and B do not treat"), not
                # every entity before it ("which Nolan films did Murphy not act in": Murphy)
                before = [k for k, e in enumerate(entities) if low <= e.start < start]
                if before:
                    chosen = [before[-1]]
                    for k in reversed(before[:-1]):
                        gap = tokens[entities[k].start + len(entities[k].mention.split()):entities[chosen[-1]].start]
                        if not all(t in COORDINATION for t in gap):
                            break
                        chosen.append(k)
            out |= set(chosen)
        return out

    def _asked(self, tokens: list[str], entities: list[Resolved], mentions: list[QuestionMention],
               spans: set[int]) -> tuple[str | None, str | None]:
        """The type the question asks for: named right after "which/what/how many" (right
        before Vietnamese "nao"/"gi") or after a name there ("which Nolan movies"), else the
        first type named that is not a descriptor of an entity ("the drug Aspirin"). A word
        after the first which/what that names nothing in the schema is returned as unknown
        ("which hospitals")."""
        starts = {m.start: m for m in mentions}
        ends = {m.end: m for m in mentions}
        unknown = None
        for n, (start, end) in enumerate(_cues(tokens, ASK_BEFORE)):
            i = end
            while i < len(tokens) and tokens[i] in ENGLISH_STOPWORDS and i not in spans:
                i += 1
            for j in (i, i + 1):     # one modifier may come first: "which common symptoms"
                if j in starts and self._type_of(starts[j]) and (j == i or starts[j].types):
                    return self._type_of(starts[j]), None
            named = next((e for e in entities if e.start == i), None)
            if named is not None:    # "which Nolan movies": a type right after the name
                j = i + len(named.mention.split())
                if j in starts and starts[j].types:
                    return self._type_of(starts[j]), None
            if (n == 0 and tokens[start] in ("which", "what") and i < len(tokens) and i not in spans
                    and i not in starts):
                unknown = tokens[i]
        for start, _ in _cues(tokens, ASK_AFTER):
            if start in ends and self._type_of(ends[start]):
                return self._type_of(ends[start]), None
        people = [t for t in self.types if any(w in PERSON_TYPE_WORDS for w in name_words(t))]
        if tokens and (tokens[0] in WHO or tokens[-1] == "ai") and len(people) == 1:
            return people[0], None      # "who directed ...": the schema's one type of person
        entity_edges = {e.start for e in entities} | {e.start + len(e.mention.split()) for e in entities}
        for m in mentions:
            if m.types and m.end not in entity_edges and m.start not in entity_edges:
                return sorted(m.types)[0], unknown
        return None, unknown

    def _type_of(self, mention: QuestionMention) -> str | None:
        """A type word names its type; a relation word asked for ("which side effects") the
        type at the relation's far end, and an agent noun ("which actors", "inhibitors") the
        type at its near end."""
        if mention.types:
            return sorted(mention.types)[0]
        agent = mention.text.split()[-1].endswith(("or", "ors", "er", "ers", "ist", "ists"))
        ends = {s.source_type if agent else s.target_type for s in self.schema if s.relation in mention.relations}
        return ends.pop() if len(ends) == 1 else None

    # ----------------------------------------------------------------- schema paths
    def hops_from(self, node_type: str) -> list[Hop]:
        out = [Hop(s.relation, "out", s.source_type, s.target_type) for s in self.schema if s.source_type == node_type]
        out += [Hop(s.relation, "in", s.target_type, s.source_type) for s in self.schema if s.target_type == node_type]
        return sorted(set(out), key=lambda h: (h.relation, h.direction, h.to_type))

    def paths(self, start: str, goal: str | None) -> list[list[Hop]]:
        """Every schema path of one to MAX_HOPS steps from ``start`` (ending at ``goal`` if given)."""
        found: list[list[Hop]] = []
        frontier: list[list[Hop]] = [[]]
        for _ in range(MAX_HOPS):
            frontier = [path + [hop] for path in frontier
                        for hop in self.hops_from(path[-1].to_type if path else start)]
            found += [p for p in frontier if goal is None or p[-1].to_type == goal]
        return found

    @staticmethod
    def _judge(chains: list[tuple[Resolved, list[Hop]]], goal: str, reading: Reading,
               alternative: int) -> tuple:
        """Sort key of a set of chains: the most question words used first, then the least
        cost (steps, types passed through that the question does not name, steps straight
        back along the relation just taken, entities named together ("both A and B") read
        along different relations, entities read as another node of that name)."""
        named = {t for m in reading.mentions for t in m.types}
        relations = {h.relation for _, hops in chains for h in hops}
        types = {goal} | {e.type for e, _ in chains} | {h.to_type for _, hops in chains for h in hops}
        used = sum(1 for m in reading.mentions if m.relations & relations or m.types & types)
        cost = 0.0
        for _, hops in chains:
            cost += 0.5 * len(hops)
            cost += sum(1.0 for h in hops[:-1] if h.to_type not in named)
            cost += sum(1.0 for a, b in zip(hops, hops[1:]) if a.relation == b.relation and a.direction != b.direction)
        if len(chains) == len(reading.entities):    # entities named together are read alike
            cost += sum(2.0 for a, b in reading.coordinated if chains[a][1] != chains[b][1])
        return (-used, cost + 0.25 * alternative)

    def _options(self, k: int, reading: Reading, goal: str,
                 alternatives: dict[str, list[Resolved]]) -> list[tuple[int, Resolved, list[Hop]]]:
        """Chains for entity ``k`` to ``goal``: from its node or a node of another type with
        the same name; an excluded entity of the asked type is taken as itself; the best
        ``MAX_OPTIONS`` and the shortest of each first step are kept. A chain whose
        first relation the node has no edge of costs as much as ``EMPTY_START`` other readings."""
        entity = reading.entities[k]
        out: list[tuple[int, Resolved, list[Hop]]] = []
        for alt, node in enumerate([entity] + alternatives.get(entity.id, [])):
            if node.type == goal and k in reading.negated:
                out.append((alt, node, []))
            for p in self.paths(node.type, goal):
                empty = self.reaches is not None and node.id and not self.reaches(node.id, p[0].relation,
                                                                                  p[0].direction)
                out.append((alt + self.EMPTY_START * bool(empty), node, p))
        out.sort(key=lambda o: self._judge([(o[1], o[2])], goal, reading, o[0]))
        # and the shortest chain of each first relation: words another entity's chain uses may
        # make it the best together ("movies by A that B did not act in": A directed)
        firsts: dict = {}
        for o in sorted(out, key=lambda o: (len(o[2]), o[0])):   # the shortest of each
            firsts.setdefault((o[1].id, o[2][0] if o[2] else None), o)
        kept = out[:self.MAX_OPTIONS]
        return kept + [o for o in firsts.values() if o not in kept]

    def choose(self, reading: Reading, alternatives: dict[str, list[Resolved]]):
        """The best chain per entity (and the goal type they meet at)."""
        goals = [reading.asked] if reading.asked else self.types
        best = None
        for goal in goals:
            options = [self._options(k, reading, goal, alternatives) for k in range(len(reading.entities))]
            if not all(options):
                continue
            for combo in itertools.product(*options):
                chains = [(node, hops) for _, node, hops in combo]
                key = self._judge(chains, goal, reading, sum(o[0] for o in combo))
                if best is None or key < best[0]:
                    best = (key, goal, chains)
        return best

    def plan(self, question: str, entities: list[Resolved], history: dict | None = None,
             alternatives: dict[str, list[Resolved]] | None = None,
             question_reading: QuestionReading | None = None) -> Plan:
        """The plan for ``question``; ``alternatives``: for an entity id, the nodes of other
        types that go by the same name ("fever": the symptom and the disease);
        ``question_reading``: the ask's reading of it."""
        reading = self.read(question, entities, question_reading)
        if history is not None and ANAPHORS & set(reading.tokens):
            named = [t for m in reading.mentions for t in sorted(m.types)]
            return self._follow_up(entities, reading, named, history)
        linked = reading.linked()
        if reading.asked_unknown:
            raise NotMapped(f"plan: the question asks for {reading.asked_unknown!r}, which names no type "
                            f"or relation of the graph", linked)
        if reading.unlinked:
            raise NotMapped(f"plan: the question compares {', '.join(repr(u) for u in reading.unlinked)}, but "
                            f"the graph's {plural(reading.asked).replace('_', ' ') if reading.asked else 'nodes'} "
                            f"hold no property or relation it names", linked)
        if not entities and reading.filters:
            return self._from_filtered(reading, linked)
        if not entities:
            if reading.asked and not any(m.relations for m in reading.mentions):
                unread = self._unread(reading)
                if unread:      # "which compounds like pizza": a condition, not every compound
                    raise NotMapped(f"plan: the question asks for {plural(reading.asked).replace('_', ' ')} that "
                                    f"{' '.join(unread)!r} qualifies, which names no type, relation or "
                                    f"property of the graph", linked)
                plan = Plan(count=reading.count, linked=linked)
                plan.steps.append({"key": f"all_{plural(reading.asked)}", "op": "all", "type": reading.asked})
                plan.final = plan.steps[-1]["key"]
                return plan
            raise NotMapped("plan: the question names nothing found in the graph", linked)
        if reading.unlinked_words:
            raise NotMapped(f"plan: {', '.join(repr(w) for w in reading.unlinked_words)} names no relation of the "
                            f"graph that joins {', '.join(sorted({e.type for e in entities}))} to "
                            f"{reading.asked or 'what the question asks'}", linked)
        if not reading.mentions:
            raise NotMapped("plan: the question names no type or relation of the graph to ask about", linked)
        best = self.choose(reading, alternatives or {})
        if best is None:
            raise NotMapped(f"plan: no path in the graph's schema joins "
                            f"{', '.join(f'{e.name} ({e.type})' for e in entities)} to "
                            f"{reading.asked or 'anything the question asks'}", linked)
        _, goal, chains = best
        unused = self._unused(reading, chains, goal)
        if unused:
            raise NotMapped(f"plan: no path in the graph's schema from "
                            f"{', '.join(f'{e.name} ({e.type})' for e in entities)} uses what "
                            f"{', '.join(repr(u) for u in unused)} names", linked)
        entities = [node for node, _ in chains]
        linked["entities"] = [dict(d, id=e.id, name=e.name, type=e.type) for d, e in zip(linked["entities"], entities)]
        linked["asked_type"] = goal
        plan = self._join(chains, goal, reading)
        plan.count, plan.linked = reading.count, linked
        self._filter(plan, reading.filters)
        return plan

    @staticmethod
    def _unread(reading: Reading) -> list[str]:
        """The question's content words that no mention read: neither function words nor the
        words that ask or request (``ASK_BEFORE``, ``ASK_AFTER``, ``REQUEST``, ``COUNT``,
        ``ENUMERATE``)."""
        read = {i for m in reading.mentions for i in range(m.start, m.end)}
        asking = {w for phrase in (*ASK_BEFORE, *ASK_AFTER, *REQUEST, *COUNT, *ENUMERATE) for w in phrase.split()}
        return [t for i, t in enumerate(reading.tokens) if i not in read and t not in ENGLISH_STOPWORDS
                and t not in asking and not t.isdigit() and len(t) > 1]

    @staticmethod
    def _unused(reading: Reading, chains: list[tuple[Resolved, list[Hop]]], goal: str) -> list[str]:
        """The question's type and relation words that the chains use none of (a property
        filter's optional words aside)."""
        relations = {h.relation for _, hops in chains for h in hops}
        types = {goal} | {e.type for e, _ in chains} | {h.to_type for _, hops in chains for h in hops}
        return [m.text for m in reading.mentions
                if not (m.relations & relations or m.types & types) and m.text not in reading.optional]

    def _from_filtered(self, reading: Reading, linked: dict) -> Plan:
        """A question that names no entity but compares ("which drugs treat diseases with
        more than 3 symptoms"): every node of the type compared, filtered, then the chain
        from that type to the asked one."""
        subjects = {f["type"] for f in reading.filters}
        if len(subjects) != 1:
            raise NotMapped("plan: the question's comparisons qualify different types and it names "
                            "nothing in the graph to start from", linked)
        subject = subjects.pop()
        plan = Plan(count=reading.count, linked=linked)
        plan.steps.append({"key": f"all_{plural(subject)}", "op": "all", "type": subject})
        plan.final = plan.steps[-1]["key"]
        self._filter(plan, reading.filters)
        goal = reading.asked or subject
        if goal != subject:
            start = Resolved("", "", plural(subject), subject, "compared", 1.0, -1)
            best = self.choose(Reading(reading.tokens, [start], reading.mentions, set(), asked=goal), {})
            if best is None or self._unused(reading, best[2], goal) or not best[2][0][1]:
                raise NotMapped(f"plan: no path in the graph's schema joins the {plural(subject)} compared "
                                f"to {plural(goal)}", linked)
            plan.final = self._walk(plan, None, best[2][0][1], start_key=plan.final)
        else:   # "people born before 1950 who directed a movie": those with such an edge
            reached: set[str] = set()     # ("countries ... that have studios": a type too)
            for m in sorted(reading.mentions, key=lambda m: bool(m.types)):   # relation words first
                if subject in m.types or m.text in reading.optional or (m.types and m.types <= reached):
                    continue
                hops = [h for h in self.hops_from(subject) if h.relation in m.relations or h.to_type in m.types]
                hops.sort(key=lambda h: h.relation not in m.relations)
                reached |= {h.to_type for h in hops[:1]}
                if not hops:
                    raise NotMapped(f"plan: the question names nothing in the graph for {m.text!r} "
                                    f"to start from", linked)
                self._filter(plan, [{"type": subject, "compare": ">=", "value": 1, "text": m.text,
                                     "relation": hops[0].relation, "direction": hops[0].direction,
                                     "target_type": hops[0].to_type}])
        linked["asked_type"] = goal
        return plan

    def _filter(self, plan: Plan, filters: list[dict]) -> None:
        """Each comparison filters the list of the type it qualifies: the final list, else the
        last list of that type that a later step uses (the steps after it read the filtered one)."""
        for f in filters:
            types = step_types(plan.steps)
            if types[plan.final] == f["type"]:
                target = plan.final
            else:
                used = {s["from"]["step"] for s in plan.steps if "step" in s.get("from", {})}
                used |= {k for s in plan.steps for k in s.get("inputs", ())}
                used |= {s["input"] for s in plan.steps if "input" in s}
                listed = [s["key"] for s in plan.steps if types[s["key"]] == f["type"] and s["key"] in used]
                if not listed:
                    raise NotMapped(f"plan: {f['text']!r} qualifies {plural(f['type'])}, which the question's "
                                    f"path through the graph does not list", plan.linked)
                target = listed[-1]
            key = self._new_key(plan, f"{target}_{slug(f['text'])}"[:80])
            step = {"key": key, "op": "filter", "input": target, "compare": f["compare"],
                    "value": int(f["value"]) if f["value"] == int(f["value"]) else f["value"]}
            step.update({k: f[k] for k in ("property", "relation", "direction", "target_type") if k in f})
            at = next(i for i, s in enumerate(plan.steps) if s["key"] == target) + 1
            for later in plan.steps[at:]:
                if later.get("from", {}).get("step") == target:
                    later["from"] = {"step": key}
                if target in later.get("inputs", ()):
                    later["inputs"] = [key if k == target else k for k in later["inputs"]]
                if later.get("input") == target:
                    later["input"] = key
            plan.steps.insert(at, step)
            if plan.final == target:
                plan.final = key

    # ----------------------------------------------------------------- building the plan
    def _join(self, chains: list[tuple[Resolved, list[Hop]]], goal: str, reading: Reading) -> Plan:
        """The kept chains meet as early as their shared tail allows ("symptoms of diseases
        treated by both A and B": the diseases first); excluded chains are taken away at the end."""
        plan = Plan()
        keep = [c for k, c in enumerate(chains) if k not in reading.negated]
        drop = [c for k, c in enumerate(chains) if k in reading.negated]
        if not keep:
            plan.steps.append({"key": f"all_{plural(goal)}", "op": "all", "type": goal})
            last = plan.steps[-1]["key"]
        elif len(keep) == 1:
            last = self._walk(plan, keep[0][0], keep[0][1])
        else:
            shared = 0
            while (shared < min(len(h) for _, h in keep) - 1
                   and len({tuple(h[len(h) - shared - 1:]) for _, h in keep}) == 1):
                shared += 1
            ends = [self._walk(plan, e, hops[:len(hops) - shared]) for e, hops in keep]
            joined = keep[0][1][len(keep[0][1]) - shared - 1].to_type
            key = self._new_key(plan, f"{'common' if reading.join == 'intersection' else 'all'}_{plural(joined)}")
            plan.steps.append({"key": key, "op": reading.join, "inputs": ends})
            last = self._walk(plan, None, keep[0][1][len(keep[0][1]) - shared:], start_key=key)
        if drop:
            out = [self._walk(plan, e, hops) if hops else self._named(plan, e) for e, hops in drop]
            key = self._new_key(plan, f"{last}_without_{'_'.join(slug(e.name) for e, _ in drop)}"[:80])
            plan.steps.append({"key": key, "op": "difference", "inputs": [last] + out})
            last = key
        plan.final = last
        return plan

    @staticmethod
    def _new_key(plan: Plan, key: str) -> str:
        while any(s["key"] == key for s in plan.steps):
            key += "_"
        return key

    def _named(self, plan: Plan, entity: Resolved) -> str:
        key = self._new_key(plan, slug(entity.name))
        plan.steps.append({"key": key, "op": "nodes", "ids": [entity.id], "type": entity.type})
        return key

    def _walk(self, plan: Plan, entity: Resolved | None, hops: list[Hop], start_key: str | None = None) -> str:
        key = start_key
        for i, hop in enumerate(hops):
            first = entity if i == 0 else None
            origin = slug(first.name) if first is not None else key
            by = "" if hop.direction == "out" else "_by"
            new_key = self._new_key(plan, f"{plural(hop.to_type)}_{hop.relation.lower()}{by}_{origin}"[:80])
            origin_step = {"entity": first.id} if first is not None else {"step": key}
            step = {"key": new_key, "op": "expand", "from": origin_step,
                    "relation": hop.relation, "direction": hop.direction, "target_type": hop.to_type}
            if first is not None:
                step["from_type"] = hop.from_type
            plan.steps.append(step)
            key = new_key
        if key is None:
            raise ValueError("a walk needs a hop or a step to start from")
        return key

    def _follow_up(self, entities: list[Resolved], reading: Reading, named: list[str], history: dict) -> Plan:
        """"Which of them affect the liver?": the previous turn's list of the type that the
        named relation joins to the new entity, filtered by that relation."""
        lists = {k: v for k, v in history.items() if isinstance(v, dict) and v.get("type")}
        if not lists:
            raise PlanError("plan: 'them' refers to nothing (no earlier answer in this conversation)")
        if not entities:
            raise PlanError("plan: the follow-up names nothing found in the graph to filter by")
        entity = entities[0]
        best = None
        for key, value in lists.items():     # in plan order: on a tie, the later (narrower) list
            for hops in self.paths(entity.type, value["type"]):
                score = self._judge([(entity, hops)], value["type"], reading, 0)
                if len(hops) == 1 and (best is None or score <= best[0]):
                    best = (score, key, hops)
        if best is None:
            raise PlanError(f"plan: no relation joins {entity.name} to an earlier list")
        _, key, path = best
        plan = Plan()
        plan.steps.append({"key": f"previous_{key}", "op": "given", "history": key})
        found = self._walk(plan, entity, path)
        plan.steps.append({"key": f"{key}_filtered", "op": "intersection", "inputs": [f"previous_{key}", found]})
        plan.final = f"{key}_filtered"
        return plan


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


__all__ = ["NotMapped", "Plan", "PlanError", "Reading", "RulePlanner", "history_lists", "parse_plan_json", "plural",
           "step_types", "validate"]
