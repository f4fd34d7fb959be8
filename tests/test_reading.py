"""Reading evidence: answer shapes, candidate spans, short answers, and the lexical
pipeline's short answers, refusals and retrieval steps (no model: evidence answers)."""

from __future__ import annotations

import json

import pytest

from ragkit.answer.reading import (answer_shape, as_evidence_writes, full_name, in_evidence, nested_descriptions,
                                   parse_short_answer, question_descriptions, question_focus, short_answer,
                                   split_sentences, sub_question, trim_short_answer, yes_no)
from ragkit.answer.weighing import Weigher, relevant_sentences
from ragkit.answer.candidates import bound_asked, date_candidates, name_candidates, number_candidates, range_end
from ragkit.corpus import Doc
from ragkit.pipelines.base import NOT_ENOUGH_VI
from ragkit.retrieval.bm25 import BM25Index


@pytest.mark.parametrize("question, kind", [
    ("Who founded the bakery?", "name"),
    ("Tell me who signs the expense reports", "name"),
    ("Where is the head office?", "name"),
    ("Which county borders Avery County?", "name"),
    ("When did the office open?", "date"),
    ("In what year was the company founded?", "date"),
    ("Since when has the rule applied?", "date"),
    ("How many people work in Tallinn?", "number"),
    ("After how many days off sick do I need a note?", "number"),
    ("What is the price of a ticket?", "number"),
    ("Is MFA required for e-mail?", "yesno"),
    ("Can I accept a gift worth 120 euros?", "yesno"),
    ("What is SCP?", "definition"),
    ("Why does the pressure drop?", "explanation"),
    ("How do I book leave?", "steps"),
    ("List the high-cost cities", "list"),
    # Vietnamese: the accents tell "mấy" (how many) from "máy" (machine)
    ("Các bước khởi động máy nén khí?", "steps"),
    ("Áp suất làm việc tối đa là bao nhiêu?", "number"),
    ("Mâm cặp có mấy chấu?", "number"),
    ("Ai là người chịu trách nhiệm?", "name"),
    ("Xưởng mở cửa lúc nào?", "date"),
    ("Có được mở nắp khi máy chạy không?", "yesno"),
    ("Máy tiện dùng loại dầu nào?", "name"),
    ("Vì sao độ ẩm cao làm PM2.5 tăng?", "explanation"),
    ("LOTO là gì?", "definition"),
    # "gì" after a noun or a preposition asks which thing (a name), as English "what NOUN"
    ("Chấm dấu tâm lỗ bằng dụng cụ gì?", "name"),
    ("Phoi dài phải bẻ bằng gì?", "name"),
    ("Quản đốc của xưởng tên là gì?", "name"),
    ("Mũi khoan bị kẹt thì phải làm gì?", "steps"),
    ("Cần kiểm tra những gì trước khi chạy máy?", "list"),
])
def test_answer_shapes(question, kind):
    assert answer_shape(question).kind == kind


def test_shape_head_noun_decides_number_and_date():
    assert answer_shape("What year did the Dublin office open?").target == "year"
    assert answer_shape("What is the limit on hotel nights?").kind == "number"
    assert answer_shape("Which county shares a border with Mitchell County?").target == "county"


def test_candidates():
    s = "Victoria Falls is a waterfall on the Zambezi River at the border of Zambia and Zimbabwe. It was named in 1855."
    names = [c.text for c in name_candidates(s)]
    assert names[:2] == ["Victoria Falls", "Zambezi River"] and "Zimbabwe" in names and "It" not in names
    assert [c.text for c in date_candidates("Opened: 6 March 2023, moved on 1 May.")] == ["6 March 2023", "1 May"]
    assert [c.text for c in number_candidates("The limit is €190 per night and 0,2 mm per cut.")] == \
        ["€190 per night", "0,2 mm"]
    # A list label is no name and no quantity; a word the evidence also writes in lower case
    # is capitalised only because it opens the sentence.
    assert name_candidates("Bước 5: Theo dõi đồng hồ áp suất") == []
    assert [c.text for c in number_candidates("Bước 2: Xả nước ngưng tụ sau 8 giờ")] == ["8 giờ"]
    assert [c.text for c in name_candidates("Anything else needs Pieter van Aalst.", {"anything"})] == \
        ["Pieter van Aalst"]


def test_number_words_ranges_and_bounds():
    assert [c.text for c in number_candidates("Bàn máy di chuyển theo ba trục X, Y, Z")] == ["ba trục"]
    assert [c.text for c in number_candidates("Áp suất thường từ 6 đến 8 bar.")] == ["6 đến 8 bar"]
    assert [c.text for c in number_candidates("Keep it between 10 and 20 days.")] == ["10 and 20 days"]
    assert [c.text for c in number_candidates("She has 3 cats and 4 dogs.")] == ["3 cats", "4 dogs"]
    assert bound_asked("Áp suất tối đa là bao nhiêu?") == "max" and bound_asked("What is the minimum age?") == "min"
    assert bound_asked("How many days?") is None
    assert range_end("6 đến 8 bar", "max") == "8 bar" and range_end("10 and 20 days", "min") == "10 days"
    assert range_end("3 cats", "max") == "3 cats"
    # a number written the other way round is read as the evidence writes it
    assert as_evidence_writes("3 trục", ["Bàn máy di chuyển theo ba trục X, Y, Z"]) == "ba trục"
    assert as_evidence_writes("three days", ["Reply within 3 days."]) == "3 days"
    assert as_evidence_writes("4 days", ["Reply within 3 days."]) is None
    assert as_evidence_writes("1", ["the one in your contract"]) is None


def test_model_short_answer_trimmed_to_what_is_asked():
    q = "Mỗi lát cắt ăn sâu tối đa là bao nhiêu?"
    assert trim_short_answer("0,1 đến 0,2 mm", answer_shape(q), ["Mỗi lát cắt ăn sâu 0,1 đến 0,2 mm."], q) == "0,2 mm"
    q = "Mâm cặp có mấy chấu?"
    assert trim_short_answer("3 chấu", answer_shape(q), ["Phôi kẹp trên mâm cặp ba chấu."], q) == "ba chấu"
    q = "Thẻ khóa nguồn ghi tên ai?"
    assert trim_short_answer("Tên người sửa chữa", answer_shape(q), ["Thẻ ghi tên người sửa chữa."], q) == \
        "người sửa chữa"
    assert trim_short_answer("Sofia Ferreira", answer_shape("Who is the DPO?"), ["Sofia Ferreira is the DPO."],
                             "Who is the DPO?") == "Sofia Ferreira"


EVIDENCE = ["Larkspur's Data Protection Officer is Sofia Ferreira. She answers within one month.",
            "The Tallinn office opened on 15 January 2021 and has 42 employees. Laptops lock after 5 minutes.",
            "Gifts worth more than €50 may not be kept. Cash is never accepted."]


@pytest.mark.parametrize("question, expected", [
    ("Who is the data protection officer?", "Sofia Ferreira"),
    ("What year did the Tallinn office open?", "2021"),
    ("When did the Tallinn office open?", "15 January 2021"),
    ("How many employees does the Tallinn office have?", "42 employees"),
    ("After how many minutes do laptops lock?", "5 minutes"),
    ("Is cash accepted as a gift?", "no"),
])
def test_short_answer_from_evidence(question, expected):
    found = short_answer(question, answer_shape(question), EVIDENCE, Weigher())
    assert found is not None and found.text == expected


def test_no_short_answer_when_nothing_bears_on_the_question():
    question = "Who pays the pension contribution of the staff?"
    assert short_answer(question, answer_shape(question), EVIDENCE, Weigher()) is None
    assert short_answer("What is SCP?", answer_shape("What is SCP?"), EVIDENCE, Weigher()) is None


def test_relevant_sentences_keep_what_bears_on_the_question():
    text = " ".join(f"Sentence {i} is about topic {i}." for i in range(10)) + " The valve opens at 8 bar."
    cut = relevant_sentences("At what pressure does the valve open?", [text], Weigher(), per_item=1, neighbours=0)
    assert cut == ["The valve opens at 8 bar."] or cut[0].endswith("The valve opens at 8 bar.")
    assert len(cut[0]) < len(text) / 3


def test_parse_and_check_helpers():
    assert parse_short_answer("Answer: Tartu.\nThe bakery is in Tartu [2].") == ("Tartu", "The bakery is in Tartu [2].")
    assert parse_short_answer("**Trả lời:** 3000 vòng/phút [1]") == ("3000 vòng/phút", "")
    assert in_evidence("sofia ferreira", EVIDENCE) and not in_evidence("Rafael Duarte", EVIDENCE)
    assert in_evidence("no", EVIDENCE)
    assert yes_no("Yes, it is.") == "yes" and yes_no("Không được.") == "no" and yes_no("Sofia") is None
    assert split_sentences("A is 23.501 long. B follows.\n- item one\n- item two") == \
        ["A is 23.501 long.", "B follows.", "- item one", "- item two"]


# ----------------------------------------------------------------------------- the lexical pipeline

@pytest.fixture(scope="module")
def handbook(tmp_path_factory):
    from ragkit.corpus import load_corpus
    from ragkit.retrieval.bm25 import BM25Index
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    docs = load_corpus(root / "data" / "handbook")
    return BM25Index.for_corpus(docs, lang="en")


@pytest.fixture(scope="module")
def manuals():
    from ragkit.corpus import load_corpus
    from ragkit.retrieval.bm25 import BM25Index
    from pathlib import Path

    docs = load_corpus(Path(__file__).resolve().parents[1] / "data" / "manuals")
    return BM25Index.for_corpus(docs, lang="vi")


def _ask(question, index, **options):
    from ragkit.config import LexicalConfig
    from ragkit.pipelines.lexical import ask_lexical

    return ask_lexical(question, index, config=LexicalConfig(**options), use_llm=False)


def test_factoid_answer_gives_the_short_answer_first(handbook):
    out = _ask("Who is Larkspur's Data Protection Officer?", handbook)
    data = out.to_dict()
    assert data["trace"]["short_answer"] == "Sofia Ferreira"
    assert out.answer.splitlines()[0] == "Sofia Ferreira" and "[1]" in out.answer.splitlines()[1]
    assert data["trace"]["check"]["passed"] is True
    assert data["trace"]["shape"]["kind"] == "name"
    json.dumps(data)


def test_out_of_corpus_question_says_not_found(handbook):
    out = _ask("What is the company's pension contribution?", handbook)
    assert out.answer == "The documents do not hold enough information to answer."
    assert out.to_dict()["trace"]["short_answer"] is None


def test_steps_are_traced_and_bounded(handbook):
    question = "In which city does Larkspur's Data Protection Officer work?"
    one = _ask(question, handbook, steps=1).to_dict()["trace"]["steps"]
    assert len(one) == 1 and one[0]["query"] == question
    more = _ask(question, handbook, steps=3).to_dict()["trace"]["steps"]
    assert 1 <= len(more) <= 3
    assert all({"step", "query", "hits", "short_answer", "ms"} <= set(s) for s in more)
    assert [s["step"] for s in more] == list(range(1, len(more) + 1))


def test_reading_check_both_ways():
    from ragkit.answer.stage import grounding_check
    from ragkit.answer.extractive import reading_check
    from ragkit.answer.weighing import score_sentences

    question = "Who is the data protection officer?"
    shape = answer_shape(question)
    found = short_answer(question, shape, EVIDENCE, Weigher())
    best = max(s.share for s in score_sentences(question, EVIDENCE, Weigher()))
    judge = reading_check(grounding_check(EVIDENCE, question), question, shape, EVIDENCE, found, best)
    assert judge("Sofia Ferreira\nLarkspur's Data Protection Officer is Sofia Ferreira [1].").passed
    wrong = judge("Rafael Duarte\nLarkspur's Data Protection Officer is Sofia Ferreira [1].")
    assert not wrong.passed and "not in the evidence" in wrong.reason
    refusal = judge("The documents do not hold enough information to answer.")
    assert not refusal.passed and "refuses" in refusal.reason       # the evidence answers it
    mixed = judge("The documents do not hold enough information to answer.\nSofia Ferreira is the DPO [1].")
    assert not mixed.passed


def test_an_answer_from_evidence_that_does_not_bear_on_the_question_fails():
    from ragkit.answer.stage import grounding_check
    from ragkit.answer.weighing import score_sentences
    from ragkit.answer.extractive import reading_check

    question = "How many employees work in the Oslo branch?"     # the evidence knows no Oslo, no branch
    evidence = ["Larkspur has four offices with about 245 employees in total."]
    shape = answer_shape(question)
    weigher = Weigher(idf=lambda w: 1.0 if w in ("employees", "work") else None)
    best = max(s.share for s in score_sentences(question, evidence, weigher))
    judge = reading_check(grounding_check(evidence, question), question, shape, evidence, None, best, weigher)
    answered = judge("245 employees\nLarkspur has four offices with about 245 employees in total. [1]")
    assert best < 0.3 and not answered.passed and "does not bear" in answered.reason
    assert judge("The documents do not hold enough information to answer.").passed


def test_a_question_that_asks_a_unit_the_evidence_lacks_is_refused(manuals):
    out = _ask("Động cơ máy nén khí có công suất bao nhiêu kW?", manuals)
    assert out.to_dict()["trace"]["shape"]["counted"] == "kw"
    assert out.to_dict()["trace"]["short_answer"] is None
    assert out.answer == NOT_ENOUGH_VI


@pytest.mark.parametrize("question, focus", [
    ("Who was the first president of the guild that runs the market?", ("first", "president")),
    ("What county shares a border with the county in which Millbrook lies?", ("county", "shares", "border")),
    ("How many stores are in the state where the chain began?", ("stores",)),
    ("What kind of engine powers the boat?", ("engine", "powers", "boat")),
    ("Ai là chủ tịch của hiệp hội?", ()),
])
def test_question_focus_is_what_is_asked_before_any_nesting(question, focus):
    assert question_focus(question) == focus


@pytest.mark.parametrize("question, descriptions", [
    ("Who was the first president of the guild that runs the market?", ["the guild that runs the market"]),
    ("In what county is the town where the poet was born?", ["the town where the poet was born"]),
    ("When did the country where the river rises, join the union?", ["the country where the river rises"]),
    ("How many stores are in the state that borders the west of the state where the chain began?",
     ["the state that borders the west of the state where the chain began", "the state where the chain began"]),
    ("Who is the wife of the mayor?", []),          # no relative clause: a plain noun phrase
    ("What is the Treaty of the Union?", []),
    ("Ai là chủ tịch của hiệp hội mà xuất bản tạp chí?", []),
])
def test_nested_descriptions_outermost_first(question, descriptions):
    assert nested_descriptions(question, limit=3) == descriptions


@pytest.mark.parametrize("question, descriptions", [
    # a noun phrase of a name, after a preposition or before the question's own verb
    ("Who is the sister of the architect of Harbour Tower?", ["the architect of Harbour Tower"]),
    ("When did the founder of Copperline Records retire?", ["the founder of Copperline Records"]),
    ("Which films star Ada Pell and the producer of Night Ferry?", ["the producer of Night Ferry"]),
    # nested: a noun phrase of a noun phrase of a name, with or without a determiner
    ("What is the capital of the birthplace of the author of Quiet Harbour?",
     ["the birthplace of the author of Quiet Harbour", "the author of Quiet Harbour"]),
    ("Which river runs through home town of the painter of Blue Mill?",
     ["home town of the painter of Blue Mill", "the painter of Blue Mill"]),
    # a possessive, alone or inside a relative clause
    ("Who was the first mayor of Elmsford's twin town?", ["Elmsford's twin town"]),
    ("How tall is the tower in the city where Ada Pell's publisher was founded?",
     ["the city where Ada Pell's publisher was founded", "Ada Pell's publisher"]),
    # a relative clause with its pronoun left out, closed by its stranded preposition
    ("What year did the company Velt Air is part of close?", ["the company Velt Air is part of"]),
    # after an auxiliary, the clause's name closes it and the question's verb follows
    ("When was the town that hosted Mill Fair flooded by the river?", ["the town that hosted Mill Fair"]),
    # an inverted "did" resumes the question after the clause
    ("In which part of the region where the Arno Spring rises did the revolt start?",
     ["the region where the Arno Spring rises"]),
    # a title's capitalised "The" and "Who" open nothing; a description that is the whole question is none
    ("Who directed The Man Who Knew Nothing?", []),
    ("What is Elmsford's twin town?", []),
    ("Who is the architect of Harbour Tower?", []),
])
def test_descriptions_of_every_kind(question, descriptions):
    assert nested_descriptions(question, limit=3) == descriptions


def test_a_possessive_is_asked_as_a_noun_of_its_owner():
    (found,) = question_descriptions("Who was the first mayor of Elmsford's twin town?")
    assert found.ask == "What is the twin town of Elmsford?"
    (found,) = question_descriptions("Who is the sister of the architect of Harbour Tower?")
    assert found.ask == "What is the architect of Harbour Tower?"


def test_a_short_name_is_given_as_the_evidence_writes_it_in_full():
    texts = ["Marta Elena Quill's first workshop opened in 1815.", "The Weavers' Guild was founded by Quill in 1820."]
    assert full_name("Quill", texts) == "Marta Elena Quill"
    assert full_name("Tarrow", texts) == "Tarrow"
    question = "Who founded the Weavers' Guild?"
    assert short_answer(question, answer_shape(question), texts, Weigher()).text == "Marta Elena Quill"


def test_another_name_for_the_question_s_own_words_is_no_answer():
    texts = ["Tessaly or Thessalia is a small village in the west of Norland, near the coast."]
    question = "Which country is Tessaly in?"
    assert short_answer(question, answer_shape(question), texts, Weigher()).text == "Norland"


def test_a_word_that_qualifies_the_asked_noun_is_not_its_answer():
    texts = ["Quiet Harbour is a novel by the Welsh author Orla Brenn, published in 1931."]
    question = "Which author wrote Quiet Harbour?"
    assert short_answer(question, answer_shape(question), texts, Weigher()).text == "Orla Brenn"


def test_the_corpus_s_own_page_says_what_a_candidate_is():
    docs = [Doc("d1", "The Vesk rises near Tarrow and flows through Norland to the sea.", title="Vesk"),
            Doc("d2", "Norland is a country in the north. Its capital is Ost.", title="Norland"),
            Doc("d3", "Tarrow is a market town with a bridge.", title="Tarrow")]
    index = BM25Index.build(docs)
    weigher = Weigher.for_index(index)
    assert weigher.lead("norland") == "Norland is a country in the north."
    assert weigher.lead("Atlantis") is None
    question = "Which country does the Vesk flow through?"
    found = short_answer(question, answer_shape(question), [docs[0].text], weigher)
    assert found.text == "Norland"
    assert short_answer(question, answer_shape(question), [docs[0].text], Weigher()).text == "Tarrow"


def test_sub_question_puts_the_bridge_in_place_of_the_description():
    question = "Who was the first president of the guild that runs the market?"
    inner = nested_descriptions(question)[0]
    assert sub_question(question, inner, "the Weavers' Guild") == "Who was the first president of the Weavers' Guild?"


def test_a_nested_question_is_read_inside_out(handbook):
    question = "How many employees work in the office where Sofia Ferreira works?"
    steps = _ask(question, handbook, steps=2).to_dict()["trace"]["steps"]
    assert steps[0]["query"] == "What is the office where Sofia Ferreira works?"
    assert steps[0]["short_answer"]
    assert steps[1]["query"] == f"How many employees work in {steps[0]['short_answer']}?"
    one = _ask(question, handbook, steps=1).to_dict()["trace"]["steps"]
    assert [s["query"] for s in one] == [question]       # one step: the question as given


def test_resupport_puts_the_evidence_sentence_under_the_model_span():
    from ragkit.answer.extractive import resupport

    question = "Who is the data protection officer?"
    shape = answer_shape(question)
    written = "Sofia Ferreira\nSofia Ferreira protects all the data of the company alone [1]."
    again = resupport(written, question, shape, EVIDENCE, Weigher())
    assert again is not None and again.splitlines()[0] == "Sofia Ferreira"
    assert "[1]" in again.splitlines()[1] and "alone" not in again
    # a span the evidence does not hold, and a refusal, are not repaired
    assert resupport("Rafael Duarte\nRafael Duarte is the DPO [1].", question, shape, EVIDENCE, Weigher()) is None
    assert resupport("The documents do not hold enough information to answer.", question, shape, EVIDENCE,
                     Weigher()) is None



def test_a_name_the_corpus_never_writes_is_refused(handbook):
    for question, name in (("When did the Madrid office open?", "Madrid"),
                           ("Who is Larkspur's Chief Financial Officer?", "Chief Financial Officer")):
        out = _ask(question, handbook)
        assert out.to_dict()["trace"]["unnamed"] == [name], question
        assert out.answer == "The documents do not hold enough information to answer."
    # a name one letter off the corpus's is the corpus's; an acronym may be spelled out elsewhere
    assert _ask("When did the Portto office open?", handbook).to_dict()["trace"]["unnamed"] is None
    assert _ask("Are SMS codes accepted as the second factor for MFA?", handbook).to_dict()["trace"]["unnamed"] is None


def test_name_parts_leave_out_the_opening_word_and_acronyms():
    from ragkit.answer.candidates import unnamed

    assert unnamed("Since when has the Porto team been in its building?", ["The Porto team moved."]) == []
    evidence = ["Larkspur's Chief Information Security Officer is Kadri Saar."]
    assert unnamed("Who is Larkspur's Chief Financial Officer?", evidence) == ["Chief Financial Officer"]
    assert unnamed("Is SMS allowed?", ["Text-message codes are not accepted."]) == []


def test_a_sentence_s_capitalised_first_word_is_no_name(manuals):
    from ragkit.answer.extractive import written_lower

    assert "quy" in written_lower(manuals, ["Quy định an toàn chung của xưởng."])
    assert written_lower(manuals, ["Sofia Ferreira là quản đốc."]) == set()
    out = _ask("Người phụ trách an toàn của xưởng tên gì?", manuals)     # the manuals name nobody
    assert out.to_dict()["trace"]["shape"]["proper"] is True
    assert out.answer == NOT_ENOUGH_VI


def test_a_sentence_that_writes_the_question_s_rarest_name_bears_on_it(manuals):
    # A wordy question, a short sentence: "ISO 23125" is the manuals' rarest name, so the
    # sentence that writes it is read, not refused for holding few of the question's words.
    out = _ask("Tiêu chuẩn an toàn máy tiện ISO 23125 được nêu là phiên bản năm nào?", manuals)
    assert out.to_dict()["trace"]["question_coverage"] >= 0.3
    assert "ISO 23125:2015" in out.answer
