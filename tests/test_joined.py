"""Yes/no questions about two joined items: the question read (ragkit.text.question.joined)
and the verdict read from the evidence of each item (ragkit.answer.both)."""

from __future__ import annotations

import pytest

from ragkit.answer.both import judge_joined, sentences_about
from ragkit.text import tokenizer_for
from ragkit.text.question import Joined, joined

TEXTS = ["Velm Theatre is a listed building in Ostrava, opened in 1902.",
         "Marlow Bridge is a road bridge over the Tarn, built in 1911.",
         "Nantel is a city in Jorvik province. It has two million people.",
         "Kessa is a city in Alvar province.",
         "Orrin is a town in Jorvik province, on the coast."]
TITLES = ["Velm Theatre", "Marlow Bridge", "Nantel", "Kessa", "Orrin"]
TOKENIZE = tokenizer_for("en")


@pytest.mark.parametrize("question, expected", [
    ("Are Velm Theatre and Marlow Bridge both listed buildings?",
     Joined(("Velm Theatre", "Marlow Bridge"), predicate="listed buildings")),
    ("Were Ana Holt and Piet van der Berg members of the same band?",
     Joined(("Ana Holt", "Piet van der Berg"), shared="band")),
    ("Did the Corvane Group and Tidewell start in the same city?",
     Joined(("Corvane Group", "Tidewell"), shared="city")),
    ("Máy tiện và máy phay có cùng điện áp không?", Joined(("Máy tiện", "máy phay"), shared="điện áp")),
    ("Máy tiện và máy phay đều dùng điện 380 V phải không?",
     Joined(("Máy tiện", "máy phay"), predicate="dùng điện 380 V")),
    ("Is the AMF a network function?", None),
    ("Which opened first, Velm Theatre or Marlow Bridge?", None),
])
def test_joined_reads_the_items_and_what_is_asked_of_them(question, expected):
    assert joined(question) == expected


@pytest.mark.parametrize("question, verdict", [
    ("Are Velm Theatre and Marlow Bridge both listed buildings?", "no"),     # the bridge's text says otherwise
    ("Are Nantel and Kessa both cities?", "yes"),
    ("Are Nantel and Kessa in the same province?", "no"),
    ("Are Nantel and Orrin in the same province?", "yes"),
    ("Are Nantel and Kessa both ports?", None),                               # neither text says: no verdict
    ("Are Nantel and Tarvos both cities?", None),                             # nothing speaks of Tarvos
])
def test_the_verdict_stands_on_what_the_evidence_says_of_each_item(question, verdict):
    found = judge_joined(joined(question), TEXTS, TITLES, TOKENIZE)
    assert (found.text if found else None) == verdict
    if found is not None:
        assert found.sentence in TEXTS[found.item - 1]


def test_the_sentences_about_an_item_are_its_own_text_s_or_those_naming_it():
    assert sentences_about("Nantel", TEXTS, TITLES) == [("Nantel is a city in Jorvik province.", 3),
                                                        ("It has two million people.", 3)]
    assert sentences_about("Jorvik", TEXTS, TITLES) == [("Nantel is a city in Jorvik province.", 3),
                                                        ("Orrin is a town in Jorvik province, on the coast.", 5)]


def test_a_model_yes_against_the_evidence_fails_the_check_and_the_evidence_answers(tmp_path):
    from ragkit.config import LexicalConfig
    from ragkit.corpus import Doc
    from ragkit.pipelines.lexical import ask_lexical
    from ragkit.retrieval.bm25 import BM25Index

    index = BM25Index.for_corpus([Doc(f"d{i}", text, title) for i, (text, title) in enumerate(zip(TEXTS, TITLES))],
                                 lang="en")
    out = ask_lexical("Are Nantel and Kessa in the same province?", index, config=LexicalConfig(k=4), use_llm=False)
    trace = out.to_dict()["trace"]
    assert trace["joined"]["verdict"] == "no" and trace["joined"]["read"] == {"Nantel": "jorvik", "Kessa": "alvar"}
    assert out.answer.splitlines()[0] == "no" and trace["short_answer"] == "no"


def test_the_check_rejects_a_model_answer_the_items_evidence_contradicts():
    from ragkit.answer.reading import answer_shape
    from ragkit.answer.weighing import Weigher
    from ragkit.answer.stage import grounding_check
    from ragkit.answer.extractive import reading_check

    question = "Are Nantel and Kessa in the same province?"
    verdict = judge_joined(joined(question), TEXTS, TITLES, TOKENIZE)
    judge = reading_check(grounding_check(TEXTS, question), question, answer_shape(question), TEXTS, None, 0.8,
                          Weigher(), together=verdict)
    wrong = judge("Yes\nNantel is a city in Jorvik province. [3]")
    assert not wrong.passed and "the evidence says 'no'" in wrong.reason
    assert judge("No\nKessa is a city in Alvar province. [4]").passed
    assert not judge("Yes").passed          # a bare yes too


@pytest.mark.parametrize("question, language", [
    ("Are King Halvor and Géza Marovic both painters?", "en"),    # an accented name in an English question
    ("Who is Nguyễn Văn An?", "en"),
    ("Máy tiện và máy phay có cùng điện áp không?", "vi"),
    ("LOTO là gì?", "vi"),
    ("cac buoc van hanh may phay", "unknown"),
])
def test_question_language(question, language):
    from ragkit.answer.reading import answer_shape
    from ragkit.text.question import question_language

    assert question_language(question) == language
    if language == "en" and question.startswith("Are"):
        assert answer_shape(question).kind == "yesno"
