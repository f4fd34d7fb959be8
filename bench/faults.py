"""SIGKILL at random moments of real rebuilds, and what is left after each kill.

``tests/test_faults.py`` kills a build at named fault points (``RAGKIT_KILL_AT``); this kills
it at any moment. For each kind of write (the demo data in ``data/``):

- ``index build --dense minilm``: the workshop manuals, then a small English corpus written
  here (other documents, other ids);
- ``index build --concepts``: the same two corpora, with the concept graph;
- ``graph build --edges``: the Nobel edges, then the biomedical ones;
- ``kg build --specs``: one demo spec, then both (a build adds its specs to what the store
  holds, so the one-spec store is restored by removing the file and building it again);
- ``kg import --nodes --edges``: the biomedical KG, then the same nodes with its first three
  edges.

The old artifact is built and asked a fixed question (``search --json`` for an index,
``ask --no-llm --json`` for the others); one rebuild to the new inputs is timed (T) and asked
the same question. Then, per trial, the rebuild is started and SIGKILLed (its whole process
group) after a uniformly random delay in [0, T] (a seeded RNG), and:

(a) the artifact must answer exactly the old answer, or exactly the new one when the kill
    came after the switch (which one is recorded); anything else, an error included, is a
    failure. A rebuild that finished before the kill is counted as such;
(b) the rebuild run again to the end must succeed and answer the new answer;
(c) after that run nothing temporary is left beside the target (``.tmp-``, ``.staging-``,
    ``.link-``, ``.old-`` names, any other stray name), and of a folder's ``.<name>.v-*``
    versions only the current one and the one that run replaced (the previous one, kept
    for its readers, docs/reliability.md "Writes"): at most two, and not another in place
    of the previous one;

then the old artifact is rebuilt for the next trial. Recorded per command: the trials, how
many kills answered old and new, the failures with their details, the leftovers after the
next run, whether the replaced version was kept, what each kill left beside the target
("mid-write" in the table: it died while writing) and the delays used.

    .venv/bin/python bench/faults.py   -> outputs/bench/faults.json

``--trials N`` (default 8), ``--seed S``, ``--only KEY ...`` to run some commands,
``--workdir DIR`` to keep the artifacts (by default a temporary folder, removed after).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from _common import ROOT, write

DATA = ROOT / "data"
ENV = {key: value for key, value in os.environ.items() if key != "RAGKIT_KILL_AT"}
ENV |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
TIMEOUT_S = 900


# ----------------------------------------------------------------------------- the commands
@dataclass
class Case:
    """One kind of write: build ``old`` then rebuild to ``new`` at ``target`` (a file or folder
    name in the case's own folder), asked ``query``; ``pick`` keeps what must not change
    from its JSON output. ``{target}`` in the arguments is the artifact's path."""
    key: str
    command: str
    target: str
    old: list[str]
    new: list[str]
    query: list[str]
    pick: Callable[[dict], object]
    additive: bool = False           # a build adds to what the store holds: the old one is rebuilt from scratch

    def restore(self, target: Path) -> None:
        """Build the old artifact again over the new one."""
        if self.additive:
            target.unlink()
        build(self.old, target)


def search_results(out: dict) -> list:
    """The ranked chunks and their scores."""
    return [[r["doc_id"], r["score"]] for r in out["results"]]


def answer_and_citations(out: dict) -> dict:
    """The answer text and what it cites, with scores."""
    return {"answer": out["answer"], "citations": [[c["doc_id"], c["score"]] for c in out["citations"]]}


def other_corpus(folder: Path) -> Path:
    """A small English corpus that shares nothing with the manuals: other ids, other words."""
    drugs = ["aspirin", "ibuprofen", "paracetamol", "naproxen", "codeine", "diclofenac"]
    uses = ["lowers a fever", "eases a headache", "treats joint pain", "calms a toothache",
            "relieves back pain", "reduces swelling after a sprain"]
    rows = [{"_id": f"drug-{i:02d}", "title": drugs[i % len(drugs)].title(),
             "text": f"{drugs[i % len(drugs)].title()} {uses[i // len(drugs) % len(uses)]}; "
                     f"the usual adult dose is {200 + 50 * i} mg, taken with water after a meal."}
            for i in range(36)]
    path = folder / "drugs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def fewer_edges(folder: Path) -> Path:
    """The biomedical edges' header and first three edges."""
    lines = (DATA / "biomed" / "edges.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    path = folder / "edges-3.csv"
    path.write_text("".join(lines[:4]), encoding="utf-8")
    return path


def cases(inputs: Path) -> list[Case]:
    manuals, drugs = str(DATA / "manuals"), str(other_corpus(inputs))
    specs = [str(DATA / "specs" / "demo_5gc.md"), str(DATA / "specs" / "demo_vocab.md")]
    nodes, edges = str(DATA / "biomed" / "nodes.csv"), str(DATA / "biomed" / "edges.csv")
    return [
        Case("index", "index build --dense minilm", "ix",
             ["index", "build", "--corpus", manuals, "--out", "{target}", "--dense", "minilm"],
             ["index", "build", "--corpus", drugs, "--out", "{target}", "--dense", "minilm"],
             ["search", "--index", "{target}", "--method", "hybrid", "--query", "khoan lỗ", "--k", "5", "--json"],
             search_results),
        Case("concepts", "index build --concepts", "ixc",
             ["index", "build", "--corpus", manuals, "--out", "{target}", "--concepts"],
             ["index", "build", "--corpus", drugs, "--out", "{target}", "--concepts"],
             ["search", "--index", "{target}", "--method", "graph", "--query", "khoan lỗ aspirin",
              "--k", "5", "--json"],
             search_results),
        Case("graph", "graph build --edges", "g",
             ["graph", "build", "--edges", str(DATA / "nobel_edges.csv"), "--out", "{target}"],
             ["graph", "build", "--edges", edges, "--out", "{target}"],
             ["ask", "What is the nationality of Marie Curie's spouse?", "--pipeline", "graph", "--graph",
              "{target}", "--no-llm", "--json"],
             answer_and_citations),
        Case("kg-build", "kg build --specs", "s.json.gz",
             ["kg", "build", "--specs", specs[0], "--store", "{target}"],
             ["kg", "build", "--specs", *specs, "--store", "{target}"],
             ["ask", "What does AMF stand for?", "--pipeline", "spec", "--store", "{target}", "--no-llm", "--json"],
             answer_and_citations, additive=True),
        Case("kg-import", "kg import --nodes --edges", "kg.json.gz",
             ["kg", "import", "--nodes", nodes, "--edges", edges, "--store", "{target}"],
             ["kg", "import", "--nodes", nodes, "--edges", str(fewer_edges(inputs)), "--store", "{target}"],
             ["ask", "What diseases does Aspirin treat?", "--pipeline", "kg", "--store", "{target}", "--no-llm",
              "--json"],
             answer_and_citations),
    ]


# ----------------------------------------------------------------------------- running ragkit
def argv(args: list[str], target: Path) -> list[str]:
    return [sys.executable, "-m", "ragkit.cli", *(a.replace("{target}", str(target)) for a in args)]


def run(args: list[str], target: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv(args, target), capture_output=True, text=True, env=ENV, cwd=ROOT,
                          timeout=TIMEOUT_S)


def build(args: list[str], target: Path) -> float:
    """Run a build to the end; its wall seconds. A failure stops the benchmark: without a
    good old or new artifact there is nothing to compare with."""
    started = time.perf_counter()
    proc = run(args, target)
    if proc.returncode != 0:
        raise SystemExit(f"ragkit {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - started


def answer(case: Case, target: Path) -> tuple[object, str | None]:
    """What the artifact answers to the case's query, or None and the error."""
    proc = run(case.query, target)
    if proc.returncode != 0:
        return None, f"exit {proc.returncode}: {proc.stderr.strip()[-1500:]}"
    try:
        return case.pick(json.loads(proc.stdout)), None
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"unreadable output ({exc!r}): {proc.stdout[:500]}"


def killed_run(args: list[str], target: Path, delay_s: float, log: Path) -> tuple[int, int, str]:
    """Start a build, SIGKILL its process group ``delay_s`` seconds later (unless it has
    ended by then); its pid, exit status (-9 when killed) and the end of its stderr."""
    with log.open("w") as err:
        proc = subprocess.Popen(argv(args, target), stdout=subprocess.DEVNULL, stderr=err, env=ENV, cwd=ROOT,
                                start_new_session=True)
        time.sleep(delay_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        returncode = proc.wait()
    return proc.pid, returncode, log.read_text(errors="replace")[-1500:]


# ----------------------------------------------------------------------------- what is on disk
def beside(folder: Path, name: str) -> list[str]:
    """Everything in the case's folder but the artifact itself, sorted."""
    return sorted(n for n in os.listdir(folder) if n != name)


def generic(entry: str) -> str:
    """A leftover's name with its time, pid and random part replaced, for the report."""
    entry = re.sub(r"\.v-\d+-\d+$", ".v-TIME-PID", entry)
    entry = re.sub(r"\.(tmp|link|old)-\d+(-.*)?$", r".\1-PID", entry)
    return re.sub(r"^\.staging-\d+-[^-]+-", ".staging-PID-STAMP-", entry)


def linked(target: Path) -> str | None:
    """The version a folder artifact's symlink names (None for a file)."""
    return os.readlink(target) if target.is_symlink() else None


def leftovers(target: Path, replaced: str | None, killed_pid: int) -> list[str]:
    """What should not be beside ``target`` after a completed run: temporary or stray names
    (``.tmp-``, ``.staging-``, ``.link-``, ``.old-``; none is expected), and versions other
    than the current one and the one the run ``replaced`` (so at most two), each named as
    ``generic`` writes it, with the killed run's marked."""
    names = beside(target.parent, target.name)
    keep = {linked(target), replaced}
    versions = [n for n in names if n.startswith(f".{target.name}.v-")]
    extra = [n for n in names if n not in versions] + [n for n in versions if n not in keep]
    return [generic(n) + (" (the killed run's)" if re.search(rf"-{killed_pid}(-|$)", n) else "") for n in extra]


# ----------------------------------------------------------------------------- one command
def measure(case: Case, folder: Path, inputs: Path, trials: int, seed: int, progress: bool) -> dict:
    folder.mkdir(parents=True)
    target = folder / case.target
    build(case.old, target)
    old, error = answer(case, target)
    if error:
        raise SystemExit(f"{case.command}: the old artifact does not answer: {error}")
    rebuild_s = build(case.new, target)
    new, error = answer(case, target)
    if error:
        raise SystemExit(f"{case.command}: the new artifact does not answer: {error}")
    if new == old:
        raise SystemExit(f"{case.command}: the old and the new artifact answer alike (the query cannot tell them "
                         f"apart)")
    case.restore(target)
    again, error = answer(case, target)
    if again != old:                 # the comparison needs a build that answers the same every time
        raise SystemExit(f"{case.command}: the old artifact answers differently when rebuilt: {again or error}")

    rng = random.Random(f"{seed}:{case.key}")
    delays = [rng.uniform(0.0, rebuild_s) for _ in range(trials)]
    runs, failures = [], []
    for number, delay in enumerate(tqdm(delays, desc=case.key, unit="trial", disable=not progress), 1):
        record, problems = trial(case, target, inputs, delay, old, new)
        record["trial"] = number
        runs.append(record)
        failures += [{"trial": number, "delay_s": record["delay_s"], **p} for p in problems]
        if number < trials:
            case.restore(target)
    served = [r["served"] for r in runs]
    return {
        "command": f"ragkit {case.command}",
        "old": [a.replace("{target}", case.target) for a in case.old],
        "new": [a.replace("{target}", case.target) for a in case.new],
        "query": [a.replace("{target}", case.target) for a in case.query],
        "rebuild_s": round(rebuild_s, 3),
        "trials": trials,
        "killed": sum(r["exit"] == -signal.SIGKILL for r in runs),
        "finished_before_kill": served.count("finished before the kill"),
        "answered_old": served.count("old"),
        "answered_new": served.count("new"),
        "kills_that_left_files": sum(bool(r["left_by_kill"]) for r in runs),
        "failures": failures,
        "leftovers_after_next_run": [{"trial": r["trial"], "names": r["leftovers_after_next_run"]}
                                     for r in runs if r["leftovers_after_next_run"]],
        "replaced_version_removed": sum(r.get("replaced_version_kept") is False for r in runs),
        "delays_s": [round(d, 3) for d in delays],
        "old_answer": old,
        "new_answer": new,
        "runs": runs,
    }


def trial(case: Case, target: Path, inputs: Path, delay_s: float, old, new) -> tuple[dict, list[dict]]:
    """One kill and the checks after it: the record and the failures."""
    folder, problems = target.parent, []
    before = set(beside(folder, case.target))
    pid, returncode, stderr = killed_run(case.new, target, delay_s, inputs / f"{case.key}.stderr")
    left = [generic(n) for n in beside(folder, case.target) if n not in before]     # what the kill left
    if returncode == -signal.SIGKILL:
        got, error = answer(case, target)                          # (a)
        served = "old" if got == old else "new" if got == new else "neither"
        if served == "neither":
            problems.append({"check": "after the kill", "error": error, "answer": got, "beside": left})
    elif returncode == 0:
        served = "finished before the kill"
    else:
        served = "failed"
        problems.append({"check": "the killed run", "error": f"exit {returncode} before the kill: {stderr}"})

    replaced = linked(target)
    proc = run(case.new, target)                                   # (b)
    if proc.returncode != 0:
        problems.append({"check": "the next run", "error": f"exit {proc.returncode}: {proc.stderr[-1500:]}"})
    else:
        got, error = answer(case, target)
        if got != new:
            problems.append({"check": "the next run's answer", "error": error, "answer": got})
    after = leftovers(target, replaced, pid)                        # (c)
    if after:
        problems.append({"check": "leftovers after the next run", "names": after})
    record = {"delay_s": round(delay_s, 3), "exit": returncode, "served": served, "left_by_kill": left,
              "leftovers_after_next_run": after}
    if replaced is not None:          # a folder: is the version the run replaced kept for its readers?
        record["replaced_version_kept"] = (folder / replaced).is_dir()
    return record, problems


# ----------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="+", metavar="KEY",
                        help="index, concepts, graph, kg-build, kg-import (default: all)")
    parser.add_argument("--workdir", type=Path, help="keep the artifacts here (an empty or new folder)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()

    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        work = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ragkit-faults-")))
        inputs = work / "inputs"
        inputs.mkdir(parents=True, exist_ok=True)
        chosen = [c for c in cases(inputs) if not args.only or c.key in args.only]
        if args.only and len(chosen) != len(set(args.only)):
            parser.error(f"--only: one of {args.only} is not a command key")
        results = {}
        for case in chosen:
            case_started = time.perf_counter()
            results[case.key] = measure(case, work / case.key, inputs, args.trials, args.seed, not args.no_progress)
            results[case.key]["total_s"] = round(time.perf_counter() - case_started, 1)
    total_s = round(time.perf_counter() - started, 1)
    write("faults", {"command": " ".join(["python bench/faults.py", *sys.argv[1:]]),
                     "trials": args.trials, "seed": args.seed, "total_s": total_s,
                     "failures": sum(len(r["failures"]) for r in results.values()),
                     "commands": results})
    print_table(results, total_s)


def print_table(results: dict, total_s: float) -> None:
    print(f"{'command':28} {'T s':>6} {'trials':>6} {'killed':>6} {'done':>5} {'old':>4} {'new':>4} "
          f"{'mid-write':>9} {'failures':>8} {'leftovers':>9}")
    for r in results.values():
        print(f"{r['command'][7:]:28} {r['rebuild_s']:6.1f} {r['trials']:6} {r['killed']:6} "
              f"{r['finished_before_kill']:5} {r['answered_old']:4} {r['answered_new']:4} "
              f"{r['kills_that_left_files']:9} {len(r['failures']):8} {len(r['leftovers_after_next_run']):9}")
    print(f"total {total_s:.0f} s")
    for r in results.values():
        for failure in r["failures"]:
            details = {k: v for k, v in failure.items() if k not in ("trial", "delay_s")}
            print(f"FAIL {r['command']} trial {failure['trial']} ({failure['delay_s']} s): "
                  f"{json.dumps(details, ensure_ascii=False)[:600]}")


if __name__ == "__main__":
    main()
