"""The relation walk from one anchor in graph RAG: question words in the order a chain is
written, the monotone alignment, the beam over relation sequences (hand-built graphs with
the real MiniLM embedder), two-hop answers on the demo graph, and three hops on PathQuestion's
KB from ../shared."""

import sys

import numpy as np
import pytest

from ragkit.multihop.graph import AskedWords, GraphQueryParams, GraphRAG, monotone_alignment, question_units

from .conftest import ROOT, shared, write_edges


# --------------------------------------------------------------------------- word order
def test_words_joined_by_or_are_one_unit():
    assert question_units("Who is the father or mother of the wife?") == ["father or mother", "wife"]
    assert question_units("Is it red or?") == ["red"]


@pytest.mark.parametrize("question, outward", [
    ("What is the nationality of Ada Lind's son's wife?", ["son", "wife", "nationality"]),
    ("Who was the child of Ada Lind married to?", ["child", "married"]),
    ("Which country is the son of the father of Ada Lind a citizen of?", ["father", "son", "country", "citizen"]),
    ("the parent of ada lind 's son ?", ["son", "parent"]),
    ("Where did Ada Lind's marriage partner's kid die?", ["marriage", "partner", "kid", "die"]),
])
def test_hops_read_outward_from_the_anchor_name(question, outward):
    words = AskedWords.read(question, ["Ada Lind"])
    assert words.ordered and words.outward() == outward


def test_a_name_not_in_the_question_leaves_word_order_out():
    words = AskedWords.read("What is the nationality of Ada's son?", ["Bo Lind"])
    assert not words.ordered and words.outward() == ["nationality", "ada", "son"]


def test_monotone_alignment_keeps_the_order():
    crossing = np.array([[0.0, 1.0], [1.0, 0.0]])     # hop 1 ↔ word 2, hop 2 ↔ word 1
    assert monotone_alignment(crossing) == 1.0           # only one of the two in order
    assert monotone_alignment(np.eye(3)) == 3.0
    assert monotone_alignment(np.array([[0.2, 0.9, 0.1]])) == pytest.approx(0.9)


# --------------------------------------------------------------------------- the beam
@pytest.fixture(scope="module")
def mentors(tmp_path_factory):
    """Ada's own nationality and her spouse's match words of the question better at the
    first hop than her mentor does, but only mentor → spouse → nationality uses them all."""
    tmp = tmp_path_factory.mktemp("mentors")
    rows = [("Ada_Lind", "nationality", "Sweden"), ("Ada_Lind", "spouse", "Bo_Berg"),
            ("Bo_Berg", "nationality", "Finland"), ("Ada_Lind", "mentor", "Cy_Moss"),
            ("Cy_Moss", "spouse", "Di_Park"), ("Di_Park", "nationality", "Norway"),
            ("Cy_Moss", "nationality", "Iceland")]
    GraphRAG.build(write_edges(tmp / "edges.csv", rows), tmp / "g", progress=False)
    return GraphRAG.load(tmp / "g")


@pytest.mark.slow
def test_three_hops_need_the_beam(mentors):
    question = "What is the nationality of the wife of Ada Lind's teacher?"
    result = mentors.query(question)
    assert result["paths"][0]["relations"] == ["mentor", "spouse", "nationality"]
    assert result["answer"] == "Norway"
    assert result["paths"][0]["text"] == ("Ada Lind -[mentor]-> Cy Moss ; Cy Moss -[spouse]-> Di Park ; "
                                          "Di Park -[nationality]-> Norway")
    # keeping only the best first hop follows nationality and stops at Ada's own
    greedy = mentors.query(question, GraphQueryParams(beam_width=1))
    assert greedy["answer"] != "Norway"


@pytest.mark.slow
def test_the_walk_is_timed_by_stage(mentors):
    from ragkit.runtime.profiler import Profiler

    profiler = Profiler()
    mentors.query("Who is the wife of Ada Lind's teacher?", profiler=profiler)
    assert {"relation_beam", "sequence_ranking", "path_follow"} <= set(profiler.as_dict())


def test_beam_width_must_be_positive():
    from ragkit.errors import InputError

    with pytest.raises(InputError, match="beam_width"):
        GraphQueryParams(beam_width=0)


# --------------------------------------------------------------------------- two hops unchanged
# (question, relations, answer) as main's relation walk gave them before the beam
NOBEL_TWO_HOPS = [
    ("What is the nationality of Marie Curie's spouse?", ["spouse", "nationality"], "France"),
    ("Where was the parent of Aage Bohr born?", ["parents", "place_of_birth"], "Copenhagen"),
    ("In which country was William Lawrence Bragg born?", ["place_of_birth", "country"], "Australia"),
    ("Who is the husband of Marie Curie's daughter?", ["children", "spouse"], "Frédéric_Joliot-Curie"),
    ("Which country is the birthplace of Albert Einstein in?", ["place_of_birth", "country"], "Germany"),
    ("Who was married to the daughter of Pierre Curie?", ["children", "spouse"], "Frédéric_Joliot-Curie"),
]


@pytest.mark.slow
def test_two_hop_answers_on_the_demo_graph_are_unchanged(tmp_path):
    GraphRAG.build(ROOT / "data" / "nobel_edges.csv", tmp_path / "g", progress=False)
    rag = GraphRAG.load(tmp_path / "g")
    for question, relations, answer in NOBEL_TWO_HOPS:
        result = rag.query(question)
        assert (result["paths"][0]["relations"], result["answer"]) == (relations, answer), question
    assert rag.query("Which prize did the daughter of Pierre Curie win?")["answer"] == "Nobel_Prize_in_Chemistry"


# --------------------------------------------------------------------------- PathQuestion's KB
@pytest.mark.slow
def test_three_hop_questions_on_pathquestion_kb(tmp_path):
    """Three-hop questions composed from the shared KB by bench/threehop.py (development
    part): the walk must answer at least as many as main's did (0.8913)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from threehop import questions, read_kb, write_edges as write_kb

    triples = read_kb(shared("pathquestion", "2H-kb.txt"))
    items = [q for q in questions(triples, 3, 2, 200) if q["split"] == "dev"]
    assert len(items) >= 100 and all(len(q["relations"]) == 3 for q in items)
    GraphRAG.build(write_kb(triples, tmp_path / "edges.csv"), tmp_path / "g", progress=False)
    rag = GraphRAG.load(tmp_path / "g")
    hits = sum(rag.query(q["question"])["answer"] in q["answers"] for q in items)
    assert hits / len(items) >= 0.89
