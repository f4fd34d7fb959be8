"""Causal chains toward PM2.5 (causal-chain design, sections 3 and 4).

1. Entities: rule-based, from node ids, labels and aliases and the synonym dictionary,
   matched on accent-stripped text (VI and EN). A question that names no variable gets the
   core meteorology set.
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

from ..text import normalize
from .kg import CONFIDENCE_POINTS, STRENGTH_POINTS, SYNONYMS, EvidenceKG

TARGET = "pm25"
CORE_METEOROLOGY = ("temperature", "relative_humidity", "wind_speed", "pblh", "precipitation",
                    "seasonal_patterns")
LAG_BONUS = THRESHOLD_BONUS = QUOTE_BONUS = 0.5
_HEDGES = re.compile(r"\b(may|might|could|possibly|perhaps|unclear|có thể)\b", re.IGNORECASE)
_CATEGORY_WORDS = {
    "chemical": ("chemical", "chemistry", "hoa hoc", "sulfate", "nitrate", "secondary", "thu cap"),
    "meteorological": ("weather", "meteorolog", "thoi tiet", "khi tuong"),
    "seasonal": ("season", "mua dong", "mua he", "winter", "summer"),
    "transport": ("transport", "van chuyen", "long-range", "regional"),
}


@dataclass(frozen=True)
class ChainConfig:
    """The design's limits and filters."""

    k_hops: int = 3                  # the causal design: k = 2..3
    min_edges: int = 2
    max_edges: int = 4
    max_chains: int = 3
    min_confidence: str = "MEDIUM"   # HIGH first, then MEDIUM; LOW only when asked for
    max_tier: int = 2                # tier_1 / tier_2 sources
    categories: tuple[str, ...] = ()  # empty: every category
    max_neighbours: int = 16         # per node, when growing the k-hop subgraph
    max_predecessors: int = 8        # per node, in the backward chain search
    max_candidates: int = 2000
    max_supporting: int = 3

    def __post_init__(self) -> None:
        if not 2 <= self.k_hops <= 4:
            raise ValueError(f"k_hops: expected 2..4, got {self.k_hops}")
        if not 1 <= self.min_edges <= self.max_edges <= 4:
            raise ValueError(f"chain length: need 1 <= min_edges <= max_edges <= 4, got "
                             f"{self.min_edges}..{self.max_edges}")
        if self.min_confidence not in CONFIDENCE_POINTS:
            raise ValueError(f"min_confidence: expected HIGH, MEDIUM or LOW, got {self.min_confidence!r}")


@dataclass
class Chain:
    nodes: list[str]
    edges: list[dict]
    score: float
    score_parts: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"score": round(self.score, 4), "nodes": self.nodes,
                "steps": [step_dict(e) for e in self.edges], "score_parts": self.score_parts}


def step_dict(edge: dict) -> dict:
    """A step as the command-line contract shows it."""
    return {"source": edge["source"], "target": edge["target"], "relation": edge["relation"],
            "confidence": edge["confidence"], "strength": edge["strength"],
            "mechanism": edge.get("mechanism", ""), "temporal_lag": edge.get("temporal_lag", ""),
            "conditions": edge.get("conditions", []),
            "evidence": [{"source_url": ev.get("source_url", ""), "source_doi": ev.get("source_doi", ""),
                          "source_quote": ev.get("source_quote", "")} for ev in edge["evidence"]]}


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


def find_names(text: str, index: dict[str, set[str]]) -> list[tuple[int, int, str]]:
    """(position, words, node) for every name of the index in the text, longest first."""
    words = _words(text)
    found = []
    for i in range(len(words)):
        for n in range(min(MAX_NAME_WORDS, len(words) - i), 0, -1):
            key = " ".join(w for _, w in words[i:i + n])
            for node in sorted(index.get(key, ())):
                found.append((words[i][0], n, node, key))
    return [(pos, n, node) for pos, n, node, key in found if len(key) >= 2]


def extract_entities(kg: EvidenceKG, question: str) -> list[str]:
    """Node ids named in the question, in order of first mention (pm25 excluded).

    Names are matched with their diacritics first ("mưa" is rain, "mùa" is season); a
    question typed without diacritics falls back to accent-stripped names, skipping any
    stripped name that two nodes share."""
    raw, plain = name_index(kg)
    found: dict[str, int] = {}
    hits = find_names(unicodedata.normalize("NFC", question.lower()), raw)
    hits += [h for h in find_names(normalize(question), {k: v for k, v in plain.items() if len(v) == 1})]
    for pos, _, node in sorted(hits, key=lambda h: (h[0], -h[1], h[2])):
        if node != TARGET and node not in found:
            found[node] = pos
    return sorted(found, key=lambda n: (found[n], n))


def question_categories(question: str) -> tuple[str, ...]:
    text = normalize(question)
    return tuple(cat for cat, words in _CATEGORY_WORDS.items() if any(w in text for w in words))


# --------------------------------------------------------------------------- scoring
def _tier(evidence: list[dict]) -> int:
    tiers = [int(m.group(1)) for ev in evidence if (m := re.search(r"(\d+)", ev.get("tier", "") or ""))]
    return min(tiers) if tiers else 99


def has_threshold(edge: dict) -> bool:
    return any(c.get("op") in (">", ">=", "<", "<=") and isinstance(c.get("value"), (int, float))
               for c in edge.get("conditions", []))


def clear_quote(edge: dict) -> bool:
    """A quote long enough to say something and free of hedging words."""
    return any(len(ev.get("source_quote", "")) >= 40 and not _HEDGES.search(ev.get("source_quote", ""))
               for ev in edge["evidence"])


def edge_score(edge: dict) -> tuple[float, dict]:
    """The design's points for one edge, with the parts that made them."""
    parts = {"confidence": CONFIDENCE_POINTS[edge["confidence"]],
             "strength": STRENGTH_POINTS[edge["strength"]],
             "temporal_lag": LAG_BONUS if str(edge.get("temporal_lag", "")).strip() else 0.0,
             "threshold": THRESHOLD_BONUS if has_threshold(edge) else 0.0,
             "clear_quote": QUOTE_BONUS if clear_quote(edge) else 0.0}
    return float(sum(parts.values())), parts


def edge_passes(edge: dict, config: ChainConfig) -> bool:
    """The confidence, tier and category filters."""
    if CONFIDENCE_POINTS[edge["confidence"]] < CONFIDENCE_POINTS[config.min_confidence]:
        return False
    if _tier(edge["evidence"]) > config.max_tier and _tier(edge["evidence"]) != 99:
        return False
    return not config.categories or edge.get("category", "") in config.categories


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


def candidate_chains(sub: nx.DiGraph, config: ChainConfig, prefer: set[str] = frozenset()) -> list[list[str]]:
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


def select_chains(kg: EvidenceKG, entities: list[str], config: ChainConfig | None = None
                  ) -> tuple[list[Chain], list[str], nx.DiGraph]:
    """The best chains for the question's entities (or the core set): at most
    ``max_chains``, each starting from a different node. Returns (chains, the entities
    actually used, the candidate subgraph)."""
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
    picked: list[Chain] = []
    starts: set[str] = set()
    for chain in relevant:
        if chain.nodes[0] in starts:
            continue
        picked.append(chain)
        starts.add(chain.nodes[0])
        if len(picked) == config.max_chains:
            break
    return picked, focus, sub


def supporting_factors(kg: EvidenceKG, sub: nx.DiGraph, chains: list[Chain], focus: list[str],
                       config: ChainConfig) -> list[dict]:
    """Direct influences on pm25 not already in a selected chain: focus nodes first, then
    by edge score (at most ``max_supporting``)."""
    used = {n for c in chains for n in c.nodes}
    rows = []
    for pred in sub.predecessors(TARGET) if TARGET in sub else []:
        if pred in used:
            continue
        edge = sub.edges[pred, TARGET]
        points, _ = edge_score(edge)
        rows.append((pred not in focus, -points, pred, edge))
    rows.sort(key=lambda r: r[:3])
    return [{"factor": pred, "label": kg.label(pred), "relation": edge["relation"],
             "confidence": edge["confidence"], "strength": edge["strength"],
             "conditions": edge.get("conditions", []),
             "evidence": step_dict(edge)["evidence"]} for _, _, pred, edge in rows[: config.max_supporting]]


__all__ = ["Chain", "ChainConfig", "candidate_chains", "candidate_subgraph", "edge_score",
           "extract_entities", "select_chains", "supporting_factors"]
