"""Spec ingestion, term extraction, both graph stores (same conformance tests), and the
design's acceptance questions on the real 3GPP documents from ../shared."""

import json
import subprocess
import sys

import pytest

from ragkit.errors import InputError, StoreUnavailableError
from ragkit.specs.nx_store import NetworkXStore
from ragkit.pipelines.spec import ask_spec
from ragkit.specs.evidence import analyze_question
from ragkit.specs.build import parse_specs
from ragkit.documents import continues, section_key
from ragkit.specs.ingest import load_spec, spec_id_from_name
from ragkit.specs.terms import acronyms_in, split_abbreviation_line, split_definition

from .conftest import DEMO_SPEC, ROOT, shared

pytestmark = pytest.mark.slow


# --------------------------------------------------------------------------- units
def test_spec_ids_and_versions_from_3gpp_file_names():
    assert spec_id_from_name("23501-g40.pdf") == ("ts_23.501", "16.4.0")
    assert spec_id_from_name("21905-h20.docx") == ("tr_21.905", "17.2.0")
    assert spec_id_from_name("29500-ia0.docx") == ("ts_29.500", "18.10.0")
    assert spec_id_from_name("notes.md") == ("", "")


def test_clause_numbering_rules():
    assert section_key("6.2.5a") == (6, 2, 5.01) and section_key("A.1") == (1001, 1)
    assert continues((6, 2, 9.01), (6, 2, 10))       # 6.2.9A → 6.2.10
    assert continues((6, 2, 3), (6, 3))              # back up a level
    assert continues((6, 2), (6, 2, 1))              # a child
    assert not continues((6, 2, 3), (4, 1))          # a table row or a reference, not a heading
    assert continues((11,), (1001,))                 # annex A


def test_abbreviation_lines():
    assert split_abbreviation_line("SCP\tService Communication Proxy") == ("SCP", "Service Communication Proxy")
    assert split_abbreviation_line("5G-AN PDB 5G Access Network Packet Delay Budget") == \
        ("5G-AN PDB", "5G Access Network Packet Delay Budget")
    assert split_abbreviation_line("5GS 5G System") == ("5GS", "5G System")
    assert split_abbreviation_line("CN PDB Core Network Packet Delay Budget") == ("CN PDB", "Core Network Packet Delay Budget")
    assert split_abbreviation_line("For the purposes of the present document, the following apply.") is None


def test_definition_paragraphs():
    assert split_definition("NF Set: A group of interchangeable NF instances.") == \
        ("NF Set", "A group of interchangeable NF instances.")
    assert split_definition("NOTE: this is a note") is None
    assert split_definition("For the purposes of the present document: x") is None


def test_question_analysis_keeps_common_words_out():
    assert acronyms_in("What is SCP in 5G Core?") == ["SCP"]
    assert analyze_question("What is SCP in 5G Core?").entities == ["SCP"]
    a = analyze_question("Difference between AMF and SMF")
    assert a.qtype == "comparison" and a.entities == ["AMF", "SMF"]
    assert analyze_question("Compare UPF and SMF").entities == ["UPF", "SMF"]
    assert analyze_question("How are PDU Sessions released?").qtype == "other"


@pytest.mark.parametrize("question,intent", [
    ("What does SCP stand for?", "expansion"), ("SCP viết tắt của gì?", "expansion"),
    ("What is the full form of SCP?", "expansion"), ("What is the definition of NF Set?", "definition"),
    ("What does the term NF Set refer to?", "definition"), ("NF Set là gì?", "definition"),
    ("Which term describes a group of NF instances?", "reverse"),
    ("What is the term for a group of interchangeable NF instances?", "reverse"),
    ("Thuật ngữ nào chỉ một nhóm NF?", "reverse"), ("What do we call a set of NFs?", "reverse"),
    ("What does the AMF do?", "role"), ("What is the role of the SMF?", "role"),
    ("Vai trò của AMF là gì?", "role"), ("Compare UPF and SMF", "comparison"),
    ("How are PDU Sessions released?", "other")])
def test_intents_in_english_and_vietnamese(question, intent):
    assert analyze_question(question).qtype == intent


# --------------------------------------------------------------------------- real documents
def test_real_specs_parse_with_their_clauses(parsed_specs):
    by_id = {d.spec_id: d for d in parsed_specs.docs}
    assert set(by_id) == {"tr_21.905@17.2.0", "ts_29.500@18.10.0", "ts_23.501@16.4.0"}
    pdf = by_id["ts_23.501@16.4.0"]
    assert pdf.section("6.2.19").title == "SCP"
    assert pdf.section("6.2.3").title == "UPF" and pdf.section("6.2.2").title == "SMF"
    assert "Service Communication Proxy (SCP)" in " ".join(pdf.section("6.2.19").lines)
    assert all("3GPP TS 23.501 V16.4.0" not in line for s in pdf.sections for line in s.lines)  # no page furniture
    chunk = next(c for c in parsed_specs.chunks if c.chunk_id == "ts_23.501@16.4.0:6.2.19:1")
    assert chunk.chunk_type == "function" and "SCP" in chunk.key_terms and 0 < chunk.complexity_score <= 1
    assert all(len(c.content) <= 1500 for c in parsed_specs.chunks)


def test_terms_from_the_real_specs(parsed_specs):
    abbr = {(t.abbreviation, t.full_name): t for t in parsed_specs.terms if t.term_type == "abbreviation"}
    scp = abbr[("SCP", "Service Communication Proxy")]
    assert set(scp.source_specs) == {"ts_29.500@18.10.0", "ts_23.501@16.4.0"} and scp.primary_spec.startswith("ts_")
    amf = [t for (a, _), t in abbr.items() if a == "AMF"]
    assert {t.full_name for t in amf} >= {"Access and Mobility Management Function", "Authentication Management Field"}
    assert abbr[("5G-AN PDB", "5G Access Network Packet Delay Budget")].source_specs == ["ts_23.501@16.4.0"]
    defs = {t.full_name: t for t in parsed_specs.terms if t.term_type == "definition"}
    assert "interchangeable NF instances" in defs["NF Set"].definition


# --------------------------------------------------------------------------- conformance
def test_counts(spec_store, parsed_specs):
    counts = spec_store.counts()
    assert counts["Document"] == 3 and counts["Chunk"] == len(parsed_specs.chunks)
    assert counts["Term"] == len(parsed_specs.terms) and counts["PART_OF"] == counts["Chunk"]
    assert counts["DEFINED_IN"] >= counts["Term"]


def test_resolution_puts_5g_expansions_first(spec_store):
    from ragkit.specs.evidence import resolve_term

    scp = resolve_term(spec_store, "SCP")
    # TR 21.905 also expands SCP (read since .docx smart tags no longer hide the abbreviation).
    assert [(t.full_name, t.primary_spec) for t in scp] == [
        ("Service Communication Proxy", "ts_29.500@18.10.0"), ("Service Control Point", "tr_21.905@17.2.0")]
    amf = resolve_term(spec_store, "AMF")
    assert amf[0].full_name == "Access and Mobility Management Function" and len(amf) >= 2


def test_cypher_injection_is_data(spec_store):
    for term in ("SCP' OR 1=1 //", 'SCP" RETURN 1 //', "x}) DETACH DELETE n //"):
        assert spec_store.terms_by_abbreviation(term) == []
        assert spec_store.terms_by_name(term) == []
        assert spec_store.find_chunks(title_any=[term]) == []
    assert spec_store.counts()["Document"] == 3


def test_both_stores_return_the_same_rows(nx_spec_store, neo4j_spec_store):
    queries = [dict(title_any=["scp"]), dict(content_all=["upf", "smf"], spec_ids=["ts_23.501@16.4.0"]),
               dict(content_any=["is responsible for"], chunk_types=["function"]), dict(limit=25)]
    for q in queries:
        a = [c.to_dict() for c in nx_spec_store.find_chunks(**q)]
        b = [c.to_dict() for c in neo4j_spec_store.find_chunks(**q)]
        assert a == b and a, q
    for text in ("proxy", "NF Set"):
        assert [t.to_dict() for t in nx_spec_store.terms_containing(text)] == \
            [t.to_dict() for t in neo4j_spec_store.terms_containing(text)]
    tid = "abbr:SCP|service communication proxy"
    assert nx_spec_store.term_neighbourhood(tid) == neo4j_spec_store.term_neighbourhood(tid)
    assert nx_spec_store.documents() == neo4j_spec_store.documents()


def test_writing_twice_changes_nothing(spec_store, parsed_specs):
    before = spec_store.counts()
    spec_store.write(parsed_specs.docs, parsed_specs.chunks, parsed_specs.terms)
    assert spec_store.counts() == before


def test_one_spec_at_a_time_equals_all_at_once(tmp_path):
    a, b = DEMO_SPEC, tmp_path / "second.md"
    b.write_text("spec_id: demo_two\n# Demo two\n# 3 Definitions and abbreviations\n## 3.2 Abbreviations\n"
                 "SCP\tService Communication Proxy\nXYZ\tExample Function\n")
    together = NetworkXStore(tmp_path / "together.json.gz")
    p = parse_specs([a, b], progress=False)
    together.write(p.docs, p.chunks, p.terms)
    stepwise = NetworkXStore(tmp_path / "stepwise.json.gz")
    for path in (a, b):
        q = parse_specs([path], progress=False)
        stepwise.write(q.docs, q.chunks, q.terms)
    scp = stepwise.terms_by_abbreviation("SCP")[0]
    assert scp.source_specs == ["demo_5gc", "demo_two"]
    assert together.terms_by_abbreviation("SCP")[0].source_specs == scp.source_specs
    assert together.counts() == stepwise.counts()
    assert NetworkXStore(tmp_path / "stepwise.json.gz").counts() == stepwise.counts()  # persisted


# --------------------------------------------------------------------------- acceptance
def test_what_is_scp(spec_store):
    answer = ask_spec("What is SCP in 5G Core?", spec_store, use_llm=False)
    resolved = answer.trace["resolved"]["SCP"]
    assert resolved[0]["full_name"] == "Service Communication Proxy"
    assert "Service Communication Proxy" in answer.answer
    sections = [(c.spec_id, c.section_id) for c in answer.citations if c.stage == "section"]
    assert sections[0] == ("ts_23.501@16.4.0", "6.2.19")
    assert answer.trace["check"]["passed"]


def test_what_is_tsctsf_on_the_real_specs_says_it_is_not_there(spec_store):
    """TSCTSF arrived in Release 17 of TS 23.501; the shared copy is V16.4.0 and neither
    TR 21.905 V17.2.0 nor TS 29.500 lists it. The answer must say so, not invent it."""
    answer = ask_spec("What is TSCTSF?", spec_store, use_llm=False)
    assert "not defined" in answer.answer
    assert "Time Synchronization" not in answer.answer
    assert any(c.stage == "related" for c in answer.citations)  # TSC, offered as a hint


def test_what_is_tsctsf_with_a_spec_that_defines_it(tmp_path):
    store = NetworkXStore(tmp_path / "demo.json.gz")
    p = parse_specs([DEMO_SPEC], progress=False)
    store.write(p.docs, p.chunks, p.terms)
    answer = ask_spec("What is TSCTSF?", store, use_llm=False)
    assert answer.trace["resolved"]["TSCTSF"][0]["full_name"] == \
        "Time Sensitive Communication and Time Synchronization Function"
    assert ("demo_5gc", "4.6") in [(c.spec_id, c.section_id) for c in answer.citations]


@pytest.mark.parametrize("question,pair", [("Compare UPF and SMF", ("UPF", "SMF")),
                                           ("Difference between AMF and SMF", ("AMF", "SMF"))])
def test_comparisons_are_labelled_and_balanced(spec_store, question, pair):
    answer = ask_spec(question, spec_store, use_llm=False)
    per_entity = {e: [c for c in answer.citations if c.entity == e and c.stage in ("section", "function")]
                  for e in pair}
    assert len(per_entity[pair[0]]) == len(per_entity[pair[1]]) >= 2
    for entity in pair:
        assert any(c.title == entity for c in per_entity[entity])  # its dedicated clause
        assert answer.trace["resolved"][entity][0]["full_name"].endswith("Function")
    assert all(e in answer.answer for e in pair)


# The same entity, however an engineer asks (English and Vietnamese): the question's intent
# comes from its wording, the entity from the span that names a dictionary entry.
OPERATING_BAND = ["What is the definition of Operating Band?", "What does the term operating band refer to?",
                  "Define operating bands.", "Operating band means?", "What is meant by an 'operating band'?",
                  "Operating band là gì?", "Định nghĩa của operating band là gì?",
                  "What's an operating-band?", "Explain the term \"Operating band\"."]


@pytest.mark.parametrize("question", OPERATING_BAND)
def test_definition_phrasings_link_to_the_dictionary_entry(nx_spec_store, question):
    answer = ask_spec(question, nx_spec_store, use_llm=False)
    analysis = answer.trace["analysis"]
    assert analysis["qtype"] == "definition" and analysis["entities"] == ["Operating band"], analysis
    assert any(l["target"] == "operating band" and l["kind"] == "term" for l in analysis["links"])
    assert "A frequency range in which E-UTRA operates" in answer.answer
    assert answer.citations[0].title == "term dictionary" and answer.citations[0].spec_id == "tr_21.905@17.2.0"


@pytest.mark.parametrize("question", ["What does SEPP stand for?", "SEPP is short for what?",
                                      "Expand the abbreviation SEPP.", "SEPP viết tắt của gì?",
                                      "What's the full form of sepp?"])
def test_expansion_phrasings(nx_spec_store, question):
    answer = ask_spec(question, nx_spec_store, use_llm=False)
    assert answer.trace["analysis"]["qtype"] == "expansion"
    assert answer.answer.startswith("SEPP stands for Security") and "Security Edge Protection Proxy" in answer.answer


@pytest.mark.parametrize("question, qtype, entity, said", [
    # a leading clause that sets the scene names context, not the subject
    ("In 5G system architecture, SEPP means?", "definition", "SEPP", "Security Edge Protection Proxy"),
    ("According to the 3GPP vocabulary, what is the full form of SEPP?", "expansion", "SEPP",
     "Security Edge Protection Proxy"),
    # the abbreviation of a name the question spells out, with 3GPP only as context
    ("How is Security Edge Protection Proxy abbreviated in 3GPP specifications?", "expansion",
     "Security Edge Protection Proxy", "SEPP"),
    ("Which of the following best describes an operating band?", "definition", "Operating band",
     "A frequency range in which E-UTRA operates"),
    ("Operating band is best described by which of the following?", "definition", "Operating band",
     "A frequency range in which E-UTRA operates"),
    # no intent cue, nothing but one entry and a word: what it is
    ("What best characterizes an operating band?", "definition", "Operating band",
     "A frequency range in which E-UTRA operates"),
])
def test_lexicon_question_kinds(nx_spec_store, question, qtype, entity, said):
    answer = ask_spec(question, nx_spec_store, use_llm=False)
    analysis = answer.trace["analysis"]
    assert (analysis["qtype"], analysis["entities"][0]) == (qtype, entity), analysis
    assert said in answer.answer


def test_a_question_about_how_or_two_entries_is_still_searched(nx_spec_store):
    from ragkit.specs.dictionary import term_dictionary

    dictionary = term_dictionary(nx_spec_store)
    assert analyze_question("How does the AMF select an SMF?", dictionary).qtype == "other"
    assert analyze_question("How is the SEPP deployed?", dictionary).qtype == "other"


@pytest.mark.parametrize("question, options, right", [
    # options that describe other entries, one quoting the definition
    ("Transport Format is best described by which of the following?",
     ["A formal set of procedures that are adopted to ensure communication between two or more functions within "
      "the same layer of a hierarchy of functions",
      "A Transport Format is defined as a format offered by L1 to MAC for the delivery of a Transport Block Set "
      "during a Transmission Time Interval on a Transport Channel",
      "A software program that simulates a hypothetical computer by performing the operations defined by the "
      "instructions of this computer"], 2),
    # the abbreviation of a name the question spells out (a word the tokenizer drops: "AS")
    ("Give the acronym used for Access Stratum.", ["AS", "ACM", "AK", "ANP"], 1),
])
def test_mcq_lexicon_kinds(nx_spec_store, tmp_path, question, options, right):
    from ragkit.eval.mcq import evaluate_mcq

    path = tmp_path / "mcq.json"
    path.write_text(json.dumps([{"question": question, **{f"option {i}": o for i, o in enumerate(options, 1)},
                                 "answer": f"option {right}: {options[right - 1]}"}]))
    assert evaluate_mcq(path, nx_spec_store, progress=False)["details"][0]["choice"] == right


def test_an_abbreviation_in_parentheses_is_the_same_entity(nx_spec_store):
    answer = ask_spec("What is an Elementary File (EF)?", nx_spec_store, use_llm=False)
    assert answer.trace["analysis"]["entities"] == ["Elementary File (EF)"]
    assert "A file containing access conditions and data" in answer.answer


def test_reverse_lookup_from_a_description(nx_spec_store):
    answer = ask_spec("Which term describes a user's ability to communicate while moving, wherever they are?",
                      nx_spec_store, use_llm=False)
    assert answer.trace["analysis"]["qtype"] == "reverse"
    assert answer.answer.startswith("The term is Mobility")


def test_every_expansion_with_its_specs(nx_spec_store):
    answer = ask_spec("What does AMF stand for?", nx_spec_store, use_llm=False)
    expansions = [r["full_name"] for r in answer.trace["resolved"]["AMF"] if r["term_type"] == "abbreviation"]
    assert expansions[0] == "Access and Mobility Management Function"
    assert "Authentication Management Field" in expansions and "Authentication Management Field" in answer.answer


def test_mcq_answers_from_the_dictionary(nx_spec_store, tmp_path):
    from ragkit.eval.mcq import evaluate_mcq

    questions = [
        {"question": "What is the definition of Operating Band?",
         "option 1": "A frequency band used only for satellite access",
         "option 2": "A frequency range in which E-UTRA operates, defined with a specific set of technical requirements",
         "option 3": "The bandwidth of one carrier", "answer": "option 2"},
        {"question": "Which term describes the ability of a user to communicate whilst moving independent of location?",
         "option 1": "Roaming", "option 2": "Handover", "option 3": "Mobility", "option 4": "Portability",
         "answer": "option 3"},
        {"question": "SEPP is short for what?", "option 1": "Secure Edge Packet Proxy",
         "option 2": "Security Edge Protection Proxy", "option 3": "Service Edge Policy Point", "answer": "option 2"},
    ]
    path = tmp_path / "mcq.json"
    path.write_text(json.dumps(questions))
    result = evaluate_mcq(path, nx_spec_store, progress=False)
    assert [d["choice"] for d in result["details"]] == [2, 3, 2] and result["accuracy"] == 1.0


# --------------------------------------------------------------------------- bad input
def test_spec_without_clause_3_is_refused(tmp_path):
    spec = tmp_path / "no_clause3.md"
    spec.write_text("# Title\n# 1 Scope\nText.\n# 4 Architecture\nMore.\n")
    with pytest.raises(InputError, match="has no clause 3"):
        parse_specs([spec], progress=False)


def test_corrupt_docx_and_textless_pdf(tmp_path):
    import pypdf

    bad = tmp_path / "23501-g40.docx"
    bad.write_bytes(b"PK\x03\x04 this is not a real docx")
    with pytest.raises(InputError, match="not a readable .docx"):
        load_spec(bad)
    blank = tmp_path / "blank.pdf"
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=595, height=842)
    with blank.open("wb") as handle:
        writer.write(handle)
    with pytest.raises(InputError, match="no extractable text"):
        load_spec(blank)


def test_neo4j_down_or_wrong_password(neo4j_uri):
    from ragkit.specs.neo4j_store import Neo4jStore

    with pytest.raises(StoreUnavailableError, match="not reachable"):
        Neo4jStore(f"bolt://127.0.0.1:{_closed_port()}")
    with pytest.raises(StoreUnavailableError, match="refused user 'neo4j'"):
        Neo4jStore(neo4j_uri, password="not-the-password")


def _closed_port() -> int:
    from .conftest import _free_port

    return _free_port()


def test_cli_commands(tmp_path, neo4j_uri):
    store = tmp_path / "kg.json.gz"
    env_run = lambda *a: subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, a)],  # noqa: E731
                                        capture_output=True, text=True, cwd=ROOT, timeout=600)
    out = env_run("kg", "build", "--specs", DEMO_SPEC, "--store", store, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["counts"]["Document"] == 1
    data = json.loads(env_run("terms", "resolve", "TSCTSF", "--store", store, "--json").stdout)
    assert data["matches"][0]["full_name"].startswith("Time Sensitive Communication and Time")
    assert set(data["matches"][0]) == {"abbreviation", "full_name", "term_type", "source_specs", "primary_spec"}
    data = json.loads(env_run("terms", "define", "NF Set", "--store", store, "--json").stdout)
    assert set(data["matches"][0]) == {"term", "definition", "source_specs"}
    data = json.loads(env_run("ask", "Compare UPF and SMF", "--pipeline", "spec", "--store", store,
                              "--no-llm", "--json").stdout)
    assert data["pipeline"] == "spec" and {c["entity"] for c in data["citations"]} >= {"UPF", "SMF"}
    data = json.loads(env_run("eval", "mcq", "--questions", ROOT / "data" / "mcq_demo.json",
                              "--store", store, "--json").stdout)
    assert set(data) == {"n", "answered", "accuracy"} and data["n"] >= 4 and data["accuracy"] == 1.0
    bad = env_run("kg", "build", "--specs", tmp_path / "missing.pdf", "--store", store)
    assert bad.returncode == 3 and bad.stderr.startswith("ragkit: error: spec ")
    down = env_run("terms", "resolve", "SCP", "--store", f"bolt://127.0.0.1:{_closed_port()}")
    assert down.returncode == 4 and "not reachable" in down.stderr


def test_extraction_quality_on_tr_21905():
    """Against the entries the .docx marks itself (see bench/term_extraction.py)."""
    from ragkit.eval.terms import extraction_scores

    scores = extraction_scores(shared("3gpp", "21905-h20.docx"))
    abbr, defs = scores["abbreviations"], scores["definitions"]
    assert abbr["in_document"] > 1000 and abbr["recall"] == 1.0 and abbr["precision"] >= 0.97
    assert defs["in_document"] > 500 and defs["recall"] >= 0.99 and defs["precision"] >= 0.98


def test_kg_notebook_runs_under_papermill(tmp_path):
    from ragkit.workbench.runs import run_notebook

    manifest = run_notebook(ROOT / "notebooks" / "01_kg_builder.ipynb",
                            {"store": str(tmp_path / "kg.json.gz"), "term": "SCP",
                             "text_index": str(tmp_path / "text-index")},
                            out_root=tmp_path / "runs", progress=False)
    assert manifest["status"] == "ok", manifest.get("error")
    assert NetworkXStore(tmp_path / "kg.json.gz").counts()["Document"] == 2
    assert (tmp_path / "text-index" / "concepts" / "communities.json.gz").is_file()


def test_spec_answer_and_mcq_with_the_real_gguf(tmp_path, gguf):
    from ragkit.config import LLMConfig
    from ragkit.eval.mcq import evaluate_mcq

    store = NetworkXStore(tmp_path / "demo.json.gz")
    p = parse_specs([DEMO_SPEC], progress=False)
    store.write(p.docs, p.chunks, p.terms)
    answer = ask_spec("What is SCP?", store, llm=gguf, llm_config=LLMConfig(max_tokens=48))
    assert answer.trace["answer_source"] in ("model", "fallback")
    assert answer.timings_ms["generation"] > 0 and answer.trace["completion_tokens"] > 0
    assert "Service Communication Proxy" in answer.answer or answer.trace["answer_source"] == "model"
    result = evaluate_mcq(ROOT / "data" / "mcq_demo.json", store, progress=False, llm=gguf)
    assert result["n"] == 5 and all(d["scorer"] == "llm" for d in result["details"])
    assert all(d["choice"] in (1, 2, 3, 4) for d in result["details"])
    assert result["accuracy"] is not None
