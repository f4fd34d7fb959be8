"""Graph questions of two and three hops on knowledge bases that look like other people's:
three KBs generated here from schemas of their own (films, companies, geography), with
relation vocabularies unlike PathQuestion's, sizes from a few thousand to about a hundred
thousand triples, and hubs (a genre, a country, a profession that thousands of nodes point
to). Questions walk relation paths from an anchor, forwards or backwards along an edge
("the films X acted in" reads ``starring`` backwards), and are phrased from noun phrases
written here for each relation and direction, nested one inside the other; the gold answer
is every node the walk reaches. Nothing is taken from a benchmark.

Reported per KB and hop count: Hits@1 of the graph pipeline (``ragkit.multihop.graph``),
query latency p50 and p95 (ms), and a few misses.

    PYTHONPATH=. .venv/bin/python bench/dev_kbs.py --label after
    PYTHONPATH=/tmp/before .venv/bin/python bench/dev_kbs.py --label before

Each run adds its label to ``outputs/bench/dev_kbs.json`` and keeps the others.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import time
from collections import Counter, defaultdict

from _common import OUT, ROOT, write
from threehop import write_edges
from ragkit.config import GraphConfig
from ragkit.multihop.graph import GraphRAG

SEED = 7
SYLLABLES = ("ka", "lo", "ver", "mi", "tan", "sor", "el", "dri", "ba", "nu", "qui", "res", "ol", "fen", "ga", "th",
             "ri", "mo", "zen", "ca", "lu", "pe", "hol", "vi", "ann", "dor", "is", "ur", "bel", "sta")


class Names:
    """Unique invented names from syllables (capitalised words)."""

    def __init__(self, rng: random.Random):
        self.rng, self.used = rng, set()

    def word(self, parts: int) -> str:
        return "".join(self.rng.choice(SYLLABLES) for _ in range(parts)).capitalize()

    def make(self, words: int = 2, parts: tuple[int, int] = (2, 3), suffix: str = "") -> str:
        while True:
            name = " ".join(self.word(self.rng.randint(*parts)) for _ in range(words)) + suffix
            if name not in self.used:
                self.used.add(name)
                return name


# Per relation: noun phrases for the forward reading (subject -> object: "the director of {X}")
# and the backward one (object -> subjects: "the films directed by {X}"); {X} is the inner phrase.
FILMS = {
    "directed_by": (["the director of {X}", "the filmmaker who directed {X}", "the person who directed {X}"],
                    ["the films directed by {X}", "the movies {X} directed"]),
    "starring": (["the actors in {X}", "the cast of {X}", "the people who starred in {X}"],
                 ["the films {X} acted in", "the movies starring {X}", "the films {X} appeared in"]),
    "produced_by": (["the studio that produced {X}", "the production company of {X}"],
                    ["the films produced by {X}", "the movies made at {X}"]),
    "based_in": (["the city where {X} is based", "the home city of {X}"],
                 ["the studios based in {X}", "the studios located in {X}"]),
    "born_in": (["the birthplace of {X}", "the city where {X} was born"],
                ["the people born in {X}", "those born in {X}"]),
    "genre": (["the genre of {X}", "the kind of film {X} is"], ["the {X} films", "films in the genre {X}"]),
}
COMPANIES = {
    "ceo": (["the chief executive of {X}", "the CEO of {X}", "the person who runs {X}"],
            ["the company {X} runs", "the firm whose CEO is {X}"]),
    "founded_by": (["the founder of {X}", "the person who founded {X}"], ["the companies founded by {X}", "the firms {X} started"]),
    "headquartered_in": (["the city where {X} has its headquarters", "the headquarters city of {X}"],
                         ["the companies headquartered in {X}", "the firms based in {X}"]),
    "subsidiary_of": (["the parent company of {X}", "the company that owns {X}"],
                      ["the subsidiaries of {X}", "the companies owned by {X}"]),
    "makes": (["the products of {X}", "the things {X} makes"], ["the maker of {X}", "the company that makes {X}"]),
    "studied_at": (["the university {X} attended", "the university where {X} studied"],
                   ["the alumni of {X}", "the people who studied at {X}"]),
    "university_in": (["the city of {X}", "the city where {X} is"], ["the universities in {X}"]),
}
GEOGRAPHY = {
    "in_region": (["the region containing {X}", "the province {X} lies in"], ["the cities in {X}", "the towns of {X}"]),
    "in_country": (["the country {X} belongs to", "the country of {X}"], ["the regions of {X}", "the provinces of {X}"]),
    "currency": (["the currency of {X}", "the money used in {X}"], ["the countries using {X}"]),
    "official_language": (["the official language of {X}", "the language spoken officially in {X}"],
                          ["the countries where {X} is official"]),
    "born_in": (["the birthplace of {X}", "the town where {X} was born"], ["the people born in {X}"]),
    "profession": (["the profession of {X}", "the occupation of {X}"], ["the people working as {X}"]),
    "capital": (["the capital of {X}", "the capital city of {X}"], ["the country whose capital is {X}"]),
    "flows_through": (["the countries {X} flows through", "the countries crossed by {X}"],
                      ["the rivers of {X}", "the rivers flowing through {X}"]),
}
# Phrasings of each relation that development never saw: written after the walk was built,
# asked only in the "unseen" split, in sentence shapes of their own (ASK_UNSEEN).
FILMS_UNSEEN = {
    "directed_by": (["the one behind the camera on {X}", "who made {X}"], ["the pictures {X} made", "what {X} has directed"]),
    "starring": (["the performers of {X}", "who played in {X}"], ["the roles of {X}", "the productions featuring {X}"]),
    "produced_by": (["the producer of {X}", "the company behind {X}"], ["the output of {X}", "the titles {X} put out"]),
    "based_in": (["the location of {X}", "where {X} has its offices"], ["the film companies of {X}"]),
    "born_in": (["the hometown of {X}", "the place {X} comes from"], ["the natives of {X}", "who was born in {X}"]),
    "genre": (["the category of {X}", "the style of {X}"], ["the works of the {X} type"]),
}
COMPANIES_UNSEEN = {
    "ceo": (["the boss of {X}", "the head of {X}"], ["the company led by {X}", "the business {X} heads"]),
    "founded_by": (["the creator of {X}", "who established {X}"], ["the businesses {X} set up", "what {X} created"]),
    "headquartered_in": (["the location of the head office of {X}", "where {X} is based"],
                         ["the businesses with a head office in {X}"]),
    "subsidiary_of": (["the owner of {X}", "the group {X} belongs to"], ["the units of {X}", "what {X} owns"]),
    "makes": (["the goods {X} produces", "what {X} manufactures"], ["the manufacturer of {X}", "who produces {X}"]),
    "studied_at": (["the school {X} went to", "the alma mater of {X}"], ["the graduates of {X}", "the former students of {X}"]),
    "university_in": (["the town of {X}", "where {X} is located"], ["the colleges of {X}"]),
}
GEOGRAPHY_UNSEEN = {
    "in_region": (["the province of {X}", "the area {X} is in"], ["the settlements of {X}", "the places in {X}"]),
    "in_country": (["the nation {X} is part of", "the state that {X} is in"], ["the territories of {X}"]),
    "currency": (["the coin of {X}", "the legal tender of {X}"], ["the nations paying in {X}"]),
    "official_language": (["the language of {X}", "what is spoken in {X}"], ["the nations that speak {X}"]),
    "born_in": (["the hometown of {X}", "the place {X} comes from"], ["the natives of {X}"]),
    "profession": (["the job of {X}", "what {X} does for a living"], ["those employed as {X}"]),
    "capital": (["the seat of government of {X}", "the main city of {X}"], ["the nation governed from {X}"]),
    "flows_through": (["the lands {X} crosses", "where {X} runs"], ["the waterways of {X}"]),
}
# Phrasings written after the walk's grammar moved to ``ragkit.text.chains`` and its reverse
# hops were limited, asked only in the "fresh" split, with sentence shapes of their own
# (ASK_FRESH); nothing here was used to choose the walk's rules or parameters.
FILMS_FRESH = {
    "directed_by": (["the filmmaker of {X}", "whoever directed {X}"],
                    ["the works directed by {X}", "the titles {X} shot"]),
    "starring": (["the leading players of {X}", "the stars of {X}"],
                 ["the films with {X} in the cast", "the pictures {X} starred in"]),
    "produced_by": (["the studio behind {X}", "the production house of {X}"],
                    ["the films {X} produced", "the movies from {X}"]),
    "based_in": (["the city {X} operates from", "the seat of {X}"], ["the studios with their seat in {X}"]),
    "born_in": (["the native city of {X}", "the city {X} was born in"], ["the people whose birthplace is {X}"]),
    "genre": (["the film genre of {X}", "what sort of film {X} is"], ["the movies that are {X}"]),
}
COMPANIES_FRESH = {
    "ceo": (["the chief of {X}", "the top executive at {X}"],
            ["the company headed by {X}", "the firm {X} leads"]),
    "founded_by": (["the person who set up {X}", "the founding figure of {X}"], ["the companies {X} founded"]),
    "headquartered_in": (["the home of the headquarters of {X}", "the city {X} is headquartered in"],
                         ["the firms headquartered in {X}"]),
    "subsidiary_of": (["the parent group of {X}", "the holding company above {X}"], ["the daughter companies of {X}"]),
    "makes": (["the products made by {X}", "the items {X} sells"], ["the company producing {X}", "the firm behind {X}"]),
    "studied_at": (["the alma mater {X} graduated from", "the university {X} went to"], ["the students of {X}"]),
    "university_in": (["the city hosting {X}", "the place {X} is in"], ["the universities located in {X}"]),
}
GEOGRAPHY_FRESH = {
    "in_region": (["the region {X} is part of", "the province where {X} lies"], ["the cities located in {X}"]),
    "in_country": (["the country containing {X}", "the nation of {X}"], ["the provinces that belong to {X}"]),
    "currency": (["the money of {X}", "the currency that {X} uses"], ["the countries whose currency is {X}"]),
    "official_language": (["the official tongue of {X}", "the language {X} uses officially"],
                          ["the countries with {X} as official language"]),
    "born_in": (["the native town of {X}", "the town {X} was born in"], ["the people from {X} by birth"]),
    "profession": (["the trade of {X}", "the line of work of {X}"], ["the people who are {X}s"]),
    "capital": (["the capital city that {X} has", "the seat of {X}"], ["the country with its capital at {X}"]),
    "flows_through": (["the countries that {X} passes through", "the lands along {X}"], ["the rivers that cross {X}"]),
}
ASK_FRESH = ["What would {NP} be?", "I am looking for {NP}.", "Identify {NP}.", "Could you tell me {NP}?"]
# How a question is asked about a noun phrase (development wordings; the held-out ones differ).
ASK = ["What is {NP}?", "Name {NP}.", "Tell me {NP}.", "Which are {NP}?"]
ASK_HELD_OUT = ["I would like to know {NP}.", "Find {NP}.", "Give {NP}, please."]
ASK_UNSEEN = ["Can you say {NP}?", "Do you know {NP}?", "Please list {NP}.", "{NP}: who or what is it?"]


def films_kb(rng: random.Random) -> list[tuple[str, str, str]]:
    names = Names(rng)
    countries = [names.make(1, (2, 3)) for _ in range(12)]
    cities = [names.make(1, (2, 3), " City") for _ in range(60)]
    people = [names.make(2) for _ in range(900)]
    genres = ["drama", "comedy", "thriller", "western", "documentary", "musical", "horror", "romance"]
    studios = [names.make(1, (2, 3), " Pictures") for _ in range(40)]
    triples = []
    for person in people:
        triples.append((person, "born_in", rng.choice(cities)))
    for studio in studios:
        triples.append((studio, "based_in", rng.choice(cities)))
    directors, actors = people[:120], people[120:]
    stars = actors[:40]                                   # hubs: actors in many films
    for _ in range(700):
        film = "The " + names.make(1, (2, 3)) + " " + rng.choice(["Affair", "Road", "Winter", "Harbor", "Game"])
        triples.append((film, "directed_by", rng.choice(directors)))
        cast = rng.sample(actors, rng.randint(2, 4)) + ([rng.choice(stars)] if rng.random() < 0.5 else [])
        triples += [(film, "starring", actor) for actor in dict.fromkeys(cast)]
        triples.append((film, "produced_by", rng.choice(studios)))
        triples.append((film, "genre", rng.choice(genres)))
    del countries
    return triples


def companies_kb(rng: random.Random) -> list[tuple[str, str, str]]:
    names = Names(rng)
    cities = [names.make(1, (2, 3)) for _ in range(150)]
    universities = [f"University of {c}" for c in rng.sample(cities, 60)]
    people = [names.make(2) for _ in range(6000)]
    triples = [(u, "university_in", u.removeprefix("University of ")) for u in universities]
    companies = [names.make(1, (2, 3), rng.choice([" Corp", " Labs", " Group", " Systems"])) for _ in range(2500)]
    for person in people:
        triples.append((person, "studied_at", rng.choice(universities)))
    ceos = rng.sample(people, len(companies))
    for i, company in enumerate(companies):
        triples.append((company, "ceo", ceos[i]))
        triples.append((company, "founded_by", rng.choice(people)))
        triples.append((company, "headquartered_in", rng.choice(cities)))
        if i > 100 and rng.random() < 0.4:
            triples.append((company, "subsidiary_of", rng.choice(companies[:100])))   # hubs: groups
        for _ in range(rng.randint(1, 3)):
            triples.append((company, "makes", names.make(1, (2, 3)) + " " + rng.choice(["X", "Pro", "One", "Max"])))
    return triples


def geography_kb(rng: random.Random) -> list[tuple[str, str, str]]:
    names = Names(rng)
    countries = [names.make(1, (2, 3), "ia") for _ in range(120)]
    languages = [names.make(1, (2, 2), "ish") for _ in range(60)]
    currencies = [names.make(1, (2, 2), " dollar") for _ in range(80)]
    professions = ["teacher", "farmer", "engineer", "nurse", "painter", "sailor", "miner", "baker", "judge", "poet"]
    triples = []
    regions: dict[str, list[str]] = defaultdict(list)
    cities = []
    for country in countries:
        triples.append((country, "currency", rng.choice(currencies)))
        triples.append((country, "official_language", rng.choice(languages)))
        for _ in range(rng.randint(3, 20)):
            region = names.make(1, (2, 3), " Province")
            regions[country].append(region)
            triples.append((region, "in_country", country))
            for _ in range(rng.randint(5, 25)):
                city = names.make(1, (2, 3))
                cities.append(city)
                triples.append((city, "in_region", region))
        capital_region = rng.choice(regions[country])
        capital = next(s for s, r, o in reversed(triples) if r == "in_region" and o == capital_region)
        triples.append((country, "capital", capital))
    for _ in range(300):
        river = names.make(1, (2, 3), " River")
        triples += [(river, "flows_through", c) for c in rng.sample(countries, rng.randint(1, 3))]
    while len(triples) < 100_000:
        person = names.make(2)
        triples.append((person, "born_in", rng.choice(cities)))
        triples.append((person, "profession", rng.choice(professions)))
    return triples


KBS = {"films": (films_kb, FILMS), "companies": (companies_kb, COMPANIES), "geography": (geography_kb, GEOGRAPHY)}
UNSEEN = {"films": FILMS_UNSEEN, "companies": COMPANIES_UNSEEN, "geography": GEOGRAPHY_UNSEEN}
FRESH = {"films": FILMS_FRESH, "companies": COMPANIES_FRESH, "geography": GEOGRAPHY_FRESH}


def walks(triples: list[tuple[str, str, str]], hops: int, rng: random.Random, limit: int,
          max_gold: int = 3, max_between: int = 8) -> list[tuple[str, list[tuple[str, bool]], list[str]]]:
    """Walks of ``hops`` steps from random anchors, each step a relation read forwards or
    backwards, that end at ``max_gold`` nodes or fewer and never pass ``max_between`` nodes."""
    forward: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    backward: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for s, r, o in triples:
        forward[s][r].append(o)
        backward[o][r].append(s)
    # The first step is drawn first, evenly over relations and directions, then an anchor
    # that has it: drawing anchors evenly would ask nearly everything about the most common kind
    # of node (people, in geography).
    having: dict[tuple[str, bool], list[str]] = defaultdict(list)
    for s in sorted(forward):
        for r in forward[s]:
            having[(r, True)].append(s)
    for o in sorted(backward):
        for r in backward[o]:
            having[(r, False)].append(o)
    kinds = sorted(having)
    found, seen, tries = [], set(), 0
    while len(found) < limit and tries < limit * 400:
        tries += 1
        anchor = rng.choice(having[rng.choice(kinds)])
        chain: list[tuple[str, bool]] = []
        reached = [anchor]
        for _ in range(hops):
            options = sorted({(r, True) for n in reached for r in forward[n]} | {(r, False) for n in reached for r in backward[n]})
            options = [o for o in options if not chain or o != (chain[-1][0], not chain[-1][1])]   # no walking back
            if not options:
                break
            step = rng.choice(options)
            edges = forward if step[1] else backward
            reached = sorted({m for n in reached for m in edges[n][step[0]]} - {anchor})
            chain.append(step)
            if not reached or len(reached) > max_between:
                break
        if len(chain) == hops and 0 < len(reached) <= max_gold and (anchor, tuple(chain)) not in seen:
            seen.add((anchor, tuple(chain)))
            found.append((anchor, chain, reached))
    return found


def phrase(anchor: str, chain: list[tuple[str, bool]], vocabulary: dict, rng: random.Random, asks: list[str]) -> str:
    np_ = anchor
    for relation, is_forward in chain:
        np_ = rng.choice(vocabulary[relation][0 if is_forward else 1]).format(X=np_)
    return rng.choice(asks).format(NP=np_)


def questions(kb: str, triples, vocabulary: dict, per_hops: int) -> list[dict]:
    """Per hop count, ``per_hops`` walks: three in four asked in development wordings, one in
    four in held-out sentence shapes; then as many walks again asked in the unseen relation
    phrasings and sentence shapes (drawn from their own random stream, so the first two splits
    stay as they were), and as many in the fresh ones (a stream of their own too)."""
    rng = random.Random(f"{SEED}-{kb}")
    out = []
    for hops in (2, 3):
        for i, (anchor, chain, gold) in enumerate(walks(triples, hops, rng, per_hops)):
            held_out = i % 4 == 3
            out.append({"question": phrase(anchor, chain, vocabulary, rng, ASK_HELD_OUT if held_out else ASK),
                        "answers": gold, "hops": hops, "anchor": anchor, "split": "held_out" if held_out else "dev",
                        "relations": [r if f else f"{r}^-1" for r, f in chain]})
    unseen = random.Random(f"{SEED}-{kb}-unseen")
    for hops in (2, 3):
        for anchor, chain, gold in walks(triples, hops, unseen, per_hops // 2):
            out.append({"question": phrase(anchor, chain, UNSEEN[kb], unseen, ASK_UNSEEN), "answers": gold,
                        "hops": hops, "anchor": anchor, "split": "unseen",
                        "relations": [r if f else f"{r}^-1" for r, f in chain]})
    fresh = random.Random(f"{SEED}-{kb}-fresh")
    for hops in (2, 3):
        for anchor, chain, gold in walks(triples, hops, fresh, per_hops // 2):
            out.append({"question": phrase(anchor, chain, FRESH[kb], fresh, ASK_FRESH), "answers": gold,
                        "hops": hops, "anchor": anchor, "split": "fresh",
                        "relations": [r if f else f"{r}^-1" for r, f in chain]})
    return out


def measure(rag: GraphRAG, items: list[dict], params: GraphConfig | None = None) -> dict:
    for item in items[:5]:                          # load the embedder, fill the memos
        rag.query(item["question"], params)
    hits, times, misses = 0, [], []
    kinds: Counter = Counter()
    for item in items:
        started = time.perf_counter()
        result = rag.query(item["question"], params)
        times.append((time.perf_counter() - started) * 1000)
        answer = (result["answer"] or "").strip().lower()
        hit = answer in {a.lower() for a in item["answers"]}
        hits += hit
        walked = result["paths"][0]["relations"] if result.get("paths") else []
        if not hit:
            kinds[miss_kind(walked, item["relations"])] += 1
        if not hit and len(misses) < 8:
            misses.append({"question": item["question"], "gold": item["answers"], "answer": result["answer"],
                           "relations": item["relations"],
                           "walked": result["paths"][0]["relations"] if result.get("paths") else None})
    times.sort()
    return {"n": len(items), "hits@1": round(hits / len(items), 4), "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1), "miss_kinds": dict(sorted(kinds.items())),
            "misses": misses}


def miss_kind(walked: list[str], gold: list[str]) -> str:
    """What went wrong, by the relations walked against the gold ones: no path, too few or too
    many hops, a relation read the wrong way round, another relation, or the right relations
    with the wrong node picked (several ends)."""
    if not walked:
        return "no path"
    if len(walked) != len(gold):
        return "too few hops" if len(walked) < len(gold) else "too many hops"
    strip = lambda rels: [r.removesuffix("^-1") for r in rels]  # noqa: E731
    if walked == gold:
        return "right relations"
    return "wrong direction" if strip(walked) == strip(gold) else "other relation"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", required=True, help="name of the code measured (before, after)")
    parser.add_argument("--per-hops", type=int, default=60, help="walks per KB and hop count")
    parser.add_argument("--kbs", nargs="+", default=list(KBS), choices=list(KBS))
    parser.add_argument("--reuse", action="store_true", help="query the graphs an earlier run built (same seed)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a query parameter other than its default (GraphConfig), e.g. type_weight=0")
    args = parser.parse_args()
    work = ROOT / "outputs" / "dev_kbs"
    params = GraphConfig(**{k: float(v) if "." in v else int(v) for k, v in (p.split("=", 1) for p in args.param)})
    result: dict = {}
    for kb in args.kbs:
        make, vocabulary = KBS[kb]
        triples = sorted(set(make(random.Random(f"{SEED}-{kb}-kb"))))
        items = questions(kb, triples, vocabulary, args.per_hops)
        started = time.perf_counter()
        if args.reuse and (work / kb / "graph").is_dir():
            rag = GraphRAG.load(work / kb / "graph")
            build_s, edges, nodes = None, rag.graph.number_of_edges(), rag.graph.number_of_nodes()
        else:
            shutil.rmtree(work / kb, ignore_errors=True)
            build = GraphRAG.build(write_edges(triples, work / kb / "edges.csv"), work / kb / "graph", progress=True)
            build_s, edges, nodes = round(time.perf_counter() - started, 1), build.edges, build.nodes
            rag = GraphRAG.load(work / kb / "graph")
        groups: dict[str, list[dict]] = defaultdict(list)
        for item in items:
            groups[f"{item['hops']}-hop {item['split']}"].append(item)
        result[kb] = {"triples": edges, "nodes": nodes, "relations": len(vocabulary), "build_s": build_s,
                      **{name: measure(rag, part, params) for name, part in sorted(groups.items())}}
        print(kb, {k: (v["n"], v["hits@1"], v["p50_ms"], v["p95_ms"]) for k, v in result[kb].items()
                   if isinstance(v, dict)}, flush=True)
        print("  misses by kind:", {k: v["miss_kinds"] for k, v in result[kb].items() if isinstance(v, dict)},
              flush=True)
    path = OUT / "dev_kbs.json"
    previous = json.loads(path.read_text()) if path.is_file() else {}
    runs = previous.get("runs", {})
    runs[args.label] = result
    write("dev_kbs", {"runs": runs, "command": "PYTHONPATH=. .venv/bin/python bench/dev_kbs.py --label LABEL"})


if __name__ == "__main__":
    main()
