"""``ragkit eval answers``: SQuAD-normalised exact match and F1, citations against gold
evidence, and the CLI over the real demo manuals."""

import json
import subprocess
import sys

import pytest

from ragkit.errors import InputError
from ragkit.eval.answers import (abstained, cited_documents, evaluate_answers, exact_match, holds_gold, load_questions,
                                 normalize_answer, token_f1)
from ragkit.pipelines.base import NOT_ENOUGH_VI, Answer

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


def test_refusals_are_abstentions():
    assert abstained(NOT_ENOUGH_VI)
    assert abstained(NOT_ENOUGH_VI + "\n\n(Câu trả lời của mô hình không được bằng chứng ủng hộ.)")
    assert abstained("I could not map this question to the graph: the question asks for 'hospitals', which "
                     "names no type or relation of the graph. Found in it: entities Gout (Disease); types none.")
    assert abstained("The evidence does not say who founded it.")
    refusal_core = {"passed": True, "core": 0, "claims": [{"verdict": "refusal"}, {"verdict": "supported"}]}
    assert abstained("Tài liệu chưa nêu rõ điều này. Máy phải tắt trước [1].", refusal_core)
    assert not abstained("Áp suất làm việc từ 6 đến 8 bar [1].")
    assert not abstained("Aspirin treats Rheumatoid Arthritis.", {"passed": True, "core": 0,
                                                                  "claims": [{"verdict": "supported"}]})


def test_an_abstention_is_right_only_when_the_evidence_lacks_the_gold_answer():
    evidence = ["Máy nén khí\nÁp suất làm việc từ 6 đến 8 bar."]
    assert holds_gold(evidence, ["6 đến 8 bar"])                # wrong to abstain: the evidence had it
    assert not holds_gold(evidence, ["10 bar"])                 # right to abstain
    assert holds_gold(["G. Stanley Hall founded it."], ["Stanley Hall"])   # normalised as the scores are
    assert not holds_gold(["The hallway was empty."], ["Hall"])             # whole words only
    assert not holds_gold([], ["Hall"])


class Replies:
    """A service whose answers are given: the text, the evidence, and the answer stage's check."""

    def __init__(self, *answers):
        self.answers = list(answers)

    def answer(self, request):
        from ragkit.answer.stage import Check, Outcome
        from ragkit.pipelines.base import Trace

        text, evidence, source = self.answers.pop(0)
        trace = Trace(outcome=Outcome(text, source, Check(True)))
        return Answer(request.question, "lexical", text, trace=trace, evidence=evidence)


def test_abstentions_are_counted_apart_from_the_answers():
    items = [{"id": str(i), "question": f"Q{i}?", "answers": ["6 đến 8 bar"], "evidence": None} for i in range(4)]
    service = Replies(("Từ 6 đến 8 bar [1].", ["Áp suất 6 đến 8 bar."], "model"),
                      (NOT_ENOUGH_VI, ["Áp suất 6 đến 8 bar."], "model"),       # the evidence had it
                      (NOT_ENOUGH_VI, ["Dầu bôi trơn loại SAE 30."], "model"),  # it did not
                      ("Dùng dầu SAE 30 [1].", ["Dầu bôi trơn loại SAE 30."], "evidence"))
    result = evaluate_answers(items, service, {}, progress=False)
    rows = result["details"]
    assert [r["abstained"] for r in rows] == [False, True, True, False]
    assert [r.get("abstention_right") for r in rows] == [None, False, True, None]
    assert (result["abstained"], result["abstention_right"], result["abstention_wrong"]) == (2, 1, 1)
    right = round(token_f1("Từ 6 đến 8 bar.", "6 đến 8 bar"), 4)    # scored without its "[1]"
    assert result["answered"] == 2 and result["answered_f1"] == pytest.approx(right / 2, abs=1e-4)
    assert result["f1"] == pytest.approx(right / 4, abs=1e-4)


def test_a_yes_or_no_gold_answer_is_left_out_of_the_gold_in_evidence_shares():
    """"Yes" or "no" is read off two facts and quoted by no evidence: such a question counts
    in neither gold share, and abstaining on one is wrong when the reader saw every gold
    document, right when it missed one."""
    from ragkit.answer.stage import Check, Outcome
    from ragkit.pipelines.base import Citation, Trace

    class Cited:
        def __init__(self, *answers):
            self.answers = list(answers)

        def answer(self, request):
            text, evidence, cited = self.answers.pop(0)
            return Answer(request.question, "lexical", text, trace=Trace(outcome=Outcome(text, "model", Check(True))),
                          evidence=evidence, citations=[Citation(n, d) for n, d in enumerate(cited, 1)])

    facts = ["The Vesna press is made in Ostrava.", "The Kora lathe is made in Brno."]
    items = [{"id": "a", "question": "Is the Vesna press made in Ostrava?", "answers": ["Yes"], "evidence": ["d1"]},
             {"id": "b", "question": "Are both made in Brno?", "answers": ["no"], "evidence": ["d1", "d2"]},
             {"id": "c", "question": "Are both made in Ostrava?", "answers": ["no"], "evidence": ["d1", "d2"]},
             {"id": "d", "question": "Where is the Vesna press made?", "answers": ["Ostrava"], "evidence": ["d1"]},
             {"id": "e", "question": "Is the Kora lathe a No Name part?", "answers": ["No Name"], "evidence": None}]
    service = Cited(("Yes [1].", facts[:1], ["d1"]),
                    ("The documents do not hold enough information to answer.", facts, ["d1", "d2"]),   # saw both
                    ("The documents do not hold enough information to answer.", facts[:1], ["d1"]),     # missed d2
                    ("Ostrava [1].", facts[:1], ["d1"]),
                    ("Brno [1].", facts[1:], ["d2"]))
    result = evaluate_answers(items, service, {}, progress=False)
    rows = result["details"]
    assert [r["gold_in_evidence"] for r in rows] == [None, None, None, True, False]   # "No Name" is a span
    assert [r["gold_in_retrieved"] for r in rows] == [None, None, None, True, False]
    assert result["gold_checked"] == 2 and result["gold_in_evidence"] == 0.5
    assert [r.get("abstention_right") for r in rows] == [None, False, True, None, None]
    assert (result["abstained"], result["abstention_right"], result["abstention_wrong"]) == (2, 1, 1)


def test_the_kg_pipeline_abstains_rightly_on_what_the_graph_cannot_map(nx_kg):
    """The real kg pipeline behind the real Service: a question whose type the graph lacks
    is an abstention, and a right one (no evidence holds the gold answer)."""
    from ragkit.service import Service, Sources

    items = [{"id": "k1", "question": "What does Aspirin inhibit?", "answers": ["PTGS1"], "evidence": None},
             {"id": "k2", "question": "Which hospitals treat gout?", "answers": ["Mayo Clinic"], "evidence": None}]
    service = Service(Sources(kg_store=str(nx_kg.store.path)))
    try:
        result = evaluate_answers(items, service, {"pipeline": "kg", "no_llm": True}, progress=False)
    finally:
        service.close()
    assert [r["abstained"] for r in result["details"]] == [False, True]
    assert result["details"][1]["abstention_right"] is True
    assert (result["answered"], result["abstained"], result["abstention_right"]) == (1, 1, 1)


def test_answers_carry_the_evidence_their_answer_stage_had(nx_kg, manual_index):
    from ragkit.pipelines.kg import ask_kg
    from ragkit.pipelines.lexical import ask_lexical

    kg = ask_kg("What does Aspirin inhibit?", nx_kg, use_llm=False)
    assert holds_gold(kg.evidence, ["PTGS1"]) and "evidence" not in kg.to_dict()
    lexical = ask_lexical("Áp suất làm việc thường của máy nén khí piston là bao nhiêu?", manual_index, use_llm=False)
    assert holds_gold(lexical.evidence, ["6 đến 8 bar"])


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


@pytest.mark.parametrize("line, answers", [
    ('{"question": "Q?", "answers": "Paris"}', ["Paris"]),                 # one answer, not five letters
    ('{"question": "Q?", "answers": [1969, "1969 AD"]}', ["1969", "1969 AD"]),
    ('{"question": "Q?", "answers": [], "answer": 7, "answer_aliases": "seven"}', ["7", "seven"]),
    ('{"question": "Q?", "answer": "A", "answer_aliases": 3}', ["A", "3"]),
])
def test_gold_answers_of_every_shape(tmp_path, line, answers):
    path = tmp_path / "q.jsonl"
    path.write_text(line + "\n")
    assert load_questions(path)[0]["answers"] == answers


@pytest.mark.parametrize("line", ['{"question": "Q?", "answers": {"text": "A"}}',
                                  '{"question": "Q?", "answer": ["A"], "answers": null}',
                                  '{"question": "Q?", "answers": [["A"]]}'])
def test_an_answer_that_is_a_list_or_object_is_one_line(tmp_path, line):
    path = tmp_path / "q.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=rf"^questions {path}: item 1: an answer must be text or a number"):
        load_questions(path)


@pytest.mark.parametrize("text", ["null", "3", '"text"', "[]"])
def test_a_questions_file_of_one_plain_value_holds_no_questions(tmp_path, text):
    from ragkit.eval.mcq import load_mcq

    path = tmp_path / "q.json"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"^questions {path}: holds no questions"):
        load_questions(path)
    with pytest.raises(InputError, match=rf"^questions {path}: holds no questions"):
        load_mcq(path)


@pytest.mark.slow
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
    assert data["abstained"] == 0 and data["answered"] == 15 and data["answered_f1"] == data["f1"]
    assert all(r["abstained"] is False for r in data["details"])
    assert data["contains_gold"] >= 0.9 and data["citation_recall"] >= 0.9   # the evidence holds the answers
    assert all(r["em"] == 0.0 for r in data["details"])                       # quotes are not short answers
    bad = run("eval", "answers", "--questions", tmp_path / "none.jsonl", "--index", index)
    assert bad.returncode == 3 and bad.stderr.count("\n") == 1


@pytest.mark.slow
def test_musique_questions_with_their_gold_evidence(tmp_path):
    from ragkit.eval.datasets import musique_to_questions

    base = shared("multihop_passages")
    path = musique_to_questions(base / "musique_beir", base / "musique_questions.json", tmp_path / "q.jsonl")
    items = load_questions(path)
    assert len(items) == 100 and items[0]["answers"][0] == "G. Stanley Hall"
    assert all(2 <= len(i["evidence"]) <= 4 for i in items)
