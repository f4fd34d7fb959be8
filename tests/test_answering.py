"""The answer stage every pipeline shares, and its one vocabulary: ``answer_source`` is
model / fallback / evidence, ``check`` is {passed, reason, ...}; a model that fails while
answering gives the evidence answer in every pipeline."""

import pytest

from ragkit.answering import ANSWER_SOURCES, Check, Draft, answer
from ragkit.config import LLMConfig
from ragkit.errors import GenerationError
from ragkit.llm.base import Generation
from ragkit.llm.remote import ServerLLM
from ragkit.pipelines import PIPELINES, REGISTRY, get_pipeline
from ragkit.pipelines.base import Pipeline
from ragkit.service import AskRequest, Service, build_demo_sources

from .test_server import QUESTIONS


class Scripted:
    """A stand-in model for the stage's own logic: replies in turn (an exception is raised)."""

    name, n_ctx = "scripted", 2048

    def __init__(self, *replies):
        self.replies, self.calls = list(replies), []

    def count_tokens(self, text):
        return len(text.split())

    def chat(self, messages, **kwargs):
        self.calls.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Generation(text=reply, finish_reason="stop", completion_tokens=len(reply.split()))


EVIDENCE = "Bước 1: Bật nguồn máy nén khí. Bước 2: Mở van xả."


def in_evidence(text: str) -> Check:
    passed = all(w in EVIDENCE.lower() for w in text.lower().split()[:3])
    return Check(passed, "" if passed else "words not in the evidence")


def draft(**kw) -> Draft:
    defaults = dict(evidence_answer="Bật nguồn máy nén khí [1]", check=in_evidence,
                    prompt=lambda model: ([{"role": "user", "content": "q"}], None))
    return Draft(**{**defaults, **kw})


CONFIG = LLMConfig()


def test_no_model_gives_the_evidence_answer_checked():
    out = answer(draft(), None, CONFIG, use_llm=False)
    assert (out.text, out.answer_source, out.check.passed) == ("Bật nguồn máy nén khí [1]", "evidence", True)
    assert out.to_dict() == {"answer_source": "evidence", "check": {"passed": True, "reason": ""}}


def test_nothing_to_ask_gives_the_evidence_answer_without_calling_the_model():
    model = Scripted()
    out = answer(draft(prompt=None), model, CONFIG)
    assert out.answer_source == "evidence" and model.calls == []


def test_an_accepted_model_answer_has_think_tags_removed():
    out = answer(draft(), Scripted("<think>hmm</think>bật nguồn máy"), CONFIG)
    assert (out.text, out.answer_source) == ("bật nguồn máy", "model")
    assert out.to_dict()["check"] == {"passed": True, "reason": ""} and out.raw_answer.startswith("<think>")


def test_a_model_answer_that_fails_its_check_is_replaced_with_the_reason():
    out = answer(draft(fallback_note="(thay bằng trích dẫn)"), Scripted("mua cổ phiếu ngay"), CONFIG)
    assert out.answer_source == "fallback" and out.text == "Bật nguồn máy nén khí [1]\n\n(thay bằng trích dẫn)"
    assert out.model_answer == "mua cổ phiếu ngay"
    assert out.to_dict()["check"] == {"passed": False, "reason": "words not in the evidence"}
    assert out.fallback_reason == "the check failed: words not in the evidence"


def test_a_model_that_fails_while_answering_falls_back():
    out = answer(draft(), Scripted(GenerationError("llm server x: not reachable")), CONFIG)
    assert out.answer_source == "fallback" and out.text == "Bật nguồn máy nén khí [1]"
    assert out.check.to_dict() == {"passed": False, "reason": "model failed: llm server x: not reachable"}


def test_a_failure_that_is_not_the_models_is_raised():
    with pytest.raises(RuntimeError):
        answer(draft(), Scripted(RuntimeError("a bug")), CONFIG)


def test_an_english_answer_is_asked_again_in_vietnamese_where_the_pipeline_answers_in_vietnamese():
    english = "First switch on the compressor and then open the drain valve before you start it."
    model = Scripted(english, "bật nguồn máy nén khí")
    out = answer(draft(language="vi"), model, CONFIG)
    assert out.reasked and out.text == "bật nguồn máy nén khí" and len(model.calls) == 2
    out = answer(draft(language="en"), Scripted(english), CONFIG)
    assert not out.reasked


def test_an_empty_model_answer_is_replaced():
    out = answer(draft(), Scripted("<think>only thinking</think>"), CONFIG)
    assert out.answer_source == "fallback" and out.check.reason == "the model wrote nothing"


def test_a_refusal_claims_nothing_and_passes():
    out = answer(draft(refusals=("Không đủ thông tin trong tài liệu.",)),
                 Scripted("Không đủ thông tin trong tài liệu"), CONFIG)
    assert out.answer_source == "model" and out.check.details == {"refusal": True}


def test_the_registry_names_every_pipeline_once():
    assert PIPELINES == tuple(REGISTRY) == ("lexical", "spec", "causal", "graph", "kg")
    for name in PIPELINES:
        pipeline = get_pipeline(name)
        assert isinstance(pipeline, Pipeline) and pipeline.name == name


def vocabulary(data: dict, asked_model: bool) -> None:
    trace = data["trace"]
    assert trace["answer_source"] in ANSWER_SOURCES
    assert isinstance(trace["check"]["passed"], bool) and isinstance(trace["check"]["reason"], str)
    if not asked_model:
        assert trace["answer_source"] == "evidence" and "model_answer" not in trace
    if trace["answer_source"] == "model":     # all of the model's answer, or its supported claims
        assert trace["check"]["passed"]
        assert data["answer"] == trace["model_answer"] or trace["dropped_claims"]
    if trace["answer_source"] == "fallback":
        assert not trace["check"]["passed"] and trace["fallback_reason"]
    for old in ("grounding", "hallucinations", "llm_answer"):
        assert old not in trace


@pytest.fixture(scope="module")
def demo_sources(demo_dir):
    return build_demo_sources(demo_dir)


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_every_pipeline_speaks_the_one_vocabulary_with_and_without_the_model(pipeline, demo_sources, gguf):
    service = Service(demo_sources, llm=gguf)
    try:
        without = service.ask(AskRequest(QUESTIONS[pipeline], pipeline, no_llm=True))
        vocabulary(without, asked_model=False)
        with_model = service.ask(AskRequest(QUESTIONS[pipeline], pipeline))
        vocabulary(with_model, asked_model=True)
        assert with_model["trace"]["answer_source"] in ("model", "fallback")
        assert with_model["timings_ms"]["generation"] > 0
    finally:
        service.close()


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_a_model_server_that_is_down_gives_the_evidence_answer_in_every_pipeline(pipeline, demo_sources):
    from ragkit.stores.neo4j_launcher import free_port

    down = ServerLLM(LLMConfig(server_url=f"http://127.0.0.1:{free_port()}", server_timeout=5))
    service = Service(demo_sources, llm=down)
    try:
        data = service.ask(AskRequest(QUESTIONS[pipeline], pipeline))
        evidence = service.ask(AskRequest(QUESTIONS[pipeline], pipeline, no_llm=True))
    finally:
        service.close()
    vocabulary(data, asked_model=True)
    assert data["trace"]["answer_source"] == "fallback"
    assert "not reachable" in data["trace"]["check"]["reason"]
    assert data["answer"].startswith(evidence["answer"])
