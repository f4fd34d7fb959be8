"""The rule planner's reading of a question against the graph's schema: the words of each
type and relation name, the question's mentions of them, the type it asks for, its
entities, exclusions and comparisons (``Reading``, ``QuestionReader``); a question none
of it maps is ``NotMapped``."""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any, Callable

from ..text import ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS
from ..text.question import QuestionReading
from ..text.words import stem, terms
from .filters import Comparison, comparisons
from .linking import GraphLink, GraphLinker, name_text
from .plan import MAX_HOPS, WHO, PlanError
from .resolve import Resolved
from .steps import Direction, Joining
from .store import SchemaEdge
from .vocabulary import (ASK_AFTER, ASK_BEFORE, CLAUSE, COORDINATION, COUNT, ENUMERATE, EXCLUDE, NAME_FILLERS,
                         PERSON_TYPE_WORDS, REQUEST, UNION, other_property_words, stems)


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
    direction: Direction      # out: along the edge; in: against it
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
    join: Joining = "intersection"
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


class QuestionReader:
    """How the rule planner reads a question against the schema's words: the types and
    relations it names, the type it asks for, its entities and which are excluded, its
    comparisons, and the words no name reads, linked through the graph (a base class of
    ``RulePlanner``, whose schema, lexicon and linkers these are)."""

    schema: list[SchemaEdge]
    types: list[str]
    properties: dict[str, dict[str, str]]
    lexicon: dict[tuple[str, ...], tuple[frozenset, frozenset]]
    linker_for: Callable[[str], GraphLinker]
    reaches: Any

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
