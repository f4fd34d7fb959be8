"""``ragkit index build --engine ray`` on a real Ray cluster: a head and a second node, each
its own ``ray start`` with one CPU (``ragkit.testing.ray_cluster``), in a network of their
own. The cluster's index is compared with the local build's artifact by artifact; a worker
is killed mid-build; the cluster is lost mid-build."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ragkit.testing.artifacts import index_differences

ROOT = Path(__file__).resolve().parents[1]
RAGKIT = [sys.executable, "-m", "ragkit.cli"]
HANDBOOK = ROOT / "data" / "handbook"
BUILD = ["index", "build", "--dense", "minilm", "--concepts", "--json"]


def _corpus(folder: Path) -> Path:
    """The handbook's pages and a Word file written here (read by the workers too)."""
    import docx

    shutil.copytree(HANDBOOK, folder)
    document = docx.Document()
    document.add_heading("Parking and bicycles", level=1)
    document.add_paragraph("Staff may park in the east garage from 07:00 to 20:00. Bicycles go in the "
                           "locked room beside the north entrance; the code changes every quarter.")
    document.add_heading("Visitors", level=2)
    document.add_paragraph("A visitor's car needs a day pass from the front desk, issued against an ID card.")
    document.save(str(folder / "parking.docx"))
    return folder


def _local(corpus: Path, out: Path) -> dict:
    done = subprocess.run([*RAGKIT, *BUILD, "--corpus", str(corpus), "--out", str(out)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _on_cluster(cluster, corpus: Path, out: Path, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run(cluster.command([*RAGKIT, *BUILD, "--corpus", str(corpus), "--out", str(out),
                                           "--engine", "ray", "--address", cluster.address, *more]),
                          capture_output=True, text=True, timeout=900, check=False)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from ragkit.testing.ray_cluster import running_ray_cluster

    with running_ray_cluster(nodes=2, cpus=1, folder=tmp_path_factory.mktemp("ray")) as running:
        yield running


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return _corpus(tmp_path_factory.mktemp("corpus") / "handbook")


@pytest.fixture(scope="module")
def local_build(corpus, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("local") / "index"
    return out, _local(corpus, out)


@pytest.mark.slow
@pytest.mark.xdist_group("ray-cluster")
def test_a_cluster_build_is_the_local_build_artifact_by_artifact(cluster, corpus, local_build, tmp_path):
    local_out, local_info = local_build
    out = tmp_path / "index"
    done = _on_cluster(cluster, corpus, out)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert index_differences(local_out, out) == []
    # The same report, but for where and how long.
    assert info["docs"] == local_info["docs"] == 58 and info["vocab"] == local_info["vocab"]
    assert info["dense"]["embedded"] == local_info["dense"]["embedded"] == 58
    assert info["concepts"]["concepts"] == local_info["concepts"]["concepts"] > 100
    engine = info["engine"]
    assert local_info["engine"] == {"name": "local"}
    assert engine["name"] == "ray" and engine["nodes"] == 2 and engine["cpus"] == 2
    assert engine["address"] == cluster.address
    assert [(s["stage"], s["items"], s["unit"]) for s in engine["stages"]] == [
        ("read", 9, "file"), ("tokenize", 58, "chunk"), ("dense", 58, "chunk"), ("concepts", 58, "chunk")]
    assert all(s["seconds"] > 0 and s["per_s"] > 0 for s in engine["stages"])
    # What a search reads is the same too.
    for method in ("bm25", "dense", "graph"):
        hits = [json.loads(subprocess.run([*RAGKIT, "search", "--index", str(where), "--query",
                                           "where do bicycles go", "--method", method, "--json"],
                                          capture_output=True, text=True, timeout=300, check=True).stdout)["results"]
                for where in (local_out, out)]
        assert hits[0] == hits[1] and hits[0], method


@pytest.mark.slow
@pytest.mark.xdist_group("ray-cluster")
def test_a_cluster_rebuild_reuses_the_unchanged_chunks_as_a_local_one_does(cluster, tmp_path):
    corpus = _corpus(tmp_path / "handbook")
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"
    _local(corpus, local_out)
    assert _on_cluster(cluster, corpus, ray_out).returncode == 0
    page = corpus / "leave.md"
    page.write_text(page.read_text(encoding="utf-8").replace("days", "working days", 1), encoding="utf-8")
    (corpus / "parking.docx").unlink()
    local_info = _local(corpus, local_out)
    done = _on_cluster(cluster, corpus, ray_out)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert index_differences(local_out, ray_out) == []
    changed = {"dense": ("embedded", "reused", "removed"), "concepts": ("extracted", "reused", "removed")}
    for what, keys in changed.items():
        counts = {key: info[what][key] for key in keys}
        assert counts == {key: local_info[what][key] for key in keys}, what
        assert counts[keys[0]] == 1 and counts["removed"] >= 1 and counts["reused"] == info["docs"] - 1, what
    # Only the changed chunk went to the embedding and extraction stages.
    assert [s["items"] for s in info["engine"]["stages"]] == [8, info["docs"], 1, 1]


@pytest.mark.slow
@pytest.mark.xdist_group("ray-cluster")
def test_the_index_notebook_takes_the_engine_as_a_papermill_parameter(cluster, corpus, local_build, tmp_path):
    out = tmp_path / "index"
    done = subprocess.run(cluster.command([
        *RAGKIT, "run", str(ROOT / "notebooks" / "03_index_build.ipynb"), "--out", str(tmp_path / "runs"), "--json",
        "-p", "corpus", str(corpus), "-p", "index_dir", str(out), "-p", "dense", "minilm",
        "-p", "engine", "ray", "-p", "ray_address", cluster.address]), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    # The notebook builds no concept graph: everything else is the command line's local build.
    local = local_build[0]
    assert [d for d in index_differences(local, out) if not d.startswith(f"only in {local.resolve()}: concepts/")] \
        == ["differs: meta.json"]
    metas = [json.loads((where / "meta.json").read_text()) for where in (local, out)]
    assert metas[0].pop("concepts")
    for meta in metas:
        meta.pop("build_s")
    assert metas[0] == metas[1]


@pytest.mark.slow
@pytest.mark.xdist_group("ray-cluster")
def test_a_worker_killed_mid_build_is_retried_and_the_index_is_the_same(cluster, corpus, local_build, tmp_path):
    out = tmp_path / "index"
    build = subprocess.Popen(cluster.command([*RAGKIT, *BUILD, "--corpus", str(corpus), "--out", str(out),
                                              "--engine", "ray", "--address", cluster.address]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 600
    while killed is None and build.poll() is None and time.monotonic() < deadline:
        killed = cluster.kill_worker("StageActor")      # an embedding actor, loading or embedding
        time.sleep(0.2)
    stdout, stderr = build.communicate(timeout=900)
    assert killed is not None, "no embedding actor was seen while the build ran"
    assert build.returncode == 0, stderr
    assert json.loads(stdout)["dense"]["embedded"] == 58
    assert index_differences(local_build[0], out) == []


@pytest.mark.slow
@pytest.mark.xdist_group("ray-cluster")
def test_a_file_a_worker_cannot_read_is_one_line_naming_it(cluster, tmp_path):
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Title\n\nSome text about parking.\n", encoding="utf-8")
    (corpus / "broken.docx").write_bytes(b"PK\x03\x04 not really a Word file")
    done = _on_cluster(cluster, corpus, tmp_path / "index")
    assert done.returncode == 3
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("ragkit: error: corpus ") and "broken.docx" in line, done.stderr
    assert not (tmp_path / "index").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("ray-cluster")
def test_bm25_shards_on_the_cluster_rank_as_the_whole_index_ties_included(cluster, tmp_path):
    corpus = tmp_path / "docs"
    shutil.copytree(HANDBOOK, corpus)
    # A copy sorted last: its chunks score as the originals do, in another shard.
    shutil.copy(corpus / "leave.md", corpus / "zz_leave_copy.md")
    index = tmp_path / "index"
    subprocess.run([*RAGKIT, "index", "build", "--corpus", str(corpus), "--out", str(index)], check=True,
                   capture_output=True, timeout=300)
    queries = tmp_path / "queries.txt"
    queries.write_text("how many days off do I get each year\nwho signs off a hotel bill from a trip\n"
                       "may I keep a present from a supplier\nmy laptop was stolen, what now\n"
                       "steps to ask for parental leave\n", encoding="utf-8")
    search = ["search", "--index", str(index), "--queries", str(queries), "--method", "bm25", "--k", "6", "--json"]
    whole = json.loads(subprocess.run([*RAGKIT, *search], capture_output=True, text=True, timeout=300,
                                      check=True).stdout)
    done = subprocess.run(cluster.command([*RAGKIT, *search, "--engine", "ray", "--address", cluster.address,
                                           "--shards", "3"]), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == whole
    # The ties were there to break: a page and its copy, equal scores, the earlier one first.
    tied = [(a["doc_id"], b["doc_id"]) for hits in whole["results"].values() for a, b in zip(hits, hits[1:])
            if a["score"] == b["score"] and b["doc_id"] == "zz_leave_copy.md" + a["doc_id"].removeprefix("leave.md")]
    assert len(tied) >= 2, whole


@pytest.mark.slow
@pytest.mark.xdist_group("ray-cluster")
def test_a_cluster_lost_mid_build_names_the_stage_and_leaves_the_live_index(cluster, corpus, local_build, tmp_path):
    """Last of the module: it stops the cluster."""
    out = tmp_path / "index"
    shutil.copytree(local_build[0], out, symlinks=True)
    before = tmp_path / "before"
    shutil.copytree(out, before)
    page = corpus / "offices.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n\nThe roof terrace opens in summer.\n", encoding="utf-8")
    build = subprocess.Popen(cluster.command([*RAGKIT, *BUILD, "--corpus", str(corpus), "--out", str(out),
                                              "--engine", "ray", "--address", cluster.address]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while build.poll() is None and not cluster.worker_pids("MapBatches") and time.monotonic() < deadline:
        time.sleep(0.2)
    cluster.stop()
    _, stderr = build.communicate(timeout=900)
    # When the head stops answering first, ragkit names the stage (exit 4); when the node the
    # driver is attached to dies first, Ray ends the driver itself (exit 1, its own message).
    assert build.returncode in (1, 4), stderr
    if build.returncode == 4:
        assert stderr.strip().splitlines()[-1].startswith("ragkit: error: ray stage "), stderr
    assert index_differences(before, out) == []


# ---------------------------------------------------------------------- without a cluster
@pytest.mark.slow
def test_an_address_where_no_cluster_answers_is_one_line(tmp_path):
    from ragkit.stores.neo4j_launcher import free_port

    address = f"127.0.0.1:{free_port()}"
    done = subprocess.run([*RAGKIT, "index", "build", "--corpus", str(HANDBOOK), "--out", str(tmp_path / "i"),
                           "--engine", "ray", "--address", address], capture_output=True, text=True, timeout=300)
    assert done.returncode == 4
    assert done.stderr.strip() == (f"ragkit: error: --address {address}: no Ray cluster answers there "
                                   "(Connection refused; start one with 'ray start --head')")
    assert not (tmp_path / "i").exists()


def test_an_address_without_the_ray_engine_is_refused(tmp_path):
    done = subprocess.run([*RAGKIT, "index", "build", "--corpus", str(HANDBOOK), "--out", str(tmp_path / "i"),
                           "--address", "127.0.0.1:6379"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3
    assert done.stderr.strip() == "ragkit: error: --address: names a Ray cluster, for --engine ray only"


def _split(items: list[str]) -> list[list[str]]:
    if "bad" in items:
        raise ValueError("a bad item")
    return [item.split() for item in items]


def _refuse(items: list[str]) -> list[str]:
    from ragkit.errors import InputError

    raise InputError(f"corpus {items[0]}: no such file")


def test_a_stage_batch_keeps_its_order_and_its_errors():
    from ragkit.errors import InputError
    from ragkit.runtime.ray_engine import _Failed, _applied, _rows

    rows = _rows(["a b", "c", "d e f", "bad", "g"], batch=2)
    assert [row["i"] for row in rows] == [0, 1, 2]
    batch = {"i": np.array([0, 1, 2]), "y": None, "x": np.array([row["x"] for row in rows], dtype=object)}
    out = [pickle.loads(y) for y in _applied(_split, batch)["y"]]
    assert out[0] == [["a", "b"], ["c"]]
    assert isinstance(out[1], _Failed) and str(out[1].error) == "ValueError: a bad item"
    assert out[2] == [["g"]]
    refused = pickle.loads(_applied(_refuse, {"i": np.array([0]), "x": np.array([rows[0]["x"]], dtype=object)})["y"][0])
    assert isinstance(refused.error, InputError) and str(refused.error) == "corpus a b: no such file"


def test_index_differences_sees_a_changed_array_and_not_a_timing(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name / "sub").mkdir(parents=True)
        np.save(tmp_path / name / "idf.npy", np.array([1.0, 2.0]))
        (tmp_path / name / "meta.json").write_text(json.dumps({"n": 3, "build_s": 0.1 if name == "a" else 9.9}))
        (tmp_path / name / "sub" / "rows.jsonl").write_text("{}\n")
    assert index_differences(tmp_path / "a", tmp_path / "b") == []
    np.save(tmp_path / "b" / "idf.npy", np.array([1.0, 2.0000001]))
    (tmp_path / "b" / "extra.txt").write_text("x")
    (tmp_path / "a" / "meta.json").write_text(json.dumps({"n": 4, "build_s": 0.1}))
    assert index_differences(tmp_path / "a", tmp_path / "b") == [
        f"only in {tmp_path / 'b'}: extra.txt", "differs: idf.npy", "differs: meta.json"]


@pytest.mark.slow
def test_shards_and_engines_belong_to_a_batch_on_a_cluster(tmp_path):
    queries = tmp_path / "q.txt"
    queries.write_text("leave days\n", encoding="utf-8")
    index = ROOT / "data" / "handbook"
    for args, line in (
            (["--query", "leave", "--engine", "ray"],
             "--engine, --shards: for a batch of queries (--queries) ranked by BM25"),
            (["--queries", str(queries), "--method", "bm25", "--shards", "2"],
             "--shards: the index is split across a Ray cluster's actors: give --engine ray"),
            (["--queries", str(queries), "--method", "bm25", "--engine", "ray"],
             "--engine ray: a batch is scored on the cluster in shards: give --shards N")):
        done = subprocess.run([*RAGKIT, "search", "--index", str(index), *args], capture_output=True, text=True,
                              timeout=300)
        assert (done.returncode, done.stderr.strip()) == (3, f"ragkit: error: {line}")


def test_a_node_that_misses_its_start_is_stopped_and_started_again(tmp_path, monkeypatch):
    """Ray gives a node a fixed time to register; a start that misses it is tried again with
    fresh arguments, and one that never starts is the last attempt's error."""
    from ragkit.errors import RagkitError
    from ragkit.testing import ray_cluster

    tries = tmp_path / "tries"
    fake = tmp_path / "ray"
    fake.write_text("#!/bin/sh\necho \"$@\" >> " + str(tries) + "\n"
                    "[ $(wc -l < " + str(tries) + ") -ge 2 ] || { echo 'timed out during startup'; exit 1; }\n"
                    "echo 'Ray runtime started.'\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setattr(ray_cluster, "_ray_command", lambda: [str(fake)])
    ports = iter(range(7000, 7010))
    cluster = ray_cluster.RayCluster("", tmp_path)
    node = ray_cluster._start_node(cluster, lambda: [f"--port={next(ports)}"], tmp_path / "node.log", timeout=30)
    try:
        assert [line.split()[-1] for line in tries.read_text().splitlines()] == ["--port=7000", "--port=7001"]
        assert node.poll() is None
    finally:
        ray_cluster._stop(node)

    fake.write_text("#!/bin/sh\necho 'The current node timed out during startup.'\nexit 1\n")
    with pytest.raises(RagkitError, match="exited with 1.*timed out during startup"):
        ray_cluster._start_node(cluster, lambda: [], tmp_path / "node.log", timeout=30, attempts=2)
