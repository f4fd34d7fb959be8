"""Start and stop the embedded Neo4j of ``tools/neo4j`` (a real Neo4j 5.26 with Bolt on
127.0.0.1), for the test fixture and the benchmarks. Users run it with ``make neo4j``.

The launcher is a Maven project of the repository, not part of the installed package: from
a wheel, this says so in one line (any running Neo4j 5 serves instead: ``--store bolt://...``)."""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator

from ..config import child_environment
from ..errors import RagkitError
from .neo4j import DEFAULT_PASSWORD

CHECKOUT = Path(__file__).resolve().parents[2]      # the repository, when ragkit runs from one
LAUNCHER = CHECKOUT / "tools" / "neo4j" / "target"


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_neo4j(data_dir: str | os.PathLike, port: int | None = None,
                  password: str = DEFAULT_PASSWORD, timeout: float = 180.0) -> Iterator[str]:
    """Run the launcher on ``data_dir``; yield its bolt:// URI; stop it on exit."""
    with running_neo4j_process(data_dir, port, password, timeout) as (uri, _):
        yield uri


def _first_line_until_ready(proc: subprocess.Popen, timeout: float) -> str:
    """The launcher's ``READY`` line, or the last line it wrote before it exited or
    ``timeout`` seconds passed. A thread reads its output to the end, so the wait is bounded
    even when the launcher hangs without a word, and the pipe never fills under a database
    that keeps writing."""
    lines: queue.Queue[str | None] = queue.Queue()

    def drain() -> None:
        for text in proc.stdout or ():
            lines.put(text)
        lines.put(None)

    threading.Thread(target=drain, daemon=True, name="neo4j-launcher-output").start()
    deadline, last = time.monotonic() + timeout, ""
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        last = line if line.strip() else last
        if line.startswith("READY"):
            return line
    return last


@contextlib.contextmanager
def running_neo4j_process(data_dir: str | os.PathLike, port: int | None = None, password: str = DEFAULT_PASSWORD,
                          timeout: float = 180.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """``running_neo4j``, yielding the URI and the database's process (which a fault test
    kills).

    The launcher watches its standard input: closing it shuts the database down cleanly,
    and a parent that dies takes the database with it.
    """
    if not (LAUNCHER / "lib").is_dir():
        if not (CHECKOUT / "tools" / "neo4j" / "pom.xml").is_file():
            raise RagkitError("neo4j launcher: available from a source checkout of ragkit ('make neo4j' in "
                              "the repository), not from the installed package; give --store the bolt:// URI "
                              "of a running Neo4j")
        raise RagkitError(f"neo4j launcher: {LAUNCHER} is not built (make install builds it with Maven)")
    port = port or free_port()
    proc = subprocess.Popen(
        ["java", "-cp", f"{LAUNCHER / 'classes'}:{LAUNCHER / 'lib'}/*", "ragkit.neo4j.Launcher",
         str(data_dir), str(port)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # the password in the environment, never on the command line (which ps shows)
        env=child_environment({"RAGKIT_NEO4J_WATCH_STDIN": "1", "NEO4J_PASSWORD": password}))
    try:
        line = _first_line_until_ready(proc, timeout)
        if not line.startswith("READY"):
            raise RagkitError(f"neo4j launcher: did not start on port {port} within {timeout:g} s "
                              f"({line.strip() or 'no output'})")
        yield f"bolt://127.0.0.1:{port}", proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
