"""KG question answering (KG QA design) on the demo biomedical KG, in the embedded store and in
a real Neo4j over Bolt: import, plans, execution, the context store, answers, follow-ups."""

import json
import subprocess
import sys

import pytest

from ragkit.errors import GenerationError, InputError
from ragkit.kgqa.answer import EMPTY_FINAL, NOT_MAPPED, check_entities
from ragkit.kgqa.execute import FINAL_LIMIT
from ragkit.kgqa.importer import import_kg
from ragkit.kgqa.plan import PlanError
from ragkit.kgqa.store import NxTypedStore
from ragkit.llm.base import Generation
from ragkit.pipelines.kg import ask_kg

from .conftest import ROOT, typed_kg

NODES = ROOT / "data" / "biomed" / "nodes.csv"
EDGES = ROOT / "data" / "biomed" / "edges.csv"
Q1 = "What symptoms do diseases treated by Aspirin have?"
Q2 = "What are the common symptoms of diseases treated by both Aspirin and Ibuprofen?"
FOLLOW_UP = "and which of them affect the liver?"
SHARED_DISEASES = ["Dysmenorrhea", "Fever (Pyrexia)", "Juvenile Idiopathic Arthritis", "Low Back Pain",
                   "Osteoarthritis", "Rheumatoid Arthritis", "Tension-Type Headache"]


def written(qa, question, history=None) -> dict:
    """The trace of a KG answer written without a model, with the answer beside it."""
    answer = ask_kg(question, qa, history=history, use_llm=False)
    return {**answer.trace.to_dict(), "answer": answer.answer}


def names(items):
    return [i["name"] for i in items]


@pytest.mark.slow
def test_both_stores_hold_the_same_graph(nx_kg, neo4j_kg):
    assert nx_kg.schema == neo4j_kg.schema
    assert nx_kg.store.counts() == neo4j_kg.store.counts()
    assert {s.relation for s in nx_kg.schema} == {"TREATS", "HAS_SYMPTOM", "INHIBITS", "ASSOCIATED_WITH",
                                                  "AFFECTS", "CAUSES_SIDE_EFFECT"}
    for q in (Q1, Q2, "What treats gout?", "Which genes are associated with diseases treated by Methotrexate?"):
        a, b = written(nx_kg, q), written(neo4j_kg, q)
        assert a["plan"] == b["plan"] and a["context_store"] == b["context_store"] and a["answer"] == b["answer"]


def test_symptoms_of_diseases_treated_by_aspirin(kg):
    result = written(kg, Q1)
    steps = result["plan"]["steps"]
    assert [(s["op"], s.get("relation"), s.get("target_type")) for s in steps] == [
        ("expand", "TREATS", "Disease"), ("expand", "HAS_SYMPTOM", "Symptom")]
    assert steps[0]["from"] == {"entity": "compound:aspirin"} and steps[1]["from"] == {"step": steps[0]["key"]}
    store = result["context_store"]
    assert "Myocardial Infarction" in names(store[steps[0]["key"]])
    # The final result holds 15 items and keeps the total.
    assert len(store["final_result"]) == FINAL_LIMIT < store["final_result_total"] == len(store[steps[1]["key"]])
    assert "Joint Pain" in names(store[steps[1]["key"]])
    assert f"(15 of {store['final_result_total']} shown)" in result["answer"]
    assert "final_result" not in result["answer"] and "Aspirin —treats→" in result["answer"]


def test_common_symptoms_intersect_the_diseases_first(kg):
    result = written(kg, Q2)
    steps = result["plan"]["steps"]
    assert [s["op"] for s in steps] == ["expand", "expand", "intersection", "expand"]
    store = result["context_store"]
    assert names(store["common_diseases"]) == SHARED_DISEASES
    assert {"Joint Pain", "Joint Stiffness", "Fever"} <= set(names(store[steps[-1]["key"]]))
    assert "In common: 7 diseases" in result["answer"]


def test_follow_up_filters_the_previous_answer(kg):
    first = written(kg, Q2)
    result = written(kg, FOLLOW_UP, [first["turn"]])
    assert [s["op"] for s in result["plan"]["steps"]] == ["given", "expand", "intersection"]
    assert result["plan"]["steps"][0]["history"] == "common_diseases"
    assert names(result["context_store"]["final_result"]) == ["Juvenile Idiopathic Arthritis"]
    assert '"them": the 7 diseases' in result["standalone"]
    with pytest.raises(PlanError, match="refers to nothing"):
        kg.rules.plan(FOLLOW_UP, kg.names.resolve(FOLLOW_UP), {})


def test_a_run_through_the_flow_is_typed_and_its_turn_round_trips(nx_kg):
    from ragkit.kgqa.flow import Turn
    from ragkit.kgqa.records import KGRun
    from ragkit.kgqa.resolve import Resolved

    run = nx_kg.ask(Q2)
    assert isinstance(run, KGRun) and run.plan is not None and run.plan_error is None
    assert [e.name for e in run.entities] == ["Aspirin", "Ibuprofen"] and isinstance(run.entities[0], Resolved)
    assert run.planning.planner == "rules" and run.planning.llm_plan_rejected is None
    assert run.planning.linked["asked_type"] == "Symptom"
    assert run.counts[run.plan.final] == run.context_store["final_result_total"]
    assert {e["step"] for e in run.edges} <= {s.key for s in run.plan.steps}
    lists = run.turn.lists
    assert lists["common_diseases"]["type"] == "Disease"
    assert names(lists["common_diseases"]["items"]) == SHARED_DISEASES
    assert Turn.from_dict(json.loads(json.dumps(run.turn.to_dict()))) == run.turn

    follow_up = nx_kg.ask(FOLLOW_UP, [run.turn])
    assert [s.op for s in follow_up.plan.steps] == ["given", "expand", "intersection"]
    unmapped = nx_kg.ask("Which movies won an Oscar?")
    assert unmapped.plan is None and unmapped.turn is None and unmapped.plan_error.startswith("plan: ")
    assert unmapped.context_store == {} and unmapped.edges == [] and unmapped.planning.planner == "rules"


def test_a_follow_up_after_an_unmapped_question_takes_the_turns_before_it(nx_kg, tmp_path):
    from ragkit.pipelines.kg import read_history

    first = ask_kg(Q2, nx_kg, use_llm=False)
    lost = ask_kg("Which movies won an Oscar?", nx_kg, history=[first.trace.turn], use_llm=False)
    assert lost.trace.turn is None and lost.trace.history == [first.trace.turn]
    saved = tmp_path / "answer.json"
    saved.write_text(json.dumps(lost.to_dict()), encoding="utf-8")     # what 'ask --json' prints
    history = read_history(str(saved))
    assert history == [json.loads(json.dumps(first.trace.turn))]
    follow_up = ask_kg(FOLLOW_UP, nx_kg, history=history, use_llm=False)
    assert names(follow_up.trace.context_store["final_result"]) == ["Juvenile Idiopathic Arthritis"]


def test_entities_resolve_exact_alias_and_fuzzy(nx_kg):
    found = {r.mention: (r.id, r.how) for r in nx_kg.names.resolve("Do Asprin and Tylenol help rheumatoid arthritis?")}
    assert found == {"asprin": ("compound:aspirin", "fuzzy"), "tylenol": ("compound:paracetamol", "alias"),
                     "rheumatoid arthritis": ("disease:rheumatoid_arthritis", "exact")}


def test_empty_store_and_empty_final_messages(tmp_path, nx_kg):
    assert written(nx_kg, "Who is Zorro?")["answer"].startswith(NOT_MAPPED)
    qa = typed_kg(tmp_path, "id,name,type\nc1,Testamol,Compound\nd1,Rare Disease,Disease\nd2,Other Disease,Disease\n"
                  "g1,GENE1,Gene\n", "source,relation,target\nc1,TREATS,d1\nd2,ASSOCIATED_WITH,g1\n")
    result = written(qa, "Which genes are associated with diseases treated by Testamol?")
    assert result["context_store"]["final_result"] == [] and result["context_store"]["final_result_total"] == 0
    assert result["answer"].startswith(EMPTY_FINAL) and "Testamol —treats→ 1 disease (Rare Disease)" in result["answer"]


class Scripted:
    name, n_ctx = "scripted", 2048

    def __init__(self, *replies):
        self.replies, self.prompts, self.schemas = list(replies), [], []

    def chat(self, messages, **kwargs):
        self.prompts.append(messages[-1]["content"])
        self.schemas.append(kwargs.get("json_schema"))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Generation(text=reply, finish_reason="stop", completion_tokens=10)


def test_llm_failure_falls_back_to_the_written_answer_and_keeps_the_context_store(nx_kg):
    answer = ask_kg(Q1, nx_kg, use_llm=True, llm=Scripted(GenerationError("llm server x: not reachable")))
    assert answer.trace["answer_source"] == "fallback"
    assert answer.trace["check"] == {"passed": False, "reason": "model failed: llm server x: not reachable"}
    assert answer.answer == ask_kg(Q1, nx_kg, use_llm=False).answer
    assert answer.trace["context_store"]["final_result_total"] > FINAL_LIMIT


def test_llm_answer_may_only_name_what_the_evidence_holds(nx_kg):
    good = ("Aspirin treats Rheumatoid Arthritis and Osteoarthritis; these diseases have symptoms such as "
            "Joint Pain and Fatigue.")
    model = Scripted(good)
    answer = ask_kg(Q1, nx_kg, use_llm=True, llm=model)
    assert answer.answer == good and answer.trace["answer_source"] == "model" and answer.trace["check"]["passed"]
    prompt = model.prompts[0]    # the plan's steps as prose, the answer items, the numbered edges; no keys
    assert prompt.startswith("STEPS: Aspirin —treats→ 13 diseases") and "ANSWER (15 of 28): Back Pain" in prompt
    assert "[1] Ankylosing Spondylitis -[HAS_SYMPTOM]-> Back Pain" in prompt
    assert "final_result" not in prompt and "{" not in prompt
    made_up = "Aspirin treats Gout, whose symptoms include Joint Pain."     # Gout is not in this evidence
    answer = ask_kg(Q1, nx_kg, use_llm=True, llm=Scripted(made_up))
    assert answer.trace["answer_source"] == "fallback" and "Gout" in answer.trace["check"]["reason"]
    assert answer.answer.startswith("Based on the data: Aspirin —treats→")


def test_llm_plans_are_validated_before_they_run(nx_kg):
    plan = {"steps": [{"key": "genes", "op": "expand", "from": {"entity": "compound:aspirin"},
                       "relation": "INHIBITS", "direction": "out", "target_type": "Gene"}], "final": "genes"}
    model = Scripted(json.dumps(plan), "Aspirin inhibits PTGS1 and PTGS2.")
    answer = ask_kg("What does Aspirin inhibit?", nx_kg, use_llm=True, llm_planner=True, llm=model)
    assert answer.trace["planner"] == "llm" and names(answer.trace["context_store"]["final_result"]) == ["PTGS1", "PTGS2"]
    # The plan was asked for under the graph's plan schema; the answer was not.
    assert answer.trace["llm_plan_constrained"] is True
    asked = json.dumps(model.schemas[0])
    assert '"INHIBITS"' in asked and '"compound:aspirin"' in asked and '"ibuprofen"' not in asked
    assert model.schemas[1] is None
    bad = dict(plan, steps=[dict(plan["steps"][0], relation="CURES")])
    answer = ask_kg("What does Aspirin inhibit?", nx_kg, use_llm=True, llm_planner=True,
                    llm=Scripted(json.dumps(bad), "Aspirin inhibits PTGS1 and PTGS2."))
    assert answer.trace["planner"] == "rules" and "CURES" in answer.trace["llm_plan_rejected"]
    assert names(answer.trace["context_store"]["final_result"]) == ["PTGS1", "PTGS2"]


@pytest.mark.slow
def test_kg_answer_with_the_real_gguf(nx_kg, gguf):
    answer = ask_kg(Q2, nx_kg, use_llm=True, llm=gguf)
    assert answer.trace["answer_source"] in ("model", "fallback")
    assert answer.trace["check"]["passed"] == (answer.trace["answer_source"] == "model")
    assert answer.citations and all(c.source for c in answer.citations)
    assert {"plan", "execute", "generation", "check", "total"} <= set(answer.timings_ms)


@pytest.mark.slow
def test_cypher_takes_user_text_as_data(neo4j_kg):
    before = neo4j_kg.store.counts()
    result = written(neo4j_kg, "What does Aspirin' }) DETACH DELETE n // treat?")
    assert "Rheumatoid Arthritis" in names(result["context_store"][result["plan"]["final"]])
    found, _ = neo4j_kg.store.expand(["x' OR 1=1 //"], "TREATS", "out", "Disease")
    assert found == [] and neo4j_kg.store.counts() == before


def test_bad_import_files_write_nothing(tmp_path):
    store = NxTypedStore(tmp_path / "kg.json.gz")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,name\nx,X\n")
    with pytest.raises(InputError, match="missing column.*type"):
        import_kg(bad, EDGES, store)
    with pytest.raises(InputError, match="is not a node id in the nodes file"):
        nodes = tmp_path / "nodes.csv"
        nodes.write_text("id,name,type\ncompound:aspirin,Aspirin,Compound\n")
        import_kg(nodes, EDGES, store)
    edges = tmp_path / "edges.csv"
    edges.write_text("source,relation,target\ncompound:aspirin,TREATS ALL,compound:aspirin\n")
    with pytest.raises(InputError, match="relation 'TREATS ALL' must be a word"):
        import_kg(nodes, edges, store)
    assert not (tmp_path / "kg.json.gz").exists()


@pytest.mark.slow
def test_cli_import_ask_and_follow_up(tmp_path):
    def ragkit(*args):
        return subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, args)], capture_output=True,
                              text=True, check=False)

    store = tmp_path / "biomed.json.gz"
    out = ragkit("kg", "import", "--nodes", NODES, "--edges", EDGES, "--store", store, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["edges"] == sum(1 for _ in EDGES.open()) - 1
    first = ragkit("ask", Q2, "--pipeline", "kg", "--store", store, "--no-llm", "--json")
    assert first.returncode == 0, first.stderr
    (tmp_path / "turn1.json").write_text(first.stdout)
    second = ragkit("ask", FOLLOW_UP, "--pipeline", "kg", "--store", store, "--no-llm", "--json",
                    "--history", tmp_path / "turn1.json")
    data = json.loads(second.stdout)
    assert data["pipeline"] == "kg" and data["trace"]["context_store"]["final_result_total"] == 1
    assert data["citations"][0]["title"] == "Juvenile Idiopathic Arthritis -[AFFECTS]-> Liver"
    bad = ragkit("ask", FOLLOW_UP, "--pipeline", "kg", "--store", store, "--history", EDGES)
    assert bad.returncode == 3 and "--history" in bad.stderr and bad.stdout == ""


def test_written_answers_pass_the_entity_check_names_matched_longest_first(nx_kg):
    """"Low Back Pain" does not also name the node "Back Pain", nor "Non-Alcoholic Fatty Liver
    Disease" the node "Liver": the written answers claim only what the context store holds."""
    first = ask_kg(Q2, nx_kg, use_llm=False)
    follow_up = ask_kg(FOLLOW_UP, nx_kg, history=[first.trace.turn], use_llm=False)
    for answer in (ask_kg(Q1, nx_kg, use_llm=False), first, follow_up):
        assert answer.trace["answer_source"] == "evidence"
        assert answer.trace["check"]["passed"], answer.trace["check"]["reason"]
    assert "Low Back Pain" in follow_up.trace["check"]["named"]
    assert "Back Pain" not in follow_up.trace["check"]["named"]
    made_up = ask_kg(Q1, nx_kg, use_llm=True, llm=Scripted("Aspirin treats Malaria, whose symptoms include Joint Pain."))
    assert made_up.trace["answer_source"] == "fallback" and "Malaria" in made_up.trace["check"]["reason"]


def test_entity_check_matches_whole_names_longest_first():
    """A final result "Liver" is not named by an answer that only says "Enlarged Liver", and
    "Liver" inside "Enlarged Liver" is not a second entity; alone, it is named."""
    nodes = [{"id": "n1", "name": "Liver"}, {"id": "n2", "name": "Enlarged Liver"},
             {"id": "n3", "name": "Hepatitis"}]
    store = {"final_result": [{"id": "n1", "name": "Liver"}], "hepatitis_affects": [{"id": "n3", "name": "Hepatitis"}]}
    inside = check_entities("Hepatitis causes an enlarged liver.", store, nodes, question_entities={"n2"})
    assert not inside.grounded and inside.reason == "names none of the final results"
    assert inside.named == ["Enlarged Liver", "Hepatitis"] and inside.outside_context == []
    alone = check_entities("Hepatitis affects the liver.", store, nodes)
    assert alone.grounded and alone.named == ["Hepatitis", "Liver"]
    both = check_entities("Hepatitis affects the liver; an enlarged liver follows.", store,
                          nodes, question_entities={"n2"})
    assert both.grounded and both.named == ["Enlarged Liver", "Hepatitis", "Liver"]
