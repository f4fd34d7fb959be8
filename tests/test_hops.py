"""A second step read from what the first step's evidence lacks (``answer.hops``), and the
lexical pipeline taking it. Texts written for these tests."""

from __future__ import annotations

from ragkit.answer.hops import follow_up
from ragkit.answer.weighing import Weigher
from ragkit.config import LexicalConfig
from ragkit.corpus import Doc
from ragkit.pipelines.base import AskContext
from ragkit.pipelines.lexical import LexicalPipeline
from ragkit.pipelines.steps import StepTrace
from ragkit.retrieval.bm25 import BM25Index
from ragkit.text import Tokenizer

DOCS = [Doc("d1", "Mara Quill is a folk singer from Eastby. She recorded the single Copper Tide with her brother.",
            "Mara Quill"),
        Doc("d2", "The ballad was arranged by the Velm Quartet and sold 40,000 copies in its first year.",
            "Copper Tide"),
        Doc("d3", "Eastby is a harbour town. Its folk festival opens every June.", "Eastby"),
        Doc("d4", "Westby has a recording studio on its quay.", "Westby"),
        *(Doc(f"f{i}", f"The {town} folk club meets on {day}s and sells copies of its songbook.", f"{town} folk club")
          for i, (town, day) in enumerate([("Northby", "Monday"), ("Southby", "Tuesday"), ("Upby", "Friday"),
                                           ("Downby", "Sunday")]))]
QUESTION = "How many copies did the single recorded by the Eastby folk singer sell?"   # nests no description


def weigher(index=None):
    return Weigher.for_index(index) if index is not None else Weigher(tokenize=Tokenizer(lang="en"))


def test_the_evidence_that_lacks_the_answer_asks_for_its_bridge_with_the_open_words():
    found = follow_up(QUESTION, [DOCS[0].text], [DOCS[0].title], weigher(), answered=False)
    assert found is not None and found.bridge == "Copper Tide"
    assert found.missing == ("copies", "sell")      # the rest of the question the evidence already holds
    assert found.query == "Copper Tide copies sell" and 0 < found.share < 1
    assert found.to_dict()["query"] == "Copper Tide copies sell"


def test_no_second_step_where_the_evidence_answers_or_names_nothing_new():
    assert follow_up(QUESTION, [DOCS[0].text], [DOCS[0].title], weigher(), answered=True) is None
    # the text names only what the question gives, and what the text is about
    assert follow_up(QUESTION, ["Mara Quill is a folk singer from Eastby."], ["Mara Quill"], weigher(),
                     answered=False) is None
    assert follow_up(QUESTION, ["Nothing here bears on it."], [""], weigher(), answered=False) is None


def test_the_pipeline_reads_both_steps_for_the_question():
    index = BM25Index.build(DOCS, Tokenizer(lang="en"))
    config = LexicalConfig(k=1, steps=2, method="bm25", bridges=0)
    answer = LexicalPipeline().ask(QUESTION, (index, None, None, None), config, AskContext(None, False, None))
    steps = answer.trace.steps
    assert [s.step for s in steps] == [1, 2] and steps[0].hits == ("d1",)
    assert steps[0].follow_up.bridge == "Copper Tide" and steps[1].query == "Copper Tide copies sell"
    assert "d2" in steps[1].hits and all(s.ms >= 0 for s in steps)
    assert steps[0].answer_source == "evidence" and steps[0].short_answer is None
    assert steps[1].short_answer == "40,000 copies" == answer.to_dict()["trace"]["short_answer"]
    shown = answer.to_dict()["trace"]["steps"]      # the JSON keys, in the order traces have shown them
    assert list(shown[0]) == ["step", "query", "hits", "short_answer", "answer_source", "follow_up", "ms"]
    assert list(shown[1]) == ["step", "query", "hits", "short_answer", "answer_source", "ms"]
    assert [StepTrace.from_dict(s).to_dict() for s in shown] == shown
    one = LexicalPipeline().ask(QUESTION, (index, None, None, None), LexicalConfig(k=1, steps=1, method="bm25",
                                                                                    bridges=0),
                                AskContext(None, False, None))
    assert len(one.trace.steps) == 1 and one.to_dict()["trace"]["short_answer"] is None


def test_a_description_steps_trace_says_its_reach_and_whether_it_was_kept():
    step = StepTrace(1, "the gazette which printed it", ("d3",), None, "evidence", 1.5, reach=0.25, kept=False)
    data = step.to_dict()
    assert list(data) == ["step", "query", "hits", "short_answer", "answer_source", "reach", "ms", "kept"]
    assert data["kept"] is False and "follow_up" not in data and StepTrace.from_dict(data) == step
    kept = StepTrace(2, "who edited it", ("d1", "d2"), "Ana Ruiz", "model", 2.0, reach=1.0)
    assert "kept" not in kept.to_dict() and StepTrace.from_dict(kept.to_dict()) == kept
    looked = StepTrace(1, "q", ("d1",), looked_further=True)
    assert looked.to_dict()["follow_up"] is None and StepTrace.from_dict(looked.to_dict()) == looked
