"""``ragkit index build`` on this machine against the same build on a Ray cluster: a head
and a second node, one CPU each, as separate processes here (``ragkit.testing.ray_cluster``).
Both build MuSiQue's 1,890 passages with chunk vectors (MiniLM) and the concept graph from
the same corpus; the bench reports each build's wall time, the cluster's per-stage seconds
and chunks/s, and whether the two indexes are the same artifact by artifact.

This machine has two cores, so the cluster cannot be faster than the local build here (the
local build already uses both cores: two ONNX threads, two extraction processes); what it
measures is what the cluster costs (starting workers, moving the batches) against the same
work, and that the result is the same. Run it with nothing else running.

    .venv/bin/python bench/ray_build.py        # -> outputs/bench/ray_build.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import SHARED, machine, write  # noqa: E402

from ragkit.testing.artifacts import index_differences  # noqa: E402
from ragkit.testing.ray_cluster import running_ray_cluster  # noqa: E402

RAGKIT = [sys.executable, "-m", "ragkit.cli"]
CORPUS = SHARED / "multihop_passages" / "musique_beir" / "corpus.jsonl"
BUILD = ["index", "build", "--dense", "minilm", "--concepts", "--json"]


def timed(command: list[str]) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:6])}...: exit {done.returncode}: {done.stderr[-2000:]}")
    return round(seconds, 1), json.loads(done.stdout)


def main() -> None:
    if not CORPUS.exists():
        raise SystemExit(f"dataset musique not found at {CORPUS}")
    with tempfile.TemporaryDirectory(prefix="rk-bench-") as folder:
        root = Path(folder)
        local_s, local = timed([*RAGKIT, *BUILD, "--corpus", str(CORPUS), "--out", str(root / "local")])
        started = time.perf_counter()
        with running_ray_cluster(nodes=2, cpus=1, folder=root / "ray") as cluster:
            cluster_start_s = round(time.perf_counter() - started, 1)
            ray_s, on_ray = timed(cluster.command([*RAGKIT, *BUILD, "--corpus", str(CORPUS), "--out",
                                                   str(root / "cluster"), "--engine", "ray",
                                                   "--address", cluster.address]))
        differences = index_differences(root / "local", root / "cluster")
    result = {
        "corpus": "MuSiQue passages (corpus.jsonl)", "chunks": local["docs"],
        "local": {"seconds": local_s, "bm25_s": local["build_s"], "dense_s": local["dense"]["seconds"],
                  "concepts_s": local["concepts"]["seconds"]},
        "cluster": {"nodes": on_ray["engine"]["nodes"], "cpus": on_ray["engine"]["cpus"],
                    "start_s": cluster_start_s, "seconds": ray_s, "bm25_s": on_ray["build_s"],
                    "stages": on_ray["engine"]["stages"]},
        "ratio_cluster_to_local": round(ray_s / local_s, 2),
        "same_index": differences == [], "differences": differences,
        "machine": machine(),
    }
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1))
    write("ray_build", result)


if __name__ == "__main__":
    main()
