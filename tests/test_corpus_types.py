"""``--corpus`` reads the documents a user has: a folder or a single file of .md, .markdown,
.txt, .docx or .pdf (or a BEIR corpus.jsonl). A .docx and a PDF are cut along their headings
like Markdown, each chunk saying where it stands (the heading path, and a PDF's pages); a
folder's files of other types are skipped and named. The documents are real files, written
here: a .docx with python-docx, a PDF byte by byte."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import zlib

import numpy as np
import pytest

from ragkit.corpus import Doc, load_corpus, load_document, load_document_folder, read_corpus
from ragkit.errors import InputError
from ragkit.retrieval.bm25 import BM25Index

from .conftest import MANUALS, ROOT
from .test_cli import ENV, ragkit, refused


# --------------------------------------------------------------------------- the documents
def make_pdf(pages: list[list[str]]) -> bytes:
    """A PDF (Helvetica, one text line per string) with a page per list of lines."""
    def escaped(line: str) -> str:
        return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects = ["<< /Type /Catalog /Pages 2 0 R >>",
               f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>",
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    for i, lines in enumerate(pages):
        stream = "BT /F1 11 Tf 14 TL 72 770 Td " + " ".join(f"({escaped(line)}) Tj T*" for line in lines) + " ET"
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
                       f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>")
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


# Three pages with a running footer (left out), numbered headings, a section across a page break.
REPORT_PAGES = [
    ["Drill field report", "A study of bench drills in the workshop.",
     "1 Introduction", "Bench drills bore holes in steel plates.", "Field report, page 1"],
    ["2 Methods", "We measured the spindle torque", "of ten drills at three speeds.",
     "2.1 Data", "The torque readings came from the", "workshop logger.", "Field report, page 2"],
    ["The logger sampled every second.", "3 Results", "Torque peaked at the lowest speed.",
     "Field report, page 3"],
]
LONG_METHODS = "We clamp the plate before drilling. " * 60     # ~2100 characters: cut in two


def make_docx(path, *, long_section: bool = False) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Lathe handbook", 0)
    document.add_paragraph("Read this before using the lathe.")
    document.add_heading("1 Scope", 1)
    document.add_paragraph("This handbook covers the centre lathe.")
    document.add_heading("2 Methods", 1)
    document.add_paragraph(LONG_METHODS.strip() if long_section else "Clamp the work piece.")
    document.add_paragraph("Check the chuck key is out.")
    document.add_heading("2.1 Speeds", 2)
    table = document.add_table(rows=2, cols=2)
    for (row, col), text in {(0, 0): "material", (0, 1): "speed", (1, 0): "steel", (1, 1): "400 rpm"}.items():
        table.cell(row, col).text = text
    document.add_heading("3 Cleaning", 1)
    document.add_paragraph("Brush the chips off the bed.")
    document.save(str(path))


@pytest.fixture
def folder(tmp_path):
    """A folder as a user has one: a .docx, a PDF, Markdown, and files ragkit does not read."""
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    make_docx(root / "lathe.docx")
    (root / "report.pdf").write_bytes(make_pdf(REPORT_PAGES))
    (root / "notes.md").write_text("# Notes\n\n## Oil\n\nOil the drill weekly.\n", encoding="utf-8")
    (root / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (root / "sub" / "costs.xlsx").write_bytes(b"PK\x03\x04 a spreadsheet")
    (root / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    return root


# --------------------------------------------------------------------------- .docx
def test_a_docx_is_cut_along_its_heading_styles(tmp_path):
    path = tmp_path / "lathe.docx"
    make_docx(path)
    chunks = load_document(path)
    assert [(c.doc_id, c.title) for c in chunks] == [
        ("lathe.docx#1", "Lathe handbook"),
        ("lathe.docx#2", "Lathe handbook > 1 Scope"),
        ("lathe.docx#3", "Lathe handbook > 2 Methods"),
        ("lathe.docx#4", "Lathe handbook > 2 Methods > 2.1 Speeds"),
        ("lathe.docx#5", "Lathe handbook > 3 Cleaning"),
    ]
    assert chunks[2].text == "Clamp the work piece.\nCheck the chuck key is out."
    assert chunks[3].text == "material | speed\nsteel | 400 rpm"          # a table, row by row
    assert all(c.source == "lathe.docx" and c.pages == () for c in chunks)


def test_a_long_docx_section_is_split_under_the_size_limit(tmp_path):
    path = tmp_path / "lathe.docx"
    make_docx(path, long_section=True)
    methods = [c for c in load_document(path) if c.title == "Lathe handbook > 2 Methods"]
    assert len(methods) == 2 and all(len(c.text) <= 1200 for c in methods)
    assert methods[0].text.endswith("drilling.") and methods[-1].text.endswith("Check the chuck key is out.")
    assert " ".join(c.text for c in methods).split() == (LONG_METHODS + "Check the chuck key is out.").split()


# --------------------------------------------------------------------------- .pdf
def test_a_pdf_is_cut_along_its_numbered_headings_and_says_its_pages(tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf(REPORT_PAGES))
    chunks = load_document(path)
    assert [(c.doc_id, c.title, c.pages) for c in chunks] == [
        ("report.pdf#1", "p. 1", (1,)),                                    # before the first heading
        ("report.pdf#2", "1 Introduction (p. 1)", (1,)),
        ("report.pdf#3", "2 Methods (p. 2)", (2,)),
        ("report.pdf#4", "2 Methods > 2.1 Data (pp. 2-3)", (2, 3)),
        ("report.pdf#5", "3 Results (p. 3)", (3,)),
    ]
    # Wrapped lines joined into paragraphs; the running footer left out.
    assert chunks[2].text == "We measured the spindle torque of ten drills at three speeds."
    assert chunks[3].text == "The torque readings came from the workshop logger.\nThe logger sampled every second."
    assert not any("Field report, page" in c.text for c in chunks)


def test_a_pdf_without_numbered_headings_is_cut_page_by_page(tmp_path):
    path = tmp_path / "memo.pdf"
    path.write_bytes(make_pdf([["Memo to the workshop staff.", "The saw is out of order."],
                               ["Use the second saw until Friday."]]))
    assert [(c.doc_id, c.title, c.pages, c.text) for c in load_document(path)] == [
        ("memo.pdf#1", "p. 1", (1,), "Memo to the workshop staff.\nThe saw is out of order."),
        ("memo.pdf#2", "p. 2", (2,), "Use the second saw until Friday."),
    ]


def test_pages_survive_the_index_files_and_a_corpus_without_pdfs_writes_none(tmp_path):
    """``Doc.pages`` is written to the index's documents for PDF chunks only: an index of
    Markdown files holds the same documents as before, and both load back."""
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_pdf(REPORT_PAGES))
    docs = load_corpus(pdf)
    BM25Index.for_corpus(docs, "en", progress=False).save(tmp_path / "ix")
    assert BM25Index.load(tmp_path / "ix").docs == docs
    manuals = BM25Index.for_corpus(load_corpus(MANUALS), "vi", progress=False).save(tmp_path / "manuals")
    rows = [json.loads(line) for line in
            zlib.decompress((manuals / "docs.z").read_bytes()[:int(np.load(manuals / "docs.blocks.npy")[1, 1])]
                            ).decode("utf-8").splitlines()]
    assert all(set(row) == {"doc_id", "text", "title", "source"} for row in rows)
    assert Doc(**{**rows[0], "pages": [2, 3]}).pages == (2, 3)


# --------------------------------------------------------------------------- folders and single files
def test_a_folder_reads_every_type_and_names_what_it_skipped(folder, caplog):
    corpus = read_corpus(folder)
    assert sorted({d.source for d in corpus.docs}) == ["lathe.docx", "notes.md", "report.pdf"]
    assert [s.to_dict() for s in corpus.skipped] == [
        {"path": "photo.png", "reason": "unsupported type .png"},
        {"path": "sub/costs.xlsx", "reason": "unsupported type .xlsx"},
    ]                                                   # .DS_Store: a dot file, passed over unreported
    by_id = {d.doc_id: d for d in corpus.docs}
    assert by_id["notes.md#1"].title == "Notes > Oil"
    assert by_id["report.pdf#4"].title == "2 Methods > 2.1 Data (pp. 2-3)"
    assert by_id["lathe.docx#2"].title == "Lathe handbook > 1 Scope"
    with caplog.at_level(logging.WARNING, logger="ragkit.corpus"):
        assert load_corpus(folder) == corpus.docs == load_document_folder(folder)
    assert [r.getMessage() for r in caplog.records][0] == (
        f"corpus {folder}: skipped 2 files (ragkit reads .md, .markdown, .txt, .docx, .pdf): "
        "photo.png (unsupported type .png), sub/costs.xlsx (unsupported type .xlsx)")


def test_many_skipped_files_are_counted_after_the_first_few(tmp_path):
    from ragkit.corpus import skipped_line

    (tmp_path / "oil.md").write_text("# Oil\n\nOil the drill weekly.\n", encoding="utf-8")
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n', encoding="utf-8")
    for n in range(7):
        (tmp_path / f"photo{n}.jpg").write_bytes(b"\xff\xd8\xff")
    corpus = read_corpus(tmp_path)
    assert [d.doc_id for d in corpus.docs] == ["oil.md#1"] and len(corpus.skipped) == 8
    assert corpus.skipped[0].to_dict() == {"path": "corpus.jsonl", "reason": ".jsonl: a BEIR corpus file is "
                                                                             "read on its own, not inside a folder"}
    line = skipped_line(tmp_path, corpus.skipped)
    assert line.startswith(f"corpus {tmp_path}: skipped 8 files") and "photo3.jpg (unsupported type .jpg)" in line
    assert "photo4.jpg" not in line and line.endswith(", and 3 more")


def test_a_markdown_folder_reads_as_it_did(caplog):
    with caplog.at_level(logging.WARNING, logger="ragkit.corpus"):
        docs = load_corpus(MANUALS)
    assert not caplog.records and len(docs) == 24
    assert (docs[0].doc_id, docs[0].title) == ("an_toan_chung.md#1", "Quy định an toàn chung xưởng cơ khí")


def test_a_scanned_pdf_in_a_folder_is_skipped_and_alone_is_an_error(folder):
    import pypdf

    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=595, height=842)
    with (folder / "scan.pdf").open("wb") as handle:
        writer.write(handle)
    assert {"path": "scan.pdf", "reason": "no extractable text (a scan?)"} in \
        [s.to_dict() for s in read_corpus(folder).skipped]
    with pytest.raises(InputError, match=f"corpus {folder / 'scan.pdf'}: the PDF has no extractable text"):
        read_corpus(folder / "scan.pdf")


@pytest.mark.parametrize("name", ["notes.md", "notes.markdown", "notes.txt", "lathe.docx", "report.pdf",
                                  "corpus.jsonl", "corpus.json", "corpus"])
def test_a_single_file_is_a_corpus(tmp_path, folder, name):
    path = tmp_path / name
    if name.startswith("corpus"):             # BEIR by its suffix, or by its first character
        path.write_text('{"_id": "d1", "title": "Oil", "text": "Oil the drill weekly."}\n', encoding="utf-8")
        expected = [Doc("d1", "Oil the drill weekly.", "Oil", name)]
    else:
        source = {"notes": "notes.md"}.get(path.stem, name)
        path.write_bytes((folder / source).read_bytes())
        expected = [Doc(d.doc_id.replace(source, name), d.text, d.title, name, d.pages)
                    for d in read_corpus(folder).docs if d.source == source]
        assert expected
    assert load_corpus(path) == expected


# --------------------------------------------------------------------------- errors
def test_a_folder_with_nothing_readable_is_one_line_naming_it(tmp_path, folder):
    empty = tmp_path / "pictures"
    empty.mkdir()
    (empty / "photo.png").write_bytes((folder / "photo.png").read_bytes())
    refused("index", "build", "--corpus", empty, "--out", tmp_path / "ix",
            match=f"corpus {empty}: no .md/.markdown/.txt/.docx/.pdf documents in this folder; "
                  "skipped photo.png (unsupported type .png)")
    assert not (tmp_path / "ix").exists()


@pytest.mark.parametrize("name, data, problem", [
    ("broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n", "not a readable PDF"),
    ("notes.pdf", b"These are notes, not a PDF.\n", "not a PDF (no %PDF- header"),
    ("broken.docx", b"PK\x03\x04 not really a docx", "not a readable .docx"),
])
@pytest.mark.slow
def test_a_damaged_document_is_one_line_naming_it_alone_or_in_a_folder(tmp_path, folder, name, data, problem):
    bad = folder / name
    bad.write_bytes(data)
    for corpus in (bad, folder):
        line = refused("index", "build", "--corpus", corpus, "--out", tmp_path / "ix", match=f"corpus {bad}: {problem}")
        assert "EOF marker" not in line
    assert not (tmp_path / "ix").exists()


@pytest.mark.slow
def test_a_file_of_another_type_is_refused_and_beir_errors_stay(tmp_path, folder):
    refused("index", "build", "--corpus", folder / "photo.png", "--out", tmp_path / "ix",
            match=f"corpus {folder / 'photo.png'}: not a type ragkit reads")
    bad = tmp_path / "corpus.jsonl"
    bad.write_text('{"_id": "1", "text": "ok"}\nthis is not json\n')
    refused("index", "build", "--corpus", bad, "--out", tmp_path / "ix", match=f"corpus {bad}:2: not JSON")


# --------------------------------------------------------------------------- the command line
@pytest.mark.slow
def test_index_build_of_a_pdf_end_to_end(tmp_path, folder):
    built = ragkit("index", "build", "--corpus", folder / "report.pdf", "--out", tmp_path / "ix", "--json")
    info = json.loads(built.stdout)
    assert info["docs"] == 5 and info["lang"] == "en" and "skipped" not in info and built.stderr == ""
    found = json.loads(ragkit("search", "--index", tmp_path / "ix", "--query", "workshop logger torque readings",
                              "--k", "1", "--json").stdout)["results"][0]
    assert (found["doc_id"], found["title"], found["source"]) == \
        ("report.pdf#4", "2 Methods > 2.1 Data (pp. 2-3)", "report.pdf")


@pytest.mark.slow
def test_index_build_of_a_folder_names_the_skipped_files(tmp_path, folder):
    built = ragkit("index", "build", "--corpus", folder, "--out", tmp_path / "ix", "--json")
    info = json.loads(built.stdout)
    assert info["docs"] == len(read_corpus(folder).docs)
    assert info["skipped"] == [{"path": "photo.png", "reason": "unsupported type .png"},
                               {"path": "sub/costs.xlsx", "reason": "unsupported type .xlsx"}]
    assert built.stderr.splitlines() == [
        f"ragkit: warning: corpus {folder}: skipped 2 files (ragkit reads .md, .markdown, .txt, .docx, .pdf): "
        "photo.png (unsupported type .png), sub/costs.xlsx (unsupported type .xlsx)"]
    plain = ragkit("index", "build", "--corpus", folder, "--out", tmp_path / "ix")
    assert plain.stdout.startswith(f"indexed {info['docs']} chunks") and "skipped 2 files" in plain.stderr


# --------------------------------------------------------------------------- ragkit pick
@pytest.mark.slow
def test_pick_ships_as_a_command_and_tools_pick_runs_it(tmp_path):
    answer = json.dumps({"docs": 5, "skipped": [{"path": "photo.png"}, {"path": "a.xlsx"}], "lang": "en"})
    keys = ["docs", "skipped.*.path", "skipped.1.path", "nothing.here"]
    expected = 'docs: 5\nskipped.*.path: ["photo.png", "a.xlsx"]\nskipped.1.path: "a.xlsx"\nnothing.here: (missing)\n'
    for command in ([sys.executable, "-m", "ragkit.cli", "pick"], [sys.executable, str(ROOT / "tools" / "pick.py")]):
        done = subprocess.run([*command, *keys], input=answer, capture_output=True, text=True, env=ENV,
                              cwd=tmp_path, timeout=300)
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), command
        bad = subprocess.run([*command, "docs"], input="not json", capture_output=True, text=True, env=ENV,
                             cwd=tmp_path, timeout=300)
        assert bad.returncode == 3 and bad.stdout == ""
        assert bad.stderr.startswith("ragkit: error: stdin: not JSON (Expecting value at line 1 column 1)")
    refused("pick", match="pick: the following arguments are required: KEY", code=2)
