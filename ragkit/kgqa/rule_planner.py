"""The rule planner reads the question's words against the schema: which node types it names
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
from functools import lru_cache
from typing import Callable

from ..text.words import stem
from ..text import ENGLISH_STOPWORDS
from ..text.question import QuestionReading
from .linking import GraphLinker, embedder_linker
from .plan import ANAPHORS, Plan, PlanError, step_types
from .question_reading import (Hop, NotMapped, QuestionReader, Reading, agent_nouns, name_words, plural, slug)
from .resolve import Resolved
from .steps import EdgeFilter, Every, Expand, Given, Join, Named, PropertyFilter, Step, reading_instead
from .records import History
from .store import SchemaEdge
from .vocabulary import (ASK_AFTER, ASK_BEFORE, COUNT, ENUMERATE, NAME_FILLERS,
                         REQUEST, TYPE_WORDS, other_relation_words,
                         stems)


@lru_cache(maxsize=4)
def _linker(language: str) -> GraphLinker:
    return embedder_linker(language)


class RulePlanner(QuestionReader):
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
                add(tuple(stem(w) for w in part), 1, s.relation)
                for synonym in other_relation_words(part):
                    add(stems(synonym), 1, s.relation)
            for word in content:     # its agent nouns: "directed" -> director, "owns" -> owner
                for agent in agent_nouns(word):
                    add((stem(agent),), 1, s.relation)
        return {k: (frozenset(a), frozenset(b)) for k, (a, b) in names.items()}

    # ----------------------------------------------------------------- schema paths
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

    def plan(self, question: str, entities: list[Resolved], history: History | None = None,
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
                plan.steps.append(Every(f"all_{plural(reading.asked)}", reading.asked))
                plan.final = plan.steps[-1].key
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
        plan.steps.append(Every(f"all_{plural(subject)}", subject))
        plan.final = plan.steps[-1].key
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
                used = {k for s in plan.steps for k in s.reads}
                listed = [s.key for s in plan.steps if types[s.key] == f["type"] and s.key in used]
                if not listed:
                    raise NotMapped(f"plan: {f['text']!r} qualifies {plural(f['type'])}, which the question's "
                                    f"path through the graph does not list", plan.linked)
                target = listed[-1]
            key = self._new_key(plan, f"{target}_{slug(f['text'])}"[:80])
            value = int(f["value"]) if f["value"] == int(f["value"]) else f["value"]
            step: Step = PropertyFilter(key, target, f["compare"], value, f["property"]) if "property" in f else \
                EdgeFilter(key, target, f["compare"], value, f["relation"], f["direction"], f["target_type"])
            at = next(i for i, s in enumerate(plan.steps) if s.key == target) + 1
            plan.steps[at:] = [reading_instead(later, target, key) for later in plan.steps[at:]]
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
            plan.steps.append(Every(f"all_{plural(goal)}", goal))
            last = plan.steps[-1].key
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
            plan.steps.append(Join(key, reading.join, tuple(ends)))
            last = self._walk(plan, None, keep[0][1][len(keep[0][1]) - shared:], start_key=key)
        if drop:
            out = [self._walk(plan, e, hops) if hops else self._named(plan, e) for e, hops in drop]
            key = self._new_key(plan, f"{last}_without_{'_'.join(slug(e.name) for e, _ in drop)}"[:80])
            plan.steps.append(Join(key, "difference", (last, *out)))
            last = key
        plan.final = last
        return plan

    @staticmethod
    def _new_key(plan: Plan, key: str) -> str:
        while any(s.key == key for s in plan.steps):
            key += "_"
        return key

    def _named(self, plan: Plan, entity: Resolved) -> str:
        key = self._new_key(plan, slug(entity.name))
        plan.steps.append(Named(key, (entity.id,), entity.type))
        return key

    def _walk(self, plan: Plan, entity: Resolved | None, hops: list[Hop], start_key: str | None = None) -> str:
        key = start_key
        for i, hop in enumerate(hops):
            first = entity if i == 0 else None
            origin = slug(first.name) if first is not None else key
            by = "" if hop.direction == "out" else "_by"
            new_key = self._new_key(plan, f"{plural(hop.to_type)}_{hop.relation.lower()}{by}_{origin}"[:80])
            if first is not None:
                plan.steps.append(Expand(new_key, hop.relation, hop.direction, hop.to_type, entity=first.id,
                                         from_type=hop.from_type))
            else:
                plan.steps.append(Expand(new_key, hop.relation, hop.direction, hop.to_type, step=key))
            key = new_key
        if key is None:
            raise ValueError("a walk needs a hop or a step to start from")
        return key

    def _follow_up(self, entities: list[Resolved], reading: Reading, named: list[str], history: History) -> Plan:
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
        plan.steps.append(Given(f"previous_{key}", key))
        found = self._walk(plan, entity, path)
        plan.steps.append(Join(f"{key}_filtered", "intersection", (f"previous_{key}", found)))
        plan.final = f"{key}_filtered"
        return plan
