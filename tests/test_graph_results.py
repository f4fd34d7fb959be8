"""What a graph query finds is typed, and its JSON keeps the keys (and their order) the trace
has always shown: each type round-trips through it."""

import json

import pytest

from ragkit.multihop.results import Alternative, Anchor, GraphPath, GraphResult, Neighbour, scored

ANCHOR = {"node": "Marie_Curie", "entity": "marie curie", "score": 1.0, "how": "exact"}
NEIGHBOUR = {"source": "Marie_Curie", "relation": "spouse", "target": "Pierre_Curie",
             "text": "Cạnh: Marie Curie --spouse--> Pierre Curie", "evidence": ["source: a biography"], "score": 0.61}
WALK = {"nodes": ["Marie_Curie", "Pierre_Curie", "France"],
        "steps": [["Marie_Curie", "spouse", "Pierre_Curie"], ["Pierre_Curie", "nationality", "France"]],
        "end": "France", "evidence": [], "relations": ["spouse", "nationality"],
        "text": "Marie Curie -[spouse]-> Pierre Curie ; Pierre Curie -[nationality]-> France", "score": 0.83,
        "votes": {"France": 1}}
ALTERNATIVE = {"answer": "Poland", "path": "Marie Curie -[nationality]-> Poland", "relations": ["nationality"],
               "score": 0.8, "evidence": []}


@pytest.mark.parametrize("kind, data", [(Anchor, ANCHOR), (Neighbour, NEIGHBOUR), (GraphPath, WALK),
                                        (Alternative, ALTERNATIVE)], ids=["anchor", "neighbour", "path", "alt"])
def test_each_type_round_trips_through_its_json(kind, data):
    item = kind.from_dict(json.loads(json.dumps(data)))
    assert item.to_dict() == data and list(item.to_dict()) == list(data)
    assert kind.from_dict(item.to_dict()) == item
    with pytest.raises(AttributeError):
        item.score = 0.0


def test_a_path_without_votes_has_no_votes_key_and_ends_at_its_last_node():
    between = GraphPath.from_dict({k: v for k, v in WALK.items() if k != "votes"})
    assert "votes" not in between.to_dict() and between.end == "France"
    assert scored(between, 0.123456).score == 0.1235 and between.score == 0.83


def test_a_result_round_trips_and_reads_by_key_as_traces_do():
    data = {"entities": ["marie curie"], "anchors": [ANCHOR], "neighbours": [NEIGHBOUR], "paths": [WALK],
            "answer": "France", "alternatives": [ALTERNATIVE]}
    result = GraphResult.from_dict(data)
    assert result.to_dict() == data and GraphResult.from_dict(result.to_dict()) == result
    assert result["paths"][0]["relations"] == ["spouse", "nationality"] and result.paths[0].votes == {"France": 1}
    assert list(result.keys()) == list(data)
    assert GraphResult(("zorro",)).to_dict() == {"entities": ["zorro"], "anchors": [], "neighbours": [], "paths": [],
                                                 "answer": None, "alternatives": []}
