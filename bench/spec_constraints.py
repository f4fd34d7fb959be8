"""Spec questions that name a release, a spec or the latest version, answered by the spec
pipeline (``--no-llm``) over a store of the shared TR 21.905 (Release 17), TS 23.501
(Release 16) and TS 29.500 (Release 18).

Questions are composed at run time from the store's dictionary: abbreviations that the
specs define, asked with a constraint in phrasings written for this benchmark (English and
Vietnamese), a fixed seed picking entries and phrasings. Three kinds:

- **held**: the release or spec named is in the store; right when the answer cites only
  documents that meet it (at least one) and states an expansion those documents give;
- **latest**: "the latest version of TS ..."; scored the same way;
- **absent**: the release or spec named is not in the store (Releases 14, 15, 19; TS
  23.502, 38.300); right when the answer is the one-sentence refusal that names what the
  store holds.

    PYTHONPATH=. .venv/bin/python bench/spec_constraints.py [--label after]
        -> outputs/bench/spec_constraints.json
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict

from _common import OUT, ROOT, SHARED, write
from ragkit.pipelines.spec import ask_spec
from ragkit.specs.build import parse_specs
from ragkit.specs.nx_store import NetworkXStore

SPECS = [SHARED / "3gpp" / n for n in ("21905-h20.docx", "23501-g40.pdf", "29500-ia0.docx")]
SEED = 11
BY_RELEASE = ["What does {A} stand for in Rel-{R}?", "In Release {R}, what is {A}?",
              "{A} as used in 3GPP Release {R}: what is it?", "What is meant by {A} in Rel.{R}?",
              "{A} là gì trong Release {R}?"]
BY_SPEC = ["According to {T} {S}, what is {A}?", "What does {T} {S} say {A} stands for?",
           "In {T} {S}, what does {A} mean?", "Theo {T} {S}, {A} là viết tắt của gì?"]
LATEST = ["What is {A} in the latest version of {T} {S}?", "In the most recent version of {T} {S}, what is {A}?"]
ABSENT_RELEASES = ("14", "15", "19")
ABSENT_SPECS = (("TS", "23.502"), ("TS", "38.300"))


def spec_number(spec_id: str) -> str:
    """"23.501" from "ts_23.501@16.4.0" (here, so the script also measures code without constraints)."""
    return spec_id.split("_", 1)[1].split("@", 1)[0]


def build_store() -> NetworkXStore:
    store = NetworkXStore(ROOT / "outputs" / "spec_constraints" / "specs.json.gz")
    if len(store.documents()) != len(SPECS):
        parsed = parse_specs(SPECS, progress=True)
        store.write(parsed.docs, parsed.chunks, parsed.terms)
    return store


def compose(store: NetworkXStore, n: int) -> list[dict]:
    rng = random.Random(SEED)
    documents = {d["spec_id"]: d for d in store.documents()}
    expansions: dict[tuple[str, str], set[str]] = defaultdict(set)     # (abbreviation, spec_id) → expansions
    for term in store.terms_containing("", limit=10 ** 6):
        if term.term_type == "abbreviation" and term.abbreviation.isupper() and 2 <= len(term.abbreviation) <= 6:
            for spec in term.source_specs:
                if spec in documents:
                    expansions[(term.abbreviation, spec)].add(term.full_name)
    pairs = sorted(expansions)
    out = []
    for i in range(n):
        kind = ("held", "held", "latest", "absent")[i % 4]
        abbreviation, spec_id = rng.choice(pairs)
        doc = documents[spec_id]
        prefix, number = spec_id.split("_", 1)[0].upper(), spec_number(spec_id)
        if kind == "latest":
            question = rng.choice(LATEST).format(A=abbreviation, T=prefix, S=number)
        elif kind == "held" and rng.random() < 0.5:
            question = rng.choice(BY_RELEASE).format(A=abbreviation, R=doc["release"])
            spec_id = None       # any document of that release
        elif kind == "held":
            question = rng.choice(BY_SPEC).format(A=abbreviation, T=prefix, S=number)
        elif rng.random() < 0.5:
            question = rng.choice(BY_RELEASE).format(A=abbreviation, R=rng.choice(ABSENT_RELEASES))
        else:
            prefix, number = rng.choice(ABSENT_SPECS)
            question = rng.choice(BY_SPEC).format(A=abbreviation, T=prefix, S=number)
        allowed = sorted({s for s in documents if (spec_id is None and documents[s]["release"] == doc["release"])
                          or s == spec_id}) if kind != "absent" else []
        gold = sorted({e for s in allowed for e in expansions.get((abbreviation, s), ())})
        out.append({"question": question, "kind": kind, "allowed": allowed, "expansions": gold})
    return out


def right(item: dict, answer) -> bool:
    text = answer.answer
    if item["kind"] == "absent":
        return text.startswith("The loaded specifications hold no") and not answer.citations
    cited = {c.spec_id for c in answer.citations}
    return bool(cited) and cited <= set(item["allowed"]) and any(e.lower() in text.lower() for e in item["expansions"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--n", type=int, default=80)
    args = parser.parse_args()
    store = build_store()
    items = compose(store, args.n)
    by_kind: dict[str, list[bool]] = defaultdict(list)
    misses = []
    for item in items:
        answer = ask_spec(item["question"], store, use_llm=False)
        ok = right(item, answer)
        by_kind[item["kind"]].append(ok)
        if not ok and len(misses) < 10:
            misses.append({**item, "answer": answer.answer[:300], "cited": sorted({c.spec_id for c in answer.citations})})
    result = {kind: {"n": len(v), "right": round(sum(v) / len(v), 4)} for kind, v in sorted(by_kind.items())}
    result["all"] = {"n": len(items), "right": round(sum(sum(v) for v in by_kind.values()) / len(items), 4)}
    print(json.dumps(result, indent=1))
    path = OUT / "spec_constraints.json"
    runs = json.loads(path.read_text())["runs"] if path.is_file() else {}
    runs[args.label] = {**result, "misses": misses}
    write("spec_constraints", {"runs": runs, "command": "PYTHONPATH=. .venv/bin/python bench/spec_constraints.py"})


if __name__ == "__main__":
    main()
