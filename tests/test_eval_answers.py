"""``ragkit eval answers``: SQuAD-normalised exact match and F1, citations against gold
evidence, and the CLI over the real demo manuals."""

import json
import subprocess
import sys

import pytest

from ragkit.errors import InputError
from ragkit.eval.answers import cited_documents, exact_match, load_questions, normalize_answer, token_f1

from .conftest import ROOT, shared


def test_squad_normalisation_and_scores():
    assert normalize_answer("The  G. Stanley Hall!") == "g stanley hall"
    assert exact_match("the Stanley Hall.", "Stanley Hall") == 1.0
    assert token_f1("G. Stanley Hall", "Stanley Hall") == pytest.approx(0.8)
    assert token_f1("nothing shared", "Stanley Hall") == 0.0
    assert token_f1("6 đến 8 bar", "từ 6 đến 8 bar") == pytest.approx(2 * 1.0 * 0.8 / 1.8)


def test_cited_documents_follow_the_answers_markers():
    citations = [{"id": 1, "doc_id": "a.md#1"}, {"id": 2, "doc_id": "b.md#3"}, {"id": 3, "doc_id": "a.md#2"}]
    assert cited_documents("Claim [2]. Another [2][3].", citations) == ["b.md#3", "a.md#2"]
    assert cited_documents("No markers.", citations) == ["a.md#1", "b.md#3", "a.md#2"]


def test_question_files_are_checked(tmp_path):
    good = tmp_path / "q.jsonl"
    good.write_text('{"question": "Q?", "answer": "A", "answer_aliases": ["B"]}\n')
    assert load_questions(good)[0]["answers"] == ["A", "B"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Q?"}\n')
    with pytest.raises(InputError, match="item 1 has no 'answers'"):
        load_questions(bad)
    with pytest.raises(InputError, match="no such file"):
        load_questions(tmp_path / "missing.jsonl")


def test_cli_on_the_vietnamese_manual_questions(tmp_path):
    index = tmp_path / "index"
    run = lambda *a: subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, a)], capture_output=True,
                                    text=True, cwd=ROOT)
    assert run("index", "build", "--corpus", ROOT / "data" / "manuals", "--out", index).returncode == 0
    out = run("eval", "answers", "--questions", ROOT / "data" / "manual_questions.jsonl", "--index", index,
              "--no-llm", "--json", "--details")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["n"] == 15 and data["answer_source"] == {"evidence": 15}
    assert data["contains_gold"] >= 0.9 and data["citation_recall"] >= 0.9   # the evidence holds the answers
    assert all(r["em"] == 0.0 for r in data["details"])                       # quotes are not short answers
    bad = run("eval", "answers", "--questions", tmp_path / "none.jsonl", "--index", index)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


@pytest.mark.slow
def test_musique_questions_with_their_gold_evidence(tmp_path):
    from ragkit.eval.datasets import musique_to_questions

    base = shared("multihop_passages")
    path = musique_to_questions(base / "musique_beir", base / "musique_questions.json", tmp_path / "q.jsonl")
    items = load_questions(path)
    assert len(items) == 100 and items[0]["answers"][0] == "G. Stanley Hall"
    assert all(2 <= len(i["evidence"]) <= 4 for i in items)
