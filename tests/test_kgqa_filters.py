"""Numeric and count constraints in KG questions: how comparisons are read, what the planner
links them to in the graph, the filter steps it plans and runs, and the evidence they cite."""

from __future__ import annotations

import pytest

from ragkit.kgqa.answer import written_answer
from ragkit.kgqa.filters import comparisons, number_value, numeric_properties
from ragkit.kgqa.plan import Plan, PlanError, validate
from ragkit.text.words import terms

from .conftest import typed_kg
from .test_kgqa_plan import ask, final_names

FILM_NODES = """id,name,type,year,runtime,birth_year
p1,Christopher Nolan,Person,,,1970
p2,Cillian Murphy,Person,,,1976
p3,Michael Caine,Person,,,1933
m1,Inception,Movie,2010,148,
m2,Oppenheimer,Movie,2023,180,
m3,Interstellar,Movie,2014,169,
m4,Sunshine,Movie,2007,107,
m5,Memento,Movie,2000,113,
m6,Batman Begins,Movie,2005,140,
s1,Syncopy,Studio,,,
s2,DNA Films,Studio,,,
"""
FILM_EDGES = """source,relation,target
p1,DIRECTED,m1
p1,DIRECTED,m2
p1,DIRECTED,m3
p1,DIRECTED,m5
p1,DIRECTED,m6
p2,ACTED_IN,m1
p2,ACTED_IN,m2
p2,ACTED_IN,m4
p2,ACTED_IN,m6
p3,ACTED_IN,m1
p3,ACTED_IN,m3
p3,ACTED_IN,m6
m1,PRODUCED_BY,s1
m2,PRODUCED_BY,s1
m3,PRODUCED_BY,s1
m4,PRODUCED_BY,s2
m6,PRODUCED_BY,s1
"""


@pytest.fixture(scope="module")
def films(tmp_path_factory):
    return typed_kg(tmp_path_factory.mktemp("films"), FILM_NODES, FILM_EDGES)


def read(question):
    return [(c.compare, c.value) for c in comparisons(question, terms(question))]


@pytest.mark.parametrize("question, expected", [
    ("Which diseases have more than 3 symptoms?", [(">", 3)]),
    ("Which drugs were approved after the year 2000?", [(">", 2000)]),
    ("Which companies have 1,000 employees or more?", [(">=", 1000)]),
    ("cities with over 2.5 million inhabitants", [(">", 2_500_000)]),
    ("Which actors appeared in at least two films?", [(">=", 2)]),
    ("films released between 1990 and 2000", [(">=", 1990), ("<=", 2000)]),
    ("films from 1990 to 2000", [(">=", 1990), ("<=", 2000)]),
    ("What did she make in the 1990s?", [(">=", 1990), ("<=", 1999)]),
    ("people older than 50", [(">", 50)]),
    ("Những bệnh nào có nhiều hơn 3 triệu chứng?", [(">", 3)]),
    ("Which genes are linked to type 2 diabetes?", []),
])
def test_comparisons_are_read_from_a_cue_and_a_number(question, expected):
    assert read(question) == expected


def test_a_number_inside_a_name_is_not_compared():
    question = "Which drugs treat more than 2 conditions like Type 2 Diabetes?"
    tokens = terms(question)
    taken = set(range(tokens.index("type"), tokens.index("diabetes") + 1))
    assert [(c.compare, c.value) for c in comparisons(question, tokens, taken)] == [(">", 2)]


def test_numeric_properties_are_found_from_the_values():
    nodes = [{"id": "a", "name": "A", "type": "Movie", "year": "2001", "runtime": "120", "tagline": "go"},
             {"id": "b", "name": "B", "type": "Movie", "year": "1999-05-01", "runtime": "95.5"},
             {"id": "c", "name": "C", "type": "Person", "source": "https://example.org/1999"}]
    assert numeric_properties(nodes) == {"Movie": {"runtime": "number", "year": "year"}}
    assert number_value("1,200") == 1200 and number_value("2001-05-03") == 2001 and number_value("n/a") is None


@pytest.mark.parametrize("question, names", [
    ("Which movies did Christopher Nolan direct after 2005?", ["Inception", "Interstellar", "Oppenheimer"]),
    ("Which Christopher Nolan movies came out before 2010?", ["Batman Begins", "Memento"]),
    ("Which films longer than 150 minutes did Christopher Nolan direct?", ["Interstellar", "Oppenheimer"]),
    ("Which movies released between 2005 and 2015 did Cillian Murphy act in?",
     ["Batman Begins", "Inception", "Sunshine"]),
    ("Which people born before 1975 acted in Inception?", ["Michael Caine"]),
])
def test_a_property_comparison_filters_the_list_it_qualifies(films, question, names):
    answer, trace = ask(films, question)
    assert final_names(trace) == names
    last = trace["plan"]["steps"][-1]
    assert last["op"] == "filter" and "property" in last
    # the values compared are cited, with the edges
    assert {c.title for c in answer.citations if c.doc_id.endswith("." + last["property"])}


def test_a_counted_type_filters_by_the_number_of_edges(films):
    _, trace = ask(films, "Which studios produced more than 2 movies?")
    assert final_names(trace) == ["Syncopy"]
    assert trace["plan"]["steps"][-1] == {"key": trace["plan"]["final"], "op": "filter", "input": "all_studios",
                                          "compare": ">", "value": 2, "relation": "PRODUCED_BY",
                                          "direction": "in", "target_type": "Movie"}
    _, trace = ask(films, "Which actors appeared in at least 3 movies?")
    assert final_names(trace) == ["Cillian Murphy", "Michael Caine"]


def test_a_question_with_no_entity_starts_from_the_filtered_type(films):
    """"Who directed movies from after 2020": every movie, filtered, then the chain."""
    _, trace = ask(films, "Who directed movies released after 2020?")
    assert [s["op"] for s in trace["plan"]["steps"]] == ["all", "filter", "expand"]
    assert final_names(trace) == ["Christopher Nolan"]
    # a relation word left over keeps only the nodes that have such an edge
    _, trace = ask(films, "Which people born after 1960 directed a movie?")
    assert final_names(trace) == ["Christopher Nolan"]


def test_an_intermediate_list_is_filtered_where_it_is_in_the_plan(films):
    _, trace = ask(films, "Which studios produced movies from before 2008 that Cillian Murphy acted in?")
    ops = [s["op"] for s in trace["plan"]["steps"]]
    assert ops == ["expand", "filter", "expand"]
    assert final_names(trace) == ["DNA Films", "Syncopy"]


def test_the_relation_the_entity_has_is_taken_when_no_word_decides(films):
    """"Which Christopher Nolan movies ...": Nolan directed them; he acted in none."""
    _, trace = ask(films, "Which Christopher Nolan movies did Cillian Murphy not act in?")
    assert trace["plan"]["steps"][0]["relation"] == "DIRECTED"
    assert final_names(trace) == ["Interstellar", "Memento"]


def test_a_comparison_the_graph_cannot_make_is_not_planned(films):
    answer, trace = ask(films, "Which movies did Christopher Nolan direct with a budget over 100 million?")
    assert trace["plan"] is None and "'over 100 million'" in trace["plan_error"]
    assert answer.answer.startswith("I could not map this question to the graph")


def test_the_written_answer_says_what_was_compared(films):
    result = films.ask("Which movies did Christopher Nolan direct after 2005?")
    text = written_answer("", result.plan, result.context_store, films.nodes)
    assert "Answer: Those whose year is after 2005: 3 movies" in text
    result = films.ask("Which studios produced more than 2 movies?")
    text = written_answer("", result.plan, result.context_store, films.nodes)
    assert "Answer: Those with more than 2 movies (produced by): 1 studio: Syncopy" in text


def test_filter_steps_are_validated(films):
    base = [{"key": "s1", "op": "all", "type": "Movie"}]
    good = Plan.from_dict({"steps": base + [{"key": "s2", "op": "filter", "input": "s1", "compare": ">",
                                             "value": 2005, "property": "year"}], "final": "s2"})
    assert validate(good, films.schema, set(films.nodes)) is good
    for bad, why in [({"input": "s9", "compare": ">", "value": 1, "property": "year"}, "earlier step"),
                     ({"input": "s1", "compare": "~", "value": 1, "property": "year"}, "compare"),
                     ({"input": "s1", "compare": ">", "value": "ten", "property": "year"}, "number"),
                     ({"input": "s1", "compare": ">", "value": 1, "relation": "DIRECTED", "direction": "out",
                       "target_type": "Person"}, "edges of")]:
        with pytest.raises(PlanError, match=why):
            validate(Plan.from_dict({"steps": base + [{"key": "s2", "op": "filter", **bad}], "final": "s2"}),
                     films.schema, set(films.nodes))


def test_counts_of_edges_are_the_same_on_both_stores(kg):
    """On the demo KG in the embedded store and in Neo4j: the count filter asks the store."""
    _, trace = ask(kg, "Which diseases have more than 4 symptoms?")
    rows = [(e.source, e.target) for e in kg.store.expand([i for i in kg.nodes if kg.nodes[i]["type"] == "Disease"],
                                                           "HAS_SYMPTOM", "out")[1]]
    per: dict[str, int] = {}
    for source, _ in rows:
        per[source] = per.get(source, 0) + 1
    assert {i["id"] for i in trace["context_store"][trace["plan"]["final"]]} == {d for d, n in per.items() if n > 4}
    assert trace["plan"]["steps"][-1]["op"] == "filter"


def test_a_plan_of_another_type_or_without_the_comparison_does_not_fit_the_question(films):
    """A model's plan may be valid on the schema and answer another question: it is checked
    against the asked type and the comparisons as the rules read them."""
    question = "Which movies did Christopher Nolan direct after 2005?"
    entities = films.names.resolve(question)
    directed = {"key": "s1", "op": "expand", "from": {"entity": "p1"}, "relation": "DIRECTED", "direction": "out",
                "target_type": "Movie"}
    with pytest.raises(PlanError, match="compares 'after 2005', the plan filters nothing"):
        films.fits_question(Plan.from_dict({"steps": [directed], "final": "s1"}), question, entities)
    studios = {"key": "s2", "op": "expand", "from": {"step": "s1"}, "relation": "PRODUCED_BY", "direction": "out",
               "target_type": "Studio"}
    with pytest.raises(PlanError, match="lists studios, but the question asks for movies"):
        films.fits_question(Plan.from_dict({"steps": [directed, studios], "final": "s2"}), question, entities)
    after = {"key": "s2", "op": "filter", "input": "s1", "compare": ">", "value": 2005, "property": "year"}
    films.fits_question(Plan.from_dict({"steps": [directed, after], "final": "s2"}), question, entities)


def test_the_answer_check_compares_the_answer_type_with_the_asked_type(films):
    from ragkit.kgqa.answer import answer_draft

    result = films.ask("Which studios produced more than 2 movies?")
    plan = result.plan
    draft = answer_draft(result, films)
    assert draft.check("Syncopy produced more than 2 of these movies.").passed
    plan.linked = dict(plan.linked, asked_type="Movie")
    draft = answer_draft(result, films)
    verdict = draft.check("Syncopy produced more than 2 of these movies.")
    assert not verdict.passed and "lists studios, but the question asks for movies" in verdict.reason
