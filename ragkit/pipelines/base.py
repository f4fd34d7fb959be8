"""What every pipeline returns: the answer, the evidence it cites, how it got there
(``trace``) and how long each stage took (``timings_ms``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..errors import InputError

NOT_ENOUGH_VI = "Không đủ thông tin trong tài liệu để trả lời câu hỏi này."


@dataclass
class Citation:
    id: int
    doc_id: str
    title: str = ""
    source: str = ""
    score: float = 0.0
    # Spec answers also say where in the spec, for which entity, and from which stage.
    spec_id: str = ""
    section_id: str = ""
    entity: str = ""
    stage: str = ""


@dataclass
class Answer:
    question: str
    pipeline: str
    answer: str
    citations: list[Citation] = field(default_factory=list)
    trace: dict = field(default_factory=dict)
    timings_ms: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON shape. The trace is plain data already, so it is not deep-copied."""
        return {"question": self.question, "pipeline": self.pipeline, "answer": self.answer,
                "citations": [asdict(c) for c in self.citations], "trace": self.trace,
                "timings_ms": self.timings_ms}


def check_question(question: str | None) -> str:
    """The question stripped; an empty one is refused."""
    if question is None or not question.strip():
        raise InputError("question: is empty")
    return question.strip()
