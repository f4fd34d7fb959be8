"""How well does the grounding check tell grounded answers from ungrounded ones?

A labelled set built at run time from real evidence, and a small set of real model answers
labelled by hand:

(a) Supporting sentences are taken from the demo data (the manuals, the spec primer, the
    biomedical KG's edges written as sentences, the evidence KG's mechanisms and summaries)
    and from the shared MuSiQue paragraphs. Each example's evidence is the sentence's chunk and
    two other chunks of the same source, in a shuffled order. The correct answers are the
    sentence itself (cited or not) and two adjacent sentences as a two-claim answer; the
    ungrounded answers are systematic perturbations of the sentence:
      number        a number changed (6 -> 7, 500 -> 600, 1.355 -> 1.356)
      negation+     a negation added after an auxiliary ("is" -> "is not", "có" -> "không có")
      negation-     the sentence's negation removed
      swap          its first two names exchanged (names: the KGs' node names, else
                    capitalised words inside the sentence)
      other_chunk   a sentence of a chunk that is not in the evidence, cited as the original
      wrong_cite    the original sentence citing another evidence item
(b) ``bench/grounding_answers.jsonl``: real answers of SmolLM2-135M and Qwen2.5-Coder-1.5B to
    our own questions over the demo data (``bench/grounding_answers.py``), each with the
    evidence it was checked against and our hand label (grounded or not, and why).
(c) ``bench/grounding_answers_written.jsonl``: answers written by hand, in English and
    Vietnamese, for what the word-level rules find hard: quoted source text that carries its
    own reference brackets ("TS 23.502 [3]"), numbers and names the question states, one claim
    comparing two cited items, refusals (warranted ones, ones where the evidence holds the
    answer, and refusals mixed with an answer), and negations written with another negator
    than the evidence's. Each correct answer (``expect: pass``) has perturbed wrong ones
    (``expect: fail``, ``of``: the correct one's id). ``split: dev`` rows were written first
    and looked at while the rules were changed; ``held_out`` rows were written afterwards
    and scored once.

Chunks are split in two by a hash of their id: ``build`` (the part the rules were developed
on) and ``held_out`` (reported, never looked at while writing the rules).
Both the old answer-level check (``check_grounding`` below, the share of the answer's
content words found anywhere in the evidence; the package no longer ships it) and the claim-level one
(``check_claims``) are scored: acceptance of correct answers, false acceptance of each
perturbation, and for every set the two errors side by side (``summary``): false acceptance
(wrong answers passed) and false rejection (correct answers failed). Writes
outputs/bench/grounding_check.json.

    PYTHONPATH=. python bench/grounding_check.py [--musique 150]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import statistics
import sys
import time
import zlib
from collections import defaultdict
from pathlib import Path

from _common import ROOT, SHARED, write

sys.path.insert(0, str(ROOT))

from ragkit.text import split_sentences  # noqa: E402
from ragkit.text import ENGLISH_STOPWORDS, VIETNAMESE_FUNCTION_WORDS, strip_accents  # noqa: E402
from ragkit.answer.claim_rules import is_content  # noqa: E402
from ragkit.answer.grounding import _words, check_claims, distinct_trigram_ratio  # noqa: E402
from ragkit.answer.verdicts import MIN_DISTINCT_TRIGRAMS  # noqa: E402

DATA = ROOT / "data"
ANSWERS = ROOT / "bench" / "grounding_answers.jsonl"
WRITTEN = ROOT / "bench" / "grounding_answers_written.jsonl"
PERTURBATIONS = ("number", "negation+", "negation-", "swap", "other_chunk", "wrong_cite")
CORRECT = ("original", "original_cited", "two_sentences")
DISTRACTORS = 2


# ----------------------------------------------------------------------------- chunks
def markdown_sections(folder: str, split_at: str, prefix: str) -> list[dict]:
    """Each section (text up to the next heading matched by ``split_at``) of each markdown
    file in ``DATA / folder``, when it holds more than 20 words."""
    out = []
    for path in sorted((DATA / folder).glob("*.md")):
        for i, section in enumerate(re.split(split_at, path.read_text(encoding="utf-8"))):
            title, _, body = section.partition("\n")
            if len(body.split()) > 20:
                out.append({"id": f"{prefix}:{path.stem}:{i}", "text": f"{title.strip('# ')}\n{body.strip()}"})
    return out


def manual_chunks() -> list[dict]:
    """Each '##' section of each manual."""
    return markdown_sections("manuals", r"\n(?=## )", "manual")


def spec_chunks() -> list[dict]:
    """Each clause of the spec primers (text between headings)."""
    return markdown_sections("specs", r"\n(?=#+ )", "spec")


_RELATION_WORDS = {"TREATS": "treats", "HAS_SYMPTOM": "has the symptom", "INHIBITS": "inhibits",
                   "AFFECTS": "affects", "ASSOCIATED_WITH": "is associated with",
                   "CAUSES_SIDE_EFFECT": "can cause the side effect"}


def biomed_chunks() -> tuple[list[dict], set[str]]:
    """The typed KG's edges written as sentences, one chunk per source node; and its names."""
    with open(DATA / "biomed" / "nodes.csv", encoding="utf-8") as f:
        names = {row["id"]: row["name"] for row in csv.DictReader(f)}
    facts = defaultdict(list)
    with open(DATA / "biomed" / "edges.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            verb = _RELATION_WORDS.get(row["relation"], row["relation"].lower().replace("_", " "))
            facts[row["source"]].append(f"{names[row['source']]} {verb} {names[row['target']]}.")
    chunks = [{"id": f"biomed:{source}", "text": " ".join(sentences)}
              for source, sentences in sorted(facts.items()) if len(sentences) >= 2]
    return chunks, set(names.values())


def evidence_kg_chunks() -> tuple[list[dict], set[str]]:
    """Each edge of the evidence KG: its mechanism and the summaries of its sources."""
    kg = json.loads((DATA / "merged_knowledge_graph.json").read_text(encoding="utf-8"))
    chunks = []
    for i, edge in enumerate(kg["edges"]):
        quotes = [e["source_quote"].removeprefix("Summary:").strip() for e in edge.get("evidence", [])
                  if e.get("source_quote")]
        text = " ".join([edge.get("mechanism", ""), *quotes]).strip()
        if text:
            chunks.append({"id": f"kg:{i}", "text": text})
    names = {n["label"] for n in kg["nodes"]}
    return chunks, names


def musique_chunks(limit: int) -> list[dict]:
    """Every k-th MuSiQue paragraph (``limit`` of them)."""
    corpus = json.loads((SHARED / "multihop_passages" / "musique_corpus.json").read_text(encoding="utf-8"))
    step = max(1, len(corpus) // limit)
    return [{"id": f"musique:{i}", "text": f"{p['title']}\n{p['text']}"} for i, p in enumerate(corpus[::step][:limit])]


def split_of(chunk_id: str) -> str:
    """'build' or 'held_out', fixed by the chunk id alone."""
    return "build" if zlib.crc32(chunk_id.encode()) % 2 == 0 else "held_out"


# ----------------------------------------------------------------------- perturbations
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?(?![\w])")
_AUX_EN = re.compile(r"\b(is|are|was|were|can|must|should|will|may|has|have|had|does|do|did)\b")
_AUX_VI = re.compile(r"(?<!\w)(phải|được|có|cần|nên|là)(?!\w)")
_NEGATION = re.compile(r"(?i)\b(?:not|never|no)\b\s*|(?<!\w)(?:không(?! (?:khí|gian|tải))|chưa)(?!\w)\s*|n't\b")
_WORD = re.compile(r"[^\W\d_][\w'-]*(?:\.\d+)?")


def capitalised_runs(sentence: str) -> list[tuple[int, str]]:
    """(position, text) of runs of capitalised words that do not open a sentence or clause."""
    runs, current, start, last_end = [], [], 0, 0
    for m in _WORD.finditer(sentence):
        gap = sentence[last_end:m.start()]
        opens = m.start() == 0 or bool(re.search(r"[.!?:;\n]", sentence[:m.start()].rstrip()[-1:] or "."))
        if m.group()[0].isupper() and not opens and (not current or gap == " "):
            if not current:
                start = m.start()
            current.append(m.group())
        else:
            if current:
                runs.append((start, " ".join(current)))
            current = []
            if m.group()[0].isupper() and not opens:
                start, current = m.start(), [m.group()]
        last_end = m.end()
    if current:
        runs.append((start, " ".join(current)))
    return runs


def change_number(sentence: str, rng: random.Random) -> str | None:
    """The sentence with one of its numbers changed."""
    numbers = list(_NUMBER.finditer(sentence))
    if not numbers:
        return None
    m = rng.choice(numbers)
    token = m.group()
    if re.fullmatch(r"\d+", token):
        n = int(token)
        new = str(n + max(1, round(n * 0.2)))
    else:
        new = token[:-1] + str((int(token[-1]) + 3) % 10)
    return sentence[: m.start()] + new + sentence[m.end():]


def add_negation(sentence: str, lang: str) -> str | None:
    """A negation after the first auxiliary ("is not", "không có")."""
    if lang == "vi":
        m = _AUX_VI.search(sentence)
        return None if not m or sentence[max(0, m.start() - 6):m.start()].strip().endswith(("không", "chưa")) \
            else sentence[: m.start()] + "không " + sentence[m.start():]
    m = _AUX_EN.search(sentence)
    if not m or re.match(r"\s+not\b", sentence[m.end():]):
        return None
    return sentence[: m.end()] + " not" + sentence[m.end():]


def drop_negation(sentence: str) -> str | None:
    """The sentence without its first negation."""
    m = _NEGATION.search(sentence)
    if not m:
        return None
    out = sentence[: m.start()] + sentence[m.end():]
    out = re.sub(r"\bcan\s*not\b", "can", out)
    return out[0].upper() + out[1:] if m.start() == 0 else out


def swap_names(sentence: str, names: set[str]) -> str | None:
    """The sentence with two names in different roles exchanged (the first two, in order, with
    a lower-case word between them): names from the KGs' node names when two are in it, else
    runs of capitalised words inside it."""
    found = sorted({(sentence.find(n), n) for n in names if len(n) > 2 and re.search(rf"(?<!\w){re.escape(n)}(?!\w)", sentence)})
    if len(found) < 2:
        found = capitalised_runs(sentence)
    distinct = []
    for pos, name in found:
        if all(name != n and name not in n and n not in name for _, n in distinct):
            distinct.append((pos, name))
    # Two names in different roles: a word that is not a function word stands between them.
    pairs = [(x, y) for x, y in zip(distinct, distinct[1:])
             if any(w.lower() not in ENGLISH_STOPWORDS and strip_accents(w.lower()) not in VIETNAMESE_FUNCTION_WORDS
                    for w in _WORD.findall(sentence[x[0] + len(x[1]):y[0]]))]
    if not pairs:
        return None
    (pa, a), (pb, b) = pairs[0]
    out = sentence[:pa] + b + sentence[pa + len(a):pb] + a + sentence[pb + len(b):]
    return out if out != sentence else None


# ---------------------------------------------------------------------------- examples
def claim_sentences(text: str) -> list[str]:
    """Sentences fit to be an answer: 6 to 60 words, not a heading or a reference."""
    return [s for s in split_sentences(text)
            if 6 <= len(s.split()) <= 60 and s[-1] in ".!?" and not s.startswith("[")]


def build_examples(sources: dict[str, tuple[list[dict], set[str], str]], seed: int = 13) -> list[dict]:
    """Every example: source, split, kind (a correct kind or a perturbation), answer, evidence."""
    rng = random.Random(seed)
    examples = []
    for source, (chunks, names, lang) in sources.items():
        for ci, chunk in enumerate(chunks):
            sentences = claim_sentences(chunk["text"])
            if not sentences:
                continue
            others = [c for c in chunks if c["id"] != chunk["id"]]
            distractors = rng.sample(others, min(DISTRACTORS, len(others)))
            items = [chunk, *distractors]
            rng.shuffle(items)
            gold = items.index(chunk) + 1
            wrong = next(i + 1 for i, c in enumerate(items) if c is not chunk)
            evidence = [c["text"] for c in items]
            outside = [c for c in others if c not in distractors]
            base = {"source": source, "split": split_of(chunk["id"]), "chunk": chunk["id"], "evidence": evidence}

            def add(kind, answer):
                if answer:
                    examples.append({**base, "kind": kind, "answer": answer})

            for si, sentence in enumerate(sentences[:3]):
                cite = f" [{gold}]" if si % 2 == 0 else ""
                cited = sentence[:-1] + f" [{gold}]" + sentence[-1]
                add("original", sentence)
                add("original_cited", cited)
                if si + 1 < len(sentences):
                    add("two_sentences", f"{cited} {sentences[si + 1][:-1]} [{gold}]{sentences[si + 1][-1]}")
                for kind, changed in (("number", change_number(sentence, rng)),
                                      ("negation+", add_negation(sentence, lang)),
                                      ("negation-", drop_negation(sentence)),
                                      ("swap", swap_names(sentence, names))):
                    if changed:
                        add(kind, changed[:-1] + cite + changed[-1])
                other = [s for c in rng.sample(outside, min(3, len(outside))) for s in claim_sentences(c["text"])]
                if other:
                    s = rng.choice(other)
                    add("other_chunk", s[:-1] + cite + s[-1])
                add("wrong_cite", sentence[:-1] + f" [{wrong}]" + sentence[-1])
    return examples


# ------------------------------------------------------------------------------ scoring
MIN_SUPPORT = 0.6       # the answer-level check's threshold


def check_grounding(answer: str, evidence: list[str], question: str = "") -> bool:
    """The answer-level baseline: grounded when at least ``MIN_SUPPORT`` of the answer's
    content words occur in the evidence or the question (a word written without diacritics
    matches its accent-stripped form), every number it states occurs there, and at least
    half its word trigrams are distinct (a looping answer fails)."""
    known = {w for text in [*evidence, question] for w in _words(text)}
    known_plain = {strip_accents(w) for w in known}
    words = _words(answer)
    content = [w for w in words if is_content(w)]
    if not content:
        return False
    missing = [w for w in content if not (w in known or (strip_accents(w) == w and w in known_plain))]
    return (1.0 - len(missing) / len(content) >= MIN_SUPPORT and not any(w.isdigit() for w in missing)
            and distinct_trigram_ratio(words) >= MIN_DISTINCT_TRIGRAMS)


def old_check(answer: str, evidence: list[str], question: str = "") -> bool:
    return check_grounding(answer, evidence, question)


def new_check(answer: str, evidence: list[str], question: str = "") -> bool:
    return check_claims(answer, evidence, question).passed


CHECKS = {"old": old_check, "new": new_check}


def judge_all(examples: list[dict]) -> None:
    """Each check's verdict on each example, stored on it (``accepted``: name -> bool)."""
    for e in examples:
        e["accepted"] = {name: check(e["answer"], e["evidence"]) for name, check in CHECKS.items()}


def _shares(rows: list[dict]) -> dict:
    return {"n": len(rows), **{name: round(sum(e["accepted"][name] for e in rows) / len(rows), 4)
                               for name in CHECKS}}


def score(examples: list[dict]) -> dict:
    """Per split and kind: n and the share each check accepts."""
    out: dict = {}
    for split in ("build", "held_out", "all"):
        rows = [e for e in examples if split == "all" or e["split"] == split]
        table = {kind: _shares([e for e in rows if e["kind"] == kind])
                 for kind in (*CORRECT, *PERTURBATIONS) if any(e["kind"] == kind for e in rows)}
        table["correct accepted"] = _shares([e for e in rows if e["kind"] in CORRECT])
        table["perturbed accepted"] = _shares([e for e in rows if e["kind"] in PERTURBATIONS])
        out[split] = table
    return out


def score_real(path: Path) -> dict:
    """The hand-labelled real answers: per check, how many grounded answers it accepts and
    ungrounded ones it lets through; and each answer's verdicts."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = {"n": len(rows), **{label: sum(r["label"] == label for r in rows)
                              for label in ("grounded", "ungrounded", "refusal")}, "answers": []}
    for name, check in CHECKS.items():
        out[name] = {}
        for label in ("grounded", "ungrounded", "refusal"):
            of = [r for r in rows if r["label"] == label]
            out[name][f"{label} accepted"] = f"{sum(check(r['answer'], r['evidence'], r['question']) for r in of)}/{len(of)}"
    for r in rows:
        report = check_claims(r["answer"], r["evidence"], r["question"])
        out["answers"].append({"model": r["model"], "question": r["question"], "label": r["label"],
                               "old": old_check(r["answer"], r["evidence"], r["question"]), "new": report.passed,
                               "core_holds": report.core_holds,
                               "claims": [(c.verdict, c.why) for c in report.claims]})
    for name, check in CHECKS.items():
        wrong = [r for r in rows if r["label"] == "ungrounded"]
        right = [r for r in rows if r["label"] == "grounded"]
        out[name]["false_acceptance"] = _rate(sum(check(r["answer"], r["evidence"], r["question"]) for r in wrong),
                                              len(wrong))
        out[name]["false_rejection"] = _rate(sum(not check(r["answer"], r["evidence"], r["question"]) for r in right),
                                             len(right))
    return out


def _rate(k: int, n: int) -> dict:
    return {"k": k, "n": n, "rate": round(k / n, 4) if n else None}


def score_written(path: Path) -> dict:
    """The hand-written answers: per check and case, the wrong answers it passes (false
    acceptance) and the correct ones it fails (false rejection); refusals where the evidence
    holds the answer (``warranted: false``) apart, since they claim nothing; and each
    answer's verdicts under the claim check."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: dict = {"n": len(rows), "cases": sorted({r["case"] for r in rows}), "answers": []}
    for r in rows:
        r["accepted"] = {name: check(r["answer"], r["evidence"], r["question"]) for name, check in CHECKS.items()}
    scored = [r for r in rows if r.get("warranted") is not False]
    for name in CHECKS:
        out[name] = {}
        for split in ("dev", "held_out", "all"):
            table = {}
            for case in ["all", *out["cases"]]:
                of = [r for r in scored if (case == "all" or r["case"] == case) and split in ("all", r["split"])]
                wrong = [r for r in of if r["expect"] == "fail"]
                right = [r for r in of if r["expect"] == "pass"]
                table[case] = {"false_acceptance": _rate(sum(r["accepted"][name] for r in wrong), len(wrong)),
                               "false_rejection": _rate(sum(not r["accepted"][name] for r in right), len(right))}
            unwarranted = [r for r in rows if r.get("warranted") is False and split in ("all", r["split"])]
            table["unwarranted refusals accepted"] = _rate(sum(r["accepted"][name] for r in unwarranted),
                                                           len(unwarranted))
            out[name][split] = table
    for r in rows:
        report = check_claims(r["answer"], r["evidence"], r["question"])
        out["answers"].append({"id": r["id"], "split": r["split"], "case": r["case"], "expect": r["expect"],
                               "old": r["accepted"]["old"], "new": report.passed, "reason": report.reason})
    return out


def summary(result: dict) -> dict:
    """False acceptance and false rejection of each check on each set, side by side."""
    out: dict = {}
    for name in CHECKS:
        row = {}
        for split in ("build", "held_out"):
            table = result["perturbations"][split]
            row[f"generated {split}"] = {"false_acceptance": table["perturbed accepted"][name],
                                         "false_rejection": round(1 - table["correct accepted"][name], 4)}
        if "real_answers" in result:
            real = result["real_answers"][name]
            row["real model answers"] = {"false_acceptance": real["false_acceptance"]["rate"],
                                         "false_rejection": real["false_rejection"]["rate"]}
        for split in ("dev", "held_out"):
            if "written_answers" in result:
                written = result["written_answers"][name][split]["all"]
                row[f"written {split}"] = {"false_acceptance": written["false_acceptance"]["rate"],
                                           "false_rejection": written["false_rejection"]["rate"]}
        out[name] = row
    return out


def timing(examples: list[dict]) -> dict:
    """Median milliseconds per answer of each check, over 200 examples."""
    sample = examples[:: max(1, len(examples) // 200)]
    out = {}
    for name, check in CHECKS.items():
        samples = []
        for e in sample:
            started = time.perf_counter()
            check(e["answer"], e["evidence"])
            samples.append((time.perf_counter() - started) * 1000)
        out[name] = round(statistics.median(samples), 3)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--musique", type=int, default=150, help="MuSiQue paragraphs used")
    parser.add_argument("--show", type=int, default=0, help="print this many accepted perturbations per kind")
    args = parser.parse_args(argv)
    biomed, biomed_names = biomed_chunks()
    kg, kg_names = evidence_kg_chunks()
    sources = {"manuals": (manual_chunks(), set(), "vi"), "specs": (spec_chunks(), set(), "en"),
               "biomed": (biomed, biomed_names, "en"), "evidence_kg": (kg, kg_names, "en"),
               "musique": (musique_chunks(args.musique), set(), "en")}
    examples = build_examples(sources)
    judge_all(examples)
    if args.show:
        for kind in PERTURBATIONS + CORRECT:
            wrong = [e for e in examples if e["kind"] == kind and e["split"] == "build"
                     and e["accepted"]["new"] != (kind in CORRECT)]
            for e in wrong[: args.show]:
                print(f"--- {kind} {e['split']} {e['source']}: {e['answer']}\n    "
                      f"{[(c.verdict, c.why) for c in check_claims(e['answer'], e['evidence']).claims]}")
    result = {"command": "PYTHONPATH=. python bench/grounding_check.py",
              "sources": {name: len(chunks) for name, (chunks, _, _) in sources.items()},
              "examples": len(examples), "perturbations": score(examples),
              "ms_per_answer": timing(examples)}
    if ANSWERS.exists():
        result["real_answers"] = score_real(ANSWERS)
    if WRITTEN.exists():
        result["written_answers"] = score_written(WRITTEN)
    result["summary"] = summary(result)
    for split in ("build", "held_out"):
        print(f"\n{split}: kind n old new")
        for kind, row in result["perturbations"][split].items():
            print(f"  {kind:<20} {row['n']:>5} {row['old']:.3f} {row['new']:.3f}")
    if "real_answers" in result:
        print("\nreal answers:", {k: result["real_answers"][k] for k in ("n", "old", "new")})
    if "written_answers" in result:
        for split in ("dev", "held_out"):
            print(f"\nwritten answers, {split} (false acceptance / false rejection, old | new):")
            for case, row in result["written_answers"]["new"][split].items():
                if "false_acceptance" in row:
                    old = result["written_answers"]["old"][split][case]
                    print(f"  {case:<16} FA {old['false_acceptance']['k']}/{old['false_acceptance']['n']} "
                          f"FR {old['false_rejection']['k']}/{old['false_rejection']['n']} | "
                          f"FA {row['false_acceptance']['k']}/{row['false_acceptance']['n']} "
                          f"FR {row['false_rejection']['k']}/{row['false_rejection']['n']}")
        for a in result["written_answers"]["answers"]:
            if a["new"] != (a["expect"] == "pass"):
                print(f"    wrong: {a['id']} ({a['split']}, {a['expect']}) {a['reason'][:150]}")
    print("\nsummary (false acceptance, false rejection):")
    for name, row in result["summary"].items():
        print(f"  {name}: " + "; ".join(f"{k} {v['false_acceptance']}, {v['false_rejection']}" for k, v in row.items()))
    write("grounding_check", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
