"""Inputs as they really come: a UTF-8 byte-order mark is accepted, a byte that is not UTF-8
is a one-line error naming the file and the line, two records with the same id are refused
(naming the id and both lines) unless --dedupe says which to keep, CSV is read with the csv
module (quoted commas and newlines), and a file that cannot be read is a one-line error."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from ragkit.causal.conditions import load_weather
from ragkit.causal.kg import load_kg
from ragkit.cli import main
from ragkit.corpus import load_beir_corpus, load_beir_queries, load_document_folder, load_qrels
from ragkit.errors import IndexFormatError, InputError
from ragkit.eval.mcq import load_mcq
from ragkit.multihop.graph import read_edges
from ragkit.kgqa.importer import read_nodes
from ragkit.retrieval.bm25 import BM25Index

from .conftest import ROOT

BOM = b"\xef\xbb\xbf"
CORPUS = [{"_id": "d1", "title": "Aspirin", "text": "Aspirin treats pain and fever."},
          {"_id": "d2", "title": "Ibuprofen", "text": "Ibuprofen is a painkiller."},
          {"_id": "d3", "title": "Paracetamol", "text": "Paracetamol lowers a fever."}]


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *args) -> str:
    """Exit 3 (bad input), one line on stderr, and on stdout nothing, or with --json only the
    error object."""
    code, out, err = cli(capsys, *args)
    lines = err.strip().splitlines()
    expected = "" if "--json" not in map(str, args) else json.dumps(
        {"error": {"type": json.loads(out)["error"]["type"], "message": lines[0].removeprefix("ragkit: error: "),
                   "exit_code": 3}}, ensure_ascii=False) + "\n"
    assert code == 3 and out == expected, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("ragkit: error: "), err
    return lines[0]


@pytest.fixture
def beir(tmp_path):
    """A small BEIR collection, every file with a byte-order mark."""
    write(tmp_path / "corpus.jsonl", BOM + jsonl(CORPUS))
    write(tmp_path / "queries.jsonl", BOM + jsonl([{"_id": "q1", "text": "what lowers a fever"}]))
    write(tmp_path / "qrels.tsv", BOM + b"query-id\tcorpus-id\tscore\nq1\td3\t1\n")
    return tmp_path


# ----------------------------------------------------------------- byte-order marks
def test_beir_files_with_a_byte_order_mark_are_read(beir):
    assert [d.doc_id for d in load_beir_corpus(beir / "corpus.jsonl")] == ["d1", "d2", "d3"]
    assert load_beir_queries(beir / "queries.jsonl") == {"q1": "what lowers a fever"}
    assert load_qrels(beir / "qrels.tsv") == {"q1": {"d3": 1}}


def test_eval_retrieval_on_bom_files(beir, capsys):
    code, out, err = cli(capsys, "eval", "retrieval", "--corpus", beir / "corpus.jsonl", "--queries",
                         beir / "queries.jsonl", "--qrels", beir / "qrels.tsv", "--lang", "en", "--json")
    assert code == 0, err
    assert json.loads(out)["recall@2"] == 1.0


def test_a_markdown_document_with_a_byte_order_mark_keeps_its_heading(tmp_path):
    write(tmp_path / "docs" / "a.md", BOM + "# Máy khoan\n\nBước 1: kiểm tra.\n".encode())
    [chunk] = load_document_folder(tmp_path / "docs")
    assert chunk.title == "Máy khoan" and chunk.text == "Bước 1: kiểm tra."


def test_questions_causal_kg_and_csv_files_with_a_byte_order_mark(tmp_path):
    mcq = write(tmp_path / "mcq.json", BOM + (ROOT / "data" / "mcq_demo.json").read_bytes())
    assert len(load_mcq(mcq)) == len(load_mcq(ROOT / "data" / "mcq_demo.json"))
    kg = write(tmp_path / "kg.json", BOM + (ROOT / "data" / "merged_knowledge_graph.json").read_bytes())
    assert load_kg(kg).graph.number_of_edges() == load_kg(ROOT / "data" / "merged_knowledge_graph.json").graph.number_of_edges()
    edges = write(tmp_path / "edges.csv", BOM + (ROOT / "data" / "nobel_edges.csv").read_bytes())
    assert read_edges(edges) == read_edges(ROOT / "data" / "nobel_edges.csv")
    nodes = write(tmp_path / "nodes.csv", BOM + (ROOT / "data" / "biomed" / "nodes.csv").read_bytes())
    assert read_nodes(nodes) == read_nodes(ROOT / "data" / "biomed" / "nodes.csv")
    weather = write(tmp_path / "weather.csv", BOM + b"time,relative_humidity\n2024-01-01 00:00,91\n")
    assert load_weather(weather)["relative_humidity"].tolist() == [91]


def test_kg_import_of_bom_csv_files(tmp_path, capsys):
    nodes = write(tmp_path / "nodes.csv", BOM + (ROOT / "data" / "biomed" / "nodes.csv").read_bytes())
    edges = write(tmp_path / "edges.csv", BOM + (ROOT / "data" / "biomed" / "edges.csv").read_bytes())
    code, out, err = cli(capsys, "kg", "import", "--nodes", nodes, "--edges", edges, "--store",
                         tmp_path / "kg.json.gz", "--json")
    assert code == 0, err
    assert json.loads(out)["nodes"] == len(read_nodes(ROOT / "data" / "biomed" / "nodes.csv"))


# ----------------------------------------------------------------- bytes that are not UTF-8
def test_an_undecodable_corpus_line_names_the_file_line_and_byte(tmp_path, capsys):
    corpus = write(tmp_path / "corpus.jsonl", jsonl(CORPUS[:1]) + b'{"_id": "d2", "text": "caf\xe9"}\n')
    line = refused(capsys, "index", "build", "--corpus", corpus, "--out", tmp_path / "ix")
    assert f"corpus {corpus}:2: not UTF-8 text (byte 0xe9 at byte 27 of the line)" in line
    assert not (tmp_path / "ix").exists()


@pytest.mark.parametrize("kind", ["queries", "qrels", "folder document", "mcq", "causal kg", "edges", "nodes",
                                  "weather"])
def test_every_reader_names_an_undecodable_file_and_line(tmp_path, kind):
    bad = b"caf\xe9\n"
    cases = {
        "queries": (lambda p: load_beir_queries(p), "queries.jsonl", jsonl([{"_id": "q", "text": "x"}]) + bad, 2),
        "qrels": (lambda p: load_qrels(p), "qrels.tsv", b"q1\td1\t1\n" + bad, 2),
        "folder document": (lambda p: load_document_folder(p.parent), "docs/a.md", b"# A\n\ntext\n" + bad, 4),
        "mcq": (lambda p: load_mcq(p), "mcq.json", b'{"question 1": {\n"question": "' + bad + b'"}}', 2),
        "causal kg": (lambda p: load_kg(p), "kg.json", b"{\n\n" + bad, 3),
        "edges": (lambda p: read_edges(p), "edges.csv", b"source,relation,target\na,r,b\n" + bad, 3),
        "nodes": (lambda p: read_nodes(p), "nodes.csv", b"id,name,type\n" + bad, 2),
        "weather": (lambda p: load_weather(p), "weather.csv", b"time,rh\n2024-01-01,90\n" + bad, 3),
    }
    read, name, data, lineno = cases[kind]
    path = write(tmp_path / name, data)
    with pytest.raises(InputError) as caught:
        read(path)
    message = str(caught.value)
    assert f"{path}:{lineno}: not UTF-8 text (byte 0xe9" in message and "\n" not in message, message


# ----------------------------------------------------------------- duplicate ids
def test_a_duplicate_id_is_refused_naming_it_and_both_lines(tmp_path, capsys):
    corpus = write(tmp_path / "corpus.jsonl", jsonl(CORPUS + [{"_id": "d2", "text": "again"}]))
    line = refused(capsys, "index", "build", "--corpus", corpus, "--out", tmp_path / "ix")
    assert f"corpus {corpus}: duplicate _id 'd2' at line 2 and line 4" in line and "--dedupe" in line
    assert not (tmp_path / "ix").exists()


@pytest.mark.parametrize("dedupe, text", [("first", "Ibuprofen is a painkiller."), ("last", "again")])
def test_dedupe_keeps_the_first_or_the_last(tmp_path, capsys, dedupe, text):
    corpus = write(tmp_path / "corpus.jsonl", jsonl(CORPUS + [{"_id": "d2", "text": "again"}]))
    code, out, err = cli(capsys, "index", "build", "--corpus", corpus, "--out", tmp_path / "ix", "--lang", "en",
                         "--dedupe", dedupe, "--json")
    assert code == 0, err
    docs = BM25Index.load(tmp_path / "ix").docs
    assert [d.doc_id for d in docs] == ["d1", "d2", "d3"]
    assert docs[1].text == text


def test_eval_retrieval_and_graph_build_refuse_duplicates_unless_told(beir, capsys):
    write(beir / "corpus.jsonl", jsonl(CORPUS + [CORPUS[0]]))
    common = ("--queries", beir / "queries.jsonl", "--qrels", beir / "qrels.tsv", "--lang", "en")
    assert "duplicate _id 'd1' at line 1 and line 4" in refused(
        capsys, "eval", "retrieval", "--corpus", beir / "corpus.jsonl", *common)
    code, out, err = cli(capsys, "eval", "retrieval", "--corpus", beir / "corpus.jsonl", *common, "--dedupe",
                         "first", "--json")
    assert code == 0 and json.loads(out)["recall@2"] == 1.0, err
    assert "duplicate _id 'd1'" in refused(capsys, "graph", "build", "--corpus", beir / "corpus.jsonl",
                                           "--out", beir / "g")
    assert not (beir / "g").exists()
    code, out, err = cli(capsys, "graph", "build", "--corpus", beir / "corpus.jsonl", "--out", beir / "g",
                         "--dedupe", "last", "--json")
    assert code == 0, err
    assert len(BM25Index.load(beir / "g").docs) == 3
    assert "--dedupe: goes with --corpus" in refused(capsys, "graph", "build", "--edges",
                                                     ROOT / "data" / "nobel_edges.csv", "--out", beir / "e",
                                                     "--dedupe", "first")


def test_a_folder_corpus_has_distinct_chunk_ids_from_its_paths(tmp_path):
    # The same file name in two folders, and a name that looks like a chunk id.
    write(tmp_path / "docs" / "a" / "guide.md", b"# One\n\nfirst\n\n# Two\n\nsecond\n")
    write(tmp_path / "docs" / "b" / "guide.md", b"# One\n\nthird\n")
    write(tmp_path / "docs" / "guide.md#1.md", b"# One\n\nfourth\n")
    ids = [d.doc_id for d in load_document_folder(tmp_path / "docs")]
    assert sorted(ids) == ["a/guide.md#1", "a/guide.md#2", "b/guide.md#1", "guide.md#1.md#1"]


def test_duplicate_node_ids_are_refused_naming_both_lines(tmp_path, capsys):
    nodes = write(tmp_path / "nodes.csv", b"id,name,type\nn1,One,Thing\nn2,Two,Thing\nn1,Uno,Thing\n")
    edges = write(tmp_path / "edges.csv", b"source,relation,target\nn1,LINKS,n2\n")
    line = refused(capsys, "kg", "import", "--nodes", nodes, "--edges", edges, "--store", tmp_path / "kg.json.gz")
    assert f"nodes {nodes}: duplicate node id 'n1' at line 2 and line 4" in line
    assert not (tmp_path / "kg.json.gz").exists()
    assert [n["name"] for n in read_nodes(nodes, dedupe="last")] == ["Uno", "Two"]
    code, out, err = cli(capsys, "kg", "import", "--nodes", nodes, "--edges", edges, "--store",
                         tmp_path / "kg.json.gz", "--dedupe", "first", "--json")
    assert code == 0 and json.loads(out)["nodes"] == 2, err


# ----------------------------------------------------------------- CSV as the csv module reads it
def test_quoted_commas_and_newlines_stay_in_their_field(tmp_path):
    edges = write(tmp_path / "edges.csv", b'source,relation,target,source_note\n'
                                          b'Marie_Curie,spouse,Pierre_Curie,"Nobel 1903, shared;\nnobelprize.org"\n'
                                          b'Pierre_Curie,award,\n')
    with pytest.raises(InputError, match=rf"edges {edges}:4: an edge without source or target"):
        read_edges(edges)       # the third physical line, not the second row, is named
    write(edges, edges.read_bytes().replace(b"award,\n", b"award,Nobel_Prize\n"))
    rows = read_edges(edges)
    assert rows[0]["source_note"] == "Nobel 1903, shared;\nnobelprize.org" and rows[1]["target"] == "Nobel_Prize"


def test_quoted_fields_in_nodes_and_weather(tmp_path):
    nodes = write(tmp_path / "nodes.csv", b'id,name,type\nn1,"Curie, Marie",Person\n')
    assert read_nodes(nodes)[0]["name"] == "Curie, Marie"
    weather = write(tmp_path / "weather.csv", b'time,relative_humidity,note\n2024-01-01,91,"misty, cold"\n')
    assert load_weather(weather)["relative_humidity"].tolist() == [91]


@pytest.mark.parametrize("table", [b"year,month,day,TEMP\n2013,1,9,-7\n2013,Jan,10,-6\n",
                                   b"year,month,day,TEMP\n2013,2,30,-7\n",
                                   b"time,TEMP\n2013-01-09 00:00,-7\nsoon,-6\n"])
def test_a_weather_date_that_is_no_date_is_one_line(tmp_path, table):
    weather = write(tmp_path / "weather.csv", table)
    with pytest.raises(InputError, match=rf"^weather {weather}: some time values cannot be read as dates$"):
        load_weather(weather)


def test_weather_times_of_mixed_forms_are_read_without_a_warning(tmp_path, recwarn):
    weather = write(tmp_path / "weather.csv", b"time,TEMP\n2013-01-09 00:00,-7\n2013-01-09T01:00,-6\n"
                                              b"Jan 9 2013 02:00,-5\n")
    assert load_weather(weather)["temperature"].tolist() == [-7, -6, -5]
    assert not [w for w in recwarn if "infer format" in str(w.message)]


# ----------------------------------------------------------------- files that cannot be read
@pytest.mark.parametrize("flag", ["--kg", "--weather"])
def test_a_folder_given_as_a_file_is_named(tmp_path, capsys, flag):
    folder = tmp_path / "not_a_file"
    folder.mkdir()
    args = {"--kg": ["--kg", folder], "--weather": ["--kg", ROOT / "data" / "merged_knowledge_graph.json",
                                                    "--weather", folder]}[flag]
    line = refused(capsys, "explain", "Why is PM2.5 high?", *args, "--json")
    assert f"{folder}: a folder, not a file" in line


def test_a_folder_in_place_of_beir_queries_nodes_or_mcq_is_named(tmp_path):
    folder = tmp_path / "not_a_file"
    folder.mkdir()
    for read in (load_beir_queries, load_mcq, read_edges, read_nodes):
        with pytest.raises(InputError, match=f"{folder}: a folder, not a file"):
            read(folder)


def test_a_file_without_read_permission_is_named(tmp_path):
    corpus = write(tmp_path / "corpus.jsonl", jsonl(CORPUS))
    nodes = write(tmp_path / "nodes.csv", b"id,name,type\nn1,One,Thing\n")
    for path in (corpus, nodes):
        path.chmod(0)
    try:
        if os.access(corpus, os.R_OK):      # root reads whatever the mode says
            pytest.skip("this user reads files whatever their mode (root): no permission to deny")
        with pytest.raises(InputError, match=f"corpus {corpus}: cannot be read \\(Permission denied\\)"):
            load_beir_corpus(corpus)
        with pytest.raises(InputError, match=f"nodes {nodes}: cannot be read \\(Permission denied\\)"):
            read_nodes(nodes)
    finally:
        for path in (corpus, nodes):
            path.chmod(0o644)


def rewrite_documents(ix: Path, change) -> None:
    """The index's documents (one compressed block, as a small corpus has) changed by ``change``
    on their JSON lines and written back as one block."""
    import zlib

    import numpy as np

    folder = ix.resolve()
    table = np.load(folder / "docs.blocks.npy")
    assert table.shape == (2, 2)
    raw = change(zlib.decompress((folder / "docs.z").read_bytes()))
    block = zlib.compress(raw)
    (folder / "docs.z").write_bytes(block)
    np.save(folder / "docs.blocks.npy", np.array([[0, 0], [raw.count(b"\n"), len(block)]], dtype=np.int64))


def test_damaged_index_files_are_one_line_errors(tmp_path, capsys):
    corpus = write(tmp_path / "corpus.jsonl", jsonl(CORPUS))
    assert cli(capsys, "index", "build", "--corpus", corpus, "--out", tmp_path / "ix", "--lang", "en")[0] == 0
    ix = tmp_path / "ix"
    docs = ix / "docs.z"
    rewrite_documents(ix, lambda raw: raw.replace(b"fever", b"f\xe9ver", 1))
    with pytest.raises(IndexFormatError, match=f"index {docs}: not UTF-8 text \\(byte 0xe9 in document"):
        list(BM25Index.load(ix).docs)      # documents are read by offset, when a hit needs them
    rewrite_documents(ix, lambda raw: Path(corpus).read_bytes())      # JSON, but not the index's documents
    with pytest.raises(IndexFormatError, match=f"index {docs}: not a ragkit index file"):
        BM25Index.load(ix)
    write(docs, b"not zlib" + docs.read_bytes()[8:])
    with pytest.raises(IndexFormatError, match=f"index {docs}: block 1 is damaged"):
        BM25Index.load(ix)
    (ix / "docs.blocks.npy").write_bytes(b"\x93NUMPY")
    with pytest.raises(IndexFormatError, match=f"index {ix / 'docs.blocks.npy'}: cannot be read"):
        BM25Index.load(ix)
    (ix / "vocab.json").unlink()
    (ix / "vocab.json").mkdir()
    line = refused(capsys, "search", "--index", ix, "--query", "fever")
    assert f"index {ix / 'vocab.json'}: cannot be read (Is a directory)" in line


def test_damaged_postings_are_one_line_errors(tmp_path, capsys):
    """The compiled loop reads postings without bound checks: a term's postings out of
    document order, or naming a document the index does not hold, are an error the first
    time a query uses the term (numpy path and compiled loop alike), and other terms still
    rank; the whole matrix's conversion for MMR checks every posting's bounds first."""
    import numpy as np

    corpus = write(tmp_path / "corpus.jsonl", jsonl(CORPUS))
    assert cli(capsys, "index", "build", "--corpus", corpus, "--out", tmp_path / "ix", "--lang", "en")[0] == 0
    ix = tmp_path / "ix"
    folder = ix.resolve()
    sound = BM25Index.load(ix)
    (fever,) = sound.tokenizer("fever")
    term = sound.vocab[fever]
    expected = sound.top_k_many([sound.tokenizer("painkiller")], 3, compiled=False)
    rows = sound.term_sets([2, 0])          # the chunks asked for, in that order
    assert rows.shape[0] == 2 and rows[1, term] == 1 and rows[0, term] == 1 and rows.sum() < sound.weights.nnz
    indptr, indices = np.load(folder / "weights.indptr.npy"), np.load(folder / "weights.indices.npy")
    lo, hi = indptr[term], indptr[term + 1]
    assert list(indices[lo:hi]) == [0, 2]               # Aspirin's and Paracetamol's
    message = f"index {folder / 'weights.indices.npy'}: the postings of term '{fever}' are not in document order"
    for damaged in ([2, 0], [0, 3], [-1, 2], [0, 0]):
        indices[lo:hi] = damaged
        np.save(folder / "weights.indices.npy", indices)
        for compiled in (False, True):
            index = BM25Index.load(ix)
            with pytest.raises(IndexFormatError, match=re.escape(message)):
                index.top_k_many([sound.tokenizer("fever")], 3, compiled=compiled)
            ranked = index.top_k_many([sound.tokenizer("painkiller")], 3, compiled=compiled)
            assert all(np.array_equal(a, b) for got, want in zip(ranked, expected) for a, b in zip(got, want))
        assert message in refused(capsys, "search", "--index", ix, "--query", "what lowers a fever")
    indices[lo:hi] = [0, 3]             # what MMR reads converts the whole matrix: every posting's bounds
    np.save(folder / "weights.indices.npy", indices)
    index = BM25Index.load(ix)
    with pytest.raises(IndexFormatError, match=re.escape(f"{folder / 'weights.indices.npy'}: a posting names a "
                                                         "document outside its 3 documents")):
        index.term_sets([0])
    terms = json.loads((folder / "vocab.json").read_text())
    (folder / "vocab.json").write_text(json.dumps(terms + ["extra"]))
    with pytest.raises(IndexFormatError, match=f"{len(terms) + 1} terms.*{len(terms)} columns.*do not agree"):
        BM25Index.load(ix)
    (folder / "vocab.json").write_text(json.dumps(terms))
    indptr[1] = indptr[2] + 1
    np.save(folder / "weights.indptr.npy", indptr)
    with pytest.raises(IndexFormatError, match=r"weights.indptr.npy\) go backwards"):
        BM25Index.load(ix)


@pytest.mark.slow
def test_a_large_csv_is_read_with_a_progress_bar(tmp_path, capfd):
    from ragkit.inputs import PROGRESS_MIN_BYTES, csv_rows

    path = tmp_path / "edges.csv"
    row = "compound:c{0},TREATS,disease:d{0}\n"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("source,relation,target\n")
        n = 0
        while handle.tell() < PROGRESS_MIN_BYTES + 1024:
            handle.write(row.format(n))
            n += 1
    rows = csv_rows(path, "edges", ("source", "relation", "target"), progress=True)
    assert len(rows) == n
    err = capfd.readouterr().err
    assert "read edges.csv" in err and "100%" in err
    csv_rows(path, "edges", ("source", "relation", "target"))          # no bar unless asked
    assert capfd.readouterr().err == ""
