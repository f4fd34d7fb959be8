"""Terms, definitions and expansions read from the forms a 3GPP spec is really held in: the
.docx, the markdown pandoc writes from it, a docling-style markdown (one line per paragraph,
"**Term**: text", escaped brackets), the same split into one file per clause, and, with
--docling DIR, markdown that docling itself wrote. Each form is compared with the .docx:
terms with an identical definition, (abbreviation, expansion) pairs in common. The PDF part
counts chunks with pages and citations that show one.

    python bench/spec_forms.py [--docling DIR] [--label after]   (pandoc must be installed)

Results go to outputs/bench/spec_forms.json under the label, so a run of an earlier
checkout (PYTHONPATH=<checkout> ... --label before) sits beside the current one.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

from _common import OUT, SHARED, write

SPECS = ("21905-h20", "29500-ia0")
QUESTIONS = ("What is the role of the SCP?", "Compare UPF and SMF", "What does the AMF do?",
             "How are PDU Sessions released?")


def docling_style(pandoc_text: str) -> str:
    """pandoc's markdown as docling lays it out: paragraphs on one line, the colon after the
    bold term, "##" headings, escapes kept."""
    out = []
    for block in re.split(r"\n\s*\n", pandoc_text):
        line = " ".join(block.split())
        line = re.sub(r"\*\*([^*]+?):\*\*", r"**\1**:", line)
        line = re.sub(r"^#+\s+", "## ", line)
        out.append(re.sub(r"\s*\{#[^}]*\}", "", line))
    return "\n\n".join(out) + "\n"


def by_clause(markdown: str, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for i, part in enumerate(re.split(r"(?m)^(?=## \d+ )", markdown)):
        (folder / f"part-{i:02d}.md").write_text(part)
    return folder


def _norm(text: str) -> str:
    return " ".join(text.replace("\xa0", " ").split()).strip(" :").lower()


def terms(path: Path) -> dict:
    from ragkit.errors import InputError
    from ragkit.specs.ingest import load_spec
    from ragkit.specs.terms import extract_terms

    started = time.perf_counter()
    try:
        doc = load_spec(path)
        abbreviations, definitions = extract_terms(doc)
    except InputError as exc:
        return {"error": str(exc)}
    return {"spec_id": doc.spec_id, "version": getattr(doc, "version", ""),
            "release": getattr(doc, "release", ""), "seconds": round(time.perf_counter() - started, 3),
            "abbreviations": {(a.abbreviation, _norm(a.full_name)) for a in abbreviations},
            "definitions": {_norm(d.term): _norm(d.definition) for d in definitions}}


def compare(reference: dict, form: dict) -> dict:
    if "error" in form:
        return {"error": form["error"]}
    ref_defs, defs = reference["definitions"], form["definitions"]
    ref_abbr, abbr = reference["abbreviations"], form["abbreviations"]
    identical = sum(defs.get(t) == d for t, d in ref_defs.items())
    return {"spec_id": form["spec_id"], "version": form["version"], "release": form["release"],
            "definitions": len(defs), "definitions_identical": identical,
            "definitions_identical_share": round(identical / len(ref_defs), 4) if ref_defs else 0.0,
            "abbreviations": len(abbr), "abbreviations_shared": len(abbr & ref_abbr),
            "abbreviations_shared_share": round(len(abbr & ref_abbr) / len(ref_abbr), 4) if ref_abbr else 0.0,
            "seconds": form["seconds"]}


def pdf_pages() -> dict:
    from ragkit.pipelines.spec import ask_spec
    from ragkit.specs.build import build_kg
    from ragkit.specs import open_store

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "kg.json.gz"))
        build_kg([SHARED / "3gpp" / "23501-g40.pdf"], store, progress=False)
        chunks = store.find_chunks()
        cited = [c for q in QUESTIONS for c in ask_spec(q, store).citations if c.doc_id.count(":") == 2]
    return {"chunks": len(chunks), "chunks_with_pages": sum(bool(getattr(c, "pages", [])) for c in chunks),
            "questions": list(QUESTIONS), "citations": len(cited),
            "citations_with_page": sum(bool(getattr(c, "page", 0)) for c in cited),
            "example": next((c.source for c in cited), "")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docling", help="folder with <spec>.md files that docling wrote from the .docx")
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in SPECS:
            docx = SHARED / "3gpp" / f"{name}.docx"
            pandoc = Path(tmp) / f"{name}.md"
            subprocess.run(["pandoc", str(docx), "-t", "markdown", "-o", str(pandoc)], check=True)
            style = Path(tmp) / "docling_style" / f"{name}.md"
            style.parent.mkdir(exist_ok=True)
            style.write_text(docling_style(pandoc.read_text()))
            reference = terms(docx)
            forms = {"pandoc_markdown": pandoc, "docling_style_markdown": style,
                     "clause_files": by_clause(style.read_text(), Path(tmp) / f"{name}_clauses")}
            if args.docling:
                forms["docling_markdown"] = Path(args.docling) / f"{name}.md"
            results[name] = {"docx": {"spec_id": reference["spec_id"], "version": reference["version"],
                                      "release": reference["release"],
                                      "definitions": len(reference["definitions"]),
                                      "abbreviations": len(reference["abbreviations"]),
                                      "seconds": reference["seconds"]},
                             **{label: compare(reference, terms(path)) for label, path in forms.items()}}
            print(name, json.dumps(results[name], indent=1))
    results["pdf_23501"] = pdf_pages()
    print(json.dumps(results["pdf_23501"], indent=1))
    previous = OUT / "spec_forms.json"
    runs = json.loads(previous.read_text()).get("runs", {}) if previous.exists() else {}
    runs[args.label] = results
    write("spec_forms", {"command": "python bench/spec_forms.py --docling DIR --label LABEL", "runs": runs})


if __name__ == "__main__":
    main()
