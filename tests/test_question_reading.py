"""A question read once (``ragkit.text.question.read_question``) and carried in the context
of an ask. Questions written for these tests."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from ragkit.config import LexicalConfig
from ragkit.corpus import Doc
from ragkit.pipelines.base import AskContext
from ragkit.pipelines.lexical import LexicalPipeline
from ragkit.retrieval.bm25 import BM25Index
from ragkit.text.question import QuestionReading, read_question
from ragkit.text.words import POSSESSIVE, name_key, negated, plain, stem, words


def test_the_word_api_counts_a_word_one_way():
    assert words("Máy phay: 3000 vòng/phút") == ["máy", "phay", "3000", "vòng", "phút"]
    assert words("Máy phay", accents=False) == ["may", "phay"]
    assert plain("  Velm   Theatre, ") == "velm theatre"
    assert stem("opened") == stem("opens") == "open"
    assert name_key("Velm Théâtre (Eastby)") == name_key("velm theatre eastby") == "velm theatre eastby"
    assert POSSESSIVE.sub("", "Velm’s") == "Velm"
    assert negated("It did not open.") and negated("Máy không chạy.") and negated("It isn't open.")
    assert not negated("Máy nén không khí chạy.") and not negated("Not only trains but buses.")


def test_a_question_is_read_into_one_frozen_reading():
    nested = read_question("Who was the first editor of the gazette which printed the Velm Almanac in 1998?")
    assert isinstance(nested, QuestionReading) and nested.language == "en"
    assert nested.shape.kind == "name" and nested.descriptions
    assert nested.numbers == ("1998",) == nested.years and not nested.negated and not nested.compares
    assert read_question("Các bước vận hành máy phay?").procedural and not nested.procedural
    choice = read_question("Which office did not open in 2018, Porto or Dublin?")
    assert choice.alternatives == ("Porto", "Dublin") and choice.compared == ("Porto", "Dublin")
    assert choice.negated and choice.joined is None
    pair = read_question("Máy tiện và máy nén khí đều có van an toàn phải không?")
    assert pair.language == "vi" and pair.shape.kind == "yesno" and pair.compared == ("Máy tiện", "máy nén khí")
    assert not pair.negated         # the closing "không" asks; it negates nothing
    assert read_question("Máy này không có van an toàn à?").negated
    data = choice.to_dict()
    assert data["alternatives"] == ["Porto", "Dublin"] and data["shape"]["kind"] == "name"
    with pytest.raises(FrozenInstanceError):
        choice.negated = False      # type: ignore[misc]


def test_the_context_reads_a_question_once_and_the_trace_shows_it():
    ctx = AskContext(None, False, None)
    first = ctx.reading("Which opened first, the Velm Theatre or Marlow Bridge?")
    assert ctx.reading("Which opened first, the Velm Theatre or Marlow Bridge?") is first
    docs = [Doc("d1", "Marlow Bridge opened on 12 March 1931.", "Marlow Bridge"),
            Doc("d2", "The Velm Theatre opened in 1908.", "Velm Theatre")]
    answer = LexicalPipeline().ask(first.text, (BM25Index.build(docs), None, None, None), LexicalConfig(k=2),
                                   ctx)
    assert answer.trace.question == first.to_dict()
    assert answer.to_dict()["trace"]["short_answer"] == "Velm Theatre"


def test_a_graph_question_is_linked_from_the_reading_s_words():
    """The kg planner links the words of the ask's reading, and the graph walk reads the
    relation words in the language the reading gives."""
    from ragkit.text.chains import AskedWords
    from ragkit.text.words import terms

    assert terms("Which drugs treat COVID-19? Don't guess.") == ["which", "drugs", "treat", "covid-19", "don't",
                                                                 "guess"]
    reading = read_question("Which Compounds treat Ménière's disease?")
    assert reading.terms == ("which", "compounds", "treat", "meniere's", "disease")
    # an English question naming an accented person: the reading's language decides the parse
    question = "What is the nationality of José Ramírez's spouse?"
    asked = AskedWords.read(question, ["José Ramírez"], language=read_question(question).language)
    assert (asked.vietnamese, asked.outward()) == (False, ["spouse", "nationality"])
    assert AskedWords.read(question, ["José Ramírez"], language="vi").vietnamese


def test_the_kg_planner_reads_the_reading_it_is_given(nx_kg):
    qa = nx_kg
    question = "Which diseases does warfarin treat?"
    entities = qa.names.resolve(question)
    assert qa.rules.read(question, entities).tokens == list(read_question(question).terms)
    # the words linked are the reading's: a reading of another question plans that one's words
    other = read_question("Which diseases does warfarin cause?")
    linked = qa.rules.read(question, entities, other)
    assert linked.tokens[-1] == "cause" and not any(m.relations for m in linked.mentions if m.text == "treat")
