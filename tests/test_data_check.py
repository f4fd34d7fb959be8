"""``ragkit data check`` (real files in a temporary folder, and the real datasets), the
manifest it reads (shipped, and naming every dataset file the tests and benchmarks read),
and what a test does when its public dataset is missing: skipped with one line naming it,
or failed under RAGKIT_REQUIRE_DATA=1."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from ragkit.cli import data as data_cli
from ragkit.cli import main

from .conftest import ROOT, SHARED, shared

FILES = {"alpha/one.txt": b"one\n", "alpha/sub/two.jsonl": b'{"_id": "2"}\n' * 50, "beta/three.csv": b"a,b\n1,2\n"}


def _entry(path: str, content: bytes) -> dict:
    return {"path": path, "bytes": len(content), "sha256": hashlib.sha256(content).hexdigest()}


@pytest.fixture
def datasets(tmp_path, monkeypatch):
    """A datasets folder with the files of two small datasets, and a manifest naming them."""
    root = tmp_path / "datasets"
    for path, content in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)
    manifest = {"datasets": {
        name: {"title": f"The {name} set", "source": f"https://example.org/{name}", "version": "1", "licence": "CC0",
               "files": [_entry(p, c) for p, c in FILES.items() if p.startswith(name + "/")]}
        for name in ("alpha", "beta")}}
    monkeypatch.setattr(data_cli, "_manifest_text", lambda: json.dumps(manifest))
    return root


def _check(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["data", "check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_file_present_and_identical(datasets, capsys):
    code, out, err = _check(capsys, "--root", str(datasets))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["dataset", "file", "bytes", "status"]
    assert [line.split()[-1] for line in lines[1:4]] == ["ok", "ok", "ok"]
    assert lines[-1] == f"3 files of 2 datasets under {datasets}: 3 ok"
    code, out, _ = _check(capsys, "--root", str(datasets), "--json")
    result = json.loads(out)
    assert code == 0 and result["ok"] and result["counts"]["ok"] == 3
    assert {r["path"]: r["found_sha256"] == r["sha256"] for r in result["files"]} == dict.fromkeys(FILES, True)


def test_missing_resized_and_changed_files_exit_1(datasets, capsys):
    (datasets / "alpha" / "one.txt").unlink()
    (datasets / "alpha" / "sub" / "two.jsonl").write_bytes(b"shorter\n")
    (datasets / "beta" / "three.csv").write_bytes(b"a,b\n1,3\n")            # same size, other bytes
    code, out, _ = _check(capsys, "--root", str(datasets), "--json")
    result = json.loads(out)
    assert code == 1 and not result["ok"]
    status = {r["path"]: r["status"] for r in result["files"]}
    assert status == {"alpha/one.txt": "missing", "alpha/sub/two.jsonl": "size differs",
                      "beta/three.csv": "sha256 differs"}
    resized = next(r for r in result["files"] if r["status"] == "size differs")
    assert resized["found_bytes"] == 8 and resized["found_sha256"] is None        # not hashed
    code, out, _ = _check(capsys, "--root", str(datasets))
    assert code == 1
    assert "size differs (8 bytes)" in out and "sha256 differs" in out
    assert "alpha (The alpha set): get it from https://example.org/alpha" in out
    assert out.rstrip().endswith("docs/datasets.md says which version and where each file goes")


def test_dataset_limits_the_check(datasets, capsys):
    (datasets / "alpha" / "one.txt").unlink()
    code, out, _ = _check(capsys, "--root", str(datasets), "--dataset", "beta", "--json")
    result = json.loads(out)
    assert code == 0 and [r["path"] for r in result["files"]] == ["beta/three.csv"]
    assert list(result["datasets"]) == ["beta"]


def test_bad_input_is_one_line(datasets, tmp_path, capsys):
    for args, message in (
            (["--root", str(datasets), "--dataset", "gamma"],
             "--dataset gamma: not a dataset ragkit reads (one of alpha, beta)"),
            (["--root", str(tmp_path / "nowhere")], f"--root {tmp_path / 'nowhere'}: not found"),
            (["--root", str(datasets / "beta" / "three.csv")], "not a folder")):
        code, out, err = _check(capsys, *args)
        assert code == 3 and out == "" and len(err.splitlines()) == 1, err
        assert err.startswith("ragkit: error: ") and message in err
    code, out, err = _check(capsys, "--root", str(tmp_path / "nowhere"), "--json")
    assert code == 3 and json.loads(out)["error"]["exit_code"] == 3


def test_the_default_root_is_ragkit_shared_datasets(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGKIT_SHARED", str(tmp_path))
    assert data_cli.default_root() == tmp_path / "datasets"
    monkeypatch.delenv("RAGKIT_SHARED")
    assert data_cli.default_root() == Path("../shared/datasets")


def test_default_root_used_when_no_root_given(datasets, monkeypatch, capsys):
    monkeypatch.setenv("RAGKIT_SHARED", str(datasets.parent))
    code, out, _ = _check(capsys, "--json")
    assert code == 0 and json.loads(out)["root"] == str(datasets)


def test_hashing_shows_a_progress_bar_by_bytes(datasets, capsys):
    rows = data_cli.check_files(datasets, progress=True)
    err = capsys.readouterr().err
    assert all(r["status"] == "ok" for r in rows)
    assert "sha256" in err and f"{sum(len(c) for c in FILES.values())}" in err


# --------------------------------------------------------------------------- the manifest
def test_the_manifest_ships_with_the_package_and_docs_list_it():
    assert resources.files("ragkit.eval").joinpath("datasets_manifest.json").is_file()
    assert '"ragkit.eval" = ["datasets_manifest.json"]' in (ROOT / "pyproject.toml").read_text()
    manifest = data_cli.load_manifest()
    doc = (ROOT / "docs" / "datasets.md").read_text(encoding="utf-8")
    for name, dataset in manifest.items():
        assert f"`{name}/`" in doc and dataset["source"] in doc, name
        for entry in dataset["files"]:
            assert entry["path"].startswith(name + "/") and re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])
            row = next((line for line in doc.splitlines() if f"`{entry['path']}`" in line), "")
            assert entry["sha256"] in row and f"{entry['bytes']:,}" in row, entry["path"]


def _literal_paths(pattern: str, files: list[Path]) -> set[tuple[str, ...]]:
    found = set()
    for path in files:
        for match in re.finditer(pattern, path.read_text(encoding="utf-8")):
            found.add(tuple(re.findall(r'"([^"]+)"', match.group(1))))
    return found


def test_every_dataset_the_tests_and_benchmarks_read_is_in_the_manifest():
    manifest = data_cli.load_manifest()
    files = {e["path"] for d in manifest.values() for e in d["files"]}
    tests = _literal_paths(r'\bshared\(((?:"[^"]+"(?:,\s*)?)+)\)', sorted((ROOT / "tests").glob("test_*.py")))
    bench = _literal_paths(r'\bSHARED((?:\s*/\s*"[^"]+")+)', sorted((ROOT / "bench").glob("*.py")))
    assert len(tests) > 10 and len(bench) > 10
    for parts in tests | bench:
        assert parts[0] in manifest, parts
        if "." in parts[-1]:                                     # a file, not a folder
            assert "/".join(parts) in files, parts


# --------------------------------------------------------------------------- the real datasets
@pytest.mark.slow
def test_the_real_datasets_check_out():
    shared("pm25")
    shared("scifact")
    done = subprocess.run([sys.executable, "-m", "ragkit.cli", "data", "check", "--root", str(SHARED),
                           "--dataset", "pm25", "--dataset", "scifact", "--json"],
                          capture_output=True, text=True, timeout=300)
    result = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout
    assert result["counts"] == {"ok": 4, "missing": 0, "size differs": 0, "sha256 differs": 0}


# --------------------------------------------------------------------------- a missing dataset
def _pytest_one_dataset_test(tmp_path, require: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAGKIT_REQUIRE_DATA"}
    env["RAGKIT_SHARED"] = str(tmp_path)                               # an empty folder
    if require:
        env["RAGKIT_REQUIRE_DATA"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider",
                           "tests/test_causal.py::test_empirical_check_on_the_beijing_series"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_missing_dataset_skips_with_one_line_or_fails_when_required(tmp_path):
    line = (f"dataset pm25 (UCI Beijing PM2.5) not found at {tmp_path}/datasets/pm25/"
            f"PRSA_data_2010.1.1-2014.12.31.csv: see docs/datasets.md")
    skipped = _pytest_one_dataset_test(tmp_path, require=False)
    assert skipped.returncode == 0, skipped.stdout[-3000:]
    assert re.search(r"^SKIPPED \[1\] tests/test_causal\.py:\d+: " + re.escape(line), skipped.stdout, re.M), \
        skipped.stdout[-3000:]
    assert "1 skipped" in skipped.stdout
    failed = _pytest_one_dataset_test(tmp_path, require=True)
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "1 failed" in failed.stdout and line in failed.stdout
    assert "Traceback" not in failed.stdout
