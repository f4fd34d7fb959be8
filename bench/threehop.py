"""One-, two- and three-hop graph questions, composed at run time from PathQuestion's KB and
from a larger generated family KB, and the graph pipeline's Hits@1 and latency on them.

Questions are made by walking relation paths in the KB: an anchor, a relation sequence of
length 1, 2 or 3 along out-edges, and as gold every node that sequence reaches from the
anchor. Each walk is asked in a few phrasings written here (nothing is taken from the
benchmark's question file). Walks are split once, by a fixed seed, into a development part
and a held-out part; the held-out part is also asked in sentence shapes the development part
never uses, so the held-out figure says how the walk does on wording it was not built on.
With ``--held-out``, a "fresh" split asks other walks in wordings written later still (other
nouns for the person relations, other sentence shapes), never used to choose anything.

Two KBs:

- ``pq``: PathQuestion's 2H KB (1,211 triples); its PQ-2H questions are asked too;
- ``family``: a generated KB of several thousand triples with PathQuestion's relation names
  and attribute values (people in four generations, married couples with children), where
  three-hop walks are many and each node has more relations to choose from.

    PYTHONPATH=. .venv/bin/python bench/threehop.py --label after
    PYTHONPATH=/tmp/before .venv/bin/python bench/threehop.py --label before

(``/tmp/before`` holds ``git archive <commit> ragkit`` of the code to compare with). Each run
adds its label to ``outputs/bench/threehop.json`` and keeps the other labels there.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import statistics
import time
from collections import defaultdict
from pathlib import Path

from _common import OUT, ROOT, SHARED, write
from ragkit.multihop.graph import GraphRAG, display
from ragkit.runtime.profiler import Profiler

SEED = 2024
HELD_OUT = 0.3                      # share of walks kept for the final measurement
PEOPLE_RELATIONS = ("children", "parents", "spouse")

# What each relation is called when it leads to a person: several wordings per relation.
PERSON_NOUNS = {
    "children": ["child", "son or daughter", "offspring", "kid"],
    "parents": ["parent", "mother or father", "father or mother"],
    "spouse": ["spouse", "husband or wife", "wife or husband", "marriage partner"],
}
# Questions about a person phrase P, per final relation (development wordings).
ASK = {
    "gender": ["What gender is {P}?", "Is {P} male or female?", "What is the sex of {P}?"],
    "nationality": ["What is the nationality of {P}?", "Which country is {P} a citizen of?",
                    "What citizenship does {P} hold?"],
    "profession": ["What was the occupation of {P}?", "What did {P} do for a living?",
                   "What is the profession of {P}?"],
    "cause_of_death": ["What did {P} die of?", "What was the cause of death of {P}?"],
    "religion": ["Which religion did {P} practise?", "What faith did {P} follow?"],
    "place_of_death": ["Where did {P} die?", "In which place did {P} pass away?"],
    "place_of_birth": ["Where was {P} born?", "What is the birthplace of {P}?"],
    "institution": ["Which institution did {P} attend?", "At which school did {P} study?"],
    "location": ["Where did {P} live?", "What place is {P} associated with?"],
    "ethnicity": ["What is the ethnicity of {P}?", "Which ethnic group does {P} belong to?"],
    "children": ["Who is a child of {P}?", "Name a son or daughter of {P}."],
    "parents": ["Who is a parent of {P}?", "Who was the mother or father of {P}?"],
    "spouse": ["Who is the spouse of {P}?", "Who was {P} married to?"],
}
# Held-out wordings: sentence shapes the development questions never use.
ASK_HELD_OUT = {
    "gender": ["Tell me the gender of {P}."],
    "nationality": ["{P} is a national of which country?"],
    "profession": ["What kind of work did {P} do?"],
    "cause_of_death": ["Tell me what caused the death of {P}."],
    "religion": ["What was the religious belief of {P}?"],
    "place_of_death": ["Tell me where {P} died."],
    "place_of_birth": ["Tell me the place where {P} was born."],
    "institution": ["Tell me which institution educated {P}."],
    "location": ["Tell me where {P} lived."],
    "ethnicity": ["Tell me the ethnic background of {P}."],
    "children": ["Tell me the name of a child of {P}."],
    "parents": ["Tell me who brought {P} into the world."],
    "spouse": ["Tell me whom {P} wed."],
}


# Wordings written after the walk's grammar moved to ``ragkit.text.chains`` and the reverse
# hops were limited, asked only in the "fresh" split (its own walks and random stream): other
# nouns for the person relations and other sentence shapes. Nothing here was used to choose
# the walk's rules or parameters.
PERSON_NOUNS_FRESH = {
    "children": ["son", "daughter", "youngster", "progeny"],
    "parents": ["mom or dad", "father", "mother", "begetter"],
    "spouse": ["partner in marriage", "consort", "husband", "wife"],
}
ASK_FRESH = {
    "gender": ["Was {P} a man or a woman?", "{P}: which sex?"],
    "nationality": ["{P} held the passport of which state?", "Which nation claimed {P} as a citizen?"],
    "profession": ["What job did {P} hold?", "How did {P} earn money?"],
    "cause_of_death": ["What killed {P}?", "How did {P} meet their end?"],
    "religion": ["To which creed did {P} adhere?", "What religious tradition was {P} part of?"],
    "place_of_death": ["Where did {P} breathe their last?", "Name the place {P} died in."],
    "place_of_birth": ["In what town did {P} come into the world?", "Where does {P} originally come from?"],
    "institution": ["Where was {P} educated?", "Which college or university did {P} go to?"],
    "location": ["In what place did {P} reside?", "Where was {P} based?"],
    "ethnicity": ["What ethnic origin did {P} have?", "{P} was of which ethnic stock?"],
    "children": ["Who did {P} have as a child?", "Can you name any offspring of {P}?"],
    "parents": ["Who brought up {P} as a parent?", "Name either parent of {P}."],
    "spouse": ["Whom did {P} marry?", "Who shared a marriage with {P}?"],
}


def fresh_person_phrase(anchor: str, chain: tuple[str, ...], rng: random.Random) -> str:
    """The person a chain of person relations leads to, in the fresh wordings: "the husband of
    the daughter of Ada", "Ada's mother's consort", or "the consort that Ada's mother had"."""
    nouns = [rng.choice(PERSON_NOUNS_FRESH[r]) for r in chain]
    if not nouns:
        return anchor
    shape = rng.choice(["possessive", "of", "had"] if len(nouns) > 1 else ["possessive", "of"])
    if shape == "possessive":
        return f"{anchor}'s " + "'s ".join(nouns)
    if shape == "of":
        return " of ".join(f"the {n}" for n in reversed(nouns)) + f" of {anchor}"
    return f"the {nouns[-1]} that " + (f"{anchor}'s " + "'s ".join(nouns[:-1])) + " had"


def fresh_questions(triples: list[tuple[str, str, str]], hops: int, limit: int, seed: int = SEED) -> list[dict]:
    """One fresh-worded question for each of up to ``limit`` walks (drawn from their own stream)."""
    rng = random.Random(f"{seed}-{hops}-fresh")
    chosen = walks(triples, hops)
    rng.shuffle(chosen)
    out = []
    for anchor, chain, gold in chosen[:limit]:
        frame = rng.choice(ASK_FRESH[chain[-1]])
        text = frame.replace("{P}", fresh_person_phrase(display(anchor), chain[:-1], rng))
        text = text if text.startswith(display(anchor)) else text[0].upper() + text[1:]
        out.append({"question": text, "answers": gold, "hops": hops, "relations": list(chain), "split": "fresh"})
    return out


def person_phrase(anchor: str, chain: tuple[str, ...], rng: random.Random, held_out: bool) -> str:
    """The person a chain of person relations leads to, in words: "Ada's son's wife", "the
    wife of the son of Ada", or mixed; held-out phrases also say "the person whom ... married"."""
    nouns = [rng.choice(PERSON_NOUNS[r]) for r in chain]
    if not nouns:
        return anchor
    shapes = ["possessive", "of", "mixed"] + (["relative"] if held_out else [])
    shape = rng.choice(shapes if len(nouns) > 1 else shapes[:2])
    if shape == "possessive":
        return f"{anchor}'s " + "'s ".join(nouns)
    if shape == "of":
        return " of ".join(f"the {n}" for n in reversed(nouns)) + f" of {anchor}"
    if shape == "mixed":     # "the wife of Ada's son"
        return " of ".join(f"the {n}" for n in reversed(nouns[1:])) + f" of {anchor}'s {nouns[0]}"
    inner = person_phrase(anchor, chain[:-1], rng, held_out=False)
    return f"the person who is the {nouns[-1]} of {inner}"


def phrase(anchor: str, chain: tuple[str, ...], rng: random.Random, held_out: bool) -> str:
    """One question asking for the end of ``chain`` from ``anchor``."""
    frames = ASK_HELD_OUT if held_out and rng.random() < 0.5 else ASK
    frame = rng.choice(frames[chain[-1]])
    text = frame.replace("{P}", person_phrase(display(anchor), chain[:-1], rng, held_out))
    return text if text.startswith(display(anchor)) else text[0].upper() + text[1:]


def out_edges(triples: list[tuple[str, str, str]]) -> dict[str, dict[str, list[str]]]:
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for s, r, o in triples:
        if o not in graph[s][r]:
            graph[s][r].append(o)
    return graph


def walks(triples: list[tuple[str, str, str]], hops: int) -> list[tuple[str, tuple[str, ...], list[str]]]:
    """Every (anchor, relation sequence, gold ends) of ``hops`` out-edges whose inner steps are
    person relations. Sequences that come straight back (a spouse's spouse, a child's parent)
    are left out: nobody asks them."""
    graph = out_edges(triples)
    found: dict[tuple[str, tuple[str, ...]], set[str]] = {}

    def extend(anchor: str, node: str, chain: tuple[str, ...]) -> None:
        if len(chain) == hops:
            found.setdefault((anchor, chain), set()).add(node)
            return
        for rel, ends in list(graph.get(node, {}).items()):
            if len(chain) < hops - 1 and rel not in PEOPLE_RELATIONS:
                continue
            if chain and chain[-1] == rel == "spouse":
                continue
            for end in ends:
                extend(anchor, end, chain + (rel,))

    for anchor in sorted(graph):
        extend(anchor, anchor, ())
    # a walk that comes back to its anchor (a child's parent) asks nothing
    return [(a, c, sorted(g)) for (a, c), g in sorted(found.items()) if a not in g]


def questions(triples: list[tuple[str, str, str]], hops: int, per_walk: int, limit: int,
              seed: int = SEED) -> list[dict]:
    """``per_walk`` phrasings of up to ``limit`` walks (sampled), each marked dev or held-out."""
    rng = random.Random(seed + hops)
    chosen = walks(triples, hops)
    rng.shuffle(chosen)
    chosen = chosen[:limit]
    out = []
    for i, (anchor, chain, gold) in enumerate(chosen):
        held_out = i < round(HELD_OUT * len(chosen))
        texts: list[str] = []
        for _ in range(per_walk * 8):
            text = phrase(anchor, chain, rng, held_out)
            if text not in texts:
                texts.append(text)
            if len(texts) == per_walk:
                break
        out.extend({"question": t, "answers": gold, "hops": hops, "relations": list(chain),
                    "split": "held_out" if held_out else "dev"} for t in texts)
    return out


def read_kb(path: Path) -> list[tuple[str, str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


SYLLABLES = "al bren cor dav el fen gar hol is jor kal lum mer nor os pel quen ros sal tor ul ven wil yor".split()


def family_kb(values: dict[str, list[str]], families: int = 60, seed: int = SEED) -> list[tuple[str, str, str]]:
    """A generated KB: ``families`` founding couples, three generations of descendants (each
    married child brings a spouse from outside), everyone with a gender and, by chance, the
    attributes PathQuestion's KB has (values drawn from its own)."""
    rng = random.Random(seed)
    used: set[str] = set()

    def name() -> str:
        while True:
            first = "".join(rng.choice(SYLLABLES) for _ in range(2))
            last = "".join(rng.choice(SYLLABLES) for _ in range(3))
            n = f"{first}_{last}"
            if n not in used:
                used.add(n)
                return n

    rows: list[tuple[str, str, str]] = []

    def person(gender: str) -> str:
        p = name()
        rows.append((p, "gender", gender))
        for rel, chance in (("nationality", 0.8), ("profession", 0.6), ("place_of_birth", 0.4),
                            ("religion", 0.3), ("place_of_death", 0.3), ("cause_of_death", 0.2),
                            ("institution", 0.2), ("ethnicity", 0.15), ("location", 0.15)):
            if rng.random() < chance:
                rows.append((p, rel, rng.choice(values[rel])))
        return p

    def marry(a: str, b: str) -> None:
        rows.extend([(a, "spouse", b), (b, "spouse", a)])

    for _ in range(families):
        couple = [(person("male"), person("female"))]
        for _generation in range(3):
            following = []
            for father, mother in couple:
                marry(father, mother)
                for _child in range(rng.randint(1, 3)):
                    gender = rng.choice(["male", "female"])
                    child = person(gender)
                    for parent in (father, mother):
                        rows.extend([(parent, "children", child), (child, "parents", parent)])
                    if rng.random() < 0.6:
                        other = person("female" if gender == "male" else "male")
                        following.append((child, other) if gender == "male" else (other, child))
            couple = following
    return list(dict.fromkeys(rows))


def write_edges(triples: list[tuple[str, str, str]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source", "relation", "target"])
        writer.writerows(triples)
    return path


def pq2h_questions(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            answers = sorted({a for a in parts[1].replace("(", "/").replace(")", "/").split("/") if a})
            out.append({"question": parts[0], "answers": answers, "hops": 2, "split": "pq2h"})
    return out


def measure(rag: GraphRAG, items: list[dict]) -> dict:
    """Hits@1 and per-query latency (median ms, whole query and each profiler stage)."""
    for item in items[:5]:      # load the embedder and fill the relation memo before timing
        rag.query(item["question"])
    hits, totals, stages, misses = 0, [], defaultdict(list), []
    for item in items:
        profiler = Profiler()
        started = time.perf_counter()
        result = rag.query(item["question"], profiler=profiler)
        totals.append((time.perf_counter() - started) * 1000)
        for stage, ms in profiler.as_dict().items():
            if stage != "total":
                stages[stage].append(ms)
        hit = result["answer"] is not None and result["answer"] in item["answers"]
        hits += hit
        if not hit and len(misses) < 5:
            misses.append({"question": item["question"], "gold": item["answers"][:3],
                           "answer": result["answer"],
                           "relations": result["paths"][0]["relations"] if result["paths"] else None})
    return {"n": len(items), "hits@1": round(hits / len(items), 4),
            "p50_ms": round(statistics.median(totals), 2),
            "stage_p50_ms": {k: round(statistics.median(v), 2) for k, v in stages.items()},
            "misses": misses}


def groups(items: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        out[f"{item['hops']}-hop {item['split']}"].append(item)
    return dict(sorted(out.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", required=True, help="name of the code measured (before, after)")
    parser.add_argument("--held-out", action="store_true", help="also measure the held-out questions")
    parser.add_argument("--write-questions", action="store_true",
                        help="write the composed questions to outputs/threehop/ (not committed)")
    args = parser.parse_args()
    work = ROOT / "outputs" / "threehop"
    pq_triples = read_kb(SHARED / "pathquestion" / "2H-kb.txt")
    values: dict[str, list[str]] = defaultdict(list)
    for _, rel, obj in pq_triples:
        if rel not in PEOPLE_RELATIONS and obj not in values[rel]:
            values[rel].append(obj)
    kbs = {"pq": pq_triples, "family": family_kb(values)}
    result: dict = {}
    for kb, triples in kbs.items():
        items = [q for hops, per_walk, limit in ((1, 1, 150), (2, 2, 150), (3, 2, 200))
                 for q in questions(triples, hops, per_walk, limit)]
        if args.held_out:
            items += [q for hops, limit in ((1, 60), (2, 60), (3, 60)) for q in fresh_questions(triples, hops, limit)]
        if kb == "pq":
            items += pq2h_questions(SHARED / "pathquestion" / "PQ-2H.txt")
        if args.write_questions:
            (work / kb).mkdir(parents=True, exist_ok=True)
            (work / kb / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in items))
        if not args.held_out:
            items = [q for q in items if q["split"] != "held_out"]
        shutil.rmtree(work / kb / "graph", ignore_errors=True)
        build = GraphRAG.build(write_edges(triples, work / kb / "edges.csv"), work / kb / "graph", progress=False)
        rag = GraphRAG.load(work / kb / "graph")
        result[kb] = {"triples": build.edges, "nodes": build.nodes,
                      **{name: measure(rag, part) for name, part in groups(items).items()}}
        print(kb, {k: (v["n"], v["hits@1"], v["p50_ms"]) for k, v in result[kb].items() if isinstance(v, dict)})
    path = OUT / "threehop.json"
    previous = json.loads(path.read_text()) if path.is_file() else {}
    runs = previous.get("runs", {})
    runs[args.label] = result
    write("threehop", {"runs": runs,
                       "command": "PYTHONPATH=. .venv/bin/python bench/threehop.py --label after --held-out; "
                                  "git archive <before> ragkit | tar -x -C /tmp/before; "
                                  "PYTHONPATH=/tmp/before .venv/bin/python bench/threehop.py --label before --held-out"})


if __name__ == "__main__":
    main()
