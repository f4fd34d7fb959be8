"""The term dictionary: abbreviations and definitions from clause 3 (and
TR 21.905's clauses 3 and 4), merged across specs into Term records.

- Abbreviations: one per line, "ABBR<TAB>Expansion" as 3GPP writes them (the PDF's layout
  text keeps the column gap as a tab); a line with single spaces is split where the
  expansion's initials best match the abbreviation.
- Definitions: "term: definition" paragraphs, skipping the clause's boilerplate ("For the
  purposes of the present document ...") and notes.
- Merging: one Term per (abbreviation, expansion); its ``source_specs`` lists every spec that
  gives it. ``primary_spec`` prefers 5G specs (ts_23.5xx, ts_29.5xx), then the first spec
  read. An abbreviation with several expansions keeps them all.
"""

from __future__ import annotations

import re
from typing import Iterable

from .ingest import definition_clauses
from .model import Abbreviation, Definition, SpecDocument, Term, spec_number

# Words that look like acronyms in questions but are ordinary English ("in 5G Core").
COMMON_WORDS = frozenset(
    """A AN AND ARE AS AT BE BETWEEN BY CAN DO DOES FOR FROM HOW IF IN INTO IS IT ITS NO NOT OF
    ON OR OUT SO THAT THE THEN THIS TO UP US VS WE WHAT WHEN WHERE WHICH WHO WHY WITH
    2G 3G 4G 5G 6G 3GPP""".split()
)

_FIVE_G = re.compile(r"^ts_2[39]\.5\d\d$")
_BOILERPLATE = re.compile(r"^(for the purposes of|the following|void\b|note\b|example\b)", re.IGNORECASE)
_ABBR_TOKEN = re.compile(r"^[0-9A-Za-z(][0-9A-Za-z\-/&.+()':,]*$")


def is_five_g_spec(spec_id: str) -> bool:
    """ts_23.5xx and ts_29.5xx (any version): the 5G System architecture and its service specs."""
    return bool(_FIVE_G.match(spec_number(spec_id)))


def _looks_like_abbreviation(token: str) -> bool:
    """"SCP", "5G-AN", "IoT", "eMBB", "N3IWF": two capitals, or a capital and a digit."""
    upper = sum(c.isupper() for c in token)
    return bool(_ABBR_TOKEN.match(token)) and (upper >= 2 or (upper >= 1 and any(c.isdigit() for c in token)))


def _initials(expansion: str) -> list[str]:
    """Word initials; a word with digits ("5G") gives all its characters, a word with
    capitals ("QoS", "eXchange") all its capitals."""
    out: list[str] = []
    for word in re.findall(r"[A-Za-z0-9]+", expansion):
        if any(c.isdigit() for c in word):
            out.extend(c.upper() for c in word)
        elif any(c.isupper() for c in word[1:]):
            out.extend(c for c in word if c.isupper())
        else:
            out.append(word[0].upper())
    return out


def _common_letters(abbreviation: str, expansion: str) -> tuple[int, int, int]:
    """(letters the expansion's initials spell in order, the abbreviation's letters, the
    expansion's initials): the longest common subsequence of the two."""
    wanted = [c for c in abbreviation.upper() if c.isalnum()]
    initials = _initials(expansion)
    row = [0] * (len(initials) + 1)
    for c in wanted:
        previous_diagonal = 0
        for j, d in enumerate(initials, 1):
            above = row[j]
            row[j] = previous_diagonal + 1 if c == d else max(row[j], row[j - 1])
            previous_diagonal = above
    return row[-1], len(wanted), len(initials)


def _initials_match(abbreviation: str, expansion: str) -> float:
    """Share of the abbreviation's letters that the expansion's initials spell, in order:
    "Pref CUG" / "Preferential CUG" → 4 of 7."""
    common, wanted, _ = _common_letters(abbreviation, expansion)
    return common / wanted if wanted else 0.0


def split_abbreviation_line(line: str, tabs_only: bool = False) -> tuple[str, str] | None:
    """("SCP", "Service Communication Proxy") from "SCP<TAB>Service Communication Proxy",
    or from the space-separated form (unless ``tabs_only``); None for a line that is not
    an entry."""
    line = line.strip()
    if not line or _BOILERPLATE.match(line):
        return None
    if tabs_only and "\t" not in line:
        return None
    if "\t" in line:
        abbr, _, expansion = line.partition("\t")
        abbr, expansion = abbr.strip(), " ".join(expansion.split())
        if abbr and expansion and len(abbr) <= 24:
            return abbr, expansion
        return None
    tokens = line.split()
    if len(tokens) < 2 or not _ABBR_TOKEN.match(tokens[0]) or len(tokens[0]) > 24:
        return None
    k = split_point(tokens)
    abbreviation, expansion = " ".join(tokens[:k]), " ".join(tokens[k:])
    if not _abbreviation_shaped(tokens[0]) and _initials_match(abbreviation, expansion) < 0.5:
        return None      # "Comfort Noise": words, not an abbreviation ("Mcps Mega-chips ..." is one)
    return abbreviation, expansion


def _abbreviation_shaped(token: str) -> bool:
    """"SCP", "5GC", "eMLPP", "C-plane", "Kc", "ftn": capitals with another capital or a
    digit, a digit first, a hyphen, or at most three characters; "Comfort" is a word."""
    return _looks_like_abbreviation(token) or token[:1].isdigit() or "-" in token or len(token) <= 3


def abbreviation_entries(lines: list[str], tabs_only: bool) -> list[tuple[str, str]]:
    """Every (abbreviation, expansion) a clause's lines give. A line that is not an entry but
    names something ("Comfort Noise" after "CN<TAB>Core Network") is a further expansion of
    the abbreviation above it, as TR 21.905 lists an abbreviation's meanings one a line; a
    sentence (a note, a wrapped remark) is not."""
    out: list[tuple[str, str]] = []
    for line in lines:
        pair = split_abbreviation_line(line, tabs_only)
        if pair:
            out.append(pair)
            continue
        text = " ".join(line.split())
        if out and text[:1].isalnum() and not _BOILERPLATE.match(text) and not text.endswith("."):
            out.append((out[-1][0], text))
    return out


def split_point(tokens: list[str], longest: int = 4) -> int:
    """How many leading tokens of a space-separated abbreviation line are the abbreviation,
    read from the tokens' shape alone (no list of known terms): the split whose expansion's
    initials best spell the abbreviation ("CN PDB | Core Network Packet Delay Budget",
    "JAR file | Java Archive file"), where an expansion starts like a name (a capital or a
    digit, not another acronym) and the shortest abbreviation wins a tie."""
    best, best_score = 1, float("-inf")
    for k in range(1, min(longest, len(tokens) - 1) + 1):
        first = tokens[k]
        common, wanted, initials = _common_letters("".join(tokens[:k]), " ".join(tokens[k:]))
        # Mostly the abbreviation's letters spelt; a little, the expansion's initials used
        # ("OSI RM | OSI Reference Model" uses them all, "OSI | RM OSI ..." three of seven).
        score = common / max(wanted, 1) + 0.2 * common / max(initials, 1)
        if not any(c.isupper() or c.isdigit() for c in first):
            score -= 0.5    # "CUG | index": an expansion starts a name (but "BI | all Barring ...")
        elif _looks_like_abbreviation(first) and not any(c.isdigit() for c in first):
            score -= 0.1    # an expansion rarely starts with another acronym ("CN | PDB Core ...")
        if score > best_score + 1e-9:
            best, best_score = k, score
    return best


_DEFINITION = re.compile(r"^(?P<term>[^:]{2,120}?):\s+(?P<text>\S.*)$")


def split_definition(paragraph: str) -> tuple[str, str] | None:
    """("NF Set", "A group of interchangeable NF instances ...") from "NF Set: A group ...". """
    paragraph = " ".join(paragraph.split())
    if _BOILERPLATE.match(paragraph):
        return None
    match = _DEFINITION.match(paragraph)
    if not match:
        return None
    term = match.group("term").strip()
    if len(term.split()) > 12 or term[0] in "-([" or term.lower().startswith(("see ", "e.g")):
        return None
    return term, match.group("text").strip()


def extract_terms(doc: SpecDocument) -> tuple[list[Abbreviation], list[Definition]]:
    """Every abbreviation and definition that clause 3 (21.905: clauses 3 and 4) gives."""
    abbreviations: list[Abbreviation] = []
    definitions: list[Definition] = []
    for section in definition_clauses(doc):
        title = section.title.lower()
        if "abbreviation" in title:
            # Where the clause uses tabs (the .docx, the PDF's layout text), a line without
            # one is a wrapped remainder or a note, not an entry.
            tabs_only = sum("\t" in line for line in section.lines) * 2 > len(section.lines)
            for abbreviation, expansion in abbreviation_entries(section.lines, tabs_only):
                abbreviations.append(Abbreviation(abbreviation, expansion, doc.spec_id, section.section_id))
        elif "definition" in title:
            for line in section.lines:
                pair = split_definition(line)
                if pair:
                    definitions.append(Definition(pair[0], pair[1], doc.spec_id, section.section_id))
    return abbreviations, definitions


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def term_id(kind: str, name: str, expansion: str = "") -> str:
    return f"{kind}:{name}|{_key(expansion)}" if expansion else f"{kind}:{_key(name)}"


def primary_spec(specs: list[str]) -> str:
    five_g = [s for s in specs if is_five_g_spec(s)]
    return (five_g or specs)[0] if specs else ""


def merge_terms(abbreviations: Iterable[Abbreviation], definitions: Iterable[Definition]) -> list[Term]:
    """Term records: one per (abbreviation, expansion) and one per defined term, in first-
    seen order, each with all its source specs and the spec it is primarily from."""
    terms: dict[str, Term] = {}
    for a in abbreviations:
        tid = term_id("abbr", a.abbreviation, a.full_name)
        term = terms.setdefault(tid, Term(term_id=tid, term_type="abbreviation",
                                          abbreviation=a.abbreviation, full_name=a.full_name))
        _add_source(term, a.spec_id, a.section_id)
    for d in definitions:
        tid = term_id("def", d.term)
        found = terms.get(tid)
        if found is None:
            term = terms[tid] = Term(term_id=tid, term_type="definition", full_name=d.term,
                                     definition=d.definition)
        else:
            term = found
            if is_five_g_spec(d.spec_id) and not is_five_g_spec(term.primary_spec):
                term.definition = d.definition  # the 5G spec's wording wins
        _add_source(term, d.spec_id, d.section_id)
    for term in terms.values():
        term.primary_spec = primary_spec(term.source_specs)
    return list(terms.values())


def _add_source(term: Term, spec_id: str, section_id: str) -> None:
    if spec_id not in term.source_specs:
        term.source_specs.append(spec_id)
    where = f"{spec_id}:{section_id}"
    if where not in term.sections:
        term.sections.append(where)
    term.primary_spec = primary_spec(term.source_specs)


def acronyms_in(text: str) -> list[str]:
    """Acronym-like words of a question ("SCP", "5GC", "N3IWF"), common words excluded.

    Case matters: only words written in capitals count, so "in 5G Core" yields nothing.
    """
    found = []
    for word in re.findall(r"(?<![\w-])[A-Z0-9][A-Z0-9\-]*[A-Z0-9](?![\w-])", text):
        if word in COMMON_WORDS or word.isdigit() or not any(c.isalpha() for c in word):
            continue
        if sum(c.isupper() for c in word) >= 2 or re.match(r"^\d+[A-Z]+$", word):
            if word not in found:
                found.append(word)
    return found
