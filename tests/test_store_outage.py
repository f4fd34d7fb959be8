"""A Neo4j that goes away, or refuses logins, under ragkit: one line naming the server, at
once, never a traceback or an answer that pretends the store is empty. A Neo4j of its own
(the tools/neo4j launcher on a loopback port), killed with SIGKILL under a running
``ragkit serve``; the shared one for the authentication rate limit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from ragkit.errors import StoreUnavailableError
from ragkit.testing.launch import free_port, running_http, serve_command

from .conftest import NEO4J_PASSWORD, ROOT

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT),
       "NEO4J_PASSWORD": NEO4J_PASSWORD}
SPEC = ROOT / "data" / "specs" / "demo_5gc.md"
BIOMED = ROOT / "data" / "biomed"
SPEC_Q = {"question": "What is SCP in 5G Core?", "pipeline": "spec", "no_llm": True}
KG_Q = {"question": "What diseases does Aspirin treat?", "pipeline": "kg", "no_llm": True}


def ragkit(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, args)], capture_output=True, text=True,
                          env=ENV, cwd=ROOT, timeout=600)


def wait_ready(url: str, want: int) -> httpx.Response:
    for _ in range(300):
        response = httpx.get(url + "/ready", timeout=30)
        if response.status_code == want:
            return response
        time.sleep(0.1)
    return response


@pytest.mark.slow
def test_a_neo4j_killed_under_the_server_is_a_503_and_ready_false(tmp_path):
    from ragkit.stores.neo4j_launcher import running_neo4j_process

    with running_neo4j_process(tmp_path / "neo4j", password=NEO4J_PASSWORD) as (uri, database):
        assert ragkit("kg", "build", "--specs", SPEC, "--store", uri).returncode == 0
        assert ragkit("kg", "import", "--nodes", BIOMED / "nodes.csv", "--edges", BIOMED / "edges.csv",
                      "--store", uri).returncode == 0
        port = free_port()
        command = serve_command(port, "--spec-store", uri, "--store", uri, "--log-level", "info")
        with running_http(command, f"http://127.0.0.1:{port}/health", timeout=120, env=ENV,
                          log=tmp_path / "server.log"):
            http = f"http://127.0.0.1:{port}"
            assert wait_ready(http, 200).json()["pipelines"] == {"spec": "ready", "kg": "ready"}
            for body in (SPEC_Q, KG_Q):
                assert httpx.post(http + "/ask", json=body, timeout=60).status_code == 200

            database.send_signal(signal.SIGKILL)
            database.wait()
            for body in (SPEC_Q, KG_Q):
                response = httpx.post(http + "/ask", json=body, timeout=120)
                assert response.status_code == 503, (body["pipeline"], response.text)
                error = response.json()["error"]
                assert uri in error and "\n" not in error, error
            ready = wait_ready(http, 503)
            assert ready.status_code == 503
            pipelines = ready.json()["pipelines"]
            assert all(state.startswith("error: ") and uri in state for state in pipelines.values()), pipelines
        assert "Traceback" not in (tmp_path / "server.log").read_text()

    # The command line, with the database gone: exit 4 (a dependency down) and one line naming it.
    for args in (["ask", "What is SCP?", "--pipeline", "spec", "--store", uri, "--no-llm"],
                 ["ask", "What treats fever?", "--pipeline", "kg", "--store", uri, "--no-llm"]):
        proc = ragkit(*args)
        assert proc.returncode == 4, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and uri in lines[0], proc.stderr


@pytest.mark.slow
def test_the_authentication_rate_limit_is_one_line(neo4j_uri):
    """After too many wrong passwords Neo4j refuses even the right one for a few seconds;
    that is said in one line, not a driver traceback. A user of its own, so the tests'
    user is never locked out."""
    from ragkit.stores.neo4j import Neo4jConnection

    admin = Neo4jConnection(neo4j_uri, password=NEO4J_PASSWORD, database="system")
    user, password = "ratelimitprobe", "probe-password-1"
    admin.run("CREATE OR REPLACE USER $user SET PASSWORD $password CHANGE NOT REQUIRED", user=user,
              password=password)
    try:
        refusals = []
        for _ in range(4):
            with pytest.raises(StoreUnavailableError) as wrong:
                Neo4jConnection(neo4j_uri, user=user, password="not-the-password")
            refusals.append(str(wrong.value))
        assert f"refused user {user!r}" in refusals[0]
        with pytest.raises(StoreUnavailableError) as limited:
            Neo4jConnection(neo4j_uri, user=user, password=password)
        message = str(limited.value)
        assert message.startswith(f"store {neo4j_uri}: ") and "too many wrong passwords" in message
        assert "\n" not in message
    finally:
        admin.run("DROP USER $user IF EXISTS", user=user)
        admin.close()


@pytest.mark.slow
def test_a_neo4j_killed_during_a_write_is_one_line_naming_it(tmp_path, monkeypatch):
    """The database dies between two batches of a spec's one write transaction: the write
    is a one-line StoreUnavailableError naming the server (the transaction never committed)."""
    from ragkit.specs.build import parse_specs
    from ragkit.specs.neo4j_store import Neo4jStore
    from ragkit.stores import neo4j as bolt
    from ragkit.stores.neo4j_launcher import running_neo4j_process

    parsed = parse_specs([SPEC], progress=False)
    with running_neo4j_process(tmp_path / "neo4j", password=NEO4J_PASSWORD) as (uri, database):
        store = Neo4jStore(uri, password=NEO4J_PASSWORD)

        def kill_the_database(point: str) -> None:
            if point == "neo4j.batch" and database.poll() is None:
                database.send_signal(signal.SIGKILL)
                database.wait()

        monkeypatch.setattr(bolt, "fault_point", kill_the_database)
        with pytest.raises(StoreUnavailableError) as lost:
            store.write(parsed.docs, parsed.chunks, parsed.terms)
        message = str(lost.value)
        assert message.startswith(f"store {uri}: Neo4j") and "\n" not in message, message
        store.close()
