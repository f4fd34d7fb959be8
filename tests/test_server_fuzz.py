"""``ragkit serve`` against requests generated from its own OpenAPI schema (Schemathesis:
examples, coverage of every field's edge values, and fuzzing), without a key and with one:
no 500, no hang (a request timeout), every error in the documented shape. The model behind
it is a server that is not there, so every answer that asks the model is a quick one-line
502: the fuzzing is of the server's handling of its input, bounded in time."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ragkit.kgqa.importer import import_kg
from ragkit.kgqa.store import open_typed_store
from ragkit.testing.launch import free_port, running_http, serve_command

from .conftest import ROOT

KEY = "fuzz-test-key-0123456789"
BUDGET_S = 90          # per run: Schemathesis stops generating after it


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    subprocess.run([sys.executable, "-m", "ragkit.cli", "index", "build", "--corpus", "data/manuals", "--out",
                    str(root / "manuals")], check=True, capture_output=True, timeout=300, cwd=ROOT)
    with open_typed_store(str(root / "biomed.json.gz")) as graph:
        import_kg(ROOT / "data" / "biomed" / "nodes.csv", ROOT / "data" / "biomed" / "edges.csv", graph)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("keyed", [False, True], ids=["no-key", "key"])
def test_generated_requests_find_no_500_no_hang_and_only_one_line_errors(sources, tmp_path, keyed):
    port = free_port()
    args = ["--index", str(sources / "manuals"), "--store", str(sources / "biomed.json.gz"),
            "--kg", str(ROOT / "data" / "merged_knowledge_graph.json"), "--timeout", "20"]
    env = {k: v for k, v in os.environ.items() if k not in ("RAGKIT_API_KEY", "RAGKIT_ALLOWED_HOSTS")}
    env.update(RAGKIT_LLM_URL=f"http://127.0.0.1:{free_port()}", RAGKIT_LLM_MODEL="absent", RAGKIT_LLM_RETRY_S="0",
               HF_HUB_OFFLINE="1")
    if keyed:
        env["RAGKIT_API_KEY"] = KEY
    with running_http(serve_command(port, *args), f"http://127.0.0.1:{port}/health", timeout=120, env=env,
                      log=tmp_path / "server.log"):
        headers = {"Authorization": f"Bearer {KEY}"} if keyed else {}
        for _ in range(300):
            if httpx.get(f"http://127.0.0.1:{port}/ready", headers=headers, timeout=30).status_code in (200, 503):
                break
            time.sleep(0.1)
        command = [str(Path(sys.executable).with_name("schemathesis")), "run", f"http://127.0.0.1:{port}/openapi.json",
                   "--checks", "errors_in_the_documented_shape", "--phases", "examples,coverage,fuzzing",
                   "--max-examples", "15", "--max-time", str(BUDGET_S), "--request-timeout", "60", "--seed", "7",
                   "--no-shrink", "--warnings", "off"]
        if keyed:
            command += ["-H", f"Authorization: Bearer {KEY}"]
        run = subprocess.run(command, capture_output=True, text=True, timeout=BUDGET_S * 4, cwd=tmp_path,
                             env={**env, "SCHEMATHESIS_HOOKS": "fuzz_checks",
                                  "PYTHONPATH": str(ROOT / "tests") + os.pathsep + env.get("PYTHONPATH", "")})
    generated = re.search(r"(\d+) generated", run.stdout)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert generated and int(generated.group(1)) >= 100, run.stdout[-2000:]
    assert "Traceback" not in (tmp_path / "server.log").read_text()
    print(f"schemathesis ({'key' if keyed else 'no key'}): {generated.group(1)} generated cases")
