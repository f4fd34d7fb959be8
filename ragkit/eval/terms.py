"""Extraction quality against what a 3GPP .docx itself marks as terms.

3GPP's Word template marks the entries independently of the text we parse: abbreviation
lines use the paragraph style "EW", and a definition paragraph starts with the defined term
in bold. Counting those gives the document's own list ("what it holds"), which we compare
with what ``extract_terms`` found. Used on TR 21.905 (clauses 3 and 4)."""

from __future__ import annotations

from pathlib import Path

from ..specs.ingest import docx_segments, load_spec, split_heading
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
    previous = ""            # the abbreviation of the last "EW" entry
    for para in document.paragraphs:
        style = para.style.name if para.style is not None else ""
        segments = docx_segments(para._p)    # every run: python-docx's text skips smart tags
        text = "".join(t for t, _ in segments).strip()
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
                previous = abbr.strip()
        elif "abbreviation" in clause and style == "EW" and previous and text[:1].isalnum():
            # An "EW" line with no abbreviation column: another expansion of the entry above
            # ("CN<TAB>Core Network", then "Comfort Noise").
            abbreviations.add((previous, _norm(text)))
        elif "definition" in clause and "abbreviation" not in clause and segments and segments[0][1]:
            bold = ""
            for run_text, is_bold in segments:
                if not is_bold:
                    break
                bold += run_text
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
