"""Start a server as a child process on loopback, wait until it answers, stop it after: the
tests and benchmarks use this for ``ragkit serve`` and ``python -m llama_cpp.server``."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Sequence

from ..config import child_environment
from ..errors import RagkitError
from ..runtime.extras import requires_extra
from ..stores.neo4j_launcher import free_port

with requires_extra("dev"):
    import httpx

__all__ = ["free_port", "running_http", "llama_server_command", "serve_command"]


@contextlib.contextmanager
def running_http(command: Sequence[str], ready_url: str, *, timeout: float = 180.0,
                 env: dict | None = None, log: str | os.PathLike | None = None) -> Iterator[subprocess.Popen]:
    """Run ``command`` until ``ready_url`` answers 200, yield the process, then stop it
    (SIGTERM, then SIGKILL after 10 s). Its output goes to ``log`` (a temporary file if
    not given), whose tail is in the error if it dies or never gets ready."""
    if log:
        log_path = Path(log)
    else:
        fd, name = tempfile.mkstemp(prefix="ragkit-server-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    with log_path.open("wb") as out:
        proc = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT,
                                env=child_environment(env))
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RagkitError(f"server {command[0]}: exited with {proc.returncode} before it was "
                                      f"ready: {_tail(log_path)}")
                try:
                    if httpx.get(ready_url, timeout=2.0, trust_env=False).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RagkitError(f"server {command[0]}: not ready at {ready_url} after {timeout:g} s: "
                                      f"{_tail(log_path)}")
                time.sleep(0.25)
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if not log:
                log_path.unlink(missing_ok=True)


def _tail(path: Path, lines: int = 5) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:]) or "(no output)"


def llama_server_command(port: int, model: str | os.PathLike | None = None, n_ctx: int = 2048,
                         threads: int = 2) -> list[str]:
    """``python -m llama_cpp.server`` on 127.0.0.1 with ``model`` (a path or a catalog name),
    else the GGUF ``models.choose_model`` picks, deterministic like the in-process backend
    (seed 42)."""
    from ..llm.gguf import check_gguf
    from ..llm.catalog import choose_model

    path = check_gguf(choose_model(str(model) if model else None).path)
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1",
            "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--seed", "42",
            # By default the server ends a stream early when another request waits for the model.
            "--interrupt_requests", "False", "--verbose", "False"]


def serve_command(port: int, *args: str) -> list[str]:
    """``ragkit serve`` on 127.0.0.1 with ``args`` (sources, limits)."""
    return [sys.executable, "-m", "ragkit.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "warning", *args]
