"""Term-extraction precision and recall on TR 21.905, against the entries the .docx itself
marks (abbreviation paragraphs styled "EW" in clause 4, bold-led definitions in clause 3),
and the same on TS 29.500. Counts for the TS 23.501 PDF, which has no such marks.

    .venv/bin/python bench/term_extraction.py   -> outputs/bench/term_extraction.json
"""

from __future__ import annotations

from _common import SHARED, write
from ragkit.eval.terms import extraction_scores
from ragkit.specs.ingest import load_spec
from ragkit.specs.terms import extract_terms


def main() -> None:
    result = {}
    for name in ("21905-h20.docx", "29500-ia0.docx"):
        result[name] = extraction_scores(SHARED / "3gpp" / name)
        print(name, result[name])
    abbreviations, definitions = extract_terms(load_spec(SHARED / "3gpp" / "23501-g40.pdf"))
    result["23501-g40.pdf"] = {"abbreviations_extracted": len(abbreviations),
                               "definitions_extracted": len(definitions)}
    print(result["23501-g40.pdf"])
    write("term_extraction", result)


if __name__ == "__main__":
    main()
