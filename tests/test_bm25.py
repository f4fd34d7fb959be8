import json
import math
from collections import Counter

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragkit.corpus import Doc
from ragkit.errors import IndexFormatError, InputError
from ragkit.retrieval import bm25 as bm25_module
from ragkit.retrieval.bm25 import BM25Index, BM25Params
from ragkit.retrieval.boosting import structural_boost, takes_boost
from ragkit.retrieval.scoring import idf_lucene, idf_okapi, idf_robertson, select_idf
from ragkit.text import Tokenizer

from .conftest import shared

SMALL = [["may", "phay", "buoc"], ["may", "tien"], ["may", "phay", "phay", "dao"], ["an", "toan"]]


def reference_robertson_scores(corpus, query, k1=1.5, b=0.75, eps=1e-12):
    """The design's formula written out term by term, as a check on the matrix version."""
    n = len(corpus)
    avgdl = sum(len(d) for d in corpus) / n
    df = Counter(t for d in corpus for t in set(d))
    scores = []
    for d in corpus:
        tf = Counter(d)
        s = 0.0
        for q in query:
            if q not in df:
                continue
            idf = math.log((n - df[q] + 0.5) / (df[q] + 0.5) + eps)
            f = tf[q]
            s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(d) / avgdl))
        scores.append(s)
    return np.array(scores)


def test_robertson_formula_matches_written_out_reference():
    index = BM25Index.from_tokens(SMALL)
    for query in (["phay"], ["may", "phay"], ["phay", "phay"], ["nothing"], ["an", "dao"]):
        assert np.allclose(index.score_tokens(query), reference_robertson_scores(SMALL, query), atol=1e-12)


def test_idf_variants():
    df = np.array([1, 2, 3])
    assert idf_robertson(df, 4)[0] == pytest.approx(math.log(3.5 / 1.5 + 1e-12))
    assert idf_robertson(df, 4)[2] < 0
    assert (idf_okapi(df, 4) >= 0).all()
    assert (idf_lucene(df, 4) > 0).all()
    with pytest.raises(ValueError, match="unknown variant"):
        select_idf("bm42")


@pytest.mark.slow
def test_exact_parity_with_rank_bm25_on_scifact(scifact_docs):
    """Same tokens in, rank-bm25's BM25Okapi scores out: max |Δ| ≤ 1e-6 on all 300 test queries."""
    tok = Tokenizer(lang="en")
    corpus_tokens = [tok(d.full_text) for d in scifact_docs]
    ours = BM25Index.from_tokens(corpus_tokens, BM25Params(idf="okapi"))
    theirs = BM25Okapi(corpus_tokens)
    queries = {json.loads(l)["_id"]: json.loads(l)["text"]
               for l in shared("scifact", "queries.jsonl").read_text().splitlines()}
    test_ids = {l.split("\t")[0] for l in shared("scifact", "qrels", "test.tsv").read_text().splitlines()[1:]}
    worst = 0.0
    for qid in sorted(test_ids):
        q = tok(queries[qid])
        worst = max(worst, float(np.abs(ours.score_tokens(q) - theirs.get_scores(q)).max()))
    assert worst <= 1e-6


def test_top_k_breaks_ties_by_document_order():
    index = BM25Index.from_tokens([["a"], ["a"], ["a"], ["b"]])
    order, scores = index.top_k_tokens(["a"], 2)
    assert order.tolist() == [0, 1] and scores[0] == scores[1]


@pytest.mark.parametrize("idf", ["robertson", "lucene"])
def test_few_and_many_postings_rank_the_same_as_every_documents_scores(idf):
    """A query with few postings sorts them by document, one with many adds them into a slot
    per document: both give what the whole score vector gives, to the last bit, ties to the
    earlier document, repeated terms counted. A weight at or below zero (Robertson's IDF
    of a term in half the documents or more) only meets the slot way, and is still ranked."""
    rng = np.random.default_rng(3)
    corpus = [[f"w{int(w)}" for w in rng.zipf(1.3, size=rng.integers(3, 12)) % 400] for _ in range(2000)]
    index = BM25Index.from_tokens(corpus, BM25Params(idf=idf))
    df = np.diff(index.weights.indptr)
    by_df = sorted(index.vocab, key=lambda t: df[index.vocab[t]])
    queries = [by_df[:3], by_df[10:12] * 2, by_df[-1:], by_df[-3:], [by_df[5], by_df[-1]], ["nowhere"]]
    postings = [sum(int(df[index.vocab[t]]) for t in q if t in index.vocab) for q in queries]
    assert min(p for p in postings if p) * 8 < len(corpus) <= max(postings) * 8     # both ways run
    for q in queries:
        every = index.score_tokens(q)
        counts = Counter(index.vocab[t] for t in q if t in index.vocab)
        shared_term = np.zeros(len(corpus), dtype=bool)
        for term in counts:
            shared_term[index.weights.indices[index.weights.indptr[term]:index.weights.indptr[term + 1]]] = True
        matched = np.flatnonzero(shared_term)
        want = matched[np.lexsort((matched, -every[matched]))][:7]
        order, scores = index.top_k_tokens(q, 7)
        assert order.tolist() == want.tolist()
        assert np.array_equal(scores, every[want])          # bit for bit
        hits = index.search(" ".join(q), 7, boost=False)
        assert [h.index for h in hits] == want.tolist()
        assert [h.bm25 for h in hits] == every[want].tolist()


def test_search_only_returns_documents_sharing_a_term(manual_index):
    hits = manual_index.search("piston", k=10)
    assert hits and all("piston" in (h.title + h.text).lower() for h in hits)
    assert manual_index.search("xyzzy", k=10) == []


def test_structural_boost_for_procedural_questions(manual_index, manual_docs):
    assert takes_boost("Các bước vận hành máy phay?")
    assert takes_boost("quy trinh bao duong")  # typed without accents
    assert not takes_boost("Máy phay là gì?")
    assert takes_boost("Máy phay là gì?", asked=True) and not takes_boost("các bước", asked=False)
    assert structural_boost("Bước 1: Làm sạch\nBước 2: Gá phôi") == pytest.approx(0.3)
    assert structural_boost("Quy trình gồm:\nBước 1: x") == pytest.approx(0.45)
    boosted = manual_index.search("Các bước vận hành máy phay", k=3, boost=True)
    assert boosted[0].boost > 0 and boosted[0].score == pytest.approx(boosted[0].bm25 + boosted[0].boost)
    plain = manual_index.search("Các bước vận hành máy phay", k=3)     # the index decides nothing itself
    assert all(h.boost == 0 and h.score == h.bm25 for h in plain)
    # Built without boost scores, an index has none, and a boosted search ranks as a plain one.
    bare = BM25Index.build(manual_docs, manual_index.tokenizer, progress=False)
    assert not bare.boost.any()
    assert [(h.doc_id, h.score) for h in bare.search("Các bước vận hành máy phay", k=5, boost=True)] == \
        [(h.doc_id, h.score) for h in manual_index.search("Các bước vận hành máy phay", k=5)]


def test_save_and_load_round_trip(manual_index, manual_index_dir):
    loaded = BM25Index.load(manual_index_dir)
    assert loaded.meta["format_version"] == bm25_module.FORMAT_VERSION
    assert len(loaded) == len(manual_index) and loaded.vocab == manual_index.vocab
    assert loaded.tokenizer == manual_index.tokenizer
    q = "an toàn khi tiện"
    assert np.array_equal(loaded.get_scores(q), manual_index.get_scores(q))
    assert np.array_equal(loaded.idf, manual_index.idf)


def test_load_refuses_other_format_versions(manual_index, tmp_path):
    out = manual_index.save(tmp_path / "ix")
    meta = json.loads((out / "meta.json").read_text())
    meta["format_version"] = 999
    (out / "meta.json").write_text(json.dumps(meta))
    assert BM25Index.is_current(tmp_path / "ix") is False
    with pytest.raises(IndexFormatError, match="format version 999"):
        BM25Index.load(out)


def test_is_current_only_for_an_index_of_this_format(manual_index, tmp_path):
    assert BM25Index.is_current(manual_index.save(tmp_path / "ix")) is True
    assert BM25Index.is_current(tmp_path / "missing") is False
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "meta.json").write_text("{not json")
    assert BM25Index.is_current(tmp_path / "broken") is False


def test_load_refuses_a_folder_that_is_not_an_index(tmp_path):
    with pytest.raises(IndexFormatError, match="missing"):
        BM25Index.load(tmp_path)


def test_failed_save_leaves_the_previous_index(manual_index, tmp_path, monkeypatch):
    out = manual_index.save(tmp_path / "ix")
    before = sorted(p.name for p in tmp_path.iterdir())

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(bm25_module.np, "save", broken)
    from ragkit.errors import OutputError

    with pytest.raises(OutputError, match="ix: cannot write"):
        manual_index.save(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temporary folder left
    assert len(BM25Index.load(out)) == len(manual_index)


def test_params_are_validated():
    with pytest.raises(ValueError, match="b:"):
        BM25Params(b=2)
    with pytest.raises(ValueError, match="k1"):
        BM25Params(k1=-1)


def test_empty_corpus_is_refused():
    from ragkit.errors import InputError

    with pytest.raises(InputError):
        BM25Index.build([], progress=False)
    with pytest.raises(InputError, match="no document has a single token"):
        BM25Index.build([Doc("1", "!!!")], progress=False)



def test_a_loaded_index_maps_its_weights_and_reads_documents_when_asked(manual_index, tmp_path):
    """Loading parses no document (the first and last are checked) and maps the weight
    matrix's arrays; the scores and hits are the built index's, to the bit."""
    import scipy.sparse as sp

    out = manual_index.save(tmp_path / "ix")
    loaded = BM25Index.load(out)
    assert not loaded.weights.data.flags.writeable and not loaded.weights.indices.flags.writeable  # mapped, read-only
    assert loaded.docs._doc.cache_info().currsize <= 2
    query = manual_index.tokenizer("kiểm tra dầu máy nén khí")
    assert np.array_equal(loaded.score_tokens(query), manual_index.score_tokens(query))
    for compiled in (False, True):
        for (a, sa), (b, sb) in zip(loaded.top_k_many([query], 5, compiled=compiled),
                                    manual_index.top_k_many([query], 5, compiled=compiled)):
            assert np.array_equal(a, b) and np.array_equal(sa, sb)
    assert [h.doc_id for h in loaded.search("máy nén khí", 3)] == [h.doc_id for h in manual_index.search("máy nén khí", 3)]
    assert loaded.docs[-1] == manual_index.docs[-1] and loaded.docs[1:3] == manual_index.docs[1:3]
    # an index an earlier ragkit wrote (one weights.npz) still loads
    folder = out.resolve()
    sp.save_npz(folder / "weights.npz", manual_index.weights, compressed=False)
    for name in ("weights.indptr.npy", "weights.indices.npy", "weights.data.npy"):
        (folder / name).unlink()
    assert np.array_equal(BM25Index.load(out).score_tokens(query), manual_index.score_tokens(query))


def test_documents_that_do_not_match_the_index_are_refused_at_load(manual_index, tmp_path):
    from ragkit.retrieval.docs_file import write_doc_blocks

    out = manual_index.save(tmp_path / "ix")
    write_doc_blocks(list(manual_index.docs)[:-1], out.resolve())
    with pytest.raises(IndexFormatError, match=r"docs.z: holds \d+ documents, the index \d+"):
        BM25Index.load(out)


def reference_weights(corpus_tokens, params=BM25Params()):
    """The weight matrix built the plain way (a Counter per document, one COO matrix)."""
    import scipy.sparse as sp

    vocab: dict = {}
    rows, cols, tfs = [], [], []
    doc_len = np.array([len(t) for t in corpus_tokens], dtype=np.float64)
    for i, toks in enumerate(corpus_tokens):
        for term, tf in Counter(vocab.setdefault(t, len(vocab)) for t in toks).items():
            rows.append(i)
            cols.append(term)
            tfs.append(tf)
    row, col, tf = np.array(rows), np.array(cols), np.array(tfs, dtype=np.float64)
    idf = select_idf(params.idf)(np.bincount(col, minlength=len(vocab)), len(corpus_tokens))
    norm = 1.0 - params.b + params.b * doc_len[row] / doc_len.mean()
    data = idf[col] * (tf * (params.k1 + 1.0) / (tf + params.k1 * norm))
    return vocab, sp.csc_matrix((data, (row, col)), shape=(len(corpus_tokens), len(vocab)))


def test_a_build_in_blocks_gives_the_plain_build_to_the_bit_and_streams_its_documents(monkeypatch, tmp_path):
    """Postings counted a block at a time (blocks of 7 documents here) make the same matrix,
    bit for bit, as a Counter per document; documents given as a generator are written to
    disk as the build reads them, and the index saves and loads them."""
    import random

    rng = random.Random(5)
    words = [f"t{i}" for i in range(60)]
    corpus = [[rng.choice(words[: rng.randint(3, 60)]) for _ in range(rng.randint(0, 30))] for _ in range(100)]
    vocab, expected = reference_weights(corpus)
    monkeypatch.setattr(bm25_module, "BUILD_BLOCK", 7)
    docs = [Doc(f"d{i}", " ".join(t), title=f"Doc {i}") for i, t in enumerate(corpus)]
    streamed = BM25Index.from_tokens(corpus, docs=(d for d in docs))
    listed = BM25Index.from_tokens(corpus, docs=docs)
    for index in (streamed, listed):
        assert index.vocab == vocab
        assert np.array_equal(index.weights.indptr, expected.indptr)
        assert np.array_equal(index.weights.indices, expected.indices)
        assert index.weights.data.tobytes() == expected.data.tobytes()
    assert type(streamed.docs).__name__ == "DocBlocks" and listed.docs == docs == streamed.docs
    assert np.array_equal(streamed.boost, listed.boost)
    loaded = BM25Index.load(streamed.save(tmp_path / "ix"))
    assert loaded.docs == docs and loaded.weights.data.tobytes() == expected.data.tobytes()
    assert [h.doc_id for h in loaded.search("t1 t2", 5)] == [h.doc_id for h in listed.search("t1 t2", 5)]
    with pytest.raises(InputError, match="documents for 100 token lists"):
        BM25Index.from_tokens(corpus, docs=docs[:-1])
    with pytest.raises(InputError, match="more documents than token lists"):
        BM25Index.from_tokens(corpus[:-1], docs=iter(docs))


def test_an_index_of_an_earlier_ragkit_reads_its_docs_jsonl(manual_index, tmp_path):
    out = manual_index.save(tmp_path / "ix").resolve()
    with (out / "docs.jsonl").open("w", encoding="utf-8") as handle:
        for d in manual_index.docs:
            handle.write(json.dumps(d.to_dict(), ensure_ascii=False) + "\n")
    (out / "docs.z").unlink()
    (out / "docs.blocks.npy").unlink()
    loaded = BM25Index.load(out)
    assert type(loaded.docs).__name__ == "DocsFile" and loaded.docs == manual_index.docs
    (out / "docs.jsonl").unlink()
    with pytest.raises(IndexFormatError, match="missing docs.z"):
        BM25Index.load(out)


def test_a_saved_index_finds_documents_by_id_and_title_without_inflating_its_blocks(tmp_path):
    """``hit`` (a document found by id) and ``titled`` (by title) read the index's id and
    title lists (``docs.ids.json``, ``docs.titles.json``), not every document: no block is
    inflated before the found document's own. An index written before those lists gives the
    same answers by reading its documents; a list that does not match is refused."""
    docs = [Doc(f"d{i}", f"text {i} about pumps", title=["Pump", "Valve", "", "pump!"][i % 4]) for i in range(300)]
    folder = BM25Index.build(docs, progress=False).save(tmp_path / "ix").resolve()
    assert json.loads((folder / "docs.ids.json").read_text()) == [d.doc_id for d in docs]
    assert json.loads((folder / "docs.titles.json").read_text()) == [["Pump", 0], ["Valve", 1], ["pump!", 3]]

    def answers(index):
        return (index.hit("d257", 1.5).text, index.titled("PUMP").doc_id, index.titled("valve").doc_id,
                index.titled("Gate"))

    loaded = BM25Index.load(folder)
    blocks = loaded.docs._block
    loaded.hit("d0", 0.0)
    loaded.titled("nothing")
    assert blocks.cache_info().misses <= 2          # the first and last blocks, checked at load
    assert answers(loaded) == ("text 257 about pumps", "d0", "d1", None)
    for name in ("docs.ids.json", "docs.titles.json"):
        (folder / name).unlink()
    assert answers(BM25Index.load(folder)) == ("text 257 about pumps", "d0", "d1", None)
    (folder / "docs.ids.json").write_text(json.dumps(["d0", "d1"]))
    with pytest.raises(IndexFormatError, match=r"docs.ids.json: does not describe docs.z"):
        BM25Index.load(folder).hit("d5", 1.0)
    (folder / "docs.titles.json").write_text(json.dumps([["Pump"]]))
    with pytest.raises(IndexFormatError, match=r"docs.titles.json: not a list of \[title, document\] pairs"):
        BM25Index.load(folder).titled("Pump")
