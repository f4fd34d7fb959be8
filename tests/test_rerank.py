"""The rerank stage and cosine MMR. Unit tests use a stand-in judge for our own
logic; the rest use the real GGUF in process, a real llama_cpp.server and a real index."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from ragkit.config import LexicalConfig
from ragkit.errors import InputError
from ragkit.retrieval.bm25 import Hit
from ragkit.retrieval.mmr import cosine_matrix, mmr_rerank, scale_relevance
from ragkit.retrieval.rerank import NO, YES, LLMReranker, make_reranker, rerank_prompt, yes_no_logodds

from .conftest import MANUALS


class Judge:
    """Says Yes to passages that contain ``word`` (log-odds +2), No otherwise (−2)."""

    name = "stand-in"

    def __init__(self, word: str):
        self.word = word
        self.prompts: list[str] = []

    def choice_logprobs(self, prompt, choices):
        self.prompts.append(prompt)
        yes = self.word in prompt.split("Passage:")[1]
        z = 2.0 if yes else -2.0
        p_yes = 1 / (1 + math.exp(-z))
        return [math.log(p_yes / len(YES))] * len(YES) + [math.log((1 - p_yes) / len(NO))] * len(NO)


def hits(*texts):
    return [Hit(index=i, doc_id=f"d{i}", score=10.0 - i, bm25=10.0 - i, text=t, title=f"T{i}")
            for i, t in enumerate(texts)]


def test_logodds_sums_the_variants_of_each_answer():
    probs = [0.3, 0.1, 0.0001, 0.0001, 0.0001] + [0.05, 0.05, 0.0001, 0.0001, 0.0001]
    logodds = yes_no_logodds([math.log(p) for p in probs])
    assert logodds == pytest.approx(math.log(0.4003 / 0.1003))


def test_prompt_is_chatml_ending_at_the_answer_and_cuts_long_passages():
    prompt = rerank_prompt("what is BM25?", "Ranking", "lorem " * 500)
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")
    assert prompt.count("lorem") == 160
    assert "Question: what is BM25?" in prompt and "Passage: Ranking\n" in prompt


def test_pure_judge_order_and_fused_order():
    candidates = hits("alpha", "beta", "gamma drill", "delta", "drill bits")
    judge = Judge("drill")
    pure, trace = LLMReranker(judge, depth=5, fuse=False).rerank("q", candidates)
    assert [h.doc_id for h in pure] == ["d2", "d4", "d0", "d1", "d3"]
    assert pure[0].score == pytest.approx(2.0)
    assert trace[2] == {"doc_id": "d2", "logodds": 2.0, "before": 3, "after": 1}
    fused, _ = LLMReranker(judge, depth=5).rerank("q", candidates)
    # RRF of (0 1 2 3 4) and (2 4 0 1 3): d2 1/63+1/61, d0 1/61+1/63, d1 ... ties keep retrieval order
    assert [h.doc_id for h in fused] == ["d0", "d2", "d1", "d4", "d3"]
    assert len(judge.prompts) == 10


def test_only_the_top_depth_are_judged_and_kept():
    candidates = hits("a", "b drill", "c", "d drill", "e drill")
    judge = Judge("drill")
    out, trace = LLMReranker(judge, depth=3, fuse=False).rerank("q", candidates)
    assert [h.doc_id for h in out] == ["d1", "d0", "d2"]
    assert len(trace) == 3 and len(judge.prompts) == 3


def test_reranker_and_config_refuse_bad_options():
    with pytest.raises(InputError, match="--rerank: must be one of none, llm, got 'cross'"):
        make_reranker("cross", Judge("x"))
    with pytest.raises(InputError, match="rerank_depth: must be at least 1, got 0"):
        LLMReranker(Judge("x"), depth=0)
    with pytest.raises(InputError, match="cannot score choices"):
        make_reranker("llm", object())
    assert make_reranker("none", Judge("x")) is None
    with pytest.raises(InputError, match=r"rerank_depth: must be at least k \(4\), got 2"):
        LexicalConfig(rerank="llm", rerank_depth=2)
    LexicalConfig(k=30)   # the depth only matters when the rerank is on


def test_cosine_mmr_skips_a_near_duplicate_vector():
    candidates = hits("one", "two", "three", "four")
    vectors = np.array([[1.0, 0.0], [0.99, 0.05], [0.2, 0.98], [-1.0, 0.0]])
    assert cosine_matrix(vectors)[0, 1] > 0.99
    picked = mmr_rerank(None, candidates, 2, lam=0.65, vectors=vectors)
    assert [h.doc_id for h in picked] == ["d0", "d2"]
    assert scale_relevance(np.array([3.0, 3.0])).tolist() == [1.0, 1.0]


# ------------------------------------------------------------------ the real model
@pytest.mark.slow
def test_gguf_choice_logprobs_are_probabilities_and_prefix_reuse_is_exact(gguf):
    relevant = rerank_prompt("How do I change a drill bit safely?", "Drill",
                             "Unplug the drill before changing the bit, then loosen the chuck.")
    other = rerank_prompt("How do I change a drill bit safely?", "Oven", "Preheat the oven to 180 degrees.")
    first = gguf.choice_logprobs(relevant, YES + NO)
    assert all(v <= 0 for v in first)
    distinct = {gguf._first_token(c): v for c, v in zip(YES + NO, first)}
    assert 0 < sum(math.exp(v) for v in distinct.values()) <= 1.0 + 1e-6
    gguf.choice_logprobs(other, YES + NO)            # shares the prompt's start: reused
    again = gguf.choice_logprobs(relevant, YES + NO)
    gguf.reset()
    fresh = gguf.choice_logprobs(relevant, YES + NO)
    assert again == pytest.approx(first, abs=1e-3) and fresh == pytest.approx(first, abs=1e-3)


@pytest.mark.slow
def test_rerank_through_the_cli_is_timed_and_traced(tmp_path):
    def ragkit(*args):
        return subprocess.run([sys.executable, "-m", "ragkit.cli", *args], capture_output=True, text=True,
                              timeout=600)

    index = tmp_path / "manuals"
    assert ragkit("index", "build", "--corpus", str(MANUALS), "--out", str(index)).returncode == 0
    query = "làm sao để thay mũi khoan an toàn"
    # each judgment is a model call over a whole chunk: judge few, as the behaviour needs no more
    result = ragkit("search", "--index", str(index), "--query", query, "--k", "3", "--rerank", "llm",
                    "--rerank-depth", "5", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["results"]
    assert len(rows) == 3
    assert [r["rerank"]["after"] for r in rows] == [1, 2, 3]
    assert all(isinstance(r["rerank"]["logodds"], float) for r in rows)
    plain = json.loads(ragkit("search", "--index", str(index), "--query", query, "--k", "5", "--json").stdout)
    assert {r["doc_id"] for r in rows} <= {r["doc_id"] for r in plain["results"]}   # reordered, not new
    answer = ragkit("ask", "Các bước thay mũi khoan?", "--index", str(index), "--rerank", "llm",
                    "--rerank-depth", "5", "--no-llm", "--json")
    assert answer.returncode == 0, answer.stderr
    data = json.loads(answer.stdout)
    assert data["timings_ms"]["rerank"] > 0
    assert 4 <= len(data["trace"]["rerank"]) == data["trace"]["n_candidates"] <= 5
    assert data["trace"]["mmr_similarity"] == "jaccard"
    bad = ragkit("search", "--index", str(index), "--query", query, "--k", "5", "--rerank", "llm",
                 "--rerank-depth", "3")
    assert bad.returncode == 3
    assert bad.stderr.strip() == "ragkit: error: rerank_depth: must be at least k (5), got 3"


# ------------------------------------------------------------------ method auto
def test_question_language_and_auto_method(manual_index):
    from ragkit.retrieval.search import resolve_method
    from ragkit.text.question import question_language

    assert question_language("Các bước vận hành máy phay?") == "vi"
    assert question_language("How do I change the drill bit safely?") == "en"
    assert question_language("cac buoc van hanh may phay") == "unknown"    # unaccented Vietnamese
    assert manual_index.tokenizer.lang == "vi"
    assert resolve_method("auto", manual_index, "How do I change the drill bit?", True) == \
        ("dense", "auto: cross-lingual (English question, Vietnamese index)")
    assert resolve_method("auto", manual_index, "cac buoc van hanh may phay", True)[0] == "hybrid"
    assert resolve_method("auto", manual_index, "Các bước vận hành máy phay?", True)[0] == "hybrid"
    assert resolve_method("auto", manual_index, "How do I change the drill bit?", False)[0] == "bm25"
    assert resolve_method("bm25", manual_index, "How do I change the drill bit?", True) == ("bm25", "asked for")
    # the language the question's reading gave decides, not a second reading of the text
    assert resolve_method("auto", manual_index, "Drill bit?", True, language="en")[0] == "dense"
    assert resolve_method("auto", manual_index, "How do I change the drill bit?", True, language="vi")[0] == "hybrid"
