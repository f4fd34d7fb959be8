"""Extraction quality against what a 3GPP .docx itself marks as terms.

3GPP's Word template marks the entries independently of the text we parse: abbreviation
lines use the paragraph style "EW", and a definition paragraph starts with the defined term
in bold. Counting those gives the document's own list ("what it holds"), which we compare
with what ``extract_terms`` found. Used on TR 21.905 (clauses 3 and 4)."""

from __future__ import annotations

from pathlib import Path

from ..specs.ingest import load_spec, split_heading
from ..specs.terms import extract_terms


def _norm(text: str) -> str:
    return " ".join(text.replace("\xa0", " ").split()).strip(" :").lower()


def docx_term_truth(path: str | Path) -> tuple[set[tuple[str, str]], set[str]]:
    """(abbreviation, expansion) pairs styled "EW" and bold-led definition terms, from the
    definitions and abbreviations clauses of a 3GPP .docx."""
    import docx

    document = docx.Document(str(path))
    abbreviations: set[tuple[str, str]] = set()
    definitions: set[str] = set()
    clause = ""
    for para in document.paragraphs:
        style = para.style.name if para.style is not None else ""
        text = para.text.strip()
        if style.startswith("Heading"):
            number, title = split_heading(text)
            if number:
                clause = title.lower()
            continue
        if not text:
            continue
        if "abbreviation" in clause and style == "EW" and "\t" in text:
            abbr, _, expansion = text.partition("\t")
            if abbr.strip() and expansion.strip():
                abbreviations.add((abbr.strip(), _norm(expansion)))
        elif "definition" in clause and "abbreviation" not in clause and para.runs and para.runs[0].bold:
            bold = ""
            for run in para.runs:
                if not run.bold:
                    break
                bold += run.text
            if ":" in bold or text[len(bold):].lstrip().startswith(":"):
                term = _norm(bold.split(":")[0])
                if term:
                    definitions.add(term)
    return abbreviations, definitions


def extraction_scores(path: str | Path) -> dict:
    """Precision and recall of our abbreviations and definition terms against the truth."""
    truth_abbr, truth_defs = docx_term_truth(path)
    abbreviations, definitions = extract_terms(load_spec(path))
    got_abbr = {(a.abbreviation, _norm(a.full_name)) for a in abbreviations}
    got_defs = {_norm(d.term) for d in definitions}

    def score(got: set, truth: set) -> dict:
        hit = len(got & truth)
        return {"in_document": len(truth), "extracted": len(got), "matched": hit,
                "precision": round(hit / len(got), 4) if got else 0.0,
                "recall": round(hit / len(truth), 4) if truth else 0.0}

    return {"abbreviations": score(got_abbr, truth_abbr), "definitions": score(got_defs, truth_defs)}


__all__ = ["docx_term_truth", "extraction_scores"]
