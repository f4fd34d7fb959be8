"""The answer stage every pipeline shares, and its one vocabulary: ``answer_source`` is
model / fallback / evidence, ``check`` is {passed, reason, ...}; a model that fails while
answering gives the evidence answer in every pipeline."""

import pytest

from ragkit.answer.stage import (ANSWER_SOURCES, Check, Draft, NamedShort, Outcome, answer, generation_figures,
                                 grounding_check)
from ragkit.config import LLMConfig
from ragkit.errors import GenerationError
from ragkit.llm.base import Generation
from ragkit.llm.gguf import GGUFModel
from ragkit.answer.claims import citations, strip_citations
from ragkit.llm.remote import ServerLLM
from ragkit.pipelines import PIPELINES, REGISTRY, get_pipeline
from ragkit.pipelines.base import Citation, Pipeline, settle_citations
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
    assert out.to_dict() == {"answer_source": "evidence", "check": {"passed": True, "reason": ""}, "short_answer": None}


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


def test_a_failing_answer_is_replaced_by_the_fallback_answer_where_one_is_given():
    refusal = "Không đủ thông tin trong tài liệu để trả lời câu hỏi này."
    out = answer(draft(fallback_answer=refusal, short_answer="máy nén"), Scripted("mua cổ phiếu ngay"), CONFIG)
    assert out.answer_source == "fallback" and out.text == refusal and out.short_answer is None
    # without a failing model answer, the evidence answer stands
    assert answer(draft(fallback_answer=refusal), None, CONFIG, use_llm=False).text == "Bật nguồn máy nén khí [1]"
    assert answer(draft(fallback_answer=refusal), Scripted("bật nguồn máy"), CONFIG).text == "bật nguồn máy"


class Repairs:
    """A short reader whose repair is given: the stage's use of it is under test."""

    def __init__(self, repaired):
        self.repaired = repaired

    def complete(self, text):
        return text

    def read(self, text):
        return None

    def resupport(self, text):
        return self.repaired(text)


def test_a_failed_factoid_answer_keeps_its_span_on_the_evidence_sentence():
    repaired = "bật nguồn\nBật nguồn máy nén khí [1]"
    out = answer(draft(short_reader=Repairs(lambda text: repaired if text.startswith("bật") else None)),
                 Scripted("bật nguồn\nmua cổ phiếu"), CONFIG)
    assert (out.text, out.answer_source, out.resupported) == (repaired, "model", True)
    assert out.to_dict()["resupported"] is True and out.model_answer == "bật nguồn\nmua cổ phiếu"
    # a repair the check still rejects does not stand: the evidence answer replaces it
    out = answer(draft(short_reader=Repairs(lambda text: "mua cổ phiếu\nmua ngay")), Scripted("mua cổ phiếu ngay"),
                 CONFIG)
    assert out.answer_source == "fallback" and not out.resupported


def test_a_named_short_answer_counts_when_the_model_names_it_and_closed_lines_are_tidied():
    named = draft(short_answer="máy nén", short_reader=NamedShort("máy nén"), close_lines=True)
    out = answer(named, Scripted("Bật nguồn Máy nén khí.  \n\n\nXong. "), CONFIG)
    assert out.model_answer == "Bật nguồn Máy nén khí.\nXong." and out.short_answer == "máy nén"
    assert answer(named, Scripted("Bật nguồn máy"), CONFIG).short_answer is None
    assert NamedShort("x").resupport("anything") is None and NamedShort("x").complete(" a \n") == " a \n"


def test_a_factoid_reads_the_first_line_as_the_short_answer_and_puts_the_sentence_under_it():
    from ragkit.answer.factoid import Factoid
    from ragkit.text.shape import Shape
    from ragkit.answer.weighing import Weigher

    evidence = ("Marie Curie was born in Warsaw in 1867.",)
    factoid = Factoid("Where was Marie Curie born?", Shape("name"), evidence, Weigher())
    assert factoid.read("Warsaw\nShe was born in Warsaw [1].") == "Warsaw" and factoid.read("") is None
    completed = factoid.complete("Warsaw")
    assert completed.startswith("Warsaw\n") and "born in Warsaw" in completed
    assert factoid.resupport("Warsaw\nShe was born in Paris.") is not None
    assert factoid.resupport("Lyon\nShe was born in Lyon.") is None      # not in the evidence


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


def test_an_answer_cut_off_by_max_tokens_keeps_its_whole_claims_and_says_so():
    model = Scripted(Generation("Bật nguồn máy nén khí [1]. Mở van xả rồi đợi cho tới kh",
                                finish_reason="length", completion_tokens=20))
    model.chat = lambda messages, **kw: model.replies.pop(0)
    out = answer(draft(check=grounding_check([EVIDENCE])), model, CONFIG)
    assert out.truncated and out.text == "Bật nguồn máy nén khí [1]."
    assert out.cut_claim == "Mở van xả rồi đợi cho tới kh" and out.answer_source == "model"
    assert out.to_dict()["truncated"] and out.to_dict()["cut_claim"] == out.cut_claim


def test_an_answer_cut_off_before_its_first_claim_ends_is_replaced():
    model = Scripted()
    model.chat = lambda messages, **kw: Generation("Bật nguồn máy nén", finish_reason="length")
    out = answer(draft(check=grounding_check([EVIDENCE])), model, CONFIG)
    assert out.answer_source == "fallback" and "cut off" in out.check.reason


def test_generation_figures_come_from_the_backends_counters():
    gen = Generation("x", "stop", prompt_tokens=400, completion_tokens=50,
                     extra={"prompt_ms": 2000.0, "prompt_tokens": 400, "eval_ms": 5000.0, "eval_tokens": 50})
    assert generation_figures(gen) == {"prompt_tokens": 400, "completion_tokens": 50, "prompt_ms": 2000.0,
                                       "prompt_tokens_per_s": 200.0, "generation_ms": 5000.0,
                                       "generation_tokens_per_s": 10.0}
    assert generation_figures(Generation("x", "stop", 3, 1)) == {"prompt_tokens": 3, "completion_tokens": 1}


def outcome(text: str, source: str, evidence: list[str]) -> Outcome:
    check = grounding_check(evidence)(text)
    return Outcome(text, source, check)


CITED = [Citation(id=n, doc_id=f"d{n}") for n in range(1, 5)]


def test_a_model_answer_gets_the_citations_of_the_evidence_that_supports_its_uncited_claims():
    evidence = ["The AMF selects an SMF.", "The SMF allocates the UE IP address.", "x", "The NRF stores profiles."]
    text, cited = settle_citations(outcome("The SMF allocates the UE IP address. The AMF selects an SMF.",
                                           "model", evidence), CITED)
    assert text == "The SMF allocates the UE IP address [1]. The AMF selects an SMF [2]."
    assert [(c.id, c.doc_id, c.evidence) for c in cited] == [(1, "d2", 2), (2, "d1", 1)]


def test_any_answer_numbers_only_what_it_cites_in_the_order_it_cites_it():
    text, cited = settle_citations(Outcome("Quote [4]. Other [2, 4].", "fallback", Check(False, "x")), CITED)
    assert text == "Quote [1]. Other [2, 1]." and [c.doc_id for c in cited] == ["d4", "d2"]
    text, cited = settle_citations(Outcome("Nothing cited.", "evidence", Check(True)), CITED)
    assert text == "Nothing cited." and [c.id for c in cited] == [1, 2, 3, 4]


def test_evidence_items_may_map_to_other_citations():
    # The lexical check reads the outline steps after the chunks: step 1 was cut from chunk 2.
    text, cited = settle_citations(outcome("Mở van xả.", "model", ["Bật nguồn.", "x", "Mở van xả."]),
                                   CITED[:2], cites=[1, 2, 2])
    assert text == "Mở van xả [1]." and [c.doc_id for c in cited] == ["d2"]


def test_a_refusal_claims_nothing_and_passes():
    out = answer(draft(refusals=("Không đủ thông tin trong tài liệu.",)),
                 Scripted("Không đủ thông tin trong tài liệu"), CONFIG)
    assert out.answer_source == "model" and out.check.details == {"refusal": True}


def test_a_model_answer_that_answers_then_refuses_is_replaced_with_why():
    evidence = ["The working pressure is usually 6 to 8 bar."]
    checked = draft(check=grounding_check(evidence), evidence_answer="The working pressure is usually 6 to 8 bar [1].",
                    refusals=("The evidence is not enough to answer.",))
    out = answer(checked, Scripted("The working pressure is 6 to 8 bar [1]. The evidence is not enough to answer."),
                 CONFIG)
    assert out.answer_source == "fallback" and out.text == "The working pressure is usually 6 to 8 bar [1]."
    assert "contradicts itself" in out.fallback_reason
    # The pipeline's refusal alone still passes: it claims nothing.
    alone = answer(checked, Scripted("The evidence is not enough to answer."), CONFIG)
    assert alone.answer_source == "model" and alone.check.passed


def test_a_quoted_spec_reference_is_kept_and_not_counted_as_a_citation():
    evidence = ["The SCP queries the NRF on behalf of the consumer, see clause 6.3.1 [2].", "The AMF selects an SMF."]
    text = "The SCP queries the NRF on behalf of the consumer, see clause 6.3.1 [2]. [1]"
    out = answer(draft(check=grounding_check(evidence)), Scripted(text), CONFIG)
    assert out.answer_source == "model" and out.check.passed, out.check.reason
    assert citations(out.text, evidence) == (1,) and strip_citations(out.text, evidence).endswith("6.3.1 [2].")


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
        assert strip_citations(data["answer"]) == strip_citations(trace["model_answer"]) or trace["dropped_claims"]
    # Every [n] of the answer is a citation, numbered 1, 2, ... in the order first cited.
    ids = [c["id"] for c in data["citations"]]
    assert ids == list(range(1, len(ids) + 1))
    cited = citations(data["answer"])
    assert set(cited) <= set(ids)
    if cited:
        assert list(cited) == sorted(cited, key=cited.index) and len(cited) == len(ids)
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


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_the_instruct_model_answers_every_pipeline_with_citations_and_a_check(pipeline, demo_sources, instruct_model):
    """Qwen2.5-Coder-1.5B (make model) on one demo question per pipeline: the answer's
    structure, citations that resolve, and a check that passed or says why not."""
    service = Service(demo_sources, llm=instruct_model)
    try:
        data = service.ask(AskRequest(QUESTIONS[pipeline], pipeline))
    finally:
        service.close()
    vocabulary(data, asked_model=True)
    trace = data["trace"]
    assert trace["answer_source"] in ("model", "fallback") and trace["model_answer"]
    assert trace["check"]["passed"] or trace["check"]["reason"]
    assert data["citations"] and trace["generation"]["prompt_tokens"] > 0
    assert trace["generation"]["generation_tokens_per_s"] > 0 and trace["finish_reason"] in ("stop", "length")
    if trace["answer_source"] == "model" and pipeline != "kg":
        assert citations(data["answer"]), "a model answer keeps its citations"


@pytest.mark.slow
@pytest.mark.parametrize("pipeline, window, answer", [("lexical", 1536, 48), ("causal", 2048, 64)])
def test_the_prompts_are_sized_by_the_given_models_own_window(pipeline, window, answer, demo_sources):
    """A model loaded with its own window and answer length gets prompts that fit them, not
    prompts sized by the environment's defaults (2,048 and 320): the lexical pipeline keeps
    fewer chunks; the causal one, whose whole prompt takes about 2,900 of the tests' model's
    tokens, shows fewer chains. Before, both failed with llama.cpp's "exceed context window"."""
    small = GGUFModel(LLMConfig(n_ctx=window, max_tokens=answer, n_threads=2))
    service = Service(demo_sources, llm=small)
    try:
        data = service.ask(AskRequest(QUESTIONS[pipeline], pipeline))
    finally:
        service.close()
        small.close()
    trace = data["trace"]
    assert "context window" not in trace["check"]["reason"], trace["check"]["reason"]
    assert trace["finish_reason"] in ("stop", "length")
    assert 0 < trace["generation"]["prompt_tokens"] <= window - answer
    if pipeline == "lexical":
        assert 0 < trace["context_budget"] <= window - answer


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_every_evidence_answer_passes_its_own_check(pipeline, demo_sources):
    """What a pipeline writes from its evidence is what its check accepts: the check
    and the evidence answers speak of the same evidence, numbered alike."""
    service = Service(demo_sources)
    try:
        data = service.ask(AskRequest(QUESTIONS[pipeline], pipeline, no_llm=True))
    finally:
        service.close()
    assert data["trace"]["check"]["passed"], data["trace"]["check"]["reason"]
    vocabulary(data, asked_model=False)


def test_a_checked_answer_is_settled_one_of_four_ways():
    from ragkit.answer.stage import settle

    evidence = ["The pump runs at 5 bar and draws 2 kW.", "The valve opens at 3 bar."]
    drafted = draft(check=grounding_check(evidence), evidence_answer="The pump runs at 5 bar [1]")
    good = "The pump runs at 5 bar [1]."
    assert (s := settle(good, drafted.judge(good), drafted)).how == "written" and s.text == good
    padded = "The pump runs at 5 bar [1]. It was built in Peru by hand in 1901 [1]."
    trimmed = settle(padded, drafted.judge(padded), drafted)
    assert trimmed.how == "trimmed" and trimmed.check.passed and "Peru" not in trimmed.text
    assert [d["text"] for d in trimmed.dropped] == ["It was built in Peru by hand in 1901 [1]."]
    wrong = "It was built in Peru [1]."
    assert (s := settle(wrong, drafted.judge(wrong), drafted)).how == "replaced" and s.text == drafted.evidence_answer
    repairing = draft(check=grounding_check(evidence),
                      short_reader=Repairs(lambda text: "5 bar\nThe pump runs at 5 bar [1]"))
    resupported = settle(wrong, repairing.judge(wrong), repairing)
    assert resupported.how == "resupported" and resupported.check.passed
