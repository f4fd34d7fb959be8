"""Every wait on another process or server is bounded: the Neo4j launcher's start-up is
waited for ``timeout`` seconds even when the launcher hangs without a word (and its output
is read to the end, so a chatty database never blocks on a full pipe); a Chroma server that
takes the connection and never answers, or stops answering mid-life, is one line naming it
(chromadb's own client waits without limit)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from ragkit.errors import StoreUnavailableError
from ragkit.stores import chroma
from ragkit.stores.chroma import ChromaVectors
from ragkit.stores.neo4j_launcher import _first_line_until_ready
from ragkit.testing.launch import free_port, running_http


def child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("code, expected", [
    ("import time; time.sleep(60)", ""),                                       # silent, hung
    ("import time; print('starting', flush=True); time.sleep(60)", "starting\n"),  # a word, then hung
])
def test_a_launcher_that_hangs_is_given_up_after_the_timeout(code, expected):
    proc = child(code)
    try:
        started = time.monotonic()
        assert _first_line_until_ready(proc, 1.5) == expected
        assert time.monotonic() - started < 30          # the old readline loop waited the full 60 s
    finally:
        proc.kill()
        proc.wait()


def test_the_ready_line_after_much_output_and_an_early_exit():
    chatty = child("for i in range(20000): print('log line', i)\nprint('READY bolt', flush=True)\n"
                   "for i in range(20000): print('more', i)")
    try:
        assert _first_line_until_ready(chatty, 60).startswith("READY")
        # 200 KB after READY: the child ends only if someone reads them (a pipe holds 64 KB)
        assert chatty.wait(timeout=60) == 0
    finally:
        chatty.kill()
        chatty.wait()
    failed = child("print('port 7687 in use'); raise SystemExit(1)")
    assert _first_line_until_ready(failed, 60) == "port 7687 in use\n"
    failed.wait()


def test_a_chroma_server_that_never_answers_is_one_line(monkeypatch):
    monkeypatch.setattr(chroma, "CHROMA_TIMEOUT_S", 1.0)
    silent = socket.socket()            # listening, never accepting: the kernel takes the connection
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    try:
        with pytest.raises(StoreUnavailableError, match=rf"^chroma {url}: no reply within 1 s$"):
            ChromaVectors(url, "nodes")
    finally:
        silent.close()


@pytest.mark.slow
def test_a_chroma_server_that_stops_answering_mid_life_is_one_line(monkeypatch, tmp_path):
    """A real ``chroma run``, paused with SIGSTOP after it has served a query."""
    monkeypatch.setattr(chroma, "CHROMA_TIMEOUT_S", 2.0)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    exe = shutil.which("chroma", path=os.path.dirname(sys.executable))
    command = [exe, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(tmp_path / "chroma")]
    with running_http(command, f"{url}/api/v2/heartbeat", timeout=120) as proc:
        store = ChromaVectors(url, "nodes")
        vectors = np.eye(3, dtype=np.float32)
        store.upsert(["a", "b", "c"], vectors, [{"fingerprint": f} for f in "xyz"], ["", "", ""])
        assert store.query(vectors[1], 1).ids == ["b"]
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError, match=rf"^chroma {url}: no reply within 2 s$"):
                store.query(vectors[0], 1)
            assert time.monotonic() - started < 60
        finally:
            os.kill(proc.pid, signal.SIGCONT)
