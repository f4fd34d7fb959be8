"""A pipeline kept outside ragkit, for the test that a pipeline is one module and one registry
line: it answers from a text file of notes, one per line, by the words a note shares with the
question."""

from __future__ import annotations

from pathlib import Path

from ragkit.answer.stage import Check, Draft
from ragkit.pipelines.base import Citation, Gathered, Option, Pipeline, Source, Trace


class NotesPipeline(Pipeline):
    name = "notes"
    sources = (Source("notes", "--notes", "a text file of notes, one per line", "write one"),)
    options = (Option("keep", int, 2, "notes kept"),
               Option("shout", bool, False, "the answer in capitals"))
    sample_questions = ("Which note mentions the pump?",)
    size_unit, sizes = "notes", (2, 4, 8)

    def build_demo(self, data: Path, out: Path, progress=None) -> dict[str, str]:
        (out / "notes.txt").write_text("The pump needs oil every week.\n", encoding="utf-8")
        return {"notes": str(out / "notes.txt")}

    def build_sized(self, size: int, data: Path, workdir: Path):
        path = workdir / f"notes-{size}.txt"
        path.write_text("".join(f"Note {i} is about the pump.\n" for i in range(size)), encoding="utf-8")
        return {"notes": str(path)}, self.sample_questions

    def load(self, where: str, sources) -> list[str]:
        return [line.strip() for line in Path(where).read_text(encoding="utf-8").splitlines() if line.strip()]

    def config_from(self, request) -> dict:
        return {"keep": request.keep, "shout": request.shout}

    def gather(self, question: str, notes: list[str], config, ctx) -> Gathered:
        config = config or {"keep": 2, "shout": False}
        with ctx.profiler.stage("match"):
            words = {w.strip("?.,").lower() for w in question.split() if len(w.strip("?.,")) >= 4}
            hits = [n for n in notes if words & {w.strip(".,").lower() for w in n.split()}][: config["keep"]]
        text = " ".join(f"{h} [{i}]" for i, h in enumerate(hits, 1)) or "No note matches."
        if config["shout"]:
            text = text.upper()
        citations = [Citation(id=i, doc_id=f"notes#{i}", title=h[:30]) for i, h in enumerate(hits, 1)]
        return Gathered(Draft(text, check=lambda answer: Check(True, "", {}), evidence=hits), citations, Trace())
