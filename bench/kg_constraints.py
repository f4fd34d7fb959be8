"""KG questions with a numeric or count constraint ("films X directed after 2005", "studios
with more than 500 employees", "diseases with more than 4 symptoms"), asked through the
typed-KG pipeline (``ask --pipeline kg --no-llm``).

Two graphs:
- a films KG generated here from a schema of its own (people, movies, studios, countries)
  with numeric properties (a movie's year, runtime and budget, a person's birth year, a
  studio's founding year and staff, a country's population) and invented names;
- the demo biomedical KG (data/biomed), for counts of edges (it holds no numeric property).

Every question is written here from a phrasing with slots (a name, a year, a number), filled
from the graph; its gold answer is computed in plain Python from the generated rows (never
through ragkit's planner). A question is right when the plan's final list holds exactly the
gold nodes (for "how many", the count is the gold count and the answer states it).
Phrasings are ``dev`` (read while building the planner's comparisons), ``held_out`` (written
at the same time; one miss was read and fixed) and ``unseen`` (written after, measured once).

    PYTHONPATH=. .venv/bin/python bench/kg_constraints.py --label after
    PYTHONPATH=/tmp/before .venv/bin/python bench/kg_constraints.py --label before

Each run adds its label to ``outputs/bench/kg_constraints.json`` and keeps the others.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import ROOT, write_labelled
from dev_kbs import Names

SEED = 11
UNMAPPED = "I could not map this question to the graph"


# ----------------------------------------------------------------------------- the films KG
def films_kg(rng: random.Random) -> tuple[list[dict], list[tuple[str, str, str]]]:
    names = Names(rng)
    nodes: list[dict] = []
    countries = [{"id": f"country{i}", "name": names.make(1, (2, 3)), "type": "Country",
                  "population": str(rng.choice([1, 2, 5, 8, 12, 30, 45, 60, 80, 120]) * 1_000_000 +
                                    rng.randint(0, 999_999))} for i in range(12)]
    studios = [{"id": f"studio{i}", "name": names.make(1, (2, 3), " Pictures"), "type": "Studio",
                "founded": str(rng.randint(1910, 2015)), "employees": str(rng.choice([40, 120, 300, 800, 2500])
                                                                          + rng.randint(0, 39))}
               for i in range(30)]
    people = [{"id": f"person{i}", "name": names.make(2, (2, 2)), "type": "Person",
               "birth_year": str(rng.randint(1930, 2000))} for i in range(220)]
    movies = [{"id": f"movie{i}", "name": names.make(rng.choice([1, 2]), (2, 3)), "type": "Movie",
               "year": str(rng.randint(1970, 2024)), "runtime": str(rng.randint(80, 190)),
               "budget": str(rng.randint(1, 200) * 1_000_000)} for i in range(320)]
    edges = []
    directors, actors = people[:45], people[30:]
    for m in movies:
        edges.append((rng.choice(directors)["id"], "DIRECTED", m["id"]))
        for a in rng.sample(actors, rng.randint(1, 5)):
            edges.append((a["id"], "ACTED_IN", m["id"]))
        edges.append((m["id"], "PRODUCED_BY", rng.choice(studios)["id"]))
    for s in studios:
        edges.append((s["id"], "BASED_IN", rng.choice(countries)["id"]))
    for p in people:
        edges.append((p["id"], "BORN_IN", rng.choice(countries)["id"]))
    nodes = countries + studios + people + movies
    return nodes, sorted(set(edges))


class Graph:
    """The generated rows, for gold answers in plain Python."""

    def __init__(self, nodes: list[dict], edges: list[tuple[str, str, str]]):
        self.nodes = {n["id"]: n for n in nodes}
        self.out: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.into: dict[tuple[str, str], set[str]] = defaultdict(set)
        for s, r, t in edges:
            self.out[(s, r)].add(t)
            self.into[(t, r)].add(s)

    def of(self, node_type: str) -> list[str]:
        return sorted(i for i, n in self.nodes.items() if n["type"] == node_type)

    def num(self, node: str, prop: str) -> float:
        return float(self.nodes[node][prop])

    def name(self, node: str) -> str:
        return self.nodes[node]["name"]


# Each phrasing: (split, text with slots, slot kinds, gold). Slots: {D} a director, {A} an
# actor, {S} a studio, {C} a country, {M} a movie, {Y}/{Y2} years, {Z} a decade, {N} a small count, {R} a
# runtime, {B} a budget in millions, {E} staff, {P} a population in millions.
def phrasings(g: Graph) -> list[tuple[str, str, object]]:
    def directed(d): return g.out[(d, "DIRECTED")]
    def acted(a): return g.out[(a, "ACTED_IN")]
    def movies(where): return {m for m in g.of("Movie") if where(m)}
    def year(m): return g.num(m, "year")
    return [
        ("dev", "Which movies did {D} direct after {Y}?", lambda s: {m for m in directed(s["D"]) if year(m) > s["Y"]}),
        ("dev", "Which {D} films came out before {Y}?", lambda s: {m for m in directed(s["D"]) if year(m) < s["Y"]}),
        ("dev", "List the movies {A} acted in that were released in {Y}.",
         lambda s: {m for m in acted(s["A"]) if year(m) == s["Y"]}),
        ("dev", "Which films starring {A} are longer than {R} minutes?",
         lambda s: {m for m in acted(s["A"]) if g.num(m, "runtime") > s["R"]}),
        ("dev", "Which movies released between {Y} and {Y2} did {A} appear in?",
         lambda s: {m for m in acted(s["A"]) if s["Y"] <= year(m) <= s["Y2"]}),
        ("dev", "Who directed more than {N} movies?",
         lambda s: {p for p in g.of("Person") if len(directed(p)) > s["N"]}),
        ("dev", "Which actors appeared in at least {N} films?",
         lambda s: {p for p in g.of("Person") if len(acted(p)) >= s["N"]}),
        ("dev", "Which studios produced more than {N} movies?",
         lambda s: {t for t in g.of("Studio") if len(g.into[(t, "PRODUCED_BY")]) > s["N"]}),
        ("dev", "Which movies were made by studios founded before {Y}?",
         lambda s: {m for t in g.of("Studio") if g.num(t, "founded") < s["Y"] for m in g.into[(t, "PRODUCED_BY")]}),
        ("dev", "Which studios with over {E} employees are based in {C}?",
         lambda s: {t for t in g.into[(s["C"], "BASED_IN")] if g.num(t, "employees") > s["E"]}),
        ("dev", "What movies did {A} act in with a budget above {B} million?",
         lambda s: {m for m in acted(s["A"]) if g.num(m, "budget") > s["B"] * 1e6}),
        ("dev", "How many films did {D} direct since {Y}?",
         lambda s: {m for m in directed(s["D"]) if year(m) >= s["Y"]}),
        ("dev", "Which people born after {Y} acted in {M}?",
         lambda s: {p for p in g.into[(s["M"], "ACTED_IN")] if g.num(p, "birth_year") > s["Y"]}),
        ("dev", "Which countries have a population of more than {P} million?",
         lambda s: {c for c in g.of("Country") if g.num(c, "population") > s["P"] * 1e6}),
        ("dev", "Which movies with fewer than {N} actors did {D} direct?",
         lambda s: {m for m in directed(s["D"]) if len(g.into[(m, "ACTED_IN")]) < s["N"]}),
        ("dev", "Which studios in {C} were founded after {Y}?",
         lambda s: {t for t in g.into[(s["C"], "BASED_IN")] if g.num(t, "founded") > s["Y"]}),
        ("held_out", "Since {Y}, which films has {D} directed?",
         lambda s: {m for m in directed(s["D"]) if year(m) >= s["Y"]}),
        ("held_out", "{A} appeared in which movies that run over {R} minutes?",
         lambda s: {m for m in acted(s["A"]) if g.num(m, "runtime") > s["R"]}),
        ("held_out", "Give me the movies by {D} from before {Y}.",
         lambda s: {m for m in directed(s["D"]) if year(m) < s["Y"]}),
        ("held_out", "Which people have acted in fewer than {N} films?",
         lambda s: {p for p in g.of("Person") if len(acted(p)) < s["N"]}),
        ("held_out", "How many movies produced by {S} came out after {Y}?",
         lambda s: {m for m in g.into[(s["S"], "PRODUCED_BY")] if year(m) > s["Y"]}),
        ("held_out", "Which studios employ more than {E} people?",
         lambda s: {t for t in g.of("Studio") if g.num(t, "employees") > s["E"]}),
        ("held_out", "What countries are home to more than {P} million people?",
         lambda s: {c for c in g.of("Country") if g.num(c, "population") > s["P"] * 1e6}),
        ("held_out", "Which of the films {A} starred in were released after {Y}?",
         lambda s: {m for m in acted(s["A"]) if year(m) > s["Y"]}),
        ("held_out", "Name the {S} movies with a runtime under {R} minutes.",
         lambda s: {m for m in g.into[(s["S"], "PRODUCED_BY")] if g.num(m, "runtime") < s["R"]}),
        ("held_out", "Which directors have made at least {N} movies?",
         lambda s: {p for p in g.of("Person") if len(directed(p)) >= s["N"]}),
        ("held_out", "Which movies from {S} had fewer than {N} actors?",
         lambda s: {m for m in g.into[(s["S"], "PRODUCED_BY")] if len(g.into[(m, "ACTED_IN")]) < s["N"]}),
        ("held_out", "Which actors born before {Y} were in {M}?",
         lambda s: {p for p in g.into[(s["M"], "ACTED_IN")] if g.num(p, "birth_year") < s["Y"]}),
        # unseen: written after the planner's comparisons were built, run once, not fixed after
        ("unseen", "Tell me which {D} movies are longer than {R} minutes.",
         lambda s: {m for m in directed(s["D"]) if g.num(m, "runtime") > s["R"]}),
        ("unseen", "Films with {A} that premiered after {Y}?",
         lambda s: {m for m in acted(s["A"]) if year(m) > s["Y"]}),
        ("unseen", "Which studios were set up before {Y}?",
         lambda s: {t for t in g.of("Studio") if g.num(t, "founded") < s["Y"]}),
        ("unseen", "How many movies has {S} produced since {Y}?",
         lambda s: {m for m in g.into[(s["S"], "PRODUCED_BY")] if year(m) >= s["Y"]}),
        ("unseen", "Which movies cost less than {B} million to make and star {A}?",
         lambda s: {m for m in acted(s["A"]) if g.num(m, "budget") < s["B"] * 1e6}),
        ("unseen", "Name the people who acted in more than {N} movies.",
         lambda s: {p for p in g.of("Person") if len(acted(p)) > s["N"]}),
        ("unseen", "Which of the movies produced by {S} have at most {N} actors?",
         lambda s: {m for m in g.into[(s["S"], "PRODUCED_BY")] if len(g.into[(m, "ACTED_IN")]) <= s["N"]}),
        ("unseen", "What films did {D} release during the {Z}s?",
         lambda s: {m for m in directed(s["D"]) if s["Z"] <= year(m) <= s["Z"] + 9}),
        ("unseen", "Which nations have more than {P} million inhabitants?",
         lambda s: {c for c in g.of("Country") if g.num(c, "population") > s["P"] * 1e6}),
        ("unseen", "Which studios based in {C} have no more than {E} staff?",
         lambda s: {t for t in g.into[(s["C"], "BASED_IN")] if g.num(t, "employees") <= s["E"]}),
    ]


def fill(g: Graph, rng: random.Random) -> dict:
    """One value per slot, from the graph: names with enough edges to make a list."""
    busy = lambda ids, rel, k: [i for i in ids if len(g.out[(i, rel)]) >= k]  # noqa: E731
    filmed = lambda ids, k: [i for i in ids if len(g.into[(i, "PRODUCED_BY")]) >= k]  # noqa: E731
    low = rng.randint(1975, 2005)
    # a director who also acts makes "the X films" ambiguous: the directors asked about do not act
    return {"D": rng.choice([p for p in busy(g.of("Person"), "DIRECTED", 5) if not g.out[(p, "ACTED_IN")]]),
            "A": rng.choice(busy(g.of("Person"), "ACTED_IN", 4)),
            "S": rng.choice(filmed(g.of("Studio"), 6)),
            "C": rng.choice([c for c in g.of("Country") if g.into[(c, "BASED_IN")]]),
            "M": rng.choice([m for m in g.of("Movie") if len(g.into[(m, "ACTED_IN")]) >= 3]),
            "Y": low, "Y2": low + rng.randint(5, 15), "Z": low // 10 * 10, "N": rng.randint(2, 8),
            "R": rng.choice([100, 120, 150]), "B": rng.choice([20, 50, 100]), "E": rng.choice([100, 500, 1000]),
            "P": rng.choice([5, 20, 50])}


def text_of(phrasing: str, slots: dict, g: Graph) -> str:
    out = phrasing
    for key, value in slots.items():
        out = out.replace("{" + key + "}", g.name(value) if isinstance(value, str) else str(value))
    return out


# ----------------------------------------------------------------------------- the biomed KG
def biomed_questions() -> list[tuple[str, str, set[str]]]:
    nodes = {r["id"]: r for r in csv.DictReader((ROOT / "data/biomed/nodes.csv").open(encoding="utf-8"))}
    edges = [(r["source"], r["relation"], r["target"])
             for r in csv.DictReader((ROOT / "data/biomed/edges.csv").open(encoding="utf-8"))]
    g = Graph(list(nodes.values()), edges)

    def count(node_type, rel, forward, op, n):
        table = g.out if forward else g.into
        return {i for i in g.of(node_type) if op(len(table[(i, rel)]), n)}

    more, least, fewer = (lambda a, b: a > b), (lambda a, b: a >= b), (lambda a, b: a < b)
    return [
        ("dev", "Which diseases have more than 4 symptoms?", count("Disease", "HAS_SYMPTOM", True, more, 4)),
        ("dev", "Which drugs treat at least 8 diseases?", count("Compound", "TREATS", True, least, 8)),
        ("dev", "Which genes are associated with more than 2 diseases?",
         count("Gene", "ASSOCIATED_WITH", False, more, 2)),
        ("dev", "How many drugs cause more than 3 side effects?",
         count("Compound", "CAUSES_SIDE_EFFECT", True, more, 3)),
        ("held_out", "Name the diseases that at least 3 drugs treat.",
         count("Disease", "TREATS", False, least, 3)),
        ("held_out", "Which organs are affected by more than 5 illnesses?",
         count("Anatomy", "AFFECTS", False, more, 5)),
        ("held_out", "Which medications have fewer than two side effects?",
         count("Compound", "CAUSES_SIDE_EFFECT", True, fewer, 2)),
        ("held_out", "Which conditions present with at least five symptoms?",
         count("Disease", "HAS_SYMPTOM", True, least, 5)),
    ]


# ----------------------------------------------------------------------------- the run
def judge(answer, gold: set[str], counting: bool) -> bool:
    plan = answer.trace.get("plan")
    if not plan:
        return False
    if counting:
        return answer.trace["context_store"].get("final_result_total") == len(gold) and str(len(gold)) in answer.answer
    return set(i["id"] for i in answer.trace["context_store"].get(plan["final"], [])) == gold


def write_csv(folder: Path, nodes: list[dict], edges) -> tuple[Path, Path]:
    keys = ["id", "name", "type"] + sorted({k for n in nodes for k in n} - {"id", "name", "type"})
    with (folder / "nodes.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, keys)
        writer.writeheader()
        writer.writerows(nodes)
    with (folder / "edges.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source", "relation", "target"])
        writer.writerows(edges)
    return folder / "nodes.csv", folder / "edges.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--per-phrasing", type=int, default=4)
    parser.add_argument("--show-wrong", action="store_true")
    args = parser.parse_args()
    import ragkit
    from ragkit.kgqa.flow import KGQA
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore
    from ragkit.pipelines.kg import ask_kg

    rng = random.Random(SEED)
    nodes, edges = films_kg(rng)
    g = Graph(nodes, edges)
    cases = []     # (kb, split, phrasing, question, gold, counting)
    for split, phrasing, gold in phrasings(g):
        for _ in range(args.per_phrasing):
            slots = fill(g, rng)
            cases.append(("films", split, phrasing, text_of(phrasing, slots, g), gold(slots),
                          phrasing.startswith("How many")))
    cases += [("biomed", split, q, q, gold, q.startswith("How many")) for split, q, gold in biomed_questions()]
    right: dict[tuple[str, str], list[bool]] = defaultdict(list)
    wrong, seconds = [], []
    with tempfile.TemporaryDirectory() as tmp:
        films_csv = write_csv(Path(tmp), nodes, edges)
        loaded = {}
        for kb, (n, e) in {"films": films_csv, "biomed": (ROOT / "data/biomed/nodes.csv",
                                                          ROOT / "data/biomed/edges.csv")}.items():
            store = NxTypedStore(Path(tmp) / f"{kb}.json.gz")
            import_kg(n, e, store)
            loaded[kb] = KGQA(store)
        for kb, split, _, question, gold, counting in cases:
            started = time.perf_counter()
            answer = ask_kg(question, loaded[kb], use_llm=False)
            seconds.append(time.perf_counter() - started)
            ok = judge(answer, gold, counting)
            right[(kb, split)].append(ok)
            if not ok:
                wrong.append({"kb": kb, "split": split, "question": question, "gold": len(gold),
                              "answer": answer.answer[:160]})
    result = {"code": str(Path(ragkit.__file__).parent),
              "ms_per_question_median": round(1000 * statistics.median(seconds), 2),
              "by_kb": {f"{kb}/{split}": {"n": len(oks), "exact_match": round(sum(oks) / len(oks), 3)}
                        for (kb, split), oks in sorted(right.items())}}
    for split in ("dev", "held_out", "unseen"):
        oks = [ok for (_, s), v in right.items() if s == split for ok in v]
        result[split] = {"n": len(oks), "exact_match": round(sum(oks) / len(oks), 3)}
    result["wrong"] = wrong[:40]
    write_labelled("kg_constraints", args.label, result, n=len(cases), seed=SEED, per_phrasing=args.per_phrasing,
                   command=f"PYTHONPATH=. .venv/bin/python bench/kg_constraints.py --label {args.label}")
    print(args.label, {k: v["exact_match"] for k, v in result["by_kb"].items()},
          *(f"{s} {result[s]['exact_match']}" for s in ("dev", "held_out", "unseen")))
    if args.show_wrong:
        for w in wrong:
            print(f"  [{w['kb']}/{w['split']}] {w['question']} (gold {w['gold']})\n      -> {w['answer']}")


if __name__ == "__main__":
    main()
