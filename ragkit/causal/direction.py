"""Which way things move: the sign of a KG relation, the net direction of a chain, and the
direction a question asks about.

An edge's sign comes from its ``relation`` (the schema leaves relations free, so the signs
of the common ones live here): "decreases" and its kin are -1, "increases" and the
relations that add to their target ("contributes_to", "precursor_of", "enables", ...) are
+1, and a relation that says no direction ("modulates") is 0. A chain's net direction is
the product of its edges' signs, 0 when any edge is unsigned: the effect on PM2.5 of its
start node rising.

A question's direction comes from one small bilingual word list (``DIRECTION_WORDS``). Each
direction word belongs to the name it stands next to: "độ ẩm cao" and "high humidity" say
the humidity is high, "PM2.5 tăng" and "raise PM2.5" say PM2.5 rises. Words inside a matched
name ("Độ cao lớp biên", "Tăng trưởng hút ẩm") are part of the name, not directions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..text import strip_accents

RELATION_SIGN = {
    "increases": 1, "enables": 1, "contributes_to": 1, "precursor_of": 1, "drives": 1,
    "includes": 1, "strengthens": 1, "causes": 1, "promotes": 1, "produces": 1,
    "enhances": 1, "leads_to": 1, "forms": 1,
    "decreases": -1, "reduces": -1, "inhibits": -1, "suppresses": -1, "removes": -1,
    "dilutes": -1, "weakens": -1, "prevents": -1, "lowers": -1,
    "modulates": 0, "affects": 0, "correlates_with": 0,
}

# Direction words, +1 for "more / up", -1 for "less / down". Vietnamese with diacritics;
# a question word typed without any diacritics is compared with the stripped forms.
DIRECTION_WORDS = {
    # Vietnamese
    "tăng": 1, "cao": 1, "nhiều": 1, "mạnh": 1, "nặng": 1, "xấu": 1, "tệ": 1, "lớn": 1, "dày": 1,
    "giảm": -1, "thấp": -1, "ít": -1, "yếu": -1, "nhẹ": -1, "tốt": -1, "sạch": -1, "nhỏ": -1,
    "cải thiện": -1,
    # English
    "increase": 1, "increases": 1, "increased": 1, "increasing": 1, "rise": 1, "rises": 1,
    "rising": 1, "rose": 1, "raise": 1, "raises": 1, "raised": 1, "high": 1, "higher": 1,
    "highest": 1, "more": 1, "worse": 1, "worsen": 1, "worsens": 1, "strong": 1,
    "stronger": 1, "heavy": 1, "heavier": 1, "up": 1, "spike": 1, "spikes": 1,
    "decrease": -1, "decreases": -1, "decreased": -1, "decreasing": -1, "fall": -1,
    "falls": -1, "falling": -1, "fell": -1, "drop": -1, "drops": -1, "lower": -1,
    "lowers": -1, "lowest": -1, "reduce": -1, "reduces": -1, "reduced": -1, "low": -1,
    "less": -1, "fewer": -1, "better": -1, "improve": -1, "improves": -1, "weak": -1,
    "weaker": -1, "light": -1, "cleaner": -1, "down": -1,
}

# Words that name the outcome the causal pipeline explains (besides the pm25 node's own
# names): "ô nhiễm nặng hơn" asks about PM2.5 as much as "PM2.5 tăng" does.
OUTCOME_WORDS = ("ô nhiễm", "ô nhiễm không khí", "pollution", "air pollution", "polluted",
                 "haze", "smog", "khói mù", "sương khói")

# A level word describes an entity only when it stands this close to it (words between):
# "độ ẩm cao", "humidity is high".
ENTITY_REACH = 1
# A question that gives the outcome no direction word of its own still asks for one when a
# direction word stands this close to it: "PM2.5 mùa đông cao".
OUTCOME_REACH = 2


def edge_sign(edge: dict) -> int:
    """+1, -1, or 0 when the relation says no direction (or is not a known relation)."""
    return RELATION_SIGN.get(str(edge.get("relation", "")).strip().lower(), 0)


def net_direction(edges: list[dict]) -> int:
    """The product of the edges' signs: the effect on the last node of the first rising.

    >>> net_direction([{"relation": "decreases"}, {"relation": "increases"}])
    -1
    >>> net_direction([{"relation": "modulates"}, {"relation": "increases"}])
    0
    """
    sign = 1
    for edge in edges:
        sign *= edge_sign(edge)
    return sign


def _has_diacritics(word: str) -> bool:
    return strip_accents(word) != word


def _plain_words() -> dict[str, int]:
    return {strip_accents(w): s for w, s in DIRECTION_WORDS.items()}


def direction_words(words: list[str], claimed: set[int]) -> list[tuple[int, int, int]]:
    """(first word, word count, sign) of each direction word outside the matched names.
    A word typed with diacritics must match with them ("nặng" is not "nắng")."""
    plain = _plain_words()
    found = []
    i = 0
    while i < len(words):
        for n in (2, 1):
            span = words[i:i + n]
            if len(span) < n or any(j in claimed for j in range(i, i + n)):
                continue
            key = " ".join(span)
            sign = DIRECTION_WORDS.get(key)
            if sign is None and not any(_has_diacritics(w) for w in span):
                sign = plain.get(key)
            if sign is not None:
                found.append((i, n, sign))
                i += n - 1
                break
        i += 1
    return found


def _gap(word: tuple[int, int, int], span: tuple[int, int]) -> int:
    """Words between a direction word and a name span."""
    start, n = word[0], word[1]
    if start + n <= span[0]:
        return span[0] - (start + n)
    return max(0, start - (span[0] + span[1]))


@dataclass(frozen=True)
class AskedDirection:
    """What the question asks: ``outcome`` +1 (why does PM2.5 rise / stay high), -1 (why
    does it fall), 0 (no direction: every chain may answer); ``levels`` the asked level of
    named causes ({"wind_speed": -1} for "gió yếu" / "weak wind"), +1 when not said."""

    outcome: int = 0
    levels: dict[str, int] = field(default_factory=dict)

    def level(self, node: str) -> int:
        return self.levels.get(node, 1)

    def effect(self, start: str, net: int) -> int:
        """The chain's effect on PM2.5 as the question reads it: its net direction, turned
        round when the question says its start node is low."""
        return self.level(start) * net

    def to_dict(self) -> dict:
        return {"outcome": self.outcome, "levels": dict(self.levels)}


def asked_direction(words: list[str], mentions: list[tuple[int, int, str]],
                    outcome_spans: list[tuple[int, int]]) -> AskedDirection:
    """The question's direction from its words (lowercase, with their diacritics), its
    matched names ``mentions`` (first word, word count, node) and the spans that name the
    outcome (PM2.5, pollution). Each direction word goes to the nearest name; a tie goes to
    the outcome, and an entity takes a word only within ``ENTITY_REACH`` words.

    >>> w = "vì sao gió yếu làm pm2.5 tăng".split()
    >>> asked_direction(w, [(2, 1, "wind_speed")], [(5, 1)])
    AskedDirection(outcome=1, levels={'wind_speed': -1})
    """
    claimed = {j for s, n, _ in mentions for j in range(s, s + n)}
    claimed |= {j for s, n in outcome_spans for j in range(s, s + n)}
    outcome_signs: list[tuple[int, int]] = []          # (gap, sign)
    entity_signs: dict[str, list[tuple[int, int, tuple]]] = {}
    for word in direction_words(words, claimed):
        to_outcome = min((_gap(word, s) for s in outcome_spans), default=None)
        to_entity = min(((_gap(word, (s, n)), node) for s, n, node in mentions), default=None)
        if to_entity and to_entity[0] <= ENTITY_REACH and (to_outcome is None or to_entity[0] < to_outcome):
            entity_signs.setdefault(to_entity[1], []).append((to_entity[0], word[2], word))
        else:
            outcome_signs.append((to_outcome if to_outcome is not None else len(words), word[2]))
    if not outcome_signs and outcome_spans:
        # "PM2.5 mùa đông cao": the only direction word near the outcome describes it.
        near = sorted((_gap(w, s), node, w) for node, ws in entity_signs.items() for _, _, w in ws
                      for s in outcome_spans if _gap(w, s) <= OUTCOME_REACH)
        if near:
            _, node, word = near[0]
            entity_signs[node] = [e for e in entity_signs[node] if e[2] != word]
            outcome_signs.append((near[0][0], word[2]))
    outcome = min(outcome_signs)[1] if outcome_signs else 0
    levels = {node: min(ws)[1] for node, ws in entity_signs.items() if ws}
    return AskedDirection(outcome=outcome, levels=levels)
