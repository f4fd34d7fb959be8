"""Questions that offer a choice between two items, and the check's reading of what an
answer stands on (references within a text, values, refusals, the asked kind). Sentences
written for these tests."""

from __future__ import annotations

from ragkit.answer.choice import choose
from ragkit.answer.grounding import check_claims, is_refusal, resolve_reference
from ragkit.answer.reading import ShortAnswer, answer_shape, of_asked_kind, trim_short_answer
from ragkit.answer.stage import Check
from ragkit.config import LexicalConfig
from ragkit.corpus import Doc
from ragkit.pipelines.base import AskContext
from ragkit.answer.extractive import reading_check
from ragkit.pipelines.lexical import LexicalPipeline
from ragkit.retrieval.bm25 import BM25Index
from ragkit.text.question import alternatives, chosen, read_question

TEXTS = ["Marlow Bridge crosses the river Vell at Eastby. It opened on 12 March 1931.",
         "The Velm Theatre is a playhouse on the Upper Velm. It opened in 1908 and seats 900 people.",
         "Eastby Hall seats 1,200 people."]
TITLES = ["Marlow Bridge", "Velm Theatre", "Eastby Hall"]


def test_alternatives_are_read_from_the_joiner_and_the_comma():
    assert alternatives("Which opened first, the Velm Theatre or Marlow Bridge?") == ("Velm Theatre", "Marlow Bridge")
    assert alternatives("Cái nào nặng hơn, máy tiện hay máy phay?") == ("máy tiện", "máy phay")
    assert alternatives('Which came out first "Coast Notes" or "Harbor Weekly"?') == ("Coast Notes", "Harbor Weekly")
    assert alternatives("When was the company founded or renamed?") == ()
    assert alternatives("What is the capital of Velmora?") == ()
    assert chosen("Marlow Bridge opened first", ("Velm Theatre", "Marlow Bridge")) == "Marlow Bridge"
    assert chosen("Quill", ("Mara Quill", "Ilse Brandt")) == "Mara Quill"
    assert chosen("both of them", ("Mara Quill", "Ilse Brandt")) is None


def test_the_evidence_chooses_by_the_stated_values():
    offered = ("Velm Theatre", "Marlow Bridge")
    first = choose("Which opened first, the Velm Theatre or Marlow Bridge?", offered, TEXTS, TITLES)
    assert first.text == "Velm Theatre" and first.item == 2 and "1908" in first.sentence
    later = choose("Which opened later, the Velm Theatre or Marlow Bridge?", offered, TEXTS, TITLES)
    assert later.text == "Marlow Bridge"
    seats = choose("Which seats more people, the Velm Theatre or Eastby Hall?", ("Velm Theatre", "Eastby Hall"),
                   TEXTS, TITLES)
    assert seats.text == "Eastby Hall" and seats.values == {"Velm Theatre": "900.0", "Eastby Hall": "1200.0"}
    assert choose("Which is nicer, the Velm Theatre or Marlow Bridge?", offered, TEXTS, TITLES) is None
    assert choose("Which opened first, the Velm Theatre or Copper Road?", ("Velm Theatre", "Copper Road"),
                  TEXTS, TITLES) is None      # no value for one item: no choice


def test_a_choice_question_is_answered_with_an_offered_item():
    docs = [Doc(f"d{i}", text, title) for i, (text, title) in enumerate(zip(TEXTS, TITLES), 1)]
    question = "Which opened first, the Velm Theatre or Marlow Bridge?"
    answer = LexicalPipeline().ask(question, (BM25Index.build(docs), None, None, None), LexicalConfig(k=3, steps=1),
                                   AskContext(None, False, None))
    assert answer.to_dict()["trace"]["short_answer"] == "Velm Theatre"
    assert answer.trace.choice["offered"] == ["Velm Theatre", "Marlow Bridge"]
    shape = answer_shape(question)
    offered = read_question(question).alternatives
    assert trim_short_answer("The Velm Theatre opened first", shape, TEXTS, question, offered) == "Velm Theatre"
    check = reading_check(lambda text: None, question, shape, TEXTS, None, 1.0, None, ("Velm Theatre", "Marlow Bridge"))
    verdict = check("Eastby\nThe river Vell runs at Eastby [1].")
    assert not verdict.passed and "none of the items" in verdict.reason
    # where the evidence states a value of each item, the model's choice must be the one they make
    offered = ("Velm Theatre", "Marlow Bridge")
    picked = choose(question, offered, TEXTS, TITLES)
    found = ShortAnswer(picked.text, picked.item, picked.sentence, 1.0, 1.0)
    valued = reading_check(lambda text: Check(True, ""), question, shape, TEXTS, found, 1.0, None, offered)
    wrong = valued("Marlow Bridge\nMarlow Bridge opened on 12 March 1931 [1].")
    assert not wrong.passed and "choose 'Velm Theatre'" in wrong.reason
    assert valued("Velm Theatre\nThe Velm Theatre opened in 1908 [2].").passed


def test_a_sentence_that_opens_with_a_reference_speaks_of_its_texts_subject():
    assert resolve_reference("It opened in 1908.", "Velm Theatre") == "Velm Theatre opened in 1908."
    assert resolve_reference("Its stage is small.", "Velm Theatre") == "Velm Theatre 's stage is small."
    assert resolve_reference("The company employs 340 people.", "Tidewell Foods") == \
        "Tidewell Foods employs 340 people."
    assert resolve_reference("Mara Quill wrote it.", "Velm Theatre") is None
    assert resolve_reference("It opened in 1908.", "") is None
    evidence = ["Tidewell Foods\nTidewell Foods makes tinned fish. The company employs 340 people.",
                "Corvane Shipping\nCorvane Shipping carries freight. Its chief executive is Ilse Marren."]
    assert check_claims("Tidewell Foods employs 340 people [1].", evidence).passed
    assert check_claims("The chief executive of Corvane Shipping is Ilse Marren [2].", evidence).passed
    # another entity's sentence does not answer for the asked one
    assert not check_claims("The chief executive of Tidewell Foods is Ilse Marren [2].", evidence,
                            "Who is the chief executive of Tidewell Foods?").passed
    assert not check_claims("Corvane Shipping employs 340 people [1].", evidence).passed


def test_numbers_are_values_and_refusals_are_read_by_their_grammar():
    evidence = ["Eastby\nEastby is a market town with a population of 8,200."]
    assert check_claims("Eastby has a population of 8200 [1].", evidence).passed
    assert not check_claims("Eastby has a population of 8,400 [1].", evidence).passed
    assert is_refusal("None of the passages says who founded Tidewell Foods.")
    assert is_refusal("The documents name nobody as the founder of Tidewell Foods.")
    assert not is_refusal("No bridge in Eastby is older than Marlow Bridge.")


def test_a_short_answer_is_of_the_asked_kind():
    assert not of_asked_kind("1879", answer_shape("Who founded Greyfen Brewery?"))
    assert of_asked_kind("Ansel Ward", answer_shape("Who founded Greyfen Brewery?"))
    assert not of_asked_kind("Ansel Ward", answer_shape("In which year was Greyfen Brewery founded?"))
    assert of_asked_kind("when the pressure is reached", answer_shape("When is the valve opened?"))
    assert of_asked_kind("12 March 1931", answer_shape("When did Marlow Bridge open?"))
    assert of_asked_kind("January", answer_shape("In which month is the fair held?"))
    assert of_asked_kind("January", answer_shape("What month is the fair held in?"))
    assert not of_asked_kind("Saltmere", answer_shape("How many people work at Tidewell Foods?"))
    assert of_asked_kind("340", answer_shape("How many people work at Tidewell Foods?"))


def test_a_pair_set_off_by_between_is_offered_at_either_end():
    assert alternatives("Between Ann Corrow and Bo Kestel, which painter lived longer?") == ("Ann Corrow", "Bo Kestel")
    assert alternatives("Which bridge is longer, between Marlow Bridge and the Tay Span?") == ("Marlow Bridge",
                                                                                             "Tay Span")
    assert alternatives("Giữa máy tiện và máy phay, máy nào nặng hơn?") == ("máy tiện", "máy phay")
    assert alternatives("What is the distance between Eastby and Westby?") == ()      # no choice: a distance
    assert alternatives("Which river runs between Eastby and Westby?") == ()


FILLER = [Doc(f"f{i}", f"The Velm Theatre programme of week {i} lists plays that opened first in spring.",
              f"Programme {i}") for i in range(6)]


def test_each_compared_item_brings_its_own_document():
    from ragkit.answer.bridges import item_documents

    docs = [Doc(f"d{i}", text, title) for i, (text, title) in enumerate(zip(TEXTS, TITLES), 1)]
    index = BM25Index.build(docs + FILLER)
    found = item_documents(("Velm Theatre", "Marlow Bridge"), ["Velm Theatre", "Programme 1"], index.titled)
    assert [(item, doc.doc_id) for item, doc in found] == [("Marlow Bridge", "d1")]     # the theatre's is held
    searched = item_documents(("Eastby",), [], lambda _: None, lambda name: index.search(name, k=3))
    assert [doc.doc_id for _, doc in searched] == ["d3"]        # the first hit whose title writes the item
    assert item_documents(("Copper Road",), [], index.titled, lambda name: index.search(name, k=3)) == []
    # through the pipeline: the programmes outrank the bridge's page, which still joins the evidence first
    question = "Which opened first, the Velm Theatre or Marlow Bridge?"
    answer = LexicalPipeline().ask(question, (index, None, None, None), LexicalConfig(k=2, steps=2, method="bm25"),
                                   AskContext(None, False, None))
    assert answer.trace.item_documents == [{"item": "Velm Theatre", "doc_id": "d2"}]
    assert answer.trace.selected == ["d2", "d1"]       # the theatre's page first; the programme gave way
    assert answer.to_dict()["trace"]["short_answer"] == "Velm Theatre"
    assert len(answer.trace.steps) <= 1         # a compared pair takes no description step


# Two depots, each described in a short list where the number asked about is not the first.
DEPOTS = ["Address: 31 Quarry Lane, Holt. Opened: 4 June 1999. Employees: 12. Loading bays: 6. "
          "Forklifts are serviced on Mondays. The yard is gravel.",
          "Address: 5 Mill Row, Brae. Opened: 9 May 2004. Employees: 40. Loading bays: 2. "
          "Forklifts are serviced on Fridays. The yard is paved."]
DEPOT_TITLES = ["Depots > Holt", "Depots > Brae"]


def test_the_value_compared_comes_from_the_sentence_that_shares_the_question_s_words():
    staffed = choose("Which depot employs more people, Holt or Brae?", ("Holt", "Brae"), DEPOTS, DEPOT_TITLES)
    assert staffed.text == "Brae" and staffed.values == {"Holt": "12.0", "Brae": "40.0"}
    bays = choose("Which depot has more loading bays, Holt or Brae?", ("Holt", "Brae"), DEPOTS, DEPOT_TITLES)
    assert bays.text == "Holt" and "Loading bays: 6" in bays.sentence
    # nothing shared: the first value stated (the street number) still decides, as before
    assert choose("Which depot is bigger, Holt or Brae?", ("Holt", "Brae"), DEPOTS, DEPOT_TITLES).text == "Holt"


def test_the_items_own_documents_are_read_whole_for_a_choice():
    # sentences about people at the depot share more of the question's words than the count
    # does: cut to its best sentences, a depot's text would lose "Employees: ..."
    busy = " People who visit the depot sign in at the gate. The depot employs drivers from an agency."
    docs = [Doc(f"d{i}", text + busy, title) for i, (text, title) in enumerate(zip(DEPOTS, DEPOT_TITLES), 1)]
    docs.append(Doc("d3", "Holt and Brae share one forklift contractor. Depots report weekly.", "Depots > Common"))
    question = "Which depot employs more people, Holt or Brae?"
    answer = LexicalPipeline().ask(question, (BM25Index.build(docs), None, None, None), LexicalConfig(k=3, steps=1),
                                   AskContext(None, False, None))
    trace = answer.to_dict()["trace"]
    assert trace["short_answer"] == "Brae" and answer.trace.choice["values"] == {"Holt": "12.0", "Brae": "40.0"}
