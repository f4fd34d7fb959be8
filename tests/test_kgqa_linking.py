"""Question words that no schema name reads, linked through the graph: the types at each end of
its relations and their embeddings (``ragkit.kgqa.linking``). The linker's logic on vectors
made here; the planner on the invented film-industry KG (data/studio) with the real MiniLM and
multilingual-e5, and with no embedder at all."""

import numpy as np
import pytest

from ragkit.kgqa.answer import NOT_MAPPED
from ragkit.kgqa.flow import KGQA
from ragkit.kgqa.importer import import_kg
from ragkit.kgqa.linking import MIN_GAIN, GraphLinker, name_text, typed_reading
from ragkit.kgqa.question_reading import agent_nouns
from ragkit.kgqa.rule_planner import RulePlanner
from ragkit.kgqa.store import NxTypedStore, SchemaEdge
from ragkit.pipelines.kg import ask_kg

from .conftest import ROOT

STUDIO = ROOT / "data" / "studio"
CEO = SchemaEdge("Person", "CEO_OF", "Company", 3)
FOUNDED = SchemaEdge("Person", "FOUNDED", "Company", 3)


class Table:
    """An embedder over a fixed table of unit vectors (texts it does not know are an error)."""

    def __init__(self, rows: dict[str, list[float]]):
        self.rows = {t: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for t, v in rows.items()}

    def __call__(self, texts):
        return np.stack([self.rows[t] for t in texts])


def test_schema_names_read_as_words_and_edges_as_typed_sentences():
    assert name_text("HEADQUARTERED_IN") == "headquartered in"
    assert name_text("bornIn") == "born in"
    assert typed_reading(CEO) == "person ceo of company"
    assert agent_nouns("directed") == ("director", "directer")
    assert agent_nouns("owns") == ("ownor", "owner")
    assert agent_nouns("produced")[1] == "producer"
    assert agent_nouns("in") == ()


def test_words_link_to_the_relation_they_bring_the_question_nearest():
    # "boss" moves the question toward CEO_OF and away from FOUNDED
    table = Table({"who boss company": [0.9, 0.1, 0.3], "who company": [0.6, 0.6, 0.5],
                   "person ceo of company": [1.0, 0.0, 0.2], "person founded company": [0.0, 1.0, 0.2]})
    link = GraphLinker(table).relation("boss", "who boss company", "who company", [CEO, FOUNDED])
    assert link is not None and link.name == "CEO_OF" and link.runner_up == "FOUNDED"
    assert link.score > 0 and link.margin and link.margin > 0
    assert link.to_dict()["kind"] == "relation"


def test_words_that_pull_the_question_away_from_every_relation_are_not_linked():
    # "likes": the question with it is further from both sentences than without it
    table = Table({"who likes company": [0.0, 0.0, 1.0], "who company": [0.7, 0.7, 0.2],
                   "person ceo of company": [1.0, 0.0, 0.2], "person founded company": [0.0, 1.0, 0.2]})
    assert GraphLinker(table).relation("likes", "who likes company", "who company", [CEO, FOUNDED]) is None


def test_two_relations_the_words_cannot_tell_apart_are_not_linked():
    table = Table({"who runs company": [0.7, 0.7, 0.1], "who company": [0.6, 0.6, 0.5],
                   "person ceo of company": [1.0, 0.0, 0.2], "person founded company": [0.0, 1.0, 0.2]})
    assert GraphLinker(table).relation("runs", "who runs company", "who company", [CEO, FOUNDED]) is None


def test_without_an_embedder_the_types_decide_alone():
    linker = GraphLinker(None)
    assert linker.relation("runs", "who runs company", "who company", [CEO]).name == "CEO_OF"
    assert linker.relation("runs", "who runs company", "who company", [CEO, FOUNDED]) is None
    assert linker.type("prizes", ["Award", "Film"]) is None


def test_an_unknown_type_word_links_to_the_nearest_type_only_when_clearly_nearest():
    table = Table({"prizes": [1.0, 0.1], "award": [1.0, 0.0], "film": [0.0, 1.0], "city": [0.05, 1.0]})
    link = GraphLinker(table).type("prizes", ["Award", "Film"])
    assert link is not None and link.name == "Award" and link.kind == "type"
    assert GraphLinker(table).type("prizes", ["Film", "City"]) is None    # nothing near enough


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    store = NxTypedStore(tmp_path_factory.mktemp("studio") / "studio.json.gz")
    import_kg(STUDIO / "nodes.csv", STUDIO / "edges.csv", store)
    return KGQA(store)


def ask(qa, question):
    answer = ask_kg(question, qa, use_llm=False)
    trace = answer.trace.to_dict()
    plan = trace.get("plan")
    names = sorted(i["name"] for i in trace["context_store"][plan["final"]]) if plan else None
    return answer, trace, names


def graph_links(trace):
    linked = (trace.get("plan") or {}).get("linked") or trace.get("linked") or {}
    return linked.get("linked_through_graph", [])


@pytest.mark.parametrize("question, relation, names", [
    ("Who is the boss of Ostrava Films?", "CEO_OF", ["Mara Okafor"]),
    ("Who set up Bluewick Pictures?", "FOUNDED", ["Ines Varga"]),
    ("Where was The Glass Orchard shot?", "FILMED_IN", ["Port Vell"]),
    ("Who is Selma Dunn's spouse?", "MARRIED_TO", ["Lev Castell"]),
    ("Ai là đạo diễn của Salt Harbour?", "DIRECTED", ["Ines Varga"]),
])
def test_relation_words_unlike_any_name_are_linked_through_the_graph(studio, question, relation, names):
    answer, trace, found = ask(studio, question)
    assert found == names, answer.answer
    links = graph_links(trace)
    assert [(g["kind"], g["name"]) for g in links] == [("relation", relation)]
    assert links[0]["score"] >= MIN_GAIN


def test_an_agent_noun_reads_its_relation_by_name(studio):
    _, trace, found = ask(studio, "Where was the director of The Last Ferry born?")
    assert found == ["Lindqvist Bay"] and not graph_links(trace)
    assert [s["relation"] for s in trace["plan"]["steps"]] == ["DIRECTED", "BORN_IN"]


def test_a_type_word_the_schema_does_not_know_is_linked_to_the_nearest_type(studio):
    _, trace, found = ask(studio, "Which prizes did Northbound Silence receive?")
    assert found == ["Silver Lantern Prize"]
    assert ("type", "Award") in [(g["kind"], g["name"]) for g in graph_links(trace)]


@pytest.mark.parametrize("question, words", [
    ("Who sings in Paper Lanterns?", "sings"),
    ("Who likes Salt Harbour?", "likes"),
    ("Ai đã chê phim Northbound Silence?", "chê"),
    ("When was Copper Skies released?", "released"),     # a date: no relation to a node gives it
])
def test_words_for_what_the_graph_does_not_hold_are_refused_by_name(studio, question, words):
    answer, trace, found = ask(studio, question)
    assert found is None and answer.answer.startswith(NOT_MAPPED), answer.answer
    assert repr(words) in answer.answer


def test_without_an_embedder_only_the_types_link(studio):
    planner = RulePlanner(studio.schema, linker_for=lambda language: GraphLinker(None))
    question = "In which city was The Glass Orchard shot?"
    plan = planner.plan(question, studio.names.resolve(question))     # one relation joins Film and City
    assert [s.to_dict()["relation"] for s in plan.steps] == ["FILMED_IN"]
    with pytest.raises(Exception, match="'boss'"):       # CEO_OF and FOUNDED both join Company and Person
        planner.plan("Who is the boss of Ostrava Films?", studio.names.resolve("Who is the boss of Ostrava Films?"))


def test_who_in_a_graph_without_people_links_nothing(kg_planner_biomed):
    answer = ask_kg("Who first synthesised Aspirin?", kg_planner_biomed, use_llm=False)
    assert answer.answer.startswith(NOT_MAPPED) and "'first synthesised'" in answer.answer


@pytest.fixture(scope="module")
def kg_planner_biomed(tmp_path_factory):
    store = NxTypedStore(tmp_path_factory.mktemp("biomed") / "biomed.json.gz")
    import_kg(ROOT / "data" / "biomed" / "nodes.csv", ROOT / "data" / "biomed" / "edges.csv", store)
    return KGQA(store)
