"""The typed-KG question planner on the demo biomedical KG (embedded store, and real Neo4j over
Bolt for the slow runs): the asked type first or last, passive voice and relative clauses, one
to three relation steps, intersections, unions, exclusions, counts, type words by synonym
(English and Vietnamese), nodes that share a name, another schema, and the answer for a
question that cannot be mapped."""

import json
import subprocess
import sys

import pytest

from ragkit.kgqa.answer import EMPTY_FINAL, NOT_MAPPED
from ragkit.kgqa.flow import KGQA
from ragkit.kgqa.importer import import_kg
from ragkit.kgqa.plan import Plan, PlanError, validate
from ragkit.kgqa.store import NxTypedStore
from ragkit.pipelines.kg import ask_kg

from .conftest import ROOT, typed_kg

NODES = ROOT / "data" / "biomed" / "nodes.csv"
EDGES = ROOT / "data" / "biomed" / "edges.csv"
CONTRACT_KEYS = {"question", "pipeline", "answer", "citations", "trace", "timings_ms"}


def ask(qa, question):
    answer = ask_kg(question, qa, use_llm=False)
    return answer, answer.trace.to_dict()


def final_names(trace):
    return sorted(i["name"] for i in trace["context_store"][trace["plan"]["final"]])


def steps(trace):
    return [(s["op"], s.get("relation"), s.get("direction"), s.get("target_type") or s.get("type"))
            for s in trace["plan"]["steps"]]


def test_asked_type_first_then_two_steps_back(kg):
    _, trace = ask(kg, "Which drugs treat diseases associated with HLA-B?")
    assert steps(trace) == [("expand", "ASSOCIATED_WITH", "in", "Disease"), ("expand", "TREATS", "in", "Compound")]
    assert final_names(trace) == ["Aspirin", "Celecoxib", "Diclofenac", "Naproxen", "Prednisone"]
    answer, trace = ask(kg, "Which drugs treat diseases associated with APOE?")
    assert len(trace["plan"]["steps"]) == 2 and final_names(trace) == []   # no drug for Alzheimer's
    assert answer.answer.startswith(EMPTY_FINAL) and "1 disease (Alzheimer's Disease)" in answer.answer


@pytest.mark.parametrize("question", [
    "Which diseases are treated by Warfarin?", "What does warfarin treat?",
    "Warfarin is prescribed for which conditions?", "List the illnesses that warfarin is used for."])
def test_passive_active_and_relative_clauses_plan_the_same_step(nx_kg, question):
    _, trace = ask(nx_kg, question)
    assert steps(trace) == [("expand", "TREATS", "out", "Disease")]
    assert final_names(trace) == ["Atrial Fibrillation", "Deep Vein Thrombosis", "Myocardial Infarction",
                                  "Pulmonary Embolism"]


def test_three_steps_in_either_order(kg):
    forward = "Which organs are affected by diseases treated by drugs that inhibit VKORC1?"
    backward = "VKORC1 is inhibited by drugs treating diseases that affect which organs?"
    for question in (forward, backward):
        _, trace = ask(kg, question)
        assert steps(trace) == [("expand", "INHIBITS", "in", "Compound"), ("expand", "TREATS", "out", "Disease"),
                                ("expand", "AFFECTS", "out", "Anatomy")]
        assert final_names(trace) == ["Blood Vessels", "Heart", "Lungs"]


@pytest.mark.parametrize("question", [
    "Which medicines are used for gout?", "What medications cure gout?", "Thuốc nào điều trị Gout?"])
def test_type_words_by_synonym_and_in_vietnamese(nx_kg, question):
    _, trace = ask(nx_kg, question)
    assert steps(trace) == [("expand", "TREATS", "in", "Compound")]
    assert final_names(trace) == ["Allopurinol", "Colchicine", "Naproxen", "Prednisone"]


def test_both_a_and_b_meet_before_the_shared_step(kg):
    _, trace = ask(kg, "Which symptoms do the illnesses treated by both celecoxib and methotrexate have?")
    assert [s[0] for s in steps(trace)] == ["expand", "expand", "intersection", "expand"]
    common = trace["context_store"][trace["plan"]["steps"][2]["key"]]
    assert sorted(i["name"] for i in common) == ["Juvenile Idiopathic Arthritis", "Rheumatoid Arthritis"]
    _, trace = ask(kg, "Which diseases treated by aspirin have chest pain as a symptom?")
    assert steps(trace)[:2] == [("expand", "TREATS", "out", "Disease"), ("expand", "HAS_SYMPTOM", "in", "Disease")]
    assert final_names(trace) == ["Coronary Artery Disease", "Myocardial Infarction"]


def test_either_or_is_a_union(nx_kg):
    _, trace = ask(nx_kg, "Which drugs treat either hypothyroidism or type 2 diabetes?")
    assert steps(trace)[-1][0] == "union"
    assert final_names(trace) == ["Insulin Glargine", "Levothyroxine", "Metformin"]


@pytest.mark.parametrize("question, expected", [
    ("Which diseases does naproxen treat that aspirin does not?", ["Gout"]),
    ("Which diseases treated by naproxen are not treated by aspirin?", ["Gout"]),
    ("Which drugs treat gout other than naproxen?", ["Allopurinol", "Colchicine", "Prednisone"]),
    ("Apart from colchicine, which drugs treat gout?", ["Allopurinol", "Naproxen", "Prednisone"]),
    ("Which compounds inhibit PTGS2 without inhibiting PTGS1?", ["Celecoxib", "Paracetamol"]),
])
def test_exclusions_take_the_excluded_list_away(kg, question, expected):
    _, trace = ask(kg, question)
    assert trace["plan"]["steps"][-1]["op"] == "difference" and trace["linked"]["shape"] == "exclusion"
    assert final_names(trace) == expected


def test_an_exclusion_with_nothing_kept_starts_from_every_node_of_the_type(nx_kg):
    answer, trace = ask(nx_kg, "Which genes are not associated with any disease treated by warfarin?")
    assert trace["plan"]["steps"][0] == {"key": "all_genes", "op": "all", "type": "Gene"}
    assert len(final_names(trace)) == 26 - 3 and "PITX2" not in final_names(trace)
    assert "Taking those away: 23 genes" in answer.answer


def test_counts_answer_with_the_number(kg):
    answer, trace = ask(kg, "How many drugs treat diseases that affect the liver?")
    assert trace["plan"]["count"] is True and trace["linked"]["shape"] == "count"
    assert trace["context_store"]["final_result_total"] == 7 and answer.answer.count("Answer: 7.") == 1
    answer, trace = ask(kg, "How many genes does the graph hold?")
    assert trace["plan"]["steps"] == [{"key": "all_genes", "op": "all", "type": "Gene"}]
    assert "Answer: 26." in answer.answer
    for question in ("List all the compounds.", "Liệt kê tất cả các bệnh.", "What genes are in the graph?"):
        _, trace = ask(kg, question)            # asking for every node of a type is no condition
        assert trace["plan"]["steps"][0]["op"] == "all", question


def test_a_name_shared_by_two_types_is_read_as_the_one_the_question_fits(nx_kg):
    """"fever" is the symptom Fever and the disease "Fever (Pyrexia)": treated, it is the disease;
    as a symptom, the symptom."""
    _, trace = ask(nx_kg, "Which drugs do not treat fever?")
    assert trace["linked"]["entities"][0]["id"] == "disease:fever"
    assert "Paracetamol" not in final_names(trace) and "Warfarin" in final_names(trace)
    _, trace = ask(nx_kg, "Which illnesses have both fever and cough?")
    assert [e["id"] for e in trace["linked"]["entities"]] == ["symptom:fever", "symptom:cough"]
    assert final_names(trace) == ["Bacterial Pneumonia"]


@pytest.mark.parametrize("question, why", [
    ("Who is Zorro?", "names nothing found in the graph"),
    ("Tell me about Aspirin.", "names no type or relation"),
    ("Which hospitals treat gout?", "'hospitals'"),
    ("What is the price of ibuprofen?", "'price'"),
    # a condition the graph has nothing for is refused, not dropped to list every node of the type
    ("Which compounds like pizza?", "'pizza'"),
    ("Which diseases won an Oscar?", "'won oscar'"),
    ("Những thuốc nào rẻ?", "'re'"),
])
def test_a_question_that_cannot_be_mapped_says_so_and_what_was_linked(nx_kg, question, why):
    answer, trace = ask(nx_kg, question)
    assert answer.answer.startswith(NOT_MAPPED) and why in answer.answer
    assert trace["plan"] is None and why in trace["plan_error"] and trace["context_store"] == {}
    assert trace["answer_source"] == "evidence" and answer.citations == []
    assert set(trace["linked"]) >= {"entities", "types", "relations", "shape"}
    if "Aspirin" in question:
        assert [e["id"] for e in trace["linked"]["entities"]] == ["compound:aspirin"]
    if "gout" in question:
        assert trace["linked"]["relations"] == ["TREATS"]


def test_words_no_chain_can_use_make_the_question_unmappable_not_shorter(tmp_path):
    """The only chain from Testamol to organs (treats, affects) leaves the question's "genes"
    and "associated" unused: no plan, never the shorter one."""
    nodes = tmp_path / "n.csv"
    nodes.write_text("id,name,type\nc1,Testamol,Compound\nd1,Rare Disease,Disease\ng1,GENE1,Gene\n"
                     "a1,Kidney,Anatomy\n")
    edges = tmp_path / "e.csv"
    edges.write_text("source,relation,target\nc1,TREATS,d1\nd1,ASSOCIATED_WITH,g1\nd1,AFFECTS,a1\n")
    store = NxTypedStore(tmp_path / "small.json.gz")
    import_kg(nodes, edges, store)
    qa = KGQA(store)
    answer, trace = ask(qa, "Which organs are affected by diseases associated with genes that Testamol inhibits?")
    assert trace["plan"] is None and answer.answer.startswith(NOT_MAPPED)
    assert trace["linked"]["entities"][0]["name"] == "Testamol"


def test_another_schema_is_read_by_its_own_names(tmp_path):
    qa = typed_kg(tmp_path,
                  "id,name,type\np1,Alice Moreau,Person\np2,Bruno Tan,Person\nm1,Harbour Lights,Movie\n"
                  "m2,Paper Moon River,Movie\nm3,Quiet Valley,Movie\ng1,Drama,Genre\ng2,Comedy,Genre\n",
                  "source,relation,target\np1,ACTED_IN,m1\np1,ACTED_IN,m2\np2,ACTED_IN,m2\np2,DIRECTED,m3\n"
                  "m1,HAS_GENRE,g1\nm2,HAS_GENRE,g2\nm3,HAS_GENRE,g1\n")
    _, trace = ask(qa, "Which movies did Alice Moreau act in?")
    assert final_names(trace) == ["Harbour Lights", "Paper Moon River"]
    _, trace = ask(qa, "Which genres do the movies Bruno Tan acted in have?")
    assert steps(trace) == [("expand", "ACTED_IN", "out", "Movie"), ("expand", "HAS_GENRE", "out", "Genre")]
    assert final_names(trace) == ["Comedy"]
    answer, trace = ask(qa, "How many movies did Bruno Tan direct?")
    assert final_names(trace) == ["Quiet Valley"] and "Answer: 1." in answer.answer


def test_model_plans_may_use_the_new_steps_and_are_still_validated(nx_kg):
    plan = Plan.from_dict({"steps": [
        {"key": "treated", "op": "expand", "from": {"entity": "compound:naproxen"}, "relation": "TREATS",
         "direction": "out", "target_type": "Disease"},
        {"key": "gout", "op": "nodes", "ids": ["disease:gout"], "type": "Disease"},
        {"key": "rest", "op": "difference", "inputs": ["treated", "gout"]}], "final": "rest", "count": True})
    assert validate(plan, nx_kg.schema, set(nx_kg.nodes)).count is True
    with pytest.raises(PlanError, match="node ids of the graph"):
        validate(Plan.from_dict({"steps": [{"key": "x", "op": "nodes", "ids": ["disease:zorro"]}], "final": "x"}),
                 nx_kg.schema, set(nx_kg.nodes))
    with pytest.raises(PlanError, match="not a node type"):
        validate(Plan.from_dict({"steps": [{"key": "x", "op": "all", "type": "Planet"}], "final": "x"}),
                 nx_kg.schema, set(nx_kg.nodes))


@pytest.mark.slow
def test_cli_json_keeps_the_contract_keys_for_planned_and_unmapped_questions(tmp_path):
    def ragkit(*args):
        return subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, args)], capture_output=True,
                              text=True, check=False)

    store = tmp_path / "biomed.json.gz"
    assert ragkit("kg", "import", "--nodes", NODES, "--edges", EDGES, "--store", store).returncode == 0
    out = ragkit("ask", "How many diseases does aspirin treat that ibuprofen does not?", "--pipeline", "kg",
                 "--store", store, "--no-llm", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == CONTRACT_KEYS and data["pipeline"] == "kg"
    assert data["trace"]["answer_source"] == "evidence" and data["trace"]["plan"]["count"] is True
    assert {i["name"] for i in data["trace"]["context_store"]["final_result"]} >= {"Kawasaki Disease", "Ischemic Stroke"}
    out = ragkit("ask", "Which hospitals treat gout?", "--pipeline", "kg", "--store", store, "--no-llm", "--json")
    data = json.loads(out.stdout)
    assert out.returncode == 0 and set(data) == CONTRACT_KEYS and data["answer"].startswith(NOT_MAPPED)
    assert data["trace"]["linked"]["entities"][0]["name"] == "Gout" and data["trace"]["plan"] is None


def test_a_negation_applies_to_the_subject_of_its_own_verb(tmp_path):
    """"Which Nolan movies did Murphy not act in?": Murphy's movies are taken away from
    Nolan's, not both lists from every movie."""
    qa = typed_kg(tmp_path,
                  "id,name,type\np1,Christopher Nolan,Person\np2,Cillian Murphy,Person\np3,Michael Caine,Person\n"
                  "m1,Inception,Movie\nm2,Oppenheimer,Movie\nm3,Interstellar,Movie\nm4,Sunshine,Movie\n",
                  "source,relation,target\np1,DIRECTED,m1\np1,DIRECTED,m2\np1,DIRECTED,m3\n"
                  "p2,ACTED_IN,m1\np2,ACTED_IN,m2\np2,ACTED_IN,m4\np3,ACTED_IN,m1\np3,ACTED_IN,m3\n")
    _, trace = ask(qa, "Which Christopher Nolan movies did Cillian Murphy not act in?")
    excluded = {e["name"]: e["excluded"] for e in trace["linked"]["entities"]}
    assert excluded == {"Christopher Nolan": False, "Cillian Murphy": True}
    difference = trace["plan"]["steps"][-1]
    assert difference["op"] == "difference" and "christopher_nolan" in difference["inputs"][0]
    # coordinated subjects are negated together
    _, trace = ask(qa, "Which movies did Cillian Murphy and Michael Caine not act in?")
    assert all(e["excluded"] for e in trace["linked"]["entities"])
    assert final_names(trace) == []


def test_who_asks_for_the_schema_s_type_of_person_and_the_chain_stops_there(tmp_path):
    qa = typed_kg(tmp_path,
                  "id,name,type\np1,Christopher Nolan,Person\np2,Cillian Murphy,Person\np3,Danny Boyle,Person\n"
                  "m1,Inception,Movie\nm2,Sunshine,Movie\n",
                  "source,relation,target\np1,DIRECTED,m1\np3,DIRECTED,m2\np2,ACTED_IN,m1\np2,ACTED_IN,m2\n")
    _, trace = ask(qa, "Who directed the movies that Cillian Murphy acted in?")
    assert trace["linked"]["asked_type"] == "Person"
    assert steps(trace) == [("expand", "ACTED_IN", "out", "Movie"), ("expand", "DIRECTED", "in", "Person")]
    assert final_names(trace) == ["Christopher Nolan", "Danny Boyle"]
