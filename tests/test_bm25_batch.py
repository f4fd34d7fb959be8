"""Batch BM25 (``top_k_many``, ``search_many``): the same documents and the same scores, to
the last bit, as the per-query path, compiled (numba) or not, on one thread or two; and
``eval retrieval``'s batch ranking equals the per-query one."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from ragkit.errors import InputError, MissingExtraError
from ragkit.retrieval import bm25_batch
from ragkit.retrieval.bm25 import BM25Index, BM25Params
from ragkit.text import Tokenizer

from .conftest import shared


def _same(ranked, reference) -> None:
    """Same documents and scores as the per-query path."""
    assert len(ranked) == len(reference)
    for (idx, scores), (ref_idx, ref_scores) in zip(ranked, reference):
        assert np.array_equal(idx, ref_idx) and np.array_equal(scores, ref_scores)


@pytest.fixture(scope="module")
def scifact_tokens(scifact_docs):
    tok = Tokenizer(lang="en")
    queries = [json.loads(line)["text"] for line in shared("scifact", "queries.jsonl").open()][:400]
    return [tok(d.full_text) for d in scifact_docs], [tok(q) for q in queries]


@pytest.mark.parametrize("idf", ["okapi", "robertson", "lucene"])
def test_batch_equals_per_query_on_scifact(scifact_tokens, idf):
    corpus, queries = scifact_tokens
    index = BM25Index.from_tokens(corpus, BM25Params(idf=idf))
    for k in (1, 10, 100, len(corpus) + 5):
        reference = [index.top_k_tokens(q, k) for q in queries]
        _same(bm25_batch.top_k_many(index, queries, k, compiled=True), reference)
        if k == 10:
            _same(bm25_batch.top_k_many(index, queries, k, threads=2, compiled=True), reference)
            _same(bm25_batch.top_k_many(index, queries, k, compiled=False), reference)


def test_threads_answer_in_a_process_forked_after_a_threaded_batch(scifact_tokens):
    """The batch's thread pool is kept between batches; a forked child (a server's worker,
    multiprocessing) has none of its parent's threads and must get a pool of its own."""
    import multiprocessing

    corpus, queries = scifact_tokens
    index = BM25Index.from_tokens(corpus, BM25Params())
    reference = bm25_batch.top_k_many(index, queries, 10, threads=3, compiled=True)
    _same(reference, [index.top_k_tokens(q, 10) for q in queries])

    def child(out) -> None:
        ranked = bm25_batch.top_k_many(index, queries, 10, threads=3, compiled=True)
        out.put([idx.tolist() for idx, _ in ranked])

    context = multiprocessing.get_context("fork")
    out = context.Queue()
    proc = context.Process(target=child, args=(out,), daemon=True)
    proc.start()
    answered = out.get(timeout=120)          # a child stuck on its parent's pool never answers
    proc.join()
    assert proc.exitcode == 0 and answered == [idx.tolist() for idx, _ in reference]


@pytest.mark.parametrize("block", [0, 64], ids=["slots", "blocks"])
@pytest.mark.parametrize("idf", ["robertson", "lucene"])
def test_batch_of_rare_terms_ranks_as_one_query_at_a_time(scifact_tokens, idf, block, monkeypatch):
    """Queries of rare terms only (few postings: the loop adds them and reads the documents
    it touched, on a large corpus (``block_docs``) a block of documents at a time: here 64,
    so about 80 blocks) rank as the per-query path does, ties too, and so do long ones."""
    monkeypatch.setattr(bm25_batch, "block_docs", lambda n_docs: block)
    corpus, queries = scifact_tokens
    index = BM25Index.from_tokens(corpus, BM25Params(idf=idf))
    df = np.diff(index.weights.indptr)
    rare = [[t for t in q if t in index.vocab and df[index.vocab[t]] <= 20] for q in queries]
    rare = [q for q in rare if q]
    long = [sum(rare[i:i + 12], []) for i in range(0, 120, 12)]       # 12 queries' terms in one
    rare += [q[:1] * 3 for q in rare] + long                           # and a repeated term
    assert sum(int(df[[index.vocab[t] for t in q]].sum()) * 4 < len(corpus) for q in rare) > 100
    assert sum(len(set(q)) >= 16 and int(df[[index.vocab[t] for t in set(q)]].sum()) * 4 < len(corpus)
               for q in long) >= 5
    for k in (1, 10, 50):
        _same(bm25_batch.top_k_many(index, rare, k, compiled=True), [index.top_k_tokens(q, k) for q in rare])


@pytest.mark.parametrize("block", [0, 64], ids=["slots", "blocks"])
def test_batch_with_weights_at_or_below_zero(block, monkeypatch):
    """Robertson's IDF goes negative for a term in most documents: a document that shares
    only such terms scores below zero and is still ranked (it shares a term); one sharing
    none is not. Repeated and unknown query terms count as in the per-query path. Such a
    term is in half the documents or more, so only the slot way meets it; the queries with
    few postings on the larger corpus run both ways on an index that has such weights."""
    monkeypatch.setattr(bm25_batch, "block_docs", lambda n_docs: block)
    corpus = [["common", "rare"], ["common"], ["common", "other"], ["common", "x"], ["y"]]
    index = BM25Index.from_tokens(corpus, BM25Params(idf="robertson"))
    assert not index.positive_weights
    queries = [["common"], ["common", "rare", "common"], ["nowhere"], [], ["y", "common", "zzz"]]
    for k in (1, 2, 10):
        reference = [index.top_k_tokens(q, k) for q in queries]
        _same(bm25_batch.top_k_many(index, queries, k, compiled=True), reference)
    # and on a larger corpus, where queries of rare terms touch few documents
    corpus = [["common", f"w{i % 50}"] + (["extra"] if i % 7 == 0 else []) for i in range(400)]
    larger = BM25Index.from_tokens(corpus, BM25Params(idf="robertson"))
    assert not larger.positive_weights
    queries = [["w3"], ["w3", "w3", "zz"], ["extra", "w4"], ["w1", "common"], ["common"]]
    for k in (1, 5, 20):
        _same(bm25_batch.top_k_many(larger, queries, k, compiled=True), [larger.top_k_tokens(q, k) for q in queries])
    # the per-document scratch kept with the index for the next batch is left clean
    (scores, seen, _), = larger._scratch
    assert not scores.any() and not seen.any()
    ranked = bm25_batch.top_k_many(index, [["common"]], 10, compiled=True)[0]
    assert sorted(ranked[0].tolist()) == [0, 1, 2, 3] and (ranked[1] < 0).all()


@pytest.mark.parametrize("filler", [0, 600], ids=["many-postings", "few-postings"])
@pytest.mark.parametrize("block", [0, 7], ids=["slots", "blocks"])
def test_ties_go_to_the_earlier_document(filler, block, monkeypatch):
    """Ties in every way of the loop: reading every slot (many postings), and, behind
    documents that share no term (few postings), a slot per document or blocks."""
    monkeypatch.setattr(bm25_batch, "block_docs", lambda n_docs: block)
    corpus = [["a", "b"], ["a", "c"], ["a", "d"], ["a", "e"], ["b"]] * 30 + [["z"]] * filler
    index = BM25Index.from_tokens(corpus, BM25Params(idf="lucene"))
    assert (np.diff(index.weights.indptr)[index.vocab["a"]] * 4 < len(corpus)) == bool(filler)
    for k in (1, 3, 7, 50):
        reference = [index.top_k_tokens(["a"], k), index.top_k_tokens(["a", "b"], k)]
        _same(bm25_batch.top_k_many(index, [["a"], ["a", "b"]], k, compiled=True), reference)
    assert bm25_batch.top_k_many(index, [["a"]], 3, compiled=True)[0][0].tolist() == [0, 1, 2]


def test_search_many_equals_search(manual_index):
    questions = ["Các bước khởi động máy nén khí?", "kiểm tra mức dầu", "an toàn khi vận hành máy tiện",
                 "quy trình thay dao phay", "xyzzy plugh", "máy khoan"]
    for boost in (False, True):
        batch = manual_index.search_many(questions, k=5, boost=boost)
        single = [manual_index.search(q, k=5, boost=boost) for q in questions]
        assert batch == single
    each = [i % 2 == 0 for i in range(len(questions))]
    assert manual_index.search_many(questions, k=5, boost=each) == \
        [manual_index.search(q, k=5, boost=b) for q, b in zip(questions, each)]
    with pytest.raises(InputError, match="boost: 2 values for 6 queries"):
        manual_index.search_many(questions, k=5, boost=[True, False])
    assert manual_index.search_many(questions, k=5)[4] == []
    with pytest.raises(InputError, match="k: must be at least 1"):
        manual_index.search_many(questions, k=0)
    with pytest.raises(InputError, match="threads: must be at least 1"):
        manual_index.top_k_many([["máy"]], 3, threads=0)


def test_without_numba_the_numpy_path_answers(monkeypatch, manual_index):
    questions = [manual_index.tokenizer(q) for q in ("máy nén khí", "dầu bôi trơn", "an toàn")]
    reference = [manual_index.top_k_tokens(q, 4) for q in questions]
    monkeypatch.setitem(sys.modules, "numba", None)         # as if numba were not installed
    monkeypatch.setattr(bm25_batch, "_KERNEL", [])
    _same(bm25_batch.top_k_many(manual_index, questions, 4), reference)
    assert bm25_batch.kernel() is None
    with pytest.raises(MissingExtraError, match=r"numba is not installed: pip install 'ragkit-workbench\[fast\]'"):
        bm25_batch.top_k_many(manual_index, questions, 4, compiled=True)


def test_eval_retrieval_batch_ranks_as_retrieve(tmp_path):
    """``eval retrieval --method bm25`` ranks all queries as one batch; its run is the one
    ``retrieve`` gives query by query."""
    from ragkit.config import LexicalConfig
    from ragkit.corpus import load_beir_queries, load_corpus
    from ragkit.eval.retrieval import evaluate_retrieval
    from ragkit.retrieval.search import retrieve

    from .conftest import scifact_subset

    rows, docs, queries = scifact_subset(40, 300)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in rows))
    result = evaluate_retrieval(corpus, tmp_path / "queries.jsonl", tmp_path / "qrels.tsv", method="bm25",
                                keep_run=True, threads=2, progress=False)
    index = BM25Index.for_corpus(load_corpus(corpus), "auto", progress=False)
    config = LexicalConfig(k=100, depth=100, mmr=False, method="bm25")
    texts = load_beir_queries(tmp_path / "queries.jsonl")
    for qid, ranked in result["run"].items():
        _, hits = retrieve(index, texts[qid], config)
        assert ranked == [(h.doc_id, h.score) for h in hits]


@pytest.mark.slow
def test_search_queries_file_ranks_as_search_query(manual_index_dir, tmp_path):
    """``ragkit search --queries FILE`` (one batch) gives each query what ``--query`` gives."""
    import subprocess

    from .conftest import ROOT

    questions = ["Các bước khởi động máy nén khí?", "kiểm tra mức dầu", "an toàn khi vận hành máy tiện"]
    (tmp_path / "q.txt").write_text("\n".join(questions) + "\n", encoding="utf-8")

    def run(*args):
        done = subprocess.run([sys.executable, "-m", "ragkit.cli", "search", "--index", str(manual_index_dir),
                               "--method", "bm25", "--k", "4", "--json", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    batch = run("--queries", str(tmp_path / "q.txt"), "--threads", "2")
    assert batch["queries"] == 3
    for n, question in enumerate(questions, 1):
        single = run("--query", question)["results"]
        assert [(r["doc_id"], r["score"]) for r in batch["results"][str(n)]] == \
            [(r["doc_id"], r["score"]) for r in single]


def test_a_small_batch_in_a_fresh_process_ranks_with_numpy(tmp_path):
    """Loading the compiled loop (numba and its cache) costs more than numpy takes for a small
    batch: a process that has not loaded it ranks a small batch with numpy, the same hits, and
    never imports numba; a large one (``NUMPY_WORK``) loads it."""
    import subprocess

    script = (
        "import sys\n"
        "from ragkit.retrieval import bm25_batch\n"
        "from ragkit.retrieval.bm25 import BM25Index, BM25Params\n"
        "index = BM25Index.from_tokens([['a', 'b'], ['b', 'c'], ['c', 'a', 'a']], BM25Params())\n"
        "queries = [['a'], ['b', 'c'], ['z']]\n"
        "small = bm25_batch.top_k_many(index, queries, 2)\n"
        "print('numba' in sys.modules)\n"
        "bm25_batch.NUMPY_WORK = 0\n"
        "large = bm25_batch.top_k_many(index, queries, 2)\n"
        "print('numba' in sys.modules)\n"
        "print(all((a[0] == b[0]).all() and (a[1] == b[1]).all() for a, b in zip(small, large)))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]



@pytest.mark.parametrize("block", [1, 1000])
def test_blocks_in_a_batch_of_every_kind_of_query(scifact_tokens, block, monkeypatch):
    """Blocks of one document, and blocks that do not divide the corpus, beside the queries
    with many postings that read every slot, in one batch: the per-query rankings."""
    corpus, queries = scifact_tokens
    assert bm25_batch.block_docs(len(corpus)) == 0 and bm25_batch.block_docs(1_000_000) == bm25_batch.BLOCK_DOCS
    monkeypatch.setattr(bm25_batch, "block_docs", lambda n_docs: block)
    index = BM25Index.from_tokens(corpus, BM25Params(idf="lucene"))
    df = np.diff(index.weights.indptr)
    few = [sum(int(df[index.vocab[t]]) for t in set(q) if t in index.vocab) * 4 < len(corpus) for q in queries]
    assert 20 < sum(few) < len(queries) - 20                  # both ways, dozens of each
    for k in (1, 10, 100):
        reference = [index.top_k_tokens(q, k) for q in queries]
        _same(bm25_batch.top_k_many(index, queries, k, compiled=True), reference)
        _same(bm25_batch.top_k_many(index, queries, k, threads=2, compiled=True), reference)
