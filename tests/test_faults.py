"""Faults during writes: a process killed with SIGKILL part-way (``RAGKIT_KILL_AT``, see
``ragkit/runtime/faults.py``), a read-only target and a full disk (a small tmpfs). After each, the
previous artifact loads and answers, the next run succeeds and leaves no temporary file, and
a reader never sees a moment without an index."""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from stat import S_ISDIR

import pytest

from .conftest import MANUALS, NEO4J_PASSWORD, ROOT

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
SPECS = [ROOT / "data" / "specs" / "demo_5gc.md", ROOT / "data" / "specs" / "demo_vocab.md"]
NOBEL = ROOT / "data" / "nobel_edges.csv"
BIOMED = ROOT / "data" / "biomed"
TEMPORARY = re.compile(r"\.(tmp|link|old)-\d+|\.w-\d+|^\.\.?staging-")


def ragkit(*args, kill_at: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    extra = {"RAGKIT_KILL_AT": kill_at} if kill_at else {}
    return subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, args)], capture_output=True, text=True,
                          env={**ENV, **(env or {}), **extra}, cwd=ROOT, timeout=900)


def ok(*args, **kw) -> subprocess.CompletedProcess:
    proc = ragkit(*args, **kw)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def killed(*args, kill_at: str, **kw) -> None:
    proc = ragkit(*args, kill_at=kill_at, **kw)
    assert proc.returncode == -9, f"not killed at {kill_at} (rc {proc.returncode}): {proc.stderr[-1000:]}"


def leftovers(folder: Path, name: str) -> list[str]:
    """Temporary names beside ``name`` in ``folder`` (half-written versions included), and
    versions beyond current + previous, or any version that is not complete."""
    names = [p.name for p in folder.iterdir() if p.name.startswith((f".{name}.", ".staging-", "..staging-"))]
    temporary = [n for n in names if TEMPORARY.search(n)]
    versions = [n for n in names if n.startswith(f".{name}.v-")]
    incomplete = [n for n in versions if not any((folder / n / f).is_file() for f in ("meta.json", "graph.json"))]
    return temporary + incomplete + (versions if len(versions) > 2 else [])


def dense_ids(index: Path, query: str = "khoan lỗ") -> list[str]:
    proc = ok("search", "--index", index, "--method", "dense", "--query", query, "--json")
    return [r["doc_id"] for r in json.loads(proc.stdout)["results"]]


# --------------------------------------------------------------------------- index build --dense
@pytest.fixture(scope="module")
def other_corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("other") / "corpus.jsonl"
    rows = [{"_id": f"7568{i:02d}", "text": f"Aspirin dose {i} lowers a fever and treats pain."} for i in range(8)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("point", ["dense.batch:1", "index.files:1", "swap:1"])
def test_a_killed_dense_rebuild_leaves_the_previous_index_answering(tmp_path, other_corpus, point):
    out = tmp_path / "ix"
    ok("index", "build", "--corpus", MANUALS, "--out", out, "--dense", "minilm")
    before = dense_ids(out)
    assert before and all(".md#" in i for i in before)

    killed("index", "build", "--corpus", other_corpus, "--out", out, "--dense", "minilm", kill_at=point)
    assert dense_ids(out) == before                      # the old vectors, the old chunks

    replaced = os.readlink(out)
    ok("index", "build", "--corpus", other_corpus, "--out", out, "--dense", "minilm")
    after = dense_ids(out, "aspirin fever")
    assert after and all(i.startswith("7568") for i in after)
    assert not leftovers(tmp_path, "ix"), sorted(p.name for p in tmp_path.iterdir())
    assert (tmp_path / replaced / "meta.json").is_file()     # the version it replaced stays, complete


# --------------------------------------------------------------------------- graph build --edges
def graph_answer(folder: Path, question: str) -> dict:
    proc = ok("ask", question, "--pipeline", "graph", "--graph", folder, "--no-llm", "--json")
    return json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("point", ["graph.batch:1", "swap:1"])
def test_a_killed_graph_rebuild_leaves_the_previous_graph_answering(tmp_path, point):
    from ragkit.multihop.graph import GraphRAG

    out = tmp_path / "g"
    ok("graph", "build", "--edges", NOBEL, "--out", out)
    question = "What is the nationality of Marie Curie's spouse?"
    before = graph_answer(out, question)["answer"]

    killed("graph", "build", "--edges", BIOMED / "edges.csv", "--out", out, kill_at=point)
    assert graph_answer(out, question)["answer"] == before
    graph = GraphRAG.load(out)                           # its own vectors, not the other graph's
    assert sorted(graph.vectors.ids) == sorted(graph.graph.nodes)

    ok("graph", "build", "--edges", BIOMED / "edges.csv", "--out", out)
    assert "compound:aspirin" in GraphRAG.load(out).graph
    assert not leftovers(tmp_path, "g"), sorted(p.name for p in tmp_path.iterdir())


# --------------------------------------------------------------------------- kg build / kg import
def spec_answer(store) -> str:
    proc = ok("ask", "What is SCP in 5G Core?", "--pipeline", "spec", "--store", store, "--no-llm", "--json")
    return json.loads(proc.stdout)["answer"]


@pytest.mark.slow
def test_a_killed_kg_build_to_a_file_leaves_the_previous_store(tmp_path):
    store = tmp_path / "s.json.gz"
    ok("kg", "build", "--specs", SPECS[0], "--store", store)
    before = store.read_bytes()
    answer = spec_answer(store)
    assert "Service Communication Proxy" in answer

    killed("kg", "build", "--specs", *SPECS, "--store", store, kill_at="write:1")
    assert store.read_bytes() == before and spec_answer(store) == answer
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]      # what the kill left

    ok("kg", "build", "--specs", *SPECS, "--store", store)
    assert store.read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json.gz"]   # the next run cleaned up


@pytest.mark.slow
def test_a_killed_kg_import_leaves_the_previous_store(tmp_path):
    store = tmp_path / "kg.json.gz"
    nodes, edges = BIOMED / "nodes.csv", BIOMED / "edges.csv"
    fewer = tmp_path / "edges.csv"
    lines = edges.read_text(encoding="utf-8").splitlines(keepends=True)
    fewer.write_text("".join(lines[:4]), encoding="utf-8")
    ok("kg", "import", "--nodes", nodes, "--edges", edges, "--store", store)
    question = ["ask", "What diseases does Aspirin treat?", "--pipeline", "kg", "--store", store, "--no-llm",
                "--json"]
    before = json.loads(ok(*question).stdout)["answer"]

    killed("kg", "import", "--nodes", nodes, "--edges", fewer, "--store", store, kill_at="write:1")
    assert json.loads(ok(*question).stdout)["answer"] == before

    ok("kg", "import", "--nodes", nodes, "--edges", fewer, "--store", store)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.csv", "kg.json.gz"]


@pytest.mark.slow
def test_a_killed_kg_build_to_neo4j_leaves_the_previous_spec(neo4j_uri):
    from ragkit.specs.neo4j_store import Neo4jStore

    env = {"NEO4J_PASSWORD": NEO4J_PASSWORD}
    store = Neo4jStore(neo4j_uri)
    try:
        store.clear()
        ok("kg", "build", "--specs", SPECS[0], "--store", neo4j_uri, env=env)
        before = store.counts()
        answer = spec_answer(neo4j_uri)
        # The second spec's documents, chunks and terms in one transaction: killed after its
        # second batch, none of it is there.
        killed("kg", "build", "--specs", *SPECS, "--store", neo4j_uri, kill_at="neo4j.batch:2", env=env)
        assert store.counts() == before and spec_answer(neo4j_uri) == answer
        ok("kg", "build", "--specs", *SPECS, "--store", neo4j_uri, env=env)
        assert store.counts() != before
    finally:
        store.clear()
        store.close()


# --------------------------------------------------------------------------- read-only, full disk
def _mount(*args) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def mounted(tmp_path):
    """``mount`` as this test needs it (the tests run as root here), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only folder or a small tmpfs needs root")
    points = []

    def mount(*args) -> Path:
        point = Path(args[-1])
        point.mkdir(parents=True, exist_ok=True)
        if not _mount(*args):
            pytest.skip(f"mount {' '.join(map(str, args))} is not permitted here")
        points.append(point)
        return point

    yield mount
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.mark.slow
def test_a_read_only_target_is_an_error_and_leaves_the_index(tmp_path, other_corpus, mounted):
    src = tmp_path / "src"
    ok("index", "build", "--corpus", MANUALS, "--out", src / "ix", "--dense", "minilm")
    before = dense_ids(src / "ix")
    ro = mounted("--bind", src, tmp_path / "ro")
    assert _mount("-o", "remount,bind,ro", str(ro))
    proc = ragkit("index", "build", "--corpus", other_corpus, "--out", ro / "ix", "--dense", "minilm")
    assert proc.returncode == 1, proc.stderr     # a place that cannot be written
    assert proc.stderr.startswith("ragkit: error: ") and "read-only file system" in proc.stderr.lower()
    assert "Traceback" not in proc.stderr
    assert dense_ids(ro / "ix") == before


def used_k(disk: Path) -> int:
    """KiB used on the file system of ``disk``."""
    return int(subprocess.run(["df", "--output=used", "-k", str(disk)], capture_output=True,
                              text=True).stdout.split()[-1])


@pytest.mark.slow
def test_a_full_disk_leaves_the_index_and_the_graph(tmp_path, other_corpus, mounted):
    disk = mounted("-t", "tmpfs", "-o", "size=64m", "tmpfs", tmp_path / "disk")
    ok("index", "build", "--corpus", MANUALS, "--out", disk / "ix", "--dense", "minilm")
    before = dense_ids(disk / "ix")
    assert _mount("-o", f"remount,size={used_k(disk) + 64}k", str(disk))   # no room for a second version
    proc = ragkit("index", "build", "--corpus", other_corpus, "--out", disk / "ix", "--dense", "minilm")
    assert proc.returncode != 0, "the tmpfs did not fill up"
    assert dense_ids(disk / "ix") == before
    assert not leftovers(disk, "ix")                     # the failed version was removed
    assert _mount("-o", "remount,size=64m", str(disk))
    ok("index", "build", "--corpus", other_corpus, "--out", disk / "ix", "--dense", "minilm")
    assert dense_ids(disk / "ix", "aspirin fever")[0].startswith("7568")

    ok("graph", "build", "--edges", NOBEL, "--out", disk / "g")
    question = "What is the nationality of Marie Curie's spouse?"
    answer = graph_answer(disk / "g", question)["answer"]
    assert _mount("-o", f"remount,size={used_k(disk) + 200}k", str(disk))
    proc = ragkit("graph", "build", "--edges", BIOMED / "edges.csv", "--out", disk / "g")
    assert proc.returncode != 0, "the tmpfs did not fill up"
    assert graph_answer(disk / "g", question)["answer"] == answer
    assert _mount("-o", "remount,size=64m", str(disk))
    ok("graph", "build", "--edges", BIOMED / "edges.csv", "--out", disk / "g")
    assert not leftovers(disk, "g")


# --------------------------------------------------------------------------- readers, dead runs
@pytest.mark.slow
def test_a_reader_never_misses_the_index_during_100_saves(tmp_path):
    from ragkit.corpus import load_corpus
    from ragkit.retrieval.bm25 import BM25Index

    index = BM25Index.for_corpus(load_corpus(str(MANUALS)), "vi", progress=False)
    out = tmp_path / "ix"
    index.save(out)
    errors, loads, done = [], [0], threading.Event()

    def read():
        while not done.is_set():
            try:
                assert BM25Index.load(out).search("các bước khoan", k=3)
                loads[0] += 1
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                errors.append(repr(exc))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(100):
            index.save(out)
    finally:
        done.set()
        reader.join()
    assert not errors, f"{len(errors)} failed loads of {loads[0] + len(errors)}: {errors[:3]}"
    assert loads[0] > 10
    assert not leftovers(tmp_path, "ix"), sorted(p.name for p in tmp_path.iterdir())


def test_a_run_left_running_by_a_dead_process_reads_as_failed(tmp_path):
    from ragkit.workbench.runs import read_manifest

    dead = subprocess.Popen(["true"])
    dead.wait()
    path = tmp_path / "nb" / "20240101T000000000000Z" / "manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"notebook": "nb.ipynb", "status": "running", "pid": dead.pid,
                                "host": socket.gethostname()}))
    assert read_manifest(path)["status"] == "failed"
    assert json.loads(path.read_text())["status"] == "failed"
    alive = {"status": "running", "pid": os.getpid(), "host": socket.gethostname()}
    path.write_text(json.dumps(alive))
    assert read_manifest(path)["status"] == "running"    # its process still runs


def test_leftovers_of_a_dead_process_are_removed_and_a_live_ones_kept(tmp_path):
    from ragkit.stores.files import atomic_write_text

    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / f".s.json.gz.tmp-{dead.pid}-abc").write_bytes(b"")
    (tmp_path / f".s.json.gz.tmp-{os.getpid()}-abc").write_bytes(b"")   # a write in progress
    (tmp_path / f".ix.v-1-{dead.pid}").mkdir()
    (tmp_path / f".staging-{dead.pid}-20240101T000000Z-s.json.gz").mkdir()
    (tmp_path / f"..staging-{dead.pid}-20240101T000000Z-ix.v-1-{os.getpid()}").mkdir()   # a notebook's version
    atomic_write_text(tmp_path / "s.json.gz", "x")
    from ragkit.stores.files import clean_leftovers

    clean_leftovers(tmp_path / "ix")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".s.json.gz.tmp-{os.getpid()}-abc", "s.json.gz"]



# --------------------------------------------------------------------------- durable renames
def record_syncs(monkeypatch) -> list[tuple]:
    """Every ``os.fsync`` and ``os.replace`` from here on, in order: ``("fsync", (dev, inode))``
    of what the descriptor names, ``("replace", target)``."""
    events: list[tuple] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        info = os.fstat(fd)
        events.append(("fsync", (info.st_dev, info.st_ino)))
        real_fsync(fd)

    def replace(source, target, **kw) -> None:
        events.append(("replace", str(target)))
        real_replace(source, target, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


def inode(path: Path) -> tuple[int, int]:
    info = os.lstat(path)
    return info.st_dev, info.st_ino


def synced(events: list[tuple]) -> set:
    return {what for kind, what in events if kind == "fsync"}


def test_an_atomic_write_fsyncs_the_file_before_its_rename_and_the_folder_after(tmp_path, monkeypatch):
    from ragkit.stores.files import atomic_write_json

    events = record_syncs(monkeypatch)
    target = tmp_path / "store" / "meta.json"
    atomic_write_json(target, {"n": 1})
    rename = events.index(("replace", str(target)))
    assert inode(target) in synced(events[:rename])             # the data (a rename keeps the inode)
    assert inode(target.parent) in synced(events[rename + 1:])  # the rename itself
    assert json.loads(target.read_text()) == {"n": 1}


def test_a_folder_version_is_fsynced_whole_before_the_link_switches_to_it(tmp_path, monkeypatch):
    from ragkit.stores.files import atomic_dir

    events = record_syncs(monkeypatch)
    target = tmp_path / "index"
    with atomic_dir(target) as work:
        (work / "meta.json").write_text("{}")
        (work / "part").mkdir()
        (work / "part" / "vectors.bin").write_bytes(b"\0" * 8)
    version = target.resolve()
    named = events.index(("replace", str(version)))             # the work folder gets its version name
    parts = [version, version / "meta.json", version / "part", version / "part" / "vectors.bin"]
    assert {inode(p) for p in parts} <= synced(events[:named])
    assert inode(tmp_path) in synced(events[named + 1:])
    switch = events.index(("replace", str(target)))
    assert switch > named and inode(tmp_path) in synced(events[switch + 1:])


def test_a_folder_that_cannot_be_fsynced_does_not_fail_the_write(tmp_path, monkeypatch):
    from ragkit.stores.files import atomic_dir, atomic_write_text

    real = os.fsync

    def files_only(fd: int) -> None:             # as some filesystems (and Windows) answer
        if S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real(fd)

    monkeypatch.setattr(os, "fsync", files_only)
    atomic_write_text(tmp_path / "s.json", "x")
    with atomic_dir(tmp_path / "index") as work:
        (work / "meta.json").write_text("{}")
    assert (tmp_path / "s.json").read_text() == "x" and (tmp_path / "index" / "meta.json").is_file()


def test_a_failed_fsync_leaves_the_previous_file_and_folder_and_nothing_half_written(tmp_path, monkeypatch):
    from ragkit.errors import OutputError
    from ragkit.stores.files import atomic_dir, atomic_write_text

    target, index = tmp_path / "s.json", tmp_path / "index"
    atomic_write_text(target, "old")
    with atomic_dir(index) as work:
        (work / "meta.json").write_text("old")
    before = sorted(p.name for p in tmp_path.iterdir())

    def failing(fd: int) -> None:                 # the disk answers EIO for file data
        if not S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OutputError, match="cannot write"):
        atomic_write_text(target, "new")
    with pytest.raises(OutputError, match="cannot write"):
        with atomic_dir(index) as work:
            (work / "meta.json").write_text("new")
    monkeypatch.undo()
    assert target.read_text() == "old" and (index / "meta.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == before

# --------------------------------------------------------------------------- ragkit rebuild
def kernel_started_by(pid: int) -> bool:
    """Whether a Jupyter kernel (``ipykernel_launcher``) runs below process ``pid`` (jupyter_client
    starts kernels in a session of their own, so the process group does not tell)."""
    parents, kernels = {}, []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            child = int(stat.parent.name)
            parents[child] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if b"ipykernel" in (stat.parent / "cmdline").read_bytes():
                kernels.append(child)
        except (OSError, IndexError, ValueError):
            continue
    for kernel in kernels:
        while kernel > 1:
            kernel = parents.get(kernel, 0)
            if kernel == pid:
                return True
    return False


KG_NB = ROOT / "notebooks" / "01_kg_builder.ipynb"
INDEX_NB = ROOT / "notebooks" / "03_index_build.ipynb"


@pytest.mark.slow
def test_a_killed_rebuild_leaves_the_previous_artifacts_and_the_next_one_runs(tmp_path):
    """SIGKILL of ``ragkit rebuild`` (notebooks 01 and 03): of its whole process group (the
    notebook's kernel too) while 01 runs, and of the runner as it moves 01's KG store into
    place. Each time the previous KG store and index answer, the dead run reads as failed
    and the lock is free. Killed after 01 is in place and before 03's index is, the next
    rebuild runs 03 only; at the end nothing temporary is left."""
    import signal
    import time

    from ragkit.workbench.runs import settle_dead_runs

    corpus, specs, runs = tmp_path / "manuals", tmp_path / "specs", tmp_path / "runs"
    corpus.mkdir()
    specs.mkdir()
    for path in MANUALS.iterdir():
        (corpus / path.name).write_bytes(path.read_bytes())
    for path in SPECS:
        (specs / path.name).write_bytes(path.read_bytes())
    store, index = tmp_path / "kg.json.gz", tmp_path / "index"
    params = ["-p", "store", store, "-p", "text_index", tmp_path / "text-index", "-p", "index_dir", index,
              "-p", "corpus", corpus, "-p", "specs", ",".join(str(specs / p.name) for p in SPECS)]
    command = ["rebuild", KG_NB, INDEX_NB, "--out", runs, *params, "--json"]
    ok(*command)
    search = ["search", "--index", index, "--query", "kiểm tra dầu bôi trơn mỗi ca", "--json"]
    kg_before, index_before = store.read_bytes(), json.loads(ok(*search).stdout)["results"]

    def unchanged(notebook: Path) -> None:
        assert store.read_bytes() == kg_before
        assert json.loads(ok(*search).stdout)["results"] == index_before
        statuses = [m["status"] for m in settle_dead_runs(runs / notebook.stem)]
        assert statuses[0] == "failed" and "running" not in statuses, statuses

    with (specs / SPECS[0].name).open("a", encoding="utf-8") as handle:     # both notebooks out of date
        handle.write("\n- **XYZF**: Example Test Function, added to make the rebuild run.\n")
    with (corpus / sorted(p.name for p in MANUALS.iterdir())[0]).open("a", encoding="utf-8") as handle:
        handle.write("\nGhi chú: kiểm tra dầu bôi trơn mỗi ca.\n")

    # The whole group, kernel included, while 01 runs (as the OOM killer or a reboot would).
    proc = subprocess.Popen([sys.executable, "-m", "ragkit.cli", *map(str, command)], env=ENV, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(2400):                   # killed as soon as 01's kernel is up: its cells cannot have run
        if kernel_started_by(proc.pid):
            break
        time.sleep(0.05)
    else:
        pytest.fail("no notebook kernel started in the rebuild's process group")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    unchanged(KG_NB)

    killed(*command, kill_at="run.swap:1")      # the runner, before 01's first artifact moves
    unchanged(KG_NB)

    killed(*command, kill_at="run.swap:3")      # 01's two artifacts moved, 03's index not
    assert store.read_bytes() != kg_before
    assert json.loads(ok(*search).stdout)["results"] == index_before
    assert settle_dead_runs(runs / INDEX_NB.stem)[0]["status"] == "failed"

    done = json.loads(ok(*command).stdout)["results"]
    assert [(r["notebook"], r["status"]) for r in done] == [(KG_NB.name, "up to date"), (INDEX_NB.name, "ok")]
    assert json.loads(ok(*search).stdout)["results"] != index_before
    assert "XYZF" in ok("ask", "What is XYZF?", "--pipeline", "spec", "--store", store, "--no-llm").stdout
    left = [p.name for p in tmp_path.iterdir() if TEMPORARY.search(p.name)]
    versions = [p.name for p in tmp_path.iterdir() if ".v-" in p.name]
    assert not left and len(versions) <= 4, sorted(p.name for p in tmp_path.iterdir())


# --------------------------------------------------------------------------- two writers
def race(doomed: list, survivor: list, kill_at: str, check) -> None:
    """Run two ragkit commands at once, the first killed at ``kill_at``, while a reader calls
    ``check()`` in a loop; the first must die by SIGKILL, the second succeed, and every read
    pass."""
    errors, loads, done = [], [0], threading.Event()

    def read():
        while not done.is_set():
            try:
                check()
                loads[0] += 1
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                errors.append(repr(exc))

    def start(argv, extra):
        return subprocess.Popen([sys.executable, "-m", "ragkit.cli", *map(str, argv)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**ENV, **extra}, cwd=ROOT)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        first, second = start(doomed, {"RAGKIT_KILL_AT": kill_at}), start(survivor, {})
        first_err, second_err = first.communicate(timeout=600)[1], second.communicate(timeout=600)[1]
    finally:
        done.set()
        reader.join()
    assert first.returncode == -9, first_err[-1000:]
    assert second.returncode == 0, second_err[-1000:]
    assert not errors, f"{len(errors)} failed loads of {loads[0] + len(errors)}: {errors[:3]}"


@pytest.mark.parametrize("point", ["index.files:1", "swap:1"])
@pytest.mark.slow
def test_two_builders_into_one_index_with_one_killed_leave_one_complete_index(tmp_path, other_corpus, point):
    from ragkit.retrieval.bm25 import BM25Index

    out = tmp_path / "ix"

    def ids() -> set[str]:
        return {d.doc_id for d in BM25Index.load(out).docs}

    ok("index", "build", "--corpus", MANUALS, "--out", out)
    first_ids = ids()

    def check():
        assert ids() in (first_ids, {f"7568{i:02d}" for i in range(8)})

    race(["index", "build", "--corpus", other_corpus, "--out", out],
         ["index", "build", "--corpus", MANUALS, "--out", out], point, check)
    assert ids() == first_ids       # the survivor's build is the live one
    assert out.is_symlink() and (out.parent / os.readlink(out)).is_dir()      # nothing dangles
    ok("index", "build", "--corpus", MANUALS, "--out", out)       # the next build clears what the killed one left
    assert not leftovers(tmp_path, "ix"), sorted(p.name for p in tmp_path.iterdir())


@pytest.mark.slow
def test_a_second_writer_waits_for_the_first_then_says_who_holds_it(tmp_path, other_corpus):
    out = tmp_path / "ix"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom ragkit.stores.writers import writer_lock\n"
                               f"with writer_lock({str(out)!r}):\n    print('held', flush=True)\n    time.sleep(60)\n"],
                              stdout=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = ragkit("index", "build", "--corpus", other_corpus, "--out", out, env={"RAGKIT_WRITER_WAIT_S": "1"})
    finally:
        holder.kill()
        holder.wait()
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and not out.exists()
    assert lines[0].startswith(f"ragkit: waiting for pid {holder.pid}, '-c', since ")
    assert lines[0].endswith(f" to finish writing {out}")
    assert lines[-1].startswith(f"ragkit: error: {out}: another build is writing it (pid {holder.pid}, ") \
        and lines[-1].endswith("still busy after 1 s (RAGKIT_WRITER_WAIT_S)")
    ok("index", "build", "--corpus", other_corpus, "--out", out)       # its holder gone, the lock is free


@pytest.mark.slow
def test_two_importers_into_one_store_with_one_killed_leave_one_complete_store(tmp_path):
    from ragkit.kgqa.store import NxTypedStore

    store = tmp_path / "kg.json.gz"
    nodes, edges = BIOMED / "nodes.csv", BIOMED / "edges.csv"
    fewer = tmp_path / "edges.csv"
    fewer.write_text("".join(edges.read_text(encoding="utf-8").splitlines(keepends=True)[:4]), encoding="utf-8")
    ok("kg", "import", "--nodes", nodes, "--edges", edges, "--store", store)

    def edge_count() -> int:
        return NxTypedStore(store).graph.number_of_edges()

    whole = edge_count()

    def check():
        assert edge_count() in (whole, 3)

    race(["kg", "import", "--nodes", nodes, "--edges", fewer, "--store", store],
         ["kg", "import", "--nodes", nodes, "--edges", edges, "--store", store], "write:1", check)
    assert edge_count() == whole
    ok("kg", "import", "--nodes", nodes, "--edges", edges, "--store", store)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.csv", "kg.json.gz"]
