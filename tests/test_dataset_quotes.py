"""ragkit's code quotes no benchmark question: a rule written from a dataset's own sentences
fits that dataset and nothing else. Any run of six words of a question in the public
datasets (MuSiQue, HotpotQA, PathQuestion, ALQAC, SciFact's queries) that also appears in a
file under ``ragkit/``, ``docs/`` or ``notebooks/`` fails this test with the file and the words."""

from __future__ import annotations

import json
import re

from .conftest import ROOT, shared

RUN = 6


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _runs(text: str) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i:i + RUN]) for i in range(len(words) - RUN + 1)}


def dataset_questions() -> list[str]:
    """Every question (or query, or statement) of the public datasets ragkit benchmarks on."""
    passages = shared("multihop_passages")
    questions: list[str] = []
    for name in ("musique_questions.json", "hotpotqa_dev_questions.json"):
        questions += [q["question"] for q in json.loads((passages / name).read_text(encoding="utf-8"))]
    for beir in ("musique_beir", "hotpotqa_dev_beir"):
        questions += [json.loads(line)["text"] for line in (passages / beir / "queries.jsonl").open(encoding="utf-8")]
    for line in shared("pathquestion", "PQ-2H.txt").open(encoding="utf-8"):
        questions.append(line.split("\t", 1)[0])
    for item in json.loads(shared("vi_legal", "alqac_102023_train.json").read_text(encoding="utf-8")):
        questions.append(str(item.get("text") or item.get("statement") or ""))
    questions += [json.loads(line)["text"] for line in shared("scifact", "queries.jsonl").open(encoding="utf-8")]
    return [q for q in questions if q.strip()]


def quoted_runs(root, runs: set[tuple[str, ...]]) -> list[str]:
    """``file: words`` for each six-word run of ``runs`` that a file under ``root`` holds."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".py", ".json", ".txt", ".md", ".ipynb") or not path.is_file():
            continue
        for run in sorted(_runs(path.read_text(encoding="utf-8", errors="replace")) & runs):
            found.append(f"{path.relative_to(root)}: {' '.join(run)}")
    return found


def test_the_package_quotes_no_dataset_question():
    questions = dataset_questions()
    assert len(questions) > 3000           # every set was read
    runs = set().union(*map(_runs, questions))
    assert quoted_runs(ROOT / "ragkit", runs) == []
    # nor do the manual and the notebooks: their examples are written for ragkit too
    assert quoted_runs(ROOT / "docs", runs) + quoted_runs(ROOT / "notebooks", runs) == []


def test_a_quoted_question_is_found(tmp_path):
    """The check finds a question quoted inside a comment, whatever its case and punctuation."""
    question = dataset_questions()[0]
    words = _words(question)
    assert len(words) >= RUN
    (tmp_path / "rules.py").write_text(f"# as in {' '.join(words).upper()}!\nx = 1\n", encoding="utf-8")
    (tmp_path / "other.py").write_text("# a sentence written for ragkit, six words and more\n", encoding="utf-8")
    found = quoted_runs(tmp_path, _runs(question))
    assert found and all("rules.py" in line for line in found)
