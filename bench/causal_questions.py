"""Causal questions against the demo PM2.5 KG: do the main causes go the way the question
asks, and does the question match only the names it says?

32 questions written for this check (Vietnamese with and without diacritics, English; with
and without a direction), each labelled by hand with the direction it asks for PM2.5
(+1 rise, -1 fall, 0 none), the level it gives a named cause ("gió yếu": wind -1), and the
KG nodes it names. Everything is measured from the answer's trace, with the relation signs
written here (not ragkit's), so the same script measures any revision:

    .venv/bin/python bench/causal_questions.py                  -> outputs/bench/causal_questions.json
    .venv/bin/python bench/causal_questions.py --before c720de5   (also measures that revision)

- main_chains_agree: share of main chains (over questions that ask a direction) whose
  effect, read with the question's levels, is the asked direction;
- questions_all_main_agree: share of those questions whose main chains all agree;
- no_wrong_alias: share of all questions whose matched entities are all among the named;
- named_found: share of all questions whose named nodes were all matched.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO

from _common import ROOT, write

# (question, asked direction of PM2.5, levels of named causes, nodes the question names)
QUESTIONS = [
    ("Vì sao không khí ẩm khiến nồng độ bụi mịn cao hơn?", 1, {}, []),
    ("Độ ẩm tăng thì PM2.5 có tăng theo không?", 1, {}, ["relative_humidity"]),
    ("Vì sao mùa đông ô nhiễm bụi mịn nặng hơn mùa hè?", 1, {}, ["seasonal_patterns"]),
    ("Tại sao gió mạnh làm giảm PM2.5?", -1, {}, ["wind_speed"]),
    ("Vì sao lặng gió khiến PM2.5 tăng cao?", 1, {}, ["stagnation"]),
    ("Mưa lớn có làm bụi mịn giảm không?", -1, {}, ["precipitation"]),
    ("Tại sao khi có nghịch nhiệt thì PM2.5 tăng?", 1, {}, ["temperature_inversion"]),
    ("Vì sao lớp biên thấp làm ô nhiễm nặng hơn?", 1, {"pblh": -1}, ["pblh"]),
    ("Đốt than sưởi vào mùa đông làm PM2.5 tăng như thế nào?", 1, {}, ["winter_heating", "seasonal_patterns"]),
    ("Không khí lạnh tràn về có làm PM2.5 giảm không?", -1, {}, ["cold_surge"]),
    ("Vì sao sương mù đi kèm với bụi mịn tăng?", 1, {}, ["fog"]),
    ("Nắng gắt mùa hè làm PM2.5 tăng ra sao?", 1, {}, ["solar_radiation", "seasonal_patterns"]),
    ("Tại sao nhiệt độ cao làm giảm nitrat trong PM2.5?", -1, {}, ["temperature", "nitrate"]),
    ("Gió hướng nam làm ô nhiễm ở Bắc Kinh tăng vì sao?", 1, {}, ["southerly_flow"]),
    ("Vì sao độ ẩm thấp thì PM2.5 giảm?", -1, {"relative_humidity": -1}, ["relative_humidity"]),
    ("Độ ẩm ảnh hưởng thế nào đến bụi mịn?", 0, {}, ["relative_humidity"]),
    ("Mùa đông và PM2.5 liên quan ra sao?", 0, {}, ["seasonal_patterns"]),
    ("Gió mùa đông bắc tác động tới bụi mịn thế nào?", 0, {}, ["cold_surge"]),
    ("vi sao do am cao lam pm2.5 tang", 1, {}, ["relative_humidity"]),
    ("tai sao mua dong pm2.5 nang hon", 1, {}, ["seasonal_patterns"]),
    ("Why does high humidity increase PM2.5?", 1, {}, ["relative_humidity"]),
    ("Why do PM2.5 levels rise in winter?", 1, {}, ["seasonal_patterns"]),
    ("Why does strong wind lower PM2.5 concentrations?", -1, {}, ["wind_speed"]),
    ("Why does weak wind lead to higher PM2.5?", 1, {"wind_speed": -1}, ["wind_speed"]),
    ("Why does rainfall reduce fine particulate matter?", -1, {}, ["precipitation"]),
    ("How does a shallow boundary layer make pollution worse?", 1, {"pblh": -1}, ["pblh"]),
    ("Why does a low boundary layer height raise PM2.5?", 1, {"pblh": -1}, ["pblh"]),
    ("Why is air pollution worse during temperature inversions?", 1, {}, ["temperature_inversion"]),
    ("Does a cold surge bring PM2.5 down?", -1, {}, ["cold_surge"]),
    ("Why does more sunlight increase secondary aerosol and PM2.5?", 1, {}, ["solar_radiation", "secondary_aerosol"]),
    ("What role does fog play in PM2.5 formation?", 0, {}, ["fog"]),
    ("How is PM2.5 related to ammonia?", 0, {}, ["ammonia"]),
]

# The demo KG's relations: "decreases" lowers its target, "modulates" says no direction,
# every other relation it uses adds to its target.
SIGN = {"decreases": -1, "modulates": 0}


def chain_effect(chain: dict, levels: dict) -> int:
    sign = 1
    for step in chain["steps"]:
        sign *= SIGN.get(step["relation"], 1)
    return levels.get(chain["nodes"][0], 1) * sign


def measure() -> dict:
    """Every question through ``explain`` without a model, scored from its trace."""
    from ragkit.causal.kg import load_kg
    from ragkit.pipelines.causal import explain

    kg = load_kg(ROOT / "data" / "merged_knowledge_graph.json")
    rows = []
    for question, outcome, levels, named in QUESTIONS:
        trace = explain(question, kg, use_llm=False).trace
        effects = [chain_effect(c, levels) for c in trace["selected_chains"]]
        entities = list(trace["entities"])
        rows.append({"question": question, "asked": outcome, "entities": entities,
                     "main_starts": [c["nodes"][0] for c in trace["selected_chains"]],
                     "main_effects": effects,
                     "opposing": len(trace.get("opposing_factors", [])),
                     "wrong_alias": sorted(set(entities) - set(named)),
                     "named_missed": sorted(set(named) - set(entities))})
    directed = [r for r in rows if r["asked"]]
    main = [(r["asked"], e) for r in directed for e in r["main_effects"]]
    return {"summary": {
        "questions": len(rows), "asking_a_direction": len(directed),
        "main_chains": len(main),
        "main_chains_agree": round(sum(a == e for a, e in main) / len(main), 3) if main else None,
        "questions_all_main_agree": round(sum(all(e == r["asked"] for e in r["main_effects"])
                                              for r in directed) / len(directed), 3),
        "no_wrong_alias": round(sum(not r["wrong_alias"] for r in rows) / len(rows), 3),
        "named_found": round(sum(not r["named_missed"] for r in rows) / len(rows), 3)},
        "rows": rows}


def measure_revision(rev: str) -> dict:
    """This script run against ragkit as it was at ``rev`` (exported to a temporary folder)."""
    archive = subprocess.run(["git", "archive", rev, "ragkit"],
                             cwd=ROOT, capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        tarfile.open(fileobj=BytesIO(archive)).extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": tmp}
        out = subprocess.run([sys.executable, __file__, "--print"], env=env, capture_output=True,
                             text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git revision to measure as well")
    parser.add_argument("--print", action="store_true", help="print the measure as JSON, write nothing")
    args = parser.parse_args()
    if args.print:
        print(json.dumps(measure(), ensure_ascii=False))
        return
    result = {"command": "python bench/causal_questions.py" + (f" --before {args.before}" if args.before else ""),
              "after": measure()}
    if args.before:
        result["before"] = {"revision": args.before, **measure_revision(args.before)}
    write("causal_questions", result)
    print(json.dumps({k: v["summary"] for k, v in result.items() if isinstance(v, dict)}, indent=2))


if __name__ == "__main__":
    main()
