import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ragkit.retrieval.mmr import jaccard_matrix, jaccard_sets, mmr_rerank, mmr_select, scale_relevance


def test_jaccard_values():
    sim = jaccard_sets([["a", "b"], ["b", "c"], ["a", "b"], []])
    assert sim[0, 1] == pytest.approx(1 / 3)
    assert sim[0, 2] == 1.0
    assert sim[3, 3] == 0.0 and sim[0, 3] == 0.0


def test_near_duplicate_is_passed_over():
    sim = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert mmr_select(np.array([1.0, 0.95, 0.5]), sim, k=2, lam=0.65) == [0, 2]


def test_lambda_one_is_relevance_order():
    rel = np.array([0.2, 0.9, 0.5])
    assert mmr_select(rel, np.ones((3, 3)), k=3, lam=1.0) == [1, 2, 0]


def test_bad_lambda():
    with pytest.raises(ValueError, match="lambda"):
        mmr_select(np.array([1.0]), np.ones((1, 1)), 1, lam=1.5)


def test_scale_relevance():
    assert scale_relevance(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert scale_relevance(np.array([5.0, 5.0])).tolist() == [1.0, 1.0]


def test_rerank_on_real_index_diversifies(manual_index):
    hits = manual_index.search("các bước", k=10, candidates=50)
    picked = mmr_rerank(manual_index, hits, 4, lam=0.65)
    assert len(picked) == 4 and picked[0].doc_id == hits[0].doc_id
    assert len({h.doc_id for h in picked}) == 4


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.sampled_from("abcdefgh"), max_size=5), min_size=1, max_size=12),
       st.integers(min_value=0, max_value=15), st.floats(min_value=0, max_value=1))
def test_selection_properties(token_sets, k, lam):
    rel = np.linspace(1.0, 0.0, len(token_sets))
    sim = jaccard_sets([sorted(s) for s in token_sets])
    assert np.allclose(sim, sim.T) and ((0 <= sim) & (sim <= 1)).all()
    picked = mmr_select(rel, sim, k, lam)
    assert len(picked) == min(k, len(token_sets))
    assert len(set(picked)) == len(picked)
    if picked:
        assert picked[0] == 0  # the most relevant always goes first


def test_jaccard_matrix_accepts_dense():
    sim = jaccard_matrix(np.array([[1, 1, 0], [0, 1, 1]]))
    assert sim[0, 1] == pytest.approx(1 / 3)
