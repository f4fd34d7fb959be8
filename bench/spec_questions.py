"""Spec questions in the phrasings engineers use, answered by ``eval mcq`` and ``ask --pipeline spec``.

The questions are composed at run time from the term dictionary of a store built from the
shared TR 21.905 (.docx) and TS 23.501 (.pdf), with phrasings written for this benchmark
(English and Vietnamese; nothing is copied from a question benchmark, and nothing from the
specs is committed). Three intents, the ones the spec pipeline answers from its dictionary:

- expansion: "What does SEPP stand for?", "SEPP viết tắt của gì?" ... (gold: an expansion);
- definition: "What does the term Mobility refer to?", "Define operating band." ...
  (gold: the term's definition);
- reverse: "Which term describes the ability for the user to communicate whilst moving
  ...?" (gold: the term).

Each question has four options: the gold one and three distractors drawn from other entries
that share words with it (so the wrong options look plausible). A fixed random seed picks the
entries, phrasings and distractors; a third of the questions (every third, by id) is held out:
measured, never looked at while building the question analysis.

Beside them, ``data/spec_paraphrases.json``: 24 questions written by hand in looser
phrasings ("What is it called when ...", "NSSAI - what's that short for?"), with options of
our own; they were used while building the analysis (split "paraphrased").

Measured per intent and split:
- ``eval mcq`` accuracy (the deterministic scorer);
- ``ask --pipeline spec --no-llm``: the answer states the gold expansion, the gold definition
  (its first eight words) or names the gold term.

    .venv/bin/python bench/spec_questions.py [--label after] [--n 180]
        -> outputs/bench/spec_questions.json (the label's figures replace that label's)

Run it with ``PYTHONPATH=<an earlier checkout>`` and ``--label before`` for the figures of
earlier code (the store is built by whichever ragkit runs the script).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from _common import ROOT, SHARED, write_labelled

SPECS = [SHARED / "3gpp" / "21905-h20.docx", SHARED / "3gpp" / "23501-g40.pdf"]
CACHE = ROOT / "outputs" / "bench-cache"

EXPANSION = [
    "What does {a} stand for?",
    "What is the full form of {a}?",
    "{a} is short for what?",
    "Expand the abbreviation {a}.",
    "In 3GPP terminology, what does the acronym {a} mean?",
    "What is {a} an abbreviation of?",
    "{a} means?",
    "What's the expansion of '{a}'?",
    "{a} viết tắt của gì?",
    "{a} là viết tắt của cụm từ nào?",
]
DEFINITION = [
    "What is the definition of {t}?",
    "What does the term {t} refer to?",
    "Define {lt}.",
    "What is meant by {lt}?",
    "How do the 3GPP specifications define \"{t}\"?",
    "{t} means?",
    "Explain the term {t}.",
    "What is {article} {lt}?",
    "{t} là gì?",
    "Định nghĩa của {lt} là gì?",
]
REVERSE = [
    "Which term describes {d}?",
    "What is the term for {d}?",
    "What do the 3GPP specifications call {d}?",
    "Which 3GPP term means {d}?",
    "Thuật ngữ nào chỉ {d}?",
]
# The kinds the lexicon questions of other benchmarks take, in phrasings written here: the
# abbreviation of an expansion, "which of the following" over expansions and definitions,
# options that differ from the gold one by a word, an abbreviation with several expansions,
# and a context before the question.
ABBREVIATION = [
    "What is the abbreviation for {f}?",
    "Which acronym stands for {f}?",
    "{f} is abbreviated as what?",
    "How is {f} abbreviated in 3GPP specifications?",
    "Viết tắt của {f} là gì?",
]
EXPANSION_CHOICE = [
    "Which of the following is the expansion of {a}?",
    "{a} stands for which of the following?",
    "Which of these does the abbreviation {a} stand for?",
    "Select the correct full form of {a}.",
]
DEFINITION_CHOICE = [
    "Which of the following best describes {t}?",
    "Which of the following statements defines {t}?",
    "{t} is best described by which of the following?",
    "Choose the correct definition of {lt}.",
]
CONTEXT = ["In 5G system architecture, ", "According to the 3GPP vocabulary, ", "In the context of mobile networks, ",
           "For a 3GPP engineer, "]
# Written after the kinds above were measured and fixed; measured once (split "kinds unseen").
UNSEEN = [
    ("abbreviation", "Give the acronym used for {f}."),
    ("abbreviation", "Short form of {f}?"),
    ("expansion", "What is the meaning of the abbreviation {a}?"),
    ("expansion", "Which option correctly expands {a}?"),
    ("expansion", "In LTE and NR specifications, what is {a} short for?"),
    ("expansion", "{a}: which expansion is correct?"),
    ("definition", "Pick the option that defines {t}."),
    ("definition", "What best characterizes {t}?"),
]
WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) > 2}


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])", " ".join(text.split()))[0].rstrip(". ")


def build_store() -> str:
    """The two specs built by the ragkit that runs this script (cached per version of its
    spec-reading code)."""
    import hashlib

    import ragkit

    code = Path(ragkit.__file__).parent / "specs"
    digest = hashlib.sha1(b"".join(p.read_bytes() for p in sorted(code.glob("*.py")))).hexdigest()[:10]
    CACHE.mkdir(parents=True, exist_ok=True)
    store = CACHE / f"tr21905_ts23501-{digest}.json.gz"
    if not store.exists():
        subprocess.run([sys.executable, "-m", "ragkit.cli", "kg", "build", "--specs", *map(str, SPECS),
                        "--store", str(store)], check=True, capture_output=True)
    return str(store)


def dictionary(store_path: str) -> tuple[list, list]:
    from ragkit.specs import open_store

    with open_store(store_path) as store:
        terms = store.terms_containing("", limit=10 ** 6)
    abbreviations = [t for t in terms if t.term_type == "abbreviation" and t.full_name
                     and 2 <= len(t.abbreviation) <= 8]
    definitions = [t for t in terms if t.term_type == "definition" and t.full_name
                   and 12 <= len(first_sentence(t.definition).split()) <= 40
                   and len(t.full_name.split()) <= 5]
    return abbreviations, definitions


def distractors(rng: random.Random, gold: str, pool: list[str], n: int = 3) -> list[str]:
    """``n`` other texts, preferring those that share words with the gold one."""
    gold_words = words(gold)
    others = [p for p in pool if p.lower() != gold.lower()]
    sharing = [p for p in others if words(p) & gold_words]
    rng.shuffle(sharing)
    picked = sharing[:n]
    rest = [p for p in others if p not in picked]
    picked += rng.sample(rest, n - len(picked))
    return picked


def compose(store_path: str, n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    abbreviations, definitions = dictionary(store_path)
    by_abbreviation = defaultdict(list)
    for t in abbreviations:
        by_abbreviation[t.abbreviation].append(t.full_name)
    single = sorted(a for a, names in by_abbreviation.items() if len(names) == 1)
    names = sorted({t.full_name for t in abbreviations})
    defined = sorted({t.full_name.lower(): t for t in definitions}.values(), key=lambda t: t.term_id)
    gloss = [first_sentence(t.definition) for t in defined]
    items = []
    per = n // 3
    for a in rng.sample(single, per):
        gold = by_abbreviation[a][0]
        items.append(("expansion", rng.choice(EXPANSION).format(a=a), gold, distractors(rng, gold, names), a))
    for t in rng.sample(defined, per):
        phrase = rng.choice(DEFINITION)
        lt = t.full_name if t.full_name.isupper() or t.full_name.split()[0].isupper() else t.full_name.lower()
        article = "an" if lt[0].lower() in "aeiou" else "a"
        gold = first_sentence(t.definition)
        items.append(("definition", phrase.format(t=t.full_name, lt=lt, article=article), gold,
                      distractors(rng, gold, gloss), t.full_name))
    # Reverse questions: descriptions that do not name their own term.
    unnamed = [t for t in defined if not words(t.full_name) <= words(t.definition)]
    for t in rng.sample(unnamed, per):
        d = first_sentence(t.definition)
        d = d[0].lower() + d[1:] if not d[:2].isupper() else d
        d = re.sub(r"^(an?|the)\s+", "", d, flags=re.IGNORECASE) if rng.random() < 0.3 else d
        question = rng.choice(REVERSE).format(d=d)
        items.append(("reverse", question, t.full_name,
                      distractors(rng, t.full_name, [x.full_name for x in defined]), t.full_name))
    questions = []
    for i, (intent, question, gold, wrong, subject) in enumerate(items):
        options = [gold, *wrong]
        rng.shuffle(options)
        k = options.index(gold) + 1
        questions.append({"id": f"q{i:03d}", "intent": intent, "split": "held-out" if i % 3 == 2 else "dev",
                          "question": question, **{f"option {j}": o for j, o in enumerate(options, 1)},
                          "answer": f"option {k}: {gold}", "gold": gold, "subject": subject})
    return questions


def near_misses(rng: random.Random, gold: str, pool: list[str], n: int = 3) -> list[str]:
    """``n`` options that differ from ``gold`` by one word, taken from other entries' words
    ("Security Edge Protection Proxy" → "Security Edge Protocol Proxy"); others if too few."""
    vocabulary = sorted({w for p in pool for w in p.split() if w.isalpha() and len(w) > 3})
    parts = gold.split()
    out: list[str] = []
    for _ in range(50):
        if len(out) == n or not parts:
            break
        i = rng.randrange(len(parts))
        swapped = " ".join(parts[:i] + [rng.choice(vocabulary)] + parts[i + 1:])
        if swapped.lower() != gold.lower() and swapped not in out:
            out.append(swapped)
    return out + distractors(rng, gold, [p for p in pool if p not in out], n - len(out)) if len(out) < n else out


def compose_kinds(store_path: str, per_kind: int = 24, seed: int = 13) -> list[dict]:
    """Questions of the kinds in ``ABBREVIATION`` ... ``CONTEXT``, ``per_kind`` each."""
    rng = random.Random(seed)
    abbreviations, definitions = dictionary(store_path)
    by_abbreviation = defaultdict(list)
    for t in abbreviations:
        by_abbreviation[t.abbreviation].append(t.full_name)
    by_name = defaultdict(set)
    for t in abbreviations:
        by_name[t.full_name.lower()].add(t.abbreviation)
    single = sorted(a for a, names in by_abbreviation.items() if len(names) == 1
                    and len(by_name[names[0].lower()]) == 1)
    several = sorted(a for a, names in by_abbreviation.items() if len(set(n.lower() for n in names)) > 1)
    names = sorted({t.full_name for t in abbreviations})
    acronyms = sorted(by_abbreviation)
    defined = sorted({t.full_name.lower(): t for t in definitions}.values(), key=lambda t: t.term_id)
    gloss = [first_sentence(t.definition) for t in defined]
    items = []
    for a in rng.sample(single, per_kind):
        f = by_abbreviation[a][0]
        items.append(("abbreviation", rng.choice(ABBREVIATION).format(f=f), a,
                      distractors(rng, a, [x for x in acronyms if x[0] == a[0]] or acronyms), a))
    for a in rng.sample(single, per_kind):
        gold = by_abbreviation[a][0]
        items.append(("expansion, which of the following", rng.choice(EXPANSION_CHOICE).format(a=a), gold,
                      distractors(rng, gold, names), a))
    for a in rng.sample(single, per_kind):
        gold = by_abbreviation[a][0]
        items.append(("expansion, options a word apart", rng.choice(EXPANSION).format(a=a), gold,
                      near_misses(rng, gold, names), a))
    for a in rng.sample(several, min(per_kind, len(several))):
        gold = rng.choice(sorted(set(by_abbreviation[a])))
        others = [x for x in names if x.lower() not in {n.lower() for n in by_abbreviation[a]}]
        items.append(("expansion, several in the store", rng.choice(EXPANSION).format(a=a), gold,
                      distractors(rng, gold, others), a))
    for a in rng.sample(single, per_kind):
        gold = by_abbreviation[a][0]
        question = rng.choice(CONTEXT) + rng.choice(EXPANSION[:7]).format(a=a)
        items.append(("expansion, with a context", question[0].upper() + question[1:], gold,
                      distractors(rng, gold, names), a))
    for t in rng.sample(defined, per_kind):
        lt = t.full_name if t.full_name.isupper() or t.full_name.split()[0].isupper() else t.full_name.lower()
        gold = first_sentence(t.definition)
        items.append(("definition, which of the following",
                      rng.choice(DEFINITION_CHOICE).format(t=t.full_name, lt=lt), gold,
                      distractors(rng, gold, gloss), t.full_name))
    unseen = len(items)
    for kind, phrase in UNSEEN:
        for _ in range(3):
            if kind == "definition":
                t = rng.choice(defined)
                gold = first_sentence(t.definition)
                items.append((f"{kind}, unseen", phrase.format(t=t.full_name), gold, distractors(rng, gold, gloss),
                              t.full_name))
                continue
            a = rng.choice(single)
            f = by_abbreviation[a][0]
            gold = a if kind == "abbreviation" else f
            pool = ([x for x in acronyms if x[0] == a[0]] or acronyms) if kind == "abbreviation" else names
            items.append((f"{kind}, unseen", phrase.format(a=a, f=f), gold, distractors(rng, gold, pool), a))
    questions = []
    for i, (intent, question, gold, wrong, subject) in enumerate(items):
        options = [gold, *wrong]
        rng.shuffle(options)
        k = options.index(gold) + 1
        split = "unseen" if i >= unseen else "held-out" if i % 3 == 2 else "dev"
        questions.append({"id": f"k{i:03d}", "intent": intent, "split": split,
                          "kind": True, "question": question, **{f"option {j}": o for j, o in enumerate(options, 1)},
                          "answer": f"option {k}: {gold}", "gold": gold, "subject": subject,
                          "accepted": by_abbreviation[subject] if intent == "expansion, several in the store"
                          else [gold]})
    return questions


def paraphrased() -> list[dict]:
    items = json.loads((ROOT / "data" / "spec_paraphrases.json").read_text(encoding="utf-8"))
    out = []
    for i, item in enumerate(items):
        gold = item["answer"].split(": ", 1)[1]
        out.append({**item, "id": f"p{i:03d}", "split": "paraphrased", "gold": gold, "subject": gold})
    return out


def stated(answer: str, intent: str, gold: str) -> bool | None:
    """Whether the written answer states the gold expansion, definition or term (None for
    a hand-written definition option, which paraphrases rather than quotes)."""
    text = " ".join(answer.lower().split())
    if intent.startswith("definition"):
        return " ".join(gold.lower().split()[:8]) in text
    if intent.startswith("abbreviation"):
        return re.search(rf"(?<![\w-]){re.escape(gold.lower())}(?![\w-])", text) is not None
    return gold.lower() in text


def measure(store_path: str, questions: list[dict], progress: bool) -> dict:
    from ragkit.eval.mcq import evaluate_mcq
    from ragkit.pipelines.spec import ask_spec
    from ragkit.specs import open_store

    path = CACHE / "spec_questions.json"
    path.write_text(json.dumps(questions, ensure_ascii=False, indent=1))
    groups = defaultdict(lambda: {"n": 0, "mcq": 0, "ask": 0, "ask_n": 0})
    failures = []
    with open_store(store_path) as store:
        started = time.perf_counter()
        mcq = evaluate_mcq(path, store, progress=progress)
        mcq_s = time.perf_counter() - started
        started = time.perf_counter()
        for q, detail in zip(questions, mcq["details"]):
            answer = ask_spec(q["question"], store, use_llm=False).answer
            ok_ask = any(stated(answer, q["intent"], g) for g in q.get("accepted", [q["gold"]]))
            if q["split"] == "paraphrased" and q["intent"] == "definition":
                ok_ask = None
            ok_mcq = detail["choice"] == detail["answer"]
            keys = (("paraphrased",) if q["split"] == "paraphrased" else
                    (f"kind: {q['intent']}", f"kinds {q['split']}", "kinds all") if q.get("kind") else
                    (q["intent"], q["split"], "all"))
            for key in keys:
                groups[key]["n"] += 1
                groups[key]["mcq"] += ok_mcq
                groups[key]["ask"] += bool(ok_ask)
                groups[key]["ask_n"] += ok_ask is not None
            if q["split"] != "held-out" and not (ok_mcq and ok_ask is not False):
                failures.append({"intent": q["intent"], "question": q["question"], "gold": q["gold"], "mcq": ok_mcq,
                                 "ask": ok_ask,
                                 "answer": answer[:200]})
        ask_s = time.perf_counter() - started
    table = {k: {"n": v["n"], "mcq_accuracy": round(v["mcq"] / v["n"], 4),
                 "ask_accuracy": round(v["ask"] / v["ask_n"], 4) if v["ask_n"] else None}
             for k, v in sorted(groups.items())}
    return {"by_group": table, "mcq_ms_per_question": round(1000 * mcq_s / len(questions), 1),
            "ask_ms_per_question": round(1000 * ask_s / len(questions), 1), "dev_failures": failures[:60]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--n", type=int, default=180)
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    import ragkit

    store = build_store()
    questions = compose(store, args.n) + paraphrased() + compose_kinds(store)
    result = measure(store, questions, args.progress)
    result["code"] = str(Path(ragkit.__file__).parent)
    kinds = sum(1 for q in questions if q.get("kind"))
    write_labelled("spec_questions", args.label, result,
                   questions={"composed": args.n, "paraphrased": len(questions) - args.n - kinds, "kinds": kinds},
                   specs=[p.name for p in SPECS],
                   command=f".venv/bin/python bench/spec_questions.py --label {args.label}")
    print(json.dumps(result["by_group"], indent=1))


if __name__ == "__main__":
    main()
