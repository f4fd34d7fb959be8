"""One retrieval step of a question read in steps, as its trace shows it (``trace.steps``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..answer.hops import FollowUp


@dataclass(frozen=True)
class StepTrace:
    """A step: its number, the query it retrieved for, the chunks it found (``hits``), the
    short answer it read and from what (``answer_source``), and its time. A step that reads a
    description inside the question also has ``reach`` (the share of the question its answers
    have read so far) and is ``kept`` unless nothing named the description (then the question
    is read whole). A first step that looked for a follow-up query has ``follow_up`` (None:
    it needed none)."""

    step: int
    query: str
    hits: tuple[str, ...]
    short_answer: str | None = None
    answer_source: str = "evidence"
    ms: float = 0.0
    reach: float | None = None
    kept: bool = True
    looked_further: bool = False
    follow_up: FollowUp | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "query": self.query, "hits": list(self.hits),
                               "short_answer": self.short_answer, "answer_source": self.answer_source}
        if self.reach is not None:
            out["reach"] = self.reach
        if self.looked_further:
            out["follow_up"] = self.follow_up.to_dict() if self.follow_up is not None else None
        out["ms"] = self.ms
        if not self.kept:
            out["kept"] = False
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StepTrace":
        found = data.get("follow_up")
        return cls(data["step"], data["query"], tuple(data["hits"]), data["short_answer"], data["answer_source"],
                   data["ms"], data.get("reach"), data.get("kept", True), "follow_up" in data,
                   FollowUp(found["bridge"], tuple(found["missing"]), found["share"]) if found else None)


__all__ = ["StepTrace"]
