"""Generated sources for timing how the pipelines grow: a corpus of the manuals' sentences
recombined, spec documents in the demo specs' layout, the demo evidence KG grown with
invented factors, and graphs with a few hubs (Zipf-like degrees), as real graphs have. They
are timing data only: nothing in them is true.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

from ..corpus import Doc, load_document_folder


def generated_corpus(n_chunks: int, manuals: str | Path, seed: int = 0) -> list[Doc]:
    """``n_chunks`` chunks of 4 to 8 sentences drawn from the manuals (timing data only)."""
    rng = random.Random(seed)
    source = load_document_folder(manuals)
    sentences = [s.strip() for d in source for s in d.text.replace("\n", " ").split(". ") if len(s.strip()) > 20]
    titles = [d.title for d in source]
    return [Doc(doc_id=f"gen#{i}", title=rng.choice(titles), source="generated",
                text=". ".join(rng.choices(sentences, k=rng.randint(4, 8))))
            for i in range(n_chunks)]


def _zipf(rng: random.Random, n: int) -> int:
    """An index in [0, n) where low indices are far more likely (hubs)."""
    return min(int(rng.paretovariate(1.2)) - 1, n - 1)


def generated_edges(n_edges: int, path: Path, seed: int = 0) -> Path:
    """An edges.csv of people, places, prizes and employers with ``n_edges`` edges."""
    rng = random.Random(seed)
    people = max(10, n_edges // 4)
    kinds = {"born_in": [f"City {i}" for i in range(max(5, people // 20))],
             "works_at": [f"Institute {i}" for i in range(max(5, people // 30))],
             "award": [f"Prize {i}" for i in range(max(3, people // 100))],
             "advisor": [f"Person {i}" for i in range(people)]}
    edges: set[tuple[str, str, str]] = set()
    while len(edges) < n_edges:
        relation = rng.choice(list(kinds))
        targets = kinds[relation]
        source = f"Person {rng.randrange(people)}"
        target = targets[_zipf(rng, len(targets))]
        if source != target:
            edges.add((source, relation, target))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source", "relation", "target"])
        writer.writerows(sorted(edges))
    return path


KG_SCHEMA = [("Compound", "TREATS", "Disease"), ("Disease", "HAS_SYMPTOM", "Symptom"),
             ("Disease", "ASSOCIATED_WITH", "Gene"), ("Compound", "INHIBITS", "Gene"),
             ("Disease", "AFFECTS", "Anatomy")]


def generated_typed_kg(n_edges: int, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """nodes.csv and edges.csv with the demo KG's schema and ``n_edges`` edges."""
    rng = random.Random(seed)
    counts = {"Compound": max(5, n_edges // 40), "Disease": max(5, n_edges // 20),
              "Symptom": max(5, n_edges // 30), "Gene": max(5, n_edges // 25),
              "Anatomy": max(3, n_edges // 400)}
    folder.mkdir(parents=True, exist_ok=True)
    nodes, edges = folder / "nodes.csv", folder / "edges.csv"
    with nodes.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "name", "type"])
        for kind, n in counts.items():
            writer.writerows((f"{kind.lower()}:{i}", f"{kind} {i}", kind) for i in range(n))
    seen: set[tuple[str, str, str]] = set()
    while len(seen) < n_edges:
        source_type, relation, target_type = rng.choice(KG_SCHEMA)
        seen.add((f"{source_type.lower()}:{rng.randrange(counts[source_type])}", relation,
                  f"{target_type.lower()}:{_zipf(rng, counts[target_type])}"))
    with edges.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source", "relation", "target"])
        writer.writerows(sorted(seen))
    return nodes, edges


def generated_specs(n_docs: int, demo_specs: str | Path, folder: Path, seed: int = 0) -> list[Path]:
    """The demo specs plus ``n_docs`` generated ones in the same Markdown layout: clause 3
    with ten invented abbreviations, clause 4 with ten sections of demo sentences."""
    rng = random.Random(seed)
    demo = sorted(Path(demo_specs).glob("*.md"))
    sentences = [s.strip() + "." for f in demo for line in f.read_text(encoding="utf-8").splitlines()
                 if len(line) > 80 and not line.startswith(("#", "[")) for s in line.split(". ") if len(s) > 30]
    letters = "ABCDEFGHJKLMNPQRSTUVWXZ"
    words = ["Adaptive", "Binding", "Control", "Data", "Edge", "Function", "Gateway", "Handling", "Identity",
             "Load", "Mobility", "Network", "Policy", "Quality", "Routing", "Session", "Traffic", "Unified"]
    folder.mkdir(parents=True, exist_ok=True)
    paths = list(demo)
    for i in range(n_docs):
        abbreviations = {"".join(rng.choices(letters, k=rng.randint(3, 5))): " ".join(rng.sample(words, 3))
                         for _ in range(10)}
        lines = [f"spec_id: gen_{i}", "", f"# Generated specification {i}", "",
                 "# 3 Definitions and abbreviations", "", "## 3.2 Abbreviations", "",
                 "For the purposes of the present document, the following abbreviations apply.", ""]
        lines += [f"{a}\t{full}" for a, full in abbreviations.items()]
        lines += ["", "# 4 Functions", ""]
        for j, (a, full) in enumerate(abbreviations.items(), 1):
            lines += [f"## 4.{j} {a}", "", f"The {full} ({a}) " + " ".join(rng.sample(sentences, 3)), ""]
        path = folder / f"gen_{i}.md"
        path.write_text("\n".join(lines), encoding="utf-8")
        paths.append(path)
    return paths


def generated_evidence_kg(n_edges: int, demo_kg: str | Path, path: Path, seed: int = 0) -> Path:
    """The demo evidence KG grown to about ``n_edges`` edges: generated factors wired to each
    other and to the demo's nodes, with the demo edges' fields and levels."""
    import json

    rng = random.Random(seed)
    kg = json.loads(Path(demo_kg).read_text(encoding="utf-8"))
    templates = kg["edges"]
    demo_ids = [n["id"] for n in kg["nodes"]]
    n_new = max(10, (n_edges - len(templates)) // 3)
    categories = sorted({n.get("category", "chemical") for n in kg["nodes"]})
    kg["nodes"] += [{"id": f"factor_{i}", "label": f"Factor {i}", "category": rng.choice(categories)}
                    for i in range(n_new)]
    ids = demo_ids + [f"factor_{i}" for i in range(n_new)]
    seen = {(e["source"], e["target"]) for e in templates}
    while len(kg["edges"]) < n_edges:
        source, target = rng.choice(ids[len(demo_ids):]), rng.choice(ids)
        if source == target or (source, target) in seen:
            continue
        seen.add((source, target))
        edge = dict(rng.choice(templates), source=source, target=target,
                    confidence=rng.choice(["HIGH", "MEDIUM", "LOW"]),
                    strength=rng.choice(["STRONG", "MODERATE", "WEAK"]))
        kg["edges"].append(edge)
    path.write_text(json.dumps(kg, ensure_ascii=False), encoding="utf-8")
    return path
