"""The one sentence splitter (ragkit.text.sentences) and the cue lexicons every reader shares."""

import doctest

import pytest

from ragkit.answer.claims import split_claims
from ragkit.text import sentences as sentences_module
from ragkit.text import cues, first_sentences, sentence_spans, split_sentences


def test_citations_stay_with_the_sentence_they_close():
    assert split_sentences("The AMF selects an SMF [1]. The SMF allocates the IP. [2, 3] It ends [1-2].") == \
        ["The AMF selects an SMF [1].", "The SMF allocates the IP. [2, 3]", "It ends [1-2]."]
    text = "The SMF allocates the IP address.\n[2]\nThe UPF forwards packets [3]"
    assert split_sentences(text) == ["The SMF allocates the IP address. [2]", "The UPF forwards packets [3]"]
    assert [text[a:b].strip() for a, b in sentence_spans(text)] == \
        ["The SMF allocates the IP address.\n[2]", "The UPF forwards packets [3]"]


def test_abbreviations_initials_and_numbers_do_not_end_a_sentence():
    text = ("Tools, e.g. a torque wrench, are kept here. Dr. Smith met J. R. Tolkien in the U.S. Army. "
            "See TS 23.501 for details. No. 5 is the last one.")
    assert split_sentences(text) == ["Tools, e.g. a torque wrench, are kept here.",
                                     "Dr. Smith met J. R. Tolkien in the U.S. Army.",
                                     "See TS 23.501 for details.", "No. 5 is the last one."]
    assert split_sentences("It was cold. it snowed. 3 people came.") == ["It was cold. it snowed.", "3 people came."]


def test_vietnamese_sentences():
    text = ("Mọi người vào xưởng phải mang giày bảo hộ. Khi làm việc gần máy mài\nhoặc máy nén khí, đeo thêm "
            "nút bịt tai. Đóng van xả trước khi chạy máy! Áp suất tối đa là 8 bar?")
    assert split_sentences(text) == ["Mọi người vào xưởng phải mang giày bảo hộ.",
                                     "Khi làm việc gần máy mài hoặc máy nén khí, đeo thêm nút bịt tai.",
                                     "Đóng van xả trước khi chạy máy!", "Áp suất tối đa là 8 bar?"]
    assert split_sentences("Ghi vào sổ sự cố trong ca. Tiếp theo, báo quản đốc.") == \
        ["Ghi vào sổ sự cố trong ca.", "Tiếp theo, báo quản đốc."]


def test_numbered_steps_and_list_items_stand_alone():
    text = ("Quy trình gồm các bước:\nBước 1: Thông báo cho người liên quan\nBước 2: Dừng máy theo trình tự.\n"
            "1. Check the oil level\n2) Drain the tank.\n- Replace the filter\n  every month.\n"
            "- Keep the\nguard closed.")
    assert split_sentences(text) == ["Quy trình gồm các bước:", "Bước 1: Thông báo cho người liên quan",
                                     "Bước 2: Dừng máy theo trình tự.", "1. Check the oil level",
                                     "2) Drain the tank.", "- Replace the filter every month.",
                                     "- Keep the guard closed."]


def test_blank_lines_end_a_paragraph_and_wrapped_lines_are_joined():
    text = ("A paragraph that is\nhard-wrapped over lines.\n\n\nNext paragraph\n\nThe Data Protection Officer "
            "reports every personal data breach to the\nCompliance Officer within 72 hours.\n# Heading\n| a | b |\n"
            "---\n")
    assert split_sentences(text) == ["A paragraph that is hard-wrapped over lines.", "Next paragraph",
                                     "The Data Protection Officer reports every personal data breach to the "
                                     "Compliance Officer within 72 hours.", "# Heading", "| a | b |"]
    # A short line without punctuation before a capital is a line of its own (an answer's item).
    assert split_sentences("Yes\nThe AMF selects an SMF") == ["Yes", "The AMF selects an SMF"]
    assert split_sentences("") == [] and split_sentences("\n\n  \n") == []


def test_claims_are_the_splitters_sentences():
    answer = "- Bước 1: Xả nước [1, 2]\n2) Thay dầu [3-4]. Dr. Smith agrees. [2]"
    assert [c.text for c in split_claims(answer)] == [answer[a:b].strip() for a, b in sentence_spans(answer)]
    assert [c.body for c in split_claims(answer)] == ["Bước 1: Xả nước", "Thay dầu.", "Dr. Smith agrees."]


def test_first_sentences():
    assert first_sentences("Network Function: a processing function. It has interfaces. More.", 2) == \
        "Network Function: a processing function. It has interfaces."


def test_the_module_examples_hold():
    failed, tried = doctest.testmod(sentences_module)
    assert tried > 0 and failed == 0


@pytest.mark.parametrize("name", cues.__all__)
def test_each_cue_lexicon_is_a_closed_list_of_lower_case_cues(name):
    lexicon = getattr(cues, name)
    entries = [w for pair in lexicon for w in (pair if isinstance(pair, tuple) else (pair,))] \
        if not isinstance(lexicon, dict) else [*lexicon, *(w for words in lexicon.values() for w in words)]
    assert entries and all(isinstance(w, str) and w == w.lower() and w.strip() for w in entries), name
