"""3GPP specs in the forms they are really held in: markdown as pandoc and docling write it
from the .docx, one spec split into one file per clause, versions in the spec id, and PDF
pages in citations. The real documents come from ../shared and are converted at test time."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from ragkit.errors import InputError
from ragkit.pipelines.spec import cite
from ragkit.specs.evidence import Evidence
from ragkit.specs.build import build_kg, parse_specs
from ragkit.specs.ingest import (header_info, load_spec, markdown_blocks, markdown_text, release_of,
                                 split_entries)
from ragkit.specs.model import Chunk, spec_number, spec_version
from ragkit.specs.nx_store import NetworkXStore
from ragkit.specs.terms import abbreviation_entries, extract_terms, split_abbreviation_line

from .conftest import ROOT, shared

COVER = """3GPP TS 23.501 V16.4.0 (2020-03)

Technical Specification

System architecture for the 5G System (5GS); Stage 2

(Release 16)
"""
DEFINITIONS = """# 3 Definitions and abbreviations

## 3.1 Definitions

For the purposes of the present document, the terms given in TR 21.905 \\[1\\] apply.

**Relay node**: a node that forwards traffic between a terminal and the network
on a wireless backhaul link. **Serving gateway**: a gateway that terminates the
user plane towards the access network.

**Home network:** the network where the subscriber's profile is held \\[2\\].

## 3.2 Abbreviations

RN Relay Node

S-GW Serving Gateway

OSI RM OSI Reference Model

Mcps Mega-chips per second
"""
CLAUSE_6 = """# 6 Network functions

## 6.1 Relay node

The RN forwards traffic.
"""


# --------------------------------------------------------------------------- units
def test_version_and_release_from_the_cover_page():
    assert header_info(COVER) == ("ts_23.501", "16.4.0", "16")
    assert header_info("3GPP TR 21.905 V17.2.0 (2024-03)") == ("tr_21.905", "17.2.0", "")
    assert release_of("18.10.0") == "18" and release_of("3.5.0") == "1999" and release_of("") == ""
    assert spec_number("ts_23.501@16.4.0") == "ts_23.501" and spec_version("ts_23.501@16.4.0") == "16.4.0"
    assert spec_version("demo_5gc") == ""


def test_markdown_inline_reduced_to_text():
    assert markdown_text(r"See TS 23.501 \[3\] and the \"3gpp-Sbi\" header") == \
        'See TS 23.501 [3] and the "3gpp-Sbi" header'
    assert markdown_text("2^nd^ Generation, H~2~O, [link](http://x) ![](media/a.png){width=1in}") == \
        "2nd Generation, H2O, link "
    assert markdown_text("an *emphasised* word, a \\*star\\* and 1\u20118") == "an emphasised word, a *star* and 1-8"


def test_a_bold_label_after_a_sentence_starts_the_next_entry():
    assert split_entries([("Operating band:", True), (" a range. ", False), ("Operations System:", True),
                          (" a system.", False)]) == ["Operating band: a range.", "Operations System: a system."]
    # Not after a sentence end, or not a label: the paragraph stays whole.
    assert split_entries([("A: uses the ", False), ("B:", True), (" field.", False)]) == ["A: uses the B: field."]
    assert split_entries([("A: one. ", False), ("Bold words", True), (" more.", False)]) == ["A: one. Bold words more."]


def test_markdown_paragraphs_entries_and_tab_lines():
    blocks = markdown_blocks("# 3 Definitions\n\nTerm one: wrapped\nover two lines. **Term two**: next.\n\n"
                             "SCP\tService Communication Proxy\nUPF\tUser Plane Function\n")
    assert blocks == [(1, "3 Definitions"), (0, "Term one: wrapped over two lines."), (0, "Term two: next."),
                      (0, "SCP\tService Communication Proxy"), (0, "UPF\tUser Plane Function")]


def test_grid_tables_become_rows():
    table = "+------+--------+\n| Name | Value  |\n+======+========+\n| a    | long   |\n|      | text   |\n+------+--------+\n"
    assert markdown_blocks(table) == [(0, "Name | Value"), (0, "a | long text")]


@pytest.mark.parametrize("line,pair", [
    ("OSI RM OSI Reference Model", ("OSI RM", "OSI Reference Model")),
    ("Mcps Mega-chips per second", ("Mcps", "Mega-chips per second")),
    ("BI all Barring of Incoming call", ("BI", "all Barring of Incoming call")),
    ("XID eXchange IDentifier", ("XID", "eXchange IDentifier")),
    ("CN PDB Core Network Packet Delay Budget", ("CN PDB", "Core Network Packet Delay Budget")),
    ("Kc Ciphering key", ("Kc", "Ciphering key")),
    ("Comfort Noise", None)])
def test_space_separated_abbreviations_split_by_token_shape(line, pair):
    assert split_abbreviation_line(line) == pair


def test_a_line_that_is_not_an_entry_is_another_expansion():
    assert abbreviation_entries(["CN\tCore Network", "Comfort Noise", "CNAP\tCalling Name Presentation"], True) == \
        [("CN", "Core Network"), ("CN", "Comfort Noise"), ("CNAP", "Calling Name Presentation")]


# --------------------------------------------------------------------------- docling-style and clause files
def _clause_folder(tmp_path, cover=COVER):
    folder = tmp_path / "ts23501"
    folder.mkdir()
    (folder / "00_cover.md").write_text(cover)
    (folder / "b_clause6.md").write_text(CLAUSE_6)
    (folder / "a_clause3.md").write_text(DEFINITIONS)
    return folder


def test_a_folder_of_clause_files_is_one_spec(tmp_path):
    doc = load_spec(_clause_folder(tmp_path))
    assert (doc.spec_id, doc.version, doc.release) == ("ts_23.501@16.4.0", "16.4.0", "16")
    assert [s.section_id for s in doc.sections] == ["3", "3.1", "3.2", "6", "6.1"]
    abbreviations, definitions = extract_terms(doc)
    assert {(d.term, d.definition) for d in definitions} == {
        ("Relay node", "a node that forwards traffic between a terminal and the network on a wireless backhaul link."),
        ("Serving gateway", "a gateway that terminates the user plane towards the access network."),
        ("Home network", "the network where the subscriber's profile is held [2]."),
    }
    assert [(a.abbreviation, a.full_name) for a in abbreviations] == [
        ("RN", "Relay Node"), ("S-GW", "Serving Gateway"), ("OSI RM", "OSI Reference Model"),
        ("Mcps", "Mega-chips per second")]


def test_two_versions_of_one_spec_do_not_collide(tmp_path):
    old = _clause_folder(tmp_path)
    new_dir = tmp_path / "new"
    new_dir.mkdir()
    newer = _clause_folder(new_dir, COVER.replace("V16.4.0", "V17.1.0").replace("Release 16", "Release 17"))
    store = NetworkXStore(tmp_path / "kg.json.gz")
    info = build_kg([old, newer], store, progress=False)
    assert info["specs"] == ["ts_23.501@16.4.0", "ts_23.501@17.1.0"]
    docs = {d["spec_id"]: d for d in NetworkXStore(tmp_path / "kg.json.gz").documents()}
    assert {k: (d["version"], d["release"]) for k, d in docs.items()} == \
        {"ts_23.501@16.4.0": ("16.4.0", "16"), "ts_23.501@17.1.0": ("17.1.0", "17")}
    relay = store.terms_by_abbreviation("RN")[0]
    assert relay.source_specs == ["ts_23.501@16.4.0", "ts_23.501@17.1.0"]


def test_citations_carry_version_and_page():
    chunk = Chunk("ts_23.501@16.4.0:6.2.19:1", "ts_23.501@16.4.0", "6.2.19", "SCP", "text", "function", 0.5,
                  pages=[344, 345])
    citation = cite(Evidence(chunk, "text", "section"), 1)
    assert (citation.spec_id, citation.version, citation.page) == ("ts_23.501@16.4.0", "16.4.0", 344)
    assert citation.source == "ts_23.501@16.4.0 §6.2.19, p. 344"
    markdown = Evidence(Chunk("demo_5gc:4.5:1", "demo_5gc", "4.5", "SCP", "t", "function", 0.5), "t", "section")
    assert (cite(markdown, 2).version, cite(markdown, 2).page, cite(markdown, 2).source) == ("", 0, "demo_5gc §4.5")


def test_bad_folders_and_markdown_that_is_not_a_spec(tmp_path):
    no_defs = tmp_path / "no_defs"
    no_defs.mkdir()
    (no_defs / "01.md").write_text("# 1 Scope\n\nText.\n")
    (no_defs / "06.md").write_text(CLAUSE_6)
    with pytest.raises(InputError, match=r"no_defs: has no clause 3"):
        parse_specs([no_defs], progress=False)
    readme = tmp_path / "README.md"
    readme.write_text("# Installing\n\nRun make.\n\n## Usage\n\nRun it.\n")
    with pytest.raises(InputError, match=r"README.md: no numbered clauses found"):
        parse_specs([readme], progress=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="holds no .md files"):
        load_spec(empty)


# --------------------------------------------------------------------------- real specs
def pandoc_markdown(docx, out):
    """The .docx as pandoc writes it (pandoc is a system dependency: make install-pandoc)."""
    assert shutil.which("pandoc"), "pandoc is missing: apt-get install pandoc"
    subprocess.run(["pandoc", str(docx), "-t", "markdown", "-o", str(out)], check=True)
    return out


def docling_style(pandoc_text: str) -> str:
    """pandoc's markdown rewritten the way docling writes a .docx: one line per paragraph,
    "**Term**: text" with the colon outside the bold, "##" for every heading, brackets
    still escaped."""
    out = []
    for block in re.split(r"\n\s*\n", pandoc_text):
        line = " ".join(block.split())
        line = re.sub(r"\*\*([^*]+?):\*\*", r"**\1**:", line)
        line = re.sub(r"^#+\s+", "## ", line)
        line = re.sub(r"\s*\{#[^}]*\}", "", line)
        out.append(line)
    return "\n\n".join(out) + "\n"


def split_by_clause(markdown: str, folder):
    """One file per top-level clause, named for nothing in particular (order comes from the
    clause numbers inside)."""
    folder.mkdir()
    parts = re.split(r"(?m)^(?=## \d+ )", markdown)
    for i, part in enumerate(parts):
        (folder / f"part-{len(parts) - i:02d}.md").write_text(part)
    return folder


def _terms(path):
    norm = lambda t: " ".join(t.split()).strip(" :").lower()
    abbreviations, definitions = extract_terms(load_spec(path))
    return ({(a.abbreviation, norm(a.full_name)) for a in abbreviations},
            {norm(d.term): norm(d.definition) for d in definitions})


@pytest.mark.slow
@pytest.mark.parametrize("name", ["21905-h20", "29500-ia0"])
def test_markdown_forms_give_the_docx_terms(tmp_path, name):
    docx = shared("3gpp", f"{name}.docx")
    pandoc = pandoc_markdown(docx, tmp_path / f"{name}.md")
    docling_dir = tmp_path / "docling"
    docling_dir.mkdir()
    docling = docling_dir / f"{name}.md"
    docling.write_text(docling_style(pandoc.read_text()))
    clauses = split_by_clause(docling.read_text(), tmp_path / name)
    abbr, defs = _terms(docx)
    assert len(defs) >= 13 and len(abbr) >= 10
    for form in (pandoc, docling, clauses):
        doc = load_spec(form)
        assert doc.spec_id == load_spec(docx).spec_id and doc.release == load_spec(docx).release
        got_abbr, got_defs = _terms(form)
        identical = sum(got_defs.get(term) == text for term, text in defs.items())
        assert identical / len(defs) >= 0.98, (form, identical, len(defs))
        assert len(got_abbr & abbr) / len(abbr) >= 0.98, (form, len(got_abbr & abbr), len(abbr))
        assert len(got_defs) <= len(defs) * 1.02 and len(got_abbr) <= len(abbr) * 1.02


@pytest.mark.slow
def test_definitions_end_where_the_next_entry_begins_in_every_form(tmp_path):
    docx = shared("3gpp", "21905-h20.docx")
    pandoc = pandoc_markdown(docx, tmp_path / "21905-h20.md")
    for form in (docx, pandoc):
        _, defs = _terms(form)
        assert defs["operating band"].endswith("specific set of technical requirements."), form
        assert defs["operations system"].startswith("this abbreviation indicates a generic management system")


@pytest.mark.slow
def test_pdf_pages_reach_citations(nx_spec_store):
    import pypdf

    from ragkit.pipelines.spec import ask_spec

    answer = ask_spec("What is the role of the SCP?", nx_spec_store)
    pdf_citations = [c for c in answer.citations if spec_number(c.spec_id) == "ts_23.501"]
    assert pdf_citations and all(c.version == "16.4.0" and c.page > 0 for c in pdf_citations)
    reader = pypdf.PdfReader(str(shared("3gpp", "23501-g40.pdf")))
    for citation in pdf_citations:
        chunk = next(c for c in nx_spec_store.find_chunks(spec_ids=[citation.spec_id])
                     if c.chunk_id == citation.doc_id)
        page_text = " ".join(reader.pages[citation.page - 1].extract_text().split())
        assert " ".join(chunk.content.split())[:40] in page_text
        assert f"p. {citation.page}" in citation.source


@pytest.mark.slow
def test_cli_builds_a_folder_of_clause_files(tmp_path):
    folder = _clause_folder(tmp_path)
    store = tmp_path / "kg.json.gz"
    done = subprocess.run([sys.executable, "-m", "ragkit.cli", "kg", "build", "--specs", str(folder),
                           str(ROOT / "data" / "specs" / "demo_5gc.md"), "--store", str(store), "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["specs"] == ["ts_23.501@16.4.0", "demo_5gc"]
    bad = subprocess.run([sys.executable, "-m", "ragkit.cli", "kg", "build", "--specs", str(tmp_path / "nowhere"),
                          "--store", str(tmp_path / "other.json.gz")], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode != 0 and bad.stderr.strip().count("\n") == 0 and "nowhere: no such file" in bad.stderr
    assert not (tmp_path / "other.json.gz").exists()
