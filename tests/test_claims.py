"""The claim-level grounding check: claims, citations, each kind of unsupported claim, the
answer stage's drop/fallback policy and ``ragkit check``."""

import json
import subprocess
import sys

import pytest

from ragkit.answer.stage import Draft, answer, grounding_check
from ragkit.config import LLMConfig
from ragkit.answer.claims import citations, remove_claims, split_claims
from ragkit.answer.grounding import check_claims, judge_borderline
from ragkit.answer.verdicts import Support

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
    assert claim.support == Support(2, SPEC[1]) and claim.cited == []
    assert claim.to_dict()["support"] == {"evidence": 2, "span": SPEC[1]} and claim.to_dict()["evidence"] == 2


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
    assert out.check.passed and [c.verdict for c in out.check.verdicts] == ["supported"]
    assert [c["verdict"] for c in out.check.to_dict()["claims"]] == ["supported"]
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
    report = check_claims(text, evidence)
    assert report.claims[0].borderline and report.to_dict()["claims"][0]["borderline"] and not report.passed
    judged, rows = judge_borderline(report, Judge())
    assert judged.passed and rows[0]["claim"] == 1 and rows[0]["logodds"] > 0
    assert judged.to_dict()["claims"][0]["supported"] and "borderline" not in judged.to_dict()["claims"][0]
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

    from ragkit.answer import claims, grounding

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
    assert not report.passed and verdict.verdict == "miscited" and verdict.support.evidence == 1
    assert verdict.why == "cites [2], but [1] supports it"
    out = answer(Draft("x [1]", grounding_check(evidence), prompt=lambda m: ([], None)),
                 Scripted("Áp suất làm việc từ 6 đến 8 bar [2]. Dầu thay sau 500 giờ chạy [2]."), LLMConfig())
    assert out.answer_source == "model" and out.check.passed
    assert out.text == "Áp suất làm việc từ 6 đến 8 bar [1]. Dầu thay sau 500 giờ chạy [2]."
    assert out.to_dict()["recited_claims"] == [{"text": "Áp suất làm việc từ 6 đến 8 bar [2].", "cited": [2], "now": 1}]
    # A claim no item supports stays unsupported, whatever it cites.
    assert check_claims("Áp suất tối đa 12 bar [2].", evidence).claims[0].verdict == "unsupported"


# A 3GPP-style evidence set whose own text carries reference brackets ("TS 23.502 [3]").
SPEC_REFS = ["The NF service consumer sends a discovery request to the NRF, as specified in TS 23.502 [3]. "
             "The NRF answers with the NF profiles of the matching NF instances.",
             "An NF Set is a group of interchangeable NF instances of the same type [11].",
             "The SCP routes indirect communication between NF service consumers and producers. When delegated "
             "discovery is used, the SCP queries the NRF on behalf of the consumer, see clause 6.3.1 [2]."]


def test_brackets_of_quoted_source_text_are_not_citations():
    from ragkit.answer.claims import renumber_citations, strip_citations

    quoting = ("The SCP routes indirect communication between NF service consumers and producers [3]. When delegated "
               "discovery is used, the SCP queries the NRF on behalf of the consumer, see clause 6.3.1 [2].")
    # The quoted sentence's "[2]" is clause 6.3.1's reference, not evidence item 2.
    assert [c.cited for c in split_claims(quoting, SPEC_REFS)] == [(3,), ()]
    assert citations(quoting, SPEC_REFS) == (3,)
    assert strip_citations(quoting, SPEC_REFS).endswith("see clause 6.3.1 [2].")
    assert renumber_citations(quoting, {3: 1}, SPEC_REFS) == quoting.replace("producers [3]", "producers [1]")
    report = check_claims(quoting, SPEC_REFS)
    assert report.passed, report.reason
    # The same reading without the evidence, by position: a bracket followed by words is text,
    # and one before a full stop that the answer's own marker follows is the quoted sentence's.
    assert citations("See TS 23.502 [3] for the procedure [2].") == (2,)
    assert renumber_citations("See TS 23.502 [3] for the procedure [2].", {2: 1}) == \
        "See TS 23.502 [3] for the procedure [1]."
    assert citations("As specified in TS 23.502 [3]. [1]") == (1,)
    assert [c.body for c in split_claims("As specified in TS 23.502 [3]. [1]")] == ["As specified in TS 23.502 [3]."]
    # A bracket outside the evidence beside a real citation is source text; alone, a bad citation.
    assert citations("An NF Set groups interchangeable NF instances [11] [2].", 3) == (2,)
    assert check_claims("An NF Set is a group of interchangeable NF instances of the same type [11] [2].",
                        SPEC_REFS).passed
    assert verdicts("The AMF selects an SMF [7].", SPEC) == ["unsupported"]
    # Vietnamese text with its own references; the evidence has two items, the paper's "[7]" is not one.
    pm = ["Ở miền Bắc, nồng độ PM2.5 mùa đông thường cao gấp 2 đến 3 lần mùa hè [12]. Nghịch nhiệt làm lớp không "
          "khí sát mặt đất bị giữ lại, khiến bụi mịn tích tụ [7].", "Mưa rửa trôi bụi mịn trong không khí [5]."]
    answer_vi = ("Nghịch nhiệt làm lớp không khí sát mặt đất bị giữ lại, khiến bụi mịn tích tụ [7]. "
                 "Vì vậy nồng độ PM2.5 mùa đông thường cao gấp 2 đến 3 lần mùa hè [1].")
    assert check_claims(answer_vi, pm).passed
    # What the quote changes is still caught: a spec number changed, two functions swapped.
    assert not check_claims(quoting.replace("the SCP queries the NRF", "the NRF queries the SCP"), SPEC_REFS).passed
    assert not check_claims(answer_vi.replace("2 đến 3", "4 đến 5"), pm).passed
    changed = "The NF service consumer sends a discovery request to the NRF, as specified in TS 23.503 [3]."
    assert not check_claims(changed, SPEC_REFS).passed


GIFTS = ["Employees may accept gifts from suppliers only if their value does not exceed 50 euros. Gifts worth more "
         "than 50 euros must be declined and reported to the compliance officer."]


def test_numbers_and_names_the_question_states_are_given_not_claimed():
    question = "Can I accept a gift worth 120 euros from a supplier?"
    report = check_claims("No, gifts worth more than 50 euros must be declined [1]; 120 euros is above that.",
                          GIFTS, question)
    assert report.passed, report.reason
    # The rest must still be the evidence's: the question's number alone, or a threshold changed, fails.
    assert not check_claims("Yes, a gift worth 120 euros may be accepted [1].", GIFTS, question).passed
    assert not check_claims("No, gifts worth more than 100 euros must be declined [1]; 120 euros is above that.",
                            GIFTS, question).passed
    # The question's number may not stand in for the evidence's (same unit, left out).
    leave = ["Employees with at least 5 years of service receive 28 days of paid leave per year; others receive 25 "
             "days."]
    asked = "I have worked here for 7 years. How many days of paid leave do I get?"
    assert check_claims("With at least 5 years of service you receive 28 days of paid leave per year [1], and 7 "
                        "years is more than 5.", leave, asked).passed
    assert not check_claims("With at least 7 years of service you receive 28 days of paid leave per year [1].",
                            leave, asked).passed
    # Vietnamese, and a name the question gives to a rule that names no one.
    manual = ["Áp suất làm việc thường từ 6 đến 8 bar; rơ le áp suất tự ngắt động cơ khi đạt áp suất cài đặt. "
              "Van an toàn trên bình mở khi áp suất vượt giới hạn."]
    hoi = "Máy nén khí của tôi đang chạy ở 10 bar, như vậy có ổn không?"
    assert check_claims("Áp suất làm việc của máy chỉ từ 6 đến 8 bar [1], nên 10 bar là vượt giới hạn làm việc.",
                        manual, hoi).passed
    assert not check_claims("Áp suất làm việc 10 bar vẫn nằm trong giới hạn của máy [1].", manual, hoi).passed
    badge = ["Visitors must wear a visitor badge at all times and be escorted by an employee."]
    assert check_claims("Yes, Tom Becker must wear a visitor badge at all times [1].", badge,
                        "Does my guest, Tom Becker, need to wear a badge?").passed
    # A claim made only of the question's words must be said by the span itself.
    assert not check_claims("Yes, gifts worth 120 euros may be accepted from a supplier.", GIFTS, question).passed


def test_a_claim_may_compare_the_two_items_it_cites_part_by_part():
    nf = ["An NF Set is a group of interchangeable NF instances of the same type that support the same services "
          "and share the same context data.",
          "An NF Service Set is a group of interchangeable NF service instances of the same service type within "
          "one NF instance."]
    right = ("An NF Set is a group of interchangeable NF instances of the same type that share the same context "
             "data, whereas an NF Service Set is a group of interchangeable NF service instances within one NF "
             "instance [1][2].")
    report = check_claims(right, nf, "What is the difference between an NF Set and an NF Service Set?")
    assert report.passed, report.reason
    assert [p.evidence for p in report.claims[0].support.parts] == [1, 2]
    assert [p["evidence"] for p in report.to_dict()["claims"][0]["support"]["parts"]] == [1, 2]
    swapped = ("An NF Set is a group of interchangeable NF service instances within one NF instance, whereas an NF "
               "Service Set is a group of interchangeable NF instances that share the same context data [1][2].")
    assert not check_claims(swapped, nf).passed
    machines = ["Máy khoan đứng dùng để khoan lỗ; phôi phải được kẹp chặt trên ê tô trước khi khoan.",
                "Máy phay đứng dùng dao phay để gia công mặt phẳng và rãnh."]
    hoi = "Máy khoan đứng và máy phay đứng khác nhau thế nào?"
    assert check_claims("Máy khoan đứng dùng để khoan lỗ, còn máy phay đứng dùng dao phay để gia công mặt phẳng "
                        "và rãnh [1][2].", machines, hoi).passed
    # Most of the words are the milling machine's, but "khoan" is only the drill's: no item supports it.
    assert not check_claims("Máy khoan đứng dùng dao phay để gia công rãnh, còn máy phay đứng dùng để khoan lỗ "
                            "[1][2].", machines, hoi).passed


def test_an_answer_that_answers_and_refuses_contradicts_itself():
    evidence = ["The working pressure is usually 6 to 8 bar. Change the oil after about 500 running hours."]
    report = check_claims("The working pressure is usually 6 to 8 bar [1]. The evidence is not enough to answer.",
                          evidence)
    assert not report.passed and [c.verdict for c in report.claims] == ["supported", "inconsistent"]
    assert report.reason.startswith("the answer contradicts itself: claim 2")
    mixed_vi = check_claims("Bằng chứng không đủ để trả lời. Dầu thay sau khoảng 500 giờ chạy [1].",
                            ["Dầu máy nén thay sau khoảng 500 giờ chạy."])
    assert not mixed_vi.passed and mixed_vi.claims[0].verdict == "inconsistent"
    # Saying the evidence lacks what the answer has just stated is the same contradiction.
    assert not check_claims("The working pressure is usually 6 to 8 bar [1]. The documents do not state the "
                            "working pressure.", evidence).passed
    # A refusal alone claims nothing; a partial answer may say what the evidence leaves open.
    alone = check_claims("The provided documents do not state which oil grade to use.", evidence)
    assert alone.passed and [c.verdict for c in alone.claims] == ["refusal"]
    partial = check_claims("Dầu máy nén thay sau khoảng 500 giờ chạy [1]. Tài liệu không nêu loại dầu cần dùng.",
                           ["Dầu máy nén thay sau khoảng 500 giờ chạy."])
    assert partial.passed and [c.verdict for c in partial.claims] == ["supported", "refusal"]


RULE = ["Tuyệt đối không mở nắp máy khi máy đang chạy. Chỉ vệ sinh máy sau khi đã ngắt nguồn điện."]
BAN = ["Dầu cũ chẳng được đổ xuống cống hay xuống đất; phải thu gom vào thùng chứa riêng."]


@pytest.mark.parametrize("answer, evidence", [
    ("Không được mở nắp khi máy đang chạy [1].", RULE),
    ("Không mở nắp máy khi máy đang chạy [1].", RULE),
    ("Cấm mở nắp máy khi máy đang chạy [1].", RULE),
    ("Đừng mở nắp máy khi máy còn đang chạy [1].", RULE),
    ("Chẳng được mở nắp máy khi máy đang chạy [1].", RULE),
    ("Chưa tắt máy thì không mở nắp máy [1].", RULE),
    ("Không được đổ dầu cũ xuống cống [1].", BAN),
    ("Cấm đổ dầu cũ xuống đất; phải thu gom vào thùng chứa riêng [1].", BAN),
    ("Không được hút thuốc gần bình chứa khí nén [1].", ["Cấm hút thuốc và dùng lửa trần gần bình chứa khí nén."]),
    ("Không được dùng nước để dập đám cháy thiết bị điện [1].",
     ["Chẳng bao giờ được dùng nước để dập đám cháy thiết bị điện."]),
])
def test_a_vietnamese_rule_restated_with_another_negator_passes(answer, evidence):
    report = check_claims(answer, evidence)
    assert report.passed, report.reason


@pytest.mark.parametrize("answer, evidence", [
    ("Được mở nắp khi máy đang chạy [1].", RULE),
    ("Có thể mở nắp máy khi máy đang chạy [1].", RULE),
    ("Nên mở nắp máy khi máy đang chạy [1].", RULE),
    ("Có thể đổ dầu cũ xuống cống [1].", BAN),
    ("Hút thuốc gần bình chứa khí nén được phép [1].", ["Cấm hút thuốc và dùng lửa trần gần bình chứa khí nén."]),
    ("Không vệ sinh máy sau khi đã ngắt nguồn điện [1].", RULE),           # a negation added
    ("Không được thu gom dầu cũ vào thùng chứa riêng [1].", BAN),          # a negation added
])
def test_a_vietnamese_rule_with_its_negation_flipped_fails(answer, evidence):
    assert not check_claims(answer, evidence).passed


def test_a_span_without_the_claim_s_numbers_does_not_contradict_it():
    # "không xác định thời hạn" (an indefinite term) in another item, about another fact
    evidence = ["Người lao động theo hợp đồng không xác định thời hạn được nghỉ 12 ngày mỗi năm.",
                "Hợp đồng xác định thời hạn có thời hạn không quá 36 tháng."]
    assert check_claims("Hợp đồng xác định thời hạn có thời hạn không quá 36 tháng [2].", evidence).passed
    assert not check_claims("Hợp đồng không xác định thời hạn có thời hạn không quá 36 tháng [2].", evidence).passed
    assert not check_claims("Người lao động theo hợp đồng xác định thời hạn được nghỉ 12 ngày mỗi năm [1].",
                            evidence).passed


def test_a_factoid_answers_short_answer_is_its_first_claim_and_the_json_keeps_its_keys():
    report = check_claims("The SMF controls the UPF [2].", SPEC)
    with_short = report.with_short_answer("the SMF")
    assert with_short.core == report.core + 1 and with_short.claims[1:] == report.claims
    assert with_short.claims[0].verdict == "short_answer" and with_short.claims[0].support is None
    assert with_short.to_dict()["claims"][0] == {"text": "the SMF", "body": "the SMF", "cited": [],
                                                 "verdict": "short_answer", "why": "occurs in the evidence"}
    assert list(with_short.to_dict()) == ["passed", "reason", "core", "distinct_trigrams", "claims"]
