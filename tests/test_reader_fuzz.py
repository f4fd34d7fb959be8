"""Every reader of a user's file, fed generated files: each one is read, or refused with one
line (a ``RagkitError``) that names the file. Nothing else may escape: no traceback from
json, csv, pandas, zipfile, python-docx or pypdf, no message over several lines.

The files are near misses of real ones (valid records with fields of the wrong type,
missing or added; headers in another order; a real .docx or PDF truncated, overwritten in
places, or with its XML replaced) as well as plain noise, because noise alone stops at the
first UTF-8 or JSON check and never reaches the code behind it."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ragkit.causal.conditions import load_weather
from ragkit.causal.kg import load_kg
from ragkit.corpus import load_beir_corpus, load_beir_queries, load_document, load_qrels
from ragkit.errors import RagkitError
from ragkit.eval.answers import load_questions
from ragkit.eval.mcq import load_mcq
from ragkit.eval.trec import read_trec_run
from ragkit.kgqa.importer import read_edges as read_typed_edges
from ragkit.kgqa.importer import read_nodes
from ragkit.multihop.graph import read_edges

from .conftest import ROOT
from .test_corpus_types import make_pdf

FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Scalars and structures a JSON field may hold instead of what the reader expects.
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)
# Cells: words, numbers, dates, and the characters CSV and TSV quote or split on.
CELL = st.one_of(st.text(max_size=20), st.sampled_from(["", "2013", "13", "-1", "0.5", "nan", "inf", "1e400",
                                                        "2024-02-30", "NW", "a,b", 'say "x"', "two\nlines", "\t"]),
                 st.integers(-100, 3000).map(str))


def reads_or_refuses(read, path: Path):
    """``read(path)``'s result, or None where it refused with one line naming the file."""
    try:
        return read(path)
    except RagkitError as exc:
        message = str(exc)
        assert message and "\n" not in message, message
        assert str(path) in message or path.name in message, message
        return None


def written(tmp_path_factory, name: str, data: bytes) -> Path:
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(data)
    return path


def mutated(data: bytes, draw) -> bytes:
    """``data`` truncated, or with a run of bytes overwritten or inserted, or both."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, max(len(out) - 1, 0)))
        how = draw(st.sampled_from(["cut", "overwrite", "insert"]))
        junk = draw(st.binary(min_size=1, max_size=40))
        if how == "cut":
            del out[at:]
        elif how == "overwrite":
            out[at:at + len(junk)] = junk
        else:
            out[at:at] = junk
    return bytes(out)


def csv_text(header: list[str], rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def mostly(plausible, noise=CELL):
    """``plausible`` three times in four, else ``noise``."""
    return st.one_of(plausible, plausible, plausible, noise)


def values(draw, noise):
    """How a file's values are drawn: half the files plausible throughout (they reach the
    code behind the checks), half with noise here and there."""
    noisy = draw(st.booleans())
    return lambda plausible: draw(mostly(plausible, noise) if noisy else plausible)


@st.composite
def csv_files(draw, columns: dict[str, st.SearchStrategy[str]]) -> bytes:
    """A CSV with the ``columns`` (in any order, now and then one missing or an unknown one
    added) and their plausible values, any cell now and then noise; sometimes plain noise."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=200))
    header = draw(st.permutations(list(columns)))
    if draw(st.integers(0, 4)) == 0:
        header = header[1:] if draw(st.booleans()) else header + [draw(st.sampled_from(["extra", "", "id"]))]
    value, rows = values(draw, CELL), []
    for _ in range(draw(st.integers(0, 6))):
        row = [value(columns.get(name, CELL)) for name in header]
        if draw(st.integers(0, 9)) == 0:
            row = row[:draw(st.integers(0, len(row)))] + draw(st.lists(CELL, max_size=2))
        rows.append(row)
    return csv_text(header, rows)


@st.composite
def json_lines(draw, fields: dict[str, st.SearchStrategy]) -> bytes:
    """JSON objects with the ``fields`` (plausible values, now and then any JSON value, a
    field missing or an unknown one), a line of noise now and then."""
    value, lines = values(draw, JSON_VALUES), []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 11))
        if kind == 0:
            lines.append(draw(st.text(max_size=30)))
        elif kind == 1:
            lines.append(json.dumps(draw(JSON_VALUES)))
        else:
            keys = [k for k in fields if draw(st.integers(0, 7))] + (["other"] if kind == 2 else [])
            lines.append(json.dumps({k: value(fields.get(k, JSON_VALUES)) for k in keys},
                                    ensure_ascii=draw(st.booleans())))
    text = "\n".join(lines) + ("\n" if draw(st.booleans()) else "")
    return (b"\xef\xbb\xbf" if draw(st.integers(0, 9)) == 0 else b"") + text.encode("utf-8")


# --------------------------------------------------------------------------- documents
@given(data=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)),
       suffix=st.sampled_from([".md", ".txt", ".markdown"]))
@FUZZ
def test_text_documents(tmp_path_factory, data, suffix):
    docs = reads_or_refuses(load_document, written(tmp_path_factory, "doc" + suffix, data))
    assert docs is None or all(d.text.strip() for d in docs)


@cache
def real_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Drill safety", 0)
    document.add_heading("Changing a bit", 1)
    document.add_paragraph("Unplug the drill before changing the bit.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Step", "Action"
    table.cell(1, 0).text, table.cell(1, 1).text = "1", "Loosen the chuck"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def with_part(package: bytes, name: str, content: bytes) -> bytes:
    """``package`` (a zip) with its part ``name`` replaced by ``content``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            target.writestr(item, content if item.filename == name else source.read(item.filename))
    return out.getvalue()


@st.composite
def docx_structures(draw) -> bytes:
    """A .docx python-docx writes from drawn headings (any level, Title, a TOC style),
    paragraphs and tables, ragged cells and merged ones included."""
    import docx

    document = docx.Document()
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["heading", "paragraph", "paragraph", "table", "toc"]))
        text = draw(st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=30))
        if kind == "heading":
            document.add_heading(text, draw(st.integers(0, 9)))
        elif kind == "toc":
            document.add_paragraph(text, style=draw(st.sampled_from(["List Bullet", "Quote", "Caption"])))
        elif kind == "paragraph":
            document.add_paragraph(text)
        else:
            rows, cols = draw(st.integers(1, 3)), draw(st.integers(1, 3))
            table = document.add_table(rows=rows, cols=cols)
            for r in range(rows):
                for c in range(cols):
                    table.cell(r, c).text = draw(st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=8))
            if rows > 1 and cols > 1 and draw(st.booleans()):
                table.cell(0, 0).merge(table.cell(0, 1))
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@st.composite
def docx_files(draw) -> bytes:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(docx_structures())
    original = real_docx()
    if kind == 1:
        return mutated(original, draw)
    if kind == 2:        # the body replaced by some XML, well formed or not
        body = draw(st.sampled_from([
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{}</w:body>'
            '</w:document>', "{}"])).format(draw(st.sampled_from(["", "<w:p/>", "<w:tbl/>", "<w:p><w:r><w:t>x",
                                                                  "<w:tbl><w:tr><w:tc/></w:tr></w:tbl>"])))
        return with_part(original, "word/document.xml", body.encode())
    return with_part(original, draw(st.sampled_from(["word/styles.xml", "[Content_Types].xml",
                                                    "word/_rels/document.xml.rels"])),
                     draw(st.binary(max_size=80)))


@given(data=docx_files())
@FUZZ
@pytest.mark.slow
def test_docx_documents(tmp_path_factory, data):
    reads_or_refuses(load_document, written(tmp_path_factory, "doc.docx", data))


@st.composite
def pdf_files(draw) -> bytes:
    lines = st.lists(st.one_of(st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=40),
                               st.sampled_from(["1 Introduction", "2.1 Data", "Annex A (normative): Tables",
                                                "Contents", "page 1", "1", "3.2.1"])), max_size=8)
    pages = draw(st.lists(lines, min_size=1, max_size=4))
    original = make_pdf(pages)
    return mutated(original, draw) if draw(st.booleans()) else original


@given(data=pdf_files())
@FUZZ
def test_pdf_documents(tmp_path_factory, data):
    reads_or_refuses(load_document, written(tmp_path_factory, "doc.pdf", data))


# --------------------------------------------------------------------------- BEIR and TREC
@given(data=json_lines({"_id": st.one_of(st.sampled_from(["d1", "d2"]), st.integers(0, 3)),
                        "title": st.text(max_size=12), "text": st.text(max_size=40), "metadata": JSON_VALUES}))
@FUZZ
def test_beir_corpus_and_queries(tmp_path_factory, data):
    path = written(tmp_path_factory, "corpus.jsonl", data)
    docs = reads_or_refuses(load_beir_corpus, path)
    assert docs is None or all(isinstance(d.doc_id, str) and isinstance(d.text, str) for d in docs)
    queries = reads_or_refuses(load_beir_queries, path)
    assert queries is None or all(isinstance(k, str) and isinstance(v, str) for k, v in queries.items())


@st.composite
def whitespace_rows(draw, fields: list[st.SearchStrategy[str]]) -> bytes:
    """Lines of ``fields`` separated by spaces or tabs; now and then a field more or less,
    or any text."""
    noise = st.one_of(st.text(max_size=6), st.sampled_from(["nan", "inf", "-0", "1e999", "x", ""]))
    value, rows = values(draw, noise), []
    for _ in range(draw(st.integers(0, 6))):
        row = [value(field) for field in fields]
        if draw(st.integers(0, 9)) == 0:
            row = row[:draw(st.integers(0, len(row)))] + draw(st.lists(noise, max_size=2))
        rows.append(row)
    sep = draw(st.sampled_from([" ", "\t", "  "]))
    return "\n".join(sep.join(row) for row in rows).encode("utf-8")


QIDS = st.sampled_from(["q1", "q2", "query-id"])
DOCS = st.one_of(st.sampled_from(["d1", "d2", "corpus-id"]), st.integers(0, 10**6).map(str))
SCORES = st.one_of(st.integers(-5, 5).map(str), st.floats(allow_nan=False, allow_infinity=False).map(str),
                   st.sampled_from(["nan", "-inf", "1e999"]))


@given(data=st.one_of(whitespace_rows([QIDS, DOCS, st.integers(-1, 3).map(str)]),
                      whitespace_rows([QIDS, st.just("0"), DOCS, st.integers(-1, 3).map(str)])))
@FUZZ
def test_qrels(tmp_path_factory, data):
    qrels = reads_or_refuses(load_qrels, written(tmp_path_factory, "qrels.tsv", data))
    assert qrels is None or all(isinstance(s, int) for judged in qrels.values() for s in judged.values())


@given(data=whitespace_rows([QIDS, st.just("Q0"), DOCS, st.integers(0, 10).map(str), SCORES,
                             st.sampled_from(["bm25", "ragkit"])]))
@FUZZ
def test_trec_runs(tmp_path_factory, data):
    run = reads_or_refuses(read_trec_run, written(tmp_path_factory, "run.txt", data))
    assert run is None or all(isinstance(score, float) for ranked in run.rankings.values() for _, score in ranked)


# --------------------------------------------------------------------------- graphs
IDS = st.one_of(st.sampled_from(["1", "a", "n1", "n2"]), st.integers(0, 10**6).map(str))
KNOWN = st.sampled_from(["1", "a", "n1"])         # node ids the edges test always knows
WORDS = st.sampled_from(["Drug", "Disease", "TREATS", "has_symptom", "Person2", "two words", "Bệnh"])


@given(nodes=csv_files({"id": IDS, "name": st.text(min_size=1, max_size=12), "type": WORDS,
                        "aliases": st.sampled_from(["", "x|y", "|", " a | b "]), "description": st.text(max_size=20)}),
       edges=csv_files({"source": KNOWN, "relation": WORDS, "target": KNOWN, "date": CELL, "value": CELL}))
@FUZZ
def test_typed_kg_csvs(tmp_path_factory, nodes, edges):
    read = reads_or_refuses(read_nodes, written(tmp_path_factory, "nodes.csv", nodes))
    ids = {str(n["id"]) for n in read or []} | {"1", "a", "n1"}
    reads_or_refuses(lambda p: read_typed_edges(p, ids), written(tmp_path_factory, "edges.csv", edges))


@given(data=csv_files({"source": st.text(max_size=10), "relation": WORDS, "target": st.text(max_size=10),
                       "source_type": WORDS, "target_type": WORDS}))
@FUZZ
def test_passage_graph_edges(tmp_path_factory, data):
    reads_or_refuses(read_edges, written(tmp_path_factory, "passage_edges.csv", data))


def replaced_somewhere(value, draw):
    """``value`` (parsed JSON) with one field, item or leaf replaced by any JSON value."""
    if isinstance(value, dict) and value and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: replaced_somewhere(value[key], draw)}
    if isinstance(value, list) and value and draw(st.integers(0, 3)):
        at = draw(st.integers(0, len(value) - 1))
        return value[:at] + [replaced_somewhere(value[at], draw)] + value[at + 1:]
    return draw(JSON_VALUES)


@cache
def demo_kg() -> str:
    return (ROOT / "data/merged_knowledge_graph.json").read_text(encoding="utf-8")


@given(data=st.data())
@FUZZ
def test_evidence_kg_json(tmp_path_factory, data):
    changed = replaced_somewhere(json.loads(demo_kg()), data.draw)
    text = json.dumps(changed).encode()
    if data.draw(st.integers(0, 4)) == 0:
        text = mutated(text, data.draw)
    reads_or_refuses(load_kg, written(tmp_path_factory, "kg.json", text))


# --------------------------------------------------------------------------- tables and questions
NUMBER = st.one_of(st.integers(-40, 2030).map(str), st.floats(-50, 500).map(str))
DAY_PART = {"year": st.sampled_from(["2013", "2024", "1677", "99999"]), "month": st.integers(0, 13).map(str),
            "day": st.integers(0, 32).map(str), "hour": st.integers(-1, 24).map(str)}
MEASURES = {"TEMP": NUMBER, "DEWP": NUMBER, "rh": NUMBER, "Iws": NUMBER,
            "cbwd": st.sampled_from(["NW", "SE", "cv"]), "pm2.5": NUMBER, "rain": NUMBER}
DATES = st.sampled_from(["2013-01-09 00:00", "2013-01-09T01:00", "09/01/2013", "2024-02-30", "yesterday", ""])


@given(data=st.one_of(csv_files({**DAY_PART, **dict(list(MEASURES.items())[:4])}),
                      csv_files({"time": DATES, **dict(list(MEASURES.items())[2:])}),
                      csv_files({"date": DATES, "TEMP": NUMBER})))
@FUZZ
def test_weather_tables(tmp_path_factory, data):
    reads_or_refuses(load_weather, written(tmp_path_factory, "weather.csv", data))


@given(data=st.one_of(json_lines({"question": st.text(min_size=1, max_size=30), "option 1": st.text(max_size=10),
                                   "option 2": st.text(max_size=10), "Option 3 ": st.text(max_size=10),
                                   "answer": st.sampled_from(["option 2", "Option 1", "3", ""])}),
                      JSON_VALUES.map(lambda v: json.dumps(v).encode())),
       suffix=st.sampled_from([".json", ".jsonl"]))
@FUZZ
def test_multiple_choice_questions(tmp_path_factory, data, suffix):
    items = reads_or_refuses(load_mcq, written(tmp_path_factory, "questions" + suffix, data))
    assert items is None or all(len(item["options"]) >= 2 for item in items)


@given(data=st.one_of(json_lines({"id": st.one_of(st.text(max_size=5), st.integers()),
                                   "question": st.text(min_size=1, max_size=30), "answer": SCALARS,
                                   "answers": st.lists(SCALARS, max_size=3), "evidence": st.lists(st.text(max_size=5)),
                                   "answer_aliases": st.one_of(st.lists(st.text(max_size=8)), st.just("['a', 'b']"))}),
                      JSON_VALUES.map(lambda v: json.dumps(v).encode())),
       suffix=st.sampled_from([".json", ".jsonl"]))
@FUZZ
def test_questions_with_gold_answers(tmp_path_factory, data, suffix):
    items = reads_or_refuses(load_questions, written(tmp_path_factory, "questions" + suffix, data))
    assert items is None or all(item["answers"] and all(isinstance(a, str) for a in item["answers"])
                                for item in items)


def test_the_near_misses_reach_past_the_first_check(tmp_path):
    """The strategies are worth their time only if some generated files are read: a real
    .docx, PDF and evidence KG pass, and so does a CSV the strategies could write."""
    assert load_document(written_once(tmp_path, "a.docx", real_docx()))
    assert load_document(written_once(tmp_path, "a.pdf", make_pdf([["1 Introduction", "Drills bore holes."]])))
    assert load_kg(ROOT / "data/merged_knowledge_graph.json")
    nodes_csv = csv_text(["id", "name", "type"], [["1", "Aspirin", "Drug"]])
    nodes = read_nodes(written_once(tmp_path, "nodes.csv", nodes_csv))
    assert nodes and nodes[0]["name"] == "Aspirin"


def written_once(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path

