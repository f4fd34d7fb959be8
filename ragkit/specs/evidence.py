"""A spec question read and its evidence gathered from a spec store: the intent its wording
signals and the dictionary entries it names (``analyze_question``), then the stages that
collect typed ``Evidence`` for each entity (the dictionary, the dedicated section, the
function and role chunks, chunks relating two entities, BM25 over every chunk):
``retrieve_spec_evidence``. The spec pipeline (``ragkit.pipelines.spec``) answers from it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from ..config import SpecConfig
from ..corpus import Doc
from ..retrieval.bm25 import BM25Index
from ..runtime.profiler import Profiler
from ..text import ENGLISH_STOPWORDS, Tokenizer
from ..text.cues import FUNCTION_CUES
from ..text.linking import GENERATION_NAMES
from .constraints import allowed_documents, read_constraint, unmet
from .dictionary import TermDictionary, store_signature, term_dictionary
from .model import Chunk, Term
from . import open_store
from .store import GraphStore, rank_terms
from .terms import acronyms_in, is_five_g_spec


# Intent cues, English and Vietnamese, tried in this order (a description may say
# "different from" or "stands for": a reverse cue outranks them). They classify what is asked;
# the entity is whatever span of the question names a dictionary entry (ragkit.text.linking).
INTENTS = (
    ("reverse", r"\bwhich\s+(?:\w+\s+){0,2}(?:term|name|word|concept)s?\b|"
                r"\bwhat\s+(?:\w+\s+)?(?:term|name|word|concept)s?\b|"
                r"\bwhat(?:'s|\s+is|\s+are)\s+(?:the\s+)?(?!full\s)(?:\w+\s+)?(?:term|name|word)s?\s+(?:for|of|given\s+to|used\s+for)\b|"
                r"\bwhat(?:'s|\s+is|\s+are)\s+(?:it|this|that|they)\s+called\b|"
                r"\bwhat\s+(?:do|does|did)\s+(?:\w+\s+){0,4}call\b|\b(?:is|are)\s+(?:called|known\s+as|termed)\s*\??$|"
                r"thuật ngữ nào|khái niệm nào|gọi là gì|được gọi là|tên gọi"),
    ("expansion", r"\bstands?\s+for\b|\babbreviat\w*|\bacronyms?\b|\b(?:full|short)\s+(?:form|name)\b|\bshort\s+for\b|"
                  r"\bexpan(?:d|ds|sion)\b|\bspell(?:ed|s)?\s+out\b|viết tắt"),
    ("comparison", r"\b(?:compare[sd]?|comparison|differences?\s+between|differ(?:s|ent)?\s+(?:from|between)|"
                   r"versus|vs\.?|contrast)\b|so sánh|khác nhau|khác gì"),
    ("role", r"\bwhat\s+(?:does|do)\s+(?:the\s+|an?\s+)?[\w-]+(?:\s+[\w-]+){0,5}\s+do\b|\broles?\b|"
             r"\bfunction(?:s|ality|alities)?\s+of\b|\bpurpose\b|\bused\s+for\b|\bresponsibilit\w*\s+of\b|"
             r"vai trò|chức năng|nhiệm vụ|dùng để"),
    ("definition", r"\bwhat\s+(?:\w+ly\s+|then\s+)?(?:is|are|was|were)\b|\bwhat's\b|\bdefin\w*|\bmeaning\b|"
                   r"\bmeans?\b|\brefers?\s+to\b|\bmeant\s+by\b|\bexplain\w*\b|\bdescrib(?:e[sd]?|ing)\b|"
                   r"\btell\s+me\s+about\b|"
                   r"là gì|là như thế nào|nghĩa là|nghĩa của|định nghĩa|khái niệm"),
)
_INTENTS = tuple((name, re.compile(cue, re.IGNORECASE)) for name, cue in INTENTS)
# Words around an unlinked entity that are not part of it ("the term", "in 5G Core").
_FRAME = re.compile(r"^(?:(?:the|an?|term|word|concept|of|is|are|does|do|by|for|describes?|means?|refers?\s+to|"
                    r"về|của|cụm từ|chỉ|để chỉ|mô tả|là)\s+)+|"
                    r"(?:\s+(?:in|within|of|for|trong)\s+(?:the\s+)?(?:5G|5GC|5GS|3GPP|NR|LTE)\b.*)$|"
                    r"\s+(?:(?:là|của|cho|trong)\s+)*(?:gì|nào|cụm từ nào|như thế nào)$|\s+(?:is|are|mean|means|do)$",
                    re.IGNORECASE)
# A leading clause that sets the scene ("In 5G system architecture, ...", "According to the
# 3GPP vocabulary, ..."): what it names is context, not what the question asks about.
_CONTEXT = re.compile(r"^\s*(?:in|within|according\s+to|as\s+per|per|for|under|from|trong|theo)\b[^,?]{0,80},",
                      re.IGNORECASE)
# The words of a multiple-choice frame ("which option correctly ...", "the following"):
# they say how to answer, not what is asked.
CHOICE_FRAME = frozenset("which option options following best correct correctly".split())



@dataclass(frozen=True)
class QuestionAnalysis:
    qtype: str                 # definition, expansion, reverse, comparison, role, other
    entities: list[str]        # what the question is about: linked names, else acronyms or its phrase
    phrase: str = ""           # the question without its intent cue
    kinds: list[str] = field(default_factory=list)    # per entity: abbreviation, term or unlinked
    links: list[dict] = field(default_factory=list)   # every span linked to the dictionary, and why
    cue: str = ""              # the words that gave the intent
    constraint: dict = field(default_factory=dict)    # the release, spec or "latest" the question names
    unmet: str = ""            # why no stored document meets that constraint ("" when one does)


@dataclass
class Evidence:
    chunk: Chunk | None        # None for a term-dictionary entry
    text: str
    stage: str                 # term, section, function, relation, bm25
    entity: str = ""
    score: float = 0.0
    term: Term | None = None

    @property
    def entry(self) -> Term:
        """The dictionary entry of a term or related item (those always have one)."""
        if self.term is None:
            raise ValueError(f"{self.stage} evidence has no dictionary entry")
        return self.term

    @property
    def passage(self) -> Chunk:
        """The chunk of a section, function, relation or bm25 item (those always have one)."""
        if self.chunk is None:
            raise ValueError(f"{self.stage} evidence has no chunk")
        return self.chunk


def classify_intent(question: str) -> tuple[str, str]:
    """The intent the question's wording signals, and the cue that did: the first of
    ``INTENTS`` whose cue occurs; "other" when none does."""
    for name, cue in _INTENTS:
        match = cue.search(question)
        if match:
            return name, match.group(0)
    return "other", ""


def strip_cue(question: str, cue: str) -> str:
    """The question without its intent cue, its frame words and punctuation: "What is the
    definition of Foo Bar in 5G?" → "Foo Bar"."""
    text = question
    for _, pattern in _INTENTS:     # every cue word, not just the one that decided
        text = pattern.sub(" ", text)
    text = re.sub(r"^\s*(?:what|which|how|who|tell me)\b|\b(?:what|which)\s*$|\bis\b\s*$", " ", text.strip(),
                  flags=re.IGNORECASE)
    text = " ".join(text.strip(" ?.!:;,'\"“”‘’").split())
    for _ in range(3):
        text = _FRAME.sub("", text).strip(" ?.!:;,'\"“”‘’")
    return text


def analyze_question(question: str, dictionary: TermDictionary | None = None) -> QuestionAnalysis:
    """Intent from the wording, entities from what the question names: spans linked to the
    store's term dictionary (abbreviations and term names, longest first; a generation name
    or a span in a leading clause that sets the scene, "In 5G system architecture, ...",
    last), else acronyms written in capitals, else, for a definition question, the phrase
    the cue leaves."""
    qtype, cue = classify_intent(question)
    phrase = strip_cue(question, cue)
    links = dictionary.linker.link(question) if dictionary is not None else []
    scene = _CONTEXT.match(question)
    context = {link.label for link in links if link.text.upper() in GENERATION_NAMES or
               (scene is not None and link.end <= scene.end())}
    linked: list[tuple[str, str]] = []
    for link in sorted(links, key=lambda x: (x.label in context, -(x.end - x.start), x.start)):
        if (link.label, link.kind) not in linked:
            linked.append((link.label, link.kind))
    if linked and len(linked) > 1:
        # Spans naming the same entry twice ("Elementary File (EF)") are one entity.
        first = dictionary.entries(linked[0][0], linked[0][1]) if dictionary else []
        names = {t.full_name.lower() for t in first} | {t.abbreviation.upper() for t in first if t.abbreviation}
        linked = [linked[0]] + [(n, k) for n, k in linked[1:] if n.lower() not in names and n.upper() not in names]
    inside = " ".join(link.text for link in links).upper().split()
    acronyms = [a for a in acronyms_in(question) if a.upper() not in inside]
    entities = linked + [(a, "unlinked") for a in acronyms]
    if qtype == "expansion":    # what an abbreviation stands for: the abbreviation is the subject
        # (not one that only sets the scene: "How is X abbreviated in 3GPP specifications?")
        entities.sort(key=lambda e: (e[0] in context, e[1] not in ("abbreviation", "unlinked")))
    link_rows = [link.to_dict() for link in links]
    if qtype == "comparison" and len(entities) < 2:
        qtype = "definition" if entities else "other"
    if qtype == "other" and linked and _asks_only_about(question, links, linked[0][0]):
        qtype = "definition"    # "What best characterizes X?": nothing but the entry and a few words
    if qtype == "comparison":
        chosen = entities[:2]
    elif qtype in ("definition", "expansion", "role"):
        chosen = entities[:1] or ([(phrase, "unlinked")] if phrase else [])
    else:           # reverse lookups and other questions search; their links are only shown
        chosen = entities if qtype == "other" else []
    return QuestionAnalysis(qtype, [e for e, _ in chosen], phrase, [k for _, k in chosen], link_rows, cue)


def _asks_only_about(question: str, links, label: str, most: int = 1) -> bool:
    """Whether a question with no intent cue asks what one dictionary entry is: it names no
    other entry, does not ask how, why, when or where, and has at most ``most`` content words
    besides the entry's name ("What best characterizes UDR Group ID?")."""
    if re.match(r"\s*(?:how|why|when|where)\b", question, re.IGNORECASE) or {x.label for x in links} != {label}:
        return False
    spans = [link for link in links if link.label == label]
    rest = question
    for link in sorted(spans, key=lambda x: -x.start):
        rest = rest[:link.start] + " " + rest[link.end:]
    content = [w for w in re.findall(r"[^\W_]+", rest.lower()) if w not in ENGLISH_STOPWORDS
               and w not in CHOICE_FRAME]
    return bool(spans) and len(content) <= most


def related_terms(store: GraphStore, entity: str, limit: int = 3) -> list[Term]:
    """Abbreviations that start the unresolved one ("TSC" for "TSCTSF"): hints, not answers."""
    out: list[Term] = []
    for k in range(len(entity) - 1, 2, -1):
        out.extend(rank_terms(store.terms_by_abbreviation(entity[:k])))
        if len(out) >= limit:
            break
    return out[:limit]


def resolve_term(store: GraphStore, entity: str) -> list[Term]:
    """Term resolution (stage 1): abbreviation matches, else name matches, best first."""
    found = store.terms_by_abbreviation(entity) if entity.upper() == entity else []
    if not found:
        found = store.terms_by_name(entity)
    return rank_terms(found)


def _word_in(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word.lower())}(?![\w-])", text.lower()) is not None


def _relevance(chunks: list[Chunk], query: str) -> list[float]:
    """BM25 of each candidate chunk for the query, over the candidates themselves."""
    if not chunks:
        return []
    docs = [Doc(c.chunk_id, c.content, c.section_title) for c in chunks]
    index = BM25Index.build(docs, Tokenizer(lang="en"), progress=False)
    return index.get_scores(query).tolist()


def _prefer(spec_id: str, term_specs: list[str]) -> tuple[int, int]:
    return (0 if spec_id in term_specs else 1, 0 if is_five_g_spec(spec_id) else 1)


def section_evidence(store: GraphStore, entity: str, term: Term | None, limit: int) -> list[Evidence]:
    """Stage 2: clauses whose title holds the full name or the abbreviation as a word."""
    names = [entity] + ([term.full_name] if term and term.full_name.lower() != entity.lower() else [])
    candidates = [c for c in store.find_chunks(title_any=names)
                  if c.chunk_type not in ("abbreviation", "definition")
                  and any(_word_in(n, c.section_title) for n in names)]
    specs = term.source_specs if term else []
    scores = _relevance(candidates, " ".join(names))
    ranked = []
    for c, s in zip(candidates, scores):
        title = c.section_title.lower().strip()
        exact = 0 if title in {n.lower() for n in names} or title.startswith(f"{names[-1].lower()} (") else 1
        ranked.append(((exact, *_prefer(c.spec_id, specs), int(c.section_id != c.chunk_id.split(":")[1]),
                        c.chunk_id.rsplit(":", 1)[-1] != "1", -s), c, s))
    ranked.sort(key=lambda x: x[0])
    return [Evidence(c, c.content, "section", entity, s) for _, c, s in ranked[:limit]]


def _role_mentions(names: list[str], text: str) -> int:
    """How often the text says what one of the names does: "the AMF is responsible for",
    "SMF provides", "functionality of the UPF", "The User plane function (UPF) includes"."""
    count = 0
    for name in names:
        n = re.escape(name)
        count += len(re.findall(rf"(?<![\w-]){n}(?![\w-])(?:\s*\([^)]*\))?[^.]{{0,40}}?\b"
                                rf"(?:is responsible for|provides|supports|includes the following|is used)",
                                text, re.IGNORECASE))
        count += len(re.findall(rf"functionalit\w*\s+(?:of|in)\s+(?:the\s+|an?\s+)?{n}(?![\w-])",
                                text, re.IGNORECASE))
    return count


def function_evidence(store: GraphStore, entity: str, term: Term | None, limit: int,
                      exclude: set[str]) -> list[Evidence]:
    """Stage 3: chunks that say what the entity does ("is responsible for", "provides" ...),
    the entity being the subject; ranked by how often they do, then BM25."""
    names = [entity] + ([term.full_name] if term else [])
    candidates = [c for c in store.find_chunks(content_any=FUNCTION_CUES)
                  if c.chunk_id not in exclude and c.chunk_type not in ("abbreviation", "definition")]
    mentions = [_role_mentions(names, c.content) for c in candidates]
    candidates = [c for c, m in zip(candidates, mentions) if m > 0]
    mentions = [m for m in mentions if m > 0]
    scores = _relevance(candidates, " ".join(names + ["function", "responsible", "provides"]))
    specs = term.source_specs if term else []
    ranked = sorted(zip(candidates, mentions, scores),
                    key=lambda x: (-min(x[1], 3), *_prefer(x[0].spec_id, specs), -x[2]))
    return [Evidence(c, c.content, "function", entity, s) for c, _, s in ranked[:limit]]


def term_evidence(entity: str, terms: list[Term]) -> list[Evidence]:
    """Stage 1 as evidence: the dictionary's entries, one line each with their specs."""
    return [Evidence(None, _term_line(t), "term", entity, float(len(terms) - rank), t)
            for rank, t in enumerate(terms)]


def _term_line(t: Term) -> str:
    """A dictionary entry as one evidence line, with the specs that give it."""
    if t.term_type == "abbreviation":
        return f"{t.abbreviation}: {t.full_name} (defined in {', '.join(t.source_specs)})"
    return f"{t.full_name}: {t.definition}"


MAX_EXPANSIONS = 5      # dictionary lines per abbreviation (TR 21.905 gives some four or more)
MAX_DEFINITIONS = 2


def dictionary_entries(store: GraphStore, entity: str, kind: str,
                       dictionary: TermDictionary | None = None) -> list[Term]:
    """The dictionary's entries for an entity: for a linked one, every expansion (best
    first) and the definitions of the entity or its expansions; for an unlinked one, the
    store's own lookups (abbreviation, then name)."""
    if dictionary is not None and kind in ("abbreviation", "term"):
        entries = dictionary.entries(entity, kind)
    else:
        entries = resolve_term(store, entity)
    expansions = [t for t in entries if t.term_type == "abbreviation"][:MAX_EXPANSIONS]
    definitions = [t for t in entries if t.term_type == "definition"][:MAX_DEFINITIONS]
    # A defined term first when the question named it; an abbreviation's expansions first.
    return definitions + expansions if kind == "term" else expansions + definitions


def entity_evidence(store: GraphStore, entity: str, config: SpecConfig, kind: str = "unlinked",
                    dictionary: TermDictionary | None = None) -> tuple[list[Term], list[Evidence]]:
    """Stages 1-3 for one entity. An unresolved entity still gets its sections and function
    chunks by name, plus near dictionary entries marked as hints ("related")."""
    terms = dictionary_entries(store, entity, kind, dictionary)
    best = next((t for t in terms if t.term_type == "abbreviation"), terms[0] if terms else None)
    hints = [] if terms else [Evidence(None, f"{t.abbreviation}: {t.full_name}", "related", entity, 0.0, t)
                              for t in related_terms(store, entity)]
    sections = section_evidence(store, entity, best, config.section_chunks)
    functions = function_evidence(store, entity, best, config.function_chunks,
                                  {e.passage.chunk_id for e in sections})
    return terms, term_evidence(entity, terms) + hints + sections + functions


def description_evidence(dictionary: TermDictionary, description: str, limit: int) -> list[Evidence]:
    """Reverse lookups: the defined terms whose definitions best match the description."""
    return [Evidence(None, f"{t.full_name}: {t.definition}", "term", t.full_name, score, t)
            for t, score in dictionary.describe(description, k=limit)]


@lru_cache(maxsize=4)
def store_index(uri: str, signature: tuple) -> tuple[BM25Index, dict[str, Chunk]]:
    """The store's chunks as a BM25 index (English), and each chunk by its id."""
    store = open_store(uri)
    try:
        chunks = store.find_chunks()
    finally:
        store.close()
    docs = [Doc(c.chunk_id, c.content, c.section_title, c.spec_id) for c in chunks]
    return BM25Index.build(docs, Tokenizer(lang="en"), progress=False), {c.chunk_id: c for c in chunks}


def bm25_evidence(store: GraphStore, query: str, limit: int, signature: tuple | None = None) -> list[Evidence]:
    """Every chunk of the store, ranked by BM25 (for questions with no entity to resolve)."""
    index, by_id = store_index(store.uri, signature or store_signature(store))
    return [Evidence(by_id[h.doc_id], h.text, "bm25", "", h.score) for h in index.search(query, k=limit)]


def retrieve_spec_evidence(store: GraphStore, question: str, config: SpecConfig | None = None,
                           profiler: Profiler | None = None, signature: tuple | None = None
                           ) -> tuple[QuestionAnalysis, dict[str, list[Term]], list[Evidence]]:
    """Analysis, resolved terms per entity, and the evidence in stage-then-relevance order
    (``signature``: the store's ``store_signature``, read here when not given)."""
    config = config or SpecConfig()
    profiler = profiler or Profiler()
    with profiler.stage("analysis"):
        signature = signature or store_signature(store)
        dictionary = term_dictionary(store, signature)
        # "in Rel-17", "TS 23.501 says", "the latest version": which documents may answer,
        # read off the question before its terms are
        constraint, question = read_constraint(question)
        analysis = analyze_question(question, dictionary)
        allowed: set[str] | None = None
        if constraint:
            documents = store.documents()
            allowed = allowed_documents(constraint, documents)
            analysis = replace(analysis, constraint=constraint.to_dict(),
                               unmet="" if allowed else unmet(constraint, documents))
            if not allowed:
                return analysis, {}, []
    resolved: dict[str, list[Term]] = {}
    evidence: list[Evidence] = []
    with profiler.stage("retrieval"):
        if analysis.qtype == "comparison":
            per_entity = {}
            for entity, kind in zip(analysis.entities, analysis.kinds):
                resolved[entity], per_entity[entity] = entity_evidence(store, entity, config, kind, dictionary)
            # A chunk found for both entities is about their relation, not about either one.
            seen: dict[str, set] = {e: {x.chunk.chunk_id for x in ev if x.chunk} for e, ev in per_entity.items()}
            shared = set.intersection(*seen.values()) if seen else set()
            both = {x.chunk.chunk_id: x for ev in per_entity.values() for x in ev
                    if x.chunk and x.chunk.chunk_id in shared}
            per_entity = {e: [x for x in ev if not (x.chunk and x.chunk.chunk_id in shared)]
                          for e, ev in per_entity.items()}
            evidence = balance(per_entity)
            relation = [Evidence(x.chunk, x.text, "relation", " & ".join(analysis.entities), x.score)
                        for x in both.values()]
            evidence += relation + relation_evidence(
                store, analysis.entities, resolved, max(0, config.relation_chunks - len(relation)),
                {e.chunk.chunk_id for e in evidence if e.chunk} | shared)
        elif analysis.qtype in ("definition", "expansion", "role") and analysis.entities:
            entity, kind = analysis.entities[0], analysis.kinds[0]
            resolved[entity], evidence = entity_evidence(store, entity, config, kind, dictionary)
        elif analysis.qtype == "reverse":
            evidence = description_evidence(dictionary, analysis.phrase, config.description_terms)
            for e in evidence:
                resolved[e.entity] = [e.entry]
        if allowed is not None:
            evidence = [kept for e in evidence if (kept := _kept_to(e, allowed)) is not None]
        if not evidence or analysis.qtype in ("other", "reverse"):
            query = question if analysis.qtype == "other" else analysis.phrase or question
            if allowed is None:
                evidence += bm25_evidence(store, query, config.bm25_chunks, signature)
            else:       # ranked over every chunk, then kept to the allowed documents
                found = [e for e in bm25_evidence(store, query, config.bm25_chunks * 20, signature)
                         if _kept_to(e, allowed) is not None]
                evidence += found[: config.bm25_chunks]
    return analysis, resolved, evidence


def _kept_to(evidence: Evidence, allowed: set[str]) -> Evidence | None:
    """The evidence item as the ``allowed`` documents give it: a chunk of one of them as it
    is, a dictionary entry cited by those of its specs only (its primary spec one of them);
    None when none of them gives it."""
    if evidence.chunk is not None:
        return evidence if evidence.chunk.spec_id in allowed else None
    term = evidence.term
    specs = [spec for spec in term.source_specs if spec in allowed] if term is not None else []
    if term is None or not specs:
        return None
    primary = term.primary_spec if term.primary_spec in specs else specs[0]
    kept = replace(term, source_specs=specs, primary_spec=primary,
                   sections=[x for x in term.sections if x.partition(":")[0] in allowed])
    return replace(evidence, term=kept, text=_term_line(kept) if evidence.stage == "term" else evidence.text)


def balance(per_entity: dict[str, list[Evidence]]) -> list[Evidence]:
    """The same number of chunk evidence items for every entity, interleaved by stage; term
    entries (one line each) are all kept."""
    chunk_lists = {e: [x for x in ev if x.chunk is not None] for e, ev in per_entity.items()}
    n = min((len(v) for v in chunk_lists.values()), default=0)
    out = [x for ev in per_entity.values() for x in ev if x.chunk is None]
    for i in range(n):
        for entity in per_entity:
            out.append(chunk_lists[entity][i])
    return out


def relation_evidence(store: GraphStore, entities: list[str], resolved: dict, limit: int,
                      exclude: set[str]) -> list[Evidence]:
    """Chunks that name both entities, by BM25 for both names."""
    if limit <= 0:
        return []
    candidates = [c for c in store.find_chunks(content_all=entities)
                  if c.chunk_id not in exclude and c.chunk_type not in ("abbreviation", "definition")
                  and all(_word_in(e, c.content) for e in entities)]
    scores = _relevance(candidates, " ".join(entities))
    ranked = sorted(zip(candidates, scores), key=lambda x: (0 if is_five_g_spec(x[0].spec_id) else 1, -x[1]))
    return [Evidence(c, c.content, "relation", " & ".join(entities), s) for c, s in ranked[:limit]]
