"""The claim-level grounding check: claims, citations, each kind of unsupported claim, the
answer stage's drop/fallback policy and ``ragkit check``."""

import json
import subprocess
import sys

import pytest

from ragkit.answering import Draft, answer, grounding_check
from ragkit.config import LLMConfig
from ragkit.llm.claims import citations, remove_claims, split_claims
from ragkit.llm.grounding import check_claims, judge_borderline

from .test_answering import Scripted

SPEC = ["The AMF selects an SMF when the UE asks for a PDU Session. The AMF does not store subscription data.",
        "The SMF allocates the UE IP address and controls the UPF over the N4 interface."]
MANUAL = ["Áp suất làm việc thường từ 6 đến 8 bar. Dầu máy nén thay sau khoảng 500 giờ chạy.",
          "Máy nén khí nén không khí vào bình chứa. Không sửa chữa bình chứa đang có áp suất."]


def verdicts(text, evidence, question=""):
    return [c.verdict for c in check_claims(text, evidence, question).claims]


def test_sentences_and_list_items_are_claims_with_their_citations():
    claims = split_claims("The AMF selects an SMF [1]. It allocates 10.2 addresses, e.g. IPv4. [2]\n"
                          "- Bước 1: Xả nước [1, 2]\n2) Thay dầu [3-4]")
    assert [c.body for c in claims] == ["The AMF selects an SMF.", "It allocates 10.2 addresses, e.g. IPv4.",
                                        "Bước 1: Xả nước", "Thay dầu"]
    assert [c.cited for c in claims] == [(1,), (2,), (1, 2), (3, 4)]
    assert citations("no citation here") == ()


def test_a_line_wrapped_mid_sentence_is_one_claim():
    assert [c.body for c in split_claims("Dầu máy nén thay sau\nkhoảng 500 giờ chạy.")] == \
        ["Dầu máy nén thay sau\nkhoảng 500 giờ chạy."]


def test_removing_a_claim_keeps_the_rest_as_written():
    text = "- Xả nước [1]\n- Mua cổ phiếu [2]\n- Thay dầu [1]"
    assert remove_claims(text, [split_claims(text)[1]]) == "- Xả nước [1]\n- Thay dầu [1]"


def test_a_claim_is_checked_against_the_evidence_it_cites():
    assert verdicts("The AMF selects an SMF [1].", SPEC) == ["supported"]
    report = check_claims("The AMF selects an SMF [2].", SPEC)
    assert report.claims[0].verdict == "miscited" and report.claims[0].why == "cites [2], but [1] supports it"
    assert verdicts("The AMF selects an SMF [7].", SPEC) == ["unsupported"]
    # uncited: any evidence may support it, and the trace names which and the sentence
    claim = check_claims("The SMF controls the UPF over the N4 interface.", SPEC).claims[0]
    assert claim.support == {"evidence": 2, "span": SPEC[1]} and claim.cited == []


@pytest.mark.parametrize("perturbed", [
    "Áp suất làm việc thường từ 6 đến 9 bar.",                 # a number changed
    "Dầu máy nén thay sau khoảng 500 phút chạy.",              # a unit changed
    "The AMF stores subscription data [1].",                   # a negation dropped
    "Dầu máy nén không thay sau khoảng 500 giờ chạy.",         # a negation added (Vietnamese)
    "The SMF never allocates the UE IP address [2].",          # a negation added (English)
    "The SMF selects an AMF when the UE asks for a PDU Session [1].",   # names swapped
    "The NRF selects an SMF when the UE asks for a PDU Session [1].",   # a name not in the evidence
    "The UPF applies the QoS rules that the SMF installs.",    # a fact from elsewhere
])
def test_every_kind_of_unsupported_claim_is_caught(perturbed):
    assert verdicts(perturbed, SPEC + MANUAL) == ["unsupported"]


def test_what_the_evidence_says_passes_in_other_words_and_voices():
    assert verdicts("An SMF is selected by the AMF [1].", SPEC) == ["supported"]
    assert verdicts("Áp suất làm việc của máy nén khí từ 6 đến 8 bar.", MANUAL,
                    "Áp suất làm việc của máy nén khí là bao nhiêu?") == ["supported"]
    assert verdicts("Máy nén khí nén không khí vào bình chứa.", MANUAL) == ["supported"]   # "không khí" is air


def test_refusals_claim_nothing_and_headings_are_not_claims():
    assert verdicts("The evidence is not enough to answer.", SPEC) == ["refusal"]
    assert verdicts("Không đủ thông tin trong tài liệu để trả lời câu hỏi này.", MANUAL) == ["refusal"]
    report = check_claims("Trả lời:\nÁp suất từ 6 đến 8 bar [1].", MANUAL)
    assert [c.verdict for c in report.claims] == ["no claim", "supported"] and report.passed and report.core == 1


def test_a_looping_answer_fails_even_when_its_words_are_in_the_evidence():
    report = check_claims("xả nước xả nước xả nước xả nước xả nước xả nước xả nước", ["xả nước"])
    assert not report.passed and "repeats itself" in report.reason


def plain_draft(evidence, **kw):
    return Draft(evidence_answer="Áp suất từ 6 đến 8 bar [1]", check=grounding_check(evidence),
                 prompt=lambda model: ([{"role": "user", "content": "q"}], None), **kw)


def test_the_answer_stage_drops_unsupported_claims_when_the_core_claim_holds():
    out = answer(plain_draft(MANUAL), Scripted("Áp suất làm việc từ 6 đến 8 bar [1]. Máy nén khí rất rẻ và bền [2]."),
                 LLMConfig())
    assert out.answer_source == "model" and out.text == "Áp suất làm việc từ 6 đến 8 bar [1]."
    assert out.check.passed and [c["verdict"] for c in out.check.details["claims"]] == ["supported"]
    trace = out.to_dict()
    assert trace["dropped_claims"][0]["text"] == "Máy nén khí rất rẻ và bền [2]."
    assert trace["model_answer"].endswith("bền [2].")


def test_the_answer_stage_falls_back_when_the_core_claim_fails():
    out = answer(plain_draft(MANUAL), Scripted("Áp suất làm việc từ 9 đến 12 bar [1]. Dầu thay sau 500 giờ [1]."),
                 LLMConfig())
    assert out.answer_source == "fallback" and out.text == "Áp suất từ 6 đến 8 bar [1]"
    assert out.fallback_reason.startswith("the core claim (claim 1) is not supported") and "9" in out.fallback_reason
    assert "dropped_claims" not in out.to_dict()


class Judge(Scripted):
    """A model that also scores Yes/No: always Yes."""

    def choice_logprobs(self, prompt, choices):
        return [-0.1 if c.strip().lower() == "yes" else -5.0 for c in choices]


def test_a_model_judge_may_confirm_a_borderline_claim_when_asked():
    evidence = ["The SMF allocates the UE IP address and controls the UPF."]
    text = "The SMF allocates the UE IP address dynamically from a local pool [1]."
    details = check_claims(text, evidence).to_dict()
    assert details["claims"][0].get("borderline") and not details["passed"]
    judged, rows = judge_borderline(details, Judge())
    assert judged["passed"] and rows[0]["claim"] == 1 and rows[0]["logodds"] > 0
    off = answer(Draft("x", grounding_check(evidence), lambda m: ([], None)), Judge(text), LLMConfig())
    on = answer(Draft("x", grounding_check(evidence), lambda m: ([], None)), Judge(text),
                LLMConfig(judge_claims=True))
    assert (off.answer_source, on.answer_source) == ("fallback", "model") and on.to_dict()["claim_judge"]


def run_check(*args):
    return subprocess.run([sys.executable, "-m", "ragkit.cli", "check", *args], capture_output=True, text=True)


def test_ragkit_check_reports_each_claim(tmp_path):
    evidence = tmp_path / "evidence.jsonl"
    evidence.write_text("\n".join(json.dumps({"id": f"doc{i}", "text": t}) for i, t in enumerate(SPEC)), encoding="utf-8")
    done = run_check("--answer", "The AMF selects an SMF [1]. The UPF controls the SMF [2].",
                     "--evidence", str(evidence), "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 0 and not data["passed"]
    assert [(c["supported"], c["evidence"]) for c in data["claims"]] == [(True, "doc0"), (False, "doc1")]
    assert "swap their roles" in data["claims"][1]["why"]


@pytest.mark.parametrize("content, problem", [(None, "no such file"), ("{not json", "not JSON"),
                                              ("[]", "holds no evidence"), ("[3]", "item 1")])
def test_ragkit_check_refuses_bad_evidence_in_one_line(tmp_path, content, problem):
    path = tmp_path / "evidence.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    done = run_check("--answer", "x", "--evidence", str(path))
    assert done.returncode == 3 and done.stdout == ""
    assert problem in done.stderr and str(path) in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_examples_in_the_claim_modules_docstrings_hold():
    import doctest

    from ragkit.llm import claims, grounding

    for module in (claims, grounding):
        failed, tried = doctest.testmod(module)
        assert tried > 0 and failed == 0, module.__name__


def test_a_name_from_the_question_may_set_the_scene_but_not_act():
    evidence = ["The Service Communication Proxy (SCP) provides indirect communication between network functions.",
                "The AMF selects an SMF for the PDU Session."]
    framed = check_claims("The SCP provides indirect communication between network functions in the 5G Core [1].",
                          evidence, "What is SCP in 5G Core?")
    assert framed.passed, framed.reason
    # The same name as an actor is a claim the evidence does not make.
    acting = check_claims("The NRF selects an SMF for the PDU Session [2].", evidence, "Does the NRF select an SMF?")
    assert not acting.passed and "NRF" in acting.reason


def test_a_claim_citing_the_wrong_item_is_miscited_and_the_answer_stage_corrects_it():
    evidence = ["Áp suất làm việc thường từ 6 đến 8 bar.", "Dầu máy nén thay sau khoảng 500 giờ chạy."]
    report = check_claims("Áp suất làm việc từ 6 đến 8 bar [2].", evidence)
    verdict = report.claims[0]
    assert not report.passed and verdict.verdict == "miscited" and verdict.support["evidence"] == 1
    assert verdict.why == "cites [2], but [1] supports it"
    out = answer(Draft("x [1]", grounding_check(evidence), prompt=lambda m: ([], None)),
                 Scripted("Áp suất làm việc từ 6 đến 8 bar [2]. Dầu thay sau 500 giờ chạy [2]."), LLMConfig())
    assert out.answer_source == "model" and out.check.passed
    assert out.text == "Áp suất làm việc từ 6 đến 8 bar [1]. Dầu thay sau 500 giờ chạy [2]."
    assert out.to_dict()["recited_claims"] == [{"text": "Áp suất làm việc từ 6 đến 8 bar [2].", "cited": [2], "now": 1}]
    # A claim no item supports stays unsupported, whatever it cites.
    assert check_claims("Áp suất tối đa 12 bar [2].", evidence).claims[0].verdict == "unsupported"
