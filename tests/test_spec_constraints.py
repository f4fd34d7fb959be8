"""Spec questions that name a release, a spec or the latest version: the constraint read off
the question, the stored documents that meet it, and the spec pipeline answering from those
only, or saying in one sentence that the store holds none (real TR 21.905 Rel-17, TS 23.501
Rel-16 and TS 29.500 Rel-18 from ../shared)."""

import pytest

from ragkit.specs.constraints import SpecConstraint, allowed_documents, read_constraint, unmet

DOCUMENTS = [{"spec_id": "tr_21.905@17.2.0", "version": "17.2.0", "release": "17"},
             {"spec_id": "ts_23.501@16.4.0", "version": "16.4.0", "release": "16"},
             {"spec_id": "ts_23.501@17.1.0", "version": "17.1.0", "release": "17"},
             {"spec_id": "ts_29.500@18.10.0", "version": "18.10.0", "release": "18"}]


@pytest.mark.parametrize("question, constraint, rest", [
    ("What is SCP in Rel-17?", SpecConstraint(release="17"), "What is SCP?"),
    ("In Release 16, what is the NRF?", SpecConstraint(release="16"), "what is the NRF?"),
    ("What does the AMF do per 3GPP TS 23.501 Rel-16?", SpecConstraint(release="16", spec="23.501"),
     "What does the AMF do?"),
    ("According to TR 21.905, what is UE?", SpecConstraint(spec="21.905"), "what is UE?"),
    ("What is the SMF in the latest version of TS 23.501?", SpecConstraint(spec="23.501", latest=True),
     "What is the SMF?"),
    ("SCP là gì trong phiên bản phát hành 17?", SpecConstraint(release="17"), "SCP là gì?"),
    ("What was GPRS in Rel-99?", SpecConstraint(release="1999"), "What was GPRS?"),
    # no constraint: numbers, words that begin with "rel", a spec-like number without its kind
    ("What is the reliability of URLLC at 10.000 packets?", SpecConstraint(), None),
    ("How is a PDU session released?", SpecConstraint(), None),
])
def test_the_constraint_is_read_off_the_question(question, constraint, rest):
    found, remaining = read_constraint(question)
    assert found == constraint
    assert remaining == (rest if rest is not None else question)


def test_documents_that_meet_a_constraint():
    def allowed(question):
        return allowed_documents(read_constraint(question)[0], DOCUMENTS)

    assert allowed("What is SCP in Rel-17?") == {"tr_21.905@17.2.0", "ts_23.501@17.1.0"}
    assert allowed("What does TS 23.501 say about SCP?") == {"ts_23.501@16.4.0", "ts_23.501@17.1.0"}
    assert allowed("What is SCP in the latest version of TS 23.501?") == {"ts_23.501@17.1.0"}
    assert allowed("What is SCP in TS 23.501 Release 16?") == {"ts_23.501@16.4.0"}
    assert allowed("What is SCP in Rel-15?") == set()
    assert allowed("What is SCP?") == {d["spec_id"] for d in DOCUMENTS}


def test_an_unmet_constraint_is_one_sentence_naming_what_is_held():
    message = unmet(read_constraint("What does TS 23.502 say about the AMF?")[0], DOCUMENTS[:2])
    assert message == ("The loaded specifications hold no document of 23.502 "
                       "(they hold 21.905 Release 17, 23.501 Release 16).")
    assert "no Release 15 document" in unmet(SpecConstraint(release="15"), DOCUMENTS)


def _ask(store, question):
    from ragkit.pipelines.spec import ask_spec

    return ask_spec(question, store, use_llm=False)


@pytest.mark.slow
def test_a_release_keeps_the_evidence_to_its_documents(nx_spec_store):
    # SCP is the Service Communication Proxy in TS 23.501 (Rel-16) and TS 29.500 (Rel-18), and
    # the Service Control Point in TR 21.905 (Rel-17)
    rel16 = _ask(nx_spec_store, "What is SCP in Rel-16?")
    assert {c.spec_id for c in rel16.citations} == {"ts_23.501@16.4.0"}
    assert "Service Communication Proxy" in rel16.answer
    rel17 = _ask(nx_spec_store, "What does SCP stand for in Release 17?")
    assert {c.spec_id for c in rel17.citations} == {"tr_21.905@17.2.0"}
    assert "Service Control Point" in rel17.answer and "Communication Proxy" not in rel17.answer
    assert rel17.trace.analysis["constraint"] == {"release": "17", "spec": "", "latest": False}


@pytest.mark.slow
def test_a_named_spec_keeps_the_evidence_to_it(nx_spec_store):
    answer = _ask(nx_spec_store, "According to TS 29.500, what is the SCP?")
    assert {c.spec_id for c in answer.citations} == {"ts_29.500@18.10.0"}
    assert "Service Communication Proxy" in answer.answer


@pytest.mark.slow
def test_an_absent_release_or_spec_is_said_plainly(nx_spec_store):
    for question in ("What is the AMF in Rel-15?", "What does TS 23.502 say about the AMF?"):
        answer = _ask(nx_spec_store, question)
        assert answer.answer.startswith("The loaded specifications hold no"), answer.answer
        assert "23.501 Release 16" in answer.answer and not answer.citations
