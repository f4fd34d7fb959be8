"""What a graph query finds, each a frozen type: the anchors of the question's entities, the
neighbour edges, the paths (between anchors, or walked from one), the near-equal paths to
other answers, and the result that holds them.

Each has ``to_dict()``, the JSON the trace has always shown (``ragkit ask --json``); the
result can also be read by key (``result["paths"]``), over that JSON, as traces can.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Iterator, Literal, Mapping, TypeVar


@dataclass(frozen=True)
class Anchor:
    """A node standing for one of the question's entities: named by it (``exact``) or the
    nearest node name to it (``vector``, with the cosine as ``score``)."""

    node: str
    entity: str
    score: float
    how: Literal["exact", "vector"]

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "entity": self.entity, "score": self.score, "how": self.how}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Anchor":
        return cls(data["node"], data["entity"], data["score"], data["how"])


@dataclass(frozen=True)
class Neighbour:
    """An edge near the anchors, as the reader sees it (``text``), with what the edge list
    says of it (``evidence``: its extra columns) and its cosine to the question."""

    source: str
    relation: str
    target: str
    text: str
    evidence: tuple[str, ...] = ()
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "relation": self.relation, "target": self.target, "text": self.text,
                "evidence": list(self.evidence), "score": self.score}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Neighbour":
        return cls(data["source"], data["relation"], data["target"], data["text"], tuple(data["evidence"]),
                   data["score"])


@dataclass(frozen=True)
class GraphPath:
    """A path through the graph: its nodes, its steps (each an edge as the graph holds it:
    source, relation, target), the relations read in walking order (``r^-1`` against an
    edge), the extra columns of its edges (``evidence``), its text, and its score. The best
    walk from one anchor also carries ``votes``: how many walks along its relations end at
    each of the (at most five) nodes most reach."""

    nodes: tuple[str, ...]
    steps: tuple[tuple[str, str, str], ...]
    relations: tuple[str, ...]
    evidence: tuple[str, ...]
    text: str
    score: float = 0.0
    votes: Mapping[str, int] | None = None

    @property
    def end(self) -> str:
        return self.nodes[-1]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": list(self.nodes), "steps": [list(s) for s in self.steps], "end": self.end,
                               "evidence": list(self.evidence), "relations": list(self.relations),
                               "text": self.text, "score": self.score}
        if self.votes is not None:
            out["votes"] = dict(self.votes)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GraphPath":
        steps = tuple((s, r, t) for s, r, t in data["steps"])
        return cls(tuple(data["nodes"]), steps, tuple(data["relations"]), tuple(data["evidence"]), data["text"],
                   data["score"], data.get("votes"))


@dataclass(frozen=True)
class Alternative:
    """Another answer a path about as good as the best one leads to: said, not dropped."""

    answer: str
    path: str
    relations: tuple[str, ...]
    score: float
    evidence: tuple[str, ...]

    @classmethod
    def of(cls, path: GraphPath) -> "Alternative":
        return cls(path.end, path.text, path.relations, path.score, path.evidence)

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "path": self.path, "relations": list(self.relations), "score": self.score,
                "evidence": list(self.evidence)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Alternative":
        return cls(data["answer"], data["path"], tuple(data["relations"]), data["score"], tuple(data["evidence"]))


@dataclass(frozen=True)
class GraphResult:
    """Anchors, neighbours, paths and the answer (a node, the nodes between two anchors, or
    None: not enough in the graph) for one question, with the near-equal ``alternatives``."""

    entities: tuple[str, ...]
    anchors: tuple[Anchor, ...] = ()
    neighbours: tuple[Neighbour, ...] = ()
    paths: tuple[GraphPath, ...] = ()
    answer: str | None = None
    alternatives: tuple[Alternative, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = [v.to_dict() if hasattr(v, "to_dict") else v for v in value] \
                if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GraphResult":
        return cls(tuple(data["entities"]), tuple(map(Anchor.from_dict, data["anchors"])),
                   tuple(map(Neighbour.from_dict, data["neighbours"])), tuple(map(GraphPath.from_dict, data["paths"])),
                   data["answer"], tuple(map(Alternative.from_dict, data["alternatives"])))

    # Read-only mapping access over to_dict(), as traces have.
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def keys(self) -> Iterator[str]:
        return iter(self.to_dict())


Scored = TypeVar("Scored", Neighbour, GraphPath)


def scored(item: Scored, score: float) -> Scored:
    return replace(item, score=round(score, 4))


__all__ = ["Alternative", "Anchor", "GraphPath", "GraphResult", "Neighbour", "Scored", "scored"]
