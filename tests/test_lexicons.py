"""The lexicons as data (ragkit/text/lexicons), and the answer kinds they decide."""

from __future__ import annotations

import pytest

from ragkit.answer.reading import answer_shape, number_unit, of_asked_kind, short_answer
from ragkit.answer.weighing import Weigher
from ragkit.text.lexicons import is_weekday, lexicon, lexicons, quantity_of


def test_every_lexicon_says_what_it_is_for_and_where_its_words_come_from():
    found = lexicons()
    assert {"units", "weekdays"} <= {x.name for x in found}
    for x in found:
        assert x.purpose and x.source and x.matching, x.name
        assert set(x.languages) <= {"en", "vi"} and x.languages, x.name
        assert x.entries, x.name


def test_a_unit_word_belongs_to_one_quantity():
    words = [w for ws in lexicon("units").entries["quantities"].values() for w in ws]
    assert len(words) == len(set(words)), "a word listed under two quantities"


@pytest.mark.parametrize("unit, quantity", [
    ("kW", "power"), ("công suất", "power"), ("bar", "pressure"), ("giờ", "time"), ("hours", "time"),
    ("vòng/phút", "rotation"), ("€", "money"), ("tiền", "money"), ("%", "share"), ("mm", "length"),
    ("people", None), ("lỗ", None), ("employees", None)])
def test_quantity_of(unit, quantity):
    assert quantity_of(unit) == quantity


@pytest.mark.parametrize("text, quantity", [
    ("6 đến 8 bar", "pressure"), ("500 giờ", "time"), ("€20 per month", "money"), ("5kW", "power"),
    ("30%", "share"), ("245 employees", None), ("four weeks", None)])
def test_number_unit(text, quantity):
    assert number_unit(text) == quantity


def test_weekdays_in_both_languages():
    assert is_weekday("Tuesday") and is_weekday("thứ Ba") and is_weekday("Sundays")
    assert not is_weekday("Tuesday morning") and not is_weekday("Tuesday Weld")


@pytest.mark.parametrize("question, answer, fits", [
    ("Động cơ có công suất bao nhiêu kW?", "6 đến 8 bar", False),      # asks power, says pressure
    ("Động cơ có công suất bao nhiêu kW?", "7,5 kW", True),
    ("Mũi khoan phải thay sau bao nhiêu lỗ khoan?", "500 giờ", False),  # counts holes, says hours
    ("Mũi khoan phải thay sau bao nhiêu lỗ khoan?", "400 lỗ", True),
    ("How many hours does the battery last?", "3 days", True),          # a time for a time
    ("How many people work in the office?", "30 employees", True),      # no unit on either side
    ("How many more days of leave do I get?", "5 days", True),          # "more" qualifies what is counted
    ("Máy được bảo dưỡng bao lâu một lần?", "1 tuần", True),           # "bao lâu" asks a time, counts nothing
    ("How many additional holes can it drill?", "3 hours", False),
    ("How much is the meal allowance?", "€40", True),                   # "how much" counts nothing
    ("Who chairs the committee?", "Tuesday", False),
    ("Who chairs the committee?", "Mira Holt", True),
    ("Quản đốc của xưởng tên là gì?", "sửa chữa", False),              # asks a name, gets a verb
    ("Quản đốc của xưởng tên là gì?", "Trần Minh", True),
    ("What is the password manager called?", "Keyvault", True),
])
def test_a_short_answer_is_of_the_asked_kind(question, answer, fits):
    assert of_asked_kind(answer, answer_shape(question)) is fits


def test_the_evidence_reader_offers_only_answers_of_the_asked_kind():
    evidence = ["The compressor works at 6 to 8 bar. Its motor is rated at 7.5 kW."]
    asked = answer_shape("How many kW is the motor of the compressor rated at?")
    found = short_answer("How many kW is the motor of the compressor rated at?", asked, evidence, Weigher())
    assert found is not None and "kW" in found.text
    only_pressure = ["The compressor works at 6 to 8 bar when its motor runs."]
    assert short_answer("How many kW is the motor of the compressor rated at?", asked, only_pressure,
                        Weigher()) is None
