"""Causal chains toward PM2.5.

1. Entities: rule-based, from node ids, labels and aliases and the synonym dictionary,
   matched with their diacritics, longest name first (VI and EN); accent-stripped names
   only for words typed without diacritics. A question that names no variable gets the
   core meteorology set. The question's asked direction comes from ``direction.py``.
2. Candidate subgraph: k hops backwards from pm25 and forwards from the main entity,
   keeping edges that pass the confidence / tier / category filters, at most
   ``max_neighbours`` (best-scored) per node.
3. Candidate chains: simple directed paths of 2–4 edges that end at pm25, enumerated
   backwards from pm25 with a cap on predecessors per node and on the total, so a hub in a
   large graph cannot blow the search up.
4. Score per chain: the mean over its edges of confidence (HIGH 2, MEDIUM 1, LOW 0) +
   strength (STRONG 2, MODERATE 1, WEAK 0) + 0.5 for a temporal lag + 0.5 for a threshold
   condition + 0.5 for a clear quote. At most 3 chains of at most 4 steps; ties broken by
   (shorter first, then node ids), so results never depend on dict order.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Iterable

import networkx as nx

from ..config import ChainConfig
from ..text import normalize
from ..text.cues import HEDGES
from .direction import OUTCOME_WORDS, AskedDirection, asked_direction, net_direction
from .records import Factor
from .kg import CONFIDENCE_POINTS, STRENGTH_POINTS, SYNONYMS, EvidenceKG, known_fields

TARGET = "pm25"
CORE_METEOROLOGY = ("temperature", "relative_humidity", "wind_speed", "pblh", "precipitation",
                    "seasonal_patterns")
LAG_BONUS = THRESHOLD_BONUS = QUOTE_BONUS = 0.5
_HEDGES = re.compile(r"\b(" + "|".join(HEDGES) + r")\b", re.IGNORECASE)
_CATEGORY_WORDS = {
    "chemical": ("chemical", "chemistry", "hoa hoc", "sulfate", "nitrate", "secondary", "thu cap"),
    "meteorological": ("weather", "meteorolog", "thoi tiet", "khi tuong"),
    "seasonal": ("season", "mua dong", "mua he", "winter", "summer"),
    "transport": ("transport", "van chuyen", "long-range", "regional"),
}


@dataclass
class Chain:
    nodes: list[str]
    edges: list[dict]
    score: float
    score_parts: list[dict] = field(default_factory=list)

    @property
    def direction(self) -> int:
        """Net direction: +1 when the start rising raises PM2.5, -1 when it lowers it, 0
        when an edge says no direction."""
        return net_direction(self.edges)

    def to_dict(self) -> dict:
        return {"score": round(self.score, 4), "nodes": self.nodes, "direction": self.direction,
                "steps": [step_dict(e) for e in self.edges], "score_parts": self.score_parts}


def _evidence_dict(ev: dict) -> dict:
    """An evidence record as the contract shows it; fields the schema does not name go
    under ``extra`` (only when there are some, so the contract's three keys stay as they are)."""
    out = {"source_url": ev.get("source_url", ""), "source_doi": ev.get("source_doi", ""),
           "source_quote": ev.get("source_quote", "")}
    extra = {k: v for k, v in ev.items() if k not in known_fields("edges", "evidence")}
    return {**out, "extra": extra} if extra else out


def step_dict(edge: dict) -> dict:
    """A step as the command-line contract shows it, with the KG's own extra fields."""
    return {"source": edge["source"], "target": edge["target"], "relation": edge["relation"],
            "confidence": edge["confidence"], "strength": edge["strength"],
            "mechanism": edge.get("mechanism") or "", "temporal_lag": edge.get("temporal_lag") or "",
            "conditions": edge.get("conditions") or [],
            "evidence": [_evidence_dict(ev) for ev in edge["evidence"]],
            "extra": {k: v for k, v in edge.items() if k not in known_fields("edges")}}


# --------------------------------------------------------------------------- entities
_WORD = re.compile(r"\w[\w.+\-']*")
MAX_NAME_WORDS = 6


def _words(text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group().rstrip(".'-")) for m in _WORD.finditer(text)]


def node_names(kg: EvidenceKG) -> list[tuple[str, str]]:
    """(lowercase name with its diacritics, node id) for every id, label and alias."""
    out = []
    for node, data in kg.graph.nodes(data=True):
        for name in [node, data.get("label", ""), *data.get("aliases", [])]:
            if name:
                out.append((unicodedata.normalize("NFC", name.lower()), node))
    return out


def name_index(kg: EvidenceKG) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Names → nodes, as word sequences: with diacritics, and accent-stripped (plus the
    synonym dictionary). Built once per KG, so matching a question costs O(its words)."""
    cached = kg.__dict__.get("_name_index")
    if cached is not None:
        return cached
    raw: dict[str, set[str]] = {}
    plain: dict[str, set[str]] = {}
    for name, node in node_names(kg):
        raw.setdefault(" ".join(w for _, w in _words(name)), set()).add(node)
        plain.setdefault(" ".join(w for _, w in _words(normalize(name))), set()).add(node)
    for name, node in SYNONYMS.items():
        if node in kg.graph:
            plain.setdefault(" ".join(w for _, w in _words(name)), set()).add(node)
    kg.__dict__["_name_index"] = (raw, plain)
    return raw, plain


def question_words(text: str) -> list[str]:
    """The words of a question or answer, lowercase, with their diacritics (NFC)."""
    return [w for _, w in _words(unicodedata.normalize("NFC", text.lower()))]


def _accent_free(word: str) -> bool:
    return normalize(word) == word


def match_names(words: list[str], kg: EvidenceKG) -> list[tuple[int, int, frozenset[str]]]:
    """(first word, word count, nodes) for the KG names in ``words``, longest first and
    never inside a longer matched name ("gió mùa đông bắc" is the cold surge, not wind and
    season). Names match with their diacritics ("nặng" is not "nắng"); an accent-stripped
    name matches only words typed without any diacritics, and only when one node has it.
    O(words × MAX_NAME_WORDS) dictionary look-ups."""
    raw, plain = name_index(kg)
    candidates = []
    for i in range(len(words)):
        for n in range(min(MAX_NAME_WORDS, len(words) - i), 0, -1):
            span = words[i:i + n]
            key = " ".join(span)
            if len(key) < 2:
                continue
            nodes = raw.get(key)
            if not nodes and all(_accent_free(w) for w in span):
                nodes = plain.get(key) if len(plain.get(key, ())) == 1 else None
            if nodes:
                candidates.append((i, n, frozenset(nodes)))
    taken: set[int] = set()
    found = []
    for i, n, named in sorted(candidates, key=lambda c: (-c[1], c[0])):
        if taken.isdisjoint(range(i, i + n)):
            taken.update(range(i, i + n))
            found.append((i, n, named))
    return sorted(found, key=lambda f: f[0])


def outcome_spans(words: list[str], kg: EvidenceKG, matches) -> list[tuple[int, int]]:
    """Where the question names the outcome: the pm25 node's names and the pollution words."""
    spans = [(i, n) for i, n, nodes in matches if TARGET in nodes]
    taken = {j for i, n, _ in matches for j in range(i, i + n)}
    phrases = sorted({tuple(p.split()) for p in OUTCOME_WORDS}, key=len, reverse=True)
    for i in range(len(words)):
        for phrase in phrases:
            n = len(phrase)
            if tuple(words[i:i + n]) == phrase and taken.isdisjoint(range(i, i + n)):
                spans.append((i, n))
                taken.update(range(i, i + n))
                break
    return sorted(spans)


def analyse_question(kg: EvidenceKG, question: str) -> tuple[list[str], AskedDirection]:
    """The question's entities (node ids in order of first mention, pm25 excluded) and the
    direction it asks about."""
    words = question_words(question)
    matches = match_names(words, kg)
    entities: list[str] = []
    mentions = []
    for i, n, nodes in matches:
        for node in sorted(nodes):
            if node != TARGET:
                mentions.append((i, n, node))
                if node not in entities:
                    entities.append(node)
    asked = asked_direction(words, mentions, outcome_spans(words, kg, matches))
    return entities, asked


def extract_entities(kg: EvidenceKG, question: str) -> list[str]:
    """Node ids named in the question, in order of first mention (pm25 excluded); see
    ``match_names`` for how names match."""
    return analyse_question(kg, question)[0]


def question_categories(question: str) -> tuple[str, ...]:
    text = normalize(question)
    return tuple(cat for cat, words in _CATEGORY_WORDS.items() if any(w in text for w in words))


# --------------------------------------------------------------------------- scoring
def _tier(evidence: list[dict]) -> int:
    tiers = [int(m.group(1)) for ev in evidence if (m := re.search(r"(\d+)", str(ev.get("tier") or "")))]
    return min(tiers) if tiers else 99


def has_threshold(edge: dict) -> bool:
    return any(c.get("op") in (">", ">=", "<", "<=") and isinstance(c.get("value"), (int, float))
               for c in edge.get("conditions") or [])


def clear_quote(edge: dict) -> bool:
    """A quote long enough to say something and free of hedging words."""
    return any(len(ev.get("source_quote") or "") >= 40 and not _HEDGES.search(ev.get("source_quote") or "")
               for ev in edge["evidence"])


def edge_score(edge: dict) -> tuple[float, dict]:
    """The points for one edge (confidence + strength + bonuses), with the parts that made them."""
    parts = {"confidence": CONFIDENCE_POINTS[edge["confidence"]],
             "strength": STRENGTH_POINTS[edge["strength"]],
             "temporal_lag": LAG_BONUS if str(edge.get("temporal_lag") or "").strip() else 0.0,
             "threshold": THRESHOLD_BONUS if has_threshold(edge) else 0.0,
             "clear_quote": QUOTE_BONUS if clear_quote(edge) else 0.0}
    return float(sum(parts.values())), parts


def edge_passes(edge: dict, config: ChainConfig) -> bool:
    """The confidence, tier and category filters."""
    if CONFIDENCE_POINTS[edge["confidence"]] < CONFIDENCE_POINTS[config.min_confidence]:
        return False
    if _tier(edge["evidence"]) > config.max_tier and _tier(edge["evidence"]) != 99:
        return False
    return not config.categories or (edge.get("category") or "") in config.categories


# --------------------------------------------------------------------------- search
def candidate_subgraph(kg: EvidenceKG, centres: Iterable[str], config: ChainConfig) -> nx.DiGraph:
    """The k-hop neighbourhood that chains can use: k hops backwards from pm25 (its causes,
    their causes ...) and k hops forwards from each centre (what it affects), keeping edges
    that pass the filters. Each node contributes at most ``max_neighbours`` edges, the
    best-scored first, so the subgraph stays small on a graph with hubs: at most
    1 + n + n² + ... + nᵏ nodes per direction."""
    g = kg.graph
    sub = nx.DiGraph()

    def grow(start: str, step) -> None:
        frontier, seen = [start], {start}
        for _ in range(config.k_hops):
            nxt = []
            for node in frontier:
                for edge in step(node):
                    sub.add_edge(edge["source"], edge["target"], **edge)
                    other = edge["source"] if edge["target"] == node else edge["target"]
                    if other not in seen:
                        seen.add(other)
                        nxt.append(other)
            frontier = nxt

    def best(edges) -> list[dict]:
        kept = [e for e in edges if edge_passes(e, config)]
        kept.sort(key=lambda e: (-edge_score(e)[0], e["source"], e["target"]))
        return kept[: config.max_neighbours]

    if TARGET in g:
        grow(TARGET, lambda n: best(g.edges[p, n] for p in g.predecessors(n)))
    for centre in centres:
        if centre in g and centre != TARGET:
            grow(centre, lambda n: best(g.edges[n, t] for t in g.successors(n)))
    return sub


def candidate_chains(sub: nx.DiGraph, config: ChainConfig,
                     prefer: frozenset[str] | set[str] = frozenset()) -> list[list[str]]:
    """Simple paths of min..max edges ending at pm25, found backwards from it. Each node
    expands at most ``max_predecessors`` predecessors (the best-scored edges first) and the
    search stops at ``max_candidates`` paths: bounded on any graph. Nodes in ``prefer``
    (the question's entities and what they lead to) are expanded first."""
    if TARGET not in sub:
        return []
    best_first = {}
    for node in sub.nodes:
        preds = sorted(sub.predecessors(node),
                       key=lambda p: (p not in prefer, -edge_score(sub.edges[p, node])[0], p))
        best_first[node] = preds[: config.max_predecessors]
    paths: list[list[str]] = []
    stack: list[list[str]] = [[TARGET]]
    while stack and len(paths) < config.max_candidates:
        path = stack.pop()
        if config.min_edges <= len(path) - 1:
            paths.append(list(reversed(path)))
        if len(path) - 1 >= config.max_edges:
            continue
        for pred in reversed(best_first[path[-1]]):
            if pred not in path:
                stack.append(path + [pred])
    return paths


def score_chain(sub: nx.DiGraph, nodes: list[str]) -> Chain:
    edges, parts = [], []
    for s, t in zip(nodes, nodes[1:]):
        edge = sub.edges[s, t]
        points, detail = edge_score(edge)
        edges.append(edge)
        parts.append({"edge": f"{s}->{t}", "points": points, **detail})
    return Chain(nodes=nodes, edges=edges, score=sum(p["points"] for p in parts) / len(parts),
                 score_parts=parts)


def rank_chains(kg: EvidenceKG, entities: list[str], config: ChainConfig | None = None
                ) -> tuple[list[Chain], list[str], nx.DiGraph]:
    """Every candidate chain through the question's entities (or the core set), best
    first. Returns (chains, the entities actually used, the candidate subgraph)."""
    config = config or ChainConfig()
    focus = [e for e in entities if e in kg.graph] or [c for c in CORE_METEOROLOGY if c in kg.graph]
    sub = candidate_subgraph(kg, focus if not entities else focus[:1], config)
    prefer = set(focus)
    for centre in focus:
        if centre in sub:
            prefer |= nx.descendants(sub, centre)
    chains = [score_chain(sub, path) for path in candidate_chains(sub, config, prefer)]
    relevant = [c for c in chains if any(n in focus for n in c.nodes[:-1])]
    relevant.sort(key=lambda c: (-round(c.score, 9), len(c.edges), c.nodes))
    return relevant, focus, sub


def pick_chains(ranked: list[Chain], limit: int) -> list[Chain]:
    """The first ``limit`` chains of a ranked list, each from a different start node."""
    picked: list[Chain] = []
    starts: set[str] = set()
    for chain in ranked:
        if chain.nodes[0] not in starts:
            picked.append(chain)
            starts.add(chain.nodes[0])
            if len(picked) == limit:
                break
    return picked


def split_by_direction(ranked: list[Chain], asked: AskedDirection) -> tuple[list[Chain], list[Chain]]:
    """(chains that may answer, chains that push PM2.5 the other way). A chain opposes when
    the question asks a direction and the chain's effect, read with the question's levels
    ("gió yếu": the wind chain read with the wind low), is the other one. Chains without a
    direction (an unsigned relation) do not oppose. No asked direction: nothing opposes."""
    if not asked.outcome:
        return list(ranked), []
    agree: list[Chain] = []
    oppose: list[Chain] = []
    for chain in ranked:
        effect = asked.effect(chain.nodes[0], chain.direction)
        (oppose if effect == -asked.outcome else agree).append(chain)
    return agree, oppose


def select_chains(kg: EvidenceKG, entities: list[str], config: ChainConfig | None = None,
                  asked: AskedDirection | None = None) -> tuple[list[Chain], list[str], nx.DiGraph]:
    """The best chains for the question's entities (or the core set): at most
    ``max_chains``, each starting from a different node, none against the ``asked``
    direction. Returns (chains, the entities actually used, the candidate subgraph)."""
    config = config or ChainConfig()
    ranked, focus, sub = rank_chains(kg, entities, config)
    agree, _ = split_by_direction(ranked, asked or AskedDirection())
    return pick_chains(agree, config.max_chains), focus, sub


def _opposes(asked: AskedDirection | None, start: str, edges: list[dict]) -> bool:
    return asked is not None and bool(asked.outcome) and asked.effect(start, net_direction(edges)) == -asked.outcome


def supporting_factors(kg: EvidenceKG, sub: nx.DiGraph, chains: list[Chain], focus: list[str],
                       config: ChainConfig, asked: AskedDirection | None = None) -> list[Factor]:
    """Direct influences on pm25 not already in a selected chain and not against the asked
    direction: focus nodes first, then by edge score (at most ``max_supporting``)."""
    used = {n for c in chains for n in c.nodes}
    rows = []
    for pred in sub.predecessors(TARGET) if TARGET in sub else []:
        edge = sub.edges[pred, TARGET]
        if pred in used or _opposes(asked, pred, [edge]):
            continue
        points, _ = edge_score(edge)
        rows.append((pred not in focus, -points, pred, edge))
    rows.sort(key=lambda r: r[:3])
    return [{"factor": pred, "label": kg.label(pred), "relation": edge["relation"],
             "confidence": edge["confidence"], "strength": edge["strength"],
             "direction": net_direction([edge]), "conditions": edge.get("conditions") or [],
             "evidence": step_dict(edge)["evidence"]} for _, _, pred, edge in rows[: config.max_supporting]]


def opposing_factors(sub: nx.DiGraph, opposing: list[Chain], chains: list[Chain], focus: list[str],
                     config: ChainConfig, asked: AskedDirection) -> list[Chain]:
    """What pushes PM2.5 against the asked direction, with its evidence: the best opposing
    chains (each from a different start), then the question's own entities (or the core
    set) that act on pm25 directly against it (one-step chains), at most ``max_chains`` in
    all. Empty when no direction is asked."""
    if not asked.outcome:
        return []
    picked = pick_chains(opposing, config.max_chains)
    used = {n for c in chains + picked for n in c.nodes[:-1]}
    direct = []
    for pred in sub.predecessors(TARGET) if TARGET in sub else []:
        edge = sub.edges[pred, TARGET]
        if pred in focus and pred not in used and _opposes(asked, pred, [edge]):
            direct.append(score_chain(sub, [pred, TARGET]))
    direct.sort(key=lambda c: (-round(c.score, 9), c.nodes))
    return (picked + direct)[: config.max_chains]


__all__ = ["Chain", "ChainConfig", "analyse_question", "candidate_chains", "candidate_subgraph",
           "edge_score", "extract_entities", "match_names", "opposing_factors", "pick_chains", "rank_chains",
           "select_chains", "split_by_direction", "supporting_factors"]
