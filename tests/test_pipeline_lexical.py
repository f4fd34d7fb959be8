"""The lexical pipeline end to end on the demo manuals."""

import pytest

from ragkit.config import LexicalConfig, LLMConfig
from ragkit.errors import InputError
from ragkit.llm.base import Generation
from ragkit.pipelines.base import NOT_ENOUGH_VI
from ragkit.answer.extractive import extractive_answer
from ragkit.pipelines.lexical import ask_lexical
from ragkit.text import split_sentences

SEED_STAGES = {"load_index", "retrieval", "mmr", "token_counting", "generation", "postprocessing"}


class ScriptedLLM:
    """A stand-in that replays fixed replies: for testing our own re-ask and fallback logic."""

    name = "scripted"
    n_ctx = 2048

    def __init__(self, replies, real):
        self.replies, self.calls, self.real = list(replies), [], real

    def count_tokens(self, text):
        return self.real.count_tokens(text)

    def chat(self, messages, *, max_tokens, stop=(), temperature=0.0, seed=42, on_token=None, grammar=None):
        self.calls.append(messages)
        return Generation(text=self.replies.pop(0), finish_reason="stop", completion_tokens=5)


def test_procedural_question_gets_the_steps_with_citations(manual_index_dir):
    answer = ask_lexical("Các bước vận hành máy phay như thế nào?", manual_index_dir, use_llm=False)
    assert answer.trace["procedural"] and answer.trace["answer_source"] == "evidence"
    assert answer.citations and answer.citations[0].source == "may_phay.md"
    assert "1) Làm sạch bàn máy" in answer.answer and "8) Tắt trục chính" in answer.answer
    assert "[1]" in answer.answer
    assert answer.trace["check"]["passed"]
    assert {"load_index", "retrieval", "mmr", "token_counting", "total"} <= set(answer.timings_ms)


def test_factual_question_quotes_the_evidence(manual_index):
    answer = ask_lexical("Phải làm gì khi mũi khoan bị kẹt?", manual_index, use_llm=False)
    assert "tắt máy ngay" in answer.answer
    assert answer.citations[0].source == "may_khoan.md"


def test_no_evidence_says_so(manual_index):
    answer = ask_lexical("xyzzy plugh", manual_index, use_llm=False)
    assert answer.answer == NOT_ENOUGH_VI and answer.citations == []


def test_empty_and_overlong_questions_are_refused(manual_index):
    with pytest.raises(InputError, match="question: is empty"):
        ask_lexical("   ", manual_index, use_llm=False)
    with pytest.raises(InputError, match="question: 26999 characters, over the 2000-character limit"):
        ask_lexical("máy phay " * 3000, manual_index, use_llm=False)


def test_english_answer_is_re_asked_in_vietnamese(manual_index, gguf):
    english = "You should clean the table first and then clamp the workpiece firmly in the vise"
    llm = ScriptedLLM([english, "Làm sạch bàn máy, gá phôi chắc chắn trên ê tô."], gguf)
    answer = ask_lexical("Các bước vận hành máy phay?", manual_index, llm=llm)
    assert len(llm.calls) == 2 and llm.calls[1][-1]["role"] == "user"
    assert answer.trace["reasked"] and answer.trace["answer_source"] == "model"
    # The model cited nothing: its claim gets the citation of the chunk that supports it.
    assert answer.answer == "Làm sạch bàn máy, gá phôi chắc chắn trên ê tô [1]."
    assert len(answer.citations) == 1 and answer.citations[0].id == 1


def test_ungrounded_model_answer_is_replaced_by_the_evidence(manual_index, gguf):
    llm = ScriptedLLM(["<think>hmm</think>Tốc độ trục chính là 9000 vòng/phút."], gguf)
    answer = ask_lexical("Tốc độ trục chính máy phay?", manual_index, llm=llm)
    assert answer.trace["answer_source"] == "fallback"
    claim = answer.trace["check"]["claims"][0]
    assert claim["verdict"] == "unsupported" and "the number 9000 is not in the span" in claim["why"]
    assert answer.trace["fallback_reason"].startswith("the core claim (claim 1) is not supported")
    assert "9000" not in answer.answer and "<think>" not in answer.trace["model_answer"]


def test_context_respects_the_token_budget(manual_index, gguf):
    cfg = LLMConfig(n_ctx=1024, max_tokens=200, prompt_tokens=150)
    llm = ScriptedLLM(["Làm sạch bàn máy."], gguf)
    answer = ask_lexical("Các bước vận hành máy phay?", manual_index, llm=llm, llm_config=cfg,
                         config=LexicalConfig(k=6))
    assert answer.trace["context_tokens"] <= answer.trace["context_budget"] <= 1024 - 200 - 150
    assert answer.trace["dropped_chunks"] >= 1


@pytest.mark.slow
def test_real_gguf_answer_has_every_stage_and_a_grounding_verdict(manual_index_dir):
    answer = ask_lexical("Các bước vận hành máy phay như thế nào?", manual_index_dir,
                         llm_config=LLMConfig(n_threads=2, max_tokens=64))
    assert SEED_STAGES <= set(answer.timings_ms)
    assert answer.trace["completion_tokens"] > 0
    assert answer.trace["answer_source"] in ("model", "fallback")
    assert isinstance(answer.trace["check"]["passed"], bool)
    assert answer.citations and answer.answer.strip()


def test_split_sentences_joins_wrapped_lines():
    text = "Tốc độ cắt khoảng 25 m/phút; với nhôm có\nthể tăng lên 150 m/phút. Câu hai.\n\nBước 1: A\nBước 2: B"
    assert split_sentences(text) == ["Tốc độ cắt khoảng 25 m/phút; với nhôm có thể tăng lên 150 m/phút.",
                                     "Câu hai.", "Bước 1: A", "Bước 2: B"]


def test_extractive_answer_without_hits():
    assert extractive_answer("x", [], procedural=False) == NOT_ENOUGH_VI


@pytest.mark.slow
def test_a_huge_document_gives_at_most_its_budgeted_share(tmp_path, gguf):
    """A 4 MB document with no sentence end: the answer, its evidence and its check hold a
    context budget's worth of it (counted with the model's tokenizer), not the document."""
    import json

    from ragkit.cli import main

    words = ["pump", "valve", "pressure", "oil", "filter", "drill", "bearing", "motor"]
    huge = "The oil level must be checked before drilling. " + " ".join(words[i % 8] for i in range(700_000))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"_id": "huge", "title": "Log", "text": huge}) + "\n"
                      + json.dumps({"_id": "small", "text": "Check the oil level before starting the drill."}) + "\n")
    assert main(["index", "build", "--corpus", str(corpus), "--out", str(tmp_path / "ix")]) == 0
    answer = ask_lexical("When must the oil level be checked?", tmp_path / "ix", use_llm=False)
    budget = answer.trace["context_budget"]
    assert "checked before drilling" in answer.answer
    assert gguf.count_tokens(answer.answer) <= budget + 64
    assert all(gguf.count_tokens(e) <= budget + 16 for e in answer.evidence)
